//! WATCH over HTTP: start points, replay, 410 ERROR events, bookmarks, timeoutSeconds,
//! sendInitialEvents, selectors, metadata-only watches, slow watchers and delayed watches
//! released early.
// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use futures::{StreamExt, TryStreamExt};
use informer_testserver::{FaultTarget, TestServer};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, WatchEvent, WatchParams};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn unset_and_zero_start_with_synthetic_added_then_follow() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", &[])).unwrap();
    server.create(&cm("b", &[])).unwrap();
    for q in [
        "watch=true",
        "watch=true&resourceVersion=0",
        "watch=1&resourceVersion=",
    ] {
        let mut w = Lines::open(&server, &format!("{CMS}?{q}")).await;
        assert_eq!(w.status, 200);
        assert_eq!(
            w.take(2).await,
            [("ADDED".into(), "a".into()), ("ADDED".into(), "b".into())],
            "{q}"
        );
    }
    let mut w = Lines::open(&server, &format!("{CMS}?watch=true")).await;
    assert_eq!(w.take(2).await.len(), 2);
    server.create(&cm("c", &[])).unwrap();
    assert_eq!(w.take(1).await, [("ADDED".into(), "c".into())]);
}

#[tokio::test]
async fn specific_rv_replays_history_and_too_old_gets_a_410_error_event() {
    let server = TestServer::builder().history_size(5).start().await.unwrap();
    server.create(&cm("a", &[])).unwrap();
    let rv = server.current_resource_version();
    server.create(&cm("b", &[])).unwrap();
    server
        .patch_json(
            "v1",
            "ConfigMap",
            Some("default"),
            "a",
            &serde_json::json!({"data": {"x": "1"}}),
        )
        .unwrap();
    let mut w = Lines::open(&server, &format!("{CMS}?watch=true&resourceVersion={rv}")).await;
    assert_eq!(
        w.take(2).await,
        [
            ("ADDED".into(), "b".into()),
            ("MODIFIED".into(), "a".into())
        ]
    );

    for i in 0..10 {
        server.create(&cm(&format!("more-{i}"), &[])).unwrap();
    }
    let mut w = Lines::open(&server, &format!("{CMS}?watch=true&resourceVersion={rv}")).await;
    assert_eq!(w.status, 200);
    let ev = w.next().await.unwrap();
    assert_eq!(ev["type"], "ERROR");
    assert_eq!(ev["object"]["kind"], "Status");
    assert_eq!(ev["object"]["code"], 410);
    assert_eq!(ev["object"]["reason"], "Expired");
    assert!(
        ev["object"]["message"]
            .as_str()
            .unwrap()
            .starts_with("too old resource version")
    );
    assert!(w.next().await.is_none());

    // kube surfaces it as WatchEvent::Error with code 410.
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut s = api
        .watch(&WatchParams::default(), &rv.to_string())
        .await
        .unwrap()
        .boxed();
    match s.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => assert_eq!(e.code, 410),
        other => panic!("unexpected {other:?}"),
    }
    // Explicit compaction does the same.
    let rv = server.current_resource_version();
    server.create(&cm("after", &[])).unwrap();
    assert!(server.oldest_resource_version() <= rv);
    server.compact(rv + 1);
    assert_eq!(server.oldest_resource_version(), rv + 1);
    let mut w = Lines::open(&server, &format!("{CMS}?watch=true&resourceVersion={rv}")).await;
    assert_eq!(w.next().await.unwrap()["object"]["code"], 410);
}

#[tokio::test]
async fn bookmarks_and_timeout_seconds() {
    let server = TestServer::builder()
        .bookmark_interval(Duration::from_millis(50))
        .start()
        .await
        .unwrap();
    server.create(&cm("a", &[])).unwrap();
    let rv = server.current_resource_version();
    let mut w = Lines::open(
        &server,
        &format!("{CMS}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=1"),
    )
    .await;
    let started = Instant::now();
    let ev = w.next().await.unwrap();
    assert_eq!(ev["type"], "BOOKMARK");
    assert_eq!(ev["object"]["kind"], "ConfigMap");
    assert_eq!(ev["object"]["apiVersion"], "v1");
    assert_eq!(ev["object"]["metadata"]["resourceVersion"], rv.to_string());
    server.create(&cm("b", &[])).unwrap();
    assert_eq!(w.next_event().await.unwrap()["type"], "ADDED");
    let ev = w.next().await.unwrap();
    assert_eq!(
        ev["object"]["metadata"]["resourceVersion"],
        (rv + 1).to_string()
    );
    // timeoutSeconds ends the stream normally; any value is accepted (kube caps at 295, we do not).
    while w.next().await.is_some() {}
    assert_eq!(w.ended, Some(Ok(())));
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    let w = Lines::open(&server, &format!("{CMS}?watch=true&timeoutSeconds=600")).await;
    assert_eq!(w.status, 200);

    // Without allowWatchBookmarks there are none.
    let mut w = Lines::open(
        &server,
        &format!(
            "{CMS}?watch=true&resourceVersion={}&timeoutSeconds=1",
            rv + 1
        ),
    )
    .await;
    assert!(w.next().await.is_none());
}

#[tokio::test]
async fn send_initial_events_ends_with_the_annotated_bookmark() {
    let server = TestServer::start().await.unwrap();
    for n in ["a", "b", "c"] {
        server.create(&cm(n, &[])).unwrap();
    }
    let rv = server.current_resource_version();
    let q = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    for start in ["", "&resourceVersion=0", "&resourceVersion=1"] {
        let mut w = Lines::open(&server, &format!("{CMS}?{q}{start}")).await;
        assert_eq!(w.take(3).await.len(), 3);
        let end = w.next().await.unwrap();
        assert_eq!(end["type"], "BOOKMARK");
        assert_eq!(
            end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
            "true"
        );
        assert_eq!(end["object"]["metadata"]["resourceVersion"], rv.to_string());
    }
    // Same connection keeps the live events.
    let mut w = Lines::open(&server, &format!("{CMS}?{q}")).await;
    w.take(3).await;
    assert_eq!(w.next().await.unwrap()["type"], "BOOKMARK");
    server.create(&cm("d", &[])).unwrap();
    assert_eq!(w.take(1).await, [("ADDED".into(), "d".into())]);
    // sendInitialEvents needs resourceVersionMatch=NotOlderThan (422, like kube-apiserver).
    let (code, st) = raw(
        &server,
        "GET",
        &format!("{CMS}?watch=true&sendInitialEvents=true"),
        None,
        b"",
    )
    .await;
    assert_eq!((code, st["reason"].as_str()), (422, Some("Invalid")));
    let q = "watch=true&resourceVersionMatch=NotOlderThan";
    let (code, _) = raw(&server, "GET", &format!("{CMS}?{q}"), None, b"").await;
    assert_eq!(code, 422);

    // kube's streaming-list params work end to end.
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut s = api
        .watch(&WatchParams::streaming_lists(), "0")
        .await
        .unwrap()
        .boxed();
    let mut added = 0;
    loop {
        match s.try_next().await.unwrap() {
            Some(WatchEvent::Added(_)) => added += 1,
            Some(WatchEvent::Bookmark(b)) => {
                assert_eq!(
                    b.metadata
                        .annotations
                        .get("k8s.io/initial-events-end")
                        .map(String::as_str),
                    Some("true")
                );
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(added, 4);
}

#[tokio::test]
async fn label_selector_transitions_on_watch() {
    let server = TestServer::start().await.unwrap();
    let rv = server.current_resource_version();
    let mut w = Lines::open(
        &server,
        &format!("{CMS}?watch=true&resourceVersion={rv}&labelSelector=app%3Dweb"),
    )
    .await;
    server.create(&cm("other", &[("app", "db")])).unwrap();
    server.create(&cm("a", &[("app", "web")])).unwrap();
    server
        .patch_json(
            "v1",
            "ConfigMap",
            Some("default"),
            "other",
            &serde_json::json!({"metadata": {"labels": {"app": "web"}}}),
        )
        .unwrap();
    server
        .patch_json(
            "v1",
            "ConfigMap",
            Some("default"),
            "a",
            &serde_json::json!({"metadata": {"labels": {"app": "db"}}}),
        )
        .unwrap();
    server
        .patch_json(
            "v1",
            "ConfigMap",
            Some("default"),
            "other",
            &serde_json::json!({"data": {"z": "1"}}),
        )
        .unwrap();
    assert_eq!(
        w.take(4).await,
        [
            ("ADDED".into(), "a".into()),
            ("ADDED".into(), "other".into()),
            ("DELETED".into(), "a".into()),
            ("MODIFIED".into(), "other".into()),
        ]
    );
    let (code, _) = raw(
        &server,
        "GET",
        &format!("{CMS}?watch=true&labelSelector=a%3D%3D%3Db"),
        None,
        b"",
    )
    .await;
    assert_eq!(code, 400);
}

#[tokio::test]
async fn metadata_only_watch() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", &[("app", "x")])).unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut s = api
        .watch_metadata(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    match s.try_next().await.unwrap() {
        Some(WatchEvent::Added(m)) => {
            assert_eq!(m.types.as_ref().unwrap().kind, "PartialObjectMetadata");
            assert_eq!(m.metadata.labels.unwrap()["app"], "x");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn a_watcher_that_cannot_keep_up_is_closed() {
    let server = TestServer::builder()
        .watch_buffer(16)
        .start()
        .await
        .unwrap();
    let rv = server.current_resource_version();
    let mut w = Lines::open(&server, &format!("{CMS}?watch=true&resourceVersion={rv}")).await;
    assert!(wait_until(Duration::from_secs(5), || server.active_watches() == 1).await);
    // Far more than the socket buffers hold, written while the client reads nothing.
    let big = "x".repeat(32 * 1024);
    for i in 0..3000 {
        let mut c = cm(&format!("big-{i}"), &[]);
        c.data = Some([("blob".to_owned(), big.clone())].into());
        server.create(&c).unwrap();
    }
    assert!(
        wait_until(Duration::from_secs(10), || server.active_watches() == 0).await,
        "watcher not closed"
    );
    let mut n = 0;
    while w.next().await.is_some() {
        n += 1;
    }
    assert!(n < 3000, "all {n} events were buffered");
}

/// A WATCH of `api` from "0" in a task of its own; the task ends with the watch's first event.
fn first_event(
    api: &Api<ConfigMap>,
) -> tokio::task::JoinHandle<kube::Result<Option<WatchEvent<ConfigMap>>>> {
    let api = api.clone();
    tokio::spawn(async move {
        let stream = api.watch(&WatchParams::default(), "0").await?;
        stream.boxed().try_next().await
    })
}

#[tokio::test]
async fn a_delayed_watch_is_answered_as_soon_as_the_delays_are_released() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", &[])).unwrap();
    // Six times the waits below: only the release can answer the watch within them.
    server
        .faults()
        .delay(FaultTarget::Watch, Duration::from_secs(60));
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let held = first_event(&api);
    assert!(
        server
            .faults()
            .wait_for_delayed_requests(1, Duration::from_secs(10))
            .await,
        "the watch never reached its delay"
    );
    assert!(!held.is_finished());
    server.faults().release_delays();
    let event = tokio::time::timeout(Duration::from_secs(10), held)
        .await
        .expect("answered within 10 s of the release, not at the delay's 60 s")
        .unwrap()
        .unwrap();
    match event {
        Some(WatchEvent::Added(c)) => assert_eq!(c.metadata.name.as_deref(), Some("a")),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(server.faults().delayed_requests(), 0);

    // A watch that arrives after the release still gets the delay, until it is removed and
    // the delays released again.
    let later = first_event(&api);
    assert!(
        server
            .faults()
            .wait_for_delayed_requests(1, Duration::from_secs(10))
            .await,
        "a later watch was not delayed"
    );
    server.faults().delay(FaultTarget::Watch, Duration::ZERO);
    server.faults().release_delays();
    let event = tokio::time::timeout(Duration::from_secs(10), later)
        .await
        .expect("answered within 10 s of the second release")
        .unwrap()
        .unwrap();
    assert!(matches!(event, Some(WatchEvent::Added(_))), "{event:?}");
    // With the delay removed, a new watch is answered at once.
    let direct = tokio::time::timeout(Duration::from_secs(10), first_event(&api))
        .await
        .expect("no delay left")
        .unwrap()
        .unwrap();
    assert!(matches!(direct, Some(WatchEvent::Added(_))), "{direct:?}");
}
