//! The delta FIFO's share of the informer's pop loop: queue watch events (finished `Arc`s, as
//! the reflector hands them over) and pop them in batches of 100 (V3), finishing each key, in
//! both modes. Two shapes: every event on a new key (the most bookkeeping per event: a queued
//! key each time), and ten events per key (a burst, coalesced by the keyed mode). Two object
//! states: `prebuilt` queues 10 000 objects built ahead (cold in the CPU cache: the FIFO's
//! reads of an object cost a cache miss each), `fresh` builds each object just before queueing
//! it, as the reflector decodes one (hot; the build is measured too).
//! Run: `cargo bench -p informer-runtime --bench delta_fifo`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput};
use futures::FutureExt;
use informer_runtime::delta_fifo::{DeltaFifo, FifoMode};
use informer_runtime::indexer::Indexer;
use informer_runtime::key::ObjectKey;
use informer_runtime::store::ReflectorStore;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;

const EVENTS: usize = 10_000;
const BATCH: usize = 100;

fn event(i: usize, keys: usize) -> (ObjectKey, Arc<ConfigMap>) {
    let name = format!("cm-{}", i % keys);
    let obj = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some("ns".into()),
            resource_version: Some((1_000 + i).to_string()),
            ..Default::default()
        },
        ..Default::default()
    };
    (ObjectKey::new(Some("ns"), &name), Arc::new(obj))
}

fn events(keys: usize) -> Vec<(ObjectKey, Arc<ConfigMap>)> {
    (0..EVENTS).map(|i| event(i, keys)).collect()
}

fn queue_and_pop(
    mode: FifoMode,
    events: impl IntoIterator<Item = (ObjectKey, Arc<ConfigMap>)>,
) -> usize {
    let store = Arc::new(Indexer::<ConfigMap>::new());
    let fifo = DeltaFifo::builder().known_objects(store).mode(mode).build();
    for (key, obj) in events {
        fifo.update_shared(key, obj).expect("open FIFO");
    }
    let mut popped = 0;
    while let Some(batch) = fifo.pop_batch(BATCH, true).now_or_never().flatten() {
        for p in batch {
            popped += p.deltas().len();
            p.done();
        }
        if fifo.is_empty() {
            break;
        }
    }
    popped
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("delta_fifo");
    group.throughput(Throughput::Elements(EVENTS as u64));
    group.measurement_time(Duration::from_secs(5));
    for (mode, mode_name) in [
        (FifoMode::Coalescing, "keyed"),
        (FifoMode::Ordered, "ordered"),
    ] {
        for (keys, shape) in [(EVENTS, "new_key_each"), (EVENTS / 10, "ten_per_key")] {
            // Held here, so the measured part frees no object (only reference counts drop).
            let held = events(keys);
            group.bench_function(format!("prebuilt/{mode_name}/{shape}"), |b| {
                b.iter_batched(
                    || held.clone(),
                    |events| black_box(queue_and_pop(mode, events)),
                    BatchSize::LargeInput,
                )
            });
            group.bench_function(format!("fresh/{mode_name}/{shape}"), |b| {
                b.iter(|| black_box(queue_and_pop(mode, (0..EVENTS).map(|i| event(i, keys)))))
            });
        }
    }
    group.finish();
}

// A hand-written main instead of `criterion_group!`, whose generated `pub fn` has no docs.
fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c);
    c.final_summary();
}
