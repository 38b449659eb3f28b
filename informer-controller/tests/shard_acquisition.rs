//! Shard acquisition under slow Lease requests (S10) against informer-testserver: a round acquires
//! its shards concurrently, starts what it verified, keeps what it won, and releases what it won
//! when cancelled in flight.
//!
//! Run with `cargo test -p informer-controller --test shard_acquisition`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use informer_controller::leader::LeaderElectionConfig;
use informer_controller::shards::ShardAssigner;
use informer_testserver::{FaultTarget, TestServer};
use k8s_openapi::api::coordination::v1::Lease;
use support::*;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Runs `assigner` until `cancel`, each shard's work until its term ends; `started` logs the
/// shards started.
fn run(
    assigner: &Arc<ShardAssigner>,
    started: &Arc<Recorder<u32>>,
    cancel: &CancellationToken,
) -> JoinHandle<()> {
    let (a, started, cancel) = (Arc::clone(assigner), Arc::clone(started), cancel.clone());
    tokio::spawn(async move {
        a.run(cancel, move |index, owned| {
            started.push(index);
            async move { owned.cancelled().await }
        })
        .await
        .unwrap();
    })
}

/// S10: 32 shards while every Lease write takes 300 ms (an API server under load, a slow etcd).
/// Written one after another a round needs 9.6 s, ten times the 1 s renew deadline; the round
/// used to be cut there and started nothing, round after round. Written at once, every shard
/// starts, and stays started: each shard's renewal (a GET and a 300 ms write) fits its deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s10_thirty_two_shards_start_under_300_ms_lease_writes() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server
        .faults()
        .delay(FaultTarget::Write, Duration::from_millis(300));
    let assigner =
        Arc::new(ShardAssigner::new(server.client(), "default", "slow", "a", 32, fast()).unwrap());
    let started = Recorder::<u32>::new();
    let cancel = CancellationToken::new();
    let task = run(&assigner, &started, &cancel);
    let mut owned = assigner.subscribe();
    wait_watch("all 32 shards to run", &mut owned, |o| o.len() == 32).await;
    // Kept: every shard's Lease is renewed (its renewTime moves) while no shard restarts.
    let renewed = |name: String| {
        let server = &server;
        async move {
            server
                .get::<Lease>(Some("default"), &name)
                .ok()
                .and_then(|l| l.spec?.renew_time)
        }
    };
    let before =
        futures::future::join_all((0..32).map(|i| renewed(format!("slow-shard-{i}")))).await;
    poll_within(WAIT, "every shard renewed under slow writes", || async {
        let now =
            futures::future::join_all((0..32).map(|i| renewed(format!("slow-shard-{i}")))).await;
        now.iter().zip(&before).all(|(n, b)| n.is_some() && n != b)
    })
    .await;
    assert_eq!(assigner.owned().len(), 32);
    assert_eq!(
        started.snapshot().len(),
        32,
        "S10: a shard restarted: {:?}",
        started.snapshot()
    );
    server.faults().delay(FaultTarget::Write, Duration::ZERO);
    cancel.cancel();
    within("the replica to stop", task).await.unwrap();
}

/// S10: a replica cancelled while a round is in flight, after its write won a shard Lease (a
/// rolling update's cancel landing mid-round), releases that Lease before it leaves: the
/// holder is cleared at once, and another replica takes the shard without waiting out the
/// lease. (Before, the cancel cut the round and the Lease stayed held until it expired.) Every
/// LIST is slowed so the round's verifying read is still in flight when the cancel lands.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s10_a_round_cancelled_after_winning_a_lease_releases_it() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    // Long enough that the slow LIST fits the renew deadline and expiry cannot be mistaken
    // for a release.
    let config = LeaderElectionConfig {
        lease_duration: Duration::from_secs(20),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(1),
        jitter_factor: 0.0,
        release_on_cancel: true,
    };
    let lease = "cut-shard-0";
    server
        .faults()
        .delay(FaultTarget::List, Duration::from_secs(2));
    let a = Arc::new(
        ShardAssigner::new(server.client(), "default", "cut", "a", 1, config.clone()).unwrap(),
    );
    let started = Recorder::<u32>::new();
    let cancel = CancellationToken::new();
    let task = run(&a, &started, &cancel);
    let holder = || {
        server
            .get::<Lease>(Some("default"), lease)
            .ok()
            .and_then(|l| l.spec?.holder_identity)
    };
    // The acquiring write landed; the verifying LIST is still held by the server.
    wait_until("replica a to win the shard Lease", || {
        holder().as_deref() == Some("a")
    })
    .await;
    cancel.cancel();
    within("the replica to stop", task).await.unwrap();
    assert!(
        started.snapshot().is_empty(),
        "the cancel landed before the round started the shard"
    );
    assert_eq!(
        holder().unwrap_or_default(),
        "",
        "S10: the Lease the cancelled round won is released, not left held until it expires"
    );

    // Another replica takes it at once (a held Lease would wait out its 20 s).
    server.faults().delay(FaultTarget::List, Duration::ZERO);
    let b =
        Arc::new(ShardAssigner::new(server.client(), "default", "cut", "b", 1, config).unwrap());
    let cancel_b = CancellationToken::new();
    let task_b = run(&b, &Recorder::new(), &cancel_b);
    let mut owned = b.subscribe();
    wait_watch("replica b to own the released shard", &mut owned, |o| {
        o.contains(&0)
    })
    .await;
    assert_eq!(holder().as_deref(), Some("b"));
    cancel_b.cancel();
    within("replica b to stop", task_b).await.unwrap();
}
