//! The controller over real HTTP against informer-testserver (C1-C9): one reconcile per key at
//! a time, one more after a change, owner mapping, backoff, deleted primaries, graceful
//! shutdown, controller-runtime metrics, finalizers and status updates with conflict retry.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use informer_controller::finalizer::{self, Event};
use informer_controller::status::update_status;
use informer_controller::{Action, Context, Controller, Request, WriteRecorder};
use informer_runtime::SharedInformerFactory;
use informer_runtime::key::ObjectKey;
use informer_runtime::workqueue::ItemExponentialFailureRateLimiter;
use informer_testserver::TestServer;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, PostParams};
use prometheus_client::registry::Registry;
use support::*;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

/// One reconcile as seen by the test: the key, the object's `data.v` (None when deleted).
#[derive(Debug, Clone, PartialEq)]
struct Seen {
    key: String,
    v: Option<String>,
    at: Instant,
}

fn seen(req: &Request<ConfigMap>) -> Seen {
    Seen {
        key: req.key.to_string(),
        v: req
            .object
            .as_ref()
            .and_then(|cm| cm.data.as_ref()?.get("v").cloned()),
        at: Instant::now(),
    }
}

fn count(log: &[Seen], key: &str) -> usize {
    log.iter().filter(|s| s.key == key).count()
}

fn secret_for(name: &str, primary: &str, rev: &str) -> Secret {
    let mut s = Secret::default();
    s.metadata.name = Some(name.into());
    s.metadata.namespace = Some(NS.into());
    s.metadata.annotations = Some([("primary".to_string(), primary.to_string())].into());
    s.string_data = None;
    s.data = None;
    s.metadata.labels = Some([("rev".to_string(), rev.to_string())].into());
    s
}

/// State for the C1/C2 test: a gate the first reconcile of `slow` waits on, and concurrency.
struct Gate {
    log: Arc<Recorder<Seen>>,
    gate: Semaphore,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
}

async fn gated(req: Request<ConfigMap>, ctx: Arc<Context<Arc<Gate>>>) -> Result<Action, String> {
    let g = ctx.data();
    let now = g.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    g.max_in_flight.fetch_max(now, Ordering::SeqCst);
    g.log.push(seen(&req));
    if req.name() == "slow" && count(&g.log.snapshot(), "default/slow") == 1 {
        let _permit = g.gate.acquire().await.map_err(|e| e.to_string())?;
    }
    g.in_flight.fetch_sub(1, Ordering::SeqCst);
    Ok(Action::Done)
}

#[tokio::test]
async fn c1_c2_changes_during_a_reconcile_lead_to_exactly_one_more_and_never_two_at_once() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm(NS, "slow", "1")).unwrap();
    server.create(&secret_for("s", "slow", "0")).unwrap();
    let factory = SharedInformerFactory::new(server.client());
    // The mapper records every Secret state it maps: when it has mapped the last one, the
    // handler has already queued the key for the previous state (update maps old, then new).
    let mapped: Arc<Recorder<String>> = Recorder::new();
    let m = Arc::clone(&mapped);
    let controller = Controller::<ConfigMap>::new(factory, "gated")
        .workers(4)
        .watches::<Secret>(move |s: &Secret| {
            m.push(s.metadata.resource_version.clone().unwrap_or_default());
            let primary = s
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("primary"));
            primary
                .map(|p| vec![ObjectKey::new(Some(NS), p)])
                .unwrap_or_default()
        });
    let state = Arc::new(Gate {
        log: Recorder::new(),
        gate: Semaphore::new(0),
        in_flight: AtomicUsize::new(0),
        max_in_flight: AtomicUsize::new(0),
    });
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (state, cancel) = (Arc::clone(&state), cancel.clone());
        async move { controller.run(gated, state, cancel).await }
    });
    // The first reconcile of `slow` is in flight and blocked.
    state
        .log
        .wait_until("first reconcile", |l| count(l, "default/slow") == 1)
        .await;

    // 20 changes to the watched Secret while the key is being processed.
    let secrets: Api<Secret> = Api::namespaced(server.client(), NS);
    let mut last_rv = String::new();
    for rev in 1..=20 {
        let mut s = secrets.get("s").await.unwrap();
        s.metadata.labels = Some([("rev".to_string(), rev.to_string())].into());
        last_rv = secrets
            .replace("s", &PostParams::default(), &s)
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
    }
    mapped
        .wait_until("the last Secret state mapped", |l| l.contains(&last_rv))
        .await;
    state.gate.add_permits(1);

    let log = state
        .log
        .wait_until("one more reconcile", |l| count(l, "default/slow") >= 2)
        .await;
    cancel.cancel();
    within("controller shutdown", run).await.unwrap().unwrap();
    let log_after = state.log.snapshot();
    assert_eq!(
        count(&log_after, "default/slow"),
        2,
        "C2: 20 changes during one reconcile give exactly one more: {log:?}"
    );
    assert_eq!(state.max_in_flight.load(Ordering::SeqCst), 1, "C1");
}

async fn flaky(
    req: Request<ConfigMap>,
    ctx: Arc<Context<Arc<Recorder<Seen>>>>,
) -> Result<Action, String> {
    let log = ctx.data();
    log.push(seen(&req));
    let n = count(&log.snapshot(), &req.key.to_string());
    match req.name() {
        "flaky" if n <= 3 => Err(format!("attempt {n} fails")),
        "periodic" if n <= 2 => Ok(Action::RequeueAfter(Duration::from_millis(150))),
        "again" if n <= 1 => Ok(Action::Requeue),
        _ => Ok(Action::Done),
    }
}

#[tokio::test]
async fn c3_c8_errors_back_off_per_key_requeues_count_and_metrics_use_controller_runtime_names() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    for name in ["flaky", "periodic", "again", "fine"] {
        server.create(&cm(NS, name, "x")).unwrap();
    }
    let factory = SharedInformerFactory::new(server.client());
    let mut registry = Registry::default();
    let controller = Controller::<ConfigMap>::new(factory, "flaky")
        .workers(3)
        .rate_limiter(ItemExponentialFailureRateLimiter::<ObjectKey>::new(
            Duration::from_millis(100),
            Duration::from_secs(10),
        ))
        .metrics(&mut registry);
    let log: Arc<Recorder<Seen>> = Recorder::new();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (log, cancel) = (Arc::clone(&log), cancel.clone());
        async move { controller.run(flaky, log, cancel).await }
    });
    let all = log
        .wait_until("flaky succeeds, periodic and again settle", |l| {
            count(l, "default/flaky") == 4
                && count(l, "default/periodic") == 3
                && count(l, "default/again") == 2
        })
        .await;
    let times =
        |key: &str| -> Vec<Instant> { all.iter().filter(|s| s.key == key).map(|s| s.at).collect() };
    // W5 through C3: 100 ms, 200 ms, 400 ms between failed attempts.
    let flaky = times("default/flaky");
    for (i, min) in [100u64, 200, 400].iter().enumerate() {
        let gap = flaky[i + 1] - flaky[i];
        assert!(
            gap >= Duration::from_millis(*min),
            "attempt {i}: gap {gap:?} < {min} ms"
        );
    }
    let periodic = times("default/periodic");
    assert!(periodic[1] - periodic[0] >= Duration::from_millis(150));
    assert!(periodic[2] - periodic[1] >= Duration::from_millis(150));

    let text = scrape(&registry);
    let m = |series: &str| {
        sample(&text, series).unwrap_or_else(|| panic!("{series} missing in\n{text}"))
    };
    assert_eq!(
        m(r#"controller_runtime_reconcile_total{controller="flaky",result="error"}"#),
        3.0
    );
    assert_eq!(
        m(r#"controller_runtime_reconcile_errors_total{controller="flaky"}"#),
        3.0
    );
    assert_eq!(
        m(r#"controller_runtime_reconcile_total{controller="flaky",result="requeue_after"}"#),
        2.0
    );
    assert_eq!(
        m(r#"controller_runtime_reconcile_total{controller="flaky",result="requeue"}"#),
        1.0
    );
    // flaky 1 + periodic 1 + again 1 + fine 1.
    assert_eq!(
        m(r#"controller_runtime_reconcile_total{controller="flaky",result="success"}"#),
        4.0
    );
    assert_eq!(
        m(r#"controller_runtime_reconcile_time_seconds_count{controller="flaky"}"#),
        10.0
    );
    assert_eq!(
        m(r#"controller_runtime_active_workers{controller="flaky"}"#),
        0.0
    );
    assert_eq!(
        m(r#"controller_runtime_max_concurrent_reconciles{controller="flaky"}"#),
        3.0
    );
    // controller-runtime v0.25's other families, for its dashboards (C8).
    assert_eq!(
        m(r#"controller_runtime_terminal_reconcile_errors_total{controller="flaky"}"#),
        0.0
    );
    assert_eq!(
        m(r#"controller_runtime_reconcile_timeouts_total{controller="flaky"}"#),
        0.0
    );
    assert_eq!(
        m(r#"controller_runtime_reconcile_panics_total{controller="flaky"}"#),
        0.0
    );
    // The workqueue's metrics sit next to them, under the controller's name, labelled as
    // controller-runtime labels them (W7).
    assert!(m(r#"workqueue_adds_total{name="flaky",controller="flaky"}"#) >= 4.0);
    assert_eq!(
        m(r#"workqueue_retries_total{name="flaky",controller="flaky"}"#),
        6.0,
        "3 errors, 1 requeue, 2 requeue_after"
    );
    cancel.cancel();
    within("shutdown", run).await.unwrap().unwrap();
}

#[tokio::test]
async fn c4_c5_owned_changes_reconcile_the_controller_owner_and_deleted_primaries_reconcile_without_object()
 {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let a = server.create(&cm(NS, "a", "1")).unwrap();
    server.create(&cm(NS, "b", "1")).unwrap();
    let uid = a["metadata"]["uid"].as_str().unwrap().to_owned();
    let owner = |name: &str, controller: Option<bool>| OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: name.into(),
        uid: uid.clone(),
        controller,
        block_owner_deletion: None,
    };
    let mut owned_by_a = secret_for("owned-by-a", "-", "0");
    owned_by_a.metadata.owner_references = Some(vec![owner("a", Some(true))]);
    let mut refs_b = secret_for("refs-b", "-", "0");
    refs_b.metadata.owner_references = Some(vec![owner("b", None)]);
    server.create(&owned_by_a).unwrap();
    server.create(&refs_b).unwrap();

    let factory = SharedInformerFactory::new(server.client());
    let controller = Controller::<ConfigMap>::new(factory, "owner").owns::<Secret>();
    let log: Arc<Recorder<Seen>> = Recorder::new();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (log, cancel) = (Arc::clone(&log), cancel.clone());
        async move {
            controller
                .run(
                    |req: Request<ConfigMap>, ctx: Arc<Context<Arc<Recorder<Seen>>>>| async move {
                        ctx.data().push(seen(&req));
                        Ok::<_, String>(Action::Done)
                    },
                    log,
                    cancel,
                )
                .await
        }
    });
    log.wait_until("initial reconciles", |l| {
        count(l, "default/a") >= 1 && count(l, "default/b") >= 1
    })
    .await;
    let before_b = count(&log.snapshot(), "default/b");
    let before_a = count(&log.snapshot(), "default/a");

    // A change to a non-controller reference (b) first, then to a's owned Secret.
    let secrets: Api<Secret> = Api::namespaced(server.client(), NS);
    for name in ["refs-b", "owned-by-a"] {
        let mut s = secrets.get(name).await.unwrap();
        s.metadata.labels = Some([("rev".to_string(), "1".to_string())].into());
        secrets
            .replace(name, &PostParams::default(), &s)
            .await
            .unwrap();
    }
    log.wait_until("a reconciled for its owned Secret", |l| {
        count(l, "default/a") > before_a
    })
    .await;
    // Deleting the owned Secret reconciles a again (last known state, C4).
    secrets
        .delete("owned-by-a", &DeleteParams::default())
        .await
        .unwrap();
    log.wait_until("a reconciled for the deleted Secret", |l| {
        count(l, "default/a") > before_a + 1
    })
    .await;

    // C5: the deleted primary is reconciled with no object.
    let cms: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    cms.delete("a", &DeleteParams::default()).await.unwrap();
    let log_now = log
        .wait_until("a reconciled after deletion", |l| {
            l.iter().any(|s| s.key == "default/a" && s.v.is_none())
        })
        .await;
    assert_eq!(
        count(&log_now, "default/b"),
        before_b,
        "C4: a reference without controller: true maps nothing"
    );
    cancel.cancel();
    within("shutdown", run).await.unwrap().unwrap();
}

struct Shutdown {
    started: Arc<Recorder<String>>,
    release: Semaphore,
    finished: AtomicUsize,
}

#[tokio::test]
async fn c6_c7_workers_start_after_sync_and_shutdown_drains_in_flight_reconciles_then_stops_its_informers()
 {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    for i in 0..20 {
        server.create(&cm(NS, &format!("cm-{i}"), "x")).unwrap();
    }
    let factory = SharedInformerFactory::new(server.client());
    let controller = Controller::<ConfigMap>::new(factory.clone(), "drain").workers(2);
    let state = Arc::new(Shutdown {
        started: Recorder::new(),
        release: Semaphore::new(0),
        finished: AtomicUsize::new(0),
    });
    let cancel = CancellationToken::new();
    let mut run = tokio::spawn({
        let (state, cancel) = (Arc::clone(&state), cancel.clone());
        async move {
            controller
                .run(
                    |req: Request<ConfigMap>, ctx: Arc<Context<Arc<Shutdown>>>| async move {
                        let s = ctx.data();
                        // C6: the cache is complete when the first reconcile runs.
                        assert_eq!(
                            ctx.lister::<ConfigMap>().list(&Default::default()).len(),
                            20
                        );
                        s.started.push(req.key.to_string());
                        let _permit = s.release.acquire().await.map_err(|e| e.to_string())?;
                        s.finished.fetch_add(1, Ordering::SeqCst);
                        Ok::<_, String>(Action::Done)
                    },
                    state,
                    cancel,
                )
                .await
        }
    });
    state
        .started
        .wait_until("two reconciles in flight", |l| l.len() == 2)
        .await;
    cancel.cancel();
    // In-flight reconciles hold the run open (C7), however long they take.
    let early = tokio::time::timeout(Duration::from_millis(300), &mut run).await;
    assert!(
        early.is_err(),
        "run returned while two reconciles were in flight"
    );
    state.release.add_permits(100);
    within("shutdown", run).await.unwrap().unwrap();
    assert_eq!(
        state.finished.load(Ordering::SeqCst),
        2,
        "both finished, no new key taken"
    );
    assert_eq!(
        state.started.snapshot().len(),
        2,
        "C7: no key taken after cancel"
    );
    assert!(
        server.wait_for_active_watches(0, WAIT).await,
        "the informer the run started was stopped"
    );
}

#[tokio::test]
async fn c7_a_reconcile_that_never_ends_is_aborted_after_the_shutdown_timeout() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm(NS, "stuck", "x")).unwrap();
    let factory = SharedInformerFactory::new(server.client());
    // Warm informer, started by someone else: the controller leaves it running.
    let informer = factory.informer_for::<ConfigMap>();
    factory.start();
    assert!(informer.wait_for_sync().await);
    let controller = Controller::<ConfigMap>::new(factory.clone(), "stuck")
        .shutdown_timeout(Duration::from_millis(200));
    let started: Arc<Recorder<String>> = Recorder::new();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (started, cancel) = (Arc::clone(&started), cancel.clone());
        async move {
            controller
                .run(
                    |req: Request<ConfigMap>, ctx: Arc<Context<Arc<Recorder<String>>>>| async move {
                        ctx.data().push(req.key.to_string());
                        std::future::pending::<()>().await;
                        Ok::<_, String>(Action::Done)
                    },
                    started,
                    cancel,
                )
                .await
        }
    });
    started
        .wait_until("the stuck reconcile", |l| l.len() == 1)
        .await;
    cancel.cancel();
    within("shutdown after the timeout", run)
        .await
        .unwrap()
        .unwrap();
    assert!(
        !informer.is_stopped(),
        "an informer the controller did not start keeps running"
    );
    assert_eq!(server.active_watches(), 1);
    factory.shutdown().await;
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct TestError(String);

#[tokio::test]
async fn c9_finalizer_is_added_cleanup_runs_on_deletion_then_only_ours_is_removed() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let mut guarded = cm(NS, "guarded", "x");
    guarded.metadata.finalizers = Some(vec!["other.example.com/keep".into()]);
    server.create(&guarded).unwrap();
    let factory = SharedInformerFactory::new(server.client());
    let controller = Controller::<ConfigMap>::new(factory, "finalizer");
    let events: Arc<Recorder<String>> = Recorder::new();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (events, cancel) = (Arc::clone(&events), cancel.clone());
        async move {
            controller
                .run(
                    |req: Request<ConfigMap>, ctx: Arc<Context<Arc<Recorder<String>>>>| async move {
                        let Some(obj) = req.object.clone() else {
                            return Ok(Action::Done);
                        };
                        let api: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), NS);
                        let events = Arc::clone(ctx.data());
                        finalizer::finalizer(
                            &api,
                            "test.example.com/cleanup",
                            obj,
                            &ctx.recorder(&req.key),
                            |event| async move {
                                match event {
                                    Event::Apply(_) => events.push("apply".into()),
                                    Event::Cleanup(_) => events.push("cleanup".into()),
                                }
                                Ok::<_, TestError>(Action::Done)
                            },
                        )
                        .await
                    },
                    events,
                    cancel,
                )
                .await
        }
    });
    events
        .wait_until("apply after the finalizer was added", |l| {
            l.contains(&"apply".to_string())
        })
        .await;
    let stored: ConfigMap = server.get(Some(NS), "guarded").unwrap();
    assert_eq!(
        stored.metadata.finalizers,
        Some(vec![
            "other.example.com/keep".into(),
            "test.example.com/cleanup".into()
        ]),
        "ours appended, the other writer's kept"
    );

    let cms: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    cms.delete("guarded", &DeleteParams::default())
        .await
        .unwrap();
    events
        .wait_until("cleanup", |l| l.contains(&"cleanup".to_string()))
        .await;
    let deadline = Instant::now() + WAIT;
    loop {
        let stored: ConfigMap = server.get(Some(NS), "guarded").unwrap();
        if stored.metadata.finalizers == Some(vec!["other.example.com/keep".into()]) {
            assert!(stored.metadata.deletion_timestamp.is_some());
            break;
        }
        assert!(
            Instant::now() < deadline,
            "our finalizer was not removed: {:?}",
            stored.metadata.finalizers
        );
        // Wait for the next write the server serves (no fixed sleep).
        let n = server.requests().len();
        let _ = server
            .wait_for_requests(Duration::from_secs(1), |l| l.len() > n)
            .await;
    }
    cancel.cancel();
    within("shutdown", run).await.unwrap().unwrap();

    // A stale cached copy never overwrites a concurrent writer: the patch carries its RV.
    let mut fresh = cm(NS, "raced", "x");
    fresh.metadata.finalizers = None;
    server.create(&fresh).unwrap();
    let stale: ConfigMap = server.get(Some(NS), "raced").unwrap();
    let mut other = stale.clone();
    other.metadata.finalizers = Some(vec!["other.example.com/late".into()]);
    server.update(&other).unwrap();
    let err = finalizer::finalizer(
        &cms,
        "test.example.com/cleanup",
        Arc::new(stale),
        &WriteRecorder::detached(),
        |_| async { Ok::<_, TestError>(Action::Done) },
    )
    .await
    .expect_err("stale resourceVersion");
    assert!(
        matches!(err, finalizer::Error::AddFinalizer(kube::Error::Api(ref s)) if s.code == 409),
        "{err:?}"
    );
    let stored: ConfigMap = server.get(Some(NS), "raced").unwrap();
    assert_eq!(
        stored.metadata.finalizers,
        Some(vec!["other.example.com/late".into()])
    );
}

#[tokio::test]
async fn status_update_retries_on_conflict_with_a_fresh_read_and_skips_no_op_writes() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let mut d = Deployment::default();
    d.metadata.name = Some("web".into());
    d.metadata.namespace = Some(NS.into());
    server.create(&d).unwrap();
    let api: Api<Deployment> = Api::namespaced(server.client(), NS);
    let stale = api.get("web").await.unwrap();
    // Someone else writes after our read: our first status write conflicts.
    let mut other = stale.clone();
    other.metadata.labels = Some([("touched".to_string(), "yes".to_string())].into());
    api.replace("web", &PostParams::default(), &other)
        .await
        .unwrap();

    let calls = AtomicUsize::new(0);
    let stored = update_status(&api, &stale, &WriteRecorder::detached(), |d| {
        calls.fetch_add(1, Ordering::SeqCst);
        d.status = Some(DeploymentStatus {
            replicas: Some(3),
            ..Default::default()
        });
    })
    .await
    .unwrap()
    .expect("written");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "mutated again on the fresh read"
    );
    assert_eq!(stored.status.and_then(|s| s.replicas), Some(3));
    let now = api.get("web").await.unwrap();
    assert_eq!(
        now.metadata
            .labels
            .as_ref()
            .unwrap()
            .get("touched")
            .map(String::as_str),
        Some("yes")
    );

    // Already as desired: no write at all.
    let n = server.requests().len();
    let unchanged = update_status(&api, &now, &WriteRecorder::detached(), |d| {
        d.status = Some(DeploymentStatus {
            replicas: Some(3),
            ..now.status.clone().unwrap_or_default()
        });
    })
    .await
    .unwrap();
    assert!(unchanged.is_none());
    assert_eq!(server.requests().len(), n);
}

/// Public handles are shareable across tasks (style: compile-time Send/Sync assertions).
#[test]
fn public_handles_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Controller<ConfigMap>>();
    assert_send_sync::<Context<()>>();
    assert_send_sync::<Request<ConfigMap>>();
    assert_send_sync::<informer_controller::leader::LeaderElector>();
    assert_send_sync::<informer_controller::ControllerMetrics>();
    assert_send_sync::<informer_controller::PauseHandle>();
}

#[tokio::test]
async fn f6_the_factory_selector_limits_what_the_controller_reconciles() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    for (name, app) in [("web-1", "web"), ("web-2", "web"), ("db-1", "db")] {
        let mut c = cm(NS, name, "x");
        c.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        server.create(&c).unwrap();
    }
    let factory = SharedInformerFactory::builder(server.client())
        .tweak_list_options(|lp| lp.label_selector = Some("app=web".into()))
        .build();
    let controller = Controller::<ConfigMap>::new(factory, "selected").workers(2);
    let log: Arc<Recorder<Seen>> = Recorder::new();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (log, cancel) = (Arc::clone(&log), cancel.clone());
        async move { controller.run(flaky, log, cancel).await }
    });
    // A later match arrives through the same selected watch.
    let mut late = cm(NS, "web-3", "x");
    late.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    api.create(&PostParams::default(), &late).await.unwrap();
    let log = log
        .wait_until("the selected objects", |l| {
            ["default/web-1", "default/web-2", "default/web-3"]
                .iter()
                .all(|k| count(l, k) == 1)
        })
        .await;
    assert_eq!(
        count(&log, "default/db-1"),
        0,
        "outside the factory's selector"
    );
    cancel.cancel();
    within("shutdown", run).await.unwrap().unwrap();
    let watch = server
        .requests()
        .into_iter()
        .find(|r| r.verb == informer_testserver::Verb::Watch)
        .expect("a watch");
    assert_eq!(watch.query.label_selector.as_deref(), Some("app=web"));
}
