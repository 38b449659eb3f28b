//! Read access from the FIFO to the store it feeds ("known objects", D4–D6).

use std::sync::Arc;

use crate::indexer::Indexer;
use crate::key::ObjectKey;

/// What the FIFO needs to read from the store its consumer writes (client-go's `KeyListerGetter`):
/// the known keys (D5, D6) and the object under a key (D4, D5, D6).
///
/// Implemented for [`Indexer<K>`]. Implementations must not call back into the FIFO.
pub trait KnownObjects<K>: Send + Sync + 'static {
    /// Every key in the store.
    fn list_keys(&self) -> Vec<ObjectKey>;
    /// The object stored under `key`.
    fn get_by_key(&self, key: &str) -> Option<Arc<K>>;
    /// Whether an object is stored under `key`.
    fn contains_key(&self, key: &str) -> bool {
        self.get_by_key(key).is_some()
    }
}

impl<K: Send + Sync + 'static> KnownObjects<K> for Indexer<K> {
    fn list_keys(&self) -> Vec<ObjectKey> {
        Indexer::list_keys(self)
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<K>> {
        Indexer::get_by_key(self, key)
    }

    fn contains_key(&self, key: &str) -> bool {
        Indexer::contains_key(self, key)
    }
}
