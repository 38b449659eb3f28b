//! The example operator: each `Foo` owns a ConfigMap with its message, and its status says so.
//!
//! Event handlers only enqueue keys; workers read through listers (never the API server) and
//! write through `kube::Api`. Failed reconciles are retried with the rate-limited workqueue.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use informer_runtime::SharedInformerFactory;
use informer_runtime::informer::{DeletedObject, HandlerOptions, handler_fn};
use informer_runtime::key::ObjectKey;
use informer_runtime::workqueue::{RateLimitingQueue, WorkQueueMetrics};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Resource;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::crd::{Foo, FooStatus};
use crate::generated::InformerFactoryExt;
use crate::generated::core::v1::ConfigMapLister;
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
}

impl Default for OperatorConfig {
    fn default() -> Self {
        OperatorConfig {
            namespace: None,
            workers: 2,
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

/// The operator: informers for Foos and the kinds it touches, a workqueue and its workers.
pub struct Operator {
    client: kube::Client,
    factory: SharedInformerFactory,
    foos: crate::crd::FooLister,
    config_maps: ConfigMapLister,
    queue: RateLimitingQueue<ObjectKey>,
    config: OperatorConfig,
    stats: Arc<Stats>,
    /// Informer and workqueue metrics, ready to be served.
    pub registry: Arc<parking_lot::Mutex<Registry>>,
}

impl Operator {
    /// Builds the informers (through the generated accessors) and registers the handlers that
    /// feed the workqueue. Nothing runs until [`run`](Self::run). Needs a tokio runtime.
    pub fn new(client: kube::Client, config: OperatorConfig) -> anyhow::Result<Arc<Self>> {
        let mut registry = Registry::with_prefix("example");
        let mut builder = SharedInformerFactory::builder(client.clone())
            .strip_managed_fields()
            .metrics(&mut registry);
        if let Some(ns) = &config.namespace {
            builder = builder.namespace(ns.clone());
        }
        let factory = builder.build();
        let queue_metrics = WorkQueueMetrics::new(&mut registry);
        let queue = RateLimitingQueue::builder()
            .name("foos")
            .metrics(&queue_metrics)
            .build();

        let foos = factory.example().v1().foos();
        let config_maps = factory.core().v1().config_maps();
        // Informers the example only counts, to show several kinds sharing one factory. Pods are
        // cached as a projection (P4): the informer watches /api/v1/pods but keeps ~1 KiB a Pod.
        factory.apps().v1().deployments().informer();
        factory
            .core()
            .v1()
            .pods()
            .projected::<PodSummary>()
            .informer();

        let q = queue.clone();
        let enqueue_foo = move |foo: &Foo| {
            if let Ok(key) = ObjectKey::from_resource(foo) {
                q.add(key);
            }
        };
        let (on_add, on_update) = (enqueue_foo.clone(), enqueue_foo);
        let q = queue.clone();
        foos.informer().add_event_handler_with(
            handler_fn()
                .on_add(move |foo: &Arc<Foo>, _| on_add(foo))
                .on_update(move |_, foo: &Arc<Foo>| on_update(foo))
                // A tombstone still carries the key (H12), which is all the reconcile needs.
                .on_delete(move |deleted: &DeletedObject<Foo>| {
                    if let Ok(key) = deleted.key() {
                        q.add(key);
                    }
                }),
            HandlerOptions::new().name("enqueue-foo"),
        )?;

        // A change to an owned ConfigMap (edited or deleted by someone else) requeues its Foo.
        let q = queue.clone();
        let enqueue_owner = move |cm: &ConfigMap| {
            for owner in cm.metadata.owner_references.iter().flatten() {
                if owner.kind == "Foo" && owner.api_version == "example.com/v1" {
                    q.add(ObjectKey::new(
                        cm.metadata.namespace.as_deref(),
                        &owner.name,
                    ));
                }
            }
        };
        let (on_add, on_update, on_delete) =
            (enqueue_owner.clone(), enqueue_owner.clone(), enqueue_owner);
        config_maps.informer().add_event_handler_with(
            handler_fn()
                .on_add(move |cm: &Arc<ConfigMap>, _| on_add(cm))
                .on_update(move |_, cm: &Arc<ConfigMap>| on_update(cm))
                .on_delete(move |deleted: &DeletedObject<ConfigMap>| {
                    if let Some(cm) = deleted.last_known() {
                        on_delete(cm);
                    }
                }),
            HandlerOptions::new().name("enqueue-owner"),
        )?;

        Ok(Arc::new(Operator {
            client,
            foos: foos.lister(),
            config_maps: config_maps.lister(),
            factory,
            queue,
            config,
            stats: Arc::new(Stats::default()),
            registry: Arc::new(parking_lot::Mutex::new(registry)),
        }))
    }

    /// The operator's counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The shared informer factory (for more informers, or to inspect caches).
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.factory
    }

    /// Starts the informers, waits for their caches, runs the workers until `cancel`, then
    /// drains the queue and shuts every informer down.
    pub async fn run(self: Arc<Self>, cancel: CancellationToken) -> anyhow::Result<()> {
        self.factory.start();
        self.factory
            .wait_for_cache_sync_timeout(Duration::from_secs(60))
            .await?;
        tracing::info!(
            foos = self.foos.list(&Default::default()).len(),
            config_maps = self.config_maps.list(&Default::default()).len(),
            deployments = self.factory.informer_for::<Deployment>().indexer().len(),
            pods = self.factory.informer_for::<PodSummary>().indexer().len(),
            "caches synced"
        );
        let mut workers = Vec::new();
        for _ in 0..self.config.workers.max(1) {
            let this = Arc::clone(&self);
            workers.push(tokio::spawn(async move { this.work().await }));
        }
        cancel.cancelled().await;
        self.queue.shut_down_with_drain().await;
        for worker in workers {
            worker.await?;
        }
        self.factory.shutdown().await;
        Ok(())
    }

    async fn work(&self) {
        while let Some(key) = self.queue.get().await {
            match self.reconcile(&key).await {
                Ok(()) => {
                    self.stats.reconciled.fetch_add(1, Ordering::Relaxed);
                    self.queue.forget(&key);
                }
                Err(err) => {
                    self.stats.failed.fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(%key, error = %err, "reconcile failed; retrying with backoff");
                    self.queue.add_rate_limited(key.clone());
                }
            }
            self.queue.done(&key);
        }
    }

    /// Makes the cluster match one Foo: its ConfigMap holds the message, its status says so.
    async fn reconcile(&self, key: &ObjectKey) -> anyhow::Result<()> {
        let ns = key.namespace().unwrap_or("default");
        let cm_name = config_map_name(key.name());
        let cm_api: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        let foo = match self.foos.namespaced(ns).get(key.name()) {
            Ok(foo) => foo,
            Err(err) if err.is_not_found() => {
                // The Foo is gone: remove what it owned (the testserver has no garbage collector).
                if self.config_maps.namespaced(ns).get(&cm_name).is_ok() {
                    match cm_api.delete(&cm_name, &Default::default()).await {
                        Ok(_) => println!("  deleted   ConfigMap {ns}/{cm_name} (its Foo is gone)"),
                        Err(kube::Error::Api(s)) if s.is_not_found() => {}
                        Err(err) => return Err(err.into()),
                    }
                }
                return Ok(());
            }
            Err(err) => return Err(err.into()),
        };

        let desired = desired_config_map(&foo, &cm_name)?;
        match self.config_maps.namespaced(ns).get(&cm_name) {
            Err(err) if err.is_not_found() => {
                match cm_api.create(&PostParams::default(), &desired).await {
                    Ok(_) => println!(
                        "  created   ConfigMap {ns}/{cm_name}: {:?}",
                        foo.spec.message
                    ),
                    // The cache lags our own create; the next event reconciles again.
                    Err(kube::Error::Api(s)) if s.code == 409 => {}
                    Err(err) => return Err(err.into()),
                }
                self.stats.writes.fetch_add(1, Ordering::Relaxed);
            }
            Err(err) => return Err(err.into()),
            Ok(existing) if existing.data != desired.data => {
                let patch = serde_json::json!({ "data": desired.data });
                cm_api
                    .patch(&cm_name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                println!(
                    "  updated   ConfigMap {ns}/{cm_name}: {:?}",
                    foo.spec.message
                );
                self.stats.writes.fetch_add(1, Ordering::Relaxed);
            }
            Ok(_) => {}
        }

        let status = FooStatus {
            config_map: Some(cm_name),
            observed_generation: foo.metadata.generation,
            ready: true,
        };
        if foo.status.as_ref() != Some(&status) {
            let foo_api: Api<Foo> = Api::namespaced(self.client.clone(), ns);
            let patch = serde_json::json!({ "status": status });
            foo_api
                .patch_status(
                    key.name(),
                    &PatchParams::apply(MANAGER),
                    &Patch::Merge(&patch),
                )
                .await?;
            println!("  status    Foo {ns}/{} is ready", key.name());
        }
        Ok(())
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
