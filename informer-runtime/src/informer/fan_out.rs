//! The fan-out: every registration, and the one place that hands notifications to each handler's own queue and applies its overflow policy (H5, H7, H9, H10, Y3, Y4).

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};
use tokio::runtime::Handle;

use super::event::{InformerEvent, Notification};
use super::handler::ResourceEventHandler;
use super::listener::{
    HandlerOptions, HandlerRegistration, Listener, current_handler, run_listener,
};
use super::metrics::InformerMetrics;
use super::pending::OverflowPolicy;
use super::resync::{HandlerResync, ResyncClock};
use super::sync::SyncGate;
use super::{Error, Result};
use crate::key::ObjectKey;

/// Informer-wide defaults for new listeners.
#[derive(Debug, Clone)]
pub(crate) struct ListenerDefaults {
    pub(crate) resync: Duration,
    pub(crate) backlog_max: usize,
    pub(crate) overflow: OverflowPolicy,
}

/// Everything guarded by the lock that serialises delta processing with registration (H5).
pub(crate) struct FanOutState<K> {
    listeners: Vec<Arc<Listener<K>>>,
    /// Handlers registered before start, spawned by [`FanOut::start`].
    unspawned: Vec<(u64, Arc<dyn ResourceEventHandler<K>>)>,
    clock: ResyncClock,
    runtime: Option<Handle>,
    stopped: bool,
}

impl<K> FanOutState<K> {
    /// Hands each notification, in order, to every handler's queue; a resync only to handlers
    /// the last tick marked as due (H4, Y4). Never blocks (H9, D9): what a
    /// [`OverflowPolicy::Block`] handler at its maximum cannot take is returned as [`Held`], in
    /// order, for [`Held::deliver`] once this lock is released. A handler that holds something
    /// gets every later notification of the call held as well, so its order stays (H8).
    pub(crate) fn distribute(
        &self,
        notifications: impl Iterator<Item = Notification<K>>,
    ) -> Held<K> {
        let mut held = Held { queues: Vec::new() };
        for Notification {
            key,
            event,
            is_resync,
        } in notifications
        {
            let mut targets = self
                .listeners
                .iter()
                .filter(|l| !is_resync || l.resync.lock().is_due());
            let Some(mut current) = targets.next() else {
                continue;
            };
            for next in targets {
                held.push(current, key.clone(), event.clone());
                current = next;
            }
            held.push(current, key, event);
        }
        held
    }

    /// The registered listeners (tests drive their resync state directly).
    #[cfg(test)]
    pub(crate) fn listeners_for_test(&self) -> Vec<Arc<Listener<K>>> {
        self.listeners.clone()
    }
}

/// What [`FanOutState::distribute`] could not queue yet: per [`OverflowPolicy::Block`] handler
/// at its maximum, the rest of its notifications in order. Allocates nothing when empty, which
/// it is unless a `Block` handler is full.
#[must_use = "held notifications must be delivered"]
pub(crate) struct Held<K> {
    queues: Vec<(Arc<Listener<K>>, HeldEvents<K>)>,
}

/// One handler's held events with their keys, oldest first.
type HeldEvents<K> = VecDeque<(ObjectKey, InformerEvent<K>)>;

impl<K> Held<K> {
    /// Nothing held.
    pub(crate) fn none() -> Self {
        Held { queues: Vec::new() }
    }

    /// Queues one event for `listener`, or holds it behind what is already held for it.
    fn push(&mut self, listener: &Arc<Listener<K>>, key: ObjectKey, event: InformerEvent<K>) {
        if !self.queues.is_empty()
            && let Some((_, rest)) = self
                .queues
                .iter_mut()
                .find(|(l, _)| Arc::ptr_eq(l, listener))
        {
            rest.push_back((key, event));
            return;
        }
        if let Err(refused) = listener.try_push(key, event) {
            self.queues
                .push((Arc::clone(listener), VecDeque::from([refused])));
        }
    }

    /// Hands each held notification to its handler's queue as the handler makes room (H10),
    /// without the fan-out's lock, so registrations go on meanwhile; a handler added meanwhile
    /// got these objects in its snapshot (H5). Ends early for a handler that is removed.
    pub(crate) async fn deliver(self) {
        if self.queues.is_empty() {
            return;
        }
        let each = self.queues.into_iter().map(|(listener, rest)| async move {
            for (key, event) in rest {
                listener.wait_for_space().await;
                listener.push(key, event);
            }
        });
        futures::future::join_all(each).await;
    }
}

/// The fan-out of one informer: its handler registrations and how notifications reach them
/// (client-go's `sharedProcessor`).
///
/// It owns the per-handler overflow policy (H10). Under
/// [`OverflowPolicy::CoalesceByKey`] (the default) a handler's own queue merges by key at its
/// maximum, so the processing loop never waits. Under [`OverflowPolicy::Block`] the loop
/// waits instead, in two places the fan-out decides:
///
/// - before each pop ([`wait_for_room`](Self::wait_for_room)), until every `Block` handler is
///   below its maximum, and it then pops one key at a time ([`pop_limit`](Self::pop_limit)).
///   A blocked handler's queue never coalesces, so what it cannot take yet has to stay in the
///   FIFO, the one queue that merges a key's deltas and whose queued entries are bounded by
///   the key count (D9); a batch of many keys would move them out of it. This is why the batch size
///   depends on the handlers' policies.
/// - after the store was updated ([`Held`]), for whatever does not fit: one key with several
///   deltas, or a relist. A relist is popped whole and swapped into the store at once (V2)
///   whatever the handlers' policies, so its atomicity does not depend on handler speed; its
///   notifications then wait in the fan-out, not in the handler's queue, which stays within its
///   maximum.
pub(crate) struct FanOut<K> {
    informer: Arc<str>,
    defaults: ListenerDefaults,
    state: Mutex<FanOutState<K>>,
    /// Registered [`OverflowPolicy::Block`] listeners, so the loop checks for them without the
    /// lock on every pop.
    blocking: AtomicUsize,
    gate: Arc<SyncGate>,
    next_id: AtomicU64,
    metrics: InformerMetrics,
}

impl<K: Send + Sync + 'static> FanOut<K> {
    /// A fan-out with no listeners.
    pub(crate) fn new(
        informer: Arc<str>,
        defaults: ListenerDefaults,
        metrics: InformerMetrics,
    ) -> Self {
        let clock = ResyncClock::new(defaults.resync);
        FanOut {
            informer,
            defaults,
            blocking: AtomicUsize::new(0),
            state: Mutex::new(FanOutState {
                listeners: Vec::new(),
                unspawned: Vec::new(),
                clock,
                runtime: None,
                stopped: false,
            }),
            gate: Arc::new(SyncGate::default()),
            next_id: AtomicU64::new(1),
            metrics,
        }
    }

    /// Takes the lock that serialises delta processing with registration (H5).
    pub(crate) fn lock(&self) -> MutexGuard<'_, FanOutState<K>> {
        self.state.lock()
    }

    /// The resync check period the reflector should tick at (Y3).
    pub(crate) fn check_period(&self) -> Duration {
        self.state.lock().clock.check_period()
    }

    /// Registers a handler (`Some`) or a stream consumer (`None`).
    ///
    /// `snapshot` is called under the processing lock when the informer is running, and its
    /// objects are queued as synthetic `on_add(obj, true)` before any later live event (H5).
    pub(crate) fn add(
        &self,
        handler: Option<Arc<dyn ResourceEventHandler<K>>>,
        options: HandlerOptions,
        snapshot: impl FnOnce() -> Vec<(ObjectKey, Arc<K>)>,
    ) -> Result<HandlerRegistration<K>> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let name: Arc<str> = Arc::from(options.name.unwrap_or_else(|| format!("handler-{id}")));
        let mut state = self.state.lock();
        if state.stopped {
            return Err(Error::Stopped);
        }
        let now = Instant::now();
        let admitted = state
            .clock
            .admit(options.resync.unwrap_or(self.defaults.resync), &name);
        let check_period = state.clock.check_period();
        if admitted.check_period_changed {
            for l in &state.listeners {
                l.resync.lock().check_period_changed(check_period, now);
            }
        }
        let listener = Arc::new(Listener::new(
            id,
            Arc::clone(&name),
            options.backlog_max.unwrap_or(self.defaults.backlog_max),
            options.overflow.unwrap_or(self.defaults.overflow),
            HandlerResync::new(admitted.requested, check_period, now),
            self.metrics.handler(&self.informer, &name),
        ));
        if state.runtime.is_some() {
            for (key, obj) in snapshot() {
                let is_in_initial_list = true;
                listener.push(
                    key,
                    InformerEvent::Added {
                        obj,
                        is_in_initial_list,
                    },
                );
            }
        }
        if let Some(handler) = handler {
            match &state.runtime {
                Some(runtime) => self.spawn(runtime, &listener, handler),
                None => state.unspawned.push((id, handler)),
            }
        }
        if listener.policy() == OverflowPolicy::Block {
            self.blocking.fetch_add(1, Ordering::Release);
        }
        state.listeners.push(Arc::clone(&listener));
        drop(state);
        tracing::debug!(informer = %self.informer, handler = %name, "event handler registered");
        Ok(HandlerRegistration {
            listener,
            gate: Arc::clone(&self.gate),
            informer: Arc::clone(&self.informer),
        })
    }

    /// Marks the fan-out as running: freezes the check period (Y3) and spawns the task of every
    /// handler registered so far (H9).
    pub(crate) fn start(&self, runtime: Handle) {
        let mut state = self.state.lock();
        state.clock.start();
        for (id, handler) in std::mem::take(&mut state.unspawned) {
            if let Some(l) = state.listeners.iter().find(|l| l.id == id) {
                self.spawn(&runtime, l, handler);
            }
        }
        state.runtime = Some(runtime);
    }

    fn spawn(
        &self,
        runtime: &Handle,
        listener: &Arc<Listener<K>>,
        handler: Arc<dyn ResourceEventHandler<K>>,
    ) {
        listener.spawned.store(true, Ordering::Release);
        // V4: every log line of the handler's thread names the informer and the handler.
        let span = tracing::info_span!("informer_handler", informer = %self.informer, handler = %listener.name);
        run_listener(runtime, Arc::clone(listener), handler, span);
    }

    /// Y4: marks every handler whose resync time has passed; true if any was marked. The
    /// reflector calls this on each tick and resyncs the store only when it returns true.
    pub(crate) fn should_resync(&self) -> bool {
        let state = self.state.lock();
        let now = Instant::now();
        let mut any = false;
        for l in &state.listeners {
            any |= l.resync.lock().tick(now);
        }
        any
    }

    /// H7: waits until the registration's task has ended; an error when called from inside
    /// that handler, where waiting would deadlock.
    pub(crate) async fn remove_and_wait(
        &self,
        registration: &HandlerRegistration<K>,
    ) -> Result<()> {
        if current_handler() == Some(registration.listener.id) {
            return Err(Error::RemoveFromOwnHandler);
        }
        self.remove(registration);
        registration.listener.wait_finished().await;
        Ok(())
    }

    /// How many keys the processing loop may pop at once (V3): `batch_max`, or one while an
    /// [`OverflowPolicy::Block`] handler is registered (see [`FanOut`] for why). A relist is
    /// popped whole either way (V2).
    pub(crate) fn pop_limit(&self, batch_max: usize) -> usize {
        if self.blocking.load(Ordering::Acquire) == 0 {
            batch_max
        } else {
            1
        }
    }

    /// Waits until every [`OverflowPolicy::Block`] handler has room (H10).
    pub(crate) async fn wait_for_room(&self) {
        // Usually no handler uses `Block`: then this costs no lock and no allocation.
        if self.blocking.load(Ordering::Acquire) == 0 {
            return;
        }
        let blocking: Vec<_> = {
            let state = self.state.lock();
            state
                .listeners
                .iter()
                .filter(|l| l.policy() == OverflowPolicy::Block)
                .cloned()
                .collect()
        };
        for l in blocking {
            l.wait_for_space().await;
        }
    }

    /// Stops every listener and returns them, so the caller can await the end of their
    /// threads ([`Listener::wait_finished`]; H14, no thread left behind). Idempotent: a second
    /// call returns nothing.
    pub(crate) fn stop(&self) -> Vec<Arc<Listener<K>>> {
        let listeners = {
            let mut state = self.state.lock();
            state.stopped = true;
            state.unspawned.clear();
            self.blocking.store(0, Ordering::Release);
            std::mem::take(&mut state.listeners)
        };
        for l in &listeners {
            l.close();
        }
        // H16: whoever waits for a sync that can no longer come gets an answer.
        self.gate.close();
        listeners
    }
}

impl<K> FanOut<K> {
    /// The synced gate (D7, H6) shared with every registration.
    pub(crate) fn gate(&self) -> &Arc<SyncGate> {
        &self.gate
    }

    /// Stops delivery to one registration and returns at once (H7).
    pub(crate) fn remove(&self, registration: &HandlerRegistration<K>) {
        let listener = &registration.listener;
        {
            let mut state = self.state.lock();
            let before = state.listeners.len();
            state.listeners.retain(|l| l.id != listener.id);
            state.unspawned.retain(|(id, _)| *id != listener.id);
            if state.listeners.len() < before && listener.policy() == OverflowPolicy::Block {
                self.blocking.fetch_sub(1, Ordering::Release);
            }
        }
        listener.close();
        self.metrics.forget(&listener.metrics);
    }
}

impl<K> Drop for FanOut<K> {
    /// Closes every listener, so handler threads end even when the informer is dropped
    /// without being stopped (a runtime shutting down waits for blocking-pool threads).
    fn drop(&mut self) {
        for l in self.state.get_mut().listeners.drain(..) {
            l.close();
        }
    }
}

#[cfg(test)]
mod tests;
