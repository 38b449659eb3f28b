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
    // Built-ins come through the same factory (semantics §9 shape).
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
