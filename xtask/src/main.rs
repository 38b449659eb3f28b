//! Project chores: `cargo xtask codegen [--check]`, `cargo xtask bench`, `cargo xtask envtest`,
//! `cargo xtask rules`, `cargo xtask modules`, `cargo xtask k8s-versions`, `cargo xtask template`,
//! `cargo xtask install`.
//!
//! This file only parses flags and dispatches; each chore lives in its own module.

mod bench;
mod codegen;
mod envtest;
mod install;
mod k8s_versions;
mod modules;
mod proto_schema;
mod rules;
mod template;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::Command;

use clap::{Parser, Subcommand};

/// informer-rs project chores.
#[derive(Debug, Parser)]
#[command(name = "xtask")]
struct Flags {
    #[command(subcommand)]
    cmd: Cmd,
}

/// One chore.
#[derive(Debug, Subcommand)]
enum Cmd {
    /// Regenerate every checked-in generated file (`cargo codegen`); `--check` fails when any is stale.
    Codegen {
        /// Do not write; fail and print the command to run when output is stale.
        #[arg(long)]
        check: bool,
    },
    /// Benchmark informer-rs against kube-runtime and client-go (release build; see BENCHMARKS.md).
    Bench(bench::BenchArgs),
    /// Build kube-apiserver and etcd from source and run the conformance suite on both
    /// backends (`CI=true`: no skipping). Extra arguments go to `cargo test`.
    Envtest {
        /// Passed to `cargo test` after `--` (a test filter, `--nocapture`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        rest: Vec<String>,
    },
    /// Check that every rule ID cited in the code and tests is defined in docs/behaviour.md.
    Rules,
    /// Check that no crate has a module circle outside test code (ARCHITECTURE.md).
    Modules,
    /// Check that informer-k8s (with its compact forms) compiles under every Kubernetes
    /// version of xtask/k8s-versions.txt.
    K8sVersions {
        /// Leave out this version (CI: the one the workspace already compiled); repeatable.
        #[arg(long)]
        skip: Vec<String>,
    },
    /// Build and test `templates/operator/` outside the workspace, as the README tells users to
    /// set up their crate (and check the README shows the template's files).
    Template,
    /// `cargo install` informer-testserver's standalone server (`--features cli`) offline and
    /// check that the installed binary answers `/version`.
    Install,
}

fn main() -> anyhow::Result<()> {
    match Flags::parse().cmd {
        Cmd::Codegen { check } => codegen::generate(check),
        Cmd::Bench(args) => bench::run(args),
        Cmd::Envtest { rest } => envtest::run(&rest),
        Cmd::Rules => rules::check(),
        Cmd::Modules => modules::check(),
        Cmd::K8sVersions { skip } => codegen::check_versions(&skip),
        Cmd::Template => template::run(),
        Cmd::Install => install::run(),
    }
}

/// The workspace root (the parent of `xtask/`).
pub(crate) fn project_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// `cargo`, for a build of the workspace itself, with the environment of the shell that ran
/// `cargo xtask`: the variables `cargo run` set for xtask's own process are removed. Build
/// scripts track some of them (ring's reruns when `CARGO_MANIFEST_DIR` changes), so a build
/// started from here with them set would rerun that script and rebuild every crate above it, the
/// whole kube stack, and the next build from the shell would rebuild it back: about five minutes
/// each way on two cores. Configuration (`CARGO_HOME`, `CARGO_TARGET_DIR`, `CARGO_PROFILE_*`,
/// `CARGO_BUILD_*`, `CARGO_INCREMENTAL`, `CARGO_TERM_*`) stays.
pub(crate) fn cargo_command() -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if set_by_cargo_run(&name) {
            cmd.env_remove(name.as_ref());
        }
    }
    cmd
}

/// Whether `name` is one of the variables Cargo sets for a crate it runs (`cargo run`,
/// `cargo test`), as opposed to one a user sets to configure Cargo.
fn set_by_cargo_run(name: &str) -> bool {
    matches!(
        name,
        "CARGO"
            | "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_CRATE_NAME"
            | "CARGO_BIN_NAME"
            | "CARGO_PRIMARY_PACKAGE"
            | "CARGO_TARGET_TMPDIR"
            | "CARGO_RUSTC_CURRENT_DIR"
            | "OUT_DIR"
    ) || name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_for_the_workspace_drops_what_cargo_run_set_and_keeps_configuration() {
        // `cargo test` sets CARGO_MANIFEST_DIR and CARGO_PKG_NAME for this process, as
        // `cargo run` does for `cargo xtask`.
        assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
        let cmd = cargo_command();
        let removed: Vec<String> = cmd
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect();
        assert!(
            removed.iter().any(|n| n == "CARGO_MANIFEST_DIR"),
            "{removed:?}"
        );
        assert!(removed.iter().any(|n| n == "CARGO_PKG_NAME"), "{removed:?}");
        for kept in [
            "CARGO_HOME",
            "CARGO_TARGET_DIR",
            "CARGO_INCREMENTAL",
            "CARGO_TERM_COLOR",
        ] {
            assert!(!set_by_cargo_run(kept), "{kept}");
        }
        assert!(set_by_cargo_run("CARGO_BIN_EXE_xtask"));
    }
}
