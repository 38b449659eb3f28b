//! Every field shape of the deserializer, on bytes from k8s-pb's prost types (what gogo-protobuf
//! writes: every non-pointer field, zero or not) and from informer-testserver's encoder; plus
//! the framing helpers and malformed input.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use informer_proto::frame::{self, Envelope, List, WatchEvent, WatchFrame};
use informer_proto::schema::by_name;
use informer_proto::wire::{LEN, VARINT, put_key, put_len, put_varint};
use informer_proto::{Deserializer, Error, for_kind, from_slice};
use k8s_pb::api::apps::v1 as pb_apps;
use k8s_pb::api::core::v1 as pb_core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as pb_meta;
use prost::Message as _;
use serde::Deserialize;
use serde_json::{Value, json};

/// The object's JSON through informer-testserver's encoder, then back through the deserializer.
fn round_trip(object: &Value) -> Value {
    let body = informer_testserver::encode_protobuf(object).expect("encodes");
    let env = Envelope::read(&body).expect("envelope");
    Value::deserialize(env.deserializer().expect("kind")).expect("decodes")
}

fn assert_round_trips(object: Value) {
    assert_eq!(round_trip(&object), object);
}

fn value(api_version: &str, kind: &str, bytes: &[u8]) -> Result<Value, Error> {
    from_slice(for_kind(api_version, kind).expect("kind"), bytes)
}

#[test]
fn maps_bytes_and_bools() {
    assert_round_trips(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns", "labels": {"a": "1", "b": ""}},
        "data": {"color": "blue", "empty": ""},
        "binaryData": {"bin": "AAEC/w=="},
        "immutable": true
    }));
}

#[test]
fn zero_values_follow_the_go_struct_tags() {
    // What gogo writes for a Pod whose Go fields are all zero but for a few: every non-pointer
    // field is on the wire.
    let pod = pb_core::Pod {
        metadata: Some(pb_meta::ObjectMeta {
            name: Some("p".into()),
            generate_name: Some(String::new()),
            generation: Some(0),
            // gogo writes the zero time as an empty message.
            creation_timestamp: Some(pb_meta::Time::default()),
            ..Default::default()
        }),
        spec: Some(pb_core::PodSpec {
            host_network: Some(false),
            restart_policy: Some(String::new()),
            containers: vec![pb_core::Container {
                name: Some(String::new()),
                stdin: Some(false),
                ports: vec![pb_core::ContainerPort {
                    container_port: Some(0),
                    host_port: Some(0),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let v = value("v1", "Pod", &pod.encode_to_vec()).unwrap();
    assert_eq!(
        v,
        json!({
            // omitempty non-pointers and the omitzero time are gone.
            "metadata": {"name": "p"},
            "spec": {"containers": [{
                // No omitempty: Go prints the zero, and so do we.
                "name": "",
                "ports": [{"containerPort": 0}]
            }]}
        })
    );
    // A pointer set to zero is on the wire only because it was set.
    let deploy = pb_apps::Deployment {
        spec: Some(pb_apps::DeploymentSpec {
            replicas: Some(0),
            min_ready_seconds: Some(0),
            paused: Some(false),
            ..Default::default()
        }),
        ..Default::default()
    };
    let v = value("apps/v1", "Deployment", &deploy.encode_to_vec()).unwrap();
    assert_eq!(v, json!({"spec": {"replicas": 0}}));
    let pvc = pb_core::PersistentVolumeClaim {
        spec: Some(pb_core::PersistentVolumeClaimSpec {
            storage_class_name: Some(String::new()),
            ..Default::default()
        }),
        ..Default::default()
    };
    let v = value("v1", "PersistentVolumeClaim", &pvc.encode_to_vec()).unwrap();
    assert_eq!(v, json!({"spec": {"storageClassName": ""}}));
}

#[test]
fn quantities_int_or_strings_and_inline_fields() {
    assert_round_trips(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{
            "name": "c",
            "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
            "env": [{"name": "K", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}],
            "readinessProbe": {"httpGet": {"port": "http", "path": "/"}},
            "livenessProbe": {"tcpSocket": {"port": 8080}}
        }]}
    }));
    // An empty Quantity message is Go's zero Quantity, printed "0".
    let q = by_name("apimachinery.pkg.api.resource.Quantity").unwrap();
    assert_eq!(from_slice::<Value>(q, &[]).unwrap(), json!("0"));
    let mut empty = Vec::new();
    put_len(&mut empty, 1, b"");
    assert!(matches!(
        from_slice::<Value>(q, &empty),
        Err(Error::Invalid(_))
    ));
    // IntOrString of type int with no intVal is 0; negative numbers survive the varint.
    let ios = by_name("apimachinery.pkg.util.intstr.IntOrString").unwrap();
    let mut b = Vec::new();
    put_key(&mut b, 2, VARINT);
    put_varint(&mut b, (-5i64) as u64);
    assert_eq!(from_slice::<Value>(ios, &b).unwrap(), json!(-5));
    assert_eq!(from_slice::<Value>(ios, &[]).unwrap(), json!(0));
}

#[test]
fn times_micro_times_and_durations_print_like_go() {
    assert_round_trips(json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "e", "creationTimestamp": "2023-11-14T22:13:20Z"},
        "involvedObject": {},
        "eventTime": "2023-11-14T22:13:20.123456Z",
        "firstTimestamp": "1970-01-01T00:00:01Z"
    }));
    let t = by_name("apimachinery.pkg.apis.meta.v1.Time").unwrap();
    let time = pb_meta::Time {
        seconds: Some(1_700_000_000),
        nanos: Some(999_000_000),
    };
    // metav1.Time keeps seconds only, as Go's JSON does.
    assert_eq!(
        from_slice::<Value>(t, &time.encode_to_vec()).unwrap(),
        json!("2023-11-14T22:13:20Z")
    );
    // Seconds 0 is the epoch, not Go's zero time; MicroTime truncates to microseconds.
    let epoch = pb_meta::Time {
        seconds: Some(0),
        nanos: Some(0),
    };
    assert_eq!(
        from_slice::<Value>(t, &epoch.encode_to_vec()).unwrap(),
        json!("1970-01-01T00:00:00Z")
    );
    let mt = by_name("apimachinery.pkg.apis.meta.v1.MicroTime").unwrap();
    let micro = pb_meta::MicroTime {
        seconds: Some(1_700_000_000),
        nanos: Some(123_456_999),
    };
    assert_eq!(
        from_slice::<Value>(mt, &micro.encode_to_vec()).unwrap(),
        json!("2023-11-14T22:13:20.123456Z")
    );
    // Only the empty message is the zero time: Go's null, in a list or as an Option.
    assert_eq!(from_slice::<Value>(t, &[]).unwrap(), Value::Null);
    assert_eq!(from_slice::<Option<String>>(t, &[]).unwrap(), None);
    let d = by_name("apimachinery.pkg.apis.meta.v1.Duration").unwrap();
    let dur = pb_meta::Duration {
        duration: Some(5_400_000_000_000),
    };
    assert_eq!(
        from_slice::<Value>(d, &dur.encode_to_vec()).unwrap(),
        json!("1h30m0s")
    );
}

#[test]
fn raw_json_string_lists_and_schema_unions() {
    assert_round_trips(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "managedFields": [{
            "manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
            "time": "2023-11-14T22:13:20Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
        }]}
    }));
    assert_round_trips(json!({
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": "r"}, "revision": 3,
        "data": {"spec": {"template": {"x": [1, 2.5, null, "s"]}}}
    }));
    assert_round_trips(json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "csr"},
        "spec": {"request": "AAAA", "signerName": "s", "usages": ["digital signature"],
                 "extra": {"groups": ["a", "b"], "empty": []}}
    }));
    assert_round_trips(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                     "type": "object",
                     "x-kubernetes-preserve-unknown-fields": true,
                     "properties": {
                         "one": {"type": "array", "items": {"type": "string"}},
                         "many": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
                         "closed": {"type": "object", "additionalProperties": false},
                         "typed": {"type": "object", "additionalProperties": {"type": "string"}},
                         "num": {"type": "number", "maximum": 5, "minimum": 1.5, "default": {"a": 1}},
                         "dep": {"type": "object", "dependencies": {"a": ["b", "c"], "d": {"required": ["e"]}}}
                     }}}}]},
        "status": {"storedVersions": ["v1"], "acceptedNames": {"plural": "widgets", "kind": "Widget"}}
    }));
}

#[test]
fn typed_values_equal_their_json_decoding() {
    use k8s_openapi::api::core::v1::{Pod, Service};
    let svc = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "s", "namespace": "n", "uid": "u-1", "resourceVersion": "7"},
        "spec": {"ports": [{"port": 80, "targetPort": "http", "protocol": "TCP"},
                           {"port": 443, "targetPort": 8443}],
                 "selector": {"app": "web"}, "type": "ClusterIP"}
    });
    let body = informer_testserver::encode_protobuf(&svc).unwrap();
    let env = Envelope::read(&body).unwrap();
    let ours = Service::deserialize(env.deserializer().unwrap()).unwrap();
    assert_eq!(ours, serde_json::from_value::<Service>(svc).unwrap());
    // Without type meta too: k8s-openapi does not require apiVersion and kind.
    let bare: Pod = from_slice(for_kind("v1", "Pod").unwrap(), &[]).unwrap();
    assert_eq!(bare, Pod::default());
}

/// A form that reads a Pod's name and skips everything else.
#[derive(Deserialize)]
struct NameOnly {
    metadata: NameOnlyMeta,
}

#[derive(Deserialize)]
struct NameOnlyMeta {
    name: String,
}

#[test]
fn raw_json_that_is_not_utf8_is_an_error_naming_the_byte() {
    // A managedFields document with a key that is not UTF-8 (kube-apiserver never writes one).
    let pod = pb_core::Pod {
        metadata: Some(pb_meta::ObjectMeta {
            name: Some("p".into()),
            managed_fields: vec![pb_meta::ManagedFieldsEntry {
                manager: Some("m".into()),
                fields_v1: Some(pb_meta::FieldsV1 {
                    raw: Some(b"{\"f:\xff\":{}}".to_vec()),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let msg = for_kind("v1", "Pod").unwrap();
    let err = from_slice::<Value>(msg, &pod.encode_to_vec()).unwrap_err();
    assert!(
        matches!(&err, Error::Invalid(m) if m == "raw JSON is not valid UTF-8 (byte 4)"),
        "{err}"
    );
    // The k8s-openapi Pod reads the document through the same path: the same error.
    let typed = from_slice::<k8s_openapi::api::core::v1::Pod>(msg, &pod.encode_to_vec());
    assert_eq!(typed.unwrap_err().to_string(), err.to_string());
    // A form that skips managedFields never reads the document.
    let v: NameOnly = from_slice(msg, &pod.encode_to_vec()).unwrap();
    assert_eq!(v.metadata.name, "p");
}

#[test]
fn skipped_values_are_not_decoded() {
    // A spec whose string is not UTF-8: reading it fails, skipping it does not.
    let mut spec = Vec::new();
    put_len(&mut spec, 10, b"\xff\xfe"); // PodSpec.serviceAccountName
    let mut meta = Vec::new();
    put_len(&mut meta, 1, b"p");
    let mut pod = Vec::new();
    put_len(&mut pod, 1, &meta);
    put_len(&mut pod, 2, &spec);
    let msg = for_kind("v1", "Pod").unwrap();
    let v: NameOnly = from_slice(msg, &pod).unwrap();
    assert_eq!(v.metadata.name, "p");
    assert!(matches!(
        from_slice::<Value>(msg, &pod),
        Err(Error::Invalid(_))
    ));
}

/// T8: a newer server's fields (numbers this table lacks, of every wire type, at the top, inside
/// a nested message, in a repeated element, inside an inline field's message, in a special-shaped
/// message, in the framing) are passed over and counted, and everything else reads as before.
#[test]
fn fields_of_a_newer_schema_are_passed_over_and_counted() {
    let newer = |out: &mut Vec<u8>| {
        put_len(out, 4001, b"a newer string");
        put_key(out, 4002, VARINT);
        put_varint(out, 7);
        let mut nested = Vec::new();
        put_len(&mut nested, 1, b"a newer message");
        put_len(out, 4003, &nested);
    };
    let object = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "1"}},
        "spec": {
            "containers": [
                {"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}}},
                {"name": "d", "image": "j"}
            ],
            "nodeName": "n"
        },
        "status": {"phase": "Running", "startTime": "2026-01-02T03:04:05Z"}
    });
    let body = informer_testserver::encode_protobuf(&object).expect("encodes");
    let env = Envelope::read(&body).expect("envelope");
    let plain: Value = from_slice(env.message().unwrap(), env.raw).unwrap();
    // The same Pod with newer fields in the Pod, its metadata, its spec, the first container
    // and that container's resources, and in its status' startTime (a Time: a special shape).
    let pod = pb_core::Pod::decode(env.raw).unwrap();
    let mut with = Vec::new();
    let mut meta = pod.metadata.clone().unwrap().encode_to_vec();
    newer(&mut meta);
    put_len(&mut with, 1, &meta);
    let mut spec_msg = pod.spec.clone().unwrap();
    let first = spec_msg.containers.remove(0);
    let mut spec = Vec::new();
    let mut container = pb_core::Container {
        resources: None,
        ..first.clone()
    }
    .encode_to_vec();
    let mut resources = first.resources.clone().unwrap().encode_to_vec();
    newer(&mut resources);
    put_len(&mut container, 8, &resources); // Container.resources
    newer(&mut container);
    put_len(&mut spec, 2, &container); // PodSpec.containers, first element
    spec.extend(spec_msg.encode_to_vec());
    newer(&mut spec);
    put_len(&mut with, 2, &spec);
    let mut status_msg = pod.status.clone().unwrap();
    let start = status_msg.start_time.take().unwrap();
    let mut status = status_msg.encode_to_vec();
    let mut time = start.encode_to_vec();
    newer(&mut time);
    put_len(&mut status, 7, &time); // PodStatus.startTime
    put_len(&mut with, 3, &status);
    newer(&mut with);

    let msg = for_kind("v1", "Pod").unwrap();
    let counted = informer_proto::Skipped::start();
    let read: Value = from_slice(msg, &with).unwrap();
    let skipped = counted.since();
    assert_eq!(read, plain);
    assert_eq!(
        skipped.count,
        6 * 3,
        "three newer fields in each of six messages"
    );
    assert!(skipped.example.is_some_and(|(_, tag)| tag >= 4001));
    // The k8s-openapi Pod reads the same values.
    let typed: k8s_openapi::api::core::v1::Pod = from_slice(msg, &with).unwrap();
    assert_eq!(
        serde_json::to_value(&typed).unwrap()["spec"],
        object["spec"]
    );
    // Nothing skipped, nothing counted.
    let none = informer_proto::Skipped::start();
    let _: Value = from_slice(msg, env.raw).unwrap();
    assert_eq!(none.since(), informer_proto::SkippedFields::default());

    // The framing: a newer field in the list's ListMeta and in the list itself, in a watch
    // event and in its RawExtension, in the envelope and its typeMeta.
    let mut list_meta = Vec::new();
    put_len(&mut list_meta, 2, b"42");
    newer(&mut list_meta);
    let mut list = Vec::new();
    put_len(&mut list, 1, &list_meta);
    put_len(&mut list, 2, &with);
    newer(&mut list);
    let read = List::read(&list).unwrap();
    assert_eq!(read.meta.resource_version, "42");
    assert_eq!(read.items().count(), 1);
    let mut type_meta = Vec::new();
    put_len(&mut type_meta, 1, b"v1");
    put_len(&mut type_meta, 2, b"Pod");
    newer(&mut type_meta);
    let mut enveloped = informer_proto::MAGIC.to_vec();
    put_len(&mut enveloped, 1, &type_meta);
    put_len(&mut enveloped, 2, &with);
    newer(&mut enveloped);
    let mut ext = Vec::new();
    put_len(&mut ext, 1, &enveloped);
    newer(&mut ext);
    let mut event = Vec::new();
    put_len(&mut event, 1, b"ADDED");
    put_len(&mut event, 2, &ext);
    newer(&mut event);
    let counted = informer_proto::Skipped::start();
    let ev = WatchEvent::read(&event).unwrap();
    let env = ev.envelope().unwrap();
    assert_eq!(
        (ev.event_type, env.kind, env.raw),
        ("ADDED", "Pod", &with[..])
    );
    assert_eq!(counted.since().count, 4 * 3);
    // An envelope with its raw field twice is malformed (which one is the object?).
    let mut twice = enveloped.clone();
    put_len(&mut twice, 2, &with);
    assert!(matches!(Envelope::read(&twice), Err(Error::Invalid(_))));
    // A known framing field of the wrong wire type is still an error.
    let mut bad = Vec::new();
    put_key(&mut bad, 1, VARINT);
    put_varint(&mut bad, 1);
    assert!(matches!(WatchEvent::read(&bad), Err(Error::Invalid(_))));
}

#[test]
fn malformed_input_is_a_clear_error() {
    let msg = for_kind("v1", "ConfigMap").unwrap();
    // A repeated field seen again after another field.
    let meta = |out: &mut Vec<u8>, fin: &[u8]| put_len(out, 14, fin); // ObjectMeta.finalizers
    let mut m = Vec::new();
    meta(&mut m, b"a");
    put_len(&mut m, 1, b"name");
    meta(&mut m, b"b");
    let om = by_name("apimachinery.pkg.apis.meta.v1.ObjectMeta").unwrap();
    assert!(matches!(
        from_slice::<Value>(om, &m),
        Err(Error::FieldAgain {
            field: "finalizers",
            ..
        })
    ));
    // Contiguous repeats are one list.
    let mut m = Vec::new();
    meta(&mut m, b"a");
    meta(&mut m, b"b");
    assert_eq!(
        from_slice::<Value>(om, &m).unwrap(),
        json!({"finalizers": ["a", "b"]})
    );
    // Wrong wire type, truncation.
    let mut b = Vec::new();
    put_key(&mut b, 4, LEN); // immutable is a bool
    put_varint(&mut b, 0);
    assert!(matches!(
        from_slice::<Value>(msg, &b),
        Err(Error::WrongWireType { tag: 4, .. })
    ));
    assert_eq!(
        from_slice::<Value>(msg, &[0x12, 5, 1]).unwrap_err(),
        Error::Truncated
    );
    // Nesting is bounded: JSONSchemaProps inside JSONSchemaProps, 200 deep (field 1 of
    // JSONSchemaPropsOrArray is a schema; JSONSchemaProps.items is field 15... built by name).
    let props =
        by_name("apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps").unwrap();
    let not = props.by_json("not").expect("not").tag;
    let mut b = Vec::new();
    for _ in 0..200 {
        let mut outer = Vec::new();
        put_len(&mut outer, not, &b);
        b = outer;
    }
    assert_eq!(from_slice::<Value>(props, &b).unwrap_err(), Error::TooDeep);
}

#[test]
fn packed_numbers_are_read_too() {
    // PodSecurityContext.supplementalGroups (repeated int64, 4), packed as proto3 would.
    let ctx = by_name("api.core.v1.PodSecurityContext").unwrap();
    let tag = ctx.by_json("supplementalGroups").unwrap().tag;
    let mut packed = Vec::new();
    for n in [1u64, 300, 70_000] {
        put_varint(&mut packed, n);
    }
    let mut b = Vec::new();
    put_len(&mut b, tag, &packed);
    assert_eq!(
        from_slice::<Value>(ctx, &b).unwrap(),
        json!({"supplementalGroups": [1, 300, 70000]})
    );
}

fn envelope(api_version: &str, kind: &str, raw: &[u8], encoding: &str) -> Vec<u8> {
    let mut tm = Vec::new();
    put_len(&mut tm, 1, api_version.as_bytes());
    put_len(&mut tm, 2, kind.as_bytes());
    let mut out = informer_proto::MAGIC.to_vec();
    put_len(&mut out, 1, &tm);
    put_len(&mut out, 2, raw);
    put_len(&mut out, 3, encoding.as_bytes());
    put_len(&mut out, 4, b"");
    out
}

#[test]
fn lists_are_walked_without_decoding_items() {
    let list = pb_core::PodList {
        metadata: Some(pb_meta::ListMeta {
            resource_version: Some("42".into()),
            r#continue: Some("tok".into()),
            remaining_item_count: Some(7),
            self_link: Some(String::new()),
        }),
        items: (0..3)
            .map(|i| pb_core::Pod {
                metadata: Some(pb_meta::ObjectMeta {
                    name: Some(format!("p{i}")),
                    namespace: Some("ns".into()),
                    uid: Some(format!("u{i}")),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect(),
    };
    let body = envelope("v1", "PodList", &list.encode_to_vec(), "");
    let env = Envelope::read(&body).unwrap();
    assert_eq!((env.api_version, env.kind), ("v1", "PodList"));
    let l = List::read(env.raw).unwrap();
    assert_eq!(l.meta.resource_version, "42");
    assert_eq!(l.meta.continue_token, "tok");
    assert_eq!(l.meta.remaining_item_count, Some(7));
    let names: Vec<_> = l
        .items()
        .map(|r| {
            let item = &l.raw()[r.unwrap()];
            let probe = frame::probe_meta(item).unwrap();
            assert_eq!(probe.namespace, "ns");
            let pod: k8s_openapi::api::core::v1::Pod =
                from_slice(for_kind("v1", "Pod").unwrap(), item).unwrap();
            assert_eq!(pod.metadata.uid.as_deref(), Some(probe.uid));
            probe.name.to_owned()
        })
        .collect();
    assert_eq!(names, ["p0", "p1", "p2"]);
    // The whole list through the deserializer equals its JSON.
    let typed: k8s_openapi::List<k8s_openapi::api::core::v1::Pod> =
        k8s_openapi::serde::Deserialize::deserialize(env.deserializer().unwrap()).unwrap();
    assert_eq!(typed.items.len(), 3);
    assert_eq!(typed.metadata.resource_version.as_deref(), Some("42"));
    // A contentEncoding is refused, and so is a body without the magic.
    let gz = envelope("v1", "PodList", &[], "gzip");
    assert_eq!(
        Envelope::read(&gz).unwrap_err(),
        Error::ContentEncoding("gzip".into())
    );
    assert_eq!(Envelope::read(b"{}").unwrap_err(), Error::NoMagic);
}

#[test]
fn watch_frames_and_events() {
    let mut meta = Vec::new();
    put_len(&mut meta, 1, b"cm");
    let mut cm = Vec::new();
    put_len(&mut cm, 1, &meta);
    let object = envelope("v1", "ConfigMap", &cm, "");
    let event = pb_meta::WatchEvent {
        r#type: Some("ADDED".into()),
        object: Some(k8s_pb::apimachinery::pkg::runtime::RawExtension {
            raw: Some(object.clone()),
        }),
    }
    .encode_to_vec();
    let mut stream = (event.len() as u32).to_be_bytes().to_vec();
    stream.extend(&event);
    stream.extend([0, 0]);
    // Byte by byte: incomplete until the whole frame is there.
    for cut in 0..4 + event.len() {
        assert!(matches!(
            frame::read_watch_frame(&stream[..cut], 1 << 20).unwrap(),
            WatchFrame::Incomplete { needed } if needed > 0
        ));
    }
    let WatchFrame::Frame {
        event: got,
        consumed,
    } = frame::read_watch_frame(&stream, 1 << 20).unwrap()
    else {
        panic!("a whole frame");
    };
    assert_eq!((got, consumed), (&event[..], 4 + event.len()));
    assert_eq!(
        frame::read_watch_frame(&stream[consumed..], 1 << 20).unwrap(),
        WatchFrame::Incomplete { needed: 2 }
    );
    assert!(matches!(
        frame::read_watch_frame(&stream, 3),
        Err(Error::FrameTooLarge { max: 3, .. })
    ));
    let ev = WatchEvent::read(got).unwrap();
    assert_eq!(ev.event_type, "ADDED");
    assert_eq!(ev.object, &object[..]);
    let env = ev.envelope().unwrap();
    let cm: k8s_openapi::api::core::v1::ConfigMap =
        Deserialize::deserialize(env.deserializer().unwrap()).unwrap();
    assert_eq!(cm.metadata.name.as_deref(), Some("cm"));
}

#[test]
fn error_events_carry_a_status() {
    let status = pb_meta::Status {
        metadata: Some(pb_meta::ListMeta::default()),
        status: Some("Failure".into()),
        message: Some("too old resource version: 1 (5)".into()),
        reason: Some("Expired".into()),
        details: None,
        code: Some(410),
    };
    let body = envelope("v1", "Status", &status.encode_to_vec(), "");
    let s = frame::read_status(&body).unwrap();
    assert_eq!(s.code, 410);
    assert_eq!(s.reason, "Expired");
    assert!(s.is_failure());
    assert!(frame::read_status(&envelope("v1", "Pod", &[], "")).is_err());
    // The same Status through our deserializer and through its JSON.
    let json = informer_testserver::decode_protobuf(&body).unwrap();
    let from_json: kube::core::Status = serde_json::from_value(json).unwrap();
    assert_eq!(format!("{s:?}"), format!("{from_json:?}"));
    let _ = Deserializer::new(
        by_name("apimachinery.pkg.apis.meta.v1.Status").unwrap(),
        &[],
    );
}
