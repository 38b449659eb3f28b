//! Delta types, tombstones and the consecutive-delete dedup rule (D1, D3, X1).

use std::sync::Arc;

use crate::key::{KeyError, ObjectKey};

/// The kind of change a [`Delta`] records (D1).
///
/// Bookmarks are not deltas: [`ReflectorStore::bookmark`](crate::store::ReflectorStore::bookmark) only records
/// the resource version and never reaches handlers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// A watch `ADDED` event.
    Added,
    /// A watch `MODIFIED` event.
    Updated,
    /// A watch `DELETED` event, or a tombstone from `replace` (D5).
    Deleted,
    /// An item of a `replace` (a LIST or watch-list) when replaced-emission is on (D5).
    Replaced,
    /// A resync (D6), or a `replace` item when replaced-emission is off.
    Sync,
}

/// An object deleted while the informer was not watching: its deletion was inferred by a
/// `replace` whose list no longer contains the key (D5, client-go's `DeletedFinalStateUnknown`).
///
/// `last_known` is the newest queued object or the stored object, or `None` if neither was
/// available. The state it carries may be stale.
#[derive(Debug)]
pub struct DeletedFinalStateUnknown<K> {
    /// The key of the deleted object.
    pub key: ObjectKey,
    /// The last state the informer saw, if any.
    pub last_known: Option<Arc<K>>,
}

impl<K> Clone for DeletedFinalStateUnknown<K> {
    fn clone(&self) -> Self {
        DeletedFinalStateUnknown {
            key: self.key.clone(),
            last_known: self.last_known.clone(),
        }
    }
}

/// The payload of a deletion: the object's final state, or a tombstone (D1, H12).
#[derive(Debug)]
pub enum DeletedObject<K> {
    /// The watch delivered the deleted object (its last state).
    Known(Arc<K>),
    /// The deletion was inferred by a relist (D5); the state may be stale or missing.
    Unknown(DeletedFinalStateUnknown<K>),
}

impl<K> Clone for DeletedObject<K> {
    fn clone(&self) -> Self {
        match self {
            DeletedObject::Known(obj) => DeletedObject::Known(obj.clone()),
            DeletedObject::Unknown(t) => DeletedObject::Unknown(t.clone()),
        }
    }
}

impl<K: crate::object::Meta> DeletedObject<K> {
    /// The key, unwrapping tombstones (X1: the key function sees through tombstones).
    pub fn key(&self) -> Result<ObjectKey, KeyError> {
        match self {
            DeletedObject::Known(obj) => ObjectKey::from_resource(&**obj),
            DeletedObject::Unknown(t) => Ok(t.key.clone()),
        }
    }
}

impl<K> DeletedObject<K> {
    /// The last known state: the object, or the tombstone's `last_known`.
    pub fn last_known(&self) -> Option<&Arc<K>> {
        match self {
            DeletedObject::Known(obj) => Some(obj),
            DeletedObject::Unknown(t) => t.last_known.as_ref(),
        }
    }

    /// Whether this is a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, DeletedObject::Unknown(_))
    }
}

/// One recorded change of one key (D1). Only [`Delta::Deleted`] can carry a tombstone.
#[derive(Debug)]
pub enum Delta<K> {
    /// A watch `ADDED` event (transformed once, at decode or enqueue, D8).
    Added(Arc<K>),
    /// A watch `MODIFIED` event (transformed once, at decode or enqueue, D8).
    Updated(Arc<K>),
    /// A deletion, with the final state or a tombstone.
    Deleted(DeletedObject<K>),
    /// A `replace` item with replaced-emission on (transformed once, at decode or enqueue, D8).
    Replaced(Arc<K>),
    /// A resync of the stored object (not transformed, D8), or a `replace` item with
    /// replaced-emission off (transformed).
    Sync(Arc<K>),
}

impl<K> Clone for Delta<K> {
    fn clone(&self) -> Self {
        match self {
            Delta::Added(o) => Delta::Added(o.clone()),
            Delta::Updated(o) => Delta::Updated(o.clone()),
            Delta::Deleted(d) => Delta::Deleted(d.clone()),
            Delta::Replaced(o) => Delta::Replaced(o.clone()),
            Delta::Sync(o) => Delta::Sync(o.clone()),
        }
    }
}

impl<K> Delta<K> {
    /// The delta's type (D1).
    pub fn kind(&self) -> DeltaType {
        match self {
            Delta::Added(_) => DeltaType::Added,
            Delta::Updated(_) => DeltaType::Updated,
            Delta::Deleted(_) => DeltaType::Deleted,
            Delta::Replaced(_) => DeltaType::Replaced,
            Delta::Sync(_) => DeltaType::Sync,
        }
    }

    /// The object this delta carries; for a tombstone, its `last_known` state.
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => Some(o),
            Delta::Deleted(d) => d.last_known(),
        }
    }

    /// Whether this is a `Deleted` delta carrying a tombstone.
    pub fn is_tombstone(&self) -> bool {
        matches!(self, Delta::Deleted(DeletedObject::Unknown(_)))
    }
}

/// The deltas of one key, oldest first. Never empty when handed out by the queue.
pub type Deltas<K> = Vec<Delta<K>>;

/// Appends `delta` and applies the dedup rule to the last two (D3, client-go `dedupDeltas`):
/// two consecutive `Deleted` merge into the older one, unless the older one is a tombstone, in
/// which case the newer one is kept because it carries more information.
pub(crate) fn push_dedup<K>(deltas: &mut Deltas<K>, delta: Delta<K>) {
    if let (Some(Delta::Deleted(older)), Delta::Deleted(_)) = (deltas.last(), &delta) {
        if older.is_tombstone()
            && let Some(last) = deltas.last_mut()
        {
            *last = delta;
        }
        // Otherwise the older, real final state is kept and `delta` is dropped.
        return;
    }
    deltas.push(delta);
}

/// The newest object among `deltas`, unwrapping a tombstone (D5's `last_known` source).
pub(crate) fn newest_object<K>(deltas: &[Delta<K>]) -> Option<Arc<K>> {
    deltas.last().and_then(|d| d.object().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tomb(key: &str) -> Delta<u32> {
        Delta::Deleted(DeletedObject::Unknown(DeletedFinalStateUnknown {
            key: ObjectKey::parse(key).unwrap(),
            last_known: None,
        }))
    }

    fn kinds(deltas: &Deltas<u32>) -> Vec<(DeltaType, bool)> {
        deltas
            .iter()
            .map(|d| (d.kind(), d.is_tombstone()))
            .collect()
    }

    #[test]
    fn d3_older_real_delete_wins_over_newer() {
        let mut deltas = vec![Delta::Deleted(DeletedObject::Known(Arc::new(1)))];
        push_dedup(
            &mut deltas,
            Delta::Deleted(DeletedObject::Known(Arc::new(2))),
        );
        push_dedup(&mut deltas, tomb("a"));
        assert_eq!(deltas.len(), 1);
        assert_eq!(**deltas[0].object().unwrap(), 1);
    }

    #[test]
    fn d3_newer_delete_replaces_older_tombstone() {
        let mut deltas = vec![Delta::Added(Arc::new(1)), tomb("a")];
        push_dedup(
            &mut deltas,
            Delta::Deleted(DeletedObject::Known(Arc::new(2))),
        );
        assert_eq!(
            kinds(&deltas),
            [(DeltaType::Added, false), (DeltaType::Deleted, false)]
        );
        assert_eq!(**deltas[1].object().unwrap(), 2);
        // Tombstone after tombstone: the newer one is kept.
        let mut deltas = vec![tomb("a")];
        push_dedup(&mut deltas, tomb("b"));
        assert_eq!(deltas.len(), 1);
        let Delta::Deleted(DeletedObject::Unknown(t)) = &deltas[0] else {
            panic!()
        };
        assert_eq!(t.key.as_str(), "b");
    }

    #[test]
    fn d2_non_delete_deltas_are_never_merged() {
        let mut deltas = Vec::new();
        for d in [
            Delta::Added(Arc::new(1)),
            Delta::Updated(Arc::new(2)),
            Delta::Sync(Arc::new(2)),
        ] {
            push_dedup(&mut deltas, d);
        }
        assert_eq!(deltas.len(), 3);
        assert_eq!(newest_object(&deltas).map(|o| *o), Some(2));
    }
}
