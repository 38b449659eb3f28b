//! The README's shortest operator, compiled by `cargo test` here (README.md shows this file's
//! code verbatim; `cargo xtask template` checks it): a Deployment controller owning ConfigMaps,
//! both cached in their compact form, informer-k8s's default.

use std::sync::Arc;
use informer_controller::{Action, Context, Controller, Request};
use informer_runtime::SharedInformerFactory;
// The compact forms informer-k8s caches by default, at k8s-openapi's paths (writes through
// kube::Api take k8s-openapi's types: `k8s_openapi::api::core::v1::ConfigMap::from(&*cached)`).
use informer_k8s::api::{apps::v1::Deployment, core::v1::ConfigMap};
use tokio_util::sync::CancellationToken;

async fn reconcile(req: Request<Deployment>, ctx: Arc<Context<()>>) -> Result<Action, kube::Error> {
    let Some(deployment) = &req.object else { return Ok(Action::Done) }; // deleted
    let owned = ctx.lister::<ConfigMap>().namespaced(req.namespace().unwrap_or("default"));
    // ... compare `deployment` with `owned.get(..)`, write through kube::Api, and record each
    // write with `ctx.recorder(&req.key).record(&written)`: the next reconcile of this key then
    // waits until the caches hold it (read your own writes) ...
    let _ = (deployment, owned);
    Ok(Action::Done)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let factory = SharedInformerFactory::new(kube::Client::try_default().await?);
    let stop = CancellationToken::new();
    tokio::spawn({
        let stop = stop.clone();
        async move {
            let _ = tokio::signal::ctrl_c().await;
            stop.cancel(); // finish in-flight reconciles, then return
        }
    });
    Controller::<Deployment>::new(factory.clone(), "deployments")
        .owns::<ConfigMap>()
        .workers(4)
        .run(reconcile, (), stop)
        .await?;
    factory.shutdown().await;
    Ok(())
}
