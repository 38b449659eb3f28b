//! The transport (docs/behaviour.md section 18), on informer-testserver and kube-apiserver alike:
//! which responses come gzipped (T3), and that the runtime decodes them to the objects written.

use std::collections::BTreeSet;
use std::time::Duration;

use informer_conformance::*;
use informer_runtime::list_watch::{ListRequest, ListWatch, WatchRequest};
use informer_test_support::{big_config_map, initial_events, next_added};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Api;
use kube::api::PostParams;

/// ConfigMaps of about 4 KiB each: 64 of them make a LIST body of about 270 KiB.
const BIG: usize = 64;

async fn seed_big(client: &kube::Client, ns: &str) -> BTreeSet<String> {
    let api = Api::<ConfigMap>::namespaced(client.clone(), ns);
    let mut names = BTreeSet::new();
    for i in 0..BIG {
        let name = format!("cm-{i:02}");
        api.create(&PostParams::default(), &big_config_map(ns, &name, 4))
            .await
            .expect("create");
        names.insert(name);
    }
    names
}

/// A raw GET of `path_and_query` with this `Accept` (and `Accept-Encoding`, if given), answered
/// in time; its body is as the server sent it (nothing decompressed).
async fn send_get(
    client: &kube::Client,
    path_and_query: &str,
    accept: &str,
    accept_encoding: Option<&str>,
) -> http::Response<kube::client::Body> {
    let mut req = http::Request::get(path_and_query).header(http::header::ACCEPT, accept);
    if let Some(encoding) = accept_encoding {
        req = req.header(http::header::ACCEPT_ENCODING, encoding);
    }
    let req = req.body(Vec::new()).expect("request");
    tokio::time::timeout(WAIT, client.send(req.map(Into::into)))
        .await
        .expect("an answer in time")
        .expect("response")
}

/// The response headers of a successful [`send_get`]; the body is dropped.
async fn headers_of(
    client: &kube::Client,
    path_and_query: &str,
    accept: &str,
    accept_encoding: &str,
) -> http::HeaderMap {
    let res = send_get(client, path_and_query, accept, Some(accept_encoding)).await;
    assert!(
        res.status().is_success(),
        "{path_and_query}: {}",
        res.status()
    );
    res.headers().clone()
}

/// The `Content-Encoding` of a raw GET of `path_and_query` that offers gzip.
async fn encoding_of(client: &kube::Client, path_and_query: &str) -> Option<String> {
    headers_of(client, path_and_query, "application/json", "gzip")
        .await
        .get(http::header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

conformance!(gzip_where_kube_apiserver_gzips);
/// T3: a LIST body over 128 KiB and a watch-list stream come gzipped to a client that offers
/// gzip; a small LIST and a plain watch do not. The runtime, which always offers gzip, reads the
/// same objects from both.
async fn gzip_where_kube_apiserver_gzips(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("gzip").await;
    let written = seed_big(&client, &ns).await;
    let path = format!("/api/v1/namespaces/{ns}/configmaps");

    assert_eq!(encoding_of(&client, &path).await.as_deref(), Some("gzip"));
    assert_eq!(encoding_of(&client, &format!("{path}?limit=2")).await, None);
    assert_eq!(
        encoding_of(
            &client,
            &format!("{path}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=5")
        )
        .await
        .as_deref(),
        Some("gzip"),
        "a watch-list is gzipped (WatchListCompression)"
    );
    assert_eq!(
        encoding_of(&client, &format!("{path}?watch=true&timeoutSeconds=5")).await,
        None,
        "a plain watch is not"
    );

    let lw = ListWatch::<ConfigMap>::new(Api::namespaced(client.clone(), &ns));
    let page = lw.list(&ListRequest::default()).await.expect("LIST");
    let listed: BTreeSet<String> = page
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(listed, written);

    let mut stream = lw.watch(&watch_list()).await.expect("watch-list");
    let streamed: BTreeSet<String> = initial_events(&mut stream)
        .await
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(streamed, written);
    // A write after the initial events arrives on the same (gzipped) stream.
    Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &config_map(&ns, "late", "2", &[]))
        .await
        .expect("create");
    let late = next_added(&mut stream).await;
    assert_eq!(late.metadata.name.as_deref(), Some("late"));
}

conformance!(every_gzip_member_of_a_watch_list_is_readable_at_once);
/// T3: each flush of a gzipped watch-list is one gzip member whose events sit in deflate blocks
/// before an empty final block (kube-apiserver's `perFlushGzipWriter`: a sync flush, then a
/// close). A reader that holds back the end of a member until the next member's header arrives,
/// as Go's `gzip.Reader` does, therefore hands out the initial-events-end bookmark when it comes,
/// not at the next flush (a periodic bookmark, up to a minute later).
async fn every_gzip_member_of_a_watch_list_is_readable_at_once(backend: &Backend) {
    use http_body_util::BodyExt as _;
    let client = backend.client().await;
    let ns = backend.namespace("gzip-flush").await;
    let api = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    for name in ["a", "b", "c"] {
        api.create(&PostParams::default(), &config_map(&ns, name, "1", &[]))
            .await
            .expect("create");
    }
    let path = format!(
        "/api/v1/namespaces/{ns}/configmaps?watch=true&sendInitialEvents=true\
         &resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=60"
    );
    let res = send_get(&client, &path, "application/json", Some("gzip")).await;
    assert!(res.status().is_success(), "{}", res.status());
    assert_eq!(res.headers()[http::header::CONTENT_ENCODING], "gzip");
    let mut body = res.into_body();
    let (mut wire, mut text) = (Vec::new(), String::new());
    tokio::time::timeout(WAIT, async {
        while !text.contains("k8s.io/initial-events-end") {
            let frame = body.frame().await.expect("more body").expect("a frame");
            wire.extend_from_slice(frame.data_ref().map_or(&[][..], |d| &d[..]));
            while let Some((len, data)) = complete_member(&wire) {
                assert_flushed(&wire[..len], &data);
                text.push_str(std::str::from_utf8(&data).expect("JSON events"));
                wire.drain(..len);
            }
        }
    })
    .await
    .expect("the initial-events-end bookmark in complete members, in time");
    for name in ["a", "b", "c"] {
        assert!(
            text.contains(&format!("\"name\":\"{name}\"")),
            "{name}: {text}"
        );
    }
}

/// The length and data of the first gzip member of `wire`, once it has all arrived.
fn complete_member(wire: &[u8]) -> Option<(usize, Vec<u8>)> {
    use std::io::Read as _;
    let mut rest = wire;
    let mut data = Vec::new();
    flate2::bufread::GzDecoder::new(&mut rest)
        .read_to_end(&mut data)
        .ok()?;
    Some((wire.len() - rest.len(), data))
}

/// T3's layout: no optional header fields, then the data in blocks ending with a sync flush
/// (`00 00 ff ff`), then an empty final block (Go's stored `01 00 00 ff ff` or zlib's fixed
/// `03 00`); the blocks before the final one inflate to the member's whole data.
fn assert_flushed(member: &[u8], data: &[u8]) {
    assert_eq!(member[3], 0, "no optional gzip header fields");
    let deflate = &member[10..member.len() - 8];
    let last: &[u8] = [&[0x01, 0x00, 0x00, 0xff, 0xff][..], &[0x03, 0x00][..]]
        .into_iter()
        .find(|end| deflate.ends_with(end))
        .unwrap_or_else(|| panic!("the final block is not an empty one: {deflate:02x?}"));
    let blocks = &deflate[..deflate.len() - last.len()];
    assert!(
        blocks.ends_with(&[0x00, 0x00, 0xff, 0xff]),
        "a sync flush ends the data"
    );
    let mut out = Vec::with_capacity(data.len() + 64);
    flate2::Decompress::new(false)
        .decompress_vec(blocks, &mut out, flate2::FlushDecompress::Sync)
        .expect("inflate");
    assert_eq!(out, data, "the data before the final block");
}

/// A watch-list request (`sendInitialEvents=true`).
fn watch_list() -> WatchRequest {
    WatchRequest {
        send_initial_events: true,
        timeout: Duration::from_secs(60),
        ..Default::default()
    }
}

/// The `Content-Type` of a raw GET of `path_and_query` that asks for protobuf first.
async fn content_type_of(client: &kube::Client, path_and_query: &str) -> String {
    headers_of(
        client,
        path_and_query,
        "application/vnd.kubernetes.protobuf, application/json",
        "identity",
    )
    .await
    .get(http::header::CONTENT_TYPE)
    .and_then(|v| v.to_str().ok())
    .unwrap_or_default()
    .to_owned()
}

conformance!(protobuf_for_built_in_kinds);
/// T1/T2: a LIST and a watch-list of Pods come as protobuf and decode to the objects the JSON
/// path decodes.
async fn protobuf_for_built_in_kinds(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("protobuf").await;
    let api = Api::<Pod>::namespaced(client.clone(), &ns);
    for i in 0..3 {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("p{i}"), "labels": {"app": "web"}},
            "spec": {
                "containers": [{"name": "app", "image": "nginx:1",
                                "ports": [{"containerPort": 80}],
                                "resources": {"requests": {"cpu": "100m"}}}],
                "terminationGracePeriodSeconds": 0
            }
        }))
        .expect("a Pod");
        api.create(&PostParams::default(), &pod)
            .await
            .expect("create");
    }
    let path = format!("/api/v1/namespaces/{ns}/pods");
    assert!(
        content_type_of(&client, &path)
            .await
            .starts_with("application/vnd.kubernetes.protobuf"),
        "a LIST of Pods in protobuf"
    );
    let pb = ListWatch::<Pod>::new(api.clone());
    let json = ListWatch::<Pod>::new(api.clone()).prefer_protobuf(false);
    let from_pb = pb
        .list(&ListRequest::default())
        .await
        .expect("protobuf LIST");
    let from_json = json.list(&ListRequest::default()).await.expect("JSON LIST");
    assert_eq!(from_pb.items.len(), 3);
    assert_eq!(from_pb.items, from_json.items, "T2");
    assert!(pb.asks_for_protobuf(), "no fallback to JSON");

    let mut stream = pb.watch(&watch_list()).await.expect("watch-list");
    let mut streamed = initial_events(&mut stream).await;
    streamed.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut listed = from_json.items;
    listed.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    assert_eq!(streamed, listed, "T2 on the watch-list");
    assert!(pb.asks_for_protobuf(), "no fallback to JSON");
}

/// A raw GET of `path_and_query` with this `Accept`: its status, `Content-Type` and body.
async fn raw_get(
    client: &kube::Client,
    path_and_query: &str,
    accept: &str,
) -> (u16, String, Vec<u8>) {
    let res = send_get(client, path_and_query, accept, None).await;
    let code = res.status().as_u16();
    let content_type = res
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = http_body_util::BodyExt::collect(res.into_body())
        .await
        .expect("body")
        .to_bytes()
        .to_vec();
    (code, content_type, body)
}

/// The `Status` of an error body in either encoding, by its `Content-Type`.
fn status_of(content_type: &str, body: &[u8]) -> kube::core::Status {
    if content_type.starts_with(PROTOBUF) {
        informer_proto::frame::read_status(body).expect("a protobuf Status")
    } else {
        serde_json::from_slice(body).expect("a JSON Status")
    }
}

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// A cluster-scoped custom resource for [`error_bodies_follow_the_accept_header`].
const PROBE_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: probes.errors.conformance.informer-rs.io
spec:
  group: errors.conformance.informer-rs.io
  names: {kind: Probe, plural: probes, singular: probe, listKind: ProbeList}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;

conformance!(error_bodies_follow_the_accept_header);
/// T5: an error's `Status` comes in the media type the request's `Accept` negotiates:
/// protobuf for a built-in kind asked for in protobuf first, JSON otherwise; the runtime reads
/// either, so the reason and the error class survive (a 504 "too large resource version" is
/// R11's class, not an unknown failure).
async fn error_bodies_follow_the_accept_header(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("errors").await;
    backend.install_crds(PROBE_CRD).await;
    let pb_first = "application/vnd.kubernetes.protobuf, application/json";
    let cases = [
        (
            format!("/api/v1/namespaces/{ns}/configmaps/missing"),
            pb_first,
            404,
            "NotFound",
            true,
        ),
        (
            format!("/api/v1/namespaces/{ns}/configmaps/missing"),
            "application/json",
            404,
            "NotFound",
            false,
        ),
        (
            format!("/api/v1/namespaces/{ns}/configmaps?labelSelector=a%20in%20%28"),
            pb_first,
            400,
            "BadRequest",
            true,
        ),
        (
            format!("/apis/errors.conformance.informer-rs.io/v1/namespaces/{ns}/probes/missing"),
            pb_first,
            404,
            "NotFound",
            true,
        ),
    ];
    for (path, accept, code, reason, protobuf) in cases {
        let (got, content_type, body) = raw_get(&client, &path, accept).await;
        assert_eq!(got, code, "{path} ({accept})");
        assert_eq!(
            content_type.starts_with(PROTOBUF),
            protobuf,
            "{path} ({accept}): the error came as {content_type:?}"
        );
        let status = status_of(&content_type, &body);
        assert_eq!(
            (status.code, status.reason.as_str()),
            (code, reason),
            "{path}"
        );
    }

    // The runtime asks for protobuf first and reads the Status either way (through a client
    // that shows it every answer, not kube's retries of the 504).
    let no_retry = backend.client_without_retry().await;
    let lw = ListWatch::<ConfigMap>::new(Api::namespaced(no_retry, &ns));
    assert!(lw.asks_for_protobuf());
    let bad = ListRequest {
        label_selector: Some("a in (".into()),
        ..Default::default()
    };
    match lw.list(&bad).await {
        Err(informer_runtime::list_watch::Error::Api { status, .. }) => {
            assert_eq!((status.code, status.reason.as_str()), (400, "BadRequest"));
        }
        other => panic!("a bad selector is a 400: {other:?}"),
    }
    let current = rv_number(
        &lw.list(&ListRequest::default())
            .await
            .expect("LIST")
            .resource_version,
    );
    let too_large = ListRequest {
        resource_version: Some((current + 1_000_000).to_string()),
        resource_version_match: Some("NotOlderThan".into()),
        ..Default::default()
    };
    let err = lw
        .list(&too_large)
        .await
        .expect_err("too large a resourceVersion");
    assert_eq!(
        err.class(),
        informer_runtime::list_watch::ErrorClass::TooLargeResourceVersion,
        "R11 from a protobuf error body: {err:?}"
    );
    assert!(
        lw.asks_for_protobuf(),
        "an error body is no reason to turn to JSON"
    );
}

conformance!(managed_fields_drop_is_ignored_without_the_gate);
/// KEP-5958 (`ManagedFieldsOptOut`, alpha in 1.38): a server without the gate, kube-apiserver
/// 1.37 among them, ignores `drop=metadata.managedFields` on the `Accept` media types and
/// answers the full objects in the format asked for; so the runtime may always send it where
/// its cached form keeps no managedFields.
async fn managed_fields_drop_is_ignored_without_the_gate(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("drop").await;
    // kube-apiserver records a manager of its own on every write; informer-testserver keeps
    // what the client sends, so the object carries one either way.
    let mut cm = config_map(&ns, "a", "1", &[]);
    cm.metadata.managed_fields = Some(vec![
        serde_json::from_value(serde_json::json!({
            "manager": "conformance", "operation": "Update", "apiVersion": "v1",
            "time": "2026-01-02T03:04:05Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:v": {}}}
        }))
        .expect("a managedFields entry"),
    ]);
    Api::<ConfigMap>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &cm)
        .await
        .expect("create");
    let path = format!("/api/v1/namespaces/{ns}/configmaps");
    for (accept, protobuf) in [
        (
            "application/vnd.kubernetes.protobuf;drop=metadata.managedFields, application/json;drop=metadata.managedFields",
            true,
        ),
        ("application/json;drop=metadata.managedFields", false),
        ("application/json;drop=metadata.labels", false),
    ] {
        let (code, content_type, body) = raw_get(&client, &path, accept).await;
        assert_eq!(code, 200, "{accept}: {}", String::from_utf8_lossy(&body));
        assert_eq!(content_type.starts_with(PROTOBUF), protobuf, "{accept}");
        let list: serde_json::Value = if protobuf {
            informer_testserver::decode_protobuf(&body).expect("a protobuf list")
        } else {
            serde_json::from_slice(&body).expect("a JSON list")
        };
        let managed = &list["items"][0]["metadata"]["managedFields"];
        assert!(
            managed.as_array().is_some_and(|m| !m.is_empty()),
            "{accept}: managedFields kept: {list}"
        );
    }
}
