//! The fleet operator of `examples/fleet.rs` over three informer-testservers: the policy is
//! written into each labelled Namespace of each engaged cluster, with that cluster's name, a
//! cluster engaged late gets it, and a cluster removed leaves the fleet and its server's
//! watches end.

use std::time::Duration;

use informer_controller::fleet::{ClusterSpec, StaticProvider};
use informer_examples::fleet::{self, CONFIG_MAP, Policy, pairs};
use informer_test_support::{wait_until, within};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use tokio_util::sync::CancellationToken;

/// A member server with `team-a` (labelled) and `team-b` (not).
async fn member() -> TestServer {
    let server = TestServer::start().await.expect("test server");
    fleet::create_namespaces(&server.client())
        .await
        .expect("create Namespaces");
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_reaches_every_engaged_cluster_and_a_removed_one_leaves() {
    let (east, west, north) = (member().await, member().await, member().await);
    let provider = StaticProvider::new([
        ("east", ClusterSpec::new(east.kube_config())),
        ("west", ClusterSpec::new(west.kube_config())),
    ]);
    let clusters = provider.handle();
    let fleet = fleet::fleet();
    let cancel = CancellationToken::new();
    let policy = Policy {
        text: "no-privileged-pods".to_owned(),
    };
    let running = fleet::spawn(&fleet, provider, policy, &cancel);

    wait_until("the policy in east and west", || {
        fleet::policies(&fleet) == pairs(&[("east", "team-a"), ("west", "team-a")])
    })
    .await;
    // What the server holds: the policy, the cluster's own name, the Namespace as its owner.
    let written = Api::<ConfigMap>::namespaced(west.client(), "team-a")
        .get(CONFIG_MAP)
        .await
        .expect("west's policy");
    let data = written.data.clone().unwrap_or_default();
    assert_eq!(
        data.get("policy").map(String::as_str),
        Some("no-privileged-pods")
    );
    assert_eq!(data.get("cluster").map(String::as_str), Some("west"));
    let owners = written.metadata.owner_references.unwrap_or_default();
    let owner = owners.first().expect("an owner reference");
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str()),
        ("Namespace", "team-a")
    );
    let unlabelled = Api::<ConfigMap>::namespaced(east.client(), "team-b")
        .get_opt(CONFIG_MAP)
        .await
        .expect("read team-b");
    assert!(unlabelled.is_none(), "team-b has no label, so no policy");

    clusters.insert("north", ClusterSpec::new(north.kube_config()));
    wait_until("the policy in north", || {
        fleet::policies(&fleet).contains(&("north".to_owned(), "team-a".to_owned()))
    })
    .await;
    clusters.remove("west");
    wait_until("west to leave", || {
        fleet::policies(&fleet) == pairs(&[("east", "team-a"), ("north", "team-a")])
    })
    .await;
    assert!(
        west.wait_for_active_watches(0, Duration::from_secs(10))
            .await,
        "west's server still serves {} watches",
        west.active_watches()
    );

    cancel.cancel();
    within("the controller to stop", running.controller)
        .await
        .expect("controller task")
        .expect("controller run");
    within("the fleet to stop", running.fleet)
        .await
        .expect("fleet task")
        .expect("fleet run");
}
