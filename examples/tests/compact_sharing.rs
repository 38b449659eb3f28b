//! Structural sharing of informer-k8s's compact Pod over HTTP against informer-testserver (P3
//! generalised to sub-objects): sibling Pods of one ReplicaSet share their containers,
//! volumes, tolerations, affinity and owner reference; an update that changes one container of
//! one Pod allocates only that container; parts no cached Pod uses any more are freed. Over
//! JSON and over protobuf.
//!
//! Run with `cargo test -p informer-examples --test compact_sharing`.

// The scenario is one helper shared by the JSON and protobuf tests (clippy allows unwrap only
// in the `#[test]` functions themselves).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use informer_k8s::InformerFactoryExt;
use informer_k8s::compact::api::core::v1 as compact;
use informer_runtime::SharedInformerFactory;
use informer_runtime::compact::{Share, Shared};
use informer_test_support::{WAIT, wait_until};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use serde_json::{Value, json};

/// A Pod of ReplicaSet `rs` (its template is what `app` and `image` say); `name` and `node`
/// are its own.
fn sibling(rs: &str, image: &str, name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": "shop", "labels": {"app": rs},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                                 "uid": format!("uid-{rs}"), "controller": true}]
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "app", "image": image,
                 "env": [{"name": "RS", "value": rs}],
                 "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                 "volumeMounts": [{"name": "cfg", "mountPath": "/etc/cfg"}]},
                {"name": "proxy", "image": "proxy:1.2", "args": ["--port", "15001"]}
            ],
            "volumes": [{"name": "cfg", "configMap": {"name": format!("{rs}-cfg")}}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}],
            "affinity": {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
                 "labelSelector": {"matchLabels": {"app": rs}}}}]}}
        },
        "status": {"phase": "Running", "podIP": format!("10.0.0.{}", name.len())}
    })
}

fn spec(p: &compact::Pod) -> &compact::PodSpec {
    p.spec.as_deref().expect("a spec")
}

async fn siblings_share_their_template_parts(protobuf: bool) {
    let server = TestServer::start().await.expect("testserver");
    // Pools are process-wide: the two tests' web templates differ, so that one test's Pods do
    // not keep the other's parts alive.
    let image = if protobuf { "web:v1-pb" } else { "web:v1-json" };
    for (i, node) in ["n1", "n2", "n3"].iter().enumerate() {
        server
            .create_json(sibling("web", image, &format!("web-{i}"), node))
            .unwrap();
    }
    server
        .create_json(sibling("api", "api:v7", "api-0", "n1"))
        .unwrap();
    let factory = SharedInformerFactory::builder(server.client())
        .protobuf(protobuf)
        .build();
    let pods = factory.core().v1().pods().compact();
    let lister = pods.lister();
    factory.start();
    assert!(factory.wait_for_cache_sync_timeout(WAIT).await.is_ok());
    let get = |name: &str| lister.namespaced("shop").get(name).expect("cached");
    let (w0, w1, w2, a0) = (get("web-0"), get("web-1"), get("web-2"), get("api-0"));

    // Siblings: one allocation per template part, across every cached Pod.
    for other in [&w1, &w2] {
        let (a, b) = (spec(&w0), spec(other));
        assert!(Shared::ptr_eq(&a.containers[0], &b.containers[0]));
        assert!(Shared::ptr_eq(&a.containers[1], &b.containers[1]));
        assert!(Shared::ptr_eq(
            &a.volumes.as_ref().unwrap()[0],
            &b.volumes.as_ref().unwrap()[0]
        ));
        assert!(Shared::ptr_eq(
            &a.tolerations.as_ref().unwrap()[0],
            &b.tolerations.as_ref().unwrap()[0]
        ));
        assert!(Shared::ptr_eq(
            a.affinity.as_ref().unwrap(),
            b.affinity.as_ref().unwrap()
        ));
        assert!(Shared::ptr_eq(
            &w0.metadata.owner_references.as_ref().unwrap()[0],
            &other.metadata.owner_references.as_ref().unwrap()[0]
        ));
    }
    // Another template shares what is equal (the proxy, the toleration) and nothing else.
    let (web, api) = (spec(&w0), spec(&a0));
    assert!(!Shared::ptr_eq(&web.containers[0], &api.containers[0]));
    assert!(Shared::ptr_eq(&web.containers[1], &api.containers[1]));
    assert!(Shared::ptr_eq(
        &web.tolerations.as_ref().unwrap()[0],
        &api.tolerations.as_ref().unwrap()[0]
    ));
    assert!(!Shared::ptr_eq(
        web.affinity.as_ref().unwrap(),
        api.affinity.as_ref().unwrap()
    ));
    // Lossless: each cached Pod is still exactly the server's.
    let api_pods: Api<Pod> = Api::namespaced(server.client(), "shop");
    let full = api_pods.get("web-1").await.unwrap();
    assert_eq!(Pod::from(&*w1), full);

    // An update that changes one container of one Pod allocates only that container.
    let new_image = if protobuf {
        "proxy:1.3-pb"
    } else {
        "proxy:1.3-json"
    };
    let patch = json!({"spec": {"containers": [{"name": "proxy", "image": new_image}]}});
    api_pods
        .patch("web-1", &PatchParams::default(), &Patch::Strategic(&patch))
        .await
        .unwrap();
    wait_until("web-1 with the new proxy", || {
        let p = get("web-1");
        spec(&p).containers[1].image.as_deref() == Some(new_image)
    })
    .await;
    drop(w1);
    let w1 = get("web-1");
    assert!(Shared::ptr_eq(
        &spec(&w1).containers[0],
        &spec(&w0).containers[0]
    ));
    assert!(!Shared::ptr_eq(
        &spec(&w1).containers[1],
        &spec(&w0).containers[1]
    ));
    assert!(Shared::ptr_eq(
        &spec(&w0).containers[1],
        &spec(&w2).containers[1]
    ));
    assert!(Shared::ptr_eq(
        spec(&w1).affinity.as_ref().unwrap(),
        spec(&w0).affinity.as_ref().unwrap()
    ));

    // Parts that no cached Pod uses any more are freed: delete the web Pods, drop our
    // handles, and the web container leaves its pool (the shared proxy stays: api-0 uses it).
    let web_app = compact::Container::clone(&spec(&w0).containers[0]);
    let new_proxy = compact::Container::clone(&spec(&w1).containers[1]);
    assert!(compact::Container::pool().holds(&web_app));
    drop((w0, w1, w2));
    for name in ["web-0", "web-1", "web-2"] {
        api_pods
            .delete(name, &DeleteParams::default())
            .await
            .unwrap();
    }
    wait_until(
        "the web Pods leave the cache and their parts the pool",
        || {
            compact::Container::pool().sweep();
            lister.namespaced("shop").get("web-0").is_err()
                && !compact::Container::pool().holds(&web_app)
                && !compact::Container::pool().holds(&new_proxy)
        },
    )
    .await;
    assert!(compact::Container::pool().holds(&spec(&a0).containers[1]));
    factory.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p3_sibling_pods_share_their_template_parts_over_json() {
    siblings_share_their_template_parts(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p3_sibling_pods_share_their_template_parts_over_protobuf() {
    siblings_share_their_template_parts(true).await;
}
