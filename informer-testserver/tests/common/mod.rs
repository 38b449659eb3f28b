//! Helpers shared by the integration tests (each test starts its own server).
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec};
use kube::CustomResource;
use kube::api::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A test custom resource (`widgets.example.com/v1`, namespaced, status subresource).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(
    group = "example.com",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus",
    schema = "disabled"
)]
pub struct WidgetSpec {
    pub size: i64,
}

/// Status of a [`Widget`].
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
pub struct WidgetStatus {
    pub ready: bool,
}

/// The CRD for [`Widget`].
pub fn widget_crd() -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}}
            }]
        }
    })
}

pub fn cm(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some("default".to_owned()),
            labels: Some(
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            ..ObjectMeta::default()
        },
        data: Some([("k".to_owned(), "v".to_owned())].into()),
        ..ConfigMap::default()
    }
}

pub fn pod(ns: &str, name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: Some(ns.to_owned()),
            labels: Some([("app".to_owned(), "bench".to_owned())].into()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "c".into(),
                image: Some("nginx:1.27".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

/// Polls `cond` until it holds or `timeout` passes.
pub async fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cond()
}

/// Reads the `code` of a kube API error.
pub fn api_code<T: std::fmt::Debug>(res: Result<T, kube::Error>) -> u16 {
    match res {
        Err(kube::Error::Api(s)) => s.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Reads the reason of a kube API error.
pub fn api_reason<T: std::fmt::Debug>(res: Result<T, kube::Error>) -> (u16, String) {
    match res {
        Err(kube::Error::Api(s)) => (s.code, s.reason.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

use futures::StreamExt;
use futures::stream::BoxStream;
use http_body_util::BodyExt;
use informer_testserver::TestServer;
use serde_json::Value;

/// Sends a raw request; returns the status code and the JSON body (Null if not JSON).
pub async fn raw(
    server: &TestServer,
    method: &str,
    path: &str,
    ct: Option<&str>,
    body: &[u8],
) -> (u16, Value) {
    raw_with(
        server,
        method,
        path,
        &[("content-type", ct.unwrap_or("application/json"))],
        body,
    )
    .await
}

/// Sends a raw request with extra headers.
pub async fn raw_with(
    server: &TestServer,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, Value) {
    let mut req = http::Request::builder().method(method).uri(path);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(kube::client::Body::from(body.to_vec())).unwrap();
    let resp = server.client().send(req).await.unwrap();
    let status = resp.status().as_u16();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// GET returning JSON (asserts 200).
pub async fn get_ok(server: &TestServer, path: &str) -> Value {
    let (code, v) = raw(server, "GET", path, None, b"").await;
    assert_eq!(code, 200, "GET {path}: {v}");
    v
}

/// Names of a list's items.
pub fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|i| {
                    i["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A raw watch: yields parsed event lines.
pub struct Lines {
    pub status: u16,
    body: BoxStream<'static, Result<bytes::Bytes, String>>,
    buf: Vec<u8>,
    /// Set when the server ended the stream (EOF) or cut it (error).
    pub ended: Option<Result<(), String>>,
}

impl Lines {
    /// Opens `path` (which should carry `watch=true`).
    pub async fn open(server: &TestServer, path: &str) -> Lines {
        Self::open_with(server, path, &[]).await
    }

    /// Opens `path` with extra headers.
    pub async fn open_with(server: &TestServer, path: &str, headers: &[(&str, &str)]) -> Lines {
        let mut req = http::Request::get(path);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(kube::client::Body::from(Vec::new())).unwrap();
        let resp = server.client().send(req).await.unwrap();
        let status = resp.status().as_u16();
        let body = resp
            .into_body()
            .into_data_stream()
            .map(|r| r.map_err(|e| e.to_string()))
            .boxed();
        Lines {
            status,
            body,
            buf: Vec::new(),
            ended: None,
        }
    }

    /// The next raw line (without the newline), or None at end of stream.
    pub async fn next_raw(&mut self) -> Option<String> {
        loop {
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                return Some(String::from_utf8_lossy(&line[..line.len() - 1]).into_owned());
            }
            if self.ended.is_some() {
                return None;
            }
            match tokio::time::timeout(Duration::from_secs(10), self.body.next()).await {
                Err(_) => panic!("no watch data within 10 s"),
                Ok(Some(Ok(b))) => self.buf.extend_from_slice(&b),
                Ok(Some(Err(e))) => self.ended = Some(Err(e)),
                Ok(None) => self.ended = Some(Ok(())),
            }
        }
    }

    /// The next event as JSON.
    pub async fn next(&mut self) -> Option<Value> {
        let line = self.next_raw().await?;
        Some(serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}")))
    }

    /// The next event that is not a BOOKMARK.
    pub async fn next_event(&mut self) -> Option<Value> {
        loop {
            let ev = self.next().await?;
            if ev["type"] != "BOOKMARK" {
                return Some(ev);
            }
        }
    }

    /// (type, name) of the next `n` non-bookmark events.
    pub async fn take(&mut self, n: usize) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for _ in 0..n {
            let ev = self.next_event().await.expect("stream ended early");
            out.push((
                ev["type"].as_str().unwrap_or_default().to_owned(),
                ev["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            ));
        }
        out
    }
}
