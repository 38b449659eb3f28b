//! Projections over HTTP against informer-testserver (P4-P7): a Pod projection decoded straight
//! from the wire, with listers, label selectors, declarative indexes, handlers and a relist.
//!
//! Run with `cargo test -p informer-runtime --test projection`.

mod informer_support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use informer_derive::Projection;
use informer_runtime::SharedInformerFactory;
use informer_runtime::factory::InformerId;
use informer_runtime::informer::handler_fn;
use informer_runtime::lister::Lister;
use informer_runtime::projection::{IStr, SlimMeta};
use informer_runtime::{Meta, Object};
use informer_support::wait_until;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::{Container, Pod, PodCondition, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, Patch, PatchParams};
use kube::core::{Expression, Selector};
use parking_lot::Mutex;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(20);

/// A typical controller's view of a Pod: slim metadata, where it runs, what it runs, how it is.
#[derive(Projection, Clone, Debug)]
#[projection(of = Pod, index(name = "by_node", function = node_of))]
struct PodView {
    metadata: SlimMeta,
    spec: Option<PodSpecView>,
    status: Option<PodStatusView>,
}

#[derive(Projection, Clone, Debug)]
#[projection(of = PodSpec)]
struct PodSpecView {
    node_name: Option<IStr>,
    containers: Box<[ContainerView]>,
}

#[derive(Projection, Clone, Debug, PartialEq)]
#[projection(of = Container)]
struct ContainerView {
    name: IStr,
    image: Option<IStr>,
}

#[derive(Projection, Clone, Debug)]
#[projection(of = PodStatus)]
struct PodStatusView {
    phase: Option<IStr>,
    pod_ip: Option<Box<str>>,
    conditions: Option<Box<[ConditionView]>>,
}

#[derive(Projection, Clone, Debug, PartialEq)]
#[projection(of = PodCondition)]
struct ConditionView {
    type_: IStr,
    status: IStr,
    last_transition_time: Option<Time>,
}

fn node_of(pod: &PodView) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .map(|n| vec![n.to_owned()])
        .unwrap_or_default()
}

fn pod_json(ns: &str, name: &str, node: &str, app: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": ns, "labels": {"app": app, "tier": "backend"},
            "annotations": {"prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-rs"),
                                 "uid": "6a1b", "controller": true, "blockOwnerDeletion": true}],
            "finalizers": ["example.com/cleanup"],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "app", "image": format!("registry.example.com/{app}:v1"),
                 "env": [{"name": "MODE", "value": "prod"}], "resources": {"limits": {"cpu": "1"}}},
                {"name": "sidecar", "image": "proxy:1.2"}
            ],
            "volumes": [{"name": "data", "emptyDir": {}}]
        },
        "status": {
            "phase": "Running", "podIP": "10.0.0.7", "hostIP": "192.168.1.2",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-20T08:14:03Z"},
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-20T08:14:01Z"}
            ]
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p4_p6_projection_informer_lists_the_source_endpoint_and_matches_the_full_object() {
    let server = TestServer::start().await.expect("testserver");
    for (i, node) in ["n1", "n1", "n2"].iter().enumerate() {
        server
            .create_json(pod_json("prod", &format!("web-{i}"), node, "web"))
            .unwrap();
    }
    server
        .create_json(pod_json("dev", "api-0", "n2", "api"))
        .unwrap();
    let factory = SharedInformerFactory::builder(server.client()).build();
    let informer = factory.informer_for::<PodView>();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("projection informer syncs");

    // The projection's informer is its own (F1), named after the source resource.
    assert_eq!(
        InformerId::of::<PodView>().to_string(),
        "v1/pods (projection PodView)"
    );
    assert!(!Arc::ptr_eq(
        &(factory.informer_for::<PodView>() as Arc<dyn std::any::Any + Send + Sync>),
        &(factory.informer_for::<Pod>() as Arc<dyn std::any::Any + Send + Sync>)
    ));
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.path == "/api/v1/pods" && (r.is_list() || r.is_watch())),
        "the projection lists and watches the Pod endpoint"
    );

    // P6: key, UID and resourceVersion are the source object's; P4: the declared fields match.
    let pods: Api<Pod> = Api::namespaced(server.client(), "prod");
    let full = pods.get("web-1").await.unwrap();
    let lister = Lister::from_indexer(informer.indexer().clone());
    let view = lister.namespaced("prod").get("web-1").expect("cached");
    assert_eq!(view.object_uid(), full.metadata.uid.as_deref());
    assert_eq!(
        view.object_resource_version(),
        full.metadata.resource_version.as_deref()
    );
    assert_eq!(view.metadata, SlimMeta::from(&full.metadata));
    let spec = view.spec.as_ref().unwrap();
    assert_eq!(spec.node_name.as_deref(), Some("n1"));
    let full_spec = full.spec.as_ref().unwrap();
    assert_eq!(
        spec.containers
            .iter()
            .map(|c| (c.name.to_string(), c.image.as_ref().map(|i| i.to_string())))
            .collect::<Vec<_>>(),
        full_spec
            .containers
            .iter()
            .map(|c| (c.name.clone(), c.image.clone()))
            .collect::<Vec<_>>()
    );
    let status = view.status.as_ref().unwrap();
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert_eq!(
        status.pod_ip.as_deref(),
        Some("10.0.0.7"),
        "podIP <-> pod_ip"
    );
    let conditions = status.conditions.as_deref().unwrap();
    assert_eq!(conditions.len(), 2);
    assert_eq!(&*conditions[0].type_, "Ready", "type <-> type_");
    assert_eq!(
        conditions[0].last_transition_time,
        full.status.as_ref().unwrap().conditions.as_ref().unwrap()[0].last_transition_time
    );

    // P3: repeated strings are shared between cached objects.
    let other = lister.namespaced("prod").get("web-0").unwrap();
    let image = |p: &PodView| {
        p.spec.as_ref().unwrap().containers[1]
            .image
            .clone()
            .unwrap()
    };
    assert!(IStr::ptr_eq(&image(&view), &image(&other)));

    // L1/L2 and X2: namespaces, selectors and the declared index work on the projection.
    assert_eq!(lister.namespaced("dev").list(&Selector::default()).len(), 1);
    let sel = Selector::from_iter([("app", "web")]);
    assert_eq!(lister.list(&sel).len(), 3);
    let sel = Selector::from_iter([
        Expression::In("app".into(), ["api".into()].into()),
        Expression::NotEqual("tier".into(), "frontend".into()),
    ]);
    assert_eq!(lister.list(&sel).len(), 1);
    let on_n1: BTreeSet<String> = lister
        .by_index("by_node", "n1")
        .unwrap()
        .iter()
        .map(|p| p.object_name().unwrap().to_owned())
        .collect();
    assert_eq!(on_n1, BTreeSet::from(["web-0".into(), "web-1".into()]));
    assert!(lister.namespaced("prod").get("nope").is_err(), "L3");
    factory.shutdown().await;
}

#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Add(String, Option<String>),
    Update(String, Option<String>),
    Delete(String, bool),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p6_handlers_and_relists_on_a_projection_follow_the_source_objects() {
    let server = TestServer::start().await.expect("testserver");
    for i in 0..4 {
        let mut pod = pod_json("prod", &format!("web-{i}"), "n1", "web");
        // No finalizer: the delete below removes the Pod at once.
        pod["metadata"]["finalizers"].take();
        server.create_json(pod).unwrap();
    }
    let factory = SharedInformerFactory::builder(server.client()).build();
    let informer = factory.informer_for::<PodView>();
    let events: Arc<Mutex<Vec<Ev>>> = Arc::default();
    let node = |p: &PodView| {
        p.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref().map(String::from))
    };
    let (e1, e2, e3) = (events.clone(), events.clone(), events.clone());
    let reg = informer
        .add_event_handler(
            handler_fn::<PodView>()
                .on_add(move |p, _| {
                    e1.lock()
                        .push(Ev::Add(p.object_name().unwrap().into(), node(p)))
                })
                .on_update(move |_, p| {
                    e2.lock()
                        .push(Ev::Update(p.object_name().unwrap().into(), node(p)))
                })
                .on_delete(move |d| {
                    e3.lock()
                        .push(Ev::Delete(d.key().unwrap().to_string(), d.is_tombstone()))
                }),
        )
        .unwrap();
    let watch_failed = Arc::new(tokio::sync::Notify::new());
    let wf = watch_failed.clone();
    informer
        .set_watch_error_handler(move |_| wf.notify_one())
        .unwrap();
    factory.start();
    assert!(
        tokio::time::timeout(WAIT, reg.wait_for_sync())
            .await
            .expect("handler synced in time"),
        "the handler synced"
    );
    assert_eq!(events.lock().len(), 4);

    // A change to a declared field reaches the handler as an update of the projection.
    let pods: Api<Pod> = Api::namespaced(server.client(), "prod");
    pods.patch(
        "web-2",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "web2"}}})),
    )
    .await
    .unwrap();
    wait_until("the update", || {
        events
            .lock()
            .iter()
            .any(|e| matches!(e, Ev::Update(n, _) if n == "web-2"))
    })
    .await;
    let lister = Lister::from_indexer(informer.indexer().clone());
    assert_eq!(
        lister
            .namespaced("prod")
            .get("web-2")
            .unwrap()
            .metadata
            .labels
            .get("app"),
        Some("web2")
    );

    // R12 + D5 + M8: the watch expires while one Pod is deleted; the relist sends a tombstone
    // for it and keeps the cached Arc of every unchanged projection.
    let before: Vec<Arc<PodView>> = ["web-0", "web-1"]
        .iter()
        .map(|n| lister.namespaced("prod").get(n).unwrap())
        .collect();
    wait_until("the watch", || server.active_watches() >= 1).await;
    server.faults().stall_list(true);
    server.faults().expire_open_watches();
    tokio::time::timeout(WAIT, watch_failed.notified())
        .await
        .expect("the watch error is reported");
    server.delete::<Pod>(Some("prod"), "web-3").unwrap();
    server.faults().stall_list(false);
    wait_until("the tombstone", || {
        events
            .lock()
            .iter()
            .any(|e| matches!(e, Ev::Delete(k, true) if k == "prod/web-3"))
    })
    .await;
    assert_eq!(informer.indexer().len(), 3);
    for (name, old) in ["web-0", "web-1"].iter().zip(&before) {
        let now = lister.namespaced("prod").get(name).unwrap();
        assert!(
            Arc::ptr_eq(old, &now),
            "X7/M8: {name} kept its Arc across the relist"
        );
    }
    factory.shutdown().await;
}

#[test]
fn r16_a_projection_rejects_an_object_of_another_kind() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let err = serde_json::from_value::<PodView>(cm)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("expected an object of kind `Pod`, got kind `ConfigMap`"),
        "{err}"
    );
    // List items carry no kind; they decode.
    let item = json!({"metadata": {"name": "a", "namespace": "n"}, "spec": {"containers": []}});
    let pod: PodView = serde_json::from_value(item).unwrap();
    assert_eq!(pod.object_name(), Some("a"));
}

#[test]
fn p4_absent_and_null_fields_are_none_or_default() {
    let pod: PodView =
        serde_json::from_value(json!({"metadata": {"name": "a"}, "spec": {"containers": null}}))
            .unwrap();
    assert!(pod.spec.unwrap().containers.is_empty());
    assert!(pod.status.is_none());
}

/// A k8s-openapi type's keys whose Rust names are not their snake case (`$ref` is `ref_path`,
/// `$schema` is `schema`), a kebab-case key and a keyword.
#[derive(Projection, Clone, Debug)]
#[projection(of = k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps)]
struct SchemaView {
    ref_path: Option<IStr>,
    schema: Option<IStr>,
    x_kubernetes_preserve_unknown_fields: Option<bool>,
    type_: Option<IStr>,
}

#[test]
fn p4_k8s_openapi_sources_match_every_json_name_including_dollar_keys() {
    let view: SchemaView = serde_json::from_value(json!({
        "$ref": "#/definitions/a", "$schema": "http://json-schema.org/schema#",
        "x-kubernetes-preserve-unknown-fields": true, "type": "object", "ref": "not-this"
    }))
    .unwrap();
    assert_eq!(view.ref_path.as_deref(), Some("#/definitions/a"));
    assert_eq!(
        view.schema.as_deref(),
        Some("http://json-schema.org/schema#")
    );
    assert_eq!(view.x_kubernetes_preserve_unknown_fields, Some(true));
    assert_eq!(view.type_.as_deref(), Some("object"));
}

#[test]
fn p7_sizes_stay_put() {
    use std::mem::size_of;
    assert_eq!(size_of::<IStr>(), 8);
    assert_eq!(size_of::<Option<IStr>>(), 8);
    // The deletion state (C9) is one optional box: 8 bytes, not 32 inline.
    assert!(
        size_of::<SlimMeta>() <= 128,
        "SlimMeta is {} bytes",
        size_of::<SlimMeta>()
    );
    assert!(size_of::<PodView>() <= 128 + 2 * 56);
    // A projection is an Object whose source is the Pod.
    fn source_of<K: Object>() -> &'static str {
        std::any::type_name::<K::Source>()
    }
    assert!(source_of::<PodView>().ends_with("::Pod"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn r17_p6_a_projection_syncs_through_a_watch_list_stream_and_follows_live_events() {
    let server = TestServer::start().await.expect("testserver");
    for i in 0..3 {
        server
            .create_json(pod_json("prod", &format!("web-{i}"), "n1", "web"))
            .unwrap();
    }
    let config = informer_runtime::reflector::ReflectorConfig {
        strategy: informer_runtime::reflector::InitialListStrategy::StreamingList,
        ..Default::default()
    };
    let factory = SharedInformerFactory::builder(server.client())
        .reflector_config(config)
        .build();
    let informer = factory.informer_for::<PodView>();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("projection informer syncs from the stream");
    assert_eq!(informer.indexer().len(), 3);
    assert!(
        server
            .requests()
            .iter()
            .all(|r| !(r.path == "/api/v1/pods" && r.is_list())),
        "R17: the initial list came from the watch-list stream, not a LIST"
    );
    server
        .create_json(pod_json("prod", "web-9", "n3", "web"))
        .unwrap();
    let lister = Lister::from_indexer(informer.indexer().clone());
    wait_until("the live add", || {
        lister.by_index("by_node", "n3").is_ok_and(|v| v.len() == 1)
    })
    .await;
    factory.shutdown().await;
}

/// T7 (KEP-5958): a projection whose metadata is `SlimMeta` keeps no managedFields, so its
/// informer asks the server to leave them out; a server with `ManagedFieldsOptOut` does, for
/// the LIST and the WATCH alike, while the full Pod's informer still gets them, and a factory
/// that strips managedFields asks too.
#[tokio::test]
async fn t7_what_the_cache_does_not_keep_is_left_out_on_the_wire() {
    let server = TestServer::start().await.expect("server");
    server.set_managed_fields_opt_out(true);
    server
        .create_json(pod_json("prod", "web-0", "n1", "web"))
        .expect("create");
    let factory = SharedInformerFactory::new(server.client());
    let views = factory.informer_for::<PodView>();
    factory.start();
    assert!(factory.wait_for_cache_sync().await.values().all(|s| *s));
    assert!(server.wait_for_active_watches(1, WAIT).await, "a watch");
    let projected: Vec<_> = server.requests();
    assert!(
        projected
            .iter()
            .filter(|r| r.is_list() || r.is_watch())
            .all(|r| r.managed_fields_dropped),
        "the projection's LIST and WATCH leave managedFields out"
    );
    assert_eq!(views.indexer().list().len(), 1);
    factory.shutdown().await;

    // The full Pod keeps them.
    server.clear_requests();
    let full = SharedInformerFactory::new(server.client());
    let pods = full.informer_for::<Pod>();
    full.start();
    assert!(full.wait_for_cache_sync().await.values().all(|s| *s));
    assert!(
        server
            .requests()
            .iter()
            .filter(|r| r.is_list())
            .all(|r| !r.managed_fields_dropped)
    );
    let pod = pods.indexer().list().pop().expect("the Pod");
    assert!(
        pod.metadata.managed_fields.is_some(),
        "the full Pod is whole"
    );
    full.shutdown().await;

    // A factory that strips them asks the server to leave them out.
    server.clear_requests();
    let stripping = SharedInformerFactory::builder(server.client())
        .strip_managed_fields()
        .build();
    stripping.informer_for::<Pod>();
    stripping.start();
    assert!(stripping.wait_for_cache_sync().await.values().all(|s| *s));
    assert!(
        server
            .requests()
            .iter()
            .filter(|r| r.is_list())
            .all(|r| r.managed_fields_dropped)
    );
    stripping.shutdown().await;
}
