//! The one list of Kubernetes versions informer-rs is generated for, `xtask/k8s-versions.txt`:
//! read by `cargo codegen` (informer-k8s's accessors and compact types, informer-proto's table
//! and its Go modules) and by `cargo xtask k8s-versions`.
//!
//! Each line names a version and the exact Go module version its `schema-gen/k8s-1.MM/` module
//! pins, so that `go get` never resolves a prefix query (`@v0.38`, which falls back to a
//! pre-release) to whatever the module proxy holds that day:
//!
//! ```text
//! # <version> <module version> [<module>=<module version> ...] [ahead]
//! 1.37 v0.37.2
//! 1.38 v0.38.0-beta.0 k8s.io/apiextensions-apiserver=v0.37.2 k8s.io/kube-aggregator=v0.37.2 ahead
//! ```
//!
//! The module version applies to every module of [`MODULES`] but those named after it. `ahead`
//! marks a version k8s-openapi has no module for yet (docs/runbook-new-kubernetes-version.md).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, bail};

/// The list, relative to the workspace root.
pub(crate) const PATH: &str = "xtask/k8s-versions.txt";

/// The Go modules whose types and generated.proto files make informer-proto's table, each
/// pinned by every line of the list.
pub(crate) const MODULES: &[&str] = &[
    "k8s.io/api",
    "k8s.io/apimachinery",
    "k8s.io/apiextensions-apiserver",
    "k8s.io/kube-aggregator",
];

/// One line of the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct K8sVersion {
    /// `1.MM`.
    pub(crate) version: String,
    /// The Go module version of each of [`MODULES`] (`v0.37.2`), in that order.
    pub(crate) modules: Vec<(&'static str, String)>,
    /// No k8s-openapi module has this version yet.
    pub(crate) ahead: bool,
}

/// Every line of the list, oldest version first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct K8sVersions {
    pub(crate) versions: Vec<K8sVersion>,
}

impl K8sVersions {
    /// Reads [`PATH`] under the workspace root `root`.
    pub(crate) fn read(root: &Path) -> anyhow::Result<Self> {
        let path = root.join(PATH);
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        Self::parse(&text, PATH)
    }

    /// Parses the list's `text`; errors name `path` and the line.
    pub(crate) fn parse(text: &str, path: &str) -> anyhow::Result<Self> {
        let mut versions: Vec<K8sVersion> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or_default().trim();
            if line.is_empty() {
                continue;
            }
            let at = || format!("{path}:{}: {line:?}", i + 1);
            let version = parse_line(line).with_context(at)?;
            if let Some(last) = versions.last() {
                if minor(&version.version)? <= minor(&last.version)? {
                    return Err(anyhow::anyhow!(
                        "{} is not newer than {} on the line before; list each version once, oldest first",
                        version.version,
                        last.version
                    ))
                    .with_context(at);
                }
                if last.ahead && !version.ahead {
                    return Err(anyhow::anyhow!(
                        "{} follows {}, which is `ahead`; only the newest versions can be ahead of k8s-openapi",
                        version.version,
                        last.version
                    ))
                    .with_context(at);
                }
            }
            versions.push(version);
        }
        if !versions.iter().any(|v| !v.ahead) {
            bail!("{path} lists no Kubernetes version k8s-openapi has (every line is `ahead`)");
        }
        Ok(K8sVersions { versions })
    }

    /// The versions not `ahead` (`1.MM`), oldest first.
    pub(crate) fn backed(&self) -> Vec<String> {
        self.versions
            .iter()
            .filter(|v| !v.ahead)
            .map(|v| v.version.clone())
            .collect()
    }

    /// That every version not `ahead` is one of `held`, the versions k8s-openapi has a module
    /// for (`1.MM`, its `src/v1_MM/`); the error names the list and the version.
    pub(crate) fn check_backed_by(&self, held: &[String], src_dir: &Path) -> anyhow::Result<()> {
        for version in self.backed() {
            if !held.contains(&version) {
                bail!(
                    "{PATH}: Kubernetes {version} has no k8s-openapi module (no `{}/v{}/`; it holds {held:?}); mark it `ahead` or raise k8s-openapi",
                    src_dir.display(),
                    version.replace('.', "_")
                );
            }
        }
        Ok(())
    }
}

/// One line without its comment: `<version> <module version> [<module>=<version> ...] [ahead]`.
fn parse_line(line: &str) -> anyhow::Result<K8sVersion> {
    let mut words = line.split_whitespace();
    let (Some(version), Some(default)) = (words.next(), words.next()) else {
        bail!("expected `<version> <module version>` (`1.37 v0.37.2`)");
    };
    let mm = minor(version)?;
    let (_, default_minor) = module_version(default)?;
    if default_minor != mm {
        bail!("module version {default} is not a release of Kubernetes {version} (`v0.{mm}.P`)");
    }
    let mut modules: Vec<(&'static str, String)> =
        MODULES.iter().map(|m| (*m, default.to_owned())).collect();
    let mut overridden = Vec::new();
    let mut ahead = false;
    for word in words {
        if word == "ahead" {
            if ahead {
                bail!("`ahead` twice");
            }
            ahead = true;
            continue;
        }
        if ahead {
            bail!("{word:?} after `ahead`, which ends the line");
        }
        let Some((module, pinned)) = word.split_once('=') else {
            bail!("{word:?} is neither `<module>=<module version>` nor `ahead`");
        };
        let Some(slot) = modules.iter_mut().find(|(m, _)| *m == module) else {
            bail!("unknown module {module:?} (the modules are {MODULES:?})");
        };
        if overridden.contains(&module) {
            bail!("module {module} is pinned twice");
        }
        module_version(pinned)?;
        overridden.push(module);
        slot.1 = pinned.to_owned();
    }
    Ok(K8sVersion {
        version: version.to_owned(),
        modules,
        ahead,
    })
}

/// `1.MM` -> `MM`.
fn minor(version: &str) -> anyhow::Result<u32> {
    version
        .strip_prefix("1.")
        .filter(|m| !m.is_empty() && m.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|m| m.parse().ok())
        .with_context(|| format!("{version:?} is not a Kubernetes version `1.MM`"))
}

/// A full Go module version `v0.MM.P` with an optional pre-release (`v0.38.0-beta.0`), as
/// (major, minor); a prefix such as `v0.38` is refused, since `go get` resolves it to whatever
/// the proxy holds.
fn module_version(text: &str) -> anyhow::Result<(u32, u32)> {
    let parsed = (|| {
        let rest = text.strip_prefix('v')?;
        let (core, pre) = match rest.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (rest, None),
        };
        if pre.is_some_and(|p| {
            p.is_empty() || !p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.')
        }) {
            return None;
        }
        let numbers: Vec<u32> = core
            .split('.')
            .map(|n| {
                n.bytes()
                    .all(|b| b.is_ascii_digit())
                    .then(|| n.parse().ok())
                    .flatten()
            })
            .collect::<Option<_>>()?;
        match numbers[..] {
            [major, minor, _patch] => Some((major, minor)),
            _ => None,
        }
    })();
    parsed.with_context(|| {
        format!("{text:?} is not a full Go module version `vX.Y.Z` (a prefix such as `v0.37` would let `go get` pick a pre-release)")
    })
}

/// The modules of [`MODULES`] a `go.mod` requires, with their versions.
pub(crate) fn required_in(go_mod: &str) -> BTreeMap<&str, &str> {
    let mut out = BTreeMap::new();
    for line in go_mod.lines() {
        let line = line.trim();
        let line = line.strip_prefix("require ").unwrap_or(line);
        let mut words = line.split_whitespace();
        if let (Some(module), Some(version)) = (words.next(), words.next())
            && let Some(known) = MODULES.iter().find(|m| **m == module)
        {
            out.insert(*known, version);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        format!("{:#}", K8sVersions::parse(text, PATH).unwrap_err())
    }

    #[test]
    fn a_line_pins_every_module_with_its_overrides() {
        let list = K8sVersions::parse(
            "# comment\n\n1.37 v0.37.2\n1.38 v0.38.0-beta.0 k8s.io/kube-aggregator=v0.37.2 ahead # not in k8s-openapi\n",
            PATH,
        )
        .unwrap();
        assert_eq!(list.backed(), ["1.37"]);
        let [old, new] = &list.versions[..] else {
            panic!("{list:?}");
        };
        assert!(new.ahead && !old.ahead);
        let pinned = |m: &str| {
            new.modules
                .iter()
                .find(|(n, _)| *n == m)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(pinned("k8s.io/api"), Some("v0.38.0-beta.0"));
        assert_eq!(pinned("k8s.io/apimachinery"), Some("v0.38.0-beta.0"));
        assert_eq!(pinned("k8s.io/kube-aggregator"), Some("v0.37.2"));
        assert_eq!(
            old.modules,
            MODULES
                .iter()
                .map(|m| (*m, "v0.37.2".to_owned()))
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_malformed_line_is_named_with_the_file_and_its_number() {
        for (text, line, why) in [
            ("1.37\n", 1, "expected `<version> <module version>`"),
            (
                "1.37 v0.37.2\n1.38 v0.38\n",
                2,
                "not a full Go module version",
            ),
            (
                "1.37 v0.37.2\n\n138 v0.38.0\n",
                3,
                "not a Kubernetes version",
            ),
            ("1.37 v0.36.2\n", 1, "not a release of Kubernetes 1.37"),
            (
                "1.37 v0.37.2 k8s.io/client-go=v0.37.2\n",
                1,
                "unknown module",
            ),
            (
                "1.37 v0.37.2 k8s.io/api=v0.37.1 k8s.io/api=v0.37.2\n",
                1,
                "pinned twice",
            ),
            ("1.37 v0.37.2 latest\n", 1, "neither"),
            (
                "1.37 v0.37.2\n1.38 v0.38.0-\n",
                2,
                "not a full Go module version",
            ),
            ("1.37 v0.37.2\n1.36 v0.36.6\n", 2, "not newer than 1.37"),
            ("1.37 v0.37.2\n1.37 v0.37.3\n", 2, "not newer than 1.37"),
            (
                "1.37 v0.37.2\n1.38 v0.38.0 ahead\n1.39 v0.39.0\n",
                3,
                "only the newest",
            ),
            (
                "1.37 v0.37.2 ahead k8s.io/api=v0.37.2\n",
                1,
                "after `ahead`",
            ),
        ] {
            let e = err(text);
            assert!(e.starts_with(&format!("{PATH}:{line}: ")), "{text:?}: {e}");
            assert!(e.contains(why), "{text:?}: {e}");
        }
        assert!(err("# nothing\n").contains("lists no Kubernetes version"));
        assert!(err("1.38 v0.38.0 ahead\n").contains("lists no Kubernetes version"));
    }

    #[test]
    fn a_backed_version_needs_a_k8s_openapi_module() {
        let list =
            K8sVersions::parse("1.36 v0.36.6\n1.37 v0.37.2\n1.38 v0.38.0 ahead\n", PATH).unwrap();
        let src = Path::new("k8s-openapi/src");
        let held = |v: &[&str]| v.iter().map(|v| v.to_string()).collect::<Vec<_>>();
        assert!(
            list.check_backed_by(&held(&["1.35", "1.36", "1.37"]), src)
                .is_ok()
        );
        let e = list
            .check_backed_by(&held(&["1.37"]), src)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(PATH) && e.contains("Kubernetes 1.36") && e.contains("v1_36"),
            "{e}"
        );
    }

    #[test]
    fn the_checked_in_list_parses_and_matches_the_go_modules() {
        let root = crate::project_root();
        let list = K8sVersions::read(&root).unwrap_or_else(|e| panic!("{e:#}"));
        for v in &list.versions {
            let go_mod = root.join(format!(
                "informer-proto/schema-gen/k8s-{}/go.mod",
                v.version
            ));
            let Ok(text) = std::fs::read_to_string(&go_mod) else {
                continue;
            };
            let want: BTreeMap<&str, &str> =
                v.modules.iter().map(|(m, p)| (*m, p.as_str())).collect();
            assert_eq!(required_in(&text), want, "{}", go_mod.display());
        }
    }
}
