//! Shared informer factory (F1-F9) against informer-testserver over real HTTP.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use informer_runtime::SharedInformerFactory;
use informer_runtime::factory::{AnyObject, Error, InformerId};
use informer_runtime::informer::handler_fn;
use informer_runtime::lister::Lister;
use informer_testserver::{GroupResource, TestServer};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{DynamicObject, GroupVersionResource, ObjectMeta};
use serde_json::json;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(20);

fn cm(ns: &str, name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), "v".to_string())])),
        ..Default::default()
    }
}

fn secret(ns: &str, name: &str) -> Secret {
    Secret {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

async fn synced(factory: &SharedInformerFactory) {
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("caches sync");
}

fn list_requests(server: &TestServer, path_part: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.is_list() && r.path.contains(path_part))
        .count()
}

fn watch_requests(server: &TestServer, path_part: &str) -> usize {
    server
        .requests()
        .iter()
        .filter(|r| r.is_watch() && r.path.contains(path_part))
        .count()
}

#[tokio::test]
async fn f1_two_accessors_share_one_informer_and_one_watch() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", "one", &[])).unwrap();
    let factory = SharedInformerFactory::new(server.client());
    let first = factory.informer_for::<ConfigMap>();
    let second = factory.informer_for::<ConfigMap>();
    assert!(
        Arc::ptr_eq(&first, &second),
        "F1: the same Arc for the same type"
    );

    // Two consumers, one informer: both handlers see the object, over one LIST and one WATCH.
    let (tx, mut rx) = mpsc::unbounded_channel();
    for consumer in 0..2 {
        let tx = tx.clone();
        first
            .add_event_handler(handler_fn().on_add(move |obj: &Arc<ConfigMap>, _| {
                let _ = tx.send((consumer, obj.metadata.name.clone()));
            }))
            .unwrap();
    }
    factory.start();
    synced(&factory).await;
    let mut seen = Vec::new();
    for _ in 0..2 {
        seen.push(
            tokio::time::timeout(WAIT, rx.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    seen.sort();
    assert_eq!(seen, vec![(0, Some("one".into())), (1, Some("one".into()))]);
    assert!(
        server.wait_for_active_watches(1, WAIT).await,
        "one open watch"
    );
    // V1: the initial list is a watch-list stream that stays open as the watch.
    assert_eq!(list_requests(&server, "configmaps"), 0);
    assert_eq!(watch_requests(&server, "configmaps"), 1);
    factory.shutdown().await;
}

#[tokio::test]
async fn f3_second_start_lists_nothing_new_and_starts_late_informers() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", "one", &[])).unwrap();
    server.create(&secret("a", "s")).unwrap();
    let factory = SharedInformerFactory::new(server.client());
    factory.informer_for::<ConfigMap>();
    factory.start();
    synced(&factory).await;
    factory.start();
    assert_eq!(
        watch_requests(&server, "configmaps"),
        1,
        "F3: start is idempotent (one watch-list stream, V1)"
    );

    // An informer asked for after start runs on the next start() only.
    let secrets = factory.informer_for::<Secret>();
    assert!(!secrets.is_started());
    factory.start();
    synced(&factory).await;
    assert_eq!(secrets.indexer().len(), 1);
    assert_eq!(watch_requests(&server, "configmaps"), 1);
    assert_eq!(watch_requests(&server, "secrets"), 1);
    let status = factory.wait_for_cache_sync().await;
    assert_eq!(status.get(&InformerId::of::<ConfigMap>()), Some(&true));
    assert_eq!(status.get(&InformerId::of::<Secret>()), Some(&true));
    factory.shutdown().await;
}

#[tokio::test]
async fn f4_sync_timeout_names_the_forbidden_resource_and_its_error() {
    let server = TestServer::start().await.unwrap();
    server.faults().forbid(GroupResource::new("", "secrets"));
    let factory = SharedInformerFactory::new(server.client());
    factory.informer_for::<ConfigMap>();
    factory.informer_for::<Secret>();
    factory.start();
    let err = factory
        .wait_for_cache_sync_timeout(Duration::from_secs(3))
        .await
        .expect_err("secrets are forbidden, so they never sync");
    let Error::CacheSyncTimeout(unsynced) = &err else {
        panic!("unexpected error {err}")
    };
    assert_eq!(
        unsynced.len(),
        1,
        "only the forbidden informer is unsynced: {err}"
    );
    assert_eq!(unsynced[0].id, InformerId::of::<Secret>());
    let last = unsynced[0].last_error.clone().unwrap_or_default();
    assert!(
        last.contains("403") || last.to_lowercase().contains("forbidden"),
        "{last}"
    );
    let message = err.to_string();
    assert!(message.contains("v1/secrets"), "{message}");
    factory.shutdown().await;
}

fn foo_crd() -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
}

#[tokio::test]
async fn f9_for_resource_builds_a_dynamic_informer_for_a_crd_created_at_run_time() {
    let server = TestServer::start().await.unwrap();
    let factory = SharedInformerFactory::new(server.client());
    let gvr = GroupVersionResource::gvr("example.com", "v1", "foos");
    let missing = factory.for_resource(&gvr).await.expect_err("no CRD yet");
    assert!(matches!(missing, Error::NoInformerFound(_)), "{missing}");
    assert_eq!(
        missing.to_string(),
        "no informer found for example.com/v1/foos"
    );

    server.create_json(foo_crd()).unwrap();
    server
        .create_json(json!({
            "apiVersion": "example.com/v1", "kind": "Foo",
            "metadata": {"name": "bar", "namespace": "ns"}, "spec": {"size": 3}
        }))
        .unwrap();
    let foos = factory.for_resource(&gvr).await.unwrap();
    let again = factory.for_resource(&gvr).await.unwrap();
    factory.start();
    assert!(foos.wait_for_sync().await);
    let lister = foos.lister();
    let bar = lister.namespaced("ns").get("bar").unwrap();
    let dynamic = bar
        .as_any()
        .downcast_ref::<DynamicObject>()
        .expect("a DynamicObject");
    assert_eq!(dynamic.data["spec"]["size"], 3);
    assert!(
        lister
            .namespaced("ns")
            .get("nope")
            .unwrap_err()
            .is_not_found()
    );
    assert!(Arc::ptr_eq(
        &foos.informer::<DynamicObject>().unwrap(),
        &again.informer::<DynamicObject>().unwrap()
    ));

    // A typed informer is found by its resource too (generic access to typed informers, F9).
    let cms = factory.informer_for::<ConfigMap>();
    let generic = factory
        .for_resource(&GroupVersionResource::gvr("", "v1", "configmaps"))
        .await
        .unwrap();
    assert!(Arc::ptr_eq(&generic.informer::<ConfigMap>().unwrap(), &cms));

    // F7 for a dynamic informer (M11: its CRD was deleted): stopped, forgotten, the typed
    // informers keep running, and the next lookup builds a fresh one.
    assert!(factory.stop_resource_informer(&gvr).await);
    assert!(foos.informer::<DynamicObject>().unwrap().is_stopped());
    assert!(
        !factory.stop_resource_informer(&gvr).await,
        "already forgotten"
    );
    assert!(!cms.is_stopped());
    let fresh = factory.for_resource(&gvr).await.unwrap();
    assert!(!Arc::ptr_eq(
        &fresh.informer::<DynamicObject>().unwrap(),
        &foos.informer::<DynamicObject>().unwrap()
    ));
    factory.shutdown().await;
}

#[tokio::test]
async fn f7_stop_informer_closes_its_watch_while_others_keep_running() {
    let server = TestServer::start().await.unwrap();
    let factory = SharedInformerFactory::new(server.client());
    let cms = factory.informer_for::<ConfigMap>();
    let secrets = factory.informer_for::<Secret>();
    let (tx, mut rx) = mpsc::unbounded_channel();
    cms.add_event_handler(handler_fn().on_add(move |obj: &Arc<ConfigMap>, _| {
        let _ = tx.send(obj.metadata.name.clone());
    }))
    .unwrap();
    factory.start();
    synced(&factory).await;
    assert!(
        server.wait_for_active_watches(2, WAIT).await,
        "two open watches"
    );

    assert!(factory.stop_informer::<Secret>().await);
    assert!(secrets.is_stopped());
    assert!(
        !factory.stop_informer::<Secret>().await,
        "already forgotten"
    );
    assert!(
        server.wait_for_active_watches(1, WAIT).await,
        "F7: the stopped informer's watch is closed"
    );

    server.create(&cm("a", "after-stop", &[])).unwrap();
    let name = tokio::time::timeout(WAIT, rx.recv())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        name.as_deref(),
        Some("after-stop"),
        "the other informer keeps running"
    );

    let fresh = factory.informer_for::<Secret>();
    assert!(
        !Arc::ptr_eq(&fresh, &secrets),
        "F7: a later accessor creates a fresh informer"
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn f6_namespace_and_tweaked_label_selector_apply_to_list_and_watch() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", "match", &[("app", "web")])).unwrap();
    server
        .create(&cm("a", "other-label", &[("app", "db")]))
        .unwrap();
    server
        .create(&cm("b", "other-ns", &[("app", "web")]))
        .unwrap();
    let factory = SharedInformerFactory::builder(server.client())
        .namespace("a")
        .tweak_list_options(|lp| lp.label_selector = Some("app=web".into()))
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    factory.start();
    synced(&factory).await;
    assert!(server.wait_for_active_watches(1, WAIT).await, "the watch");
    let names: Vec<_> = cms
        .indexer()
        .list()
        .iter()
        .map(|c| c.metadata.name.clone())
        .collect();
    assert_eq!(names, vec![Some("match".to_string())]);
    let log = server.requests();
    let requests: Vec<_> = log.iter().filter(|r| r.is_list() || r.is_watch()).collect();
    assert!(!requests.is_empty());
    for req in requests {
        assert!(
            req.path.contains("/namespaces/a/configmaps"),
            "{}",
            req.path
        );
        assert_eq!(req.query.label_selector.as_deref(), Some("app=web"));
    }
    factory.shutdown().await;
}

#[tokio::test]
async fn f5_shutdown_waits_for_every_task_and_later_starts_do_nothing() {
    let server = TestServer::start().await.unwrap();
    let factory = SharedInformerFactory::new(server.client());
    let cms = factory.informer_for::<ConfigMap>();
    factory.start();
    synced(&factory).await;
    let other = factory.clone();
    tokio::join!(factory.shutdown(), other.shutdown());
    assert!(cms.is_stopped());
    assert!(
        server.wait_for_active_watches(0, WAIT).await,
        "F5: every watch closed"
    );
    let late = factory.informer_for::<Secret>();
    factory.start();
    assert!(!late.is_started(), "F3: nothing starts after shutdown");
}

#[tokio::test]
async fn f8_factory_transform_runs_before_the_store() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", "one", &[("keep", "x")])).unwrap();
    let factory = SharedInformerFactory::builder(server.client())
        .strip_managed_fields()
        .transform(|obj: &mut dyn AnyObject| {
            if let Some(meta) = obj.object_meta_mut() {
                meta.annotations
                    .get_or_insert_default()
                    .insert("seen-by".into(), "factory".into());
            }
        })
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    factory.start();
    synced(&factory).await;
    let stored = Lister::from_indexer(cms.indexer())
        .namespaced("a")
        .get("one")
        .unwrap();
    assert_eq!(stored.metadata.managed_fields, None);
    let annotations = stored.metadata.annotations.clone().unwrap_or_default();
    assert_eq!(
        annotations.get("seen-by").map(String::as_str),
        Some("factory")
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn metadata_informer_is_shared_and_separate_from_the_typed_one() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", "one", &[])).unwrap();
    let factory = SharedInformerFactory::new(server.client());
    let meta = factory.metadata_informer_for::<ConfigMap>();
    assert!(Arc::ptr_eq(
        &meta,
        &factory.metadata_informer_for::<ConfigMap>()
    ));
    factory.start();
    synced(&factory).await;
    let objs = meta.indexer().list();
    assert_eq!(objs.len(), 1);
    assert_eq!(objs[0].metadata.name.as_deref(), Some("one"));
    assert_eq!(
        factory.informer_ids(),
        vec![InformerId::metadata_of::<ConfigMap>()],
        "no typed informer was created"
    );
    factory.shutdown().await;
}

#[tokio::test]
async fn factory_metrics_report_reflector_counters_sync_state_and_cache_size() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", "one", &[])).unwrap();
    server.create(&cm("a", "two", &[])).unwrap();
    let mut registry = prometheus_client::registry::Registry::default();
    let factory = SharedInformerFactory::builder(server.client())
        .metrics(&mut registry)
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    let noop = cms
        .add_event_handler_with(
            handler_fn::<ConfigMap>(),
            informer_runtime::informer::HandlerOptions::new().name("noop"),
        )
        .unwrap();
    factory.start();
    synced(&factory).await;
    // H6: the handler has returned from every initial add, so its backlog gauge is back to 0.
    assert!(
        tokio::time::timeout(WAIT, noop.wait_for_sync())
            .await
            .is_ok()
    );
    assert!(server.wait_for_active_watches(1, WAIT).await, "the watch");
    let rv = cms
        .last_sync_resource_version()
        .expect("synced informers have an RV");

    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for expected in [
        // V1: one watch-list stream, no LIST.
        "informer_list_requests_total{informer=\"v1/configmaps\"} 0".to_string(),
        "informer_watch_requests_total{informer=\"v1/configmaps\"} 1".to_string(),
        "informer_relists_total{informer=\"v1/configmaps\"} 0".to_string(),
        "informer_synced{informer=\"v1/configmaps\"} 1".to_string(),
        "informer_cached_objects{informer=\"v1/configmaps\"} 2".to_string(),
        format!("informer_last_resource_version{{informer=\"v1/configmaps\"}} {rv}"),
        "informer_handler_pending{informer=\"v1/configmaps\",handler=\"noop\"} 0".to_string(),
    ] {
        assert!(text.contains(&expected), "missing `{expected}` in:\n{text}");
    }
    factory.shutdown().await;
}

#[tokio::test]
async fn f8_factory_and_informer_transforms_compose_in_order() {
    let server = TestServer::start().await.unwrap();
    server.create(&cm("a", "one", &[])).unwrap();
    let factory = SharedInformerFactory::builder(server.client())
        .transform(|obj: &mut dyn AnyObject| {
            if let Some(meta) = obj.object_meta_mut() {
                meta.annotations
                    .get_or_insert_default()
                    .insert("order".into(), "factory".into());
            }
        })
        .build();
    let cms = factory.informer_for::<ConfigMap>();
    // M9: setting the informer's own transform must not replace the factory's.
    cms.set_transform(|cm: &mut ConfigMap| {
        let order = cm.metadata.annotations.get_or_insert_default();
        let seen = order.get("order").cloned().unwrap_or_default();
        order.insert("order".into(), format!("{seen},informer"));
    })
    .unwrap();
    factory.start();
    synced(&factory).await;
    let stored = Lister::from_indexer(cms.indexer())
        .namespaced("a")
        .get("one")
        .unwrap();
    let order = stored
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("order"))
        .cloned();
    assert_eq!(
        order.as_deref(),
        Some("factory,informer"),
        "F8: factory first, then informer"
    );
    factory.shutdown().await;
}
