//! The interface both FIFO modes implement behind the FIFO's mutex (keyed D2–D7, ordered D10).

use std::sync::Arc;

use super::delta::{Delta, Deltas};
use super::known::KnownObjects;
use crate::key::ObjectKey;

/// A popped run of one key's deltas, moved out of the queue.
pub(crate) struct PoppedItem<K> {
    pub(crate) key: ObjectKey,
    pub(crate) deltas: Deltas<K>,
    /// How many of these deltas (the oldest ones) belong to the first `replace`'s population (D7).
    pub(crate) initial: usize,
    pub(crate) is_in_initial_list: bool,
}

/// The queue of deltas behind the FIFO's mutex, one implementation per [`FifoMode`](super::FifoMode)
/// (keyed, ordered). All methods run under that mutex and must not call user code.
pub(crate) trait DeltaQueue<K>: Send {
    /// Whether the first `replace`'s population was processed, or a write came first (D7).
    fn has_synced(&self) -> bool;
    /// A write happened: with no `replace` before it, `has_synced` is true at once (D7).
    fn mark_populated(&mut self);
    /// Queues one delta for `key` (D2/D3 keyed, plain append ordered).
    fn queue_action(&mut self, key: ObjectKey, delta: Delta<K>);
    /// The lowest version of a queued change that the consumer's store may not reflect yet
    /// (K3): every queued change the mode can hand out after a newer one. `None` when no
    /// queued change can hold the store's version back.
    fn lowest_pending_version(&mut self) -> Option<u64>;
    /// Whether a `delete` for `key` must be queued (D4 keyed; always, D10 ordered).
    fn delete_is_known(&self, key: &str, known: Option<&dyn KnownObjects<K>>) -> bool;
    /// A relist (D5 keyed, D10 ordered).
    fn replace(
        &mut self,
        list: Vec<(ObjectKey, Arc<K>)>,
        emit_replaced: bool,
        known: Option<&dyn KnownObjects<K>>,
    );
    /// A resync of stored keys without queued deltas (D6).
    fn resync(&mut self, known: &dyn KnownObjects<K>);
    /// Takes the next key's deltas and marks the key in flight until it is finished (D9,
    /// D13).
    fn pop_front(&mut self) -> Option<PoppedItem<K>>;
    /// The popped deltas of `key` were processed: one pop of it leaves flight (D13); returns
    /// whether `has_synced` flipped (D7).
    fn finish(&mut self, key: &str, initial: usize) -> bool;
    /// The popped deltas failed processing: put them back (one pop of `key` leaves flight).
    fn requeue(&mut self, key: ObjectKey, deltas: Deltas<K>, initial: usize);
    /// Queued units: keys (keyed) or deltas (ordered).
    fn len(&self) -> usize;
    /// Queued deltas, whatever the mode; the popped ones are not counted (D12).
    fn held(&self) -> usize;
    /// The distinct queued keys, in pop order of their first delta.
    fn queued_keys(&self) -> Vec<ObjectKey>;
    /// The deltas queued for `key`, oldest first.
    fn queued_deltas(&self, key: &str) -> Option<Deltas<K>>;
    /// The number of first-`replace` deltas or keys still to process (for `Debug`).
    fn initial_remaining(&self) -> usize;
}

/// Marks the queue populated (D7: a write before any `replace` means synced at once) and
/// returns whether that made `has_synced` true, so waiters can be woken.
pub(crate) fn populate<K>(queued: &mut dyn DeltaQueue<K>) -> bool {
    let was_synced = queued.has_synced();
    queued.mark_populated();
    !was_synced && queued.has_synced()
}
