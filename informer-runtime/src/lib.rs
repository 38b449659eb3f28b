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
pub mod workqueue;

#[doc(hidden)]
pub mod __private;

pub use factory::{Object, SharedInformerFactory};
pub use object::Meta;

#[cfg(feature = "derive")]
pub use informer_derive::{Informer, Projection, ProjectionSource};
