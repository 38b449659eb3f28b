//! `Faults::refuse_user_agent` cuts one client off (503) while others keep working, and Leases
//! (coordination.k8s.io/v1) get 409 Conflict on a stale resourceVersion, as leader election needs.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

use http::{HeaderName, HeaderValue};
use informer_testserver::TestServer;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::{Api, PostParams};

fn client_with_agent(server: &TestServer, agent: &str) -> kube::Client {
    let mut config = server.kube_config();
    config.headers.push((
        HeaderName::from_static("user-agent"),
        HeaderValue::from_str(agent).unwrap(),
    ));
    kube::Client::try_from(config).unwrap()
}

#[tokio::test]
async fn refused_user_agent_gets_503_until_admitted_and_others_are_served() {
    let server = TestServer::start().await.unwrap();
    let a: Api<Lease> = Api::namespaced(client_with_agent(&server, "replica-a"), "default");
    let b: Api<Lease> = Api::namespaced(client_with_agent(&server, "replica-b"), "default");

    server.faults().refuse_user_agent("replica-a");
    let err = a.list(&Default::default()).await.expect_err("a is cut off");
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 503),
        "{err:?}"
    );
    b.list(&Default::default()).await.expect("b is served");

    server.faults().admit_user_agent("replica-a");
    a.list(&Default::default())
        .await
        .expect("a is served again");
}

#[tokio::test]
async fn hung_user_agent_gets_no_answer_until_admitted() {
    let server = TestServer::start().await.unwrap();
    let a: Api<Lease> = Api::namespaced(client_with_agent(&server, "replica-a"), "default");
    let b: Api<Lease> = Api::namespaced(client_with_agent(&server, "replica-b"), "default");
    server.faults().hang_user_agent("replica-a");
    let pending = tokio::spawn(async move { a.list(&Default::default()).await });
    b.list(&Default::default()).await.expect("b is served");
    // Still no answer for a, while b was served (a bounded wait for an absence).
    let pending = match tokio::time::timeout(std::time::Duration::from_millis(300), pending).await {
        Ok(done) => panic!("a hung client got an answer: {done:?}"),
        Err(_) => server.requests().len(),
    };
    assert_eq!(pending, 1, "only b's request was answered");
    server.faults().admit_user_agent("replica-a");
    let waited = server
        .wait_for_requests(std::time::Duration::from_secs(10), |l| l.len() == 2)
        .await
        .expect("the held request is answered once admitted");
    assert_eq!(waited[1].status, http::StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn lease_update_with_a_stale_resource_version_conflicts() {
    let server = TestServer::start().await.unwrap();
    let api: Api<Lease> = Api::namespaced(server.client(), "default");
    let mut lease = Lease::default();
    lease.metadata.name = Some("lock".into());
    lease.spec = Some(LeaseSpec {
        holder_identity: Some("a".into()),
        lease_duration_seconds: Some(15),
        ..Default::default()
    });
    let created = api.create(&PostParams::default(), &lease).await.unwrap();
    let err = api
        .create(&PostParams::default(), &lease)
        .await
        .expect_err("exists");
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409),
        "{err:?}"
    );

    let mut first = created.clone();
    first.spec.as_mut().unwrap().holder_identity = Some("b".into());
    api.replace("lock", &PostParams::default(), &first)
        .await
        .unwrap();
    // The same read, written again: its resourceVersion is stale now.
    let mut second = created;
    second.spec.as_mut().unwrap().holder_identity = Some("c".into());
    let err = api
        .replace("lock", &PostParams::default(), &second)
        .await
        .expect_err("stale resourceVersion");
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 409),
        "{err:?}"
    );
    let stored = api.get("lock").await.unwrap();
    assert_eq!(stored.spec.unwrap().holder_identity.as_deref(), Some("b"));
}
