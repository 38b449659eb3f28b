//! State shared by the HTTP handlers and the [`TestServer`](crate::TestServer) handle.

use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::faults::Faults;
use crate::log::RequestLog;
use crate::resources::{Registry, ResourceInfo};
use crate::status::ApiError;
use crate::store::Store;

/// Settings fixed at start.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// Interval of periodic BOOKMARK events.
    pub(crate) bookmark_interval: Duration,
    /// Keep stored objects compressed.
    pub(crate) compress_objects: bool,
    /// Encode built-in objects as protobuf at the write (`TestServerBuilder::eager_protobuf`).
    pub(crate) eager_protobuf: bool,
    /// The fields protobuf answers carry (`TestServerBuilder::newer_schema`, T8).
    pub(crate) protobuf_schema: crate::protobuf::Schema,
    /// The `WatchListCompression` feature gate: gzip watch-list streams (T3).
    pub(crate) watch_list_compression: bool,
    /// The watch cache: LISTs at resourceVersion "0" are answered whole
    /// (`TestServerBuilder::watch_cache`).
    pub(crate) watch_cache: bool,
    /// Garbage collection by owner references (`TestServerBuilder::garbage_collection`).
    pub(crate) garbage_collection: bool,
}

/// Everything the server shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) store: Store,
    pub(crate) registry: RwLock<Registry>,
    pub(crate) faults: Faults,
    pub(crate) log: RequestLog,
    pub(crate) settings: Settings,
    pub(crate) active_watches: AtomicUsize,
    pub(crate) shutdown: CancellationToken,
    /// Bumped whenever the request log or the open-watch count changes.
    pub(crate) changed: tokio::sync::watch::Sender<u64>,
    /// Bumped whenever a served resource goes away (its CRD was deleted or changed).
    pub(crate) resources_removed: tokio::sync::watch::Sender<u64>,
    /// The `ShardedListAndWatch` feature gate (KEP-5866) as LISTs see it: on, `shardSelector`
    /// filters LISTs and they echo `shardInfo`; off, the parameter is ignored, as by an older
    /// server. Separate from the WATCH gate, so a test can play two API servers behind one
    /// load balancer, only one of which has the gate (S4).
    pub(crate) sharded_list: std::sync::atomic::AtomicBool,
    /// The `ConsistentListFromCacheSkipTimeoutFallback` feature gate (alpha in 1.37, off by
    /// default): a consistent LIST the lagging watch cache cannot serve in time answers 429
    /// instead of reading storage (`Faults::lag_watch_cache`).
    pub(crate) consistent_list_skip_fallback: std::sync::atomic::AtomicBool,
    /// The `ManagedFieldsOptOut` feature gate (KEP-5958, alpha in 1.38, off by default): a
    /// request whose `Accept` says `drop=metadata.managedFields` gets objects without them.
    pub(crate) managed_fields_opt_out: std::sync::atomic::AtomicBool,
    /// The gate as WATCHes see it: on, `shardSelector` filters watch events.
    pub(crate) sharded_watch: std::sync::atomic::AtomicBool,
    /// While set (and the gate on), the server applies and echoes this shard selector instead
    /// of the one the request sent, as a misbehaving server or proxy would (S4).
    pub(crate) shard_selector_override: std::sync::Mutex<Option<String>>,
    /// The garbage collector (decision record 28).
    pub(crate) gc: crate::gc::Collector,
    /// The bearer token every request but /version and the health checks must carry; `None`:
    /// any request is served. Starts as the settings' token; `TestServer::set_bearer_token`
    /// changes it, as a rotated credential would.
    pub(crate) token: std::sync::RwLock<Option<Arc<str>>>,
}

impl Shared {
    pub(crate) fn new(
        settings: Settings,
        token: Option<String>,
        history_size: usize,
        watch_buffer: usize,
    ) -> Arc<Self> {
        Arc::new(Shared {
            store: Store::new(history_size, watch_buffer)
                .compress_objects(settings.compress_objects)
                .eager_protobuf(settings.eager_protobuf)
                .protobuf_schema(settings.protobuf_schema),
            registry: RwLock::new(Registry::with_builtins()),
            faults: Faults::default(),
            log: RequestLog::default(),
            active_watches: AtomicUsize::new(0),
            shutdown: CancellationToken::new(),
            changed: tokio::sync::watch::Sender::new(0),
            resources_removed: tokio::sync::watch::Sender::new(0),
            sharded_list: std::sync::atomic::AtomicBool::new(true),
            sharded_watch: std::sync::atomic::AtomicBool::new(true),
            consistent_list_skip_fallback: std::sync::atomic::AtomicBool::new(false),
            managed_fields_opt_out: std::sync::atomic::AtomicBool::new(false),
            shard_selector_override: std::sync::Mutex::new(None),
            gc: crate::gc::Collector::new(settings.garbage_collection),
            token: std::sync::RwLock::new(token.map(Arc::from)),
            settings,
        })
    }

    /// The bearer token requests must carry now.
    pub(crate) fn token(&self) -> Option<Arc<str>> {
        self.token
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Whether `presented` is the token requests must carry now (any, if there is none).
    pub(crate) fn accepts_token(&self, presented: Option<&str>) -> bool {
        let token = self
            .token
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match (token.as_deref(), presented) {
            (None, _) => true,
            (Some(token), Some(presented)) => presented == token,
            (Some(_), None) => false,
        }
    }

    /// Wakes everyone waiting for a log or watch-count change.
    pub(crate) fn notify(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    pub(crate) fn registry(&self) -> RwLockReadGuard<'_, Registry> {
        self.registry
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn registry_mut(&self) -> RwLockWriteGuard<'_, Registry> {
        self.registry
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Resolves an `apiVersion` + `kind` to a served resource.
    pub(crate) fn resolve_kind(
        &self,
        api_version: &str,
        kind: &str,
    ) -> Result<Arc<ResourceInfo>, ApiError> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.registry().by_kind(group, version, kind).ok_or_else(|| {
            ApiError::new(
                404,
                "NotFound",
                format!("the server could not find the requested resource: no matches for kind {kind:?} in version {api_version:?}"),
            )
        })
    }
}
