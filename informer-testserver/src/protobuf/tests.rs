//! Tests of the protobuf transcoder: bytes kubectl sent (captured through the server), messages
//! encoded by prost from k8s-pb's types, every field of common kinds checked against
//! k8s-openapi's serde, round trips, and malformed input.

use k8s_pb::api::apps::v1 as pb_apps;
use k8s_pb::api::core::v1 as pb_core;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message as _;
use serde_json::{Value, json};

use super::schema::{KindEntry, Label, Shape, Ty, message};
use super::wire::{FIXED64, VARINT, put_key, put_len, put_varint};
use super::{Error, Schema, decode_object, encode_object};
use informer_proto::Error as P;

/// `k8s\0` + `runtime.Unknown`, built with k8s-pb's own types.
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
    let mut out = super::MAGIC.to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

fn fixture(name: &str) -> Value {
    let bytes = match name {
        "namespace" => &include_bytes!("testdata/kubectl-create-namespace.pb")[..],
        "configmap" => &include_bytes!("testdata/kubectl-create-configmap.pb")[..],
        "secret" => &include_bytes!("testdata/kubectl-create-secret-generic.pb")[..],
        _ => &include_bytes!("testdata/kubectl-create-deployment.pb")[..],
    };
    decode_object(bytes).expect("kubectl's bytes decode")
}

#[test]
fn kubectl_create_bodies_decode_to_the_json_kubectl_means() {
    // Captured from kubectl v1.32 (`kubectl create namespace cap`, `create configmap cfg
    // --from-literal=color=blue`, `create secret generic sec --from-literal=password=hunter2`,
    // `create deployment web --image=nginx:1.27 --replicas=0 --port=80`) through the server.
    assert_eq!(
        fixture("namespace"),
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "cap"}, "spec": {}, "status": {}})
    );
    assert_eq!(
        fixture("configmap"),
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "cfg", "namespace": "cap"}, "data": {"color": "blue"}})
    );
    let secret = fixture("secret");
    assert_eq!(secret["kind"], "Secret");
    // Secret data is bytes on the wire and base64 in JSON.
    assert_eq!(secret["data"]["password"], "aHVudGVyMg==");
    assert!(
        secret.get("type").is_none(),
        "an empty type is unset: {secret}"
    );
    let deploy = fixture("deployment");
    assert_eq!(
        deploy,
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "web", "namespace": "cap", "labels": {"app": "web"}},
               // A pointer set to zero survives: replicas 0 is not "unset" (which means 1).
               "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "nginx", "image": "nginx:1.27",
                                                              "ports": [{"containerPort": 80}],
                                                              "resources": {}}]}},
                        "strategy": {}},
               "status": {}})
    );
    // What kubectl sent is a valid k8s-openapi Deployment with the same JSON.
    let typed: k8s_openapi::api::apps::v1::Deployment =
        serde_json::from_value(deploy.clone()).expect("k8s-openapi reads it");
    assert_eq!(serde_json::to_value(&typed).expect("json"), deploy);
}

#[test]
fn prost_encoded_deployment_decodes_with_special_types() {
    let quantity = |s: &str| Quantity {
        string: Some(s.into()),
    };
    let deploy = pb_apps::Deployment {
        metadata: Some(pb_meta::ObjectMeta {
            name: Some("api".into()),
            namespace: Some("prod".into()),
            generate_name: Some(String::new()),
            generation: Some(0),
            creation_timestamp: Some(pb_meta::Time {
                seconds: Some(1_700_000_000),
                nanos: Some(0),
            }),
            labels: [
                ("app".to_owned(), "api".to_owned()),
                ("empty".to_owned(), String::new()),
            ]
            .into(),
            ..Default::default()
        }),
        spec: Some(pb_apps::DeploymentSpec {
            replicas: Some(3),
            selector: Some(pb_meta::LabelSelector {
                match_labels: [("app".to_owned(), "api".to_owned())].into(),
                ..Default::default()
            }),
            strategy: Some(pb_apps::DeploymentStrategy {
                r#type: Some("RollingUpdate".into()),
                rolling_update: Some(pb_apps::RollingUpdateDeployment {
                    max_surge: Some(IntOrString {
                        r#type: Some(1),
                        int_val: Some(0),
                        str_val: Some("25%".into()),
                    }),
                    max_unavailable: Some(IntOrString {
                        r#type: Some(0),
                        int_val: Some(1),
                        str_val: Some(String::new()),
                    }),
                }),
            }),
            template: Some(pb_core::PodTemplateSpec {
                metadata: Some(pb_meta::ObjectMeta {
                    labels: [("app".to_owned(), "api".to_owned())].into(),
                    ..Default::default()
                }),
                spec: Some(pb_core::PodSpec {
                    automount_service_account_token: Some(false),
                    host_network: Some(false),
                    containers: vec![pb_core::Container {
                        name: Some("api".into()),
                        image: Some("api:1".into()),
                        args: vec!["--port".into(), String::new()],
                        resources: Some(pb_core::ResourceRequirements {
                            limits: [
                                ("cpu".to_owned(), quantity("500m")),
                                ("memory".to_owned(), quantity("128Mi")),
                            ]
                            .into(),
                            ..Default::default()
                        }),
                        env: vec![pb_core::EnvVar {
                            name: Some("COLOR".into()),
                            value: Some(String::new()),
                            value_from: Some(pb_core::EnvVarSource {
                                config_map_key_ref: Some(pb_core::ConfigMapKeySelector {
                                    // Embedded (inline) in Go: `name` sits beside `key` in JSON.
                                    local_object_reference: Some(pb_core::LocalObjectReference {
                                        name: Some("cfg".into()),
                                    }),
                                    key: Some("color".into()),
                                    optional: Some(false),
                                }),
                                ..Default::default()
                            }),
                        }],
                        readiness_probe: Some(pb_core::Probe {
                            handler: Some(pb_core::ProbeHandler {
                                http_get: Some(pb_core::HttpGetAction {
                                    path: Some("/healthz".into()),
                                    port: Some(IntOrString {
                                        r#type: Some(0),
                                        int_val: Some(8080),
                                        str_val: None,
                                    }),
                                    ..Default::default()
                                }),
                                ..Default::default()
                            }),
                            period_seconds: Some(0),
                            ..Default::default()
                        }),
                        ..Default::default()
                    }],
                    volumes: vec![pb_core::Volume {
                        name: Some("cfg".into()),
                        volume_source: Some(pb_core::VolumeSource {
                            config_map: Some(pb_core::ConfigMapVolumeSource {
                                local_object_reference: Some(pb_core::LocalObjectReference {
                                    name: Some("cfg".into()),
                                }),
                                default_mode: Some(0o644),
                                ..Default::default()
                            }),
                            ..Default::default()
                        }),
                    }],
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: None,
    };
    let got =
        decode_object(&envelope("apps/v1", "Deployment", deploy.encode_to_vec())).expect("decode");
    let want = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "api", "namespace": "prod", "creationTimestamp": "2023-11-14T22:13:20Z",
                     "labels": {"app": "api", "empty": ""}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "api"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "api"}},
                "spec": {
                    "automountServiceAccountToken": false,
                    "containers": [{
                        "name": "api", "image": "api:1", "args": ["--port", ""],
                        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}},
                        "env": [{"name": "COLOR", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "color", "optional": false}}}],
                        "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}},
                    }],
                    "volumes": [{"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 420}}],
                },
            },
        },
    });
    assert_eq!(got, want);
    // Back to protobuf and decoded by prost: the same message.
    let again = encode_object(&got, Schema::Built).expect("encode");
    let unknown = Unknown::decode(&again[4..]).expect("prost reads our envelope");
    assert_eq!(
        unknown.type_meta.and_then(|t| t.kind).as_deref(),
        Some("Deployment")
    );
    let back = pb_apps::Deployment::decode(unknown.raw.unwrap_or_default().as_slice())
        .expect("prost reads our message");
    let spec = back.spec.expect("spec");
    assert_eq!(spec.replicas, Some(3));
    let strategy = spec
        .strategy
        .and_then(|s| s.rolling_update)
        .expect("rolling update");
    assert_eq!(
        strategy.max_surge.and_then(|m| m.str_val).as_deref(),
        Some("25%")
    );
    let pod = spec.template.and_then(|t| t.spec).expect("pod spec");
    let cm = pod.volumes[0]
        .volume_source
        .as_ref()
        .and_then(|v| v.config_map.as_ref())
        .expect("configMap volume");
    assert_eq!(
        cm.local_object_reference
            .as_ref()
            .and_then(|l| l.name.as_deref()),
        Some("cfg")
    );
    assert_eq!(
        pod.containers[0]
            .resources
            .as_ref()
            .map(|r| r.limits["cpu"].string.clone()),
        Some(Some("500m".into()))
    );
}

#[test]
fn secrets_and_config_maps_carry_bytes_as_base64() {
    let secret = pb_core::Secret {
        metadata: Some(pb_meta::ObjectMeta {
            name: Some("s".into()),
            ..Default::default()
        }),
        data: [("bin".to_owned(), vec![0u8, 255, 10])].into(),
        r#type: Some("kubernetes.io/tls".into()),
        ..Default::default()
    };
    let got = decode_object(&envelope("v1", "Secret", secret.encode_to_vec())).expect("decode");
    assert_eq!(got["data"]["bin"], "AP8K");
    assert_eq!(got["type"], "kubernetes.io/tls");
    let cm = pb_core::ConfigMap {
        metadata: Some(pb_meta::ObjectMeta {
            name: Some("c".into()),
            ..Default::default()
        }),
        binary_data: [("b".to_owned(), b"hi".to_vec())].into(),
        immutable: Some(true),
        ..Default::default()
    };
    let got = decode_object(&envelope("v1", "ConfigMap", cm.encode_to_vec())).expect("decode");
    assert_eq!(got["binaryData"]["b"], "aGk=");
    assert_eq!(got["immutable"], true);
    assert_eq!(
        encode_object(&got, Schema::Built)
            .and_then(|b| decode_object(&b))
            .expect("round trip"),
        got
    );
}

#[test]
fn delete_options_decode_under_their_meta_message() {
    let opts = pb_meta::DeleteOptions {
        propagation_policy: Some("Foreground".into()),
        preconditions: Some(pb_meta::Preconditions {
            uid: Some("u-1".into()),
            resource_version: Some("7".into()),
        }),
        ..Default::default()
    };
    // Typed clients send DeleteOptions as `v1` (core) or `meta.k8s.io/v1`.
    for api_version in ["v1", "meta.k8s.io/v1", "apps/v1"] {
        let got = decode_object(&envelope(
            api_version,
            "DeleteOptions",
            opts.encode_to_vec(),
        ))
        .expect("decode");
        assert_eq!(
            got["preconditions"],
            json!({"uid": "u-1", "resourceVersion": "7"}),
            "{api_version}"
        );
        assert_eq!(got["propagationPolicy"], "Foreground");
    }
}

#[test]
fn malformed_bodies_are_errors_never_panics() {
    let pod = pb_core::Pod {
        metadata: Some(pb_meta::ObjectMeta {
            name: Some("p".into()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let good = envelope("v1", "Pod", pod.encode_to_vec());
    assert!(decode_object(&good).is_ok());
    assert_eq!(
        decode_object(b"{\"kind\":\"Pod\"}"),
        Err(Error::Proto(P::NoMagic))
    );
    assert_eq!(
        decode_object(&good[..good.len() - 1]),
        Err(Error::Proto(P::Truncated))
    );
    assert!(matches!(
        decode_object(&envelope("v1", "Frobnicator", vec![])),
        Err(Error::Proto(P::UnknownKind { .. }))
    ));
    // Field 99 of a Pod does not exist.
    let mut raw = pod.encode_to_vec();
    put_key(&mut raw, 99, VARINT);
    put_varint(&mut raw, 1);
    assert_eq!(
        decode_object(&envelope("v1", "Pod", raw)),
        Err(Error::Proto(P::UnknownField {
            message: "api.core.v1.Pod",
            tag: 99
        }))
    );
    // metadata (field 1) as a varint.
    let mut raw = Vec::new();
    put_key(&mut raw, 1, VARINT);
    put_varint(&mut raw, 5);
    assert!(matches!(
        decode_object(&envelope("v1", "Pod", raw)),
        Err(Error::Invalid(_))
    ));
    // Invalid UTF-8 in a name.
    let mut meta = Vec::new();
    put_len(&mut meta, 1, &[0xff, 0xfe]);
    let mut raw = Vec::new();
    put_len(&mut raw, 1, &meta);
    assert!(matches!(
        decode_object(&envelope("v1", "Pod", raw)),
        Err(Error::Invalid(_))
    ));
    // Pseudo-random garbage after the magic: any answer but a panic.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for len in 0..4000usize {
        let mut body = super::MAGIC.to_vec();
        for _ in 0..(len % 97) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            body.push(seed as u8);
        }
        let _ = decode_object(&body);
        let _ = decode_object(&envelope("apps/v1", "Deployment", body[4..].to_vec()));
    }
}

#[test]
fn responses_that_protobuf_cannot_carry_are_errors() {
    let v =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "surprise": 1});
    let err = encode_object(&v, Schema::Built).expect_err("unknown field");
    assert!(err.to_string().contains("surprise"), "{err}");
    let v = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert!(matches!(
        encode_object(&v, Schema::Built),
        Err(Error::Proto(P::UnknownKind { .. }))
    ));
    let v = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": 1}});
    assert!(
        encode_object(&v, Schema::Built).is_err(),
        "a number where a string belongs"
    );
}

/// T8: under a newer schema, fields the built schema lacks are sent past the message's own
/// numbers (nested ones too), and everything else is encoded as under the built schema.
#[test]
fn a_newer_schema_sends_unknown_fields_under_new_numbers() {
    let known = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"containers": [{"name": "c", "image": "i"}]}});
    let mut newer = known.clone();
    newer["spec"]["newerField"] = json!({"mode": "on", "count": 3, "list": [true, false]});
    newer["metadata"]["newerLabel"] = json!("x");
    assert!(encode_object(&newer, Schema::Built).is_err());
    let body = encode_object(&newer, Schema::Newer).expect("encodes");
    // The client's view: the same Pod, and the newer fields passed over and counted.
    let start = informer_proto::Skipped::start();
    let env = informer_proto::frame::Envelope::read(&body).expect("envelope");
    let read: serde_json::Value = informer_proto::from_slice(env.message().expect("kind"), env.raw)
        .expect("an older client reads it");
    let skipped = start.since();
    let mut want = known.clone();
    if let Some(o) = want.as_object_mut() {
        o.remove("apiVersion");
        o.remove("kind");
    }
    assert_eq!(read, want);
    assert_eq!(skipped.count, 2, "spec.newerField and metadata.newerLabel");
    let pod_spec = informer_proto::schema::by_name("api.core.v1.PodSpec").expect("PodSpec");
    let past = pod_spec.fields.iter().map(|f| f.tag).max().unwrap_or(0) + 1;
    // metadata (1) is read before spec (2): the last passed over is the spec's.
    assert_eq!(skipped.example, Some(("api.core.v1.PodSpec", past)));
    assert_eq!(
        encode_object(&known, Schema::Newer).expect("encodes"),
        encode_object(&known, Schema::Built).expect("encodes"),
        "an object of known fields only is encoded alike"
    );
}

// ---------------------------------------------------------------------------------------------
// Every field of a kind: synthesised from the schema with non-zero values, decoded, and compared
// with what k8s-openapi makes of the same JSON. A wrong JSON name, a missing inline flag or a
// wrong special shape shows up as a difference.

/// Wire bytes of `msg` with every field set (messages already open twice are left out, which
/// ends the recursion of JSONSchemaProps).
fn synth(idx: u16, stack: &mut Vec<u16>) -> Vec<u8> {
    let msg = message(idx);
    let mut out = Vec::new();
    match msg.shape {
        Shape::Quantity => put_len(&mut out, 1, b"1500m"),
        Shape::IntOrString => {
            put_key(&mut out, 1, VARINT);
            put_varint(&mut out, 0);
            put_key(&mut out, 2, VARINT);
            put_varint(&mut out, 7);
        }
        Shape::Time | Shape::MicroTime => {
            put_key(&mut out, 1, VARINT);
            put_varint(&mut out, 1_700_000_000);
            put_key(&mut out, 2, VARINT);
            put_varint(&mut out, 123_456_000);
        }
        Shape::Duration => {
            put_key(&mut out, 1, VARINT);
            put_varint(&mut out, 90_000_000_000);
        }
        Shape::RawJson => put_len(&mut out, 1, br#"{"a":[1,"x"]}"#),
        Shape::StringList => put_len(&mut out, 1, b"item"),
        Shape::SchemaOrArray | Shape::SchemaOrStringArray => {
            if let Some(Ty::Message(schema)) = msg.by_tag(1).map(|f| f.ty)
                && stack.iter().filter(|s| **s == schema).count() < 2
            {
                stack.push(schema);
                put_len(&mut out, 1, &synth(schema, stack));
                stack.pop();
            } else if msg.shape == Shape::SchemaOrStringArray {
                put_len(&mut out, 2, b"item");
            }
        }
        Shape::SchemaOrBool => {
            put_key(&mut out, 1, VARINT);
            put_varint(&mut out, 1);
        }
        Shape::Object => {
            for f in msg.fields {
                let value = |out: &mut Vec<u8>, tag: u32, stack: &mut Vec<u16>| {
                    synth_value(f.ty, tag, out, stack);
                };
                match f.label {
                    Label::Map => {
                        if let Ty::Message(m) = f.ty
                            && stack.iter().filter(|s| **s == m).count() >= 2
                        {
                            continue;
                        }
                        let mut entry = Vec::new();
                        put_len(&mut entry, 1, b"key");
                        value(&mut entry, 2, stack);
                        put_len(&mut out, f.tag, &entry);
                    }
                    _ => {
                        if let Ty::Message(m) = f.ty
                            && stack.iter().filter(|s| **s == m).count() >= 2
                        {
                            continue;
                        }
                        value(&mut out, f.tag, stack);
                    }
                }
            }
        }
    }
    out
}

fn synth_value(ty: Ty, tag: u32, out: &mut Vec<u8>, stack: &mut Vec<u16>) {
    match ty {
        Ty::String => put_len(out, tag, b"text"),
        Ty::Bytes => put_len(out, tag, &[1, 2, 3]),
        Ty::Int32 | Ty::Int64 => {
            put_key(out, tag, VARINT);
            put_varint(out, 3);
        }
        Ty::Bool => {
            put_key(out, tag, VARINT);
            put_varint(out, 1);
        }
        Ty::Double => {
            put_key(out, tag, FIXED64);
            out.extend_from_slice(&2.5f64.to_bits().to_le_bytes());
        }
        Ty::Message(m) => {
            stack.push(m);
            let bytes = synth(m, stack);
            stack.pop();
            put_len(out, tag, &bytes);
        }
    }
}

fn kind_entry(group: &str, version: &str, kind: &str) -> &'static KindEntry {
    informer_proto::schema::kinds()
        .iter()
        .find(|k| k.group == group && k.version == version && k.kind == kind)
        .unwrap_or_else(|| panic!("no {group}/{version} {kind} in the schema"))
}

/// Paths where `a` and `b` differ.
fn diff(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => diff(v, w, &format!("{path}.{k}"), out),
                    None => out.push(format!("{path}.{k}")),
                }
            }
            for k in y.keys().filter(|k| !x.contains_key(*k)) {
                out.push(format!("{path}.{k} (added)"));
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                diff(v, w, &format!("{path}[{i}]"), out);
            }
        }
        _ if a == b => {}
        _ => out.push(format!("{path}: {a} vs {b}")),
    }
}

fn full_object<K>() -> Value
where
    K: k8s_openapi::Resource + serde::Serialize + serde::de::DeserializeOwned,
{
    let entry = kind_entry(K::GROUP, K::VERSION, K::KIND);
    let raw = synth(entry.message, &mut vec![entry.message]);
    let ours = decode_object(&envelope(K::API_VERSION, K::KIND, raw)).expect("decode");
    // Every field survives our own encoder too.
    let again = encode_object(&ours, Schema::Built)
        .and_then(|b| decode_object(&b))
        .expect("round trip");
    assert_eq!(again, ours, "{} round trip", K::KIND);
    ours
}

fn check_against_openapi<K>()
where
    K: k8s_openapi::Resource + serde::Serialize + serde::de::DeserializeOwned,
{
    let ours = full_object::<K>();
    let typed: K = serde_json::from_value(ours.clone())
        .unwrap_or_else(|e| panic!("k8s-openapi rejects our {}: {e}", K::KIND));
    let theirs = serde_json::to_value(&typed).expect("json");
    let mut d = Vec::new();
    diff(&ours, &theirs, "", &mut d);
    // k8s-openapi writes apiVersion/kind into nested resources (a StatefulSet's
    // volumeClaimTemplates); protobuf, like Go's JSON, has no TypeMeta there.
    d.retain(|p| !(p.ends_with(".apiVersion (added)") || p.ends_with(".kind (added)")));
    assert!(
        d.is_empty(),
        "{} differs from k8s-openapi at {d:#?}",
        K::KIND
    );
}

#[test]
fn every_field_of_common_kinds_matches_k8s_openapi() {
    use k8s_openapi::api::{
        admissionregistration, apps, autoscaling, batch, coordination, core, discovery, networking,
        policy, rbac, storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
    check_against_openapi::<core::v1::Pod>();
    check_against_openapi::<core::v1::ConfigMap>();
    check_against_openapi::<core::v1::Secret>();
    check_against_openapi::<core::v1::Namespace>();
    check_against_openapi::<core::v1::Service>();
    check_against_openapi::<core::v1::ServiceAccount>();
    check_against_openapi::<core::v1::PersistentVolume>();
    check_against_openapi::<core::v1::PersistentVolumeClaim>();
    check_against_openapi::<core::v1::Node>();
    check_against_openapi::<core::v1::Endpoints>();
    check_against_openapi::<core::v1::Event>();
    check_against_openapi::<core::v1::ResourceQuota>();
    check_against_openapi::<core::v1::LimitRange>();
    check_against_openapi::<core::v1::ReplicationController>();
    check_against_openapi::<apps::v1::Deployment>();
    check_against_openapi::<apps::v1::StatefulSet>();
    check_against_openapi::<apps::v1::DaemonSet>();
    check_against_openapi::<apps::v1::ReplicaSet>();
    check_against_openapi::<batch::v1::Job>();
    check_against_openapi::<batch::v1::CronJob>();
    check_against_openapi::<autoscaling::v2::HorizontalPodAutoscaler>();
    check_against_openapi::<networking::v1::Ingress>();
    check_against_openapi::<networking::v1::NetworkPolicy>();
    check_against_openapi::<policy::v1::PodDisruptionBudget>();
    check_against_openapi::<rbac::v1::ClusterRole>();
    check_against_openapi::<rbac::v1::RoleBinding>();
    check_against_openapi::<storage::v1::StorageClass>();
    check_against_openapi::<coordination::v1::Lease>();
    check_against_openapi::<discovery::v1::EndpointSlice>();
    check_against_openapi::<admissionregistration::v1::ValidatingWebhookConfiguration>();
    check_against_openapi::<CustomResourceDefinition>();
    check_against_openapi::<APIService>();
}

#[test]
fn every_kind_round_trips_through_our_encoder() {
    for k in informer_proto::schema::kinds() {
        let raw = synth(k.message, &mut vec![k.message]);
        let api_version = if k.group.is_empty() {
            k.version.to_owned()
        } else {
            format!("{}/{}", k.group, k.version)
        };
        let ours = decode_object(&envelope(&api_version, k.kind, raw))
            .unwrap_or_else(|e| panic!("{api_version} {}: {e}", k.kind));
        let again = encode_object(&ours, Schema::Built)
            .and_then(|b| decode_object(&b))
            .unwrap_or_else(|e| panic!("{api_version} {}: {e}", k.kind));
        assert_eq!(again, ours, "{api_version} {}", k.kind);
    }
}
