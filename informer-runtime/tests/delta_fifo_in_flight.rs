//! D13 over the delta FIFO, in both modes: every key of a popped batch stays in flight until it
//! is finished, so a delete (D4), a relist (D5) or a resync (D6) made between the pop and the
//! store write judges it by its popped state. Run: `cargo test -p informer-runtime --test
//! delta_fifo_in_flight`.

mod fifo_store;

use std::sync::Arc;

use fifo_store::{apply, cm, d, rv, show};
use futures::FutureExt;
use informer_runtime::delta_fifo::DeltaType::Deleted;
use informer_runtime::delta_fifo::{DeltaFifo, FifoMode, Popped};
use informer_runtime::indexer::Indexer;
use informer_runtime::store::ReflectorStore;
use k8s_openapi::api::core::v1::ConfigMap;

/// Pops a batch of up to `max` keys without waiting (V3, a relist whole: V2).
fn pop_batch_now(fifo: &DeltaFifo<ConfigMap>, max: usize) -> Vec<Popped<'_, ConfigMap>> {
    fifo.pop_batch(max, true)
        .now_or_never()
        .expect("an item is queued")
        .expect("not closed")
}

/// What the informer's loop does with a popped batch: apply every key to the store, then
/// finish each.
fn apply_and_finish(store: &Indexer<ConfigMap>, batch: Vec<Popped<'_, ConfigMap>>) {
    for popped in &batch {
        apply(store, popped.key().as_str(), popped.deltas());
    }
    for popped in batch {
        popped.done();
    }
}

/// Applies and finishes everything queued, batch by batch.
fn drain(fifo: &DeltaFifo<ConfigMap>, store: &Indexer<ConfigMap>) {
    while !fifo.is_empty() {
        apply_and_finish(store, pop_batch_now(fifo, 100));
    }
}

/// The stored objects as `name@rv`, sorted.
fn stored(store: &Indexer<ConfigMap>) -> Vec<String> {
    let mut out: Vec<String> = store
        .list()
        .iter()
        .map(|o| format!("{}@{}", o.metadata.name.as_deref().unwrap_or(""), rv(o)))
        .collect();
    out.sort();
    out
}

fn fifo_in(mode: FifoMode) -> (DeltaFifo<ConfigMap>, Arc<Indexer<ConfigMap>>) {
    let store = Arc::new(Indexer::<ConfigMap>::new());
    let fifo = DeltaFifo::builder()
        .known_objects(store.clone())
        .mode(mode)
        .build();
    (fifo, store)
}

type Fifo = DeltaFifo<ConfigMap>;

/// D13, in either mode: `setup` fills the FIFO (and the store, by `drain`), a batch of up to 100
/// keys is popped, whose first key is `first`, and `write` runs while it is popped but not
/// applied; then the batch is applied and finished, and so is everything queued after it. The
/// store must then hold `expected`.
fn write_during_a_popped_batch(
    setup: impl Fn(&Fifo, &Indexer<ConfigMap>),
    first: &str,
    write: impl Fn(FifoMode, &Fifo),
    expected: &[&str],
) {
    for mode in [FifoMode::Coalescing, FifoMode::Ordered] {
        let (fifo, store) = fifo_in(mode);
        setup(&fifo, &store);
        let batch = pop_batch_now(&fifo, 100);
        assert!(batch.len() > 1, "{mode:?}: a batch");
        assert_eq!(batch[0].key().as_str(), first, "{mode:?}: not the last key");
        write(mode, &fifo);
        apply_and_finish(&store, batch);
        drain(&fifo, &store);
        assert_eq!(stored(&store), expected, "{mode:?}");
    }
}

/// Queues `Added` for `a@1`, then `b@1`.
fn add_a_and_b(fifo: &Fifo) {
    fifo.add(cm("a", "1")).expect("test fixture");
    fifo.add(cm("b", "1")).expect("test fixture");
}

/// D13 with D4: a `DELETED` of `x` arriving while a relist batch holding `x` is popped but not
/// applied is queued, so `x` ends up out of the store.
#[test]
fn d13_d4_a_delete_during_a_popped_relist_batch_is_not_dropped() {
    let setup = |fifo: &Fifo, store: &Indexer<ConfigMap>| {
        fifo.replace(vec![cm("a", "1"), cm("b", "1")], "1".into())
            .unwrap();
        drain(fifo, store);
        let relist = vec![cm("x", "2"), cm("a", "2"), cm("b", "2")];
        fifo.replace(relist, "2".into()).unwrap();
    };
    let delete = |_, fifo: &Fifo| fifo.delete(cm("x", "3")).unwrap();
    write_during_a_popped_batch(setup, "ns/x", delete, &["a@2", "b@2"]);
}

/// D13 with D6: a resync between the pop of `a@2` and its apply queues no `Sync` of the
/// stored `a@1`, which would take the store back.
#[test]
fn d13_d6_a_resync_during_a_popped_batch_does_not_queue_the_older_stored_copy() {
    let setup = |fifo: &Fifo, store: &Indexer<ConfigMap>| {
        add_a_and_b(fifo);
        drain(fifo, store);
        for name in ["a", "b"] {
            fifo.update(cm(name, "2")).unwrap();
        }
    };
    let resync = |mode, fifo: &Fifo| {
        fifo.resync().unwrap();
        assert!(fifo.is_empty(), "{mode:?}: {:?}", fifo.queued_keys());
    };
    write_during_a_popped_batch(setup, "ns/a", resync, &["a@2", "b@2"]);
}

/// D13 with D5: a relist without `a`, made while a batch adding `a` is popped but not applied,
/// tombstones `a` with its popped state.
#[test]
fn d13_d5_a_relist_during_a_popped_batch_tombstones_its_absent_keys() {
    let setup = |fifo: &Fifo, _: &Indexer<ConfigMap>| add_a_and_b(fifo);
    let relist = |mode, fifo: &Fifo| {
        fifo.replace(vec![cm("b", "1")], "3".into()).unwrap();
        let queued = fifo.queued_deltas("ns/a");
        let queued = queued.map(|d| d.iter().map(show).collect::<Vec<_>>());
        assert_eq!(queued, Some(vec![d(Deleted, "~1")]), "{mode:?}");
    };
    write_during_a_popped_batch(setup, "ns/a", relist, &["b@1"]);
}
