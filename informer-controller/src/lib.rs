//! Controllers on informer-rs shared informers: a reconcile loop ([`Controller`]), leader
//! election over `coordination.k8s.io/v1` Leases ([`leader`]), finalizer and status helpers,
//! and kube-runtime interop ([`interop`]).
//!
//! How each part behaves is specified in
//! [the behaviour reference](https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md),
//! whose rule IDs the documentation cites: controllers in C1-C11, read your own writes in
//! K1-K4, leader election in E1-E8, shard sets and terms in S1-S11, the workqueue in W1-W9 and event
//! handlers in H1-H15. `docs/decisions/13-controllers-in-their-own-crate.md` in the repository
//! explains why this is a crate of its own.
//!
//! # Quick start
//!
//! ```no_run
//! use std::sync::Arc;
//! use informer_controller::{Action, Context, Controller, Request};
//! use informer_runtime::SharedInformerFactory;
//! use k8s_openapi::api::apps::v1::Deployment;
//! use tokio_util::sync::CancellationToken;
//!
//! async fn reconcile(req: Request<Deployment>, _ctx: Arc<Context<()>>) -> Result<Action, kube::Error> {
//!     tracing::info!(key = %req.key, deleted = req.is_deleted(), "reconcile");
//!     Ok(Action::Done)
//! }
//!
//! # async fn demo(client: kube::Client) -> Result<(), informer_controller::Error> {
//! let factory = SharedInformerFactory::new(client);
//! Controller::<Deployment>::new(factory, "deployments")
//!     .workers(2)
//!     .run(reconcile, (), CancellationToken::new())
//!     .await
//! # }
//! ```

pub mod controller;
pub mod finalizer;
pub mod fleet;
pub mod interop;
pub mod leader;
mod owner;
mod reads;
pub mod shards;
pub mod status;

pub use controller::{
    Action, Context, Controller, ControllerMetrics, Error, PauseHandle, Request, Result,
    WriteRecorder,
};
/// The key a [`Controller::watches`] mapper returns (`namespace/name`): informer-runtime's
/// `ObjectKey`, here so that a controller needs no second import.
pub use informer_runtime::ObjectKey;
pub use owner::controller_owner_ref;
