//! Leaving releases everything (decision record 29): a fleet engages a cluster of 5 000 Pods,
//! syncs it, disengages it, and the heap goes back to within 5% of where it was before.
//!
//! The counting allocator (`informer_benches::alloc`) is this binary's global allocator, and
//! the server runs in a child process (this binary with `--serve`), so the heap counted is the
//! fleet's alone. A first engagement sets up what the process keeps whatever the clusters (the
//! decode tables of recently seen parts, P8; the pools' shard tables at their largest size,
//! P3; the runtime's worker state): it may leave at most 4 MiB of that behind, of the 28 MB its
//! cache took. The baseline is the heap after it, and three more engagements must each come back
//! to within 5% of it. `harness = false`: `main` is the test, and `cargo test` runs it.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::Duration;

use informer_benches::alloc::{CountingAlloc, heap_stats};
use informer_benches::podset::PodSet;
use informer_controller::fleet::{ClusterSpec, ClusterState, Fleet, StaticProvider};
use informer_k8s::api::core::v1::Pod;
use informer_testserver::TestServer;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// The cluster's Pods, in 50 namespaces.
const PODS: usize = 5_000;
/// How far the heap may stay above the baseline once the cluster left.
const TOLERANCE: f64 = 0.05;
/// What the first engagement may leave behind for good: P8's tables of recently decoded parts
/// (about 1.5 MiB) and the pools' shard tables.
const KEPT: usize = 4 << 20;

type Error = Box<dyn std::error::Error + Send + Sync>;

fn main() -> ExitCode {
    let serve = std::env::args().any(|a| a == "--serve");
    if std::env::args().any(|a| a == "--list") {
        // What `cargo test -- --list` asks of a test binary.
        let _ = writeln!(std::io::stdout(), "leaving_releases_the_heap: test");
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("fleet_release: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = if serve {
        runtime.block_on(serve_until_stdin_closes())
    } else {
        runtime.block_on(leaving_releases_the_heap())
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("fleet_release: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The child: a test server with the Pods, its address on stdout, served until stdin closes.
async fn serve_until_stdin_closes() -> Result<(), Error> {
    let server = TestServer::start().await?;
    let pods = PodSet::distinct(PODS, 50);
    for n in 0..pods.namespaces {
        server.create_json(serde_json::json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": informer_benches::pods::namespace_name(n)}}))?;
    }
    for i in 0..PODS {
        server.create_json(pods.pod_json(i))?;
    }
    writeln!(std::io::stdout(), "{}", server.base_url())?;
    std::io::stdout().flush()?;
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        let _ = std::io::stdin().read_line(&mut line);
    })
    .await?;
    Ok(())
}

/// The server child, killed when dropped.
struct ServerChild(Child);

impl Drop for ServerChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the server child and reads its address.
fn start_server() -> Result<(ServerChild, String), Error> {
    let mut child = ServerChild(
        Command::new(std::env::current_exe()?)
            .arg("--serve")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?,
    );
    let stdout = child.0.stdout.take().ok_or("the child has no stdout")?;
    let mut url = String::new();
    BufReader::new(stdout).read_line(&mut url)?;
    let url = url.trim().to_owned();
    if url.is_empty() {
        return Err("the server child ended before it served".into());
    }
    Ok((child, url))
}

/// Live heap bytes, once the runtime's threads have had a moment to flush their counts.
async fn heap() -> usize {
    // Each thread publishes its count in 16 KiB steps; a few yields let idle workers run.
    for _ in 0..8 {
        tokio::task::yield_now().await;
    }
    heap_stats().current
}

/// Polls `cond` every 10 ms for up to 60 s.
async fn wait_for(what: &str, mut cond: impl FnMut() -> bool) -> Result<(), Error> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !cond() {
        if tokio::time::Instant::now() > deadline {
            return Err(format!("timed out waiting for {what}").into());
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(())
}

async fn leaving_releases_the_heap() -> Result<(), Error> {
    let (_server, url) = tokio::task::spawn_blocking(start_server).await??;
    let mut config = kube::Config::new(url.parse()?);
    config.read_timeout = Some(Duration::from_secs(300));
    let provider = StaticProvider::new(Vec::<(&str, ClusterSpec)>::new());
    let clusters = provider.handle();
    let fleet = Fleet::builder().informer::<Pod>().build();
    let cancel = tokio_util::sync::CancellationToken::new();
    let run = tokio::spawn({
        let (fleet, cancel) = (fleet.clone(), cancel.clone());
        async move { fleet.run(provider, cancel).await }
    });

    let mut baseline = 0;
    for round in 0..4 {
        let before = heap().await;
        // A new revision each round: a fresh client and factory, as a re-engagement has.
        clusters.insert("c", ClusterSpec::new(config.clone()).revision(round));
        wait_for("the cluster to sync", || {
            fleet
                .clusters()
                .iter()
                .any(|c| c.state == ClusterState::Ready)
        })
        .await?;
        let listed = fleet.lister::<Pod>().list(&Default::default()).items.len();
        if listed != PODS {
            return Err(format!("round {round}: listed {listed} Pods, not {PODS}").into());
        }
        let engaged = heap().await;
        // Resolves once the fleet has stopped the cluster and freed what only it used.
        clusters.remove_and_wait("c").await;
        if !fleet.clusters().is_empty() {
            return Err(format!("round {round}: the cluster is still engaged").into());
        }
        let after = heap().await;
        eprintln!(
            "fleet_release: round {round}: before {before} B, engaged {engaged} B (+{} per Pod), after {after} B",
            engaged.saturating_sub(before) / PODS
        );
        if engaged < before + PODS * 1_000 {
            return Err(format!("round {round}: the cache took under 1 000 bytes per Pod").into());
        }
        // Every round, the first included, gives back what its cache took but what the
        // process keeps whatever its clusters (at most `KEPT`, set up by the first round).
        if after > before + KEPT {
            return Err(format!(
                "round {round}: {} bytes stayed of the {} the cluster took (at most {KEPT} may)",
                after - before,
                engaged.saturating_sub(before)
            )
            .into());
        }
        if round == 0 {
            baseline = after;
            continue;
        }
        let bound = (baseline as f64 * (1.0 + TOLERANCE)) as usize;
        if after > bound {
            return Err(format!(
                "round {round}: {after} bytes after the cluster left, over {bound} ({}% over the \
                 baseline {baseline}); {} bytes per Pod stayed",
                TOLERANCE * 100.0,
                after.saturating_sub(baseline) / PODS
            )
            .into());
        }
    }
    cancel.cancel();
    run.await??;
    Ok(())
}
