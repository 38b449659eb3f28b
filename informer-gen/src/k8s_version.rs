//! Which Kubernetes version to read built-in kinds for, and where k8s-openapi's sources are.
//!
//! k8s-openapi compiles exactly one Kubernetes version, chosen by a `v1_*` feature of the final
//! crate (or `K8S_OPENAPI_ENABLED_VERSION`). Its build script publishes the choice to the build
//! scripts of the crates that depend on it *directly* (its `links` key makes Cargo pass
//! `DEP_K8S_OPENAPI_<crate version>_VERSION`, the version as `0x00_01_MM_00`), so a build.rs
//! reads the version the crate is compiled against and never repeats it by hand. Outside a build
//! script (the CLI, xtask), the enabled feature is read from `cargo metadata`'s resolve.
//!
//! An explicit version (`Builder::k8s_version`, `k8s-version` in `informer-gen.toml`, the CLI's
//! `--k8s-version`) overrides nothing silently: when the enabled version is known and differs,
//! generation fails naming both.

use std::path::{Path, PathBuf};

use crate::error::Error;

/// The environment variable k8s-openapi's build script also reads.
pub(crate) const ENV_VAR: &str = "K8S_OPENAPI_ENABLED_VERSION";

/// A Kubernetes version and who chose it, for messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chosen {
    /// `1.37`.
    pub(crate) version: String,
    /// `Builder::k8s_version`, `informer-gen.toml`, `the \`v1_37\` feature of k8s-openapi`, ….
    pub(crate) by: String,
}

impl Chosen {
    pub(crate) fn new(version: &str, by: impl Into<String>) -> Self {
        Chosen {
            version: version.to_owned(),
            by: by.into(),
        }
    }
}

/// The version k8s-openapi's build script exported to this build script, with k8s-openapi's
/// crate version (from the variable's name): `(crate version, Kubernetes version)`.
pub(crate) fn from_build_script_env() -> Option<(String, String)> {
    std::env::vars().find_map(|(name, value)| {
        let crate_version = name
            .strip_prefix("DEP_K8S_OPENAPI_")?
            .strip_suffix("_VERSION")?;
        Some((crate_version.to_owned(), decode(&value)?))
    })
}

/// Whether `v` reads as a Kubernetes release k8s-openapi has features for: `1.<minor>`. Not an
/// API version name (`v1beta1`), which is `informer_handles::is_api_version`.
pub(crate) fn is_release(v: &str) -> bool {
    v.strip_prefix("1.")
        .is_some_and(|m| !m.is_empty() && m.chars().all(|c| c.is_ascii_digit()))
}

/// `0x00_01_25_00` (as decimal) → `1.37`.
fn decode(value: &str) -> Option<String> {
    let n: u32 = value.trim().parse().ok()?;
    Some(format!("{}.{}", (n >> 16) & 0xff, (n >> 8) & 0xff))
}

/// `1.37` from a `v1_37` feature name.
fn from_feature(feature: &str) -> Option<String> {
    let minor = feature.strip_prefix("v1_")?;
    minor
        .chars()
        .all(|c| c.is_ascii_digit())
        .then(|| format!("1.{minor}"))
}

/// Agrees an explicit version with the enabled one: the enabled one wins when there is no
/// explicit one, and they must be equal when both are known.
pub(crate) fn reconcile(
    explicit: Option<&Chosen>,
    enabled: Option<&Chosen>,
) -> Result<Option<Chosen>, Error> {
    match (explicit, enabled) {
        (Some(e), Some(k)) if e.version != k.version => Err(Error::K8sVersionMismatch {
            requested: e.version.clone(),
            requested_by: e.by.clone(),
            enabled: k.version.clone(),
            enabled_by: k.by.clone(),
        }),
        (Some(c), _) | (None, Some(c)) => Ok(Some(c.clone())),
        (None, None) => Ok(None),
    }
}

/// The k8s-openapi package as `cargo metadata` describes it.
struct Package {
    src_dir: PathBuf,
    crate_version: String,
    /// The `v1_*` feature enabled on it in the resolve, as `1.37`.
    feature: Option<String>,
}

/// Runs `cargo metadata` in `dir` and finds k8s-openapi in it (the given crate version when
/// several are in the graph).
fn metadata_package(dir: &Path, crate_version: Option<&str>) -> Result<Package, Error> {
    let fail = |reason: String| Error::K8sOpenApi { reason };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["metadata", "--format-version", "1"])
        .current_dir(dir);
    // In a build script, only the packages of the platform being built need be present.
    if let Ok(target) = std::env::var("TARGET") {
        cmd.args(["--filter-platform", &target]);
    }
    let out = cmd.output().map_err(|e| {
        fail(format!(
            "cannot run `cargo metadata` in {}: {e}",
            dir.display()
        ))
    })?;
    if !out.status.success() {
        return Err(fail(format!(
            "`cargo metadata` failed in {}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| fail(format!("bad `cargo metadata` output: {e}")))?;
    let candidates: Vec<&serde_json::Value> = meta["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["name"] == "k8s-openapi")
        .filter(|p| crate_version.is_none_or(|v| p["version"] == v))
        .collect();
    let features_of = |id: &serde_json::Value| -> Option<String> {
        meta["resolve"]["nodes"]
            .as_array()?
            .iter()
            .find(|n| n["id"] == *id)?["features"]
            .as_array()?
            .iter()
            .filter_map(|f| from_feature(f.as_str()?))
            .next()
    };
    let pkg = match candidates.as_slice() {
        [] => {
            return Err(fail(format!(
                "no `k8s-openapi`{} in the dependency graph of {}; add it to [dependencies]",
                crate_version.map_or(String::new(), |v| format!(" {v}")),
                dir.display()
            )));
        }
        [one] => *one,
        several => several
            .iter()
            .copied()
            .find(|p| features_of(&p["id"]).is_some())
            .unwrap_or(several[0]),
    };
    let field = |name: &str| {
        pkg[name]
            .as_str()
            .ok_or_else(|| fail(format!("no `{name}` for `k8s-openapi` in `cargo metadata`")))
    };
    let src_dir = Path::new(field("manifest_path")?)
        .parent()
        .map(|p| p.join("src"))
        .ok_or_else(|| fail("`k8s-openapi`'s `manifest_path` has no directory".into()))?;
    Ok(Package {
        src_dir,
        crate_version: field("version")?.to_owned(),
        feature: features_of(&pkg["id"]),
    })
}

/// Where k8s-openapi's sources are and which Kubernetes version to read from them.
pub(crate) struct Located {
    /// k8s-openapi's `src/`.
    pub(crate) src_dir: PathBuf,
    /// `0.29.0`.
    pub(crate) crate_version: String,
    /// `1.37`.
    pub(crate) k8s_version: String,
}

/// Finds k8s-openapi's sources for the crate at `dir` and the Kubernetes version to read.
///
/// The enabled version is, in order: what k8s-openapi's build script exported (in a build
/// script), else the `v1_*` feature in `cargo metadata`'s resolve, else `K8S_OPENAPI_ENABLED_VERSION`.
/// `explicit` must agree with it.
pub(crate) fn locate(dir: &Path, explicit: Option<&Chosen>) -> Result<Located, Error> {
    let exported = from_build_script_env();
    let pkg = metadata_package(dir, exported.as_ref().map(|(c, _)| c.as_str()))?;
    let env = std::env::var(ENV_VAR)
        .ok()
        .map(|v| Chosen::new(&v, format!("`{ENV_VAR}`")));
    let enabled = match (&exported, &pkg.feature) {
        (Some((_, v)), _) => Some(Chosen::new(
            v,
            format!(
                "the `v{}` feature, or `{ENV_VAR}`, this crate builds k8s-openapi {} with",
                v.replace('.', "_"),
                pkg.crate_version,
            ),
        )),
        (None, Some(v)) => {
            let feature = Chosen::new(
                v,
                format!(
                    "the `v{}` feature of k8s-openapi {}",
                    v.replace('.', "_"),
                    pkg.crate_version
                ),
            );
            // k8s-openapi refuses to build with two versions; say so before it does.
            reconcile(env.as_ref(), Some(&feature))?;
            Some(feature)
        }
        (None, None) => env,
    };
    let chosen = reconcile(explicit, enabled.as_ref())?.ok_or_else(|| Error::K8sOpenApi {
        reason: format!(
            "no Kubernetes version: enable one on your k8s-openapi dependency \
             (`k8s-openapi = {{ version = \"{}\", features = [\"v1_37\"] }}`), set `k8s-version` \
             in informer-gen.toml, or set `{ENV_VAR}`",
            pkg.crate_version
        ),
    })?;
    Ok(Located {
        src_dir: pkg.src_dir,
        crate_version: pkg.crate_version,
        k8s_version: chosen.version,
    })
}

/// Checks the version of sources given explicitly (`Builder::k8s_openapi`) against the version
/// this build script's crate compiles k8s-openapi for, when it is known.
pub(crate) fn check_given(given: &str) -> Result<(), Error> {
    let Some((crate_version, enabled)) = from_build_script_env() else {
        return Ok(());
    };
    reconcile(
        Some(&Chosen::new(given, "`Builder::k8s_openapi`")),
        Some(&Chosen::new(
            &enabled,
            format!("what this crate builds k8s-openapi {crate_version} with"),
        )),
    )
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_exported_number_decodes_to_major_and_minor() {
        // k8s-openapi prints `0x00_01_00_00 | (minor << 8)` in decimal.
        assert_eq!(decode("75008").as_deref(), Some("1.37"));
        assert_eq!(decode("74496").as_deref(), Some("1.35"));
        assert_eq!(decode("x"), None);
    }

    #[test]
    fn features_name_versions() {
        assert_eq!(from_feature("v1_37").as_deref(), Some("1.37"));
        assert_eq!(from_feature("std"), None);
        assert_eq!(from_feature("v1_x"), None);
    }

    #[test]
    fn an_explicit_version_must_match_the_enabled_one() {
        let explicit = Chosen::new("1.36", "`k8s-version` in informer-gen.toml");
        let enabled = Chosen::new("1.37", "the `v1_37` feature of k8s-openapi 0.29.0");
        let err = reconcile(Some(&explicit), Some(&enabled)).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("1.36") && text.contains("informer-gen.toml"),
            "{text}"
        );
        assert!(text.contains("1.37") && text.contains("v1_37"), "{text}");
        assert_eq!(
            reconcile(None, Some(&enabled)).unwrap(),
            Some(enabled.clone())
        );
        let same = Chosen::new("1.37", "`Builder::k8s_version`");
        assert_eq!(reconcile(Some(&same), Some(&enabled)).unwrap(), Some(same));
        assert_eq!(reconcile(None, None).unwrap(), None);
    }
}
