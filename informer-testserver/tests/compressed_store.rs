//! A server that keeps its objects LZ4-compressed (`TestServerBuilder::compress_objects`, used
//! by the benchmark's scale scenario) serves exactly the bytes an uncompressed one serves: GET,
//! paged LIST, metadata-only LIST, WATCH replay and updates.
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use futures::{StreamExt, TryStreamExt};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, WatchEvent, WatchParams};

/// The value without what differs between two servers by design (UIDs, creation times).
fn without_identity(mut v: serde_json::Value) -> serde_json::Value {
    match &mut v {
        serde_json::Value::Object(m) => {
            m.remove("uid");
            m.remove("creationTimestamp");
            for x in m.values_mut() {
                *x = without_identity(x.take());
            }
        }
        serde_json::Value::Array(a) => {
            for x in a.iter_mut() {
                *x = without_identity(x.take());
            }
        }
        _ => {}
    }
    v
}

async fn seeded(compress: bool) -> TestServer {
    let server = TestServer::builder()
        .compress_objects(compress)
        .start()
        .await
        .unwrap();
    for i in 0..30 {
        let long = "x".repeat(i * 100);
        server
            .create(&cm(
                &format!("cm-{i:02}"),
                &[("app", "a"), ("fill", &long[..long.len().min(60)])],
            ))
            .unwrap();
    }
    server
}

#[tokio::test]
async fn compressed_objects_are_served_byte_for_byte_as_uncompressed_ones() {
    let (plain, packed) = (seeded(false).await, seeded(true).await);
    for path in [
        "/api/v1/namespaces/default/configmaps/cm-07",
        "/api/v1/namespaces/default/configmaps?limit=7",
        "/api/v1/configmaps?labelSelector=app%3Da",
    ] {
        assert_eq!(
            without_identity(get_ok(&plain, path).await),
            without_identity(get_ok(&packed, path).await),
            "{path}"
        );
    }
    // Metadata-only lists come from the compressed JSON too.
    let meta = |s: &TestServer| {
        let api: Api<ConfigMap> = Api::namespaced(s.client(), "default");
        async move { api.list_metadata(&ListParams::default()).await.unwrap() }
    };
    let (a, b) = (meta(&plain).await, meta(&packed).await);
    assert_eq!(
        without_identity(serde_json::to_value(&a.items).unwrap()),
        without_identity(serde_json::to_value(&b.items).unwrap())
    );
    assert_eq!(a.items.len(), 30);

    // A watch from the current resourceVersion receives a new object, served from the
    // compressed store like everything else.
    let api: Api<ConfigMap> = Api::namespaced(packed.client(), "default");
    let rv = packed.current_resource_version().to_string();
    let mut events = api
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    packed.create(&cm("cm-new", &[("app", "b")])).unwrap();
    let added = tokio::time::timeout(std::time::Duration::from_secs(20), async {
        loop {
            match events.try_next().await.unwrap() {
                Some(WatchEvent::Added(cm)) => return cm,
                Some(_) => continue,
                None => panic!("the watch ended before the new object"),
            }
        }
    })
    .await
    .expect("the new object arrives");
    assert_eq!(added.metadata.name.as_deref(), Some("cm-new"));
    assert_eq!(added.metadata.labels.unwrap()["app"], "b");
}
