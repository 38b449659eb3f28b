//! Leader election over coordination.k8s.io/v1 Leases against informer-testserver (E1-E7):
//! three replicas, the leader cut off or cancelled, a fencing record proving there is never
//! more than one leader, step-down before the lease could be taken, release on cancel, and a
//! controller that runs only while leading on informers that were warm before.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use informer_controller::leader::{LeaderElectionConfig, LeaderElector};
use informer_controller::{Action, Context, Controller, Request};
use informer_runtime::SharedInformerFactory;
use informer_testserver::{Faults, TestServer, Verb};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use support::*;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const LEASE: &str = "lock";

/// One leadership transition, as the replica itself saw it.
#[derive(Debug, Clone)]
struct Transition {
    id: String,
    started: bool,
    at: Instant,
    wall: Timestamp,
}

/// The fencing record: at most one holder at any instant. Entered synchronously when a term
/// starts, left synchronously when it ends (E6 callbacks), so an overlap is a violation.
struct Fence {
    holder: Mutex<Option<String>>,
    violations: Mutex<Vec<String>>,
    log: Arc<Recorder<Transition>>,
}

impl Fence {
    fn new() -> Arc<Self> {
        Arc::new(Fence {
            holder: Mutex::new(None),
            violations: Mutex::new(Vec::new()),
            log: Recorder::new(),
        })
    }

    fn enter(&self, id: &str) {
        let mut holder = self.holder.lock();
        if let Some(other) = &*holder {
            self.violations
                .lock()
                .push(format!("{id} started leading while {other} leads"));
        }
        *holder = Some(id.to_owned());
        self.log.push(Transition {
            id: id.into(),
            started: true,
            at: Instant::now(),
            wall: Timestamp::now(),
        });
    }

    fn exit(&self, id: &str) {
        let mut holder = self.holder.lock();
        if holder.as_deref() == Some(id) {
            *holder = None;
        } else {
            self.violations.lock().push(format!(
                "{id} stopped leading but the fence held {holder:?}"
            ));
        }
        self.log.push(Transition {
            id: id.into(),
            started: false,
            at: Instant::now(),
            wall: Timestamp::now(),
        });
    }

    fn violations(&self) -> Vec<String> {
        self.violations.lock().clone()
    }
}

struct Replica {
    id: String,
    /// Every holder this replica's new-leader callback reported (E6).
    leaders: Arc<Recorder<String>>,
    elector: Arc<LeaderElector>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn replica(
    server: &TestServer,
    fence: &Arc<Fence>,
    id: &str,
    config: LeaderElectionConfig,
) -> Replica {
    let client = client_with_agent(server, id);
    let f = Arc::clone(fence);
    let stopped_id = id.to_owned();
    let leaders: Arc<Recorder<String>> = Recorder::new();
    let l = Arc::clone(&leaders);
    let elector = Arc::new(
        LeaderElector::new(client, NS, LEASE, id, config)
            .unwrap()
            .on_stopped_leading(move || f.exit(&stopped_id))
            .on_new_leader(move |holder| l.push(holder.to_owned())),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (elector, cancel, fence, id) = (
            Arc::clone(&elector),
            cancel.clone(),
            Arc::clone(fence),
            id.to_owned(),
        );
        async move {
            elector
                .run(cancel, move |term| {
                    fence.enter(&id);
                    async move { term.cancelled().await }
                })
                .await
                .unwrap();
        }
    });
    Replica {
        id: id.to_owned(),
        leaders,
        elector,
        cancel,
        task,
    }
}

fn starts_after(log: &[Transition], after: Instant) -> Vec<Transition> {
    log.iter()
        .filter(|t| t.started && t.at > after)
        .cloned()
        .collect()
}

fn lease(server: &TestServer) -> Lease {
    server.get::<Lease>(Some(NS), LEASE).unwrap()
}

fn transitions(server: &TestServer) -> i32 {
    lease(server)
        .spec
        .and_then(|s| s.lease_transitions)
        .unwrap_or(0)
}

#[tokio::test]
async fn e3_e7_three_replicas_a_cut_off_leader_is_replaced_within_lease_plus_retry_and_never_two_lead()
 {
    init_tracing();
    let config = fast();
    let server = TestServer::start().await.unwrap();
    let fence = Fence::new();
    let mut replicas: Vec<Replica> = ["replica-0", "replica-1", "replica-2"]
        .iter()
        .map(|id| replica(&server, &fence, id, config.clone()))
        .collect();
    let first = fence
        .log
        .wait_until("a first leader", |l| l.iter().any(|t| t.started))
        .await;
    let leader = first.iter().find(|t| t.started).unwrap().id.clone();
    // Every replica has observed the leader (E6's new-leader view).
    for r in &replicas {
        let mut rx = r.elector.subscribe();
        wait_watch("leader observed", &mut rx, |s| {
            s.leader.as_deref() == Some(leader.as_str())
        })
        .await;
    }
    assert_eq!(replicas.iter().filter(|r| r.elector.is_leader()).count(), 1);
    let before = transitions(&server);

    // Cut the leader off: every request it sends gets 503 from now on.
    let cut = Instant::now();
    server.faults().refuse_user_agent(&leader);
    let log = fence
        .log
        .wait_until("another replica takes over", |l| {
            starts_after(l, cut).iter().any(|t| t.id != leader)
        })
        .await;
    let take = starts_after(&log, cut)
        .into_iter()
        .find(|t| t.id != leader)
        .unwrap();
    let step_down = log
        .iter()
        .find(|t| !t.started && t.id == leader)
        .expect("the old leader stepped down");
    assert!(
        step_down.at < take.at,
        "E4/E7: stepped down before the takeover"
    );
    let step_after = step_down.at - cut;
    let take_after = take.at - cut;
    eprintln!("stepped down {step_after:?} and replaced {take_after:?} after the cut");
    assert!(
        step_after <= config.renew_deadline + Duration::from_millis(300),
        "E4: stepped down within the renew deadline of its last renewal: {step_after:?}"
    );
    assert!(
        take_after <= config.lease_duration + config.retry_period + Duration::from_millis(500),
        "taken over within lease duration + retry period: {take_after:?}"
    );
    assert!(
        take_after + config.retry_period + Duration::from_millis(100) >= config.lease_duration,
        "E3: nobody took the lease before it expired by their own observation: {take_after:?}"
    );
    let record = lease(&server).spec.unwrap();
    assert_eq!(record.holder_identity.as_deref(), Some(take.id.as_str()));
    assert_eq!(
        record.lease_transitions,
        Some(before + 1),
        "E3: one transition counted"
    );

    // E6: every replica that was not cut off reported the new leader through its callback.
    for r in replicas.iter().filter(|r| r.id != leader) {
        r.leaders
            .wait_until("new-leader callback", |l| l.last() == Some(&take.id))
            .await;
    }

    // The old leader reconnects as a follower of the new one.
    server.faults().admit_user_agent(&leader);
    let old = replicas.iter().find(|r| r.id == leader).unwrap();
    let mut rx = old.elector.subscribe();
    wait_watch("old leader follows", &mut rx, |s| {
        s.leader.as_deref() == Some(take.id.as_str()) && !s.is_leader
    })
    .await;

    // E5: the new leader is cancelled gracefully and releases; a successor takes over at once,
    // well before a lease duration.
    let idx = replicas.iter().position(|r| r.id == take.id).unwrap();
    let released = replicas.remove(idx);
    let cancel_at = Instant::now();
    released.cancel.cancel();
    within("graceful stop", released.task).await.unwrap();
    let log = fence
        .log
        .wait_until("successor after release", |l| {
            starts_after(l, cancel_at)
                .iter()
                .any(|t| t.id != released.id)
        })
        .await;
    let successor = starts_after(&log, cancel_at)
        .into_iter()
        .find(|t| t.id != released.id)
        .unwrap();
    let after_release = successor.at - cancel_at;
    eprintln!("successor after a release: {after_release:?}");
    assert!(
        after_release < config.lease_duration,
        "E5: released lease taken at once: {after_release:?}"
    );
    assert_eq!(transitions(&server), before + 2);

    for r in replicas {
        r.cancel.cancel();
        within("stop", r.task).await.unwrap();
    }
    assert_eq!(
        fence.violations(),
        Vec::<String>::new(),
        "E7: never two leaders"
    );
    let record = lease(&server).spec.unwrap();
    assert_eq!(
        record.holder_identity, None,
        "the last leader released on cancel"
    );
    assert_eq!(record.lease_duration_seconds, Some(1));
}

#[tokio::test]
async fn e4_a_leader_whose_renewals_fail_steps_down_before_its_lease_could_be_taken() {
    steps_down_before_expiry(|f: &Faults, ua: &str| f.refuse_user_agent(ua)).await;
}

/// As above, with requests that never get an answer (a partition rather than an error): each
/// renew attempt is cut at the renew deadline.
#[tokio::test]
async fn e4_a_leader_whose_renewals_hang_steps_down_before_its_lease_could_be_taken() {
    steps_down_before_expiry(|f: &Faults, ua: &str| f.hang_user_agent(ua)).await;
}

async fn steps_down_before_expiry(cut_off: impl Fn(&Faults, &str)) {
    init_tracing();
    let config = LeaderElectionConfig {
        jitter_factor: 1.2,
        ..fast()
    };
    let server = TestServer::start().await.unwrap();
    let fence = Fence::new();
    let r = replica(&server, &fence, "solo", config.clone());
    fence
        .log
        .wait_until("leading", |l| l.iter().any(|t| t.started))
        .await;
    // Let it renew at least once, so the record's renewTime is a renewal.
    let first_renew = lease(&server).spec.unwrap().renew_time;
    let deadline = Instant::now() + WAIT;
    while lease(&server).spec.unwrap().renew_time == first_renew {
        assert!(Instant::now() < deadline, "never renewed");
        let n = server.requests().len();
        let _ = server
            .wait_for_requests(Duration::from_secs(1), |l| l.len() > n)
            .await;
    }
    cut_off(server.faults(), "solo");
    let log = fence
        .log
        .wait_until("stepped down", |l| l.iter().any(|t| !t.started))
        .await;
    let stop = log.iter().find(|t| !t.started).unwrap();
    assert!(!r.elector.is_leader());
    // The last renewal the server stored: nobody may take the lease before renewTime + lease
    // duration (their observation of it is later still). The leader stopped well before.
    let renewed = lease(&server).spec.unwrap().renew_time.unwrap().0;
    let stop_after = stop.wall.duration_since(renewed);
    let lease_duration =
        k8s_openapi::jiff::SignedDuration::try_from(config.lease_duration).unwrap();
    let renew_deadline =
        k8s_openapi::jiff::SignedDuration::try_from(config.renew_deadline).unwrap();
    eprintln!("stepped down {stop_after:?} after its last stored renewal");
    assert!(
        stop_after < lease_duration,
        "E4: {stop_after:?} >= lease duration"
    );
    assert!(
        stop_after <= renew_deadline + k8s_openapi::jiff::SignedDuration::from_millis(300),
        "E4: stepped down within the renew deadline: {stop_after:?}"
    );

    // Reconnected, it is still the recorded holder and simply renews (no transition).
    let before = transitions(&server);
    let again = Instant::now();
    server.faults().admit_user_agent("solo");
    fence
        .log
        .wait_until("leading again", |l| !starts_after(l, again).is_empty())
        .await;
    assert_eq!(transitions(&server), before);
    r.cancel.cancel();
    within("stop", r.task).await.unwrap();
    assert_eq!(fence.violations(), Vec::<String>::new());
}

#[test]
fn e2_invalid_timings_are_rejected() {
    let ok = LeaderElectionConfig::default();
    assert_eq!(ok.lease_duration, Duration::from_secs(15));
    assert_eq!(ok.renew_deadline, Duration::from_secs(10));
    assert_eq!(ok.retry_period, Duration::from_secs(2));
    ok.validate().unwrap();
    for bad in [
        LeaderElectionConfig {
            renew_deadline: Duration::from_secs(15),
            ..ok.clone()
        },
        LeaderElectionConfig {
            retry_period: Duration::from_secs(9),
            ..ok.clone()
        },
        LeaderElectionConfig {
            retry_period: Duration::ZERO,
            ..ok.clone()
        },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
    }
}

/// What each replica's controller reconciled.
type Reconciled = Arc<Recorder<(String, String)>>;

async fn record(
    req: Request<ConfigMap>,
    ctx: Arc<Context<(String, Reconciled)>>,
) -> Result<Action, String> {
    let (id, log) = ctx.data();
    log.push((id.clone(), req.key.to_string()));
    Ok(Action::Done)
}

#[tokio::test]
async fn a_controller_runs_only_while_leading_on_informers_warmed_before() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    for name in ["a", "b", "c"] {
        server.create(&cm(NS, name, "x")).unwrap();
    }
    let log: Reconciled = Recorder::new();
    let fence = Fence::new();
    let mut replicas = Vec::new();
    for id in ["ctl-0", "ctl-1"] {
        let client = client_with_agent(&server, id);
        let factory = SharedInformerFactory::new(client.clone());
        // Warm before leading: the follower's cache is synced and ready for a fast takeover.
        let informer = factory.informer_for::<ConfigMap>();
        factory.start();
        assert!(informer.wait_for_sync().await);
        let controller = Arc::new(Controller::<ConfigMap>::new(
            factory.clone(),
            "leader-gated",
        ));
        let f = Arc::clone(&fence);
        let stopped_id = id.to_owned();
        let elector = Arc::new(
            LeaderElector::new(client, NS, LEASE, id, fast())
                .unwrap()
                .on_stopped_leading(move || f.exit(&stopped_id)),
        );
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (elector, cancel, fence, log, id) = (
                Arc::clone(&elector),
                cancel.clone(),
                Arc::clone(&fence),
                Arc::clone(&log),
                id.to_owned(),
            );
            async move {
                elector
                    .run(cancel, move |term| {
                        fence.enter(&id);
                        let (controller, data) =
                            (Arc::clone(&controller), (id.clone(), Arc::clone(&log)));
                        async move { controller.run(record, data, term).await.unwrap() }
                    })
                    .await
                    .unwrap();
            }
        });
        replicas.push((id.to_owned(), elector, cancel, task, factory));
    }
    let all_by = |l: &[(String, String)], id: &str| {
        ["default/a", "default/b", "default/c"]
            .iter()
            .all(|k| l.iter().any(|(r, key)| r == id && key == k))
    };
    let first = fence
        .log
        .wait_until("a leader", |l| l.iter().any(|t| t.started))
        .await;
    let leader = first.iter().find(|t| t.started).unwrap().id.clone();
    let follower = replicas.iter().find(|r| r.0 != leader).unwrap().0.clone();
    log.wait_until("the leader reconciles every key", |l| all_by(l, &leader))
        .await;
    assert!(
        log.snapshot().iter().all(|(r, _)| *r == leader),
        "only the leader reconciles"
    );

    // The leader leaves gracefully; the follower's controller starts on its warm cache.
    let idx = replicas.iter().position(|r| r.0 == leader).unwrap();
    let (_, _, cancel, task, factory) = replicas.remove(idx);
    cancel.cancel();
    within("leader stops", task).await.unwrap();
    factory.shutdown().await;
    log.wait_until("the new leader reconciles every key", |l| {
        all_by(l, &follower)
    })
    .await;

    // Two warm informers, two watches in all: running the controllers opened none.
    let watches = server
        .requests()
        .iter()
        .filter(|r| r.verb == Verb::Watch && r.path.ends_with("/configmaps"))
        .count();
    assert_eq!(
        watches, 2,
        "one watch per replica, none per leadership term"
    );
    for (_, _, cancel, task, factory) in replicas {
        cancel.cancel();
        within("stop", task).await.unwrap();
        factory.shutdown().await;
    }
    assert_eq!(fence.violations(), Vec::<String>::new());
}

/// C8: `leader_election_master_status{name}` as client-go and controller-runtime export it: 1
/// on the leader, 0 on the other candidate, and the two swap when the leader leaves.
#[tokio::test]
async fn c8_leader_election_master_status_follows_leadership() {
    use informer_test_support::{sample, scrape};
    use prometheus_client::registry::Registry;
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let series = r#"leader_election_master_status{name="lock"}"#;
    let status = |registry: &Registry| sample(&scrape(registry), series);
    let mut registries = [Registry::default(), Registry::default()];
    let electors: Vec<Arc<LeaderElector>> = ["first", "second"]
        .into_iter()
        .zip(registries.iter_mut())
        .map(|(id, registry)| {
            let elector = LeaderElector::new(server.client(), NS, LEASE, id, fast())
                .unwrap()
                .metrics(registry);
            Arc::new(elector)
        })
        .collect();
    assert_eq!(status(&registries[0]), Some(0.0), "0 before any term");
    let run = |e: &Arc<LeaderElector>, cancel: &CancellationToken| {
        let (e, cancel) = (Arc::clone(e), cancel.clone());
        tokio::spawn(async move {
            e.run(cancel, |term| async move { term.cancelled().await })
                .await
                .unwrap();
        })
    };
    let first_cancel = CancellationToken::new();
    let first = run(&electors[0], &first_cancel);
    within("the first leads", async {
        let mut s = electors[0].subscribe();
        s.wait_for(|s| s.is_leader).await.unwrap();
    })
    .await;
    let second_cancel = CancellationToken::new();
    let second = run(&electors[1], &second_cancel);
    assert_eq!(status(&registries[0]), Some(1.0));
    assert_eq!(status(&registries[1]), Some(0.0));
    first_cancel.cancel();
    first.await.unwrap();
    within("the second leads", async {
        let mut s = electors[1].subscribe();
        s.wait_for(|s| s.is_leader).await.unwrap();
    })
    .await;
    assert_eq!(status(&registries[0]), Some(0.0));
    assert_eq!(status(&registries[1]), Some(1.0));
    second_cancel.cancel();
    second.await.unwrap();
}
