//! Leader terms whose work misbehaves (S3, S5, S6 for a `LeaderElector`) against
//! informer-testserver: a controller that fails inside its term (its caches never sync), a
//! dropped run future, and work that ignores its token after the lease is lost. Each records
//! when every replica's work ran and asserts that no two replicas' work overlapped.
//!
//! Run with `cargo test -p informer-controller --test leader_terms`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use informer_controller::leader::LeaderElector;
use informer_controller::{Action, Context, Controller, Request};
use informer_runtime::SharedInformerFactory;
use informer_testserver::{GroupResource, TestServer};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::Mutex;
use support::*;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const LEASE: &str = "terms-lock";

/// When one replica's leading work ran: (replica, start, stop).
type Interval = (String, Instant, Option<Instant>);

/// Every replica's work intervals.
#[derive(Default)]
struct Terms {
    log: Mutex<Vec<Interval>>,
}

/// Closes its interval when the work's future is dropped (returned or aborted).
struct Running {
    terms: Arc<Terms>,
    at: usize,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.terms.log.lock()[self.at].2 = Some(Instant::now());
    }
}

impl Terms {
    fn begin(self: &Arc<Self>, id: &str) -> Running {
        let mut log = self.log.lock();
        log.push((id.to_owned(), Instant::now(), None));
        Running {
            terms: Arc::clone(self),
            at: log.len() - 1,
        }
    }

    fn snapshot(&self) -> Vec<Interval> {
        self.log.lock().clone()
    }

    /// E7 for the work: no two replicas' work intervals overlap.
    fn assert_exclusive(&self) {
        let all = self.snapshot();
        let end = |i: &Interval| i.2.unwrap_or_else(Instant::now);
        for (n, a) in all.iter().enumerate() {
            for b in &all[n + 1..] {
                assert!(
                    a.0 == b.0 || !(a.1 < end(b) && b.1 < end(a)),
                    "overlapping work: {a:?} and {b:?}"
                );
            }
        }
    }
}

fn holder(server: &TestServer) -> Option<String> {
    server
        .get::<Lease>(Some(NS), LEASE)
        .ok()?
        .spec?
        .holder_identity
}

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

/// S3: the leader's controller fails inside its term: it may not read
/// ConfigMaps (403), so `Controller::run` ends with a sync timeout. The leader releases the
/// Lease (E5) instead of renewing it for work that no longer runs, and a second candidate
/// leads; once the LIST answers, a term runs for good.
#[tokio::test]
async fn s3_a_controller_that_fails_inside_its_term_releases_the_lease() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let configmaps = GroupResource::new("", "configmaps");
    server.faults().forbid(configmaps.clone());
    let terms = Arc::new(Terms::default());
    let ended = Recorder::<String>::new();
    let mut tasks = Vec::new();
    let cancel = CancellationToken::new();
    for id in ["a", "b"] {
        let elector = Arc::new(LeaderElector::new(server.client(), NS, LEASE, id, fast()).unwrap());
        let (client, terms, ended, cancel) = (
            server.client(),
            Arc::clone(&terms),
            Arc::clone(&ended),
            cancel.clone(),
        );
        tasks.push(tokio::spawn(async move {
            elector
                .run(cancel, move |leading| {
                    let running = terms.begin(id);
                    let factory = SharedInformerFactory::new(client.clone());
                    let controller = Controller::<ConfigMap>::new(factory, "cms")
                        .sync_timeout(Duration::from_millis(300));
                    let ended = Arc::clone(&ended);
                    async move {
                        let _running = running;
                        let reconcile = |_: Request<ConfigMap>, _: Arc<Context<()>>| async {
                            Ok::<_, kube::Error>(Action::Done)
                        };
                        if let Err(err) = controller.run(reconcile, (), leading).await {
                            ended.push(format!("{id}: {err}"));
                        }
                    }
                })
                .await
                .unwrap();
        }));
    }
    // Both candidates lead in turn, each term ending in a sync timeout; between them the
    // Lease is released, not renewed with nothing running.
    let released = Arc::new(Mutex::new(false));
    {
        let (released, server, ended) = (Arc::clone(&released), &server, &ended);
        poll_until("two failed terms and a release", || {
            if !ended.snapshot().is_empty() && holder(server).is_none() {
                *released.lock() = true;
            }
            *released.lock() && ended.snapshot().len() >= 2
        })
        .await;
    }
    let first = terms.snapshot()[0].clone();
    let failed_after = first.2.unwrap() - first.1;
    assert!(
        failed_after < Duration::from_secs(2),
        "the term's work ended on its own after {failed_after:?}"
    );
    // ConfigMaps are readable again: the next term syncs and keeps running.
    server.faults().allow(&configmaps);
    poll_until("a term that keeps running", || {
        terms
            .snapshot()
            .last()
            .is_some_and(|t| t.2.is_none() && t.1.elapsed() > Duration::from_secs(1))
    })
    .await;
    let running = terms.snapshot().last().unwrap().0.clone();
    assert_eq!(holder(&server).as_deref(), Some(running.as_str()));
    cancel.cancel();
    for t in tasks {
        within("a candidate to stop", t).await.unwrap();
    }
    terms.assert_exclusive();
}

/// S5: the task running `LeaderElector::run` is aborted while leading. The
/// work's token is cancelled, the work ends, the Lease is released, and another candidate
/// leads at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s5_dropping_the_elector_run_future_stops_the_work_and_releases() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let terms = Arc::new(Terms::default());
    let spawn = |id: &'static str, cancel: CancellationToken| {
        let elector = Arc::new(LeaderElector::new(server.client(), NS, LEASE, id, fast()).unwrap());
        let terms = Arc::clone(&terms);
        tokio::spawn(async move {
            elector
                .run(cancel, move |leading| {
                    let running = terms.begin(id);
                    async move {
                        let _running = running;
                        leading.cancelled().await;
                    }
                })
                .await
                .unwrap();
        })
    };
    let a = spawn("a", CancellationToken::new());
    poll_until("a to lead", || terms.snapshot().len() == 1).await;
    a.abort();
    poll_until("a's work to stop and the Lease to be released", || {
        terms.snapshot()[0].2.is_some() && holder(&server).is_none()
    })
    .await;
    let dropped = Instant::now();
    let cancel = CancellationToken::new();
    let b = spawn("b", cancel.clone());
    poll_until("b to lead", || terms.snapshot().len() == 2).await;
    assert!(
        dropped.elapsed() < fast().lease_duration,
        "E5: the released Lease was taken at once"
    );
    cancel.cancel();
    within("b to stop", b).await.unwrap();
    terms.assert_exclusive();
}

/// S6: the leader is cut off (every request 503) while its work ignores its
/// token for 30 s. After stepping down, the work may run at most the drain limit; it is
/// aborted then, before the successor's term starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s6_work_that_outlives_its_term_is_aborted_before_a_successor_leads() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let terms = Arc::new(Terms::default());
    let stepped_down = Arc::new(Mutex::new(None::<Instant>));
    let cancel = CancellationToken::new();
    let mut tasks = Vec::new();
    for id in ["a", "b"] {
        let client = client_with_agent(&server, id);
        let sd = Arc::clone(&stepped_down);
        let elector = Arc::new(
            LeaderElector::new(client, NS, LEASE, id, fast())
                .unwrap()
                .on_stopped_leading(move || {
                    sd.lock().get_or_insert_with(Instant::now);
                }),
        );
        let (terms, cancel) = (Arc::clone(&terms), cancel.clone());
        tasks.push(tokio::spawn(async move {
            elector
                .run(cancel, move |leading| {
                    let running = terms.begin(id);
                    async move {
                        let _running = running;
                        leading.cancelled().await;
                        // A 30 s reconcile that does not look at its token.
                        tokio::time::sleep(Duration::from_secs(30)).await;
                    }
                })
                .await
                .unwrap();
        }));
    }
    poll_until("a first leader", || terms.snapshot().len() == 1).await;
    let leader = terms.snapshot()[0].0.clone();
    server.faults().refuse_user_agent(&leader);
    poll_until("the successor to lead", || terms.snapshot().len() == 2).await;
    let all = terms.snapshot();
    let (old, new) = (&all[0], &all[1]);
    let down = stepped_down.lock().unwrap();
    let ran = old.2.expect("the old work was aborted") - down;
    let config = fast();
    assert!(
        ran <= config.drain_limit() + Duration::from_millis(200),
        "S6: the old work ran {ran:?} after its term ended"
    );
    assert!(
        old.2.unwrap() < new.1,
        "the old work ended before the successor started"
    );
    terms.assert_exclusive();
    server.faults().admit_user_agent(&leader);
    cancel.cancel();
    for t in tasks {
        within("a candidate to stop", t).await.unwrap();
    }
    terms.assert_exclusive();
}
