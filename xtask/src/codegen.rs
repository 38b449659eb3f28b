//! `cargo codegen [--check]`: regenerates every checked-in informer-gen output (G8).
//!
//! Targets: `examples/src/generated/` (configured by `examples/informer-gen.toml`) and every informer-gen
//! golden `informer-gen/tests/fixtures/<case>/expected/` (configured by `<case>/input/informer-gen.toml`).
//! Both go through the informer-gen library, the same path build.rs users take.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use informer_gen::{K8sOpenApi, config};

use crate::project_root;

/// The command the generated headers and `--check` failures tell people to run.
const COMMAND: &str = "cargo codegen";

/// One generator run: read `config_dir/informer-gen.toml`, write into `out_dir`.
struct Target {
    config_dir: PathBuf,
    out_dir: PathBuf,
}

fn targets(root: &Path) -> anyhow::Result<Vec<Target>> {
    let mut targets = vec![Target {
        config_dir: root.join("examples"),
        out_dir: root.join("examples/src/generated"),
    }];
    let fixtures = root.join("informer-gen/tests/fixtures");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .with_context(|| format!("reading {}", fixtures.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| config::config_file(&p.join("input")).is_some())
        .collect();
    cases.sort();
    targets.extend(cases.into_iter().map(|case| Target {
        config_dir: case.join("input"),
        out_dir: case.join("expected"),
    }));
    Ok(targets)
}

/// Regenerates every target; with `check`, writes nothing and fails listing the stale files.
pub(crate) fn generate(check: bool) -> anyhow::Result<()> {
    let root = project_root();
    let k8s = K8sOpenApi::locate(&root, None)?;
    let mut stale = Vec::new();
    for target in targets(&root)? {
        let mut builder = config::builder_for_dir(&target.config_dir, Some(k8s.clone()))?;
        let generated = builder.regenerate_command(COMMAND).generate()?;
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
