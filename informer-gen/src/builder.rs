//! The `Builder` used from build.rs, xtask and the CLI: it collects the configuration and runs
//! the pipeline (read, lower, validate, emit, render); every step lives in its own module.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::K8sOpenApi;
use crate::error::Errors;
use crate::render::{self, GENERATED_MARKER, Layout};
use crate::settings::Settings;
use crate::{emit, lower, read, validate};

/// Configures one generator run (prost-build style `&mut Self` chain).
#[derive(Debug, Clone, Default)]
pub struct Builder {
    settings: Settings,
}

impl Builder {
    /// A builder with no inputs, `Layout::Modules` and the `cargo codegen` regenerate command.
    pub fn new() -> Self {
        Self::default()
    }

    /// The directory relative input paths are resolved against; headers show paths relative to it.
    pub fn root(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.settings.root = dir.into();
        self
    }

    /// Reads built-in kinds from these k8s-openapi sources (`K8sOpenApi::locate` finds them).
    pub fn k8s_openapi(&mut self, k8s: K8sOpenApi) -> &mut Self {
        self.settings.k8s = Some(k8s);
        self
    }

    /// The path generated code uses for k8s-openapi (default `::k8s_openapi`).
    pub fn k8s_openapi_crate(&mut self, path: &str) -> &mut Self {
        self.settings.k8s_crate = path.into();
        self
    }

    /// The path of the runtime crate (default `::informer_runtime`), for crates that re-export it.
    pub fn runtime_crate(&mut self, path: &str) -> &mut Self {
        self.settings.runtime_crate = path.into();
        self
    }

    /// Includes every listable built-in kind of `group` (`""` for core).
    pub fn include_group(&mut self, group: &str) -> &mut Self {
        self.settings.include_groups.insert(group.into());
        self
    }

    /// Includes one built-in kind.
    pub fn include_kind(&mut self, group: &str, version: &str, kind: &str) -> &mut Self {
        self.settings
            .include_kinds
            .insert((group.into(), version.into(), kind.into()));
        self
    }

    /// Excludes one built-in kind (for kinds that cannot be watched, G6), in addition to the built-in list.
    pub fn exclude_kind(&mut self, group: &str, version: &str, kind: &str) -> &mut Self {
        self.settings
            .exclude_kinds
            .insert((group.into(), version.into(), kind.into()));
        self
    }

    /// Also generates the compact type of built-in kind `group/version/kind` (P1-P3) and a
    /// `compact()` accessor on its handle. The kind must be selected too (`include_kind`/`include_group`).
    pub fn compact_kind(&mut self, group: &str, version: &str, kind: &str) -> &mut Self {
        self.settings
            .compact_kinds
            .insert((group.into(), version.into(), kind.into()));
        self
    }

    /// Scans a Rust source (relative to `root`) for `#[derive(Informer)]` types living in module `module`.
    pub fn derive_source(&mut self, path: &str, module: &str) -> &mut Self {
        self.settings
            .derive_sources
            .push((path.into(), module.into()));
        self
    }

    /// Reads CRD manifests from a YAML file; the Rust type of kind `K` version `v` is `{module}::{v}::{K}`.
    pub fn crd_manifest(&mut self, path: &str, module: &str) -> &mut Self {
        self.settings
            .crd_manifests
            .push((path.into(), module.into()));
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
        self.settings.crd_types.push((path.into(), module.into()));
        self
    }

    /// Overrides the accessor of `group` (G1), e.g. when two groups share a first DNS label.
    pub fn group_accessor(&mut self, group: &str, accessor: &str) -> &mut Self {
        self.settings
            .group_accessors
            .insert(group.into(), accessor.into());
        self
    }

    /// Overrides the accessor of the resource `plural` in `group` (G2 irregular-plural table).
    pub fn kind_accessor(&mut self, group: &str, plural: &str, accessor: &str) -> &mut Self {
        self.settings
            .kind_accessors
            .insert((group.into(), plural.into()), accessor.into());
        self
    }

    /// How the output is split into files.
    pub fn layout(&mut self, layout: Layout) -> &mut Self {
        self.settings.layout = layout;
        self
    }

    /// The command the header tells readers to run (default `cargo codegen`).
    pub fn regenerate_command(&mut self, command: &str) -> &mut Self {
        self.settings.command = command.into();
        self
    }

    /// Reads every input once, lowers and validates the whole model, and emits the files; all
    /// problems are returned together.
    pub fn generate(&self) -> Result<Generated, Errors> {
        let s = &self.settings;
        let mut errors = Vec::new();
        validate::settings(s, &mut errors);
        let inputs = read::read_inputs(s, &mut errors);
        let model = lower::lower(s, inputs, &mut errors);
        validate::model(s, &model, &mut errors);
        if !errors.is_empty() {
            return Err(Errors(errors));
        }
        let paths = emit::Paths::new(&s.runtime_crate, &s.k8s_crate);
        let emitted = emit::emit(&model, &paths);
        let header = render::header(&model.inputs, &s.command);
        Ok(Generated {
            files: render::render(emitted, &s.layout, &header),
        })
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
