//! Ordered FIFO mode tests (D10, client-go's RealFIFO). Run: `cargo test -p informer-runtime --test delta_fifo_ordered`.

mod fifo_support;

use std::sync::Arc;

use fifo_support::pop_one;
use futures::FutureExt;
use informer_runtime::delta_fifo::{DeletedObject, Delta, DeltaFifo, DeltaType, FifoMode};
use informer_runtime::indexer::Indexer;
use informer_runtime::store::ReflectorStore;
use k8s_openapi::api::core::v1::ConfigMap;

use DeltaType::{Added, Deleted, Replaced, Sync, Updated};

fn cm(name: &str, rv: &str) -> ConfigMap {
    informer_test_support::cm_at("ns", name, rv)
}

fn show(delta: &Delta<ConfigMap>) -> (DeltaType, String) {
    let rv = |o: &ConfigMap| o.metadata.resource_version.clone().unwrap_or_default();
    let rv = match delta {
        Delta::Deleted(DeletedObject::Unknown(t)) => {
            format!("~{}", t.last_known.as_deref().map(rv).unwrap_or_default())
        }
        other => rv(other.object().expect("test fixture")),
    };
    (delta.kind(), rv)
}

fn d(kind: DeltaType, rv: &str) -> (DeltaType, String) {
    (kind, rv.to_owned())
}

fn ordered() -> (DeltaFifo<ConfigMap>, Arc<Indexer<ConfigMap>>) {
    let store = Arc::new(Indexer::<ConfigMap>::new());
    let fifo = DeltaFifo::builder()
        .known_objects(store.clone())
        .mode(FifoMode::Ordered)
        .build();
    (fifo, store)
}

fn pop_now(fifo: &DeltaFifo<ConfigMap>) -> (String, Vec<(DeltaType, String)>) {
    let popped = pop_one(fifo).now_or_never().flatten().expect("queued");
    let out = (
        popped.key().to_string(),
        popped.deltas().iter().map(show).collect(),
    );
    popped.done();
    out
}

fn drain(fifo: &DeltaFifo<ConfigMap>) -> Vec<(String, Vec<(DeltaType, String)>)> {
    let mut out = Vec::new();
    while !fifo.is_empty() {
        out.push(pop_now(fifo));
    }
    out
}

#[test]
fn d10_keeps_global_order_across_keys() {
    let (fifo, _) = ordered();
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    fifo.update(cm("a", "2")).unwrap();
    assert_eq!(fifo.len(), 3, "the ordered mode counts deltas");
    assert_eq!(
        drain(&fifo),
        [
            ("ns/a".into(), vec![d(Added, "1")]),
            ("ns/b".into(), vec![d(Added, "1")]),
            ("ns/a".into(), vec![d(Updated, "2")]),
        ]
    );
}

#[test]
fn d10_adjacent_deltas_of_one_key_pop_together() {
    let (fifo, _) = ordered();
    fifo.add(cm("a", "1")).unwrap();
    fifo.update(cm("a", "2")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    assert_eq!(pop_now(&fifo).1, [d(Added, "1"), d(Updated, "2")]);
}

#[test]
fn d10_deletes_are_always_queued_and_never_deduplicated() {
    let (fifo, _) = ordered();
    fifo.delete(cm("ghost", "1")).unwrap();
    fifo.delete(cm("ghost", "2")).unwrap();
    assert_eq!(pop_now(&fifo).1, [d(Deleted, "1"), d(Deleted, "2")]);
}

#[test]
fn d10_replace_queues_tombstones_first_then_items_in_list_order() {
    let (fifo, store) = ordered();
    store.add(Arc::new(cm("stored", "1"))).unwrap();
    store.add(Arc::new(cm("kept", "1"))).unwrap();
    store.add(Arc::new(cm("gone", "1"))).unwrap();
    fifo.add(cm("queued", "2")).unwrap();
    fifo.delete(cm("gone", "3")).unwrap();
    fifo.replace(vec![cm("new", "4"), cm("kept", "4")], "4".into())
        .unwrap();
    assert_eq!(
        drain(&fifo),
        [
            ("ns/queued".into(), vec![d(Added, "2")]),
            // `gone`'s last queued delta is already a delete: no tombstone for it.
            ("ns/gone".into(), vec![d(Deleted, "3")]),
            ("ns/queued".into(), vec![d(Deleted, "~2")]),
            ("ns/stored".into(), vec![d(Deleted, "~1")]),
            ("ns/new".into(), vec![d(Replaced, "4")]),
            ("ns/kept".into(), vec![d(Replaced, "4")]),
        ]
    );
}

#[test]
fn d10_resync_skips_queued_keys() {
    let (fifo, store) = ordered();
    store.add(Arc::new(cm("idle", "1"))).unwrap();
    store.add(Arc::new(cm("busy", "1"))).unwrap();
    fifo.update(cm("busy", "2")).unwrap();
    fifo.resync().unwrap();
    assert_eq!(
        drain(&fifo),
        [
            ("ns/busy".into(), vec![d(Updated, "2")]),
            ("ns/idle".into(), vec![d(Sync, "1")]),
        ]
    );
}

#[test]
fn d10_failed_deltas_go_back_to_the_front() {
    let (fifo, _) = ordered();
    fifo.add(cm("a", "1")).unwrap();
    fifo.add(cm("b", "1")).unwrap();
    pop_one(&fifo).now_or_never().flatten().unwrap().requeue();
    assert_eq!(pop_now(&fifo), ("ns/a".into(), vec![d(Added, "1")]));
}

#[test]
fn d7_ordered_has_synced_after_every_initial_delta_is_processed() {
    let (fifo, _) = ordered();
    fifo.replace(vec![cm("a", "1"), cm("b", "1")], "1".into())
        .unwrap();
    let first = pop_one(&fifo).now_or_never().flatten().unwrap();
    assert!(first.is_in_initial_list());
    first.done();
    assert!(!fifo.has_synced());
    pop_now(&fifo);
    assert!(fifo.has_synced());
}
