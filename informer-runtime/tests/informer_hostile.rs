//! Informers against a hostile or broken API server (decision record 09): answers that are
//! well-formed HTTP but break the API contract must never reach the cache as data (M14), and
//! failures must never freeze the informer or leave a waiter hanging.
//!
//! Run with `cargo test -p informer-runtime --test informer_hostile`.

mod informer_support;

use informer_support::*;
use informer_testserver::{FaultTarget, HostileResponse, TestServer};

/// The LIST requests the server has answered so far.
fn list_log(server: &TestServer) -> Vec<informer_testserver::RequestRecord> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.is_list())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn m14_r11_relist_answered_200_with_a_410_status_is_a_410_and_deletes_nothing() {
    let s = seeded_and_synced(5, 500).await;
    wait_until("the watch", || s.server.active_watches() == 1).await;
    // The relist after the watch's 410 (R12) gets HTTP 200 with a 410 Status body.
    s.server.faults().hostile_next(
        FaultTarget::List,
        HostileResponse::ListStatusBody {
            code: 410,
            reason: "Expired".into(),
        },
        1,
    );
    s.server.faults().expire_open_watches();
    // Handled as a 410 on LIST, the next LIST goes at once at "" (R11). Read as an empty list
    // instead, the cache is wiped: every object gets a delete.
    wait_until("a quorum relist or a delete", || {
        list_log(&s.server).len() >= 3
            || s.rec
                .events()
                .iter()
                .any(|e| matches!(e, Ev::Delete { .. }))
    })
    .await;
    let deletes: Vec<Ev> = s
        .rec
        .events()
        .into_iter()
        .filter(|e| matches!(e, Ev::Delete { .. }))
        .collect();
    assert!(deletes.is_empty(), "M14: live objects deleted: {deletes:?}");
    let lists = list_log(&s.server);
    assert_eq!(
        lists[2].query.resource_version.as_deref(),
        Some(""),
        "R11: a 410 Status relists at \"\""
    );
    wait_until("the relist stored", || {
        s.inf
            .reflector_handle()
            .is_some_and(|h| h.counters().relists >= 1)
    })
    .await;
    assert_eq!(s.inf.indexer().len(), 5);
    stop(s.cancel, s.task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn m14_d7_first_list_answered_200_without_items_does_not_sync_an_empty_cache() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 5).await;
    server
        .faults()
        .hostile_next(FaultTarget::List, HostileResponse::ListWithoutItems, 1);
    let inf = informer(server.client(), |_| {});
    let rec = Recorder::new();
    let reg = inf.add_event_handler(rec.clone()).expect("handler");
    let (cancel, task) = start(&inf);
    assert_synced(reg.wait_for_sync()).await;
    // H6: synced means this handler has returned from every initial add.
    assert_eq!(
        inf.indexer().len(),
        5,
        "M14: synced on a list without items: {:?}",
        rec.events()
    );
    assert!(
        rec.events()
            .iter()
            .all(|e| matches!(e, Ev::Add { initial: true, .. })),
        "{:?}",
        rec.events()
    );
    let lists = list_log(&server);
    assert_eq!(lists.len(), 2, "the bad answer, then a real list");
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn m17_list_item_without_a_name_is_dropped_alone() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 5).await;
    server.faults().hostile_next(
        FaultTarget::List,
        HostileResponse::ListExtraItem(
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"default","resourceVersion":"1"},"data":{"k":"v"}}"#
                .into(),
        ),
        1,
    );
    let inf = informer(server.client(), |_| {});
    let rec = Recorder::new();
    let reg = inf.add_event_handler(rec.clone()).expect("handler");
    let (cancel, task) = start(&inf);
    // Rejecting the whole list (while its RV is recorded) leaves the informer unsynced and empty.
    let synced = tokio::time::timeout(WAIT, reg.wait_for_sync()).await;
    assert!(synced.is_ok(), "never synced: {:?}", rec.events());
    assert_eq!(inf.indexer().len(), 5, "the five good items are cached");
    let counters = inf.reflector_handle().expect("running").counters();
    assert_eq!(counters.invalid_objects, 1, "the bad item is counted");
    assert_eq!(list_log(&server).len(), 1, "no relist needed");
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn h16_h6_wait_for_sync_returns_false_when_the_informer_stops_before_it_synced() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 3).await;
    server
        .faults()
        .forbid(informer_testserver::GroupResource::new("", "configmaps"));
    let inf = informer(server.client(), |_| {});
    let reg = inf.add_event_handler(Recorder::new()).expect("handler");
    let stream = inf.event_stream().expect("stream");
    let (cancel, task) = start(&inf);
    let waiters = {
        let (reg, sreg) = (reg.clone(), stream.registration().clone());
        tokio::spawn(async move { (reg.wait_for_sync().await, sreg.wait_for_sync().await) })
    };
    wait_until("two forbidden LISTs", || {
        list_log(&server)
            .iter()
            .filter(|r| r.status == http::StatusCode::FORBIDDEN)
            .count()
            >= 2
    })
    .await;
    stop(cancel, task).await;
    let res = tokio::time::timeout(WAIT, waiters).await;
    let Ok(Ok((handler, stream_reg))) = res else {
        panic!("wait_for_sync still waiting after stop: {res:?}");
    };
    assert!(!handler, "the handler registration never synced");
    assert!(!stream_reg, "the stream registration never synced");
    assert!(!reg.has_synced());
    // A registration made after the stop cannot exist (H14); one removed before the sync
    // answers at once too.
    drop(stream);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn h16_h7_wait_for_sync_returns_false_when_the_registration_is_removed_before_sync() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    server.faults().stall_list(true);
    let inf = informer(server.client(), |_| {});
    let reg = inf.add_event_handler(Recorder::new()).expect("handler");
    let (cancel, task) = start(&inf);
    let waiter = {
        let reg = reg.clone();
        tokio::spawn(async move { reg.wait_for_sync().await })
    };
    // The first LIST is held by the server, so the informer cannot sync before the removal.
    wait_until("the informer started", || inf.is_started()).await;
    inf.remove_event_handler(&reg);
    let res = tokio::time::timeout(WAIT, waiter).await;
    assert!(matches!(res, Ok(Ok(false))), "removed before sync: {res:?}");
    server.faults().stall_list(false);
    stop(cancel, task).await;
}

/// A transform that panics on objects named `bad_name`.
fn panicking_transform(
    bad_name: &'static str,
) -> impl Fn(&mut k8s_openapi::api::core::v1::ConfigMap) + Send + Sync + 'static {
    move |cm| {
        if cm.metadata.name.as_deref() == Some(bad_name) {
            panic!("transform cannot handle {bad_name}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn m17_panicking_transform_on_the_list_drops_only_that_object() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 5).await;
    let inf = informer(server.client(), |_| {});
    inf.set_transform(panicking_transform("cm-0002"))
        .expect("before start");
    let rec = Recorder::new();
    let reg = inf.add_event_handler(rec.clone()).expect("handler");
    let (cancel, task) = start(&inf);
    let synced = tokio::time::timeout(WAIT, reg.wait_for_sync()).await;
    assert!(
        matches!(synced, Ok(true)),
        "a panicking transform must not stop the list: {synced:?}, lists: {}",
        list_log(&server).len()
    );
    assert_eq!(inf.indexer().len(), 4);
    assert!(inf.indexer().get_by_key("default/cm-0002").is_none());
    let counters = inf.reflector_handle().expect("running").counters();
    assert_eq!(counters.transform_panics, 1);
    assert_eq!(list_log(&server).len(), 1, "not retried");
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn m17_panicking_transform_on_a_watch_event_drops_only_that_event() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 2).await;
    let inf = informer(server.client(), |_| {});
    inf.set_transform(panicking_transform("bad"))
        .expect("before start");
    let rec = Recorder::new();
    let reg = inf.add_event_handler(rec.clone()).expect("handler");
    let (cancel, task) = start(&inf);
    assert_synced(reg.wait_for_sync()).await;
    wait_until("the watch", || server.active_watches() == 1).await;
    w.create("bad", "1").await;
    w.create("good", "1").await;
    // The reflector outlives the panic: the next event still arrives.
    rec.wait_for("the add after the panic", |e| {
        e.iter().any(|e| e.key() == "default/good")
    })
    .await;
    assert!(inf.indexer().get_by_key("default/bad").is_none());
    let counters = inf.reflector_handle().expect("running").counters();
    assert_eq!(counters.transform_panics, 1);
    assert_eq!(list_log(&server).len(), 1, "no relist");
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn m17_a_watched_object_without_a_name_is_dropped_before_the_transform() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, 2).await;
    let rv = server.current_resource_version().to_string();
    let object = |name: Option<&str>| {
        let mut meta = serde_json::json!({ "namespace": "default", "resourceVersion": rv });
        if let Some(name) = name {
            meta["name"] = name.into();
        }
        serde_json::json!({ "apiVersion": "v1", "kind": "ConfigMap", "metadata": meta })
    };
    let event = |kind: &str, object: serde_json::Value| {
        serde_json::json!({ "type": kind, "object": object }).to_string()
    };
    // The informer's first watch (after its LIST) gets two events of an object without a
    // name, then a good one; then the stream ends normally (R9).
    server.faults().hostile_next(
        FaultTarget::Watch,
        HostileResponse::WatchEvents {
            lines: vec![
                event("ADDED", object(None)),
                event("MODIFIED", object(Some(""))),
                event("ADDED", object(Some("after-the-nameless"))),
            ],
            cut: String::new(),
        },
        1,
    );
    let inf = informer(server.client(), |_| {});
    let unnamed = Arc::new(AtomicUsize::new(0));
    let seen = unnamed.clone();
    inf.set_transform(move |cm: &mut k8s_openapi::api::core::v1::ConfigMap| {
        if cm.metadata.name.as_deref().is_none_or(str::is_empty) {
            seen.fetch_add(1, Ordering::SeqCst);
        }
    })
    .expect("before start");
    let rec = Recorder::new();
    inf.add_event_handler(rec.clone()).expect("handler");
    let (cancel, task) = start(&inf);
    rec.wait_for("the event after the nameless ones", |e| {
        e.iter().any(|e| e.key() == "default/after-the-nameless")
    })
    .await;
    let counters = inf.reflector_handle().expect("running").counters();
    assert_eq!(
        counters.invalid_objects, 2,
        "M17: each nameless event counted once"
    );
    assert_eq!(counters.transform_panics, 0);
    assert_eq!(
        unnamed.load(Ordering::SeqCst),
        0,
        "M17: user code never sees an object that cannot be cached"
    );
    assert!(rec.events().iter().all(|e| !e.key().is_empty()));
    assert_eq!(
        inf.indexer().len(),
        3,
        "the two seeded and the good event's"
    );
    assert_eq!(list_log(&server).len(), 1, "the drops relist nothing");
    stop(cancel, task).await;
}
