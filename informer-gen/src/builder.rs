//! The `Builder` used from build.rs, xtask and the CLI: it collects the configuration and runs
//! the pipeline (read, lower, validate, emit, render); every step lives in its own module.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::K8sOpenApi;
use crate::error::{Error, Errors};
use crate::k8s_version::{self, Chosen};
use crate::render::{self, GENERATED_MARKER, Layout};
use crate::settings::Settings;
use crate::{emit, lower, read, validate};

/// The file [`Builder::write`] produces in `OUT_DIR` unless a layout is configured.
pub const OUT_DIR_FILE: &str = "informers.rs";

/// Configures one generator run (prost-build style `&mut Self` chain).
///
/// In a build script, [`Builder::from_build_script`] reads `informer-gen.toml` and
/// [`Builder::write`] generates into `OUT_DIR`; see the crate documentation for the whole recipe.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    settings: Settings,
    /// The configuration file read, if any (a build script reruns when it changes).
    config: Option<PathBuf>,
}

impl Builder {
    /// A builder with no inputs and `Layout::Modules`, rooted at the current directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// The directory relative input paths are resolved against; headers show paths relative to it.
    pub fn root(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.settings.root = dir.into();
        self
    }

    /// Reads built-in kinds from these k8s-openapi sources. Without it, the generator finds
    /// k8s-openapi with `cargo metadata` in [`root`](Self::root) when built-in kinds are selected.
    pub fn k8s_openapi(&mut self, k8s: K8sOpenApi) -> &mut Self {
        self.settings.k8s = Some(k8s);
        self
    }

    /// The Kubernetes version (`"1.37"`) whose built-in kinds are read. Not needed: by default it
    /// is the version k8s-openapi is built for (the `v1_*` feature the crate enables, else
    /// `K8S_OPENAPI_ENABLED_VERSION`). When both are known and differ, [`generate`](Self::generate)
    /// fails naming both.
    pub fn k8s_version(&mut self, version: &str) -> &mut Self {
        self.set_k8s_version(version, "`Builder::k8s_version`")
    }

    /// Records the configuration file this builder was filled from.
    pub(crate) fn config_path(&mut self, path: &Path) -> &mut Self {
        self.config = Some(path.to_owned());
        self
    }

    pub(crate) fn set_k8s_version(&mut self, version: &str, by: &str) -> &mut Self {
        self.settings.k8s_version = Some(Chosen::new(version, by));
        self
    }

    /// Where [`write`](Self::write) puts the files, relative to [`root`](Self::root) (a
    /// checked-in folder such as `src/generated`); by default `OUT_DIR`.
    pub fn out_dir(&mut self, dir: impl Into<PathBuf>) -> &mut Self {
        self.settings.out_dir = Some(dir.into());
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

    /// Leaves out one kind, whatever input defines it: a built-in kind (beside the ones that cannot
    /// be watched, G6), a version of a CRD manifest's kind (`crd_manifest`, `crd_types`: a
    /// `crd-types` version's types go with it, but for the ones a kind still generated holds) or
    /// a derive source's. A kind no input defines is
    /// [`Error::ExcludedKindUnknown`](crate::Error::ExcludedKindUnknown).
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

    /// Compiles the compact types and the `compact()` accessors only when the crate compiling the
    /// output enables the cargo feature `feature` (`#[cfg(feature = "...")]`), for a crate that
    /// ships them as an option, as informer-k8s does.
    ///
    /// With [`K8sOpenApi::every_version`] the compact types are generated once per Kubernetes
    /// version, each behind the `cfg` of its version, since a kind's fields differ between
    /// versions; the accessors name whichever version the crate is compiled for.
    pub fn compact_feature(&mut self, feature: &str) -> &mut Self {
        self.settings.compact_feature = Some(feature.into());
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
    /// version's `openAPIV3Schema` (decision record 07) into the generated module `module` (a
    /// snake_case name beside the group modules): kind `K` of version `v` is
    /// `<generated>::{module}::{v}::{K}`, the compact form its handles cache, and
    /// `<generated>::{module}::{v}::full::{K}`, the full form `kube::Api` takes (decision record
    /// 27); nested objects are `{v}::{K}{Field}…`, held by both. The kinds get accessors as with
    /// [`Self::crd_manifest`], on the generated types. The compact form holds informer-k8s's
    /// compact `ObjectMeta` (the crate's own when it generates compact kinds), so the crate
    /// compiling the output depends on informer-k8s. Several manifests may name one module; a type
    /// two of them would both generate is an error.
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

    /// How the output is split into files. By default [`write`](Self::write) writes one file,
    /// [`OUT_DIR_FILE`], into `OUT_DIR`, and `mod.rs` plus a file per group into an
    /// [`out_dir`](Self::out_dir).
    pub fn layout(&mut self, layout: Layout) -> &mut Self {
        self.settings.layout = layout;
        self.settings.layout_set = true;
        self
    }

    /// The command the generated header tells readers to run to regenerate the files. By default
    /// the header says that build.rs regenerates them (in a build script) or names informer-gen.
    pub fn regenerate_command(&mut self, command: &str) -> &mut Self {
        self.settings.command = Some(command.into());
        self
    }

    /// Generates and writes the files into [`out_dir`](Self::out_dir), else into `OUT_DIR`
    /// (one file, [`OUT_DIR_FILE`], to `include!`), and deletes generated files there that are
    /// no longer produced. In a build script it also tells Cargo to rerun it when the
    /// configuration file or an input changes. Returns the paths written or deleted.
    pub fn write(&self) -> Result<Vec<PathBuf>, Errors> {
        let (generated, dir) = self.generate_for_destination()?;
        let touched = generated.write_to(&dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
        if in_build_script() {
            self.rerun_if_changed();
        }
        Ok(touched)
    }

    /// Like [`write`](Self::write), but writes nothing: returns the files that `write` would
    /// change or delete (empty when the output is fresh).
    pub fn check(&self) -> Result<Vec<PathBuf>, Errors> {
        let (generated, dir) = self.generate_for_destination()?;
        let io = |source| Error::Io {
            path: dir.clone(),
            source,
        };
        let mut stale = generated.stale_files(&dir).map_err(io)?;
        for (name, contents) in generated.files() {
            let path = dir.join(name);
            let on_disk = std::fs::read_to_string(&path).ok();
            if on_disk.map(|t| t.replace("\r\n", "\n")).as_deref() != Some(contents.as_str()) {
                stale.push(path);
            }
        }
        stale.sort();
        Ok(stale)
    }

    /// Generates for the output directory [`write`](Self::write) writes to, in its layout.
    fn generate_for_destination(&self) -> Result<(Generated, PathBuf), Errors> {
        let s = &self.settings;
        let dir = match &s.out_dir {
            Some(dir) => s.root.join(dir),
            None => std::env::var_os("OUT_DIR")
                .map(PathBuf::from)
                .ok_or(Error::Environment {
                    variable: "OUT_DIR",
                    reason: "outside a build script, give an output directory \
                             (`Builder::out_dir`, `out-dir` in informer-gen.toml, `--out`)"
                        .into(),
                })?,
        };
        if s.layout_set || s.out_dir.is_some() {
            return Ok((self.generate()?, dir));
        }
        let mut single = self.clone();
        single.settings.layout = Layout::SingleFile(OUT_DIR_FILE.into());
        Ok((single.generate()?, dir))
    }

    /// Prints Cargo's rerun directives for the configuration file and every input.
    #[allow(clippy::print_stdout)] // a build script talks to Cargo on stdout
    fn rerun_if_changed(&self) {
        let s = &self.settings;
        let inputs = s
            .derive_sources
            .iter()
            .chain(&s.crd_manifests)
            .chain(&s.crd_types)
            .map(|(path, _)| s.root.join(path));
        for path in self.config.iter().cloned().chain(inputs) {
            println!("cargo::rerun-if-changed={}", path.display());
        }
        println!("cargo::rerun-if-env-changed={}", k8s_version::ENV_VAR);
    }

    /// The k8s-openapi sources to read built-in kinds from: the ones given, checked against the
    /// versions known, or found through `cargo metadata` in `root`.
    fn k8s_sources(&self) -> Result<K8sOpenApi, Error> {
        let s = &self.settings;
        match &s.k8s {
            Some(k8s) => {
                k8s_version::check_given(&k8s.k8s_version)?;
                let given = Chosen::new(&k8s.k8s_version, "`Builder::k8s_openapi`");
                k8s_version::reconcile(s.k8s_version.as_ref(), Some(&given))?;
                Ok(k8s.clone())
            }
            None => K8sOpenApi::locate_for(&s.root, s.k8s_version.as_ref()),
        }
    }

    /// Reads every input once, lowers and validates the whole model, and emits the files; all
    /// problems are returned together.
    pub fn generate(&self) -> Result<Generated, Errors> {
        let mut errors = Vec::new();
        validate::settings(&self.settings, &mut errors);
        let mut resolved;
        let mut s = &self.settings;
        if !s.include_groups.is_empty() || !s.include_kinds.is_empty() {
            match self.k8s_sources() {
                Ok(k8s) => {
                    resolved = s.clone();
                    resolved.k8s = Some(k8s);
                    s = &resolved;
                }
                Err(e) => {
                    errors.push(e);
                    return Err(Errors(errors));
                }
            }
        }
        let inputs = read::read_inputs(s, &mut errors);
        let model = lower::lower(s, inputs, &mut errors);
        validate::model(s, &model, &mut errors);
        if !errors.is_empty() {
            return Err(Errors(errors));
        }
        let every_version = s.k8s.as_ref().map(|k| k.gated_versions.as_slice());
        let paths = emit::Paths::new(&s.runtime_crate, &s.k8s_crate)
            .with_compact_feature(s.compact_feature.as_deref())
            .with_k8s_versions(every_version.unwrap_or_default());
        let emitted = emit::emit(&model, &paths);
        let how = match &s.command {
            Some(command) => format!("run {command}"),
            None if in_build_script() => "build.rs regenerates it".into(),
            None => "regenerate it with informer-gen".into(),
        };
        let header = render::header(&model.inputs, &how);
        Ok(Generated {
            files: render::render(emitted, &s.layout, &header),
        })
    }
}

/// Whether this process is a build script (Cargo sets `TARGET` and `OUT_DIR` only for those).
fn in_build_script() -> bool {
    std::env::var_os("TARGET").is_some() && std::env::var_os("OUT_DIR").is_some()
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
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&path, contents)?;
                touched.push(path);
            }
        }
        touched.extend(self.remove_stale(dir)?);
        Ok(touched)
    }

    /// Deletes the [stale files](Self::stale_files) in `dir`, and each subdirectory of `dir` that
    /// this leaves empty (a module of an older split, `compact/api/core/`). Returns the files
    /// deleted.
    pub fn remove_stale(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        let stale = self.stale_files(dir)?;
        for path in &stale {
            std::fs::remove_file(path)?;
            let mut parent = path.parent();
            while let Some(sub) = parent.filter(|p| *p != dir && p.starts_with(dir)) {
                if std::fs::read_dir(sub)?.next().is_some() {
                    break;
                }
                std::fs::remove_dir(sub)?;
                parent = sub.parent();
            }
        }
        Ok(stale)
    }

    /// Generated-header `.rs` files in `dir` and its subdirectories that this output no longer
    /// contains (a file of an older layout, `compact.rs` or `compact/v1_37.rs`, included).
    pub fn stale_files(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        let mut stale = Vec::new();
        self.stale_in(dir, "", &mut stale)?;
        stale.sort();
        Ok(stale)
    }

    fn stale_in(&self, dir: &Path, prefix: &str, stale: &mut Vec<PathBuf>) -> std::io::Result<()> {
        if !dir.is_dir() {
            return Ok(());
        }
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            let path = entry.path();
            let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if entry.file_type()?.is_dir() {
                self.stale_in(&path, &format!("{name}/"), stale)?;
            } else if path.extension().is_some_and(|e| e == "rs")
                && !self.files.contains_key(&name)
                && std::fs::read_to_string(&path).is_ok_and(|t| t.starts_with(GENERATED_MARKER))
            {
                stale.push(path);
            }
        }
        Ok(())
    }
}
