//! The informer's one event type, [`InformerEvent`], and the [`Notification`] that carries it from the store update to the fan-out (H2-H4, H12).

use std::sync::Arc;

use super::handler::DeletedObject;
use crate::key::ObjectKey;

/// One event of an informer: what a handler call receives, what each handler's queue holds and
/// what an [`EventStream`](super::EventStream) yields. Mirrors the three handler calls.
pub enum InformerEvent<K> {
    /// `on_add(obj, is_in_initial_list)` (H3).
    Added {
        /// The added object (the same `Arc` the store holds, X7).
        obj: Arc<K>,
        /// True for the first list and for the synthetic adds of a late subscriber (H3, H5).
        is_in_initial_list: bool,
    },
    /// `on_update(old, new)`; a resync has equal resource versions (Y1, H4).
    Updated {
        /// The previous state.
        old: Arc<K>,
        /// The new state.
        new: Arc<K>,
    },
    /// `on_delete(obj)` (H12).
    Deleted(DeletedObject<K>),
}

impl<K> Clone for InformerEvent<K> {
    fn clone(&self) -> Self {
        match self {
            InformerEvent::Added {
                obj,
                is_in_initial_list,
            } => InformerEvent::Added {
                obj: Arc::clone(obj),
                is_in_initial_list: *is_in_initial_list,
            },
            InformerEvent::Updated { old, new } => InformerEvent::Updated {
                old: Arc::clone(old),
                new: Arc::clone(new),
            },
            InformerEvent::Deleted(d) => InformerEvent::Deleted(d.clone()),
        }
    }
}

impl<K: std::fmt::Debug> std::fmt::Debug for InformerEvent<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InformerEvent::Added {
                obj,
                is_in_initial_list,
            } => f
                .debug_struct("Added")
                .field("obj", obj)
                .field("is_in_initial_list", is_in_initial_list)
                .finish(),
            InformerEvent::Updated { old, new } => f
                .debug_struct("Updated")
                .field("old", old)
                .field("new", new)
                .finish(),
            InformerEvent::Deleted(d) => f.debug_tuple("Deleted").field(d).finish(),
        }
    }
}

impl<K> InformerEvent<K> {
    /// The newest object this event carries (for a tombstone, its last known state).
    pub fn object(&self) -> Option<&Arc<K>> {
        match self {
            InformerEvent::Added { obj, .. } => Some(obj),
            InformerEvent::Updated { new, .. } => Some(new),
            InformerEvent::Deleted(d) => d.last_known(),
        }
    }
}

impl<K> InformerEvent<K> {
    /// Whether delivering this event counts toward the handler's sync (H6): an add from the
    /// first list or a late handler's snapshot (H3, H5).
    pub(crate) fn is_initial(&self) -> bool {
        matches!(
            self,
            InformerEvent::Added {
                is_in_initial_list: true,
                ..
            }
        )
    }
}

/// One event for one key, as [`apply_batch`](super::apply::apply_batch) produces it after the
/// store shows the change (H2) and the fan-out hands it to every handler's queue.
pub(crate) struct Notification<K> {
    /// The object's key: handler queues coalesce by it (H10), logs name it.
    pub(crate) key: ObjectKey,
    /// The event.
    pub(crate) event: InformerEvent<K>,
    /// Whether this is a resync (a `Sync` delta, or an update with an unchanged resource
    /// version): only handlers due for one receive it (H4, Y4).
    pub(crate) is_resync: bool,
}
