//! informer-k8s's compact Pod over HTTP against informer-testserver (P1-P3, P6, P7), reached through
//! its accessor `factory.core().v1().pods().compact()`: listers, selectors, an index,
//! handlers, a relist, the conversions both ways and the sizes.
//!
//! Run with `cargo test -p informer-examples --test compact`.

use informer_test_support::{WAIT, wait_until};
use std::collections::BTreeSet;
use std::sync::Arc;

use informer_k8s::InformerFactoryExt;
use informer_k8s::compact::api::core::v1 as compact;
use informer_k8s::compact::apimachinery::pkg::apis::meta::v1 as compact_meta;
use informer_runtime::compact::IStr;
use informer_runtime::indexer::Indexers;
use informer_runtime::informer::handler_fn;
use informer_runtime::{Meta, SharedInformerFactory};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::Selector;
use parking_lot::Mutex;
use serde_json::{Value, json};

fn pod_json(ns: &str, name: &str, node: &str, app: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": ns, "labels": {"app": app, "tier": "backend"},
            "annotations": {"prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("{app}-rs"),
                                 "uid": "6a1b", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                               "apiVersion": "v1", "fieldsType": "FieldsV1", "time": "2026-11-20T08:14:03Z",
                               "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]
        },
        "spec": {
            "nodeName": node,
            "containers": [
                {"name": "app", "image": format!("registry.example.com/{app}:v1"),
                 "env": [{"name": "MODE", "value": "prod"},
                         {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                 "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                 "resources": {"limits": {"cpu": "1", "memory": "256Mi"}, "requests": {"cpu": "100m"}},
                 "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5}},
                {"name": "sidecar", "image": "proxy:1.2", "args": ["--level", "info"]}
            ],
            "volumes": [{"name": "data", "emptyDir": {}},
                        {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}}],
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                             "effect": "NoExecute", "tolerationSeconds": 300}]
        },
        "status": {
            "phase": "Running", "podIP": "10.0.0.7", "hostIP": "192.168.1.2",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-20T08:14:03Z"}
            ],
            "containerStatuses": [{"name": "app", "ready": true, "restartCount": 2, "image": "x", "imageID": "y",
                                   "started": true, "state": {"running": {"startedAt": "2026-11-20T08:14:05Z"}}}]
        }
    })
}

fn node_of(pod: &compact::Pod) -> Vec<String> {
    pod.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .map(|n| vec![n.to_owned()])
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p1_p6_compact_pods_through_the_generated_accessor() {
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
    let pods = factory.core().v1().pods().compact();
    pods.informer()
        .add_indexers(Indexers::new().with("by_node", node_of))
        .unwrap();
    factory.start();
    assert!(
        factory.wait_for_cache_sync_timeout(WAIT).await.is_ok(),
        "the compact informer syncs"
    );
    assert!(
        server
            .requests()
            .iter()
            .any(|r| r.path == "/api/v1/pods" && (r.is_list() || r.is_watch())),
        "the compact Pod lists and watches the Pod endpoint"
    );

    // P1/P2: the cached compact Pod is the server's Pod, field for field, both ways.
    let api: Api<Pod> = Api::namespaced(server.client(), "prod");
    let full = api.get("web-1").await.unwrap();
    let lister = pods.lister();
    let cached = lister.namespaced("prod").get("web-1").expect("cached");
    assert_eq!(*cached, compact::Pod::from(&full));
    assert_eq!(Pod::from(&*cached), full);
    assert_eq!(
        serde_json::to_value(&*cached).unwrap(),
        serde_json::to_value(&full).unwrap()
    );
    assert_eq!(cached.object_uid(), full.metadata.uid.as_deref());
    assert_eq!(
        cached.object_resource_version(),
        full.metadata.resource_version.as_deref()
    );
    let spec = cached.spec.as_deref().unwrap();
    let limits = spec.containers[0]
        .resources
        .as_deref()
        .unwrap()
        .limits
        .as_ref()
        .unwrap();
    assert_eq!(limits.get("memory"), Some("256Mi"));

    // P3: repeated strings and identical managedFields documents are shared between Pods.
    let other = lister.namespaced("prod").get("web-0").unwrap();
    let image = |p: &compact::Pod| p.spec.as_deref().unwrap().containers[1].image.clone();
    assert!(IStr::ptr_eq(
        &image(&cached).unwrap(),
        &image(&other).unwrap()
    ));
    let fields = |p: &compact::Pod| {
        p.metadata.managed_fields.as_ref().unwrap()[0]
            .fields_v1
            .clone()
            .unwrap()
    };
    assert_eq!(fields(&cached), fields(&other));
    assert_eq!(
        fields(&cached).to_json_string(),
        r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}"#
    );

    // Listers, selectors and an index work on the compact type as on the full one.
    assert_eq!(lister.namespaced("dev").list(&Selector::default()).len(), 1);
    assert_eq!(lister.list(&Selector::from_iter([("app", "web")])).len(), 3);
    let on_n2: BTreeSet<String> = pods
        .informer()
        .indexer()
        .by_index("by_node", "n2")
        .unwrap()
        .iter()
        .map(|p| p.object_name().unwrap().to_owned())
        .collect();
    assert_eq!(on_n2, BTreeSet::from(["web-2".into(), "api-0".into()]));

    // P2: a compact Pod converts back for a write through kube::Api.
    let mut copy = Pod::from(&*other);
    copy.metadata.name = Some("web-copy".into());
    copy.metadata.resource_version = None;
    copy.metadata.uid = None;
    api.create(&PostParams::default(), &copy).await.unwrap();
    wait_until("the created copy", || {
        lister.namespaced("prod").get("web-copy").is_ok()
    })
    .await;
    factory.shutdown().await;
}

#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Add(String),
    Update(String, Option<String>),
    Delete(String, bool),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn p6_handlers_and_a_relist_on_compact_pods() {
    let server = TestServer::start().await.expect("testserver");
    for i in 0..4 {
        server
            .create_json(pod_json("prod", &format!("web-{i}"), "n1", "web"))
            .unwrap();
    }
    let factory = SharedInformerFactory::builder(server.client()).build();
    let pods = factory.core().v1().pods().compact();
    let informer = pods.informer();
    let events: Arc<Mutex<Vec<Ev>>> = Arc::default();
    let (e1, e2, e3) = (events.clone(), events.clone(), events.clone());
    let reg = informer
        .add_event_handler(
            handler_fn::<compact::Pod>()
                .on_add(move |p, _| e1.lock().push(Ev::Add(p.object_name().unwrap().into())))
                .on_update(move |_, p| {
                    e2.lock().push(Ev::Update(
                        p.object_name().unwrap().into(),
                        p.object_label("app").map(String::from),
                    ))
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

    let api: Api<Pod> = Api::namespaced(server.client(), "prod");
    api.patch(
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
            .any(|e| matches!(e, Ev::Update(n, Some(app)) if n == "web-2" && app == "web2"))
    })
    .await;

    // R12 + D5: the watch expires while a Pod is deleted; the relist tombstones it and keeps the
    // cached Arc of every unchanged compact Pod.
    let lister = pods.lister();
    let before: Vec<Arc<compact::Pod>> = ["web-0", "web-1"]
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
            "{name} kept its Arc across the relist"
        );
    }
    factory.shutdown().await;
}

#[test]
fn r16_a_compact_pod_rejects_another_kind_and_accepts_list_items_without_one() {
    let err = serde_json::from_value::<compact::Pod>(json!({"kind": "Node", "metadata": {}}))
        .unwrap_err();
    assert!(
        err.to_string().contains("expected kind `Pod`, got `Node`"),
        "{err}"
    );
    let item: compact::Pod = serde_json::from_value(json!({"metadata": {"name": "a"}})).unwrap();
    assert_eq!(item.object_name(), Some("a"));
    // k8s-openapi writes apiVersion and kind; so does the compact Pod.
    let v = serde_json::to_value(&item).unwrap();
    assert_eq!(v["apiVersion"], "v1");
    assert_eq!(v["kind"], "Pod");
}

#[test]
fn p1_null_and_absent_fields_decode_as_k8s_openapi_decodes_them() {
    // `containers` is required with a default: null and absent are empty, as in k8s-openapi.
    for spec in [json!({}), json!({"containers": null})] {
        let pod = json!({"metadata": {"name": "a"}, "spec": spec});
        let full: Pod = serde_json::from_value(pod.clone()).unwrap();
        let compact: compact::Pod = serde_json::from_value(pod).unwrap();
        assert_eq!(
            serde_json::to_value(&compact).unwrap(),
            serde_json::to_value(&full).unwrap()
        );
    }
    // Empty and absent stay distinct (labels: {} is not labels absent).
    let pod = json!({"metadata": {"name": "a", "labels": {}}});
    let compact: compact::Pod = serde_json::from_value(pod).unwrap();
    assert!(
        compact
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.is_empty())
    );
}

/// P7: the sizes of the main compact types stay put (an inline struct cannot grow back).
#[test]
fn p7_sizes_stay_put() {
    use std::mem::size_of;
    let sizes = [
        ("Pod", size_of::<compact::Pod>()),
        ("ObjectMeta", size_of::<compact_meta::ObjectMeta>()),
        ("PodSpec", size_of::<compact::PodSpec>()),
        ("Container", size_of::<compact::Container>()),
        ("EnvVar", size_of::<compact::EnvVar>()),
        ("Volume", size_of::<compact::Volume>()),
        ("VolumeMount", size_of::<compact::VolumeMount>()),
        ("PodStatus", size_of::<compact::PodStatus>()),
        ("ContainerStatus", size_of::<compact::ContainerStatus>()),
    ];
    assert_eq!(
        sizes,
        [
            ("Pod", 224),
            ("ObjectMeta", 208),
            ("PodSpec", 424),
            ("Container", 256),
            ("EnvVar", 24),
            ("Volume", 256),
            ("VolumeMount", 72),
            ("PodStatus", 280),
            ("ContainerStatus", 136),
        ]
    );
    assert!(size_of::<compact::Pod>() < size_of::<Pod>() / 8);
}
