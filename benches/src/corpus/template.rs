//! The templates of the realistic corpus: what the Pods of one group share, derived from the
//! group's seed alone, and the per-Pod status built from a template's containers.

use serde_json::{Value, json};

use super::{DAEMONSETS, Group, Owner};
use crate::pods::{
    APPS, app_env, app_mounts, app_pod_spec, app_volumes, container, env_var, hex64, istio_init,
    istio_proxy, istio_volumes, kube_api_access, log_shipper, managed_fields, mix, sa_mount,
    uuid_of,
};

/// What the Pods of one group share, derived from the group's seed alone.
pub(super) struct Template {
    pub(super) owner_name: String,
    pub(super) created_s: u64,
    pub(super) labels: Value,
    pub(super) annotations: Value,
    pub(super) owner_refs: Value,
    pub(super) spec: Value,
    pub(super) managed_fields: Value,
}

/// More application names: with [`APPS`], sixteen (the seed's hash makes names unique).
const MORE_APPS: [&str; 8] = [
    "auth",
    "pricing",
    "inventory",
    "reviews",
    "ads",
    "email",
    "currency",
    "frontend",
];

impl Template {
    pub(super) fn of(g: &Group) -> Template {
        let s = g.seed;
        let hash = template_hash(s);
        let app = app_name(g);
        let owner_name = owner_name(g);
        let tag = format!("v1.{}.{}", (s >> 12) % 40, (s >> 20) % 10);
        let created_s = (s >> 24) % (6 * 24 * 3600);
        let mut labels = json!({
            "app.kubernetes.io/name": app,
            "app.kubernetes.io/instance": format!("{app}-prod"),
            "app.kubernetes.io/version": tag,
            "app.kubernetes.io/part-of": "storefront",
        });
        let (kind, api_version, spec) = match g.owner {
            Owner::DaemonSet(k) => {
                labels["controller-revision-hash"] = json!(hash);
                labels["pod-template-generation"] = json!("3");
                ("DaemonSet", "apps/v1", daemon_spec(k, &tag))
            }
            Owner::ReplicaSet => {
                labels["pod-template-hash"] = json!(hash);
                labels["app.kubernetes.io/component"] = json!("backend");
                ("ReplicaSet", "apps/v1", app_spec(&app, &tag, s))
            }
            Owner::Job | Owner::Bare => {
                if g.owner == Owner::Job {
                    labels["batch.kubernetes.io/job-name"] = json!(owner_name);
                }
                ("Job", "batch/v1", app_spec(&app, &tag, s))
            }
        };
        let mut annotations = json!({
            "kubectl.kubernetes.io/restartedAt": timestamp(created_s),
            "prometheus.io/scrape": "true",
            "prometheus.io/port": "9090",
        });
        if spec["containers"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["name"] == "istio-proxy"))
        {
            annotations["sidecar.istio.io/status"] = json!(
                "{\"initContainers\":[\"istio-init\"],\"containers\":[\"istio-proxy\"],\"volumes\":[\"istio-envoy\",\"istio-data\",\"istio-podinfo\",\"istio-token\",\"istiod-ca-cert\"],\"imagePullSecrets\":null,\"revision\":\"default\"}"
            );
            labels["security.istio.io/tlsMode"] = json!("istio");
            labels["service.istio.io/canonical-name"] = json!(app);
        }
        let owner_refs = json!([{
            "apiVersion": api_version,
            "kind": kind,
            "name": owner_name,
            "uid": uuid_of(mix(s)),
            "controller": true,
            "blockOwnerDeletion": true,
        }]);
        Template {
            owner_name,
            created_s,
            labels,
            annotations,
            owner_refs,
            managed_fields: template_managed_fields(&spec),
            spec,
        }
    }
}

/// The template hash (`pod-template-hash`, `controller-revision-hash`) of seed `s`.
fn template_hash(s: u64) -> String {
    format!("{:09x}", (s >> 8) & 0xf_ffff_ffff)
}

/// The application of group `g` (the DaemonSet's name for a DaemonSet).
fn app_name(g: &Group) -> String {
    match g.owner {
        Owner::DaemonSet(k) => DAEMONSETS[k].to_owned(),
        Owner::ReplicaSet | Owner::Job | Owner::Bare => {
            let k = (g.seed % (APPS.len() + MORE_APPS.len()) as u64) as usize;
            APPS.get(k)
                .or_else(|| MORE_APPS.get(k - APPS.len()))
                .map_or_else(String::new, |app| (*app).to_owned())
        }
    }
}

/// The owner's name (a bare Pod's own name): the application and the template hash.
pub(super) fn owner_name(g: &Group) -> String {
    match g.owner {
        Owner::DaemonSet(k) => DAEMONSETS[k].to_owned(),
        Owner::ReplicaSet | Owner::Job | Owner::Bare => {
            format!("{}-{}", app_name(g), template_hash(g.seed))
        }
    }
}

/// The managedFields entries with the template's container names in kube-controller-manager's
/// (the times are set per Pod).
fn template_managed_fields(spec: &Value) -> Value {
    let mut managed = managed_fields("");
    let containers = &mut managed[0]["fieldsV1"]["f:spec"]["f:containers"];
    let fields = containers["k:{\"name\":\"app\"}"].take();
    let mut by_name = serde_json::Map::new();
    for c in spec["containers"].as_array().into_iter().flatten() {
        let key = format!(
            "k:{{\"name\":\"{}\"}}",
            c["name"].as_str().unwrap_or_default()
        );
        by_name.insert(key, fields.clone());
    }
    *containers = Value::Object(by_name);
    managed
}

/// An application Pod's spec (without its node): which sidecars, env and volumes it has is
/// drawn from the template's seed `s`.
fn app_spec(app: &str, tag: &str, s: u64) -> Value {
    let istio = s % 100 < 60;
    let logs = (s >> 7) % 100 < 35;
    let worker = (s >> 14) % 100 < 25;
    let projected = (s >> 21) % 100 < 40;
    let extra_env = ((s >> 28) % 61) as usize;
    let image = format!("registry.example.com/storefront/{app}:{tag}");
    let mut env = app_env(app);
    env.extend((0..extra_env).map(|k| {
        env_var(
            &format!("FEATURE_FLAG_{k:02}"),
            &format!("{}", (s >> (k % 48)) & 1 == 1),
        )
    }));
    let mut containers = vec![container(
        app,
        image.clone(),
        8080,
        Value::Array(env),
        app_mounts(),
        "250m",
        "512Mi",
    )];
    if worker {
        let env = json!([
            env_var("APP_NAME", app),
            env_var("WORKER_QUEUE", &format!("{app}-jobs")),
            env_var("WORKER_CONCURRENCY", "8")
        ]);
        containers.push(container(
            "worker",
            image,
            8081,
            env,
            app_mounts(),
            "500m",
            "1Gi",
        ));
    }
    if istio {
        containers.push(istio_proxy(app));
    }
    if logs {
        containers.push(log_shipper());
    }
    let mut volumes: Vec<Value> = app_volumes(app).into();
    if istio {
        volumes.extend(istio_volumes());
    }
    if projected {
        volumes.push(json!({"name": "app-secrets", "projected": {"defaultMode": 420, "sources": [
            {"secret": {"name": format!("{app}-api-keys"), "items": [{"key": "primary", "path": "api-key"}]}},
            {"configMap": {"name": format!("{app}-features"), "items": [{"key": "flags.yaml", "path": "flags.yaml"}]}},
            {"downwardAPI": {"items": [{"path": "labels", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.labels"}}]}},
        ]}}));
    }
    volumes.push(kube_api_access());
    let init = if istio {
        vec![istio_init()]
    } else {
        Vec::new()
    };
    let mut spec = app_pod_spec(app, init, containers, volumes, s.is_multiple_of(2));
    if !istio && let Some(spec) = spec.as_object_mut() {
        // The API server omits an empty list.
        spec.remove("initContainers");
    }
    spec
}

/// DaemonSet `k`'s spec (without its node): host network, host paths, tolerating every taint.
fn daemon_spec(k: usize, tag: &str) -> Value {
    let name = DAEMONSETS[k];
    let image = format!("registry.k8s.io/{name}:{tag}");
    let mounts = json!([
        {"name": "host-proc", "mountPath": "/host/proc", "readOnly": true},
        {"name": "host-sys", "mountPath": "/host/sys", "readOnly": true},
        {"name": "host-var-log", "mountPath": "/var/log"},
        sa_mount(),
    ]);
    let env = json!([
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
        {"name": "HOST_IP", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "status.hostIP"}}},
        env_var("LOG_LEVEL", "info"),
    ]);
    let host_path = |n: &str, p: &str| json!({"name": n, "hostPath": {"path": p, "type": ""}});
    json!({
        "containers": [container(name, image, 9100 + k as u16, env, mounts, "100m", "200Mi")],
        "volumes": [host_path("host-proc", "/proc"), host_path("host-sys", "/sys"), host_path("host-var-log", "/var/log"), kube_api_access()],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirstWithHostNet",
        "hostNetwork": true,
        "hostPID": k == 0,
        "priorityClassName": "system-node-critical",
        "priority": 2_000_001_000,
        "serviceAccountName": name,
        "serviceAccount": name,
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "tolerations": [{"operator": "Exists"}],
        "enableServiceLinks": true,
        "preemptionPolicy": "PreemptLowerPriority",
    })
}

/// A running Pod's status: per container of `spec`, its own container ID and restart count.
pub(super) fn status(
    spec: &Value,
    h: u64,
    pod_ip: &str,
    host_ip: &str,
    started: &str,
    ready: &str,
) -> Value {
    let cond = |ty: &str, at: &str| json!({"type": ty, "status": "True", "lastTransitionTime": at});
    let image_id = |image: &str| {
        let repo = image.split(':').next().unwrap_or(image);
        format!(
            "{repo}@sha256:{}",
            hex64(mix(image.len() as u64 ^ (repo.len() as u64 * 131)))
        )
    };
    let containers = |key: &str| spec[key].as_array().cloned().unwrap_or_default();
    let init_statuses: Vec<Value> = containers("initContainers")
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let id = format!("containerd://{}", hex64(mix(h ^ (0x100 + k as u64))));
            json!({
                "name": c["name"],
                "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started,
                    "finishedAt": started, "containerID": id}},
                "lastState": {},
                "ready": true,
                "restartCount": 0,
                "image": c["image"],
                "imageID": image_id(c["image"].as_str().unwrap_or_default()),
                "containerID": id,
                "started": false,
            })
        })
        .collect();
    let statuses: Vec<Value> = containers("containers")
        .iter()
        .enumerate()
        .map(|(k, c)| {
            json!({
                "name": c["name"],
                "state": {"running": {"startedAt": started}},
                "lastState": {},
                "ready": true,
                "restartCount": (h >> (8 * k)) % 4 / 3,
                "image": c["image"],
                "imageID": image_id(c["image"].as_str().unwrap_or_default()),
                "containerID": format!("containerd://{}", hex64(mix(h ^ k as u64))),
                "started": true,
            })
        })
        .collect();
    let mut status = json!({
        "phase": "Running",
        "conditions": [
            cond("PodReadyToStartContainers", started),
            cond("Initialized", started),
            cond("Ready", ready),
            cond("ContainersReady", ready),
            cond("PodScheduled", started),
        ],
        "hostIP": host_ip,
        "hostIPs": [{"ip": host_ip}],
        "podIP": pod_ip,
        "podIPs": [{"ip": pod_ip}],
        "startTime": started,
        "containerStatuses": statuses,
        "qosClass": "Burstable",
    });
    if !init_statuses.is_empty() {
        status["initContainerStatuses"] = Value::Array(init_statuses);
    }
    status
}

/// `seconds` after 2026-11-14T00:00:00Z, RFC 3339.
pub(super) fn timestamp(seconds: u64) -> String {
    let day = 14 + seconds / 86_400;
    let s = seconds % 86_400;
    format!(
        "2026-11-{day:02}T{:02}:{:02}:{:02}Z",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// A node's name.
pub(super) fn node_name(node: usize) -> String {
    format!(
        "ip-10-0-{}-{}.eu-west-1.compute.internal",
        node / 250 % 250,
        2 + node % 250
    )
}
