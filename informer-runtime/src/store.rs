//! The interface between the reflector and the queue it fills (client-go's `cache.Store` as the reflector sees it).

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
/// Objects are passed by value so the receiver can run the transform in place (D8) and wrap
/// the result in an `Arc` once, without a deep clone (X7).
pub trait ReflectorStore<K>: Send + Sync + 'static {
    /// A watch `ADDED` event.
    fn add(&self, obj: K) -> Result<(), StoreError>;
    /// A watch `MODIFIED` event.
    fn update(&self, obj: K) -> Result<(), StoreError>;
    /// A watch `DELETED` event, carrying the object's last state.
    fn delete(&self, obj: K) -> Result<(), StoreError>;
    /// The complete state at `resource_version`, from a LIST or a watch-list stream (D5, R17).
    fn replace(&self, items: Vec<K>, resource_version: String) -> Result<(), StoreError>;
    /// Queue a resync of every cached object that has no pending deltas (D6, R22).
    fn resync(&self) -> Result<(), StoreError>;
    /// A BOOKMARK: the store has seen everything up to `resource_version` (R5). Never reaches handlers.
    fn bookmark(&self, resource_version: &str);
}
