//! The exemplar corpus: every Pod a copy of upstream's exemplar Pod, the shape Kubernetes'
//! own benchmarks adopted to make their Pods realistic ("Pod Shape" as part of the scalability
//! envelope, kubernetes/kubernetes#138415). The exemplar is the Pod of
//! `staging/src/k8s.io/apiserver/pkg/endpoints/handlers/responsewriters/testdata/exemplar_pod.yaml`
//! (kubernetes/kubernetes#138612, `BenchmarkSerializeObject`; `BenchmarkCacherInit` of
//! kubernetes/kubernetes#138911 seeds etcd with the same file): a Deployment Pod, two containers
//! with ten env vars each, two init containers, three volumes, eleven labels, ten annotations and
//! the two managedFields entries of kube-controller-manager and the kubelet, caught while its
//! second init container runs. 14 474 bytes of JSON, 10 109 of protobuf (9.9 KiB).
//!
//! The field values below are that Pod's; the code that builds it is this module's. Like
//! upstream's generators, each copy gets its own name (`generateName` and ten random
//! characters), namespace, uid and one of 25 node names, and no resourceVersion (the server
//! writes one); everything else is the exemplar's, byte for byte, in every Pod. For the
//! benchmark's scenarios each Pod also carries the `shard` label and the generation annotation
//! every corpus has (about 60 bytes).

use serde_json::{Map, Value, json};

use crate::pods::{SUFFIX_ALPHABET, mix, namespace_name, uuid_of};
use crate::protocol::GENERATION_ANNOTATION;

/// The exemplar's ReplicaSet: its name (the Pods' `generateName` without the dash) and uid.
const OWNER: &str = "small-deployment-10-67cc84df8d";
const OWNER_UID: &str = "55338d45-98ff-4b84-949d-1619bff3c641";
/// The name its ConfigMap and Secret volumes refer to.
const APP: &str = "small-deployment-10";
/// The projected service-account token volume admission added.
const TOKEN_VOLUME: &str = "kube-api-access-sjcs6";
const TOKEN_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
const PAUSE: &str = "registry.k8s.io/pause:3.9";
const AGNHOST: &str = "registry.k8s.io/e2e-test-images/agnhost:2.53";
const AGNHOST_ID: &str = "registry.k8s.io/e2e-test-images/agnhost@sha256:99c6b4bb4a1e1df3f0b3752168c89358794d02258ebebc26bf21c29399011a85";
const POD_IP: &str = "10.244.7.83";
const HOST_IP: &str = "192.168.8.8";
const CREATED: &str = "2026-04-23T12:23:01Z";
const SCHEDULED: &str = "2026-04-23T12:23:02Z";
/// How many nodes the copies are spread over (upstream's `BenchmarkSerializeObject`: 25).
pub const NODES: usize = 25;

const LABELS: [(&str, &str); 11] = [
    ("app.kubernetes.io/component", "backend"),
    ("app.kubernetes.io/instance", "payment-service-primary"),
    ("app.kubernetes.io/name", "payment-service"),
    ("app.kubernetes.io/part-of", "ecommerce-platform"),
    ("app.kubernetes.io/version", "v2.1.4"),
    ("env", "production"),
    ("group", "load"),
    ("name", APP),
    ("pod-template-hash", "67cc84df8d"),
    ("svc", "small-service-10"),
    ("track", "canary"),
];

const ANNOTATIONS: [(&str, &str); 10] = [
    ("argocd.argoproj.io/hook", "PreSync"),
    ("argocd.argoproj.io/hook-delete-policy", "HookSucceeded"),
    ("cluster-autoscaler.kubernetes.io/safe-to-evict", "false"),
    ("fluentbit.io/parser", "json"),
    ("prometheus.io/path", "/metrics"),
    ("prometheus.io/port", "8080"),
    ("prometheus.io/scrape", "false"),
    ("sidecar.istio.io/inject", "false"),
    ("vault.hashicorp.com/agent-inject", "false"),
    ("vault.hashicorp.com/role", "my-app-db-role"),
];

/// Where an env var's value comes from.
#[derive(Clone, Copy)]
enum Source {
    /// A field of the Pod (`valueFrom.fieldRef`).
    Field(&'static str),
    /// A limit of the `main` container (`valueFrom.resourceFieldRef`).
    Limit(&'static str),
    /// A literal.
    Literal(&'static str),
}

/// Both containers' env, in the exemplar's order.
const ENV: [(&str, Source); 10] = [
    ("POD_NAME", Source::Field("metadata.name")),
    ("POD_NAMESPACE", Source::Field("metadata.namespace")),
    ("NODE_NAME", Source::Field("spec.nodeName")),
    ("POD_IP", Source::Field("status.podIP")),
    ("GOMAXPROCS", Source::Limit("limits.cpu")),
    ("MEM_LIMIT_BYTES", Source::Limit("limits.memory")),
    (
        "JAVA_TOOL_OPTIONS",
        Source::Literal("-XX:MaxRAMPercentage=75.0 -XX:+CrashOnOutOfMemoryError"),
    ),
    (
        "REDIS_URL",
        Source::Literal("redis://redis-master.cache.svc.cluster.local:6379/0"),
    ),
    ("PYTHONUNBUFFERED", Source::Literal("1")),
    ("NODE_ENV", Source::Literal("production")),
];

/// The `main` container's own volumes: (volume, mount path).
const APP_MOUNTS: [(&str, &str); 2] = [("configmap", "/var/configmap"), ("secret", "/var/secret")];

/// Pod `i` of `n` over `namespaces` namespaces: the exemplar with its own identity.
pub fn pod_json(i: usize, namespaces: usize) -> Value {
    let h = mix(i as u64 ^ 0x6578_656d);
    let mut pod = exemplar();
    let meta = &mut pod["metadata"];
    meta["name"] = json!(name_of(i));
    meta["namespace"] = json!(namespace_name(i % namespaces.max(1)));
    meta["uid"] = json!(uuid_of(h));
    meta["labels"]["shard"] = json!(format!("{}", i % 10));
    meta["annotations"][GENERATION_ANNOTATION] = json!("0");
    pod["spec"]["nodeName"] = json!(node_name((h % NODES as u64) as usize));
    pod
}

/// Pod `i`'s name: `generateName` and ten characters, as upstream's generators name copies.
pub fn name_of(i: usize) -> String {
    format!("{OWNER}-{}", random_chars(mix(i as u64 ^ 0x6e61_6d65), 10))
}

/// Node `k` of the [`NODES`]: ten characters, as upstream's `BenchmarkSerializeObject` names them.
fn node_name(k: usize) -> String {
    random_chars(mix(k as u64 ^ 0x6e6f_6465), 10)
}

/// `len` characters of Kubernetes' random-name alphabet drawn from `seed`. Past 12 characters a
/// 64-bit draw runs out, so every 12 characters draw again.
fn random_chars(seed: u64, len: usize) -> String {
    let mut out = String::with_capacity(len);
    let mut h = seed;
    for k in 0..len {
        if k % 12 == 0 && k > 0 {
            h = mix(h);
        }
        out.push(
            SUFFIX_ALPHABET[((h >> (k % 12 * 5)) % SUFFIX_ALPHABET.len() as u64) as usize] as char,
        );
    }
    out
}

/// The exemplar itself, without identity (name, namespace, uid, node, resourceVersion).
pub fn exemplar() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "annotations": pairs(&ANNOTATIONS),
            "creationTimestamp": CREATED,
            "generateName": format!("{OWNER}-"),
            "generation": 1,
            "labels": pairs(&LABELS),
            "managedFields": [controller_fields(), kubelet_fields()],
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "blockOwnerDeletion": true,
                "controller": true,
                "kind": "ReplicaSet",
                "name": OWNER,
                "uid": OWNER_UID,
            }],
        },
        "spec": spec(),
        "status": status(),
    })
}

fn pairs(pairs: &[(&str, &str)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect(),
    )
}

fn token_mount() -> Value {
    json!({"mountPath": TOKEN_PATH, "name": TOKEN_VOLUME, "readOnly": true})
}

fn env() -> Value {
    ENV.iter()
        .map(|(name, source)| match source {
            Source::Field(path) => json!({
                "name": name,
                "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": path}},
            }),
            Source::Limit(resource) => json!({
                "name": name,
                "valueFrom": {"resourceFieldRef": {
                    "containerName": "main",
                    "divisor": "0",
                    "resource": resource,
                }},
            }),
            Source::Literal(value) => json!({"name": name, "value": value}),
        })
        .collect()
}

/// `main` (with the app's two volumes) or `sidecar`.
fn container(name: &str, app_mounts: bool) -> Value {
    let mut mounts: Vec<Value> = if app_mounts {
        APP_MOUNTS
            .iter()
            .map(|(volume, path)| json!({"mountPath": path, "name": volume}))
            .collect()
    } else {
        Vec::new()
    };
    mounts.push(token_mount());
    json!({
        "env": env(),
        "image": PAUSE,
        "imagePullPolicy": "IfNotPresent",
        "name": name,
        "resources": {"requests": {"cpu": "5m", "memory": "20M"}},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": mounts,
    })
}

fn init_container(name: &str) -> Value {
    json!({
        "command": ["/bin/sh", "-c", "sleep 1"],
        "image": AGNHOST,
        "imagePullPolicy": "IfNotPresent",
        "name": name,
        "resources": {},
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "volumeMounts": [token_mount()],
    })
}

fn spec() -> Value {
    let toleration = |key: &str| json!({"effect": "NoExecute", "key": key, "operator": "Exists", "tolerationSeconds": 900});
    json!({
        "containers": [container("main", true), container("sidecar", false)],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": true,
        "initContainers": [init_container("init-0"), init_container("init-1")],
        "preemptionPolicy": "PreemptLowerPriority",
        "priority": 0,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "serviceAccount": "default",
        "serviceAccountName": "default",
        "terminationGracePeriodSeconds": 1,
        "tolerations": [
            toleration("node.kubernetes.io/not-ready"),
            toleration("node.kubernetes.io/unreachable"),
        ],
        "volumes": [
            {"configMap": {"defaultMode": 420, "name": APP}, "name": "configmap"},
            {"name": "secret", "secret": {"defaultMode": 420, "secretName": APP}},
            {"name": TOKEN_VOLUME, "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": "kube-root-ca.crt"}},
                {"downwardAPI": {"items": [{
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                    "path": "namespace",
                }]}},
            ]}},
        ],
    })
}

fn status() -> Value {
    let condition = |kind: &str, ok: bool, at: &str, why: Option<(&str, &str)>| {
        let mut c = json!({
            "lastProbeTime": null,
            "lastTransitionTime": at,
            "observedGeneration": 1,
            "status": if ok { "True" } else { "False" },
            "type": kind,
        });
        if let Some((reason, message)) = why {
            c["reason"] = json!(reason);
            c["message"] = json!(message);
        }
        c
    };
    let unready = Some((
        "ContainersNotReady",
        "containers with unready status: [main sidecar]",
    ));
    let with_recursive = |mount: Value| {
        let mut m = mount;
        if m["readOnly"] == true {
            m["recursiveReadOnly"] = json!("Disabled");
        }
        m
    };
    let waiting = |c: &Value| {
        json!({
            "image": PAUSE,
            "imageID": "",
            "lastState": {},
            "name": c["name"],
            "ready": false,
            "restartCount": 0,
            "started": false,
            "state": {"waiting": {"reason": "PodInitializing"}},
            "volumeMounts": c["volumeMounts"].as_array().into_iter().flatten().cloned().map(with_recursive).collect::<Vec<_>>(),
        })
    };
    let spec = spec();
    let root = json!({"linux": {
        "gid": 0,
        "supplementalGroups": [0, 1, 2, 3, 4, 6, 10, 11, 20, 26, 27],
        "uid": 0,
    }});
    let init = |name: &str, id: &str, ready: bool, state: Value| {
        json!({
            "containerID": format!("containerd://{id}"),
            "image": AGNHOST,
            "imageID": AGNHOST_ID,
            "lastState": {},
            "name": name,
            "ready": ready,
            "resources": {},
            "restartCount": 0,
            "started": !ready,
            "state": state,
            "user": root,
            "volumeMounts": [with_recursive(token_mount())],
        })
    };
    let first = "bbb710b46090518dfc404bf82b59ee1852230fab410c44863c421332d64a5eb1";
    let second = "91e8a3c8b793f5563ab9885872c2f7ae53a351a748b92fe152b9583d3e852902";
    json!({
        "allocatedResources": {"cpu": "10m", "memory": "40M"},
        "conditions": [
            condition("PodReadyToStartContainers", true, "2026-04-23T12:23:08Z", None),
            condition("Initialized", false, SCHEDULED, Some((
                "ContainersNotInitialized",
                "containers with incomplete status: [init-1]",
            ))),
            condition("Ready", false, SCHEDULED, unready),
            condition("ContainersReady", false, SCHEDULED, unready),
            condition("PodScheduled", true, SCHEDULED, None),
        ],
        "containerStatuses": spec["containers"].as_array().into_iter().flatten().map(waiting).collect::<Vec<_>>(),
        "hostIP": HOST_IP,
        "hostIPs": [{"ip": HOST_IP}],
        "initContainerStatuses": [
            init("init-0", first, true, json!({"terminated": {
                "containerID": format!("containerd://{first}"),
                "exitCode": 0,
                "finishedAt": "2026-04-23T12:23:15Z",
                "reason": "Completed",
                "startedAt": "2026-04-23T12:23:14Z",
            }})),
            init("init-1", second, false, json!({"running": {"startedAt": "2026-04-23T12:23:21Z"}})),
        ],
        "observedGeneration": 1,
        "phase": "Pending",
        "podIP": POD_IP,
        "podIPs": [{"ip": POD_IP}],
        "qosClass": "Burstable",
        "resources": {"requests": {"cpu": "10m", "memory": "40M"}},
        "startTime": SCHEDULED,
    })
}

// managedFields: the field sets kube-controller-manager (creating the Pod from its template)
// and the kubelet (reporting its status) own, in the FieldsV1 form: `f:<field>` for a field,
// `k:<key>` for a list item by key, `.` for the field itself where its children are listed.

/// `{"f:k": {}, …}` for `keys`, with `.` first when `own` (the field itself is owned).
fn fields<'a>(own: bool, keys: impl IntoIterator<Item = &'a str>) -> Map<String, Value> {
    let mut map = Map::new();
    if own {
        map.insert(".".into(), json!({}));
    }
    for k in keys {
        map.insert(format!("f:{k}"), json!({}));
    }
    map
}

fn owned(own: bool, keys: &[&str]) -> Value {
    Value::Object(fields(own, keys.iter().copied()))
}

/// `k:{"<key>":"<value>"}`.
fn item(key: &str, value: &str) -> String {
    format!("k:{}", json!({ key: value }))
}

fn container_fields(app_mounts: bool) -> Value {
    let mut env = fields(true, []);
    for (name, source) in ENV {
        let mut var = fields(true, ["name"]);
        match source {
            Source::Literal(_) => {
                var.insert("f:value".into(), json!({}));
            }
            Source::Field(_) => {
                var.insert("f:valueFrom".into(), owned(true, &["fieldRef"]));
            }
            Source::Limit(_) => {
                var.insert("f:valueFrom".into(), owned(true, &["resourceFieldRef"]));
            }
        }
        env.insert(item("name", name), Value::Object(var));
    }
    let mut c = fields(true, []);
    c.insert("f:env".into(), Value::Object(env));
    c.extend(fields(false, ["image", "imagePullPolicy", "name"]));
    c.insert(
        "f:resources".into(),
        json!({".": {}, "f:requests": owned(true, &["cpu", "memory"])}),
    );
    c.extend(fields(
        false,
        ["terminationMessagePath", "terminationMessagePolicy"],
    ));
    if app_mounts {
        let mut mounts = fields(true, []);
        for (_, path) in APP_MOUNTS {
            mounts.insert(item("mountPath", path), owned(true, &["mountPath", "name"]));
        }
        c.insert("f:volumeMounts".into(), Value::Object(mounts));
    }
    Value::Object(c)
}

fn controller_fields() -> Value {
    let mut metadata = Map::new();
    metadata.insert(
        "f:annotations".into(),
        Value::Object(fields(true, ANNOTATIONS.iter().map(|(k, _)| *k))),
    );
    metadata.insert("f:generateName".into(), json!({}));
    metadata.insert(
        "f:labels".into(),
        Value::Object(fields(true, LABELS.iter().map(|(k, _)| *k))),
    );
    metadata.insert(
        "f:ownerReferences".into(),
        json!({".": {}, item("uid", OWNER_UID): {}}),
    );
    let mut containers = Map::new();
    containers.insert(item("name", "main"), container_fields(true));
    containers.insert(item("name", "sidecar"), container_fields(false));
    let init = owned(
        true,
        &[
            "command",
            "image",
            "imagePullPolicy",
            "name",
            "resources",
            "terminationMessagePath",
            "terminationMessagePolicy",
        ],
    );
    let mut spec = Map::new();
    spec.insert("f:containers".into(), Value::Object(containers));
    spec.extend(fields(false, ["dnsPolicy", "enableServiceLinks"]));
    spec.insert(
        "f:initContainers".into(),
        json!({".": {}, item("name", "init-0"): init, item("name", "init-1"): init}),
    );
    spec.extend(fields(
        false,
        [
            "restartPolicy",
            "schedulerName",
            "securityContext",
            "terminationGracePeriodSeconds",
            "tolerations",
        ],
    ));
    spec.insert(
        "f:volumes".into(),
        json!({
            ".": {},
            item("name", "configmap"): {
                ".": {}, "f:configMap": owned(true, &["defaultMode", "name"]), "f:name": {},
            },
            item("name", "secret"): {
                ".": {}, "f:name": {}, "f:secret": owned(true, &["defaultMode", "secretName"]),
            },
        }),
    );
    json!({
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": metadata, "f:spec": spec},
        "manager": "kube-controller-manager",
        "operation": "Update",
        "time": CREATED,
    })
}

fn kubelet_fields() -> Value {
    let full = owned(
        true,
        &[
            "lastProbeTime",
            "lastTransitionTime",
            "message",
            "observedGeneration",
            "reason",
            "status",
            "type",
        ],
    );
    let mut status = Map::new();
    status.insert(
        "f:allocatedResources".into(),
        owned(true, &["cpu", "memory"]),
    );
    status.insert(
        "f:conditions".into(),
        json!({
            item("type", "ContainersReady"): full,
            item("type", "Initialized"): full,
            item("type", "PodReadyToStartContainers"): owned(true, &[
                "lastProbeTime", "lastTransitionTime", "observedGeneration", "status", "type",
            ]),
            item("type", "PodScheduled"): owned(false, &["observedGeneration"]),
            item("type", "Ready"): full,
        }),
    );
    status.extend(fields(
        false,
        [
            "containerStatuses",
            "hostIP",
            "hostIPs",
            "initContainerStatuses",
            "observedGeneration",
            "podIP",
        ],
    ));
    status.insert(
        "f:podIPs".into(),
        json!({".": {}, item("ip", POD_IP): owned(true, &["ip"])}),
    );
    status.insert(
        "f:resources".into(),
        json!({".": {}, "f:requests": owned(true, &["cpu", "memory"])}),
    );
    status.insert("f:startTime".into(), json!({}));
    json!({
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": status},
        "manager": "kubelet",
        "operation": "Update",
        "subresource": "status",
        "time": "2026-04-23T12:23:21Z",
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use k8s_openapi::api::core::v1::Pod;

    use super::*;

    /// `v` without its `null`s: what a typed Pod gives back (an unset time is `null` in the
    /// served JSON, `None` in the struct).
    fn without_nulls(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k.clone(), without_nulls(v)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
            other => other.clone(),
        }
    }

    #[test]
    fn the_exemplar_has_upstreams_size_and_shape() {
        let pod = exemplar();
        let json = serde_json::to_vec(&pod).expect("serialize");
        // Upstream's Pod with its name, namespace, uid, resourceVersion and node is 14 474
        // bytes of JSON; without them (172 bytes there) this is the rest, to the byte.
        assert_eq!(json.len(), 14_474 - 172, "the exemplar's JSON");
        let spec = &pod["spec"];
        let count = |v: &Value| v.as_array().map_or(0, Vec::len);
        assert_eq!(count(&spec["containers"]), 2);
        assert_eq!(count(&spec["initContainers"]), 2);
        assert_eq!(count(&spec["containers"][1]["env"]), 10);
        assert_eq!(count(&spec["volumes"]), 3);
        assert_eq!(count(&pod["status"]["conditions"]), 5);
        assert_eq!(
            pod["metadata"]["labels"].as_object().map(Map::len),
            Some(11)
        );
        assert_eq!(
            pod["metadata"]["annotations"].as_object().map(Map::len),
            Some(10)
        );
        let managed = serde_json::to_vec(&pod["metadata"]["managedFields"]).expect("serialize");
        assert!((5_000..5_600).contains(&managed.len()), "{}", managed.len());
        // Every field is a real Pod field: nothing is lost through the typed Pod.
        let one = pod_json(7, 3);
        let typed: Pod = serde_json::from_value(one.clone()).expect("a typed Pod");
        assert_eq!(
            serde_json::to_value(&typed).expect("to_value"),
            without_nulls(&one)
        );
        // About 9.9 KiB of protobuf, as upstream's (10 109 bytes), plus the benchmark's label,
        // annotation and the identity upstream's copies get.
        let pb = informer_testserver::encode_protobuf(&one).expect("protobuf");
        assert!(
            (10_000..10_400).contains(&pb.len()),
            "{} bytes of protobuf",
            pb.len()
        );
    }

    #[test]
    fn copies_differ_in_identity_only() {
        let strip = |mut v: Value| {
            for k in ["name", "namespace", "uid"] {
                v["metadata"][k] = Value::Null;
            }
            v["metadata"]["labels"]["shard"] = Value::Null;
            v["spec"]["nodeName"] = Value::Null;
            v
        };
        let first = strip(pod_json(0, 5));
        let mut names = HashSet::new();
        let mut nodes = HashSet::new();
        for i in 0..2_000 {
            let pod = pod_json(i, 5);
            assert_eq!(pod["metadata"]["name"], name_of(i).as_str());
            assert!(names.insert(name_of(i)), "Pod {i}'s name repeats");
            let node = pod["spec"]["nodeName"].as_str().expect("a node").to_owned();
            assert_eq!(node.len(), 10);
            nodes.insert(node);
            assert_eq!(pod["metadata"]["labels"]["shard"], format!("{}", i % 10));
            assert_eq!(pod["metadata"]["namespace"], namespace_name(i % 5).as_str());
            assert_eq!(strip(pod), first, "Pod {i}");
        }
        assert_eq!(nodes.len(), NODES);
        assert!(name_of(3).starts_with("small-deployment-10-67cc84df8d-"));
        assert_eq!(name_of(3).len(), OWNER.len() + 11);
    }
}
