//! One handler's queue of pending events: ordered, and coalescing by key at its maximum under [`OverflowPolicy::CoalesceByKey`] (H8, H10).

use std::collections::{HashMap, VecDeque};

use super::event::InformerEvent;
use crate::key::ObjectKey;

/// What happens when a handler's backlog reaches its maximum (H10).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum OverflowPolicy {
    /// Merge the new notification into the pending one for the same key: update+update becomes
    /// update(first old, last new), add+update becomes add(last), update+delete becomes
    /// delete(last state), and delete then add stays two notifications. An add the handler never
    /// saw followed by its delete vanishes as a pair, so the handler is never told of a delete of
    /// an object it never saw; deletes of objects it saw are never dropped. A key holds at most
    /// two pending notifications, so the backlog is bounded by the number of keys rather than
    /// events (H10).
    #[default]
    CoalesceByKey,
    /// Apply backpressure to the whole informer: the delta-processing loop waits before its next
    /// pop until this handler's backlog is below the maximum, and pops one key at a time. The
    /// reflector keeps filling the FIFO until it holds its bound of queued deltas, then stops
    /// reading the watch until the FIFO drains (D9, D12). The
    /// informer never queues a live notification past the maximum: what does not fit (several
    /// deltas of one key, a relist) waits in the informer until the handler takes something. A
    /// relist is still applied to the store as one swap (V2).
    Block,
}

/// The initial capacity of a handler backlog, and the capacity it shrinks back to once drained (H10).
pub const BACKLOG_START_CAPACITY: usize = 1024;

/// The default maximum backlog of one handler before the overflow policy applies (H10).
pub const DEFAULT_BACKLOG_MAX: usize = 16 * 1024;

/// What a push did, so the listener can fix its counters.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PushOutcome {
    /// Initial adds that were merged away and will never be delivered as adds (H6 accounting).
    pub(crate) dropped_initial: usize,
    /// Whether the notification was merged into a pending one (H10).
    pub(crate) coalesced: bool,
}

/// One handler's pending events, oldest first. Not synchronised: the listener wraps it in a mutex.
///
/// A slot whose notification was merged away (an add the handler never saw, then its delete)
/// stays in place, empty, until it reaches the front: removing it from the middle would shift
/// every later sequence number. A later notification for the same key fills it again, so a key
/// holds at most two slots (a delete of what the handler saw, then the newest state) and the
/// backlog stays bounded by the key count (H10).
pub(crate) struct PendingQueue<K> {
    items: VecDeque<(ObjectKey, Option<InformerEvent<K>>)>,
    /// Slots holding a notification.
    live: usize,
    /// Sequence number of `items[0]`; entry `i` has sequence `head_seq + i`.
    head_seq: u64,
    /// The sequence number of the newest pending entry of each key.
    last_by_key: HashMap<ObjectKey, u64>,
    max: usize,
    policy: OverflowPolicy,
}

impl<K> PendingQueue<K> {
    /// An empty backlog with the start capacity (H10).
    pub(crate) fn new(max: usize, policy: OverflowPolicy) -> Self {
        PendingQueue {
            items: VecDeque::with_capacity(BACKLOG_START_CAPACITY.min(max.max(1))),
            live: 0,
            head_seq: 0,
            last_by_key: HashMap::new(),
            max: max.max(1),
            policy,
        }
    }

    /// The number of pending notifications.
    pub(crate) fn len(&self) -> usize {
        self.live
    }

    /// The configured maximum.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// The current allocated capacity (tests check that it shrinks).
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.items.capacity()
    }

    /// Appends a notification, coalescing with the key's newest pending entry when the backlog
    /// is at its maximum under [`OverflowPolicy::CoalesceByKey`].
    pub(crate) fn push(&mut self, key: ObjectKey, mut event: InformerEvent<K>) -> PushOutcome {
        let mut outcome = PushOutcome::default();
        let at_max = self.policy == OverflowPolicy::CoalesceByKey && self.items.len() >= self.max;
        if at_max && let Some(&seq) = self.last_by_key.get(&key) {
            let idx = usize::try_from(seq - self.head_seq).unwrap_or(usize::MAX);
            if let Some((_, slot)) = self.items.get_mut(idx) {
                let was_live = slot.is_some();
                match merge(slot, event) {
                    Ok(dropped_initial) => {
                        match (was_live, slot.is_some()) {
                            (true, false) => self.live -= 1,
                            (false, true) => self.live += 1,
                            _ => {}
                        }
                        outcome.coalesced = true;
                        outcome.dropped_initial = dropped_initial;
                        return outcome;
                    }
                    Err(e) => event = e,
                }
            }
        }
        let seq = self.head_seq + self.items.len() as u64;
        self.last_by_key.insert(key.clone(), seq);
        self.items.push_back((key, Some(event)));
        self.live += 1;
        outcome
    }

    /// Removes the oldest event and its key; gives memory back once drained (H10).
    pub(crate) fn pop(&mut self) -> Option<(ObjectKey, InformerEvent<K>)> {
        loop {
            let (key, slot) = self.items.pop_front()?;
            if self.last_by_key.get(&key) == Some(&self.head_seq) {
                self.last_by_key.remove(&key);
            }
            self.head_seq += 1;
            if self.items.is_empty() && self.items.capacity() > BACKLOG_START_CAPACITY {
                self.items.shrink_to(BACKLOG_START_CAPACITY);
                self.last_by_key.shrink_to(BACKLOG_START_CAPACITY);
            }
            if let Some(event) = slot {
                self.live -= 1;
                return Some((key, event));
            }
        }
    }

    /// Drops everything pending and returns how many initial adds were dropped.
    pub(crate) fn clear(&mut self) -> usize {
        let dropped = self
            .items
            .iter()
            .filter(|(_, n)| n.as_ref().is_some_and(InformerEvent::is_initial))
            .count();
        self.items = VecDeque::new();
        self.last_by_key = HashMap::new();
        self.live = 0;
        dropped
    }
}

/// Merges `new` into the key's newest pending slot following H10's rules. `Ok(n)` means merged,
/// with `n` initial adds dropped; `Err(new)` means the two must stay separate notifications.
///
/// H10: a pending add is the handler's first view of the object (an add only comes
/// when the handler's view has no object), so add + delete leaves the handler's view where it
/// was: both vanish (the slot empties) instead of a delete for an object the handler never saw.
/// An empty slot is "no object in the handler's view": an add or update fills it (as an add), a
/// delete is dropped. Deletes of objects the handler saw are never dropped.
fn merge<K>(
    pending: &mut Option<InformerEvent<K>>,
    new: InformerEvent<K>,
) -> Result<usize, InformerEvent<K>> {
    let Some(current) = pending.take() else {
        *pending = match new {
            InformerEvent::Deleted(_) => None,
            InformerEvent::Updated { new, .. } => Some(InformerEvent::Added {
                obj: new,
                is_in_initial_list: false,
            }),
            add @ InformerEvent::Added { .. } => Some(add),
        };
        return Ok(0);
    };
    let (merged, result) = match (current, new) {
        // update + update -> update(first old, last new)
        (InformerEvent::Updated { old, .. }, InformerEvent::Updated { new, .. }) => {
            (Some(InformerEvent::Updated { old, new }), Ok(0))
        }
        // add + update -> add(last), keeping the initial-list flag (H3)
        (
            InformerEvent::Added {
                is_in_initial_list, ..
            },
            InformerEvent::Updated { new, .. },
        ) => (
            Some(InformerEvent::Added {
                obj: new,
                is_in_initial_list,
            }),
            Ok(0),
        ),
        // add + delete -> nothing: the handler never saw this object
        (
            InformerEvent::Added {
                is_in_initial_list, ..
            },
            InformerEvent::Deleted(_),
        ) => (None, Ok(usize::from(is_in_initial_list))),
        // update + delete -> delete(last state)
        (InformerEvent::Updated { .. }, InformerEvent::Deleted(d)) => {
            (Some(InformerEvent::Deleted(d)), Ok(0))
        }
        // delete + delete -> the first: the handler has no object after it
        (InformerEvent::Deleted(d), InformerEvent::Deleted(_)) => {
            (Some(InformerEvent::Deleted(d)), Ok(0))
        }
        // delete then add stays two notifications; a delete is never merged away
        (current, new) => (Some(current), Err(new)),
    };
    *pending = merged;
    result
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::informer::handler::DeletedObject;

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(Some("ns"), name)
    }

    type Entry = (ObjectKey, InformerEvent<u32>);

    fn add(name: &str, v: u32) -> Entry {
        let obj = Arc::new(v);
        let is_in_initial_list = true;
        (
            key(name),
            InformerEvent::Added {
                obj,
                is_in_initial_list,
            },
        )
    }

    fn update(name: &str, old: u32, new: u32) -> Entry {
        let (old, new) = (Arc::new(old), Arc::new(new));
        (key(name), InformerEvent::Updated { old, new })
    }

    fn delete(name: &str, v: u32) -> Entry {
        let gone = DeletedObject::Known(Arc::new(v));
        (key(name), InformerEvent::Deleted(gone))
    }

    /// Pushes one entry, as the listener does.
    fn push(b: &mut PendingQueue<u32>, (key, event): Entry) -> PushOutcome {
        b.push(key, event)
    }

    fn render(b: &mut PendingQueue<u32>) -> Vec<String> {
        std::iter::from_fn(|| b.pop())
            .map(|(key, event)| match event {
                InformerEvent::Added {
                    obj,
                    is_in_initial_list,
                } => format!("{} add {obj} {is_in_initial_list}", key.name()),
                InformerEvent::Updated { old, new } => {
                    format!("{} update {old}->{new}", key.name())
                }
                InformerEvent::Deleted(d) => {
                    format!(
                        "{} delete {}",
                        key.name(),
                        d.last_known().map_or(0, |v| **v)
                    )
                }
            })
            .collect()
    }

    #[test]
    fn h8_below_max_everything_is_kept_in_order() {
        let mut b = PendingQueue::new(100, OverflowPolicy::CoalesceByKey);
        push(&mut b, add("a", 1));
        push(&mut b, update("a", 1, 2));
        push(&mut b, update("a", 2, 3));
        push(&mut b, delete("a", 3));
        assert_eq!(
            render(&mut b),
            [
                "a add 1 true",
                "a update 1->2",
                "a update 2->3",
                "a delete 3"
            ]
        );
    }

    #[test]
    fn h10_coalesce_update_update_keeps_first_old_and_last_new() {
        let mut b = PendingQueue::new(2, OverflowPolicy::CoalesceByKey);
        push(&mut b, update("a", 1, 2));
        push(&mut b, update("b", 1, 2));
        for v in 3..10 {
            let out = push(&mut b, update("a", v - 1, v));
            assert!(out.coalesced);
        }
        assert_eq!(b.len(), 2);
        assert_eq!(render(&mut b), ["a update 1->9", "b update 1->2"]);
    }

    #[test]
    fn h10_coalesce_add_update_is_add_last_and_delete_wins() {
        let mut b = PendingQueue::new(1, OverflowPolicy::CoalesceByKey);
        push(&mut b, add("a", 1));
        assert_eq!(
            push(&mut b, update("a", 1, 2)),
            PushOutcome {
                dropped_initial: 0,
                coalesced: true
            }
        );
        assert_eq!(render(&mut b), ["a add 2 true"]);

        push(&mut b, add("a", 1));
        push(&mut b, update("a", 1, 2));
        assert_eq!(
            push(&mut b, delete("a", 2)),
            PushOutcome {
                dropped_initial: 1,
                coalesced: true
            }
        );
        assert_eq!(b.len(), 0);
        assert!(
            render(&mut b).is_empty(),
            "H10: no delete for an unseen add"
        );

        push(&mut b, update("a", 1, 2));
        push(&mut b, delete("a", 2));
        assert_eq!(render(&mut b), ["a delete 2"]);
    }

    #[test]
    fn h10_delete_then_add_stays_two_and_deletes_are_never_dropped() {
        let mut b = PendingQueue::new(1, OverflowPolicy::CoalesceByKey);
        push(&mut b, delete("a", 1));
        let out = push(&mut b, add("a", 2));
        assert!(!out.coalesced);
        push(&mut b, update("a", 2, 3));
        push(&mut b, delete("a", 3));
        push(&mut b, delete("b", 7));
        // H10: 2 and 3 were never seen by the handler, so their add and delete both vanish;
        // the delete of 1, which it saw, stays.
        assert_eq!(render(&mut b), ["a delete 1", "b delete 7"]);
    }

    #[test]
    fn h10_backlog_is_bounded_by_key_count_under_a_storm() {
        let mut b = PendingQueue::new(8, OverflowPolicy::CoalesceByKey);
        for round in 0..10_000u32 {
            let name = format!("k{}", round % 5);
            push(&mut b, update(&name, round, round + 1));
        }
        assert!(b.len() <= 8, "len {}", b.len());
        // Every key is still represented with its newest state.
        let out = render(&mut b);
        for k in 0..5u32 {
            let newest = (0..10_000u32).filter(|r| r % 5 == k).max().unwrap() + 1;
            assert!(
                out.iter().any(
                    |l| l.starts_with(&format!("k{k} ")) && l.ends_with(&format!("->{newest}"))
                )
            );
        }
    }

    #[test]
    fn h10_delete_recreate_storm_at_the_maximum_stays_bounded_by_key_count() {
        let mut b = PendingQueue::new(1, OverflowPolicy::CoalesceByKey);
        push(&mut b, update("a", 1, 2));
        push(&mut b, delete("a", 2));
        for v in 3..1000 {
            push(&mut b, add("a", v));
            push(&mut b, delete("a", v));
            assert!(b.items.len() <= 2, "slots {}", b.items.len());
        }
        push(&mut b, add("a", 1000));
        assert_eq!(b.len(), 2);
        // The handler saw 1 (and 2 via the update): it gets that delete, then the newest add.
        assert_eq!(render(&mut b), ["a delete 2", "a add 1000 true"]);
        assert!(b.last_by_key.is_empty());
    }

    #[test]
    fn h10_block_policy_never_coalesces() {
        let mut b = PendingQueue::new(1, OverflowPolicy::Block);
        push(&mut b, update("a", 1, 2));
        assert!(!push(&mut b, update("a", 2, 3)).coalesced);
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn h10_capacity_shrinks_once_drained() {
        let mut b = PendingQueue::new(100_000, OverflowPolicy::CoalesceByKey);
        for i in 0..10_000u32 {
            push(&mut b, update(&i.to_string(), i, i));
        }
        assert!(b.capacity() >= 10_000);
        while b.pop().is_some() {}
        assert!(
            b.capacity() <= 2 * BACKLOG_START_CAPACITY,
            "cap {}",
            b.capacity()
        );
        assert!(b.last_by_key.is_empty());
    }

    #[test]
    fn h6_clear_reports_dropped_initial_adds() {
        let mut b = PendingQueue::new(10, OverflowPolicy::CoalesceByKey);
        push(&mut b, add("a", 1));
        push(&mut b, add("b", 1));
        push(&mut b, update("a", 1, 2));
        assert_eq!(b.clear(), 2);
        assert_eq!(b.len(), 0);
    }
}
