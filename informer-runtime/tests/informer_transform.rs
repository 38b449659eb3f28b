//! D8/M8 through a real informer against informer-testserver: every LIST, watch-list and WATCH object is transformed exactly once.

mod informer_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use informer_runtime::informer::{SharedIndexInformer, handler_fn};
use informer_runtime::reflector::InitialListStrategy;
use informer_support::*;
use informer_testserver::{FaultTarget, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

const MARK: &str = "test/transformed";

fn marked(cm: &ConfigMap) -> bool {
    cm.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.get(MARK).map(String::as_str) == Some("1"))
}

/// Installs an idempotent transform that marks each object and records `(name, rv)` per call.
fn install(inf: &SharedIndexInformer<ConfigMap>) -> Arc<Mutex<Vec<(String, String)>>> {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let c = calls.clone();
    inf.set_transform(move |cm: &mut ConfigMap| {
        c.lock().push((
            cm.metadata.name.clone().unwrap_or_default(),
            cm.metadata.resource_version.clone().unwrap_or_default(),
        ));
        cm.metadata.managed_fields = None;
        cm.metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(MARK.into(), "1".into());
    })
    .expect("informer call");
    calls
}

async fn transforms_each_object_once(strategy: InitialListStrategy) {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    for i in 0..250 {
        w.create(&format!("cm-{i:04}"), "0").await;
    }
    let inf = informer(server.client(), |c| {
        c.reflector.page_size = 100;
        c.reflector.strategy = strategy;
    });
    let calls = install(&inf);
    let unmarked = Arc::new(AtomicUsize::new(0));
    let (u1, u2, u3) = (unmarked.clone(), unmarked.clone(), unmarked.clone());
    inf.add_event_handler(
        handler_fn()
            .on_add(move |o: &Arc<ConfigMap>, _| {
                if !marked(o) {
                    u1.fetch_add(1, Ordering::SeqCst);
                }
            })
            .on_update(move |old: &Arc<ConfigMap>, new: &Arc<ConfigMap>| {
                if !marked(old) || !marked(new) {
                    u2.fetch_add(1, Ordering::SeqCst);
                }
            })
            .on_delete(move |d| {
                if d.last_known().is_some_and(|o| !marked(o)) {
                    u3.fetch_add(1, Ordering::SeqCst);
                }
            }),
    )
    .expect("informer call");
    let rec = Recorder::new();
    let reg = inf.add_event_handler(rec.clone()).expect("handler");
    let cancel = CancellationToken::new();
    let task = inf.start(cancel.clone());
    assert!(
        tokio::time::timeout(WAIT, reg.wait_for_sync())
            .await
            .expect("informer call"),
        "synced before the informer stopped"
    );

    // Initial list: one call per listed object, none twice.
    let initial = calls.lock().clone();
    assert_eq!(initial.len(), 250, "D8: one transform per listed object");
    let mut names: Vec<_> = initial.iter().map(|(n, _)| n.clone()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), 250);
    assert!(inf.indexer().list().iter().all(|o| marked(o)));

    // Watch: ADDED, MODIFIED and a real DELETED are each transformed once.
    let created = w.create("cm-new", "0").await;
    let updated = w.set("cm-0000", "1").await;
    w.delete("cm-0001").await;
    rec.wait_for("add, update and delete", |evs| {
        evs.iter()
            .any(|e| matches!(e, Ev::Add { key, initial: false, .. } if key == "default/cm-new"))
            && evs
                .iter()
                .any(|e| matches!(e, Ev::Update { key, .. } if key == "default/cm-0000"))
            && evs
                .iter()
                .any(|e| matches!(e, Ev::Delete { key, .. } if key == "default/cm-0001"))
    })
    .await;
    let all = calls.lock().clone();
    assert_eq!(all.len(), 253, "D8: one transform per watch event object");
    let rv = |o: &ConfigMap| o.metadata.resource_version.clone().unwrap_or_default();
    let watched = &all[250..];
    assert!(watched.contains(&("cm-new".into(), rv(&created))));
    assert!(watched.contains(&("cm-0000".into(), rv(&updated))));
    assert!(watched.iter().any(|(n, _)| n == "cm-0001"));
    assert!(inf.indexer().list().iter().all(|o| marked(o)));
    assert_eq!(inf.indexer().len(), 250);
    assert_eq!(
        unmarked.load(Ordering::SeqCst),
        0,
        "handlers saw an untransformed object"
    );

    cancel.cancel();
    tokio::time::timeout(WAIT, task)
        .await
        .expect("informer did not stop")
        .expect("run task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn d8_m8_paged_list_and_watch_objects_are_transformed_exactly_once() {
    transforms_each_object_once(InitialListStrategy::ListWatch).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn d8_m8_watch_list_and_watch_objects_are_transformed_exactly_once() {
    transforms_each_object_once(InitialListStrategy::StreamingList).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn m8_a_list_page_is_transformed_before_the_last_page_is_answered() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    for i in 0..250 {
        w.create(&format!("cm-{i:04}"), "0").await;
    }
    // Each of the three pages is answered about a second after the previous one.
    server
        .faults()
        .delay(FaultTarget::List, Duration::from_secs(1));
    let inf = informer(server.client(), |c| c.reflector.page_size = 100);
    let (tx, mut rx) = tokio::sync::watch::channel(0usize);
    inf.set_transform(move |cm: &mut ConfigMap| {
        cm.metadata.managed_fields = None;
        tx.send_modify(|n| *n += 1);
    })
    .expect("informer call");
    let cancel = CancellationToken::new();
    let task = inf.start(cancel.clone());
    tokio::time::timeout(WAIT, rx.wait_for(|n| *n >= 100))
        .await
        .expect("first page transformed")
        .expect("transform alive");
    // M8: the first page was transformed while later pages were still outstanding, not after
    // the whole list was held untransformed.
    let answered = server.requests().iter().filter(|r| r.is_list()).count();
    assert!(
        answered < 3,
        "transform ran only after all {answered} pages"
    );
    assert!(!inf.has_synced());
    assert!(
        tokio::time::timeout(WAIT, inf.wait_for_sync())
            .await
            .expect("synced")
    );
    assert_eq!(*rx.borrow(), 250, "D8: each listed object once");
    cancel.cancel();
    tokio::time::timeout(WAIT, task)
        .await
        .expect("informer did not stop")
        .expect("run task");
}

/// T6, D8: a transform that runs on a decode pool thread runs inside the informer's tokio
/// runtime, so `Handle::current()` works there; no object is dropped for it (M17).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn t6_a_transform_on_the_decode_pool_sees_the_informers_runtime() {
    use informer_runtime::informer::InformerConfig;
    use informer_runtime::list_watch::{DecodePool, ListWatch};
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 200).await;
    let pool = DecodePool::new(2).expect("a pool of two threads");
    let lw = ListWatch::new(kube::Api::<ConfigMap>::all(server.client())).decode_pool(pool);
    let mut config = InformerConfig::<ConfigMap> {
        name: "configmaps".into(),
        ..Default::default()
    };
    config.reflector.strategy = InitialListStrategy::ListWatch;
    let inf = SharedIndexInformer::new(lw, config).expect("an informer");
    let on_pool = Arc::new(AtomicUsize::new(0));
    let seen = on_pool.clone();
    inf.set_transform(move |_: &mut ConfigMap| {
        // Reads the handle only: it panics outside a runtime.
        let _ = tokio::runtime::Handle::current().runtime_flavor();
        let thread = std::thread::current();
        if thread
            .name()
            .is_some_and(|n| n.starts_with("informer-decode"))
        {
            seen.fetch_add(1, Ordering::SeqCst);
        }
    })
    .expect("before start");
    let reg = inf
        .add_event_handler(handler_fn().on_add(|_: &Arc<ConfigMap>, _| {}))
        .expect("handler");
    let (cancel, task) = start(&inf);
    let synced = tokio::time::timeout(WAIT, reg.wait_for_sync()).await;
    let counters = inf.reflector_handle().expect("running").counters();
    assert_eq!(counters.transform_panics, 0, "M17: no transform panicked");
    assert!(matches!(synced, Ok(true)), "synced: {synced:?}");
    assert_eq!(inf.indexer().len(), 200, "no object dropped");
    assert!(
        on_pool.load(Ordering::SeqCst) > 0,
        "the page was decoded and transformed on the pool"
    );
    stop(cancel, task).await;
}
