//! The informer's run loop: start the reflector, pop the FIFO, apply each batch to the store and hand its notifications to the fan-out (H1-H4, D9), then stop everything.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::Inner;
use super::apply::{Applied, apply_batch};
use super::fan_out::Held;
use crate::reflector::{Reflector, ShouldResync};
use crate::store::ReflectorStore;

/// The body of `SharedIndexInformer::run`.
pub(super) async fn run<K>(inner: Arc<Inner<K>>, cancel: CancellationToken)
where
    K: crate::object::Meta + Clone + DeserializeOwned + fmt::Debug,
{
    if inner.started.swap(true, Ordering::AcqRel) {
        tracing::info!(informer = %inner.name, "informer already started; ignoring run (H1)");
        return;
    }
    let Some(pending) = inner.pending.lock().take() else {
        return;
    };
    if inner.stop.is_cancelled() || cancel.is_cancelled() {
        shutdown(&inner, Vec::new()).await;
        return;
    }

    inner.fan_out.start(tokio::runtime::Handle::current());
    let batching = pending.batching;
    let mut config = pending.reflector;
    config.resync_period = inner.fan_out.check_period();
    let fan_out = Arc::clone(&inner.fan_out);
    let should_resync: ShouldResync = Arc::new(move || fan_out.should_resync());
    config.should_resync = Some(should_resync);
    // The user's handler (from the config or `set_watch_error_handler`) and the factory's
    // observer both hear every error; neither replaces the other (F10).
    let handler = inner.watch_error_handler.lock().clone();
    let observer = inner.error_observer.lock().clone();
    config.watch_error_handler = match (handler, observer) {
        (Some(h), Some(o)) => Some(Arc::new(move |e: &crate::reflector::Error| {
            o(e);
            h(e);
        })),
        (h, o) => h.or(o),
    };
    let store: Arc<dyn ReflectorStore<K>> = inner.fifo.clone();
    let reflector = Reflector::new(pending.list_watch, store, config);
    *inner.reflector.lock() = Some(reflector.handle());
    tracing::debug!(informer = %inner.name, "informer starting");

    let stop = inner.stop.clone();
    // Structured concurrency (H17): every task and handler thread is tied to this
    // future. If it is dropped (aborted, a `select!` lost, the runtime shutting down) or
    // unwinds, the guard stops the reflector, the sync watcher and every handler thread.
    let mut guard = RunGuard {
        inner: Arc::clone(&inner),
        tasks: Vec::with_capacity(4),
    };
    // V4: the spawned tasks stay inside the informer's span (`run` is instrumented with it).
    let span = tracing::Span::current();
    guard.tasks.push(tokio::spawn(
        reflector.run(stop.clone()).instrument(span.clone()),
    ));
    guard.tasks.push(tokio::spawn({
        let inner = Arc::clone(&inner);
        let stop = stop.clone();
        async move {
            // D7 for a first list with nothing to pop; the loop follows the FIFO otherwise.
            tokio::select! {
                synced = inner.fifo.wait_synced() => if synced { inner.fan_out.gate().follow_fifo(&inner.fifo) },
                () = stop.cancelled() => {}
            }
        }
        .instrument(span.clone())
    }));
    // K4: a bookmark that finds the FIFO drained advances the store's resource version, which
    // the processing loop (idle: nothing to pop) would not do until the next object.
    guard.tasks.push(tokio::spawn({
        let inner = Arc::clone(&inner);
        let stop = stop.clone();
        async move {
            loop {
                tokio::select! {
                    () = inner.fifo.wait_progress() => note_store_rv(&inner, None),
                    () = stop.cancelled() => break,
                }
            }
        }
        .instrument(span.clone())
    }));
    // P3: frees what no cached object uses in the interner and the sharing pools when caches
    // shrink with nothing new arriving (one pass at a time in the process, shard by shard).
    guard.tasks.push(tokio::spawn({
        let stop = stop.clone();
        async move {
            tokio::select! {
                () = crate::pool::sweep_in_background() => {}
                () = stop.cancelled() => {}
            }
        }
        .instrument(span)
    }));

    let mut applied = Applied::default();
    loop {
        let keys = tokio::select! {
            () = cancel.cancelled() => break,
            () = stop.cancelled() => break,
            popped = process_next(&inner, batching, &mut applied) => match popped {
                Some(keys) => keys,
                None => break,
            },
        };
        // H18: the FIFO may hold 50 000 keys after a relist, and `pop` is ready at once
        // while it does; without a yield point the loop would keep this worker (and, on a
        // current-thread runtime, everything else) until the FIFO is empty. One unit of
        // tokio's cooperative budget per key (not per batch, V3) yields after every 128 keys.
        for _ in 0..keys {
            tokio::task::consume_budget().await;
        }
    }
    let tasks = std::mem::take(&mut guard.tasks);
    shutdown(&inner, tasks).await;
}

/// Stops everything the run future started when the future ends in any way: the last line of
/// defence of structured concurrency (H17). Idempotent with [`shutdown`], which on a normal
/// end has already done all of this (and awaited it).
struct RunGuard<K: crate::object::Meta> {
    inner: Arc<Inner<K>>,
    /// Tasks not yet awaited by [`shutdown`]; aborted on drop.
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl<K: crate::object::Meta> Drop for RunGuard<K> {
    fn drop(&mut self) {
        let inner = &self.inner;
        let dropped = !self.tasks.is_empty();
        inner.stop.cancel();
        inner.fifo.close();
        for task in self.tasks.drain(..) {
            task.abort();
        }
        // Closing the listeners ends every handler thread after its call in flight.
        drop(inner.fan_out.stop());
        inner.indexer.stop();
        if dropped {
            tracing::warn!(
                informer = %inner.name,
                "informer run future dropped before it finished; its tasks and handler threads were stopped"
            );
        }
        inner
            .finished
            .send_if_modified(|finished| !std::mem::replace(finished, true));
    }
}

/// Waits until the fan-out has room (H10), pops a batch of keys (V3; a whole relist, V2),
/// applies it to the store and hands its notifications to the fan-out. Returns how many keys it
/// processed; `None` once the FIFO is closed.
async fn process_next<K>(
    inner: &Inner<K>,
    batching: Batching,
    applied: &mut Applied<K>,
) -> Option<usize>
where
    K: crate::object::Meta,
{
    inner.fan_out.wait_for_room().await;
    let max = inner.fan_out.pop_limit(batching.max);
    let batch = inner.fifo.pop_batch(max, batching.atomic_relist).await?;
    let keys = batch.len();
    let started = std::time::Instant::now();
    let mut apply = || -> Held<K> {
        // H5: the lock serialises the store update and distribution with handler registration
        // snapshots. D9: the FIFO's lock is not held here.
        let state = inner.fan_out.lock();
        // H17: user code (index functions) runs in here; their failures and panics are
        // handled inside (X2). This catch is for anything else: the batch's deltas are
        // dropped with an error and a metric, and the loop goes on, so the cache never freezes
        // with `has_synced` true and no loop behind it.
        let distributed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            apply_batch(&inner.indexer, &batch, applied);
            report_index_failures(inner, applied);
            state.distribute(applied.notifications.drain(..))
        }));
        distributed.unwrap_or_else(|panic| {
            inner
                .counters
                .process_panics
                .fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                informer = %inner.name,
                key = %batch[0].key(),
                keys = batch.len(),
                panic = %super::listener::panic_message(panic.as_ref()),
                "processing popped deltas panicked; they were dropped"
            );
            Held::none()
        })
    };
    // H18: a relist is applied as one step (V2), which for tens of thousands of keys takes
    // tens of milliseconds (index functions, the swap, every notification). On a multi-thread
    // runtime that step runs in `block_in_place`: the worker hands its queued tasks to a fresh
    // worker first, so no other task waits behind the relist. Small batches (every watch event)
    // run inline, where the hand-over would cost more than it saves.
    let held = if keys >= BLOCK_IN_PLACE_KEYS && on_a_multi_thread_worker() {
        // `block_in_place` refuses (panics before calling `apply`) where a worker cannot hand
        // over, e.g. inside a `LocalSet`: then the batch is applied inline, as before.
        let ran = std::cell::Cell::new(false);
        let mut held = None;
        let handed_over = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tokio::task::block_in_place(|| {
                ran.set(true);
                held = Some(apply());
            });
        }));
        match handed_over {
            Ok(()) => held.unwrap_or_else(Held::none),
            Err(_) if !ran.get() => apply(),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    } else {
        apply()
    };
    let applied_rv = applied.resource_version;
    let deleted = applied.deleted;
    applied.clear();
    let elapsed = started.elapsed();
    // H10: what a full `Block` handler could not take yet; the FIFO holds everything newer.
    held.deliver().await;
    for popped in batch {
        popped.done();
    }
    // P3: the deleted objects are gone (the batch held their last deltas); what only they used
    // in the interner and the sharing pools is garbage for the next background pass.
    crate::pool::released(deleted);
    inner.processing.observe(elapsed.as_secs_f64());
    note_store_rv(inner, applied_rv);
    inner.fan_out.gate().follow_fifo(&inner.fifo);
    Some(keys)
}

/// Counts and logs the index function failures of a batch (X2), before any handler is told
/// of it: the one place they are reported.
fn report_index_failures<K>(inner: &Inner<K>, applied: &mut Applied<K>) {
    for err in applied.index_failures.drain(..) {
        inner.counters.index_errors.fetch_add(1, Ordering::Relaxed);
        tracing::error!(
            error = %err,
            "index function failed; the object is stored without that index entry"
        );
    }
}

/// Batches of at least this many keys (a relist) are applied in `block_in_place` on a
/// multi-thread runtime (H18).
const BLOCK_IN_PLACE_KEYS: usize = 1024;

/// Whether this code runs in a task of a multi-thread runtime, where `block_in_place` can hand
/// the worker's other tasks to a new worker.
fn on_a_multi_thread_worker() -> bool {
    tokio::task::try_id().is_some()
        && tokio::runtime::Handle::try_current()
            .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread)
}

/// How the processing loop pops (V2, V3).
#[derive(Debug, Clone, Copy)]
pub(super) struct Batching {
    /// Keys per batch at most (a relist's batch may be larger when `atomic_relist`).
    pub(super) max: usize,
    /// Whether a relist reaches the store as one swap.
    pub(super) atomic_relist: bool,
}

/// Records the resource version the store now reflects (V4, K3, K4): the newest applied
/// object's, lowered below any change still queued (`DeltaFifo::settled_resource_version`), or,
/// once the FIFO is drained (nothing queued, nothing popped and unfinished), that of the last
/// list or bookmark (which may be newer than any object). Never moves backwards; wakes
/// [`wait_for_store_resource_version`](super::SharedIndexInformer::wait_for_store_resource_version).
pub(super) fn note_store_rv<K: crate::object::Meta>(inner: &Inner<K>, applied: Option<u64>) {
    if let Some(rv) = inner.fifo.settled_resource_version(applied) {
        inner.store_rv.send_if_modified(|current| {
            let advance = *current == super::NO_RV || rv > *current;
            if advance {
                *current = rv;
            }
            advance
        });
    }
}

/// Stops every task and handler thread, awaits them, and marks the informer stopped (H14, no
/// task left behind).
async fn shutdown<K>(inner: &Inner<K>, tasks: Vec<tokio::task::JoinHandle<()>>)
where
    K: crate::object::Meta,
{
    inner.stop.cancel();
    inner.fifo.close();
    for task in tasks {
        if let Err(err) = task.await {
            tracing::error!(informer = %inner.name, error = %err, "informer task failed");
        }
    }
    for listener in inner.fan_out.stop() {
        listener.wait_finished().await;
    }
    inner.indexer.stop();
    inner.finished.send_replace(true);
    tracing::debug!(informer = %inner.name, "informer stopped");
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use k8s_openapi::api::core::v1::ConfigMap;
    use tokio::sync::mpsc;

    use super::*;
    use crate::delta_fifo::{DeletedObject, Delta, DeltaFifo};
    use crate::indexer::Indexer;
    use crate::informer::apply::tests::config_map as cm;
    use crate::informer::fan_out::{FanOut, ListenerDefaults};
    use crate::informer::handler::handler_fn;
    use crate::informer::listener::HandlerOptions;
    use crate::informer::metrics::InformerMetrics;
    use crate::informer::pending::OverflowPolicy;
    use crate::key::ObjectKey;

    struct Fixture {
        indexer: Arc<Indexer<ConfigMap>>,
        fifo: DeltaFifo<ConfigMap>,
        fan_out: FanOut<ConfigMap>,
    }

    impl Fixture {
        fn new(resync: Duration) -> Self {
            let indexer = Arc::new(Indexer::new());
            let fifo = DeltaFifo::builder().known_objects(indexer.clone()).build();
            let fan_out = FanOut::new(
                Arc::from("test"),
                ListenerDefaults {
                    resync,
                    backlog_max: 100,
                    overflow: OverflowPolicy::CoalesceByKey,
                },
                InformerMetrics::new(),
            );
            fan_out.start(tokio::runtime::Handle::current());
            Fixture {
                indexer,
                fifo,
                fan_out,
            }
        }

        async fn drain(&self) {
            while !self.fifo.is_empty() {
                let batch = self.fifo.pop_batch(1, false).await.unwrap();
                self.apply(&batch);
                for popped in batch {
                    popped.done();
                }
            }
        }
    }

    impl Fixture {
        /// What the run loop does with a batch, without its metrics.
        fn apply<P: crate::informer::apply::KeyDeltas<ConfigMap>>(&self, batch: &[P]) {
            let mut applied = Applied::default();
            let state = self.fan_out.lock();
            apply_batch(&self.indexer, batch, &mut applied);
            let held = state.distribute(applied.notifications.drain(..));
            assert!(futures::FutureExt::now_or_never(held.deliver()).is_some());
        }
    }

    fn recorder(
        indexer: Arc<Indexer<ConfigMap>>,
    ) -> (
        crate::informer::HandlerFn<ConfigMap>,
        mpsc::UnboundedReceiver<String>,
    ) {
        let (tx, rx) = mpsc::unbounded_channel();
        let (t2, t3) = (tx.clone(), tx.clone());
        let h = handler_fn::<ConfigMap>()
            .on_add(move |o, initial| {
                // H2: the store shows the object before the handler runs.
                let stored =
                    indexer.get_by_key(&format!("ns/{}", o.metadata.name.as_deref().unwrap_or("")));
                let seen = stored.is_some_and(|s| Arc::ptr_eq(&s, o));
                let _ = tx.send(format!("add {:?} {initial} stored={seen}", o.metadata.name));
            })
            .on_update(move |old, new| {
                let _ = t2.send(format!(
                    "update {:?} {:?}->{:?}",
                    new.metadata.name, old.metadata.resource_version, new.metadata.resource_version
                ));
            })
            .on_delete(move |d| {
                let rv = d
                    .last_known()
                    .and_then(|o| o.metadata.resource_version.clone());
                let _ = t3.send(format!(
                    "delete {} tombstone={} last={rv:?}",
                    d.key().unwrap(),
                    d.is_tombstone()
                ));
            });
        (h, rx)
    }

    async fn recv(rx: &mut mpsc::UnboundedReceiver<String>) -> String {
        tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn h2_h3_h4_d5_relist_is_silent_for_unchanged_objects_and_tombstones_vanished_ones() {
        let f = Fixture::new(Duration::ZERO);
        let (h, mut rx) = recorder(f.indexer.clone());
        f.fan_out
            .add(Some(Arc::new(h)), HandlerOptions::new(), Vec::new)
            .unwrap();
        f.fifo
            .replace(vec![cm("a", "1"), cm("b", "1"), cm("c", "1")], "1".into())
            .unwrap();
        f.drain().await;
        assert!(f.fifo.has_synced());
        for name in ["a", "b", "c"] {
            assert_eq!(
                recv(&mut rx).await,
                format!("add Some(\"{name}\") true stored=true")
            );
        }
        // A relist: a unchanged, b changed, c gone.
        f.fifo
            .replace(vec![cm("a", "1"), cm("b", "2")], "2".into())
            .unwrap();
        f.drain().await;
        assert_eq!(
            recv(&mut rx).await,
            "update Some(\"b\") Some(\"1\")->Some(\"2\")"
        );
        assert_eq!(
            recv(&mut rx).await,
            "delete ns/c tombstone=true last=Some(\"1\")"
        );
        f.fifo.add(cm("d", "3")).unwrap();
        f.drain().await;
        assert_eq!(
            recv(&mut rx).await,
            "add Some(\"d\") false stored=true",
            "H4: nothing for a"
        );
        assert_eq!(f.indexer.len(), 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn h10_a_delete_of_a_key_never_stored_reaches_no_handler() {
        let f = Fixture::new(Duration::ZERO);
        let (h, mut rx) = recorder(f.indexer.clone());
        f.fan_out
            .add(Some(Arc::new(h)), HandlerOptions::new(), Vec::new)
            .unwrap();
        let key = ObjectKey::new(Some("ns"), "ghost");
        let ghost = Delta::Deleted(DeletedObject::Known(Arc::new(cm("ghost", "5"))));
        f.apply(&[(key, vec![ghost], false)]);
        f.fifo.add(cm("real", "6")).unwrap();
        f.drain().await;
        assert_eq!(
            recv(&mut rx).await,
            "add Some(\"real\") false stored=true",
            "no delete for the ghost first"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn y1_y4_resync_replays_the_cached_object_to_due_handlers_only() {
        let f = Fixture::new(Duration::from_secs(1));
        let (h, mut rx) = recorder(f.indexer.clone());
        let (h0, mut rx0) = recorder(f.indexer.clone());
        f.fan_out
            .add(Some(Arc::new(h)), HandlerOptions::new(), Vec::new)
            .unwrap();
        f.fan_out
            .add(
                Some(Arc::new(h0)),
                HandlerOptions::new().resync(Duration::ZERO),
                Vec::new,
            )
            .unwrap();
        f.fifo.add(cm("a", "1")).unwrap();
        f.drain().await;
        recv(&mut rx).await;
        recv(&mut rx0).await;
        // Mark every handler that is due one period from now (Y4), then resync the store (D6).
        let later = std::time::Instant::now() + Duration::from_secs(2);
        for l in &f.fan_out.lock().listeners_for_test() {
            l.resync.lock().tick(later);
        }
        f.fifo.resync().unwrap();
        f.fifo.add(cm("z", "9")).unwrap();
        f.drain().await;
        assert_eq!(
            recv(&mut rx).await,
            "update Some(\"a\") Some(\"1\")->Some(\"1\")"
        );
        assert_eq!(
            recv(&mut rx0).await,
            "add Some(\"z\") false stored=true",
            "resync-0 handler skipped"
        );
    }
}
