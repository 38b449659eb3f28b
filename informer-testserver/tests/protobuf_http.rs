//! Kubernetes protobuf over HTTP (bodies encoded by prost from k8s-pb's types, responses
//! decoded by prost), Table responses with kubectl's columns and a CRD's printer columns, and
//! the scale subresource.
#![allow(clippy::unwrap_used)]

mod common;

use common::{raw_with, widget_crd};
use http_body_util::BodyExt;
use informer_testserver::TestServer;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::autoscaling::v1::Scale;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_pb::api::core::v1 as pb_core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use prost::Message as _;
use serde_json::{Value, json};

const PB: &str = "application/vnd.kubernetes.protobuf";

fn envelope(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

/// Sends a request; returns status, Content-Type and the raw body.
async fn send(
    server: &TestServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, String, bytes::Bytes) {
    let mut req = http::Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = server
        .client()
        .send(req.body(kube::client::Body::from(body)).unwrap())
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .map(|h| h.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (
        status,
        ct,
        resp.into_body().collect().await.unwrap().to_bytes(),
    )
}

#[tokio::test]
async fn protobuf_create_is_stored_as_json_and_answered_as_the_client_accepts() {
    let server = TestServer::start().await.unwrap();
    let cm = pb_core::ConfigMap {
        metadata: Some(pb_meta::ObjectMeta {
            name: Some("from-pb".into()),
            namespace: Some(String::new()),
            labels: [("app".to_owned(), "pb".to_owned())].into(),
            ..Default::default()
        }),
        data: [("color".to_owned(), "blue".to_owned())].into(),
        binary_data: [("raw".to_owned(), vec![0u8, 1, 2])].into(),
        ..Default::default()
    };
    // kubectl's Accept: protobuf first, JSON allowed -> the answer is protobuf.
    let (code, ct, body) = send(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[
            ("content-type", PB),
            ("accept", &format!("{PB},application/json")),
        ],
        envelope("v1", "ConfigMap", cm.encode_to_vec()),
    )
    .await;
    assert_eq!(code, 201, "{}", String::from_utf8_lossy(&body));
    assert_eq!(ct, PB);
    assert!(body.starts_with(b"k8s\0"));
    let unknown = Unknown::decode(&body[4..]).unwrap();
    assert_eq!(
        unknown.type_meta.unwrap().kind.as_deref(),
        Some("ConfigMap")
    );
    let back = pb_core::ConfigMap::decode(unknown.raw.unwrap().as_slice()).unwrap();
    let meta = back.metadata.unwrap();
    assert_eq!(meta.name.as_deref(), Some("from-pb"));
    assert!(
        meta.uid.is_some_and(|u| !u.is_empty()),
        "the server set a uid"
    );
    assert_eq!(back.binary_data["raw"], vec![0u8, 1, 2]);

    // JSON clients read the same object.
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let got = api.get("from-pb").await.unwrap();
    assert_eq!(got.data.unwrap()["color"], "blue");
    assert_eq!(got.binary_data.unwrap()["raw"].0, vec![0u8, 1, 2]);
    assert_eq!(got.metadata.labels.unwrap()["app"], "pb");

    // A JSON-first Accept gets JSON; a protobuf LIST decodes as a ConfigMapList.
    let (code, ct, _) = send(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps/from-pb",
        &[("accept", &format!("application/json,{PB}"))],
        Vec::new(),
    )
    .await;
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    let (code, ct, body) = send(
        &server,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &[("accept", PB)],
        Vec::new(),
    )
    .await;
    assert_eq!((code, ct.as_str()), (200, PB));
    let unknown = Unknown::decode(&body[4..]).unwrap();
    let list = pb_core::ConfigMapList::decode(unknown.raw.unwrap().as_slice()).unwrap();
    assert_eq!(list.items.len(), 1);
    assert!(list.metadata.unwrap().resource_version.is_some());

    // A watch of a built-in kind asked for in protobuf streams kube-apiserver's protobuf frames
    // (a 4-byte length, then a `WatchEvent` whose object is the `k8s\0` envelope), whether or
    // not JSON is allowed too.
    for accept in [format!("{PB}, application/json"), PB.to_string()] {
        let (code, ct, body) = send(
            &server,
            "GET",
            "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1",
            &[("accept", &accept)],
            Vec::new(),
        )
        .await;
        assert_eq!(code, 200);
        assert!(ct.starts_with(PB), "{ct}");
        let informer_proto::frame::WatchFrame::Frame { event, .. } =
            informer_proto::frame::read_watch_frame(&body, 1 << 20).expect("a frame")
        else {
            panic!("no whole frame in {} bytes", body.len());
        };
        let event = informer_proto::frame::WatchEvent::read(event).expect("a WatchEvent");
        assert_eq!(event.event_type, "ADDED");
        let cm: ConfigMap =
            informer_proto::frame::from_envelope(event.object).expect("a ConfigMap");
        assert_eq!(cm.metadata.name.as_deref(), Some("from-pb"));
    }
    let (code, _, _) = send(
        &server,
        "GET",
        "/api/v1/namespaces",
        &[("accept", "text/html")],
        Vec::new(),
    )
    .await;
    assert_eq!(code, 406);

    // A body that is not protobuf, and an unknown field number: 400, nothing stored.
    let (code, _, body) = send(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("content-type", PB)],
        b"{\"kind\":\"ConfigMap\"}".to_vec(),
    )
    .await;
    let status: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(code, 400);
    assert!(
        status["message"].as_str().unwrap().contains("protobuf"),
        "{status}"
    );
    let mut raw = cm.encode_to_vec();
    raw.extend([0xf8, 0x06, 0x01]); // field 111, varint 1
    let (code, _, body) = send(
        &server,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        &[("content-type", PB)],
        envelope("v1", "ConfigMap", raw),
    )
    .await;
    assert_eq!(code, 400, "{}", String::from_utf8_lossy(&body));
    assert!(String::from_utf8_lossy(&body).contains("field number 111"));
    assert_eq!(api.list(&Default::default()).await.unwrap().items.len(), 1);
}

#[tokio::test]
async fn protobuf_update_and_delete_options() {
    let server = TestServer::start().await.unwrap();
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("c".into());
    let created = api.create(&PostParams::default(), &cm).await.unwrap();
    let rv = created.metadata.resource_version.clone().unwrap();
    let update = pb_core::ConfigMap {
        metadata: Some(pb_meta::ObjectMeta {
            name: Some("c".into()),
            resource_version: Some(rv.clone()),
            ..Default::default()
        }),
        data: [("k".to_owned(), "v2".to_owned())].into(),
        ..Default::default()
    };
    let (code, _, _) = send(
        &server,
        "PUT",
        "/api/v1/namespaces/default/configmaps/c",
        &[("content-type", PB)],
        envelope("v1", "ConfigMap", update.encode_to_vec()),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(api.get("c").await.unwrap().data.unwrap()["k"], "v2");
    // DeleteOptions in protobuf with a stale resourceVersion precondition: 409, then a right one.
    let opts = |rv: &str| pb_meta::DeleteOptions {
        preconditions: Some(pb_meta::Preconditions {
            resource_version: Some(rv.into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let path = "/api/v1/namespaces/default/configmaps/c";
    let (code, _, _) = send(
        &server,
        "DELETE",
        path,
        &[("content-type", PB)],
        envelope("v1", "DeleteOptions", opts(&rv).encode_to_vec()),
    )
    .await;
    assert_eq!(code, 409);
    let now = api
        .get("c")
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let (code, _, _) = send(
        &server,
        "DELETE",
        path,
        &[("content-type", PB)],
        envelope(
            "meta.k8s.io/v1",
            "DeleteOptions",
            opts(&now).encode_to_vec(),
        ),
    )
    .await;
    assert_eq!(code, 200);
    assert!(api.get_opt("c").await.unwrap().is_none());
}

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";

fn column_names(table: &Value) -> Vec<String> {
    table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn tables_have_kubectls_columns() {
    let server = TestServer::start().await.unwrap();
    server
        .create_json(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
        }))
        .unwrap();
    let (code, table) = raw_with(
        &server,
        "GET",
        "/apis/apps/v1/namespaces/default/deployments",
        &[("accept", TABLE)],
        b"",
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(table["kind"], "Table");
    assert_eq!(
        column_names(&table),
        [
            "Name",
            "Ready",
            "Up-to-date",
            "Available",
            "Age",
            "Containers",
            "Images",
            "Selector"
        ]
    );
    let cells = &table["rows"][0]["cells"];
    assert_eq!(cells[0], "web");
    assert_eq!(cells[1], "2/3");
    assert_eq!(cells[2], 3);
    assert_eq!(cells[3], 2);
    assert!(
        cells[4].as_str().unwrap().ends_with('s'),
        "age {}",
        cells[4]
    );
    assert_eq!(
        (&cells[5], &cells[6], &cells[7]),
        (&json!("nginx"), &json!("nginx:1.27"), &json!("app=web"))
    );
    assert_eq!(
        table["columnDefinitions"][5]["priority"], 1,
        "wide-only column"
    );
    assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    // includeObject=Object puts the whole object in the row; GET answers a one-row Table.
    let (_, one) = raw_with(
        &server,
        "GET",
        "/apis/apps/v1/namespaces/default/deployments/web?includeObject=Object",
        &[("accept", TABLE)],
        b"",
    )
    .await;
    assert_eq!(one["rows"].as_array().unwrap().len(), 1);
    assert_eq!(one["rows"][0]["object"]["spec"]["replicas"], 3);

    // A CRD's additionalPrinterColumns, with a JSONPath filter and a date column.
    let mut crd = widget_crd();
    crd["spec"]["versions"][0]["additionalPrinterColumns"] = json!([
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
        {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
        {"name": "Owner", "type": "string", "jsonPath": ".metadata.labels.owner", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]);
    server.create_json(crd).unwrap();
    server
        .create_json(json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "default", "labels": {"owner": "team-a"}},
            "spec": {"size": 3}}))
        .unwrap();
    // With the status subresource on, a create drops status (as kube-apiserver): set it there.
    let status = json!({"status": {"conditions": [{"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]}});
    let (code, body) = raw_with(
        &server,
        "PATCH",
        "/apis/example.com/v1/namespaces/default/widgets/w1/status",
        &[("content-type", "application/merge-patch+json")],
        status.to_string().as_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    let (code, table) = raw_with(
        &server,
        "GET",
        "/apis/example.com/v1/namespaces/default/widgets",
        &[("accept", TABLE)],
        b"",
    )
    .await;
    assert_eq!(code, 200, "{table}");
    assert_eq!(
        column_names(&table),
        ["Name", "Size", "Ready", "Owner", "Age"]
    );
    let cells = &table["rows"][0]["cells"];
    assert_eq!(
        (&cells[0], &cells[1], &cells[2], &cells[3]),
        (&json!("w1"), &json!(3), &json!("True"), &json!("team-a"))
    );
    assert!(
        cells[4].as_str().unwrap().ends_with('s'),
        "date columns are ages: {}",
        cells[4]
    );
    assert_eq!(table["columnDefinitions"][3]["priority"], 1);

    // Protobuf cannot carry a custom resource: JSON when the client allows it, else 406.
    let w1 = "/apis/example.com/v1/namespaces/default/widgets/w1";
    let (code, ct, _) = send(
        &server,
        "GET",
        w1,
        &[("accept", &format!("{PB},application/json"))],
        Vec::new(),
    )
    .await;
    assert_eq!((code, ct.as_str()), (200, "application/json"));
    let (code, _, body) = send(&server, "GET", w1, &[("accept", PB)], Vec::new()).await;
    assert_eq!(code, 406, "{}", String::from_utf8_lossy(&body));

    // Kinds without printers get Name and Age.
    let (_, table) = raw_with(
        &server,
        "GET",
        "/apis/coordination.k8s.io/v1/leases",
        &[("accept", TABLE)],
        b"",
    )
    .await;
    assert_eq!(column_names(&table), ["Name", "Age"]);
}

#[tokio::test]
async fn table_watch_events_carry_one_row_each() {
    let server = TestServer::start().await.unwrap();
    let mut lines = common::Lines::open_with(
        &server,
        "/api/v1/namespaces/default/configmaps?watch=true",
        &[("accept", TABLE)],
    )
    .await;
    let api: Api<ConfigMap> = Api::default_namespaced(server.client());
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("a".into());
    cm.data = Some(
        [
            ("k".to_owned(), "v".to_owned()),
            ("k2".to_owned(), "v".to_owned()),
        ]
        .into(),
    );
    api.create(&PostParams::default(), &cm).await.unwrap();
    let ev = lines.next_event().await.unwrap();
    assert_eq!(ev["type"], "ADDED");
    assert_eq!(ev["object"]["kind"], "Table");
    assert_eq!(ev["object"]["rows"][0]["cells"][0], "a");
    assert_eq!(ev["object"]["rows"][0]["cells"][1], 2);
}

#[tokio::test]
async fn scale_subresource_reads_and_writes_replicas() {
    let server = TestServer::start().await.unwrap();
    server
        .create_json(json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}))
        .unwrap();
    let api: Api<Deployment> = Api::default_namespaced(server.client());
    let scale: Scale = api.get_scale("web").await.unwrap();
    assert_eq!(scale.spec.as_ref().unwrap().replicas, Some(2));
    assert_eq!(
        scale.status.as_ref().unwrap().selector.as_deref(),
        Some("app=web")
    );
    let patched = api
        .patch_scale(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.unwrap().replicas, Some(5));
    assert_eq!(api.get("web").await.unwrap().spec.replicas, Some(5));
    // A stale resourceVersion in a Scale update conflicts.
    let mut stale = scale.clone();
    stale.spec = Some(k8s_openapi::api::autoscaling::v1::ScaleSpec { replicas: Some(1) });
    let err = api
        .replace_scale("web", &PostParams::default(), &stale)
        .await;
    assert_eq!(common::api_code(err), 409);
    // Discovery advertises it (kubectl scale looks it up there).
    let (_, res) = raw_with(&server, "GET", "/apis/apps/v1", &[], b"").await;
    assert!(
        res["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["name"] == "deployments/scale" && r["kind"] == "Scale")
    );
}
