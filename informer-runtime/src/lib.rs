//! Shared informers, indexers, listers and a rate-limited workqueue for kube-rs.
//!
//! This crate is the generic runtime behind the code that `informer-gen` emits: one
//! [`SharedInformerFactory`] per client holds one informer per kind; each informer lists and
//! watches like client-go's reflector, keeps an indexed cache of `Arc<K>`, and notifies its
//! event handlers only after the cache shows a change. Listers read that cache; writes go
//! through `kube::Api`. For controllers on top of it, see `informer-controller`.
//!
//! # Quick start
//!
//! ```no_run
//! use informer_runtime::SharedInformerFactory;
//! use informer_runtime::informer::handler_fn;
//! use informer_runtime::lister::Lister;
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let factory = SharedInformerFactory::new(kube::Client::try_default().await?);
//! // One informer per kind and factory, however often it is asked for.
//! let informer = factory.informer_for::<ConfigMap>();
//! informer.add_event_handler(handler_fn().on_add(|cm: &std::sync::Arc<ConfigMap>, _initial| {
//!     println!("added {:?}", cm.metadata.name); // the cache already holds it
//! }))?;
//! factory.start();
//! factory.wait_for_cache_sync().await;
//! let lister = Lister::from_indexer(informer.indexer());
//! let cached = lister.namespaced("default").get("settings")?; // Arc<ConfigMap>, no API call
//! # let _ = cached;
//! factory.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! With informer-gen (or `#[derive(Informer)]`, behind the `derive` feature) the same reads
//! become typed accessors: `factory.core().v1().config_maps().lister()`. The README's "Use it in
//! your crate" section sets a crate up, and the behaviour of every part is specified in
//! [the behaviour reference](https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md)
//! (its rule IDs, such as R9 or H6, are what comments and tests cite); `ARCHITECTURE.md` maps
//! the modules.
//!
//! # Features
//!
//! - `derive`: re-exports `#[derive(Informer)]`, `#[derive(Projection)]` and
//!   `#[derive(ProjectionSource)]` from informer-derive.
//!
//! k8s-openapi needs exactly one Kubernetes version feature (`v1_37`, …), chosen by the final
//! crate; this library enables none.

pub mod budget;
pub mod compact;
pub mod conditions;
pub mod delta_fifo;
pub mod discovery;
pub mod factory;
pub mod indexer;
pub mod informer;
pub mod key;
pub mod list_watch;
pub mod lister;
pub mod object;
mod pool;
pub mod projection;
pub mod reflector;
pub mod shard;
pub mod store;
#[cfg(test)]
mod test_support;

/// Rate-limited work queues (W1-W9): the [`informer-workqueue`](informer_workqueue) crate,
/// re-exported here so that `informer_runtime::workqueue::RateLimitingQueue` keeps working. It
/// depends on nothing else in the runtime, like client-go's `util/workqueue`.
pub use informer_workqueue as workqueue;

#[doc(hidden)]
pub mod __private;

pub use factory::SharedInformerFactory;
pub use key::ObjectKey;

/// Frees now the interned strings and shared parts of compact objects (P3) that no object uses
/// any more.
///
/// Informers free them in background passes: soon after their own deletes, and every few
/// minutes otherwise. A factory that was shut down and dropped (a fleet's cluster that left, a
/// scope that ended) leaves its objects' parts to the next pass; this runs one at once, so its
/// memory is back before it returns. It costs one pass over the pools, O(parts held), yielding
/// between shards.
///
/// ```
/// # async fn demo(client: kube::Client) {
/// let factory = informer_runtime::SharedInformerFactory::new(client);
/// // ... informers, then no longer needed:
/// factory.shutdown().await;
/// drop(factory);
/// informer_runtime::release_unused().await;
/// # }
/// ```
pub async fn release_unused() {
    pool::release_now().await;
}
pub use object::{Meta, Object};

#[cfg(feature = "derive")]
pub use informer_derive::{Informer, Projection, ProjectionSource};
