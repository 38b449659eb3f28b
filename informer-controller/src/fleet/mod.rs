//! A fleet: informers over many clusters in one process, each cluster engaged and disengaged at
//! run time by a [`Provider`] (decision record 29).
//!
//! Each engaged cluster has its own `kube::Client` and [`SharedInformerFactory`], built from
//! the spec its provider reported, with the informers the fleet declares
//! ([`FleetBuilder::informer`]) and whatever else [`FleetBuilder::factory`] sets. Routes to a
//! cluster ([`Fleet::cluster`], [`Fleet::lister`]) answer [`FleetError::ClusterNotFound`] once
//! it has left; a cluster that cannot be reached or does not sync is reported
//! ([`Fleet::clusters`]) and never holds up the others.
//!
//! Leaving releases everything: the cluster's routes go first, then its factory is shut down
//! (reflectors, handlers and their threads end, F5) and dropped with its caches.
//!
//! ```no_run
//! # async fn demo(a: kube::Config, b: kube::Config) -> Result<(), Box<dyn std::error::Error>> {
//! use informer_controller::fleet::{ClusterSpec, Fleet, StaticProvider};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! let fleet = Fleet::builder().informer::<ConfigMap>().build();
//! let provider = StaticProvider::new([("a", ClusterSpec::new(a)), ("b", ClusterSpec::new(b))]);
//! let cancel = tokio_util::sync::CancellationToken::new();
//! tokio::spawn({
//!     let (fleet, cancel) = (fleet.clone(), cancel.clone());
//!     async move { fleet.run(provider, cancel).await }
//! });
//! // Every ConfigMap of every synced cluster, each with its cluster.
//! for item in fleet.lister::<ConfigMap>().list(&Default::default()).items {
//!     println!("{}: {:?}", item.cluster, item.object.metadata.name);
//! }
//! // One cluster's client and factory, or `ClusterNotFound` once it has left.
//! let a = fleet.cluster(&"a".into())?;
//! # let _ = a.client();
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use informer_runtime::factory::SharedInformerFactoryBuilder;
use informer_runtime::{Object, SharedInformerFactory};
use parking_lot::RwLock;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

mod budget;
mod controller;
mod directory;
mod health;
mod kubeconfig;
mod lister;
mod metrics;
mod provider;
mod secrets;
mod sharded;

pub use controller::{ClusterData, FleetController, FleetRequest};
pub use directory::DirectoryProvider;
pub use health::HealthConfig;
pub use kubeconfig::KubeconfigPolicy;
pub use lister::{Clustered, FleetList, FleetLister, Skipped};
use provider::Change;
pub use provider::{
    ClusterName, ClusterSink, ClusterSpec, Provider, ProviderError, StaticClusters, StaticProvider,
};
pub use secrets::SecretProvider;
pub use sharded::ShardedProvider;

/// How long [`Fleet::run`] waits, once every cluster is disengaged, for its provider to stop.
const PROVIDER_STOP: Duration = Duration::from_secs(30);

/// Why a route to a cluster found no cluster to serve it.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// The cluster is not in the fleet: never engaged, or it has left. A request for it is
    /// finished, not retried.
    #[error("cluster {0} is not in the fleet")]
    ClusterNotFound(ClusterName),
    /// The cluster is engaged but cannot serve: its client could not be built, or its informers
    /// did not sync in time (the reason says which).
    #[error("cluster {cluster} is unavailable: {reason}")]
    Unavailable {
        /// The cluster.
        cluster: ClusterName,
        /// What went wrong.
        reason: String,
    },
    /// The provider failed; the fleet stopped.
    #[error("the fleet's provider failed: {0}")]
    Provider(Arc<ProviderError>),
    /// [`Fleet::run`] was called while another run of the same fleet was going on: a fleet has
    /// one provider at a time.
    #[error("the fleet is already running")]
    AlreadyRunning,
}

/// Where an engaged cluster is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClusterState {
    /// Its informers are listing.
    Syncing,
    /// Every informer the fleet declares has synced.
    Ready,
    /// Its last probe failed (the reason says how); it still serves its caches, and backs off
    /// if the probes go on failing ([`HealthConfig`]).
    Degraded(String),
    /// It failed its probes too often in a row, or went past its cache budget
    /// ([`FleetBuilder::cache_budget`]): its informers and controllers are stopped and it is
    /// engaged again after a delay ([`HealthConfig`]). It cannot serve meanwhile.
    BackingOff {
        /// Why: the last probe's failure, or the budget's breach.
        reason: String,
        /// Back-offs in a row, from 1.
        attempt: u32,
    },
    /// It cannot serve (see [`FleetError::Unavailable`]).
    Failed(String),
}

/// One cluster in [`Fleet::clusters`].
#[derive(Debug, Clone)]
pub struct ClusterStatus {
    /// The cluster.
    pub name: ClusterName,
    /// The revision of the spec it is engaged with.
    pub revision: u64,
    /// Where it is.
    pub state: ClusterState,
}

/// An engaged cluster: its client and its informer factory. Holding a handle keeps the
/// cluster's caches alive after it left the fleet, so hold it for a call, not for good.
#[derive(Clone)]
pub struct ClusterHandle {
    name: ClusterName,
    /// This engagement's number, unique in the fleet: a re-engaged cluster has a new one.
    generation: u64,
    factory: SharedInformerFactory,
    cancel: CancellationToken,
    /// Work that reads this engagement's caches: awaited before they stop.
    work: TaskTracker,
}

impl ClusterHandle {
    /// The cluster's name.
    pub fn name(&self) -> &ClusterName {
        &self.name
    }

    /// This engagement's number, unique in the fleet: a cluster re-engaged with a new spec has
    /// a new one.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The cluster's client.
    pub fn client(&self) -> &kube::Client {
        self.factory.client()
    }

    /// The cluster's informer factory.
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.factory
    }

    /// Cancelled when the cluster leaves the fleet (or the fleet stops).
    pub fn cancelled(&self) -> CancellationToken {
        self.cancel.child_token()
    }

    /// `work`, tracked: when the cluster leaves, the fleet cancels [`cancelled`](Self::cancelled)
    /// and waits for tracked work to end (up to [`FleetBuilder::drain_limit`]) before it stops
    /// the cluster's informers, so work in flight finishes against live caches. A
    /// [`FleetController`]'s run on the cluster is tracked this way.
    pub fn track<F: std::future::Future>(
        &self,
        work: F,
    ) -> impl std::future::Future<Output = F::Output> + use<F> {
        self.work.track_future(work)
    }
}

impl fmt::Debug for ClusterHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterHandle")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// Sets up a cluster's factory: the informers the fleet declares, and the user's settings.
type Setup = Arc<
    dyn Fn(&ClusterName, SharedInformerFactoryBuilder) -> SharedInformerFactoryBuilder
        + Send
        + Sync,
>;
/// Creates one declared informer in a cluster's factory.
type Declare = Box<dyn Fn(&SharedInformerFactory) + Send + Sync>;
/// Counts the objects in one declared informer's cache.
type Count = Box<dyn Fn(&SharedInformerFactory) -> usize + Send + Sync>;

/// Builds a [`Fleet`].
pub struct FleetBuilder {
    setup: Option<Setup>,
    informers: Vec<Declare>,
    counts: Vec<Count>,
    sync_timeout: Duration,
    drain_limit: Duration,
    health: HealthConfig,
    budget: Option<usize>,
}

impl FleetBuilder {
    /// Every cluster's factory gets an informer for `K`, started when the cluster is engaged;
    /// the cluster is [`ClusterState::Ready`] once all of them synced.
    #[must_use]
    pub fn informer<K: Object>(mut self) -> Self {
        self.informers.push(Box::new(|factory| {
            factory.informer_for::<K>();
        }));
        self.counts.push(Box::new(|factory| {
            factory
                .existing_informer::<K>()
                .map_or(0, |informer| informer.indexer().len())
        }));
        self
    }

    /// Settings for every cluster's factory (namespace, selectors, transforms, a decode pool),
    /// given the cluster's name. The fleet names each factory's informers after the cluster
    /// first (`informer_name`), so logs and metrics tell clusters apart; this may rename them.
    #[must_use]
    pub fn factory(
        mut self,
        setup: impl Fn(&ClusterName, SharedInformerFactoryBuilder) -> SharedInformerFactoryBuilder
        + Send
        + Sync
        + 'static,
    ) -> Self {
        self.setup = Some(Arc::new(setup));
        self
    }

    /// How long a newly engaged cluster's informers may take to sync before it is reported
    /// [`ClusterState::Failed`] (its informers go on trying); 60 s by default.
    #[must_use]
    pub fn sync_timeout(mut self, timeout: Duration) -> Self {
        self.sync_timeout = timeout;
        self
    }

    /// How long a leaving cluster's tracked work ([`ClusterHandle::track`]: its
    /// [`FleetController`] runs, which drain within their own shutdown timeout, C7) may take
    /// before its informers stop anyway; 35 s by default, the controllers' 30 s and a margin.
    #[must_use]
    pub fn drain_limit(mut self, limit: Duration) -> Self {
        self.drain_limit = limit;
        self
    }

    /// Caps the objects each cluster's informers may hold together (decision record 30): a
    /// list that would go past `objects` is dropped while it is read, and the cluster backs off
    /// ([`ClusterState::BackingOff`], as for failed probes: its informers stop and its caches
    /// go) and is engaged again after the delay; so is one whose live events take it past. No
    /// cap unless set.
    #[must_use]
    pub fn cache_budget(mut self, objects: usize) -> Self {
        self.budget = Some(objects);
        self
    }

    /// How clusters are probed and backed off; [`HealthConfig::default`] unless set.
    #[must_use]
    pub fn health(mut self, health: HealthConfig) -> Self {
        self.health = health;
        self
    }

    /// The fleet, with no cluster until [`Fleet::run`] runs a provider.
    pub fn build(self) -> Fleet {
        Fleet {
            inner: Arc::new(Inner {
                setup: self.setup,
                informers: self.informers,
                counts: self.counts,
                sync_timeout: self.sync_timeout,
                drain_limit: self.drain_limit,
                health: self.health,
                budget: self.budget,
                slots: RwLock::new(BTreeMap::new()),
                generations: AtomicU64::new(0),
                running: AtomicBool::new(false),
                changed: watch::Sender::new(0),
            }),
        }
    }
}

impl fmt::Debug for FleetBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetBuilder")
            .field("informers", &self.informers.len())
            .field("sync_timeout", &self.sync_timeout)
            .field("drain_limit", &self.drain_limit)
            .field("health", &self.health)
            .finish_non_exhaustive()
    }
}

/// Informers over the clusters a [`Provider`] reports. Cheap to clone; every clone is the same
/// fleet.
#[derive(Clone)]
pub struct Fleet {
    inner: Arc<Inner>,
}

struct Inner {
    setup: Option<Setup>,
    informers: Vec<Declare>,
    counts: Vec<Count>,
    sync_timeout: Duration,
    drain_limit: Duration,
    health: HealthConfig,
    budget: Option<usize>,
    slots: RwLock<BTreeMap<ClusterName, Slot>>,
    /// The last engagement's number.
    generations: AtomicU64,
    /// Set while [`Fleet::run`] runs.
    running: AtomicBool,
    /// Bumped after each engage and disengage, for [`FleetController`]s.
    changed: watch::Sender<u64>,
}

/// An engaged cluster's entry.
struct Slot {
    /// The spec it was engaged with, kept to engage it again after a back-off.
    spec: ClusterSpec,
    /// `None` when its client could not be built, or while it backs off.
    handle: Option<ClusterHandle>,
    state: ClusterState,
    /// Whether this engagement's informers have synced.
    synced: bool,
    /// Back-offs in a row; 0 again once it syncs.
    attempts: u32,
    /// The engagement's own tasks: the sync watch and the probe, or the back-off's timer.
    tasks: Vec<JoinHandle<()>>,
}

/// What a fleet's own tasks ask of its run loop, which alone engages and disengages.
enum Internal {
    /// Engagement `generation` of `name` failed its probes, or went past its cache budget:
    /// back it off.
    BackOff {
        name: ClusterName,
        generation: u64,
        reason: String,
    },
    /// The back-off of `name` at `revision` is over: engage it again.
    Retry { name: ClusterName, revision: u64 },
}

impl Fleet {
    /// A builder with no informers and a 60 s sync timeout.
    pub fn builder() -> FleetBuilder {
        FleetBuilder {
            setup: None,
            informers: Vec::new(),
            counts: Vec::new(),
            sync_timeout: Duration::from_secs(60),
            drain_limit: Duration::from_secs(35),
            health: HealthConfig::default(),
            budget: None,
        }
    }

    /// Runs `provider` and engages and disengages the clusters it reports, until `cancel`;
    /// then disengages every cluster, waits up to 30 s for the provider to stop (it sees the
    /// token too) and returns. A provider's error disengages every cluster
    /// and is returned. One run at a time: a second call while one runs returns
    /// [`FleetError::AlreadyRunning`]. Cancel `cancel` to stop: a run future that is dropped
    /// instead leaves its clusters engaged, their informers running, until a later run of the
    /// fleet stops.
    pub async fn run(
        &self,
        provider: impl Provider,
        cancel: CancellationToken,
    ) -> Result<(), FleetError> {
        if self.inner.running.swap(true, Ordering::AcqRel) {
            return Err(FleetError::AlreadyRunning);
        }
        // Cleared however this future ends, dropped included.
        struct Running<'a>(&'a AtomicBool);
        impl Drop for Running<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Release);
            }
        }
        let _running = Running(&self.inner.running);
        let (tx, mut rx) = mpsc::unbounded_channel();
        let sink = ClusterSink { tx };
        let (internal, mut internal_rx) = mpsc::unbounded_channel();
        let mut provider = tokio::spawn(provider.run(sink, cancel.child_token()));
        let (mut provider_done, mut sinks_open) = (false, true);
        let mut result = Ok(());
        loop {
            // Changes the provider reported come before its end, in order. With the provider
            // done and its sinks gone, what it engaged stays until `cancel`.
            tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                change = rx.recv(), if sinks_open => match change {
                    Some(Change::Engage(name, spec)) => self.engage(name, *spec, &internal).await,
                    Some(Change::Disengage(name, done)) => {
                        self.disengage(&name).await;
                        if let Some(done) = done {
                            let _ = done.send(());
                        }
                    }
                    None => sinks_open = false,
                },
                // The loop holds a sender, so this never ends.
                Some(asked) = internal_rx.recv() => match asked {
                    Internal::BackOff { name, generation, reason } => {
                        self.back_off(&name, generation, reason, &internal).await;
                    }
                    Internal::Retry { name, revision } => self.retry(name, revision, &internal),
                },
                ended = &mut provider, if !provider_done => {
                    provider_done = true;
                    let err = match ended {
                        Ok(Ok(())) => continue,
                        Ok(Err(e)) => e,
                        Err(e) => ProviderError(format!("the provider's task ended: {e}")),
                    };
                    tracing::error!(error = %err, "fleet: the provider failed; disengaging every cluster");
                    result = Err(FleetError::Provider(Arc::new(err)));
                    break;
                }
            }
        }
        // Every cluster stops before the provider does: a provider that holds something for
        // its clusters (a `ShardedProvider`'s Leases) lets go of it only once they are stopped.
        let names: Vec<ClusterName> = self.inner.slots.read().keys().cloned().collect();
        for name in names {
            self.disengage(&name).await;
        }
        // Disengagements still queued are answered (their senders dropped): every cluster is.
        drop(rx);
        // The provider saw the token too: it gets a bounded time to stop what it runs (its
        // informers, its Leases), then it is aborted.
        if !provider_done
            && tokio::time::timeout(PROVIDER_STOP, &mut provider)
                .await
                .is_err()
        {
            tracing::warn!(limit = ?PROVIDER_STOP, "fleet: the provider did not stop in time; aborted");
            provider.abort();
        }
        result
    }

    /// Engages `name`, first disengaging a generation of another revision.
    async fn engage(
        &self,
        name: ClusterName,
        spec: ClusterSpec,
        internal: &mpsc::UnboundedSender<Internal>,
    ) {
        let current = self.inner.slots.read().get(&name).map(|s| s.spec.revision);
        match current {
            Some(revision) if revision == spec.revision => return,
            Some(_) => self.disengage(&name).await,
            None => {}
        }
        self.start(name, spec, 0, internal);
    }

    /// Engages `name` with `spec`, replacing its slot: a client, a factory with the fleet's
    /// informers, and the tasks that watch its sync and its health.
    fn start(
        &self,
        name: ClusterName,
        spec: ClusterSpec,
        attempts: u32,
        internal: &mpsc::UnboundedSender<Internal>,
    ) {
        let revision = spec.revision;
        let client = match kube::Client::try_from(spec.config.clone()) {
            Ok(client) => client,
            Err(e) => {
                let reason = format!("building its client: {e}");
                tracing::warn!(cluster = %name, %reason, "fleet: cluster unavailable");
                let slot = Slot {
                    spec,
                    handle: None,
                    state: ClusterState::Failed(reason),
                    synced: false,
                    attempts,
                    tasks: Vec::new(),
                };
                self.inner.slots.write().insert(name, slot);
                self.inner.changed.send_modify(|n| *n += 1);
                return;
            }
        };
        let mut builder =
            SharedInformerFactory::builder(client.clone()).informer_name(name.as_str());
        if let Some(setup) = &self.inner.setup {
            builder = setup(&name, builder);
        }
        // Decision record 30: a budget per engagement, charged by its informers' reflectors.
        let budget = self
            .inner
            .budget
            .map(informer_runtime::budget::CacheBudget::objects);
        if let Some(budget) = &budget {
            builder = builder.cache_budget(budget.clone());
        }
        let factory = builder.build();
        for declare in &self.inner.informers {
            declare(&factory);
        }
        factory.start();
        let generation = self.inner.generations.fetch_add(1, Ordering::Relaxed) + 1;
        let handle = ClusterHandle {
            name: name.clone(),
            generation,
            factory: factory.clone(),
            cancel: CancellationToken::new(),
            work: TaskTracker::new(),
        };
        // The slot goes in before its tasks can record anything.
        let mut slots = self.inner.slots.write();
        let mut tasks = vec![
            tokio::spawn(self.clone().await_sync(name.clone(), generation, factory)),
            tokio::spawn(health::watch(
                self.clone(),
                name.clone(),
                generation,
                client,
                internal.clone(),
            )),
        ];
        if let Some(budget) = budget {
            let watch = budget::watch(name.clone(), generation, budget, internal.clone());
            tasks.push(tokio::spawn(watch));
        }
        tracing::info!(cluster = %name, revision, "fleet: cluster engaged");
        let old = slots.insert(
            name,
            Slot {
                spec,
                handle: Some(handle),
                state: ClusterState::Syncing,
                synced: false,
                attempts,
                tasks,
            },
        );
        drop(slots);
        // A slot replaced here backed off: its factory is already stopped; only a timer is
        // left, and it has fired.
        for task in old.into_iter().flat_map(|slot| slot.tasks) {
            task.abort();
        }
        self.inner.changed.send_modify(|n| *n += 1);
    }

    /// Records whether a newly engaged cluster synced within the timeout; one that did not is
    /// `Failed` until its informers sync after all (they go on trying), then `Ready`.
    async fn await_sync(self, name: ClusterName, generation: u64, factory: SharedInformerFactory) {
        let timeout = self.inner.sync_timeout;
        if let Err(e) = factory.wait_for_cache_sync_timeout(timeout).await {
            tracing::warn!(cluster = %name, error = %e, "fleet: cluster did not sync");
            let reason = format!("its informers did not sync: {e}");
            self.update(&name, generation, |slot| {
                slot.state = ClusterState::Failed(reason);
            });
            let synced = factory.wait_for_cache_sync().await;
            if synced.is_empty() || !synced.values().all(|s| *s) {
                return;
            }
            tracing::info!(cluster = %name, "fleet: cluster synced after all");
        }
        self.update(&name, generation, |slot| {
            slot.synced = true;
            slot.attempts = 0;
            if !matches!(slot.state, ClusterState::Degraded(_)) {
                slot.state = ClusterState::Ready;
            }
        });
    }

    /// Applies `change` to `name`'s slot if it still holds engagement `generation`.
    /// Watchers of the fleet ([`FleetController`]s) hear of it only if the state changed: a
    /// probe that passes again every few seconds wakes nobody.
    fn update(&self, name: &ClusterName, generation: u64, change: impl FnOnce(&mut Slot)) {
        let changed = match self.inner.slots.write().get_mut(name) {
            Some(slot)
                if slot
                    .handle
                    .as_ref()
                    .is_some_and(|h| h.generation == generation) =>
            {
                let before = slot.state.clone();
                change(slot);
                slot.state != before
            }
            _ => false,
        };
        if changed {
            self.inner.changed.send_modify(|n| *n += 1);
        }
    }

    /// Disengages `name`: its routes answer `ClusterNotFound` from here on, then its factory
    /// stops and is dropped with its caches.
    async fn disengage(&self, name: &ClusterName) {
        let Some(slot) = self.inner.slots.write().remove(name) else {
            return;
        };
        self.stop(slot.handle, slot.tasks).await;
        tracing::info!(cluster = %name, "fleet: cluster disengaged");
    }

    /// Stops an engagement: its tasks end; its controllers see its token and drain (C7) while
    /// its factory stops (a reconcile in flight finishes reading the caches as they last were);
    /// then what only its caches used is freed (P3), unless someone still holds its handle.
    async fn stop(&self, handle: Option<ClusterHandle>, tasks: Vec<JoinHandle<()>>) {
        for task in &tasks {
            task.abort();
        }
        // An aborted task drops its future, and the factory it holds, when it next runs.
        for task in tasks {
            let _ = task.await;
        }
        if let Some(handle) = handle {
            handle.cancel.cancel();
            self.inner.changed.send_modify(|n| *n += 1);
            // Work in flight (a controller's reconciles, C7) finishes against live caches.
            handle.work.close();
            let limit = self.inner.drain_limit;
            if tokio::time::timeout(limit, handle.work.wait())
                .await
                .is_err()
            {
                tracing::warn!(cluster = %handle.name, ?limit,
                    "fleet: work on a leaving cluster did not end within the drain limit; its informers stop anyway");
            }
            handle.factory.shutdown().await;
            drop(handle);
            informer_runtime::release_unused().await;
        }
    }

    /// The cluster `name`, if it is engaged and can serve.
    pub fn cluster(&self, name: &ClusterName) -> Result<ClusterHandle, FleetError> {
        let slots = self.inner.slots.read();
        let slot = slots
            .get(name)
            .ok_or_else(|| FleetError::ClusterNotFound(name.clone()))?;
        match (&slot.handle, &slot.state) {
            (
                Some(handle),
                ClusterState::Syncing | ClusterState::Ready | ClusterState::Degraded(_),
            ) => Ok(handle.clone()),
            (_, ClusterState::Failed(reason) | ClusterState::BackingOff { reason, .. }) => {
                Err(FleetError::Unavailable {
                    cluster: name.clone(),
                    reason: reason.clone(),
                })
            }
            (None, _) => Err(FleetError::Unavailable {
                cluster: name.clone(),
                reason: "no client".to_owned(),
            }),
        }
    }

    /// Every engaged cluster, by name.
    pub fn clusters(&self) -> Vec<ClusterStatus> {
        self.inner
            .slots
            .read()
            .iter()
            .map(|(name, slot)| ClusterStatus {
                name: name.clone(),
                revision: slot.spec.revision,
                state: slot.state.clone(),
            })
            .collect()
    }

    /// The state of `name`, if it is in the fleet.
    pub fn state_of(&self, name: &str) -> Option<ClusterState> {
        self.inner
            .slots
            .read()
            .get(name)
            .map(|slot| slot.state.clone())
    }

    /// A lister of `K` over every engaged cluster (its informer declared with
    /// [`FleetBuilder::informer`]).
    pub fn lister<K: Object>(&self) -> FleetLister<K> {
        FleetLister::new(self.clone())
    }

    /// The handles of the clusters that can serve (syncing or ready), by name.
    fn serving(&self) -> Vec<ClusterHandle> {
        self.inner
            .slots
            .read()
            .values()
            .filter(|slot| {
                !matches!(
                    slot.state,
                    ClusterState::Failed(_) | ClusterState::BackingOff { .. }
                )
            })
            .filter_map(|slot| slot.handle.clone())
            .collect()
    }

    /// The engagement number of every engaged cluster with a client, whatever its state.
    fn engaged_generations(&self) -> BTreeMap<ClusterName, u64> {
        self.inner
            .slots
            .read()
            .iter()
            .filter_map(|(name, slot)| Some((name.clone(), slot.handle.as_ref()?.generation)))
            .collect()
    }

    /// Changes whenever a cluster is engaged or disengaged.
    fn subscribe(&self) -> watch::Receiver<u64> {
        self.inner.changed.subscribe()
    }

    /// The engaged clusters' handles and states, by name, for the lister.
    fn handles(&self) -> Vec<(ClusterName, Option<ClusterHandle>, ClusterState)> {
        self.inner
            .slots
            .read()
            .iter()
            .map(|(name, slot)| (name.clone(), slot.handle.clone(), slot.state.clone()))
            .collect()
    }
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("clusters", &self.clusters())
            .finish_non_exhaustive()
    }
}
