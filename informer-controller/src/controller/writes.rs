//! Read your own writes (K1-K4): a reconcile never starts on a cache older than the writes
//! earlier reconciles of its key made.
//!
//! A reconcile that writes (creates an owned object, patches a finalizer, updates status) is
//! often run again before the informers have seen that write: the write's own watch event, an
//! owned object's event or a requeue enqueue the key at once, and the cache still holds the
//! state from before. Acting on it creates twice, or flips status back and forth.
//! kube-controller-manager (KEP-5647), controller-runtime v0.25 and java-operator-sdk guard
//! against it; so does this controller:
//!
//! - **K2.** Writes made for a reconcile are recorded under the reconcile's key, with the
//!   resourceVersion the server returned, through a [`WriteRecorder`]
//!   ([`Context::recorder`](super::Context::recorder)). The crate's write helpers
//!   ([`finalizer`](crate::finalizer::finalizer), [`update_status`](crate::status::update_status))
//!   take one; a write through `kube::Api` is recorded with [`WriteRecorder::record`].
//! - **K3.** Before the next reconcile of that key, the worker waits until the informer of each
//!   written kind has stored that resourceVersion (woken as the store advances), at most the
//!   controller's [`read_your_writes_timeout`](super::Controller::read_your_writes_timeout),
//!   counting the wait in `stale_sync_skips_total`; past the timeout it reconciles anyway and logs
//!   a warning. A recorded write is forgotten once waited for. An informer that has not synced
//!   (its LIST forbidden, its resource not served yet) is not waited for: it may never store
//!   the write.
//! - **K1.** resourceVersions are compared as integers (kube-apiserver's are, KEP-5504); a write
//!   whose resourceVersion is not a number is not recorded, so the guard is off for it.
//! - **K4.** Bookmarks advance an informer's store resourceVersion, so a write to a quiet kind is
//!   caught up within the server's bookmark interval.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use informer_runtime::factory::GenericInformer;
use informer_runtime::key::ObjectKey;
use informer_runtime::lister::GroupResource;
use informer_runtime::{Object, SharedInformerFactory};
use parking_lot::Mutex;

/// An informer's store, as far as the guard needs it.
trait StoreVersion: Send + Sync {
    /// Whether the informer has synced: until then it may never store anything (a 403, a
    /// resource not served yet), so the guard does not wait on it (K3).
    fn synced(&self) -> bool;
    /// Whether the store has reached `rv`.
    fn reached(&self, rv: u64) -> bool;
    /// Resolves once it has (`true`), or the informer stopped (`false`).
    fn wait(&self, rv: u64) -> BoxFuture<'static, bool>;
    /// The informer's name, for the warning.
    fn informer_name(&self) -> String;
}

impl StoreVersion for GenericInformer {
    fn synced(&self) -> bool {
        self.has_synced()
    }

    fn reached(&self, rv: u64) -> bool {
        self.last_store_resource_version()
            .and_then(|s| s.parse::<u64>().ok())
            .is_some_and(|stored| stored >= rv)
    }

    fn wait(&self, rv: u64) -> BoxFuture<'static, bool> {
        Box::pin(self.wait_for_store_resource_version(rv))
    }

    fn informer_name(&self) -> String {
        self.name().to_owned()
    }
}

/// One recorded write: the resourceVersion it returned and the store that must reach it.
#[derive(Clone)]
struct Pending {
    rv: u64,
    store: Arc<dyn StoreVersion>,
}

/// The writes recorded per reconcile key (K2), shared by a controller run's workers.
#[derive(Default)]
pub(crate) struct WriteLog {
    pending: Mutex<HashMap<ObjectKey, Vec<Pending>>>,
}

impl WriteLog {
    fn record(&self, key: &ObjectKey, write: Pending) {
        let mut pending = self.pending.lock();
        let writes = pending.entry(key.clone()).or_default();
        writes.retain(|w| !w.store.reached(w.rv));
        writes.push(write);
    }

    /// The key's writes that its informers have not stored yet; the rest are forgotten.
    pub(crate) fn outstanding(
        &self,
        key: &ObjectKey,
    ) -> Vec<(u64, String, BoxFuture<'static, bool>)> {
        let mut pending = self.pending.lock();
        let Some(writes) = pending.remove(key) else {
            return Vec::new();
        };
        // Forgotten whether or not they are caught up: each write is waited for once (K3).
        writes
            .into_iter()
            .filter(|w| !w.store.reached(w.rv))
            .filter(|w| {
                // K3: an informer that has not synced (its LIST refused by RBAC, its resource
                // not served yet) may never store the write: waiting would end only at the
                // timeout, for every reconcile of the key.
                let synced = w.store.synced();
                if !synced {
                    tracing::debug!(key = %key, informer = %w.store.informer_name(), rv = w.rv, "not waiting for a write to a cache that has not synced (K3)");
                }
                synced
            })
            .map(|w| (w.rv, w.store.informer_name(), w.store.wait(w.rv)))
            .collect()
    }

    /// Keys with recorded writes (for tests and debugging).
    #[cfg(test)]
    pub(crate) fn keys(&self) -> usize {
        self.pending.lock().len()
    }
}

/// Records the writes a reconcile makes, so that the next reconcile of its key waits until the
/// caches hold them (K2, K3). Get one from [`Context::recorder`](super::Context::recorder);
/// [`WriteRecorder::detached`] records nothing (for the helpers outside a controller).
///
/// ```no_run
/// # use std::sync::Arc;
/// # use informer_controller::{Action, Context, Request};
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # use kube::api::{Api, PostParams};
/// async fn reconcile(req: Request<ConfigMap>, ctx: Arc<Context<()>>) -> Result<Action, kube::Error> {
///     let ns = req.namespace().unwrap_or("default");
///     let api = Api::<ConfigMap>::namespaced(ctx.client().clone(), ns);
///     let mut owned = ConfigMap::default();
///     owned.metadata.name = Some(format!("{}-owned", req.name()));
///     let created = api.create(&PostParams::default(), &owned).await?;
///     // The next reconcile of this key sees `created` in the ConfigMap cache, or waits for it.
///     ctx.recorder(&req.key).record(&created);
///     Ok(Action::Done)
/// }
/// ```
#[derive(Clone)]
pub struct WriteRecorder {
    inner: Option<(ObjectKey, Arc<WriteLog>, SharedInformerFactory)>,
}

impl WriteRecorder {
    pub(crate) fn new(key: ObjectKey, log: Arc<WriteLog>, factory: SharedInformerFactory) -> Self {
        WriteRecorder {
            inner: Some((key, log, factory)),
        }
    }

    /// A recorder that records nothing: for the write helpers used outside a controller, or
    /// by a controller with the guard off.
    pub fn detached() -> Self {
        WriteRecorder { inner: None }
    }

    /// Records `written`, the object a write returned (create, update, patch, status, or the
    /// object a delete returned), under the reconcile's key. `written` is any form of the
    /// written kind: the k8s-openapi type `kube::Api` returns, or a compact form or projection
    /// of it; the write is waited for by every informer of the factory that caches that kind,
    /// whichever form it holds (the kind itself, its compact form, projections: K3). Nothing
    /// is recorded when no such informer is running (no cache can be stale), when the
    /// factory's namespace, selectors or shard keep the object out of them (K3), or when its
    /// resourceVersion is not a number (K1).
    pub fn record<T: Object>(&self, written: &T) {
        let Some((key, log, factory)) = &self.inner else {
            return;
        };
        let Some(rv) = written
            .object_resource_version()
            .and_then(|rv| rv.parse::<u64>().ok())
        else {
            return;
        };
        let kind = GroupResource::of::<T::Source>();
        let running: Vec<GenericInformer> = factory
            .informers_of(&kind)
            .into_iter()
            .filter(|i| i.is_started() && !i.is_stopped())
            .collect();
        if running.is_empty() {
            tracing::debug!(key = %key, resource = %kind, "no running informer caches this kind; the write is not recorded (K3)");
            return;
        }
        // K3: only a store that will hold the write may be waited for: the namespace and
        // selectors of the kind's informers (its scope, F11, or the factory's; the same for all
        // its forms) and the factory's shard must admit the object.
        if !super::admission::admits(factory, &kind, written) {
            tracing::debug!(key = %key, resource = %kind, "a write these informers never store is not recorded (K3)");
            return;
        }
        for informer in running {
            log.record(
                key,
                Pending {
                    rv,
                    store: Arc::new(informer),
                },
            );
        }
    }

    /// The key writes are recorded under (`None` when detached).
    pub fn key(&self) -> Option<&ObjectKey> {
        self.inner.as_ref().map(|(key, _, _)| key)
    }
}

impl fmt::Debug for WriteRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteRecorder")
            .field("key", &self.key())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::{ConfigMap, Secret};

    use super::*;

    fn factory() -> SharedInformerFactory {
        // Nothing is started, so nothing connects.
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("a URI"));
        SharedInformerFactory::new(kube::Client::try_from(config).expect("a client"))
    }

    fn written<T: kube::Resource + Default>(rv: &str) -> T {
        let mut obj = T::default();
        obj.meta_mut().name = Some("x".into());
        obj.meta_mut().resource_version = Some(rv.into());
        obj
    }

    #[tokio::test]
    async fn only_numeric_writes_to_cached_kinds_are_recorded() {
        let factory = factory();
        let informer = factory.informer_for::<ConfigMap>();
        let log = Arc::new(WriteLog::default());
        let key = ObjectKey::new(Some("ns"), "owner");
        let recorder = WriteRecorder::new(key.clone(), Arc::clone(&log), factory);
        // K3: an informer that is not running never stores the write.
        recorder.record(&written::<ConfigMap>("12"));
        assert_eq!(log.keys(), 0);
        // Running (its requests fail: nothing listens on port 9; it never stores anything).
        let stop = tokio_util::sync::CancellationToken::new();
        let _task = informer.start(stop.clone());
        for _ in 0..1_000 {
            if informer.is_started() {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(informer.is_started());
        // K1: an opaque resourceVersion turns the guard off for that write.
        recorder.record(&written::<ConfigMap>("opaque"));
        // No Secret informer in the factory: no cache to be stale.
        recorder.record(&written::<Secret>("12"));
        assert_eq!(log.keys(), 0);
        recorder.record(&written::<ConfigMap>("12"));
        assert_eq!(log.keys(), 1);
        assert!(
            log.outstanding(&key).is_empty(),
            "K3: an informer that never synced is not waited for"
        );
        assert_eq!(log.keys(), 0, "and the write is forgotten");
        WriteRecorder::detached().record(&written::<ConfigMap>("13"));
        assert_eq!(log.keys(), 0);
        stop.cancel();
    }

    /// A store as the guard sees it, set by the test.
    #[derive(Default)]
    struct FakeStore {
        synced: std::sync::atomic::AtomicBool,
        rv: std::sync::atomic::AtomicU64,
    }

    impl StoreVersion for FakeStore {
        fn synced(&self) -> bool {
            self.synced.load(std::sync::atomic::Ordering::SeqCst)
        }
        fn reached(&self, rv: u64) -> bool {
            self.rv.load(std::sync::atomic::Ordering::SeqCst) >= rv
        }
        fn wait(&self, _rv: u64) -> BoxFuture<'static, bool> {
            Box::pin(std::future::pending())
        }
        fn informer_name(&self) -> String {
            "fake".into()
        }
    }

    /// K3: a write is waited for once, and only by a synced store behind it.
    #[test]
    fn only_synced_stores_behind_a_write_are_waited_for() {
        let log = WriteLog::default();
        let key = ObjectKey::new(Some("ns"), "owner");
        let store = Arc::new(FakeStore::default());
        let pending = || Pending {
            rv: 12,
            store: Arc::clone(&store) as Arc<dyn StoreVersion>,
        };
        log.record(&key, pending());
        assert!(log.outstanding(&key).is_empty(), "not synced: no wait");
        store
            .synced
            .store(true, std::sync::atomic::Ordering::SeqCst);
        log.record(&key, pending());
        let outstanding = log.outstanding(&key);
        assert_eq!(outstanding.len(), 1, "synced, and behind 12");
        assert_eq!(outstanding[0].0, 12);
        assert!(log.outstanding(&key).is_empty(), "waited for once");
        log.record(&key, pending());
        store.rv.store(12, std::sync::atomic::Ordering::SeqCst);
        assert!(log.outstanding(&key).is_empty(), "caught up");
    }
}
