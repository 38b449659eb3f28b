//! Built-in kinds, found by reading the `Resource`/`ListableResource` impls in k8s-openapi's sources (G6).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use syn::{Expr, ImplItem, Item, Lit, Type};

use crate::error::{Error, Errors};
use crate::k8s_version::Chosen;
use crate::model::{Kind, Origin, TypeRef};

/// Where the k8s-openapi sources are and which Kubernetes version module to read.
#[derive(Debug, Clone)]
pub struct K8sOpenApi {
    /// The crate's `src/` directory.
    pub src_dir: PathBuf,
    /// The crate version (`0.29.0`), shown in the generated header.
    pub crate_version: String,
    /// The Kubernetes version feature (`1.37`), selecting `src/v1_37/`.
    pub k8s_version: String,
    /// Every Kubernetes version to read (`1.33`, …, `1.37`), for output that must compile under
    /// whichever one the final binary enables ([`Self::every_version`]); empty reads
    /// `k8s_version` alone and gates nothing.
    pub gated_versions: Vec<String>,
}

impl K8sOpenApi {
    /// Uses the sources at `src_dir` (k8s-openapi's `src/`).
    pub fn at(src_dir: impl Into<PathBuf>, crate_version: &str, k8s_version: &str) -> Self {
        K8sOpenApi {
            src_dir: src_dir.into(),
            crate_version: crate_version.into(),
            k8s_version: k8s_version.into(),
            gated_versions: Vec::new(),
        }
    }

    /// Reads every Kubernetes version these sources hold (each `src/v1_*/` module), so that the
    /// output compiles under whichever one k8s-openapi is built for: a built-in kind, compact
    /// type or compact field that some version lacks is generated behind a `cfg` on the versions
    /// it exists in: `k8s_openapi_enabled_version = "1.36"` for one version (the cfg k8s-openapi
    /// sets for itself), `k8s_since = "1.34"` for that version and later, `k8s_until = "1.35"` for
    /// that version and earlier, both for a run in between, `any(…)` of single versions otherwise.
    /// The crate that compiles the output sets those cfgs in its build script from
    /// `DEP_K8S_OPENAPI_*_VERSION`, which k8s-openapi's `links` metadata hands to its direct
    /// dependents (informer-k8s's `build.rs` is the complete one):
    ///
    /// ```no_run
    /// // build.rs of the crate holding the generated code, for versions 1.33 to 1.37
    /// let version = std::env::vars()
    ///     .find(|(k, _)| k.starts_with("DEP_K8S_OPENAPI_") && k.ends_with("_VERSION"))
    ///     .and_then(|(_, v)| v.parse::<u32>().ok()) // 0x00_01_MM_00 in decimal
    ///     .expect("k8s-openapi is a direct dependency");
    /// let minor = (version >> 8) & 0xff;
    /// for name in ["k8s_openapi_enabled_version", "k8s_since", "k8s_until"] {
    ///     println!("cargo::rustc-check-cfg=cfg({name}, values(\"1.33\", \"1.34\", \"1.35\", \"1.36\", \"1.37\"))");
    /// }
    /// println!("cargo::rustc-cfg=k8s_openapi_enabled_version=\"1.{minor}\"");
    /// for m in 33..=37 {
    ///     if m <= minor { println!("cargo::rustc-cfg=k8s_since=\"1.{m}\""); }
    ///     if m >= minor { println!("cargo::rustc-cfg=k8s_until=\"1.{m}\""); }
    /// }
    /// ```
    ///
    /// An item every version has is not gated, nor is anything when the sources hold one version.
    pub fn every_version(mut self) -> Result<Self, Error> {
        let entries = std::fs::read_dir(&self.src_dir).map_err(|source| Error::Io {
            path: self.src_dir.clone(),
            source,
        })?;
        let mut versions: Vec<(u32, u32)> = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| Error::Io {
                path: self.src_dir.clone(),
                source,
            })?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let parsed = name.strip_prefix('v').and_then(|rest| {
                let (major, minor) = rest.split_once('_')?;
                Some((major.parse().ok()?, minor.parse().ok()?))
            });
            if let Some(v) = parsed.filter(|_| entry.path().is_dir()) {
                versions.push(v);
            }
        }
        if versions.is_empty() {
            return Err(Error::K8sOpenApi {
                reason: format!(
                    "no Kubernetes version module (`v1_37/`) in `{}`",
                    self.src_dir.display()
                ),
            });
        }
        versions.sort_unstable();
        self.gated_versions = versions
            .into_iter()
            .map(|(major, minor)| format!("{major}.{minor}"))
            .collect();
        Ok(self)
    }

    /// The API groups (`""` for core) of the listable built-in kinds in the versions read,
    /// sorted: what a crate of every built-in kind passes to `Builder::include_group`.
    pub fn groups(&self) -> Result<Vec<String>, Errors> {
        let groups: BTreeSet<String> = self.kinds()?.into_iter().map(|(g, _, _)| g).collect();
        Ok(groups.into_iter().collect())
    }

    /// Every listable and watchable built-in kind of the versions read (the kinds
    /// `Builder::include_group` selects: not the list-only `ComponentStatus`), as
    /// `(group, version, kind)` (`("apps", "v1", "Deployment")`, `""` for core), each once,
    /// sorted: what a crate of every built-in kind's compact form passes to
    /// `Builder::compact_kind`. A kind that some version lacks is listed too (its compact form
    /// is generated in the versions that have it).
    pub fn kinds(&self) -> Result<Vec<(String, String, String)>, Errors> {
        let mut errors = Vec::new();
        let (kinds, _) = read_every_version(self, &mut errors);
        if !errors.is_empty() {
            return Err(Errors(errors));
        }
        Ok(kinds
            .into_iter()
            .map(|k| (k.group, k.version, k.kind))
            .filter(|(g, v, k)| {
                !super::fixups::UNWATCHABLE.contains(&(g.as_str(), v.as_str(), k.as_str()))
            })
            .collect())
    }

    /// The Kubernetes versions read: [`Self::gated_versions`], else `k8s_version` alone.
    pub(crate) fn versions(&self) -> Vec<String> {
        if self.gated_versions.is_empty() {
            vec![self.k8s_version.clone()]
        } else {
            self.gated_versions.clone()
        }
    }

    /// Finds the k8s-openapi package used by the crate at `manifest_dir` with `cargo metadata`.
    /// `k8s_version` is `1.37`-style; `None` takes the version k8s-openapi is built for (the
    /// `v1_*` feature enabled on it, else `K8S_OPENAPI_ENABLED_VERSION`). A given version must
    /// agree with the enabled one.
    pub fn locate(manifest_dir: &Path, k8s_version: Option<&str>) -> Result<Self, Error> {
        let explicit = k8s_version.map(|v| Chosen::new(v, "`K8sOpenApi::locate`"));
        Self::locate_for(manifest_dir, explicit.as_ref())
    }

    /// [`locate`](Self::locate) with an explicit version that says where it was set.
    pub(crate) fn locate_for(
        manifest_dir: &Path,
        explicit: Option<&Chosen>,
    ) -> Result<Self, Error> {
        let found = crate::k8s_version::locate(manifest_dir, explicit)?;
        Ok(K8sOpenApi::at(
            found.src_dir,
            &found.crate_version,
            &found.k8s_version,
        ))
    }

    /// The directory of the selected version module (`src/v1_37`).
    pub(crate) fn version_dir(&self) -> PathBuf {
        self.dir_of(&self.k8s_version)
    }

    /// The directory of version `version`'s module (`1.37`: `src/v1_37`).
    fn dir_of(&self, version: &str) -> PathBuf {
        self.src_dir.join(feature(version))
    }

    /// How the header names this input: `k8s-openapi 0.29.0 (v1_37)`, or with every version read
    /// `k8s-openapi 0.29.0 (v1_33 to v1_37)`; never a path.
    pub(crate) fn describe(&self) -> String {
        let versions = self.versions();
        let (first, last) = (
            versions.first().map(|v| feature(v)).unwrap_or_default(),
            versions.last().map(|v| feature(v)).unwrap_or_default(),
        );
        if first == last {
            format!("k8s-openapi {} ({first})", self.crate_version)
        } else {
            format!("k8s-openapi {} ({first} to {last})", self.crate_version)
        }
    }
}

/// k8s-openapi's feature and module name of a Kubernetes version: `1.37` → `v1_37`.
fn feature(version: &str) -> String {
    format!("v{}", version.replace('.', "_"))
}

/// k8s-openapi's sources of the selected Kubernetes version as they are read: each file is read
/// and parsed at most once, whether the built-in scan or the compact type reader asks first, and
/// its read or parse error is reported once.
pub(crate) struct Sources {
    /// The version module's directory (`src/v1_37`).
    pub(crate) dir: PathBuf,
    texts: BTreeMap<PathBuf, Option<Rc<str>>>,
    asts: BTreeMap<PathBuf, Option<Rc<syn::File>>>,
}

impl Sources {
    /// The sources of Kubernetes version `version` (`1.34`) of `k8s`.
    pub(crate) fn of_version(k8s: &K8sOpenApi, version: &str) -> Self {
        Sources {
            dir: k8s.dir_of(version),
            texts: BTreeMap::new(),
            asts: BTreeMap::new(),
        }
    }

    /// The text of `path`; `None` (reported on the first call) when it cannot be read.
    pub(crate) fn text(&mut self, path: &Path, errors: &mut Vec<Error>) -> Option<Rc<str>> {
        if let Some(text) = self.texts.get(path) {
            return text.clone();
        }
        let text = super::read(path)
            .map(Rc::<str>::from)
            .map_err(|e| errors.push(e))
            .ok();
        self.texts.insert(path.to_owned(), text.clone());
        text
    }

    /// The text and syntax tree of `path`; `None` (reported on the first call) when it cannot be
    /// read or parsed.
    pub(crate) fn parsed(
        &mut self,
        path: &Path,
        errors: &mut Vec<Error>,
    ) -> Option<(Rc<str>, Rc<syn::File>)> {
        let text = self.text(path, errors)?;
        if let Some(ast) = self.asts.get(path) {
            return ast.clone().map(|ast| (text, ast));
        }
        let ast = match syn::parse_file(&text) {
            Ok(ast) => Some(Rc::new(ast)),
            Err(e) => {
                errors.push(Error::rust_syntax(path, &e));
                None
            }
        };
        self.asts.insert(path.to_owned(), ast.clone());
        ast.map(|ast| (text, ast))
    }
}

/// Every listable built-in kind of every version `k` reads ([`K8sOpenApi::versions`]), each
/// once, with the versions it exists in when some version lacks it
/// ([`Kind::k8s_versions`]). A kind whose resource differs between versions (plural, scope,
/// Rust path) is an error: one accessor cannot name two resources. Returns the sources of each
/// version too, so that the compact type reader parses no file again.
pub(crate) fn read_every_version(
    k: &K8sOpenApi,
    errors: &mut Vec<Error>,
) -> (Vec<Kind>, BTreeMap<String, Sources>) {
    let versions = k.versions();
    let mut merged: BTreeMap<(String, String, String), Kind> = BTreeMap::new();
    let mut all_sources = BTreeMap::new();
    for version in &versions {
        let sources = all_sources
            .entry(version.clone())
            .or_insert_with(|| Sources::of_version(k, version));
        for kind in read_builtins(k, sources, errors) {
            let key = (kind.group.clone(), kind.version.clone(), kind.kind.clone());
            let first = merged.entry(key).or_insert_with(|| kind.clone());
            if (&first.plural, first.namespaced, &first.rust_type)
                != (&kind.plural, kind.namespaced, &kind.rust_type)
            {
                errors.push(Error::K8sOpenApi {
                    reason: format!(
                        "kind `{}/{}/{}` differs between Kubernetes versions: {} {} `{:?}` in {}, \
                         {} {} `{:?}` in {version}",
                        kind.group,
                        kind.version,
                        kind.kind,
                        first.plural,
                        scope(first.namespaced),
                        first.rust_type,
                        first.k8s_versions.iter().next().map_or("", String::as_str),
                        kind.plural,
                        scope(kind.namespaced),
                        kind.rust_type,
                    ),
                });
            }
            first.k8s_versions.insert(version.clone());
        }
    }
    let mut kinds: Vec<Kind> = merged.into_values().collect();
    for kind in &mut kinds {
        kind.input = k.describe();
        if kind.k8s_versions.len() == versions.len() {
            kind.k8s_versions.clear();
        }
    }
    (kinds, all_sources)
}

fn scope(namespaced: bool) -> &'static str {
    if namespaced {
        "namespaced"
    } else {
        "cluster-scoped"
    }
}

/// Every listable built-in kind of one version, sorted by file path.
pub(crate) fn read_builtins(
    k: &K8sOpenApi,
    sources: &mut Sources,
    errors: &mut Vec<Error>,
) -> Vec<Kind> {
    let dir = sources.dir.clone();
    if !dir.is_dir() {
        errors.push(Error::K8sOpenApi {
            reason: format!("no directory `{}`", dir.display()),
        });
        return Vec::new();
    }
    let mut files = Vec::new();
    collect_rs(&dir, &mut files, errors);
    files.sort();
    let mut kinds = Vec::new();
    for file in files {
        let Some(text) = sources.text(&file, errors) else {
            continue;
        };
        // Cheap filter: only files with a ListableResource impl are parsed.
        if !text.contains("impl crate::ListableResource for") {
            continue;
        }
        let rel = file.strip_prefix(&dir).unwrap_or(&file).to_owned();
        if let Some((_, ast)) = sources.parsed(&file, errors) {
            kinds.extend(kinds_in_file(&ast, &rel, &k.describe()));
        }
    }
    kinds
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>, errors: &mut Vec<Error>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(source) => {
            return errors.push(Error::Io {
                path: dir.to_owned(),
                source,
            });
        }
    };
    for entry in entries {
        let path = match entry {
            Ok(entry) => entry.path(),
            Err(source) => {
                errors.push(Error::Io {
                    path: dir.to_owned(),
                    source,
                });
                continue;
            }
        };
        if path.is_dir() {
            collect_rs(&path, out, errors);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Kinds defined in one file: types with both a `Resource` and a `ListableResource` impl.
fn kinds_in_file(ast: &syn::File, rel: &Path, input: &str) -> Vec<Kind> {
    let module: Vec<String> = rel
        .parent()
        .into_iter()
        .flat_map(|p| p.components())
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let mut listable = Vec::new();
    let mut resources = Vec::new();
    for item in &ast.items {
        let Item::Impl(imp) = item else { continue };
        let (Some((trait_path, _)), Type::Path(self_ty)) = (&imp.trait_, &*imp.self_ty) else {
            continue;
        };
        let Some(self_ident) = self_ty.path.get_ident().map(ToString::to_string) else {
            continue;
        };
        let trait_name = trait_path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        if trait_name == "ListableResource" {
            listable.push(self_ident);
        } else if trait_name == "Resource" {
            resources.push((self_ident, imp));
        }
    }
    let mut out = Vec::new();
    for (ident, imp) in resources {
        if !listable.contains(&ident) {
            continue;
        }
        let mut c = BTreeMap::new();
        let mut namespaced = false;
        for item in &imp.items {
            match item {
                ImplItem::Const(k) => {
                    if let Expr::Lit(l) = &k.expr
                        && let Lit::Str(s) = &l.lit
                    {
                        c.insert(k.ident.to_string(), s.value());
                    }
                }
                ImplItem::Type(t) if t.ident == "Scope" => {
                    namespaced = quote::quote!(#t)
                        .to_string()
                        .contains("NamespaceResourceScope");
                }
                _ => {}
            }
        }
        let get = |k: &str| c.get(k).cloned().unwrap_or_default();
        let (group, version, kind, plural) = (
            get("GROUP"),
            get("VERSION"),
            get("KIND"),
            get("URL_PATH_SEGMENT"),
        );
        if kind.is_empty() || version.is_empty() || plural.is_empty() {
            continue;
        }
        let mut path = module.clone();
        path.push(ident);
        out.push(Kind {
            accessor: crate::naming::kind_accessor(&kind, &plural),
            group,
            version,
            kind,
            plural,
            namespaced,
            rust_type: TypeRef::K8s(path.join("::")),
            origin: Origin::Builtin,
            input: input.to_owned(),
            compact: None,
            k8s_versions: BTreeSet::new(),
        });
    }
    out
}
