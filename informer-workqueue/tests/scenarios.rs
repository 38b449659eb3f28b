//! Workqueue scenarios from the semantics' test list (W1, W2) with many real worker tasks, and
//! pause/resume (W9) on paused time.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::time::Duration;

use futures::FutureExt;
use informer_workqueue::{
    DelayingQueue, RateLimitingQueue, WorkGuard, WorkQueue, WorkQueueMetrics,
};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
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

/// Lets every task run until all of them wait, on paused time: the clock only jumps (here by a
/// virtual hour) once no task can make progress, so this is a barrier, not a guess.
async fn settle() {
    tokio::time::sleep(Duration::from_secs(3600)).await;
}

/// `get` on a spawned task, as a worker would call it.
fn spawn_get<T: std::hash::Hash + Eq + Clone + Send + Sync + 'static>(
    q: &WorkQueue<T>,
) -> JoinHandle<Option<T>> {
    let q = q.clone();
    tokio::spawn(async move { q.get().await })
}

/// W9: workers waiting in `get` stay waiting while the queue is paused, even when items arrive,
/// and `resume` wakes every one of them.
#[tokio::test(start_paused = true)]
async fn w9_get_waits_while_paused_and_resume_wakes_every_waiting_get() {
    let q = WorkQueue::new();
    let workers: Vec<_> = (0..3).map(|_| spawn_get(&q)).collect();
    settle().await;
    q.pause();
    for i in 0..3u32 {
        q.add(i);
    }
    settle().await;
    assert!(
        workers.iter().all(|w| !w.is_finished()),
        "a paused queue handed out an item"
    );
    assert_eq!(q.len(), 3, "items added while paused are kept");
    q.resume();
    let mut got = Vec::new();
    for w in workers {
        got.push(timeout(LIMIT, w).await.unwrap().unwrap());
    }
    got.sort_unstable();
    assert_eq!(got, [Some(0), Some(1), Some(2)]);
    assert!(q.is_empty());
}

/// W9 with W1: adds while paused are queued and deduplicated, an item in flight is finished
/// and queued again when it was re-added, and nothing is handed out before `resume`, after which
/// the items come in FIFO order.
#[tokio::test(start_paused = true)]
async fn w9_adds_while_paused_are_kept_deduplicated_and_in_flight_items_finish() {
    let q = WorkQueue::new();
    q.add("in-flight");
    let item = q.get().await.unwrap();
    q.pause();
    q.add("in-flight"); // dirty while processing: queued again by `done`
    q.add("a");
    q.add("a");
    q.add("b");
    assert_eq!(q.len(), 2, "duplicates collapse while paused (W1)");
    q.done(&item);
    assert_eq!(q.len(), 3, "`done` while paused queues the re-added item");
    assert_eq!(q.get().now_or_never(), None, "`get` must wait while paused");
    q.resume();
    for want in ["a", "b", "in-flight"] {
        assert_eq!(q.get().now_or_never(), Some(Some(want)));
        q.done(&want);
    }
    assert!(q.is_empty());
}

/// W9 with W2: a shutdown while paused reports shutdown to waiting and later `get`s at once,
/// though items are queued; a `resume` after the shutdown hands those items out.
#[tokio::test(start_paused = true)]
async fn w9_shutdown_while_paused_hands_out_nothing_until_resumed() {
    let q = WorkQueue::new();
    q.add(1u32);
    q.add(2);
    q.pause();
    let waiting = spawn_get(&q);
    settle().await;
    assert!(!waiting.is_finished());
    q.shut_down();
    assert_eq!(timeout(LIMIT, waiting).await.unwrap().unwrap(), None);
    assert_eq!(q.get().now_or_never(), Some(None));
    assert_eq!(q.len(), 2, "the queued items stay queued");
    q.add(3); // rejected: shutting down (W2)
    q.resume();
    assert_eq!(q.get().now_or_never(), Some(Some(1)));
    assert_eq!(q.get().now_or_never(), Some(Some(2)));
    assert_eq!(q.get().now_or_never(), Some(None));
}

/// W9 with W2: `shut_down_with_drain` on a paused queue waits for the items in flight only,
/// and never hands out the queued ones.
#[tokio::test(start_paused = true)]
async fn w9_drain_while_paused_waits_only_for_items_in_flight() {
    let q = WorkQueue::new();
    q.add("x");
    let x = q.get().await.unwrap();
    q.pause();
    q.add("queued");
    let worker = spawn_get(&q);
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    assert_eq!(timeout(LIMIT, worker).await.unwrap().unwrap(), None);
    settle().await;
    assert!(
        !drain.is_finished(),
        "the drain returned with `x` in flight"
    );
    q.done(&x);
    timeout(LIMIT, drain).await.unwrap().unwrap();
    assert_eq!(q.len(), 1, "the queued item was not handed out");
}

/// W9 with W2: a drain waiting for queued items that no worker takes returns once the queue is
/// paused, since a paused queue hands them out to nobody.
#[tokio::test(start_paused = true)]
async fn w9_pausing_releases_a_drain_waiting_for_queued_items() {
    let q = WorkQueue::new();
    q.add("queued");
    let drain = tokio::spawn({
        let q = q.clone();
        async move { q.shut_down_with_drain().await }
    });
    settle().await;
    assert!(!drain.is_finished(), "a drain waits for queued items (W2)");
    q.pause();
    timeout(LIMIT, drain).await.unwrap().unwrap();
}

/// W9 with W3/W4: while paused, the delay timer keeps running and due items join the queue
/// (leaving the waiting set), and the rate limiter counts and forgets; nothing is handed out
/// until `resume`, then the items come in ready-time order.
#[tokio::test(start_paused = true)]
async fn w9_delayed_items_become_ready_while_paused_and_wait_in_the_queue() {
    let ms = Duration::from_millis;
    let q: RateLimitingQueue<&str> = RateLimitingQueue::builder().build();
    q.pause();
    q.add_after("late", ms(20));
    q.add_after("early", ms(10));
    q.add_rate_limited("limited"); // the default limiter's first delay: 5 ms
    assert_eq!(q.num_requeues(&"limited"), 1);
    assert_eq!(q.waiting_len(), 3);
    let worker = spawn_get(q.delaying().queue());
    settle().await;
    assert_eq!(q.waiting_len(), 0, "the timer runs while paused");
    assert_eq!(q.len(), 3, "due items wait in the queue");
    assert!(
        !worker.is_finished(),
        "a paused queue handed out a due item"
    );
    q.forget(&"limited");
    assert_eq!(q.num_requeues(&"limited"), 0);
    q.resume();
    assert_eq!(
        timeout(LIMIT, worker).await.unwrap().unwrap(),
        Some("limited")
    );
    assert_eq!(q.get().now_or_never(), Some(Some("early")));
    assert_eq!(q.get().now_or_never(), Some(Some("late")));
}

/// W9: `pause` and `resume` are idempotent and do not nest: a second `pause` changes nothing,
/// one `resume` ends two pauses, and `resume` on a running queue does not pause it.
#[tokio::test(start_paused = true)]
async fn w9_pause_and_resume_are_idempotent_and_do_not_nest() {
    let q = DelayingQueue::new();
    q.resume(); // running already: nothing to do
    q.add(1u8);
    assert_eq!(q.get().now_or_never(), Some(Some(1)));
    q.pause();
    q.pause();
    q.add(2);
    assert_eq!(q.get().now_or_never(), None);
    q.resume();
    assert_eq!(
        q.get().now_or_never(),
        Some(Some(2)),
        "one resume ends any number of pauses"
    );
    q.resume();
    q.add(3);
    assert_eq!(q.get().now_or_never(), Some(Some(3)));
}
