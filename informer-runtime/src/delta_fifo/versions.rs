//! The resource versions of changes still queued, so the store's resource version never passes
//! one of them (K3, K4).
//!
//! A store whose consumer applied a key's deltas up to version 102 does not reflect 102 while
//! another key still holds a queued change at 101: the keyed FIFO hands keys out in
//! first-enqueue order, not in version order (D2). The queues keep the lowest version of every
//! queued change that can hold the store back, so the FIFO can publish only a version below all
//! of them:
//!
//! - the keyed mode, per queued key, in [`KeyVersions`]: a monotone queue over the keys in the
//!   order they were queued (which is the order they are popped), O(1) amortized per key and
//!   nothing per pop, plus a small heap for the rare key whose lowest version drops after it was
//!   queued (a change after a resync's `Sync`, a requeue); entries leave lazily, when asked for
//!   the lowest;
//! - the ordered mode, per relist or requeued entry (watch events are in version order already),
//!   in [`PendingVersions`], a multiset: O(log n) per such entry.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};

use super::delta::{DeletedObject, Delta};

/// A multiset of resource versions.
#[derive(Debug, Default)]
pub(crate) struct PendingVersions {
    counts: BTreeMap<u64, u32>,
}

impl PendingVersions {
    pub(crate) fn insert(&mut self, version: u64) {
        *self.counts.entry(version).or_insert(0) += 1;
    }

    /// Removes one occurrence of `version` (nothing if it holds none).
    pub(crate) fn remove(&mut self, version: u64) {
        if let Some(count) = self.counts.get_mut(&version) {
            *count -= 1;
            if *count == 0 {
                self.counts.remove(&version);
            }
        }
    }

    /// The lowest version held.
    pub(crate) fn lowest(&self) -> Option<u64> {
        self.counts.keys().next().copied()
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.counts.values().map(|c| *c as usize).sum()
    }
}

/// The lowest change version among the keys of a queue that numbers its keys as it queues them
/// and hands them out in that order (the keyed FIFO's `order`): a key numbered `seq` is still
/// queued exactly when `seq` is at least the oldest queued key's number.
#[derive(Debug, Default)]
pub(crate) struct KeyVersions {
    next_seq: u64,
    /// `(version, seq)` of keys as they were queued; versions rise from front to back (a
    /// monotone queue): an entry with a higher version and an older key can never be the lowest.
    queued: VecDeque<(u64, u64)>,
    /// `(version, seq)` of keys whose lowest version dropped after they were queued.
    lowered: BinaryHeap<Reverse<(u64, u64)>>,
}

impl KeyVersions {
    /// Numbers a key being queued at the back.
    pub(crate) fn number(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// The key numbered `seq` (the latest) was queued with a change at `version`.
    pub(crate) fn queued(&mut self, seq: u64, version: u64) {
        while self.queued.back().is_some_and(|(v, _)| *v >= version) {
            self.queued.pop_back();
        }
        self.queued.push_back((version, seq));
    }

    /// The queued key numbered `seq` now holds a change at `version`, lower than before.
    pub(crate) fn lowered(&mut self, seq: u64, version: u64) {
        self.lowered.push(Reverse((version, seq)));
    }

    /// The lowest change version of the keys still queued, the oldest of which is numbered
    /// `oldest` (`None`: nothing is queued). Drops the entries of keys popped since.
    pub(crate) fn lowest(&mut self, oldest: Option<u64>) -> Option<u64> {
        let Some(oldest) = oldest else {
            self.queued.clear();
            self.lowered.clear();
            return None;
        };
        while self.queued.front().is_some_and(|(_, seq)| *seq < oldest) {
            self.queued.pop_front();
        }
        while self
            .lowered
            .peek()
            .is_some_and(|Reverse((_, seq))| *seq < oldest)
        {
            self.lowered.pop();
        }
        let queued = self.queued.front().map(|(v, _)| *v);
        let lowered = self.lowered.peek().map(|Reverse((v, _))| *v);
        lower(queued, lowered)
    }
}

/// The lowest resource version at which the change `delta` can have happened, for a delta
/// that is not a resync's `Sync` (the store already holds that state, D6): the object's own
/// version for an add, update, relisted object or watched delete (kube-apiserver stamps a
/// deleted object with the deletion's version); for a relist's tombstone, whose deletion came
/// after its last known state, that state's version, or 0 when it is unknown. `None` when the
/// version is not a number (K1: then the store's version never advances by it either).
pub(crate) fn change_version<K: crate::object::Meta>(delta: &Delta<K>) -> Option<u64> {
    let version = |obj: &K| obj.object_resource_version()?.parse().ok();
    match delta {
        Delta::Deleted(DeletedObject::Unknown(tombstone)) => Some(
            tombstone
                .last_known
                .as_deref()
                .and_then(version)
                .unwrap_or(0),
        ),
        Delta::Added(o)
        | Delta::Updated(o)
        | Delta::Replaced(o)
        | Delta::Sync(o)
        | Delta::Deleted(DeletedObject::Known(o)) => version(o),
    }
}

/// The lower of two optional versions, `None` only when both are.
pub(crate) fn lower(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multiset_keeps_the_lowest_until_its_last_copy_goes() {
        let mut v = PendingVersions::default();
        assert_eq!(v.lowest(), None);
        v.insert(7);
        v.insert(3);
        v.insert(3);
        assert_eq!(v.lowest(), Some(3));
        v.remove(3);
        assert_eq!(v.lowest(), Some(3));
        v.remove(3);
        assert_eq!(v.lowest(), Some(7));
        v.remove(42);
        assert_eq!(v.len(), 1);
        v.remove(7);
        assert_eq!(v.lowest(), None);
    }

    #[test]
    fn key_versions_follow_the_keys_still_queued() {
        let mut v = KeyVersions::default();
        // Keys 0, 1, 2 queued at 100, 101, 99 (a relist's list order); key 1 later drops to 90.
        for version in [100, 101, 99] {
            let seq = v.number();
            v.queued(seq, version);
        }
        assert_eq!(v.lowest(Some(0)), Some(99));
        v.lowered(1, 90);
        assert_eq!(v.lowest(Some(0)), Some(90));
        // Key 0 popped: 1 is the oldest.
        assert_eq!(v.lowest(Some(1)), Some(90));
        // Key 1 popped: its lowered entry goes with it.
        assert_eq!(v.lowest(Some(2)), Some(99));
        let seq = v.number();
        v.queued(seq, 120);
        assert_eq!(v.lowest(Some(2)), Some(99));
        assert_eq!(v.lowest(Some(3)), Some(120));
        assert_eq!(v.lowest(None), None);
        assert_eq!(v.lowest(Some(4)), None);
    }

    #[test]
    fn lower_prefers_any_version_to_none() {
        assert_eq!(lower(None, None), None);
        assert_eq!(lower(Some(4), None), Some(4));
        assert_eq!(lower(None, Some(4)), Some(4));
        assert_eq!(lower(Some(5), Some(4)), Some(4));
    }
}
