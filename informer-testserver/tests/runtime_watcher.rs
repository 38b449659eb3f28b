//! kube-runtime's `watcher` + `reflector` against the test server: it syncs, follows changes,
//! and recovers from every fault switch.
// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::*;
use futures::StreamExt;
use http::StatusCode;
use informer_testserver::{FaultTarget, GroupResource, TestServer, Verb};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::utils::Backoff;
use kube::runtime::{WatchStreamExt, watcher};

/// A short fixed backoff so recovery tests stay fast.
struct Fixed;

impl Iterator for Fixed {
    type Item = Duration;
    fn next(&mut self) -> Option<Duration> {
        Some(Duration::from_millis(50))
    }
}

impl Backoff for Fixed {
    fn reset(&mut self) {}
}

struct Running {
    store: Store<ConfigMap>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn start(server: &TestServer, config: watcher::Config) -> Running {
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let (store, writer) = reflector::store();
    let stream = reflector::reflector(writer, watcher(api, config)).backoff(Fixed);
    let task = tokio::spawn(async move {
        futures::pin_mut!(stream);
        while stream.next().await.is_some() {}
    });
    Running { store, task }
}

fn names_in(store: &Store<ConfigMap>) -> Vec<String> {
    let mut v: Vec<String> = store
        .state()
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    v.sort();
    v
}

async fn expect_names(store: &Store<ConfigMap>, want: &[&str]) {
    let ok = wait_until(Duration::from_secs(15), || names_in(store) == want).await;
    assert!(ok, "store has {:?}, want {want:?}", names_in(store));
}

async fn synced(bookmarks: Duration, config: watcher::Config) -> (TestServer, Running) {
    let server = TestServer::builder()
        .bookmark_interval(bookmarks)
        .start()
        .await
        .unwrap();
    server.create(&cm("a", &[])).unwrap();
    server.create(&cm("b", &[])).unwrap();
    let r = start(&server, config);
    tokio::time::timeout(Duration::from_secs(15), r.store.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    expect_names(&r.store, &["a", "b"]).await;
    (server, r)
}

async fn default_synced() -> (TestServer, Running) {
    synced(Duration::from_millis(200), watcher::Config::default()).await
}

/// Makes a change and checks the reflector follows it.
async fn follows(server: &TestServer, r: &Running, name: &str) {
    server.create(&cm(name, &[])).unwrap();
    let mut want: Vec<String> = names_in(&r.store);
    want.push(name.to_owned());
    want.sort();
    let want: Vec<&str> = want.iter().map(String::as_str).collect();
    expect_names(&r.store, &want).await;
}

#[tokio::test]
async fn syncs_and_follows_changes() {
    let (server, r) = default_synced().await;
    follows(&server, &r, "c").await;
    server.delete::<ConfigMap>(Some("default"), "a").unwrap();
    expect_names(&r.store, &["b", "c"]).await;
    server
        .patch_json(
            "v1",
            "ConfigMap",
            Some("default"),
            "b",
            &serde_json::json!({"data": {"n": "1"}}),
        )
        .unwrap();
    let ok = wait_until(Duration::from_secs(10), || {
        r.store
            .state()
            .iter()
            .any(|c| c.data.as_ref().is_some_and(|d| d.contains_key("n")))
    })
    .await;
    assert!(ok);
    assert!(server.active_watches() >= 1);
}

#[tokio::test]
async fn streaming_list_syncs() {
    let (server, r) = synced(
        Duration::from_millis(200),
        watcher::Config::default().streaming_lists(),
    )
    .await;
    follows(&server, &r, "c").await;
    let watches: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|q| q.verb == Verb::Watch)
        .collect();
    assert_eq!(watches[0].query.send_initial_events, Some(true));
    assert!(server.requests().iter().all(|q| q.verb != Verb::List));
}

#[tokio::test]
async fn recovers_from_close_after_n_events() {
    let (server, r) = default_synced().await;
    server.faults().close_watches_after(Some(1));
    follows(&server, &r, "c").await;
    follows(&server, &r, "d").await;
    server.faults().close_watches_after(None);
    follows(&server, &r, "e").await;
    assert!(
        server
            .requests()
            .iter()
            .filter(|q| q.verb == Verb::Watch)
            .count()
            >= 3
    );
}

#[tokio::test]
async fn recovers_from_410_on_watch_and_list() {
    let (server, r) = default_synced().await;
    // HTTP 410 on the next watch start, then an in-stream 410 ERROR event.
    server
        .faults()
        .fail_next(FaultTarget::Watch, StatusCode::GONE, None, 1);
    server.faults().close_open_watches();
    follows(&server, &r, "c").await;
    server.faults().expire_next_watch();
    server
        .faults()
        .fail_next(FaultTarget::List, StatusCode::GONE, None, 1);
    server.faults().expire_open_watches();
    follows(&server, &r, "d").await;
    let lists = server
        .requests()
        .iter()
        .filter(|q| q.verb == Verb::List && q.status == StatusCode::GONE)
        .count();
    assert_eq!(lists, 1);
}

#[tokio::test]
async fn recovers_from_429_and_500_with_retry_after() {
    let (server, r) = default_synced().await;
    server.faults().fail_next(
        FaultTarget::Watch,
        StatusCode::TOO_MANY_REQUESTS,
        Some(1),
        2,
    );
    server.faults().close_open_watches();
    follows(&server, &r, "c").await;
    let with_header = server
        .requests()
        .iter()
        .filter(|q| q.status == StatusCode::TOO_MANY_REQUESTS)
        .count();
    assert_eq!(with_header, 2);
    server
        .faults()
        .fail_next(FaultTarget::Any, StatusCode::INTERNAL_SERVER_ERROR, None, 2);
    server.faults().expire_open_watches();
    follows(&server, &r, "d").await;
}

#[tokio::test]
async fn recovers_from_a_cut_chunk_and_a_malformed_event() {
    let (server, r) = default_synced().await;
    server.faults().cut_next_watch_chunk();
    follows(&server, &r, "c").await;
    server.faults().malformed_next_watch_event();
    follows(&server, &r, "d").await;
    follows(&server, &r, "e").await;
}

#[tokio::test]
async fn recovers_from_delays_and_too_large_resource_version() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", &[])).unwrap();
    server
        .faults()
        .delay(FaultTarget::List, Duration::from_millis(300));
    server.faults().too_large_resource_version_next_list();
    let r = start(&server, watcher::Config::default());
    tokio::time::timeout(Duration::from_secs(10), r.store.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    expect_names(&r.store, &["a"]).await;
    let lists: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|q| q.verb == Verb::List)
        .collect();
    assert_eq!(lists[0].status, StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(lists[1].status, StatusCode::OK);
    follows(&server, &r, "c").await;
}

#[tokio::test]
async fn stalled_list_blocks_sync_until_released() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", &[])).unwrap();
    server.faults().stall_list(true);
    let r = start(&server, watcher::Config::default());
    let waited = tokio::time::timeout(Duration::from_millis(500), r.store.wait_until_ready()).await;
    assert!(waited.is_err(), "synced although the LIST stalls");
    server.faults().stall_list(false);
    tokio::time::timeout(Duration::from_secs(10), r.store.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    expect_names(&r.store, &["a"]).await;
}

#[tokio::test]
async fn suppressed_initial_events_end_blocks_streaming_sync() {
    let server = TestServer::builder()
        .bookmark_interval(Duration::from_millis(100))
        .start()
        .await
        .unwrap();
    server.create(&cm("a", &[])).unwrap();
    server.faults().suppress_initial_events_end(true);
    let r = start(&server, watcher::Config::default().streaming_lists());
    let waited = tokio::time::timeout(Duration::from_millis(800), r.store.wait_until_ready()).await;
    assert!(
        waited.is_err(),
        "synced without the initial-events-end bookmark"
    );
    server.faults().suppress_initial_events_end(false);
    server.faults().close_open_watches();
    tokio::time::timeout(Duration::from_secs(10), r.store.wait_until_ready())
        .await
        .unwrap()
        .unwrap();
    expect_names(&r.store, &["a"]).await;
}

#[tokio::test]
async fn forbidden_resource_recovers_when_allowed() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", &[])).unwrap();
    let gr = GroupResource::new("", "configmaps");
    server.faults().forbid(gr.clone());
    let r = start(&server, watcher::Config::default());
    let log = server
        .wait_for_requests(Duration::from_secs(5), |log| {
            log.iter().any(|q| q.status == StatusCode::FORBIDDEN)
        })
        .await;
    assert!(log.is_ok());
    assert!(names_in(&r.store).is_empty());
    server.faults().allow(&gr);
    expect_names(&r.store, &["a"]).await;
}
