//! Reflector WATCH behaviour against informer-testserver over real HTTP: R9, R12, R13, malformed lines and cut chunks.

mod reflector_support;

use std::time::Duration;

use http::StatusCode;
use informer_runtime::reflector::{BackoffConfig, ReflectorConfig};
use informer_testserver::{FaultTarget, TestServer};
use reflector_support::*;

/// Starts a reflector over `n` objects, waits for the list and the first watch, and makes the watch
/// deliver one event (so a close is never a "very short watch", R10). Returns the reflector.
async fn synced_with_event(server: &TestServer, config: ReflectorConfig) -> Running {
    seed(server, 3);
    let r = start(server, config);
    wait_replaces(&r.store, 1).await;
    wait_log(server, "the first watch", |log| {
        log.iter().any(|x| x.is_watch())
    })
    .await;
    server.create(&cm("live")).expect("create");
    r.store
        .wait_for("the live add", WAIT, |s| {
            s.ops.contains(&Op::Add("default/live".into()))
        })
        .await;
    r
}

#[tokio::test]
async fn r9_server_ends_watch_rewatch_at_last_rv_without_list() {
    let server = TestServer::start().await.expect("server");
    let r = synced_with_event(&server, fast_config()).await;
    let last = r.handle.last_sync_resource_version().expect("rv");
    server.faults().close_open_watches();
    wait_log(&server, "a second watch", |log| {
        log.iter().filter(|x| x.is_watch()).count() >= 2
    })
    .await;
    let w = watches(&server);
    assert_eq!(
        w[1].query.resource_version.as_deref(),
        Some(last.as_str()),
        "R9: last RV"
    );
    assert_eq!(lists(&server).len(), 1, "R9: no relist");
    assert_eq!(r.handle.counters().rewatches, 1);
    // The re-established watch delivers live events.
    server.create(&cm("after")).expect("create");
    r.store
        .wait_for("the add after rewatch", WAIT, |s| {
            s.objects.contains_key("default/after")
        })
        .await;
    r.stop().await;
}

#[tokio::test]
async fn r12_watch_410_relists_at_last_rv_and_drops_objects_deleted_meanwhile() {
    let server = TestServer::start().await.expect("server");
    // A 1 s backoff leaves time to delete an object while no watch is open.
    let config = ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_secs(1),
            jitter: 0.0,
            ..Default::default()
        },
        ..fast_config()
    };
    let r = synced_with_event(&server, config).await;
    let last = r.handle.last_sync_resource_version().expect("rv");
    // The re-watch after a server close is answered 410 (R12).
    server
        .faults()
        .fail_next(FaultTarget::Watch, StatusCode::GONE, None, 1);
    server.faults().close_open_watches();
    wait_log(&server, "the 410 watch", |log| {
        log.iter()
            .any(|x| x.is_watch() && x.status == StatusCode::GONE)
    })
    .await;
    // No watch is open now: this delete is only visible to a relist.
    server
        .delete::<k8s_openapi::api::core::v1::ConfigMap>(Some("default"), "cm-0001")
        .expect("delete");
    wait_replaces(&r.store, 2).await;

    let lists = lists(&server);
    assert_eq!(lists.len(), 2, "{:#?}", summary(&lists));
    assert_eq!(
        lists[1].query.resource_version.as_deref(),
        Some(last.as_str()),
        "R12: last RV, not \"\""
    );
    assert_eq!(
        lists[1].query.limit, None,
        "R3: a relist at a concrete RV is unpaged"
    );
    r.store.with(|s| {
        assert!(
            !s.objects.contains_key("default/cm-0001"),
            "deleted meanwhile: gone after replace"
        );
        assert!(s.objects.contains_key("default/live"));
    });
    assert_eq!(r.handle.counters().relists, 1);
    r.stop().await;
}

#[tokio::test]
async fn r12_error_event_410_relists_at_last_rv() {
    let server = TestServer::start().await.expect("server");
    let r = synced_with_event(&server, fast_config()).await;
    let last = r.handle.last_sync_resource_version().expect("rv");
    server.faults().expire_open_watches();
    wait_replaces(&r.store, 2).await;
    let lists = lists(&server);
    assert_eq!(lists.len(), 2, "{:#?}", summary(&lists));
    assert_eq!(
        lists[1].query.resource_version.as_deref(),
        Some(last.as_str())
    );
    assert!(
        r.errors().iter().any(|e| e.contains("410")),
        "{:?}",
        r.errors()
    );
    r.stop().await;
}

#[tokio::test]
async fn r13_429_on_watch_start_rewatches_same_rv_without_list() {
    let server = TestServer::start().await.expect("server");
    // Retry-After is capped at the backoff maximum (R1): raise it above 1 s.
    let mut config = fast_config();
    config.backoff.cap = Duration::from_secs(2);
    let r = synced_with_event(&server, config).await;
    let last = r.handle.last_sync_resource_version().expect("rv");
    server.faults().fail_next(
        FaultTarget::Watch,
        StatusCode::TOO_MANY_REQUESTS,
        Some(1),
        1,
    );
    server.faults().close_open_watches();
    wait_log(&server, "the watch after the 429", |log| {
        let w: Vec<_> = log.iter().filter(|x| x.is_watch()).collect();
        w.len() >= 3 && w[2].status == StatusCode::OK
    })
    .await;
    let w = watches(&server);
    assert_eq!(w[1].status, StatusCode::TOO_MANY_REQUESTS);
    for x in &w[1..3] {
        assert_eq!(
            x.query.resource_version.as_deref(),
            Some(last.as_str()),
            "R13: same RV"
        );
    }
    let gap = w[2].time.duration_since(w[1].time).unwrap_or_default();
    assert!(
        gap >= Duration::from_millis(950),
        "Retry-After 1 s is the minimum delay: {gap:?}"
    );
    assert_eq!(lists(&server).len(), 1, "R13: no relist");
    r.stop().await;
}

#[tokio::test]
async fn malformed_watch_line_is_surfaced_and_relist_loses_nothing() {
    let server = TestServer::start().await.expect("server");
    let r = synced_with_event(&server, fast_config()).await;
    server.faults().malformed_next_watch_event();
    server.create(&cm("garbled")).expect("create");
    // The garbled line is a decode error (R14 window 0 → R15): a new cycle relists at the last RV,
    // and the object whose event was lost arrives through the replace.
    r.store
        .wait_for("the garbled object", WAIT, |s| {
            s.objects.contains_key("default/garbled")
        })
        .await;
    assert!(
        // Protobuf for built-in kinds (T1): the garbled frame is a protobuf decode error.
        r.errors()
            .iter()
            .any(|e| e.contains("Decode") || e.contains("Protobuf")),
        "{:?}",
        r.errors()
    );
    assert_eq!(
        lists(&server).len(),
        2,
        "{:#?}",
        summary(&server.requests())
    );
    server.create(&cm("later")).expect("create");
    r.store
        .wait_for("a later add", WAIT, |s| {
            s.objects.contains_key("default/later")
        })
        .await;
    r.stop().await;
}

#[tokio::test]
async fn cut_chunk_is_surfaced_and_rewatch_loses_nothing() {
    let server = TestServer::start().await.expect("server");
    let r = synced_with_event(&server, fast_config()).await;
    let last = r.handle.last_sync_resource_version().expect("rv");
    server.faults().cut_next_watch_chunk();
    server.create(&cm("cut")).expect("create");
    // The broken body ends the watch like a close (R9): re-watch at the RV before the cut
    // event, which the server replays.
    r.store
        .wait_for("the cut object", WAIT, |s| {
            s.ops.contains(&Op::Add("default/cut".into()))
        })
        .await;
    assert!(!r.errors().is_empty(), "the cut is reported");
    let w = watches(&server);
    assert!(w.len() >= 2, "{:#?}", summary(&server.requests()));
    assert_eq!(w[1].query.resource_version.as_deref(), Some(last.as_str()));
    assert_eq!(lists(&server).len(), 1, "no relist");
    r.stop().await;
}

#[tokio::test]
async fn r10_very_short_empty_watch_ends_the_cycle() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 2);
    let r = start(&server, fast_config());
    wait_replaces(&r.store, 1).await;
    wait_log(&server, "the first watch", |log| {
        log.iter().any(|x| x.is_watch())
    })
    .await;
    server.faults().close_open_watches();
    // The watch ended at once with no events: a new cycle relists (after backoff).
    wait_replaces(&r.store, 2).await;
    assert!(
        r.errors().iter().any(|e| e.contains("VeryShortWatch")),
        "{:?}",
        r.errors()
    );
    assert_eq!(lists(&server).len(), 2);
    r.stop().await;
}

#[tokio::test]
async fn r14_internal_error_inside_the_window_rewatches_at_once() {
    let server = TestServer::start().await.expect("server");
    let config = ReflectorConfig {
        max_internal_error_retry: Duration::from_secs(30),
        ..fast_config()
    };
    let r = synced_with_event(&server, config).await;
    server.faults().fail_next(
        FaultTarget::Watch,
        StatusCode::INTERNAL_SERVER_ERROR,
        None,
        1,
    );
    server.faults().close_open_watches();
    wait_log(&server, "the watch after the 500", |log| {
        let w: Vec<_> = log.iter().filter(|x| x.is_watch()).collect();
        w.len() >= 3 && w[2].status == StatusCode::OK
    })
    .await;
    assert_eq!(lists(&server).len(), 1, "R14: no relist inside the window");
    r.stop().await;
}

#[tokio::test]
async fn r15_internal_error_without_window_relists() {
    let server = TestServer::start().await.expect("server");
    let r = synced_with_event(&server, fast_config()).await;
    server.faults().fail_next(
        FaultTarget::Watch,
        StatusCode::INTERNAL_SERVER_ERROR,
        None,
        1,
    );
    server.faults().close_open_watches();
    wait_replaces(&r.store, 2).await;
    assert_eq!(
        lists(&server).len(),
        2,
        "R14 window 0 → R15: a new cycle relists"
    );
    r.stop().await;
}

#[tokio::test]
async fn closed_store_stops_the_reflector() {
    let server = TestServer::start().await.expect("server");
    let r = synced_with_event(&server, fast_config()).await;
    r.store.close();
    server.create(&cm("too-late")).expect("create");
    r.ended().await;
}
