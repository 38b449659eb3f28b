//! Model-based property tests: random reflector writes, resyncs and pops (some failing, some
//! interleaved with writes while a key is in flight) against a model of the API server and of
//! the informer's processing (H2: store first, then add/update/delete notification). Pops in
//! flight are batches (V3, some atomic: V2), processed as the informer does: the whole batch is
//! applied, then each key finished; writes come between the pop and the apply and between the
//! apply and the finish, where every key of the batch is in flight (D13).
//!
//! Checked after every step: `has_synced` (D7), every notification is valid for the handler's
//! view and shows the store already updated (H2), no key's version ever goes backwards (D6, D9).
//! K3: whenever no key is in flight, the FIFO's settled resource version (what the store is said
//! to reflect) is below every write the store does not show yet.
//! Checked at the end, after draining: store == server, handler view == server, and every index
//! equals a brute-force recomputation (X4). Run: `cargo test -p informer-runtime --test delta_fifo_model`.

mod fifo_support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use fifo_support::pop_one;
use futures::FutureExt;
use informer_runtime::delta_fifo::{Delta, DeltaFifo, FifoMode, Popped};
use informer_runtime::indexer::{Indexer, Indexers, NAMESPACE_INDEX};
use informer_runtime::key::ObjectKey;
use informer_runtime::store::ReflectorStore;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use proptest::prelude::*;

const NAMES: usize = 6;

#[derive(Debug, Clone)]
enum Op {
    Create(usize),
    Modify(usize),
    Remove(usize),
    /// Relist: bit i of `present` keeps/creates object i, bit i of `changed` gives it a new version.
    Relist {
        present: u8,
        changed: u8,
    },
    Resync,
    /// Pop one key and process it at once.
    Pop,
    /// Pop a batch of up to `max` keys (V3; with `atomic`, a relist whole, V2) and keep it in
    /// flight while later ops run.
    BeginPop {
        max: usize,
        atomic: bool,
    },
    /// Apply the in-flight batch to the store without finishing it (D13: its keys stay in
    /// flight, as while the informer hands the batch's notifications to its handlers).
    ApplyPop,
    /// Apply the in-flight batch (unless applied) and finish each key.
    EndPop,
    /// Fail the in-flight batch's processing before it is applied: requeue every key.
    FailPop,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..NAMES).prop_map(Op::Create),
        3 => (0..NAMES).prop_map(Op::Modify),
        2 => (0..NAMES).prop_map(Op::Remove),
        1 => (any::<u8>(), any::<u8>()).prop_map(|(present, changed)| Op::Relist { present, changed }),
        1 => Just(Op::Resync),
        3 => Just(Op::Pop),
        2 => (1..=4usize, any::<bool>()).prop_map(|(max, atomic)| Op::BeginPop { max, atomic }),
        1 => Just(Op::ApplyPop),
        2 => Just(Op::EndPop),
        1 => Just(Op::FailPop),
    ]
}

fn name(i: usize) -> String {
    format!("o{i}")
}

fn key(i: usize) -> String {
    format!(
        "{}/{}",
        if i.is_multiple_of(2) { "a" } else { "b" },
        name(i)
    )
}

fn object(i: usize, version: u64) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name(i)),
            namespace: Some(if i.is_multiple_of(2) { "a" } else { "b" }.into()),
            resource_version: Some(version.to_string()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn version(obj: &ConfigMap) -> u64 {
    obj.metadata
        .resource_version
        .as_deref()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn by_parity(cm: &ConfigMap) -> Vec<String> {
    vec![
        if version(cm).is_multiple_of(2) {
            "even"
        } else {
            "odd"
        }
        .to_owned(),
    ]
}

/// Multi-valued: the distinct decimal digits of the version.
fn by_digit(cm: &ConfigMap) -> Vec<String> {
    version(cm).to_string().chars().map(String::from).collect()
}

/// A popped batch not finished yet.
struct InFlight<'a> {
    popped: Vec<Popped<'a, ConfigMap>>,
    /// Whether the store shows it already.
    applied: bool,
}

struct Harness {
    store: Arc<Indexer<ConfigMap>>,
    /// The API server: name index -> version.
    server: BTreeMap<usize, u64>,
    next_version: u64,
    /// The handler's view, built only from notifications.
    handler: BTreeMap<String, u64>,
    /// Highest version seen per key (never regresses).
    high_water: BTreeMap<String, u64>,
    populated: bool,
    /// Keys of the first replace not yet processed (D7).
    initial_pending: BTreeSet<String>,
    /// Writes (key, version) the store does not reflect yet (K3).
    outstanding: BTreeSet<(String, u64)>,
}

impl Harness {
    fn bump(&mut self) -> u64 {
        self.next_version += 1;
        self.next_version
    }

    /// The informer's processing of one popped key (H2), with checks on each notification.
    fn process(&mut self, key: &ObjectKey, deltas: &[Delta<ConfigMap>]) {
        assert!(!deltas.is_empty());
        for delta in deltas {
            // Applying a key's state at version v reflects every earlier write of that key.
            if let Some(v) = delta.object().map(|o| version(o)) {
                self.outstanding
                    .retain(|(k, w)| k.as_str() != key.as_str() || *w > v);
            }
            match delta {
                Delta::Deleted(gone) => {
                    self.store.delete_key(key.as_str());
                    // Notification after the store shows the change (H2).
                    assert!(self.store.get_by_key(key.as_str()).is_none());
                    let seen = self.handler.remove(key.as_str());
                    assert!(seen.is_some(), "delete for {key} the handler never saw");
                    if let Some(last) = gone.last_known() {
                        assert!(
                            version(last) >= seen.unwrap_or(0),
                            "tombstone older than handler state"
                        );
                    }
                }
                other => {
                    let obj = other.object().expect("test fixture").clone();
                    let old = self.store.add(obj.clone()).expect("test fixture");
                    assert!(
                        Arc::ptr_eq(
                            &self.store.get_by_key(key.as_str()).expect("test fixture"),
                            &obj
                        ),
                        "H2 store first"
                    );
                    let v = version(&obj);
                    match (old, self.handler.get(key.as_str())) {
                        (Some(old), Some(&seen)) => {
                            assert_eq!(version(&old), seen, "update's old object")
                        }
                        (None, None) => {}
                        (old, seen) => {
                            panic!("store/handler disagree on {key}: {old:?} vs {seen:?}")
                        }
                    }
                    let high = self.high_water.entry(key.to_string()).or_default();
                    assert!(v >= *high, "{key} went back from {high} to {v}");
                    *high = v;
                    self.handler.insert(key.to_string(), v);
                }
            }
        }
    }

    fn finish(&mut self, fifo: &DeltaFifo<ConfigMap>, popped: Popped<'_, ConfigMap>) {
        self.finish_batch(
            fifo,
            InFlight {
                popped: vec![popped],
                applied: false,
            },
        );
    }

    /// Applies a popped batch to the store, key by key in pop order (the informer applies it
    /// under one lock, with the same result).
    fn apply(&mut self, batch: &mut InFlight<'_>) {
        if !batch.applied {
            batch.applied = true;
            for popped in &batch.popped {
                self.process(popped.key(), popped.deltas());
            }
        }
    }

    /// What the informer's loop does with a popped batch: apply it, finish each key, report
    /// the batch's newest version.
    fn finish_batch(&mut self, fifo: &DeltaFifo<ConfigMap>, mut batch: InFlight<'_>) {
        self.apply(&mut batch);
        let applied = batch
            .popped
            .iter()
            .filter_map(|p| {
                p.deltas()
                    .last()
                    .and_then(|d| d.object())
                    .map(|o| version(o))
            })
            .max();
        for popped in batch.popped {
            self.initial_pending.remove(popped.key().as_str());
            popped.done();
        }
        self.check_settled(fifo, applied);
    }

    /// K3: the version the store is said to reflect is below every write it does not show.
    fn check_settled(&self, fifo: &DeltaFifo<ConfigMap>, applied: Option<u64>) {
        if let Some(settled) = fifo.settled_resource_version(applied) {
            let behind: Vec<_> = self
                .outstanding
                .iter()
                .filter(|(_, w)| *w <= settled)
                .collect();
            assert!(
                behind.is_empty(),
                "the store is said to reflect {settled}, but not {behind:?} (K3)"
            );
        }
    }

    fn write(&mut self, i: usize, v: u64) {
        self.outstanding.insert((key(i), v));
    }
}

fn run(ops: Vec<Op>, mode: FifoMode) {
    let store = Arc::new(
        Indexer::builder()
            .indexers(
                Indexers::new()
                    .with("parity", by_parity)
                    .with("digit", by_digit),
            )
            .build()
            .expect("test fixture"),
    );
    let fifo = DeltaFifo::builder()
        .known_objects(store.clone())
        .mode(mode)
        .build();
    let mut h = Harness {
        store,
        server: BTreeMap::new(),
        next_version: 0,
        handler: BTreeMap::new(),
        high_water: BTreeMap::new(),
        populated: false,
        initial_pending: BTreeSet::new(),
        outstanding: BTreeSet::new(),
    };
    let mut in_flight: Option<InFlight<'_>> = None;

    for op in ops {
        match op {
            Op::Create(i) if !h.server.contains_key(&i) => {
                let v = h.bump();
                h.server.insert(i, v);
                h.write(i, v);
                fifo.add(object(i, v)).expect("test fixture");
                h.populated = true;
            }
            Op::Modify(i) if h.server.contains_key(&i) => {
                let v = h.bump();
                h.server.insert(i, v);
                h.write(i, v);
                fifo.update(object(i, v)).expect("test fixture");
                h.populated = true;
            }
            Op::Remove(i) if h.server.contains_key(&i) => {
                // kube-apiserver stamps a deleted object with the deletion's version.
                h.server.remove(&i);
                let v = h.bump();
                h.write(i, v);
                fifo.delete(object(i, v)).expect("test fixture");
                h.populated = true;
            }
            Op::Relist { present, changed } => {
                let mut list = Vec::new();
                let mut server = BTreeMap::new();
                for i in 0..NAMES {
                    if present & (1 << i) == 0 {
                        continue;
                    }
                    let v = match h.server.get(&i) {
                        Some(&v) if changed & (1 << i) == 0 => v,
                        _ => {
                            let v = h.bump();
                            h.write(i, v);
                            v
                        }
                    };
                    server.insert(i, v);
                    list.push(object(i, v));
                }
                // A list is in key order, not version order: the versions given out above
                // rise along the list, so reverse it.
                list.reverse();
                let rv = h.next_version.to_string();
                fifo.replace(list, rv).expect("test fixture");
                if !h.populated {
                    h.populated = true;
                    h.initial_pending = server.keys().map(|&i| key(i)).collect();
                }
                h.server = server;
            }
            Op::Resync => fifo.resync().expect("test fixture"),
            Op::Pop if in_flight.is_none() && !fifo.is_empty() => {
                let popped = pop_one(&fifo)
                    .now_or_never()
                    .flatten()
                    .expect("queued item");
                h.finish(&fifo, popped);
            }
            Op::BeginPop { max, atomic } if in_flight.is_none() && !fifo.is_empty() => {
                let popped = fifo.pop_batch(max, atomic).now_or_never().flatten();
                let popped = popped.expect("queued items");
                assert!(!popped.is_empty() && (atomic || popped.len() <= max), "V3");
                in_flight = Some(InFlight {
                    popped,
                    applied: false,
                });
            }
            Op::ApplyPop => {
                if let Some(batch) = in_flight.as_mut() {
                    h.apply(batch);
                }
            }
            Op::EndPop => {
                if let Some(batch) = in_flight.take() {
                    h.finish_batch(&fifo, batch);
                }
            }
            Op::FailPop if in_flight.as_ref().is_some_and(|b| !b.applied) => {
                if let Some(batch) = in_flight.take() {
                    // Back to front, so the ordered mode's log keeps its order (D10).
                    for popped in batch.popped.into_iter().rev() {
                        popped.requeue();
                    }
                }
            }
            _ => {}
        }
        assert_eq!(
            fifo.has_synced(),
            h.populated && h.initial_pending.is_empty(),
            "D7"
        );
        if in_flight.is_none() {
            h.check_settled(&fifo, None);
        }
        // D12: the bounded count is every queued delta, in either mode.
        let queued: usize = fifo
            .queued_keys()
            .iter()
            .map(|k| fifo.queued_deltas(k.as_str()).map_or(0, |d| d.len()))
            .sum();
        assert_eq!(fifo.delta_count(), queued, "D12: delta_count");
    }

    // Drain.
    if let Some(batch) = in_flight.take() {
        h.finish_batch(&fifo, batch);
    }
    while !fifo.is_empty() {
        let popped = pop_one(&fifo)
            .now_or_never()
            .flatten()
            .expect("queued item");
        h.finish(&fifo, popped);
    }
    assert_eq!(fifo.has_synced(), h.populated);

    let expected: BTreeMap<String, u64> = h.server.iter().map(|(&i, &v)| (key(i), v)).collect();
    let stored: BTreeMap<String, u64> = h
        .store
        .list()
        .iter()
        .map(|o| {
            (
                ObjectKey::from_resource(&**o)
                    .expect("test fixture")
                    .to_string(),
                version(o),
            )
        })
        .collect();
    assert_eq!(stored, expected, "store == server");
    assert_eq!(h.handler, expected, "handler view == server");
    check_indices(&h.store);
}

/// Every index equals a brute-force recomputation from the stored objects, with no empty values.
fn check_indices(store: &Indexer<ConfigMap>) {
    type IndexFn = fn(&ConfigMap) -> Vec<String>;
    let namespace: IndexFn = |cm| vec![cm.metadata.namespace.clone().unwrap_or_default()];
    for (index, func) in [
        (NAMESPACE_INDEX, namespace),
        ("parity", by_parity as IndexFn),
        ("digit", by_digit),
    ] {
        let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for obj in store.list() {
            let k = ObjectKey::from_resource(&*obj)
                .expect("test fixture")
                .to_string();
            for v in func(&obj) {
                expected.entry(v).or_default().insert(k.clone());
            }
        }
        let mut actual: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for v in store.list_index_values(index).expect("test fixture") {
            let keys: BTreeSet<String> = store
                .index_keys(index, &v)
                .expect("test fixture")
                .iter()
                .map(|k| k.to_string())
                .collect();
            assert!(!keys.is_empty(), "empty value `{v}` left in `{index}` (X4)");
            actual.insert(v.to_string(), keys);
        }
        assert_eq!(actual, expected, "index `{index}`");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    #[test]
    fn d2_d7_x4_h2_random_sequences_match_the_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(ops, FifoMode::Coalescing);
    }

    /// D11: handlers cannot tell the ordered mode apart; the same model holds.
    #[test]
    fn d10_d11_ordered_mode_matches_the_same_model(ops in proptest::collection::vec(op(), 1..60)) {
        run(ops, FifoMode::Ordered);
    }
}

#[test]
fn d7_first_relist_then_in_flight_failure_regression() {
    for mode in [FifoMode::Coalescing, FifoMode::Ordered] {
        run(
            vec![
                Op::Relist {
                    present: 0b11,
                    changed: 0,
                },
                Op::BeginPop {
                    max: 1,
                    atomic: false,
                },
                Op::Create(2),
                Op::FailPop,
                Op::Pop,
                Op::Pop,
                Op::Pop,
            ],
            mode,
        );
    }
}
