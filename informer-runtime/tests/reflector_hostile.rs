//! The reflector against a hostile or broken API server over real HTTP (decision record 09): 2xx
//! answers that are not lists (M14), endless paging (M15), unbounded watch lines (M16), redirects,
//! ERROR events without a Status, and Retry-After.
//!
//! Run with `cargo test -p informer-runtime --test reflector_hostile`.

mod reflector_support;

use informer_runtime::list_watch::ListWatch;
use informer_testserver::{FaultTarget, HostileProtobuf, HostileResponse, TestServer};
use reflector_support::*;

/// Waits until the reflector has reported an error whose debug text contains `needle`.
async fn wait_error(r: &Running, needle: &str) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        if r.errors().iter().any(|e| e.contains(needle)) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for an error with {needle:?}; errors: {:#?}",
            r.errors()
        );
        // The error log has no change notification; the store's does not cover errors.
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn m14_list_of_another_kind_is_an_error_not_an_empty_list() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 4);
    server.faults().hostile_next(
        FaultTarget::List,
        HostileResponse::ListOfKind("PodList".into()),
        1,
    );
    let r = start(&server, fast_config());
    wait_replaces(&r.store, 1).await;
    let first = r.store.with(|s| s.ops[0].clone());
    assert!(
        matches!(first, Op::Replace { items: 4, .. }),
        "M14: the PodList was stored as a list: {first:?}"
    );
    wait_error(&r, "PodList").await;
    r.stop().await;
}

#[tokio::test]
async fn m15_repeated_continue_token_ends_the_list_with_an_error_and_backs_off() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 10);
    server.faults().hostile_next(
        FaultTarget::List,
        HostileResponse::EndlessContinue { same_token: true },
        usize::MAX,
    );
    let config = informer_runtime::reflector::ReflectorConfig {
        page_size: 4,
        ..fast_config()
    };
    let r = start(&server, config);
    wait_error(&r, "repeated").await;
    wait_log(&server, "the next cycle's first page", |log| {
        log.iter().filter(|x| x.is_list()).count() >= 3
    })
    .await;
    let lists = lists(&server);
    // Page 1, then page 2 whose token repeats page 1's: the list ends there.
    assert!(lists[0].query.continue_token.is_none());
    assert_eq!(
        lists[1].query.continue_token.as_deref(),
        Some("hostile-repeat")
    );
    assert!(
        lists[2].query.continue_token.is_none(),
        "M15: a new list, not page 3: {:#?}",
        summary(&lists)
    );
    let gap = lists[2]
        .time
        .duration_since(lists[1].time)
        .unwrap_or_default();
    assert!(
        gap >= std::time::Duration::from_millis(45),
        "R1: the next cycle after a backoff: {gap:?}"
    );
    assert_eq!(r.store.with(|s| s.replaces()), 0, "nothing stored");
    // The server heals: the next cycle lists everything.
    server.faults().reset();
    r.store
        .wait_for("10 objects", WAIT, |s| s.objects.len() == 10)
        .await;
    r.stop().await;
}

#[tokio::test]
async fn m15_page_cap_ends_a_list_whose_tokens_never_repeat() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 10);
    server.faults().hostile_next(
        FaultTarget::List,
        HostileResponse::EndlessContinue { same_token: false },
        usize::MAX,
    );
    let config = informer_runtime::reflector::ReflectorConfig {
        page_size: 4,
        max_list_pages: 3,
        ..fast_config()
    };
    let r = start(&server, config);
    wait_error(&r, "EndlessList { pages: 3,").await;
    wait_log(&server, "the next cycle's first page", |log| {
        log.iter().filter(|x| x.is_list()).count() >= 4
    })
    .await;
    let lists = lists(&server);
    assert!(
        lists[1].query.continue_token.is_some() && lists[2].query.continue_token.is_some(),
        "{:#?}",
        summary(&lists)
    );
    assert!(
        lists[3].query.continue_token.is_none(),
        "M15: at most 3 pages, then a new list: {:#?}",
        summary(&lists)
    );
    assert_eq!(r.store.with(|s| s.replaces()), 0, "nothing stored");
    r.stop().await;
}

#[tokio::test]
async fn m16_watch_line_without_newline_is_cut_at_16_mib_and_ends_the_watch() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    // 17 MiB of one event line, then silence on an open connection.
    server.faults().hostile_next(
        FaultTarget::Watch,
        HostileResponse::UnterminatedWatchLine { len: 17 << 20 },
        1,
    );
    let r = start(&server, fast_config());
    wait_replaces(&r.store, 1).await;
    wait_error(&r, "16777216").await;
    // A broken stream ends the cycle: relist after backoff, then a healthy watch.
    wait_replaces(&r.store, 2).await;
    wait_log(&server, "the second watch", |log| {
        log.iter().filter(|x| x.is_watch()).count() >= 2
    })
    .await;
    r.stop().await;
}

#[tokio::test]
async fn m16_watch_line_cap_is_configurable() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    server.faults().hostile_next(
        FaultTarget::Watch,
        HostileResponse::UnterminatedWatchLine { len: 2 << 20 },
        1,
    );
    let config = informer_runtime::reflector::ReflectorConfig {
        max_watch_line_bytes: 1 << 20,
        ..fast_config()
    };
    let r = start(&server, config);
    wait_error(&r, "LineTooLong { limit: 1048576 }").await;
    let text = r
        .errors()
        .into_iter()
        .find(|e| e.contains("LineTooLong"))
        .unwrap_or_default();
    assert!(text.starts_with("Watch("), "ends a running watch: {text}");
    wait_replaces(&r.store, 2).await;
    r.stop().await;
}

#[tokio::test]
async fn d_list_answered_with_a_redirect_reports_the_http_status() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    server
        .faults()
        .hostile_next(FaultTarget::List, HostileResponse::Redirect(302), 1);
    let r = start(&server, fast_config());
    wait_replaces(&r.store, 1).await;
    let errors = r.errors();
    assert!(
        errors.iter().any(|e| e.contains("302")),
        "the error names the HTTP status: {errors:#?}"
    );
    assert!(
        !errors.iter().any(|e| e.contains("Decode")),
        "not a body decode error: {errors:#?}"
    );
    assert_eq!(r.store.with(|s| s.objects.len()), 3);
    r.stop().await;
}

#[tokio::test]
async fn d_watch_answered_with_a_redirect_reports_the_http_status() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    server
        .faults()
        .hostile_next(FaultTarget::Watch, HostileResponse::Redirect(307), 1);
    let r = start(&server, fast_config());
    wait_error(&r, "307").await;
    let errors = r.errors();
    assert!(
        errors[0].starts_with("WatchStart("),
        "the watch did not start: {errors:#?}"
    );
    wait_log(&server, "a watch that works", |log| {
        log.iter()
            .any(|x| x.is_watch() && x.status == http::StatusCode::OK)
    })
    .await;
    r.stop().await;
}

#[tokio::test]
async fn d_r15_error_event_without_a_status_says_what_arrived_but_not_its_contents() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    server.faults().hostile_next(
        FaultTarget::Watch,
        HostileResponse::WatchErrorObject(
            r#"{"kind":"Secret","apiVersion":"v1","metadata":{"name":"db"},"data":{"password":"czNjcjN0"}}"#
                .into(),
        ),
        1,
    );
    let r = start(&server, fast_config());
    wait_error(&r, "Secret").await;
    let errors = r.errors();
    let text = errors
        .iter()
        .find(|e| e.contains("Secret"))
        .cloned()
        .unwrap_or_default();
    assert!(!text.contains("czNjcjN0"), "object contents: {text}");
    assert!(!text.contains("api error 0"), "{text}");
    // R15: the next cycle relists.
    wait_replaces(&r.store, 2).await;
    r.stop().await;
}

#[tokio::test]
async fn r1_retry_after_on_list_is_capped_by_the_backoff_maximum() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    server.faults().fail_next(
        FaultTarget::List,
        http::StatusCode::TOO_MANY_REQUESTS,
        Some(3600),
        1,
    );
    // fast_config: backoff cap 400 ms, no jitter.
    let r = start(&server, fast_config());
    wait_replaces(&r.store, 1).await;
    let lists = lists(&server);
    let gap = lists[1]
        .time
        .duration_since(lists[0].time)
        .unwrap_or_default();
    assert!(
        gap >= std::time::Duration::from_millis(350) && gap < std::time::Duration::from_secs(5),
        "Retry-After 3600 s waits the backoff maximum (400 ms): {gap:?}"
    );
    r.stop().await;
}

#[tokio::test]
async fn r13_retry_after_on_watch_is_capped_by_the_backoff_maximum() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    server.faults().fail_next(
        FaultTarget::Watch,
        http::StatusCode::TOO_MANY_REQUESTS,
        Some(3600),
        1,
    );
    let r = start(&server, fast_config());
    wait_log(&server, "the watch after the 429", |log| {
        log.iter()
            .any(|x| x.is_watch() && x.status == http::StatusCode::OK)
    })
    .await;
    assert_eq!(lists(&server).len(), 1, "R13: no relist");
    r.stop().await;
}

/// R13 with `ConsistentListFromCacheSkipTimeoutFallback`: a consistent LIST the lagging watch
/// cache cannot serve answers 429 with `Retry-After: 1` and a "Too large resource version"
/// message; that is a 429 (wait at least a second), not R11's "too large" (relist at once).
#[tokio::test]
async fn r13_a_429_for_a_consistent_list_waits_its_retry_after() {
    let server = TestServer::start().await.expect("server");
    seed(&server, 3);
    server.set_consistent_list_from_cache_skip_timeout_fallback(true);
    server.faults().lag_watch_cache(true);
    let mut config = fast_config();
    config.initial_list_rv = String::new();
    config.backoff.cap = std::time::Duration::from_secs(5);
    let r = start(&server, config);
    wait_log(&server, "two consistent LISTs", |log| {
        log.iter().filter(|x| x.is_list()).count() >= 2
    })
    .await;
    server.faults().lag_watch_cache(false);
    wait_replaces(&r.store, 1).await;
    let lists = lists(&server);
    assert_eq!(lists[0].status, http::StatusCode::TOO_MANY_REQUESTS);
    let gap = lists[1]
        .time
        .duration_since(lists[0].time)
        .unwrap_or_default();
    assert!(
        gap >= std::time::Duration::from_millis(950),
        "Retry-After: 1 waits a second: {gap:?} ({:#?})",
        summary(&lists)
    );
    assert!(
        r.errors().iter().any(|e| e.contains("TooManyRequests")),
        "{:#?}",
        r.errors()
    );
    r.stop().await;
}

/// T1, M14: each hostile protobuf LIST answer (an envelope without its list message, a list of
/// another kind, an item declaring 2^62 bytes) is one error; nothing panics or allocates what
/// a length claims, and the reflector stores the server's real objects on a later cycle (in
/// JSON, where the protobuf answer could not be read).
#[tokio::test]
async fn t1_hostile_protobuf_lists_are_errors_never_panics() {
    for (hostile, needle) in [
        (HostileProtobuf::ListWithoutRaw, "runtime.Unknown.raw"),
        (HostileProtobuf::ListOfKind("PodList".into()), "PodList"),
        (HostileProtobuf::HugeItemLength, "Truncated"),
    ] {
        let server = TestServer::start().await.expect("server");
        seed(&server, 3);
        server.faults().hostile_next(
            FaultTarget::List,
            HostileResponse::Protobuf(hostile.clone()),
            1,
        );
        let r = start(&server, fast_config());
        wait_error(&r, needle).await;
        r.store
            .wait_for("the 3 real objects", WAIT, |s| s.objects.len() == 3)
            .await;
        assert_eq!(
            r.store.with(|s| s.replaces()),
            1,
            "{hostile:?}: stored once"
        );
        r.stop().await;
    }
}

/// T1, M16: a protobuf watch frame declaring 4 GiB, and an event whose object declares 2^62
/// bytes, each end the watch with an error; the reflector relists and watches again.
#[tokio::test]
async fn t1_hostile_protobuf_watch_frames_end_the_watch_with_an_error() {
    for (hostile, needle) in [
        (HostileProtobuf::HugeFrameLength, "LineTooLong"),
        (HostileProtobuf::HugeObjectLength, "Truncated"),
    ] {
        let server = TestServer::start().await.expect("server");
        seed(&server, 3);
        server.faults().hostile_next(
            FaultTarget::Watch,
            HostileResponse::Protobuf(hostile.clone()),
            1,
        );
        let r = start(&server, fast_config());
        wait_error(&r, needle).await;
        wait_replaces(&r.store, 2).await;
        wait_log(&server, "a second watch", |log| {
            log.iter().filter(|x| x.is_watch()).count() >= 2
        })
        .await;
        r.stop().await;
    }
}

/// T1 and the nesting limit: a CustomResourceDefinition whose schema nests 95 levels is an
/// error in protobuf (too deep) as in JSON (serde_json's recursion limit), never a stack
/// overflow; the list-watcher then asks for JSON and lists the server's real CRDs.
#[tokio::test]
async fn t1_a_95_level_crd_schema_is_an_error_in_either_format() {
    use informer_runtime::list_watch::{Error as LwError, ListRequest};
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let server = TestServer::start().await.expect("server");
    let lw = ListWatch::<CustomResourceDefinition>::new(kube::Api::all(server.client()));
    server.faults().hostile_next(
        FaultTarget::List,
        HostileResponse::Protobuf(HostileProtobuf::DeepSchema { levels: 95 }),
        1,
    );
    match lw.list(&ListRequest::default()).await {
        Err(LwError::Protobuf { source, .. }) => {
            assert_eq!(source, informer_proto::Error::TooDeep);
        }
        other => panic!("a 95-level schema in protobuf: {other:?}"),
    }
    assert!(!lw.asks_for_protobuf(), "turned to JSON");
    // The same CRD in JSON.
    let mut schema = serde_json::json!({"type": "string"});
    for _ in 1..95 {
        schema = serde_json::json!({"type": "object", "properties": {"a": schema}});
    }
    let body = serde_json::json!({
        "kind": "CustomResourceDefinitionList", "apiVersion": "apiextensions.k8s.io/v1",
        "metadata": {"resourceVersion": "5"},
        "items": [{"metadata": {"name": "deeps.example.com"},
                   "spec": {"group": "example.com", "scope": "Namespaced",
                            "names": {"kind": "Deep", "plural": "deeps"},
                            "versions": [{"name": "v1", "served": true, "storage": true,
                                          "schema": {"openAPIV3Schema": schema}}]}}]
    });
    server.faults().hostile_next(
        FaultTarget::List,
        HostileResponse::Body {
            content_type: "application/json".into(),
            body: serde_json::to_vec(&body).expect("serialize"),
        },
        1,
    );
    match lw.list(&ListRequest::default()).await {
        Err(LwError::Decode { source, .. }) => {
            assert!(source.to_string().contains("recursion"), "{source}");
        }
        other => panic!("a 95-level schema in JSON: {other:?}"),
    }
    let page = lw
        .list(&ListRequest::default())
        .await
        .expect("the real list");
    assert!(page.items.is_empty());
}
