//! Scenario 11, the Rust side: the operator of [`fleet`](crate::fleet) on informer-controller,
//! at its defaults.
//!
//! [`Controller`] for the compact Deployment (informer-k8s's handles cache the compact form,
//! decision record 26) owning the compact ConfigMap, one worker (the controller's default, and
//! controller-runtime's `MaxConcurrentReconciles` default), the read-your-own-writes guard on
//! (K3), and a cluster-wide Pod informer from the same factory, whose lister the reconcile reads
//! (compact Pods). The factory is `SharedInformerFactory::new`: `InformerConfig::default()` (the
//! streaming initial list, V1, falling back to a paged LIST, R19), protobuf for built-in kinds
//! (T1), the process-wide decode pool unless `--decode-threads` sizes one. Writes go through
//! `kube::Api<ConfigMap>` and are recorded (K2).
//!
//! The controller waits for its own kinds (C6); the reconcile also reads Pods, so it first
//! waits for the Pod informer's sync, as controller-runtime's cache does when a reconcile lists
//! a kind whose informer has not synced. The child runs until the orchestrator, which watches
//! the ConfigMaps on the server, says every one is right (`proceed`), then reports.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use anyhow::Context as _;
use informer_controller::{Action, Context, Controller, Request};
use informer_k8s::InformerFactoryExt as _;
use informer_k8s::api::apps::v1::Deployment;
use informer_k8s::api::core::v1::{ConfigMap as CachedConfigMap, Pod as CachedPod};
use informer_runtime::SharedInformerFactory;
use informer_runtime::informer::{InformerConfig, SharedIndexInformer};
use informer_runtime::reflector::InitialListStrategy;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::core::Selector;
use tokio_util::sync::CancellationToken;

use super::{ChildIo, ChildSpec, client, memory_metrics};
use crate::fleet::{MANAGED_BY_KEY, MANAGED_BY_VALUE, config_map_name, expected_data};
use crate::protocol::{Command, Metrics};

/// What the reconciles share: the Pod informer (to wait for its sync) and the counters.
pub struct Shared {
    pods: Arc<SharedIndexInformer<CachedPod>>,
    started: Instant,
    first_reconcile: OnceLock<f64>,
    /// Reconciles that returned (either way).
    pub reconciles: AtomicU64,
    /// ConfigMaps created or patched.
    pub writes: AtomicU64,
    /// Reconciles that failed (retried with backoff, C3).
    pub errors: AtomicU64,
}

/// Runs the operator on `factory` until `cancel`, counting into the returned handle's
/// [`Shared`] (available at once, so a caller can watch it while the operator runs).
pub fn start(
    factory: SharedInformerFactory,
    cancel: CancellationToken,
) -> (
    Arc<Shared>,
    tokio::task::JoinHandle<Result<(), informer_controller::Error>>,
) {
    // The cluster-wide Pod informer the reconcile counts from (compact Pods by default).
    let pods = factory.core().v1().pods().informer();
    let shared = Arc::new(Shared {
        pods,
        started: Instant::now(),
        first_reconcile: OnceLock::new(),
        reconciles: AtomicU64::new(0),
        writes: AtomicU64::new(0),
        errors: AtomicU64::new(0),
    });
    let data = Arc::clone(&shared);
    let task = tokio::spawn(async move {
        let controller =
            Controller::<Deployment>::new(factory.clone(), "deployments").owns::<CachedConfigMap>();
        // Starts the Pod informer; the controller starts the informers of its own kinds.
        factory.start();
        let result = controller.run(reconcile, data, cancel).await;
        factory.shutdown().await;
        result
    });
    (shared, task)
}

/// Makes Deployment `req`'s ConfigMap say its replicas and how many Pods its selector matches.
async fn reconcile(
    req: Request<Deployment>,
    ctx: Arc<Context<Arc<Shared>>>,
) -> anyhow::Result<Action> {
    let shared = ctx.data();
    shared
        .first_reconcile
        .get_or_init(|| shared.started.elapsed().as_secs_f64());
    let result = reconcile_deployment(&req, &ctx).await;
    shared.reconciles.fetch_add(1, Ordering::Relaxed);
    if result.is_err() {
        shared.errors.fetch_add(1, Ordering::Relaxed);
    }
    result
}

async fn reconcile_deployment(
    req: &Request<Deployment>,
    ctx: &Context<Arc<Shared>>,
) -> anyhow::Result<Action> {
    // Deleted: the ConfigMap's owner reference lets the garbage collector remove it (C5).
    let Some(deployment) = &req.object else {
        return Ok(Action::Done);
    };
    anyhow::ensure!(
        ctx.data().pods.wait_for_sync().await,
        "the Pod informer stopped before it synced"
    );
    let ns = req.namespace().unwrap_or("default");
    let selector = Selector::try_from(LabelSelector::from(&deployment.spec.selector))
        .context("the Deployment's selector")?;
    let pods = ctx
        .factory()
        .core()
        .v1()
        .pods()
        .lister()
        .namespaced(ns)
        .list(&selector)
        .len();
    let data = expected_data(deployment.spec.replicas.unwrap_or(1), pods);
    let name = config_map_name(req.name());
    let api: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), ns);
    let recorder = ctx.recorder(&req.key);
    let cached = ctx
        .factory()
        .core()
        .v1()
        .config_maps()
        .lister()
        .namespaced(ns)
        .get(&name);
    match cached {
        Err(err) if err.is_not_found() => {
            let desired = desired(deployment, ns, &name, data)?;
            match api.create(&PostParams::default(), &desired).await {
                Ok(created) => recorder.record(&created),
                // The cache lags a create of ours; the ConfigMap's event reconciles again.
                Err(kube::Error::Api(s)) if s.code == 409 => return Ok(Action::Done),
                Err(err) => return Err(err.into()),
            }
        }
        Err(err) => return Err(err.into()),
        Ok(existing) if !existing.data.as_ref().is_some_and(|d| *d == data) => {
            let patch = serde_json::json!({ "data": data });
            let patched = api
                .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            recorder.record(&patched);
        }
        Ok(_) => return Ok(Action::Done),
    }
    ctx.data().writes.fetch_add(1, Ordering::Relaxed);
    Ok(Action::Done)
}

/// The ConfigMap of `deployment`: labelled, owned by it (a controller reference), `data`.
fn desired(
    deployment: &Deployment,
    ns: &str,
    name: &str,
    data: BTreeMap<String, String>,
) -> anyhow::Result<ConfigMap> {
    let owner = informer_controller::controller_owner_ref(deployment)
        .context("the Deployment has no name or uid yet")?;
    Ok(ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(ns.to_string()),
            labels: Some(BTreeMap::from([(
                MANAGED_BY_KEY.to_string(),
                MANAGED_BY_VALUE.to_string(),
            )])),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(data),
        ..ConfigMap::default()
    })
}

/// The child of scenario 11: runs the operator until the orchestrator has seen every
/// ConfigMap, then reports memory, CPU seconds and the reconcile counts.
pub(crate) async fn run(spec: &ChildSpec, io: &mut ChildIo) -> anyhow::Result<Metrics> {
    let client = client(&spec.url, spec.kubeconfig.as_deref()).await?;
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    // Without `--decode-threads`, the process-wide pool, as `SharedInformerFactory::new` gives
    // (`1`: every watch read and decoded on its informer's own task, without the reader task of T6).
    let factory = SharedInformerFactory::builder(client)
        .decode_pool(super::ours::decode_pool(spec.decode_threads)?)
        .build();
    let (shared, mut task) = start(factory, cancel.clone());
    tokio::select! {
        proceed = io.expect(Command::Proceed) => proceed?,
        ended = &mut task => {
            ended.context("the operator task")??;
            anyhow::bail!("the operator stopped before the orchestrator saw every ConfigMap");
        }
    }
    let cpu_s = crate::sys::cpu_seconds().context("reading /proc/self/stat")?;
    let mut m = memory_metrics();
    m.insert("cpu_s".into(), cpu_s);
    // The server holds every ConfigMap, but the reconcile that wrote the last one may not have
    // counted it yet: stop the controller, which lets in-flight reconciles finish, before the
    // counts are read. CPU and memory above are what the operator took until completion.
    cancel.cancel();
    tokio::time::timeout(std::time::Duration::from_secs(60), &mut task)
        .await
        .context("the operator did not stop within 60 s")?
        .context("the operator task")??;
    let count = |c: &AtomicU64| c.load(Ordering::Relaxed) as f64;
    m.insert("reconciles".into(), count(&shared.reconciles));
    m.insert("writes".into(), count(&shared.writes));
    m.insert("reconcile_errors".into(), count(&shared.errors));
    if let Some(first) = shared.first_reconcile.get() {
        m.insert("first_reconcile_s".into(), *first);
    }
    // What this side used, as configured: the defaults (V1's streaming initial list; T1's
    // protobuf). The orchestrator checks both in informer-testserver's log.
    let streaming = InformerConfig::<CachedPod>::default().reflector.strategy
        == InitialListStrategy::StreamingList;
    m.insert("watch_list".into(), f64::from(u8::from(streaming)));
    m.insert("protobuf".into(), 1.0);
    Ok(m)
}
