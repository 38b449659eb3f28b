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

/// Waits until `server` serves no watch, or panics with `what`.
async fn watches_end(server: &TestServer, what: &str) {
    assert!(
        server
            .wait_for_active_watches(0, Duration::from_secs(10))
            .await,
        "{what}: {} watches still open",
        server.active_watches()
    );
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

/// Cancels a fleet's run and waits for it to end well.
async fn stop(cancel: CancellationToken, run: tokio::task::JoinHandle<Result<(), FleetError>>) {
    cancel.cancel();
    within("the fleet to stop", run)
        .await
        .expect("run task")
        .expect("fleet run");
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
    watches_end(&a, "a still has {} watches after it left").await;
    assert_eq!(
        listed(&fleet),
        [
            ("b".into(), "in-b".into()),
            ("b".into(), "new-in-b".into()),
            ("c".into(), "in-c".into())
        ]
    );

    // Stopping the fleet disengages every cluster.
    stop(cancel, run).await;
    assert!(fleet.clusters().is_empty());
    watches_end(&b, "b after the fleet stopped").await;
    watches_end(&c, "c after the fleet stopped").await;
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

    stop(cancel, run).await;
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
    watches_end(&one, "the first generation's watches stayed open").await;
    assert_eq!(fleet.clusters()[0].revision, 2);

    stop(cancel, run).await;
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
    // One provider at a time.
    let second = fleet
        .run(StaticProvider::new::<&str>([]), CancellationToken::new())
        .await;
    assert!(
        matches!(second, Err(FleetError::AlreadyRunning)),
        "{second:?}"
    );

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
    watches_end(&server, "the cluster after the provider failed").await;
}

/// Whether ConfigMap `default/<name>` exists on `server`.
async fn exists(server: &TestServer, name: &str) -> bool {
    Api::<ConfigMap>::namespaced(server.client(), "default")
        .get_opt(name)
        .await
        .ok()
        .flatten()
        .is_some()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fleet_controller_reconciles_each_cluster_with_its_own_client_and_drops_requests_for_a_cluster_that_left()
 {
    use informer_controller::Action;
    use informer_controller::fleet::FleetController;
    use informer_test_support::poll_within;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    init_tracing();
    let (a, b) = (server_with("in-a").await, server_with("in-b").await);
    let provider = StaticProvider::new([
        ("a", ClusterSpec::new(a.kube_config())),
        ("b", ClusterSpec::new(b.kube_config())),
    ]);
    let clusters = provider.handle();
    let fleet = Fleet::builder().informer::<ConfigMap>().build();
    let (cancel, run) = start(&fleet, provider);

    // Each `in-*` ConfigMap gets a `seen-*` twin in its own cluster, written through the
    // context's client; `ask-*` reaches for cluster `gone`, which never was in the fleet.
    let asked = Arc::new(AtomicUsize::new(0));
    let controller = FleetController::<ConfigMap>::new(&fleet, "twins");
    let controller_run = tokio::spawn({
        let (asked, cancel) = (Arc::clone(&asked), cancel.clone());
        async move {
            controller
                .run(
                    move |req, ctx| {
                        let asked = Arc::clone(&asked);
                        async move {
                            let name = req.key.name().to_owned();
                            if name.starts_with("ask-") {
                                asked.fetch_add(1, Ordering::SeqCst);
                                ctx.data().fleet().cluster(&"gone".into())?;
                            }
                            if let Some(rest) = name.strip_prefix("in-") {
                                assert_eq!(ctx.data().cluster().name(), &req.cluster);
                                let twin =
                                    cm("default", &format!("seen-{rest}"), req.cluster.as_str());
                                let api =
                                    Api::<ConfigMap>::namespaced(ctx.client().clone(), "default");
                                if let Err(e) = api.create(&PostParams::default(), &twin).await {
                                    let exists = matches!(&e, kube::Error::Api(s) if s.code == 409);
                                    assert!(exists, "{e}");
                                }
                            }
                            Ok::<_, FleetError>(Action::Done)
                        }
                    },
                    (),
                    cancel,
                )
                .await
        }
    });

    let limit = Duration::from_secs(30);
    poll_within(limit, "a's twin", || exists(&a, "seen-a")).await;
    poll_within(limit, "b's twin", || exists(&b, "seen-b")).await;
    // Each twin was written to its own cluster only.
    assert!(!exists(&a, "seen-b").await && !exists(&b, "seen-a").await);

    // A request whose reconcile reaches for a cluster not in the fleet runs once: it is
    // dropped, not retried. The twin of a later ConfigMap shows the controller went on.
    let api_a = Api::<ConfigMap>::namespaced(a.client(), "default");
    api_a
        .create(&PostParams::default(), &cm("default", "ask-1", "1"))
        .await
        .expect("create");
    wait_until("ask-1 reconciled", || asked.load(Ordering::SeqCst) >= 1).await;
    api_a
        .create(&PostParams::default(), &cm("default", "in-later", "1"))
        .await
        .expect("create");
    poll_within(limit, "in-later's twin", || exists(&a, "seen-later")).await;
    assert_eq!(
        asked.load(Ordering::SeqCst),
        1,
        "the dropped request was retried"
    );

    // b leaves: its controller and informers stop, and a's controller goes on.
    clusters.remove("b");
    watches_end(&b, "b still has {} watches after it left").await;
    api_a
        .create(&PostParams::default(), &cm("default", "in-after", "1"))
        .await
        .expect("create");
    poll_within(limit, "in-after's twin", || exists(&a, "seen-after")).await;

    cancel.cancel();
    within("the controller to stop", controller_run)
        .await
        .expect("controller task")
        .expect("controller run");
    within("the fleet to stop", run)
        .await
        .expect("run task")
        .expect("fleet run");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_of_kubeconfigs_engages_re_engages_and_disengages_its_clusters() {
    use informer_controller::fleet::DirectoryProvider;

    init_tracing();
    let (one, two) = (server_with("in-one").await, server_with("in-two").await);
    let dir = std::env::temp_dir().join(format!("informer-fleet-dir-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let east = dir.join("east.kubeconfig");
    one.write_kubeconfig(&east).expect("kubeconfig");
    std::fs::write(dir.join("notes.txt"), "not a kubeconfig").expect("write");
    let fleet = Fleet::builder().informer::<ConfigMap>().build();
    let provider = DirectoryProvider::new(&dir).poll_interval(Duration::from_millis(20));
    let (cancel, run) = start(&fleet, provider);

    wait_until("east ready", || ready(&fleet, "east")).await;
    assert_eq!(listed(&fleet), [("east".into(), "in-one".into())]);

    // A file that does not parse engages nothing; the file of east pointed at the second
    // server re-engages east there, and the first server's watches end.
    std::fs::write(dir.join("broken.kubeconfig"), "clusters: [").expect("write");
    two.write_kubeconfig(&east).expect("kubeconfig");
    wait_until("east on the second server", || {
        listed(&fleet) == [("east".to_owned(), "in-two".to_owned())]
    })
    .await;
    watches_end(&one, "the first server kept its watches").await;
    let names: Vec<String> = fleet
        .clusters()
        .iter()
        .map(|c| c.name.to_string())
        .collect();
    assert_eq!(names, ["east"]);

    // The file removed disengages east.
    std::fs::remove_file(&east).expect("remove");
    wait_until("east gone", || fleet.clusters().is_empty()).await;
    assert!(matches!(
        fleet.cluster(&"east".into()),
        Err(FleetError::ClusterNotFound(_))
    ));
    watches_end(&two, "the second server kept its watches").await;

    stop(cancel, run).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A Cluster API kubeconfig Secret in `default`: `<cluster>-kubeconfig` unless `name` says
/// otherwise, holding `value` and an unrelated key.
fn capi_secret(name: &str, cluster: &str, value: &str) -> k8s_openapi::api::core::v1::Secret {
    use k8s_openapi::ByteString;
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
    Secret {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            labels: Some(
                [(
                    "cluster.x-k8s.io/cluster-name".to_owned(),
                    cluster.to_owned(),
                )]
                .into(),
            ),
            ..ObjectMeta::default()
        },
        type_: Some("cluster.x-k8s.io/secret".into()),
        data: Some(
            [
                ("value".to_owned(), ByteString(value.as_bytes().to_vec())),
                ("other".to_owned(), ByteString(b"unrelated".to_vec())),
            ]
            .into(),
        ),
        ..Secret::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_api_kubeconfig_secrets_engage_re_engage_and_disengage_their_clusters() {
    use informer_controller::fleet::SecretProvider;
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::{DeleteParams, Patch, PatchParams};

    init_tracing();
    let management = TestServer::start().await.expect("management server");
    let (one, two) = (server_with("in-one").await, server_with("in-two").await);
    let secrets = Api::<Secret>::namespaced(management.client(), "default");
    let create = |s: Secret| {
        let secrets = secrets.clone();
        async move {
            secrets
                .create(&PostParams::default(), &s)
                .await
                .expect("create Secret");
        }
    };
    create(capi_secret(
        "east-kubeconfig",
        "east",
        &one.kubeconfig_yaml(),
    ))
    .await;
    // Not a cluster's kubeconfig by the convention: another Secret of the same cluster.
    create(capi_secret("east-ca", "east", "not a kubeconfig")).await;
    // A kubeconfig that would run a program: refused, so west is never engaged.
    let exec = one.kubeconfig_yaml().replace(
        "  user: {}",
        "  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/true",
    );
    assert_ne!(
        exec,
        one.kubeconfig_yaml(),
        "the exec plugin was written in"
    );
    create(capi_secret("west-kubeconfig", "west", &exec)).await;

    let fleet = Fleet::builder().informer::<ConfigMap>().build();
    let provider = SecretProvider::cluster_api(management.client()).namespace("default");
    let (cancel, run) = start(&fleet, provider);
    wait_until("east ready", || ready(&fleet, "default/east")).await;
    assert_eq!(listed(&fleet), [("default/east".into(), "in-one".into())]);

    // The kubeconfig changed re-engages east against the second server.
    let repoint = |value: String| {
        let secrets = secrets.clone();
        async move {
            let patch = serde_json::json!({
                "data": { "value": k8s_openapi::ByteString(value.into_bytes()) }
            });
            secrets
                .patch(
                    "east-kubeconfig",
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await
                .expect("patch Secret");
        }
    };
    repoint(two.kubeconfig_yaml()).await;
    wait_until("east on the second server", || {
        listed(&fleet) == [("default/east".to_owned(), "in-two".to_owned())]
    })
    .await;
    watches_end(&one, "the first server kept its watches").await;

    // A kubeconfig that does not parse leaves east as it was. The provider handles Secrets in
    // order, so once north (added after it) is ready, the broken one has been seen.
    repoint("clusters: [".to_owned()).await;
    create(capi_secret(
        "north-kubeconfig",
        "north",
        &one.kubeconfig_yaml(),
    ))
    .await;
    wait_until("north ready", || ready(&fleet, "default/north")).await;
    assert_eq!(
        listed(&fleet),
        [
            ("default/east".to_owned(), "in-two".to_owned()),
            ("default/north".to_owned(), "in-one".to_owned())
        ]
    );
    let names: Vec<String> = fleet
        .clusters()
        .iter()
        .map(|c| c.name.to_string())
        .collect();
    assert_eq!(names, ["default/east", "default/north"], "west was refused");

    // The Secret deleted disengages east.
    secrets
        .delete("east-kubeconfig", &DeleteParams::default())
        .await
        .expect("delete Secret");
    wait_until("east gone", || {
        fleet
            .clusters()
            .iter()
            .all(|c| c.name.as_str() != "default/east")
    })
    .await;
    watches_end(&two, "the second server kept its watches").await;

    stop(cancel, run).await;
    watches_end(&management, "the provider kept its Secret watch").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_credentials_and_a_vanished_server_back_off_and_hold_up_no_other_cluster() {
    use informer_controller::fleet::HealthConfig;

    init_tracing();
    let steady = server_with("in-steady").await;
    let stale = TestServer::builder()
        .bearer_token("old")
        .start()
        .await
        .expect("test server");
    Api::<ConfigMap>::namespaced(stale.client(), "default")
        .create(&PostParams::default(), &cm("default", "in-stale", "1"))
        .await
        .expect("create");
    let gone = server_with("in-gone").await;
    let port = gone.addr().port();
    let mut health = HealthConfig::default();
    health.probe_interval = Duration::from_millis(50);
    health.probe_timeout = Duration::from_secs(2);
    health.failures_before_backoff = 2;
    // Long enough that each back-off can be looked at before the cluster is tried again.
    health.backoff_initial = Duration::from_secs(3);
    health.backoff_max = Duration::from_secs(3);
    let provider = StaticProvider::new([
        ("steady", ClusterSpec::new(steady.kube_config())),
        ("stale", ClusterSpec::new(stale.kube_config())),
        ("gone", ClusterSpec::new(gone.kube_config())),
    ]);
    let clusters = provider.handle();
    let fleet = Fleet::builder()
        .informer::<ConfigMap>()
        .health(health)
        .build();
    let mut registry = prometheus_client::registry::Registry::default();
    fleet.metrics(&mut registry);
    let (cancel, run) = start(&fleet, provider);
    wait_until("every cluster ready", || {
        ["steady", "stale", "gone"]
            .iter()
            .all(|name| ready(&fleet, name))
    })
    .await;

    // Rotated credentials: the server rejects the probes, so the cluster backs off, its
    // informers stop and it serves nothing; the others go on.
    stale.set_bearer_token(Some("new"));
    wait_until("stale backs off", || {
        matches!(fleet.state_of("stale"),
            Some(ClusterState::BackingOff { reason, .. }) if reason.contains("rejected (HTTP 401)"))
    })
    .await;
    watches_end(&stale, "the backed-off cluster kept its watches").await;
    assert!(matches!(
        fleet.cluster(&"stale".into()),
        Err(FleetError::Unavailable { .. })
    ));
    assert!(ready(&fleet, "steady"));
    // The metrics say so, a series per cluster.
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).expect("encoded");
    for line in [
        "fleet_cluster_state{cluster=\"stale\",state=\"backing_off\"} 1",
        "fleet_cluster_backoffs{cluster=\"stale\"} 1",
        "fleet_cluster_objects{cluster=\"steady\"} 1",
        "fleet_clusters{state=\"backing_off\"} 1",
    ] {
        assert!(text.lines().any(|l| l == line), "no {line:?} in\n{text}");
    }
    assert!(
        !text.contains("fleet_cluster_objects{cluster=\"stale\"}"),
        "a backed-off cluster has no caches"
    );
    // New credentials from the provider engage it at once.
    clusters.insert("stale", ClusterSpec::new(stale.kube_config()).revision(1));
    wait_until("stale ready with the new token", || ready(&fleet, "stale")).await;
    assert!(listed(&fleet).contains(&("stale".into(), "in-stale".into())));

    // A server that vanishes: the cluster backs off again and again, each time a little
    // longer, and is engaged again once a server answers at its address.
    drop(gone);
    wait_until("gone backs off twice in a row", || {
        matches!(fleet.state_of("gone"),
            Some(ClusterState::BackingOff { attempt, .. }) if attempt >= 2)
    })
    .await;
    assert!(ready(&fleet, "steady") && ready(&fleet, "stale"));
    let back = TestServer::builder()
        .port(port)
        .start()
        .await
        .expect("a server at the same address");
    Api::<ConfigMap>::namespaced(back.client(), "default")
        .create(&PostParams::default(), &cm("default", "in-back", "1"))
        .await
        .expect("create");
    wait_until("gone ready again", || ready(&fleet, "gone")).await;
    assert_eq!(
        listed(&fleet),
        [
            ("gone".to_owned(), "in-back".to_owned()),
            ("stale".to_owned(), "in-stale".to_owned()),
            ("steady".to_owned(), "in-steady".to_owned()),
        ]
    );

    stop(cancel, run).await;
}
