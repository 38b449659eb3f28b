//! A factory from informer-k8s syncs Deployments and ConfigMaps from informer-testserver over
//! HTTP (kube::Client) and serves them through the generated typed listers, with no build script
//! and no generator in this crate (decision record 16).
//!
//! Run with `cargo test -p informer-k8s --test sync`.

use std::collections::BTreeMap;
use std::sync::Arc;

use informer_k8s::InformerFactoryExt;
use informer_runtime::SharedInformerFactory;
use informer_test_support::{WAIT, config_map, init_tracing, wait_until};
use informer_testserver::TestServer;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::api::{Api, DeleteParams, PostParams};
use kube::core::Selector;

fn deployment(ns: &str, name: &str, replicas: i32) -> Deployment {
    let labels: BTreeMap<String, String> = [("app".to_owned(), name.to_owned())].into();
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            labels: Some(labels.clone()),
            ..Default::default()
        },
        spec: DeploymentSpec {
            replicas: Some(replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "app".into(),
                        image: Some(format!("registry.example.com/{name}:1")),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        },
        ..Default::default()
    }
}

fn names<K: informer_runtime::Meta>(objects: &[Arc<K>]) -> Vec<String> {
    let mut names: Vec<String> = objects
        .iter()
        .map(|o| o.object_name().unwrap_or_default().to_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployments_and_config_maps_sync_through_typed_listers() {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let post = PostParams::default();
    let deployments: Api<Deployment> = Api::namespaced(server.client(), "shop");
    for (name, replicas) in [("web", 3), ("api", 2)] {
        deployments
            .create(&post, &deployment("shop", name, replicas))
            .await
            .expect("create Deployment");
    }
    let shop_config: Api<ConfigMap> = Api::namespaced(server.client(), "shop");
    shop_config
        .create(&post, &config_map("shop", "web", "1", &[("app", "web")]))
        .await
        .expect("create ConfigMap");
    let other_config: Api<ConfigMap> = Api::namespaced(server.client(), "other");
    other_config
        .create(&post, &config_map("other", "web", "2", &[("app", "web")]))
        .await
        .expect("create ConfigMap");

    // client-go: factory.Apps().V1().Deployments().Lister()
    let factory = SharedInformerFactory::new(server.client());
    let deployment_lister = factory.apps().v1().deployments().lister();
    let config_lister = factory.core().v1().config_maps().lister();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("Deployments and ConfigMaps sync");

    // The initial list, through the typed listers.
    let everything = Selector::default();
    assert_eq!(names(&deployment_lister.list(&everything)), ["api", "web"]);
    let web = deployment_lister
        .namespaced("shop")
        .get("web")
        .expect("the web Deployment is cached");
    assert_eq!(web.spec.replicas, Some(3));
    assert!(deployment_lister.namespaced("other").get("web").is_err());
    assert_eq!(names(&config_lister.list(&everything)), ["web", "web"]);
    let web_selector: Selector = [("app", "web")].into_iter().collect();
    let shop_web = config_lister.namespaced("shop").list(&web_selector);
    assert_eq!(shop_web.len(), 1);
    assert_eq!(
        shop_web[0].data.as_ref().and_then(|d| d.get("v")),
        Some("1")
    );

    // Changes after the sync arrive through the watches.
    shop_config
        .create(&post, &config_map("shop", "api", "3", &[("app", "api")]))
        .await
        .expect("create ConfigMap");
    deployments
        .delete("api", &DeleteParams::default())
        .await
        .expect("delete Deployment");
    wait_until("the new ConfigMap in the lister", || {
        config_lister.namespaced("shop").get("api").is_ok()
    })
    .await;
    wait_until("the deleted Deployment gone from the lister", || {
        deployment_lister.namespaced("shop").get("api").is_err()
    })
    .await;

    // The accessors share the factory's informers (F1). (`informer_for_resource`, G5, is left
    // out on purpose: it can return any of the ~90 kinds, so calling it instantiates all of them.)
    assert!(Arc::ptr_eq(
        &factory.apps().v1().deployments().informer(),
        &factory.informer_for::<informer_k8s::api::apps::v1::Deployment>()
    ));
    assert_eq!(
        factory.informer_ids().len(),
        2,
        "no informer beyond the two asked for"
    );

    factory.shutdown().await;
}
