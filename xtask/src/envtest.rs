//! `cargo xtask envtest [ARGS…]`: build kube-apiserver and etcd from source (the Go launcher of
//! `informer-envtest`), then run the envtest crate's tests and the conformance suite on both
//! backends with `CI=true`, so a missing Go toolchain or a failed build fails instead of
//! skipping. Extra arguments go to `cargo test` (a test name filter, `--nocapture`).

use std::time::Instant;

use anyhow::{Context, bail};

/// Runs `cargo` with `args` from the workspace root, with `CI=true`.
fn cargo(args: &[&str], extra: &[String]) -> anyhow::Result<()> {
    let status = crate::cargo_command()
        .args(args)
        .args(extra)
        .env("CI", "true")
        .current_dir(crate::project_root())
        .status()
        .with_context(|| format!("running cargo {}", args.join(" ")))?;
    if !status.success() {
        bail!("cargo {} failed ({status})", args.join(" "));
    }
    Ok(())
}

/// Builds the launcher, then runs the suite.
pub(crate) fn run(rest: &[String]) -> anyhow::Result<()> {
    let started = Instant::now();
    cargo(
        &[
            "run",
            "-p",
            "informer-envtest",
            "--features",
            "cli",
            "--bin",
            "informer-envtest",
            "--",
            "build",
        ],
        &[],
    )?;
    eprintln!(
        "xtask envtest: the launcher is built ({:.0} s)",
        started.elapsed().as_secs_f64()
    );
    let mut test = vec![
        "test",
        "-p",
        "informer-envtest",
        "-p",
        "informer-conformance",
    ];
    if !rest.is_empty() {
        test.push("--");
    }
    cargo(&test, rest)?;
    eprintln!(
        "xtask envtest: done in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
