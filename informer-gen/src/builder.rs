//! The `Builder` used from build.rs, xtask and the CLI; validates the whole model before emitting.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::K8sOpenApi;
use crate::emit::{self, Paths};
use crate::error::{Error, Errors};
use crate::input::{crd, fixups, k8s_openapi, rust_src};
use crate::model::{Group, Kind, Model, Origin};
use crate::naming;
use crate::render::{self, GENERATED_MARKER, Layout};
use crate::types::{self, TypeGraph, emit::TypePaths};

/// Configures one generator run (prost-build style `&mut Self` chain).
#[derive(Debug, Clone)]
pub struct Builder {
    root: PathBuf,
    k8s: Option<K8sOpenApi>,
    k8s_crate: String,
    runtime_crate: String,
    include_groups: BTreeSet<String>,
    include_kinds: BTreeSet<(String, String, String)>,
    exclude_kinds: BTreeSet<(String, String, String)>,
    compact_kinds: BTreeSet<(String, String, String)>,
    derive_sources: Vec<(String, String)>,
    crd_manifests: Vec<(String, String)>,
    crd_types: Vec<(String, String)>,
    group_accessors: BTreeMap<String, String>,
    kind_accessors: BTreeMap<(String, String), String>,
    layout: Layout,
    command: String,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            root: PathBuf::from("."),
            k8s: None,
            k8s_crate: "::k8s_openapi".into(),
            runtime_crate: "::informer_runtime".into(),
            include_groups: BTreeSet::new(),
            include_kinds: BTreeSet::new(),
            exclude_kinds: BTreeSet::new(),
            compact_kinds: BTreeSet::new(),
            derive_sources: Vec::new(),
            crd_manifests: Vec::new(),
            crd_types: Vec::new(),
            group_accessors: BTreeMap::new(),
            kind_accessors: BTreeMap::new(),
            layout: Layout::Modules,
            command: "cargo codegen".into(),
        }
    }
}

impl Builder {
    /// A builder with no inputs, `Layout::Modules` and the `cargo codegen` regenerate command.
    pub fn new() -> Self {
        Self::default()
    }

    /// The directory relative input paths are resolved against; headers show paths relative to it.
    pub fn root(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.root = dir.into();
        self
    }

    /// Reads built-in kinds from these k8s-openapi sources (`K8sOpenApi::locate` finds them).
    pub fn k8s_openapi(&mut self, k8s: K8sOpenApi) -> &mut Self {
        self.k8s = Some(k8s);
        self
    }

    /// The path generated code uses for k8s-openapi (default `::k8s_openapi`).
    pub fn k8s_openapi_crate(&mut self, path: &str) -> &mut Self {
        self.k8s_crate = path.into();
        self
    }

    /// The path of the runtime crate (default `::informer_runtime`), for crates that re-export it.
    pub fn runtime_crate(&mut self, path: &str) -> &mut Self {
        self.runtime_crate = path.into();
        self
    }

    /// Includes every listable built-in kind of `group` (`""` for core).
    pub fn include_group(&mut self, group: &str) -> &mut Self {
        self.include_groups.insert(group.into());
        self
    }

    /// Includes one built-in kind.
    pub fn include_kind(&mut self, group: &str, version: &str, kind: &str) -> &mut Self {
        self.include_kinds
            .insert((group.into(), version.into(), kind.into()));
        self
    }

    /// Excludes one built-in kind (for kinds that cannot be watched, G6), in addition to the built-in list.
    pub fn exclude_kind(&mut self, group: &str, version: &str, kind: &str) -> &mut Self {
        self.exclude_kinds
            .insert((group.into(), version.into(), kind.into()));
        self
    }

    /// Also generates the compact type of built-in kind `group/version/kind` (P1-P3) and a
    /// `compact()` accessor on its handle. The kind must be selected too (`include_kind`/`include_group`).
    pub fn compact_kind(&mut self, group: &str, version: &str, kind: &str) -> &mut Self {
        self.compact_kinds
            .insert((group.into(), version.into(), kind.into()));
        self
    }

    /// Scans a Rust source (relative to `root`) for `#[derive(Informer)]` types living in module `module`.
    pub fn derive_source(&mut self, path: &str, module: &str) -> &mut Self {
        self.derive_sources.push((path.into(), module.into()));
        self
    }

    /// Reads CRD manifests from a YAML file; the Rust type of kind `K` version `v` is `{module}::{v}::{K}`.
    pub fn crd_manifest(&mut self, path: &str, module: &str) -> &mut Self {
        self.crd_manifests.push((path.into(), module.into()));
        self
    }

    /// Reads CRD manifests from a YAML file and generates their Rust types from each served
    /// version's `openAPIV3Schema` (issue 13) into the generated module `module` (a snake_case
    /// name beside the group modules): kind `K` of version `v` is `<generated>::{module}::{v}::{K}`,
    /// nested objects are `{v}::{K}{Field}…`. The kinds get accessors as with [`Self::crd_manifest`],
    /// on the generated types.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // build.rs
    /// let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    /// informer_gen::Builder::new()
    ///     .root(std::env::var("CARGO_MANIFEST_DIR")?)
    ///     .crd_types("crds/widgets.yaml", "widgets")
    ///     .layout(informer_gen::Layout::SingleFile("informers.rs".into()))
    ///     .generate()?
    ///     .write_to(&out)?;
    /// // src/lib.rs: pub mod informers { include!(concat!(env!("OUT_DIR"), "/informers.rs")); }
    /// // then: informers::widgets::v1::Widget, factory.example().v1().widgets()
    /// # Ok(()) }
    /// ```
    pub fn crd_types(&mut self, path: &str, module: &str) -> &mut Self {
        self.crd_types.push((path.into(), module.into()));
        self
    }

    /// Overrides the accessor of `group` (G1), e.g. when two groups share a first DNS label.
    pub fn group_accessor(&mut self, group: &str, accessor: &str) -> &mut Self {
        self.group_accessors.insert(group.into(), accessor.into());
        self
    }

    /// Overrides the accessor of the resource `plural` in `group` (G2 irregular-plural table).
    pub fn kind_accessor(&mut self, group: &str, plural: &str, accessor: &str) -> &mut Self {
        self.kind_accessors
            .insert((group.into(), plural.into()), accessor.into());
        self
    }

    /// How the output is split into files.
    pub fn layout(&mut self, layout: Layout) -> &mut Self {
        self.layout = layout;
        self
    }

    /// The command the header tells readers to run (default `cargo codegen`).
    pub fn regenerate_command(&mut self, command: &str) -> &mut Self {
        self.command = command.into();
        self
    }

    /// Reads every input, validates the whole model and emits the files; all problems are returned together.
    pub fn generate(&self) -> Result<Generated, Errors> {
        let mut errors = Vec::new();
        self.check_config(&mut errors);
        let (mut model, inputs) = self.model(&mut errors);
        let graph = self.compact_graph(&mut model, &mut errors);
        let schema_graphs: Vec<TypeGraph> = self
            .crd_types
            .iter()
            .map(|(rel, _)| types::crd::read_types(&self.path(rel), rel, &mut errors))
            .collect();
        self.check_type_modules(&model, &mut errors);
        if !errors.is_empty() {
            return Err(Errors(errors));
        }
        let rt: syn::Path =
            syn::parse_str(&self.runtime_crate).expect("bug: validated in check_config");
        let k8s: syn::Path =
            syn::parse_str(&self.k8s_crate).expect("bug: validated in check_config");
        let paths = Paths {
            rt: quote::quote!(#rt::__private),
        };
        let mut emitted = emit::emit(&model, &paths);
        let type_paths = TypePaths {
            rt: quote::quote!(#rt::__private),
            rt_str: format!("{}::__private", self.runtime_crate),
            k8s: quote::quote!(#k8s),
        };
        if !graph.is_empty() {
            emitted.compact = Some(types::emit::compact_module(&graph, &type_paths));
        }
        for ((rel, module), graph) in self.crd_types.iter().zip(&schema_graphs) {
            emitted.groups.push(emit::GroupModule {
                ident: naming::ident(module),
                file_stem: module.clone(),
                doc: format!(" Types generated from the CRD schemas in `{rel}` (`crd-types`)."),
                body: types::emit::schema_module(graph, &type_paths, rel),
            });
        }
        let header = render::header(&inputs, &self.command);
        let files = render::render(emitted, &self.layout, &header);
        Ok(Generated { files })
    }

    /// The validated model, for tests and tools that want the IR.
    pub fn model_only(&self) -> Result<Model, Errors> {
        let mut errors = Vec::new();
        self.check_config(&mut errors);
        let (model, _) = self.model(&mut errors);
        if errors.is_empty() {
            Ok(model)
        } else {
            Err(Errors(errors))
        }
    }

    /// The type graph of the compact kinds, marking them in `model`; unselected or non-built-in
    /// compact kinds are errors.
    fn compact_graph(&self, model: &mut Model, errors: &mut Vec<Error>) -> TypeGraph {
        if self.compact_kinds.is_empty() {
            return TypeGraph::new();
        }
        let k8s_prefix = format!("{}::", self.k8s_crate.trim_end_matches("::"));
        let mut roots = Vec::new();
        for (g, v, k) in &self.compact_kinds {
            let kind = model
                .groups
                .get_mut(g)
                .and_then(|grp| grp.versions.get_mut(v))
                .and_then(|ver| ver.kinds.get_mut(k));
            let Some(kind) = kind else {
                errors.push(Error::InvalidName {
                    what: "compact kind",
                    value: format!("{g}/{v}/{k}"),
                    reason: "not a selected kind: select it with include_kind or include_group too"
                        .into(),
                });
                continue;
            };
            let Some(rel) = kind
                .rust_type
                .strip_prefix(&k8s_prefix)
                .filter(|_| kind.origin == Origin::Builtin)
            else {
                errors.push(Error::InvalidName {
                    what: "compact kind",
                    value: format!("{g}/{v}/{k}"),
                    reason: "compact types are generated for built-in (k8s-openapi) kinds only"
                        .into(),
                });
                continue;
            };
            kind.compact = Some(format!("compact::{rel}"));
            roots.push(rel.to_owned());
        }
        let graph = match &self.k8s {
            Some(k8s) if !roots.is_empty() => types::k8s::read_graph(k8s, &roots, errors),
            _ => TypeGraph::new(),
        };
        // A cached kind is keyed by its metadata (P6): every root needs `metadata: ObjectMeta`.
        for root in &roots {
            let Some(def) = graph.get(root) else { continue };
            let has_meta = def.fields.iter().any(|f| {
                f.rust == "metadata"
                    && f.ty == types::Ty::Struct(types::emit::OBJECT_META.to_owned())
            });
            if !has_meta {
                errors.push(Error::SourceType {
                    path: self.k8s.as_ref().map(K8sOpenApi::version_dir).unwrap_or_default(),
                    item: root.clone(),
                    reason: "a compact kind needs a `metadata: ObjectMeta` field (its key, UID and resourceVersion)".into(),
                });
            }
        }
        graph
    }

    /// `crd_types` modules sit beside the group modules and `compact`: their names must be
    /// snake_case and distinct from those.
    fn check_type_modules(&self, model: &Model, errors: &mut Vec<Error>) {
        let mut seen: BTreeSet<&str> = model.groups.values().map(|g| g.accessor.as_str()).collect();
        seen.insert("compact");
        for (_, module) in &self.crd_types {
            if !naming::is_snake_ident(module) {
                errors.push(Error::InvalidName {
                    what: "crd-types module",
                    value: module.clone(),
                    reason: "expected a snake_case identifier".into(),
                });
            } else if !seen.insert(module) {
                errors.push(Error::InvalidName {
                    what: "crd-types module",
                    value: module.clone(),
                    reason: "already the name of a group module, `compact` or another `crd-types` module; choose another".into(),
                });
            }
        }
    }

    fn check_config(&self, errors: &mut Vec<Error>) {
        let paths = [
            ("runtime crate path", &self.runtime_crate),
            ("k8s-openapi crate path", &self.k8s_crate),
        ];
        let modules = self
            .derive_sources
            .iter()
            .chain(&self.crd_manifests)
            .map(|(_, m)| ("module path", m));
        for (what, value) in paths.into_iter().chain(modules) {
            if syn::parse_str::<syn::Path>(value).is_err() {
                errors.push(Error::InvalidName {
                    what,
                    value: value.clone(),
                    reason: "not a Rust path".into(),
                });
            }
        }
        let accessors = self
            .group_accessors
            .values()
            .chain(self.kind_accessors.values());
        for value in accessors {
            if !naming::is_snake_ident(value) {
                errors.push(Error::InvalidName {
                    what: "accessor",
                    value: value.clone(),
                    reason: "expected a snake_case identifier".into(),
                });
            }
        }
    }

    fn model(&self, errors: &mut Vec<Error>) -> (Model, String) {
        let mut kinds = Vec::new();
        let mut inputs = Vec::new();
        if !self.include_groups.is_empty() || !self.include_kinds.is_empty() {
            match &self.k8s {
                Some(k8s) => {
                    inputs.push(k8s.describe());
                    kinds.extend(self.builtins(k8s, errors));
                }
                None => errors.push(Error::K8sOpenApi {
                    reason:
                        "built-in kinds were selected but no k8s-openapi sources were configured"
                            .into(),
                }),
            }
        }
        for (rel, module) in &self.derive_sources {
            inputs.push(rel.clone());
            kinds.extend(rust_src::read_derives(&self.path(rel), rel, module, errors));
        }
        for (rel, module) in &self.crd_manifests {
            inputs.push(rel.clone());
            kinds.extend(crd::read_crds(&self.path(rel), rel, module, errors));
        }
        for (rel, module) in &self.crd_types {
            inputs.push(rel.clone());
            // The handles live in `<root>::<group>::<version>`; the types in `<root>::<module>`.
            let path = format!("super::super::{}", naming::ident(module));
            kinds.extend(crd::read_crds(&self.path(rel), rel, &path, errors));
        }
        let model = self.assemble(kinds, errors);
        let inputs = if inputs.is_empty() {
            "no inputs".to_owned()
        } else {
            inputs.join(", ")
        };
        (model, inputs)
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    fn builtins(&self, k8s: &K8sOpenApi, errors: &mut Vec<Error>) -> Vec<Kind> {
        let all = k8s_openapi::read_builtins(k8s, &self.k8s_crate, errors);
        if all.is_empty() {
            return all;
        }
        let groups: BTreeSet<&str> = all.iter().map(|k| k.group.as_str()).collect();
        for g in &self.include_groups {
            if !groups.contains(g.as_str()) {
                errors.push(Error::UnknownGroup {
                    group: g.clone(),
                    setting: "include_group",
                });
            }
        }
        for (g, v, k) in &self.include_kinds {
            if !all
                .iter()
                .any(|b| (&b.group, &b.version, &b.kind) == (g, v, k))
            {
                errors.push(Error::UnknownKind {
                    group: g.clone(),
                    version: v.clone(),
                    kind: k.clone(),
                });
            }
        }
        let excluded = |k: &Kind| {
            fixups::UNWATCHABLE.contains(&(k.group.as_str(), k.version.as_str(), k.kind.as_str()))
                || self.exclude_kinds.contains(&(
                    k.group.clone(),
                    k.version.clone(),
                    k.kind.clone(),
                ))
        };
        all.into_iter()
            .filter(|k| {
                self.include_groups.contains(&k.group)
                    || self.include_kinds.contains(&(
                        k.group.clone(),
                        k.version.clone(),
                        k.kind.clone(),
                    ))
            })
            .filter(|k| !excluded(k))
            .collect()
    }

    fn assemble(&self, kinds: Vec<Kind>, errors: &mut Vec<Error>) -> Model {
        let mut model = Model::default();
        for mut kind in kinds {
            if let Some(a) = self
                .kind_accessors
                .get(&(kind.group.clone(), kind.plural.clone()))
            {
                kind.accessor = a.clone();
            }
            let group = model
                .groups
                .entry(kind.group.clone())
                .or_insert_with(|| Group {
                    name: kind.group.clone(),
                    accessor: self
                        .group_accessors
                        .get(&kind.group)
                        .cloned()
                        .unwrap_or_else(|| naming::group_accessor(&kind.group)),
                    versions: BTreeMap::new(),
                });
            let version = group.versions.entry(kind.version.clone()).or_default();
            version.name = kind.version.clone();
            if let Some(first) = version.kinds.get(&kind.kind) {
                errors.push(Error::DuplicateKind {
                    group: kind.group.clone(),
                    version: kind.version.clone(),
                    kind: kind.kind.clone(),
                    first: first.input.clone(),
                    second: kind.input.clone(),
                });
                continue;
            }
            version.kinds.insert(kind.kind.clone(), kind);
        }
        for g in self.group_accessors.keys() {
            if !model.groups.contains_key(g) {
                errors.push(Error::UnknownGroup {
                    group: g.clone(),
                    setting: "group_accessor",
                });
            }
        }
        let mut by_accessor: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for g in model.groups.values() {
            by_accessor
                .entry(&g.accessor)
                .or_default()
                .push(g.name.clone());
            for v in g.versions.values() {
                let mut kinds: BTreeMap<&str, Vec<String>> = BTreeMap::new();
                for k in v.kinds.values() {
                    kinds.entry(&k.accessor).or_default().push(k.kind.clone());
                }
                for (accessor, kinds) in kinds.into_iter().filter(|(_, k)| k.len() > 1) {
                    errors.push(Error::KindAccessorCollision {
                        group: g.name.clone(),
                        version: v.name.clone(),
                        accessor: accessor.to_owned(),
                        kinds,
                    });
                }
            }
        }
        for (accessor, groups) in by_accessor.into_iter().filter(|(_, g)| g.len() > 1) {
            errors.push(Error::GroupAccessorCollision {
                accessor: accessor.to_owned(),
                groups,
            });
        }
        model
    }
}

/// The generated files, keyed by file name relative to the output directory, in sorted order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generated {
    files: BTreeMap<String, String>,
}

impl Generated {
    /// File name → contents.
    pub fn files(&self) -> &BTreeMap<String, String> {
        &self.files
    }

    /// Writes every file whose contents changed and deletes `.rs` files in `dir` that carry the
    /// generated header but are no longer produced (G8). Returns the paths written or deleted.
    pub fn write_to(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir)?;
        let mut touched = Vec::new();
        for (name, contents) in &self.files {
            let path = dir.join(name);
            if std::fs::read_to_string(&path).ok().as_deref() != Some(contents.as_str()) {
                std::fs::write(&path, contents)?;
                touched.push(path);
            }
        }
        for stale in self.stale_files(dir)? {
            std::fs::remove_file(&stale)?;
            touched.push(stale);
        }
        Ok(touched)
    }

    /// Generated-header `.rs` files in `dir` that this output no longer contains.
    pub fn stale_files(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        let mut stale = Vec::new();
        if !dir.is_dir() {
            return Ok(stale);
        }
        for entry in std::fs::read_dir(dir)? {
            let path = entry?.path();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if path.extension().is_some_and(|e| e == "rs")
                && !self.files.contains_key(&name)
                && std::fs::read_to_string(&path).is_ok_and(|t| t.starts_with(GENERATED_MARKER))
            {
                stale.push(path);
            }
        }
        stale.sort();
        Ok(stale)
    }
}
