//! The shared index informer: one reflector, one delta FIFO and one indexer per type, fanned out to event handlers (H1-H15, Y1-Y5).
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use informer_runtime::informer::{InformerConfig, SharedIndexInformer, handler_fn};
//! # use informer_runtime::list_watch::ListWatch;
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let informer = SharedIndexInformer::new(
//!     ListWatch::new(kube::Api::<ConfigMap>::all(client)),
//!     InformerConfig::default(),
//! )?;
//! let registration = informer.add_event_handler(
//!     handler_fn().on_add(|cm: &Arc<ConfigMap>, initial| println!("{:?} {initial}", cm.metadata.name)),
//! )?;
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let task = informer.start(cancel.clone());
//! registration.wait_for_sync().await;
//! println!("{} objects", informer.indexer().len());
//! cancel.cancel();
//! task.await?;
//! # Ok(()) }
//! ```

mod apply;
pub(crate) mod collector;
mod config;
mod event;
mod fan_out;
mod handler;
mod listener;
mod metrics;
mod pending;
mod resync;
mod run;
mod stream;
mod sync;
mod transform;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use collector::InformerCollector;
pub use config::{DEFAULT_BATCH_SIZE, InformerConfig};
pub use event::InformerEvent;
pub use handler::{
    DeletedFinalStateUnknown, DeletedObject, FilteringHandler, HandlerFn, ResourceEventHandler,
    handler_fn,
};
pub use listener::{HandlerOptions, HandlerRegistration};
pub use metrics::{HandlerLabels, InformerMetrics};
pub use pending::OverflowPolicy;
pub use pending::{BACKLOG_START_CAPACITY, DEFAULT_BACKLOG_MAX};
pub use resync::MIN_RESYNC_PERIOD;
pub use stream::EventStream;
pub use sync::{NotSynced, SyncedChecker, wait_for};
pub use transform::strip_managed_fields;

use crate::delta_fifo::{DeltaFifo, FifoMode, TransformFn};
use crate::indexer::{Indexer, Indexers};
use crate::list_watch::ListWatch;
use crate::reflector::{ReflectorConfig, ReflectorHandle, WatchErrorHandler};
use fan_out::{FanOut, ListenerDefaults};

/// Why an informer call failed. None of these are retryable: each reports a call made in the
/// wrong state or a bad argument.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `set_transform` or `set_watch_error_handler` after the informer started (H14).
    #[error("the informer has already started")]
    AlreadyStarted,
    /// `add_event_handler` (or `event_stream`) after the informer stopped (H14).
    #[error("the informer has stopped")]
    Stopped,
    /// `remove_event_handler_and_wait` was awaited from inside the handler being removed, which
    /// would wait for itself forever (H7).
    #[error("cannot wait for a handler's removal from inside that handler")]
    RemoveFromOwnHandler,
    /// The indexer rejected the index functions (X6: duplicate name, or after stop).
    #[error(transparent)]
    Indexer(#[from] crate::indexer::Error),
}

/// `Result` with this module's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What `run` consumes; taken once (H1).
struct Pending<K> {
    list_watch: ListWatch<K>,
    reflector: ReflectorConfig,
    batching: run::Batching,
}

/// Shared state of an informer and its running tasks.
pub(crate) struct Inner<K> {
    name: Arc<str>,
    /// The resource listed and watched, for client-go's metric labels (V4).
    resource: collector::ResourceLabels,
    indexer: Arc<Indexer<K>>,
    fifo: Arc<DeltaFifo<K>>,
    /// The config (factory) transform, composed before any `set_transform` one (F8).
    base_transform: Option<TransformFn<K>>,
    fan_out: Arc<FanOut<K>>,
    pending: Mutex<Option<Pending<K>>>,
    watch_error_handler: Mutex<Option<WatchErrorHandler>>,
    /// Told about every error besides the user's handler, never replacing it (the factory
    /// records the last error here, F10).
    error_observer: Mutex<Option<WatchErrorHandler>>,
    reflector: Mutex<Option<ReflectorHandle>>,
    started: AtomicBool,
    /// Cancelled by [`SharedIndexInformer::stop`] or when the `run` token is cancelled.
    stop: CancellationToken,
    /// True once every task of the informer has ended.
    finished: tokio::sync::watch::Sender<bool>,
    /// Failures of user code met while processing (X2, H17).
    counters: InformerCounters,
    /// Time to apply one popped key's deltas and hand them to the handlers (V4).
    processing: prometheus_client::metrics::histogram::Histogram,
    /// The numeric resourceVersion the store reflects (V4, K4); [`NO_RV`] before the first.
    /// A watch channel, so read-your-own-writes waiters wake when it advances (K3).
    store_rv: tokio::sync::watch::Sender<u64>,
}

/// [`Inner::store_rv`] before anything was stored, or when the last RV was not numeric.
const NO_RV: u64 = u64::MAX;

impl<K: crate::object::Meta> Inner<K> {
    /// What this informer reports at a metrics scrape (V4).
    pub(crate) fn snapshot(&self) -> collector::Snapshot {
        let reflector = self.reflector.lock().clone();
        collector::Snapshot {
            name: self.name.to_string(),
            resource: self.resource.clone(),
            counters: reflector.as_ref().map(|h| h.counters()).unwrap_or_default(),
            last_resource_version: reflector
                .as_ref()
                .and_then(|h| h.last_sync_resource_version()),
            store_resource_version: self.store_resource_version(),
            synced: self.fan_out.gate().informer_synced(),
            cached: self.indexer.len(),
            queued: self.fifo.len(),
            index_errors: self.counters.index_errors.load(Ordering::Relaxed),
            process_panics: self.counters.process_panics.load(Ordering::Relaxed),
            processing: self.processing.clone(),
            shard_mode: reflector.as_ref().and_then(|h| h.shard_mode()),
        }
    }
}

impl<K> Inner<K> {
    fn store_resource_version(&self) -> Option<u64> {
        Some(*self.store_rv.borrow()).filter(|rv| *rv != NO_RV)
    }
}

/// Counters of the processing loop (X2, H17).
#[derive(Debug, Default)]
pub(crate) struct InformerCounters {
    /// Index function failures (errors and panics) met while storing objects.
    pub(crate) index_errors: std::sync::atomic::AtomicU64,
    /// Panics caught around the processing of one key's deltas.
    pub(crate) process_panics: std::sync::atomic::AtomicU64,
}

/// One list+watch of one resource type, a cache with indices, and any number of event handlers
/// (client-go's `SharedIndexInformer`).
///
/// Cloning is cheap; every clone is the same informer. See the [module docs](self).
pub struct SharedIndexInformer<K> {
    pub(crate) inner: Arc<Inner<K>>,
}

impl<K> Clone for SharedIndexInformer<K> {
    fn clone(&self) -> Self {
        SharedIndexInformer {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<K> fmt::Debug for SharedIndexInformer<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedIndexInformer")
            .field("name", &self.inner.name)
            .field("started", &self.inner.started.load(Ordering::Relaxed))
            .field("stopped", &self.inner.stop.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl<K> SharedIndexInformer<K>
where
    K: crate::object::Meta + Clone + DeserializeOwned + fmt::Debug,
{
    /// An informer over `list_watch`. Nothing runs until [`run`](Self::run) or
    /// [`start`](Self::start). Fails only if `config.indexers` repeats an index name (X6).
    pub fn new(list_watch: ListWatch<K>, config: InformerConfig<K>) -> Result<Self> {
        let name: Arc<str> = if config.name.is_empty() {
            Arc::from(list_watch.url_path())
        } else {
            Arc::from(config.name.as_str())
        };
        let mut builder = Indexer::builder().indexers(config.indexers);
        if !config.namespace_index {
            builder = builder.without_namespace_index();
        }
        let indexer = Arc::new(builder.build()?);
        let mut fifo = DeltaFifo::builder()
            .known_objects(indexer.clone())
            .mode(config.fifo_mode)
            .max_queued_deltas(config.max_queued_deltas);
        if let Some(transform) = &config.transform {
            fifo = fifo.transform(Arc::clone(transform));
        }
        let fan_out = FanOut::new(
            Arc::clone(&name),
            ListenerDefaults {
                resync: config.resync,
                backlog_max: config.handler_backlog_max,
                overflow: config.overflow,
            },
            config.metrics.unwrap_or_default(),
        );
        let mut reflector = config.reflector;
        if reflector.name.is_empty() {
            reflector.name = name.to_string();
        }
        let watch_error_handler = reflector.watch_error_handler.take();
        let resource = collector::ResourceLabels::of_path(list_watch.url_path());
        Ok(SharedIndexInformer {
            inner: Arc::new(Inner {
                name,
                resource,
                indexer,
                fifo: Arc::new(fifo.build()),
                base_transform: config.transform,
                fan_out: Arc::new(fan_out),
                pending: Mutex::new(Some(Pending {
                    list_watch,
                    reflector,
                    batching: run::Batching {
                        max: config.batch_size.max(1),
                        atomic_relist: config.atomic_relist,
                    },
                })),
                watch_error_handler: Mutex::new(watch_error_handler),
                error_observer: Mutex::new(None),
                reflector: Mutex::new(None),
                started: AtomicBool::new(false),
                stop: CancellationToken::new(),
                finished: tokio::sync::watch::Sender::new(false),
                counters: InformerCounters::default(),
                processing: collector::processing_histogram(),
                store_rv: tokio::sync::watch::Sender::new(NO_RV),
            }),
        })
    }

    /// Runs the informer until `cancel` is cancelled or [`stop`](Self::stop) is called, then
    /// stops every task it started before returning. A second call logs and returns at once (H1).
    pub async fn run(&self, cancel: CancellationToken) {
        // V4: every log line of the informer's tasks carries its name.
        let span = tracing::info_span!("informer", name = %self.inner.name);
        tracing::Instrument::instrument(run::run(Arc::clone(&self.inner), cancel), span).await
    }

    /// Spawns [`run`](Self::run) on the current tokio runtime; await the handle to know every
    /// task has ended.
    pub fn start(&self, cancel: CancellationToken) -> JoinHandle<()> {
        let this = self.clone();
        tokio::spawn(async move { this.run(cancel).await })
    }

    /// Registers a handler with the informer's defaults (H5-H11). After start it first receives
    /// a synthetic `on_add(obj, true)` for every cached object (H5). An error after stop (H14).
    pub fn add_event_handler(
        &self,
        handler: impl ResourceEventHandler<K>,
    ) -> Result<HandlerRegistration<K>> {
        self.add_event_handler_with(handler, HandlerOptions::default())
    }

    /// Registers a handler with a name, resync period (Y3) and backlog settings (H10).
    pub fn add_event_handler_with(
        &self,
        handler: impl ResourceEventHandler<K>,
        options: HandlerOptions,
    ) -> Result<HandlerRegistration<K>> {
        if self.inner.stop.is_cancelled() {
            return Err(Error::Stopped);
        }
        let indexer = &self.inner.indexer;
        self.inner
            .fan_out
            .add(Some(Arc::new(handler)), options, || snapshot(indexer))
    }

    /// Stops delivery to `registration` and returns at once; a call in flight may still finish (H7).
    pub fn remove_event_handler(&self, registration: &HandlerRegistration<K>) {
        self.inner.fan_out.remove(registration);
    }

    /// Stops delivery and waits until the handler's task has ended (H7). Called from inside
    /// that same handler (e.g. through `block_on`), it returns [`Error::RemoveFromOwnHandler`]
    /// instead of deadlocking.
    pub async fn remove_event_handler_and_wait(
        &self,
        registration: &HandlerRegistration<K>,
    ) -> Result<()> {
        self.inner.fan_out.remove_and_wait(registration).await
    }

    /// The informer's notifications as a `Stream` (for kube-runtime style consumers). It is a
    /// registration like a handler: late subscribers first get the cache as initial adds (H5);
    /// the backlog coalesces at the maximum (H10); dropping the stream unregisters it.
    pub fn event_stream(&self) -> Result<EventStream<K>> {
        self.event_stream_with(HandlerOptions::default())
    }

    /// [`event_stream`](Self::event_stream) with a name, resync period and backlog settings.
    pub fn event_stream_with(&self, options: HandlerOptions) -> Result<EventStream<K>> {
        if self.inner.stop.is_cancelled() {
            return Err(Error::Stopped);
        }
        let indexer = &self.inner.indexer;
        let registration = self
            .inner
            .fan_out
            .add(None, options, || snapshot(indexer))?;
        Ok(EventStream::new(
            registration,
            Arc::clone(&self.inner.fan_out),
        ))
    }

    /// Sets the per-informer transform applied before objects are stored (D8; e.g.
    /// [`strip_managed_fields`]). It runs after the [`InformerConfig::transform`] (the
    /// factory's), which it never replaces (F8); a second call replaces the first. An error
    /// after start (H14).
    ///
    /// It runs on the thread that decoded the object: a decode pool thread for a LIST page or a
    /// large run of watch events (T6), else the informer's task. Either way it runs inside the
    /// informer's tokio runtime (`tokio::runtime::Handle::current()` and `tokio::spawn` work) and
    /// its tracing span; it must not block on the runtime. A panic costs that object (M17).
    pub fn set_transform(&self, transform: impl Fn(&mut K) + Send + Sync + 'static) -> Result<()> {
        if self.inner.started.load(Ordering::Acquire) {
            return Err(Error::AlreadyStarted);
        }
        let composed: TransformFn<K> = match &self.inner.base_transform {
            Some(base) => {
                let base = Arc::clone(base);
                Arc::new(move |obj: &mut K| {
                    base(obj);
                    transform(obj);
                })
            }
            None => Arc::new(transform),
        };
        self.inner.fifo.set_transform(Some(composed));
        Ok(())
    }

    /// Sets the callback told about every list/watch error (client-go's `SetWatchErrorHandler`).
    /// An error after start (H14).
    pub fn set_watch_error_handler(
        &self,
        handler: impl Fn(&crate::reflector::Error) + Send + Sync + 'static,
    ) -> Result<()> {
        if self.inner.started.load(Ordering::Acquire) {
            return Err(Error::AlreadyStarted);
        }
        *self.inner.watch_error_handler.lock() = Some(Arc::new(handler));
        Ok(())
    }

    /// Sets a callback told about every list/watch error next to the watch error handler,
    /// which it never replaces (F10); for the factory's bookkeeping. An error after start.
    pub(crate) fn observe_watch_errors(
        &self,
        observer: impl Fn(&crate::reflector::Error) + Send + Sync + 'static,
    ) -> Result<()> {
        if self.inner.started.load(Ordering::Acquire) {
            return Err(Error::AlreadyStarted);
        }
        *self.inner.error_observer.lock() = Some(Arc::new(observer));
        Ok(())
    }

    /// Registers more index functions and back-fills them (X6); an error for a duplicate name
    /// or after stop.
    pub fn add_indexers(&self, indexers: Indexers<K>) -> Result<()> {
        Ok(self.inner.indexer.add_indexers(indexers)?)
    }

    /// The resync check period the reflector ticks at (Y3).
    pub fn resync_check_period(&self) -> Duration {
        self.inner.fan_out.check_period()
    }

    /// The resource version of the last list, watch event or bookmark (R23); `None` before the
    /// first list.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        let reflector = self.inner.reflector.lock().clone();
        // The FIFO records a list's RV inside `replace`, a moment before the reflector does.
        reflector
            .and_then(|r| r.last_sync_resource_version())
            .or_else(|| self.inner.fifo.last_resource_version())
    }
}

impl<K> SharedIndexInformer<K> {
    /// The informer's name (for logs and metrics).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The shared indexer the informer fills (X7: the same `Arc<K>`s handlers receive).
    pub fn indexer(&self) -> Arc<Indexer<K>> {
        Arc::clone(&self.inner.indexer)
    }

    /// True once the first list has been stored and handed to every handler's queue (D7).
    /// Use [`HandlerRegistration::has_synced`] to also wait for a handler to process it (H6).
    pub fn has_synced(&self) -> bool {
        self.inner.fan_out.gate().informer_synced()
    }

    /// Waits for [`has_synced`](Self::has_synced); returns `false` if the informer stopped first.
    pub async fn wait_for_sync(&self) -> bool {
        let mut finished = self.inner.finished.subscribe();
        tokio::select! {
            synced = self.inner.fan_out.gate().wait_informer() => synced,
            _ = finished.wait_for(|f| *f) => self.has_synced(),
        }
    }

    /// How many times an index function failed (returned an error or panicked) while the informer
    /// stored an object. Such an object is stored and handlers are told, but it is left out of the
    /// failing index (our extension of X2, decision record 10); each failure is also logged with
    /// the index name and the object's key.
    pub fn index_errors(&self) -> u64 {
        self.inner.counters.index_errors.load(Ordering::Relaxed)
    }

    /// How many times processing one key's deltas panicked outside user code (a bug): the
    /// key's deltas were dropped, logged, and the processing loop went on (H17).
    pub fn process_panics(&self) -> u64 {
        self.inner.counters.process_panics.load(Ordering::Relaxed)
    }

    /// Keys waiting in the informer's delta FIFO (V4: queue depth).
    pub fn queued(&self) -> usize
    where
        K: crate::object::Meta,
    {
        self.inner.fifo.len()
    }

    /// Deltas waiting in the informer's delta FIFO, of every key; the watch stops reading at
    /// [`InformerConfig::max_queued_deltas`] (D12).
    pub fn queued_deltas(&self) -> usize
    where
        K: crate::object::Meta,
    {
        self.inner.fifo.delta_count()
    }

    /// The resource version the store reflects (V4; client-go 1.37's store resource version):
    /// that of the newest object the processing loop applied, lowered below any change still
    /// queued (K4: the keyed FIFO can hand out an older change after a newer one), or that of
    /// the last list or bookmark once the FIFO was drained. It trails [`last_sync_resource_version`](Self::last_sync_resource_version)
    /// (the reflector's) by what is still queued. `None` before the first object, or when the
    /// server's resource versions are not numbers.
    pub fn last_store_resource_version(&self) -> Option<String> {
        self.inner.store_resource_version().map(|rv| rv.to_string())
    }

    /// The per-informer metrics of this informer, for a `prometheus_client` registry (V4; an
    /// informer from a factory is reported by the factory's collector already).
    pub fn collector(&self) -> InformerCollector<K> {
        InformerCollector {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// A named check of [`has_synced`](Self::has_synced) that can be awaited together with others
    /// through [`wait_for`] (V5; client-go's `HasSyncedChecker`). Its name is the informer's.
    pub fn synced_checker(&self) -> SyncedChecker
    where
        K: Send + Sync + 'static,
    {
        SyncedChecker::new(Arc::clone(&self.inner.name), Arc::new(self.clone()))
    }

    /// The reflector's counters (lists, watches, relists, …), once running.
    pub fn reflector_handle(&self) -> Option<ReflectorHandle> {
        self.inner.reflector.lock().clone()
    }

    /// Asks the informer to stop; [`run`](Self::run) returns once every task has ended (H14).
    pub fn stop(&self) {
        self.inner.stop.cancel();
    }

    /// Whether the informer stopped, or was asked to (H14).
    pub fn is_stopped(&self) -> bool {
        self.inner.stop.is_cancelled()
    }

    /// Whether `run` was called (H1).
    pub fn is_started(&self) -> bool {
        self.inner.started.load(Ordering::Acquire)
    }

    /// Waits until the store reflects `resource_version` or a later one (K3: a controller's
    /// read-your-own-writes guard waits here for the informer to see its write). Returns `true`
    /// then, `false` if the informer stops first. Wakes as the store advances: on every applied
    /// object, and on bookmarks while the informer is idle (K4), so a quiet kind catches up
    /// within the server's bookmark interval.
    ///
    /// ```no_run
    /// # async fn demo(informer: informer_runtime::informer::SharedIndexInformer<k8s_openapi::api::core::v1::ConfigMap>) {
    /// // The resourceVersion a write returned, e.g. `created.metadata.resource_version`.
    /// let written: u64 = 1234;
    /// if informer.wait_for_store_resource_version(written).await {
    ///     // the cache now holds that write, or something newer
    /// }
    /// # }
    /// ```
    pub async fn wait_for_store_resource_version(&self, resource_version: u64) -> bool {
        let mut rv = self.inner.store_rv.subscribe();
        let mut finished = self.inner.finished.subscribe();
        tokio::select! {
            reached = rv.wait_for(|rv| *rv != NO_RV && *rv >= resource_version) => reached.is_ok(),
            _ = finished.wait_for(|f| *f) => {
                self.inner.store_resource_version().is_some_and(|rv| rv >= resource_version)
            }
        }
    }

    /// Waits until a started informer has stopped and every task it spawned has ended.
    pub async fn wait_stopped(&self) {
        let mut finished = self.inner.finished.subscribe();
        // The sender lives in `inner`, which `self` keeps alive.
        let _ = finished.wait_for(|f| *f).await;
    }
}

impl<K: Send + Sync + 'static> sync::SyncSource for SharedIndexInformer<K> {
    fn is_synced(&self) -> bool {
        self.has_synced()
    }

    fn wait(&self) -> futures::future::BoxFuture<'static, bool> {
        let this = self.clone();
        Box::pin(async move { this.wait_for_sync().await })
    }
}

/// The cache snapshot a late handler receives as synthetic adds (H5). Called under the
/// processing lock, so no delta is applied between the snapshot and the registration.
fn snapshot<K: crate::object::Meta>(indexer: &Indexer<K>) -> Vec<(crate::key::ObjectKey, Arc<K>)> {
    indexer
        .list()
        .into_iter()
        .filter_map(|obj| Some((crate::key::ObjectKey::from_resource(&*obj).ok()?, obj)))
        .collect()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    use super::*;

    fn offline_informer(config: InformerConfig<ConfigMap>) -> SharedIndexInformer<ConfigMap> {
        let url = "http://127.0.0.1:9".parse().unwrap();
        let client = kube::Client::try_from(kube::Config::new(url)).unwrap();
        SharedIndexInformer::new(ListWatch::new(kube::Api::all(client)), config).unwrap()
    }

    fn cm(name: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn f8_set_transform_runs_after_the_config_transform_and_never_replaces_it() {
        let base: TransformFn<ConfigMap> = Arc::new(|cm: &mut ConfigMap| {
            cm.metadata
                .labels
                .get_or_insert_default()
                .insert("order".into(), "base".into());
        });
        let inf = offline_informer(InformerConfig {
            transform: Some(base),
            ..Default::default()
        });
        inf.set_transform(|cm: &mut ConfigMap| {
            let labels = cm.metadata.labels.get_or_insert_default();
            let order = labels.get("order").cloned().unwrap_or_default();
            labels.insert("order".into(), format!("{order},informer"));
        })
        .unwrap();
        inf.inner.fifo.add(cm("a")).unwrap();
        let popped = inf
            .inner
            .fifo
            .pop_batch(1, false)
            .await
            .unwrap()
            .pop()
            .unwrap();
        let obj = popped.deltas()[0].object().unwrap().clone();
        assert_eq!(
            obj.metadata.labels.as_ref().unwrap()["order"],
            "base,informer"
        );
    }

    /// Compile-time checks that the public handles and futures can cross threads.
    #[allow(dead_code)]
    fn public_handles_are_send_and_sync() {
        fn send_sync<T: Send + Sync>(_: &T) {}
        fn send<T: Send>(_: &T) {}
        fn all(inf: &SharedIndexInformer<ConfigMap>, reg: &HandlerRegistration<ConfigMap>) {
            send_sync(inf);
            send_sync(reg);
            send(&inf.run(CancellationToken::new()));
            send(&inf.wait_for_sync());
            send(&inf.wait_stopped());
            send(&inf.remove_event_handler_and_wait(reg));
            send(&reg.wait_for_sync());
            if let Ok(stream) = inf.event_stream() {
                send(&stream);
            }
        }
        let _ = all;
    }

    #[tokio::test]
    async fn h1_h14_state_errors_around_start_and_stop() {
        let inf = offline_informer(InformerConfig::default());
        assert!(!inf.is_started());
        inf.stop();
        // Stopped before it ran: run returns at once and leaves nothing behind.
        inf.run(CancellationToken::new()).await;
        assert!(inf.is_started() && inf.is_stopped());
        inf.wait_stopped().await;
        assert!(!inf.wait_for_sync().await, "never synced");
        assert!(matches!(
            inf.set_transform(|_| {}),
            Err(Error::AlreadyStarted)
        ));
        assert!(matches!(
            inf.set_watch_error_handler(|_| {}),
            Err(Error::AlreadyStarted)
        ));
        assert!(matches!(
            inf.add_event_handler(handler_fn()),
            Err(Error::Stopped)
        ));
        assert!(matches!(inf.event_stream(), Err(Error::Stopped)));
        assert!(matches!(
            inf.add_indexers(Indexers::default()),
            Err(Error::Indexer(_))
        ));
        // H1: a second run is a no-op.
        inf.run(CancellationToken::new()).await;
    }
}
