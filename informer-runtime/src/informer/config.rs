//! [`InformerConfig`]: the settings of one shared informer, and their defaults.

use super::*;

/// Settings of one [`SharedIndexInformer`]; `Default` gives no resync, the namespace index only,
/// and a [`DEFAULT_BACKLOG_MAX`] coalescing backlog per handler.
pub struct InformerConfig<K> {
    /// A name for logs and metric labels; defaults to the list-watcher's URL path.
    pub name: String,
    /// The default handler resync period and the initial check period (Y3, Y5: 0 = none).
    pub resync: Duration,
    /// The reflector's settings. The informer fills in `resync_period`, `should_resync` and
    /// `watch_error_handler` itself (R22, Y4, H14).
    pub reflector: ReflectorConfig,
    /// Index functions on top of the namespace index (X2, X3).
    pub indexers: Indexers<K>,
    /// Whether the namespace index is registered (X3). Default true.
    pub namespace_index: bool,
    /// The default backlog maximum of each handler (H10).
    pub handler_backlog_max: usize,
    /// The default overflow policy of each handler (H10).
    pub overflow: OverflowPolicy,
    /// The base transform applied before objects are stored (D8; see [`strip_managed_fields`]).
    /// The factory puts its transform here; [`SharedIndexInformer::set_transform`] adds a
    /// per-informer one that runs after it and never replaces it (F8, M9). Where and in what
    /// it runs (a decode pool thread, inside the informer's runtime and span): see
    /// [`SharedIndexInformer::set_transform`].
    pub transform: Option<TransformFn<K>>,
    /// Metric families to report into; share one across informers to register it once.
    pub metrics: Option<InformerMetrics>,
    /// How the delta FIFO orders deltas across keys (D10, D11): the keyed, coalescing queue
    /// (default) or client-go's ordered `RealFIFO` log. Handlers see the same kinds of events
    /// either way; the ordered log's memory grows with the event count under a slow consumer.
    pub fifo_mode: FifoMode,
    /// The queued deltas at which the reflector stops reading its watch until the processing
    /// loop has caught up by half (D12). Default
    /// [`DEFAULT_MAX_QUEUED_DELTAS`](crate::delta_fifo::DEFAULT_MAX_QUEUED_DELTAS); 0 = never
    /// (memory then holds whatever the watch delivers faster than processing). Lists are not
    /// bounded by it: a LIST or watch-list is queued whole, as before.
    pub max_queued_deltas: usize,
    /// Keys the processing loop pops and applies to the store under one lock (V3; client-go's
    /// batch processing, beta in 1.35). Per-key order and per-handler notifications are as with
    /// one key at a time. Default [`DEFAULT_BATCH_SIZE`]; 1 turns batching off. While a handler
    /// with [`OverflowPolicy::Block`] is registered the loop pops one key at a time, so what the
    /// handler cannot take yet stays in the FIFO (H10).
    pub batch_size: usize,
    /// Whether a relist reaches the store as one swap (V2; client-go's atomic `ReplacedAll`,
    /// beta in 1.36): a lister never shows half a relist, while handlers still get per-object
    /// notifications and tombstones. Default true, and it holds whatever the handlers' overflow
    /// policies. The first list is applied in batches either way: nothing reads a cache before
    /// it has synced (F4).
    pub atomic_relist: bool,
}

/// The default [`InformerConfig::batch_size`].
pub const DEFAULT_BATCH_SIZE: usize = 100;

impl<K> InformerConfig<K> {
    /// The reflector settings an informer starts from: docs/behaviour.md §1's, with the streaming
    /// initial list (V1, client-go 1.35+) and its fallback to paged LIST (R19, R20). A bare
    /// [`ReflectorConfig::default`] keeps R21's paged LIST.
    pub fn default_reflector() -> ReflectorConfig {
        ReflectorConfig {
            strategy: crate::reflector::InitialListStrategy::StreamingList,
            ..ReflectorConfig::default()
        }
    }
}

impl<K> Default for InformerConfig<K> {
    fn default() -> Self {
        InformerConfig {
            name: String::new(),
            resync: Duration::ZERO,
            reflector: Self::default_reflector(),
            indexers: Indexers::default(),
            namespace_index: true,
            handler_backlog_max: DEFAULT_BACKLOG_MAX,
            overflow: OverflowPolicy::default(),
            transform: None,
            metrics: None,
            fifo_mode: FifoMode::default(),
            max_queued_deltas: crate::delta_fifo::DEFAULT_MAX_QUEUED_DELTAS,
            batch_size: DEFAULT_BATCH_SIZE,
            atomic_relist: true,
        }
    }
}

impl<K> fmt::Debug for InformerConfig<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InformerConfig")
            .field("name", &self.name)
            .field("resync", &self.resync)
            .field("reflector", &self.reflector)
            .field("indexers", &self.indexers)
            .field("namespace_index", &self.namespace_index)
            .field("handler_backlog_max", &self.handler_backlog_max)
            .field("overflow", &self.overflow)
            .field("transform", &self.transform.is_some())
            .field("fifo_mode", &self.fifo_mode)
            .field("max_queued_deltas", &self.max_queued_deltas)
            .field("batch_size", &self.batch_size)
            .field("atomic_relist", &self.atomic_relist)
            .finish_non_exhaustive()
    }
}
