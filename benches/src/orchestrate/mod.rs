//! The orchestrator: host the server, seed it, run every child, summarise, write the results.
//!
//! The informer-testserver runs inside this process, which is separate from every measured child,
//! so the server's memory and allocations are never counted. Hosting it here (rather than as a
//! third process) gives the orchestrator the server handle: it seeds through the store path
//! without HTTP, injects the 410 of scenario 4, and counts watch connections for scenario 3.
//! Children are started with `kill_on_drop` and exit by themselves when their stdin closes, so
//! an error, a panic or a Ctrl-C here leaves no process behind.
//!
//! With `--kube-apiserver` the children sync from a real kube-apiserver with etcd instead
//! (informer-envtest, seeded over HTTP; see `real.rs`). The scenarios that need the test
//! server's hooks (held watches, forced 410s, request counts) get them from a proxy the
//! orchestrator puts in front of kube-apiserver (`proxy.rs`); the sharded sync and the scale
//! run cannot run there (`Scenario::not_on_kube_apiserver` says why).

mod clusters;
mod operator;
mod proxy;
mod real;
mod run;
mod server;
pub mod sizes;

use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;

use crate::corpus::Corpus;
use crate::fleet::Fleet;
use crate::podset::PodSet;
use crate::protocol::{Impl, Scenario};
use crate::report::{Report, RunConfig, RunRecord};
use crate::sys::{git_revision, host_facts};

/// The command line of `informer-bench orchestrate`.
#[derive(Debug, Clone, clap::Args)]
pub struct OrchestrateArgs {
    /// Small sizes (CI proves the harness works in under two minutes).
    #[arg(long)]
    pub quick: bool,
    /// Repetitions per (scenario, implementation) [full: 3, quick: 2].
    #[arg(long)]
    pub reps: Option<usize>,
    /// Seeded Pods [full: 50000, quick: 2000].
    #[arg(long)]
    pub pods: Option<usize>,
    /// Namespaces the Pods are spread over [full: 500, quick: 50].
    #[arg(long)]
    pub namespaces: Option<usize>,
    /// Scenario 2: updates per Pod (the total is this times the Pod count) \[2\].
    #[arg(long, default_value_t = 2)]
    pub update_rounds: u64,
    /// Only these scenarios (comma-separated; default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub scenarios: Vec<Scenario>,
    /// Only these implementations (comma-separated; default: all). Useful with a profiler.
    #[arg(long = "impls", value_enum, value_delimiter = ',')]
    pub impls: Vec<Impl>,
    /// Where to write the JSON results.
    #[arg(long, default_value = "target/bench/results.json")]
    pub out: PathBuf,
    /// Give up on a child that says nothing for this long (seconds) [full: 900, quick: 60].
    #[arg(long)]
    pub child_timeout_s: Option<u64>,
    /// The scale run (scenario 10): 1 000 000 Pods of the realistic corpus in 5 000 namespaces, one
    /// sync into the compact Pod (`ours-compact`; `--impls ours-projection` for the projection),
    /// the server keeping its objects LZ4-compressed so that it fits beside the informer on one
    /// 24 GiB machine. `--pods`/`--impls`/`--corpus` still override.
    #[arg(long, conflicts_with = "quick")]
    pub scale: bool,
    /// The client-go child (`go build -o PATH ./benches/client-go`; `cargo xtask bench` builds it
    /// and passes it). Without it, the client-go implementations are skipped.
    #[arg(long, value_name = "PATH")]
    pub client_go: Option<PathBuf>,
    /// The controller-runtime child (`go build -o PATH ./benches/controller-runtime`; `cargo xtask
    /// bench` builds it and passes it). Without it, scenario 11 runs informer-rs alone.
    #[arg(long, value_name = "PATH")]
    pub controller_runtime: Option<PathBuf>,
    /// Scenario 11: Deployments the operator reconciles [full: 1000, quick: 100]; ten Pods per
    /// Deployment and ten Deployments per namespace unless `--deployment-pods` says otherwise.
    #[arg(long)]
    pub deployments: Option<usize>,
    /// Scenario 11: Pods the Deployments select [ten per Deployment].
    #[arg(long)]
    pub deployment_pods: Option<usize>,
    /// Scenario 12: clusters, one informer-testserver each [full: 20, quick: 4].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub clusters: Option<u16>,
    /// Scenario 12: distinct Pods on each cluster's server [full: 2000, quick: 500].
    #[arg(long, value_name = "N")]
    pub cluster_pods: Option<usize>,
    /// Seed a real kube-apiserver with etcd (informer-envtest, built with Go) over HTTP instead
    /// of informer-testserver, and run against it the scenarios the goals read (sync, updates,
    /// relist, decode; `--scenarios` may add ns-query, four, sync-strip and sync-meta).
    #[arg(long, conflicts_with = "scale")]
    pub kube_apiserver: bool,
    /// Which Pods to seed: `distinct` (every Pod different, the worst case for sharing; the
    /// default, and the only corpus of the earliest runs), `realistic` (owner groups sharing their
    /// template, see `benches/src/corpus/`) or `exemplar` (copies of upstream's exemplar Pod,
    /// as Kubernetes' own benchmarks seed them, see `benches/src/corpus/exemplar.rs`)
    /// [default: distinct; with --scale: realistic].
    #[arg(long, value_enum)]
    pub corpus: Option<Corpus>,
    /// Every child offers gzip (T3; client-go's default, informer-rs's too): the server then
    /// gzips LIST bodies over 128 KiB and watch-list streams. Off by default, so the figures
    /// measure decoding and caching, not compression on a loopback the two processes share.
    #[arg(long)]
    pub gzip: bool,
    /// Decode threads (T6) for every informer-rs child and the decode scenario (passed to them
    /// as `--decode-threads N`; `1` decodes inline) [default: the runtime's own, one per core;
    /// the decode goal compares two threads with one].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub decode_threads: Option<u16>,
    /// The figures the memory and update-rate goals must not fall behind (see
    /// `benches/src/baseline.rs`); a missing file leaves those goals unmeasured.
    #[arg(long, default_value = "benches/baseline.json")]
    pub baseline: PathBuf,
}

/// What `--kube-apiserver` runs by default: the scenarios the goals read (the sync, the
/// updates, the relist's memory, the decode).
pub const KUBE_APISERVER_SCENARIOS: [Scenario; 5] = [
    Scenario::Sync,
    Scenario::Updates,
    Scenario::Relist,
    Scenario::Decode,
    Scenario::Operator,
];

/// The resolved plan of a run.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) quick: bool,
    pub(crate) pods: PodSet,
    pub(crate) reps: usize,
    pub(crate) update_rounds: u64,
    pub(crate) scenarios: Vec<Scenario>,
    pub(crate) child_timeout: Duration,
    pub(crate) query_ms: u64,
    pub(crate) page_size: u32,
    pub(crate) impls: Vec<Impl>,
    /// The client-go child, when there is one.
    pub(crate) client_go: Option<PathBuf>,
    /// The controller-runtime child (scenario 11), when there is one.
    pub(crate) controller_runtime: Option<PathBuf>,
    /// Scenario 11's Deployments and Pods.
    pub(crate) fleet: Fleet,
    /// Scenario 12's clusters.
    pub(crate) clusters: clusters::Clusters,
    /// Sync from kube-apiserver instead of informer-testserver.
    pub(crate) kube_apiserver: bool,
    /// Children offer gzip.
    pub(crate) gzip: bool,
    /// `--decode-threads`, for the informer-rs children.
    pub(crate) decode_threads: Option<usize>,
}

impl Plan {
    fn from_args(a: &OrchestrateArgs) -> Self {
        let deployments = a
            .deployments
            .unwrap_or(if a.quick { 100 } else { 1_000 })
            .max(1);
        let fleet = Fleet::new(
            deployments,
            a.deployment_pods.unwrap_or(deployments * 10),
            deployments.div_ceil(10),
        );
        let (pods, namespaces, reps, timeout, query_ms) = if a.quick {
            (2_000, 50, 2, 60, 200)
        } else if a.scale {
            (1_000_000, 5_000, 1, 1_800, 1000)
        } else {
            (50_000, 500, 3, 900, 1000)
        };
        Plan {
            quick: a.quick,
            pods: PodSet::new(
                a.pods.unwrap_or(pods),
                a.namespaces.unwrap_or(namespaces),
                a.corpus
                    .unwrap_or(if a.scale || a.scenarios.contains(&Scenario::Scale) {
                        Corpus::Realistic
                    } else {
                        Corpus::Distinct
                    }),
            ),
            reps: a.reps.unwrap_or(reps).max(1),
            update_rounds: a.update_rounds.max(1),
            scenarios: if a.scenarios.is_empty() && a.scale {
                vec![Scenario::Scale]
            } else if a.scenarios.is_empty() && a.kube_apiserver {
                KUBE_APISERVER_SCENARIOS.to_vec()
            } else if a.scenarios.is_empty() {
                Scenario::ALL.to_vec()
            } else {
                a.scenarios.clone()
            },
            child_timeout: Duration::from_secs(a.child_timeout_s.unwrap_or(timeout)),
            query_ms,
            page_size: 500,
            impls: if a.scale && a.impls.is_empty() {
                vec![Impl::OursCompact]
            } else {
                a.impls.clone()
            },
            client_go: a.client_go.clone(),
            controller_runtime: a.controller_runtime.clone(),
            fleet,
            clusters: clusters::Clusters::new(
                a.clusters.map_or(if a.quick { 4 } else { 20 }, usize::from),
                a.cluster_pods.unwrap_or(if a.quick { 500 } else { 2_000 }),
            ),
            kube_apiserver: a.kube_apiserver,
            gzip: a.gzip,
            decode_threads: a.decode_threads.map(usize::from),
        }
    }

    /// Refuses the scenarios kube-apiserver cannot run, saying why.
    fn check_server(&self) -> anyhow::Result<()> {
        if !self.kube_apiserver {
            return Ok(());
        }
        for s in &self.scenarios {
            if let Some(why) = s.not_on_kube_apiserver() {
                anyhow::bail!("--kube-apiserver cannot run `{s}`: {why}");
            }
        }
        Ok(())
    }

    /// The implementations this run measures in `scenario`: the scenario's, narrowed by
    /// `--impls`, without client-go when there is no client-go child.
    pub(crate) fn impls_of(&self, scenario: Scenario) -> impl Iterator<Item = Impl> + '_ {
        scenario.impls().iter().copied().filter(|i| {
            (self.impls.is_empty() || self.impls.contains(i))
                && (self.client_go.is_some() || !i.is_client_go())
                && (self.controller_runtime.is_some() || !i.is_controller_runtime())
        })
    }

    /// [`check_client_go`](Self::check_client_go) for the controller-runtime child.
    fn check_controller_runtime(&self) -> anyhow::Result<()> {
        if let Some(path) = &self.controller_runtime {
            anyhow::ensure!(
                path.is_file(),
                "the controller-runtime child {} does not exist (build it with `go build -o {} ./benches/controller-runtime`)",
                path.display(),
                path.display()
            );
            return Ok(());
        }
        anyhow::ensure!(
            !self.impls.contains(&Impl::ControllerRuntime),
            "--impls names controller-runtime, but no controller-runtime child was given (--controller-runtime PATH)"
        );
        if self.impls.is_empty() && self.scenarios.contains(&Scenario::Operator) {
            eprintln!(
                "informer-bench: WARNING: no controller-runtime child (--controller-runtime PATH): the operator scenario runs informer-rs alone"
            );
        }
        Ok(())
    }

    /// Fails when `--impls` asks for client-go without a client-go child; says loudly when
    /// client-go is left out of a run that would have measured it.
    fn check_client_go(&self) -> anyhow::Result<()> {
        self.check_controller_runtime()?;
        if let Some(path) = &self.client_go {
            anyhow::ensure!(
                path.is_file(),
                "the client-go child {} does not exist (build it with `go build -o {} ./benches/client-go`)",
                path.display(),
                path.display()
            );
            return Ok(());
        }
        let asked = self.impls.iter().filter(|i| i.is_client_go()).count();
        anyhow::ensure!(
            asked == 0,
            "--impls names client-go, but no client-go child was given (--client-go PATH)"
        );
        let skipped = self.impls.is_empty()
            && self
                .scenarios
                .iter()
                .any(|s| s.impls().iter().any(|i| i.is_client_go()));
        if skipped {
            eprintln!(
                "informer-bench: WARNING: no client-go child (--client-go PATH): client-go and client-go-json are NOT measured in this run"
            );
        }
        Ok(())
    }
}

/// Runs the whole benchmark and returns the report (also printed and written to `args.out`).
pub async fn orchestrate(args: OrchestrateArgs) -> anyhow::Result<Report> {
    let plan = Plan::from_args(&args);
    plan.check_client_go()?;
    plan.check_server()?;
    // Read before the run, so a broken file stops it before anything is measured.
    let baseline = crate::baseline::Baseline::read(&args.baseline)?;
    let started_unix = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let host = host_facts();
    let revision = git_revision();
    let exe = std::env::current_exe().context("locating the informer-bench binary")?;

    let mut runs: Vec<RunRecord> = Vec::new();
    // Every scenario but the operator's and the clusters' runs on one server seeded with the
    // Pod corpus.
    let main = if plan.scenarios.iter().any(|s| !s.own_servers()) {
        Some(main_phase(&plan, &args, &exe, &mut runs).await?)
    } else {
        None
    };
    // Scenario 11 runs on a server of its own (`operator.rs`).
    let mut fleet = None;
    if plan.scenarios.contains(&Scenario::Operator)
        && plan.impls_of(Scenario::Operator).next().is_some()
    {
        let kubeconfig = args.out.with_extension("operator.kubeconfig");
        let (operator_runs, facts) = operator::phase(&plan, &exe, kubeconfig).await?;
        runs.extend(operator_runs);
        fleet = Some(facts);
    }
    // Scenario 12 runs on servers of its own, one per cluster (`clusters.rs`).
    let mut clusters = None;
    if plan.scenarios.contains(&Scenario::Clusters)
        && plan.impls_of(Scenario::Clusters).next().is_some()
    {
        let (cluster_runs, facts) = clusters::phase(&plan, &exe).await?;
        runs.extend(cluster_runs);
        clusters = Some(facts);
    }
    let main = match main {
        Some(main) => main,
        // An operator-only (or clusters-only) run seeded no Pod corpus: its figures are the
        // fleet's.
        None => MainFacts {
            pod_json_bytes: 0.0,
            pod_sizes: sizes::measure(&plan.pods, 20)?,
            seed_s: 0.0,
            server_rss_mib: 0.0,
            server: fleet.as_ref().map_or_else(
                || {
                    clusters
                        .as_ref()
                        .map_or_else(String::new, |c| c.server.clone())
                },
                |f| f.server.clone(),
            ),
        },
    };

    let config = RunConfig {
        quick: plan.quick,
        pods: plan.pods.n,
        namespaces: plan.pods.namespaces,
        reps: plan.reps,
        updates: plan.update_rounds * plan.pods.subset_len() as u64,
        subset: plan.pods.subset_len(),
        page_size: plan.page_size,
        pod_json_bytes: main.pod_json_bytes,
        pod_sizes: main.pod_sizes,
        seed_s: main.seed_s,
        server_rss_mib: main.server_rss_mib,
        server: main.server,
        gzip: plan.gzip,
        corpus: plan.pods.corpus(),
        decode_threads: plan.decode_threads,
        operator: fleet,
        clusters,
    };
    let mut report = Report::new(revision, started_unix, host, config, runs);
    crate::goals::judge(&mut report, baseline.as_ref());
    print_table(&report.table());
    if let Some(dir) = args.out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let json = serde_json::to_string_pretty(&report)?;
    std::fs::write(&args.out, json).with_context(|| format!("writing {}", args.out.display()))?;
    eprintln!("informer-bench: results written to {}", args.out.display());
    if let Some(svg) = crate::chart::headline_svg(&report) {
        let chart = args.out.with_extension("svg");
        std::fs::write(&chart, svg).with_context(|| format!("writing {}", chart.display()))?;
        eprintln!(
            "informer-bench: headline chart written to {} (BENCHMARKS.md shows \
             benches/headline.svg from the latest full run)",
            chart.display()
        );
    }
    // Missed goals are results; a run that failed is a broken harness (CI fails on it).
    let failed = report.runs.iter().filter(|r| r.error.is_some()).count();
    anyhow::ensure!(
        failed == 0,
        "{failed} of {} runs failed (see the table)",
        report.runs.len()
    );
    Ok(report)
}

/// What the main phase learned about its server and Pods, for the report.
struct MainFacts {
    pod_json_bytes: f64,
    pod_sizes: sizes::PodSizes,
    seed_s: f64,
    server_rss_mib: f64,
    server: String,
}

/// Every scenario but the operator's: one server seeded with the Pod corpus, a discarded
/// warm-up run, then each scenario's repetitions, the implementations interleaved.
async fn main_phase(
    plan: &Plan,
    args: &OrchestrateArgs,
    exe: &std::path::Path,
    runs: &mut Vec<RunRecord>,
) -> anyhow::Result<MainFacts> {
    let mut server = if plan.kube_apiserver {
        server::BenchServer::start_kube_apiserver(args.out.with_extension("kubeconfig")).await?
    } else {
        server::BenchServer::start(
            plan.update_rounds as usize * plan.pods.subset_len(),
            plan.scenarios.contains(&Scenario::Scale),
        )
        .await?
    };
    eprintln!(
        "informer-bench: {} at {}; seeding {} Pods of the {} corpus in {} namespaces",
        server.name(),
        server.url(Scenario::Sync),
        plan.pods.n,
        plan.pods.corpus().name(),
        plan.pods.namespaces
    );
    let t = Instant::now();
    let pod_json_bytes = server.seed(&plan.pods).await?;
    let seed_s = t.elapsed().as_secs_f64();
    // What holding the Pods costs the server (see `BenchServer::rss_mib`).
    let server_rss_mib = server.rss_mib();
    eprintln!(
        "informer-bench: seeded in {seed_s:.1} s ({:.1} KiB JSON per Pod); server RSS {server_rss_mib:.0} MiB",
        pod_json_bytes / 1024.0
    );
    server.warm_up(plan.page_size).await?;
    // kube-apiserver serves its own managedFields and defaults: measure what it serves.
    let pod_sizes = match server.served_pods(200).await? {
        Some(docs) => sizes::measure_docs(&docs)?,
        None => sizes::measure(&plan.pods, 200)?,
    };
    eprintln!("informer-bench: one Pod in memory: {pod_sizes:?}");

    let scenarios: Vec<Scenario> = plan
        .scenarios
        .iter()
        .copied()
        .filter(|s| !s.own_servers())
        .collect();
    let mut runner = run::Runner::new(exe.to_path_buf(), &server, plan);
    // One untimed child first: the very first child of a run was consistently 40-70% slower than
    // the rest (whichever implementation it was), which only widened the spread.
    if let Some(scenario) = scenarios.first().filter(|s| **s != Scenario::Scale)
        && let Some(imp) = plan.impls_of(*scenario).next()
    {
        let record = runner.run(*scenario, imp, 0).await;
        eprintln!(
            "informer-bench: warm-up run ({scenario} / {imp}) discarded{}",
            record.error.map(|e| format!(": {e}")).unwrap_or_default()
        );
    }
    for scenario in &scenarios {
        for rep in 0..plan.reps {
            // Interleave the implementations so slow drift on a shared machine hits both alike.
            for imp in plan.impls_of(*scenario) {
                let t = Instant::now();
                let record = runner.run(*scenario, imp, rep).await;
                run::say(&record, t.elapsed());
                runs.push(record);
            }
        }
    }
    drop(runner);
    let server_name = server.name();
    server.shutdown().await;
    Ok(MainFacts {
        pod_json_bytes,
        pod_sizes,
        seed_s,
        server_rss_mib,
        server: server_name,
    })
}

/// The table is the program's output, so it goes to stdout.
#[allow(clippy::print_stdout)]
fn print_table(table: &str) {
    println!("{table}");
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: OrchestrateArgs,
    }

    fn plan(args: &[&str]) -> Plan {
        let cli = Cli::parse_from(std::iter::once("orchestrate").chain(args.iter().copied()));
        Plan::from_args(&cli.args)
    }

    #[test]
    fn client_go_runs_only_with_its_child() {
        let without = plan(&["--quick"]);
        assert!(!without.impls_of(Scenario::Sync).any(Impl::is_client_go));
        assert!(without.check_client_go().is_ok());
        // Any existing file does for the plan; this test's own executable exists.
        let exe = std::env::current_exe().expect("the test executable");
        let exe = exe.to_str().expect("a UTF-8 path");
        let with = plan(&["--quick", "--client-go", exe]);
        assert!(with.check_client_go().is_ok());
        let sync: Vec<Impl> = with.impls_of(Scenario::Sync).collect();
        assert!(sync.contains(&Impl::ClientGo) && sync.contains(&Impl::ClientGoJson));
        assert!(!with.impls_of(Scenario::Decode).any(Impl::is_client_go));
        assert!(!with.impls_of(Scenario::Shard).any(Impl::is_client_go));
        let asked = plan(&["--quick", "--impls", "client-go"]);
        assert!(asked.check_client_go().is_err());
        let missing = plan(&["--quick", "--client-go", "/nonexistent/client-go-child"]);
        assert!(missing.check_client_go().is_err());
    }

    #[test]
    fn the_corpus_is_distinct_unless_asked_and_realistic_for_the_scale_run() {
        assert_eq!(plan(&["--quick"]).pods.corpus(), Corpus::Distinct);
        let realistic = plan(&["--quick", "--corpus", "realistic"]);
        assert_eq!(realistic.pods.corpus(), Corpus::Realistic);
        let scale = plan(&["--scale"]);
        assert_eq!(scale.pods.corpus(), Corpus::Realistic);
        assert_eq!(scale.pods.n, 1_000_000);
        assert_eq!(scale.scenarios, [Scenario::Scale]);
        assert_eq!(
            scale.impls_of(Scenario::Scale).collect::<Vec<_>>(),
            [Impl::OursCompact]
        );
        let by_scenario = plan(&["--scenarios", "scale", "--pods", "10"]);
        assert_eq!(by_scenario.pods.corpus(), Corpus::Realistic);
        let both: Vec<Impl> = by_scenario.impls_of(Scenario::Scale).collect();
        assert_eq!(both, [Impl::OursCompact, Impl::OursProjection]);
        let distinct = plan(&["--scale", "--corpus", "distinct", "--pods", "10"]);
        assert_eq!(distinct.pods.corpus(), Corpus::Distinct);
    }

    #[test]
    fn kube_apiserver_runs_what_the_goals_read_and_refuses_what_it_cannot() {
        let kube = plan(&["--quick", "--kube-apiserver"]);
        assert_eq!(kube.scenarios, KUBE_APISERVER_SCENARIOS);
        assert!(kube.check_server().is_ok());
        let hooks = plan(&["--kube-apiserver", "--scenarios", "four,ns-query,sync-meta"]);
        assert!(hooks.check_server().is_ok());
        for refused in ["shard", "scale"] {
            let p = plan(&["--kube-apiserver", "--scenarios", refused]);
            let err = p.check_server().expect_err("refused");
            assert!(err.to_string().contains(refused), "{err}");
        }
        assert!(plan(&["--scenarios", "shard"]).check_server().is_ok());
    }

    #[test]
    fn clusters_run_on_test_servers_of_their_own_at_their_sizes() {
        let full = plan(&[]);
        assert!(full.scenarios.contains(&Scenario::Clusters));
        assert_eq!((full.clusters.n, full.clusters.pods_each), (20, 2_000));
        let quick = plan(&["--quick"]);
        assert_eq!((quick.clusters.n, quick.clusters.pods_each), (4, 500));
        let asked = plan(&[
            "--scenarios",
            "clusters",
            "--clusters",
            "3",
            "--cluster-pods",
            "200",
        ]);
        assert_eq!(asked.scenarios, [Scenario::Clusters]);
        assert_eq!((asked.clusters.n, asked.clusters.pods_each), (3, 200));
        // The main Pod set is not the clusters' and is not seeded for them.
        assert!(asked.scenarios.iter().all(|s| s.own_servers()));
        assert!(Cli::try_parse_from(["orchestrate", "--clusters", "0"]).is_err());
        // client-go's side only with its child.
        let sides: Vec<Impl> = asked.impls_of(Scenario::Clusters).collect();
        assert_eq!(sides, [Impl::Ours]);
        let err = plan(&["--kube-apiserver", "--scenarios", "clusters"])
            .check_server()
            .expect_err("refused on kube-apiserver");
        assert!(err.to_string().contains("one server per cluster"), "{err}");
        assert!(!KUBE_APISERVER_SCENARIOS.contains(&Scenario::Clusters));
    }

    #[test]
    fn decode_threads_must_be_positive() {
        assert_eq!(plan(&["--decode-threads", "2"]).decode_threads, Some(2));
        assert_eq!(plan(&[]).decode_threads, None);
        let zero = Cli::try_parse_from(["orchestrate", "--decode-threads", "0"]);
        assert!(zero.is_err());
    }
}
