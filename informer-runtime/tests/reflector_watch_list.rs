//! Reflector watch-list (streaming initial list) against informer-testserver over real HTTP: R17–R20.

mod reflector_support;

use informer_runtime::reflector::{InitialListStrategy, ReflectorConfig};
use informer_testserver::TestServer;
use reflector_support::*;

fn streaming() -> ReflectorConfig {
    ReflectorConfig {
        strategy: InitialListStrategy::StreamingList,
        ..fast_config()
    }
}

#[tokio::test]
async fn r21_default_strategy_is_list_watch() {
    assert_eq!(
        ReflectorConfig::default().strategy,
        InitialListStrategy::ListWatch
    );
}

#[tokio::test]
async fn r17_watch_list_replaces_once_then_live_events_on_the_same_connection() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 5);
    let r = start(&server, streaming());
    wait_replaces(&r.store, 1).await;
    r.store.with(|s| {
        assert_eq!(s.objects.len(), 5);
        assert!(
            matches!(&s.ops[0], Op::Replace { items: 5, .. }),
            "initial events are collected, not added one by one: {:?}",
            s.ops
        );
    });
    server.create(&cm("live")).expect("create");
    r.store
        .wait_for("the live add", WAIT, |s| {
            s.ops.contains(&Op::Add("default/live".into()))
        })
        .await;

    assert!(lists(&server).is_empty(), "no LIST with watch-list");
    let w = watches(&server);
    assert_eq!(w.len(), 1, "R17: live events arrive on the same connection");
    assert_eq!(w[0].query.send_initial_events, Some(true));
    assert_eq!(
        w[0].query.resource_version_match.as_deref(),
        Some("NotOlderThan")
    );
    assert_eq!(
        w[0].query.resource_version.as_deref(),
        Some(""),
        "R17: consistent read"
    );
    assert!(w[0].query.allow_watch_bookmarks);
    assert_eq!(r.store.with(|s| s.replaces()), 1, "exactly one replace");
    assert_eq!(r.handle.counters().watch_list_fallbacks, 0);
    r.stop().await;
}

#[tokio::test]
async fn r18_resumed_watch_does_not_send_initial_events_again() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    let r = start(&server, streaming());
    wait_replaces(&r.store, 1).await;
    server.create(&cm("live")).expect("create");
    r.store
        .wait_for("the live add", WAIT, |s| {
            s.objects.contains_key("default/live")
        })
        .await;
    let last = r.handle.last_sync_resource_version().expect("rv");
    server.faults().close_open_watches();
    wait_log(&server, "the resumed watch", |log| {
        log.iter().filter(|x| x.is_watch()).count() >= 2
    })
    .await;
    let w = watches(&server);
    assert_eq!(w[1].query.send_initial_events, None, "R18");
    assert_eq!(w[1].query.resource_version_match, None);
    assert_eq!(w[1].query.resource_version.as_deref(), Some(last.as_str()));
    server.create(&cm("after")).expect("create");
    r.store
        .wait_for("the add after resume", WAIT, |s| {
            s.objects.contains_key("default/after")
        })
        .await;
    assert_eq!(
        r.store.with(|s| s.replaces()),
        1,
        "no duplicated initial state (M13)"
    );
    r.stop().await;
}

/// R20: a busy resource's live events must not reset the wait for a withheld
/// `initial-events-end` bookmark; the fallback comes about one idle timeout (1 s here) after
/// the snapshot, not after the watch timeout (5-10 min).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r20_live_events_do_not_extend_the_wait_for_a_withheld_end_bookmark() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 4);
    server.faults().suppress_initial_events_end(true);
    let r = start(&server, streaming());
    assert!(server.wait_for_active_watches(1, WAIT).await);
    let stop = tokio_util::sync::CancellationToken::new();
    let writer = tokio::spawn({
        let api = kube::Api::<k8s_openapi::api::core::v1::ConfigMap>::namespaced(
            server.client(),
            "default",
        );
        let stop = stop.clone();
        async move {
            // A live change every 100 ms, ten times per idle timeout.
            let mut tick = tokio::time::interval(std::time::Duration::from_millis(100));
            for i in 0u64.. {
                tokio::select! {
                    () = stop.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let patch = serde_json::json!({ "data": { "k": i.to_string() } });
                let pp = kube::api::PatchParams::default();
                let _ = api
                    .patch("cm-0000", &pp, &kube::api::Patch::Merge(&patch))
                    .await;
            }
        }
    });
    let synced = tokio::time::timeout(
        std::time::Duration::from_secs(8),
        wait_replaces(&r.store, 1),
    )
    .await;
    stop.cancel();
    writer.await.expect("writer");
    assert!(
        synced.is_ok(),
        "still waiting for the end bookmark while live events flow"
    );
    assert_eq!(r.handle.counters().watch_list_fallbacks, 1);
    assert_eq!(lists(&server).len(), 1, "the paged LIST fallback (R20)");
    r.stop().await;
}

#[tokio::test]
async fn r20_suppressed_end_bookmark_falls_back_to_paged_list_after_idle_timeout() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 4);
    server.faults().suppress_initial_events_end(true);
    let started = tokio::time::Instant::now();
    let r = start(&server, streaming());
    wait_replaces(&r.store, 1).await;
    let waited = started.elapsed();
    assert!(
        waited >= std::time::Duration::from_millis(900),
        "idle timeout is 1 s: {waited:?}"
    );
    r.store.with(|s| assert_eq!(s.objects.len(), 4));

    let lists = lists(&server);
    assert_eq!(lists.len(), 1, "{:#?}", summary(&lists));
    assert_eq!(lists[0].query.limit, Some(500), "paged LIST (R3)");
    assert_eq!(r.handle.counters().watch_list_fallbacks, 1);
    assert!(
        r.errors().iter().any(|e| e.contains("WatchListIncomplete")),
        "{:?}",
        r.errors()
    );

    // The informer stays on paged LIST: a relist after a 410 uses LIST, not another stream.
    wait_log(&server, "the watch after the list", |log| {
        log.iter().filter(|x| x.is_watch()).count() >= 2
    })
    .await;
    server.faults().expire_open_watches();
    wait_replaces(&r.store, 2).await;
    let w = watches(&server);
    assert_eq!(
        w.iter()
            .filter(|x| x.query.send_initial_events == Some(true))
            .count(),
        1,
        "{:#?}",
        summary(&server.requests())
    );
    assert_eq!(lists_len(&server), 2);
    r.stop().await;
}

fn lists_len(server: &TestServer) -> usize {
    lists(server).len()
}

#[tokio::test]
async fn r19_unsupported_watch_list_uses_paged_list_for_good() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    server.faults().fail_next(
        informer_testserver::FaultTarget::Watch,
        http::StatusCode::UNPROCESSABLE_ENTITY,
        None,
        1,
    );
    let r = start(&server, streaming());
    wait_replaces(&r.store, 1).await;
    let l = lists(&server);
    assert_eq!(l.len(), 1, "R19: paged LIST in the same cycle");
    assert_eq!(l[0].query.limit, Some(500));
    assert_eq!(r.handle.counters().cycles, 1);
    assert_eq!(r.handle.counters().watch_list_fallbacks, 1);
    wait_log(&server, "the watch after the list", |log| {
        log.iter().filter(|x| x.is_watch()).count() >= 2
    })
    .await;
    assert_eq!(watches(&server)[1].query.send_initial_events, None);
    r.stop().await;
}

/// R19: an expired RV on a later cycle's watch-list marks the RV unavailable and retries the
/// stream at `""` (a consistent read), with no LIST.
#[tokio::test]
async fn r19_expired_watch_list_retries_the_stream_at_empty_rv() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    let r = start(&server, streaming());
    wait_replaces(&r.store, 1).await;
    assert!(server.wait_for_active_watches(1, WAIT).await);
    // The live stream expires (R12: a new cycle at the last RV), and that cycle's stream is
    // answered 410.
    server.faults().fail_next(
        informer_testserver::FaultTarget::Watch,
        http::StatusCode::GONE,
        None,
        1,
    );
    server.faults().expire_open_watches();
    wait_replaces(&r.store, 2).await;
    let w = watches(&server);
    assert_eq!(w.len(), 3, "{:#?}", summary(&server.requests()));
    assert_eq!(w[1].status, http::StatusCode::GONE);
    let expired_rv = w[1].query.resource_version.clone().unwrap_or_default();
    assert!(
        !expired_rv.is_empty() && expired_rv != "0",
        "R12: at the last RV"
    );
    assert_eq!(
        w[2].query.resource_version.as_deref(),
        Some(""),
        "R19: retried at \"\""
    );
    assert_eq!(w[2].query.send_initial_events, Some(true));
    assert!(lists(&server).is_empty(), "R19: no LIST");
    assert_eq!(r.handle.counters().watch_list_fallbacks, 0);
    r.stop().await;
}

/// R19: a non-retriable error on the watch-list falls back to a paged LIST in the same cycle.
#[tokio::test]
async fn r19_non_retriable_watch_list_error_falls_back_to_paged_list_in_the_same_cycle() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    server.faults().fail_next(
        informer_testserver::FaultTarget::Watch,
        http::StatusCode::FORBIDDEN,
        None,
        1,
    );
    let r = start(&server, streaming());
    wait_replaces(&r.store, 1).await;
    r.store.with(|s| assert_eq!(s.objects.len(), 3));
    let l = lists(&server);
    assert_eq!(l.len(), 1, "{:#?}", summary(&server.requests()));
    assert_eq!(l[0].query.limit, Some(500), "R3: paged");
    let counters = r.handle.counters();
    assert_eq!(counters.cycles, 1, "R19: within the same cycle");
    assert_eq!(counters.watch_list_fallbacks, 1);
    r.stop().await;
}
