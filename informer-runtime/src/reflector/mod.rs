//! The reflector: list, then watch, and keep a [`ReflectorStore`] in step with the API server (docs/behaviour.md §1, R1–R23).
//!
//! One [`Reflector`] runs list+watch *cycles* until its `CancellationToken` is cancelled:
//!
//! 1. Initial state: a paged LIST (R2–R4, R11) or, with [`InitialListStrategy::StreamingList`], a
//!    watch-list stream (R17–R20), ending in one `store.replace_shared(items, rv)`.
//! 2. Watch from that RV, re-watching in place after normal ends (R9), 429s (R13) and, inside the
//!    R14 window, internal errors. Bookmarks go to `store.bookmark` (R5). The resync timer (R22)
//!    ticks alongside.
//! 3. Errors that end the cycle (R10, R12, R15) start the next cycle after one backoff delay (R1).
//!
//! Inside, it is an explicit state machine: a pure `step` from (state, event) to (state, action)
//! decides everything, with one table from error class to answer for the LIST, WATCH and
//! watch-list paths; a driver performs the actions. Objects reach the store finished:
//! transformed once as they are decoded (D8) and shared as the `Arc` the cache will hold.
//!
//! Retryability of [`Error`]: every variant is retried by the reflector itself except
//! [`Error::StoreClosed`], which stops it. The errors are reported through
//! [`ReflectorConfig::watch_error_handler`] and the log; `run` never returns them.

mod backoff;
mod cycle;
mod io;
mod list;
mod policy;
mod state;
mod watch_list;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::RwLock;
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;
use tracing::warn;

pub use self::backoff::{Backoff, BackoffConfig};
use crate::budget::{Breach, CacheBudget};
use crate::key::ObjectKey;
pub use crate::list_watch::DEFAULT_MAX_WATCH_LINE_BYTES;
use crate::list_watch::{self, ListWatch};
use crate::shard::{Shard, ShardMode};
use crate::store::{Keyed, ReflectorStore, StoreError};

/// Why a cycle, a watch or a list failed. All variants but [`Error::StoreClosed`] are retried by the
/// reflector (the comment on each says how); they reach users through the watch error handler.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A LIST failed. 410/"too large RV": relist at once at `""` (R11); otherwise a new cycle after
    /// backoff (R15).
    #[error("list failed: {0}")]
    List(#[source] list_watch::Error),
    /// A WATCH could not start. 429/connection refused: re-watch at the same RV after backoff (R13);
    /// 410: relist at the last RV after backoff (R12); otherwise R14/R15.
    #[error("watch failed to start: {0}")]
    WatchStart(#[source] list_watch::Error),
    /// A running watch failed: an `ERROR` event, a malformed line, a cut chunk or a broken connection.
    /// Handled by class like [`Error::WatchStart`]; a cut chunk or broken connection re-watches (R9).
    #[error("watch failed: {0}")]
    Watch(#[source] list_watch::Error),
    /// A watch event carried an object of another kind or a `Table` and was dropped (R16).
    #[error("dropped event: {0}")]
    UnexpectedObject(#[source] list_watch::Error),
    /// The watch ended within 1 s without any event (R10): a new cycle after backoff.
    #[error("very short watch: ended after {0:?} without events")]
    VeryShortWatch(Duration),
    /// The watch sent nothing for its timeout plus 5 s (R7): treated as a normal close (R9).
    #[error("watch sent nothing for {0:?}; treating the connection as dead")]
    DeadWatch(Duration),
    /// The watch-list stream did not deliver its `initial-events-end` bookmark (R20): falls back to a
    /// paged LIST in the same cycle and stays on paged LIST.
    #[error("watch-list stream abandoned: {0}")]
    WatchListIncomplete(String),
    /// `store.resync()` failed (R22): ends the current watch; a new cycle after backoff.
    #[error("resync failed: {0}")]
    Resync(#[source] StoreError),
    /// A paged LIST did not end (M15): the server repeated a `continue` token, or sent more than
    /// [`ReflectorConfig::max_list_pages`] pages. The pages read so far are dropped; a new cycle
    /// after backoff (R15).
    #[error("paged list abandoned after {pages} pages: {reason}")]
    EndlessList {
        /// Pages received in this list.
        pages: u32,
        /// Why the list was abandoned.
        reason: String,
    },
    /// A list would have taken the informer's [`CacheBudget`] past its limit: what it read is
    /// dropped and a new cycle starts after backoff (B2); or a live event did, and was applied
    /// (B3). See [`crate::budget`].
    #[error("over budget: {0}")]
    OverBudget(#[source] Breach),
    /// The store was closed: the reflector stops. Not retryable.
    #[error("store closed")]
    StoreClosed,
}

/// The default of [`ReflectorConfig::max_list_pages`]: 10 000 pages, 5 million objects at the
/// default page size (the largest clusters Kubernetes supports hold 150 000 Pods), so only a
/// server that never ends a list reaches it.
pub const DEFAULT_MAX_LIST_PAGES: u32 = 10_000;

/// `Result` with this module's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// How the initial state of a cycle is obtained (R21).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InitialListStrategy {
    /// A (paged) LIST, then a WATCH from its RV. The default.
    #[default]
    ListWatch,
    /// A watch-list stream (`sendInitialEvents=true`, KEP-3157, R17), falling back to paged LIST (R19, R20).
    StreamingList,
}

/// Callback deciding on each resync tick whether to resync (the informer's handlers decide, Y4).
pub type ShouldResync = Arc<dyn Fn() -> bool + Send + Sync>;

/// The default [`ReflectorConfig::max_bookmark_gap`]: two and a half times kube-apiserver's
/// bookmark period of one minute (R7).
pub const DEFAULT_MAX_BOOKMARK_GAP: Duration = Duration::from_secs(150);

/// Callback told about every error (client-go `SetWatchErrorHandler`).
pub type WatchErrorHandler = Arc<dyn Fn(&Error) + Send + Sync>;

/// The reflector's settings. `Default` gives the values of docs/behaviour.md §1.
#[derive(Clone)]
pub struct ReflectorConfig {
    /// A name for logs and spans; defaults to the list-watcher's URL path when empty.
    pub name: String,
    /// LIST page size (R3); `0` disables paging. Default 500.
    pub page_size: u32,
    /// The most pages one LIST may take before it is abandoned as endless (M15); `0` means no
    /// limit. Default [`DEFAULT_MAX_LIST_PAGES`]. A repeated `continue` token ends a list
    /// whatever this is.
    pub max_list_pages: u32,
    /// RV of the first LIST (R2, M6). Default `"0"` (served by the watch cache); `""` forces a quorum read.
    pub initial_list_rv: String,
    /// Backoff between cycles and before R13 re-watches (R1).
    pub backoff: BackoffConfig,
    /// Initial-list strategy (R21). Default [`InitialListStrategy::ListWatch`].
    pub strategy: InitialListStrategy,
    /// Idle time before a watch-list stream without `initial-events-end` is abandoned (R20). Default 30 s.
    pub watch_list_idle_timeout: Duration,
    /// The longest watch event line accepted, in bytes (M16): a longer line ends the watch as
    /// a broken stream. Default [`DEFAULT_MAX_WATCH_LINE_BYTES`] (16 MiB, as client-go).
    pub max_watch_line_bytes: usize,
    /// Minimum watch timeout; each watch asks for `[m, 2m)` with `m` at least 5 min (R6). Default 5 min.
    pub min_watch_timeout: Duration,
    /// The longest silence (no event, no bookmark) a running watch may keep once the server
    /// has shown it sends periodic bookmarks (R7): kube-apiserver sends one about every
    /// minute to a watch that asks (every watch does, R5), so a watch that hears nothing for
    /// well over that is on a dead connection. Default [`DEFAULT_MAX_BOOKMARK_GAP`] (150 s).
    /// Until a periodic bookmark has arrived (a server without a watch cache may send none),
    /// only the watch's own timeout plus 5 s applies.
    pub max_bookmark_gap: Duration,
    /// Window in which 500s on a watch are retried at once (R14). Default 0: never.
    pub max_internal_error_retry: Duration,
    /// Resync period (R22); zero disables the timer. Default 0.
    pub resync_period: Duration,
    /// Asked on each resync tick; `None` means always resync.
    pub should_resync: Option<ShouldResync>,
    /// Told about every error the reflector handles.
    pub watch_error_handler: Option<WatchErrorHandler>,
    /// `labelSelector` for LIST and WATCH.
    pub label_selector: Option<String>,
    /// `fieldSelector` for LIST and WATCH.
    pub field_selector: Option<String>,
    /// Cache only this slice of the collection (KEP-5866, see [`crate::shard`]): sent as
    /// `shardSelector` on every LIST and WATCH, and applied on the client to every LIST page
    /// whose `shardInfo.selector` is missing or differs from the one sent, and to every watch
    /// event (S4: a filtering server sends no foreign event, so the probe costs nothing there).
    /// A sharded reflector starts with a paged LIST even under
    /// [`InitialListStrategy::StreamingList`], since only a LIST answer says whether the server
    /// applied the selector. Default `None`.
    pub shard: Option<Shard>,
    /// The budget this reflector charges for what it lists and caches (B1-B4, see
    /// [`crate::budget`]). Default `None`: no bound.
    pub budget: Option<CacheBudget>,
}

impl Default for ReflectorConfig {
    fn default() -> Self {
        ReflectorConfig {
            name: String::new(),
            page_size: 500,
            max_list_pages: DEFAULT_MAX_LIST_PAGES,
            initial_list_rv: "0".to_string(),
            backoff: BackoffConfig::default(),
            strategy: InitialListStrategy::ListWatch,
            watch_list_idle_timeout: Duration::from_secs(30),
            max_watch_line_bytes: DEFAULT_MAX_WATCH_LINE_BYTES,
            min_watch_timeout: policy::MIN_WATCH_TIMEOUT_FLOOR,
            max_bookmark_gap: DEFAULT_MAX_BOOKMARK_GAP,
            max_internal_error_retry: Duration::ZERO,
            resync_period: Duration::ZERO,
            should_resync: None,
            watch_error_handler: None,
            label_selector: None,
            field_selector: None,
            shard: None,
            budget: None,
        }
    }
}

impl fmt::Debug for ReflectorConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorConfig")
            .field("name", &self.name)
            .field("page_size", &self.page_size)
            .field("max_list_pages", &self.max_list_pages)
            .field("initial_list_rv", &self.initial_list_rv)
            .field("backoff", &self.backoff)
            .field("strategy", &self.strategy)
            .field("watch_list_idle_timeout", &self.watch_list_idle_timeout)
            .field("max_watch_line_bytes", &self.max_watch_line_bytes)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("max_bookmark_gap", &self.max_bookmark_gap)
            .field("max_internal_error_retry", &self.max_internal_error_retry)
            .field("resync_period", &self.resync_period)
            .field("label_selector", &self.label_selector)
            .field("field_selector", &self.field_selector)
            .field("shard", &self.shard.as_ref().map(Shard::selector))
            .field("budget", &self.budget)
            .finish_non_exhaustive()
    }
}

/// A snapshot of the reflector's counters (for metrics and tests).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReflectorCounters {
    /// List+watch cycles started (the first one included).
    pub cycles: u64,
    /// LIST requests sent (every page counts).
    pub list_requests: u64,
    /// Complete lists after the first (paged LIST or watch-list): the relists.
    pub relists: u64,
    /// WATCH requests sent (watch-list streams included).
    pub watch_requests: u64,
    /// Watches restarted within a cycle without relisting (R9, R13, R14).
    pub rewatches: u64,
    /// Watch-list streams abandoned for a paged LIST (R19, R20).
    pub watch_list_fallbacks: u64,
    /// Resyncs triggered (R22).
    pub resyncs: u64,
    /// Errors handled.
    pub errors: u64,
    /// Listed or watched objects dropped because they have no key (no `metadata.name`); only
    /// that object is dropped, never the rest of its list.
    pub invalid_objects: u64,
    /// Objects dropped because the transform panicked on them (M17).
    pub transform_panics: u64,
    /// Times the watch stopped reading because the store held its bound of unprocessed deltas,
    /// until the consumer caught up (D12).
    pub watch_pauses: u64,
    /// Protobuf fields of a newer Kubernetes version passed over while decoding (T8): the
    /// server is newer than this build's schema; nothing the cached form holds was lost.
    pub protobuf_fields_passed_over: u64,
}

#[derive(Default)]
struct Counters {
    cycles: AtomicU64,
    list_requests: AtomicU64,
    relists: AtomicU64,
    watch_requests: AtomicU64,
    rewatches: AtomicU64,
    watch_list_fallbacks: AtomicU64,
    resyncs: AtomicU64,
    errors: AtomicU64,
    invalid_objects: AtomicU64,
    transform_panics: AtomicU64,
    watch_pauses: AtomicU64,
}

#[derive(Default)]
struct Shared {
    last_sync_rv: RwLock<Option<String>>,
    counters: Counters,
    /// The list-watcher's count of passed-over protobuf fields (T8).
    newer_fields: Arc<AtomicU64>,
    /// How the shard is applied: 0 no shard (or not listed yet), 1 server, 2 client (KEP-5866).
    shard_mode: std::sync::atomic::AtomicU8,
}

impl Shared {
    /// Records how the last LIST's shard was applied; logs a change.
    fn set_shard_mode(&self, mode: ShardMode) {
        let code = match mode {
            ShardMode::Server => 1,
            ShardMode::Client => 2,
        };
        if self.shard_mode.swap(code, Ordering::Relaxed) != code {
            match mode {
                ShardMode::Server => tracing::info!("the server applies the shard selector"),
                ShardMode::Client => tracing::info!(
                    "the server did not apply the shard selector (no `shardInfo`, or another selector echoed); filtering on the client"
                ),
            }
        }
    }

    fn shard_mode(&self) -> Option<ShardMode> {
        match self.shard_mode.load(Ordering::Relaxed) {
            1 => Some(ShardMode::Server),
            2 => Some(ShardMode::Client),
            _ => None,
        }
    }
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}

/// The finish stage, one for the LIST, the watch-list and the watch (D8, M8, M17): every
/// decoded object is checked for a name, transformed under the panic guard, keyed once and
/// shared through the store (which reuses its cached `Arc` for an unchanged object), so an
/// initial list is never held untransformed, nor twice, and no store builds the key again.
/// Built on the reflector's task ([`Io::finish`](io::Io::finish)), it carries that task's
/// runtime and span to the decode pool's threads, where a LIST's objects finish (T6).
pub(super) struct Finish<K> {
    store: Arc<dyn ReflectorStore<K>>,
    shared: Arc<Shared>,
    context: TransformContext,
}

impl<K: crate::object::Meta> Finish<K> {
    /// The stage for `store`, in the current runtime and span (call on the reflector's task).
    fn capture(store: Arc<dyn ReflectorStore<K>>, shared: Arc<Shared>) -> Self {
        Finish {
            store,
            shared,
            context: TransformContext::capture(),
        }
    }

    /// The finished object, or `None` when it was dropped.
    ///
    /// M17: an object without a key (no `metadata.name`, or one its transform removed) is
    /// dropped here, alone, and counted, so it can neither make the store refuse a whole list
    /// nor reach the store at all; a transform that panics drops that object alone.
    pub(super) fn apply(&self, mut obj: K) -> Option<Keyed<K>> {
        // Checked before the transform, so user code never sees an object that cannot be cached.
        if obj.object_name().is_none_or(str::is_empty) {
            bump(&self.shared.counters.invalid_objects);
            // The object's contents stay out of the log.
            warn!("dropping an object without `metadata.name`");
            return None;
        }
        let store = &*self.store;
        let caught = self.context.enter(|| guarded(|| store.transform(&mut obj)));
        if let Err(payload) = caught {
            // The key as the half-run transform left it.
            let who = ObjectKey::from_resource(&obj)
                .unwrap_or_else(|_| ObjectKey::new(None, "<no name>"));
            report_transform_panic(&self.shared, &who, &*payload);
            return None;
        }
        let Ok(key) = ObjectKey::from_resource(&obj) else {
            bump(&self.shared.counters.invalid_objects);
            warn!("dropping an object whose transform removed its `metadata.name`");
            return None;
        };
        let obj = store.share(&key, obj);
        Some((key, obj))
    }

    /// A watched `DELETED`: handed to the store untransformed, which transforms it only if it
    /// queues it (D4, D8), under the same panic guard (M17). An object without a name is
    /// [`StoreError::Key`].
    pub(super) fn delete(&self, obj: K) -> Result<(), StoreError> {
        let key = ObjectKey::from_resource(&obj)?;
        let store = &*self.store;
        let who = key.clone();
        guarded(|| store.delete(key, obj)).unwrap_or_else(|payload| {
            report_transform_panic(&self.shared, &who, &*payload);
            Ok(())
        })
    }
}

/// M17: runs `f`, a store call that runs the user's transform, and catches a panic in it, so
/// a bad transform costs that one object: the caller logs it with the object's key (its
/// contents never) and counts it ([`report_transform_panic`]), and drops the object. Without
/// this a panic ends the reflector task on the watch path, and fails (and retries) the whole
/// list on the list path.
fn guarded<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    // Only the object `f` works on, which the caller drops after a panic, can be left
    // half-transformed.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
}

/// What a transform runs in wherever it runs (T6, D8): the tokio runtime and the tracing
/// span of the reflector that decoded the object, captured on the reflector's task and entered
/// around the transform on a decode pool thread, so `tokio::runtime::Handle::current()` (and
/// `tokio::spawn`) work there as on the reflector's task, and its logs carry the informer's span.
struct TransformContext {
    runtime: Option<tokio::runtime::Handle>,
    span: tracing::Span,
}

impl TransformContext {
    /// The current runtime and span (call on the reflector's task).
    fn capture() -> Self {
        TransformContext {
            runtime: tokio::runtime::Handle::try_current().ok(),
            span: tracing::Span::current(),
        }
    }

    /// Runs `f` inside the captured runtime and span.
    fn enter<R>(&self, f: impl FnOnce() -> R) -> R {
        let _runtime = self.runtime.as_ref().map(tokio::runtime::Handle::enter);
        self.span.in_scope(f)
    }
}

/// Logs and counts a transform panic (M17).
fn report_transform_panic(shared: &Shared, key: &ObjectKey, payload: &(dyn std::any::Any + Send)) {
    bump(&shared.counters.transform_panics);
    tracing::error!(%key, "the transform panicked; dropping this object (M17)");
    // A panic message is the transform's own text, which may quote the object.
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    tracing::debug!(%key, %message, "transform panic message");
}

/// A cheap, cloneable view of a running reflector: its last synced RV and counters.
#[derive(Clone, Default)]
pub struct ReflectorHandle {
    shared: Arc<Shared>,
}

impl fmt::Debug for ReflectorHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorHandle")
            .field(
                "last_sync_resource_version",
                &self.last_sync_resource_version(),
            )
            .finish()
    }
}

impl ReflectorHandle {
    /// The RV of the last list, watch event or bookmark the store received (R23); `None` before the first list.
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.shared.last_sync_rv.read().clone()
    }

    /// How the reflector's shard is applied, as the last LIST answer said (KEP-5866); `None`
    /// without a shard or before the first LIST page.
    pub fn shard_mode(&self) -> Option<ShardMode> {
        self.shared.shard_mode()
    }

    /// The counters so far.
    pub fn counters(&self) -> ReflectorCounters {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ReflectorCounters {
            cycles: get(&c.cycles),
            list_requests: get(&c.list_requests),
            relists: get(&c.relists),
            watch_requests: get(&c.watch_requests),
            rewatches: get(&c.rewatches),
            watch_list_fallbacks: get(&c.watch_list_fallbacks),
            resyncs: get(&c.resyncs),
            errors: get(&c.errors),
            invalid_objects: get(&c.invalid_objects),
            transform_panics: get(&c.transform_panics),
            watch_pauses: get(&c.watch_pauses),
            protobuf_fields_passed_over: get(&self.shared.newer_fields),
        }
    }
}

/// Lists and watches one resource into a [`ReflectorStore`] (client-go's `Reflector`).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use informer_runtime::{list_watch::ListWatch, reflector::*, store::ReflectorStore};
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # async fn f(client: kube::Client, store: Arc<dyn ReflectorStore<ConfigMap>>) {
/// let lw = ListWatch::new(kube::Api::<ConfigMap>::all(client));
/// let reflector = Reflector::new(lw, store, ReflectorConfig::default());
/// let handle = reflector.handle();
/// let cancel = tokio_util::sync::CancellationToken::new();
/// tokio::spawn(reflector.run(cancel.clone()));
/// // … later
/// println!("{:?}", handle.last_sync_resource_version());
/// cancel.cancel();
/// # }
/// ```
pub struct Reflector<K> {
    lw: ListWatch<K>,
    store: Arc<dyn ReflectorStore<K>>,
    config: ReflectorConfig,
    handle: ReflectorHandle,
}

impl<K> fmt::Debug for Reflector<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("list_watch", &self.lw)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<K> Reflector<K>
where
    K: crate::object::Meta + DeserializeOwned,
{
    /// A reflector that fills `store` from `list_watch`.
    pub fn new(
        list_watch: ListWatch<K>,
        store: Arc<dyn ReflectorStore<K>>,
        mut config: ReflectorConfig,
    ) -> Self {
        if config.name.is_empty() {
            config.name = list_watch.url_path().to_string();
        }
        let handle = ReflectorHandle {
            shared: Arc::new(Shared {
                newer_fields: list_watch.newer_fields_counter(),
                ..Shared::default()
            }),
        };
        Reflector {
            lw: list_watch,
            store,
            config,
            handle,
        }
    }

    /// A handle to read the last synced RV and the counters, valid after `run` consumed the reflector.
    pub fn handle(&self) -> ReflectorHandle {
        self.handle.clone()
    }

    /// The last synced RV (R23); see [`ReflectorHandle::last_sync_resource_version`].
    pub fn last_sync_resource_version(&self) -> Option<String> {
        self.handle.last_sync_resource_version()
    }

    /// Runs list+watch cycles until `cancel` is cancelled or the store closes. Spawns no task that
    /// outlives it.
    pub async fn run(self, cancel: CancellationToken) {
        let span = tracing::info_span!("reflector", resource = %self.config.name);
        let _ = tracing::Instrument::instrument(cycle::run(self, cancel), span).await;
    }
}
