//! The configuration file that fills a [`Builder`]; used by xtask, the fixtures and build scripts.
//!
//! `informer-gen.toml` (TOML, read with the `toml` crate and serde; every mistake is reported
//! with its line and column). [`Builder::from_build_script`](crate::Builder::from_build_script)
//! and the `informer-gen` CLI read the same file:
//!
//! ```toml
//! # Optional: where `Builder::write` and the CLI write, relative to this file. Default: `OUT_DIR`
//! # (one file, `informers.rs`, to `include!`); with a folder, `mod.rs` plus one file per group.
//! out-dir = "src/generated"
//! single-file = "informers.rs"                        # optional: one file even in a folder
//! # Optional and checked: the version must equal the one k8s-openapi is built for (its `v1_*`
//! # feature); without it, that version is used.
//! k8s-version = "1.37"
//! include-groups = ["apps"]
//! include-kinds = ["apps/v1/Deployment", "/v1/Pod"]   # core group: /v1/Pod
//! exclude-kinds = ["/v1/Event"]                      # any input's kind, a CRD's version too
//! compact-kinds = ["/v1/Pod"]                         # also generate the compact Pod (P1)
//! derive-sources = [{ path = "src/crd.rs", module = "crate::crd" }]
//! crds = [{ path = "crds/bar.yaml", module = "crate::crds" }]
//! # types generated from the schemas, in the generated module `widgets`
//! crd-types = [{ path = "crds/widgets.yaml", module = "widgets" }]
//!
//! [group-accessors]
//! "networking.example.com" = "example_networking"
//!
//! [[kind-accessors]]
//! group = "example.com"
//! plural = "feet"
//! accessor = "foot_list"
//! ```
//!
//! The older line format (`informer-gen.conf`, one directive per line: `include-kind apps/v1/Deployment`,
//! `crd-types crds/widgets.yaml widgets`, …) is still read when no `informer-gen.toml` exists.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

use crate::K8sOpenApi;
use crate::builder::Builder;
use crate::error::{Error, Errors};

/// The configuration file name looked up by [`builder_for_dir`].
pub const CONFIG_FILE: &str = "informer-gen.toml";

/// The older line-based configuration file, read when [`CONFIG_FILE`] is absent.
pub const LEGACY_CONFIG_FILE: &str = "informer-gen.conf";

/// The configuration file in `dir`: [`CONFIG_FILE`], else [`LEGACY_CONFIG_FILE`], if either exists.
pub fn config_file(dir: &Path) -> Option<PathBuf> {
    [CONFIG_FILE, LEGACY_CONFIG_FILE]
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
}

/// A builder rooted at `dir`, configured from `dir/informer-gen.toml` (or the legacy
/// `dir/informer-gen.conf`), reading built-ins from `k8s` if given.
pub fn builder_for_dir(dir: &Path, k8s: Option<K8sOpenApi>) -> Result<Builder, Errors> {
    let path = config_file(dir).unwrap_or_else(|| dir.join(CONFIG_FILE));
    let mut builder = builder_for_file(&path)?;
    if let Some(k8s) = k8s {
        builder.k8s_openapi(k8s);
    }
    Ok(builder)
}

/// A builder configured from the file at `path` (TOML, or the legacy line format when it is
/// named `informer-gen.conf`), rooted at the file's directory: input paths and `out-dir` in it
/// are relative to where it lives.
pub fn builder_for_file(path: &Path) -> Result<Builder, Errors> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        path: path.to_owned(),
        source,
    })?;
    let mut builder = Builder::new();
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    builder.root(dir.unwrap_or(Path::new(".")));
    builder.config_path(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let applied = if name == LEGACY_CONFIG_FILE {
        apply(&mut builder, &text, &name)
    } else {
        apply_toml(&mut builder, &text, Path::new(&name))
    };
    applied.map_err(Errors)?;
    Ok(builder)
}

impl Builder {
    /// The builder a build script wants: rooted at `CARGO_MANIFEST_DIR` and configured from its
    /// `informer-gen.toml` when there is one (add or override settings on the result). The
    /// Kubernetes version of the built-in kinds is the one the crate's k8s-openapi dependency is
    /// built for (its `v1_*` feature), so k8s-openapi must be a direct `[dependencies]` entry.
    ///
    /// ```no_run
    /// // build.rs
    /// fn main() -> Result<(), informer_gen::Errors> {
    ///     informer_gen::Builder::from_build_script()?.write()?;
    ///     Ok(())
    /// }
    /// ```
    pub fn from_build_script() -> Result<Builder, Errors> {
        let dir = std::env::var_os("CARGO_MANIFEST_DIR").ok_or(Error::Environment {
            variable: "CARGO_MANIFEST_DIR",
            reason: "`Builder::from_build_script` runs in a build script; elsewhere use \
                     `Builder::from_dir`"
                .into(),
        })?;
        Self::from_dir(Path::new(&dir))
    }

    /// A builder rooted at `dir`, configured from `dir/informer-gen.toml` (or the older
    /// `informer-gen.conf`) when it exists, else with no inputs.
    pub fn from_dir(dir: &Path) -> Result<Builder, Errors> {
        match config_file(dir) {
            Some(path) => builder_for_file(&path),
            None => {
                let mut builder = Builder::new();
                builder.root(dir);
                Ok(builder)
            }
        }
    }
}

/// The TOML configuration, as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct ConfigFile {
    #[serde(default)]
    out_dir: Option<String>,
    #[serde(default)]
    single_file: Option<String>,
    #[serde(default)]
    k8s_version: Option<Spanned<String>>,
    #[serde(default)]
    include_groups: Vec<String>,
    #[serde(default)]
    include_kinds: Vec<Spanned<String>>,
    #[serde(default)]
    exclude_kinds: Vec<Spanned<String>>,
    #[serde(default)]
    compact_kinds: Vec<Spanned<String>>,
    #[serde(default)]
    derive_sources: Vec<PathModule>,
    #[serde(default)]
    crds: Vec<PathModule>,
    #[serde(default)]
    crd_types: Vec<PathModule>,
    #[serde(default)]
    group_accessors: BTreeMap<String, String>,
    #[serde(default)]
    kind_accessors: Vec<KindAccessor>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PathModule {
    path: String,
    module: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KindAccessor {
    group: String,
    plural: String,
    accessor: String,
}

/// Applies the TOML configuration `text` (read from `path`, for errors) to `builder`; every
/// problem is reported with its line and column.
pub(crate) fn apply_toml(builder: &mut Builder, text: &str, path: &Path) -> Result<(), Vec<Error>> {
    let at = |span: Option<Range<usize>>, message: String| {
        let (line, column) = line_column(text, span.map_or(0, |s| s.start));
        Error::Config {
            path: path.to_owned(),
            line,
            column,
            message,
        }
    };
    let config: ConfigFile = match toml::from_str(text) {
        Ok(c) => c,
        Err(e) => return Err(vec![at(e.span(), e.message().trim().to_owned())]),
    };
    let mut errors = Vec::new();
    let mut gvks = |list: &[Spanned<String>]| -> Vec<(String, String, String)> {
        list.iter()
            .filter_map(|k| match gvk(k.get_ref()) {
                Some(t) => Some(t),
                None => {
                    errors.push(at(
                        Some(k.span()),
                        format!(
                            "`{}` is not `group/version/Kind` (`/v1/Pod` for the core group)",
                            k.get_ref()
                        ),
                    ));
                    None
                }
            })
            .collect()
    };
    let (include, exclude, compact) = (
        gvks(&config.include_kinds),
        gvks(&config.exclude_kinds),
        gvks(&config.compact_kinds),
    );
    if let Some(v) = &config.k8s_version
        && !crate::k8s_version::is_release(v.get_ref())
    {
        errors.push(at(
            Some(v.span()),
            format!("`{}` is not a Kubernetes version like `1.37`", v.get_ref()),
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if let Some(dir) = &config.out_dir {
        builder.out_dir(dir);
    }
    if let Some(name) = &config.single_file {
        builder.layout(crate::Layout::SingleFile(name.clone()));
    }
    if let Some(v) = &config.k8s_version {
        let (line, _) = line_column(text, v.span().start);
        builder.set_k8s_version(
            v.get_ref(),
            &format!("`k8s-version` in {}:{line}", path.display()),
        );
    }
    for g in &config.include_groups {
        builder.include_group(g);
    }
    for (g, v, k) in &include {
        builder.include_kind(g, v, k);
    }
    for (g, v, k) in &exclude {
        builder.exclude_kind(g, v, k);
    }
    for (g, v, k) in &compact {
        builder.compact_kind(g, v, k);
    }
    for s in &config.derive_sources {
        builder.derive_source(&s.path, &s.module);
    }
    for s in &config.crds {
        builder.crd_manifest(&s.path, &s.module);
    }
    for s in &config.crd_types {
        builder.crd_types(&s.path, &s.module);
    }
    for (g, a) in &config.group_accessors {
        builder.group_accessor(g, a);
    }
    for k in &config.kind_accessors {
        builder.kind_accessor(&k.group, &k.plural, &k.accessor);
    }
    Ok(())
}

fn gvk(s: &str) -> Option<(String, String, String)> {
    let mut p = s.splitn(3, '/');
    let (g, v, k) = (p.next()?, p.next()?, p.next()?);
    (!v.is_empty() && !k.is_empty()).then(|| (g.to_owned(), v.to_owned(), k.to_owned()))
}

/// 1-based line and column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Applies every line of the legacy line format `text` (read from `path`, for errors) to
/// `builder`; all bad lines are reported.
pub(crate) fn apply(builder: &mut Builder, text: &str, path: &str) -> Result<(), Vec<Error>> {
    let mut errors = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or_default().trim();
        if line.is_empty() {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let ok = match words.as_slice() {
            ["include-group", g] => {
                builder.include_group(g.trim_matches('"'));
                true
            }
            ["include-kind", k] => gvk(k)
                .map(|(g, v, k)| builder.include_kind(&g, &v, &k))
                .is_some(),
            ["exclude-kind", k] => gvk(k)
                .map(|(g, v, k)| builder.exclude_kind(&g, &v, &k))
                .is_some(),
            ["compact-kind", k] => gvk(k)
                .map(|(g, v, k)| builder.compact_kind(&g, &v, &k))
                .is_some(),
            ["derive-source", p, m] => {
                builder.derive_source(p, m);
                true
            }
            ["crd", p, m] => {
                builder.crd_manifest(p, m);
                true
            }
            ["crd-types", p, m] => {
                builder.crd_types(p, m);
                true
            }
            ["group-accessor", g, a] => {
                builder.group_accessor(g.trim_matches('"'), a);
                true
            }
            ["kind-accessor", g, p, a] => {
                builder.kind_accessor(g.trim_matches('"'), p, a);
                true
            }
            _ => false,
        };
        if !ok {
            errors.push(Error::Config {
                path: path.into(),
                line: n + 1,
                column: 1,
                message: format!("`{line}`: unknown directive or wrong number of arguments"),
            });
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_legacy_lines_are_all_reported() {
        let mut b = Builder::new();
        let errs = apply(
            &mut b,
            "include-group apps\nbogus x\ncrd only-one\n",
            "c.conf",
        )
        .unwrap_err();
        assert_eq!(errs.len(), 2);
        assert!(
            errs[0].to_string().starts_with("c.conf:2:1: "),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn toml_errors_point_at_the_line() {
        let mut b = Builder::new();
        let text = "include-kinds = [\"apps/v1/Deployment\",\n  \"apps/Deployment\"]\n";
        let errs = apply_toml(&mut b, text, Path::new("g.toml")).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].to_string().starts_with("g.toml:2:3: "),
            "{}",
            errs[0]
        );
        let errs = apply_toml(
            &mut b,
            "crd-types = [{ path = \"a.yaml\" }]\n",
            Path::new("g.toml"),
        )
        .unwrap_err();
        assert!(errs[0].to_string().starts_with("g.toml:1:"), "{}", errs[0]);
        assert!(errs[0].to_string().contains("module"), "{}", errs[0]);
        let errs =
            apply_toml(&mut b, "\n\nincluded-kinds = []\n", Path::new("g.toml")).unwrap_err();
        assert!(
            errs[0].to_string().starts_with("g.toml:3:1: "),
            "{}",
            errs[0]
        );
        assert!(
            errs[0].to_string().contains("included-kinds"),
            "{}",
            errs[0]
        );
    }

    #[test]
    fn toml_fills_the_builder_like_the_legacy_format() {
        let toml_text = "include-kinds = [\"/v1/Pod\"]\ncompact-kinds = [\"/v1/Pod\"]\n\
            crd-types = [{ path = \"w.yaml\", module = \"widgets\" }]\n\
            [group-accessors]\n\"a.example.com\" = \"a_ex\"\n\
            [[kind-accessors]]\ngroup = \"example.com\"\nplural = \"feet\"\naccessor = \"foot_list\"\n";
        let legacy = "include-kind /v1/Pod\ncompact-kind /v1/Pod\ncrd-types w.yaml widgets\n\
            group-accessor a.example.com a_ex\nkind-accessor example.com feet foot_list\n";
        let (mut a, mut b) = (Builder::new(), Builder::new());
        apply_toml(&mut a, toml_text, Path::new("g.toml")).unwrap();
        apply(&mut b, legacy, "g.conf").unwrap();
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }
}
