//! A shard set's members against informer-testserver (which validates names as kube-apiserver
//! does): identities that are no valid Lease name still heartbeat and balance (S8), and names
//! kube-apiserver would refuse are errors up front.
//!
//! Run with `cargo test -p informer-controller --test shard_members`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use informer_controller::leader::{Error, LeaderElector};
use informer_controller::shards::{SHARD_SET_LABEL, ShardAssigner};
use informer_testserver::TestServer;
use k8s_openapi::api::coordination::v1::Lease;
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
    let assigner =
        Arc::new(ShardAssigner::new(server.client(), NS, set, identity, shards, fast()).unwrap());
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
