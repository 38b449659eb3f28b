//! Where "synced" is decided (D7, H6) and the named, awaitable sync checks over it (V5; client-go
//! 1.36 `DoneChecker`, `HasSyncedChecker` and `cache.WaitFor`): a caller waiting for several
//! informers and handlers learns *which* of them have not synced when its deadline passes, and
//! never waits for one that stopped.

use std::fmt;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use futures::stream::{FuturesUnordered, StreamExt};
use tokio::sync::Notify;

use crate::delta_fifo::DeltaFifo;

/// The one place that decides "synced", for the informer and for each handler registration.
///
/// - The informer has synced once its FIFO has (D7: every item of the first list popped *and*
///   applied and handed to every handler's queue), as [`follow_fifo`](Self::follow_fifo) saw
///   it. The flag only ever goes from false to true; the processing loop asks after every batch,
///   and a watcher task for a first list with nothing to pop.
/// - A handler registration has synced once the informer has **and** its handler has returned
///   from every initial add queued for it, a late handler's snapshot included (H6, M10).
///
/// Waiting is notification-based. The gate is closed when the informer stops, so nobody waits
/// for a sync that can no longer come (H16).
#[derive(Debug, Default)]
pub(crate) struct SyncGate {
    synced: AtomicBool,
    closed: AtomicBool,
    notify: Notify,
}

impl SyncGate {
    /// Whether the informer has synced (D7).
    pub(crate) fn informer_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// Adopts the FIFO's D7 state: marks the informer synced, and wakes every waiter, once the
    /// FIFO has synced. Cheap once synced (no FIFO lock).
    pub(crate) fn follow_fifo<K: crate::object::Meta>(&self, fifo: &DeltaFifo<K>) {
        if !self.informer_synced() && fifo.has_synced() {
            self.set();
        }
    }

    fn set(&self) {
        self.synced.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Marks the informer synced without a FIFO (unit tests of the fan-out).
    #[cfg(test)]
    pub(crate) fn set_for_test(&self) {
        self.set();
    }

    /// Marks the informer as stopped and wakes every waiter; a gate that never synced stays
    /// unsynced.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Waits until the informer has synced (true) or the gate was closed first (false); true if
    /// both.
    pub(crate) async fn wait_informer(&self) -> bool {
        loop {
            let mut notified = pin!(self.notify.notified());
            notified.as_mut().enable();
            if self.informer_synced() {
                return true;
            }
            if self.closed.load(Ordering::Acquire) {
                return false;
            }
            notified.await;
        }
    }

    /// Whether a registration has synced (H6): the informer has, and its handler returned from
    /// every initial add.
    pub(crate) fn handler_synced(&self, listener: &impl InitialAdds) -> bool {
        self.informer_synced() && listener.initial_delivered()
    }

    /// Waits until [`handler_synced`](Self::handler_synced); false if the informer stopped, or
    /// the registration was removed, before the informer synced.
    pub(crate) async fn wait_handler(&self, listener: &impl InitialAdds) -> bool {
        let synced = tokio::select! {
            synced = self.wait_informer() => synced,
            () = listener.wait_closed() => self.informer_synced(),
        };
        if !synced {
            return false;
        }
        // Closing the listener counts its initial adds as delivered, so this ends on removal too.
        listener.wait_initial_delivered().await;
        self.handler_synced(listener)
    }
}

/// What [`SyncGate`] reads of one handler registration (its listener): whether the handler has
/// returned from every initial add queued for it, and when it is closed. A trait so that the
/// gate does not depend on the listener that depends on it.
pub(crate) trait InitialAdds {
    /// Whether every queued initial add has been returned from (H6).
    fn initial_delivered(&self) -> bool;
    /// Waits until the registration is closed (removed, or the informer stopped).
    fn wait_closed(&self) -> impl std::future::Future<Output = ()>;
    /// Waits until [`initial_delivered`](Self::initial_delivered).
    fn wait_initial_delivered(&self) -> impl std::future::Future<Output = ()>;
}

/// The source behind a [`SyncedChecker`].
pub(crate) trait SyncSource: Send + Sync {
    /// Whether it has synced.
    fn is_synced(&self) -> bool;
    /// Resolves to true once synced, or to false once it can never sync (its informer stopped
    /// or its registration was removed first).
    fn wait(&self) -> BoxFuture<'static, bool>;
}

/// Something that becomes synced (an informer's store, or one handler's initial adds), with a
/// name that says what it is (V5).
///
/// Get one from [`SharedIndexInformer::synced_checker`](super::SharedIndexInformer::synced_checker)
/// or [`HandlerRegistration::synced_checker`](super::HandlerRegistration::synced_checker), and
/// wait for several at once with [`wait_for`]. Cloning is cheap.
#[derive(Clone)]
pub struct SyncedChecker {
    name: Arc<str>,
    source: Arc<dyn SyncSource>,
}

impl fmt::Debug for SyncedChecker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncedChecker")
            .field("name", &self.name)
            .field("synced", &self.is_synced())
            .finish()
    }
}

impl SyncedChecker {
    pub(crate) fn new(name: Arc<str>, source: Arc<dyn SyncSource>) -> Self {
        SyncedChecker { name, source }
    }

    /// What this checker waits for: the informer's name, or `informer/handler` for a handler.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether it has synced.
    pub fn is_synced(&self) -> bool {
        self.source.is_synced()
    }

    /// Waits until synced (true), or until it can never sync (false: the informer stopped, or
    /// the handler was removed, first). Notification-based, no polling.
    pub fn wait(&self) -> impl Future<Output = bool> + Send + 'static {
        self.source.wait()
    }
}

/// Why [`wait_for`] returned before everything synced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {}", describe(.pending, .stopped))]
pub struct NotSynced {
    /// The `what` given to [`wait_for`].
    pub what: String,
    /// Checkers still waiting when the deadline passed, by name.
    pub pending: Vec<String>,
    /// Checkers that can never sync (their informer stopped or handler was removed), by name.
    pub stopped: Vec<String>,
}

fn describe(pending: &[String], stopped: &[String]) -> String {
    let mut parts = Vec::new();
    if !pending.is_empty() {
        parts.push(format!("not synced yet: {}", pending.join(", ")));
    }
    if !stopped.is_empty() {
        parts.push(format!("stopped before syncing: {}", stopped.join(", ")));
    }
    parts.join("; ")
}

/// Waits until every checker has synced, or until `deadline` resolves (a
/// `tokio::time::sleep`, a `CancellationToken::cancelled()`, …), whichever comes first; client-go's
/// `cache.WaitFor(ctx, what, checkers...)` (V5). It also returns as soon as one checker can
/// never sync, instead of waiting for the deadline. The error names every checker that had not
/// synced, so a caller can log which informer or handler held it up. `what` describes the wait
/// in logs and in the error.
///
/// ```no_run
/// # use std::time::Duration;
/// # use informer_runtime::informer::{SharedIndexInformer, wait_for};
/// # use k8s_openapi::api::core::v1::{ConfigMap, Pod};
/// # async fn demo(pods: SharedIndexInformer<Pod>, cms: SharedIndexInformer<ConfigMap>) {
/// let checkers = [pods.synced_checker(), cms.synced_checker()];
/// if let Err(err) = wait_for("controller caches", checkers, tokio::time::sleep(Duration::from_secs(30))).await {
///     eprintln!("{err}"); // "controller caches: not synced yet: pods"
/// }
/// # }
/// ```
pub async fn wait_for(
    what: &str,
    checkers: impl IntoIterator<Item = SyncedChecker>,
    deadline: impl Future<Output = ()>,
) -> Result<(), NotSynced> {
    let checkers: Vec<SyncedChecker> = checkers.into_iter().collect();
    let mut waits: FuturesUnordered<_> = checkers
        .iter()
        .filter(|c| !c.is_synced())
        .map(|c| c.wait())
        .collect();
    if !waits.is_empty() {
        tracing::debug!(
            what,
            waiting = waits.len(),
            "waiting for caches to sync (V5)"
        );
    }
    let mut deadline = std::pin::pin!(deadline);
    let ended_early = loop {
        tokio::select! {
            biased;
            next = waits.next() => match next {
                None => return Ok(()),
                Some(true) => {}
                Some(false) => break true,
            },
            () = &mut deadline => break false,
        }
    };
    // Stopped checkers are told apart by waiting on each once more: a stopped one resolves at
    // once (false); a pending one would not, so only synced state is read for the rest.
    let mut pending = Vec::new();
    let mut stopped = Vec::new();
    for c in checkers.iter().filter(|c| !c.is_synced()) {
        let resolved = futures::FutureExt::now_or_never(c.wait());
        match resolved {
            Some(false) => stopped.push(c.name().to_owned()),
            Some(true) => {}
            None => pending.push(c.name().to_owned()),
        }
    }
    if pending.is_empty() && stopped.is_empty() {
        return Ok(());
    }
    let err = NotSynced {
        what: what.to_owned(),
        pending,
        stopped,
    };
    if ended_early {
        tracing::info!(error = %err, "a cache stopped before syncing (V5)");
    } else {
        tracing::info!(error = %err, "caches did not sync before the deadline (V5)");
    }
    Err(err)
}
