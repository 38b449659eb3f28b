//! The resource versions of changes still queued, so the store's resource version never passes
//! one of them ([K3], [K4]).
//!
//! A store whose consumer applied a key's deltas up to version 102 does not reflect 102 while
//! another key still holds a queued change at 101: the keyed FIFO hands keys out in
//! first-enqueue order, not in version order ([D2]). [`PendingVersions`] keeps, as a multiset,
//! the lowest version of every queued change that can hold the store back, so the FIFO can
//! publish only a version below all of them. Each insert and removal is O(log n) in the queued
//! keys (keyed mode) or queued relist entries (ordered mode); the lowest is O(log n) too.
//!
//! [K3]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#16-read-your-own-writes-after-kep-5647-and-controller-runtime-v025
//! [K4]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#16-read-your-own-writes-after-kep-5647-and-controller-runtime-v025
//! [D2]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#2-delta-fifo

use std::collections::BTreeMap;

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

    /// Replaces one occurrence of `old` by `new` (either may be absent).
    pub(crate) fn replace(&mut self, old: Option<u64>, new: Option<u64>) {
        if old == new {
            return;
        }
        if let Some(old) = old {
            self.remove(old);
        }
        if let Some(new) = new {
            self.insert(new);
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.counts.values().map(|c| *c as usize).sum()
    }
}

/// The lowest resource version at which the change `delta` can have happened, for a delta
/// that is not a resync's `Sync` (the store already holds that state, [D6]): the object's own
/// version for an add, update, relisted object or watched delete (kube-apiserver stamps a
/// deleted object with the deletion's version); for a relist's tombstone, whose deletion came
/// after its last known state, that state's version, or 0 when it is unknown. `None` when the
/// version is not a number ([K1]: then the store's version never advances by it either).
///
/// [D6]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#2-delta-fifo
/// [K1]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#16-read-your-own-writes-after-kep-5647-and-controller-runtime-v025
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
        v.replace(Some(7), Some(9));
        assert_eq!(v.lowest(), Some(9));
        v.remove(42);
        assert_eq!(v.len(), 1);
        v.replace(Some(9), None);
        assert_eq!(v.lowest(), None);
    }

    #[test]
    fn lower_prefers_any_version_to_none() {
        assert_eq!(lower(None, None), None);
        assert_eq!(lower(Some(4), None), Some(4));
        assert_eq!(lower(None, Some(4)), Some(4));
        assert_eq!(lower(Some(5), Some(4)), Some(4));
    }
}
