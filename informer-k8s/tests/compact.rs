//! The compact forms: the form every handle caches by default (decision record 26), with no
//! feature and no generator setting in this crate; compact Pods synced from informer-testserver
//! and converted to and from k8s-openapi's Pod (decision records 17 and 19); and the compact forms
//! of kinds of other groups (every built-in kind has one).

use informer_k8s::InformerFactoryExt;
use informer_k8s::compact::api::core::v1 as compact;
use informer_runtime::SharedInformerFactory;
use informer_runtime::lister::Lister;
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

/// What a user gets without asking: `pods().informer()` and `lister()` cache the compact Pod, the
/// same informer `compact()` hands out (the old spelling); `full()` is k8s-openapi's Pod, a
/// second informer of the same endpoint, and both caches hold the same objects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_handles_cache_the_compact_form_and_full_is_one_call_away() {
    use informer_runtime::informer::SharedIndexInformer;
    use std::sync::Arc;

    let server = TestServer::start().await.expect("testserver");
    server
        .create_json(pod_json("web-0", "n1"))
        .expect("seed Pod");
    let factory = SharedInformerFactory::new(server.client());
    let pods = factory.core().v1().pods();
    // The types are the claim: these lines do not compile if the default form changes.
    let default: Arc<SharedIndexInformer<compact::Pod>> = pods.informer();
    let _full: Arc<SharedIndexInformer<Pod>> = pods.full().informer();
    assert!(Arc::ptr_eq(&default, &pods.compact().informer()));
    // `informer_k8s::api` is the compact module at k8s-openapi's paths.
    let _: Arc<SharedIndexInformer<informer_k8s::api::core::v1::Pod>> = pods.informer();
    // A pre-release version of a kind that has a GA version caches k8s-openapi's type; the GA
    // version caches the compact form (decision record 26, "What it costs").
    let _: Arc<SharedIndexInformer<k8s_openapi::api::resource::v1beta1::ResourceClaim>> =
        factory.resource().v1beta1().resource_claims().informer();
    let _: Arc<SharedIndexInformer<informer_k8s::api::resource::v1::ResourceClaim>> =
        factory.resource().v1().resource_claims().informer();
    let (lister, full_lister) = (pods.lister(), pods.full().lister());
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("both Pod informers sync");
    let pods_resource = informer_runtime::lister::GroupResource::of::<Pod>();
    assert_eq!(
        factory.informers_of(&pods_resource).len(),
        2,
        "the compact and the full informer"
    );
    let cached = lister
        .namespaced("prod")
        .get("web-0")
        .expect("compact Pod cached");
    let cached_full = full_lister
        .namespaced("prod")
        .get("web-0")
        .expect("full Pod cached");
    assert_eq!(Pod::from(&*cached), *cached_full);
    factory.shutdown().await;
}

/// `cached` (from a compact lister) is `full` converted, and converts back to it.
fn assert_round_trip<K, C>(cached: &C, full: &K)
where
    K: PartialEq + std::fmt::Debug + for<'a> From<&'a C>,
    C: PartialEq + std::fmt::Debug + for<'a> From<&'a K>,
{
    assert_eq!(*cached, C::from(full));
    assert_eq!(K::from(cached), *full);
}

/// The server's object `namespace/name` of kind `K` and its compact form in `lister`, once
/// the watch has delivered the server's current resourceVersion.
async fn assert_cached_is_server_object<K, C>(
    server: &TestServer,
    lister: &Lister<C>,
    namespace: Option<&str>,
    name: &str,
) where
    K: kube::Resource<DynamicType = ()>
        + k8s_openapi::serde::de::DeserializeOwned
        + PartialEq
        + std::fmt::Debug
        + for<'a> From<&'a C>,
    C: informer_runtime::Meta + PartialEq + std::fmt::Debug + for<'a> From<&'a K>,
{
    let full: K = server.get(namespace, name).expect("server object");
    let key = namespace.map_or_else(|| name.to_owned(), |ns| format!("{ns}/{name}"));
    let rv = full.meta().resource_version.clone();
    wait_until(
        &format!("{} {key} in its compact lister", K::kind(&())),
        || {
            lister
                .get_by_key(&key)
                .is_ok_and(|c| K::from(&*c).meta().resource_version == rv)
        },
    )
    .await;
    let cached = lister.get_by_key(&key).expect("cached");
    assert_round_trip(&*cached, &full);
}

/// Kinds beyond the twelve largest have compact forms from the same feature: one of each of
/// rbac, coordination, networking, storage and apiextensions (CustomResourceDefinition, whose
/// JSONSchemaProps is recursive), listed at the sync and then changed through the watch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_forms_of_other_groups_list_watch_and_round_trip() {
    use informer_k8s::compact::api::{
        coordination::v1::Lease as CLease, networking::v1::Ingress as CIngress,
        rbac::v1::Role as CRole, storage::v1::StorageClass as CStorageClass,
    };
    use informer_k8s::compact::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition as CCrd;
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::networking::v1::Ingress;
    use k8s_openapi::api::rbac::v1::Role;
    use k8s_openapi::api::storage::v1::StorageClass;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

    let server = TestServer::start().await.expect("testserver");
    // Listed at the sync.
    server
        .create_json(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "reader", "namespace": "prod", "labels": {"team": "a"}},
            "rules": [{"apiGroups": [""], "resources": ["pods", "configmaps"],
                       "verbs": ["get", "list", "watch"]}]
        }))
        .expect("seed Role");
    server
        .create_json(json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "fast", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "csi.example.com", "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true,
            "parameters": {"type": "ssd"}, "mountOptions": ["noatime"]
        }))
        .expect("seed StorageClass");
    server
        .create_json(json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {"spec": {"type": "object", "properties": {
                        "size": {"type": "integer", "minimum": 1},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "nested": {"type": "object", "properties": {"deep": {"type": "string"}}}
                    }}}
                }}}]
            }
        }))
        .expect("seed CustomResourceDefinition");

    let factory = SharedInformerFactory::new(server.client());
    let roles = factory.rbac().v1().roles().compact().lister();
    let leases = factory.coordination().v1().leases().compact().lister();
    let ingresses = factory.networking().v1().ingresses().compact().lister();
    let classes = factory.storage().v1().storage_classes().compact().lister();
    let crds = factory
        .apiextensions()
        .v1()
        .custom_resource_definitions()
        .compact()
        .lister();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("compact informers sync");
    assert_cached_is_server_object::<Role, CRole>(&server, &roles, Some("prod"), "reader").await;
    assert_cached_is_server_object::<StorageClass, CStorageClass>(&server, &classes, None, "fast")
        .await;
    assert_cached_is_server_object::<CustomResourceDefinition, CCrd>(
        &server,
        &crds,
        None,
        "widgets.example.com",
    )
    .await;
    let crd = crds.get("widgets.example.com").expect("cached CRD");
    let schema = crd.spec.versions[0]
        .schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .expect("schema");
    assert!(format!("{schema:?}").contains("deep"), "{schema:?}");

    // Created and changed after the sync: through the watch.
    server
        .create_json(json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "leader", "namespace": "prod"},
            "spec": {"holderIdentity": "pod-a", "leaseDurationSeconds": 15,
                     "acquireTime": "2026-01-02T03:04:05.000000Z", "leaseTransitions": 2}
        }))
        .expect("create Lease");
    server
        .create_json(json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "web", "namespace": "prod"},
            "spec": {
                "ingressClassName": "nginx",
                "tls": [{"hosts": ["web.example.com"], "secretName": "web-tls"}],
                "rules": [{"host": "web.example.com", "http": {"paths": [{
                    "path": "/", "pathType": "Prefix",
                    "backend": {"service": {"name": "web", "port": {"number": 80}}}
                }]}}]
            }
        }))
        .expect("create Ingress");
    server
        .update_json(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "reader", "namespace": "prod", "labels": {"team": "b"}},
            "rules": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get"]}]
        }))
        .expect("update Role");
    assert_cached_is_server_object::<Lease, CLease>(&server, &leases, Some("prod"), "leader").await;
    assert_cached_is_server_object::<Ingress, CIngress>(&server, &ingresses, Some("prod"), "web")
        .await;
    assert_cached_is_server_object::<Role, CRole>(&server, &roles, Some("prod"), "reader").await;
    let role = roles.namespaced("prod").get("reader").expect("cached Role");
    assert_eq!(&*role.rules.as_deref().expect("rules")[0].verbs, ["get"]);
    factory.shutdown().await;
}
