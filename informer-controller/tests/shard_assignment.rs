//! Shard assignment over Leases (S1, S12) against informer-testserver: four replicas
//! split four shards of 10 000 ConfigMaps, each running a sharded informer and a controller per
//! owned shard. Every object is cached and reconciled by exactly one replica; a replica that dies
//! (no release) loses its shard to another within the lease duration plus the observation lag
//! and a retry period; a replica that joins gets shards back; a fence proves no shard ever has
//! two owners at once; the union of the caches equals the server after a write load. Both with
//! the server sharding and with the informers filtering on the client.
//!
//! Run with `cargo test -p informer-controller --test shard_assignment`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use informer_controller::leader::LeaderElectionConfig;
use informer_controller::shards::ShardAssigner;
use informer_controller::{Action, Context, Controller, Request};
use informer_runtime::SharedInformerFactory;
use informer_runtime::informer::SharedIndexInformer;
use informer_runtime::shard::{Shard, ShardField};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::Mutex;
use support::*;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";
const SET: &str = "cm-operator";
const SHARDS: u32 = 4;
const OBJECTS: usize = 10_000;

/// E2's proportions, short; no jitter, so a round is exactly one retry period.
fn fast(release_on_cancel: bool) -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(250),
        jitter_factor: 0.0,
        release_on_cancel,
    }
}

/// A running shard informer, by (replica, shard).
type ShardInformers = BTreeMap<(usize, u32), Arc<SharedIndexInformer<ConfigMap>>>;

/// What every replica's shard work reports into.
#[derive(Default)]
struct World {
    /// (replica, shard) -> the shard's informer, while its work runs.
    informers: Mutex<ShardInformers>,
    /// shard -> the replica whose work for it runs now.
    fence: Mutex<BTreeMap<u32, usize>>,
    /// Overlaps: a shard's work started while another replica's still ran.
    violations: Mutex<Vec<String>>,
    /// Reconciles whose object was outside the shard of the controller that ran them.
    foreign: Mutex<Vec<String>>,
    reconciles: Mutex<u64>,
}

struct Replica {
    assigner: Arc<ShardAssigner>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn replica(server: &TestServer, world: &Arc<World>, r: usize, release: bool) -> Replica {
    let assigner = Arc::new(
        ShardAssigner::new(
            server.client(),
            NS,
            SET,
            format!("replica-{r}"),
            SHARDS,
            fast(release),
        )
        .unwrap(),
    );
    let cancel = CancellationToken::new();
    let task = {
        let assigner = Arc::clone(&assigner);
        let cancel = cancel.clone();
        let client = server.client();
        let world = Arc::clone(world);
        tokio::spawn(async move {
            let a = Arc::clone(&assigner);
            a.run(cancel, move |index, owned| {
                let shard = assigner.shard(index, assigner.field());
                let factory = SharedInformerFactory::builder(client.clone())
                    .informer_name(format!("r{r}-s{index}"))
                    .shard(shard.clone())
                    .build();
                let informer = factory.informer_for::<ConfigMap>();
                let world = Arc::clone(&world);
                async move {
                    if let Some(other) = world.fence.lock().insert(index, r) {
                        world.violations.lock().push(format!(
                            "shard {index}: replica {r} started while {other} ran"
                        ));
                    }
                    world.informers.lock().insert((r, index), informer);
                    let seen = Arc::clone(&world);
                    let reconcile = move |req: Request<ConfigMap>, ctx: Arc<Context<Shard>>| {
                        let world = Arc::clone(&seen);
                        async move {
                            *world.reconciles.lock() += 1;
                            if let Some(obj) = &req.object {
                                let ns = obj.metadata.namespace.clone().unwrap_or_default();
                                if !ctx.data().admits(&ns) {
                                    world.foreign.lock().push(req.key.to_string());
                                }
                            }
                            Ok::<_, kube::Error>(Action::Done)
                        }
                    };
                    let controller =
                        Controller::<ConfigMap>::new(factory.clone(), "cms").workers(1);
                    if let Err(err) = controller.run(reconcile, shard, owned.clone()).await {
                        tracing::error!(error = %err, "controller failed");
                    }
                    owned.cancelled().await;
                    world.informers.lock().remove(&(r, index));
                    {
                        let mut fence = world.fence.lock();
                        if fence.get(&index) == Some(&r) {
                            fence.remove(&index);
                        }
                    }
                    factory.shutdown().await;
                }
            })
            .await
            .unwrap();
        })
    };
    Replica {
        assigner,
        cancel,
        task,
    }
}

/// Polls `cond` until it holds, failing the test after `WAIT`.
async fn poll_until(what: &str, cond: impl Fn() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn server_state(server: &TestServer) -> BTreeMap<String, String> {
    let api: kube::Api<ConfigMap> = kube::Api::all(server.client());
    api.list(&Default::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|o| {
            let m = &o.metadata;
            (
                format!(
                    "{}/{}",
                    m.namespace.as_deref().unwrap_or_default(),
                    m.name.as_deref().unwrap_or_default()
                ),
                m.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// The union of the running shard informers' caches (key -> RV) if every object is cached
/// exactly once, every informer synced, and every cached object in its informer's shard.
fn partition(world: &World) -> Option<BTreeMap<String, String>> {
    let informers = world.informers.lock();
    let mut union = BTreeMap::new();
    for ((_, index), informer) in informers.iter() {
        if !informer.has_synced() {
            return None;
        }
        let shard = Shard::of(*index, SHARDS, ShardField::Namespace).unwrap();
        for obj in informer.indexer().list() {
            let m = &obj.metadata;
            if !shard.admits(m.namespace.as_deref().unwrap_or_default()) {
                return None;
            }
            let key = format!(
                "{}/{}",
                m.namespace.as_deref().unwrap_or_default(),
                m.name.as_deref().unwrap_or_default()
            );
            if union
                .insert(key, m.resource_version.clone().unwrap_or_default())
                .is_some()
            {
                return None;
            }
        }
    }
    Some(union)
}

fn owned(replicas: &[&Replica]) -> Vec<BTreeSet<u32>> {
    replicas.iter().map(|r| r.assigner.owned()).collect()
}

/// Every shard owned by exactly one of `replicas`, each owning its fair share.
fn balanced(replicas: &[&Replica]) -> bool {
    let sets = owned(replicas);
    let all: BTreeSet<u32> = sets.iter().flatten().copied().collect();
    let total: usize = sets.iter().map(BTreeSet::len).sum();
    let fair = SHARDS.div_ceil(replicas.len() as u32) as usize;
    all.len() == SHARDS as usize && total == SHARDS as usize && sets.iter().all(|s| s.len() <= fair)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_replicas_share_the_shards_hand_them_over_and_cache_each_object_once() {
    handover(true).await;
}

/// The same on a server without `ShardedListAndWatch`: the shard informers filter on the client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_when_the_server_ignores_the_shard_selector() {
    handover(false).await;
}

async fn handover(gate: bool) {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    server.set_sharded_list_and_watch(gate);
    for i in 0..OBJECTS {
        server
            .create(&cm(&format!("ns-{}", i % 10), &format!("cm-{i:05}"), "0"))
            .unwrap();
    }
    let world = Arc::new(World::default());
    // Replica 0 dies without releasing (a crash); the others release on cancel.
    let mut replicas: Vec<Replica> = (0..4)
        .map(|r| replica(&server, &world, r, r != 0))
        .collect();

    // 1. Four replicas, four shards: one each, every object cached exactly once.
    poll_until("one shard per replica", || {
        balanced(&replicas.iter().collect::<Vec<_>>())
    })
    .await;
    let want = server_state(&server).await;
    poll_until("the shard caches to partition the server", || {
        partition(&world).is_some_and(|u| u == want)
    })
    .await;
    poll_until("every object reconciled", || {
        *world.reconciles.lock() >= OBJECTS as u64
    })
    .await;

    // 2. Replica 0 dies: its shard moves to another replica within the lease duration plus a
    //    retry period: the others observe its last renewal up to a retry period after it (E3
    //    counts expiry from the observation), and take the shard as that observed lease expires.
    let dead = replicas.remove(0);
    let dead_shards = dead.assigner.owned();
    assert_eq!(dead_shards.len(), 1);
    let crashed = Instant::now();
    dead.cancel.cancel();
    dead.task.await.unwrap();
    poll_until("the dead replica's shard to move", || {
        let sets = owned(&replicas.iter().collect::<Vec<_>>());
        dead_shards
            .iter()
            .all(|s| sets.iter().any(|o| o.contains(s)))
    })
    .await;
    let moved_after = crashed.elapsed();
    eprintln!("the dead replica's shard moved after {moved_after:?}");
    let config = fast(false);
    // Plus 300 ms for the requests of the round that takes it.
    let bound = config.lease_duration + config.retry_period + Duration::from_millis(300);
    assert!(
        moved_after <= bound,
        "moved after {moved_after:?} (bound {bound:?})"
    );
    assert!(
        moved_after >= config.lease_duration - config.retry_period,
        "taken before the lease could expire: {moved_after:?}"
    );
    poll_until("three replicas to balance four shards", || {
        balanced(&replicas.iter().collect::<Vec<_>>())
    })
    .await;
    poll_until("the caches to partition the server again", || {
        partition(&world).is_some_and(|u| u == want)
    })
    .await;

    // 3. A write load while three replicas run.
    let ns_api = |ns: &str| -> kube::Api<ConfigMap> { kube::Api::namespaced(server.client(), ns) };
    for i in 0..200 {
        let ns = format!("ns-{}", i % 10);
        ns_api(&ns)
            .create(&Default::default(), &cm(&ns, &format!("new-{i:03}"), "1"))
            .await
            .unwrap();
    }
    for i in (0..OBJECTS).step_by(100) {
        let ns = format!("ns-{}", i % 10);
        ns_api(&ns)
            .delete(&format!("cm-{i:05}"), &Default::default())
            .await
            .unwrap();
    }

    // 4. A replica joins: the others shed shards to it, one each again.
    replicas.push(replica(&server, &world, 4, true));
    poll_until("four replicas to balance again", || {
        balanced(&replicas.iter().collect::<Vec<_>>())
            && replicas.iter().all(|r| r.assigner.owned().len() == 1)
    })
    .await;
    let end = server_state(&server).await;
    poll_until("the union of the caches to equal the server", || {
        partition(&world).is_some_and(|u| u == end)
    })
    .await;

    assert!(
        world.violations.lock().is_empty(),
        "{:?}",
        world.violations.lock()
    );
    assert!(
        world.foreign.lock().is_empty(),
        "reconciled outside the shard: {:?}",
        world.foreign.lock()
    );
    for r in replicas {
        r.cancel.cancel();
        within("a replica to stop", r.task).await.unwrap();
    }
    assert!(
        world.informers.lock().is_empty(),
        "every shard's work ended"
    );
    assert!(world.fence.lock().is_empty());
}
