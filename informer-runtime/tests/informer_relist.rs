//! Informer relists against a real informer-testserver over HTTP: what a 410 and the relist that
//! follows deliver to handlers (M7, D5, H4) and keep in the cache (X7, M8).
//!
//! Run with `cargo test -p informer-runtime --test informer_relist`.

mod informer_support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use informer_support::*;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use tokio::sync::Notify;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn m7_d5_h12_objects_deleted_while_disconnected_reach_every_handler_as_tombstones() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 5).await;
    let inf = informer(server.client(), |_| {});
    let watch_failed = Arc::new(Notify::new());
    let wf = watch_failed.clone();
    inf.set_watch_error_handler(move |_| wf.notify_one())
        .unwrap();
    let (r1, r2) = (Recorder::new(), Recorder::new());
    let reg1 = inf.add_event_handler(r1.clone()).unwrap();
    let reg2 = inf.add_event_handler(r2.clone()).unwrap();
    let (cancel, task) = start(&inf);
    assert!(
        tokio::time::timeout(WAIT, reg1.wait_for_sync())
            .await
            .unwrap(),
        "synced before the informer stopped"
    );
    assert!(
        tokio::time::timeout(WAIT, reg2.wait_for_sync())
            .await
            .unwrap(),
        "synced before the informer stopped"
    );

    // Disconnect: the watch gets 410 (R12) and the relist that follows is held by the server.
    wait_until("the watch", || server.active_watches() == 1).await;
    server.faults().stall_list(true);
    server.faults().expire_open_watches();
    tokio::time::timeout(WAIT, watch_failed.notified())
        .await
        .expect("watch error reported");
    w.delete("cm-0001").await;
    w.delete("cm-0003").await;
    server.faults().stall_list(false);

    for rec in [&r1, &r2] {
        let events = rec
            .wait_for("two tombstones", |e| {
                e.iter().filter(|e| matches!(e, Ev::Delete { .. })).count() == 2
            })
            .await;
        let deletes: BTreeSet<_> = events
            .iter()
            .filter_map(|e| match e {
                Ev::Delete { key, tombstone, rv } => {
                    assert!(tombstone, "M7: inferred by the relist: {e:?}");
                    assert!(
                        rv.is_some(),
                        "D5: the tombstone carries the last known state"
                    );
                    Some(key.clone())
                }
                _ => None,
            })
            .collect();
        assert_eq!(
            deletes,
            BTreeSet::from(["default/cm-0001".to_string(), "default/cm-0003".to_string()])
        );
    }
    assert_eq!(inf.indexer().len(), 3);
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn h4_relist_over_unchanged_objects_is_silent_for_resync_zero_handlers() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 10).await;
    let inf = informer(server.client(), |_| {});
    let watch_failed = Arc::new(Notify::new());
    let wf = watch_failed.clone();
    inf.set_watch_error_handler(move |_| wf.notify_one())
        .unwrap();
    let rec = Recorder::new();
    let reg = inf.add_event_handler(rec.clone()).unwrap();
    let (cancel, task) = start(&inf);
    assert!(
        tokio::time::timeout(WAIT, reg.wait_for_sync())
            .await
            .unwrap(),
        "synced before the informer stopped"
    );
    let lists_before = server.requests().iter().filter(|r| r.is_list()).count();
    wait_until("the watch", || server.active_watches() == 1).await;
    server.faults().expire_open_watches();
    tokio::time::timeout(WAIT, watch_failed.notified())
        .await
        .unwrap();
    wait_until("a relist", || {
        server.requests().iter().filter(|r| r.is_list()).count() > lists_before
    })
    .await;
    // The second sentinel is created after the first was delivered, so its delta is queued
    // after every Replaced delta of the relist: anything the relist produced arrives before it.
    w.create("sentinel-1", "0").await;
    rec.wait_for("sentinel 1", |e| {
        e.iter().any(|e| e.key() == "default/sentinel-1")
    })
    .await;
    w.create("sentinel-2", "0").await;
    let events = rec
        .wait_for("sentinel 2", |e| {
            e.iter().any(|e| e.key() == "default/sentinel-2")
        })
        .await;
    assert_eq!(
        events.len(),
        12,
        "H4: unchanged objects stayed silent: {:?}",
        &events[10..]
    );
    assert!(events.iter().all(|e| matches!(e, Ev::Add { .. })));
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn x7_m8_relist_keeps_the_cached_arc_of_every_unchanged_object() {
    let Synced {
        server,
        w,
        inf,
        rec,
        cancel,
        task,
    } = seeded_and_synced(20, 7).await;
    let before: BTreeMap<String, Arc<ConfigMap>> = inf
        .indexer()
        .entries()
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(before.len(), 20);

    // Break the watch while LISTs stall, change one object while the relist waits, then let it
    // answer: the relist carries 19 unchanged objects and one changed one.
    wait_until("the watch", || server.active_watches() == 1).await;
    let lists_before = server.requests().iter().filter(|r| r.is_list()).count();
    server.faults().stall_list(true);
    server.faults().expire_open_watches();
    // Once the server has ended the watch, no event reaches the informer but through the
    // relist, which (stalled) reads the state only after `stall_list(false)`.
    wait_until("the watch to end", || server.active_watches() == 0).await;
    let changed = w.set("cm-0007", "1").await;
    let changed_rv = changed.metadata.resource_version.clone().unwrap();
    server.faults().stall_list(false);
    rec.wait_for("the changed object", |e| {
        e.iter()
            .any(|e| matches!(e, Ev::Update { key, new_rv, .. } if key == "default/cm-0007" && *new_rv == changed_rv))
    })
    .await;
    assert!(server.requests().iter().filter(|r| r.is_list()).count() > lists_before);
    // Everything the relist queued is processed before a later object's Added.
    w.create("sentinel", "0").await;
    rec.wait_for("the sentinel", |e| {
        e.iter().any(|e| e.key() == "default/sentinel")
    })
    .await;

    let after = inf.indexer();
    for (key, old) in &before {
        let now = after.get_by_key(key).expect("still cached");
        if key == "default/cm-0007" {
            assert!(
                !Arc::ptr_eq(old, &now),
                "the changed object is the new decode"
            );
            assert_eq!(now.metadata.resource_version.as_ref(), Some(&changed_rv));
        } else {
            assert!(
                Arc::ptr_eq(old, &now),
                "{key}: an unchanged object keeps its cached Arc across the relist (X7, M8)"
            );
        }
    }
    stop(cancel, task).await;
}
