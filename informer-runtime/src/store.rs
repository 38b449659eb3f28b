//! The interface between the reflector and the queue it fills (client-go's `cache.Store` as the reflector sees it).

use std::sync::Arc;

use crate::key::{KeyError, ObjectKey};

/// A finished object and its key: what the reflector hands the store. The key is built once,
/// from the transformed object, and travels with it; no store builds it again.
pub type Keyed<K> = (ObjectKey, Arc<K>);

/// Why a [`ReflectorStore`] refused an operation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The object has no usable key; the object is dropped and logged, nothing else is lost. Not retryable.
    #[error("cannot key object: {0}")]
    Key(#[from] KeyError),
    /// The store was closed (the informer is stopping). Not retryable.
    #[error("store is closed")]
    Closed,
}

/// What the reflector writes into: in the informer this is the [`DeltaFifo`](crate::delta_fifo::DeltaFifo).
///
/// # Finished objects (D8, M8, X7)
///
/// The reflector owns the transform and the sharing of every object it writes: it calls
/// [`transform`](Self::transform) on each object as soon as it is decoded (each LIST page, each
/// watch-list initial event, each `ADDED`/`MODIFIED` event), so a large initial list is never
/// held untransformed, then wraps it in the `Arc` it will be shared as ([`share`](Self::share)
/// for listed objects). [`add_shared`](Self::add_shared),
/// [`update_shared`](Self::update_shared) and [`replace_shared`](Self::replace_shared) therefore
/// receive *finished* objects: transformed exactly once and shared, never deep-cloned again.
///
/// [`delete`](Self::delete) is the one exception: a `DELETED` event carries the object's last
/// state, which the store transforms itself, and only if it queues a real `Deleted` (D4, D8): an
/// ignored delete of an unknown key must not run user code.
///
/// # Keys
///
/// Every call carries the object's [`ObjectKey`], built once by the reflector (from the
/// transformed object, for finished ones); a store keys by it and never builds it again.
pub trait ReflectorStore<K>: Send + Sync + 'static {
    /// Called by the reflector on every decoded object before it is shared (never for
    /// `DELETED` events). The default does nothing.
    fn transform(&self, obj: &mut K) {
        let _ = obj;
    }
    /// Wraps a listed object (already passed through [`transform`](Self::transform)) in the `Arc`
    /// it will be shared as. The reflector calls it on each object of a LIST, a watch-list or a
    /// watch (`ADDED`, `MODIFIED`) as soon as it is decoded and transformed, so a relist never
    /// holds a second decoded copy of the whole list (M8, X7). The default is `Arc::new(obj)`.
    ///
    /// A store that caches objects may instead return the `Arc` it already holds for the same
    /// object (same key, UID and resourceVersion: the same content, since the server changes the
    /// resourceVersion on every write) and drop `obj`; [`DeltaFifo`](crate::delta_fifo::DeltaFifo)
    /// does, so an unchanged object costs nothing extra during a relist.
    fn share(&self, key: &ObjectKey, obj: K) -> Arc<K> {
        let _ = key;
        Arc::new(obj)
    }
    /// A watch `ADDED` event, finished (transformed and shared; see the trait docs).
    fn add_shared(&self, key: ObjectKey, obj: Arc<K>) -> Result<(), StoreError>;
    /// A watch `MODIFIED` event, finished (transformed and shared; see the trait docs).
    fn update_shared(&self, key: ObjectKey, obj: Arc<K>) -> Result<(), StoreError>;
    /// A watch `DELETED` event, carrying the object's last state, *not* transformed: the store
    /// transforms it only if it queues it (D4, D8).
    fn delete(&self, key: ObjectKey, obj: K) -> Result<(), StoreError>;
    /// The complete state at `resource_version`, from a LIST or a watch-list stream (D5, R17);
    /// every item is finished (passed through [`transform`](Self::transform) and
    /// [`share`](Self::share)).
    fn replace_shared(
        &self,
        items: Vec<Keyed<K>>,
        resource_version: String,
    ) -> Result<(), StoreError>;
    /// Queue a resync of every cached object that has no pending deltas (D6, R22).
    fn resync(&self) -> Result<(), StoreError>;
    /// A BOOKMARK: the store has seen everything up to `resource_version` (R5). Never reaches handlers.
    fn bookmark(&self, resource_version: &str);
    /// `Some` when the store holds as many unprocessed changes as it wants to: the reflector
    /// then awaits the future before it reads the next watch event, so the server's connection,
    /// not the process's memory, holds what the consumer has not caught up with (D12). The
    /// default (and a store without a bound) never asks the reflector to wait.
    fn room(&self) -> Option<RoomFuture<'_>> {
        None
    }
}

/// What [`ReflectorStore::room`] returns: resolves when the reflector may read on.
pub type RoomFuture<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>>;
