//! The `compact` feature: compact Pods synced from informer-testserver through informer-k8s's
//! `factory.core().v1().pods().compact()`, with no generator setting in this crate, and converted
//! to and from k8s-openapi's Pod (issue 26 item 1, issue 27 item 3).
//!
//! Run with `cargo test -p informer-k8s --features compact --test compact`.

use informer_k8s::InformerFactoryExt;
use informer_k8s::compact::api::core::v1 as compact;
use informer_runtime::SharedInformerFactory;
use informer_test_support::{WAIT, wait_until};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};
use kube::core::Selector;
use serde_json::{Value, json};

fn pod_json(name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "prod", "labels": {"app": "web"}},
        "spec": {
            "nodeName": node,
            "containers": [{
                "name": "app", "image": "registry.example.com/web:1",
                "env": [{"name": "MODE", "value": "prod"}],
                "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "1", "memory": "256Mi"}}
            }],
            "volumes": [{"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}}]
        },
        "status": {"phase": "Running", "podIP": "10.0.0.7"}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_pods_sync_and_convert_to_k8s_openapi() {
    let server = TestServer::start().await.expect("testserver");
    for (name, node) in [("web-0", "n1"), ("web-1", "n2")] {
        server.create_json(pod_json(name, node)).expect("seed Pod");
    }
    let factory = SharedInformerFactory::new(server.client());
    let pods = factory.core().v1().pods().compact().lister();
    // Another compact kind of another group, from the same feature.
    let deployments = factory.apps().v1().deployments().compact().lister();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("compact Pods and Deployments sync");
    assert_eq!(pods.list(&Selector::default()).len(), 2);
    assert!(deployments.list(&Selector::default()).is_empty());

    // The cached compact Pod is the server's Pod, field for field, both ways.
    let api: Api<Pod> = Api::namespaced(server.client(), "prod");
    let full = api.get("web-1").await.expect("get Pod");
    let cached = pods.namespaced("prod").get("web-1").expect("cached");
    assert_eq!(*cached, compact::Pod::from(&full));
    let back: Pod = (&*cached).into();
    assert_eq!(back, full);
    assert_eq!(
        cached.spec.as_ref().and_then(|s| s.node_name.as_deref()),
        Some("n2")
    );

    // Changes after the sync arrive through the watch.
    api.delete("web-0", &DeleteParams::default())
        .await
        .expect("delete Pod");
    wait_until("the deleted Pod gone from the compact lister", || {
        pods.namespaced("prod").get("web-0").is_err()
    })
    .await;
    factory.shutdown().await;
}
