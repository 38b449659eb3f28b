//! Shard terms under stress (S1-S3, S5, S6, S13, S14) against informer-testserver:
//! a shard whose work is slow to stop, a replica whose requests hang, replicas with different
//! shard counts in one set, work that ends on its own, a dropped run future, work that ignores
//! its token, and a Lease someone else relabels. Every test records each replica's ownership
//! intervals (when each shard's work started and stopped, per replica) and asserts that no two
//! intervals of different replicas overlap in time for overlapping hash ranges.
//!
//! Run with `cargo test -p informer-controller --test shard_terms`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use informer_controller::leader::Term;
use informer_controller::shards::{
    SHARD_COUNT_LABEL, SHARD_FIELD_LABEL, SHARD_SET_LABEL, ShardAssigner,
};
use informer_runtime::shard::ShardField;
use informer_testserver::TestServer;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Patch, PatchParams};
use parking_lot::Mutex;
use support::ownership::Ownership;
use support::*;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const SET: &str = "terms";

/// A shard's work: given the replica, the shard and its token.
type Behaviour = Arc<dyn Fn(&str, u32, Term) -> BoxFuture<'static, ()> + Send + Sync>;

/// Work that runs until its token is cancelled.
fn until_cancelled() -> Behaviour {
    Arc::new(|_, _, owned| Box::pin(async move { owned.cancelled().await }))
}

/// Work that, once told to stop, ignores that for `delay` (a 20 s reconcile).
fn slow_to_stop(delay: Duration) -> Behaviour {
    Arc::new(move |_, _, owned| {
        Box::pin(async move {
            owned.cancelled().await;
            tokio::time::sleep(delay).await;
        })
    })
}

struct Replica {
    assigner: Arc<ShardAssigner>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn replica(
    client: kube::Client,
    own: &Arc<Ownership>,
    name: &str,
    shards: u32,
    behaviour: Behaviour,
) -> Replica {
    replica_by(client, own, name, shards, ShardField::Uid, behaviour)
}

fn replica_by(
    client: kube::Client,
    own: &Arc<Ownership>,
    name: &str,
    shards: u32,
    field: ShardField,
    behaviour: Behaviour,
) -> Replica {
    let assigner = Arc::new(
        ShardAssigner::new(client, NS, SET, name, shards, fast())
            .unwrap()
            .hash_field(field),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (assigner, cancel, own, name) = (
            Arc::clone(&assigner),
            cancel.clone(),
            Arc::clone(own),
            name.to_owned(),
        );
        async move {
            assigner
                .run(cancel, move |index, owned| {
                    // The interval opens the instant the term starts, and closes when the
                    // work's future is dropped (it returned, or it was aborted).
                    let owning = own.begin(&name, shards, index);
                    let work = behaviour(&name, index, owned);
                    async move {
                        let _owning = owning;
                        work.await;
                    }
                })
                .await
                .unwrap();
        }
    });
    Replica {
        assigner,
        cancel,
        task,
    }
}

async fn stop(r: Replica) {
    r.cancel.cancel();
    within("a replica to stop", r.task).await.unwrap();
}

fn lease(server: &TestServer, name: &str) -> Option<Lease> {
    server.get::<Lease>(Some(NS), name).ok()
}

fn holder(server: &TestServer, name: &str) -> Option<String> {
    lease(server, name)?.spec?.holder_identity
}

/// Polls server state that has no notification, failing after [`WAIT`].
async fn poll_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// S2: replica `a` holds all four shards, each slow to stop (20 s after its
/// token). Replica `b` joins: `a` stops its two highest shards, whose work is aborted after the
/// drain limit (S6) and released, while its other two keep being renewed and never stop; `b`
/// takes the released two. No two replicas ever run overlapping shards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s2_s6_a_shard_slow_to_stop_delays_no_other_shard_and_never_overlaps() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let own = Ownership::new();
    let slow = slow_to_stop(Duration::from_secs(20));
    let a = replica(server.client(), &own, "a", 4, slow.clone());
    own.wait_until("a to run all four shards", |_| own.running("a").len() == 4)
        .await;
    let joined = Instant::now();
    let b = replica(server.client(), &own, "b", 4, until_cancelled());
    own.wait_until("a and b to run two shards each", |_| {
        own.running("a").len() == 2 && own.running("b").len() == 2
    })
    .await;
    let handover = joined.elapsed();
    eprintln!("rebalanced {handover:?} after b joined");
    let config = fast();
    // The aborted work ended within the drain limit of its term's end.
    for i in own
        .snapshot()
        .iter()
        .filter(|i| i.replica == "a" && i.stop.is_some())
    {
        let ran_after_join = i.stop.unwrap() - joined;
        assert!(
            ran_after_join < config.lease_duration + config.drain_limit(),
            "S6: shard {} of a stopped {ran_after_join:?} after b joined",
            i.index
        );
    }
    // a's two remaining shards ran without interruption: one interval each.
    let kept = own.running("a");
    for index in &kept {
        let n = own
            .snapshot()
            .iter()
            .filter(|i| i.replica == "a" && i.index == *index)
            .count();
        assert_eq!(n, 1, "S2: shard {index} of a was restarted");
    }
    own.assert_exclusive();
    stop(b).await;
    stop(a).await;
    own.assert_exclusive();
    assert!(own.snapshot().iter().all(|i| i.stop.is_some()));
}

/// S2: eight shards on one replica while every write takes 200 ms: renewed
/// one after another they would need 1.6 s per round, past the 1 s renew deadline; renewed
/// concurrently, each within its own deadline, no shard is ever lost or restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s2_renewals_run_concurrently_so_slow_writes_lose_no_shard() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let own = Ownership::new();
    let a = replica(server.client(), &own, "a", 8, until_cancelled());
    own.wait_until("a to run all eight shards", |_| own.running("a").len() == 8)
        .await;
    server.faults().delay(
        informer_testserver::FaultTarget::Write,
        Duration::from_millis(200),
    );
    // Every shard's Lease renewed four more times with slow writes.
    let renewals = Arc::new(Mutex::new(vec![BTreeSet::new(); 8]));
    {
        let (server, seen) = (&server, Arc::clone(&renewals));
        poll_until("four slow renewals of every shard", || {
            let mut seen = seen.lock();
            for (i, times) in seen.iter_mut().enumerate() {
                if let Some(t) = lease(server, &format!("{SET}-shard-{i}"))
                    .and_then(|l| l.spec)
                    .and_then(|s| s.renew_time)
                {
                    times.insert(t.0.to_string());
                }
            }
            seen.iter().all(|t| t.len() >= 5)
        })
        .await;
    }
    let all = own.snapshot();
    assert_eq!(all.len(), 8, "S2: a shard was lost and restarted: {all:#?}");
    assert!(all.iter().all(|i| i.stop.is_none()));
    server
        .faults()
        .delay(informer_testserver::FaultTarget::Write, Duration::ZERO);
    stop(a).await;
}

/// S2: replica `a`'s requests hang (a partition) while one of its shards is slow to stop.
/// Every one of its shards stops at that shard's own renew deadline plus at most the drain
/// limit, and `b` takes them over without overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s2_a_replica_whose_requests_hang_stops_every_shard_at_its_own_deadline() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let own = Ownership::new();
    let config = fast();
    let a = replica(
        client_with_agent(&server, "replica-a"),
        &own,
        "a",
        4,
        slow_to_stop(Duration::from_secs(20)),
    );
    own.wait_until("a to run all four shards", |_| own.running("a").len() == 4)
        .await;
    let b = replica(server.client(), &own, "b", 4, until_cancelled());
    own.wait_until("two shards each", |_| {
        own.running("a").len() == 2 && own.running("b").len() == 2
    })
    .await;
    let cut = Instant::now();
    server.faults().hang_user_agent("replica-a");
    own.wait_until("a to run nothing and b everything", |_| {
        own.running("a").is_empty() && own.running("b").len() == 4
    })
    .await;
    for i in own.snapshot().iter().filter(|i| i.replica == "a") {
        let stopped = i.stop.unwrap() - cut;
        assert!(
            stopped <= config.renew_deadline + config.drain_limit() + Duration::from_millis(300),
            "S2/S6: shard {} of a stopped {stopped:?} after the cut",
            i.index
        );
    }
    own.assert_exclusive();
    server.faults().admit_user_agent("replica-a");
    stop(b).await;
    stop(a).await;
    own.assert_exclusive();
}

/// S1: a set of two shards runs on `a` and `b`; `c` and `d` join with four
/// shards (a rolling update). They own nothing while the two-shard view holds the set (its
/// Leases record it), and take every shard once `a` and `b` have left; no ranges ever overlap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s1_replicas_with_different_shard_counts_never_run_overlapping_ranges() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let own = Ownership::new();
    let a = replica(server.client(), &own, "a", 2, until_cancelled());
    let b = replica(server.client(), &own, "b", 2, until_cancelled());
    own.wait_until("a and b to run one shard each", |_| {
        own.running("a").len() == 1 && own.running("b").len() == 1
    })
    .await;
    let c = replica(server.client(), &own, "c", 4, until_cancelled());
    let d = replica(server.client(), &own, "d", 4, until_cancelled());
    // Let c and d heartbeat through several rounds while the two-shard view holds the set.
    for member in ["c", "d"] {
        let name = format!("{SET}-member-{member}");
        let renewals = Arc::new(Mutex::new(BTreeSet::new()));
        let seen = Arc::clone(&renewals);
        let server = &server;
        poll_until("c and d to go through four rounds", || {
            if let Some(t) = lease(server, &name)
                .and_then(|l| l.spec)
                .and_then(|s| s.renew_time)
            {
                seen.lock().insert(t.0.to_string());
            }
            renewals.lock().len() >= 4
        })
        .await;
    }
    assert!(
        own.running("c").is_empty() && own.running("d").is_empty(),
        "S1: a replica of another view ran shards: {:#?}",
        own.snapshot()
    );
    assert!(c.assigner.owned().is_empty() && d.assigner.owned().is_empty());
    own.assert_exclusive();
    // The two-shard view is recorded on its Leases.
    for i in 0..2 {
        let lease = lease(&server, &format!("{SET}-shard-{i}")).unwrap();
        let labels = lease.metadata.labels.unwrap();
        assert_eq!(labels.get(SHARD_SET_LABEL).map(String::as_str), Some(SET));
        assert_eq!(labels.get(SHARD_COUNT_LABEL).map(String::as_str), Some("2"));
        assert_eq!(
            labels.get(SHARD_FIELD_LABEL).map(String::as_str),
            Some("uid")
        );
    }
    // The two-shard replicas leave (releasing); the four-shard view takes the set.
    stop(a).await;
    stop(b).await;
    own.wait_until("c and d to run two shards each", |_| {
        own.running("c").len() == 2 && own.running("d").len() == 2
    })
    .await;
    for i in 0..4 {
        let lease = lease(&server, &format!("{SET}-shard-{i}")).unwrap();
        let labels = lease.metadata.labels.unwrap();
        assert_eq!(labels.get(SHARD_COUNT_LABEL).map(String::as_str), Some("4"));
    }
    own.assert_exclusive();
    stop(c).await;
    stop(d).await;
    own.assert_exclusive();
}

/// S1: the same shard count over another hash field is another view too: a replica sharding
/// by namespace owns nothing while the set is held by replicas sharding by UID (whose ranges
/// cut every namespace), and takes the set only after they left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s1_replicas_with_different_hash_fields_never_run_at_the_same_time() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let own = Ownership::new();
    let a = replica(server.client(), &own, "a", 2, until_cancelled());
    own.wait_until("a to run both shards", |_| own.running("a").len() == 2)
        .await;
    let n = replica_by(
        server.client(),
        &own,
        "n",
        2,
        ShardField::Namespace,
        until_cancelled(),
    );
    let name = format!("{SET}-member-n");
    let renewals = Arc::new(Mutex::new(BTreeSet::new()));
    {
        let (server, seen) = (&server, Arc::clone(&renewals));
        poll_until("n to go through four rounds", || {
            if let Some(t) = lease(server, &name)
                .and_then(|l| l.spec)
                .and_then(|s| s.renew_time)
            {
                seen.lock().insert(t.0.to_string());
            }
            seen.lock().len() >= 4
        })
        .await;
    }
    assert!(own.running("n").is_empty(), "S1: {:#?}", own.snapshot());
    let left = Instant::now();
    stop(a).await;
    own.wait_until("n to run both shards", |_| own.running("n").len() == 2)
        .await;
    // Different fields: any two intervals of the two replicas would overlap in objects.
    let all = own.snapshot();
    let a_end = all
        .iter()
        .filter(|i| i.replica == "a")
        .map(|i| i.stop.unwrap())
        .max()
        .unwrap();
    assert!(a_end <= left + fast().drain_limit() + Duration::from_secs(1));
    assert!(
        all.iter()
            .filter(|i| i.replica == "n")
            .all(|i| i.start >= a_end),
        "S1: n ran while a did: {all:#?}"
    );
    let lease = lease(&server, &format!("{SET}-shard-0")).unwrap();
    let labels = lease.metadata.labels.unwrap();
    assert_eq!(
        labels.get(SHARD_FIELD_LABEL).map(String::as_str),
        Some("namespace")
    );
    stop(n).await;
}

/// S3: a shard's work fails on its own, first by returning (a controller
/// whose sync timed out), then by panicking. Each time the replica releases the Lease instead
/// of renewing it for nothing, and starts the work again after a backoff.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_shard_work_that_ends_on_its_own_releases_its_lease() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let own = Ownership::new();
    let runs = Arc::new(Mutex::new(0u32));
    let behaviour: Behaviour = {
        let runs = Arc::clone(&runs);
        Arc::new(move |_, _, owned| {
            let run = {
                let mut n = runs.lock();
                *n += 1;
                *n
            };
            Box::pin(async move {
                match run {
                    1 => {} // returns at once
                    2 => panic!("shard work panicked (test)"),
                    _ => owned.cancelled().await,
                }
            })
        })
    };
    let lease_name = format!("{SET}-shard-0");
    let a = replica(server.client(), &own, "a", 1, behaviour);
    // The first term ends on its own: the Lease is released (no holder, 1 s), not renewed.
    poll_until("the Lease released after the first work ended", || {
        *runs.lock() >= 1 && own.snapshot().first().is_some_and(|i| i.stop.is_some())
    })
    .await;
    let released = Arc::new(Mutex::new(false));
    {
        let released = Arc::clone(&released);
        let server = &server;
        let runs = &runs;
        poll_until("a release between the failing terms", || {
            if holder(server, &lease_name).is_none() {
                *released.lock() = true;
            }
            *released.lock() || *runs.lock() >= 3
        })
        .await;
    }
    assert!(
        *released.lock(),
        "S3: the Lease of dead work was never released"
    );
    own.wait_until("the third term to run", |all| {
        all.len() == 3 && all[2].stop.is_none()
    })
    .await;
    // Two dead terms in a row back off: the third started no sooner than the retry period
    // after the second ended.
    let all = own.snapshot();
    let gap = all[2].start - all[1].stop.unwrap();
    assert!(gap >= fast().retry_period, "S3 backoff: {gap:?}");
    assert_eq!(holder(&server, &lease_name).as_deref(), Some("a"));
    assert_eq!(a.assigner.owned(), BTreeSet::from([0]));
    stop(a).await;
    own.assert_exclusive();
}

/// S5: the task running `ShardAssigner::run` is aborted (its future
/// dropped). Every shard's work stops and the Leases are released; nothing keeps working
/// without a renewing Lease.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s5_dropping_the_assigner_run_future_stops_the_work_and_releases() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let own = Ownership::new();
    let a = replica(server.client(), &own, "a", 2, until_cancelled());
    own.wait_until("a to run both shards", |_| own.running("a").len() == 2)
        .await;
    a.task.abort();
    own.wait_until("every work to stop", |all| {
        all.iter().all(|i| i.stop.is_some())
    })
    .await;
    poll_until("the shard Leases and the heartbeat released", || {
        (0..2).all(|i| holder(&server, &format!("{SET}-shard-{i}")).is_none())
            && holder(&server, &format!("{SET}-member-a")).is_none()
    })
    .await;
    // And another replica can take them at once.
    let b = replica(server.client(), &own, "b", 2, until_cancelled());
    own.wait_until("b to run both shards", |_| own.running("b").len() == 2)
        .await;
    stop(b).await;
    own.assert_exclusive();
}

/// S6: work that ignores its token for 30 s is aborted the drain limit
/// after the replica stops, and `run` returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s6_shard_work_that_ignores_its_token_is_aborted_after_the_drain_limit() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let own = Ownership::new();
    let a = replica(
        server.client(),
        &own,
        "a",
        1,
        slow_to_stop(Duration::from_secs(30)),
    );
    own.wait_until("a to run its shard", |_| own.running("a").len() == 1)
        .await;
    let stopped = Instant::now();
    stop(a).await;
    let took = stopped.elapsed();
    let config = fast();
    assert!(
        took <= config.drain_limit() + Duration::from_millis(500),
        "S6: run returned {took:?} after cancel"
    );
    let work = &own.snapshot()[0];
    let ran = work.stop.unwrap() - stopped;
    assert!(
        ran <= config.drain_limit() + Duration::from_millis(200),
        "S6: the work ran {ran:?} after its term ended"
    );
    assert!(holder(&server, &format!("{SET}-shard-0")).is_none());
}

/// S14: someone else writes our own shard Lease: once removing the set's label
/// (so the set's LIST no longer shows it), then relabelling it as fast as it can. Every 409
/// this causes on renewal re-reads and retries; the work is never restarted, and the holder
/// puts the labels back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s14_a_relabelled_own_shard_lease_is_renewed_not_lost() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let own = Ownership::new();
    let a = replica(server.client(), &own, "a", 1, until_cancelled());
    own.wait_until("a to run its shard", |_| own.running("a").len() == 1)
        .await;
    let name = format!("{SET}-shard-0");
    let api: kube::Api<Lease> = kube::Api::namespaced(server.client(), NS);
    let unlabel = serde_json::json!({"metadata": {"labels": {SHARD_SET_LABEL: null}}});
    api.patch(&name, &PatchParams::default(), &Patch::Merge(&unlabel))
        .await
        .unwrap();
    let until = Instant::now() + Duration::from_secs(2);
    let mut n = 0u64;
    while Instant::now() < until {
        n += 1;
        let touch = serde_json::json!({"metadata": {"labels": {"touched": n.to_string()}}});
        api.patch(&name, &PatchParams::default(), &Patch::Merge(&touch))
            .await
            .unwrap();
    }
    eprintln!("relabelled {n} times");
    // The holder renews through it all, and restores the set's label.
    poll_until("the set label restored", || {
        lease(&server, &name)
            .and_then(|l| l.metadata.labels)
            .is_some_and(|l| l.get(SHARD_SET_LABEL).map(String::as_str) == Some(SET))
    })
    .await;
    let all = own.snapshot();
    assert_eq!(all.len(), 1, "S14: the work was restarted: {all:#?}");
    assert!(all[0].stop.is_none());
    assert_eq!(holder(&server, &name).as_deref(), Some("a"));
    stop(a).await;
}

/// Log output captured by a thread-local subscriber.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines(&self, level: &str, message: &str) -> usize {
        String::from_utf8_lossy(&self.0.lock())
            .lines()
            .filter(|l| l.contains(level) && l.contains(message))
            .count()
    }
}

/// S13: the assigner's failing requests (here RBAC: every Lease request is 403)
/// are logged at warn, once per state change rather than every round, and the recovery at
/// info. A current-thread runtime keeps every task under the test's log subscriber.
#[tokio::test(flavor = "current_thread")]
async fn s13_assigner_failures_are_warned_once_per_state_change() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let c = captured.clone();
            move || c.clone()
        })
        .with_ansi(false)
        .with_max_level(tracing::Level::DEBUG)
        .finish();
    let _log = tracing::subscriber::set_default(subscriber);
    let server = TestServer::start().await.unwrap();
    let leases = informer_testserver::GroupResource::new("coordination.k8s.io", "leases");
    server.faults().forbid(leases.clone());
    let own = Ownership::new();
    let a = replica(server.client(), &own, "a", 1, until_cancelled());
    // Many rounds, every one failing.
    server
        .wait_for_requests(WAIT, |log| {
            log.iter()
                .filter(|r| r.path.ends_with("/leases") && r.status == 403)
                .count()
                >= 12
        })
        .await
        .unwrap();
    let warned = captured.lines("WARN", "shard assigner request failed");
    assert!(
        (1..=2).contains(&warned),
        "S13: {warned} warnings for one failing state"
    );
    server.faults().allow(&leases);
    own.wait_until("a to run its shard", |_| own.running("a").len() == 1)
        .await;
    assert_eq!(captured.lines("INFO", "works again"), 1);
    assert_eq!(
        captured.lines("WARN", "shard assigner request failed"),
        warned
    );
    stop(a).await;
}
