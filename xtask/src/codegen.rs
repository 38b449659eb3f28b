//! `cargo codegen [--check]`: regenerates every checked-in informer-gen output (G8), and
//! `cargo xtask k8s-versions`: checks that informer-k8s, with its `compact` feature, compiles under
//! every Kubernetes version.
//!
//! Targets: `examples/src/generated/` (configured by `examples/informer-gen.toml`), every informer-gen
//! golden `informer-gen/tests/fixtures/<case>/expected/` (configured by `<case>/input/informer-gen.toml`),
//! and `informer-k8s/src/generated/`: every API group of every Kubernetes version k8s-openapi
//! holds (`K8sOpenApi::every_version`), a kind that some version lacks behind a `cfg` on the
//! versions it exists in. All go through the informer-gen library, the same path build.rs users take.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use informer_gen::{Builder, K8sOpenApi, config};

use crate::project_root;

/// The command the generated headers and `--check` failures tell people to run.
const COMMAND: &str = "cargo codegen";

/// One generator run, configured by `builder`, written into `out_dir`.
struct Target {
    builder: Builder,
    out_dir: PathBuf,
}

impl Target {
    /// Configured by `config_dir/informer-gen.toml`.
    fn from_config(config_dir: &Path, out_dir: PathBuf, k8s: &K8sOpenApi) -> anyhow::Result<Self> {
        Ok(Target {
            builder: config::builder_for_dir(config_dir, Some(k8s.clone()))?,
            out_dir,
        })
    }
}

/// informer-k8s: every listable, watchable built-in kind of every version k8s-openapi holds, and
/// the compact form of each, per version, behind the `compact` feature.
fn informer_k8s(root: &Path, k8s: &K8sOpenApi) -> anyhow::Result<Target> {
    let every = k8s.clone().every_version()?;
    let mut builder = Builder::new();
    builder.root(root.join("informer-k8s"));
    // One read of every version gives both the groups and the kinds.
    let kinds = every.kinds()?;
    let groups: std::collections::BTreeSet<&str> =
        kinds.iter().map(|(g, _, _)| g.as_str()).collect();
    for group in groups {
        builder.include_group(group);
    }
    // Every kind has a compact form: the kinds of every version, each generated in the versions
    // that have it (docs/decisions/17-compact-forms-of-built-in-kinds.md).
    for (group, version, kind) in &kinds {
        builder.compact_kind(group, version, kind);
    }
    builder.compact_feature("compact");
    builder.k8s_openapi(every);
    Ok(Target {
        builder,
        out_dir: root.join("informer-k8s/src/generated"),
    })
}

fn targets(root: &Path, k8s: &K8sOpenApi) -> anyhow::Result<Vec<Target>> {
    let mut targets = vec![
        Target::from_config(
            &root.join("examples"),
            root.join("examples/src/generated"),
            k8s,
        )?,
        informer_k8s(root, k8s)?,
    ];
    let fixtures = root.join("informer-gen/tests/fixtures");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .with_context(|| format!("reading {}", fixtures.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| config::config_file(&p.join("input")).is_some())
        .collect();
    cases.sort();
    for case in cases {
        targets.push(Target::from_config(
            &case.join("input"),
            case.join("expected"),
            k8s,
        )?);
    }
    Ok(targets)
}

/// Regenerates every target; with `check`, writes nothing and fails listing the stale files.
pub(crate) fn generate(check: bool) -> anyhow::Result<()> {
    let root = project_root();
    let k8s = K8sOpenApi::locate(&root, None)?;
    let mut stale = Vec::new();
    for mut target in targets(&root, &k8s)? {
        let generated = target.builder.regenerate_command(COMMAND).generate()?;
        for (name, contents) in generated.files() {
            ensure_file_contents(&target.out_dir.join(name), contents, check, &mut stale)?;
        }
        for path in generated.stale_files(&target.out_dir)? {
            if !check {
                std::fs::remove_file(&path)?;
                eprintln!("removed {}", rel(&root, &path));
            }
            stale.push(path);
        }
    }
    if check && !stale.is_empty() {
        let list: Vec<String> = stale.iter().map(|p| rel(&root, p)).collect();
        bail!(
            "generated files are stale:\n  {}\nrun `{COMMAND}` and commit the result",
            list.join("\n  ")
        );
    }
    Ok(())
}

/// Writes `contents` to `path` if it differs (newlines normalised); under `check` only records staleness.
fn ensure_file_contents(
    path: &Path,
    contents: &str,
    check: bool,
    stale: &mut Vec<PathBuf>,
) -> anyhow::Result<()> {
    let on_disk = std::fs::read_to_string(path)
        .ok()
        .map(|t| t.replace("\r\n", "\n"));
    if on_disk.as_deref() == Some(contents) {
        return Ok(());
    }
    stale.push(path.to_owned());
    if !check {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, contents).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("updated {}", rel(&project_root(), path));
    }
    Ok(())
}

/// `cargo xtask k8s-versions`: `cargo check -p informer-k8s --features compact` (the accessors
/// and the compact types of that version) under each Kubernetes version
/// k8s-openapi holds (`K8S_OPENAPI_ENABLED_VERSION`, which overrides the workspace's 1.37), in
/// `target/k8s-versions/`, so the workspace's own k8s-openapi build is not thrown away. The
/// versions in `skip` are left out (CI skips the one its workspace build compiled already).
pub(crate) fn check_versions(skip: &[String]) -> anyhow::Result<()> {
    let root = project_root();
    let versions = K8sOpenApi::locate(&root, None)?
        .every_version()?
        .gated_versions;
    for s in skip {
        if !versions.contains(s) {
            bail!("--skip {s}: not a version informer-k8s is generated for ({versions:?})");
        }
    }
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
        .join("k8s-versions");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for version in versions.iter().filter(|v| !skip.contains(v)) {
        let start = Instant::now();
        eprintln!("== cargo check -p informer-k8s --features compact with Kubernetes {version}");
        let status = Command::new(&cargo)
            .args([
                "check",
                "-p",
                "informer-k8s",
                "--lib",
                "--features",
                "compact",
            ])
            .arg("--target-dir")
            .arg(&target_dir)
            .env("K8S_OPENAPI_ENABLED_VERSION", version)
            .current_dir(&root)
            .status()
            .context("running cargo check")?;
        if !status.success() {
            bail!("informer-k8s does not compile with Kubernetes {version}");
        }
        eprintln!("   {version}: {:.0} s", start.elapsed().as_secs_f64());
    }
    Ok(())
}

fn rel(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    /// G8: the committed output equals a fresh run (`cargo codegen --check` inside `cargo test`).
    #[test]
    fn codegen_is_fresh() {
        if let Err(e) = super::generate(true) {
            panic!("{e:#}");
        }
    }
}
