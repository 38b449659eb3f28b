//! Bad input gets the right Status; finalizers and deletionTimestamp; bearer-token auth;
//! namespaces; discovery basics.
// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod common;

use common::*;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn assert_status(v: &serde_json::Value, code: u16, reason: &str) {
    assert_eq!(v["kind"], "Status", "{v}");
    assert_eq!(v["apiVersion"], "v1");
    assert_eq!(v["status"], "Failure");
    assert_eq!(v["code"], code, "{v}");
    assert_eq!(v["reason"], reason, "{v}");
    assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()));
}

#[tokio::test]
async fn bad_input_gets_a_status() {
    let server = TestServer::start().await.unwrap();
    let (code, v) = raw(&server, "POST", CMS, None, b"{not json").await;
    assert_eq!(code, 400);
    assert_status(&v, 400, "BadRequest");

    let (code, v) = raw(
        &server,
        "GET",
        "/api/v1/namespaces/default/gizmos",
        None,
        b"",
    )
    .await;
    assert_eq!(code, 404);
    assert_status(&v, 404, "NotFound");
    let (code, v) = raw(
        &server,
        "GET",
        "/apis/nope.example.com/v1/things",
        None,
        b"",
    )
    .await;
    assert_eq!(code, 404);
    assert_status(&v, 404, "NotFound");

    server.create(&cm("a", &[])).unwrap();
    let body = serde_json::to_vec(&cm("b", &[])).unwrap();
    let (code, v) = raw(&server, "PUT", &format!("{CMS}/a"), None, &body).await;
    assert_eq!(code, 400);
    assert_status(&v, 400, "BadRequest");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .contains("does not match the name on the URL")
    );

    let (code, v) = raw(
        &server,
        "GET",
        &format!("{CMS}?labelSelector=a%20in%20b"),
        None,
        b"",
    )
    .await;
    assert_eq!(code, 400);
    assert_status(&v, 400, "BadRequest");

    let (code, v) = raw(
        &server,
        "POST",
        CMS,
        None,
        br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"}}"#,
    )
    .await;
    assert_eq!(code, 400);
    assert_status(&v, 400, "BadRequest");

    let (code, v) = raw(
        &server,
        "POST",
        CMS,
        None,
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"}}"#,
    )
    .await;
    assert_eq!(code, 400);
    assert_status(&v, 400, "BadRequest");

    let (code, v) = raw(
        &server,
        "POST",
        CMS,
        None,
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#,
    )
    .await;
    assert_eq!(code, 422);
    assert_status(&v, 422, "Invalid");

    let (code, v) = raw(
        &server,
        "PATCH",
        &format!("{CMS}/a"),
        Some("text/plain"),
        b"{}",
    )
    .await;
    assert_eq!(code, 415);
    assert_status(&v, 415, "UnsupportedMediaType");

    let (code, v) = raw(
        &server,
        "PATCH",
        &format!("{CMS}/a"),
        Some("application/merge-patch+json"),
        b"[1,",
    )
    .await;
    assert_eq!(code, 400);
    assert_status(&v, 400, "BadRequest");

    let (code, v) = raw(&server, "DELETE", &format!("{CMS}/zzz"), None, b"").await;
    assert_eq!(code, 404);
    assert_status(&v, 404, "NotFound");

    // Delete preconditions.
    let (code, v) = raw(
        &server,
        "DELETE",
        &format!("{CMS}/a"),
        None,
        br#"{"preconditions":{"uid":"nope"}}"#,
    )
    .await;
    assert_eq!(code, 409);
    assert_status(&v, 409, "Conflict");
}

#[tokio::test]
async fn finalizers_defer_deletion_until_the_last_one_goes() {
    let server = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut c = cm("f", &[]);
    c.metadata.finalizers = Some(vec!["example.com/a".into(), "example.com/b".into()]);
    api.create(&PostParams::default(), &c).await.unwrap();
    let rv = server.current_resource_version();
    let mut w = Lines::open(&server, &format!("{CMS}?watch=true&resourceVersion={rv}")).await;

    api.delete("f", &DeleteParams::default()).await.unwrap();
    let got = api.get("f").await.unwrap();
    assert!(got.metadata.deletion_timestamp.is_some());
    assert_eq!(w.take(1).await, [("MODIFIED".into(), "f".into())]);
    // A second delete changes nothing.
    api.delete("f", &DeleteParams::default()).await.unwrap();
    assert_eq!(server.current_resource_version(), rv + 1);

    let p = |f: &[&str]| Patch::Merge(serde_json::json!({"metadata": {"finalizers": f}}));
    api.patch("f", &PatchParams::default(), &p(&["example.com/b"]))
        .await
        .unwrap();
    assert_eq!(w.take(1).await, [("MODIFIED".into(), "f".into())]);
    assert!(api.get("f").await.is_ok());
    api.patch("f", &PatchParams::default(), &p(&[]))
        .await
        .unwrap();
    assert_eq!(w.take(1).await, [("DELETED".into(), "f".into())]);
    assert_eq!(api_code(api.get("f").await), 404);
}

#[tokio::test]
async fn bearer_token_is_required_when_configured() {
    let server = TestServer::builder()
        .bearer_token("s3cret")
        .start()
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    assert!(
        api.create(&PostParams::default(), &cm("a", &[]))
            .await
            .is_ok()
    );

    let mut config = server.kube_config();
    config.auth_info = Default::default();
    let anon: Api<ConfigMap> = Api::default_namespaced(kube::Client::try_from(config).unwrap());
    assert_eq!(
        api_reason(anon.get("a").await),
        (401, "Unauthorized".to_owned())
    );
    let mut config = server.kube_config();
    config.auth_info = serde_json::from_value(serde_json::json!({"token": "wrong"})).unwrap();
    let wrong: Api<ConfigMap> = Api::default_namespaced(kube::Client::try_from(config).unwrap());
    assert_eq!(api_code(wrong.get("a").await), 401);
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_objects() {
    let server = TestServer::start().await.unwrap();
    server.create_json(serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})).unwrap();
    server.create_json(serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "team"}})).unwrap();
    server.delete_json("v1", "Namespace", None, "team").unwrap();
    assert_eq!(
        server
            .get_json("v1", "ConfigMap", Some("team"), "c")
            .unwrap_err()
            .code(),
        Some(404)
    );
}

#[tokio::test]
async fn discovery_documents() {
    let server = TestServer::start().await.unwrap();
    let v = get_ok(&server, "/version").await;
    assert_eq!(
        (v["major"].as_str(), v["minor"].as_str()),
        (Some("1"), Some("37"))
    );
    let core = get_ok(&server, "/api/v1").await;
    let pods = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "pods")
        .unwrap();
    assert_eq!(pods["shortNames"][0], "po");
    assert!(
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "pods/status")
    );
    let groups = get_ok(&server, "/apis").await;
    assert!(
        groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "apps")
    );
    let apps = get_ok(&server, "/apis/apps/v1").await;
    assert!(
        apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["kind"] == "Deployment")
    );
    let (_, agg) = raw_with(
        &server,
        "GET",
        "/apis",
        &[(
            "accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        )],
        b"",
    )
    .await;
    assert_eq!(agg["kind"], "APIGroupDiscoveryList");
    // kube's discovery runs against it.
    let discovery = kube::Discovery::new(server.client()).run().await.unwrap();
    assert!(discovery.groups().any(|g| g.name() == "apps"));
}
