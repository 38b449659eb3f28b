//! The controller: a primary kind, the kinds it owns or watches, a rate-limited workqueue and
//! N workers running an async reconcile (C1-C11).
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use informer_controller::{Action, Context, Controller, Request};
//! # use informer_runtime::SharedInformerFactory;
//! # use k8s_openapi::api::apps::v1::Deployment;
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # use tokio_util::sync::CancellationToken;
//! async fn reconcile(req: Request<Deployment>, ctx: Arc<Context<()>>) -> Result<Action, kube::Error> {
//!     let Some(deployment) = &req.object else {
//!         return Ok(Action::Done); // deleted: nothing left to clean up here (C5)
//!     };
//!     let config_maps = ctx.lister::<ConfigMap>();
//!     let _owned = config_maps.namespaced(req.namespace().unwrap_or("default")).list(&Default::default());
//!     # let _ = deployment;
//!     Ok(Action::Done)
//! }
//! # async fn demo(client: kube::Client) -> Result<(), informer_controller::Error> {
//! let factory = SharedInformerFactory::new(client);
//! let controller = Controller::<Deployment>::new(factory, "deployments")
//!     .owns::<ConfigMap>()
//!     .workers(4);
//! let cancel = CancellationToken::new();
//! controller.run(reconcile, (), cancel).await?;
//! # Ok(()) }
//! ```

mod action;
mod admission;
mod metrics;
mod pause;
mod sources;
mod worker;
mod writes;

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use informer_runtime::key::ObjectKey;
use informer_runtime::lister::Lister;
use informer_runtime::shard::ShardField;
use informer_runtime::workqueue::{
    RateLimiter, RateLimitingQueue, WorkQueueMetrics, default_controller_rate_limiter,
};
use informer_runtime::{Object, SharedInformerFactory};
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

pub use action::{Action, Context, Request};
pub use metrics::ControllerMetrics;
pub use pause::PauseHandle;
pub use writes::WriteRecorder;

use crate::leader::Term;
use metrics::Series;
use sources::{InformerSource, Mapping, Registered, Source};
use worker::{Backoffs, Worker};
use writes::WriteLog;

/// Why a controller run failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A handler could not be registered: the informer was stopped (H14). Not retryable on
    /// this factory.
    #[error("controller {controller}: registering a handler: {source}")]
    Register {
        /// The controller's name.
        controller: String,
        /// The informer's error.
        #[source]
        source: informer_runtime::informer::Error,
    },
    /// The caches did not sync within the configured timeout (C6, F4). Retryable: the
    /// informers keep trying (a 403 from RBAC, for example, shows in the factory's errors).
    #[error("controller {controller}: caches not synced within {timeout:?}")]
    CacheSyncTimeout {
        /// The controller's name.
        controller: String,
        /// The configured timeout.
        timeout: Duration,
    },
    /// An informer stopped before it synced (the factory was shut down). Not retryable.
    #[error("controller {controller}: an informer stopped before it synced")]
    InformerStopped {
        /// The controller's name.
        controller: String,
    },
    /// The factory is sharded by `metadata.uid`, which splits the objects of one key over
    /// replicas (S7): shard by namespace. Not retryable.
    #[error(
        "controller {controller}: its factory is sharded by metadata.uid, which puts an object, the objects it owns \
         and a re-created object of the same name on different replicas (S7); shard by metadata.namespace"
    )]
    ShardedByUid {
        /// The controller's name.
        controller: String,
    },
}

/// K3's default bound: how long a reconcile waits for the caches to hold its key's writes.
pub const DEFAULT_READ_YOUR_WRITES_TIMEOUT: Duration = Duration::from_secs(5);

/// `Result` with this module's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A controller for the primary kind `K` (controller-runtime's builder, on shared informers).
///
/// The controller is a description: [`run`](Self::run) builds a fresh workqueue, registers the
/// handlers, starts the informers that are not running yet, waits for their caches (C6), runs
/// the workers until cancelled, drains (C7) and returns. It can be run again (for example each
/// time a [`LeaderElector`](crate::leader::LeaderElector) wins the lease).
///
/// Guarantees, from the workqueue (W1, W2, W5):
/// - one reconcile per key at a time, across all workers (C1);
/// - a change during a reconcile leads to exactly one more reconcile of that key (C2);
/// - an error requeues the key with per-key exponential backoff (C3), which events do not cut
///   short nor grow: the key waits for the retry due at its end (C10);
/// - a reconcile never starts on a cache older than the writes recorded by earlier reconciles
///   of its key, waiting up to [`read_your_writes_timeout`](Self::read_your_writes_timeout)
///   (K1-K4, see [`WriteRecorder`]).
pub struct Controller<K> {
    factory: SharedInformerFactory,
    name: Arc<str>,
    workers: usize,
    sources: Vec<Box<dyn Source>>,
    limiter: Arc<dyn RateLimiter<ObjectKey>>,
    metrics: Option<(ControllerMetrics, WorkQueueMetrics)>,
    sync_timeout: Option<Duration>,
    shutdown_timeout: Duration,
    /// K3's bound; `None` turns the read-your-own-writes guard off.
    read_your_writes: Option<Duration>,
    /// Pauses the queue of each run (C11).
    pause: PauseHandle,
    _kind: PhantomData<fn() -> K>,
}

impl<K> fmt::Debug for Controller<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Controller")
            .field("name", &self.name)
            .field("workers", &self.workers)
            .field("sources", &self.sources.len())
            .field("metrics", &self.metrics.is_some())
            .finish_non_exhaustive()
    }
}

impl<K: Object> Controller<K> {
    /// A controller named `name` (its metric label and workqueue name) for the primary kind
    /// `K`, reading through `factory` (so the factory's namespace and selectors apply, F6).
    /// Defaults: one worker, client-go's controller rate limiter (W5, W6), no metrics, no sync
    /// timeout, 30 s to drain in-flight reconciles on shutdown, and the read-your-own-writes
    /// guard on with a 5 s bound (K3).
    pub fn new(factory: SharedInformerFactory, name: impl Into<String>) -> Self {
        Controller {
            factory,
            name: Arc::from(name.into()),
            workers: 1,
            sources: vec![Box::new(InformerSource::<K> {
                mapping: Mapping::Primary,
            })],
            limiter: Arc::new(default_controller_rate_limiter::<ObjectKey>()),
            metrics: None,
            sync_timeout: None,
            shutdown_timeout: Duration::from_secs(30),
            read_your_writes: Some(DEFAULT_READ_YOUR_WRITES_TIMEOUT),
            pause: PauseHandle::new(),
            _kind: PhantomData,
        }
    }

    /// Reconciles the owner when an object of kind `C` changes: the key of `C`'s owner
    /// reference with `controller: true` whose group and kind are `K`'s (C4).
    ///
    /// `C` is any cached form of the owned kind: the kind itself, its compact form or a
    /// projection; `K` may be a compact form too (its group and kind are its source kind's).
    ///
    /// `C` is cached with the factory's namespace and selectors, as every kind of the factory
    /// is: by default every object of `C` in the cluster, not only the owned ones. To cache
    /// less, give `C` a scope of its own on the factory
    /// ([`scope_for`](informer_runtime::factory::SharedInformerFactoryBuilder::scope_for), F11):
    /// the primary kind keeps the factory's.
    ///
    /// ```no_run
    /// # use informer_controller::Controller;
    /// # use informer_runtime::SharedInformerFactory;
    /// use informer_runtime::factory::CacheScope;
    /// use informer_k8s::api::{apps::v1::Deployment, core::v1::ConfigMap};
    ///
    /// # fn demo(client: kube::Client) {
    /// // Deployments in every namespace, owning ConfigMaps that live in `team-a` only.
    /// let factory = SharedInformerFactory::builder(client)
    ///     .scope_for::<ConfigMap>(CacheScope::new().namespace("team-a"))
    ///     .build();
    /// let controller = Controller::<Deployment>::new(factory, "deployments").owns::<ConfigMap>();
    /// # let _ = controller;
    /// # }
    /// ```
    ///
    /// ```no_run
    /// use informer_controller::Controller;
    /// use informer_k8s::compact::api::apps::v1 as compact;
    ///
    /// # fn demo(factory: informer_runtime::SharedInformerFactory) {
    /// // Compact Deployments owning compact ReplicaSets: both caches hold the compact form.
    /// let controller = Controller::<compact::Deployment>::new(factory, "deployments")
    ///     .owns::<compact::ReplicaSet>();
    /// # let _ = controller;
    /// # }
    /// ```
    pub fn owns<C: Object>(mut self) -> Self {
        let mapper: sources::Mapper<C> = Arc::new(sources::controller_owner_keys::<K, C>);
        self.sources.push(Box::new(InformerSource::<C> {
            mapping: Mapping::Mapped(mapper),
        }));
        self
    }

    /// Reconciles the keys `mapper` returns when an object of kind `W` changes (both the old
    /// and the new state on update, the last known state on delete; C4).
    ///
    /// ```no_run
    /// use informer_controller::{Controller, ObjectKey};
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    ///
    /// # fn demo(factory: informer_runtime::SharedInformerFactory) {
    /// // Each Deployment names the ConfigMap it reads in an annotation: reconcile that ConfigMap.
    /// let controller = Controller::<ConfigMap>::new(factory, "config").watches(|d: &Deployment| {
    ///     let ns = d.metadata.namespace.as_deref();
    ///     let annotations = d.metadata.annotations.iter().flatten();
    ///     annotations
    ///         .filter(|(k, _)| k.as_str() == "example.com/config")
    ///         .map(|(_, name)| ObjectKey::new(ns, name))
    ///         .collect()
    /// });
    /// # let _ = controller;
    /// # }
    /// ```
    pub fn watches<W: Object>(
        mut self,
        mapper: impl Fn(&W) -> Vec<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        self.sources.push(Box::new(InformerSource::<W> {
            mapping: Mapping::Mapped(Arc::new(mapper)),
        }));
        self
    }

    /// Concurrent reconciles (controller-runtime's `MaxConcurrentReconciles`); at least one.
    pub fn workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// The per-key rate limiter for errors and [`Action::Requeue`] (W4, W5).
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<ObjectKey> + 'static) -> Self {
        self.limiter = Arc::new(limiter);
        self
    }

    /// Registers the controller metrics (C8) and the workqueue metrics (W7) in `registry`,
    /// both as controller-runtime exports them (the workqueue's with
    /// [`WorkQueueMetrics::controller_runtime`]: labels `name` and `controller`).
    /// Several controllers on one registry share the families instead: use
    /// [`shared_metrics`](Self::shared_metrics).
    pub fn metrics(self, registry: &mut Registry) -> Self {
        let controller = ControllerMetrics::new(registry);
        let queue = WorkQueueMetrics::controller_runtime(registry);
        self.shared_metrics(&controller, &queue)
    }

    /// Records into families created once per registry (C8, W7).
    pub fn shared_metrics(
        mut self,
        controller: &ControllerMetrics,
        queue: &WorkQueueMetrics,
    ) -> Self {
        self.metrics = Some((controller.clone(), queue.clone()));
        self
    }

    /// Fails [`run`](Self::run) when the caches have not synced within `timeout` (C6, F4).
    pub fn sync_timeout(mut self, timeout: Duration) -> Self {
        self.sync_timeout = Some(timeout);
        self
    }

    /// How long shutdown waits for in-flight reconciles before aborting them (C7).
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// How long a reconcile waits for the caches to hold the writes recorded by earlier
    /// reconciles of its key before it runs anyway with a warning (K3; default 5 s).
    pub fn read_your_writes_timeout(mut self, timeout: Duration) -> Self {
        self.read_your_writes = Some(timeout);
        self
    }

    /// Turns the read-your-own-writes guard on (the default) or off (K3). Off, recorded
    /// writes are ignored and reconciles start on whatever the caches hold, as in kube-runtime.
    pub fn read_your_writes(mut self, on: bool) -> Self {
        self.read_your_writes = on.then_some(
            self.read_your_writes
                .unwrap_or(DEFAULT_READ_YOUR_WRITES_TIMEOUT),
        );
        self
    }

    /// Pauses this controller's reconciles with `handle`, in place of its own one: several
    /// controllers given one handle pause and resume together (C11).
    pub fn with_pause_handle(mut self, handle: PauseHandle) -> Self {
        self.pause = handle;
        self
    }

    /// The handle that pauses and resumes this controller's reconciles, in the run going on and
    /// in later runs (C11). Take it before moving the controller into its task.
    pub fn pause_handle(&self) -> PauseHandle {
        self.pause.clone()
    }

    /// The controller's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The factory the controller reads through.
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.factory
    }

    /// Runs the controller until `cancel`, then shuts down gracefully (C7): workers stop
    /// taking keys, in-flight reconciles finish (bounded by the shutdown timeout), and handlers
    /// are unregistered. `cancel` is a `CancellationToken` or a leader's or shard's [`Term`]:
    /// then the run also ends when the term's valid-until instant passes, by this run's own
    /// clock, and in-flight reconciles are aborted once the term's drain limit has passed
    /// (S11, S6), before a successor can lead.
    ///
    /// It starts only the informers it reads (its primary kind and the kinds it owns or
    /// watches), each through a [`use_informer`](SharedInformerFactory::use_informer) share, and
    /// on return stops those it started unless another controller run still uses them.
    /// Informers that were already running (e.g. warmed up with
    /// [`SharedInformerFactory::start`] before winning a lease) keep running, and so does every
    /// other informer of the factory: stop them with [`SharedInformerFactory::shutdown`].
    ///
    /// `reconcile` gets the [`Request`] and the shared [`Context`] holding `data`; its error
    /// is logged, counted, and the key retried with backoff (C3). A panic counts as an error.
    ///
    /// A factory sharded by `metadata.uid` is refused ([`Error::ShardedByUid`], S7).
    pub async fn run<D, F, Fut, E>(
        &self,
        reconcile: F,
        data: D,
        cancel: impl Into<Term>,
    ) -> Result<()>
    where
        D: Send + Sync + 'static,
        F: Fn(Request<K>, Arc<Context<D>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        // S7: a key's objects must be in one shard; a UID does not keep them there.
        if self
            .factory
            .shard()
            .is_some_and(|s| s.field() == ShardField::Uid)
        {
            return Err(Error::ShardedByUid {
                controller: self.name.to_string(),
            });
        }
        let mut builder = RateLimitingQueue::builder()
            .name(self.name.to_string())
            .rate_limiter(Arc::clone(&self.limiter));
        let series = match &self.metrics {
            Some((controller, queue)) => {
                builder = builder.metrics(queue);
                controller.for_controller(&self.name)
            }
            None => Series::detached(),
        };
        let queue = builder.build();
        // C11: paused at once if the handle is, until the run ends or its future is dropped.
        let _paused_by = self.pause.attach(queue.delaying().queue());

        let mut registrations = Vec::with_capacity(self.sources.len());
        for source in &self.sources {
            match source.register(&self.factory, &queue, &self.name) {
                Ok(r) => registrations.push(r),
                Err(source) => {
                    unregister(&registrations);
                    return Err(Error::Register {
                        controller: self.name.to_string(),
                        source,
                    });
                }
            }
        }
        // C7: start what this run reads, and only that; share it with other
        // runs on the factory, so that the last one out stops what a run started.
        let uses: Vec<_> = self
            .sources
            .iter()
            .filter_map(|s| self.factory.use_informer(&s.id()))
            .collect();

        let term: Term = cancel.into();
        tracing::info!(
            controller = %self.name,
            sources = self.sources.len(),
            "starting controller; waiting for its caches to sync"
        );
        let synced = self.wait_synced(&registrations, &term).await;
        let result = match synced {
            Ok(true) => {
                self.work(&queue, &series, reconcile, data, &term).await;
                Ok(())
            }
            Ok(false) => Ok(()),
            Err(err) => Err(err),
        };
        queue.shut_down();
        unregister(&registrations);
        for share in uses {
            share.release().await;
        }
        match &result {
            Ok(()) => tracing::info!(controller = %self.name, "controller stopped"),
            Err(err) => tracing::error!(controller = %self.name, error = %err, "controller failed"),
        }
        result
    }

    /// Waits for every informer and handler to sync (C6): `Ok(false)` if cancelled first.
    async fn wait_synced(
        &self,
        registrations: &[Box<dyn Registered>],
        term: &Term,
    ) -> Result<bool> {
        let all = futures::future::join_all(registrations.iter().map(|r| r.wait_for_sync()));
        let timeout = async {
            match self.sync_timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            synced = all => {
                if synced.iter().all(|s| *s) {
                    tracing::info!(controller = %self.name, workers = self.workers, "caches synced; starting workers");
                    Ok(true)
                } else {
                    Err(Error::InformerStopped { controller: self.name.to_string() })
                }
            }
            () = term.cancelled() => Ok(false),
            () = timeout => Err(Error::CacheSyncTimeout {
                controller: self.name.to_string(),
                timeout: self.sync_timeout.unwrap_or_default(),
            }),
        }
    }

    /// Runs the workers until the term ends (cancelled, or past its valid-until instant,
    /// S11), then lets in-flight reconciles finish (C7) within the shutdown timeout and the
    /// term's drain limit (S6), whichever ends first.
    async fn work<D, F, Fut, E>(
        &self,
        queue: &RateLimitingQueue<ObjectKey>,
        series: &Series,
        reconcile: F,
        data: D,
        term: &Term,
    ) where
        D: Send + Sync + 'static,
        F: Fn(Request<K>, Arc<Context<D>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::result::Result<Action, E>> + Send + 'static,
        E: fmt::Display + Send + 'static,
    {
        let writes = self.read_your_writes.map(|_| Arc::new(WriteLog::default()));
        let ctx = Arc::new(Context::new(
            self.factory.clone(),
            Arc::clone(&self.name),
            data,
            writes.clone(),
        ));
        let reconcile = Arc::new(reconcile);
        let lister = Lister::<K>::from_indexer(self.factory.informer_for::<K>().indexer());
        series.max_concurrent.set(self.workers as i64);
        let stop = CancellationToken::new();
        let backoffs = Arc::new(Backoffs::default());
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..self.workers {
            let worker = Worker {
                name: Arc::clone(&self.name),
                queue: queue.clone(),
                lister: lister.clone(),
                series: series.clone(),
                ctx: Arc::clone(&ctx),
                reconcile: Arc::clone(&reconcile),
                stop: stop.clone(),
                term: term.clone(),
                writes: writes.clone(),
                read_your_writes: self.read_your_writes.unwrap_or_default(),
                backoffs: Arc::clone(&backoffs),
            };
            workers.spawn(worker.run());
        }
        // S11: the term's end, valid-until included, on this run's own clock.
        term.cancelled().await;
        stop.cancel();
        // Workers blocked in `get` wake up; those inside a reconcile finish it first, within
        // the shutdown timeout and the term's drain limit (S6).
        queue.shut_down();
        let noticed = Instant::now();
        let mut until = noticed + self.shutdown_timeout;
        // S6: a quarter of the term's drain limit is left to unregister and release the
        // informers, so the run returns on its own before the elector would abort it.
        if let (Some(deadline), Some(limit)) = (term.drain_deadline(noticed), term.drain_limit()) {
            until = until.min(deadline - limit / 4);
        }
        let drained = tokio::time::timeout_at(until, async {
            while workers.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                controller = %self.name,
                timeout = ?self.shutdown_timeout,
                drain_limit = ?term.drain_limit(),
                "in-flight reconciles did not finish in time; aborting them"
            );
            workers.shutdown().await;
        }
        series.active_workers.set(0);
    }
}

fn unregister(registrations: &[Box<dyn Registered>]) {
    for r in registrations {
        r.remove();
    }
}
