//! Workqueue scenarios from the semantics' test list (W1, W2) with many real worker tasks.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

use informer_workqueue::{
    DelayingQueue, RateLimitingQueue, WorkGuard, WorkQueue, WorkQueueMetrics,
};
use tokio::sync::Notify;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(20);

/// Compile-time check that the public handles and their futures can cross threads.
#[test]
fn handles_and_futures_are_send_and_sync() {
    fn send_sync<T: Send + Sync>(_: &T) {}
    fn send<T: Send>(_: &T) {}
    fn clone<T: Clone>() {}
    clone::<WorkQueue<String>>();
    clone::<DelayingQueue<String>>();
    clone::<RateLimitingQueue<String>>();
    clone::<WorkQueueMetrics>();
    let q = WorkQueue::<String>::new();
    send_sync(&q);
    send(&q.get());
    send(&q.get_guarded());
    send(&q.shut_down_with_drain());
    fn guard_is_send<T: Send>() {}
    guard_is_send::<WorkGuard<String>>();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let q = RateLimitingQueue::<String>::builder().build();
        send_sync(&q);
        send(&q.get());
        send(&q.shut_down_with_drain());
    });
}

/// W1 (semantics' workqueue scenario): 10 workers, one key added 100 times while it is being
/// processed: never processed concurrently, processed exactly twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn w1_ten_workers_one_key_added_100_times_while_processing_runs_twice() {
    let q = WorkQueue::new();
    let runs = Arc::new(AtomicU32::new(0));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let overlap = Arc::new(AtomicBool::new(false));
    let started = Arc::new(Notify::new());
    let release = Arc::new(Notify::new());

    let workers: Vec<_> = (0..10)
        .map(|_| {
            let (q, runs, in_flight, overlap) =
                (q.clone(), runs.clone(), in_flight.clone(), overlap.clone());
            let (started, release) = (started.clone(), release.clone());
            tokio::spawn(async move {
                while let Some(key) = q.get().await {
                    if in_flight.fetch_add(1, Ordering::SeqCst) != 0 {
                        overlap.store(true, Ordering::SeqCst);
                    }
                    if runs.fetch_add(1, Ordering::SeqCst) == 0 {
                        // Hold the first run until the test has re-added the key 100 times.
                        started.notify_one();
                        release.notified().await;
                    }
                    in_flight.fetch_sub(1, Ordering::SeqCst);
                    q.done(&key);
                }
            })
        })
        .collect();

    q.add("default/web".to_string());
    timeout(LIMIT, started.notified()).await.unwrap();
    for _ in 0..100 {
        q.add("default/web".to_string());
    }
    // Dirty while in flight: not handed to any of the 9 idle workers.
    assert_eq!(q.len(), 0);
    release.notify_one();

    timeout(LIMIT, q.shut_down_with_drain()).await.unwrap();
    for w in workers {
        timeout(LIMIT, w).await.unwrap().unwrap();
    }
    assert!(
        !overlap.load(Ordering::SeqCst),
        "key processed by two workers at once"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

/// W1/W2 stress: several producers and 10 workers over 16 keys. No key is ever processed by
/// two workers at once, every add is followed by a processing run that saw it, and the
/// draining shutdown processes everything.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn w1_w2_many_producers_and_workers_never_overlap_and_drain_everything() {
    const KEYS: usize = 16;
    let q = WorkQueue::new();
    let generation: Arc<Vec<AtomicU32>> = Arc::new((0..KEYS).map(|_| AtomicU32::new(0)).collect());
    let seen: Arc<Vec<AtomicU32>> = Arc::new((0..KEYS).map(|_| AtomicU32::new(0)).collect());
    let busy: Arc<Vec<AtomicBool>> = Arc::new((0..KEYS).map(|_| AtomicBool::new(false)).collect());
    let overlap = Arc::new(AtomicBool::new(false));

    let workers: Vec<_> = (0..10)
        .map(|_| {
            let (q, generation, seen, busy, overlap) = (
                q.clone(),
                generation.clone(),
                seen.clone(),
                busy.clone(),
                overlap.clone(),
            );
            tokio::spawn(async move {
                while let Some(key) = q.get_guarded().await {
                    let k: usize = *key;
                    if busy[k].swap(true, Ordering::SeqCst) {
                        overlap.store(true, Ordering::SeqCst);
                    }
                    seen[k].fetch_max(generation[k].load(Ordering::SeqCst), Ordering::SeqCst);
                    tokio::task::yield_now().await;
                    busy[k].store(false, Ordering::SeqCst);
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..4)
        .map(|p| {
            let (q, generation) = (q.clone(), generation.clone());
            tokio::spawn(async move {
                for i in 0..2_000usize {
                    let k = (i * 7 + p * 3) % KEYS;
                    generation[k].fetch_add(1, Ordering::SeqCst);
                    q.add(k);
                    if i % 64 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
            })
        })
        .collect();
    for p in producers {
        timeout(LIMIT, p).await.unwrap().unwrap();
    }
    timeout(LIMIT, q.shut_down_with_drain()).await.unwrap();
    for w in workers {
        timeout(LIMIT, w).await.unwrap().unwrap();
    }
    assert!(
        !overlap.load(Ordering::SeqCst),
        "a key was processed by two workers at once"
    );
    for k in 0..KEYS {
        assert_eq!(
            seen[k].load(Ordering::SeqCst),
            generation[k].load(Ordering::SeqCst),
            "key {k}: its last add was never processed"
        );
    }
    assert!(q.is_empty());
}

/// W2: a draining shutdown lets workers finish everything that was queued, then `get` reports
/// shutdown to every worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn w2_shutdown_with_drain_processes_every_queued_item() {
    let q = WorkQueue::new();
    for i in 0..500u32 {
        q.add(i);
    }
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let q = q.clone();
            tokio::spawn(async move {
                let mut processed = Vec::new();
                while let Some(i) = q.get().await {
                    processed.push(i);
                    q.done(&i);
                }
                processed
            })
        })
        .collect();
    timeout(LIMIT, q.shut_down_with_drain()).await.unwrap();
    q.add(1_000); // rejected after shutdown
    let mut counts: HashMap<u32, u32> = HashMap::new();
    for w in workers {
        for i in timeout(LIMIT, w).await.unwrap().unwrap() {
            *counts.entry(i).or_insert(0) += 1;
        }
    }
    assert_eq!(counts.len(), 500);
    assert!(counts.values().all(|&n| n == 1));
}

/// W4 end to end with a failing reconciler on paused time: each failure waits the limiter's
/// delay (5 ms, 10 ms, 20 ms) and success forgets the item.
#[tokio::test(start_paused = true)]
async fn w4_controller_loop_retries_with_backoff_then_forgets() {
    let q: RateLimitingQueue<&str> = RateLimitingQueue::builder().build();
    let start = tokio::time::Instant::now();
    let mut attempts = HashMap::new();
    let mut times = Vec::new();
    q.add("a");
    // A virtual-time limit turns a broken timer into a failure instead of a hang.
    let next = || tokio::time::timeout(Duration::from_secs(3600), q.get());
    while let Some(key) = next().await.unwrap() {
        times.push(start.elapsed());
        let n = attempts.entry(key).or_insert(0u32);
        *n += 1;
        if *n < 4 {
            q.add_rate_limited(key);
        } else {
            q.forget(&key);
            q.shut_down();
        }
        q.done(&key);
    }
    let ms = Duration::from_millis;
    assert_eq!(times, [ms(0), ms(5), ms(15), ms(35)]);
    assert_eq!(q.num_requeues(&"a"), 0);
}

/// W5/W6 through the queue: with the default controller limiter, consecutive failures of one
/// key are retried after 5 ms, 10 ms, 20 ms, …, and from the 19th failure on after exactly the
/// 1000 s cap.
#[tokio::test(start_paused = true)]
async fn w5_w6_default_queue_retries_double_until_the_1000s_cap() {
    let q: RateLimitingQueue<&str> = RateLimitingQueue::builder().build();
    let next = || tokio::time::timeout(Duration::from_secs(7_200), q.get());
    q.add("key");
    let mut last = tokio::time::Instant::now();
    let mut gaps = Vec::new();
    while let Some(key) = next().await.unwrap() {
        let now = tokio::time::Instant::now();
        gaps.push(now - last);
        last = now;
        if gaps.len() <= 22 {
            q.add_rate_limited(key); // another failure
        } else {
            q.shut_down();
        }
        q.done(&key);
    }
    // gaps[0] is the initial add; gaps[n] follows the n-th failure.
    let expected: Vec<Duration> = std::iter::once(Duration::ZERO)
        .chain(
            (0..22u32)
                .map(|n| Duration::from_millis(5 * 2u64.pow(n)).min(Duration::from_secs(1000))),
        )
        .collect();
    assert_eq!(gaps, expected);
    assert_eq!(gaps[18], Duration::from_millis(655_360));
    assert_eq!(
        gaps[19],
        Duration::from_secs(1000),
        "the 19th failure hits the cap"
    );
    assert_eq!(q.num_requeues(&"key"), 22);
}
