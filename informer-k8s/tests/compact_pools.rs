//! P3 without new arrivals: after most compact Pods are deleted, the interner and the sharing
//! pools free what only the deleted Pods used, with nothing new arriving, and the factory's
//! metrics show it (`informer_interned_strings`, `informer_shared_values{type}`). Its own test
//! binary: the pools are process-wide, so no other test's objects move the counts.
//!
//! Run with `cargo test -p informer-k8s --features compact --test compact_pools`.

use informer_k8s::InformerFactoryExt;
use informer_k8s::compact::api::core::v1 as compact;
use informer_runtime::SharedInformerFactory;
use informer_runtime::compact::Share;
use informer_test_support::{WAIT, scrape, wait_until};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};
use kube::core::Selector;
use prometheus_client::registry::Registry;
use serde_json::json;

const PODS: usize = 300;
const KEPT: usize = 10;

/// A Pod whose container (a shared `Container` value) and label value (an interned string)
/// no other Pod has.
fn pod(i: usize) -> serde_json::Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("p-{i}"), "namespace": "pools",
            "labels": {"unique": format!("label-value-{i}")}
        },
        "spec": {
            "containers": [{"name": "app", "image": format!("registry.example.com/app-{i}:1")}]
        }
    })
}

/// The sum of the samples of `family` whose series contains `series_part`.
fn sum(text: &str, family: &str, series_part: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(family) && l.contains(series_part))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p3_pools_and_interner_shrink_after_deletes_with_nothing_new_arriving() {
    let server = TestServer::start().await.expect("testserver");
    for i in 0..PODS {
        server.create_json(pod(i)).expect("seed Pod");
    }
    let mut registry = Registry::default();
    let factory = SharedInformerFactory::builder(server.client())
        .metrics(&mut registry)
        .build();
    let pods = factory.core().v1().pods().compact().lister();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("compact Pods sync");
    assert_eq!(pods.list(&Selector::default()).len(), PODS);

    let containers = |text: &str| sum(text, "informer_shared_values{", "::Container\"}");
    let strings = |text: &str| sum(text, "informer_interned_strings ", "");
    let before = scrape(&registry);
    let (containers_before, strings_before) = (containers(&before), strings(&before));
    assert!(
        containers_before >= PODS as f64,
        "one shared Container per Pod: {containers_before}"
    );
    assert!(strings_before >= 2.0 * PODS as f64, "{strings_before}");

    let api: Api<Pod> = Api::namespaced(server.client(), "pools");
    for i in KEPT..PODS {
        api.delete(&format!("p-{i}"), &DeleteParams::default())
            .await
            .expect("delete Pod");
    }
    wait_until("the deleted Pods gone from the compact lister", || {
        pods.list(&Selector::default()).len() == KEPT
    })
    .await;
    // Nothing new arrives now; the background pass frees what the deleted Pods alone used.
    let gone = (PODS - KEPT) as f64;
    wait_until("the pools and the interner to shrink", || {
        let text = scrape(&registry);
        containers(&text) <= containers_before - gone
            && strings(&text) <= strings_before - 2.0 * gone
    })
    .await;
    let after = scrape(&registry);
    assert!(
        containers(&after) >= KEPT as f64,
        "the kept Pods' containers stay shared"
    );
    assert!(after.contains("informer_pool_sweeps_total "), "{after}");
    // What the kept Pods use stays in the pool: a re-decoded equal container is theirs.
    let kept = pods.namespaced("pools").get("p-3").expect("kept Pod");
    let container = &kept.spec.as_ref().expect("a spec").containers[0];
    assert_eq!(
        container.image.as_deref(),
        Some("registry.example.com/app-3:1")
    );
    assert!(<compact::Container as Share>::pool().holds(container));
    factory.shutdown().await;
}
