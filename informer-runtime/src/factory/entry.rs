//! The factory's registry entries: informer ids and type-erased control of each informer.

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use kube::api::GroupVersionResource;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use tokio_util::sync::CancellationToken;

use super::GenericInformer;
use crate::informer::SharedIndexInformer;

/// Identifies one informer of a factory (F1): a Rust type, the metadata-only view of a type,
/// or a resource known only at run time. Displays as `group/version/resource`.
#[derive(Clone)]
pub struct InformerId {
    key: IdKey,
    gvr: Option<GroupVersionResource>,
    label: Arc<str>,
}

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
enum IdKey {
    Typed(TypeId),
    Metadata(TypeId),
    Resource(String, String, String),
}

impl InformerId {
    /// The id of the typed informer for `K`. A projection (P4) has its own informer, apart from
    /// its source kind's, and its label names it: `v1/pods (projection PodView)`.
    pub fn of<K: super::Object>() -> Self {
        let gvr = gvr_of::<K::Source>();
        let suffix = if TypeId::of::<K>() == TypeId::of::<K::Source>() {
            String::new()
        } else {
            let full = std::any::type_name::<K>();
            format!(" (projection {})", full.rsplit("::").next().unwrap_or(full))
        };
        InformerId {
            key: IdKey::Typed(TypeId::of::<K>()),
            label: gvr_label(&gvr, &suffix),
            gvr: Some(gvr),
        }
    }

    /// The id of the metadata-only informer for `K`.
    pub fn metadata_of<K: kube::Resource<DynamicType = ()> + 'static>() -> Self {
        let gvr = gvr_of::<K>();
        InformerId {
            key: IdKey::Metadata(TypeId::of::<K>()),
            label: gvr_label(&gvr, " (metadata)"),
            gvr: Some(gvr),
        }
    }

    /// The id of the dynamic informer for `gvr`.
    pub fn resource(gvr: &GroupVersionResource) -> Self {
        InformerId {
            key: IdKey::Resource(gvr.group.clone(), gvr.version.clone(), gvr.resource.clone()),
            label: gvr_label(gvr, ""),
            gvr: Some(gvr.clone()),
        }
    }

    /// The resource this informer lists and watches.
    pub fn gvr(&self) -> Option<&GroupVersionResource> {
        self.gvr.as_ref()
    }

    /// Whether this is a metadata-only informer.
    pub fn is_metadata(&self) -> bool {
        matches!(self.key, IdKey::Metadata(_))
    }
}

fn gvr_of<K: kube::Resource<DynamicType = ()>>() -> GroupVersionResource {
    GroupVersionResource::gvr(&K::group(&()), &K::version(&()), &K::plural(&()))
}

/// `group/version/resource` (`version/resource` for the core group), plus `suffix`.
pub(super) fn gvr_label(gvr: &GroupVersionResource, suffix: &str) -> Arc<str> {
    let base = if gvr.group.is_empty() {
        format!("{}/{}", gvr.version, gvr.resource)
    } else {
        format!("{}/{}/{}", gvr.group, gvr.version, gvr.resource)
    };
    Arc::from(format!("{base}{suffix}"))
}

impl PartialEq for InformerId {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl Eq for InformerId {}
impl std::hash::Hash for InformerId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state)
    }
}
impl PartialOrd for InformerId {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for InformerId {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.label
            .cmp(&other.label)
            .then_with(|| self.key.cmp(&other.key))
    }
}
impl fmt::Display for InformerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.label)
    }
}
impl fmt::Debug for InformerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InformerId({})", self.label)
    }
}

/// Type-erased control of one informer: what the factory does to all of them alike.
pub(crate) trait Control: Send + Sync {
    fn start(&self, parent: &CancellationToken);
    fn is_started(&self) -> bool;
    fn has_synced(&self) -> bool;
    fn wait_for_sync(&self) -> BoxFuture<'static, bool>;
    fn stop(&self);
    fn wait_stopped(&self) -> BoxFuture<'static, ()>;
    fn last_error(&self) -> Option<String>;
    fn generic(&self) -> GenericInformer;
    fn snapshot(&self) -> crate::informer::collector::Snapshot;
    fn synced_checker(&self) -> crate::informer::SyncedChecker;
}

struct Controlled<K> {
    informer: Arc<SharedIndexInformer<K>>,
    group_resource: crate::lister::GroupResource,
    last_error: Arc<Mutex<Option<String>>>,
    started: AtomicBool,
}

impl<K> Control for Controlled<K>
where
    K: crate::object::Meta + Clone + serde::de::DeserializeOwned + fmt::Debug,
{
    fn start(&self, parent: &CancellationToken) {
        if !self.started.swap(true, Ordering::AcqRel) {
            // The task is awaited through `wait_stopped`, which also serves concurrent callers.
            drop(self.informer.start(parent.child_token()));
        }
    }

    fn is_started(&self) -> bool {
        self.started.load(Ordering::Acquire)
    }

    fn has_synced(&self) -> bool {
        self.informer.has_synced()
    }

    fn wait_for_sync(&self) -> BoxFuture<'static, bool> {
        let informer = Arc::clone(&self.informer);
        Box::pin(async move { informer.wait_for_sync().await })
    }

    fn stop(&self) {
        self.informer.stop();
    }

    fn wait_stopped(&self) -> BoxFuture<'static, ()> {
        let started = self.is_started();
        let informer = Arc::clone(&self.informer);
        Box::pin(async move {
            if started {
                informer.wait_stopped().await;
            }
        })
    }

    fn last_error(&self) -> Option<String> {
        self.last_error.lock().clone()
    }

    fn generic(&self) -> GenericInformer {
        GenericInformer::with_group_resource(
            Arc::clone(&self.informer),
            self.group_resource.clone(),
        )
    }

    fn synced_checker(&self) -> crate::informer::SyncedChecker {
        self.informer.synced_checker()
    }

    fn snapshot(&self) -> crate::informer::collector::Snapshot {
        // V4: labelled with the informer's own name (the factory's `informer_name` prefix
        // included), as in its logs.
        self.informer.inner.snapshot()
    }
}

/// One informer in the factory's registry.
pub(super) struct Entry {
    pub(super) control: Arc<dyn Control>,
    informer: Arc<dyn Any + Send + Sync>,
    pub(super) gvr: Option<GroupVersionResource>,
    pub(super) is_metadata: bool,
    /// Live [`InformerUse`](super::InformerUse)s of this informer (controller runs).
    pub(super) uses: usize,
    /// Whether a use started it: the last use then stops it (nobody else asked for it to run).
    pub(super) started_by_use: bool,
}

impl Entry {
    pub(super) fn new<K>(id: &InformerId, informer: Arc<SharedIndexInformer<K>>) -> Self
    where
        K: crate::object::Meta + Clone + serde::de::DeserializeOwned + fmt::Debug,
    {
        let last_error = Arc::new(Mutex::new(None));
        let recorder = Arc::clone(&last_error);
        // Remember the reflector's last error for `wait_for_cache_sync_timeout`, next to (never
        // instead of) the watch error handler of the reflector config or `set_watch_error_handler`
        // (F10). The informer has not started, so this cannot fail.
        if let Err(err) = informer.observe_watch_errors(move |e: &crate::reflector::Error| {
            *recorder.lock() = Some(e.to_string());
        }) {
            tracing::debug!(error = %err, "could not install the factory's watch error recorder");
        }
        let group_resource = match id.gvr() {
            Some(gvr) => crate::lister::GroupResource::new(gvr.group.clone(), gvr.resource.clone()),
            None => crate::lister::GroupResource::new("", id.to_string()),
        };
        Entry {
            control: Arc::new(Controlled {
                informer: Arc::clone(&informer),
                group_resource,
                last_error,
                started: AtomicBool::new(false),
            }),
            informer,
            gvr: id.gvr().cloned(),
            is_metadata: id.is_metadata(),
            uses: 0,
            started_by_use: false,
        }
    }

    pub(super) fn downcast<K: Send + Sync + 'static>(&self) -> Option<Arc<SharedIndexInformer<K>>> {
        Arc::clone(&self.informer)
            .downcast::<SharedIndexInformer<K>>()
            .ok()
    }

    pub(super) fn is_started(&self) -> bool {
        self.control.is_started()
    }

    pub(super) fn start_if_needed(&mut self, parent: &CancellationToken) {
        self.control.start(parent);
    }
}
