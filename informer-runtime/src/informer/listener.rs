//! One registered handler: its backlog, counters, task loop and public [`HandlerRegistration`] (H6-H11).

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use tokio::sync::{Notify, watch};

use super::event::InformerEvent;
use super::handler::ResourceEventHandler;
use super::metrics::HandlerMetrics;
use super::pending::OverflowPolicy;
use super::pending::PendingQueue;
use super::resync::HandlerResync;
use super::sync::{InitialAdds, SyncGate};
use crate::key::ObjectKey;

/// Pending notifications above which a slow call is logged (H10).
const SLOW_CALL_PENDING: usize = 1024;
/// A call slower than this is logged when the backlog is above [`SLOW_CALL_PENDING`] (H10).
const SLOW_CALL: Duration = Duration::from_millis(100);
/// At most one slow-handler warning per handler per this interval.
const SLOW_WARN_INTERVAL: Duration = Duration::from_secs(1);

thread_local! {
    /// The listener whose handler is running on this thread, if any (H7 self-removal check).
    static CURRENT_HANDLER: Cell<Option<u64>> = const { Cell::new(None) };
}

/// The listener id whose handler call is running on this thread.
pub(crate) fn current_handler() -> Option<u64> {
    CURRENT_HANDLER.with(Cell::get)
}

/// Options for one registration: name, resync period and backlog limits.
///
/// ```
/// # use informer_runtime::informer::{HandlerOptions, OverflowPolicy};
/// # use std::time::Duration;
/// let opts = HandlerOptions::new()
///     .name("pod-controller")
///     .resync(Duration::from_secs(30))
///     .backlog_max(10_000)
///     .overflow(OverflowPolicy::CoalesceByKey);
/// ```
#[derive(Debug, Clone, Default)]
pub struct HandlerOptions {
    pub(crate) name: Option<String>,
    pub(crate) resync: Option<Duration>,
    pub(crate) backlog_max: Option<usize>,
    pub(crate) overflow: Option<OverflowPolicy>,
}

impl HandlerOptions {
    /// Default options: a generated name, the informer's default resync and backlog settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// The name used in logs and metric labels.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The resync period (0 = none); defaults to the informer's (Y3).
    pub fn resync(mut self, period: Duration) -> Self {
        self.resync = Some(period);
        self
    }

    /// The backlog size at which the overflow policy applies (H10).
    pub fn backlog_max(mut self, max: usize) -> Self {
        self.backlog_max = Some(max);
        self
    }

    /// The overflow policy (H10); defaults to the informer's.
    pub fn overflow(mut self, policy: OverflowPolicy) -> Self {
        self.overflow = Some(policy);
        self
    }
}

/// The queue half of a listener.
struct Queue<K> {
    pending: PendingQueue<K>,
    closed: bool,
}

/// One registered handler or event stream.
pub(crate) struct Listener<K> {
    pub(crate) id: u64,
    pub(crate) name: Arc<str>,
    queue: Mutex<Queue<K>>,
    policy: OverflowPolicy,
    /// Wakes the single consumer (task or stream); permit semantics, so no wake-up is lost.
    wake: Notify,
    /// Wakes the processing loop waiting for space under [`OverflowPolicy::Block`].
    space: Notify,
    /// Initial adds queued but not yet returned from (H6).
    pending_initial: AtomicUsize,
    initial_done: Notify,
    pub(crate) resync: Mutex<HandlerResync>,
    /// Whether a task was spawned for this listener (stream listeners have none).
    pub(crate) spawned: AtomicBool,
    /// True once the consumer will never call the handler again (H7).
    finished: watch::Sender<bool>,
    pub(crate) metrics: HandlerMetrics,
    last_slow_warning: Mutex<Option<Instant>>,
}

impl<K> Listener<K> {
    /// A new, open listener.
    pub(crate) fn new(
        id: u64,
        name: Arc<str>,
        backlog_max: usize,
        policy: OverflowPolicy,
        resync: HandlerResync,
        metrics: HandlerMetrics,
    ) -> Self {
        Listener {
            id,
            name,
            queue: Mutex::new(Queue {
                pending: PendingQueue::new(backlog_max, policy),
                closed: false,
            }),
            policy,
            wake: Notify::new(),
            space: Notify::new(),
            pending_initial: AtomicUsize::new(0),
            initial_done: Notify::new(),
            resync: Mutex::new(resync),
            spawned: AtomicBool::new(false),
            finished: watch::Sender::new(false),
            metrics,
            last_slow_warning: Mutex::new(None),
        }
    }

    /// Queues an event whatever the backlog holds (never blocks; H9): the fan-out's way for
    /// what a policy allows, and a late handler's snapshot (H5). Ignored once closed.
    pub(crate) fn push(&self, key: ObjectKey, event: InformerEvent<K>) {
        let _always = self.push_if(key, event, false);
    }

    /// Queues an event unless this is an [`OverflowPolicy::Block`] backlog at its maximum:
    /// then the event comes back, for the fan-out to hold until there is room (H10).
    pub(crate) fn try_push(
        &self,
        key: ObjectKey,
        event: InformerEvent<K>,
    ) -> Result<(), (ObjectKey, InformerEvent<K>)> {
        self.push_if(key, event, self.policy == OverflowPolicy::Block)
    }

    fn push_if(
        &self,
        key: ObjectKey,
        event: InformerEvent<K>,
        refuse_at_max: bool,
    ) -> Result<(), (ObjectKey, InformerEvent<K>)> {
        let initial = event.is_initial();
        let outcome = {
            let mut queue = self.queue.lock();
            if queue.closed {
                return Ok(());
            }
            if refuse_at_max && queue.pending.len() >= queue.pending.max() {
                return Err((key, event));
            }
            if initial {
                self.pending_initial.fetch_add(1, Ordering::AcqRel);
            }
            let outcome = queue.pending.push(key, event);
            self.metrics
                .pending
                .set(i64::try_from(queue.pending.len()).unwrap_or(i64::MAX));
            outcome
        };
        if outcome.coalesced {
            self.metrics.coalesced.inc();
        }
        if outcome.dropped_initial > 0 {
            self.finish_initial(outcome.dropped_initial);
        }
        self.wake.notify_one();
        Ok(())
    }

    /// The next event and its key, or `None` once closed. Single consumer.
    pub(crate) async fn next(&self) -> Option<(ObjectKey, InformerEvent<K>)> {
        loop {
            {
                let mut queue = self.queue.lock();
                if queue.closed {
                    return None;
                }
                if let Some(entry) = queue.pending.pop() {
                    let len = queue.pending.len();
                    self.metrics
                        .pending
                        .set(i64::try_from(len).unwrap_or(i64::MAX));
                    if self.policy == OverflowPolicy::Block && len < queue.pending.max() {
                        self.space.notify_waiters();
                    }
                    return Some(entry);
                }
            }
            self.wake.notified().await;
        }
    }

    /// The overflow policy of this listener (H10).
    pub(crate) fn policy(&self) -> OverflowPolicy {
        self.policy
    }

    /// The number of pending notifications (H10 gauge).
    pub(crate) fn pending(&self) -> usize {
        self.queue.lock().pending.len()
    }

    /// Marks `n` initial adds as delivered (or dropped) and wakes sync waiters at zero (H6).
    pub(crate) fn finish_initial(&self, n: usize) {
        // Saturating: `close` may have reset the counter while a call was in flight.
        let before = self
            .pending_initial
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
                Some(v.saturating_sub(n))
            })
            .unwrap_or(0);
        if before > 0 && before <= n {
            self.initial_done.notify_waiters();
        }
    }

    /// Waits on `initial_done` until `ready` holds; `close` wakes those waiters too, so this
    /// serves both [`InitialAdds`] waits (H6, notification-based).
    async fn wait_initial_done(&self, ready: impl Fn(&Self) -> bool) {
        loop {
            let mut notified = pin!(self.initial_done.notified());
            notified.as_mut().enable();
            if ready(self) {
                return;
            }
            notified.await;
        }
    }

    /// Waits while a [`OverflowPolicy::Block`] backlog is at its maximum (H10).
    pub(crate) async fn wait_for_space(&self) {
        if self.policy != OverflowPolicy::Block {
            return;
        }
        loop {
            let mut notified = pin!(self.space.notified());
            notified.as_mut().enable();
            {
                let queue = self.queue.lock();
                if queue.closed || queue.pending.len() < queue.pending.max() {
                    return;
                }
            }
            notified.await;
        }
    }

    /// Stops delivery: drops everything pending and wakes the consumer so it exits (H7).
    pub(crate) fn close(&self) {
        {
            let mut queue = self.queue.lock();
            queue.closed = true;
            queue.pending.clear();
            self.pending_initial.store(0, Ordering::Release);
            self.metrics.pending.set(0);
        }
        self.initial_done.notify_waiters();
        self.wake.notify_one();
        self.space.notify_waiters();
        if !self.spawned.load(Ordering::Acquire) {
            self.finished.send_replace(true);
        }
    }

    /// Whether the listener was closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.queue.lock().closed
    }

    /// Waits until the consumer has stopped calling the handler (H7).
    pub(crate) async fn wait_finished(&self) {
        let mut rx = self.finished.subscribe();
        // The sender lives in `self`, so `wait_for` cannot fail while we borrow it.
        let _ = rx.wait_for(|finished| *finished).await;
    }

    /// Logs a slow call when the backlog is large (H10), at most once per interval.
    fn note_call_duration(&self, elapsed: Duration) {
        if elapsed <= SLOW_CALL {
            return;
        }
        let pending = self.pending();
        if pending <= SLOW_CALL_PENDING {
            return;
        }
        let mut last = self.last_slow_warning.lock();
        if last.is_some_and(|at| at.elapsed() < SLOW_WARN_INTERVAL) {
            return;
        }
        *last = Some(Instant::now());
        tracing::warn!(
            handler = %self.name,
            pending,
            elapsed_ms = elapsed.as_millis() as u64,
            "slow event handler is falling behind (H10)"
        );
    }
}

/// Starts a handler's own thread: delivers notifications one at a time, in order (H8), catching
/// panics (H11), until the listener is closed.
///
/// Each handler gets a dedicated OS thread (H9, H17), not a tokio blocking-pool
/// thread: handler calls are synchronous and may block, and a blocked tokio worker could strand
/// other tasks queued on it (tokio's LIFO slot is not stealable), including other handlers and
/// the processing loop (M2). A blocking-pool thread held for the handler's life would count
/// against the pool's limit (512 by default), so enough handlers would starve every later
/// handler and every `spawn_blocking` of the process (kube's DNS resolver among them), and a
/// runtime waits for its blocking threads when it shuts down. A dedicated thread is idle in a
/// park while its backlog is empty, enters the runtime's context (so a handler may call
/// `Handle::current()`), and ends as soon as the listener is closed (removal, stop, or the
/// informer's run future dropped). If the OS refuses a thread, the handler falls back to the
/// blocking pool with an error logged.
pub(crate) fn run_listener<K: Send + Sync + 'static>(
    runtime: &tokio::runtime::Handle,
    listener: Arc<Listener<K>>,
    handler: Arc<dyn ResourceEventHandler<K>>,
    span: tracing::Span,
) {
    let body = {
        let (rt, listener, handler, span) = (
            runtime.clone(),
            Arc::clone(&listener),
            Arc::clone(&handler),
            span.clone(),
        );
        move || span.in_scope(|| listener_loop(&rt, &listener, handler.as_ref()))
    };
    let spawned = std::thread::Builder::new()
        .name(format!("informer-handler-{}", listener.id))
        .spawn(body);
    if let Err(err) = spawned {
        tracing::error!(
            handler = %listener.name,
            error = %err,
            "cannot start a thread for the event handler; running it on the blocking pool"
        );
        let rt = runtime.clone();
        drop(runtime.spawn_blocking(move || {
            span.in_scope(|| listener_loop(&rt, &listener, handler.as_ref()))
        }));
    }
}

/// The loop of a handler's thread.
fn listener_loop<K: 'static>(
    rt: &tokio::runtime::Handle,
    listener: &Listener<K>,
    handler: &dyn ResourceEventHandler<K>,
) {
    let _context = rt.enter();
    while let Some((key, event)) = rt.block_on(listener.next()) {
        deliver(listener, handler, &key, &event);
    }
    listener.finished.send_replace(true);
}

/// Calls the handler for one event with panic isolation (H11) and H6/H10 bookkeeping.
pub(crate) fn deliver<K: 'static>(
    listener: &Listener<K>,
    handler: &dyn ResourceEventHandler<K>,
    key: &ObjectKey,
    event: &InformerEvent<K>,
) {
    let started = Instant::now();
    CURRENT_HANDLER.with(|c| c.set(Some(listener.id)));
    let result = catch_unwind(AssertUnwindSafe(|| match event {
        InformerEvent::Added {
            obj,
            is_in_initial_list,
        } => handler.on_add(obj, *is_in_initial_list),
        InformerEvent::Updated { old, new } => handler.on_update(old, new),
        InformerEvent::Deleted(obj) => handler.on_delete(obj),
    }));
    CURRENT_HANDLER.with(|c| c.set(None));
    if let Err(panic) = result {
        let message = panic_message(panic.as_ref());
        listener.metrics.panics.inc();
        tracing::error!(
            handler = %listener.name,
            %key,
            panic = %message,
            "event handler panicked; continuing with the next notification (H11)"
        );
    }
    // A panicking initial add still counts as delivered (H11, H6).
    if event.is_initial() {
        listener.finish_initial(1);
    }
    listener.note_call_duration(started.elapsed());
}

/// The text of a caught panic's payload.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_string())
}

/// The handle returned when a handler is registered: identity, per-handler sync (H6) and
/// backlog observability (H10).
///
/// Cloning is cheap and every clone refers to the same registration. Pass it to
/// [`SharedIndexInformer::remove_event_handler`](super::SharedIndexInformer::remove_event_handler)
/// to stop delivery (H7).
pub struct HandlerRegistration<K> {
    pub(crate) listener: Arc<Listener<K>>,
    pub(crate) gate: Arc<SyncGate>,
    /// The informer's name, for [`synced_checker`](Self::synced_checker) (V5).
    pub(crate) informer: Arc<str>,
}

impl<K> Clone for HandlerRegistration<K> {
    fn clone(&self) -> Self {
        HandlerRegistration {
            listener: Arc::clone(&self.listener),
            gate: Arc::clone(&self.gate),
            informer: Arc::clone(&self.informer),
        }
    }
}

impl<K> std::fmt::Debug for HandlerRegistration<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerRegistration")
            .field("name", &self.listener.name)
            .field("id", &self.listener.id)
            .finish_non_exhaustive()
    }
}

impl<K> HandlerRegistration<K> {
    /// The handler's name (from [`HandlerOptions::name`] or generated).
    pub fn name(&self) -> &str {
        &self.listener.name
    }

    /// True once the informer has synced **and** this handler has returned from every initial
    /// add, including the synthetic adds of a late handler (H6, M10).
    pub fn has_synced(&self) -> bool {
        self.gate.handler_synced(&*self.listener)
    }

    /// Waits until [`has_synced`](Self::has_synced); notification-based, no polling (H6).
    ///
    /// Returns true once synced, or false if the informer stopped (or this registration was
    /// removed) before the informer synced, like client-go's `WaitForCacheSync` on stop; it
    /// never waits for an informer that will not sync any more (H16). An
    /// [`EventStream`](super::EventStream) waits through its
    /// [`registration`](super::EventStream::registration).
    pub async fn wait_for_sync(&self) -> bool {
        self.gate.wait_handler(&*self.listener).await
    }

    /// Notifications waiting in this handler's backlog (H10).
    pub fn pending(&self) -> usize {
        self.listener.pending()
    }

    /// Handler calls that panicked so far (H11).
    pub fn panics(&self) -> u64 {
        self.listener.metrics.panics.get()
    }

    /// Notifications merged because the backlog was at its maximum (H10).
    pub fn coalesced(&self) -> u64 {
        self.listener.metrics.coalesced.get()
    }

    /// The resync period in force for this handler (Y3; 0 = none).
    pub fn resync_period(&self) -> Duration {
        self.listener.resync.lock().period()
    }

    /// Whether the registration was removed or the informer stopped (H7).
    pub fn is_removed(&self) -> bool {
        self.listener.is_closed()
    }

    /// Whether the handler's thread has ended (H7, V5): after removal or stop, once the call in
    /// flight returned. Its backlog was dropped at removal.
    pub fn is_finished(&self) -> bool {
        *self.listener.finished.borrow()
    }

    /// A named check of [`has_synced`](Self::has_synced) that can be awaited together with others
    /// through [`wait_for`](super::wait_for) (V5; client-go's `HasSyncedChecker`). Its name is
    /// `informer/handler`.
    pub fn synced_checker(&self) -> super::SyncedChecker
    where
        K: Send + Sync + 'static,
    {
        let name: Arc<str> = Arc::from(format!("{}/{}", self.informer, self.listener.name));
        super::SyncedChecker::new(name, Arc::new(self.clone()))
    }
}

impl<K: Send + Sync + 'static> super::sync::SyncSource for HandlerRegistration<K> {
    fn is_synced(&self) -> bool {
        self.has_synced()
    }

    fn wait(&self) -> futures::future::BoxFuture<'static, bool> {
        let this = self.clone();
        Box::pin(async move { this.wait_for_sync().await })
    }
}

impl<K> InitialAdds for Listener<K> {
    fn initial_delivered(&self) -> bool {
        self.pending_initial.load(Ordering::Acquire) == 0
    }

    async fn wait_closed(&self) {
        self.wait_initial_done(Listener::is_closed).await;
    }

    async fn wait_initial_delivered(&self) {
        self.wait_initial_done(|l| l.initial_delivered()).await;
    }
}
