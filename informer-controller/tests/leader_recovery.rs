//! Leader election recovery and the write gate (E8) against informer-testserver: a gated
//! client writes only while its elector leads and reads always; a write in flight when the
//! lease is lost is cancelled; a leader whose renewals fail past the renew deadline recovers
//! without ending its term when they heal in time, loses the term when the recovery deadline
//! passes, and loses it at once when the Lease shows another holder.
//!
//! Run with `cargo test -p informer-controller --test leader_recovery`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use http::{Method, StatusCode};
use informer_controller::leader::{LeaderElector, Term, WriteGateClosed};
use informer_testserver::{FaultTarget, TestServer};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use support::*;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const LEASE: &str = "recovery-lock";

/// One elector running against the server, with what its callbacks saw.
struct Leader {
    elector: Arc<LeaderElector>,
    /// Terms started (on_started_leading calls).
    started: Arc<AtomicUsize>,
    /// stopped-leading calls.
    stopped: Arc<AtomicUsize>,
    /// The last term's token.
    term: Arc<Mutex<Option<Term>>>,
    leaders: Arc<Recorder<String>>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

/// Elector `id` on its own user agent (so the server can cut it off alone), with `recovery` as
/// its recovery deadline (none if zero), running until its `cancel`.
fn leader(server: &TestServer, id: &str, recovery: Duration) -> Leader {
    let (started, stopped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let leaders: Arc<Recorder<String>> = Recorder::new();
    let (s, l) = (Arc::clone(&stopped), Arc::clone(&leaders));
    let mut elector = LeaderElector::new(client_with_agent(server, id), NS, LEASE, id, fast())
        .unwrap()
        .on_stopped_leading(move || {
            s.fetch_add(1, Ordering::SeqCst);
        })
        .on_new_leader(move |holder| l.push(holder.to_owned()));
    if !recovery.is_zero() {
        elector = elector.recovery_deadline(recovery);
    }
    let elector = Arc::new(elector);
    let term: Arc<Mutex<Option<Term>>> = Arc::default();
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (elector, cancel, started, term) = (
            Arc::clone(&elector),
            cancel.clone(),
            Arc::clone(&started),
            Arc::clone(&term),
        );
        async move {
            elector
                .run(cancel, move |t| {
                    started.fetch_add(1, Ordering::SeqCst);
                    *term.lock() = Some(t.clone());
                    async move { t.cancelled().await }
                })
                .await
                .unwrap();
        }
    });
    Leader {
        elector,
        started,
        stopped,
        term,
        leaders,
        cancel,
        task,
    }
}

impl Leader {
    async fn wait_leading(&self, on: bool) {
        let mut rx = self.elector.subscribe();
        wait_watch("is_leader", &mut rx, |s| s.is_leader == on).await;
    }

    fn term(&self) -> Term {
        self.term.lock().clone().unwrap()
    }

    async fn stop(self) {
        self.cancel.cancel();
        within("the elector to stop", self.task).await.unwrap();
    }
}

fn lease(server: &TestServer) -> Lease {
    server.get::<Lease>(Some(NS), LEASE).unwrap()
}

/// The gate's refusal in `res`, panicking on anything else.
fn refusal<T: std::fmt::Debug>(res: Result<T, kube::Error>) -> WriteGateClosed {
    let err = res.expect_err("the write gate let a write through");
    *WriteGateClosed::of(&err).unwrap_or_else(|| panic!("not the gate's error: {err:?}"))
}

/// Every write verb through `api` fails with `want`; a LIST passes.
async fn writes_refused(api: &Api<ConfigMap>, want: WriteGateClosed) {
    let pp = PostParams::default();
    assert_eq!(refusal(api.create(&pp, &cm(NS, "new", "1")).await), want);
    assert_eq!(
        refusal(api.replace("kept", &pp, &cm(NS, "kept", "2")).await),
        want
    );
    let patch = Patch::Merge(serde_json::json!({"data": {"v": "3"}}));
    assert_eq!(
        refusal(api.patch("kept", &PatchParams::default(), &patch).await),
        want
    );
    assert_eq!(
        refusal(api.delete("kept", &DeleteParams::default()).await),
        want
    );
    api.list(&ListParams::default()).await.unwrap();
}

/// E8: a gated client's POST, PUT, PATCH and DELETE fail with the gate's error before the
/// elector leads and after its term ended, and pass while it leads; reads always pass.
#[tokio::test]
async fn e8_a_gated_client_writes_only_while_leading() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm(NS, "kept", "0")).unwrap();
    // Cut off until the refusals were checked, so it cannot lead before.
    server.faults().refuse_user_agent("a");
    let l = leader(&server, "a", Duration::ZERO);
    let api: Api<ConfigMap> = Api::namespaced(l.elector.write_gated_client(server.client()), NS);
    let gate = l.elector.write_gate();
    writes_refused(&api, WriteGateClosed::NotLeading).await;
    api.get("kept").await.unwrap();
    server.faults().admit_user_agent("a");
    l.wait_leading(true).await;
    assert!(gate.is_open());
    let pp = PostParams::default();
    api.create(&pp, &cm(NS, "new", "1")).await.unwrap();
    let mut kept = api.get("kept").await.unwrap();
    kept.data = Some([("v".to_owned(), "2".to_owned())].into());
    api.replace("kept", &pp, &kept).await.unwrap();
    let patch = Patch::Merge(serde_json::json!({"data": {"v": "3"}}));
    api.patch("kept", &PatchParams::default(), &patch)
        .await
        .unwrap();
    api.delete("new", &DeleteParams::default()).await.unwrap();

    let elector = Arc::clone(&l.elector);
    l.stop().await;
    assert!(!gate.is_open());
    writes_refused(&api, WriteGateClosed::NotLeading).await;
    api.get("kept").await.unwrap();
    assert!(!elector.is_leader());
}

/// E8: a gated write the server holds (every write is delayed, the Lease renewals too, so the
/// renew deadline passes) is cancelled when the term is lost: the caller gets the gate's
/// error before the server would have answered, and the object is never created.
#[tokio::test]
async fn e8_a_write_in_flight_when_the_lease_is_lost_is_cancelled() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let l = leader(&server, "a", Duration::ZERO);
    l.wait_leading(true).await;
    let api: Api<ConfigMap> = Api::namespaced(l.elector.write_gated_client(server.client()), NS);
    let hold = Duration::from_secs(4);
    server.faults().delay(FaultTarget::Write, hold);
    let sent = Instant::now();
    let res = within(
        "the write",
        api.create(&PostParams::default(), &cm(NS, "late", "1")),
    )
    .await;
    let answered = sent.elapsed();
    assert_eq!(refusal(res), WriteGateClosed::Cancelled);
    assert!(
        answered < hold,
        "cancelled after {answered:?}, not when the lease was lost"
    );
    // The gate closed on its own clock at the renew deadline; the elector notices then too.
    l.wait_leading(false).await;
    assert_eq!(l.stopped.load(Ordering::SeqCst), 1);
    // The server would have answered by `hold`: it never stores the object, nor logs the POST.
    let posted = |log: &[informer_testserver::RequestRecord]| {
        log.iter()
            .any(|r| r.method == Method::POST && r.path.ends_with("/configmaps"))
    };
    let log = server
        .wait_for_requests(hold + Duration::from_secs(1), posted)
        .await;
    assert!(log.is_err(), "the cancelled POST was served");
    assert!(server.get::<ConfigMap>(Some(NS), "late").is_err());
    server.faults().delay(FaultTarget::Write, Duration::ZERO);
    l.stop().await;
}

/// Fails every Lease GET and write with 500 until `Faults::reset`.
fn fail_lease_requests(server: &TestServer) {
    let f = server.faults();
    f.fail_next(
        FaultTarget::Get,
        StatusCode::INTERNAL_SERVER_ERROR,
        None,
        usize::MAX,
    );
    f.fail_next(
        FaultTarget::Write,
        StatusCode::INTERNAL_SERVER_ERROR,
        None,
        usize::MAX,
    );
}

/// E8: renewals fail past the renew deadline, then heal before the recovery deadline: the gate
/// was closed meanwhile (writes refused as recovering), the term resumes with its work never
/// cancelled, no stopped-leading, no new term and no Lease transition.
#[tokio::test]
async fn e8_a_leader_whose_renewals_heal_before_the_recovery_deadline_leads_on() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm(NS, "kept", "0")).unwrap();
    let l = leader(&server, "a", Duration::from_secs(20));
    l.wait_leading(true).await;
    let api: Api<ConfigMap> = Api::namespaced(l.elector.write_gated_client(server.client()), NS);
    let transitions = lease(&server).spec.unwrap().lease_transitions;
    fail_lease_requests(&server);
    let elector = Arc::clone(&l.elector);
    wait_until("recovering", || elector.is_recovering()).await;
    assert!(!l.elector.is_leader());
    assert!(!l.elector.write_gate().is_open());
    writes_refused(&api, WriteGateClosed::Recovering).await;
    assert!(l.term().is_valid(), "the work was stopped while recovering");

    server.faults().reset();
    l.wait_leading(true).await;
    assert!(!l.elector.is_recovering());
    assert!(l.elector.write_gate().is_open());
    api.create(&PostParams::default(), &cm(NS, "after", "1"))
        .await
        .unwrap();
    assert_eq!(l.stopped.load(Ordering::SeqCst), 0, "stopped-leading ran");
    assert_eq!(l.started.load(Ordering::SeqCst), 1, "a new term started");
    let term = l.term();
    assert!(term.is_valid() && !term.token().is_cancelled());
    assert_eq!(lease(&server).spec.unwrap().lease_transitions, transitions);
    l.stop().await;
}

/// E8: renewals keep failing: the term is lost when the recovery deadline passes after the
/// renew deadline, not before, as without recovery but later.
#[tokio::test]
async fn e8_a_leader_whose_renewals_fail_past_the_recovery_deadline_loses_the_term() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let recovery = Duration::from_millis(1500);
    let l = leader(&server, "a", recovery);
    l.wait_leading(true).await;
    fail_lease_requests(&server);
    let elector = Arc::clone(&l.elector);
    wait_until("recovering", || elector.is_recovering()).await;
    let since = Instant::now();
    let stopped = Arc::clone(&l.stopped);
    wait_until("stopped leading", || stopped.load(Ordering::SeqCst) == 1).await;
    let after = since.elapsed();
    assert!(
        after + Duration::from_millis(100) >= recovery,
        "lost {after:?} after recovering began, before the recovery deadline"
    );
    assert!(!l.elector.is_recovering() && !l.elector.is_leader());
    assert!(l.term().is_cancelled());
    assert!(!l.elector.write_gate().is_open());
    server.faults().reset();
    l.stop().await;
}

/// A leader "a" with a long recovery deadline, cut off until it recovers; `meanwhile` changes
/// the Lease, then "a" is let through again. Returns once it stopped leading, which it must
/// do at once (within 5 s of the Lease being readable, not at the recovery deadline). Returns
/// the leader and its first term.
async fn recovering_then(
    server: &TestServer,
    meanwhile: impl FnOnce(&TestServer),
) -> (Leader, Term) {
    let l = leader(server, "a", Duration::from_secs(60));
    l.wait_leading(true).await;
    let first = l.term();
    server.faults().refuse_user_agent("a");
    let elector = Arc::clone(&l.elector);
    wait_until("recovering", || elector.is_recovering()).await;
    meanwhile(server);
    let healed = Instant::now();
    server.faults().admit_user_agent("a");
    let stopped = Arc::clone(&l.stopped);
    wait_until("stopped leading", || stopped.load(Ordering::SeqCst) == 1).await;
    assert!(
        healed.elapsed() < Duration::from_secs(5),
        "lost only {:?} after the Lease was readable",
        healed.elapsed()
    );
    assert!(first.is_cancelled());
    (l, first)
}

/// E8: while recovering, the Lease shows another holder: the term is lost at once (not at the
/// recovery deadline) and the Lease is never taken back.
#[tokio::test]
async fn e8_a_recovering_leader_that_sees_another_holder_loses_at_once() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let (l, _) = recovering_then(&server, |server| {
        let mut taken = lease(server);
        let spec = taken.spec.get_or_insert_default();
        spec.holder_identity = Some("b".to_owned());
        spec.lease_transitions = Some(spec.lease_transitions.unwrap_or(0) + 1);
        server.update(&taken).unwrap();
    })
    .await;
    assert_eq!(l.started.load(Ordering::SeqCst), 1);
    assert!(!l.elector.write_gate().is_open());
    l.leaders
        .wait_until("b observed", |h| h.iter().any(|h| h == "b"))
        .await;
    assert_eq!(
        lease(&server).spec.unwrap().holder_identity.as_deref(),
        Some("b"),
        "the recovering leader took the Lease back"
    );
    l.stop().await;
}

/// E8: while recovering, the Lease was deleted: recovery renews only the Lease it held, so
/// the term is lost at once instead of resuming on a Lease it would create anew (the
/// candidate may then acquire one, as a new term).
#[tokio::test]
async fn e8_a_recovering_leader_whose_lease_is_gone_loses_at_once() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let (l, _) = recovering_then(&server, |server| {
        server.delete::<Lease>(Some(NS), LEASE).unwrap();
    })
    .await;
    l.stop().await;
}
