//! Integration tests through the test server for R8 and R16, which the
//! server could not produce before `HostileResponse::WatchEvents`: a watch answered with events
//! of another kind or a `Table` (R16), and a watch-list stream whose synthetic ADDED events carry
//! resourceVersions and end before the initial-events-end bookmark (R8); and the one error
//! table's answer to a watch-list stream that breaks mid-line (R20).
//!
//! Run with `cargo test -p informer-runtime --test rules_r8_r16`.

mod informer_support;

use std::sync::Arc;

use informer_runtime::reflector::InitialListStrategy;
use informer_support::*;
use informer_testserver::{FaultTarget, HostileResponse, TestServer};
use parking_lot::Mutex;

/// One raw watch event line's JSON: `{"type": kind, "object": object}`.
fn event(kind: &str, object: serde_json::Value) -> String {
    serde_json::json!({ "type": kind, "object": object }).to_string()
}

fn configmap_json(name: &str, rv: u64) -> serde_json::Value {
    serde_json::json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": { "name": name, "namespace": "default", "resourceVersion": rv.to_string(), "uid": format!("uid-{name}") },
        "data": { "v": "0" }
    })
}

/// A streaming-list informer over every ConfigMap, started and synced.
async fn streaming_informer_synced(
    server: &TestServer,
) -> (
    informer_runtime::informer::SharedIndexInformer<k8s_openapi::api::core::v1::ConfigMap>,
    tokio_util::sync::CancellationToken,
    tokio::task::JoinHandle<()>,
) {
    let inf = informer(server.client(), |c| {
        c.reflector.strategy = InitialListStrategy::StreamingList;
    });
    let (cancel, task) = start(&inf);
    assert_synced(inf.wait_for_sync()).await;
    (inf, cancel, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r16_events_of_another_kind_or_a_table_are_dropped_and_the_stream_goes_on() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    server.create(&cm("default", "a", "0")).expect("create");
    let rv = server.current_resource_version();
    // The informer's first watch (after its LIST) gets: a Secret, a Table, then a ConfigMap;
    // then the stream ends normally (R9).
    let secret = serde_json::json!({
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": { "name": "intruder", "namespace": "default", "resourceVersion": rv.to_string() },
        "data": { "password": "c2VjcmV0" }
    });
    let table = serde_json::json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": { "resourceVersion": rv.to_string() },
        "columnDefinitions": [],
        "rows": []
    });
    server.faults().hostile_next(
        FaultTarget::Watch,
        HostileResponse::WatchEvents {
            lines: vec![
                event("ADDED", secret),
                event("ADDED", table),
                event("ADDED", configmap_json("after-the-intruders", rv)),
            ],
            cut: String::new(),
        },
        1,
    );
    let inf = informer(server.client(), |_| {});
    let errors = Arc::new(Mutex::new(Vec::<String>::new()));
    let errs = errors.clone();
    inf.set_watch_error_handler(move |e| {
        if matches!(e, informer_runtime::reflector::Error::UnexpectedObject(_)) {
            errs.lock().push(e.to_string());
        }
    })
    .expect("not started");
    let rec = Recorder::with_indexer(inf.indexer());
    inf.add_event_handler(rec.clone()).expect("handler");
    let (cancel, task) = start(&inf);

    // The good event behind the two bad ones arrived on the same stream.
    rec.wait_for("the ConfigMap after the intruders", |e| {
        e.iter().any(|e| e.key() == "default/after-the-intruders")
    })
    .await;
    wait_until("both drops reported", || errors.lock().len() == 2).await;
    let reported = errors.lock().clone();
    assert!(
        reported.iter().any(|e| e.contains("Secret"))
            && reported.iter().any(|e| e.contains("Table")),
        "R16: each dropped event is reported with what arrived: {reported:?}"
    );
    assert!(
        !inf.indexer().contains_key("default/intruder"),
        "R16: the Secret never reaches the ConfigMap cache"
    );
    assert!(
        rec.events()
            .iter()
            .all(|e| e.key() != "default/intruder" && !e.key().is_empty()),
        "R16: no handler saw either dropped event: {:?}",
        rec.events()
    );
    assert_eq!(inf.indexer().len(), 2, "a and after-the-intruders");
    // The dropped events ended nothing: the hostile stream ended normally and the informer
    // re-watched without a relist (R9).
    wait_until("the re-watch", || {
        server.requests().iter().filter(|r| r.is_watch()).count() >= 2
    })
    .await;
    assert_eq!(
        server.requests().iter().filter(|r| r.is_list()).count(),
        1,
        "R16 drops are not errors that relist"
    );
    stop(cancel, task).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r8_rvs_of_synthetic_added_events_are_never_recorded() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    for name in ["a", "b", "c"] {
        server.create(&cm("default", name, "0")).expect("create");
    }
    // The watch-list stream (a watch at RV "", R17) sends synthetic ADDED events with
    // resourceVersions far ahead of the server's, then ends before the initial-events-end
    // bookmark. Recording either RV would send the fallback LIST, or the next watch, there.
    let (fake_a, fake_b) = (900_000_u64, 900_001_u64);
    server.faults().hostile_next(
        FaultTarget::Watch,
        HostileResponse::WatchEvents {
            lines: vec![
                event("ADDED", configmap_json("ghost-1", fake_a)),
                event("ADDED", configmap_json("ghost-2", fake_b)),
            ],
            cut: String::new(),
        },
        1,
    );
    let (inf, cancel, task) = streaming_informer_synced(&server).await;
    wait_until("the watch after the fallback list", || {
        server.requests().iter().filter(|r| r.is_watch()).count() >= 2
    })
    .await;
    let log = server.requests();
    let fakes = [fake_a.to_string(), fake_b.to_string()];
    let lists: Vec<_> = log.iter().filter(|r| r.is_list()).collect();
    assert_eq!(
        lists.len(),
        1,
        "R20: the stream ended without its bookmark: one paged LIST"
    );
    let list_rv = lists[0].query.resource_version.clone().unwrap_or_default();
    assert!(
        list_rv == "0" || list_rv.is_empty(),
        "R8: the fallback LIST is at {list_rv:?}, an RV taken from an ADDED event"
    );
    for w in log.iter().filter(|r| r.is_watch()) {
        let rv = w.query.resource_version.clone().unwrap_or_default();
        assert!(
            !fakes.contains(&rv),
            "R8: a watch resumed at {rv}, an ADDED event's RV"
        );
    }
    // The cache is the server's: the ghosts of the abandoned stream were never stored.
    assert_eq!(
        cache_state(&inf.indexer()),
        server_state(server.client()).await
    );
    assert_ne!(
        inf.last_sync_resource_version().as_deref(),
        Some(fake_b.to_string().as_str())
    );
    stop(cancel, task).await;
}

/// The one error table (R9, R20): a watch-list stream whose connection breaks mid-line
/// before the initial-events-end bookmark has ended, as a broken plain watch has (R9): R20
/// applies, a paged LIST in the same cycle. Before the table this path started a new cycle
/// after a backoff delay and streamed again, while a broken plain watch re-watched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r20_a_stream_broken_before_its_bookmark_is_a_close_and_falls_back_in_the_same_cycle() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    for name in ["a", "b"] {
        server.create(&cm("default", name, "0")).expect("create");
    }
    let rv = server.current_resource_version();
    server.faults().hostile_next(
        FaultTarget::Watch,
        HostileResponse::WatchEvents {
            lines: vec![event("ADDED", configmap_json("a", rv))],
            cut: "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Conf".to_string(),
        },
        1,
    );
    let (inf, cancel, task) = streaming_informer_synced(&server).await;
    let counters = inf.reflector_handle().expect("running").counters();
    assert_eq!(
        counters.cycles, 1,
        "R20: in the same cycle, without a backoff delay"
    );
    assert_eq!(counters.watch_list_fallbacks, 1);
    assert_eq!(
        server.requests().iter().filter(|r| r.is_list()).count(),
        1,
        "one paged LIST"
    );
    assert_eq!(
        cache_state(&inf.indexer()),
        server_state(server.client()).await
    );
    stop(cancel, task).await;
}
