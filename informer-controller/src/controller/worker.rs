//! One worker of a controller run: takes keys, waits for the key's own writes (K3), holds keys
//! that wait out a rate-limited delay (C10), reconciles, and files the result (C3).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use informer_runtime::Object;
use informer_runtime::key::ObjectKey;
use informer_runtime::lister::Lister;
use informer_runtime::workqueue::RateLimitingQueue;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::action::{Action, Context, Request};
use super::metrics::Series;
use super::writes::WriteLog;
use crate::leader::Term;

/// One of a run's workers.
pub(super) struct Worker<K, D, F> {
    pub(super) name: Arc<str>,
    pub(super) queue: RateLimitingQueue<ObjectKey>,
    pub(super) lister: Lister<K>,
    pub(super) series: Series,
    pub(super) ctx: Arc<Context<D>>,
    pub(super) reconcile: Arc<F>,
    pub(super) stop: CancellationToken,
    /// The run's term: no reconcile starts once it is over (S11).
    pub(super) term: Term,
    /// The writes recorded by reconciles (K2); `None` with the guard off.
    pub(super) writes: Option<Arc<WriteLog>>,
    /// K3's bound.
    pub(super) read_your_writes: Duration,
    /// The keys waiting out a rate-limited delay (C10).
    pub(super) backoffs: Arc<Backoffs>,
}

impl<K, D, F, Fut, E> Worker<K, D, F>
where
    K: Object,
    D: Send + Sync + 'static,
    F: Fn(Request<K>, Arc<Context<D>>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<Action, E>> + Send + 'static,
    E: fmt::Display + Send + 'static,
{
    pub(super) async fn run(self) {
        loop {
            // Biased: once stopping, take no more keys (C7). `get` is cancel-safe.
            let guard = tokio::select! {
                biased;
                () = self.stop.cancelled() => break,
                guard = self.queue.get_guarded() => match guard {
                    Some(guard) => guard,
                    None => break,
                },
            };
            // S11: past the term's valid-until instant no reconcile starts, even before the
            // run has noticed (its timer and this worker may run on different threads).
            if !self.term.is_valid() {
                break;
            }
            let key = guard.item().clone();
            if self.backoffs.holds(&self.queue, &key) {
                // C10: an event re-added a key that waits out its backoff; the retry due at
                // the end of it reconciles the latest state, and no failure is counted here.
                continue;
            }
            self.reconcile_one(key).await;
            // Dropping the guard marks the key done: a key re-added meanwhile runs again (C2).
            drop(guard);
        }
    }

    /// K3: waits (bounded) until the informers hold the writes earlier reconciles of `key`
    /// recorded; past the bound it logs a warning and lets the reconcile run.
    async fn await_own_writes(&self, key: &ObjectKey) {
        let Some(writes) = &self.writes else { return };
        let outstanding = writes.outstanding(key);
        if outstanding.is_empty() {
            return;
        }
        self.series.stale_sync_skips.inc();
        let (versions, waits): (Vec<_>, Vec<_>) = outstanding
            .into_iter()
            .map(|(rv, informer, wait)| ((rv, informer), wait))
            .unzip();
        tracing::debug!(controller = %self.name, %key, ?versions, "waiting for the caches to hold this key's writes");
        let caught_up = tokio::select! {
            biased;
            () = self.stop.cancelled() => return,
            done = tokio::time::timeout(self.read_your_writes, futures::future::join_all(waits)) => done.is_ok(),
        };
        if !caught_up {
            tracing::warn!(
                controller = %self.name,
                %key,
                ?versions,
                timeout = ?self.read_your_writes,
                "the caches did not catch up with this key's writes in time; reconciling on older state"
            );
        }
    }

    async fn reconcile_one(&self, key: ObjectKey) {
        self.await_own_writes(&key).await;
        let object = self.lister.get_by_key(key.as_str()).ok();
        let request = Request {
            key: key.clone(),
            object,
        };
        self.series.active_workers.inc();
        let started = Instant::now();
        let outcome = AssertUnwindSafe((self.reconcile)(request, Arc::clone(&self.ctx)))
            .catch_unwind()
            .await;
        self.series.active_workers.dec();
        self.series.time.observe(started.elapsed().as_secs_f64());
        match outcome {
            Ok(Ok(action)) => {
                self.series.count(action.result_label());
                match action {
                    Action::Done => self.queue.forget(&key),
                    Action::Requeue => self.backoffs.retry(&self.queue, key),
                    Action::RequeueAfter(delay) => {
                        self.queue.forget(&key);
                        self.queue.add_after(key, delay);
                    }
                }
            }
            Ok(Err(err)) => {
                self.series.count("error");
                self.series.errors.inc();
                tracing::warn!(
                    controller = %self.name,
                    %key,
                    error = %err,
                    retries = self.queue.num_requeues(&key),
                    "reconcile failed; retrying with backoff"
                );
                self.backoffs.retry(&self.queue, key);
            }
            Err(_panic) => {
                self.series.count("error");
                self.series.errors.inc();
                self.series.panics.inc();
                tracing::error!(controller = %self.name, %key, "reconcile panicked; retrying with backoff");
                self.backoffs.retry(&self.queue, key);
            }
        }
    }
}

/// C10: the keys of a run that wait out a rate-limited delay (an error, a panic or
/// [`Action::Requeue`]), with the instant it ends. client-go reconciles a key that an event
/// re-adds during its backoff at once, and each such failure grows the delay: a failing object
/// that changes often reaches the 1 000 s cap within seconds (kubernetes#112325). Here the
/// event waits for the retry that is due anyway, and the delay grows once per reconcile.
#[derive(Default)]
pub(super) struct Backoffs {
    until: Mutex<HashMap<ObjectKey, Instant>>,
}

impl Backoffs {
    /// Files `key` for a rate-limited retry: the limiter's delay (which counts a failure, W4),
    /// held against events until it ends.
    fn retry(&self, queue: &RateLimitingQueue<ObjectKey>, key: ObjectKey) {
        let delay = queue.rate_limiter().when(&key);
        self.until
            .lock()
            .insert(key.clone(), Instant::now() + delay);
        queue.add_after(key, delay);
    }

    /// Whether a worker that took `key` must leave it for the retry due later (C10); if so,
    /// makes sure that retry is queued (`add_after` keeps the earlier of two ready times, W3).
    /// A key whose delay has ended is released from the hold.
    fn holds(&self, queue: &RateLimitingQueue<ObjectKey>, key: &ObjectKey) -> bool {
        let mut until = self.until.lock();
        let Some(&due) = until.get(key) else {
            return false;
        };
        let now = Instant::now();
        if due <= now {
            until.remove(key);
            return false;
        }
        drop(until);
        queue.add_after(key.clone(), due - now);
        true
    }
}
