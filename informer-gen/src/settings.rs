//! [`Settings`]: what a `Builder` was told, read by every step of the pipeline (read, lower,
//! validate, emit). Its own module, so the steps depend on it and not on the builder that runs
//! them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::K8sOpenApi;
use crate::k8s_version::Chosen;
use crate::render::Layout;

/// What a `Builder` was told, read by the pipeline's steps.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) root: PathBuf,
    pub(crate) k8s: Option<K8sOpenApi>,
    /// A Kubernetes version set explicitly (builder, configuration file, CLI), checked against
    /// the one k8s-openapi is built for.
    pub(crate) k8s_version: Option<Chosen>,
    pub(crate) k8s_crate: String,
    pub(crate) runtime_crate: String,
    pub(crate) include_groups: BTreeSet<String>,
    pub(crate) include_kinds: BTreeSet<(String, String, String)>,
    pub(crate) exclude_kinds: BTreeSet<(String, String, String)>,
    pub(crate) compact_kinds: BTreeSet<(String, String, String)>,
    /// The cargo feature of the crate compiling the output that gates the compact types and
    /// the `compact()` accessors; `None`: always compiled.
    pub(crate) compact_feature: Option<String>,
    /// `(path, module)` pairs.
    pub(crate) derive_sources: Vec<(String, String)>,
    /// `(path, module)` pairs.
    pub(crate) crd_manifests: Vec<(String, String)>,
    /// `(path, module)` pairs.
    pub(crate) crd_types: Vec<(String, String)>,
    pub(crate) group_accessors: BTreeMap<String, String>,
    /// `(group, plural)` → accessor.
    pub(crate) kind_accessors: BTreeMap<(String, String), String>,
    pub(crate) layout: Layout,
    /// Set by `layout` or the configuration file; otherwise `write` picks one for its directory.
    pub(crate) layout_set: bool,
    /// Where `Builder::write` writes (relative to `root`); `None`: `OUT_DIR`.
    pub(crate) out_dir: Option<PathBuf>,
    /// The command the header names; `None`: what fits how the generator runs (build.rs or not).
    pub(crate) command: Option<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            root: PathBuf::from("."),
            k8s: None,
            k8s_version: None,
            k8s_crate: "::k8s_openapi".into(),
            runtime_crate: "::informer_runtime".into(),
            include_groups: BTreeSet::new(),
            include_kinds: BTreeSet::new(),
            exclude_kinds: BTreeSet::new(),
            compact_kinds: BTreeSet::new(),
            compact_feature: None,
            derive_sources: Vec::new(),
            crd_manifests: Vec::new(),
            crd_types: Vec::new(),
            group_accessors: BTreeMap::new(),
            kind_accessors: BTreeMap::new(),
            layout: Layout::Modules,
            layout_set: false,
            out_dir: None,
            command: None,
        }
    }
}
