//! Project chores: `cargo xtask codegen [--check]`, `cargo xtask bench`, `cargo xtask envtest`,
//! `cargo xtask rules`, `cargo xtask modules`, `cargo xtask k8s-versions`, `cargo xtask template`,
//! `cargo xtask install`.
//!
//! This file only parses flags and dispatches; each chore lives in its own module.

mod bench;
mod codegen;
mod envtest;
mod install;
mod modules;
mod proto_schema;
mod rules;
mod template;
mod tidy;

use std::path::{Path, PathBuf};

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
    /// Check that informer-k8s (with its `compact` feature) compiles under every Kubernetes
    /// version k8s-openapi supports.
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
