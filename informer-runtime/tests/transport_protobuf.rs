//! T1/T2 (docs/behaviour.md section 18) over HTTP: built-in kinds are listed and watched in
//! Kubernetes protobuf, custom resources and dynamic objects in JSON; the objects are the ones
//! the JSON path decodes; a protobuf answer that cannot be decoded costs one retry and turns the
//! list-watcher to JSON; a newer server's fields are passed over and counted (T8), never that.

mod informer_support;

use std::time::Duration;

use informer_runtime::list_watch::{Error, ListRequest, ListWatch, WatchRequest};
use informer_support::*;
use informer_test_support::{initial_events, next_added};
use informer_testserver::{FaultTarget, HostileResponse, RequestRecord, TestServer};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Api;
use kube::api::{DeleteParams, DynamicObject};
use kube::core::WatchEvent;
use serde_json::json;

fn pod(ns: &str, name: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "web"},
                     "annotations": {"note": "x"}, "ownerReferences": [{"apiVersion": "apps/v1",
                     "kind": "ReplicaSet", "name": "web-1", "uid": "u-1", "controller": true}]},
        "spec": {
            "nodeName": "node-1",
            "containers": [{"name": "app", "image": "nginx:1",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                            "env": [{"name": "A", "value": "1"}]}],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 30}],
            "terminationGracePeriodSeconds": 30
        },
        "status": {"phase": "Running", "podIP": "10.0.0.1",
                   "conditions": [{"type": "Ready", "status": "True",
                                   "lastTransitionTime": "2026-01-02T03:04:05Z"}]}
    })
}

fn protobuf_lists(server: &TestServer) -> Vec<bool> {
    pick(server, RequestRecord::is_list)
}

fn pick(server: &TestServer, f: impl Fn(&RequestRecord) -> bool) -> Vec<bool> {
    server
        .requests()
        .iter()
        .filter(|r| f(r))
        .map(|r| r.protobuf)
        .collect()
}

#[tokio::test]
async fn t2_a_protobuf_list_and_watch_give_the_objects_json_gives() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    for i in 0..5 {
        server
            .create_json(pod("default", &format!("p{i}")))
            .unwrap_or_else(|e| panic!("create: {e}"));
    }
    let api = Api::<Pod>::namespaced(server.client(), "default");
    let pb = ListWatch::<Pod>::new(api.clone());
    let js = ListWatch::<Pod>::new(api.clone()).prefer_protobuf(false);
    assert!(pb.asks_for_protobuf() && !js.asks_for_protobuf());
    let from_pb = pb
        .list(&ListRequest::default())
        .await
        .expect("protobuf LIST");
    let from_js = js.list(&ListRequest::default()).await.expect("JSON LIST");
    assert_eq!(from_pb.items.len(), 5);
    assert_eq!(from_pb.items, from_js.items, "T2");
    assert_eq!(from_pb.resource_version, from_js.resource_version);
    assert_eq!(protobuf_lists(&server), [true, false]);

    // A watch-list in protobuf frames (and gzip), then live events.
    let watch_list = WatchRequest {
        send_initial_events: true,
        timeout: Duration::from_secs(60),
        ..Default::default()
    };
    let mut stream = pb.watch(&watch_list).await.expect("watch-list");
    let mut initial = initial_events(&mut stream).await;
    initial.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    assert_eq!(initial, from_js.items, "T2 on the watch");
    server.create_json(pod("default", "late")).expect("create");
    let late = next_added(&mut stream).await;
    let json_late = api.get("late").await.expect("GET");
    assert_eq!(late, json_late);
    api.delete("late", &DeleteParams::default())
        .await
        .expect("delete");
    loop {
        match tokio::time::timeout(WAIT, futures::StreamExt::next(&mut stream)).await {
            Ok(Some(Ok(WatchEvent::Deleted(p)))) => {
                assert_eq!(p.metadata.name.as_deref(), Some("late"));
                break;
            }
            Ok(Some(Ok(WatchEvent::Bookmark(_) | WatchEvent::Modified(_)))) => {}
            other => panic!("expected the DELETED event: {other:?}"),
        }
    }
    assert!(
        pick(&server, RequestRecord::is_watch).iter().all(|p| *p),
        "the watch was protobuf"
    );
}

#[tokio::test]
async fn custom_resources_and_dynamic_objects_stay_json() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm("default", "a", "1")).unwrap();
    let resource = kube::discovery::ApiResource::erase::<ConfigMap>(&());
    let dynamic = ListWatch::dynamic(
        Api::<DynamicObject>::namespaced_with(server.client(), "default", &resource),
        &resource,
    );
    assert!(!dynamic.asks_for_protobuf());
    let page = dynamic.list(&ListRequest::default()).await.expect("LIST");
    assert_eq!(page.items.len(), 1);
    let meta = ListWatch::metadata(Api::<ConfigMap>::namespaced(server.client(), "default"));
    assert!(!meta.asks_for_protobuf());
    meta.list(&ListRequest::default()).await.expect("LIST");
    assert_eq!(protobuf_lists(&server), [false, false]);
}

#[tokio::test]
async fn an_undecodable_protobuf_list_costs_one_retry_and_turns_to_json() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&cm("default", "a", "1")).unwrap();
    server.faults().hostile_next(
        FaultTarget::List,
        HostileResponse::Body {
            content_type: "application/vnd.kubernetes.protobuf".into(),
            // The magic, then an envelope whose list message's ListMeta holds its field 2
            // (resourceVersion, a string) as a varint: malformed, whatever the version (T8
            // passes over only fields the schema does not have).
            body: [
                &b"k8s\0"[..],
                &[0x0a, 0x11, 0x0a, 0x02],
                b"v1",
                &[0x12, 0x0b],
                b"ConfigMapList",
                &[0x12, 0x04, 0x0a, 0x02, 0x10, 0x01],
            ]
            .concat(),
        },
        1,
    );
    let lw = ListWatch::<ConfigMap>::new(Api::namespaced(server.client(), "default"));
    let err = lw
        .list(&ListRequest::default())
        .await
        .expect_err("a malformed ListMeta field");
    assert!(
        matches!(err, Error::Protobuf { what: "list", .. }),
        "{err:?}"
    );
    assert!(!lw.asks_for_protobuf(), "JSON from now on");
    let page = lw.list(&ListRequest::default()).await.expect("JSON LIST");
    assert_eq!(page.items.len(), 1);
    assert_eq!(protobuf_lists(&server), [true, false]);
}

/// T5: a protobuf request's error answer is a protobuf `Status`, and so is a protobuf watch's
/// `ERROR` event; the runtime reads reason, code and `retryAfterSeconds` from both.
#[tokio::test]
async fn t5_protobuf_error_answers_and_error_events_keep_their_status() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create_json(pod("default", "p")).expect("create");
    let mut config = server.kube_config();
    config.default_retry = false;
    let client = kube::Client::try_from(config).expect("client");
    let lw = ListWatch::<Pod>::new(Api::namespaced(client, "default"));
    server.faults().fail_next(
        FaultTarget::List,
        http::StatusCode::TOO_MANY_REQUESTS,
        Some(7),
        1,
    );
    match lw.list(&ListRequest::default()).await {
        Err(Error::Api {
            status,
            retry_after,
        }) => {
            assert_eq!(
                (status.code, status.reason.as_str()),
                (429, "TooManyRequests")
            );
            assert_eq!(retry_after, Some(Duration::from_secs(7)));
        }
        other => panic!("a 429: {other:?}"),
    }
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.is_list() && r.status == 429 && r.protobuf),
        "the error came in protobuf"
    );
    let watch = WatchRequest {
        timeout: Duration::from_secs(60),
        ..Default::default()
    };
    let mut stream = lw.watch(&watch).await.expect("watch");
    assert!(
        server.wait_for_active_watches(1, WAIT).await,
        "the watch is open"
    );
    server.faults().expire_open_watches();
    loop {
        match tokio::time::timeout(WAIT, futures::StreamExt::next(&mut stream)).await {
            Ok(Some(Ok(WatchEvent::Added(_) | WatchEvent::Bookmark(_)))) => {}
            Ok(Some(Err(Error::Api { status, .. }))) => {
                assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
                break;
            }
            other => panic!("the protobuf ERROR event: {other:?}"),
        }
    }
    assert!(
        lw.asks_for_protobuf(),
        "errors are no reason to turn to JSON"
    );
}

/// T6: watch events decoded on a decode pool of two threads (runs of the events already read,
/// when a run holds 64 KiB or more; smaller runs inline) are handed on in wire order, in protobuf
/// and in JSON: large and small ConfigMaps written one after another arrive in the order
/// written, each with its own data.
#[tokio::test]
async fn t6_pooled_and_inline_watch_events_keep_wire_order() {
    use informer_runtime::list_watch::DecodePool;
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    let pool = DecodePool::new(2).expect("a pool of two threads");
    for protobuf in [true, false] {
        let lw = ListWatch::<ConfigMap>::new(api.clone())
            .prefer_protobuf(protobuf)
            .decode_pool(pool.clone());
        let start = lw.list(&ListRequest::default()).await.expect("LIST");
        let mut stream = lw
            .watch(&WatchRequest {
                resource_version: start.resource_version.clone(),
                timeout: Duration::from_secs(60),
                ..Default::default()
            })
            .await
            .expect("WATCH");
        // Every third object is 96 KiB (decoded on the pool), the others a few bytes (inline).
        let written: Vec<(String, usize)> = (0..12)
            .map(|i| {
                (
                    format!("{}-{i}", if protobuf { "pb" } else { "js" }),
                    if i % 3 == 0 { 96 << 10 } else { 8 },
                )
            })
            .collect();
        for (name, size) in &written {
            server
                .create(&informer_test_support::cm(
                    "default",
                    name,
                    &"x".repeat(*size),
                ))
                .expect("create");
        }
        let mut seen = Vec::new();
        while seen.len() < written.len() {
            match tokio::time::timeout(WAIT, futures::StreamExt::next(&mut stream)).await {
                Ok(Some(Ok(WatchEvent::Added(cm)))) => {
                    let data = cm.data.unwrap_or_default();
                    let size = data.values().map(String::len).sum::<usize>();
                    seen.push((cm.metadata.name.unwrap_or_default(), size));
                }
                Ok(Some(Ok(WatchEvent::Bookmark(_)))) => {}
                other => panic!("expected ADDED events: {other:?}"),
            }
        }
        assert_eq!(seen, written, "protobuf: {protobuf}");
        assert_eq!(
            server
                .requests()
                .iter()
                .rfind(|r| r.is_watch())
                .map(|r| r.protobuf),
            Some(protobuf)
        );
    }
}

/// A Pod as a newer Kubernetes version serves it: three fields this build's schema lacks, in
/// the Pod, its metadata and its spec (one of them a message).
fn newer_pod(name: &str, node: &str) -> serde_json::Value {
    let mut p = pod("default", name);
    p["spec"]["nodeName"] = json!(node);
    p["spec"]["newerPolicy"] = json!({"mode": "Strict", "retries": 3, "zones": ["a", "b"]});
    p["metadata"]["newerOwnerHint"] = json!(format!("hint-{name}"));
    p["newerTopLevel"] = json!(true);
    p
}

async fn next_add(
    events: &mut informer_runtime::informer::EventStream<Pod>,
) -> std::sync::Arc<Pod> {
    use futures::StreamExt as _;
    match tokio::time::timeout(WAIT, events.next()).await {
        Ok(Some(informer_runtime::informer::InformerEvent::Added { obj, .. })) => obj,
        Ok(_) => panic!("expected an add"),
        Err(_) => panic!("no add within {WAIT:?}"),
    }
}

/// T8 over HTTP: an informer of k8s-openapi Pods against a server newer than its schema stays
/// on protobuf through its initial list (the default, streaming) and its watch, caches exactly
/// what a JSON GET gives, and counts every newer field it passed over, in the metric too.
#[tokio::test]
async fn t8_a_newer_server_keeps_the_informer_on_protobuf_and_loses_nothing() {
    use informer_runtime::informer::{InformerConfig, SharedIndexInformer};
    init_tracing();
    let server = TestServer::builder()
        .newer_schema(true)
        .start()
        .await
        .unwrap();
    for i in 0..4 {
        server
            .create_json(newer_pod(&format!("p{i}"), &format!("node-{i}")))
            .expect("create");
    }
    let api = Api::<Pod>::namespaced(server.client(), "default");
    let lw = ListWatch::<Pod>::new(api.clone());
    let informer = SharedIndexInformer::new(
        lw.clone(),
        InformerConfig {
            name: "pods".into(),
            ..Default::default()
        },
    )
    .expect("informer");
    let mut registry = prometheus_client::registry::Registry::default();
    registry.register_collector(Box::new(informer.collector()));
    let mut events = informer.event_stream().expect("stream");
    let cancel = tokio_util::sync::CancellationToken::new();
    let task = informer.start(cancel.clone());
    for _ in 0..4 {
        next_add(&mut events).await;
    }
    server
        .create_json(newer_pod("late", "node-late"))
        .expect("create");
    let late = next_add(&mut events).await;
    assert_eq!(late.metadata.name.as_deref(), Some("late"));

    // It stayed on protobuf: every list and watch it sent asked for and got protobuf.
    assert!(lw.asks_for_protobuf(), "protobuf kept");
    let informer_requests = pick(&server, |r| r.is_list() || r.is_watch());
    assert!(!informer_requests.is_empty());
    assert!(
        informer_requests.iter().all(|p| *p),
        "{informer_requests:?}"
    );

    // Nothing the k8s-openapi Pod holds was lost: the cache is what JSON gives.
    let mut cached: Vec<Pod> = informer
        .indexer()
        .list()
        .iter()
        .map(|p| (**p).clone())
        .collect();
    cached.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut from_json = api
        .list(&Default::default())
        .await
        .expect("JSON LIST")
        .items;
    from_json.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    assert_eq!(cached.len(), 5);
    assert_eq!(cached, from_json, "T2 with a newer server");
    let p0 = cached
        .iter()
        .find(|p| p.metadata.name.as_deref() == Some("p0"));
    assert_eq!(
        p0.and_then(|p| p.spec.as_ref()?.node_name.as_deref()),
        Some("node-0")
    );

    // Three newer fields in each of the five Pods, each decoded once.
    let counters = informer.reflector_handle().expect("started").counters();
    assert_eq!(counters.protobuf_fields_passed_over, 15);
    assert_eq!(lw.protobuf_fields_passed_over(), 15);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("encode");
    assert!(
        text.lines()
            .any(|l| l == "informer_protobuf_fields_passed_over_total{informer=\"pods\"} 15"),
        "{text}"
    );
    cancel.cancel();
    tokio::time::timeout(WAIT, task)
        .await
        .expect("stopped")
        .expect("run task");
}
