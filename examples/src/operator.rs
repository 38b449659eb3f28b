//! The example operator: each `Foo` owns a ConfigMap with its message, and its status says so.
//!
//! It is a [`Controller`] for `Foo` that owns ConfigMaps: the controller feeds the workqueue
//! from the informers, runs the workers and retries failures with backoff; this file holds
//! only the reconcile, which reads through listers (never the API server) and writes through
//! `kube::Api`. With [`OperatorConfig::leader_election`] the controller runs only on the
//! replica that holds the Lease, on informers that were warm before it won. With
//! [`OperatorConfig::sharding`] several replicas split the namespaces between them (KEP-5866
//! sharded list and watch, shards assigned over Leases): each replica caches and reconciles only
//! the namespaces of the shards it owns. Sharding is by namespace because a Foo and the ConfigMap
//! it owns must land in the same shard, and only the namespace is a field both share.
//! [`Operator::pause`] holds every reconcile back for a maintenance window, in every mode, while
//! the caches (and any Lease) stay; [`Operator::resume`] reconciles what changed meanwhile.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use informer_controller::leader::{LeaderElectionConfig, LeaderElector};
use informer_controller::shards::ShardAssigner;
use informer_controller::status::update_status;
use informer_controller::{Action, Context, Controller, PauseHandle, Request};
use informer_k8s::InformerFactoryExt as _;
use informer_runtime::SharedInformerFactory;
use informer_runtime::shard::ShardField;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Resource;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::crd::{Foo, FooStatus};
use crate::views::PodSummary;

/// The field manager the operator writes with.
const MANAGER: &str = "informer-rs-example";

/// How the operator runs.
#[derive(Debug, Clone)]
pub struct OperatorConfig {
    /// Watch one namespace, or all of them.
    pub namespace: Option<String>,
    /// Concurrent reconcile workers.
    pub workers: usize,
    /// Run the controller only while holding this Lease: `(namespace, identity)`.
    pub leader_election: Option<(String, String)>,
    /// Split the namespaces between replicas; exclusive with `leader_election`.
    pub sharding: Option<Sharding>,
}

/// How a replica takes part in a sharded deployment of the operator.
#[derive(Debug, Clone)]
pub struct Sharding {
    /// Shards the namespaces are split into (the same on every replica).
    pub shards: u32,
    /// The namespace of the shard Leases.
    pub lease_namespace: String,
    /// This replica's identity, unique among the replicas.
    pub identity: String,
    /// Lease timing (client-go's defaults: 15 s / 10 s / 2 s).
    pub lease: LeaderElectionConfig,
}

impl Default for OperatorConfig {
    fn default() -> Self {
        OperatorConfig {
            namespace: None,
            workers: 2,
            leader_election: None,
            sharding: None,
        }
    }
}

/// Counters a person (or a test) can read while the operator runs.
#[derive(Debug, Default)]
pub struct Stats {
    /// Reconciles that finished without error.
    pub reconciled: AtomicU64,
    /// Reconciles that failed and were requeued with backoff.
    pub failed: AtomicU64,
    /// ConfigMaps created or updated.
    pub writes: AtomicU64,
}

/// The operator: a controller for Foos on a shared informer factory.
pub struct Operator {
    client: kube::Client,
    factory: SharedInformerFactory,
    controller: Controller<Foo>,
    config: OperatorConfig,
    stats: Arc<Stats>,
    /// Pauses the controller, or every shard's controller (C11).
    pause: PauseHandle,
    /// The shards this replica owns, while it runs sharded.
    owned:
        parking_lot::Mutex<Option<tokio::sync::watch::Receiver<std::collections::BTreeSet<u32>>>>,
    /// Informer, workqueue and controller metrics, ready to be served.
    pub registry: Arc<parking_lot::Mutex<Registry>>,
}

impl Operator {
    /// Builds the factory and the controller. Nothing runs until [`run`](Self::run).
    pub fn new(client: kube::Client, config: OperatorConfig) -> anyhow::Result<Arc<Self>> {
        let mut registry = Registry::with_prefix("example");
        let mut builder = SharedInformerFactory::builder(client.clone())
            .strip_managed_fields()
            .metrics(&mut registry);
        if let Some(ns) = &config.namespace {
            builder = builder.namespace(ns.clone());
        }
        let factory = builder.build();
        // Informers the example only counts, to show several kinds sharing one factory. Built-in
        // kinds come from informer-k8s in their compact form, the default (decision record 26);
        // Pods are cached as a projection (P4): the informer watches /api/v1/pods but keeps
        // ~1 KiB a Pod.
        factory.apps().v1().deployments().informer();
        factory
            .core()
            .v1()
            .pods()
            .projected::<PodSummary>()
            .informer();

        let controller = Controller::<Foo>::new(factory.clone(), "foos")
            // The compact ConfigMap, the form `config_maps().lister()` reads in `reconcile`:
            // one cache for both. Writes still go through k8s-openapi's `ConfigMap`.
            .owns::<informer_k8s::api::core::v1::ConfigMap>()
            .workers(config.workers)
            .metrics(&mut registry);
        let pause = controller.pause_handle();
        Ok(Arc::new(Operator {
            client,
            factory,
            controller,
            config,
            pause,
            stats: Arc::new(Stats::default()),
            owned: parking_lot::Mutex::new(None),
            registry: Arc::new(parking_lot::Mutex::new(registry)),
        }))
    }

    /// The operator's counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Starts a maintenance window: no reconcile starts until [`resume`](Self::resume), while
    /// reconciles already running finish (C11). The informers keep their caches current and
    /// changes queue up (one reconcile per Foo, however often it changes); a replica keeps its
    /// Lease or shards. Idempotent; it also holds back runs that start later (a new term or
    /// shard).
    pub fn pause(&self) {
        self.pause.pause();
        println!("  paused    reconciles held back");
    }

    /// Ends the maintenance window: the Foos that changed meanwhile are reconciled (C11).
    pub fn resume(&self) {
        self.pause.resume();
        println!("  resumed   reconciles");
    }

    /// Whether the operator is in a maintenance window.
    pub fn is_paused(&self) -> bool {
        self.pause.is_paused()
    }

    /// The shards this replica owns now (empty unless it runs sharded).
    pub fn owned_shards(&self) -> std::collections::BTreeSet<u32> {
        self.owned
            .lock()
            .as_ref()
            .map(|rx| rx.borrow().clone())
            .unwrap_or_default()
    }

    /// The shared informer factory (for more informers, or to inspect caches).
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.factory
    }

    /// Runs the controller until `cancel` (only while leading, with leader election), then
    /// drains in-flight reconciles and shuts every informer down.
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) -> anyhow::Result<()> {
        if let Some(sharding) = self.config.sharding.clone() {
            if self.config.leader_election.is_some() {
                anyhow::bail!("sharding and leader election are exclusive");
            }
            return self.run_sharded(sharding, cancel).await;
        }
        match &self.config.leader_election {
            None => {
                // The controller starts only what it reads (Foos, ConfigMaps); the counted
                // Deployments and Pods start here.
                self.factory.start();
                self.controller
                    .run(reconcile, Arc::clone(&self.stats), cancel)
                    .await?
            }
            Some((namespace, identity)) => {
                // Warm the caches first, so a takeover starts reconciling at once.
                self.factory.start();
                self.factory
                    .wait_for_cache_sync_timeout(Duration::from_secs(60))
                    .await?;
                let elector = LeaderElector::new(
                    self.client.clone(),
                    namespace,
                    "informer-rs-example-operator",
                    identity.clone(),
                    LeaderElectionConfig::default(),
                )?
                .on_new_leader(|holder| println!("  leader    {holder}"));
                elector
                    .run(cancel, |term| {
                        let this = Arc::clone(&self);
                        async move {
                            let stats = Arc::clone(&this.stats);
                            if let Err(err) = this.controller.run(reconcile, stats, term).await {
                                tracing::error!(error = %err, "controller failed while leading");
                            }
                        }
                    })
                    .await?;
            }
        }
        self.factory.shutdown().await;
        Ok(())
    }
}

impl Operator {
    /// Takes part in the shard set until `cancel`: for each shard this replica owns, a factory
    /// that lists and watches only that shard's namespaces and a controller on it, stopped when
    /// the shard moves to another replica.
    async fn run_sharded(
        self: Arc<Self>,
        sharding: Sharding,
        cancel: CancellationToken,
    ) -> anyhow::Result<()> {
        let assigner = ShardAssigner::new(
            self.client.clone(),
            &sharding.lease_namespace,
            "informer-rs-example-operator",
            sharding.identity.clone(),
            sharding.shards,
            sharding.lease,
        )?
        // The set's Leases record its count and field (S1).
        .hash_field(ShardField::Namespace);
        *self.owned.lock() = Some(assigner.subscribe());
        let shards = &assigner;
        let identity = sharding.identity.clone();
        assigner
            .run(cancel, |index, owned| {
                let this = Arc::clone(&self);
                let shard = shards.shard(index, shards.field());
                let identity = identity.clone();
                async move {
                    let mut builder = SharedInformerFactory::builder(this.client.clone())
                        .strip_managed_fields()
                        .informer_name(format!("shard-{index}"))
                        .shard(shard);
                    if let Some(ns) = &this.config.namespace {
                        builder = builder.namespace(ns.clone());
                    }
                    let factory = builder.build();
                    let controller = Controller::<Foo>::new(factory.clone(), "foos")
                        .owns::<informer_k8s::api::core::v1::ConfigMap>()
                        .workers(this.config.workers)
                        .with_pause_handle(this.pause.clone());
                    println!("  shard     {index} now on {identity}");
                    let stats = Arc::clone(&this.stats);
                    if let Err(err) = controller.run(reconcile, stats, owned).await {
                        tracing::error!(error = %err, shard = index, "controller failed");
                    }
                    factory.shutdown().await;
                    println!("  shard     {index} left {identity}");
                }
            })
            .await?;
        self.factory.shutdown().await;
        Ok(())
    }
}

/// Counts the outcome of [`reconcile_foo`]; the controller retries errors with backoff.
async fn reconcile(req: Request<Foo>, ctx: Arc<Context<Arc<Stats>>>) -> anyhow::Result<Action> {
    let result = reconcile_foo(&req, &ctx).await;
    let counter = match &result {
        Ok(_) => &ctx.data().reconciled,
        Err(_) => &ctx.data().failed,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    result
}

/// Makes the cluster match one Foo: its ConfigMap holds the message, its status says so.
async fn reconcile_foo(req: &Request<Foo>, ctx: &Context<Arc<Stats>>) -> anyhow::Result<Action> {
    let ns = req.namespace().unwrap_or("default");
    let cm_name = config_map_name(req.name());
    let cm_api: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), ns);
    // Every write below is recorded: the next reconcile of this Foo waits until the caches hold
    // it (K2, K3), so it never acts on the state from before its own write.
    let recorder = ctx.recorder(&req.key);
    let config_maps = ctx.factory().core().v1().config_maps().lister();
    let cached = config_maps.namespaced(ns).get(&cm_name);
    let Some(foo) = &req.object else {
        // The Foo is gone (C5): remove what it owned (the testserver has no garbage collector).
        if cached.is_ok() {
            match cm_api.delete(&cm_name, &Default::default()).await {
                Ok(_) => println!("  deleted   ConfigMap {ns}/{cm_name} (its Foo is gone)"),
                Err(kube::Error::Api(s)) if s.is_not_found() => {}
                Err(err) => return Err(err.into()),
            }
        }
        return Ok(Action::Done);
    };

    let desired = desired_config_map(foo, &cm_name)?;
    match cached {
        Err(err) if err.is_not_found() => {
            match cm_api.create(&PostParams::default(), &desired).await {
                Ok(created) => {
                    recorder.record(&created);
                    println!(
                        "  created   ConfigMap {ns}/{cm_name}: {:?}",
                        foo.spec.message
                    )
                }
                // The cache lags our own create; the ConfigMap's event reconciles again.
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(err) => return Err(err.into()),
            }
            ctx.data().writes.fetch_add(1, Ordering::Relaxed);
        }
        Err(err) => return Err(err.into()),
        // A compact ConfigMap's `data` is a `StrMap`, which compares with a `BTreeMap` as is.
        Ok(existing) if !same_data(existing.data.as_ref(), desired.data.as_ref()) => {
            let patch = serde_json::json!({ "data": desired.data });
            let patched = cm_api
                .patch(&cm_name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            recorder.record(&patched);
            println!(
                "  updated   ConfigMap {ns}/{cm_name}: {:?}",
                foo.spec.message
            );
            ctx.data().writes.fetch_add(1, Ordering::Relaxed);
        }
        Ok(_) => {}
    }

    let status = FooStatus {
        config_map: Some(cm_name),
        observed_generation: foo.metadata.generation,
        ready: true,
    };
    let foo_api: Api<Foo> = Api::namespaced(ctx.client().clone(), ns);
    // Written with the cached resourceVersion, re-read and retried on conflict; no-op if equal.
    if update_status(&foo_api, &**foo, &recorder, |f| {
        f.status = Some(status.clone())
    })
    .await?
    .is_some()
    {
        println!("  status    Foo {ns}/{} is ready", req.name());
    }
    Ok(Action::Done)
}

/// Whether a cached ConfigMap's `data` is the wanted one.
fn same_data(
    cached: Option<&informer_runtime::projection::StrMap>,
    wanted: Option<&std::collections::BTreeMap<String, String>>,
) -> bool {
    match (cached, wanted) {
        (Some(cached), Some(wanted)) => cached == wanted,
        (cached, wanted) => cached.is_none() && wanted.is_none(),
    }
}

/// The name of the ConfigMap a Foo owns.
pub fn config_map_name(foo: &str) -> String {
    format!("{foo}-message")
}

fn desired_config_map(foo: &Foo, name: &str) -> anyhow::Result<ConfigMap> {
    let owner = foo
        .controller_owner_ref(&())
        .ok_or_else(|| anyhow::anyhow!("Foo has no name or uid yet"))?;
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: foo.metadata.namespace.clone(),
            owner_references: Some(vec![owner]),
            labels: Some(
                [(
                    "app.kubernetes.io/managed-by".to_string(),
                    MANAGER.to_string(),
                )]
                .into(),
            ),
            ..Default::default()
        },
        data: Some([("message".to_string(), foo.spec.message.clone())].into()),
        ..Default::default()
    })
}
