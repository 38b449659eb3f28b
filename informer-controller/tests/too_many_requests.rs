//! Reads that wait out a 429 (R24) against informer-testserver: kube-apiserver 1.38 answers a
//! consistent GET its lagging watch cache cannot serve (KEP-6404) with 429 and `Retry-After: 1`,
//! which kube-apiserver 1.37 cannot be made to do, so the server's injected 429 (with the
//! header and `details.retryAfterSeconds`, as kube-apiserver writes it) stands in. A leader
//! whose Lease GET answers 429 waits it out and renews within its renew deadline; a shard set
//! whose Lease LIST answers 429 waits the Retry-After before it lists again, and acquires; a
//! status update's re-read after a conflict waits it out too.
//!
//! Run with `cargo test -p informer-controller --test too_many_requests`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use http::{Method, StatusCode};
use informer_controller::WriteRecorder;
use informer_controller::leader::{LeaderElectionConfig, LeaderElector};
use informer_controller::shards::ShardAssigner;
use informer_controller::status::update_status;
use informer_testserver::{FaultTarget, RequestRecord, TestServer, Verb};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use kube::api::{Api, PostParams};
use support::*;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

/// The server's answer to the read: 429 with `Retry-After: 1`.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The wait the server saw between a 429 and the next request of the same kind, from `log`;
/// `None` while either is missing.
fn gap_after_429(log: &[RequestRecord], of: impl Fn(&RequestRecord) -> bool) -> Option<Duration> {
    let mut reads = log.iter().filter(|r| of(r));
    let refused = reads.find(|r| r.status == StatusCode::TOO_MANY_REQUESTS)?;
    let next = reads.next()?;
    next.time.duration_since(refused.time).ok()
}

/// Whether `r` is a GET of the Lease `name`.
fn lease_get(r: &RequestRecord, name: &str) -> bool {
    r.verb == Verb::Get && r.path.ends_with(&format!("/leases/{name}"))
}

/// R24, E4: a leader renewing every 2 s with a 4 s renew deadline, whose Lease GET answers 429
/// once, waits the 1 s Retry-After and renews in the same attempt, well inside its deadline: the
/// term goes on. Before, the attempt failed at once and the next came a retry period (2 s) later,
/// past the renew deadline, so the term was lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r24_a_leader_waits_out_a_429_on_its_lease_get_and_keeps_its_term() {
    init_tracing();
    const LEASE: &str = "too-many-requests-lock";
    let server = TestServer::start().await.unwrap();
    let config = LeaderElectionConfig {
        lease_duration: Duration::from_secs(6),
        renew_deadline: Duration::from_secs(4),
        retry_period: Duration::from_secs(2),
        jitter_factor: 0.0,
        release_on_cancel: true,
    };
    let (started, stopped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let s = Arc::clone(&stopped);
    let elector = Arc::new(
        LeaderElector::new(server.client(), NS, LEASE, "a", config)
            .unwrap()
            .on_stopped_leading(move || {
                s.fetch_add(1, Ordering::SeqCst);
            }),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (elector, cancel, started) =
            (Arc::clone(&elector), cancel.clone(), Arc::clone(&started));
        async move {
            elector
                .run(cancel, move |t| {
                    started.fetch_add(1, Ordering::SeqCst);
                    async move { t.cancelled().await }
                })
                .await
                .unwrap();
        }
    });
    let mut state = elector.subscribe();
    wait_watch("leading", &mut state, |s| s.is_leader).await;
    server.clear_requests();
    server.faults().fail_next(
        FaultTarget::Get,
        StatusCode::TOO_MANY_REQUESTS,
        Some(RETRY_AFTER.as_secs()),
        1,
    );
    // Two renewals after the 429: the one that met it, and the next.
    let log = server
        .wait_for_requests(WAIT, |log| {
            let refused = log
                .iter()
                .position(|r| r.status == StatusCode::TOO_MANY_REQUESTS);
            refused.is_some_and(|i| {
                log[i..]
                    .iter()
                    .filter(|r| r.method == Method::PUT && r.status.is_success())
                    .count()
                    >= 2
            })
        })
        .await
        .unwrap();
    let gap = gap_after_429(&log, |r| lease_get(r, LEASE)).unwrap();
    assert!(
        gap >= RETRY_AFTER,
        "the Lease GET was retried after {gap:?}"
    );
    assert!(elector.is_leader());
    assert_eq!(stopped.load(Ordering::SeqCst), 0, "the term was lost");
    assert_eq!(started.load(Ordering::SeqCst), 1, "a second term started");
    cancel.cancel();
    within("the elector to stop", task).await.unwrap();
}

/// Shard Lease timings with room for a 1 s Retry-After inside the renew deadline (3 s), and a
/// retry period (500 ms) shorter than it, so a read that ignored it would come too soon.
fn roomy() -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: Duration::from_secs(4),
        renew_deadline: Duration::from_secs(3),
        retry_period: Duration::from_millis(500),
        jitter_factor: 0.0,
        release_on_cancel: true,
    }
}

/// R24, S2, S10: a shard set whose first Lease LIST answers 429 waits the Retry-After before it
/// lists again (before, its round failed and the next listed a retry period, 500 ms, later),
/// then acquires its shards; a shard renewal whose Lease GET answers 429 waits it out too and
/// the shard stays held, its work never restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r24_a_shard_set_waits_out_a_429_on_its_lease_list_and_get() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.faults().fail_next(
        FaultTarget::List,
        StatusCode::TOO_MANY_REQUESTS,
        Some(RETRY_AFTER.as_secs()),
        1,
    );
    let assigner =
        Arc::new(ShardAssigner::new(server.client(), NS, "throttled", "a", 4, roomy()).unwrap());
    let starts = Arc::new(AtomicUsize::new(0));
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (a, cancel, starts) = (Arc::clone(&assigner), cancel.clone(), Arc::clone(&starts));
        async move {
            a.run(cancel, move |_, owned| {
                starts.fetch_add(1, Ordering::SeqCst);
                async move { owned.cancelled().await }
            })
            .await
            .unwrap();
        }
    });
    let mut owned = assigner.subscribe();
    wait_watch("all 4 shards to run", &mut owned, |o| o.len() == 4).await;
    let gap = gap_after_429(&server.requests(), |r| r.verb == Verb::List).unwrap();
    assert!(
        gap >= RETRY_AFTER,
        "the Lease LIST was retried after {gap:?}"
    );

    // A renewal's GET answers 429: the same Lease is read again only after the Retry-After.
    server.clear_requests();
    server.faults().fail_next(
        FaultTarget::Get,
        StatusCode::TOO_MANY_REQUESTS,
        Some(RETRY_AFTER.as_secs()),
        1,
    );
    let log = server
        .wait_for_requests(WAIT, |log| {
            log.iter()
                .find(|r| r.status == StatusCode::TOO_MANY_REQUESTS)
                .is_some_and(|refused| {
                    log.iter()
                        .filter(|r| r.verb == Verb::Get && r.path == refused.path)
                        .count()
                        >= 2
                })
        })
        .await
        .unwrap();
    let refused = log
        .iter()
        .find(|r| r.status == StatusCode::TOO_MANY_REQUESTS)
        .unwrap()
        .path
        .clone();
    let gap = gap_after_429(&log, |r| r.verb == Verb::Get && r.path == refused).unwrap();
    assert!(gap >= RETRY_AFTER, "{refused} was read again after {gap:?}");
    assert_eq!(assigner.owned().len(), 4);
    assert_eq!(starts.load(Ordering::SeqCst), 4, "a shard's work restarted");
    cancel.cancel();
    within("the assigner to stop", task).await.unwrap();
}

/// R24: `update_status`'s re-read after a 409 waits out a 429 and the update goes through
/// (before, the 429 was the update's error).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r24_a_status_update_re_read_waits_out_a_429() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let mut d = Deployment::default();
    d.metadata.name = Some("web".into());
    d.metadata.namespace = Some(NS.into());
    server.create(&d).unwrap();
    let api: Api<Deployment> = Api::namespaced(server.client(), NS);
    let stale = api.get("web").await.unwrap();
    // Someone else writes after our read: our first status write conflicts, and the re-read
    // that follows answers 429.
    let mut other = stale.clone();
    other.metadata.labels = Some([("touched".to_string(), "yes".to_string())].into());
    api.replace("web", &PostParams::default(), &other)
        .await
        .unwrap();
    server.clear_requests();
    server.faults().fail_next(
        FaultTarget::Get,
        StatusCode::TOO_MANY_REQUESTS,
        Some(RETRY_AFTER.as_secs()),
        1,
    );
    let stored = update_status(&api, &stale, &WriteRecorder::detached(), |d| {
        d.status = Some(DeploymentStatus {
            replicas: Some(3),
            ..Default::default()
        });
    })
    .await
    .unwrap()
    .expect("written");
    assert_eq!(stored.status.and_then(|s| s.replicas), Some(3));
    let gap = gap_after_429(&server.requests(), |r| r.verb == Verb::Get).unwrap();
    assert!(gap >= RETRY_AFTER, "the GET was retried after {gap:?}");
}
