//! H18: an atomic relist of many keys is applied in one synchronous step (V2: a
//! lister never sees half of it), and that step may take tens of milliseconds (50 000 keys:
//! 26-102 ms measured, more with index functions and handlers). On a multi-thread runtime it runs
//! in `block_in_place`, so the worker hands its other tasks to a new worker instead of holding
//! them for the whole step.

mod informer_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use informer_runtime::indexer::Indexers;
use informer_support::*;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use tokio_util::sync::CancellationToken;

/// With one worker thread, an index function that runs inside the relist waits for a tick of a
/// task on the same runtime. If the relist held the worker, the tick could never come.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn an_atomic_relist_does_not_hold_the_runtime_worker() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    for i in 0..5_000 {
        server
            .create(&cm("default", &format!("cm-{i:04}"), "x"))
            .unwrap();
    }
    let armed = Arc::new(AtomicBool::new(false));
    let ticks = Arc::new(AtomicU64::new(0));
    let starved = Arc::new(AtomicBool::new(false));
    let index = {
        let (armed, ticks, starved) =
            (Arc::clone(&armed), Arc::clone(&ticks), Arc::clone(&starved));
        move |cm: &ConfigMap| {
            if armed.load(Ordering::SeqCst) && cm.metadata.name.as_deref() == Some("cm-2500") {
                armed.store(false, Ordering::SeqCst);
                let seen = ticks.load(Ordering::SeqCst);
                let deadline = Instant::now() + Duration::from_secs(10);
                while ticks.load(Ordering::SeqCst) < seen + 2 {
                    if Instant::now() > deadline {
                        starved.store(true, Ordering::SeqCst);
                        break;
                    }
                    std::thread::yield_now();
                }
            }
            vec![]
        }
    };
    let informer = Arc::new(informer(server.client(), |c| {
        c.indexers = Indexers::new().with("gate", index);
    }));
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    informer.start(cancel.clone());
    assert_synced(informer.wait_for_sync()).await;
    let ticker = tokio::spawn({
        let ticks = Arc::clone(&ticks);
        async move {
            loop {
                ticks.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    });
    let relists = informer
        .reflector_handle()
        .expect("started")
        .counters()
        .relists;
    armed.store(true, Ordering::SeqCst);
    server.faults().expire_open_watches();
    wait_until("the relist is applied", || {
        informer
            .reflector_handle()
            .is_some_and(|h| h.counters().relists > relists)
            && !armed.load(Ordering::SeqCst)
            && informer.queued() == 0
    })
    .await;
    ticker.abort();
    assert!(
        !starved.load(Ordering::SeqCst),
        "a task of the same runtime ran while the relist was applied"
    );
    assert_eq!(informer.indexer().len(), 5_000);
}
