//! The ordered FIFO mode (client-go's `RealFIFO`, D10): a plain log of deltas in arrival order.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Arc;

use super::delta::{DeletedFinalStateUnknown, DeletedObject, Delta, Deltas};
use super::in_flight::InFlightKeys;
use super::known::KnownObjects;
use super::queue::{DeltaQueue, PoppedItem};
use super::versions::{PendingVersions, change_version};
use crate::key::ObjectKey;

/// One logged delta.
struct Entry<K> {
    key: ObjectKey,
    delta: Delta<K>,
    /// Part of the first `replace`'s population (D7).
    initial: bool,
    /// Queued by a relist (or put back by `requeue`), so possibly out of version order; its
    /// change version is in [`OrderedQueue::versions`] (K3).
    tracked: bool,
}

/// What the log holds for one key, kept so D10's checks need no scan of the log.
struct KeyState<K> {
    /// Logged deltas of this key.
    count: usize,
    /// The newest logged object (a tombstone's `last_known`).
    newest: Option<Arc<K>>,
    /// Whether the newest logged delta is `Deleted`.
    last_is_delete: bool,
}

/// The ordered queue: no grouping, no dedup, deletes always queued (D10).
pub(crate) struct OrderedQueue<K> {
    log: VecDeque<Entry<K>>,
    keys: HashMap<ObjectKey, KeyState<K>>,
    populated: bool,
    /// Deltas of the first `replace` not yet processed (client-go: `len(f.items)`).
    initial_remaining: usize,
    /// Every popped key not finished yet (D13).
    in_flight: InFlightKeys<K>,
    /// The change versions of the tracked entries (K3). Watch events are appended in version
    /// order and a batch pops a prefix of the log, so every untracked entry left behind a
    /// batch is newer than what it applied; only a relist's entries (list order, tombstones)
    /// and requeued ones can be older. Watch events cost nothing here.
    versions: PendingVersions,
}

impl<K: crate::object::Meta> OrderedQueue<K> {
    pub(crate) fn new() -> Self {
        OrderedQueue {
            log: VecDeque::new(),
            keys: HashMap::new(),
            populated: false,
            initial_remaining: 0,
            in_flight: InFlightKeys::default(),
            versions: PendingVersions::default(),
        }
    }

    /// Appends a relist's entry, tracking its version (K3).
    fn push_listed(&mut self, key: ObjectKey, delta: Delta<K>) {
        if let Some(version) = change_version(&delta) {
            self.versions.insert(version);
        }
        self.push(key, delta);
        if let Some(entry) = self.log.back_mut() {
            entry.tracked = true;
        }
    }

    fn push(&mut self, key: ObjectKey, delta: Delta<K>) {
        let state = self.keys.entry(key.clone()).or_insert(KeyState {
            count: 0,
            newest: None,
            last_is_delete: false,
        });
        state.count += 1;
        state.newest = delta.object().cloned();
        state.last_is_delete = matches!(delta, Delta::Deleted(_));
        self.log.push_back(Entry {
            key,
            delta,
            initial: false,
            tracked: false,
        });
    }

    fn push_tombstone(&mut self, key: ObjectKey, last_known: Option<Arc<K>>) {
        let tombstone = DeletedFinalStateUnknown {
            key: key.clone(),
            last_known,
        };
        self.push_listed(key, Delta::Deleted(DeletedObject::Unknown(tombstone)));
    }

    /// Takes the head entry, forgetting its version if it was tracked.
    fn take_front(&mut self) -> Option<Entry<K>> {
        let entry = self.log.pop_front()?;
        if entry.tracked
            && let Some(version) = change_version(&entry.delta)
        {
            self.versions.remove(version);
        }
        Some(entry)
    }
}

impl<K: crate::object::Meta> DeltaQueue<K> for OrderedQueue<K> {
    fn has_synced(&self) -> bool {
        self.populated && self.initial_remaining == 0
    }

    fn mark_populated(&mut self) {
        self.populated = true;
    }

    fn queue_action(&mut self, key: ObjectKey, delta: Delta<K>) {
        self.push(key, delta);
    }

    fn lowest_pending_version(&mut self) -> Option<u64> {
        self.versions.lowest()
    }

    /// D10: an ordered FIFO queues every delete, known or not.
    fn delete_is_known(&self, _key: &str, _known: Option<&dyn KnownObjects<K>>) -> bool {
        true
    }

    /// D10: tombstones for queued keys absent from the list (unless their newest delta is
    /// already `Deleted`), then for absent stored keys that are not queued, then the items in
    /// list order.
    fn replace(
        &mut self,
        list: Vec<(ObjectKey, Arc<K>)>,
        emit_replaced: bool,
        known: Option<&dyn KnownObjects<K>>,
    ) {
        let listed: HashSet<ObjectKey> = list.iter().map(|(k, _)| k.clone()).collect();
        let before = self.log.len();

        // Queued keys, in log order of their first delta.
        let mut seen = HashSet::new();
        let queued: Vec<ObjectKey> = self
            .log
            .iter()
            .filter(|e| seen.insert(e.key.clone()))
            .map(|e| e.key.clone())
            .collect();
        for key in queued {
            if listed.contains(key.as_str()) {
                continue;
            }
            let Some(state) = self.keys.get(key.as_str()) else {
                continue;
            };
            if state.last_is_delete {
                continue;
            }
            let last_known = state.newest.clone();
            self.push_tombstone(key, last_known);
        }

        // [ours, D9, D13] Every in-flight key is judged by the state its popped deltas lead to.
        for (key, newest) in self.in_flight.existing() {
            if !listed.contains(key.as_str()) && !self.keys.contains_key(key.as_str()) {
                self.push_tombstone(key, newest);
            }
        }

        if let Some(known) = known {
            for key in known.list_keys() {
                if listed.contains(key.as_str())
                    || self.keys.contains_key(key.as_str())
                    || self.in_flight.contains(key.as_str())
                {
                    continue;
                }
                let last_known = known.get_by_key(key.as_str());
                self.push_tombstone(key, last_known);
            }
        }

        for (key, obj) in list {
            let delta = if emit_replaced {
                Delta::Replaced(obj)
            } else {
                Delta::Sync(obj)
            };
            self.push_listed(key, delta);
        }

        if !self.populated {
            self.populated = true;
            self.initial_remaining = self.log.len();
            for entry in self.log.iter_mut() {
                entry.initial = true;
            }
        }
        debug_assert!(self.log.len() >= before);
    }

    /// D6: `Sync` for stored keys with nothing queued and not in flight (D13).
    fn resync(&mut self, known: &dyn KnownObjects<K>) {
        for key in known.list_keys() {
            if self.keys.contains_key(key.as_str()) || self.in_flight.contains(key.as_str()) {
                continue;
            }
            if let Some(obj) = known.get_by_key(key.as_str()) {
                self.push(key, Delta::Sync(obj));
            }
        }
    }

    /// Takes the head delta plus the deltas of the same key directly behind it: processing
    /// them together is the same as one by one, and keeps `Popped` "one key, oldest first".
    fn pop_front(&mut self) -> Option<PoppedItem<K>> {
        let is_in_initial_list = !self.has_synced();
        let first = self.take_front()?;
        let key = first.key;
        let mut initial = usize::from(first.initial);
        let mut deltas = vec![first.delta];
        while self.log.front().is_some_and(|e| e.key == key) {
            if let Some(next) = self.take_front() {
                initial += usize::from(next.initial);
                deltas.push(next.delta);
            }
        }
        let remove = match self.keys.get_mut(key.as_str()) {
            Some(state) => {
                state.count = state.count.saturating_sub(deltas.len());
                state.count == 0
            }
            None => false,
        };
        if remove {
            self.keys.remove(key.as_str());
        }
        self.in_flight.popped(&key, &deltas);
        Some(PoppedItem {
            key,
            deltas,
            initial,
            is_in_initial_list,
        })
    }

    fn finish(&mut self, key: &str, initial: usize) -> bool {
        self.in_flight.finished(key);
        if initial > 0 && self.initial_remaining > 0 {
            self.initial_remaining = self.initial_remaining.saturating_sub(initial);
            return self.has_synced();
        }
        false
    }

    /// Failed deltas go back to the **front** of the log, so global order is kept.
    fn requeue(&mut self, key: ObjectKey, deltas: Deltas<K>, initial: usize) {
        self.in_flight.finished(key.as_str());
        let n = deltas.len();
        if n == 0 {
            return;
        }
        let newest = super::delta::newest_object(&deltas);
        let last_is_delete = matches!(deltas.last(), Some(Delta::Deleted(_)));
        match self.keys.get_mut(key.as_str()) {
            // Newer deltas of this key are still queued: they stay the newest.
            Some(state) => state.count += n,
            None => {
                self.keys.insert(
                    key.clone(),
                    KeyState {
                        count: n,
                        newest,
                        last_is_delete,
                    },
                );
            }
        }
        for (i, delta) in deltas.into_iter().enumerate().rev() {
            // Rare (a consumer's failure): every requeued delta is tracked, a `Sync` included.
            if let Some(version) = change_version(&delta) {
                self.versions.insert(version);
            }
            self.log.push_front(Entry {
                key: key.clone(),
                delta,
                initial: i < initial,
                tracked: true,
            });
        }
    }

    fn len(&self) -> usize {
        self.log.len()
    }

    fn held(&self) -> usize {
        self.log.len()
    }

    fn queued_keys(&self) -> Vec<ObjectKey> {
        let mut seen = HashSet::new();
        self.log
            .iter()
            .filter(|e| seen.insert(e.key.clone()))
            .map(|e| e.key.clone())
            .collect()
    }

    fn queued_deltas(&self, key: &str) -> Option<Deltas<K>> {
        let deltas: Deltas<K> = self
            .log
            .iter()
            .filter(|e| e.key.as_str() == key)
            .map(|e| e.delta.clone())
            .collect();
        (!deltas.is_empty()).then_some(deltas)
    }

    fn initial_remaining(&self) -> usize {
        self.initial_remaining
    }
}
