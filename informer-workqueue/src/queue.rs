//! The basic work queue: FIFO order with `dirty` and `processing` sets (W1), a draining shutdown
//! (W2) and pause/resume (W9).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::hash::Hash;
use std::ops::Deref;
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::metrics::QueueMetrics;

/// How often the in-flight gauges (`workqueue_unfinished_work_seconds`,
/// `workqueue_longest_running_processor_seconds`) are refreshed (W7).
pub(crate) const METRICS_REFRESH_PERIOD: Duration = Duration::from_millis(500);

/// A work queue that hands each item to at most one worker at a time (W1, W2).
///
/// This is client-go's `workqueue.Typed[T]`. The queue keeps three structures:
///
/// * a FIFO of items waiting for a worker,
/// * the `dirty` set: every item that needs processing (queued, or added again while in flight),
/// * the `processing` set: every item a worker has taken with [`get`](Self::get) and not yet
///   released with [`done`](Self::done).
///
/// Adding an item that is already dirty does nothing, so duplicates collapse. Adding an item that
/// is being processed only marks it dirty; [`done`](Self::done) then queues it again. As a result
/// **no item is ever processed by two workers at once**, and an item added while it is processed
/// is processed once more after the current run.
///
/// `WorkQueue` is a cheap handle (an `Arc` inside): clone it into every worker. Waiting in
/// [`get`](Self::get) is notification-based; nothing polls.
///
/// # Example
///
/// A controller loop with several workers:
///
/// ```no_run
/// use informer_workqueue::WorkQueue;
/// # async fn reconcile(_key: &str) {}
/// # async fn run() {
/// let queue: WorkQueue<String> = WorkQueue::new();
/// let workers: Vec<_> = (0..4)
///     .map(|_| {
///         let queue = queue.clone();
///         tokio::spawn(async move {
///             while let Some(key) = queue.get().await {
///                 reconcile(&key).await;
///                 queue.done(&key);
///             }
///         })
///     })
///     .collect();
/// queue.add("default/web".to_string());
/// // Stop accepting work, let the workers finish what is queued, then wait for them.
/// queue.shut_down_with_drain().await;
/// for worker in workers {
///     worker.await.ok();
/// }
/// # }
/// ```
pub struct WorkQueue<T> {
    inner: Arc<Inner<T>>,
}

/// An item taken from a [`WorkQueue`] that calls [`WorkQueue::done`] when dropped.
///
/// Returned by [`WorkQueue::get_guarded`]. The guard dereferences to the item. Dropping it (or
/// calling [`WorkGuard::done`]) releases the item, which also happens when a worker panics or its
/// future is cancelled, so an item can never stay in `processing` forever by accident.
///
/// ```no_run
/// # use informer_workqueue::WorkQueue;
/// # async fn reconcile(_key: &str) {}
/// # async fn run(queue: WorkQueue<String>) {
/// while let Some(key) = queue.get_guarded().await {
///     reconcile(&key).await;
///     // `key` is dropped here, which calls `queue.done(&key)`.
/// }
/// # }
/// ```
#[must_use = "dropping the guard immediately marks the item as done"]
pub struct WorkGuard<T: Hash + Eq + Clone + Send + Sync + 'static> {
    queue: WorkQueue<T>,
    item: T,
}

/// A weak handle used by background tasks, so they never keep a queue alive on their own.
pub(crate) struct WeakWorkQueue<T> {
    inner: Weak<Inner<T>>,
}

struct Inner<T> {
    state: Mutex<State<T>>,
    /// Wakes workers waiting in `get`: one permit per queued item, all of them on shutdown.
    available: Notify,
    /// Wakes `shut_down_with_drain` callers when the queue becomes idle or the drain is cancelled.
    idle: Notify,
    /// Cancelled on shutdown and when the last handle is dropped; background tasks end on it.
    shutdown: CancellationToken,
    /// Present only for named queues built with metrics (W7).
    metrics: Option<QueueMetrics>,
}

struct State<T> {
    /// Items waiting for a worker, in FIFO order. Every item here is also in `dirty`.
    queue: VecDeque<T>,
    /// Items that need processing, with the time they were added (for the queue-duration metric).
    dirty: HashMap<T, Instant>,
    /// Items handed to a worker, with the time the worker took them.
    processing: HashMap<T, Instant>,
    shutting_down: bool,
    /// Set by `shut_down_with_drain`, cleared by `shut_down` to cancel a pending drain.
    draining: bool,
    /// Set by `pause`, cleared by `resume`: `get` hands nothing out meanwhile (W9).
    paused: bool,
}

impl<T> State<T> {
    /// Whether a pending `shut_down_with_drain` may return: nothing in flight, and nothing
    /// queued that a worker could still take (a paused queue hands nothing out, W2, W9).
    fn drained(&self) -> bool {
        self.processing.is_empty() && (self.queue.is_empty() || self.paused)
    }
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<T> Drop for Inner<T> {
    fn drop(&mut self) {
        // The last handle is gone: stop the delay and metrics tasks.
        self.shutdown.cancel();
    }
}

impl<T> fmt::Debug for WorkQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.state.lock();
        f.debug_struct("WorkQueue")
            .field("queued", &st.queue.len())
            .field("dirty", &st.dirty.len())
            .field("processing", &st.processing.len())
            .field("shutting_down", &st.shutting_down)
            .field("paused", &st.paused)
            .finish()
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> Default for WorkQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> WorkQueue<T> {
    /// Creates an unnamed queue without metrics. It needs no tokio runtime.
    pub fn new() -> Self {
        Self::with_metrics(None)
    }

    pub(crate) fn with_metrics(metrics: Option<QueueMetrics>) -> Self {
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    dirty: HashMap::new(),
                    processing: HashMap::new(),
                    shutting_down: false,
                    draining: false,
                    paused: false,
                }),
                available: Notify::new(),
                idle: Notify::new(),
                shutdown: CancellationToken::new(),
                metrics,
            }),
        }
    }

    /// Marks `item` as needing processing (W1).
    ///
    /// Does nothing if the item is already dirty or the queue is shutting down. If a worker is
    /// processing the item right now, it is only marked dirty and queued again by
    /// [`done`](Self::done).
    pub fn add(&self, item: T) {
        let mut st = self.inner.state.lock();
        if st.shutting_down || st.dirty.contains_key(&item) {
            return;
        }
        if let Some(m) = &self.inner.metrics {
            m.adds.inc();
            m.depth.set(gauge_len(st.dirty.len() + 1));
        }
        let in_flight = st.processing.contains_key(&item);
        if in_flight {
            st.dirty.insert(item, Instant::now());
            return;
        }
        st.dirty.insert(item.clone(), Instant::now());
        st.queue.push_back(item);
        drop(st);
        self.inner.available.notify_one();
    }

    /// Number of items waiting for a worker (items being processed are not counted).
    pub fn len(&self) -> usize {
        self.inner.state.lock().queue.len()
    }

    /// Whether no item is waiting for a worker.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits for the next item and marks it as being processed (W1, W2).
    ///
    /// Returns `None` only when the queue is shutting down **and** empty, so items queued before
    /// the shutdown still drain. While the queue is [paused](Self::pause) it waits even when items
    /// are queued, and returns `None` as soon as the queue shuts down (W9). The caller must call
    /// [`done`](Self::done) with the item when it is finished (or use
    /// [`get_guarded`](Self::get_guarded)). Cancel-safe: if the future is dropped before it
    /// completes, no item is taken.
    pub async fn get(&self) -> Option<T> {
        loop {
            let notified = self.inner.available.notified();
            tokio::pin!(notified);
            // Register before checking the state, so an `add` between the check and the await
            // cannot be missed.
            notified.as_mut().enable();
            if let Some(res) = self.try_get() {
                return res;
            }
            notified.await;
        }
    }

    /// Like [`get`](Self::get), but returns a [`WorkGuard`] that calls [`done`](Self::done) when
    /// dropped.
    pub async fn get_guarded(&self) -> Option<WorkGuard<T>> {
        let item = self.get().await?;
        Some(WorkGuard {
            queue: self.clone(),
            item,
        })
    }

    /// Takes an item without waiting: `Some(Some(item))`, `Some(None)` on shutdown, `None` when a
    /// caller has to wait.
    fn try_get(&self) -> Option<Option<T>> {
        let mut st = self.inner.state.lock();
        // W9: a paused queue hands nothing out, not even on shutdown.
        let next = if st.paused {
            None
        } else {
            st.queue.pop_front()
        };
        let Some(item) = next else {
            return st.shutting_down.then_some(None);
        };
        let now = Instant::now();
        let added = st.dirty.remove(&item);
        st.processing.insert(item.clone(), now);
        if let Some(m) = &self.inner.metrics {
            m.depth.set(gauge_len(st.dirty.len()));
            if let Some(added) = added {
                m.queue_duration
                    .observe(now.duration_since(added).as_secs_f64());
            }
        }
        if !st.queue.is_empty() {
            // Cheap insurance against a lost wake-up: pass the baton while work remains.
            self.inner.available.notify_one();
        }
        Some(Some(item))
    }

    /// Marks `item` as finished (W1).
    ///
    /// If the item was added again while it was being processed, it is queued again now. Calling
    /// `done` for an item that is not being processed does nothing (client-go would queue a dirty
    /// item a second time here).
    pub fn done(&self, item: &T) {
        let mut st = self.inner.state.lock();
        let Some(started) = st.processing.remove(item) else {
            return;
        };
        if let Some(m) = &self.inner.metrics {
            m.work_duration.observe(started.elapsed().as_secs_f64());
        }
        let requeued = st.dirty.contains_key(item);
        if requeued {
            st.queue.push_back(item.clone());
        }
        let drained = st.drained();
        drop(st);
        if requeued {
            self.inner.available.notify_one();
        }
        if drained {
            self.inner.idle.notify_waiters();
        }
    }

    /// Stops accepting new items (W2).
    ///
    /// Workers keep receiving the items already queued; [`get`](Self::get) returns `None` once the
    /// queue is empty. Items added while being processed are still queued again by
    /// [`done`](Self::done). A pending [`shut_down_with_drain`](Self::shut_down_with_drain) returns
    /// at once, as in client-go. Delayed items that are not ready yet are dropped.
    pub fn shut_down(&self) {
        {
            let mut st = self.inner.state.lock();
            st.shutting_down = true;
            st.draining = false;
        }
        self.wake_all();
    }

    /// Stops accepting new items and waits until every accepted item has been processed (W2).
    ///
    /// This waits until no item is queued **or** being processed. client-go only waits for the
    /// `processing` set to empty; waiting for queued items too closes the window in which a
    /// worker sits between `done` and the next `get` and the drain returns with work left.
    /// It therefore needs running workers. While the queue is [paused](Self::pause), it waits
    /// only for the items being processed: queued items are not handed out (W9). Calling
    /// [`shut_down`](Self::shut_down) meanwhile cancels the wait.
    pub async fn shut_down_with_drain(&self) {
        {
            let mut st = self.inner.state.lock();
            st.shutting_down = true;
            st.draining = true;
        }
        self.wake_all();
        loop {
            let idle = self.inner.idle.notified();
            tokio::pin!(idle);
            idle.as_mut().enable();
            {
                let st = self.inner.state.lock();
                if !st.draining || st.drained() {
                    return;
                }
            }
            idle.await;
        }
    }

    /// Stops [`get`](Self::get) from handing out items until [`resume`](Self::resume) (W9).
    ///
    /// Everything else goes on: [`add`](Self::add) queues and deduplicates as usual (W1),
    /// [`done`](Self::done) releases items already handed out (and queues again one added while
    /// it was processed), delayed items that become ready join the queue, and [`len`](Self::len)
    /// and the depth metric count what waits. Items in flight are not interrupted. A shutdown
    /// while paused hands out nothing more: `get` returns `None` at once, and
    /// [`shut_down_with_drain`](Self::shut_down_with_drain) waits only for the items in flight.
    ///
    /// Pausing a paused queue does nothing, and pauses do not nest: one `resume` ends them.
    /// This is client-go's `Pause` (v0.38), which, like this queue, offers no query of the state.
    ///
    /// ```
    /// use std::time::Duration;
    /// use informer_workqueue::WorkQueue;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let queue: WorkQueue<String> = WorkQueue::new();
    /// queue.pause(); // e.g. for a maintenance window
    /// queue.add("default/web".to_string());
    /// queue.add("default/web".to_string()); // still deduplicated
    /// assert_eq!(queue.len(), 1);
    ///
    /// let worker = tokio::spawn({
    ///     let queue = queue.clone();
    ///     async move { queue.get().await }
    /// });
    /// tokio::task::yield_now().await;
    /// assert!(!worker.is_finished(), "nothing is handed out while paused");
    ///
    /// queue.resume();
    /// let key = tokio::time::timeout(Duration::from_secs(5), worker).await;
    /// assert_eq!(key.ok().and_then(Result::ok).flatten().as_deref(), Some("default/web"));
    /// # }
    /// ```
    pub fn pause(&self) {
        let drained = {
            let mut st = self.inner.state.lock();
            st.paused = true;
            st.drained()
        };
        // A pending drain now waits only for the items in flight, which may be none (W9).
        if drained {
            self.inner.idle.notify_waiters();
        }
    }

    /// Lets [`get`](Self::get) hand out items again after [`pause`](Self::pause) and wakes every
    /// worker waiting in it (W9).
    ///
    /// Resuming a queue that is not paused does nothing. After a shutdown, resuming hands out the
    /// items still queued, as a shutdown does without a pause (W2). See [`pause`](Self::pause)
    /// for an example.
    pub fn resume(&self) {
        {
            let mut st = self.inner.state.lock();
            if !st.paused {
                return;
            }
            st.paused = false;
        }
        // Every waiter, not one: each re-checks and either takes an item or waits again.
        self.inner.available.notify_waiters();
    }

    /// Whether [`shut_down`](Self::shut_down) or [`shut_down_with_drain`](Self::shut_down_with_drain)
    /// was called.
    pub fn is_shutting_down(&self) -> bool {
        self.inner.state.lock().shutting_down
    }

    fn wake_all(&self) {
        self.inner.available.notify_waiters();
        self.inner.idle.notify_waiters();
        self.inner.shutdown.cancel();
    }

    /// A token cancelled on shutdown or when the last handle is dropped.
    pub(crate) fn shutdown_token(&self) -> CancellationToken {
        self.inner.shutdown.clone()
    }

    pub(crate) fn metrics(&self) -> Option<&QueueMetrics> {
        self.inner.metrics.as_ref()
    }

    pub(crate) fn downgrade(&self) -> WeakWorkQueue<T> {
        WeakWorkQueue {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// Recomputes the in-flight gauges from the `processing` set (W7).
    pub(crate) fn refresh_in_flight_metrics(&self) {
        let Some(m) = &self.inner.metrics else {
            return;
        };
        let st = self.inner.state.lock();
        let now = Instant::now();
        let (total, longest) = st
            .processing
            .values()
            .fold((0.0, 0.0), |(total, longest), t| {
                let secs = now.duration_since(*t).as_secs_f64();
                (total + secs, f64::max(longest, secs))
            });
        m.unfinished_work.set(total);
        m.longest_running.set(longest);
    }

    /// Spawns the task that refreshes the in-flight gauges every 500 ms until shutdown (W7).
    pub(crate) fn spawn_metrics_refresher(&self, rt: &tokio::runtime::Handle) {
        if self.inner.metrics.is_none() {
            return;
        }
        let weak = self.downgrade();
        let token = self.shutdown_token();
        rt.spawn(async move {
            let mut tick = tokio::time::interval(METRICS_REFRESH_PERIOD);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = token.cancelled() => break,
                    _ = tick.tick() => {}
                }
                let Some(queue) = weak.upgrade() else { break };
                queue.refresh_in_flight_metrics();
            }
            // One last refresh, so the gauges do not freeze at a stale value.
            if let Some(queue) = weak.upgrade() {
                queue.refresh_in_flight_metrics();
            }
        });
    }
}

impl<T> WeakWorkQueue<T> {
    /// Returns a strong handle if the queue still exists.
    pub(crate) fn upgrade(&self) -> Option<WorkQueue<T>> {
        self.inner.upgrade().map(|inner| WorkQueue { inner })
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> WorkGuard<T> {
    /// The item being processed.
    pub fn item(&self) -> &T {
        &self.item
    }

    /// Marks the item as done now; the same as dropping the guard.
    pub fn done(self) {}

    /// The queue the item came from.
    pub fn queue(&self) -> &WorkQueue<T> {
        &self.queue
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> Deref for WorkGuard<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.item
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> Drop for WorkGuard<T> {
    fn drop(&mut self) {
        self.queue.done(&self.item);
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + fmt::Debug + 'static> fmt::Debug for WorkGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("WorkGuard").field(&self.item).finish()
    }
}

fn gauge_len(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::time::timeout;

    const T: Duration = Duration::from_secs(5);

    #[tokio::test]
    async fn w1_duplicates_collapse_and_fifo_order() {
        let q = WorkQueue::new();
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(q.get().await, Some("b"));
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn w1_add_while_processing_requeues_on_done() {
        let q = WorkQueue::new();
        q.add(1);
        let item = q.get().await.unwrap();
        q.add(1);
        q.add(1);
        // Dirty but in flight: not handed out again before done.
        assert_eq!(q.len(), 0);
        q.done(&item);
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some(1));
        q.done(&1);
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn w1_done_of_unknown_item_is_a_no_op() {
        let q = WorkQueue::new();
        q.add(7);
        q.done(&7); // not processing: must not queue a duplicate
        assert_eq!(q.len(), 1);
    }

    #[tokio::test]
    async fn w2_get_waits_for_add() {
        let q = WorkQueue::new();
        let worker = tokio::spawn({
            let q = q.clone();
            async move { q.get().await }
        });
        tokio::task::yield_now().await;
        q.add(3);
        assert_eq!(timeout(T, worker).await.unwrap().unwrap(), Some(3));
    }

    #[tokio::test]
    async fn w2_shutdown_drains_then_reports_none() {
        let q = WorkQueue::new();
        q.add(1);
        q.add(2);
        q.shut_down();
        assert!(q.is_shutting_down());
        q.add(3); // rejected
        assert_eq!(q.get().await, Some(1));
        assert_eq!(q.get().await, Some(2));
        assert_eq!(q.get().await, None);
    }

    #[tokio::test]
    async fn w2_shutdown_wakes_waiting_workers() {
        let q = WorkQueue::<u32>::new();
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move { q.get().await })
            })
            .collect();
        tokio::task::yield_now().await;
        q.shut_down();
        for w in workers {
            assert_eq!(timeout(T, w).await.unwrap().unwrap(), None);
        }
    }

    #[tokio::test]
    async fn w2_drain_waits_for_processing_items() {
        let q = WorkQueue::new();
        q.add("x");
        let item = q.get().await.unwrap();
        let drain = tokio::spawn({
            let q = q.clone();
            async move { q.shut_down_with_drain().await }
        });
        tokio::task::yield_now().await;
        assert!(!drain.is_finished());
        q.done(&item);
        timeout(T, drain).await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn w2_shut_down_cancels_a_pending_drain() {
        let q = WorkQueue::new();
        q.add("x");
        let _item = q.get().await.unwrap();
        let drain = tokio::spawn({
            let q = q.clone();
            async move { q.shut_down_with_drain().await }
        });
        tokio::task::yield_now().await;
        q.shut_down();
        timeout(T, drain).await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn w1_guard_calls_done_on_drop() {
        let q = WorkQueue::new();
        q.add(5);
        let guard = q.get_guarded().await.unwrap();
        assert_eq!(*guard, 5);
        q.add(5);
        assert_eq!(q.len(), 0);
        drop(guard);
        assert_eq!(q.len(), 1);
        let guard = q.get_guarded().await.unwrap();
        guard.done();
        q.shut_down_with_drain().await;
    }
}
