//! The scripted demo the `operator` example runs on the embedded API server: install the CRD, create Foos, watch the operator converge.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::{CustomResourceExt, ResourceExt};

use crate::crd::{Foo, FooSpec};
use crate::operator::config_map_name;

/// The namespace the demo works in.
pub const NAMESPACE: &str = "demo";

/// How long any step of the demo may take before it is reported as failed.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(30);

/// The end state the demo observed through the API server (not through the operator's caches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoState {
    /// Each Foo's name, message and `status.ready`.
    pub foos: BTreeMap<String, (String, bool)>,
    /// Each ConfigMap owned by a Foo: name → `data.message`.
    pub config_maps: BTreeMap<String, String>,
}

/// Installs the `Foo` CRD and a namespace through the HTTP API, as `kubectl apply` would, and
/// waits until the CRD is `Established`: kube-apiserver serves a new CRD's resource only then
/// (a write before it answers 404), as `kubectl wait --for condition=established` knows.
pub async fn install(client: &kube::Client) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = crds.create(&PostParams::default(), &Foo::crd()).await?;
    wait_established(client, &crd.name_any()).await?;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(NAMESPACE.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces.create(&PostParams::default(), &ns).await?;
    Ok(())
}

/// Waits until the CRD `name` is `Established` (served), re-reading it every 50 ms, for at most
/// [`STEP_TIMEOUT`]; `kubectl wait --for condition=established` does the same.
pub async fn wait_established(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let deadline = tokio::time::Instant::now() + STEP_TIMEOUT;
    let mut tick = tokio::time::interval(Duration::from_millis(50));
    loop {
        tick.tick().await;
        let established = crds.get_opt(name).await?.is_some_and(|crd| {
            crd.status
                .and_then(|s| s.conditions)
                .unwrap_or_default()
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
        });
        if established {
            return Ok(());
        }
        anyhow::ensure!(
            tokio::time::Instant::now() < deadline,
            "the CRD {name} was not Established within {STEP_TIMEOUT:?}"
        );
    }
}

/// Creates the sample Foos.
pub async fn create_samples(client: &kube::Client, samples: &[(&str, &str)]) -> anyhow::Result<()> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), NAMESPACE);
    for (name, message) in samples {
        let foo = Foo::new(
            name,
            FooSpec {
                message: message.to_string(),
                node_name: None,
            },
        );
        foos.create(&PostParams::default(), &foo).await?;
    }
    Ok(())
}

/// Changes a Foo's message.
pub async fn set_message(client: &kube::Client, name: &str, message: &str) -> anyhow::Result<()> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), NAMESPACE);
    let patch = serde_json::json!({ "spec": { "message": message } });
    foos.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(())
}

/// Deletes a Foo.
pub async fn delete_foo(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), NAMESPACE);
    foos.delete(name, &DeleteParams::default()).await?;
    Ok(())
}

/// Reads the demo's state from the API server.
pub async fn observe(client: &kube::Client) -> anyhow::Result<DemoState> {
    let foos: Api<Foo> = Api::namespaced(client.clone(), NAMESPACE);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NAMESPACE);
    let foos = foos
        .list(&Default::default())
        .await?
        .into_iter()
        .map(|f| {
            let ready = f.status.as_ref().is_some_and(|s| s.ready);
            (f.name_any(), (f.spec.message, ready))
        })
        .collect();
    let config_maps = cms
        .list(&Default::default())
        .await?
        .into_iter()
        .filter(|cm| cm.owner_references().iter().any(|o| o.kind == "Foo"))
        .map(|cm| {
            let message = cm
                .data
                .as_ref()
                .and_then(|d| d.get("message"))
                .cloned()
                .unwrap_or_default();
            (cm.name_any(), message)
        })
        .collect();
    Ok(DemoState { foos, config_maps })
}

/// Whether the operator has converged: every Foo is ready and owns a ConfigMap with its
/// message, and no ConfigMap outlives its Foo.
pub fn converged(state: &DemoState) -> bool {
    let expected: BTreeMap<String, String> = state
        .foos
        .iter()
        .map(|(name, (message, _))| (config_map_name(name), message.clone()))
        .collect();
    state.foos.values().all(|(_, ready)| *ready) && state.config_maps == expected
}

/// Waits until the API server shows a converged state, re-reading it every 100 ms, and fails
/// with the last state seen after [`STEP_TIMEOUT`].
pub async fn wait_converged(client: &kube::Client) -> anyhow::Result<DemoState> {
    let deadline = tokio::time::Instant::now() + STEP_TIMEOUT;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    loop {
        tick.tick().await;
        let state = observe(client).await?;
        if converged(&state) {
            return Ok(state);
        }
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!(
                "the operator did not converge within {STEP_TIMEOUT:?}; last state: {state:?}"
            );
        }
    }
}
