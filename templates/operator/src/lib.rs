//! A Widget operator on informer-rs: each `Widget` owns a ConfigMap holding its message.

// The kinds live in a crate of their own (`types/`), so an edit here recompiles only this crate.
pub use widget_types::{informers, widget};

use std::collections::BTreeMap;
use std::sync::Arc;

use informer_controller::{Action, Context, Controller, Request};
use informer_runtime::SharedInformerFactory;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::Resource;
use tokio_util::sync::CancellationToken;

// Built-in kinds: `factory.core().v1().config_maps()`, with no code generation.
use informer_k8s::InformerFactoryExt as _;

use widget_types::widget::Widget;

/// Makes the Widget's ConfigMap hold its message; reads through the cache, writes through the API.
pub async fn reconcile(req: Request<Widget>, ctx: Arc<Context<()>>) -> Result<Action, kube::Error> {
    let Some(widget) = &req.object else {
        return Ok(Action::Done); // deleted: the API server's garbage collector removes the ConfigMap
    };
    let namespace = req.namespace().unwrap_or("default");
    // informer-k8s's accessor for the ConfigMaps this controller owns (the informer `owns` started):
    // the compact ConfigMap, the form informer-k8s caches by default.
    let cached = ctx
        .factory()
        .core()
        .v1()
        .config_maps()
        .lister()
        .namespaced(namespace)
        .get(req.name())
        .ok(); // not cached yet: create it
    let wanted = BTreeMap::from([("message".to_owned(), widget.spec.message.clone())]);
    // A cached `data` is a `StrMap` (interned strings); it compares with a `BTreeMap` as is.
    if cached.as_ref().and_then(|cm| cm.data.as_ref()).is_some_and(|d| *d == wanted) {
        return Ok(Action::Done);
    }
    let config_map = ConfigMap {
        metadata: ObjectMeta {
            name: Some(req.name().to_owned()),
            owner_references: widget.controller_owner_ref(&()).map(|r| vec![r]),
            ..Default::default()
        },
        data: Some(wanted),
        ..Default::default()
    };
    let written = Api::<ConfigMap>::namespaced(ctx.client().clone(), namespace)
        .patch(
            req.name(),
            &PatchParams::apply("widget-operator").force(),
            &Patch::Apply(&config_map),
        )
        .await?;
    // The next reconcile of this Widget waits until the cache holds this write.
    ctx.recorder(&req.key).record(&written);
    Ok(Action::Done)
}

/// Runs the controller until `stop` is cancelled, then shuts the informers down.
pub async fn run(client: kube::Client, stop: CancellationToken) -> Result<(), informer_controller::Error> {
    let factory = SharedInformerFactory::new(client);
    Controller::<Widget>::new(factory.clone(), "widgets")
        // `informer_k8s::api` holds the compact forms at k8s-openapi's paths; writes above use
        // k8s-openapi's `ConfigMap`, and the recorder matches them to this cache by resource.
        .owns::<informer_k8s::api::core::v1::ConfigMap>()
        .workers(2)
        .run(reconcile, (), stop)
        .await?;
    factory.shutdown().await;
    Ok(())
}
