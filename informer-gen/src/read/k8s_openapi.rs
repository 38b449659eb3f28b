//! Built-in kinds, found by reading the `Resource`/`ListableResource` impls in k8s-openapi's sources (G6).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use syn::{Expr, ImplItem, Item, Lit, Type};

use crate::error::Error;
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
}

impl K8sOpenApi {
    /// Uses the sources at `src_dir` (k8s-openapi's `src/`).
    pub fn at(src_dir: impl Into<PathBuf>, crate_version: &str, k8s_version: &str) -> Self {
        K8sOpenApi {
            src_dir: src_dir.into(),
            crate_version: crate_version.into(),
            k8s_version: k8s_version.into(),
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
        self.src_dir
            .join(format!("v{}", self.k8s_version.replace('.', "_")))
    }

    /// How the header names this input: `k8s-openapi 0.29.0 (v1_37)`; never a path.
    pub(crate) fn describe(&self) -> String {
        format!(
            "k8s-openapi {} (v{})",
            self.crate_version,
            self.k8s_version.replace('.', "_")
        )
    }
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
    pub(crate) fn new(k8s: &K8sOpenApi) -> Self {
        Sources {
            dir: k8s.version_dir(),
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

/// Every listable, watchable built-in kind, sorted by file path.
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
        });
    }
    out
}
