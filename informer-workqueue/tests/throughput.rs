//! Throughput of add/get/done with 4 workers (ignored by default; run it in release to measure).
//!
//! `cargo test -p informer-runtime --release --test workqueue_throughput -- --ignored --nocapture`

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use informer_workqueue::WorkQueue;

const ITEMS: u64 = 400_000;
const KEYS: u64 = 10_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "measurement, not a check; run with --ignored --nocapture"]
async fn add_get_done_throughput_with_4_workers() {
    let q: WorkQueue<u64> = WorkQueue::new();
    let processed = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let (q, processed) = (q.clone(), processed.clone());
            tokio::spawn(async move {
                while let Some(k) = q.get().await {
                    processed.fetch_add(1, Ordering::Relaxed);
                    q.done(&k);
                }
            })
        })
        .collect();
    let producer = tokio::spawn({
        let q = q.clone();
        async move {
            for i in 0..ITEMS {
                q.add(i % KEYS);
                if i % 256 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }
    });
    producer.await.unwrap();
    tokio::time::timeout(Duration::from_secs(120), q.shut_down_with_drain())
        .await
        .unwrap();
    for w in workers {
        w.await.unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    let n = processed.load(Ordering::Relaxed);
    println!(
        "{ITEMS} adds over {KEYS} keys, {n} get+done cycles in {secs:.3} s: \
         {:.0} adds/s, {:.0} get+done/s",
        ITEMS as f64 / secs,
        n as f64 / secs
    );
    assert!((KEYS..=ITEMS).contains(&n));
}
