//! Pausing a controller (C11, on the workqueue's W9) against informer-testserver over HTTP: no
//! reconcile starts while paused though events keep queueing keys, resuming reconciles them, the
//! pause outlives a run, and a paused run shuts down at once.
//!
//! Run with `cargo test -p informer-controller --test controller_pause`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use informer_controller::{Action, Context, Controller, PauseHandle, Request};
use informer_runtime::SharedInformerFactory;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use prometheus_client::registry::Registry;
use support::*;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

async fn record(
    req: Request<ConfigMap>,
    ctx: Arc<Context<Arc<Recorder<String>>>>,
) -> Result<Action, String> {
    ctx.data().push(req.key.to_string());
    Ok(Action::Done)
}

/// The controller's `workqueue_depth` (controller-runtime's labels): keys queued, not handed out.
fn depth(registry: &Registry, controller: &str) -> Option<f64> {
    let series =
        format!(r#"workqueue_depth{{name="{controller}",controller="{controller}",priority=""}}"#);
    sample(&scrape(registry), &series)
}

/// The controller's `workqueue_adds_total`, summed over its runs (they share the series).
fn adds(registry: &Registry, controller: &str) -> Option<f64> {
    let series =
        format!(r#"workqueue_adds_total{{name="{controller}",controller="{controller}"}}"#);
    sample(&scrape(registry), &series)
}

fn cached(factory: &SharedInformerFactory, key: &str) -> bool {
    factory
        .informer_for::<ConfigMap>()
        .indexer()
        .get_by_key(key)
        .is_some()
}

/// C11: while paused, objects created and changed over HTTP reach the cache and their keys the
/// queue (the depth shows them waiting), yet no reconcile starts; `resume` reconciles each key
/// once, a change while queued being deduplicated (W1).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c11_no_reconcile_starts_while_paused_and_resume_reconciles_what_was_queued() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm(NS, "a", "1")).unwrap();
    let factory = SharedInformerFactory::new(server.client());
    let mut registry = Registry::default();
    let controller = Controller::<ConfigMap>::new(factory.clone(), "paused")
        .workers(2)
        .metrics(&mut registry);
    let pause = controller.pause_handle();
    let log = Recorder::<String>::new();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (log, cancel) = (Arc::clone(&log), cancel.clone());
        async move { controller.run(record, log, cancel).await }
    });
    log.wait_until("the first reconcile", |l| l.len() == 1)
        .await;

    pause.pause();
    assert!(pause.is_paused());
    let api: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    api.create(&PostParams::default(), &cm(NS, "b", "1"))
        .await
        .unwrap();
    let mut b = api.get("b").await.unwrap();
    b.data = Some([("v".to_string(), "2".to_string())].into());
    api.replace("b", &PostParams::default(), &b).await.unwrap();
    api.create(&PostParams::default(), &cm(NS, "c", "1"))
        .await
        .unwrap();
    // The handler gets an informer's events in order: once c's key is queued, b's creation and
    // change have been queued too (the change deduplicated into the queued key).
    wait_until("the cache to hold c and b, c to wait in the queue", || {
        cached(&factory, "default/c")
            && cached(&factory, "default/b")
            && depth(&registry, "paused") == Some(2.0)
    })
    .await;
    assert_eq!(
        log.snapshot(),
        ["default/a"],
        "C11: a reconcile started while paused"
    );

    pause.resume();
    assert!(!pause.is_paused());
    log.wait_until("b's and c's reconciles after resume", |l| l.len() >= 3)
        .await;
    wait_until("the queue to empty", || {
        depth(&registry, "paused") == Some(0.0)
    })
    .await;
    cancel.cancel();
    within("shutdown", run).await.unwrap().unwrap();
    let mut keys = log.snapshot();
    keys.sort();
    assert_eq!(
        keys,
        ["default/a", "default/b", "default/c"],
        "one reconcile per queued key"
    );
}

/// C11: a handle shared with `with_pause_handle` and paused before the run: the run syncs and
/// queues every listed key but reconciles none, and cancelling it returns at once. The pause
/// holds for the next run of the same controller until `resume`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn c11_a_run_started_paused_waits_shuts_down_at_once_and_the_pause_outlives_it() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    for name in ["x", "y", "z"] {
        server.create(&cm(NS, name, "1")).unwrap();
    }
    let factory = SharedInformerFactory::new(server.client());
    let mut registry = Registry::default();
    let pause = PauseHandle::new();
    pause.pause();
    pause.pause(); // idempotent: one resume ends it
    let controller = Arc::new(
        Controller::<ConfigMap>::new(factory.clone(), "held")
            .workers(2)
            .metrics(&mut registry)
            .with_pause_handle(pause.clone()),
    );
    assert!(controller.pause_handle().is_paused());
    let log = Recorder::<String>::new();
    let start = |cancel: CancellationToken| {
        let (controller, log) = (Arc::clone(&controller), Arc::clone(&log));
        tokio::spawn(async move { controller.run(record, log, cancel).await })
    };

    let cancel = CancellationToken::new();
    let run = start(cancel.clone());
    wait_until("the listed keys to wait in the queue", || {
        adds(&registry, "held") == Some(3.0) && depth(&registry, "held") == Some(3.0)
    })
    .await;
    assert!(log.snapshot().is_empty(), "C11: reconciled while paused");
    cancel.cancel();
    within("a paused run's shutdown", run)
        .await
        .unwrap()
        .unwrap();
    assert!(log.snapshot().is_empty(), "C11: reconciled on shutdown");

    // The next run starts paused too, until the shared handle resumes.
    let cancel = CancellationToken::new();
    let run = start(cancel.clone());
    // The depth series is the first run's too: count the adds of this run instead.
    wait_until("the second run's keys to wait in the queue", || {
        adds(&registry, "held") == Some(6.0) && depth(&registry, "held") == Some(3.0)
    })
    .await;
    assert!(log.snapshot().is_empty(), "C11: reconciled while paused");
    pause.resume();
    let mut keys = log
        .wait_until("every key after resume", |l| l.len() == 3)
        .await;
    keys.sort();
    assert_eq!(keys, ["default/x", "default/y", "default/z"]);
    cancel.cancel();
    within("shutdown", run).await.unwrap().unwrap();
}
