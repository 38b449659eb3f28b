//! Workqueue throughput: add/get/done with 4 worker tasks on a 4-thread tokio runtime, plus the
//! single-threaded cost of one add+get+done. Run: `cargo bench -p informer-runtime --bench workqueue`.

// `criterion_group!` emits an undocumented `pub fn benches`.
#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use informer_workqueue::WorkQueue;

const ITEMS: u64 = 20_000;
const WORKERS: usize = 4;

/// Adds `ITEMS` distinct keys, lets `WORKERS` tasks take and finish them, and waits for the drain.
async fn one_batch() {
    let q: WorkQueue<u64> = WorkQueue::new();
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                while let Some(k) = q.get().await {
                    black_box(k);
                    q.done(&k);
                }
            })
        })
        .collect();
    for i in 0..ITEMS {
        q.add(i);
    }
    q.shut_down_with_drain().await;
    for w in workers {
        w.await.expect("worker panicked");
    }
}

fn throughput(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("workqueue");
    group.throughput(Throughput::Elements(ITEMS));
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("add_get_done_4_workers", |b| {
        b.iter(|| rt.block_on(one_batch()))
    });
    group.finish();

    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let q: WorkQueue<u64> = WorkQueue::new();
    let mut group = c.benchmark_group("workqueue");
    group.throughput(Throughput::Elements(1));
    group.bench_function("add_get_done_uncontended", |b| {
        let mut i = 0u64;
        b.iter(|| {
            i += 1;
            q.add(i);
            let k = rt.block_on(q.get()).expect("item");
            q.done(&k);
        })
    });
    group.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
