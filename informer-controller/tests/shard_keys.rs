//! A key's objects stay in one shard (S7) against informer-testserver: two replicas of a shard
//! set with its default hash field each run a controller of ConfigMaps that owns Secrets on their
//! shards' factories. Every owner is reconciled by one replica, which sees its owned Secret and
//! every change to it; none is ever reconciled as deleted. A controller on a factory sharded by
//! UID is refused.
//!
//! Run with `cargo test -p informer-controller --test shard_keys`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use informer_controller::shards::ShardAssigner;
use informer_controller::{Action, Context, Controller, Error, Request};
use informer_runtime::SharedInformerFactory;
use informer_runtime::shard::{Shard, ShardField};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, Patch, PatchParams};
use support::*;
use tokio_util::sync::CancellationToken;

const PAIRS: usize = 20;

/// One reconcile: the replica, the owner's key, whether the owner was cached, and the `rev`
/// label of its owned Secret as that replica's cache holds it.
#[derive(Debug, Clone)]
struct Seen {
    replica: usize,
    key: String,
    present: bool,
    rev: Option<String>,
}

async fn reconcile(
    req: Request<ConfigMap>,
    ctx: Arc<Context<(usize, Arc<Recorder<Seen>>)>>,
) -> Result<Action, kube::Error> {
    let (replica, log) = ctx.data();
    let owned = format!("s-{}", req.name().trim_start_matches("p-"));
    let rev = ctx
        .lister::<Secret>()
        .namespaced(req.namespace().unwrap_or_default())
        .get(&owned)
        .ok()
        .and_then(|s| s.metadata.labels.as_ref()?.get("rev").cloned());
    log.push(Seen {
        replica: *replica,
        key: req.key.to_string(),
        present: req.object.is_some(),
        rev,
    });
    Ok(Action::Done)
}

/// S7: with the set's default field, an owner and its owned Secret are cached and reconciled
/// on one replica: no owner is ever reconciled as deleted by a replica that only holds its
/// Secret, and a change to every Secret reaches its owner's reconcile. (Sharded by UID, about
/// half the Secrets land on the other replica: 2^-20 that all twenty pairs stay together.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s7_owners_and_their_owned_objects_are_reconciled_on_one_replica() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    for i in 0..PAIRS {
        let ns = format!("ns-{}", i % 10);
        let created = server.create(&cm(&ns, &format!("p-{i}"), "1")).unwrap();
        let uid = created["metadata"]["uid"].as_str().unwrap().to_owned();
        let mut secret = Secret::default();
        secret.metadata.name = Some(format!("s-{i}"));
        secret.metadata.namespace = Some(ns.clone());
        secret.metadata.labels = Some([("rev".to_string(), "1".to_string())].into());
        secret.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: format!("p-{i}"),
            uid,
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        server.create(&secret).unwrap();
    }
    let log = Recorder::<Seen>::new();
    let mut replicas = Vec::new();
    for r in 0..2usize {
        let assigner = Arc::new(
            ShardAssigner::new(
                server.client(),
                "default",
                "keys",
                format!("r{r}"),
                2,
                fast(),
            )
            .unwrap(),
        );
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (a, cancel, client, log) = (
                Arc::clone(&assigner),
                cancel.clone(),
                server.client(),
                Arc::clone(&log),
            );
            async move {
                let shards = Arc::clone(&a);
                a.run(cancel, move |index, owned| {
                    let factory = SharedInformerFactory::builder(client.clone())
                        .shard(shards.shard(index, shards.field()))
                        .build();
                    let controller =
                        Controller::<ConfigMap>::new(factory.clone(), "owners").owns::<Secret>();
                    let log = Arc::clone(&log);
                    async move {
                        controller.run(reconcile, (r, log), owned).await.unwrap();
                        factory.shutdown().await;
                    }
                })
                .await
                .unwrap();
            }
        });
        replicas.push((assigner, cancel, task));
    }
    let every_owner = |log: &[Seen], rev: &str| {
        (0..PAIRS).all(|i| {
            let key = format!("ns-{}/p-{i}", i % 10);
            log.iter()
                .any(|s| s.key == key && s.present && s.rev.as_deref() == Some(rev))
        })
    };
    log.wait_until("every owner reconciled seeing its Secret", |l| {
        every_owner(l, "1")
    })
    .await;
    let deleted: Vec<Seen> = log.snapshot().into_iter().filter(|s| !s.present).collect();
    assert!(
        deleted.is_empty(),
        "S7: owners reconciled as deleted by a replica that held only their Secret: {deleted:#?}"
    );
    // Drift: every owned Secret changes; its owner's replica sees it.
    for i in 0..PAIRS {
        let api: Api<Secret> = Api::namespaced(server.client(), &format!("ns-{}", i % 10));
        let patch = serde_json::json!({"metadata": {"labels": {"rev": "2"}}});
        api.patch(
            &format!("s-{i}"),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
        .unwrap();
    }
    let all = log
        .wait_until("every owner reconciled seeing its changed Secret", |l| {
            every_owner(l, "2")
        })
        .await;
    assert!(all.iter().all(|s| s.present), "S7: {all:#?}");
    // Each owner ran on one replica only.
    for i in 0..PAIRS {
        let key = format!("ns-{}/p-{i}", i % 10);
        let mut on: Vec<usize> = all
            .iter()
            .filter(|s| s.key == key)
            .map(|s| s.replica)
            .collect();
        on.dedup();
        assert_eq!(on.len(), 1, "S7: {key} reconciled on {on:?}");
    }
    for (_, cancel, task) in replicas {
        cancel.cancel();
        within("a replica to stop", task).await.unwrap();
    }
}

/// S7: a controller refuses a factory sharded by `metadata.uid` at once, with an error that
/// says why, instead of reconciling owners on replicas that do not hold them.
#[tokio::test]
async fn s7_a_controller_refuses_a_factory_sharded_by_uid() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let factory = SharedInformerFactory::builder(server.client())
        .shard(Shard::of(0, 2, ShardField::Uid).unwrap())
        .build();
    let controller = Controller::<ConfigMap>::new(factory, "by-uid").owns::<Secret>();
    let run = controller.run(
        |_: Request<ConfigMap>, _: Arc<Context<()>>| async { Ok::<_, kube::Error>(Action::Done) },
        (),
        CancellationToken::new(),
    );
    let refused = tokio::time::timeout(Duration::from_secs(2), run)
        .await
        .expect("S7: the controller ran on a factory sharded by UID");
    let err = refused.unwrap_err();
    assert!(matches!(err, Error::ShardedByUid { .. }), "{err}");
    assert!(err.to_string().contains("metadata.namespace"), "{err}");
}
