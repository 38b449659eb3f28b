//! Runs the example operator against an embedded informer-testserver and asserts the end state.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use informer_examples::demo;
use informer_examples::operator::{Operator, OperatorConfig, config_map_name};
use informer_testserver::TestServer;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn operator_converges_follows_edits_and_cleans_up_deleted_foos() {
    let server = TestServer::builder()
        .bearer_token("test-token")
        .start()
        .await
        .unwrap();
    let client = server.client();
    demo::install(&client).await.unwrap();
    demo::create_samples(
        &client,
        &[("alpha", "hello"), ("beta", "hola"), ("gamma", "salut")],
    )
    .await
    .unwrap();

    let operator = Operator::new(
        client.clone(),
        OperatorConfig {
            namespace: Some(demo::NAMESPACE.into()),
            workers: 3,
            ..Default::default()
        },
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(Arc::clone(&operator).run(cancel.clone()));

    let state = demo::wait_converged(&client).await.unwrap();
    assert_eq!(state.foos.len(), 3);
    assert!(state.foos.values().all(|(_, ready)| *ready));
    assert_eq!(
        state
            .config_maps
            .get(&config_map_name("beta"))
            .map(String::as_str),
        Some("hola")
    );

    demo::set_message(&client, "beta", "bonjour").await.unwrap();
    demo::delete_foo(&client, "gamma").await.unwrap();
    let state = demo::wait_converged(&client).await.unwrap();
    assert_eq!(
        state.config_maps,
        [
            (config_map_name("alpha"), "hello".to_string()),
            (config_map_name("beta"), "bonjour".to_string()),
        ]
        .into()
    );
    assert!(!state.foos.contains_key("gamma"));

    // Every write went through listers first: three creates and one update, no duplicates.
    assert_eq!(operator.stats().writes.load(Ordering::Relaxed), 4);
    cancel.cancel();
    run.await.unwrap().unwrap();
    assert!(
        server.wait_for_active_watches(0, demo::STEP_TIMEOUT).await,
        "the operator shut every informer down"
    );
}

#[tokio::test]
async fn operator_refuses_the_server_without_its_token() {
    let server = TestServer::builder()
        .bearer_token("right")
        .start()
        .await
        .unwrap();
    let mut config = server.kube_config();
    config.auth_info.token = Some("wrong".to_string().into());
    let client = kube::Client::try_from(config).unwrap();
    let err = demo::install(&client)
        .await
        .expect_err("401 without the token");
    assert!(
        err.to_string().contains("401") || err.to_string().to_lowercase().contains("unauthorized"),
        "{err}"
    );
}

#[tokio::test]
async fn generated_accessors_share_informers_and_the_typed_index_answers() {
    use informer_examples::crd::{Foo, FooSpec};
    use informer_examples::generated::InformerFactoryExt;
    use informer_k8s::InformerFactoryExt as _;
    use informer_runtime::SharedInformerFactory;

    let server = TestServer::start().await.unwrap();
    let client = server.client();
    demo::install(&client).await.unwrap();
    for (name, node) in [
        ("a", Some("n1")),
        ("b", Some("n2")),
        ("c", Some("n1")),
        ("d", None),
    ] {
        let mut foo = Foo::new(
            name,
            FooSpec {
                message: name.into(),
                node_name: node.map(Into::into),
            },
        );
        foo.metadata.namespace = Some(demo::NAMESPACE.into());
        server.create(&foo).unwrap();
    }
    let factory = SharedInformerFactory::new(client);
    let foos = factory.example().v1().foos();
    assert!(Arc::ptr_eq(
        &foos.informer(),
        &factory.example().v1().foos().informer()
    ));
    // Built-ins come through the same factory, from informer-k8s (semantics §9 shape).
    let deployments = factory.apps().v1().deployments();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(demo::STEP_TIMEOUT)
        .await
        .unwrap();

    let mut on_n1: Vec<String> = foos
        .lister()
        .by_node("n1")
        .unwrap()
        .iter()
        .map(|f| f.metadata.name.clone().unwrap_or_default())
        .collect();
    on_n1.sort();
    assert_eq!(on_n1, vec!["a".to_string(), "c".to_string()]);
    let c = foos.lister().namespaced(demo::NAMESPACE).get("c").unwrap();
    assert!(Arc::ptr_eq(
        &c,
        &foos.informer().indexer().get_by_key("demo/c").unwrap()
    ));
    assert!(
        foos.lister()
            .namespaced(demo::NAMESPACE)
            .get("zzz")
            .unwrap_err()
            .is_not_found()
    );
    assert!(deployments.lister().list(&Default::default()).is_empty());
    factory.shutdown().await;
}

#[tokio::test]
async fn operator_with_leader_election_converges_and_releases_its_lease() {
    use k8s_openapi::api::coordination::v1::Lease;

    let server = TestServer::start().await.unwrap();
    let client = server.client();
    demo::install(&client).await.unwrap();
    demo::create_samples(&client, &[("alpha", "hello")])
        .await
        .unwrap();
    let operator = Operator::new(
        client.clone(),
        OperatorConfig {
            namespace: Some(demo::NAMESPACE.into()),
            leader_election: Some((demo::NAMESPACE.into(), "replica-a".into())),
            ..Default::default()
        },
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(Arc::clone(&operator).run(cancel.clone()));
    let state = demo::wait_converged(&client).await.unwrap();
    assert!(state.foos.values().all(|(_, ready)| *ready));
    let lease: Lease = server
        .get(Some(demo::NAMESPACE), "informer-rs-example-operator")
        .unwrap();
    assert_eq!(
        lease.spec.unwrap().holder_identity.as_deref(),
        Some("replica-a")
    );
    cancel.cancel();
    run.await.unwrap().unwrap();
    let lease: Lease = server
        .get(Some(demo::NAMESPACE), "informer-rs-example-operator")
        .unwrap();
    assert_eq!(
        lease.spec.unwrap().holder_identity,
        None,
        "released on shutdown (E5)"
    );
    assert!(server.wait_for_active_watches(0, demo::STEP_TIMEOUT).await);
}

/// S7, S12: three replicas split six namespaces over Leases (sharded by namespace, so a Foo and
/// its ConfigMap share a shard); every Foo converges, a replica that stops hands its shards over
/// (released on cancel) and later edits still converge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_replicas_split_the_namespaces_and_take_over_a_stopped_replica() {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use informer_controller::leader::LeaderElectionConfig;
    use informer_examples::crd::{Foo, FooSpec};
    use informer_examples::operator::Sharding;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use kube::Api;
    use kube::api::{Patch, PatchParams, PostParams};

    const NAMESPACES: [&str; 6] = ["ns-a", "ns-b", "ns-c", "ns-d", "ns-e", "ns-f"];
    let server = TestServer::start().await.unwrap();
    let client = server.client();
    demo::install(&client).await.unwrap();
    for ns in NAMESPACES {
        let namespace = Namespace {
            metadata: kube::api::ObjectMeta {
                name: Some(ns.into()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
        let foo = Foo::new(
            "foo",
            FooSpec {
                message: format!("hello {ns}"),
                node_name: None,
            },
        );
        Api::<Foo>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &foo)
            .await
            .unwrap();
    }
    let replica = |r: usize| {
        Operator::new(
            client.clone(),
            OperatorConfig {
                sharding: Some(Sharding {
                    shards: 3,
                    lease_namespace: demo::NAMESPACE.into(),
                    identity: format!("replica-{r}"),
                    lease: LeaderElectionConfig {
                        lease_duration: Duration::from_secs(2),
                        renew_deadline: Duration::from_secs(1),
                        retry_period: Duration::from_millis(250),
                        jitter_factor: 0.0,
                        release_on_cancel: true,
                    },
                }),
                ..Default::default()
            },
        )
        .unwrap()
    };
    let operators: Vec<_> = (0..3).map(replica).collect();
    let cancels: Vec<CancellationToken> = (0..3).map(|_| CancellationToken::new()).collect();
    let mut runs: Vec<_> = operators
        .iter()
        .zip(&cancels)
        .map(|(op, c)| tokio::spawn(Arc::clone(op).run(c.clone())))
        .collect();

    // Every namespace's ConfigMap holds its Foo's message.
    let messages = |client: kube::Client| async move {
        let mut out = BTreeMap::new();
        for ns in NAMESPACES {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
            if let Some(cm) = api.get_opt(&config_map_name("foo")).await.unwrap() {
                let msg = cm
                    .data
                    .unwrap_or_default()
                    .remove("message")
                    .unwrap_or_default();
                out.insert(ns.to_string(), msg);
            }
        }
        out
    };
    let want = |suffix: &str| -> BTreeMap<String, String> {
        NAMESPACES
            .iter()
            .map(|ns| (ns.to_string(), format!("{suffix} {ns}")))
            .collect()
    };
    let converge = |expected: BTreeMap<String, String>| {
        let client = client.clone();
        async move {
            tokio::time::timeout(demo::STEP_TIMEOUT, async {
                while messages(client.clone()).await != expected {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            })
            .await
            .expect("converged");
        }
    };
    tokio::time::timeout(demo::STEP_TIMEOUT, async {
        while !operators.iter().all(|op| op.owned_shards().len() == 1) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("one shard per replica");
    converge(want("hello")).await;
    let reconciled: Vec<u64> = operators
        .iter()
        .map(|op| op.stats().reconciled.load(Ordering::Relaxed))
        .collect();
    assert_eq!(
        operators
            .iter()
            .map(|op| op.stats().writes.load(Ordering::Relaxed))
            .sum::<u64>(),
        6,
        "each namespace's ConfigMap written once, by one replica: {reconciled:?}"
    );

    // Replica 0 stops: its shard moves to another, which then follows its edits.
    let moved = operators[0].owned_shards();
    assert_eq!(moved.len(), 1);
    cancels[0].cancel();
    runs.remove(0).await.unwrap().unwrap();
    for ns in NAMESPACES {
        let patch = serde_json::json!({"spec": {"message": format!("bye {ns}")}});
        Api::<Foo>::namespaced(client.clone(), ns)
            .patch("foo", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }
    tokio::time::timeout(demo::STEP_TIMEOUT, async {
        loop {
            let now: std::collections::BTreeSet<u32> = operators[1..]
                .iter()
                .flat_map(|op| op.owned_shards())
                .collect();
            if now.is_superset(&moved) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the stopped replica's shard taken over");
    converge(want("bye")).await;
    for c in &cancels {
        c.cancel();
    }
    for run in runs {
        run.await.unwrap().unwrap();
    }
    assert!(server.wait_for_active_watches(0, demo::STEP_TIMEOUT).await);
}

/// C11 through the operator: in a maintenance window the running operator caches new Foos and
/// queues them but reconciles none (no ConfigMap, no write); `resume` converges them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_holds_reconciles_in_a_maintenance_window_and_converges_on_resume() {
    use informer_examples::crd::Foo;
    use informer_test_support::{sample, scrape, wait_until};

    let server = TestServer::start().await.unwrap();
    let client = server.client();
    demo::install(&client).await.unwrap();
    let operator = Operator::new(
        client.clone(),
        OperatorConfig {
            namespace: Some(demo::NAMESPACE.into()),
            ..Default::default()
        },
    )
    .unwrap();
    operator.pause();
    assert!(operator.is_paused());
    let cancel = CancellationToken::new();
    let run = tokio::spawn(Arc::clone(&operator).run(cancel.clone()));

    demo::create_samples(&client, &[("alpha", "hello"), ("beta", "hola")])
        .await
        .unwrap();
    let foos = operator.factory().informer_for::<Foo>();
    let depth = r#"example_workqueue_depth{name="foos",controller="foos",priority=""}"#;
    wait_until("both Foos cached and queued, not handed out", || {
        let cached = ["alpha", "beta"]
            .iter()
            .all(|n| foos.indexer().get_by_key(&format!("demo/{n}")).is_some());
        cached && sample(&scrape(&operator.registry.lock()), depth) == Some(2.0)
    })
    .await;
    assert_eq!(operator.stats().reconciled.load(Ordering::Relaxed), 0);
    assert_eq!(operator.stats().writes.load(Ordering::Relaxed), 0);
    let state = demo::observe(&client).await.unwrap();
    assert!(state.config_maps.is_empty(), "reconciled while paused");

    operator.resume();
    assert!(!operator.is_paused());
    let state = demo::wait_converged(&client).await.unwrap();
    assert_eq!(state.config_maps.len(), 2);
    assert_eq!(operator.stats().writes.load(Ordering::Relaxed), 2);
    cancel.cancel();
    run.await.unwrap().unwrap();
}
