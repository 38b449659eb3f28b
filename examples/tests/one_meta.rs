//! One metadata trait for every cached form (decision record 26): a helper written once over
//! `informer_runtime::Meta` reads the same name, namespace, uid, labels, annotations, owner
//! references, finalizers, deletion timestamp, generation and resourceVersion from k8s-openapi's
//! Pod, the compact Pod (the default form), a projection over `SlimMeta` and a CRD type, each
//! synced from informer-testserver over HTTP.

use informer_examples::crd::{Foo, FooSpec};
use informer_examples::generated::InformerFactoryExt as _;
use informer_examples::views::PodSummary;
use informer_k8s::InformerFactoryExt as _;
use informer_runtime::{Meta, SharedInformerFactory};
use informer_test_support::{WAIT, wait_until};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};
use serde_json::json;

/// Everything the trait reads, as owned values, so that two forms compare with `==`.
#[derive(Debug, PartialEq)]
struct Summary {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    labels: Vec<(String, String)>,
    annotations: Vec<(String, String)>,
    owners: Vec<(String, String, String, String)>,
    controller: Option<String>,
    finalizers: Vec<String>,
    deleting: bool,
    generation: Option<i64>,
}

/// The helper a user writes once, for any cached form. Labels and annotations are kept in the
/// order the trait gives them (key order in every form), so a form that reordered them differs.
fn summary<K: Meta>(object: &K) -> Summary {
    let owned = |(k, v): (&str, &str)| (k.to_owned(), v.to_owned());
    let labels: Vec<_> = object.object_labels().map(owned).collect();
    let annotations: Vec<_> = object.object_annotations().map(owned).collect();
    Summary {
        name: object.object_name().map(str::to_owned),
        namespace: object.object_namespace().map(str::to_owned),
        uid: object.object_uid().map(str::to_owned),
        resource_version: object.object_resource_version().map(str::to_owned),
        labels,
        annotations,
        owners: object
            .object_owner_references()
            .map(|o| {
                (
                    o.api_version.into(),
                    o.kind.into(),
                    o.name.into(),
                    o.uid.into(),
                )
            })
            .collect(),
        controller: object.object_controller_ref().map(|o| o.name.to_owned()),
        finalizers: object.object_finalizers().map(str::to_owned).collect(),
        deleting: object.object_deletion_timestamp().is_some(),
        generation: object.object_generation(),
    }
}

fn metadata() -> serde_json::Value {
    json!({
        "name": "web-0", "namespace": "prod",
        "labels": {"app": "web", "tier": "front"},
        "annotations": {"example.com/owner": "team-a", "note": "b"},
        "finalizers": ["example.com/keep"],
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d9",
             "uid": "11111111-1111-1111-1111-111111111111", "controller": true},
            {"apiVersion": "example.com/v1", "kind": "Foo", "name": "web",
             "uid": "22222222-2222-2222-2222-222222222222"}
        ]
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cached_form_reads_the_same_metadata() {
    let server = TestServer::start().await.expect("testserver");
    server
        .create_json(json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": metadata(),
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "web:1"}]}
        }))
        .expect("seed Pod");
    let client = server.client();
    informer_examples::demo::install(&client)
        .await
        .expect("install the Foo CRD");
    let mut foo = Foo::new(
        "web",
        FooSpec {
            message: "hello".into(),
            node_name: None,
        },
    );
    foo.metadata = serde_json::from_value(metadata()).expect("Foo metadata");
    foo.metadata.name = Some("web".into());
    server.create(&foo).expect("seed Foo");

    let factory = SharedInformerFactory::new(client.clone());
    let pods = factory.core().v1().pods();
    let (compact, full) = (pods.lister(), pods.full().lister());
    let projected = pods.projected::<PodSummary>().lister();
    let foos = factory.example().v1().foos().lister();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("every form syncs");

    let from_full = summary(&*full.namespaced("prod").get("web-0").expect("full Pod"));
    assert_eq!(
        from_full.labels.len(),
        2,
        "the seeded labels: {from_full:?}"
    );
    assert_eq!(from_full.annotations.len(), 2);
    assert_eq!(from_full.owners.len(), 2);
    assert_eq!(from_full.controller.as_deref(), Some("web-7d9"));
    assert_eq!(from_full.finalizers, ["example.com/keep"]);
    assert!(!from_full.deleting);
    let cached_compact = compact
        .namespaced("prod")
        .get("web-0")
        .expect("compact Pod");
    assert_eq!(summary(&*cached_compact), from_full, "compact");
    let cached_projection = projected
        .namespaced("prod")
        .get("web-0")
        .expect("projection");
    assert_eq!(summary(&*cached_projection), from_full, "projection");
    let from_foo = summary(&*foos.namespaced("prod").get("web").expect("Foo"));
    assert_eq!(
        (&from_foo.labels, &from_foo.annotations, &from_foo.owners),
        (&from_full.labels, &from_full.annotations, &from_full.owners),
        "CRD"
    );

    // A deletion held by the finalizer: every form sees the timestamp at the same version.
    let api: Api<Pod> = Api::namespaced(client, "prod");
    api.delete("web-0", &DeleteParams::default())
        .await
        .expect("delete Pod");
    // Every form, read as the helper reads it: all must see the deletion timestamp.
    let now = || {
        [
            full.namespaced("prod")
                .get("web-0")
                .ok()
                .map(|p| summary(&*p)),
            compact
                .namespaced("prod")
                .get("web-0")
                .ok()
                .map(|p| summary(&*p)),
            projected
                .namespaced("prod")
                .get("web-0")
                .ok()
                .map(|p| summary(&*p)),
        ]
    };
    wait_until("every Pod form sees the deletion timestamp", || {
        now().iter().all(|s| s.as_ref().is_some_and(|s| s.deleting))
    })
    .await;
    let [full_now, compact_now, projection_now] = now();
    assert_eq!(compact_now, full_now, "compact while deleting");
    assert_eq!(projection_now, full_now, "projection while deleting");
    factory.shutdown().await;
}
