//! `cargo xtask bench [--quick] [ARGS…]`: build `informer-bench` in release mode and the Go
//! children (client-go's, and controller-runtime's for the operator scenario) with `go build`,
//! then run the orchestrator.
//!
//! Everything else (the server, seeding, child processes, the table and the JSON with the host
//! facts and git revision) lives in the `informer-benches` crate; see BENCHMARKS.md. Extra
//! arguments go to `informer-bench orchestrate` unchanged (`--reps 5`, `--scenarios sync,decode`;
//! `--scenarios clusters --clusters 20 --cluster-pods 2000` for scenario 12, one fleet of many
//! clusters against one client-go factory per cluster).
//!
//! Without a Go toolchain (or when a Go build fails) the benchmark runs without that Go child
//! and says so; with `CI=true` that is an error instead, so CI never silently drops a Go side.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

/// The arguments of `cargo xtask bench`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct BenchArgs {
    /// Small sizes, for CI: proves the harness works in under two minutes.
    #[arg(long)]
    pub(crate) quick: bool,
    /// Run the dev-profile binary that `cargo test --workspace` builds (the same build, so CI
    /// compiles the stack once) instead of a release build: proves the harness works, measures
    /// nothing worth reading.
    #[arg(long)]
    pub(crate) debug: bool,
    /// Passed to `informer-bench orchestrate` unchanged.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub(crate) rest: Vec<String>,
}

/// Builds the benchmark binary (release) and runs the orchestrator from the workspace root.
pub(crate) fn run(args: BenchArgs) -> anyhow::Result<()> {
    let root = crate::project_root();
    // The dev-profile binary comes from `cargo test --workspace --no-run`: the units and the
    // features of the README's test command, so after it this build is fresh (a `-p` build would
    // resolve other features and recompile the kube stack).
    let build: &[&str] = if args.debug {
        &["test", "--workspace", "--no-run"]
    } else {
        &[
            "build",
            "--release",
            "-p",
            "informer-benches",
            "--bin",
            "informer-bench",
        ]
    };
    let status = crate::cargo_command()
        .args(build)
        .current_dir(&root)
        .status()
        .context("running cargo build")?;
    if !status.success() {
        bail!("building informer-bench failed ({status})");
    }
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
    // `go build` runs in benches/client-go, so its output path must not be relative.
    let target =
        std::path::absolute(&target).with_context(|| format!("resolving {}", target.display()))?;
    let profile = if args.debug { "debug" } else { "release" };
    let exe = target
        .join(profile)
        .join(format!("informer-bench{}", std::env::consts::EXE_SUFFIX));
    let given = args
        .rest
        .iter()
        .any(|a| a == "--client-go" || a.starts_with("--client-go="));
    let client_go = if given {
        None
    } else {
        go_child(&root, &target, "client-go")?
    };
    let controller_runtime = if args
        .rest
        .iter()
        .any(|a| a == "--controller-runtime" || a.starts_with("--controller-runtime="))
    {
        None
    } else {
        go_child(&root, &target, "controller-runtime")?
    };
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
    if let Some(go_child) = &client_go {
        cmd.arg("--client-go").arg(go_child);
    }
    if let Some(go_child) = &controller_runtime {
        cmd.arg("--controller-runtime").arg(go_child);
    }
    // Unoptimised code decodes several times slower: give a child longer than the quick
    // default (60 s) to report, so a loaded machine does not fail the harness check.
    let timeout_given = args.rest.iter().any(|a| a.starts_with("--child-timeout-s"));
    if args.debug && !timeout_given {
        cmd.args(["--child-timeout-s", "300"]);
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

/// The Go toolchain: `$GO`, else `go` on the path, else the standard install location.
pub(crate) fn go_tool() -> Option<PathBuf> {
    let candidates = std::env::var_os("GO")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("go"), PathBuf::from("/usr/local/go/bin/go")]);
    for go in candidates {
        let found = Command::new(&go)
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success());
        if found {
            return Some(go);
        }
    }
    None
}

/// Builds the Go child `benches/NAME` into `target/bench/NAME-child`; without Go, or when the
/// build fails, warns and returns `None` (an error under `CI=true`).
fn go_child(root: &Path, target: &Path, name: &str) -> anyhow::Result<Option<PathBuf>> {
    let out = target.join("bench").join(format!("{name}-child"));
    match build_go_child(root, &out, name) {
        Ok(()) => Ok(Some(out)),
        Err(e) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            Err(e.context(format!("CI=true: the benchmark must measure {name}")))
        }
        Err(e) => {
            eprintln!("xtask bench: WARNING: {e:#}");
            eprintln!(
                "xtask bench: WARNING: running WITHOUT {name} (install Go 1.26+ or set GO=/path/to/go; the go command fetches {GO_TOOLCHAIN} itself)"
            );
            Ok(None)
        }
    }
}

/// The Go toolchain the children's modules name (`toolchain` in `benches/client-go/go.mod`:
/// client-go v0.38 needs Go 1.27). The go command fetches it from the module proxy when
/// `GOTOOLCHAIN` names it; an installed Go that is older and set to `local` (as many are)
/// would refuse the module instead.
pub(crate) const GO_TOOLCHAIN: &str = "go1.27.3";

/// `go` with `GOTOOLCHAIN` set to [`GO_TOOLCHAIN`] unless the environment sets it.
pub(crate) fn go_command(go: &Path) -> Command {
    let mut cmd = Command::new(go);
    if std::env::var_os("GOTOOLCHAIN").is_none() {
        cmd.env("GOTOOLCHAIN", GO_TOOLCHAIN);
    }
    cmd
}

/// Builds the Go child in `benches/NAME` into `out`.
fn build_go_child(root: &Path, out: &Path, name: &str) -> anyhow::Result<()> {
    let go = go_tool().context("no Go toolchain found (`go`, `$GO`, /usr/local/go/bin/go)")?;
    let status = go_command(&go)
        .args(["build", "-trimpath", "-o"])
        .arg(out)
        .arg(".")
        .current_dir(root.join("benches").join(name))
        .status()
        .with_context(|| format!("running {} build", go.display()))?;
    if !status.success() {
        bail!("building the {name} child failed ({status})");
    }
    Ok(())
}
