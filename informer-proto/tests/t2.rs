//! T2 (`docs/behaviour.md` section 18): decoding the protobuf and the JSON of one object into a
//! cached form gives equal values, for k8s-openapi types, a compact type (informer-gen's compact
//! `Pod`) and a projection (the benchmark's `PodView`).
//!
//! The corpus: kubectl's protobuf bodies captured by informer-testserver, the benchmark's
//! realistic Pods, and random ConfigMaps, Pods, Deployments and Services. Each object's JSON is
//! first put in the form Go's JSON encoder prints for it ([`go_json`]): that is what
//! kube-apiserver serves, and the only form protobuf can reproduce (an empty list and an absent
//! one are the same nothing on the wire). Then it is encoded to protobuf with informer-testserver's
//! encoder and decoded back with [`informer_proto::from_slice`].
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Debug;

use informer_benches::CompactPod;
use informer_benches::podset::PodSet;
use informer_benches::projection::PodView;
use informer_proto::frame::Envelope;
use informer_proto::schema::{Field, Label, Message, Shape, Ty, message};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, Service};
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// A JSON key of `msg`, looking into inline fields.
fn field_of(msg: &'static Message, key: &str) -> Option<&'static Field> {
    msg.by_json(key).or_else(|| {
        msg.fields.iter().find_map(|f| match (f.label, f.ty) {
            (Label::Inline, Ty::Message(idx)) => field_of(message(idx), key),
            _ => None,
        })
    })
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(b) => !b,
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// Calls `visit` on every object message of `v` (`msg` at the top), outermost first.
fn walk(
    msg: &'static Message,
    v: &mut Value,
    visit: &mut dyn FnMut(&'static Message, &mut Map<String, Value>),
) {
    let Value::Object(map) = v else { return };
    if msg.shape != Shape::Object {
        return;
    }
    visit(msg, map);
    for (k, val) in map.iter_mut() {
        let Some(Field {
            ty: Ty::Message(idx),
            label,
            ..
        }) = field_of(msg, k)
        else {
            continue;
        };
        let sub = message(*idx);
        match (label, val) {
            (Label::Repeated, Value::Array(items)) => {
                items.iter_mut().for_each(|i| walk(sub, i, visit));
            }
            (Label::Map, Value::Object(m)) => m.values_mut().for_each(|i| walk(sub, i, visit)),
            (_, val) => walk(sub, val, visit),
        }
    }
}

/// `v` as Go's JSON encoder prints the object it decodes to: no nulls, no empty lists or maps
/// (a nil slice or map), no zero values of `omitempty` non-pointer fields.
fn go_json(msg: &'static Message, v: &mut Value) {
    walk(msg, v, &mut |msg, map| {
        map.retain(|k, val| {
            let Some(f) = field_of(msg, k) else {
                return true;
            };
            match f.label {
                _ if val.is_null() => false,
                Label::Repeated => val.as_array().is_none_or(|a| !a.is_empty()),
                Label::Map => val.as_object().is_none_or(|m| !m.is_empty()),
                Label::Single => !(f.omit_zero && is_zero(val)),
                Label::Inline => true,
            }
        });
    });
}

/// `v` with the zero of every absent `omit_zero` scalar field filled in: what gogo-protobuf
/// writes for a Go object (every non-pointer field, zero or not), which the decoder must read as
/// absent again.
fn gogo_zeros(msg: &'static Message, v: &mut Value) {
    walk(msg, v, &mut fill);
}

fn fill(msg: &'static Message, map: &mut Map<String, Value>) {
    for f in msg.fields {
        let zero = match (f.label, f.ty) {
            (Label::Inline, Ty::Message(idx)) => {
                fill(message(idx), map);
                continue;
            }
            (Label::Single, _) if !f.omit_zero => continue,
            (Label::Single, Ty::String | Ty::Bytes) => json!(""),
            (Label::Single, Ty::Int32 | Ty::Int64 | Ty::Double) => json!(0),
            (Label::Single, Ty::Bool) => json!(false),
            _ => continue,
        };
        map.entry(f.json).or_insert(zero);
    }
}

/// The object's protobuf body, from its (Go-form) JSON.
fn protobuf(object: &Value) -> Vec<u8> {
    informer_testserver::encode_protobuf(object).unwrap_or_else(|e| panic!("{e}: {object:#}"))
}

/// Decodes `T` from the protobuf body and from the JSON, with and without the envelope's type
/// meta, and returns both.
fn both<T: DeserializeOwned>(body: &[u8], json: &Value) -> (T, T) {
    let env = Envelope::read(body).unwrap();
    let ours: T = informer_proto::from_slice(env.message().unwrap(), env.raw)
        .unwrap_or_else(|e| panic!("{e}: {json:#}"));
    let theirs: T = serde_json::from_value(json.clone()).unwrap_or_else(|e| panic!("{e}"));
    (ours, theirs)
}

fn assert_same<T: DeserializeOwned + PartialEq + Debug>(body: &[u8], json: &Value) {
    let (ours, theirs) = both::<T>(body, json);
    assert_eq!(ours, theirs);
}

/// For types without `PartialEq` (projections).
fn assert_same_debug<T: DeserializeOwned + Debug>(body: &[u8], json: &Value) {
    let (ours, theirs) = both::<T>(body, json);
    assert_eq!(format!("{ours:?}"), format!("{theirs:?}"));
}

/// The JSON value itself: the strictest check (every key, every number's kind).
fn assert_same_value(body: &[u8], json: &Value) {
    let env = Envelope::read(body).unwrap();
    let ours = Value::deserialize_from(&env);
    assert_eq!(&ours, json);
}

trait FromEnvelope {
    fn deserialize_from(env: &Envelope<'_>) -> Self;
}

impl FromEnvelope for Value {
    fn deserialize_from(env: &Envelope<'_>) -> Self {
        serde::Deserialize::deserialize(env.deserializer().unwrap()).unwrap()
    }
}

/// Puts `object` in Go's form, encodes it and checks every cached form of its kind.
fn check(mut object: Value) {
    let api_version = object["apiVersion"].as_str().unwrap().to_owned();
    let kind = object["kind"].as_str().unwrap().to_owned();
    let msg = informer_proto::for_kind(&api_version, &kind).unwrap();
    go_json(msg, &mut object);
    let mut gogo = object.clone();
    gogo_zeros(msg, &mut gogo);
    let body = protobuf(&gogo);
    assert_same_value(&body, &object);
    match kind.as_str() {
        "Pod" => {
            assert_same::<Pod>(&body, &object);
            assert_same::<CompactPod>(&body, &object);
            assert_same_debug::<PodView>(&body, &object);
        }
        "ConfigMap" => assert_same::<ConfigMap>(&body, &object),
        "Deployment" => assert_same::<Deployment>(&body, &object),
        "Service" => assert_same::<Service>(&body, &object),
        "Secret" => assert_same::<Secret>(&body, &object),
        "Namespace" => assert_same::<Namespace>(&body, &object),
        other => panic!("no typed check for {other}"),
    }
}

#[test]
fn kubectl_bodies() {
    for body in [
        &include_bytes!(
            "../../informer-testserver/src/protobuf/testdata/kubectl-create-namespace.pb"
        )[..],
        &include_bytes!(
            "../../informer-testserver/src/protobuf/testdata/kubectl-create-configmap.pb"
        )[..],
        &include_bytes!(
            "../../informer-testserver/src/protobuf/testdata/kubectl-create-secret-generic.pb"
        )[..],
        &include_bytes!(
            "../../informer-testserver/src/protobuf/testdata/kubectl-create-deployment.pb"
        )[..],
    ] {
        // kubectl's own bytes (gogo-written: every non-pointer field on the wire) against the JSON
        // informer-testserver makes of them.
        let json = informer_testserver::decode_protobuf(body).unwrap();
        let env = Envelope::read(body).unwrap();
        let ours = Value::deserialize_from(&env);
        assert_eq!(ours, json, "{}", env.kind);
        match env.kind {
            "Namespace" => assert_same::<Namespace>(body, &json),
            "ConfigMap" => assert_same::<ConfigMap>(body, &json),
            "Secret" => assert_same::<Secret>(body, &json),
            "Deployment" => assert_same::<Deployment>(body, &json),
            other => panic!("{other}"),
        }
        check(json);
    }
}

#[test]
fn benchmark_pods() {
    let set = PodSet::distinct(64, 5);
    for i in 0..set.n {
        check(set.pod_json(i));
    }
}

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9-]{0,12}"
}

fn text() -> impl Strategy<Value = String> {
    // Empty strings too, and some non-ASCII.
    prop_oneof![Just(String::new()), "[a-zA-Z0-9 ./_-]{1,16}", "[ä-ü]{1,3}"]
}

fn labels() -> impl Strategy<Value = Map<String, Value>> {
    prop::collection::btree_map(name(), text(), 0..4)
        .prop_map(|m| m.into_iter().map(|(k, v)| (k, Value::from(v))).collect())
}

fn time() -> impl Strategy<Value = String> {
    (0i64..4_000_000_000).prop_map(|s| {
        informer_proto::time::format_time(s, 0, false)
            .unwrap()
            .as_str()
            .to_owned()
    })
}

fn metadata(namespaced: bool) -> impl Strategy<Value = Value> {
    (
        name(),
        labels(),
        labels(),
        prop::option::of(0i64..1000),
        prop::option::of(time()),
        prop::collection::vec(name(), 0..2),
    )
        .prop_map(move |(name, labels, annotations, generation, created, finalizers)| {
            let mut m = json!({"name": name, "uid": format!("uid-{name}"), "resourceVersion": "12",
                               "labels": labels, "annotations": annotations, "finalizers": finalizers});
            if namespaced {
                m["namespace"] = json!("ns");
            }
            if let Some(g) = generation {
                m["generation"] = json!(g);
            }
            if let Some(t) = created {
                m["creationTimestamp"] = json!(t);
            }
            m
        })
}

fn quantity() -> impl Strategy<Value = Value> {
    prop::sample::select(vec!["100m", "1", "2Gi", "512Mi", "0", "1.5", "1e3"]).prop_map(Value::from)
}

fn int_or_string() -> impl Strategy<Value = Value> {
    prop_oneof![
        (0i32..65535).prop_map(Value::from),
        prop::sample::select(vec!["http", "25%", "metrics"]).prop_map(Value::from),
    ]
}

fn container() -> impl Strategy<Value = Value> {
    (
        name(),
        prop::option::of(text()),
        prop::collection::vec((0i32..65536, prop::option::of(name())), 0..3),
        prop::collection::btree_map(prop::sample::select(vec!["cpu", "memory"]), quantity(), 0..3),
        prop::collection::vec((name(), text()), 0..3),
        prop::option::of(any::<bool>()),
        prop::option::of((int_or_string(), 0i32..30)),
    )
        .prop_map(|(name, image, ports, limits, env, tty, probe)| {
            let mut c = json!({
                "name": name,
                "ports": ports.into_iter().map(|(p, n)| json!({"containerPort": p, "name": n})).collect::<Vec<_>>(),
                "resources": {"limits": limits, "requests": {}},
                "env": env.into_iter().map(|(k, v)| json!({"name": k, "value": v})).collect::<Vec<_>>(),
                "args": [],
            });
            if let Some(i) = image {
                c["image"] = json!(i);
            }
            if let Some(t) = tty {
                c["tty"] = json!(t);
            }
            if let Some((port, delay)) = probe {
                c["readinessProbe"] = json!({"httpGet": {"port": port, "path": "/healthz"},
                                             "initialDelaySeconds": delay, "periodSeconds": 10});
            }
            c
        })
}

fn pod_spec() -> impl Strategy<Value = Value> {
    (
        prop::collection::vec(container(), 1..3),
        prop::option::of(name()),
        prop::option::of(prop::sample::select(vec!["Always", "Never", ""])),
        prop::option::of(any::<bool>()),
        prop::option::of(-10i32..1_000_000),
        prop::option::of(0i64..300),
    )
        .prop_map(
            |(containers, node, restart, host_network, priority, grace)| {
                let mut s = json!({"containers": containers});
                if let Some(n) = node {
                    s["nodeName"] = json!(n);
                }
                if let Some(r) = restart {
                    s["restartPolicy"] = json!(r);
                }
                if let Some(h) = host_network {
                    s["hostNetwork"] = json!(h);
                }
                if let Some(p) = priority {
                    s["priority"] = json!(p);
                }
                if let Some(g) = grace {
                    s["terminationGracePeriodSeconds"] = json!(g);
                }
                s
            },
        )
}

fn pod() -> impl Strategy<Value = Value> {
    (
        metadata(true),
        pod_spec(),
        prop::option::of(prop::sample::select(vec!["Pending", "Running", "Failed"])),
        prop::collection::vec((name(), prop::sample::select(vec!["True", "False"]), time()), 0..3),
        prop::collection::vec((name(), 0i32..5, any::<bool>()), 0..2),
    )
        .prop_map(|(metadata, spec, phase, conditions, statuses)| {
            json!({
                "apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec,
                "status": {
                    "phase": phase,
                    "conditions": conditions.into_iter().map(|(t, s, at)| json!({
                        "type": t, "status": s, "lastTransitionTime": at})).collect::<Vec<_>>(),
                    "containerStatuses": statuses.into_iter().map(|(n, restarts, ready)| json!({
                        "name": n, "restartCount": restarts, "ready": ready, "image": "i", "imageID": "",
                        "state": {"running": {"startedAt": "2024-01-02T03:04:05Z"}}})).collect::<Vec<_>>(),
                }
            })
        })
}

fn config_map() -> impl Strategy<Value = Value> {
    (
        metadata(true),
        labels(),
        prop::collection::btree_map(name(), prop::collection::vec(any::<u8>(), 0..12), 0..3),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(metadata, data, binary, immutable)| {
            use base64::Engine as _;
            let binary: Map<String, Value> = binary
                .into_iter()
                .map(|(k, v)| {
                    (
                        k,
                        Value::from(base64::engine::general_purpose::STANDARD.encode(v)),
                    )
                })
                .collect();
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata,
                   "data": data, "binaryData": binary, "immutable": immutable})
        })
}

fn deployment() -> impl Strategy<Value = Value> {
    (
        metadata(true),
        prop::option::of(0i32..5),
        labels(),
        pod_spec(),
        prop::option::of((int_or_string(), int_or_string())),
        (0i32..5, 0i32..5, 0i64..9),
    )
        .prop_map(|(metadata, replicas, selector, spec, rolling, (ready, updated, observed))| {
            let mut d = json!({
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": metadata,
                "spec": {"replicas": replicas, "selector": {"matchLabels": selector},
                         "template": {"metadata": {"labels": selector}, "spec": spec}},
                "status": {"readyReplicas": ready, "updatedReplicas": updated, "observedGeneration": observed,
                           "conditions": [{"type": "Available", "status": "True",
                                           "lastUpdateTime": "2024-01-02T03:04:05Z",
                                           "lastTransitionTime": "2024-01-02T03:04:05Z"}]}
            });
            if let Some((surge, unavailable)) = rolling {
                d["spec"]["strategy"] = json!({"type": "RollingUpdate",
                    "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}});
            }
            d
        })
}

fn service() -> impl Strategy<Value = Value> {
    (
        metadata(true),
        prop::collection::vec((1i32..65536, int_or_string(), prop::option::of(30000i32..32767)), 0..3),
        prop::option::of(prop::sample::select(vec!["ClusterIP", "NodePort", "LoadBalancer"])),
        labels(),
        prop::option::of(0i32..86400),
    )
        .prop_map(|(metadata, ports, ty, selector, affinity)| {
            let mut s = json!({
                "apiVersion": "v1", "kind": "Service", "metadata": metadata,
                "spec": {
                    "ports": ports.into_iter().enumerate().map(|(i, (port, target, node))| json!({
                        "name": format!("p{i}"), "port": port, "targetPort": target, "nodePort": node,
                        "protocol": "TCP"})).collect::<Vec<_>>(),
                    "type": ty, "selector": selector, "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"],
                },
                "status": {"loadBalancer": {}}
            });
            if let Some(t) = affinity {
                s["spec"]["sessionAffinity"] = json!("ClientIP");
                s["spec"]["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": t}});
            }
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_pods(p in pod()) {
        check(p);
    }

    #[test]
    fn random_config_maps(c in config_map()) {
        check(c);
    }

    #[test]
    fn random_deployments(d in deployment()) {
        check(d);
    }

    #[test]
    fn random_services(s in service()) {
        check(s);
    }
}
