//! `informer-bench`: the side-by-side benchmark of informer-rs, kube-runtime and client-go (see
//! BENCHMARKS.md; client-go runs in the Go child of `benches/client-go`).
//!
//! `informer-bench orchestrate [--quick]` runs everything and prints the table; `cargo xtask bench`
//! builds this binary in release mode and runs that. `informer-bench child …` is one measured
//! process, started by the orchestrator. `informer-bench chart --from RESULTS.json --out FILE.svg`
//! redraws the headline chart of a run (BENCHMARKS.md shows `benches/headline.svg`).
//! `informer-bench baseline --from RESULTS.json --note TEXT` adds a run's informer-rs figures to
//! `benches/baseline.json`, which the memory and update-rate goals compare with.

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
    /// Add a run's informer-rs figures to a baseline file (the memory and update-rate goals
    /// compare with it), replacing the entry of the same server, corpus and size.
    Baseline {
        /// The JSON results of the run (`target/bench/results.json`).
        #[arg(long)]
        from: std::path::PathBuf,
        /// The baseline file to update (created if missing).
        #[arg(long, default_value = "benches/baseline.json")]
        out: std::path::PathBuf,
        /// How the run was made, in words ("quiet machine, 3 repetitions").
        #[arg(long)]
        note: String,
    },
    /// Draw the headline chart (SVG) of a results file.
    Chart {
        /// The JSON results of a run (`target/bench/results.json`).
        #[arg(long)]
        from: std::path::PathBuf,
        /// Where to write the SVG.
        #[arg(long)]
        out: std::path::PathBuf,
    },
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
        Cmd::Baseline { from, out, note } => {
            use anyhow::Context;
            use informer_benches::baseline::{Baseline, BaselineEntry};
            let text = std::fs::read_to_string(&from)
                .with_context(|| format!("reading {}", from.display()))?;
            let report = informer_benches::report::Report::from_json(&text)
                .with_context(|| format!("{} is not a results file", from.display()))?;
            let mut baseline = Baseline::read(&out)?.unwrap_or_default();
            baseline.put(BaselineEntry::from_report(&report, note));
            let json = serde_json::to_string_pretty(&baseline)?;
            std::fs::write(&out, json + "\n")
                .with_context(|| format!("writing {}", out.display()))?;
            Ok(())
        }
        Cmd::Chart { from, out } => {
            use anyhow::Context;
            let text = std::fs::read_to_string(&from)
                .with_context(|| format!("reading {}", from.display()))?;
            let report = informer_benches::report::Report::from_json(&text)
                .with_context(|| format!("{} is not a results file", from.display()))?;
            let svg = informer_benches::chart::headline_svg(&report)
                .with_context(|| format!("{} has no scenario-1 results", from.display()))?;
            std::fs::write(&out, svg).with_context(|| format!("writing {}", out.display()))?;
            Ok(())
        }
    }
}
