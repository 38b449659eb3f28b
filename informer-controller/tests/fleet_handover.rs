//! Clusters handed over (decision record 29).
//!
//! - Between replicas: two replicas run the same provider and the same shard set over Leases
//!   (S1-S14) through `ShardedProvider`. Each cluster is engaged by one replica at a time, the
//!   clusters are split once the second replica joins, each member server ends up with one
//!   watcher, and when a replica stops, the other takes its clusters.
//! - Out of the fleet: a cluster that leaves while a reconcile of it is in flight keeps its
//!   caches running until that reconcile ends (C7), and only then stops them.

mod support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use informer_controller::fleet::{
    ClusterData, ClusterSpec, ClusterState, Fleet, FleetController, FleetError, ShardedProvider,
    StaticProvider,
};
use informer_controller::shards::ShardAssigner;
use informer_controller::{Action, Context};
use informer_runtime::shard::{Shard, ShardField};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use support::{cm, fast, init_tracing, wait_until, within};
use tokio::sync::Notify;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const SHARDS: u32 = 4;

/// Cluster names, two per shard, so that every shard has clusters to hand over.
fn cluster_names() -> Vec<String> {
    let mut names = Vec::new();
    for shard in 0..SHARDS {
        let range = Shard::of(shard, SHARDS, ShardField::Namespace).expect("shard");
        let mine = (0..)
            .map(|i| format!("member-{i}"))
            .filter(|name| range.admits(name))
            .take(2);
        names.extend(mine);
    }
    names
}

/// The clusters a replica has engaged, whatever their state.
fn engaged(fleet: &Fleet) -> BTreeSet<String> {
    fleet
        .clusters()
        .iter()
        .map(|c| c.name.to_string())
        .collect()
}

/// The clusters a replica serves, ready.
fn ready(fleet: &Fleet) -> BTreeSet<String> {
    fleet
        .clusters()
        .iter()
        .filter(|c| c.state == ClusterState::Ready)
        .map(|c| c.name.to_string())
        .collect()
}

struct Replica {
    fleet: Fleet,
    cancel: CancellationToken,
    run: JoinHandle<Result<(), FleetError>>,
}

/// Starts a replica: a fleet over every member, through a shard set on `leases`.
fn replica(identity: &str, leases: &TestServer, members: &[(String, TestServer)]) -> Replica {
    let provider = StaticProvider::new(
        members
            .iter()
            .map(|(name, server)| (name.as_str(), ClusterSpec::new(server.kube_config()))),
    );
    let assigner = ShardAssigner::new(
        leases.client(),
        "default",
        "fleet",
        identity,
        SHARDS,
        fast(),
    )
    .expect("shard assigner");
    let fleet = Fleet::builder().informer::<ConfigMap>().build();
    let cancel = CancellationToken::new();
    let provider = ShardedProvider::new(provider, assigner);
    let run = tokio::spawn({
        let (fleet, cancel) = (fleet.clone(), cancel.clone());
        async move { fleet.run(provider, cancel).await }
    });
    Replica { fleet, cancel, run }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusters_are_split_over_replicas_one_at_a_time_and_taken_over_when_a_replica_stops() {
    init_tracing();
    let leases = TestServer::start().await.expect("lease server");
    let mut members = Vec::new();
    for name in cluster_names() {
        members.push((name, TestServer::start().await.expect("member server")));
    }
    let all: BTreeSet<String> = members.iter().map(|(name, _)| name.clone()).collect();

    let a = replica("replica-a", &leases, &members);
    wait_until("replica a serves every cluster", || ready(&a.fleet) == all).await;

    // From here on, a sampler checks that no cluster is ever engaged by both replicas.
    let b = replica("replica-b", &leases, &members);
    let shared = Arc::new(AtomicBool::new(false));
    let stop_sampling = CancellationToken::new();
    let sampler = tokio::spawn({
        let (fa, fb) = (a.fleet.clone(), b.fleet.clone());
        let (shared, stop) = (Arc::clone(&shared), stop_sampling.clone());
        async move {
            while !stop.is_cancelled() {
                if engaged(&fa).intersection(&engaged(&fb)).next().is_some() {
                    shared.store(true, Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
    });
    wait_until("the clusters split over both replicas", || {
        let (ra, rb) = (ready(&a.fleet), ready(&b.fleet));
        !ra.is_empty() && !rb.is_empty() && ra.union(&rb).cloned().collect::<BTreeSet<_>>() == all
    })
    .await;
    // Each member is watched by the replica that serves it and no other.
    for (name, server) in &members {
        assert!(
            server
                .wait_for_active_watches(1, Duration::from_secs(10))
                .await,
            "{name}: {} watches, not 1",
            server.active_watches()
        );
    }

    // Replica a stops: it disengages its clusters, then releases its shards, which b takes.
    a.cancel.cancel();
    within("replica a to stop", a.run)
        .await
        .expect("replica a's task")
        .expect("replica a's run");
    assert!(engaged(&a.fleet).is_empty());
    wait_until("replica b serves every cluster", || ready(&b.fleet) == all).await;
    stop_sampling.cancel();
    sampler.await.expect("sampler");
    assert!(
        !shared.load(Ordering::Relaxed),
        "a cluster was engaged by both replicas at once"
    );

    b.cancel.cancel();
    within("replica b to stop", b.run)
        .await
        .expect("replica b's task")
        .expect("replica b's run");
}

/// What the held reconcile and the test tell each other.
#[derive(Default)]
struct Gate {
    entered: Notify,
    release: Notify,
    /// Whether the cluster's ConfigMap informer had stopped when the reconcile was let go.
    stopped: parking_lot::Mutex<Option<bool>>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leaving_cluster_lets_its_reconciles_in_flight_finish_against_live_caches() {
    init_tracing();
    let server = TestServer::start().await.expect("test server");
    Api::<ConfigMap>::namespaced(server.client(), "default")
        .create(&PostParams::default(), &cm("default", "held", "1"))
        .await
        .expect("create");
    let provider = StaticProvider::new([("a", ClusterSpec::new(server.kube_config()))]);
    let clusters = provider.handle();
    let fleet = Fleet::builder().informer::<ConfigMap>().build();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (fleet, cancel) = (fleet.clone(), cancel.clone());
        async move { fleet.run(provider, cancel).await }
    });
    let gate = Arc::new(Gate::default());
    let controller = tokio::spawn({
        let (fleet, cancel, gate) = (fleet.clone(), cancel.clone(), Arc::clone(&gate));
        async move {
            FleetController::<ConfigMap>::new(&fleet, "held")
                .run(
                    |_, ctx: Arc<Context<ClusterData<Arc<Gate>>>>| async move {
                        let gate = Arc::clone(ctx.data().data());
                        gate.entered.notify_one();
                        gate.release.notified().await;
                        let stopped = ctx
                            .factory()
                            .existing_informer::<ConfigMap>()
                            .is_none_or(|informer| informer.is_stopped());
                        *gate.stopped.lock() = Some(stopped);
                        Ok::<_, FleetError>(Action::Done)
                    },
                    gate,
                    cancel,
                )
                .await
        }
    });
    within("the reconcile to start", gate.entered.notified()).await;

    // The cluster leaves while its reconcile is in flight. Its routes go at once; its caches
    // must not stop before the reconcile ends, so its watch stays open.
    let removal = tokio::spawn(clusters.remove_and_wait("a"));
    wait_until("a out of the table", || fleet.clusters().is_empty()).await;
    let stopped_early = server
        .wait_for_active_watches(0, Duration::from_secs(2))
        .await;
    gate.release.notify_one();
    within("the removal", removal).await.expect("removal task");
    assert!(
        !stopped_early,
        "the informers stopped while a reconcile was in flight"
    );
    assert_eq!(
        *gate.stopped.lock(),
        Some(false),
        "the reconcile ran against stopped caches"
    );
    assert!(
        server
            .wait_for_active_watches(0, Duration::from_secs(10))
            .await,
        "the cluster's watch outlived its removal"
    );

    cancel.cancel();
    within("the controller to stop", controller)
        .await
        .expect("controller task")
        .expect("controller run");
    within("the fleet to stop", run)
        .await
        .expect("fleet task")
        .expect("fleet run");
}
