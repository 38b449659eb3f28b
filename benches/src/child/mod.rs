//! The measured side: one child process runs one (scenario, implementation) pair and reports.
//!
//! Children are separate processes so that each measures only itself: the counting allocator and
//! `VmHWM` start from zero, and neither the server nor the other implementation is counted.

mod clusters;
mod decode;
mod kube_rt;
pub mod operator;
mod ours;
mod track;

use std::io::{BufRead, Write};
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::sync::mpsc;

use crate::alloc::heap_stats;
use crate::protocol::{ChildMsg, Command, Impl, MIB, Metrics, Scenario};
use crate::sys::rss;

/// The command line of a child process.
#[derive(Debug, Clone, clap::Args)]
pub struct ChildSpec {
    /// The scenario to run.
    #[arg(long, value_enum)]
    pub scenario: Scenario,
    /// The implementation to run it with.
    #[arg(long = "impl", value_enum)]
    pub imp: Impl,
    /// Base URL of the API server.
    #[arg(long)]
    pub url: String,
    /// A kubeconfig to connect with instead of `--url` (kube-apiserver: TLS and a token).
    #[arg(long)]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// Number of seeded Pods.
    #[arg(long)]
    pub pods: usize,
    /// Number of namespaces the Pods are spread over.
    #[arg(long)]
    pub namespaces: usize,
    /// Objects the cache holds once synced (the Pods the selector matches).
    #[arg(long)]
    pub objects: usize,
    /// A label selector for both LIST and WATCH (scenarios 3 and 4 watch a subset).
    #[arg(long)]
    pub label_selector: Option<String>,
    /// Scenario 2: every Pod is updated this many times (generation 1..=rounds).
    #[arg(long, default_value_t = 2)]
    pub update_rounds: u64,
    /// Scenario 2: the generation every Pod has after the updates (the run is done then).
    #[arg(long, default_value_t = 2)]
    pub final_generation: u64,
    /// Scenario 4: the Pod the orchestrator creates once the relist is done.
    #[arg(long, default_value = "relist-sentinel")]
    pub sentinel: String,
    /// Scenario 5: run namespaced queries for at least this long (milliseconds).
    #[arg(long, default_value_t = 1000)]
    pub query_ms: u64,
    /// Page size of every LIST (both implementations default to 500).
    #[arg(long, default_value_t = 500)]
    pub page_size: u32,
    /// List in pages (`InitialListStrategy::ListWatch`) instead of the informer's default, the
    /// streaming list (`Scenario::paged`); kube-runtime's children page either way.
    #[arg(long)]
    pub paged: bool,
    /// Offer gzip (`Accept-Encoding: gzip`, T3).
    #[arg(long)]
    pub gzip: bool,
    /// Scenario 12: every cluster's server, comma-separated (`--url` is the first).
    #[arg(long, value_delimiter = ',')]
    pub cluster_urls: Vec<String>,
    /// Decode threads of the informer (informer-rs children, `ours::decode_pool`) and of the
    /// decode scenario's pooled pass; `None`: the runtime's default (one per core) for the
    /// informers, two for the decode scenario.
    #[arg(long)]
    pub decode_threads: Option<usize>,
}

/// Generous upper bound for any one phase; a stuck child fails instead of hanging the run.
pub(crate) const PHASE_TIMEOUT_S: u64 = 900;

/// Runs a child: reports [`ChildMsg::Done`] or [`ChildMsg::Failed`] on stdout and returns the
/// process exit code.
pub fn main(spec: ChildSpec) -> i32 {
    if std::env::var_os("RUST_LOG").is_some() {
        // Logs go to stderr, which the orchestrator passes through; stdout is the protocol.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .try_init();
    }
    let mut io = ChildIo::start();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            io.send(&ChildMsg::Failed {
                error: format!("tokio runtime: {e}"),
            });
            return 1;
        }
    };
    let res = rt.block_on(async {
        match spec.imp {
            // Scenario 11 has one informer-rs side, the operator at its defaults.
            Impl::Ours if spec.scenario == Scenario::Operator => {
                operator::run(&spec, &mut io).await
            }
            // Scenario 12 has one informer-rs side, the fleet at its defaults.
            Impl::Ours if spec.scenario == Scenario::Clusters => clusters::run(&spec).await,
            Impl::Ours | Impl::OursStreaming | Impl::OursOrdered | Impl::OursProto => {
                ours::run(&spec, &mut io).await
            }
            // Scenario 9's variants are the same informer with a shard (`ours::informer`).
            Impl::Shard1Server
            | Impl::Shard2Server
            | Impl::Shard4Server
            | Impl::Shard1Client
            | Impl::Shard2Client
            | Impl::Shard4Client => ours::run(&spec, &mut io).await,
            Impl::OursProjection | Impl::OursProjectionProto => {
                ours::run_projection(&spec, &mut io).await
            }
            Impl::OursCompact | Impl::OursCompactProto => ours::run_compact(&spec, &mut io).await,
            Impl::Kube | Impl::KubeShared => kube_rt::run(&spec, &mut io).await,
            Impl::SerdeJson => decode::run(&spec).await,
            Impl::ClientGo | Impl::ClientGoJson => Err(anyhow::anyhow!(
                "{} runs in the Go child (benches/client-go), not in informer-bench",
                spec.imp
            )),
            Impl::ControllerRuntime => Err(anyhow::anyhow!(
                "{} runs in the Go child benches/controller-runtime, not in informer-bench",
                spec.imp
            )),
        }
    });
    let res = res.map(|mut metrics| {
        if spec.imp.is_ours() {
            // What the informer really decoded with, beside what was asked (`decode_threads_asked`).
            metrics.insert(
                "decode_threads".into(),
                ours::decode_threads(spec.decode_threads) as f64,
            );
            if let Some(asked) = spec.decode_threads {
                metrics.insert("decode_threads_asked".into(), asked as f64);
            }
        }
        metrics
    });
    let code = match res {
        Ok(metrics) => {
            io.send(&ChildMsg::Done { metrics });
            0
        }
        Err(e) => {
            io.send(&ChildMsg::Failed {
                error: format!("{e:#}"),
            });
            1
        }
    };
    // Background tasks (watches) may still run; end the process without waiting for them.
    rt.shutdown_timeout(Duration::from_millis(100));
    code
}

/// The child's two pipes: messages out on stdout, commands in on stdin.
pub(crate) struct ChildIo {
    commands: mpsc::UnboundedReceiver<Command>,
}

impl ChildIo {
    /// Starts the stdin reader. When stdin closes, the process exits at once: the orchestrator
    /// is gone (finished, failed or killed), and a child must never outlive it.
    fn start() -> Self {
        let (tx, commands) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<Command>(line.trim()) {
                    Ok(cmd) => {
                        if tx.send(cmd).is_err() {
                            break;
                        }
                    }
                    Err(e) => eprintln!("informer-bench child: ignoring command {line:?}: {e}"),
                }
            }
            std::process::exit(3);
        });
        ChildIo { commands }
    }

    /// Writes one message line to stdout.
    pub(crate) fn send(&self, msg: &ChildMsg) {
        let mut out = std::io::stdout().lock();
        // A failed write means the orchestrator is gone; the stdin reader ends the process.
        if let Ok(line) = serde_json::to_string(msg) {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }

    /// Waits for the orchestrator's next command and checks that it is `want`.
    pub(crate) async fn expect(&mut self, want: Command) -> anyhow::Result<()> {
        match self.commands.recv().await {
            Some(cmd) if cmd == want => Ok(()),
            Some(cmd) => bail!("expected command {want:?}, got {cmd:?}"),
            None => bail!("stdin closed while waiting for {want:?}"),
        }
    }

    /// The scenario-4 handshake: wait for `Mark`, reset the peak counters, report the steady state.
    pub(crate) async fn mark(&mut self) -> anyhow::Result<Metrics> {
        self.expect(Command::Mark).await?;
        crate::alloc::reset_peak();
        crate::sys::reset_peak_rss();
        let m = memory_metrics();
        self.send(&ChildMsg::Marked { metrics: m.clone() });
        Ok(m)
    }
}

/// Heap and RSS now and at their peaks, in MiB, plus the allocation count.
pub(crate) fn memory_metrics() -> Metrics {
    let h = heap_stats();
    let r = rss();
    Metrics::from([
        ("heap_mib".to_string(), h.current as f64 / MIB),
        ("heap_peak_mib".to_string(), h.peak as f64 / MIB),
        ("rss_mib".to_string(), r.current_kib as f64 / 1024.0),
        ("rss_peak_mib".to_string(), r.peak_kib as f64 / 1024.0),
        ("allocations".to_string(), h.allocations as f64),
    ])
}

/// A kube client: from `kubeconfig` when given (kube-apiserver: TLS verified, a bearer token),
/// else for the server at `url` (no TLS, no auth: the testserver needs neither).
pub(crate) async fn client(
    url: &str,
    kubeconfig: Option<&std::path::Path>,
) -> anyhow::Result<kube::Client> {
    let mut config = match kubeconfig {
        Some(path) => {
            let file = kube::config::Kubeconfig::read_from(path)
                .with_context(|| format!("reading the kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                .await
                .with_context(|| format!("the kubeconfig {}", path.display()))?
        }
        None => kube::Config::new(
            url.parse::<http::Uri>()
                .with_context(|| format!("bad server url {url:?}"))?,
        ),
    };
    // Watches may be open for up to 10 minutes (R6); never cut them on the client side.
    config.read_timeout = None;
    kube::Client::try_from(config).context("building the kube client")
}

/// Waits for `fut`, failing after `secs` seconds with a message naming `what`.
pub(crate) async fn within<T>(
    secs: u64,
    what: &str,
    fut: impl Future<Output = T>,
) -> anyhow::Result<T> {
    tokio::time::timeout(Duration::from_secs(secs), fut)
        .await
        .with_context(|| format!("timed out after {secs} s waiting for {what}"))
}
