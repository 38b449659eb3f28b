//! A fleet operator (decision record 29): in every member cluster, each Namespace labelled
//! `fleet.example/policy=on` gets a ConfigMap `fleet-policy` holding the fleet's policy and the
//! cluster's name, owned by its Namespace. `examples/fleet.rs` runs it over three embedded API
//! servers; `tests/fleet.rs` tests it.
//!
//! It caches compact Namespaces and ConfigMaps (decision record 26) in one factory per cluster,
//! runs one controller per cluster ([`FleetController`]), and writes through that cluster's
//! client.

use std::collections::BTreeMap;
use std::sync::Arc;

use informer_controller::fleet::{
    ClusterData, Fleet, FleetController, FleetError, FleetRequest, Provider,
};
use informer_controller::{Action, Context};
use informer_k8s::api::core::v1::{ConfigMap, Namespace};
use informer_runtime::Meta;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The label that asks for the policy.
pub const LABEL: &str = "fleet.example/policy";
/// The ConfigMap the policy is written to, in each labelled Namespace.
pub const CONFIG_MAP: &str = "fleet-policy";

/// Objects one member may hold in this operator's caches: a member past it backs off
/// instead of taking the process's memory with it (decision record 30).
pub const MEMBER_BUDGET: usize = 200_000;

/// The fleet this operator needs: every member's Namespaces and ConfigMaps, within
/// [`MEMBER_BUDGET`].
pub fn fleet() -> Fleet {
    Fleet::builder()
        .informer::<Namespace>()
        .informer::<ConfigMap>()
        .cache_budget(MEMBER_BUDGET)
        .build()
}

/// What the operator writes to every member.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The policy text.
    pub text: String,
}

/// Runs the policy controller over every cluster of `fleet` until `cancel`.
pub async fn run(
    fleet: &Fleet,
    policy: Policy,
    cancel: CancellationToken,
) -> Result<(), FleetError> {
    FleetController::<Namespace>::new(fleet, "fleet-policy")
        .configure(|controller| controller.owns::<ConfigMap>())
        .run(reconcile, policy, cancel)
        .await
}

/// A fleet and its policy controller, each running in a task.
#[derive(Debug)]
pub struct Running {
    /// The fleet's run ([`Fleet::run`]).
    pub fleet: JoinHandle<Result<(), FleetError>>,
    /// The policy controller's run ([`run`]).
    pub controller: JoinHandle<Result<(), FleetError>>,
}

/// Runs `fleet` over the clusters `provider` reports, and the policy controller over it, until
/// `cancel`.
pub fn spawn(
    fleet: &Fleet,
    provider: impl Provider,
    policy: Policy,
    cancel: &CancellationToken,
) -> Running {
    let (f, c) = (fleet.clone(), cancel.clone());
    let running = tokio::spawn(async move { f.run(provider, c).await });
    let (f, c) = (fleet.clone(), cancel.clone());
    let controller = tokio::spawn(async move { run(&f, policy, c).await });
    Running {
        fleet: running,
        controller,
    }
}

/// Creates a member's Namespaces for the demo: `team-a`, labelled for the policy, and
/// `team-b`, not.
pub async fn create_namespaces(client: &kube::Client) -> Result<(), kube::Error> {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    for (name, labelled) in [("team-a", true), ("team-b", false)] {
        let namespace = k8s_openapi::api::core::v1::Namespace {
            metadata: ObjectMeta {
                name: Some(name.to_owned()),
                labels: labelled.then(|| [(LABEL.to_owned(), "on".to_owned())].into()),
                ..ObjectMeta::default()
            },
            ..Default::default()
        };
        namespaces
            .create(&PostParams::default(), &namespace)
            .await?;
    }
    Ok(())
}

/// `(cluster, namespace)` pairs as [`policies`] returns them.
pub fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(c, n)| ((*c).to_owned(), (*n).to_owned()))
        .collect()
}

/// The ConfigMap data one Namespace of one cluster should have.
fn desired(policy: &Policy, cluster: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("policy".to_owned(), policy.text.clone()),
        ("cluster".to_owned(), cluster.to_owned()),
    ])
}

/// Why a reconcile failed; the controller retries it with backoff (C3).
#[derive(Debug)]
pub enum ReconcileError {
    /// A write to the cluster failed.
    Api(kube::Error),
    /// The cache could not be read.
    Cache(informer_runtime::lister::Error),
}

impl std::fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReconcileError::Api(e) => write!(f, "writing the policy: {e}"),
            ReconcileError::Cache(e) => write!(f, "reading the cache: {e}"),
        }
    }
}

impl std::error::Error for ReconcileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ReconcileError::Api(e) => Some(e),
            ReconcileError::Cache(e) => Some(e),
        }
    }
}

/// Makes one Namespace of one cluster match the policy.
async fn reconcile(
    req: FleetRequest<Namespace>,
    ctx: Arc<Context<ClusterData<Policy>>>,
) -> Result<Action, ReconcileError> {
    // A Namespace that is gone takes its ConfigMaps with it.
    let Some(namespace) = &req.object else {
        return Ok(Action::Done);
    };
    if namespace.object_label(LABEL) != Some("on")
        || namespace.object_deletion_timestamp().is_some()
    {
        return Ok(Action::Done);
    }
    let ns = req.key.name();
    let data = desired(ctx.data().data(), req.cluster.as_str());
    let api: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(ctx.client().clone(), ns);
    // The next reconcile of this Namespace waits until the cache holds this write (K3).
    let recorder = ctx.recorder(&req.key);
    match ctx.lister::<ConfigMap>().namespaced(ns).get(CONFIG_MAP) {
        Err(e) if e.is_not_found() => {
            let owner = k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                name: ns.to_owned(),
                uid: namespace.object_uid().unwrap_or_default().to_owned(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            };
            let config_map = k8s_openapi::api::core::v1::ConfigMap {
                metadata: ObjectMeta {
                    name: Some(CONFIG_MAP.to_owned()),
                    namespace: Some(ns.to_owned()),
                    owner_references: Some(vec![owner]),
                    ..ObjectMeta::default()
                },
                data: Some(data),
                ..Default::default()
            };
            match api.create(&PostParams::default(), &config_map).await {
                Ok(created) => recorder.record(&created),
                // The cache lags a create of ours: the ConfigMap's event reconciles again.
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(ReconcileError::Api(e)),
            }
        }
        Err(e) => return Err(ReconcileError::Cache(e)),
        // A compact ConfigMap's `data` is a `StrMap`, which compares with a `BTreeMap` as is.
        Ok(cached) if cached.data.as_ref().is_none_or(|d| *d != data) => {
            let patch = serde_json::json!({ "data": data });
            let patched = api
                .patch(CONFIG_MAP, &PatchParams::default(), &Patch::Merge(&patch))
                .await
                .map_err(ReconcileError::Api)?;
            recorder.record(&patched);
        }
        Ok(_) => {}
    }
    Ok(Action::Done)
}

/// The policy ConfigMaps across the fleet, as `(cluster, namespace)`, sorted.
pub fn policies(fleet: &Fleet) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fleet
        .lister::<ConfigMap>()
        .list(&Default::default())
        .items
        .into_iter()
        .filter(|c| c.object.object_name() == Some(CONFIG_MAP))
        .map(|c| {
            let ns = c.object.object_namespace().unwrap_or_default().to_owned();
            (c.cluster.to_string(), ns)
        })
        .collect();
    out.sort();
    out
}
