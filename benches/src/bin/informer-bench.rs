//! `informer-bench`: the side-by-side benchmark of informer-rs, kube-runtime and client-go (see
//! BENCHMARKS.md; client-go runs in the Go child of `benches/client-go`).
//!
//! `informer-bench orchestrate [--quick]` runs everything and prints the table; `cargo xtask bench`
//! builds this binary in release mode and runs that. `informer-bench child …` is one measured
//! process, started by the orchestrator.

use clap::{Parser, Subcommand};
use informer_benches::alloc::CountingAlloc;
use informer_benches::child::{self, ChildSpec};
use informer_benches::orchestrate::{OrchestrateArgs, orchestrate};

/// Every allocation of both the orchestrator and the children is counted (peak heap).
#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

#[derive(Debug, Parser)]
#[command(
    name = "informer-bench",
    about = "Benchmark informer-rs against kube-runtime and client-go"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Host a testserver, seed it, run every scenario in child processes, report.
    Orchestrate(OrchestrateArgs),
    /// One measured child process (started by `orchestrate`).
    Child(ChildSpec),
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().cmd {
        Cmd::Orchestrate(args) => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(orchestrate(args))?;
            Ok(())
        }
        Cmd::Child(spec) => std::process::exit(child::main(spec)),
    }
}
