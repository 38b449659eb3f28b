//! Real kube-apiserver protobuf (informer-envtest): GET, LIST, WATCH and an error answer of
//! built-in kinds, read with informer-proto, equal to the same server's JSON (T1, T2). Skipped
//! with a loud message where the server cannot be built (see `skip_unless_available`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use http_body_util::BodyExt as _;
use informer_envtest::{Options, shared, skip_unless_available};
use informer_proto::frame::{self, Envelope, List, WatchEvent, WatchFrame};
use informer_proto::{for_kind, from_slice};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::Api;
use kube::api::PostParams;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

async fn get(client: &kube::Client, path: &str, accept: &str) -> (u16, Vec<u8>) {
    let req = http::Request::get(path)
        .header(http::header::ACCEPT, accept)
        .body(kube::client::Body::from(Vec::new()))
        .unwrap();
    let resp = client.send(req).await.expect("request");
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.expect("body").to_bytes();
    (status, body.to_vec())
}

async fn create<K>(client: &kube::Client, namespace: &str, object: Value)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + DeserializeOwned
        + serde::Serialize
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    let api: Api<K> = Api::namespaced(client.clone(), namespace);
    let object: K = serde_json::from_value(object).unwrap();
    api.create(&PostParams::default(), &object)
        .await
        .expect("create");
}

/// The object at `path` as protobuf and as JSON: equal as `T` and as a JSON value.
async fn same_object<T: DeserializeOwned + PartialEq + std::fmt::Debug>(
    client: &kube::Client,
    path: &str,
) {
    // Controllers may write between the two reads (a CRD's status): read until both are of one
    // resourceVersion.
    let (pb, json, ours, theirs) = loop {
        let (status, pb) = get(client, path, PROTOBUF).await;
        assert_eq!(status, 200, "{path}");
        let (_, json) = get(client, path, "application/json").await;
        let env = Envelope::read(&pb).expect("envelope");
        let ours: Value = serde::Deserialize::deserialize(env.deserializer().unwrap()).unwrap();
        let theirs: Value = serde_json::from_slice(&json).unwrap();
        let rv = |v: &Value| v["metadata"]["resourceVersion"].clone();
        if rv(&ours) == rv(&theirs) {
            break (pb, json, ours, theirs);
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    let env = Envelope::read(&pb).expect("envelope");
    assert_eq!(ours, theirs, "{path}");
    let typed: T = serde::Deserialize::deserialize(env.deserializer().unwrap()).unwrap();
    assert_eq!(typed, serde_json::from_slice::<T>(&json).unwrap(), "{path}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kube_apiserver_protobuf_reads_like_its_json() {
    let Some(env) = skip_unless_available("informer-proto", shared(Options::default()).await)
    else {
        return;
    };
    let client = env.client().await.expect("client");
    let ns = "proto-t2";
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let _ = namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap(),
        )
        .await;
    create::<ConfigMap>(
        &client,
        ns,
        json!({"metadata": {"name": "cm", "labels": {"a": "b"}},
               "data": {"k": "v", "empty": ""}, "binaryData": {"bin": "AAEC"}}),
    )
    .await;
    let pod_spec = json!({
        "containers": [{
            "name": "web", "image": "nginx:1.27",
            "ports": [{"containerPort": 80, "name": "http"}],
            "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
            "readinessProbe": {"httpGet": {"port": "http", "path": "/"}, "periodSeconds": 5},
            "env": [{"name": "A", "value": ""}]
        }],
        "terminationGracePeriodSeconds": 0
    });
    create::<Pod>(
        &client,
        ns,
        json!({"metadata": {"name": "web"}, "spec": pod_spec}),
    )
    .await;
    create::<Deployment>(
        &client,
        ns,
        json!({"metadata": {"name": "web"},
               "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec}}}),
    )
    .await;
    create::<Service>(
        &client,
        ns,
        json!({"metadata": {"name": "web"},
               "spec": {"selector": {"app": "web"},
                        "ports": [{"name": "h", "port": 80, "targetPort": "http"}, {"name": "m", "port": 9090, "targetPort": 9090}]}}),
    )
    .await;

    // MicroTime and Duration-free coordination, and a CRD with every schema union.
    create::<Lease>(
        &client,
        ns,
        json!({"metadata": {"name": "l"},
               "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                        "acquireTime": "2024-01-02T03:04:05.123456Z", "renewTime": "2024-01-02T03:04:06.000001Z",
                        "leaseTransitions": 0}}),
    )
    .await;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd = json!({
        "metadata": {"name": "widgets.proto.example.com"},
        "spec": {"group": "proto.example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                     "type": "object",
                     "properties": {
                         "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                                  "properties": {
                                      "list": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
                                      "closed": {"type": "object", "additionalProperties": {"type": "integer"}},
                                      "num": {"type": "number", "maximum": 5, "minimum": 1.5},
                                      "pick": {"type": "string", "enum": ["a", "b"], "default": "a"}
                                  }}
                     }}}}]}
    });
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(crd).unwrap(),
    )
    .await
    .expect("crd");
    // A new CRD's status has no conditions (JSON `null`, protobuf: nothing) until the
    // apiextensions controllers set them a moment later; compare the settled object.
    let established = async {
        loop {
            let crd = crds
                .get("widgets.proto.example.com")
                .await
                .expect("get crd");
            let conditions = crd.status.and_then(|s| s.conditions).unwrap_or_default();
            if conditions
                .iter()
                .any(|c| c.type_ == "Established" && c.status == "True")
            {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), established)
        .await
        .expect("the CRD is Established");
    same_object::<CustomResourceDefinition>(
        &client,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.proto.example.com",
    )
    .await;
    same_object::<Lease>(
        &client,
        &format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/l"),
    )
    .await;
    same_object::<Namespace>(&client, &format!("/api/v1/namespaces/{ns}")).await;
    same_object::<ConfigMap>(&client, &format!("/api/v1/namespaces/{ns}/configmaps/cm")).await;
    same_object::<Pod>(&client, &format!("/api/v1/namespaces/{ns}/pods/web")).await;
    same_object::<Deployment>(
        &client,
        &format!("/apis/apps/v1/namespaces/{ns}/deployments/web"),
    )
    .await;
    same_object::<Service>(&client, &format!("/api/v1/namespaces/{ns}/services/web")).await;

    // LIST: the envelope holds a PodList; its items are walked without decoding.
    let list_path = format!("/api/v1/namespaces/{ns}/pods");
    let (status, pb) = get(&client, &list_path, PROTOBUF).await;
    assert_eq!(status, 200);
    let (_, json) = get(&client, &list_path, "application/json").await;
    let json: Value = serde_json::from_slice(&json).unwrap();
    let env = Envelope::read(&pb).unwrap();
    assert_eq!((env.api_version, env.kind), ("v1", "PodList"));
    let list = List::read(env.raw).unwrap();
    assert!(!list.meta.resource_version.is_empty());
    let items: Vec<Value> = list
        .items()
        .map(|r| {
            let item = &list.raw()[r.unwrap()];
            assert_eq!(frame::probe_meta(item).unwrap().name, "web");
            from_slice(for_kind("v1", "Pod").unwrap(), item).unwrap()
        })
        .collect();
    assert_eq!(Value::from(items), json["items"]);

    // WATCH from resourceVersion 0: length-prefixed WatchEvents whose objects are enveloped.
    let watch_path = format!(
        "/apis/apps/v1/namespaces/{ns}/deployments?watch=1&resourceVersion=0&timeoutSeconds=1"
    );
    let (status, stream) = get(&client, &watch_path, PROTOBUF).await;
    assert_eq!(status, 200);
    let mut rest = &stream[..];
    let mut events = Vec::new();
    while !rest.is_empty() {
        let WatchFrame::Frame { event, consumed } =
            frame::read_watch_frame(rest, 16 << 20).unwrap()
        else {
            panic!("the stream ends inside a frame");
        };
        let ev = WatchEvent::read(event).unwrap();
        let obj: Deployment =
            serde::Deserialize::deserialize(ev.envelope().unwrap().deserializer().unwrap())
                .unwrap();
        events.push((
            ev.event_type.to_owned(),
            obj.metadata.name.unwrap_or_default(),
        ));
        rest = &rest[consumed..];
    }
    assert_eq!(events, [("ADDED".to_owned(), "web".to_owned())]);

    // An error answer in protobuf is an enveloped Status.
    let (status, pb) = get(
        &client,
        &format!("/api/v1/namespaces/{ns}/pods/missing"),
        PROTOBUF,
    )
    .await;
    assert_eq!(status, 404);
    let s = frame::read_status(&pb).unwrap();
    assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
}
