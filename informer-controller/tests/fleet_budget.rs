//! A fleet's cache budget per cluster over HTTP (decision record 30): a cluster whose
//! informers would hold more than the budget backs off alone, holding nothing meanwhile, and
//! serves again once its collection fits.

use std::time::Duration;

use informer_controller::fleet::{
    ClusterSpec, ClusterState, Fleet, FleetError, HealthConfig, StaticProvider,
};
use informer_test_support::{cm, init_tracing, wait_until, within};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, PostParams};
use kube::core::Selector;
use tokio_util::sync::CancellationToken;

/// A server holding `n` ConfigMaps in `default`.
async fn server_with(n: usize) -> TestServer {
    let server = TestServer::start().await.expect("test server");
    let api = Api::<ConfigMap>::namespaced(server.client(), "default");
    for i in 0..n {
        api.create(
            &PostParams::default(),
            &cm("default", &format!("cm-{i}"), "1"),
        )
        .await
        .expect("create");
    }
    server
}

/// The fleet-wide list's objects per cluster, `(small, big)`.
fn counts(fleet: &Fleet) -> (usize, usize) {
    let items = fleet.lister::<ConfigMap>().list(&Selector::default()).items;
    let of = |name: &str| items.iter().filter(|c| c.cluster.as_str() == name).count();
    (of("small"), of("big"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_past_its_budget_backs_off_alone_and_serves_again_once_it_fits() {
    init_tracing();
    let small = server_with(5).await;
    let big = server_with(30).await;
    let mut health = HealthConfig::default();
    health.backoff_initial = Duration::from_millis(200);
    health.backoff_max = Duration::from_millis(400);
    let provider = StaticProvider::new([
        ("small", ClusterSpec::new(small.kube_config())),
        ("big", ClusterSpec::new(big.kube_config())),
    ]);
    let fleet = Fleet::builder()
        .informer::<ConfigMap>()
        .cache_budget(20)
        .health(health)
        .build();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (fleet, cancel) = (fleet.clone(), cancel.clone());
        async move { fleet.run(provider, cancel).await }
    });

    // The big cluster's list is dropped at the budget, so it backs off, again and again; the
    // small one is served all along.
    wait_until("big backs off a second time, small ready", || {
        let big_off = matches!(fleet.state_of("big"),
            Some(ClusterState::BackingOff { reason, attempt })
                if reason.contains("over its cache budget") && attempt >= 2);
        big_off && fleet.state_of("small") == Some(ClusterState::Ready)
    })
    .await;
    assert!(matches!(
        fleet.cluster(&"big".into()),
        Err(FleetError::Unavailable { .. })
    ));
    assert_eq!(
        counts(&fleet),
        (5, 0),
        "the backed-off cluster caches nothing"
    );

    // Once its collection fits, the next engagement syncs it.
    let api = Api::<ConfigMap>::namespaced(big.client(), "default");
    for i in 0..15 {
        api.delete(&format!("cm-{i}"), &DeleteParams::default())
            .await
            .expect("delete");
    }
    wait_until("big ready", || {
        fleet.state_of("big") == Some(ClusterState::Ready)
    })
    .await;
    assert_eq!(counts(&fleet), (5, 15));

    // Live growth past the budget is served, then backs the cluster off (B3, B4).
    for i in 30..36 {
        api.create(
            &PostParams::default(),
            &cm("default", &format!("cm-{i}"), "1"),
        )
        .await
        .expect("create");
    }
    wait_until("big backs off after growing", || {
        matches!(fleet.state_of("big"), Some(ClusterState::BackingOff { reason, .. })
            if reason.contains("a live event, applied"))
    })
    .await;
    assert_eq!(fleet.state_of("small"), Some(ClusterState::Ready));

    cancel.cancel();
    within("the fleet to stop", run)
        .await
        .expect("run task")
        .expect("fleet run");
}
