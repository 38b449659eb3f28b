//! Fleets over HTTP (decision record 29): clusters engaged and disengaged at run time by a
//! provider, each served by its own factory against its own informer-testserver.

use std::time::Duration;

use informer_controller::fleet::{
    ClusterName, ClusterSink, ClusterSpec, ClusterState, Fleet, FleetError, Provider,
    ProviderError, Skipped, StaticProvider,
};
use informer_test_support::{cm, init_tracing, wait_until, within};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::PostParams;
use kube::core::Selector;
use tokio_util::sync::CancellationToken;

/// A server holding one ConfigMap, `default/<name>`.
async fn server_with(name: &str) -> TestServer {
    let server = TestServer::start().await.expect("test server");
    Api::<ConfigMap>::namespaced(server.client(), "default")
        .create(&PostParams::default(), &cm("default", name, "1"))
        .await
        .expect("create");
    server
}

/// Runs `fleet` with `provider` in a task, until the token is cancelled.
fn start(
    fleet: &Fleet,
    provider: impl Provider,
) -> (
    CancellationToken,
    tokio::task::JoinHandle<Result<(), FleetError>>,
) {
    let cancel = CancellationToken::new();
    let fleet = fleet.clone();
    let token = cancel.clone();
    (
        cancel,
        tokio::spawn(async move { fleet.run(provider, token).await }),
    )
}

fn ready(fleet: &Fleet, name: &str) -> bool {
    fleet
        .clusters()
        .iter()
        .any(|c| c.name.as_str() == name && c.state == ClusterState::Ready)
}

/// The names of the ConfigMaps a fleet-wide list finds, each with its cluster.
fn listed(fleet: &Fleet) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = fleet
        .lister::<ConfigMap>()
        .list(&Selector::default())
        .items
        .into_iter()
        .map(|c| {
            let name = c.object.metadata.name.clone().unwrap_or_default();
            (c.cluster.to_string(), name)
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clusters_engage_and_leave_at_run_time_and_leaving_stops_their_informers() {
    init_tracing();
    let (a, b, c) = (
        server_with("in-a").await,
        server_with("in-b").await,
        server_with("in-c").await,
    );
    let provider = StaticProvider::new([
        ("a", ClusterSpec::new(a.kube_config())),
        ("b", ClusterSpec::new(b.kube_config())),
    ]);
    let clusters = provider.handle();
    let fleet = Fleet::builder().informer::<ConfigMap>().build();
    let (cancel, run) = start(&fleet, provider);

    wait_until("a and b ready", || ready(&fleet, "a") && ready(&fleet, "b")).await;
    // Each cluster's cache holds its own server's objects, and the fleet-wide list names them.
    assert_eq!(
        listed(&fleet),
        [("a".into(), "in-a".into()), ("b".into(), "in-b".into())]
    );
    let handle = fleet.cluster(&"b".into()).expect("b engaged");
    let api = Api::<ConfigMap>::namespaced(handle.client().clone(), "default");
    api.create(&PostParams::default(), &cm("default", "new-in-b", "1"))
        .await
        .expect("create through b's client");
    drop(handle);
    wait_until("b's new ConfigMap listed", || {
        listed(&fleet).contains(&("b".into(), "new-in-b".into()))
    })
    .await;

    // A cluster added while the fleet runs is engaged; a removed one leaves.
    clusters.insert("c", ClusterSpec::new(c.kube_config()));
    wait_until("c ready", || ready(&fleet, "c")).await;
    clusters.remove("a");
    wait_until("a gone", || {
        fleet.clusters().iter().all(|s| s.name.as_str() != "a")
    })
    .await;
    assert!(matches!(
        fleet.cluster(&"a".into()),
        Err(FleetError::ClusterNotFound(name)) if name.as_str() == "a"
    ));
    // Leaving stopped a's informers: its server serves no watch any more.
    assert!(
        a.wait_for_active_watches(0, Duration::from_secs(10)).await,
        "a still has {} watches after it left",
        a.active_watches()
    );
    assert_eq!(
        listed(&fleet),
        [
            ("b".into(), "in-b".into()),
            ("b".into(), "new-in-b".into()),
            ("c".into(), "in-c".into())
        ]
    );

    // Stopping the fleet disengages every cluster.
    cancel.cancel();
    within("the fleet to stop", run)
        .await
        .expect("run task")
        .expect("fleet run");
    assert!(fleet.clusters().is_empty());
    for (name, server) in [("b", &b), ("c", &c)] {
        assert!(
            server
                .wait_for_active_watches(0, Duration::from_secs(10))
                .await,
            "{name} still has watches after the fleet stopped"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_that_cannot_sync_is_reported_and_holds_up_no_other() {
    init_tracing();
    let good = server_with("in-good").await;
    // A server that is gone: its port refuses connections.
    let gone = TestServer::start().await.expect("test server");
    let gone_config = gone.kube_config();
    gone.shutdown().await;
    let provider = StaticProvider::new([
        ("gone", ClusterSpec::new(gone_config)),
        ("good", ClusterSpec::new(good.kube_config())),
    ]);
    let fleet = Fleet::builder()
        .informer::<ConfigMap>()
        .sync_timeout(Duration::from_secs(1))
        .build();
    let (cancel, run) = start(&fleet, provider);

    wait_until("good ready", || ready(&fleet, "good")).await;
    wait_until("gone reported", || {
        fleet
            .clusters()
            .iter()
            .any(|c| c.name.as_str() == "gone" && matches!(c.state, ClusterState::Failed(_)))
    })
    .await;
    assert!(matches!(
        fleet.cluster(&ClusterName::from("gone")),
        Err(FleetError::Unavailable { .. })
    ));
    let list = fleet.lister::<ConfigMap>().list(&Selector::default());
    assert_eq!(list.items.len(), 1, "{list:?}");
    assert_eq!(list.items[0].cluster.as_str(), "good");
    assert!(
        matches!(&list.skipped[..], [(name, Skipped::Unavailable(_))] if name.as_str() == "gone"),
        "{:?}",
        list.skipped
    );

    cancel.cancel();
    within("the fleet to stop", run)
        .await
        .expect("run task")
        .expect("fleet run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_revision_re_engages_against_the_new_server() {
    init_tracing();
    let (one, two) = (server_with("in-one").await, server_with("in-two").await);
    let provider = StaticProvider::new([("x", ClusterSpec::new(one.kube_config()).revision(1))]);
    let clusters = provider.handle();
    let fleet = Fleet::builder().informer::<ConfigMap>().build();
    let (cancel, run) = start(&fleet, provider);
    wait_until("x ready", || ready(&fleet, "x")).await;
    assert_eq!(listed(&fleet), [("x".into(), "in-one".into())]);

    // The same revision changes nothing; another one moves x to the second server.
    clusters.insert("x", ClusterSpec::new(two.kube_config()).revision(1));
    clusters.insert("x", ClusterSpec::new(two.kube_config()).revision(2));
    wait_until("x on its second server", || {
        listed(&fleet) == [("x".to_owned(), "in-two".to_owned())]
    })
    .await;
    assert!(
        one.wait_for_active_watches(0, Duration::from_secs(10))
            .await,
        "the first generation's watches stayed open"
    );
    assert_eq!(fleet.clusters()[0].revision, 2);

    cancel.cancel();
    within("the fleet to stop", run)
        .await
        .expect("run task")
        .expect("fleet run");
}

/// A provider of the user's own: engages one cluster, then fails when told to.
struct FailsOnCue {
    config: kube::Config,
    cue: tokio::sync::oneshot::Receiver<()>,
}

impl Provider for FailsOnCue {
    async fn run(self, sink: ClusterSink, _cancel: CancellationToken) -> Result<(), ProviderError> {
        sink.engage("only", ClusterSpec::new(self.config));
        let _ = self.cue.await;
        Err(ProviderError("lost the management cluster".to_owned()))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_provider_stops_the_fleet_and_disengages_its_clusters() {
    init_tracing();
    let server = server_with("in-only").await;
    let (fail, cue) = tokio::sync::oneshot::channel();
    let provider = FailsOnCue {
        config: server.kube_config(),
        cue,
    };
    let fleet = Fleet::builder().informer::<ConfigMap>().build();
    let (_cancel, run) = start(&fleet, provider);
    wait_until("only ready", || ready(&fleet, "only")).await;
    assert!(server.active_watches() > 0);

    let _ = fail.send(());
    let result = within("the fleet to stop", run).await.expect("run task");
    assert!(
        matches!(&result, Err(FleetError::Provider(e)) if e.to_string().contains("lost the management cluster")),
        "{result:?}"
    );
    assert!(fleet.clusters().is_empty());
    assert!(matches!(
        fleet.cluster(&"only".into()),
        Err(FleetError::ClusterNotFound(_))
    ));
    assert!(
        server
            .wait_for_active_watches(0, Duration::from_secs(10))
            .await,
        "the cluster's watches stayed open after the provider failed"
    );
}
