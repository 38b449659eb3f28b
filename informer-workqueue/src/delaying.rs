//! A work queue whose items can wait for a ready time first, driven by one timer task (W3).

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::hash::Hash;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::queue::{WeakWorkQueue, WorkQueue};
use super::{Error, Result};

/// A [`WorkQueue`] with [`add_after`](Self::add_after) (W3).
///
/// This is client-go's `TypedDelayingInterface`. Waiting items are kept in a min-heap ordered by
/// ready time; one background task sleeps until the earliest one is due and is woken only when an
/// earlier item arrives or the queue shuts down. Nothing polls (client-go also wakes every 10 s).
/// The task ends on shutdown or when the last handle is dropped; items still waiting then are
/// dropped, as in client-go.
///
/// Creating a delaying queue spawns that task, so it needs a tokio runtime.
///
/// ```no_run
/// use std::time::Duration;
/// use informer_workqueue::DelayingQueue;
/// # async fn run() {
/// let queue: DelayingQueue<String> = DelayingQueue::new();
/// queue.add_after("default/web".to_string(), Duration::from_secs(30));
/// let key = queue.get().await; // about 30 s later
/// # }
/// ```
pub struct DelayingQueue<T> {
    queue: WorkQueue<T>,
    waiting: Arc<Waiting<T>>,
}

struct Waiting<T> {
    state: Mutex<Heap<T>>,
    /// Wakes the timer task when a new earliest item arrives.
    wake: Notify,
}

struct Heap<T> {
    /// Entries ordered by ready time. An entry is stale (and skipped) when `ready_at` holds an
    /// earlier time for its item: re-adding with an earlier time pushes a new entry instead of
    /// searching the heap.
    heap: BinaryHeap<Entry<T>>,
    /// The current ready time of every waiting item (W3: the earliest one wins).
    ready_at: HashMap<T, Instant>,
    /// Breaks ties between equal ready times in insertion order.
    seq: u64,
}

struct Entry<T> {
    at: Instant,
    seq: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}

impl<T> Eq for Entry<T> {}

impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<T> Ord for Entry<T> {
    /// Reversed, so `BinaryHeap` (a max-heap) pops the earliest entry first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

impl<T> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            waiting: Arc::clone(&self.waiting),
        }
    }
}

impl<T> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.queue)
            .field("waiting", &self.waiting.state.lock().ready_at.len())
            .finish()
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> DelayingQueue<T> {
    /// Wraps `queue` and spawns the timer task (and the metrics task, if any) on the current
    /// runtime.
    pub(crate) fn start(queue: WorkQueue<T>) -> Result<Self> {
        let rt = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
        let waiting = Arc::new(Waiting {
            state: Mutex::new(Heap {
                heap: BinaryHeap::new(),
                ready_at: HashMap::new(),
                seq: 0,
            }),
            wake: Notify::new(),
        });
        queue.spawn_metrics_refresher(&rt);
        rt.spawn(run_timer(
            queue.downgrade(),
            queue.shutdown_token(),
            Arc::clone(&waiting),
        ));
        Ok(Self { queue, waiting })
    }

    /// Adds `item` once `delay` has passed (W3).
    ///
    /// A zero delay is a plain [`add`](WorkQueue::add). If the item is already waiting, the **earlier**
    /// of the two ready times is kept. Ignored while shutting down. Counts towards
    /// `workqueue_retries_total`, as client-go does for every `AddAfter`.
    pub fn add_after(&self, item: T, delay: Duration) {
        if self.queue.is_shutting_down() {
            return;
        }
        if let Some(m) = self.queue.metrics() {
            m.retries.inc();
        }
        if delay.is_zero() {
            self.queue.add(item);
            return;
        }
        let now = Instant::now();
        // A delay too large for the clock means "practically never"; tokio caps long sleeps too.
        let at = now
            .checked_add(delay)
            .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30));
        let mut st = self.waiting.state.lock();
        match st.ready_at.get_mut(&item) {
            Some(existing) if *existing <= at => return,
            Some(existing) => *existing = at,
            None => {
                st.ready_at.insert(item.clone(), at);
            }
        }
        let seq = st.seq;
        st.seq += 1;
        st.heap.push(Entry { at, seq, item });
        let is_earliest = st.heap.peek().is_some_and(|top| top.seq == seq);
        drop(st);
        if is_earliest {
            self.waiting.wake.notify_one();
        }
    }

    /// Number of items waiting for their ready time (not yet in the queue).
    pub fn waiting_len(&self) -> usize {
        self.waiting.state.lock().ready_at.len()
    }

    /// The underlying [`WorkQueue`] (also reached by deref).
    pub fn queue(&self) -> &WorkQueue<T> {
        &self.queue
    }
}

/// Every [`WorkQueue`] method (`add`, `get`, `get_guarded`, `done`, `len`, `shut_down`, `pause`,
/// `resume`, …) works on a delaying queue as is: it is the same queue with a timer in front. On
/// shutdown, items still waiting for their ready time are dropped, never drained (W3). While the
/// queue is [paused](WorkQueue::pause) the timer keeps running: items whose ready time passes
/// join the queue and wait there until [`resume`](WorkQueue::resume) (W9).
impl<T> Deref for DelayingQueue<T> {
    type Target = WorkQueue<T>;

    fn deref(&self) -> &WorkQueue<T> {
        &self.queue
    }
}

/// The timer task: moves due items into the queue, then sleeps until the next ready time.
async fn run_timer<T: Hash + Eq + Clone + Send + Sync + 'static>(
    queue: WeakWorkQueue<T>,
    shutdown: tokio_util::sync::CancellationToken,
    waiting: Arc<Waiting<T>>,
) {
    let mut ready = Vec::new();
    loop {
        let next = {
            let mut st = waiting.state.lock();
            let now = Instant::now();
            while st.heap.peek().is_some_and(|top| top.at <= now) {
                let Some(entry) = st.heap.pop() else { break };
                // Skip stale entries superseded by an earlier ready time.
                if st.ready_at.get(&entry.item) == Some(&entry.at) {
                    st.ready_at.remove(&entry.item);
                    ready.push(entry.item);
                }
            }
            st.heap.peek().map(|top| top.at)
        };
        if !ready.is_empty() {
            let Some(q) = queue.upgrade() else { return };
            for item in ready.drain(..) {
                q.add(item);
            }
        }
        match next {
            Some(at) => tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = waiting.wake.notified() => {}
                _ = tokio::time::sleep_until(at) => {}
            },
            None => tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = waiting.wake.notified() => {}
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// `get` under a virtual-time limit, so a broken timer fails the test instead of hanging it.
    async fn get<T: Hash + Eq + Clone + Send + Sync + 'static>(q: &DelayingQueue<T>) -> Option<T> {
        tokio::time::timeout(Duration::from_secs(86_400), q.get())
            .await
            .expect("no item within a virtual day")
    }

    #[tokio::test(start_paused = true)]
    async fn w3_zero_delay_is_a_plain_add() {
        let q = DelayingQueue::new();
        q.add_after("a", Duration::ZERO);
        assert_eq!(q.len(), 1);
        assert_eq!(q.waiting_len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn w3_items_become_ready_in_ready_time_order() {
        let q = DelayingQueue::new();
        let start = Instant::now();
        q.add_after("c", 30 * MS);
        q.add_after("a", 10 * MS);
        q.add_after("b", 20 * MS);
        assert_eq!(q.len(), 0);
        assert_eq!(q.waiting_len(), 3);
        for (want, at) in [("a", 10), ("b", 20), ("c", 30)] {
            assert_eq!(get(&q).await, Some(want));
            assert_eq!(start.elapsed(), at * MS);
        }
        assert_eq!(q.waiting_len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn w3_readding_keeps_the_earlier_ready_time() {
        let q = DelayingQueue::new();
        let start = Instant::now();
        q.add_after("x", 50 * MS);
        q.add_after("x", 100 * MS); // later: ignored
        q.add_after("x", 20 * MS); // earlier: wins
        assert_eq!(q.waiting_len(), 1);
        assert_eq!(get(&q).await, Some("x"));
        assert_eq!(start.elapsed(), 20 * MS);
        q.done(&"x");
        // The stale 50 ms entry must not add the item a second time.
        tokio::time::sleep(200 * MS).await;
        assert_eq!(q.len(), 0);
    }

    /// Yields until the runtime has `before` alive tasks again, at most 1 000 times: bounded by
    /// yields, not by time, so a paused clock does not advance.
    async fn wait_for_alive_tasks(rt: &tokio::runtime::Handle, before: usize) {
        let mut yields = 0;
        while rt.metrics().num_alive_tasks() != before && yields < 1_000 {
            tokio::task::yield_now().await;
            yields += 1;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn w3_shutdown_ends_the_timer_task_and_drops_waiting_items() {
        let rt = tokio::runtime::Handle::current();
        let before = rt.metrics().num_alive_tasks();
        let q = DelayingQueue::new();
        assert_eq!(rt.metrics().num_alive_tasks(), before + 1);
        q.add_after("late", Duration::from_secs(10));
        q.shut_down();
        wait_for_alive_tasks(&rt, before).await;
        assert_eq!(
            rt.metrics().num_alive_tasks(),
            before,
            "the timer task outlived the shutdown"
        );
        q.add_after("ignored", MS);
        assert_eq!(get(&q).await, None);
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert_eq!(q.len(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn w3_timer_task_ends_when_the_last_handle_is_dropped() {
        let rt = tokio::runtime::Handle::current();
        let before = rt.metrics().num_alive_tasks();
        let q = DelayingQueue::new();
        q.add_after(1u8, Duration::from_secs(3600));
        drop(q);
        wait_for_alive_tasks(&rt, before).await;
        assert_eq!(
            rt.metrics().num_alive_tasks(),
            before,
            "the timer task outlived its queue"
        );
    }

    #[test]
    fn w3_needs_a_runtime() {
        let res = DelayingQueue::<u8>::builder().try_build();
        assert!(matches!(res, Err(Error::NoRuntime)));
    }
}
