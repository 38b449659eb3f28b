//! Shared informers, indexers, listers and a rate-limited workqueue for kube-rs.
//!
//! This crate is the generic runtime behind the code that `informer-gen` emits. Everything that
//! behaves lives here; generated code only picks types and constants. See `ARCHITECTURE.md` at
//! the repository root for the map of modules and the invariants they keep, and
//! `docs/behaviour.md` for the rule IDs (R9, D2, …) cited in comments and tests.

pub mod compact;
pub mod delta_fifo;
pub mod discovery;
pub mod factory;
pub mod indexer;
pub mod informer;
pub mod key;
pub mod list_watch;
pub mod lister;
pub mod object;
pub mod projection;
pub mod reflector;
pub mod shard;
pub mod store;

/// Rate-limited work queues (W1-W8): the [`informer-workqueue`](informer_workqueue) crate,
/// re-exported here so that `informer_runtime::workqueue::RateLimitingQueue` keeps working. It
/// depends on nothing else in the runtime, like client-go's `util/workqueue`.
pub use informer_workqueue as workqueue;

#[doc(hidden)]
pub mod __private;

pub use factory::SharedInformerFactory;
pub use object::{Meta, Object};

#[cfg(feature = "derive")]
pub use informer_derive::{Informer, Projection, ProjectionSource};
