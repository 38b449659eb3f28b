//! `cargo xtask bench [--quick] [ARGS…]`: build `informer-bench` in release mode and run its orchestrator.
//!
//! Everything else (the server, seeding, child processes, the table and the JSON with the host
//! facts and git revision) lives in the `informer-benches` crate; see BENCHMARKS.md. Extra
//! arguments go to `informer-bench orchestrate` unchanged (`--reps 5`, `--scenarios sync,decode`).

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

/// The arguments of `cargo xtask bench`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct BenchArgs {
    /// Small sizes, for CI: proves the harness works in under two minutes.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Passed to `informer-bench orchestrate` unchanged.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) rest: Vec<String>,
}

/// Builds the benchmark binary (release) and runs the orchestrator from the workspace root.
pub(crate) fn run(args: BenchArgs) -> anyhow::Result<()> {
    let root = crate::project_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(&cargo)
        .args([
            "build",
            "--release",
            "-p",
            "informer-benches",
            "--bin",
            "informer-bench",
        ])
        .current_dir(&root)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("building informer-bench failed ({status})");
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    let exe = target.join("release").join("informer-bench");
    let out = if args.quick {
        "target/bench/results-quick.json"
    } else {
        "target/bench/results.json"
    };
    let mut cmd = Command::new(&exe);
    cmd.arg("orchestrate").current_dir(&root);
    if args.quick {
        cmd.arg("--quick");
    }
    if !args
        .rest
        .iter()
        .any(|a| a == "--out" || a.starts_with("--out="))
    {
        cmd.args(["--out", out]);
    }
    cmd.args(&args.rest);
    let start = Instant::now();
    let status = cmd
        .status()
        .with_context(|| format!("running {}", exe.display()))?;
    eprintln!(
        "xtask bench: the benchmark took {:.1} s (build excluded)",
        start.elapsed().as_secs_f64()
    );
    if !status.success() {
        bail!("informer-bench orchestrate failed ({status})");
    }
    Ok(())
}
