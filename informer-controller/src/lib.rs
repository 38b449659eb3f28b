//! Controllers on informer-rs shared informers: a reconcile loop ([`Controller`]), leader
//! election over `coordination.k8s.io/v1` Leases ([`leader`]), finalizer and status helpers,
//! and kube-runtime interop ([`interop`]).
//!
//! The rule IDs cited in comments and tests (C1-C9 controllers, K1-K4 read your own writes,
//! E1-E7 leader election, S1-S6 shard sets and terms, W1-W8 workqueue, H1-H15 handlers) are
//! specified in `docs/behaviour.md`;
//! `docs/decisions/13-controllers-in-their-own-crate.md` explains why this is a crate of its own.
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
pub mod interop;
pub mod leader;
pub mod shards;
pub mod status;

pub use controller::{
    Action, Context, Controller, ControllerMetrics, Error, Request, Result, WriteRecorder,
};
