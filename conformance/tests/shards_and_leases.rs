//! Sharded list and watch (KEP-5866) with the server's gate on and off, coordination over real
//! Leases (leader election, shard assignment), and a fleet of clusters (decision record 29), on
//! informer-testserver and kube-apiserver.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use informer_conformance::*;
use informer_controller::leader::{LeaderElectionConfig, LeaderElector};
use informer_controller::shards::ShardAssigner;
use informer_runtime::SharedInformerFactory;
use informer_runtime::shard::{Shard, ShardField, ShardMode};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, ResourceExt};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

const SHARDS: u32 = 2;

/// Two replicas, shard 0 and 1 of 2 by UID, over the ConfigMaps of one namespace: each caches
/// exactly its share, the two together are the server, through a write load; the reflector
/// reports `mode` (the server filtering, or the client).
async fn two_shards_partition(backend: &Backend, mode: ShardMode) {
    let client = backend.client().await;
    let ns = backend.namespace("shards").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    for i in 0..20 {
        api.create(
            &PostParams::default(),
            &config_map(&ns, &format!("cm-{i:02}"), "x", &[]),
        )
        .await
        .expect("create");
    }
    let replicas: Vec<(Shard, SharedInformerFactory)> = (0..SHARDS)
        .map(|i| {
            let shard = Shard::of(i, SHARDS, ShardField::Uid).expect("i < 2");
            let factory = SharedInformerFactory::builder(client.clone())
                .namespace(ns.clone())
                .informer_name(format!("shard-{i}"))
                .shard(shard.clone())
                .build();
            factory.informer_for::<ConfigMap>();
            factory.start();
            (shard, factory)
        })
        .collect();
    for (_, factory) in &replicas {
        factory
            .wait_for_cache_sync_timeout(WAIT)
            .await
            .expect("a shard syncs");
    }
    let check = || async {
        let server: BTreeMap<String, String> = api
            .list(&Default::default())
            .await
            .expect("list")
            .items
            .iter()
            .map(|cm| (cm.name_any(), cm.resource_version().unwrap_or_default()))
            .collect();
        let mut union = BTreeMap::new();
        for (shard, factory) in &replicas {
            for cm in factory.informer_for::<ConfigMap>().indexer().list() {
                let uid = cm.uid().unwrap_or_default();
                if !shard.admits(&uid) || union.contains_key(&cm.name_any()) {
                    return false;
                }
                union.insert(cm.name_any(), cm.resource_version().unwrap_or_default());
            }
        }
        union == server
    };
    wait_for("each object cached by exactly its shard", check).await;
    for (_, factory) in &replicas {
        let handle = factory
            .informer_for::<ConfigMap>()
            .reflector_handle()
            .expect("reflector");
        assert_eq!(handle.shard_mode(), Some(mode), "on {}", backend.name());
    }
    for i in 20..26 {
        api.create(
            &PostParams::default(),
            &config_map(&ns, &format!("cm-{i:02}"), "x", &[]),
        )
        .await
        .expect("create");
    }
    for i in 0..4 {
        api.delete(&format!("cm-{i:02}"), &DeleteParams::default())
            .await
            .expect("delete");
    }
    wait_for("the partition holds through writes", check).await;
    for (_, factory) in &replicas {
        factory.shutdown().await;
    }
}

conformance!(sharded_list_and_watch);
/// The gate on: the server applies `shardSelector`.
async fn sharded_list_and_watch(backend: &Backend) {
    two_shards_partition(backend, ShardMode::Server).await;
}

conformance!(sharded_client_fallback, ShardGateOff);
/// The gate off: the server ignores `shardSelector` and the reflector filters on the client.
async fn sharded_client_fallback(backend: &Backend) {
    two_shards_partition(backend, ShardMode::Client).await;
}

/// Short lease timings (E2's proportions), no jitter.
fn fast() -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(250),
        jitter_factor: 0.0,
        release_on_cancel: true,
    }
}

conformance!(leader_election_over_a_lease);
/// Two candidates: one leads; when it stops (releasing the Lease) the other takes over; the two
/// terms never overlap.
async fn leader_election_over_a_lease(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("leader").await;
    // Who leads now, and every overlap seen.
    let leading: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let overlaps: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut candidates = Vec::new();
    for id in ["one", "two"] {
        let elector = Arc::new(
            LeaderElector::new(client.clone(), &ns, "conformance", id, fast()).expect("elector"),
        );
        let cancel = CancellationToken::new();
        let (leading, overlaps, run_cancel) =
            (Arc::clone(&leading), Arc::clone(&overlaps), cancel.clone());
        let task = tokio::spawn(async move {
            elector
                .run(run_cancel, move |term| {
                    let (leading, overlaps) = (Arc::clone(&leading), Arc::clone(&overlaps));
                    async move {
                        {
                            let mut now = leading.lock();
                            if !now.is_empty() {
                                overlaps
                                    .lock()
                                    .push(format!("{id} started while {now:?} led"));
                            }
                            now.insert(id.to_owned());
                        }
                        term.cancelled().await;
                        leading.lock().remove(id);
                    }
                })
                .await
                .expect("elector runs");
        });
        candidates.push((id, cancel, task));
    }
    wait_until("one leader", || leading.lock().len() == 1).await;
    let first = leading.lock().iter().next().cloned().expect("a leader");
    let at = candidates
        .iter()
        .position(|(id, _, _)| *id == first)
        .expect("the leader is a candidate");
    let (_, cancel, task) = candidates.remove(at);
    cancel.cancel();
    tokio::time::timeout(WAIT, task)
        .await
        .expect("the leader stops")
        .expect("no panic");
    wait_until("the other candidate leads", || {
        let now = leading.lock();
        now.len() == 1 && !now.contains(&first)
    })
    .await;
    assert!(overlaps.lock().is_empty(), "{:?}", overlaps.lock());
    for (_, cancel, _) in &candidates {
        cancel.cancel();
    }
}

conformance!(shard_assignment_over_leases);
/// Two replicas split four shards two and two; when one stops (releasing its Leases) the other
/// takes all four; no shard ever has two owners. The identities are no valid Lease names
/// (`Replica_0`, as controller-runtime's `<hostname>_<uuid>`): kube-apiserver takes their
/// heartbeat Leases only encoded (S8).
async fn shard_assignment_over_leases(backend: &Backend) {
    const SET_SHARDS: u32 = 4;
    let client = backend.client().await;
    let ns = backend.namespace("assign").await;
    // shard -> the replica running it now, and every overlap seen.
    let owners: Arc<Mutex<BTreeMap<u32, usize>>> = Arc::default();
    let overlaps: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut replicas = Vec::new();
    for r in 0..2usize {
        let assigner = Arc::new(
            ShardAssigner::new(
                client.clone(),
                &ns,
                "conformance",
                format!("Replica_{r}"),
                SET_SHARDS,
                fast(),
            )
            .expect("assigner"),
        );
        let cancel = CancellationToken::new();
        let (owners, overlaps, run_cancel, a) = (
            Arc::clone(&owners),
            Arc::clone(&overlaps),
            cancel.clone(),
            Arc::clone(&assigner),
        );
        let task = tokio::spawn(async move {
            a.run(run_cancel, move |shard, term| {
                let (owners, overlaps) = (Arc::clone(&owners), Arc::clone(&overlaps));
                async move {
                    if let Some(other) = owners.lock().insert(shard, r) {
                        overlaps
                            .lock()
                            .push(format!("shard {shard}: {r} started while {other} ran"));
                    }
                    term.cancelled().await;
                    owners.lock().remove(&shard);
                }
            })
            .await
            .expect("assigner runs");
        });
        replicas.push((assigner, cancel, task));
    }
    wait_until("two shards each", || {
        replicas.iter().all(|(a, _, _)| a.owned().len() == 2) && owners.lock().len() == 4
    })
    .await;
    let (_, cancel, task) = replicas.remove(0);
    cancel.cancel();
    tokio::time::timeout(WAIT, task)
        .await
        .expect("replica 0 stops")
        .expect("no panic");
    wait_until("the survivor owns all four", || {
        replicas[0].0.owned().len() == 4
            && owners.lock().values().all(|r| *r == 1)
            && owners.lock().len() == 4
    })
    .await;
    assert!(overlaps.lock().is_empty(), "{:?}", overlaps.lock());
    replicas[0].1.cancel();
}

/// A member cluster for the fleet scenario: an informer-testserver with the example's `team-a`
/// (labelled for the policy) and `team-b`.
async fn fleet_member() -> informer_testserver::TestServer {
    let server = informer_testserver::TestServer::start()
        .await
        .expect("test server");
    informer_examples::fleet::create_namespaces(&server.client())
        .await
        .expect("create Namespaces");
    server
}

/// A fleet over this backend and two informer-testservers: the example's policy operator
/// (`informer_examples::fleet`) writes into a labelled namespace of each cluster, each
/// ConfigMap naming its own cluster; a member removed leaves and its watches end. Then a
/// `SecretProvider` on this backend engages a member from a Cluster API kubeconfig Secret
/// (its field selector on `type` included) and disengages it when the Secret is deleted.
async fn a_fleet_spans_this_server_and_two_test_servers(backend: &Backend) {
    use informer_controller::fleet::{
        ClusterSpec, ClusterState, Fleet, SecretProvider, StaticProvider,
    };
    use informer_examples::fleet::{self, CONFIG_MAP, LABEL, Policy};
    use k8s_openapi::api::core::v1::{Namespace, Secret};
    use kube::api::{Patch, PatchParams};

    let client = backend.client().await;
    let ns = backend.namespace("fleet").await;
    let label = serde_json::json!({ "metadata": { "labels": { LABEL: "on" } } });
    Api::<Namespace>::all(client.clone())
        .patch(&ns, &PatchParams::default(), &Patch::Merge(&label))
        .await
        .expect("label the namespace");
    let (one, two) = (fleet_member().await, fleet_member().await);
    let provider = StaticProvider::new([
        ("home", ClusterSpec::new(backend.config().await)),
        ("one", ClusterSpec::new(one.kube_config())),
        ("two", ClusterSpec::new(two.kube_config())),
    ]);
    let members = provider.handle();
    let policy_fleet = fleet::fleet();
    let cancel = CancellationToken::new();
    let policy = Policy {
        text: "conformance".to_owned(),
    };
    let running = fleet::spawn(&policy_fleet, provider, policy, &cancel);
    let wanted = [
        ("home".to_owned(), ns.clone()),
        ("one".to_owned(), "team-a".to_owned()),
        ("two".to_owned(), "team-a".to_owned()),
    ];
    wait_until("the policy in every cluster", || {
        let written = fleet::policies(&policy_fleet);
        wanted.iter().all(|w| written.contains(w))
    })
    .await;
    let home = Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .get(CONFIG_MAP)
        .await
        .expect("the policy on this backend");
    let data = home.data.clone().unwrap_or_default();
    assert_eq!(data.get("cluster").map(String::as_str), Some("home"));
    let owner = home.owner_references().first().cloned().expect("an owner");
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Namespace", ns.as_str())
    );

    members.remove_and_wait("one").await;
    assert!(
        !fleet::policies(&policy_fleet)
            .iter()
            .any(|(cluster, _)| cluster == "one")
    );
    assert!(
        one.wait_for_active_watches(0, WAIT).await,
        "the removed member kept its watches"
    );
    cancel.cancel();
    running
        .controller
        .await
        .expect("controller task")
        .expect("controller run");
    running.fleet.await.expect("fleet task").expect("fleet run");

    // Cluster API's convention on this backend: a kubeconfig Secret engages `two`.
    let secrets = Api::<Secret>::namespaced(client.clone(), &ns);
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("two-kubeconfig".into()),
            labels: Some([("cluster.x-k8s.io/cluster-name".to_owned(), "two".to_owned())].into()),
            ..Default::default()
        },
        type_: Some("cluster.x-k8s.io/secret".into()),
        data: Some(
            [(
                "value".to_owned(),
                k8s_openapi::ByteString(two.kubeconfig_yaml().into_bytes()),
            )]
            .into(),
        ),
        ..Default::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .expect("create the kubeconfig Secret");
    let secret_fleet = Fleet::builder().informer::<ConfigMap>().build();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (fleet, cancel) = (secret_fleet.clone(), cancel.clone());
        let provider = SecretProvider::cluster_api(client.clone()).namespace(ns.clone());
        async move { fleet.run(provider, cancel).await }
    });
    let name = format!("{ns}/two");
    wait_until("two engaged from its Secret", || {
        secret_fleet
            .clusters()
            .iter()
            .any(|c| c.name.as_str() == name && c.state == ClusterState::Ready)
    })
    .await;
    secrets
        .delete("two-kubeconfig", &DeleteParams::default())
        .await
        .expect("delete the Secret");
    wait_until("two gone with its Secret", || {
        secret_fleet.clusters().is_empty()
    })
    .await;
    cancel.cancel();
    run.await.expect("fleet task").expect("fleet run");
}

conformance!(a_fleet_spans_this_server_and_two_test_servers);
