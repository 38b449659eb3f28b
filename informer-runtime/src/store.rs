//! The interface between the reflector and the queue it fills (client-go's `cache.Store` as the reflector sees it).

use std::sync::Arc;

use crate::key::KeyError;

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
/// Objects are passed by value so the receiver can wrap them in an `Arc` once, without a deep
/// clone (X7).
///
/// # Transform contract (D8, M8)
///
/// The reflector calls [`transform`](Self::transform) on every object it decodes, as soon as it
/// is decoded (each LIST page, each watch-list initial event, each `ADDED`/`MODIFIED` event) and
/// before it is buffered, so a large initial list is never held untransformed. Objects the
/// reflector passes to [`add`](Self::add), [`update`](Self::update) and
/// [`replace`](Self::replace) have therefore already been transformed exactly once; the store
/// must not transform them again. [`delete`](Self::delete) objects are *not* pre-transformed:
/// the store transforms them itself only if it queues a real `Deleted` (D4, D8).
pub trait ReflectorStore<K>: Send + Sync + 'static {
    /// Called by the reflector on every decoded object before it is buffered or passed to
    /// `add`, `update` or `replace` (never for `DELETED` events). The default does nothing.
    fn transform(&self, obj: &mut K) {
        let _ = obj;
    }
    /// A watch `ADDED` event; `obj` was already passed through [`transform`](Self::transform).
    fn add(&self, obj: K) -> Result<(), StoreError>;
    /// A watch `MODIFIED` event; `obj` was already passed through [`transform`](Self::transform).
    fn update(&self, obj: K) -> Result<(), StoreError>;
    /// A watch `DELETED` event, carrying the object's last state (not pre-transformed).
    fn delete(&self, obj: K) -> Result<(), StoreError>;
    /// Wraps a listed object (already passed through [`transform`](Self::transform)) in the `Arc`
    /// it will be shared as. The reflector calls it on each object of a LIST or watch-list as soon
    /// as it is decoded and transformed, so a relist never holds a second decoded copy of the
    /// whole list (M8, X7). The default is `Arc::new(obj)`.
    ///
    /// A store that caches objects may instead return the `Arc` it already holds for the same
    /// object (same key, UID and resourceVersion: the same content, since the server changes the
    /// resourceVersion on every write) and drop `obj`; [`DeltaFifo`](crate::delta_fifo::DeltaFifo)
    /// does, so an unchanged object costs nothing extra during a relist.
    fn share(&self, obj: K) -> Arc<K> {
        Arc::new(obj)
    }
    /// The complete state at `resource_version`, from a LIST or a watch-list stream (D5, R17);
    /// every item was already passed through [`transform`](Self::transform) and
    /// [`share`](Self::share). This is what the reflector calls.
    fn replace_shared(
        &self,
        items: Vec<Arc<K>>,
        resource_version: String,
    ) -> Result<(), StoreError>;
    /// [`replace_shared`](Self::replace_shared) for owned objects (each goes through
    /// [`share`](Self::share) first).
    fn replace(&self, items: Vec<K>, resource_version: String) -> Result<(), StoreError> {
        let items = items.into_iter().map(|obj| self.share(obj)).collect();
        self.replace_shared(items, resource_version)
    }
    /// Queue a resync of every cached object that has no pending deltas (D6, R22).
    fn resync(&self) -> Result<(), StoreError>;
    /// A BOOKMARK: the store has seen everything up to `resource_version` (R5). Never reaches handlers.
    fn bookmark(&self, resource_version: &str);
}
