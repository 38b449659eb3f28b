//! Built-in kinds with no code generation: informer-k8s's typed listers of Deployments and
//! ConfigMaps, synced from informer-testserver (the README's first step).

use std::time::Duration;

use informer_k8s::InformerFactoryExt;
use informer_runtime::SharedInformerFactory;
use informer_testserver::TestServer;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::core::Selector;

const WAIT: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deployments_and_config_maps_sync_through_typed_listers() -> Result<(), Box<dyn std::error::Error>> {
    let server = TestServer::start().await?;
    let deployment: Deployment = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "web", "namespace": "default" },
        "spec": {
            "replicas": 3,
            "selector": { "matchLabels": { "app": "web" } },
            "template": {
                "metadata": { "labels": { "app": "web" } },
                "spec": { "containers": [{ "name": "web", "image": "nginx" }] }
            }
        }
    }))?;
    server.create(&deployment)?;
    let config: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": { "name": "web", "namespace": "default" },
        "data": { "greeting": "hello" }
    }))?;
    server.create(&config)?;
    let client = server.client();

    let factory = SharedInformerFactory::new(client);
    // client-go: factory.Apps().V1().Deployments().Lister()
    let deployments = factory.apps().v1().deployments().lister();
    let config_maps = factory.core().v1().config_maps().lister();
    factory.start();
    factory.wait_for_cache_sync_timeout(WAIT).await?;
    let web = deployments.namespaced("default").get("web")?;
    let web_config = config_maps.namespaced("default").get("web")?;
    assert_eq!(web.spec.replicas, Some(3));
    assert_eq!(
        web_config.data.as_ref().and_then(|d| d.get("greeting")),
        Some("hello")
    );
    assert_eq!(deployments.list(&Selector::default()).len(), 1);
    factory.shutdown().await;
    Ok(())
}
