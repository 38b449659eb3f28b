//! The informer's run loop: start the reflector, pop the FIFO, apply each key's deltas to the store and notify (H1-H4, D9), then stop everything.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::backlog::Notification;
use super::processor::ProcessorState;
use super::{InformerCounters, Inner};
use crate::delta_fifo::{DeletedObject, Delta};
use crate::indexer::{BatchOp, Indexer};
use crate::key::ObjectKey;
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

    inner.processor.start(tokio::runtime::Handle::current());
    let batching = pending.batching;
    let mut config = pending.reflector;
    config.resync_period = inner.processor.check_period();
    let processor = Arc::clone(&inner.processor);
    let should_resync: ShouldResync = Arc::new(move || processor.should_resync());
    config.should_resync = Some(should_resync);
    // The user's handler (from the config or `set_watch_error_handler`) and the factory's
    // observer both hear every error; neither replaces the other (item 12).
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
    // Structured concurrency (issue 14 item 4): every task and handler thread is tied to this
    // future. If it is dropped (aborted, a `select!` lost, the runtime shutting down) or
    // unwinds, the guard stops the reflector, the sync watcher and every handler thread.
    let mut guard = RunGuard {
        inner: Arc::clone(&inner),
        tasks: Vec::with_capacity(2),
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
            tokio::select! {
                synced = inner.fifo.wait_synced() => if synced { inner.processor.gate().set() },
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
        .instrument(span)
    }));

    loop {
        let keys = tokio::select! {
            () = cancel.cancelled() => break,
            () = stop.cancelled() => break,
            popped = process_next(&inner, batching) => match popped {
                Some(keys) => keys,
                None => break,
            },
        };
        // Item 10: the FIFO may hold 50 000 keys after a relist, and `pop` is ready at once
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
/// defence of structured concurrency (item 4). Idempotent with [`shutdown`], which on a normal
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
        drop(inner.processor.stop());
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

/// Waits for room in blocking handlers (H10), pops a batch of keys (V3; a whole relist, V2)
/// and processes it. Returns how many keys it processed; `None` once the FIFO is closed.
async fn process_next<K>(inner: &Inner<K>, batching: Batching) -> Option<usize>
where
    K: crate::object::Meta,
{
    inner.processor.wait_for_space().await;
    // H10: a `Block` handler must get room before each notification, so with one registered
    // the loop goes one key at a time (no batch, no atomic relist).
    let (max, atomic) = if inner.processor.has_blocking() {
        (1, false)
    } else {
        (batching.max, batching.atomic_relist)
    };
    let batch = inner.fifo.pop_batch(max, atomic).await?;
    let keys = batch.len();
    let started = std::time::Instant::now();
    // V4: the store's resource version follows the objects as they are applied.
    let applied_rv = batch
        .iter()
        .filter_map(|p| {
            p.deltas()
                .last()?
                .object()?
                .object_resource_version()?
                .parse::<u64>()
                .ok()
        })
        .max();
    let apply = || {
        // H5: the lock serialises the store update and distribution with handler registration
        // snapshots. D9: the FIFO's lock is not held here.
        let state = inner.processor.lock();
        // Item 4: user code (index functions) runs in here; their failures and panics are
        // handled inside (item 9). This catch is for anything else: the batch's deltas are
        // dropped with an error and a metric, and the loop goes on, so the cache never freezes
        // with `has_synced` true and no loop behind it.
        let processed =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| match &batch[..] {
                [one] => process_deltas(
                    &inner.indexer,
                    &state,
                    one.key(),
                    one.deltas(),
                    one.is_in_initial_list(),
                    &inner.counters,
                ),
                many => process_batch(&inner.indexer, &state, many, &inner.counters),
            }));
        if let Err(panic) = processed {
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
        }
    };
    // Item 15: a relist is applied as one step (V2), which for tens of thousands of keys takes
    // tens of milliseconds (index functions, the swap, every notification). On a multi-thread
    // runtime that step runs in `block_in_place`: the worker hands its queued tasks to a fresh
    // worker first, so no other task waits behind the relist. Small batches (every watch event)
    // run inline, where the hand-over would cost more than it saves.
    if keys >= BLOCK_IN_PLACE_KEYS && on_a_multi_thread_worker() {
        // `block_in_place` refuses (panics before calling `apply`) where a worker cannot hand
        // over, e.g. inside a `LocalSet`: then the batch is applied inline, as before.
        let ran = std::cell::Cell::new(false);
        let handed_over = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            tokio::task::block_in_place(|| {
                ran.set(true);
                apply();
            });
        }));
        match handed_over {
            Ok(()) => {}
            Err(_) if !ran.get() => apply(),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    } else {
        apply();
    }
    for popped in batch {
        popped.done();
    }
    inner.processing.observe(started.elapsed().as_secs_f64());
    note_store_rv(inner, applied_rv);
    if !inner.processor.gate().is_synced() && inner.fifo.has_synced() {
        inner.processor.gate().set();
    }
    Some(keys)
}

/// Batches of at least this many keys (a relist) are applied in `block_in_place` on a
/// multi-thread runtime (issue 25 item 15).
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

/// Applies the deltas of several keys to the store under one write lock (V2, V3), then notifies
/// per delta exactly as [`process_deltas`] would have one key at a time: a reader never sees
/// half the batch, handlers still get every add, update and delete (with tombstones).
fn process_batch<K>(
    indexer: &Indexer<K>,
    state: &ProcessorState<K>,
    batch: &[crate::delta_fifo::Popped<'_, K>],
    counters: &InformerCounters,
) where
    K: crate::object::Meta,
{
    let ops: Vec<BatchOp<K>> = batch
        .iter()
        .flat_map(|p| {
            p.deltas().iter().map(|delta| match delta {
                Delta::Added(obj)
                | Delta::Updated(obj)
                | Delta::Replaced(obj)
                | Delta::Sync(obj) => BatchOp::Upsert(p.key().clone(), Arc::clone(obj)),
                Delta::Deleted(_) => BatchOp::Delete(p.key().clone()),
            })
        })
        .collect();
    let (olds, failures) = indexer.apply_batch_lenient(&ops);
    drop(ops);
    for err in failures {
        counters.index_errors.fetch_add(1, Ordering::Relaxed);
        tracing::error!(
            error = %err,
            "index function failed; the object is stored without that index entry"
        );
    }
    let mut olds = olds.into_iter();
    for popped in batch {
        let key = popped.key();
        for delta in popped.deltas() {
            let old = olds.next().flatten();
            notify(state, key, delta, old, popped.is_in_initial_list());
        }
    }
}

/// Records the resource version the store now reflects (V4, K4): the applied object's, or, once
/// the FIFO is drained (nothing queued, nothing popped and unfinished), that of the last list or
/// bookmark (which may be newer than any object). Never moves backwards; wakes
/// [`wait_for_store_resource_version`](super::SharedIndexInformer::wait_for_store_resource_version).
pub(super) fn note_store_rv<K: crate::object::Meta>(inner: &Inner<K>, applied: Option<u64>) {
    let drained = inner
        .fifo
        .drained_resource_version()
        .and_then(|rv| rv.parse::<u64>().ok());
    if let Some(rv) = drained.into_iter().chain(applied).max() {
        inner.store_rv.send_if_modified(|current| {
            let advance = *current == super::NO_RV || rv > *current;
            if advance {
                *current = rv;
            }
            advance
        });
    }
}

/// Applies one key's deltas to the store, then notifies (H2): store first, so a lister call in
/// a handler sees at least this state.
pub(super) fn process_deltas<K>(
    indexer: &Indexer<K>,
    state: &ProcessorState<K>,
    key: &ObjectKey,
    deltas: &[Delta<K>],
    is_in_initial_list: bool,
    counters: &InformerCounters,
) where
    K: crate::object::Meta,
{
    for delta in deltas {
        let old = match delta {
            Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
                // Item 9 (X2 [ours]): the store follows the server even when an index function
                // fails or panics: the object is stored and handlers are told; it is only left
                // out of the failing index, with an error logged and counted.
                let (old, failures) = indexer.upsert_lenient(key.clone(), Arc::clone(obj));
                for err in failures {
                    counters.index_errors.fetch_add(1, Ordering::Relaxed);
                    tracing::error!(
                        %key,
                        error = %err,
                        "index function failed; the object is stored without that index entry"
                    );
                }
                old
            }
            Delta::Deleted(_) => indexer.delete_key(key.as_str()),
        };
        notify(state, key, delta, old, is_in_initial_list);
    }
}

/// The notification for one applied delta (H2-H4, H12): `old` is what the store held under the
/// key just before the delta was applied.
fn notify<K>(
    state: &ProcessorState<K>,
    key: &ObjectKey,
    delta: &Delta<K>,
    old: Option<Arc<K>>,
    is_in_initial_list: bool,
) where
    K: crate::object::Meta,
{
    match delta {
        Delta::Added(obj) | Delta::Updated(obj) | Delta::Replaced(obj) | Delta::Sync(obj) => {
            match old {
                Some(old) => {
                    // H4: an unchanged RV is a resync; only handlers due for one get it.
                    let is_sync = matches!(delta, Delta::Sync(_)) || same_rv(&*old, &**obj);
                    let new = Arc::clone(obj);
                    state.distribute(key, Notification::Update { old, new }, is_sync);
                }
                None => {
                    let n = Notification::Add {
                        obj: Arc::clone(obj),
                        initial: is_in_initial_list,
                    };
                    state.distribute(key, n, false);
                }
            }
        }
        Delta::Deleted(deleted) => {
            let Some(removed) = old else {
                // Item 11: nothing was stored under this key (the ordered FIFO queues every
                // delete, D10), so no handler ever saw the object: no notification.
                tracing::debug!(%key, "delete of a key not in the store; no handler told");
                return;
            };
            // A tombstone without a last state gets the object we just removed (D5, H12).
            let deleted = match deleted {
                DeletedObject::Unknown(t) if t.last_known.is_none() => {
                    let mut t = t.clone();
                    t.last_known = Some(removed);
                    DeletedObject::Unknown(t)
                }
                d => d.clone(),
            };
            state.distribute(key, Notification::Delete(deleted), false);
        }
    }
}

/// Whether two states carry the same, non-empty resource version (H4).
fn same_rv<K: crate::object::Meta>(old: &K, new: &K) -> bool {
    match (old.object_resource_version(), new.object_resource_version()) {
        (Some(a), Some(b)) => !a.is_empty() && a == b,
        _ => false,
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
    for listener in inner.processor.stop() {
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
    use kube::api::ObjectMeta;
    use tokio::sync::mpsc;

    use super::*;
    use crate::delta_fifo::DeltaFifo;
    use crate::informer::backlog::OverflowPolicy;
    use crate::informer::handler::handler_fn;
    use crate::informer::listener::HandlerOptions;
    use crate::informer::metrics::InformerMetrics;
    use crate::informer::processor::{ListenerDefaults, Processor};

    fn cm(name: &str, rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    struct Fixture {
        indexer: Arc<Indexer<ConfigMap>>,
        fifo: DeltaFifo<ConfigMap>,
        processor: Processor<ConfigMap>,
    }

    impl Fixture {
        fn new(resync: Duration) -> Self {
            let indexer = Arc::new(Indexer::new());
            let fifo = DeltaFifo::builder().known_objects(indexer.clone()).build();
            let processor = Processor::new(
                Arc::from("test"),
                ListenerDefaults {
                    resync,
                    backlog_max: 100,
                    overflow: OverflowPolicy::CoalesceByKey,
                },
                InformerMetrics::new(),
            );
            processor.start(tokio::runtime::Handle::current());
            Fixture {
                indexer,
                fifo,
                processor,
            }
        }

        async fn drain(&self) {
            while !self.fifo.is_empty() {
                let popped = self.fifo.pop().await.unwrap();
                let state = self.processor.lock();
                process_deltas(
                    &self.indexer,
                    &state,
                    popped.key(),
                    popped.deltas(),
                    popped.is_in_initial_list(),
                    &InformerCounters::default(),
                );
                drop(state);
                popped.done();
            }
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
        f.processor
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
    async fn item11_a_delete_of_a_key_never_stored_reaches_no_handler() {
        let f = Fixture::new(Duration::ZERO);
        let (h, mut rx) = recorder(f.indexer.clone());
        f.processor
            .add(Some(Arc::new(h)), HandlerOptions::new(), Vec::new)
            .unwrap();
        let key = ObjectKey::new(Some("ns"), "ghost");
        let ghost = Delta::Deleted(DeletedObject::Known(Arc::new(cm("ghost", "5"))));
        process_deltas(
            &f.indexer,
            &f.processor.lock(),
            &key,
            std::slice::from_ref(&ghost),
            false,
            &InformerCounters::default(),
        );
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
        f.processor
            .add(Some(Arc::new(h)), HandlerOptions::new(), Vec::new)
            .unwrap();
        f.processor
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
        for l in &f.processor.lock().listeners_for_test() {
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
