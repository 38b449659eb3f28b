//! Lister behaviour tests (L1–L5). Run: `cargo test -p informer-runtime --test lister`.

use std::collections::BTreeSet;
use std::sync::Arc;

use informer_runtime::indexer::{Indexer, Indexers};
use informer_runtime::lister::{Error, GroupResource, Lister};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::ObjectMeta;
use kube::core::{Expression, Selector};

fn meta(ns: Option<&str>, name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: ns.map(Into::into),
        labels: (!labels.is_empty()).then(|| {
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        }),
        ..Default::default()
    }
}

fn cm(ns: &str, name: &str, labels: &[(&str, &str)]) -> Arc<ConfigMap> {
    Arc::new(ConfigMap {
        metadata: meta(Some(ns), name, labels),
        ..Default::default()
    })
}

fn names<K: kube::Resource>(objs: Vec<Arc<K>>) -> Vec<String> {
    let mut names: Vec<String> = objs
        .iter()
        .map(|o| o.meta().name.clone().expect("test fixture"))
        .collect();
    names.sort();
    names
}

fn seeded() -> Lister<ConfigMap> {
    let indexer = Arc::new(
        Indexer::builder()
            .indexers(Indexers::new().with("by_app", |cm: &ConfigMap| {
                cm.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("app").cloned())
                    .into_iter()
                    .collect()
            }))
            .build()
            .expect("test fixture"),
    );
    indexer
        .add(cm("prod", "web", &[("app", "web"), ("tier", "front")]))
        .expect("test fixture");
    indexer
        .add(cm("prod", "db", &[("app", "db"), ("tier", "back")]))
        .expect("test fixture");
    indexer
        .add(cm("dev", "web", &[("app", "web")]))
        .expect("test fixture");
    indexer.add(cm("dev", "plain", &[])).expect("test fixture");
    Lister::from_indexer(indexer)
}

#[test]
fn l1_empty_selector_lists_everything() {
    assert_eq!(
        names(seeded().list(&Selector::default())),
        ["db", "plain", "web", "web"]
    );
}

#[test]
fn l1_selector_filters_by_labels() {
    let lister = seeded();
    let app_web: Selector = Expression::Equal("app".into(), "web".into()).into();
    assert_eq!(names(lister.list(&app_web)), ["web", "web"]);
    let in_set: Selector =
        Expression::In("tier".into(), BTreeSet::from(["back".to_string()])).into();
    assert_eq!(names(lister.list(&in_set)), ["db"]);
    // Objects without labels match negative expressions.
    let no_app: Selector = Expression::DoesNotExist("app".into()).into();
    assert_eq!(names(lister.list(&no_app)), ["plain"]);
    let mut both = Selector::default();
    both.extend([
        Expression::Equal("app".into(), "web".into()),
        Expression::Exists("tier".into()),
    ]);
    assert_eq!(names(lister.list(&both)), ["web"]);
}

#[test]
fn l1_match_nothing_selector_returns_empty() {
    let nothing: Selector = Expression::In("app".into(), BTreeSet::new()).into();
    assert!(seeded().list(&nothing).is_empty());
    assert!(seeded().namespaced("prod").list(&nothing).is_empty());
}

#[test]
fn l2_namespaced_list_uses_the_namespace_scope() {
    let lister = seeded();
    assert_eq!(
        names(lister.namespaced("prod").list(&Selector::default())),
        ["db", "web"]
    );
    let app_web: Selector = Expression::Equal("app".into(), "web".into()).into();
    assert_eq!(names(lister.namespaced("dev").list(&app_web)), ["web"]);
    assert!(
        lister
            .namespaced("none")
            .list(&Selector::default())
            .is_empty()
    );
    // "" is all namespaces, as client-go's NamespaceAll.
    assert_eq!(lister.namespaced("").list(&Selector::default()).len(), 4);
}

#[test]
fn l2_without_namespace_index_falls_back_to_a_scan() {
    let indexer = Arc::new(
        Indexer::<ConfigMap>::builder()
            .without_namespace_index()
            .build()
            .unwrap(),
    );
    indexer.add(cm("a", "x", &[])).unwrap();
    indexer.add(cm("b", "y", &[])).unwrap();
    let lister = Lister::from_indexer(indexer);
    for _ in 0..2 {
        assert_eq!(
            names(lister.namespaced("a").list(&Selector::default())),
            ["x"]
        );
    }
    assert_eq!(
        lister
            .namespaced("b")
            .get("y")
            .unwrap()
            .metadata
            .name
            .as_deref(),
        Some("y")
    );
}

#[test]
fn l3_get_miss_is_a_typed_not_found() {
    let lister = seeded();
    assert_eq!(
        lister
            .namespaced("prod")
            .get("web")
            .unwrap()
            .metadata
            .namespace
            .as_deref(),
        Some("prod")
    );
    let err = lister.namespaced("prod").get("plain").unwrap_err();
    assert!(err.is_not_found());
    match &err {
        Error::NotFound {
            group_resource,
            name,
        } => {
            assert_eq!(group_resource, &GroupResource::new("", "configmaps"));
            assert_eq!(name, "plain");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(err.to_string(), "configmaps \"plain\" not found");
    // An unknown index is a different, distinguishable error.
    let other = lister.by_index("nope", "x").unwrap_err();
    assert!(!other.is_not_found());
    assert!(matches!(other, Error::Index(_)));
}

#[test]
fn l3_group_resource_comes_from_kube_resource() {
    let lister = Lister::from_indexer(Arc::new(Indexer::<Deployment>::new()));
    let err = lister.namespaced("ns").get("api").unwrap_err();
    assert_eq!(err.to_string(), "deployments.apps \"api\" not found");
    let custom = Lister::new(
        Arc::new(Indexer::<ConfigMap>::new()),
        GroupResource::new("example.com", "widgets"),
    );
    assert_eq!(custom.group_resource().to_string(), "widgets.example.com");
}

#[test]
fn l4_cluster_scoped_lister_gets_by_name() {
    let indexer = Arc::new(Indexer::<Node>::new());
    indexer
        .add(Arc::new(Node {
            metadata: meta(None, "n1", &[("zone", "a")]),
            ..Default::default()
        }))
        .unwrap();
    let lister = Lister::from_indexer(indexer);
    assert_eq!(
        lister.get("n1").unwrap().metadata.name.as_deref(),
        Some("n1")
    );
    assert_eq!(
        lister.get("n2").unwrap_err().to_string(),
        "nodes \"n2\" not found"
    );
    let zone_a: Selector = Expression::Equal("zone".into(), "a".into()).into();
    assert_eq!(names(lister.list(&zone_a)), ["n1"]);
}

#[test]
fn l5_results_are_the_shared_arcs() {
    let indexer = Arc::new(Indexer::<ConfigMap>::new());
    let obj = cm("ns", "a", &[("app", "x")]);
    indexer.add(obj.clone()).unwrap();
    let lister = Lister::from_indexer(indexer);
    assert!(Arc::ptr_eq(
        &lister.namespaced("ns").get("a").unwrap(),
        &obj
    ));
    assert!(Arc::ptr_eq(&lister.list(&Selector::default())[0], &obj));
    let app_x: Selector = Expression::Equal("app".into(), "x".into()).into();
    assert!(Arc::ptr_eq(&lister.namespaced("ns").list(&app_x)[0], &obj));
}

#[test]
fn lister_by_index_typed_queries() {
    let lister = seeded();
    assert_eq!(
        names(lister.by_index("by_app", "web").unwrap()),
        ["web", "web"]
    );
    let prod_web = lister.namespaced("prod").by_index("by_app", "web").unwrap();
    assert_eq!(prod_web.len(), 1);
    assert_eq!(prod_web[0].metadata.namespace.as_deref(), Some("prod"));
    assert_eq!(
        lister
            .namespaced("")
            .by_index("by_app", "web")
            .unwrap()
            .len(),
        2
    );
}

/// Compile-time checks that the handles can cross threads and tasks.
#[test]
fn listers_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<Lister<ConfigMap>>();
    assert_send_sync::<informer_runtime::lister::NamespacedLister<ConfigMap>>();
    fn assert_send_sync_only<T: Send + Sync>() {}
    assert_send_sync_only::<Indexer<ConfigMap>>();
    assert_send_sync_only::<informer_runtime::delta_fifo::DeltaFifo<ConfigMap>>();
}
