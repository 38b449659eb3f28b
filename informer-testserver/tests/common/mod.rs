//! Helpers shared by the integration tests (each test starts its own server).
#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, Pod, PodSpec, Container};
use kube::CustomResource;
use kube::api::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A test custom resource (`widgets.example.com/v1`, namespaced, status subresource).
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
#[kube(group = "example.com", version = "v1", kind = "Widget", namespaced, status = "WidgetStatus", schema = "disabled")]
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
            labels: Some(labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>()),
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
            containers: vec![Container { name: "c".into(), image: Some("nginx:1.27".into()), ..Container::default() }],
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
