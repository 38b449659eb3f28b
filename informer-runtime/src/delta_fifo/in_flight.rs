//! The popped keys not yet finished (D9, D13): the queue no longer holds their deltas and
//! the store may not show them yet, so D4, D5 and D6 judge each of them by the state its
//! popped deltas lead to, not by the store.

use std::collections::HashMap;
use std::sync::Arc;

use super::delta::{Delta, newest_object};
use crate::key::ObjectKey;

/// What the FIFO knows of one popped key until it is finished.
pub(crate) struct InFlight<K> {
    /// The newest object of the popped deltas (tombstone `last_known` source, D5).
    pub(crate) newest: Option<Arc<K>>,
    /// Whether the key exists once the popped deltas are applied (last delta is not `Deleted`).
    pub(crate) exists_after: bool,
    /// Pops of this key not finished yet: the ordered mode can hand one key out more than once
    /// in a batch (D10), and the newest pop's state is the one kept.
    pops: usize,
    /// When the key was first popped, so a relist tombstones in-flight keys in pop order.
    seq: u64,
}

/// Every popped key not yet finished, whatever the batch it came in (D13): O(1) per pop and
/// per finish, the objects shared as `Arc`s.
pub(crate) struct InFlightKeys<K> {
    keys: HashMap<ObjectKey, InFlight<K>>,
    next_seq: u64,
}

impl<K> Default for InFlightKeys<K> {
    fn default() -> Self {
        InFlightKeys {
            keys: HashMap::new(),
            next_seq: 0,
        }
    }
}

impl<K> InFlightKeys<K> {
    /// `key` was popped with `deltas`: it is in flight, in the state they lead to.
    pub(crate) fn popped(&mut self, key: &ObjectKey, deltas: &[Delta<K>]) {
        let newest = newest_object(deltas);
        let exists_after = !matches!(deltas.last(), Some(Delta::Deleted(_)));
        if let Some(f) = self.keys.get_mut(key.as_str()) {
            f.newest = newest;
            f.exists_after = exists_after;
            f.pops += 1;
            return;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let f = InFlight {
            newest,
            exists_after,
            pops: 1,
            seq,
        };
        self.keys.insert(key.clone(), f);
    }

    /// One pop of `key` was finished (done or requeued): the key leaves flight with its last.
    pub(crate) fn finished(&mut self, key: &str) {
        let last = match self.keys.get_mut(key) {
            Some(f) => {
                f.pops = f.pops.saturating_sub(1);
                f.pops == 0
            }
            None => false,
        };
        if last {
            self.keys.remove(key);
        }
    }

    /// The in-flight state of `key`, if it is in flight.
    pub(crate) fn get(&self, key: &str) -> Option<&InFlight<K>> {
        self.keys.get(key)
    }

    /// Whether `key` is in flight.
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.keys.contains_key(key)
    }

    /// The in-flight keys that exist once their popped deltas are applied, with their newest
    /// object, in pop order (what a relist tombstones if it lacks them, D5, D10).
    pub(crate) fn existing(&self) -> Vec<(ObjectKey, Option<Arc<K>>)> {
        let mut existing: Vec<(u64, ObjectKey, Option<Arc<K>>)> = self
            .keys
            .iter()
            .filter(|(_, f)| f.exists_after)
            .map(|(key, f)| (f.seq, key.clone(), f.newest.clone()))
            .collect();
        existing.sort_unstable_by_key(|(seq, _, _)| *seq);
        existing
            .into_iter()
            .map(|(_, key, newest)| (key, newest))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta_fifo::{DeletedFinalStateUnknown, DeletedObject};

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(Some("ns"), name)
    }

    fn deleted(name: &str) -> Delta<u32> {
        Delta::Deleted(DeletedObject::Unknown(DeletedFinalStateUnknown {
            key: key(name),
            last_known: None,
        }))
    }

    /// D13: a key popped twice (the ordered mode's batch) stays in flight, in its newest
    /// popped state, until both pops are finished.
    #[test]
    fn d13_a_key_popped_twice_leaves_flight_with_its_last_finish() {
        let mut f = InFlightKeys::<u32>::default();
        f.popped(&key("a"), &[Delta::Added(Arc::new(1))]);
        f.popped(&key("a"), &[deleted("a")]);
        assert!(f.get("ns/a").is_some_and(|a| !a.exists_after));
        f.finished("ns/a");
        assert!(f.contains("ns/a"));
        f.finished("ns/a");
        assert!(!f.contains("ns/a"));
        f.finished("ns/a");
        assert!(!f.contains("ns/a"), "an extra finish is harmless");
    }

    /// D13 with D5: the keys a relist judges are those that exist after their popped deltas, in
    /// pop order, with their newest object.
    #[test]
    fn d13_existing_keys_in_pop_order() {
        let mut f = InFlightKeys::<u32>::default();
        for (i, name) in ["c", "a", "b"].into_iter().enumerate() {
            f.popped(&key(name), &[Delta::Updated(Arc::new(i as u32))]);
        }
        f.popped(&key("d"), &[deleted("d")]);
        let existing: Vec<(String, Option<u32>)> = f
            .existing()
            .into_iter()
            .map(|(k, o)| (k.to_string(), o.as_deref().copied()))
            .collect();
        assert_eq!(
            existing,
            [
                ("ns/c".into(), Some(0)),
                ("ns/a".into(), Some(1)),
                ("ns/b".into(), Some(2))
            ]
        );
    }
}
