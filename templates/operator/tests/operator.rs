//! The operator against informer-testserver, an in-memory API server: no cluster needed.

use std::time::Duration;

use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::CustomResourceExt;
use tokio_util::sync::CancellationToken;
use widget_operator::widget::{Widget, WidgetSpec};

const WAIT: Duration = Duration::from_secs(20);

fn message(cm: Option<&ConfigMap>) -> Option<&str> {
    cm?.data.as_ref()?.get("message").map(String::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_widget_gets_a_config_map_with_its_message() -> Result<(), Box<dyn std::error::Error>> {
    // The garbage collector on, so deleting a Widget deletes its ConfigMap as in a cluster.
    let server = TestServer::builder().garbage_collection(true).start().await?;
    server.create(&Widget::crd())?; // served at once; informer-testserver has no admission
    let widgets: Api<Widget> = Api::namespaced(server.client(), "default");
    let widget = Widget::new("w1", WidgetSpec { message: "hello".into() });
    widgets.create(&PostParams::default(), &widget).await?;

    let stop = CancellationToken::new();
    let operator = tokio::spawn(widget_operator::run(server.client(), stop.clone()));

    let cm = server
        .wait_until::<ConfigMap>(Some("default"), "w1", WAIT, |cm| message(cm) == Some("hello"))
        .await?
        .ok_or("the ConfigMap exists")?;
    let owner = &cm.metadata.owner_references.as_deref().unwrap_or_default()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Widget", "w1"));
    assert_eq!(owner.controller, Some(true));

    // A changed spec reaches the ConfigMap through the Widget informer.
    let patch = serde_json::json!({ "spec": { "message": "bonjour" } });
    widgets.patch("w1", &PatchParams::default(), &Patch::Merge(&patch)).await?;
    server
        .wait_until::<ConfigMap>(Some("default"), "w1", WAIT, |cm| message(cm) == Some("bonjour"))
        .await?;

    // A ConfigMap edited by someone else is put back through the ConfigMap informer (`owns`).
    let patch = serde_json::json!({ "data": { "message": "tampered" } });
    Api::<ConfigMap>::namespaced(server.client(), "default")
        .patch("w1", &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    server
        .wait_until::<ConfigMap>(Some("default"), "w1", WAIT, |cm| message(cm) == Some("bonjour"))
        .await?;

    // Deleting the Widget deletes its ConfigMap: the owner reference does it, through the
    // server's garbage collector (informer-envtest: `Options::garbage_collector(true)`).
    widgets.delete("w1", &Default::default()).await?;
    server
        .wait_until::<ConfigMap>(Some("default"), "w1", WAIT, |cm| cm.is_none())
        .await?;

    stop.cancel();
    operator.await??;
    Ok(())
}
