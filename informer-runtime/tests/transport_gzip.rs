//! T3 (docs/behaviour.md section 18): every LIST and WATCH sends `Accept-Encoding: gzip`; a LIST
//! body over 128 KiB and a watch-list stream (one gzip member per flush) arrive gzipped and
//! decode to the same objects; the caps count decompressed bytes; a corrupt stream is an error
//! that costs a retry, never data.

mod informer_support;

use std::collections::BTreeSet;
use std::time::Duration;

use futures::StreamExt as _;
use informer_runtime::informer::{InformerConfig, SharedIndexInformer};
use informer_runtime::list_watch::{
    BodyLimits, Error, ErrorClass, ListRequest, ListWatch, WatchRequest,
};
use informer_runtime::reflector::InitialListStrategy;
use informer_support::*;
use informer_test_support::{big_config_map, initial_events, next_added};
use informer_testserver::{FaultTarget, HostileResponse, TestServer, TestServerBuilder};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use kube::core::WatchEvent;
use tokio_util::sync::CancellationToken;

/// ConfigMaps of about 4 KiB each: 64 of them make a LIST body of about 270 KiB.
const BIG: usize = 64;

async fn seed_big(server: &TestServer) {
    for i in 0..BIG {
        let obj = big_config_map("default", &format!("cm-{i:02}"), 4);
        server
            .create(&obj)
            .unwrap_or_else(|e| panic!("create: {e}"));
    }
}

/// A watch-list request (`sendInitialEvents=true`) with this line cap.
fn watch_list(max_line_bytes: Option<usize>) -> WatchRequest {
    WatchRequest {
        send_initial_events: true,
        timeout: Duration::from_secs(60),
        max_line_bytes,
        ..Default::default()
    }
}

/// Whether each request `pick` selects, in order, was answered gzipped.
fn gzipped(
    server: &TestServer,
    pick: impl Fn(&informer_testserver::RequestRecord) -> bool,
) -> Vec<bool> {
    server
        .requests()
        .iter()
        .filter(|r| pick(r))
        .map(|r| r.gzip)
        .collect()
}

fn names(items: impl IntoIterator<Item = ConfigMap>) -> BTreeSet<String> {
    items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .filter(|n| n.starts_with("cm-"))
        .collect()
}

fn all_names() -> BTreeSet<String> {
    (0..BIG).map(|i| format!("cm-{i:02}")).collect()
}

#[tokio::test]
async fn a_large_list_arrives_gzipped_and_a_small_one_plain() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    seed_big(&server).await;
    let lw = ListWatch::<ConfigMap>::new(Api::namespaced(server.client(), "default"));
    let page = lw.list(&ListRequest::default()).await.expect("LIST");
    assert_eq!(names(page.items), all_names());
    let small = lw
        .list(&ListRequest {
            limit: Some(2),
            ..Default::default()
        })
        .await
        .expect("small LIST");
    assert_eq!(small.items.len(), 2);
    assert_eq!(
        gzipped(&server, |r| r.is_list()),
        [true, false],
        "gzip over 128 KiB only"
    );
}

#[tokio::test]
async fn a_watch_list_stream_is_gzipped_member_by_member_and_a_plain_watch_is_not() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    seed_big(&server).await;
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    let lw = ListWatch::<ConfigMap>::new(api.clone());
    let mut stream = lw.watch(&watch_list(None)).await.expect("watch-list");
    let initial = initial_events(&mut stream).await;
    let end_rv = initial
        .iter()
        .filter_map(|c| c.metadata.resource_version.clone())
        .max_by_key(|rv| rv.parse::<u64>().unwrap_or_default());
    assert_eq!(names(initial), all_names());
    // A later event is a gzip member of its own on the same stream.
    api.create(&PostParams::default(), &cm("default", "late", "2"))
        .await
        .expect("create");
    let late = next_added(&mut stream).await;
    assert_eq!(late.metadata.name.as_deref(), Some("late"));
    assert!(
        late.metadata
            .resource_version
            .as_ref()
            .map(|rv| rv.parse::<u64>().unwrap_or_default())
            > end_rv.map(|rv| rv.parse::<u64>().unwrap_or_default())
    );
    drop(stream);

    let mut plain = lw
        .watch(&WatchRequest {
            resource_version: server.current_resource_version().to_string(),
            timeout: Duration::from_secs(60),
            ..Default::default()
        })
        .await
        .expect("plain watch");
    api.create(&PostParams::default(), &cm("default", "later", "3"))
        .await
        .expect("create");
    let ev = tokio::time::timeout(WAIT, plain.next())
        .await
        .expect("event");
    assert!(matches!(ev, Some(Ok(WatchEvent::Added(_)))), "{ev:?}");
    let watches: Vec<bool> = server
        .requests()
        .iter()
        .filter(|r| r.is_watch())
        .map(|r| r.gzip)
        .collect();
    assert_eq!(watches, [true, false], "only the watch-list is gzipped");
}

#[tokio::test]
async fn without_the_gate_a_watch_list_is_plain() {
    init_tracing();
    let server = TestServerBuilder::default()
        .watch_list_compression(false)
        .start()
        .await
        .unwrap();
    seed_big(&server).await;
    let lw = ListWatch::<ConfigMap>::new(Api::namespaced(server.client(), "default"));
    let mut stream = lw.watch(&watch_list(None)).await.expect("watch-list");
    let first = tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("event");
    assert!(matches!(first, Some(Ok(WatchEvent::Added(_)))), "{first:?}");
    assert!(server.requests().iter().all(|r| !r.gzip));
}

#[tokio::test]
async fn the_caps_count_decompressed_bytes() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    seed_big(&server).await;
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    // 270 KiB of JSON packs into a fraction of 200 KiB; the cap still trips.
    let lw = ListWatch::<ConfigMap>::new(api.clone()).body_limits(BodyLimits {
        max_list_bytes: 200 << 10,
        ..BodyLimits::default()
    });
    let err = lw
        .list(&ListRequest::default())
        .await
        .expect_err("above the cap");
    assert!(
        matches!(err, Error::BodyTooLarge { what: "LIST", .. }),
        "{err:?}"
    );
    assert!(server.requests().iter().any(|r| r.is_list() && r.gzip));

    // M16 on a gzipped watch-list: one 4 KiB event line is above a 1 KiB line cap.
    let mut stream = ListWatch::<ConfigMap>::new(api)
        .watch(&watch_list(Some(1024)))
        .await
        .expect("watch-list");
    let ev = tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("an item");
    assert!(
        matches!(ev, Some(Err(Error::LineTooLong { limit: 1024 }))),
        "{ev:?}"
    );
}

#[tokio::test]
async fn a_corrupt_gzip_list_is_a_retryable_error_and_the_next_list_succeeds() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm("default", "a", "1")).unwrap();
    server.faults().hostile_next(
        FaultTarget::List,
        HostileResponse::CorruptGzip {
            body: "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":["
                .into(),
        },
        1,
    );
    let lw = ListWatch::<ConfigMap>::new(Api::all(server.client()));
    let err = lw
        .list(&ListRequest::default())
        .await
        .expect_err("corrupt gzip");
    assert!(matches!(err, Error::Gzip { .. }), "{err:?}");
    assert_eq!(err.class(), ErrorClass::InternalError);
    let page = lw.list(&ListRequest::default()).await.expect("next LIST");
    assert!(
        page.items
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some("a"))
    );
}

#[tokio::test]
async fn a_corrupt_gzip_watch_delivers_its_whole_events_then_errors() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let line = serde_json::json!({
        "type": "ADDED",
        "object": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default", "resourceVersion": "7"}},
    });
    server.faults().hostile_next(
        FaultTarget::Watch,
        HostileResponse::CorruptGzip {
            body: format!("{line}\n"),
        },
        1,
    );
    let lw = ListWatch::<ConfigMap>::new(Api::all(server.client()));
    let mut stream = lw
        .watch(&WatchRequest {
            resource_version: "1".into(),
            timeout: Duration::from_secs(60),
            ..Default::default()
        })
        .await
        .expect("watch");
    let first = tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("event");
    assert!(
        matches!(&first, Some(Ok(WatchEvent::Added(o))) if o.metadata.name.as_deref() == Some("x")),
        "{first:?}"
    );
    let second = tokio::time::timeout(WAIT, stream.next())
        .await
        .expect("error");
    assert!(
        matches!(&second, Some(Err(Error::Gzip { .. }))),
        "{second:?}"
    );
    assert!(
        tokio::time::timeout(WAIT, stream.next())
            .await
            .expect("end")
            .is_none()
    );
}

/// An informer syncs the same objects through a gzipped LIST and through a gzipped watch-list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn informers_sync_through_gzip_with_either_strategy() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    seed_big(&server).await;
    for strategy in [
        InitialListStrategy::ListWatch,
        InitialListStrategy::StreamingList,
    ] {
        let lw = ListWatch::<ConfigMap>::new(Api::namespaced(server.client(), "default"));
        let mut config = InformerConfig::<ConfigMap>::default();
        config.reflector.strategy = strategy;
        config.reflector.page_size = 0;
        let informer = SharedIndexInformer::new(lw, config).unwrap();
        let cancel = CancellationToken::new();
        let _stop = cancel.clone().drop_guard();
        informer.start(cancel.clone());
        assert_synced(informer.wait_for_sync()).await;
        let cached = names(informer.indexer().list().iter().map(|c| (**c).clone()));
        assert_eq!(cached, all_names(), "{strategy:?}");
    }
    let gz: Vec<(bool, bool)> = server
        .requests()
        .iter()
        .filter(|r| r.is_list() || r.query.send_initial_events == Some(true))
        .map(|r| (r.is_list(), r.gzip))
        .collect();
    assert!(gz.contains(&(true, true)), "a gzipped LIST: {gz:?}");
    assert!(gz.contains(&(false, true)), "a gzipped watch-list: {gz:?}");
}

#[tokio::test]
async fn gzip_can_be_turned_off_and_bytes_received_count_the_wire() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    seed_big(&server).await;
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    let on = ListWatch::<ConfigMap>::new(api.clone());
    let off = ListWatch::<ConfigMap>::new(api).accept_gzip(false);
    for lw in [&on, &off] {
        let page = lw.list(&ListRequest::default()).await.expect("LIST");
        assert_eq!(names(page.items), all_names());
    }
    assert_eq!(gzipped(&server, |r| r.is_list()), [true, false]);
    let (zipped, plain) = (on.bytes_received(), off.bytes_received());
    assert!(plain > (BIG * 4096) as u64, "the plain body: {plain} bytes");
    assert!(zipped * 4 < plain, "gzip {zipped} bytes against {plain}");
    // Clones share the count (the reflector lists through clones).
    on.clone()
        .list(&ListRequest::default())
        .await
        .expect("LIST");
    assert_eq!(on.bytes_received(), 2 * zipped);
}

/// T3: a gzip body that inflates a thousandfold (64 MiB from about 64 KiB) is cut past its
/// first 16 MiB, long before the 4 GiB LIST cap; the list-watcher then asks for identity
/// bodies, and the next LIST (of a collection big enough to be gzipped) arrives plain.
#[tokio::test]
async fn a_gzip_bomb_is_cut_and_the_list_watcher_stops_offering_gzip() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    seed_big(&server).await;
    server.faults().hostile_next(
        FaultTarget::List,
        HostileResponse::GzipBomb { inflated: 64 << 20 },
        1,
    );
    let lw = ListWatch::<ConfigMap>::new(Api::all(server.client()));
    let err = lw.list(&ListRequest::default()).await.expect_err("a bomb");
    match err {
        Error::GzipInflation { fed, produced } => {
            assert!(
                produced < 32 << 20,
                "cut early: {produced} bytes from {fed}"
            );
        }
        other => panic!("a gzip bomb: {other:?}"),
    }
    let page = lw.list(&ListRequest::default()).await.expect("next LIST");
    assert_eq!(page.items.len(), BIG);
    let lists: Vec<bool> = server
        .requests()
        .iter()
        .filter(|r| r.is_list())
        .map(|r| r.gzip)
        .collect();
    assert_eq!(lists, [true, false], "gzip, then identity");
}
