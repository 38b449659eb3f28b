//! The one step from popped deltas to notifications: apply a batch to the indexer, then say what each handler is told (H2-H4, H12, V2, V3, X2).

use std::sync::Arc;

use super::event::{InformerEvent, Notification};
use crate::delta_fifo::{DeletedObject, Delta, Popped};
use crate::indexer::{self, BatchOp, Indexer};
use crate::key::ObjectKey;

/// One popped key's deltas as [`apply_batch`] reads them: a [`Popped`] in the informer, plain
/// data in tests.
pub(crate) trait KeyDeltas<K> {
    /// The key.
    fn key(&self) -> &ObjectKey;
    /// Its deltas, oldest first.
    fn deltas(&self) -> &[Delta<K>];
    /// Whether the key came from the first list (H3).
    fn is_in_initial_list(&self) -> bool;
}

impl<K: crate::object::Meta> KeyDeltas<K> for Popped<'_, K> {
    fn key(&self) -> &ObjectKey {
        Popped::key(self)
    }
    fn deltas(&self) -> &[Delta<K>] {
        Popped::deltas(self)
    }
    fn is_in_initial_list(&self) -> bool {
        Popped::is_in_initial_list(self)
    }
}

/// A key's deltas as plain data: `(key, deltas, is_in_initial_list)`.
#[cfg(test)]
impl<K> KeyDeltas<K> for (ObjectKey, Vec<Delta<K>>, bool) {
    fn key(&self) -> &ObjectKey {
        &self.0
    }
    fn deltas(&self) -> &[Delta<K>] {
        &self.1
    }
    fn is_in_initial_list(&self) -> bool {
        self.2
    }
}

/// What [`apply_batch`] produced. The processing loop keeps one and reuses it from batch to
/// batch, so applying a batch allocates nothing here once the buffers have grown; empty it with
/// [`clear`](Self::clear) (the fan-out drains `notifications`).
pub(crate) struct Applied<K> {
    /// The notifications, in delta order, each after the store shows its change (H2).
    pub(crate) notifications: Vec<Notification<K>>,
    /// Index functions that failed (errors and panics); the objects were stored without those
    /// index entries (our extension of X2, decision record 10). The caller reports them.
    pub(crate) index_failures: Vec<indexer::Error>,
    /// The highest numeric resource version among the batch's newest objects (V4, K4).
    pub(crate) resource_version: Option<u64>,
    /// Stored objects the batch deleted: what they alone held in the sharing pools is garbage
    /// now (P3).
    pub(crate) deleted: usize,
    /// The store writes of a batch of several deltas, kept for their capacity.
    ops: Vec<BatchOp<K>>,
}

/// Buffers above this capacity are given back after a batch (a relist's are large).
const KEEP_CAPACITY: usize = 1024;

impl<K> Default for Applied<K> {
    fn default() -> Self {
        Applied {
            notifications: Vec::new(),
            index_failures: Vec::new(),
            resource_version: None,
            deleted: 0,
            ops: Vec::new(),
        }
    }
}

impl<K> Applied<K> {
    /// Drops what the last batch left, keeping at most [`KEEP_CAPACITY`] of each buffer.
    pub(crate) fn clear(&mut self) {
        self.notifications.clear();
        self.notifications.shrink_to(KEEP_CAPACITY);
        self.index_failures.clear();
        self.resource_version = None;
        self.deleted = 0;
        self.ops.clear();
        self.ops.shrink_to(KEEP_CAPACITY);
    }
}

/// Applies a batch of popped deltas to the indexer under one write lock (V2, V3), then writes to
/// `out` the notification of every delta, in order, exactly as if each had been applied on its
/// own: `old` is what the store held under the key just before that delta (H2, H4, H12). A
/// single key is a batch of one. `out` must be [cleared](Applied::clear).
///
/// The store follows the server even when an index function fails or panics (X2): the
/// object is stored and handlers are told; the failures land in `out.index_failures`.
pub(crate) fn apply_batch<K, P>(indexer: &Indexer<K>, batch: &[P], out: &mut Applied<K>)
where
    K: crate::object::Meta,
    P: KeyDeltas<K>,
{
    out.resource_version = batch.iter().filter_map(newest_resource_version).max();
    if let [one] = batch
        && let [delta] = one.deltas()
    {
        // One write (every watch event of a quiet informer): the indexer's single-object
        // writes, which need no list of writes and no list of previous objects.
        let old = match delta {
            Delta::Deleted(_) => {
                let old = indexer.delete_key(one.key().as_str());
                out.deleted += usize::from(old.is_some());
                old
            }
            Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
                let (old, failures) = indexer.upsert_lenient(one.key().clone(), Arc::clone(obj));
                out.index_failures.extend(failures);
                old
            }
        };
        out.notifications.extend(notification(
            one.key(),
            delta,
            old,
            one.is_in_initial_list(),
        ));
        return;
    }
    out.ops.extend(batch.iter().flat_map(|p| {
        p.deltas().iter().map(|delta| match delta {
            Delta::Deleted(_) => BatchOp::Delete(p.key().clone()),
            Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
                BatchOp::Upsert(p.key().clone(), Arc::clone(obj))
            }
        })
    }));
    let (olds, failures) = indexer.apply_batch_lenient(&out.ops);
    out.ops.clear();
    out.index_failures.extend(failures);
    let mut olds = olds.into_iter();
    for p in batch {
        for delta in p.deltas() {
            let old = olds.next().flatten();
            out.deleted += usize::from(matches!(delta, Delta::Deleted(_)) && old.is_some());
            out.notifications
                .extend(notification(p.key(), delta, old, p.is_in_initial_list()));
        }
    }
}

/// The numeric resource version of a key's newest object, if it has one (V4).
fn newest_resource_version<K: crate::object::Meta>(p: &impl KeyDeltas<K>) -> Option<u64> {
    p.deltas()
        .last()?
        .object()?
        .object_resource_version()?
        .parse()
        .ok()
}

/// The notification for one applied delta (H2-H4, H12); `old` is what the store held under the
/// key just before the delta was applied. None for a delete of a key the store did not hold.
fn notification<K: crate::object::Meta>(
    key: &ObjectKey,
    delta: &Delta<K>,
    old: Option<Arc<K>>,
    is_in_initial_list: bool,
) -> Option<Notification<K>> {
    let (event, is_resync) = match delta {
        Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
            let new = Arc::clone(obj);
            match old {
                Some(old) => {
                    // H4: an unchanged RV is a resync; only handlers due for one get it.
                    let is_resync = matches!(delta, Delta::Sync(_)) || same_rv(&*old, &*new);
                    (InformerEvent::Updated { old, new }, is_resync)
                }
                None => {
                    let obj = new;
                    (
                        InformerEvent::Added {
                            obj,
                            is_in_initial_list,
                        },
                        false,
                    )
                }
            }
        }
        Delta::Deleted(deleted) => {
            let Some(removed) = old else {
                // H10: nothing was stored under this key (the ordered FIFO queues every
                // delete, D10), so no handler ever saw the object: no notification.
                tracing::debug!(%key, "delete of a key not in the store; no handler told");
                return None;
            };
            // A tombstone without a last state gets the object just removed (D5, H12).
            let deleted = match deleted {
                DeletedObject::Unknown(t) if t.last_known.is_none() => {
                    let mut t = t.clone();
                    t.last_known = Some(removed);
                    DeletedObject::Unknown(t)
                }
                d => d.clone(),
            };
            (InformerEvent::Deleted(deleted), false)
        }
    };
    let key = key.clone();
    Some(Notification {
        key,
        event,
        is_resync,
    })
}

/// Whether two states carry the same, non-empty resource version (H4).
fn same_rv<K: crate::object::Meta>(old: &K, new: &K) -> bool {
    match (old.object_resource_version(), new.object_resource_version()) {
        (Some(a), Some(b)) => !a.is_empty() && a == b,
        _ => false,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::ConfigMap;
    use proptest::prelude::*;

    use super::*;
    use crate::delta_fifo::DeletedFinalStateUnknown;
    use crate::indexer::Indexers;

    type Batch = Vec<(ObjectKey, Vec<Delta<ConfigMap>>, bool)>;

    /// A ConfigMap `ns/name` at resource version `rv` (the run loop's tests use it too).
    pub(crate) fn config_map(name: &str, rv: &str) -> ConfigMap {
        let mut cm = ConfigMap::default();
        cm.metadata.namespace = Some("ns".into());
        cm.metadata.name = Some(name.into());
        cm.metadata.resource_version = Some(rv.into());
        cm
    }

    fn cm(name: &str, rv: &str) -> Arc<ConfigMap> {
        Arc::new(config_map(name, rv))
    }

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(Some("ns"), name)
    }

    fn rv(obj: &ConfigMap) -> &str {
        obj.metadata.resource_version.as_deref().unwrap_or("")
    }

    /// A notification as text: `key event old->new`, plus `resync` where it is one.
    fn render(n: &Notification<ConfigMap>) -> String {
        let event = match &n.event {
            InformerEvent::Added {
                obj,
                is_in_initial_list,
            } => format!("add {} initial={is_in_initial_list}", rv(obj)),
            InformerEvent::Updated { old, new } => format!("update {}->{}", rv(old), rv(new)),
            InformerEvent::Deleted(d) => format!(
                "delete {} tombstone={}",
                d.last_known().map_or("?", |o| rv(o)),
                d.is_tombstone()
            ),
        };
        let resync = if n.is_resync { " resync" } else { "" };
        format!("{} {event}{resync}", n.key.name())
    }

    /// Applies `batch` and returns the rendered notifications and index failures.
    fn apply(indexer: &Indexer<ConfigMap>, batch: &Batch) -> (Vec<String>, usize) {
        let mut out = Applied::default();
        apply_batch(indexer, batch, &mut out);
        let rendered = out.notifications.iter().map(render).collect();
        let failures = out.index_failures.len();
        out.clear();
        assert!(out.notifications.is_empty() && out.ops.is_empty());
        (rendered, failures)
    }

    #[test]
    fn h2_h3_one_delta_is_stored_before_its_notification_is_returned() {
        let indexer = Indexer::new();
        let obj = cm("a", "1");
        let batch = vec![(key("a"), vec![Delta::Added(Arc::clone(&obj))], true)];
        let mut out = Applied::default();
        apply_batch(&indexer, &batch, &mut out);
        assert!(Arc::ptr_eq(&indexer.get(&key("a")).unwrap(), &obj), "X7");
        assert_eq!(out.resource_version, Some(1));
        let [n] = &out.notifications[..] else {
            panic!("one notification")
        };
        assert_eq!(render(n), "a add 1 initial=true");
    }

    #[test]
    fn h4_an_unchanged_resource_version_or_a_sync_is_a_resync() {
        let indexer = Indexer::new();
        let batch = vec![(
            key("a"),
            vec![
                Delta::Added(cm("a", "1")),
                Delta::Replaced(cm("a", "1")),
                Delta::Updated(cm("a", "2")),
                Delta::Sync(cm("a", "3")),
            ],
            false,
        )];
        let (seen, _) = apply(&indexer, &batch);
        assert_eq!(
            seen,
            [
                "a add 1 initial=false",
                "a update 1->1 resync",
                "a update 1->2",
                "a update 2->3 resync",
            ]
        );
    }

    #[test]
    fn h10_d5_h12_deletes_of_absent_keys_vanish_and_tombstones_get_the_removed_state() {
        let indexer = Indexer::new();
        let tombstone = DeletedObject::Unknown(DeletedFinalStateUnknown {
            key: key("b"),
            last_known: None,
        });
        let batch = vec![
            (
                key("ghost"),
                vec![Delta::Deleted(DeletedObject::Known(cm("ghost", "1")))],
                false,
            ),
            (key("b"), vec![Delta::Added(cm("b", "2"))], false),
            (key("b"), vec![Delta::Deleted(tombstone)], false),
        ];
        let (seen, _) = apply(&indexer, &batch);
        assert_eq!(seen, ["b add 2 initial=false", "b delete 2 tombstone=true"]);
        assert!(indexer.is_empty());
    }

    #[test]
    fn x2_a_failing_index_function_is_reported_and_the_object_still_stored() {
        let indexers = Indexers::new()
            .with_fallible("broken", |_: &ConfigMap| Err::<Vec<String>, _>("no".into()));
        let indexer = Indexer::builder().indexers(indexers).build().unwrap();
        let one = vec![(key("a"), vec![Delta::Added(cm("a", "1"))], false)];
        assert_eq!(apply(&indexer, &one).1, 1, "one delta");
        let two = vec![
            (key("b"), vec![Delta::Added(cm("b", "2"))], false),
            (key("c"), vec![Delta::Added(cm("c", "3"))], false),
        ];
        assert_eq!(apply(&indexer, &two).1, 2, "a batch");
        assert_eq!(indexer.len(), 3);
    }

    /// One delta of the generated batches: a key out of four, and what happens to it.
    #[derive(Debug, Clone)]
    enum Op {
        Add(usize, u8),
        Update(usize, u8),
        Replace(usize, u8),
        Sync(usize, u8),
        Delete(usize),
        Tombstone(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        let k = 0..4usize;
        let v = 0..4u8;
        prop_oneof![
            (k.clone(), v.clone()).prop_map(|(k, v)| Op::Add(k, v)),
            (k.clone(), v.clone()).prop_map(|(k, v)| Op::Update(k, v)),
            (k.clone(), v.clone()).prop_map(|(k, v)| Op::Replace(k, v)),
            (k.clone(), v).prop_map(|(k, v)| Op::Sync(k, v)),
            k.clone().prop_map(Op::Delete),
            k.prop_map(Op::Tombstone),
        ]
    }

    fn name(k: usize) -> String {
        format!("k{k}")
    }

    fn delta(op: &Op) -> (ObjectKey, Delta<ConfigMap>) {
        let obj = |k: usize, v: u8| cm(&name(k), &v.to_string());
        match *op {
            Op::Add(k, v) => (key(&name(k)), Delta::Added(obj(k, v))),
            Op::Update(k, v) => (key(&name(k)), Delta::Updated(obj(k, v))),
            Op::Replace(k, v) => (key(&name(k)), Delta::Replaced(obj(k, v))),
            Op::Sync(k, v) => (key(&name(k)), Delta::Sync(obj(k, v))),
            Op::Delete(k) => {
                let gone = DeletedObject::Known(obj(k, 9));
                (key(&name(k)), Delta::Deleted(gone))
            }
            Op::Tombstone(k) => {
                let gone = DeletedObject::Unknown(DeletedFinalStateUnknown {
                    key: key(&name(k)),
                    last_known: None,
                });
                (key(&name(k)), Delta::Deleted(gone))
            }
        }
    }

    /// Groups consecutive deltas of one key, as a popped key holds them, and cuts the sequence
    /// into batches at the given points.
    fn batches(ops: &[Op], cuts: &[bool], initial: bool) -> Vec<Batch> {
        let mut out: Vec<Batch> = vec![Vec::new()];
        for (i, op) in ops.iter().enumerate() {
            let (k, d) = delta(op);
            if i > 0 && cuts.get(i).copied().unwrap_or(false) {
                out.push(Vec::new());
            }
            let batch = out.last_mut().unwrap();
            match batch.last_mut() {
                Some((last, deltas, _)) if *last == k => deltas.push(d),
                _ => batch.push((k, vec![d], initial)),
            }
        }
        out
    }

    /// The naive model: a map applied one delta at a time, and the rules written out plainly.
    fn model(ops: &[Op], initial: bool) -> (BTreeMap<String, String>, Vec<String>) {
        let mut store: BTreeMap<String, String> = BTreeMap::new();
        let mut seen = Vec::new();
        for op in ops {
            let (k, d) = delta(op);
            let name = k.name().to_string();
            match d {
                Delta::Deleted(gone) => {
                    let Some(old) = store.remove(&name) else {
                        continue;
                    };
                    let last = gone.last_known().map_or(old, |o| rv(o).to_string());
                    seen.push(format!(
                        "{name} delete {last} tombstone={}",
                        gone.is_tombstone()
                    ));
                }
                upsert => {
                    let new = rv(upsert.object().unwrap()).to_string();
                    match store.insert(name.clone(), new.clone()) {
                        None => seen.push(format!("{name} add {new} initial={initial}")),
                        Some(old) => {
                            let sync = matches!(upsert, Delta::Sync(_)) || old == new;
                            let resync = if sync { " resync" } else { "" };
                            seen.push(format!("{name} update {old}->{new}{resync}"));
                        }
                    }
                }
            }
        }
        (store, seen)
    }

    proptest! {
        /// For random deltas cut into random batches, the indexer ends as the model's map and
        /// the notifications are the model's, in order: a batch of many is the same as one key
        /// at a time (V3), and one delta the same as a batch.
        #[test]
        fn v3_h2_h4_h12_batches_match_a_model_applied_one_delta_at_a_time(
            ops in prop::collection::vec(op(), 0..40),
            cuts in prop::collection::vec(any::<bool>(), 40),
            initial in any::<bool>(),
        ) {
            let indexer = Indexer::new();
            let mut seen = Vec::new();
            for batch in batches(&ops, &cuts, initial) {
                seen.extend(apply(&indexer, &batch).0);
            }
            let (store, expected) = model(&ops, initial);
            prop_assert_eq!(seen, expected);
            let stored: BTreeMap<String, String> = indexer
                .entries()
                .into_iter()
                .map(|(k, o)| (k.name().to_string(), rv(&o).to_string()))
                .collect();
            prop_assert_eq!(stored, store);
        }
    }
}
