//! The fan-out from delta processing to every handler's own queue and thread (H5, H7, H9, Y3, Y4).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Mutex, MutexGuard};
use tokio::runtime::Handle;

use super::backlog::{Entry, Notification, OverflowPolicy};
use super::handler::ResourceEventHandler;
use super::listener::{
    HandlerOptions, HandlerRegistration, Listener, SyncGate, current_handler, run_listener,
};
use super::metrics::InformerMetrics;
use super::resync::{HandlerResync, ResyncClock};
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
pub(crate) struct ProcessorState<K> {
    listeners: Vec<Arc<Listener<K>>>,
    /// Handlers registered before start, spawned by [`Processor::start`].
    unspawned: Vec<(u64, Arc<dyn ResourceEventHandler<K>>)>,
    clock: ResyncClock,
    runtime: Option<Handle>,
    stopped: bool,
}

impl<K> ProcessorState<K> {
    /// Queues a notification for every handler; a resync (`is_sync`) only for handlers the last
    /// tick marked as due (H4, Y4). Never blocks (H9, D9).
    pub(crate) fn distribute(&self, key: &ObjectKey, notification: Notification<K>, is_sync: bool) {
        let mut targets = self
            .listeners
            .iter()
            .filter(|l| !is_sync || l.resync.lock().is_due());
        let Some(mut current) = targets.next() else {
            return;
        };
        for next in targets {
            current.push(Entry {
                key: key.clone(),
                notification: notification.clone(),
            });
            current = next;
        }
        current.push(Entry {
            key: key.clone(),
            notification,
        });
    }

    /// The registered listeners (tests drive their resync state directly).
    #[cfg(test)]
    pub(crate) fn listeners_for_test(&self) -> Vec<Arc<Listener<K>>> {
        self.listeners.clone()
    }
}

/// Owns the listeners of one informer.
pub(crate) struct Processor<K> {
    informer: Arc<str>,
    defaults: ListenerDefaults,
    state: Mutex<ProcessorState<K>>,
    gate: Arc<SyncGate>,
    next_id: AtomicU64,
    metrics: InformerMetrics,
}

impl<K: Send + Sync + 'static> Processor<K> {
    /// A processor with no listeners.
    pub(crate) fn new(
        informer: Arc<str>,
        defaults: ListenerDefaults,
        metrics: InformerMetrics,
    ) -> Self {
        let clock = ResyncClock::new(defaults.resync);
        Processor {
            informer,
            defaults,
            state: Mutex::new(ProcessorState {
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
    pub(crate) fn lock(&self) -> MutexGuard<'_, ProcessorState<K>> {
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
                listener.push(Entry {
                    key,
                    notification: Notification::Add { obj, initial: true },
                });
            }
        }
        if let Some(handler) = handler {
            match &state.runtime {
                Some(runtime) => self.spawn(runtime, &listener, handler),
                None => state.unspawned.push((id, handler)),
            }
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

    /// Marks the processor as running: freezes the check period (Y3) and spawns the task of every
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

    /// Whether any handler uses [`OverflowPolicy::Block`] (H10): the processing loop then pops
    /// one key at a time, so each notification waits for room.
    pub(crate) fn has_blocking(&self) -> bool {
        self.state
            .lock()
            .listeners
            .iter()
            .any(|l| l.policy() == OverflowPolicy::Block)
    }

    /// Waits until every [`OverflowPolicy::Block`] handler has room (H10).
    pub(crate) async fn wait_for_space(&self) {
        // Usually no handler uses `Block`: then this costs one lock and no allocation.
        let blocking: Vec<_> = {
            let state = self.state.lock();
            if !state
                .listeners
                .iter()
                .any(|l| l.policy() == OverflowPolicy::Block)
            {
                return;
            }
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
            std::mem::take(&mut state.listeners)
        };
        for l in &listeners {
            l.close();
        }
        // Item 1: whoever waits for a sync that can no longer come gets an answer.
        self.gate.close();
        listeners
    }
}

impl<K> Processor<K> {
    /// The store-synced gate (D7) shared with every registration.
    pub(crate) fn gate(&self) -> &Arc<SyncGate> {
        &self.gate
    }

    /// Stops delivery to one registration and returns at once (H7).
    pub(crate) fn remove(&self, registration: &HandlerRegistration<K>) {
        let listener = &registration.listener;
        {
            let mut state = self.state.lock();
            state.listeners.retain(|l| l.id != listener.id);
            state.unspawned.retain(|(id, _)| *id != listener.id);
        }
        listener.close();
        self.metrics.forget(&listener.metrics);
    }
}

impl<K> Drop for Processor<K> {
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
