//! Shard acquisition under slow Lease writes (S10) against informer-testserver: a round acquires
//! its shards concurrently, starts what it verified, and keeps what it won.
//!
//! Run with `cargo test -p informer-controller --test shard_acquisition`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use informer_controller::shards::ShardAssigner;
use informer_testserver::{FaultTarget, TestServer};
use k8s_openapi::api::coordination::v1::Lease;
use support::*;
use tokio_util::sync::CancellationToken;

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
    let task = tokio::spawn({
        let (a, started, cancel) = (Arc::clone(&assigner), Arc::clone(&started), cancel.clone());
        async move {
            a.run(cancel, move |index, owned| {
                started.push(index);
                async move { owned.cancelled().await }
            })
            .await
            .unwrap();
        }
    });
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
