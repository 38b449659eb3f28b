//! Compact kinds in every role a full kind has in a controller (C4, C9, K2, K3;
//! docs/decisions/23-compact-kinds-in-controllers.md), over HTTP against informer-testserver: a
//! compact primary, an owned compact kind, a watched compact kind with a mapper, writes recorded
//! in either form and waited for by the compact informer, and the finalizer and status helpers on
//! the compact primary.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use informer_controller::finalizer::{self, Event};
use informer_controller::status::update_status;
use informer_controller::{
    Action, Context, Controller, ObjectKey, Request, WriteRecorder, controller_owner_ref,
};
use informer_k8s::compact::api::apps::v1 as compact_apps;
use informer_k8s::compact::api::core::v1 as compact_core;
use informer_runtime::SharedInformerFactory;
use informer_runtime::reflector::{InitialListStrategy, ReflectorConfig};
use informer_testserver::{FaultTarget, TestServer};
use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use prometheus_client::registry::Registry;
use support::*;
use tokio_util::sync::CancellationToken;

const NS: &str = "compact";
const FINALIZER: &str = "example.com/cleanup";
/// The annotation by which a ConfigMap names the Deployment that reads it.
const CONFIG_FOR: &str = "example.com/deployment";

#[derive(Debug, thiserror::Error)]
enum OpError {
    #[error(transparent)]
    Kube(#[from] kube::Error),
    #[error(transparent)]
    Status(#[from] informer_controller::status::Error),
}

/// The colour the ConfigMap `<deployment>-config` asks for, read from the compact ConfigMap
/// cache.
fn wanted_color<D>(ctx: &Context<D>, deployment: &str) -> Option<String> {
    let config = ctx
        .lister::<compact_core::ConfigMap>()
        .namespaced(NS)
        .get(&format!("{deployment}-config"))
        .ok()?;
    config.data.as_ref()?.get("color").map(str::to_owned)
}

/// The operator's live step, all on compact caches: the owned ReplicaSet `<name>-rs` carries the
/// watched ConfigMap's colour as a label, and the Deployment's status its ReplicaSet's replicas.
async fn apply(
    ctx: &Context<()>,
    recorder: &WriteRecorder,
    deployment: &compact_apps::Deployment,
) -> Result<Action, OpError> {
    let name = deployment.metadata.name.as_deref().unwrap_or_default();
    let color = wanted_color(ctx, name);
    let rs_name = format!("{name}-rs");
    let replica_sets: Api<ReplicaSet> = Api::namespaced(ctx.client().clone(), NS);
    let cached = ctx
        .lister::<compact_apps::ReplicaSet>()
        .namespaced(NS)
        .get(&rs_name)
        .ok();
    let labels: BTreeMap<String, String> =
        color.iter().map(|c| ("color".into(), c.clone())).collect();
    match &cached {
        None => {
            let rs = ReplicaSet {
                metadata: ObjectMeta {
                    name: Some(rs_name.clone()),
                    namespace: Some(NS.into()),
                    labels: Some(labels),
                    owner_references: controller_owner_ref(deployment).map(|o| vec![o]),
                    ..ObjectMeta::default()
                },
                ..ReplicaSet::default()
            };
            let created = replica_sets.create(&PostParams::default(), &rs).await?;
            // Recorded in the cached form: the next reconcile waits for the compact informer.
            recorder.record(&compact_apps::ReplicaSet::from(&created));
        }
        Some(rs)
            if rs.metadata.labels.as_ref().and_then(|l| l.get("color")) != color.as_deref() =>
        {
            let patch = serde_json::json!({"metadata": {"labels": {"color": color}}});
            let patched = replica_sets
                .patch(&rs_name, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            // Recorded as `kube::Api` returned it: waited for by the compact informer all the same.
            recorder.record(&patched);
        }
        Some(_) => {}
    }
    let replicas = cached.and_then(|rs| rs.status.as_ref().map(|s| s.replicas));
    let deployments: Api<Deployment> = Api::namespaced(ctx.client().clone(), NS);
    update_status(&deployments, deployment, recorder, |d| {
        d.status.get_or_insert_default().replicas = replicas;
    })
    .await?;
    Ok(Action::Done)
}

/// The cleanup step: the owned ReplicaSet goes first (informer-testserver has no garbage
/// collector).
async fn cleanup(
    ctx: &Context<()>,
    deployment: &compact_apps::Deployment,
) -> Result<Action, OpError> {
    let name = deployment.metadata.name.as_deref().unwrap_or_default();
    let replica_sets: Api<ReplicaSet> = Api::namespaced(ctx.client().clone(), NS);
    match replica_sets
        .delete(&format!("{name}-rs"), &DeleteParams::default())
        .await
    {
        Ok(_) => Ok(Action::Done),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(Action::Done),
        Err(err) => Err(err.into()),
    }
}

async fn reconcile(
    req: Request<compact_apps::Deployment>,
    ctx: Arc<Context<()>>,
) -> Result<Action, finalizer::Error<OpError>> {
    let Some(deployment) = req.object.clone() else {
        return Ok(Action::Done);
    };
    let deployments: Api<Deployment> = Api::namespaced(ctx.client().clone(), NS);
    let recorder = ctx.recorder(&req.key);
    let (cx, rec) = (&*ctx, &recorder);
    finalizer::finalizer(
        &deployments,
        FINALIZER,
        deployment,
        &recorder,
        move |event| async move {
            match event {
                Event::Apply(d) => apply(cx, rec, &d).await,
                Event::Cleanup(d) => cleanup(cx, &d).await,
            }
        },
    )
    .await
}

/// The ConfigMap `<deployment>-config`, read by that Deployment's reconcile.
fn config(deployment: &str, color: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(format!("{deployment}-config"));
    cm.metadata.namespace = Some(NS.into());
    cm.metadata.annotations = Some([(CONFIG_FOR.to_owned(), deployment.to_owned())].into());
    cm.data = Some([("color".to_owned(), color.to_owned())].into());
    cm
}

fn color_of(rs: Option<&ReplicaSet>) -> Option<&str> {
    rs?.metadata
        .labels
        .as_ref()?
        .get("color")
        .map(String::as_str)
}

/// C4, C9, K2, K3 with compact kinds only: a compact Deployment primary owns compact ReplicaSets
/// and watches compact ConfigMaps through a mapper; it adds and removes its finalizer and writes
/// its status through the helpers, from the compact object. Each step is caused by a change to
/// one kind only, so each role is seen on its own: the finalizer is added, the ReplicaSet created
/// once with a controller reference built from the compact Deployment, a ConfigMap change
/// reaches the ReplicaSet (watches), a ReplicaSet status change reaches the Deployment's status
/// (owns, update_status), and a deletion runs the cleanup and removes the finalizer. (The
/// writes are recorded in both forms; the stale-read test below is what shows K3 waiting.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_primary_owns_watches_records_and_uses_the_helpers_on_compact_kinds() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.create(&config("web", "blue")).unwrap();
    let mut web = Deployment::default();
    web.metadata.name = Some("web".into());
    web.metadata.namespace = Some(NS.into());
    server.create(&web).unwrap();
    let web_uid = server
        .get::<Deployment>(Some(NS), "web")
        .unwrap()
        .metadata
        .uid
        .unwrap();

    let factory = SharedInformerFactory::new(server.client());
    let controller = Controller::<compact_apps::Deployment>::new(factory.clone(), "compact-web")
        .owns::<compact_apps::ReplicaSet>()
        .watches(|cm: &compact_core::ConfigMap| {
            let ns = cm.metadata.namespace.as_deref();
            let deployment = cm
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(CONFIG_FOR));
            deployment
                .map(|d| ObjectKey::new(ns, d))
                .into_iter()
                .collect()
        });
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move { controller.run(reconcile, (), cancel).await }
    });

    // C9: the finalizer helper patched the compact primary's finalizer in.
    server
        .wait_until::<Deployment>(Some(NS), "web", WAIT, |d| {
            d.and_then(|d| d.metadata.finalizers.as_ref())
                .is_some_and(|f| f.iter().any(|f| f == FINALIZER))
        })
        .await
        .unwrap();
    // The owned ReplicaSet, with a controller reference to the Deployment built from its
    // compact form.
    let rs = server
        .wait_until::<ReplicaSet>(Some(NS), "web-rs", WAIT, |rs| color_of(rs) == Some("blue"))
        .await
        .unwrap()
        .unwrap();
    let owner = &rs.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str()
        ),
        ("apps/v1", "Deployment", "web")
    );
    assert_eq!(
        (owner.uid.as_str(), owner.controller),
        (web_uid.as_str(), Some(true))
    );

    // watches: only the ConfigMap changes; its mapper brings the Deployment back.
    let config_maps: Api<ConfigMap> = Api::namespaced(server.client(), NS);
    config_maps
        .patch(
            "web-config",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"data": {"color": "green"}})),
        )
        .await
        .unwrap();
    server
        .wait_until::<ReplicaSet>(Some(NS), "web-rs", WAIT, |rs| color_of(rs) == Some("green"))
        .await
        .unwrap();

    // owns: only the ReplicaSet's status changes; its controller reference brings the
    // Deployment back, and update_status writes the compact Deployment's status.
    let replica_sets: Api<ReplicaSet> = Api::namespaced(server.client(), NS);
    replica_sets
        .patch_status(
            "web-rs",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"replicas": 3}})),
        )
        .await
        .unwrap();
    server
        .wait_until::<Deployment>(Some(NS), "web", WAIT, |d| {
            d.and_then(|d| d.status.as_ref()?.replicas) == Some(3)
        })
        .await
        .unwrap();

    // C9: deletion runs the cleanup, then the finalizer comes off and the Deployment goes.
    let deployments: Api<Deployment> = Api::namespaced(server.client(), NS);
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    server
        .wait_until::<Deployment>(Some(NS), "web", WAIT, |d| d.is_none())
        .await
        .unwrap();
    server
        .wait_until::<ReplicaSet>(Some(NS), "web-rs", WAIT, |rs| rs.is_none())
        .await
        .unwrap();

    cancel.cancel();
    within("the controller to stop", run)
        .await
        .unwrap()
        .unwrap();
    // Every reconcile after the create found the ReplicaSet in the compact cache: created once
    // (a reconcile on a cache without it would have created it again and met 409).
    let creates: Vec<_> = server
        .requests()
        .into_iter()
        .filter(|r| r.method == http::Method::POST && r.path.ends_with("/replicasets"))
        .map(|r| r.status)
        .collect();
    assert_eq!(
        creates,
        [http::StatusCode::CREATED],
        "one create of the ReplicaSet"
    );
}

/// Which form of the written object a reconcile records.
#[derive(Clone, Copy, Debug)]
enum Form {
    /// The k8s-openapi ConfigMap `kube::Api` returned.
    Full,
    /// Its compact form, the form the controller caches.
    Compact,
}

/// Counts `data.v` of the compact ConfigMap `counter` up to 3, one patch per reconcile,
/// requeueing at once and recording each write in `form`; logs the count each reconcile saw.
async fn count_up(
    req: Request<compact_core::ConfigMap>,
    ctx: Arc<Context<(Form, Arc<Recorder<u32>>)>>,
) -> Result<Action, kube::Error> {
    let Some(cm) = req.object.clone() else {
        return Ok(Action::Done);
    };
    let count: u32 = cm
        .data
        .as_ref()
        .and_then(|d| d.get("v"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let (form, seen) = ctx.data();
    seen.push(count);
    if count >= 3 {
        return Ok(Action::Done);
    }
    let api: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), NS);
    let patch = serde_json::json!({"data": {"v": (count + 1).to_string()}});
    let written = api
        .patch(req.name(), &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    let recorder = ctx.recorder(&req.key);
    match form {
        Form::Full => recorder.record(&written),
        Form::Compact => recorder.record(&compact_core::ConfigMap::from(&written)),
    }
    Ok(Action::Requeue)
}

/// K2, K3 where only the compact form is cached: with the watch held back 800 ms, each reconcile
/// writes and requeues at once, so the next one would read the compact cache before the write
/// reached it. Whether the write is recorded in the form `kube::Api` returned or in the compact
/// form, the next reconcile waits for the compact informer: the counts seen go 0, 1, 2, 3 without
/// a repeat, and each wait is counted. (Recording the full form once recorded nothing here: only
/// an informer of the full type was looked for.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_recorded_in_either_form_are_waited_for_by_the_compact_informer() {
    init_tracing();
    for form in [Form::Full, Form::Compact] {
        let server = TestServer::start().await.unwrap();
        server.create(&cm(NS, "counter", "0")).unwrap();
        server
            .faults()
            .delay(FaultTarget::Watch, Duration::from_millis(800));
        // A paged LIST (not delayed) syncs the cache; it lags from then on until the WATCH opens.
        let factory = SharedInformerFactory::builder(server.client())
            .reflector_config(ReflectorConfig {
                strategy: InitialListStrategy::ListWatch,
                ..ReflectorConfig::default()
            })
            .build();
        let mut registry = Registry::default();
        let controller = Controller::<compact_core::ConfigMap>::new(factory, "compact-count")
            .metrics(&mut registry);
        let seen = Recorder::<u32>::new();
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (seen, cancel) = (Arc::clone(&seen), cancel.clone());
            async move { controller.run(count_up, (form, seen), cancel).await }
        });
        let counts = seen
            .wait_until("a reconcile that sees 3", |s| s.contains(&3))
            .await;
        cancel.cancel();
        within("the controller to stop", run)
            .await
            .unwrap()
            .unwrap();
        let below: Vec<u32> = counts.iter().copied().filter(|c| *c < 3).collect();
        assert_eq!(
            below,
            [0, 1, 2],
            "recorded as {form:?}, every reconcile saw the previous write: {counts:?}"
        );
        let series = "stale_sync_skips_total{controller=\"compact-count\"}";
        let skips = sample(&scrape(&registry), series).unwrap_or(0.0);
        assert!(skips >= 1.0, "recorded as {form:?}: waits counted: {skips}");
    }
}
