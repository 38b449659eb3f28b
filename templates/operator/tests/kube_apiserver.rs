//! The operator against a real kube-apiserver and etcd (informer-envtest), as
//! controller-runtime's envtest runs one: what informer-testserver does not do, such as admission
//! and server-side apply's field managers, is the real thing here.

use std::time::Duration;

use informer_envtest::{Envtest, Options, skip_unless_available};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use kube::CustomResourceExt;
use tokio_util::sync::CancellationToken;
use widget_operator::widget::{Widget, WidgetSpec};

/// A real API server on two busy cores is slower than the in-memory one.
const WAIT: Duration = Duration::from_secs(60);

fn message(cm: Option<&ConfigMap>) -> Option<&str> {
    cm?.data.as_ref()?.get("message").map(String::as_str)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_widget_gets_a_config_map_on_kube_apiserver() -> Result<(), Box<dyn std::error::Error>> {
    // kube-apiserver and etcd from KUBEBUILDER_ASSETS, or built from source with Go on first use
    // (minutes, then cached per user); skipped loudly where neither is there, unless CI=true.
    let started = Envtest::start(Options::default()).await;
    let Some(env) = skip_unless_available("kube_apiserver", started) else {
        return Ok(());
    };
    env.install_crds(&[Widget::crd()]).await?; // returns once the Widget kind is served
    let client = env.client().await?;
    let widgets: Api<Widget> = Api::namespaced(client.clone(), "default");
    let widget = Widget::new("w1", WidgetSpec { message: "hello".into() });
    widgets.create(&PostParams::default(), &widget).await?;

    let stop = CancellationToken::new();
    let operator = tokio::spawn(widget_operator::run(client, stop.clone()));

    // The same wait as on informer-testserver: re-checked at every change the server reports.
    let cm = env
        .wait_until::<ConfigMap>(Some("default"), "w1", WAIT, |cm| message(cm) == Some("hello"))
        .await?
        .ok_or("the ConfigMap exists")?;
    let owner = &cm.metadata.owner_references.as_deref().unwrap_or_default()[0];
    assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Widget", "w1"));
    // Server-side apply records who owns which fields; the in-memory server keeps no managers.
    let managers = cm.metadata.managed_fields.iter().flatten();
    assert!(managers.filter_map(|m| m.manager.as_deref()).any(|m| m == "widget-operator"));

    stop.cancel();
    operator.await??;
    Ok(())
}
