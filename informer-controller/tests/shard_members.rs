//! A shard set's members against informer-testserver (which validates names as kube-apiserver
//! does): identities that are no valid Lease name still heartbeat and balance (S8), names
//! kube-apiserver would refuse are errors up front, and the Leases of members that left are
//! deleted (S9).
//!
//! Run with `cargo test -p informer-controller --test shard_members`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use informer_controller::leader::{Error, LeaderElectionConfig, LeaderElector};
use informer_controller::shards::{SHARD_COUNT_LABEL, SHARD_FIELD_LABEL};
use informer_controller::shards::{SHARD_SET_LABEL, ShardAssigner};
use informer_testserver::TestServer;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::ListParams;
use support::*;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

struct Replica {
    assigner: Arc<ShardAssigner>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

fn replica(server: &TestServer, set: &str, identity: &str, shards: u32) -> Replica {
    replica_with(server, set, identity, shards, fast())
}

fn replica_with(
    server: &TestServer,
    set: &str,
    identity: &str,
    shards: u32,
    config: LeaderElectionConfig,
) -> Replica {
    let assigner =
        Arc::new(ShardAssigner::new(server.client(), NS, set, identity, shards, config).unwrap());
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (a, cancel) = (Arc::clone(&assigner), cancel.clone());
        async move {
            a.run(cancel, |_, owned| async move { owned.cancelled().await })
                .await
                .unwrap();
        }
    });
    Replica {
        assigner,
        cancel,
        task,
    }
}

async fn stop(r: Replica) {
    r.cancel.cancel();
    within("a replica to stop", r.task).await.unwrap();
}

/// The names and holders of the set's Leases on the server.
async fn leases(server: &TestServer, set: &str) -> Vec<(String, Option<String>)> {
    let api: kube::Api<Lease> = kube::Api::namespaced(server.client(), NS);
    let list = api
        .list(&ListParams::default().labels(&format!("{SHARD_SET_LABEL}={set}")))
        .await
        .unwrap();
    list.items
        .into_iter()
        .map(|l| {
            let holder = l.spec.and_then(|s| s.holder_identity);
            (l.metadata.name.unwrap_or_default(), holder)
        })
        .collect()
}

/// S8: controller-runtime's default identity is `<hostname>_<uuid>`, and hostnames may be
/// uppercase. Written into `<set>-member-<identity>` unencoded, every heartbeat is refused with
/// 422, each replica counts only itself, and the first keeps every shard for good. Encoded,
/// both heartbeat and the set balances one shard each; the Leases still hold the identities.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s8_identities_that_are_no_lease_names_still_heartbeat_and_balance() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let ids = ["Node-A_6f1c2a", "node-b.EXAMPLE_2d9e"];
    let a = replica(&server, "idents", ids[0], 2);
    wait_until("a to own both shards", || a.assigner.owned().len() == 2).await;
    let b = replica(&server, "idents", ids[1], 2);
    wait_until("one shard each", || {
        a.assigner.owned().len() == 1 && b.assigner.owned().len() == 1
    })
    .await;
    let all = leases(&server, "idents").await;
    for id in ids {
        let member = all.iter().find(|(name, holder)| {
            name.starts_with("idents-member-") && holder.as_deref() == Some(id)
        });
        assert!(
            member.is_some(),
            "S8: no heartbeat Lease held by {id}: {all:?}"
        );
    }
    stop(b).await;
    stop(a).await;
}

/// S8: a Lease or set name kube-apiserver refuses on every write is an error at construction.
#[tokio::test]
async fn s8_names_kube_apiserver_refuses_are_errors_up_front() {
    let server = TestServer::start().await.unwrap();
    let elector = LeaderElector::new(server.client(), NS, "My_Operator", "a", fast());
    assert!(matches!(elector, Err(Error::InvalidName(_))), "{elector:?}");
    let set = ShardAssigner::new(server.client(), NS, "My-Set", "a", 2, fast());
    assert!(matches!(set, Err(Error::InvalidName(_))), "{set:?}");
    let long = ShardAssigner::new(server.client(), NS, "s".repeat(64), "a", 2, fast());
    assert!(matches!(long, Err(Error::InvalidName(_))), "{long:?}");
    // A free-text identity is fine.
    assert!(LeaderElector::new(server.client(), NS, "my-operator", "Host_A", fast()).is_ok());
}

fn exists(server: &TestServer, name: &str) -> bool {
    server.get::<Lease>(Some(NS), name).is_ok()
}

/// S9: a replica that leaves deletes its heartbeat Lease; one that crashed leaves its Lease
/// behind, and the replicas still running delete it once nobody has renewed it for two lease
/// durations, as they delete a shard Lease beyond their shard count (a set that shrank). A
/// live replica's heartbeat is never deleted. (Before, every rollout left a heartbeat Lease per
/// replica for every replica to LIST each round, for good.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s9_members_that_leave_or_crash_leave_no_lease_behind() {
    init_tracing();
    let server = TestServer::start().await.unwrap();
    let config = fast();
    let a = replica(&server, "members", "a", 2);
    let b = replica(&server, "members", "b", 2);
    wait_until("one shard each", || {
        a.assigner.owned().len() == 1 && b.assigner.owned().len() == 1
    })
    .await;
    assert!(exists(&server, "members-member-b"));
    stop(b).await;
    assert!(
        !exists(&server, "members-member-b"),
        "S9: b left, its heartbeat Lease stayed: {:?}",
        leases(&server, "members").await
    );
    // A shard Lease of an 8-shard view of the set, abandoned (the set shrank to 2).
    let abandoned = Lease {
        metadata: kube::api::ObjectMeta {
            name: Some("members-shard-7".into()),
            labels: Some(
                [
                    (SHARD_SET_LABEL.to_string(), "members".to_string()),
                    (SHARD_COUNT_LABEL.to_string(), "8".to_string()),
                    (SHARD_FIELD_LABEL.to_string(), "namespace".to_string()),
                ]
                .into(),
            ),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("gone".into()),
            lease_duration_seconds: Some(2),
            renew_time: Some(MicroTime(k8s_openapi::jiff::Timestamp::now())),
            ..Default::default()
        }),
    };
    server.create(&abandoned).unwrap();
    // c crashes: it stops without releasing or deleting anything.
    let c = replica_with(
        &server,
        "members",
        "c",
        2,
        LeaderElectionConfig {
            release_on_cancel: false,
            ..fast()
        },
    );
    wait_until("one shard each again", || {
        a.assigner.owned().len() == 1 && c.assigner.owned().len() == 1
    })
    .await;
    stop(c).await;
    let crashed = Instant::now();
    assert!(
        exists(&server, "members-member-c"),
        "a crash deletes nothing"
    );
    wait_until(
        "the crashed replica's heartbeat and the abandoned shard swept",
        || !exists(&server, "members-member-c") && !exists(&server, "members-shard-7"),
    )
    .await;
    let swept = crashed.elapsed();
    eprintln!("swept {swept:?} after the crash");
    // Two lease durations after a's last observation of c's last renewal, which is at most a
    // retry period before the crash, plus a round.
    let bound = config.lease_duration * 2 + config.retry_period * 2 + Duration::from_millis(500);
    assert!(
        swept >= config.lease_duration * 2 - config.retry_period && swept <= bound,
        "S9: swept {swept:?} after the crash (bound {bound:?})"
    );
    assert!(
        exists(&server, "members-member-a"),
        "S9: a live heartbeat was swept"
    );
    wait_until("a to take c's shard", || a.assigner.owned().len() == 2).await;
    stop(a).await;
    let left = leases(&server, "members").await;
    assert!(
        left.iter().all(|(name, _)| name.contains("-shard-")),
        "S9: {left:?}"
    );
}
