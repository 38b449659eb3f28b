//! Runs the example operator against an embedded informer-testserver and asserts the end state.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use informer_examples::demo;
use informer_examples::operator::{Operator, OperatorConfig, config_map_name};
use informer_testserver::TestServer;
use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn operator_converges_follows_edits_and_cleans_up_deleted_foos() {
    let server = TestServer::builder().bearer_token("test-token").start().await.unwrap();
    let client = server.client();
    demo::install(&client).await.unwrap();
    demo::create_samples(&client, &[("alpha", "hello"), ("beta", "hola"), ("gamma", "salut")])
        .await
        .unwrap();

    let operator = Operator::new(
        client.clone(),
        OperatorConfig { namespace: Some(demo::NAMESPACE.into()), workers: 3 },
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn(Arc::clone(&operator).run(cancel.clone()));

    let state = demo::wait_converged(&client).await.unwrap();
    assert_eq!(state.foos.len(), 3);
    assert!(state.foos.values().all(|(_, ready)| *ready));
    assert_eq!(state.config_maps.get(&config_map_name("beta")).map(String::as_str), Some("hola"));

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
    assert_eq!(server.active_watches(), 0, "the operator shut every informer down");
}

#[tokio::test]
async fn operator_refuses_the_server_without_its_token() {
    let server = TestServer::builder().bearer_token("right").start().await.unwrap();
    let mut config = server.kube_config();
    config.auth_info.token = Some("wrong".to_string().into());
    let client = kube::Client::try_from(config).unwrap();
    let err = demo::install(&client).await.expect_err("401 without the token");
    assert!(err.to_string().contains("401") || err.to_string().to_lowercase().contains("unauthorized"), "{err}");
}
