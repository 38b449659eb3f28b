//! Fencing under stalls (S6, S11) against informer-testserver: a replica whose runtime stops
//! getting CPU for longer than its lease (CPU starvation, a blocked runtime) while its work runs
//! elsewhere, or resumes later. Its work must stop by the term's valid-until instant on the
//! work's own clock, before a successor can lead; a late acquire answer starts no term; and a
//! replica that resumes gets no fresh drain beside its successor.
//!
//! Run with `cargo test -p informer-controller --test stalls`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

use informer_controller::leader::LeaderElector;
use informer_controller::shards::ShardAssigner;
use informer_testserver::TestServer;
use k8s_openapi::api::coordination::v1::Lease;
use support::*;
use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

/// A current-thread runtime on a thread of its own that a test can stall: a task that blocks
/// its only thread stops every other task and timer of it, as CPU starvation would.
struct Stallable {
    handle: Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Stallable {
    fn new() -> Self {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let handle = rt.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            rt.block_on(async move {
                let _ = stopped.await;
            });
        });
        Stallable {
            handle,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Blocks the runtime for `d`; returns once the stall has begun, with the instant it ends.
    async fn stall(&self, d: Duration) -> Instant {
        let (began, rx) = oneshot::channel();
        self.handle.spawn(async move {
            let _ = began.send(Instant::now() + d);
            std::thread::sleep(d);
        });
        rx.await.unwrap()
    }
}

impl Drop for Stallable {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A client of its own for one replica, as replicas in separate processes have: a shared
/// client's pooled connections are driven by tasks of whichever runtime opened them, so a
/// stalled runtime would stall the other replica's requests too.
fn own_client(server: &TestServer, replica: &str) -> kube::Client {
    client_with_agent(server, replica)
}

/// Every replica's actions: (replica, when).
type Actions = Arc<Recorder<(&'static str, Instant)>>;

/// Records `(what, when)` when the work's future is dropped (it returned, or was aborted).
struct Ended(Actions, &'static str);

impl Drop for Ended {
    fn drop(&mut self) {
        self.0.push((self.1, Instant::now()));
    }
}

/// The work of a term, run on `on` (the test's runtime, not the elector's): an action every
/// 10 ms until the term ends. Written against what a `CancellationToken` also offers.
macro_rules! act_until_ended {
    ($on:expr, $who:expr, $term:expr, $actions:expr) => {{
        let (term, actions) = ($term, Arc::clone(&$actions));
        let work = $on.spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    () = term.cancelled() => break,
                    () = tokio::time::sleep(Duration::from_millis(10)) => {
                        actions.push(($who, Instant::now()));
                    }
                }
            }
        });
        async move {
            let _ = work.await;
        }
    }};
}

/// No action of `old` after the first action of `new`.
fn assert_fenced(actions: &[(&'static str, Instant)], old: &str, new: &str) {
    let first_new = actions
        .iter()
        .filter(|(w, _)| *w == new)
        .map(|(_, t)| *t)
        .min()
        .unwrap();
    let late: Vec<_> = actions
        .iter()
        .filter(|(w, t)| *w == old && *t >= first_new)
        .map(|(_, t)| *t - first_new)
        .collect();
    assert!(
        late.is_empty(),
        "S11: {old}'s work acted {} times beside {new}'s, up to {:?} after {new} started",
        late.len(),
        late.iter().max()
    );
}

/// Spawns one replica on `on`, acting (on the test's runtime) while it owns the Lease or
/// shard; `cancel` stops it.
type Spawn = fn(&Handle, &'static str, kube::Client, Actions, CancellationToken) -> JoinHandle<()>;

/// S11: replica `a` runs on a runtime that then stalls for 4 s (lease 2 s) while its work runs
/// on the test's runtime; `b` takes over about 2.25 s into the stall. `a`'s work must have
/// stopped by then, at its term's valid-until instant by its own timer. (Before, the work's
/// token was cancelled only by the stalled renew task: it acted beside `b` until the stall
/// ended.)
async fn work_elsewhere_is_fenced_across_a_stall(spawn: Spawn) {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let stalled = Stallable::new();
    let actions: Actions = Recorder::new();
    let cancel = CancellationToken::new();
    let a = spawn(
        &stalled.handle,
        "a",
        own_client(&server, "a"),
        Arc::clone(&actions),
        cancel.clone(),
    );
    actions
        .wait_until("a to lead and act", |a| !a.is_empty())
        .await;
    let b = spawn(
        &Handle::current(),
        "b",
        own_client(&server, "b"),
        Arc::clone(&actions),
        cancel.clone(),
    );
    let resumes = stalled.stall(Duration::from_secs(4)).await;
    // Long enough (30 actions of b, 300 ms) for a's work, were it still running, to act too.
    actions
        .wait_until("b to take over and act", |a| {
            a.iter().filter(|(w, _)| *w == "b").count() >= 30
        })
        .await;
    assert!(Instant::now() < resumes, "b took over before a resumed");
    assert_fenced(&actions.snapshot(), "a", "b");
    cancel.cancel();
    within("b to stop", b).await.unwrap();
    drop(stalled);
    let _ = a.await;
}

/// S11 for a `LeaderElector`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s11_a_stalled_leader_s_work_elsewhere_stops_before_its_successor_leads() {
    work_elsewhere_is_fenced_across_a_stall(|on, who, client, actions, cancel| {
        let elector = LeaderElector::new(client, NS, "stall-lock", who, fast()).unwrap();
        let main = Handle::current();
        on.spawn(async move {
            elector
                .run(cancel, move |term| {
                    act_until_ended!(main, who, term, actions)
                })
                .await
                .unwrap();
        })
    })
    .await;
}

/// S11 for a `ShardAssigner` of one shard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s11_a_stalled_replica_s_shard_work_elsewhere_stops_before_its_successor_takes_it() {
    work_elsewhere_is_fenced_across_a_stall(|on, who, client, actions, cancel| {
        let assigner = ShardAssigner::new(client, NS, "stall", who, 1, fast()).unwrap();
        let main = Handle::current();
        on.spawn(async move {
            assigner
                .run(cancel, move |_, term| {
                    act_until_ended!(main, who, term, actions)
                })
                .await
                .unwrap();
        })
    })
    .await;
}

/// S11: the answer to the acquiring write arrives, and the candidate then stalls for 1.5 s
/// (here: its new-leader callback blocks, as a starved thread would) before it could start
/// the term: the term would already be past its renew deadline (1 s after the write began).
/// The elector must not lead on it; it writes again and leads on a fresh write. Checked from
/// the work: when a term starts, the Lease's renewTime (the start of the winning write, by the
/// same machine's clock) is less than the renew deadline old.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s11_an_acquire_answer_that_came_after_its_deadline_starts_no_term() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let blocked = Arc::new(AtomicBool::new(false));
    let ages = Recorder::<Duration>::new();
    let elector = {
        let blocked = Arc::clone(&blocked);
        LeaderElector::new(server.client(), NS, "late-lock", "a", fast())
            .unwrap()
            .on_new_leader(move |holder| {
                if holder == "a" && !blocked.swap(true, Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(1500));
                }
            })
    };
    let api: kube::Api<Lease> = kube::Api::namespaced(server.client(), NS);
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (ages, cancel) = (Arc::clone(&ages), cancel.clone());
        async move {
            elector
                .run(cancel, move |term| {
                    let (api, ages) = (api.clone(), Arc::clone(&ages));
                    async move {
                        let lease = api.get("late-lock").await.unwrap();
                        let renewed = lease.spec.unwrap().renew_time.unwrap().0;
                        let renewed = SystemTime::UNIX_EPOCH
                            + Duration::from_micros(renewed.as_microsecond() as u64);
                        ages.push(
                            SystemTime::now()
                                .duration_since(renewed)
                                .unwrap_or_default(),
                        );
                        term.cancelled().await;
                    }
                })
                .await
                .unwrap();
        }
    });
    let ages = ages.wait_until("a term", |a| !a.is_empty()).await;
    assert!(blocked.load(Ordering::SeqCst));
    assert!(
        ages[0] < fast().renew_deadline,
        "S11: a term started on a write {:?} old, past its renew deadline",
        ages[0]
    );
    cancel.cancel();
    within("the elector to stop", run).await.unwrap();
}

/// S6: the leader's work runs on its own (stalled) runtime and ignores its token. The runtime
/// stalls 3 s, past the lease (2 s) and far past the term's valid-until (1 s after its last
/// renewal) plus the drain limit (0.8 s). On resuming, the work is aborted at once: the drain
/// limit counts from the term's valid-until, not from when the replica noticed the end.
/// (Before, it ran the full drain limit again after resuming, beside the successor.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s6_a_leader_resuming_from_a_stall_gets_no_fresh_drain() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let stalled = Stallable::new();
    let actions: Actions = Recorder::new();
    let cancel = CancellationToken::new();
    let a = {
        let elector =
            LeaderElector::new(own_client(&server, "a"), NS, "drain-lock", "a", fast()).unwrap();
        let (actions, cancel) = (Arc::clone(&actions), cancel.clone());
        stalled.handle.spawn(async move {
            elector
                .run(cancel, move |_term| {
                    let actions = Arc::clone(&actions);
                    async move {
                        let _ended = Ended(Arc::clone(&actions), "a ended");
                        // Ignores its token: only an abort stops it.
                        loop {
                            actions.push(("a", Instant::now()));
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    }
                })
                .await
                .unwrap();
        })
    };
    actions
        .wait_until("a to lead and act", |a| !a.is_empty())
        .await;
    let resumed = stalled.stall(Duration::from_secs(3)).await;
    let all = actions
        .wait_until("a's work to be aborted", |a| {
            a.iter().any(|(w, _)| *w == "a ended")
        })
        .await;
    let ended = all.iter().find(|(w, _)| *w == "a ended").unwrap().1;
    let ran = ended.saturating_duration_since(resumed);
    let acted = all
        .iter()
        .filter(|(w, t)| *w == "a" && *t >= resumed)
        .count();
    assert!(
        ran < Duration::from_millis(300),
        "S6: the work ran {ran:?} after the stall ended ({acted} actions; drain limit {:?})",
        fast().drain_limit()
    );
    cancel.cancel();
    drop(stalled);
    let _ = a.await;
}
