//! The keyed (coalescing) FIFO mode: per-key delta lists in first-enqueue order, and the D2–D7 rules.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::delta::{
    DeletedFinalStateUnknown, DeletedObject, Delta, Deltas, newest_object, push_dedup,
};
use super::in_flight::InFlightKeys;
use super::known::KnownObjects;
use super::queue::{DeltaQueue, PoppedItem};
use super::versions::{KeyVersions, change_version, lower};
use crate::key::ObjectKey;

/// A queued key's deltas.
pub(crate) struct Queued<K> {
    pub(crate) deltas: Deltas<K>,
    /// Part of the first `replace`'s population (D7).
    pub(crate) initial: bool,
    /// The lowest version of a change among `deltas` (not a resync's `Sync`), as told to
    /// [`KeyedQueue::versions`] (K3).
    pub(crate) lowest: Option<u64>,
    /// The key's number in [`KeyedQueue::versions`]: keys are numbered as `order` queues them.
    pub(crate) seq: u64,
}

impl<K> Queued<K> {
    /// The key now also holds a change at `version`: lowers its lowest version, telling
    /// `versions` (K3).
    fn lower_to(&mut self, version: Option<u64>, versions: &mut KeyVersions) {
        let lowest = lower(self.lowest, version);
        if lowest != self.lowest
            && let Some(lowest) = lowest
        {
            versions.lowered(self.seq, lowest);
            self.lowest = Some(lowest);
        }
    }
}

/// The keyed queue (client-go's `DeltaFIFO`).
pub(crate) struct KeyedQueue<K> {
    pub(crate) items: HashMap<ObjectKey, Queued<K>>,
    /// Keys in first-enqueue order; exactly the keys of `items` (D2).
    pub(crate) order: VecDeque<ObjectKey>,
    /// Something was added, or `replace` was called, at least once (D7).
    pub(crate) populated: bool,
    /// Keys of the first `replace` not yet processed (D7).
    pub(crate) initial_remaining: usize,
    /// Every popped key not finished yet (D13).
    pub(crate) in_flight: InFlightKeys<K>,
    /// The `lowest` change version of every queued key (K3): O(1) amortized per queued key,
    /// nothing per pop (entries of popped keys leave when the lowest is asked for).
    versions: KeyVersions,
    /// The deltas of every queued key, summed (D12).
    held: usize,
}

impl<K: crate::object::Meta> KeyedQueue<K> {
    pub(crate) fn new() -> Self {
        KeyedQueue {
            items: HashMap::new(),
            order: VecDeque::new(),
            populated: false,
            initial_remaining: 0,
            in_flight: InFlightKeys::default(),
            versions: KeyVersions::default(),
            held: 0,
        }
    }

    /// Appends `delta` to `key`'s list, queueing the key at the back if it is new (D2), and
    /// applies the delete dedup (D3). `version` is the change's version (K3; `None` for a
    /// resync's `Sync`, which changes nothing).
    fn push(&mut self, key: ObjectKey, delta: Delta<K>, version: Option<u64>) {
        match self.items.get_mut(key.as_str()) {
            Some(queued) => {
                let before = queued.deltas.len();
                push_dedup(&mut queued.deltas, delta);
                // D3's dedup may keep the count.
                self.held += queued.deltas.len() - before;
                // Changes of one key arrive in version order, so this is a comparison and
                // nothing more, except for a first change after a resync's `Sync`.
                queued.lower_to(version, &mut self.versions);
            }
            None => self.queue_key(key, vec![delta], false, version),
        }
    }

    /// Queues a key that is not queued at the back, with its deltas and their lowest change
    /// version (K3).
    fn queue_key(
        &mut self,
        key: ObjectKey,
        deltas: Deltas<K>,
        initial: bool,
        version: Option<u64>,
    ) {
        self.order.push_back(key.clone());
        self.held += deltas.len();
        let seq = self.versions.number();
        if let Some(version) = version {
            self.versions.queued(seq, version);
        }
        self.items.insert(
            key,
            Queued {
                deltas,
                initial,
                lowest: version,
                seq,
            },
        );
    }

    fn queue_change(&mut self, key: ObjectKey, delta: Delta<K>) {
        let version = change_version(&delta);
        self.push(key, delta, version);
    }

    fn queue_tombstone(&mut self, key: ObjectKey, last_known: Option<Arc<K>>) {
        let tombstone = DeletedFinalStateUnknown {
            key: key.clone(),
            last_known,
        };
        self.queue_change(key, Delta::Deleted(DeletedObject::Unknown(tombstone)));
    }
}

impl<K: crate::object::Meta> DeltaQueue<K> for KeyedQueue<K> {
    /// `populated && initial_remaining == 0` (D7).
    fn has_synced(&self) -> bool {
        self.populated && self.initial_remaining == 0
    }

    fn mark_populated(&mut self) {
        self.populated = true;
    }

    fn len(&self) -> usize {
        self.order.len()
    }

    fn held(&self) -> usize {
        self.held
    }

    fn queued_keys(&self) -> Vec<ObjectKey> {
        self.order.iter().cloned().collect()
    }

    fn queued_deltas(&self, key: &str) -> Option<Deltas<K>> {
        self.items.get(key).map(|q| q.deltas.clone())
    }

    fn initial_remaining(&self) -> usize {
        self.initial_remaining
    }

    fn queue_action(&mut self, key: ObjectKey, delta: Delta<K>) {
        self.queue_change(key, delta);
    }

    fn lowest_pending_version(&mut self) -> Option<u64> {
        let oldest = self
            .order
            .front()
            .and_then(|key| self.items.get(key.as_str()))
            .map(|queued| queued.seq);
        self.versions.lowest(oldest)
    }

    /// Whether a `delete` for `key` must be queued: the key is queued, in flight and still
    /// existing, or in the store (D4; a key of a popped batch is judged by its popped deltas
    /// until it is finished, D13).
    fn delete_is_known(&self, key: &str, known: Option<&dyn KnownObjects<K>>) -> bool {
        if self.items.contains_key(key) {
            return true;
        }
        if let Some(f) = self.in_flight.get(key) {
            return f.exists_after;
        }
        known.is_some_and(|k| k.contains_key(key))
    }

    /// D5: queue each item (`Replaced`, or `Sync` when replaced-emission is off), then a tombstone
    /// for every queued key absent from the list, then one for every stored key absent from the
    /// list that has no queued deltas. The first call sets the D7 population.
    fn replace(
        &mut self,
        list: Vec<(ObjectKey, Arc<K>)>,
        emit_replaced: bool,
        known: Option<&dyn KnownObjects<K>>,
    ) {
        let mut keys: HashSet<ObjectKey> = HashSet::with_capacity(list.len());
        for (key, obj) in list {
            keys.insert(key.clone());
            let delta = if emit_replaced {
                Delta::Replaced(obj)
            } else {
                Delta::Sync(obj)
            };
            self.queue_action(key, delta);
        }

        let mut queued_deletions = 0;
        // Queued keys absent from the list, in queue order (client-go walks its map).
        let absent: Vec<ObjectKey> = self
            .order
            .iter()
            .filter(|k| !keys.contains(k.as_str()))
            .cloned()
            .collect();
        for key in absent {
            let last_known = self
                .items
                .get(key.as_str())
                .and_then(|q| newest_object(&q.deltas));
            queued_deletions += 1;
            self.queue_tombstone(key, last_known);
        }

        // [ours, D9, D13] An in-flight key is neither queued nor reliably in the store yet:
        // judge it by the state its popped deltas lead to.
        for (key, last_known) in self.in_flight.existing() {
            if !keys.contains(key.as_str()) && !self.items.contains_key(key.as_str()) {
                queued_deletions += 1;
                self.queue_tombstone(key, last_known);
            }
        }

        if let Some(known) = known {
            for key in known.list_keys() {
                if keys.contains(key.as_str())
                    || self
                        .items
                        .get(key.as_str())
                        .is_some_and(|q| !q.deltas.is_empty())
                    || self.in_flight.contains(key.as_str())
                {
                    continue;
                }
                // `None` when the object vanished between the two calls (client-go logs and
                // queues a tombstone without an object).
                let last_known = known.get_by_key(key.as_str());
                queued_deletions += 1;
                self.queue_tombstone(key, last_known);
            }
        }

        if !self.populated {
            self.populated = true;
            self.initial_remaining = keys.len() + queued_deletions;
            for queued in self.items.values_mut() {
                queued.initial = true;
            }
        }
    }

    /// D6: queue `Sync` with the stored object for every stored key without queued deltas
    /// (and, ours, not in flight, D13), so a stale copy never overtakes pending newer state.
    fn resync(&mut self, known: &dyn KnownObjects<K>) {
        for key in known.list_keys() {
            if self
                .items
                .get(key.as_str())
                .is_some_and(|q| !q.deltas.is_empty())
                || self.in_flight.contains(key.as_str())
            {
                continue;
            }
            if let Some(obj) = known.get_by_key(key.as_str()) {
                // The store holds this state already: it holds nothing back (K3).
                self.push(key, Delta::Sync(obj), None);
            }
        }
    }

    /// Takes the first key's deltas and marks the key in flight until it is finished (D9,
    /// D13).
    fn pop_front(&mut self) -> Option<PoppedItem<K>> {
        let is_in_initial_list = !self.has_synced();
        while let Some(key) = self.order.pop_front() {
            let Some(queued) = self.items.remove(key.as_str()) else {
                // Cannot happen: `order` and `items` hold the same keys.
                tracing::error!(%key, "delta FIFO key without deltas; skipping");
                continue;
            };
            self.held -= queued.deltas.len();
            self.in_flight.popped(&key, &queued.deltas);
            return Some(PoppedItem {
                key,
                deltas: queued.deltas,
                initial: usize::from(queued.initial),
                is_in_initial_list,
            });
        }
        None
    }

    /// The consumer processed the popped key, which leaves flight (D13). Returns whether
    /// `has_synced` flipped to true (D7: the count drops only after processing).
    fn finish(&mut self, key: &str, initial: usize) -> bool {
        self.in_flight.finished(key);
        if initial > 0 && self.initial_remaining > 0 {
            self.initial_remaining -= 1;
            return self.has_synced();
        }
        false
    }

    /// The consumer failed to process the popped deltas: put them back (client-go
    /// `AddIfNotPresent`). If the key was queued again meanwhile, the failed (older) deltas go in
    /// front of the new ones, with the D3 dedup applied at the seam; otherwise the key is queued
    /// at the back.
    fn requeue(&mut self, key: ObjectKey, deltas: Deltas<K>, initial: usize) {
        let initial = initial > 0;
        self.in_flight.finished(key.as_str());
        if deltas.is_empty() {
            return;
        }
        // Rare (a consumer's failure): every requeued delta counts, a `Sync` included.
        let version = deltas.iter().map(change_version).fold(None, lower);
        match self.items.get_mut(key.as_str()) {
            Some(queued) => {
                queued.lower_to(version, &mut self.versions);
                let newer = std::mem::replace(&mut queued.deltas, deltas);
                let before = newer.len();
                for delta in newer {
                    push_dedup(&mut queued.deltas, delta);
                }
                self.held += queued.deltas.len() - before;
                if initial && queued.initial {
                    // Both halves were counted in the initial population once; the merged key
                    // is processed once, so drop one count.
                    self.initial_remaining = self.initial_remaining.saturating_sub(1);
                }
                queued.initial |= initial;
            }
            None => self.queue_key(key, deltas, initial, version),
        }
    }
}
