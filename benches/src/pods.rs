//! Realistic Pods for the benchmarks: real-size specs, status and managedFields (M8: ~10-16 KiB of JSON each).
//!
//! The shape follows what a Deployment-managed Pod with an injected sidecar looks like in a real
//! cluster: three containers plus an init container, each with env, resources, probes and volume
//! mounts; the projected service-account volume; default tolerations; an owner reference; five
//! conditions and per-container statuses; and the two managedFields entries that
//! kube-controller-manager and the kubelet write (about 3 KiB together). Everything is derived
//! deterministically from the Pod's index, so every run and every process sees the same bytes.

use serde_json::{Value, json};

/// The label selector of the subset that scenarios 2, 3 and 4 watch: a fifth of the Pods.
///
/// A typed Pod of this shape takes about 118 KiB of heap (k8s-openapi's inline `Option` structs
/// and managedFields' `serde_json::Value` trees), so four kube-runtime stores of all 50 000 Pods
/// would need about 24 GiB, and a burst of 100 000 updates buffered whole would need 12 GiB; the
/// subset keeps those scenarios within a normal machine.
pub const SUBSET_SELECTOR: &str = "shard in (0,1)";

/// The name of namespace number `n`.
pub fn namespace_name(n: usize) -> String {
    format!("bench-{n:03}")
}

/// A Pod as JSON. `generation` changes the fields a watch update touches (an annotation, the
/// restart counts and a condition's transition time), the way a kubelet status update does.
pub fn pod_json(namespace: &str, name: &str, seed: u64, generation: u64) -> Value {
    let h = mix(seed);
    let app = APPS[(h % APPS.len() as u64) as usize];
    let rs_hash = format!("{:08x}", (h >> 8) as u32 & 0x7fff_ffff);
    let uid = uuid_of(h);
    let ip = format!(
        "10.{}.{}.{}",
        (h >> 16) % 250,
        (h >> 24) % 250,
        2 + (h >> 32) % 250
    );
    let node = format!(
        "ip-10-0-{}-{}.eu-west-1.compute.internal",
        (h >> 40) % 250,
        (h >> 48) % 250
    );
    let created = "2026-11-20T08:14:03Z";
    let started = format!("2026-11-20T08:14:{:02}Z", 5 + (h % 50));
    let restarted = format!("2026-11-21T{:02}:{:02}:00Z", generation % 24, (h >> 4) % 60);
    let image_tag = format!("v1.{}.{}", (h >> 12) % 40, (h >> 20) % 10);
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "generateName": format!("{app}-{rs_hash}-"),
            "creationTimestamp": created,
            "labels": {
                "app.kubernetes.io/name": app,
                "app.kubernetes.io/instance": format!("{app}-prod"),
                "app.kubernetes.io/version": image_tag,
                "app.kubernetes.io/component": "backend",
                "app.kubernetes.io/part-of": "storefront",
                "pod-template-hash": rs_hash,
                "security.istio.io/tlsMode": "istio",
                "service.istio.io/canonical-name": app,
                "shard": format!("{}", seed % 10),
            },
            "annotations": {
                "kubectl.kubernetes.io/restartedAt": restarted,
                "prometheus.io/scrape": "true",
                "prometheus.io/port": "9090",
                "prometheus.io/path": "/metrics",
                "sidecar.istio.io/status": "{\"initContainers\":[\"istio-init\"],\"containers\":[\"istio-proxy\"],\"volumes\":[\"istio-envoy\",\"istio-data\",\"istio-podinfo\",\"istio-token\",\"istiod-ca-cert\"],\"imagePullSecrets\":null,\"revision\":\"default\"}",
                "bench.informer-rs.io/generation": format!("{generation}"),
            },
            "ownerReferences": [{
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "name": format!("{app}-{rs_hash}"),
                "uid": uuid_of(mix(h)),
                "controller": true,
                "blockOwnerDeletion": true,
            }],
            "managedFields": managed_fields(&started),
        },
        "spec": spec(app, &image_tag, &node, h),
        "status": status(app, &image_tag, &ip, &started, generation, h),
    })
}

/// Application names; they only vary the bytes a little.
pub(crate) const APPS: [&str; 8] = [
    "checkout",
    "cart",
    "catalog",
    "payments",
    "search",
    "recommend",
    "shipping",
    "accounts",
];

pub(crate) fn container(
    name: &str,
    image: String,
    port: u16,
    env: Value,
    mounts: Value,
    cpu: &str,
    mem: &str,
) -> Value {
    json!({
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "args": ["--config=/etc/app/config.yaml", format!("--port={port}"), "--log-format=json", "--log-level=info"],
        "ports": [
            {"name": "http", "containerPort": port, "protocol": "TCP"},
            {"name": "metrics", "containerPort": 9090, "protocol": "TCP"},
        ],
        "env": env,
        "resources": {
            "limits": {"cpu": "2", "memory": mem, "ephemeral-storage": "1Gi"},
            "requests": {"cpu": cpu, "memory": mem, "ephemeral-storage": "256Mi"},
        },
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": port, "scheme": "HTTP"},
            "initialDelaySeconds": 10, "timeoutSeconds": 2, "periodSeconds": 10,
            "successThreshold": 1, "failureThreshold": 3,
        },
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": port, "scheme": "HTTP"},
            "initialDelaySeconds": 5, "timeoutSeconds": 1, "periodSeconds": 5,
            "successThreshold": 1, "failureThreshold": 3,
        },
        "volumeMounts": mounts,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "securityContext": {
            "allowPrivilegeEscalation": false,
            "readOnlyRootFilesystem": true,
            "runAsNonRoot": true,
            "runAsUser": 10001,
            "capabilities": {"drop": ["ALL"]},
        },
    })
}

pub(crate) fn env_var(name: &str, value: &str) -> Value {
    json!({"name": name, "value": value})
}

/// The service-account token mount every container has.
pub(crate) fn sa_mount() -> Value {
    json!({"name": "kube-api-access", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true})
}

/// The application container's twelve env vars.
pub(crate) fn app_env(app: &str) -> Vec<Value> {
    vec![
        env_var("APP_NAME", app),
        env_var("APP_ENV", "production"),
        env_var("LOG_LEVEL", "info"),
        env_var(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://otel-collector.observability.svc.cluster.local:4317",
        ),
        env_var("OTEL_SERVICE_NAME", app),
        env_var(
            "DATABASE_HOST",
            &format!("{app}-db.storefront.svc.cluster.local"),
        ),
        env_var("DATABASE_POOL_SIZE", "20"),
        env_var(
            "CACHE_URL",
            "redis://redis-master.storefront.svc.cluster.local:6379/0",
        ),
        json!({"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}),
        json!({"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}}),
        json!({"name": "POD_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}),
        json!({"name": "DATABASE_PASSWORD", "valueFrom": {"secretKeyRef": {"name": format!("{app}-db"), "key": "password"}}}),
    ]
}

/// The application container's mounts (its config, TLS, scratch space and the token).
pub(crate) fn app_mounts() -> Value {
    json!([
        {"name": "config", "mountPath": "/etc/app", "readOnly": true},
        {"name": "tls", "mountPath": "/etc/tls", "readOnly": true},
        {"name": "tmp", "mountPath": "/tmp"},
        sa_mount(),
    ])
}

/// The Istio sidecar injector's init container.
pub(crate) fn istio_init() -> Value {
    json!({
        "name": "istio-init",
        "image": ISTIO_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "args": ["istio-iptables", "-p", "15001", "-z", "15006", "-u", "1337", "-m", "REDIRECT", "-i", "*", "-x", "", "-b", "*", "-d", "15090,15021,15020"],
        "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "10m", "memory": "40Mi"}},
        "volumeMounts": [sa_mount()],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
        "securityContext": {"capabilities": {"add": ["NET_ADMIN", "NET_RAW"], "drop": ["ALL"]}, "runAsUser": 0, "runAsNonRoot": false},
    })
}

/// The Istio proxy sidecar of `app`.
pub(crate) fn istio_proxy(app: &str) -> Value {
    let env = json!([
        env_var("PILOT_CERT_PROVIDER", "istiod"),
        env_var("CA_ADDR", "istiod.istio-system.svc:15012"),
        env_var("ISTIO_META_CLUSTER_ID", "Kubernetes"),
        env_var("ISTIO_META_APP_CONTAINERS", app),
        env_var("ISTIO_META_INTERCEPTION_MODE", "REDIRECT"),
        env_var("ISTIO_META_WORKLOAD_NAME", app),
        env_var("ISTIO_META_OWNER", &format!("kubernetes://apis/apps/v1/namespaces/storefront/deployments/{app}")),
        {"name": "POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}},
        {"name": "INSTANCE_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}},
        {"name": "HOST_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.hostIP"}}},
    ]);
    let mounts = json!([
        {"name": "istio-envoy", "mountPath": "/etc/istio/proxy"},
        {"name": "istio-data", "mountPath": "/var/lib/istio/data"},
        {"name": "istio-token", "mountPath": "/var/run/secrets/tokens"},
        {"name": "istiod-ca-cert", "mountPath": "/var/run/secrets/istio"},
        sa_mount(),
    ]);
    container(
        "istio-proxy",
        ISTIO_IMAGE.to_string(),
        15090,
        env,
        mounts,
        "100m",
        "128Mi",
    )
}

/// The log-shipping sidecar.
pub(crate) fn log_shipper() -> Value {
    let env = json!([
        env_var("FLUENT_BIT_LOG_LEVEL", "warn"),
        env_var("OUTPUT_HOST", "logs.observability.svc.cluster.local"),
        env_var("OUTPUT_PORT", "24224"),
    ]);
    let mounts =
        json!([{"name": "tmp", "mountPath": "/var/log/app", "readOnly": true}, sa_mount()]);
    container(
        "log-shipper",
        FLUENT_BIT_IMAGE.to_string(),
        2020,
        env,
        mounts,
        "20m",
        "64Mi",
    )
}

/// The application's own volumes: its ConfigMap, its TLS Secret and scratch space.
pub(crate) fn app_volumes(app: &str) -> [Value; 3] {
    [
        json!({"name": "config", "configMap": {"name": format!("{app}-config"), "defaultMode": 420}}),
        json!({"name": "tls", "secret": {"secretName": format!("{app}-tls"), "defaultMode": 420}}),
        json!({"name": "tmp", "emptyDir": {}}),
    ]
}

/// The volumes the Istio sidecar injector adds.
pub(crate) fn istio_volumes() -> [Value; 4] {
    [
        json!({"name": "istio-envoy", "emptyDir": {"medium": "Memory"}}),
        json!({"name": "istio-data", "emptyDir": {}}),
        json!({"name": "istio-token", "projected": {"defaultMode": 420, "sources": [
            {"serviceAccountToken": {"audience": "istio-ca", "expirationSeconds": 43200, "path": "istio-token"}}]}}),
        json!({"name": "istiod-ca-cert", "configMap": {"name": "istio-ca-root-cert", "defaultMode": 420}}),
    ]
}

/// The projected service-account volume every Pod gets.
pub(crate) fn kube_api_access() -> Value {
    json!({"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}})
}

/// The default tolerations plus the workload's node pool.
pub(crate) fn tolerations() -> Value {
    json!([
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "workload", "operator": "Equal", "value": "storefront", "effect": "NoSchedule"},
    ])
}

/// Spread `app`'s Pods over zones.
pub(crate) fn anti_affinity(app: &str) -> Value {
    json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{
        "weight": 100,
        "podAffinityTerm": {
            "labelSelector": {"matchLabels": {"app.kubernetes.io/name": app}},
            "topologyKey": "topology.kubernetes.io/zone",
        },
    }]}})
}

/// The image of the Istio proxy and its init container.
pub(crate) const ISTIO_IMAGE: &str = "docker.io/istio/proxyv2:1.24.2";
/// The image of the log shipper.
pub(crate) const FLUENT_BIT_IMAGE: &str = "cr.fluentbit.io/fluent/fluent-bit:3.2.4";

fn spec(app: &str, tag: &str, node: &str, h: u64) -> Value {
    let volumes: Vec<Value> = app_volumes(app)
        .into_iter()
        .chain(istio_volumes())
        .chain([kube_api_access()])
        .collect();
    let containers = vec![
        container(
            app,
            format!("registry.example.com/storefront/{app}:{tag}"),
            8080,
            Value::Array(app_env(app)),
            app_mounts(),
            "250m",
            "512Mi",
        ),
        istio_proxy(app),
        log_shipper(),
    ];
    let mut spec = app_pod_spec(
        app,
        vec![istio_init()],
        containers,
        volumes,
        h.is_multiple_of(2),
    );
    spec["nodeName"] = json!(node);
    spec
}

/// An application Pod's spec around its containers and volumes (no node yet).
pub(crate) fn app_pod_spec(
    app: &str,
    init_containers: Vec<Value>,
    containers: Vec<Value>,
    volumes: Vec<Value>,
    enable_service_links: bool,
) -> Value {
    json!({
        "initContainers": init_containers,
        "containers": containers,
        "volumes": volumes,
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": app,
        "serviceAccount": app,
        "securityContext": {"fsGroup": 10001, "seccompProfile": {"type": "RuntimeDefault"}},
        "affinity": anti_affinity(app),
        "schedulerName": "default-scheduler",
        "tolerations": tolerations(),
        "priority": 0,
        "enableServiceLinks": enable_service_links,
        "preemptionPolicy": "PreemptLowerPriority",
    })
}

fn status(app: &str, tag: &str, ip: &str, started: &str, generation: u64, h: u64) -> Value {
    let host_ip = format!("10.0.{}.{}", (h >> 40) % 250, (h >> 48) % 250);
    let cond = |ty: &str, at: &str| json!({"type": ty, "status": "True", "lastTransitionTime": at});
    let ready_at = format!(
        "2026-11-21T{:02}:{:02}:{:02}Z",
        generation % 24,
        (h >> 6) % 60,
        (generation + h) % 60
    );
    let running = |name: &str, image: String, image_id: String, restarts: u64| {
        json!({
            "name": name,
            "state": {"running": {"startedAt": started}},
            "lastState": {},
            "ready": true,
            "restartCount": restarts,
            "image": image,
            "imageID": image_id,
            "containerID": format!("containerd://{}", hex64(mix(h ^ restarts ^ name.len() as u64))),
            "started": true,
        })
    };
    json!({
        "phase": "Running",
        "conditions": [
            cond("PodReadyToStartContainers", started),
            cond("Initialized", started),
            cond("Ready", &ready_at),
            cond("ContainersReady", &ready_at),
            cond("PodScheduled", "2026-11-20T08:14:03Z"),
        ],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": ip,
        "podIPs": [{"ip": ip}],
        "startTime": "2026-11-20T08:14:03Z",
        "initContainerStatuses": [{
            "name": "istio-init",
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started, "finishedAt": started,
                "containerID": format!("containerd://{}", hex64(mix(h ^ 0x51)))}},
            "lastState": {},
            "ready": true,
            "restartCount": 0,
            "image": "docker.io/istio/proxyv2:1.24.2",
            "imageID": format!("docker.io/istio/proxyv2@sha256:{}", hex64(0x1234_5678)),
            "containerID": format!("containerd://{}", hex64(mix(h ^ 0x51))),
            "started": false,
        }],
        "containerStatuses": [
            running(app, format!("registry.example.com/storefront/{app}:{tag}"),
                format!("registry.example.com/storefront/{app}@sha256:{}", hex64(mix(h >> 3))), generation % 3),
            running("istio-proxy", "docker.io/istio/proxyv2:1.24.2".to_string(),
                format!("docker.io/istio/proxyv2@sha256:{}", hex64(0x1234_5678)), 0),
            running("log-shipper", "cr.fluentbit.io/fluent/fluent-bit:3.2.4".to_string(),
                format!("cr.fluentbit.io/fluent/fluent-bit@sha256:{}", hex64(0x8765_4321)), 0),
        ],
        "qosClass": "Burstable",
    })
}

/// The two managedFields entries of a running Deployment Pod: kube-controller-manager's `Update`
/// of metadata and spec, and the kubelet's `Update` of the status subresource.
pub(crate) fn managed_fields(at: &str) -> Value {
    let container_fields = |extra: Value| {
        let mut c = json!({
            ".": {}, "f:args": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
            "f:env": {".": {}, "k:{\"name\":\"APP_NAME\"}": {".": {}, "f:name": {}, "f:value": {}},
                "k:{\"name\":\"APP_ENV\"}": {".": {}, "f:name": {}, "f:value": {}},
                "k:{\"name\":\"LOG_LEVEL\"}": {".": {}, "f:name": {}, "f:value": {}},
                "k:{\"name\":\"POD_NAME\"}": {".": {}, "f:name": {}, "f:valueFrom": {".": {}, "f:fieldRef": {}}}},
            "f:livenessProbe": {".": {}, "f:failureThreshold": {}, "f:httpGet": {".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}},
                "f:initialDelaySeconds": {}, "f:periodSeconds": {}, "f:successThreshold": {}, "f:timeoutSeconds": {}},
            "f:readinessProbe": {".": {}, "f:failureThreshold": {}, "f:httpGet": {".": {}, "f:path": {}, "f:port": {}, "f:scheme": {}},
                "f:initialDelaySeconds": {}, "f:periodSeconds": {}, "f:successThreshold": {}, "f:timeoutSeconds": {}},
            "f:ports": {".": {}, "k:{\"containerPort\":8080,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}, "f:name": {}, "f:protocol": {}}},
            "f:resources": {".": {}, "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}}, "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}}},
            "f:securityContext": {".": {}, "f:allowPrivilegeEscalation": {}, "f:readOnlyRootFilesystem": {}, "f:runAsNonRoot": {}},
            "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {},
            "f:volumeMounts": {".": {}, "k:{\"mountPath\":\"/etc/app\"}": {".": {}, "f:mountPath": {}, "f:name": {}, "f:readOnly": {}}},
        });
        if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
            c.extend(extra.clone());
        }
        c
    };
    let status_container = json!({".": {}, "f:containerID": {}, "f:image": {}, "f:imageID": {}, "f:lastState": {},
        "f:name": {}, "f:ready": {}, "f:restartCount": {}, "f:started": {}, "f:state": {".": {}, "f:running": {".": {}, "f:startedAt": {}}}});
    let cond = json!({".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}});
    json!([
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2026-11-20T08:14:03Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {
                    "f:annotations": {".": {}, "f:kubectl.kubernetes.io/restartedAt": {}, "f:prometheus.io/path": {},
                        "f:prometheus.io/port": {}, "f:prometheus.io/scrape": {}},
                    "f:generateName": {},
                    "f:labels": {".": {}, "f:app.kubernetes.io/component": {}, "f:app.kubernetes.io/instance": {},
                        "f:app.kubernetes.io/name": {}, "f:app.kubernetes.io/part-of": {}, "f:app.kubernetes.io/version": {},
                        "f:pod-template-hash": {}},
                    "f:ownerReferences": {".": {}, "k:{\"uid\":\"5c8e1f2a-0b7d-4c1e-9f3a-2d6b8e4a7c10\"}": {}},
                },
                "f:spec": {
                    "f:affinity": {".": {}, "f:podAntiAffinity": {".": {}, "f:preferredDuringSchedulingIgnoredDuringExecution": {}}},
                    "f:containers": {"k:{\"name\":\"app\"}": container_fields(json!({}))},
                    "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                    "f:securityContext": {".": {}, "f:fsGroup": {}, "f:seccompProfile": {".": {}, "f:type": {}}},
                    "f:serviceAccount": {}, "f:serviceAccountName": {}, "f:terminationGracePeriodSeconds": {},
                    "f:tolerations": {},
                    "f:volumes": {".": {}, "k:{\"name\":\"config\"}": {".": {}, "f:configMap": {".": {}, "f:defaultMode": {}, "f:name": {}}, "f:name": {}},
                        "k:{\"name\":\"tls\"}": {".": {}, "f:name": {}, "f:secret": {".": {}, "f:defaultMode": {}, "f:secretName": {}}},
                        "k:{\"name\":\"tmp\"}": {".": {}, "f:emptyDir": {}, "f:name": {}}},
                },
            },
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": at,
            "fieldsType": "FieldsV1",
            "subresource": "status",
            "fieldsV1": {
                "f:status": {
                    "f:conditions": {
                        "k:{\"type\":\"ContainersReady\"}": cond,
                        "k:{\"type\":\"Initialized\"}": cond,
                        "k:{\"type\":\"PodReadyToStartContainers\"}": cond,
                        "k:{\"type\":\"Ready\"}": cond,
                    },
                    "f:containerStatuses": {},
                    "f:hostIP": {}, "f:hostIPs": {},
                    "f:initContainerStatuses": {},
                    "f:phase": {}, "f:podIP": {},
                    "f:podIPs": {".": {}, "k:{\"ip\":\"10.0.0.1\"}": {".": {}, "f:ip": {}}},
                    "f:startTime": {},
                    "f:x-containers": status_container,
                },
            },
        },
    ])
}

/// A 64-bit mixer (splitmix64), used to derive varied but deterministic field values.
pub(crate) fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

pub(crate) fn hex64(x: u64) -> String {
    format!(
        "{:016x}{:016x}{:016x}{:016x}",
        mix(x),
        mix(x ^ 1),
        mix(x ^ 2),
        mix(x ^ 3)
    )
}

pub(crate) fn uuid_of(h: u64) -> String {
    let a = mix(h);
    let b = mix(a);
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        (a >> 32) as u32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        0x8000 | ((b >> 48) & 0x3fff),
        b & 0xffff_ffff_ffff
    )
}

/// The characters of generated name suffixes (Kubernetes' `utilrand` alphabet).
pub(crate) const SUFFIX_ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

pub(crate) fn suffix(h: u64) -> String {
    (0..5)
        .map(|k| SUFFIX_ALPHABET[((h >> (k * 5)) % SUFFIX_ALPHABET.len() as u64) as usize] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::podset::PodSet;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn pods_are_realistic_size_and_round_trip_through_the_typed_pod() {
        let set = PodSet::distinct(10, 3);
        for i in 0..10 {
            let v = set.pod_json(i);
            let bytes = serde_json::to_vec(&v).expect("serialize");
            assert!(
                (10 * 1024..=16 * 1024).contains(&bytes.len()),
                "pod {i} is {} bytes",
                bytes.len()
            );
            let pod: Pod = serde_json::from_value(v.clone()).expect("typed pod");
            // Nothing is lost through the typed struct: every field we emit is a real Pod field.
            assert_eq!(serde_json::to_value(&pod).expect("to_value"), v, "pod {i}");
            let mf = serde_json::to_vec(&v["metadata"]["managedFields"]).expect("serialize");
            assert!(
                (2 * 1024..=4 * 1024).contains(&mf.len()),
                "managedFields are {} bytes",
                mf.len()
            );
        }
        assert_ne!(set.name_of(1), set.name_of(2));
        assert_eq!(set.namespace_of(4), "bench-001");
        let shards = (0..10)
            .filter(|i| {
                set.pod_json(*i)["metadata"]["labels"]["shard"] == "0"
                    || set.pod_json(*i)["metadata"]["labels"]["shard"] == "1"
            })
            .count();
        assert_eq!(shards, set.subset_len());
    }
}
