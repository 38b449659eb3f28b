//! The shared informer factory: one informer per resource type, created lazily, started and synced together (F1-F11).
//!
//! ```no_run
//! # use std::time::Duration;
//! # use informer_runtime::SharedInformerFactory;
//! # use informer_runtime::lister::Lister;
//! # use k8s_openapi::api::apps::v1::Deployment;
//! # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
//! let factory = SharedInformerFactory::builder(client)
//!     .namespace("prod")
//!     .default_resync(Duration::ZERO)
//!     .build();
//! let deployments = factory.informer_for::<Deployment>();
//! factory.start();
//! factory.wait_for_cache_sync_timeout(Duration::from_secs(30)).await?;
//! let lister = Lister::from_indexer(deployments.indexer());
//! let web = lister.namespaced("prod").get("web")?;
//! # let _ = web;
//! factory.shutdown().await;
//! # Ok(()) }
//! ```

mod builder;
mod cache_scope;
mod entry;
mod generic;
mod metrics;
mod projected;

use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kube::api::{Api, DynamicObject, GroupVersionResource, PartialObjectMeta};
use kube::discovery::ApiResource;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

pub use crate::object::{Object, ScopeKind, StaticIndexer};
pub use builder::{FactoryTransform, ListOptionsTweak, SharedInformerFactoryBuilder};
pub use cache_scope::{CacheScope, Selection};
pub use entry::InformerId;
pub use generic::{AnyObject, GenericInformer, GenericLister, GenericNamespaceLister};
pub use projected::Projected;

use crate::indexer::Indexers;
use crate::informer::SharedIndexInformer;
use crate::list_watch::ListWatch;
use crate::lister::GroupResource;
use crate::object::{HasScope, Meta};
use builder::Options;
use entry::{Control, Entry};

/// Why a factory call failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// [`SharedInformerFactory::for_resource`] found no such resource in the server's discovery
    /// (F9). Retryable once the resource exists (e.g. after its CRD is created).
    #[error("no informer found for {0}")]
    NoInformerFound(String),
    /// Discovery itself failed. Retryable.
    #[error("discovery of {gvr} failed: {source}")]
    Discovery {
        /// The resource being resolved.
        gvr: String,
        /// What kube reported.
        #[source]
        source: kube::Error,
    },
    /// [`wait_for_cache_sync_timeout`](SharedInformerFactory::wait_for_cache_sync_timeout) ran out
    /// of time. Lists every informer that had not synced, with the last error its reflector saw.
    #[error("caches did not sync in time: {}", describe_unsynced(.0))]
    CacheSyncTimeout(Vec<Unsynced>),
    /// The factory was shut down, so it starts nothing more (F3).
    #[error("the informer factory has been shut down")]
    ShutDown,
    /// `tweak_list_options` sets a list option the reflector owns and cannot honour
    /// (`continue_token`, `version_match`; F6). Not retryable: fix the tweak.
    #[error("tweak_list_options sets `{0}`, which the informers cannot honour")]
    UnsupportedListOption(&'static str),
}

/// `Result` with this module's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An informer that had not synced when a timeout ran out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsynced {
    /// Which informer.
    pub id: InformerId,
    /// The last list/watch error its reflector reported, if any (e.g. a 403 Forbidden).
    pub last_error: Option<String>,
}

fn describe_unsynced(list: &[Unsynced]) -> String {
    let parts: Vec<String> = list
        .iter()
        .map(|u| match &u.last_error {
            Some(e) => format!("{} (last error: {e})", u.id),
            None => format!("{} (no error reported yet)", u.id),
        })
        .collect();
    parts.join(", ")
}

/// One informer per resource type, shared by every caller (client-go's `SharedInformerFactory`).
///
/// Cloning is cheap and every clone is the same factory. Accessors create informers lazily (F1);
/// [`start`](Self::start) runs the ones not yet running (F3); [`shutdown`](Self::shutdown) stops
/// them all and waits for their tasks (F5).
#[derive(Clone)]
pub struct SharedInformerFactory {
    inner: Arc<Inner>,
}

struct Inner {
    client: kube::Client,
    options: Options,
    state: Mutex<State>,
    /// Parent of every informer's token; cancelled by `shutdown`.
    cancel: CancellationToken,
}

impl Inner {
    /// What every informer reports to the metrics collector, taken outside the factory lock.
    fn snapshots(&self) -> Vec<crate::informer::collector::Snapshot> {
        let controls: Vec<Arc<dyn Control>> = {
            let state = self.state.lock();
            state
                .informers
                .values()
                .map(|e| e.control.clone())
                .collect()
        };
        let mut snapshots: Vec<_> = controls.iter().map(|c| c.snapshot()).collect();
        snapshots.sort_by(|a, b| a.name.cmp(&b.name));
        snapshots
    }
}

#[derive(Default)]
struct State {
    informers: HashMap<InformerId, Entry>,
    shut_down: bool,
}

/// One share in a running informer of a factory, from
/// [`SharedInformerFactory::use_informer`]. The informer runs while any share is alive.
#[derive(Debug)]
#[must_use = "dropping the use at once may stop the informer"]
pub struct InformerUse {
    factory: SharedInformerFactory,
    id: InformerId,
    released: bool,
}

impl InformerUse {
    /// The informer this use keeps running.
    pub fn id(&self) -> &InformerId {
        &self.id
    }

    /// Ends the use; if it was the last one of an informer a use started, stops the informer
    /// and waits until its tasks have ended. Returns whether it stopped it.
    pub async fn release(mut self) -> bool {
        self.released = true;
        match self.factory.end_use(&self.id) {
            Some(control) => {
                control.wait_stopped().await;
                true
            }
            None => false,
        }
    }
}

impl Drop for InformerUse {
    fn drop(&mut self) {
        if !self.released {
            // Told to stop; its tasks end on their own (nothing here can await them).
            drop(self.factory.end_use(&self.id));
        }
    }
}

impl fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("SharedInformerFactory")
            .field("namespace", &self.inner.options.namespace)
            .field("informers", &state.informers.keys().collect::<Vec<_>>())
            .field("shut_down", &state.shut_down)
            .finish_non_exhaustive()
    }
}

impl SharedInformerFactory {
    /// Starts building a factory over `client` (F6 options on the builder).
    pub fn builder(client: kube::Client) -> SharedInformerFactoryBuilder {
        SharedInformerFactoryBuilder::new(client)
    }

    /// A factory with the default options: all namespaces, no resync.
    pub fn new(client: kube::Client) -> Self {
        Self::builder(client).build()
    }

    fn from_options(client: kube::Client, options: Options) -> Self {
        let collector = options.collector.clone();
        let inner = Arc::new(Inner {
            client,
            options,
            state: Mutex::new(State::default()),
            cancel: CancellationToken::new(),
        });
        if let Some(slot) = collector {
            // Set once, right after the factory exists; the builder made a fresh slot.
            let _ = slot.set(Arc::downgrade(&inner));
        }
        SharedInformerFactory { inner }
    }

    /// The informer for `K`, created on first use (F1, F2). Every call returns the same `Arc`
    /// until [`stop_informer`](Self::stop_informer) forgets it.
    pub fn informer_for<K: Object>(&self) -> Arc<SharedIndexInformer<K>> {
        self.informer_for_with_indexers::<K>(K::indexers())
    }

    /// The informer for `K` if the factory holds one, without creating it.
    pub fn existing_informer<K: Object>(&self) -> Option<Arc<SharedIndexInformer<K>>> {
        self.inner
            .state
            .lock()
            .informers
            .get(&InformerId::of::<K>())
            .and_then(Entry::downcast::<K>)
    }

    /// Like [`informer_for`](Self::informer_for), and also makes sure `indexers` are registered:
    /// on creation they are part of the informer from the start; on an existing informer every
    /// name not yet registered is added and back-filled (X6), and names already present are left
    /// alone. Generated code for declarative indexes calls this.
    pub fn informer_for_with_indexers<K: Object>(
        &self,
        indexers: &[StaticIndexer<K>],
    ) -> Arc<SharedIndexInformer<K>> {
        let id = InformerId::of::<K>();
        let name = id.to_string();
        let informer = self.get_or_create(id, |options| {
            let resolved = options.resolve(Some(&GroupResource::of::<K::Source>()));
            let api = <K as HasScope>::Scope::constrain(
                Api::<K::Source>::all(self.inner.client.clone()),
                resolved.selection.namespace.as_deref(),
            );
            let config = options.informer_config::<K>(TypeId::of::<K>(), name, &resolved);
            let lw = ListWatch::of_source(api);
            let lw = options.on_the_wire(lw, K::keeps_managed_fields(), &resolved);
            SharedIndexInformer::new(lw, config)
        });
        add_missing_indexers(&informer, indexers);
        informer
    }

    /// The metadata-only informer for `K` (M8): objects are `PartialObjectMeta<K>`, fetched with
    /// the server's `PartialObjectMetadata` representation. Shared like typed informers (F1).
    pub fn metadata_informer_for<K: Object>(
        &self,
    ) -> Arc<SharedIndexInformer<PartialObjectMeta<K::Source>>> {
        let id = InformerId::metadata_of::<K::Source>();
        let name = id.to_string();
        self.get_or_create(id, |options| {
            let resolved = options.resolve(Some(&GroupResource::of::<K::Source>()));
            let api = <K as HasScope>::Scope::constrain(
                Api::<K::Source>::all(self.inner.client.clone()),
                resolved.selection.namespace.as_deref(),
            );
            let config = options.informer_config::<PartialObjectMeta<K::Source>>(
                TypeId::of::<K::Source>(),
                name,
                &resolved,
            );
            let lw = options.on_the_wire(ListWatch::metadata(api), true, &resolved);
            SharedIndexInformer::new(lw, config)
        })
    }

    /// The informer for a resource known only at run time, over [`DynamicObject`]s (F1 keyed by
    /// the resource). `namespaced` is the resource's scope, as discovery reports it.
    pub fn dynamic_informer(
        &self,
        resource: &ApiResource,
        namespaced: bool,
    ) -> Arc<SharedIndexInformer<DynamicObject>> {
        let gvr = GroupVersionResource::gvr(&resource.group, &resource.version, &resource.plural);
        let id = InformerId::resource(&gvr);
        let name = id.to_string();
        let group_resource = GroupResource::new(&gvr.group, &gvr.resource);
        self.get_or_create(id, |options| {
            let resolved = options.resolve(Some(&group_resource));
            let scope = if namespaced {
                kube::discovery::Scope::Namespaced
            } else {
                kube::discovery::Scope::Cluster
            };
            let mut api =
                Api::<DynamicObject>::dynamic(self.inner.client.clone(), resource, &scope);
            if let Some(ns) = resolved.selection.namespace.as_deref() {
                api = api.constrain(ns);
            }
            let config = options.informer_config::<DynamicObject>(
                TypeId::of::<DynamicObject>(),
                name,
                &resolved,
            );
            let lw = options.on_the_wire(ListWatch::dynamic(api, resource), true, &resolved);
            SharedIndexInformer::new(lw, config)
        })
    }

    /// A generic informer for `gvr` (F9): the informer this factory already has for that
    /// resource (typed or dynamic), or a new dynamic one after asking the server's discovery.
    /// [`Error::NoInformerFound`] if the server does not serve the resource.
    pub async fn for_resource(&self, gvr: &GroupVersionResource) -> Result<GenericInformer> {
        if let Some(existing) = self.find_by_resource(gvr) {
            return Ok(existing);
        }
        let (resource, namespaced) = crate::discovery::discover(&self.inner.client, gvr)
            .await
            .map_err(|source| Error::Discovery {
                gvr: gvr_label(gvr),
                source,
            })?
            .ok_or_else(|| Error::NoInformerFound(gvr_label(gvr)))?;
        let group_resource = GroupResource::new(&gvr.group, &gvr.resource);
        Ok(GenericInformer::with_group_resource(
            self.dynamic_informer(&resource, namespaced),
            group_resource,
        ))
    }

    /// The generic view of an informer this factory already holds for `gvr`, if any.
    pub fn find_by_resource(&self, gvr: &GroupVersionResource) -> Option<GenericInformer> {
        let state = self.inner.state.lock();
        state
            .informers
            .values()
            .find(|entry| entry.gvr.as_ref() == Some(gvr) && !entry.is_metadata)
            .map(|entry| entry.control.generic())
    }

    /// Every informer this factory holds of the resource `group_resource`, in any version and
    /// any form: the kind itself, its compact form, projections, the metadata-only and the
    /// dynamic informer. A write to that resource reaches all of them (K3: a controller's
    /// write recorder waits for each that is running).
    pub fn informers_of(&self, group_resource: &GroupResource) -> Vec<GenericInformer> {
        let state = self.inner.state.lock();
        state
            .informers
            .values()
            .filter(|entry| {
                entry.gvr.as_ref().is_some_and(|gvr| {
                    gvr.group == group_resource.group && gvr.resource == group_resource.resource
                })
            })
            .map(|entry| entry.control.generic())
            .collect()
    }

    /// Starts every informer created so far that is not running yet, and returns at once (F3).
    /// Call it again after asking for more informers. Does nothing after [`shutdown`](Self::shutdown).
    pub fn start(&self) {
        let mut state = self.inner.state.lock();
        if state.shut_down {
            tracing::debug!("informer factory is shut down; start() does nothing (F3)");
            return;
        }
        for entry in state.informers.values_mut() {
            entry.start_if_needed(&self.inner.cancel);
        }
    }

    /// Waits until every *started* informer has synced (F4) and reports each one's state:
    /// `false` means it stopped before syncing. This does not mean handlers have run; use
    /// `HandlerRegistration::wait_for_sync` for that (H6).
    pub async fn wait_for_cache_sync(&self) -> HashMap<InformerId, bool> {
        let waits = self.started_controls();
        let results =
            futures::future::join_all(waits.into_iter().map(|(id, control)| async move {
                let synced = control.wait_for_sync().await;
                (id, synced)
            }))
            .await;
        results.into_iter().collect()
    }

    /// A named sync check of every *started* informer (V5), to await with
    /// [`informer::wait_for`](crate::informer::wait_for) together with handler checks; the
    /// error then names each informer or handler that has not synced.
    pub fn synced_checkers(&self) -> Vec<crate::informer::SyncedChecker> {
        self.started_controls()
            .into_iter()
            .map(|(_, c)| c.synced_checker())
            .collect()
    }

    /// [`wait_for_cache_sync`](Self::wait_for_cache_sync) with a deadline (\[ours\], F4): on
    /// timeout, [`Error::CacheSyncTimeout`] names each informer that had not synced and the last
    /// error its reflector reported (for example a 403 from RBAC).
    pub async fn wait_for_cache_sync_timeout(&self, timeout: Duration) -> Result<()> {
        let controls = self.started_controls();
        let all = futures::future::join_all(controls.iter().map(|(_, c)| c.wait_for_sync()));
        if let Ok(results) = tokio::time::timeout(timeout, all).await
            && results.iter().all(|synced| *synced)
        {
            return Ok(());
        }
        let unsynced: Vec<Unsynced> = controls
            .into_iter()
            .filter(|(_, c)| !c.has_synced())
            .map(|(id, c)| Unsynced {
                id,
                last_error: c.last_error(),
            })
            .collect();
        if unsynced.is_empty() {
            return Ok(());
        }
        Err(Error::CacheSyncTimeout(unsynced))
    }

    /// Stops every informer and waits until all their tasks have ended (F5). Idempotent and safe
    /// to call concurrently; afterwards [`start`](Self::start) does nothing.
    pub async fn shutdown(&self) {
        let tasks = {
            let mut state = self.inner.state.lock();
            state.shut_down = true;
            self.inner.cancel.cancel();
            state
                .informers
                .values()
                .map(|e| e.control.clone())
                .collect::<Vec<_>>()
        };
        futures::future::join_all(tasks.iter().map(|c| c.wait_stopped())).await;
    }

    /// Stops the informer for `K`, drops its store, and forgets it (\[ours\], F7): a later
    /// accessor call creates a fresh informer. Returns once its tasks have ended; `false` if the
    /// factory had no informer for `K`.
    pub async fn stop_informer<K: Object>(&self) -> bool {
        self.stop_informer_id(&InformerId::of::<K>()).await
    }

    /// [`stop_informer`](Self::stop_informer) for a dynamic informer (F7), e.g. when its CRD was
    /// deleted (M11).
    pub async fn stop_resource_informer(&self, gvr: &GroupVersionResource) -> bool {
        self.stop_informer_id(&InformerId::resource(gvr)).await
    }

    /// [`stop_informer`](Self::stop_informer) by id.
    pub async fn stop_informer_id(&self, id: &InformerId) -> bool {
        let removed = self.inner.state.lock().informers.remove(id);
        match removed {
            Some(entry) => {
                entry.control.stop();
                entry.control.wait_stopped().await;
                true
            }
            None => false,
        }
    }

    /// Takes a share in the informer `id` and starts it if it is not running (\[ours\]): what
    /// `informer_controller::Controller::run` does for each informer it reads, instead of
    /// starting the whole factory, so that two controllers on one factory never stop each
    /// other's informers. The informer keeps running while any use
    /// is alive; when the last use ends ([`InformerUse::release`], or drop) an informer that a
    /// use started is stopped and forgotten like [`stop_informer_id`](Self::stop_informer_id),
    /// while one that was already running (started by [`start`](Self::start) or by hand) keeps
    /// running. `None` if the factory holds no such informer or is shut down.
    ///
    /// ```no_run
    /// # use informer_runtime::SharedInformerFactory;
    /// # use informer_runtime::factory::InformerId;
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # async fn demo(factory: SharedInformerFactory) {
    /// let _ = factory.informer_for::<ConfigMap>();
    /// let config_maps = factory.use_informer(&InformerId::of::<ConfigMap>()).expect("created above");
    /// // ... read through the informer's lister ...
    /// config_maps.release().await; // stopped, unless someone else still uses it
    /// # }
    /// ```
    pub fn use_informer(&self, id: &InformerId) -> Option<InformerUse> {
        let mut state = self.inner.state.lock();
        if state.shut_down {
            return None;
        }
        let entry = state.informers.get_mut(id)?;
        entry.uses += 1;
        if !entry.is_started() {
            entry.start_if_needed(&self.inner.cancel);
            entry.started_by_use = true;
        }
        Some(InformerUse {
            factory: self.clone(),
            id: id.clone(),
            released: false,
        })
    }

    /// Ends one use; returns the informer's control when it was the last use of an informer
    /// that a use started (the entry is then removed and the informer told to stop).
    fn end_use(&self, id: &InformerId) -> Option<Arc<dyn entry::Control>> {
        let mut state = self.inner.state.lock();
        let entry = state.informers.get_mut(id)?;
        entry.uses = entry.uses.saturating_sub(1);
        if entry.uses > 0 || !entry.started_by_use {
            return None;
        }
        let entry = state.informers.remove(id)?;
        entry.control.stop();
        Some(entry.control)
    }

    /// The ids of every informer the factory currently holds.
    pub fn informer_ids(&self) -> Vec<InformerId> {
        let mut ids: Vec<InformerId> = self.inner.state.lock().informers.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Which objects of `resource` this factory's informers list and watch: its
    /// [`CacheScope`] (F11) over the factory's namespace and selectors.
    ///
    /// ```no_run
    /// # fn demo(client: kube::Client) {
    /// use informer_runtime::SharedInformerFactory;
    /// use informer_runtime::factory::CacheScope;
    /// use informer_runtime::lister::GroupResource;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// let factory = SharedInformerFactory::builder(client)
    ///     .scope_for::<ConfigMap>(CacheScope::new().namespace("team-a"))
    ///     .build();
    /// let config_maps = factory.selection_of(&GroupResource::of::<ConfigMap>());
    /// assert_eq!(config_maps.namespace.as_deref(), Some("team-a"));
    /// assert_eq!(factory.selection_of(&GroupResource::new("apps", "deployments")).namespace, None);
    /// # }
    /// ```
    pub fn selection_of(&self, resource: &GroupResource) -> Selection {
        self.inner.options.resolve(Some(resource)).selection
    }

    /// The namespace the factory's informers watch, or `None` for all namespaces; a resource
    /// with a [`CacheScope`] of its own may watch another ([`selection_of`](Self::selection_of)).
    pub fn namespace(&self) -> Option<&str> {
        self.inner.options.namespace.as_deref()
    }

    /// The label selector the factory's informers list and watch with (F6), if any: what a
    /// [`tweak_list_options`](SharedInformerFactoryBuilder::tweak_list_options) or the
    /// reflector settings set. A resource's [`CacheScope`] may replace it
    /// ([`selection_of`](Self::selection_of)).
    pub fn label_selector(&self) -> Option<String> {
        self.inner.options.selectors().0
    }

    /// The field selector the factory's informers list and watch with (F6), if any.
    pub fn field_selector(&self) -> Option<String> {
        self.inner.options.selectors().1
    }

    /// The shard the factory's informers are limited to
    /// ([`SharedInformerFactoryBuilder::shard`]), if any.
    pub fn shard(&self) -> Option<&crate::shard::Shard> {
        self.inner.options.shard()
    }

    /// The client the factory's informers use.
    pub fn client(&self) -> &kube::Client {
        &self.inner.client
    }

    fn started_controls(&self) -> Vec<(InformerId, Arc<dyn Control>)> {
        let state = self.inner.state.lock();
        state
            .informers
            .iter()
            .filter(|(_, e)| e.is_started())
            .map(|(id, e)| (id.clone(), e.control.clone()))
            .collect()
    }

    /// Get-or-create under the factory lock (F1). Construction is cheap and starts nothing.
    fn get_or_create<K>(
        &self,
        id: InformerId,
        create: impl FnOnce(&Options) -> crate::informer::Result<SharedIndexInformer<K>>,
    ) -> Arc<SharedIndexInformer<K>>
    where
        K: Meta + Clone + serde::de::DeserializeOwned + fmt::Debug,
    {
        let mut state = self.inner.state.lock();
        if let Some(existing) = state.informers.get(&id).and_then(|e| e.downcast::<K>()) {
            return existing;
        }
        // The factory passes no index functions at creation (accessor indexers are added after,
        // see `add_missing_indexers`), and a duplicate index name is the only way `new` fails.
        let informer =
            Arc::new(create(&self.inner.options).expect(
                "bug: an informer without extra indexers cannot have duplicate index names",
            ));
        let entry = Entry::new(&id, Arc::clone(&informer));
        state.informers.insert(id, entry);
        informer
    }
}

fn add_missing_indexers<K: Object>(
    informer: &SharedIndexInformer<K>,
    indexers: &[StaticIndexer<K>],
) {
    if indexers.is_empty() {
        return;
    }
    let indexer = informer.indexer();
    let existing: Vec<String> = indexer.index_names();
    let mut missing = Indexers::new();
    for (name, func) in indexers {
        if !existing.iter().any(|n| n == name) {
            let func = *func;
            missing = missing.with(*name, move |obj: &K| func(obj));
        }
    }
    if missing.is_empty() {
        return;
    }
    if let Err(err) = informer.add_indexers(missing) {
        // Racing accessors may add the same name concurrently; that is the only error besides
        // "stopped", and both leave the index usable or the informer gone.
        tracing::debug!(error = %err, "add_indexers from accessor");
    }
}

fn gvr_label(gvr: &GroupVersionResource) -> String {
    entry::gvr_label(gvr, "").to_string()
}
