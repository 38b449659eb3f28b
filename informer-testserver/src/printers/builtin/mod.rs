//! Built-in printers (kubernetes/pkg/printers/internalversion/printers.go): the cells of common
//! kinds; their column definitions are in `columns.rs`.

use serde_json::{Value, json};

use super::{age, human_duration};

mod columns;

pub(super) use columns::defs;

fn text(obj: &Value, ptr: &str) -> String {
    obj.pointer(ptr)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn int(obj: &Value, ptr: &str) -> i64 {
    obj.pointer(ptr).and_then(Value::as_i64).unwrap_or(0)
}

fn list<'a>(obj: &'a Value, ptr: &str) -> &'a [Value] {
    obj.pointer(ptr)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn or_none(s: String) -> String {
    if s.is_empty() { "<none>".into() } else { s }
}

fn template_cells(obj: &Value) -> [Value; 3] {
    template_cells_at(obj, "/spec")
}

/// Containers, images and selector of the pod template under `spec` (`/spec`, or a CronJob's
/// `/spec/jobTemplate/spec`).
fn template_cells_at(obj: &Value, spec: &str) -> [Value; 3] {
    let containers = list(obj, &format!("{spec}/template/spec/containers"));
    let join = |field: &str| {
        containers
            .iter()
            .map(|c| c.get(field).and_then(Value::as_str).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(",")
    };
    [
        json!(join("name")),
        json!(join("image")),
        json!(selector(obj.pointer(&format!("{spec}/selector")))),
    ]
}

/// A label selector as kubectl prints it (`app=web,tier in (a,b)`).
fn selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel else {
        return "<none>".into();
    };
    let mut parts: Vec<String> = Vec::new();
    let labels = sel.get("matchLabels").unwrap_or(sel);
    if let Some(m) = labels.as_object() {
        parts.extend(
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| format!("{k}={v}"))),
        );
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let values: Vec<&str> = e
            .get("values")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        parts.push(
            match e
                .get("operator")
                .and_then(Value::as_str)
                .unwrap_or_default()
            {
                "In" => format!("{key} in ({})", values.join(",")),
                "NotIn" => format!("{key} notin ({})", values.join(",")),
                "Exists" => key.to_owned(),
                "DoesNotExist" => format!("!{key}"),
                other => format!("{key} {other}"),
            },
        );
    }
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

fn job_cells(obj: &Value, now: i64) -> Vec<Value> {
    let [c, i, s] = template_cells(obj);
    let condition = |ty: &str| {
        list(obj, "/status/conditions").iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(ty)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
    };
    let status = if obj.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if condition("Complete") {
        "Complete"
    } else if condition("Failed") {
        "Failed"
    } else if condition("Suspended") {
        "Suspended"
    } else if condition("FailureTarget") {
        "FailureTarget"
    } else if condition("SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let succeeded = int(obj, "/status/succeeded");
    let completions = match obj.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(n) => format!("{succeeded}/{n}"),
        None => match obj.pointer("/spec/parallelism").and_then(Value::as_i64) {
            Some(p) if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let ts = |ptr: &str| {
        obj.pointer(ptr)
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<jiff::Timestamp>().ok())
            .map(|t| t.as_second())
    };
    let duration = match (ts("/status/startTime"), ts("/status/completionTime")) {
        (Some(start), Some(end)) => human_duration(end - start),
        (Some(start), None) => human_duration(now - start),
        _ => String::new(),
    };
    vec![
        json!(status),
        json!(completions),
        json!(duration),
        Value::Null,
        c,
        i,
        s,
    ]
}

fn ingress_cells(obj: &Value) -> Vec<Value> {
    let hosts: Vec<&str> = list(obj, "/spec/rules")
        .iter()
        .map(|r| r.get("host").and_then(Value::as_str).unwrap_or("*"))
        .collect();
    let address: Vec<&str> = list(obj, "/status/loadBalancer/ingress")
        .iter()
        .filter_map(|i| {
            i.get("ip")
                .or_else(|| i.get("hostname"))
                .and_then(Value::as_str)
        })
        .collect();
    let ports = if list(obj, "/spec/tls").is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        json!(or_none(text(obj, "/spec/ingressClassName"))),
        json!(if hosts.is_empty() {
            "*".to_owned()
        } else {
            hosts.join(",")
        }),
        json!(address.join(",")),
        json!(ports),
    ]
}

fn node_cells(obj: &Value) -> Vec<Value> {
    let ready = list(obj, "/status/conditions")
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Ready"))
        .and_then(|c| c.get("status").and_then(Value::as_str));
    let mut status = match ready {
        Some("True") => "Ready".to_owned(),
        Some(_) => "NotReady".to_owned(),
        None => "Unknown".to_owned(),
    };
    if obj.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true) {
        status.push_str(",SchedulingDisabled");
    }
    let mut roles: Vec<&str> = obj
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|m| {
            m.keys()
                .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                .filter(|r| !r.is_empty())
                .collect()
        })
        .unwrap_or_default();
    roles.sort_unstable();
    let address = |ty: &str| {
        let ips: Vec<&str> = list(obj, "/status/addresses")
            .iter()
            .filter(|a| a.get("type").and_then(Value::as_str) == Some(ty))
            .filter_map(|a| a.get("address").and_then(Value::as_str))
            .collect();
        or_none(ips.join(","))
    };
    vec![
        json!(status),
        json!(or_none(roles.join(","))),
        Value::Null,
        json!(text(obj, "/status/nodeInfo/kubeletVersion")),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(or_unknown(text(obj, "/status/nodeInfo/osImage"))),
        json!(or_unknown(text(obj, "/status/nodeInfo/kernelVersion"))),
        json!(or_unknown(text(
            obj,
            "/status/nodeInfo/containerRuntimeVersion"
        ))),
    ]
}

fn or_unknown(s: String) -> String {
    if s.is_empty() { "<unknown>".into() } else { s }
}

/// The cells of one object, by position in [`defs`] (Age's cell is computed by the caller).
pub(super) fn cells(group: &str, kind: &str, obj: &Value, now: i64) -> Vec<Value> {
    let count = |ptr: &str| {
        obj.pointer(ptr)
            .and_then(Value::as_object)
            .map_or(0, |m| m.len())
    };
    match (group, kind) {
        ("", "ConfigMap") => vec![json!(count("/data") + count("/binaryData"))],
        ("", "Secret") => vec![json!(text(obj, "/type")), json!(count("/data"))],
        ("", "Namespace") => vec![json!(text(obj, "/status/phase"))],
        ("", "Pod") => pod_cells(obj),
        ("apps", "Deployment") => {
            let [c, i, s] = template_cells(obj);
            vec![
                json!(format!(
                    "{}/{}",
                    int(obj, "/status/readyReplicas"),
                    desired(obj)
                )),
                json!(int(obj, "/status/updatedReplicas")),
                json!(int(obj, "/status/availableReplicas")),
                Value::Null,
                c,
                i,
                s,
            ]
        }
        ("apps", "ReplicaSet") | ("", "ReplicationController") => {
            let [c, i, s] = template_cells(obj);
            vec![
                json!(desired(obj)),
                json!(int(obj, "/status/replicas")),
                json!(int(obj, "/status/readyReplicas")),
                Value::Null,
                c,
                i,
                s,
            ]
        }
        ("apps", "StatefulSet") => {
            let [c, i, _] = template_cells(obj);
            vec![
                json!(format!(
                    "{}/{}",
                    int(obj, "/status/readyReplicas"),
                    desired(obj)
                )),
                Value::Null,
                c,
                i,
            ]
        }
        ("", "Service") => service_cells(obj),
        ("apps", "DaemonSet") => daemon_set_cells(obj),
        ("batch", "Job") => job_cells(obj, now),
        ("batch", "CronJob") => cron_job_cells(obj, now),
        ("", "ServiceAccount") => vec![json!(list(obj, "/secrets").len())],
        ("", "PersistentVolumeClaim") => pvc_cells(obj),
        ("networking.k8s.io", "Ingress") => ingress_cells(obj),
        ("", "Node") => node_cells(obj),
        _ => Vec::new(),
    }
}

fn daemon_set_cells(obj: &Value) -> Vec<Value> {
    let [c, i, s] = template_cells(obj);
    let node_selector =
        crate::selectors::equality_selector(obj.pointer("/spec/template/spec/nodeSelector"));
    vec![
        json!(int(obj, "/status/desiredNumberScheduled")),
        json!(int(obj, "/status/currentNumberScheduled")),
        json!(int(obj, "/status/numberReady")),
        json!(int(obj, "/status/updatedNumberScheduled")),
        json!(int(obj, "/status/numberAvailable")),
        json!(or_none(node_selector)),
        Value::Null,
        c,
        i,
        s,
    ]
}

fn cron_job_cells(obj: &Value, now: i64) -> Vec<Value> {
    let [c, i, s] = template_cells_at(obj, "/spec/jobTemplate/spec");
    let timezone = or_none(text(obj, "/spec/timeZone"));
    let suspend = obj
        .pointer("/spec/suspend")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let last = obj
        .pointer("/status/lastScheduleTime")
        .map_or_else(|| "<none>".to_owned(), |t| age(Some(t), now));
    vec![
        json!(text(obj, "/spec/schedule")),
        json!(timezone),
        json!(if suspend { "True" } else { "False" }),
        json!(list(obj, "/status/active").len()),
        json!(last),
        Value::Null,
        c,
        i,
        s,
    ]
}

fn pvc_cells(obj: &Value) -> Vec<Value> {
    let modes = list(obj, "/spec/accessModes")
        .iter()
        .filter_map(Value::as_str)
        .map(|m| match m {
            "ReadWriteOnce" => "RWO",
            "ReadOnlyMany" => "ROX",
            "ReadWriteMany" => "RWX",
            "ReadWriteOncePod" => "RWOP",
            other => other,
        })
        .collect::<Vec<_>>()
        .join(",");
    let vac = match text(obj, "/spec/volumeAttributesClassName") {
        c if c.is_empty() => "<unset>".to_owned(),
        c => c,
    };
    vec![
        json!(text(obj, "/status/phase")),
        json!(text(obj, "/spec/volumeName")),
        json!(text(obj, "/status/capacity/storage")),
        json!(modes),
        json!(text(obj, "/spec/storageClassName")),
        json!(vac),
        Value::Null,
        json!(text(obj, "/spec/volumeMode")),
    ]
}

/// `spec.replicas`, which defaults to 1.
fn desired(obj: &Value) -> i64 {
    obj.pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

fn pod_cells(obj: &Value) -> Vec<Value> {
    let statuses = list(obj, "/status/containerStatuses");
    let total = list(obj, "/spec/containers").len();
    let ready = statuses
        .iter()
        .filter(|c| c.get("ready").and_then(Value::as_bool) == Some(true))
        .count();
    let restarts: i64 = statuses
        .iter()
        .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
        .sum();
    let mut reason = text(obj, "/status/reason");
    if reason.is_empty() {
        reason = text(obj, "/status/phase");
    }
    // A waiting or terminated container's reason wins over the phase, as in kubectl.
    for c in statuses {
        for state in ["waiting", "terminated"] {
            if let Some(r) = c
                .pointer(&format!("/state/{state}/reason"))
                .and_then(Value::as_str)
                && !r.is_empty()
            {
                reason = r.to_owned();
            }
        }
    }
    if obj.pointer("/metadata/deletionTimestamp").is_some() {
        reason = "Terminating".into();
    }
    if reason.is_empty() {
        reason = "Pending".into();
    }
    let gates = list(obj, "/spec/readinessGates");
    let gates = if gates.is_empty() {
        "<none>".to_owned()
    } else {
        let met = gates
            .iter()
            .filter(|g| {
                let ty = g.get("conditionType");
                list(obj, "/status/conditions").iter().any(|c| {
                    c.get("type") == ty && c.get("status").and_then(Value::as_str) == Some("True")
                })
            })
            .count();
        format!("{met}/{}", gates.len())
    };
    vec![
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts.to_string()),
        Value::Null,
        json!(or_none(text(obj, "/status/podIP"))),
        json!(or_none(text(obj, "/spec/nodeName"))),
        json!(or_none(text(obj, "/status/nominatedNodeName"))),
        json!(gates),
    ]
}

fn service_cells(obj: &Value) -> Vec<Value> {
    let ty = match text(obj, "/spec/type") {
        t if t.is_empty() => "ClusterIP".to_owned(),
        t => t,
    };
    let mut external: Vec<String> = list(obj, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    match ty.as_str() {
        "LoadBalancer" => {
            external.extend(
                list(obj, "/status/loadBalancer/ingress")
                    .iter()
                    .filter_map(|i| {
                        i.get("ip")
                            .or_else(|| i.get("hostname"))
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    }),
            );
            if external.is_empty() {
                external.push("<pending>".into());
            }
        }
        "ExternalName" => external.push(text(obj, "/spec/externalName")),
        _ => {}
    }
    let ports: Vec<String> = list(obj, "/spec/ports")
        .iter()
        .map(|p| {
            let port = p.get("port").and_then(Value::as_i64).unwrap_or(0);
            let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
            match p.get("nodePort").and_then(Value::as_i64) {
                Some(n) if n != 0 => format!("{port}:{n}/{proto}"),
                _ => format!("{port}/{proto}"),
            }
        })
        .collect();
    vec![
        json!(ty),
        json!(or_none(text(obj, "/spec/clusterIP"))),
        json!(or_none(external.join(","))),
        json!(or_none(ports.join(","))),
        Value::Null,
        json!(selector(obj.pointer("/spec/selector"))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_cronjob_pvc_and_node_cells() {
        let now = 1_700_000_600;
        let job = json!({"spec": {"completions": 3, "template": {"spec": {"containers": [{"name": "w", "image": "busybox"}]}}},
                         "status": {"succeeded": 3, "startTime": "2023-11-14T22:13:20Z", "completionTime": "2023-11-14T22:15:25Z",
                                    "conditions": [{"type": "Complete", "status": "True"}]}});
        let c = job_cells(&job, now);
        assert_eq!(
            (&c[0], &c[1], &c[2], &c[4]),
            (
                &json!("Complete"),
                &json!("3/3"),
                &json!("2m5s"),
                &json!("w")
            )
        );
        let running =
            json!({"spec": {"parallelism": 2}, "status": {"startTime": "2023-11-14T22:13:20Z"}});
        let c = job_cells(&running, now);
        assert_eq!(
            (&c[0], &c[1], &c[2]),
            (&json!("Running"), &json!("0/1 of 2"), &json!("10m"))
        );
        let cj = json!({"spec": {"schedule": "*/5 * * * *", "suspend": true,
                                 "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}}},
                        "status": {"active": [{"name": "j1"}]}});
        let c = cells("batch", "CronJob", &cj, now);
        assert_eq!(
            &c[..5],
            [
                json!("*/5 * * * *"),
                json!("<none>"),
                json!("True"),
                json!(1),
                json!("<none>")
            ]
        );
        assert_eq!(&c[6..8], [json!("c"), json!("i")]);
        let pvc = json!({"spec": {"accessModes": ["ReadWriteOnce", "ReadOnlyMany"], "storageClassName": "fast", "volumeName": "pv-1"},
                         "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}}});
        let c = cells("", "PersistentVolumeClaim", &pvc, now);
        assert_eq!(
            &c[..6],
            [
                json!("Bound"),
                json!("pv-1"),
                json!("1Gi"),
                json!("RWO,ROX"),
                json!("fast"),
                json!("<unset>")
            ]
        );
        let node = json!({"metadata": {"labels": {"node-role.kubernetes.io/control-plane": ""}},
                          "spec": {"unschedulable": true},
                          "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                     "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                                     "nodeInfo": {"kubeletVersion": "v1.37.0"}}});
        let c = node_cells(&node);
        assert_eq!(
            &c[..5],
            [
                json!("Ready,SchedulingDisabled"),
                json!("control-plane"),
                Value::Null,
                json!("v1.37.0"),
                json!("10.0.0.5")
            ]
        );
        assert_eq!(c[5], "<none>");
    }

    #[test]
    fn pod_and_service_cells() {
        let pod = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
                         "status": {"phase": "Running", "podIP": "10.0.0.1",
                                    "containerStatuses": [{"ready": true, "restartCount": 2},
                                                          {"ready": false, "restartCount": 1, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        let c = pod_cells(&pod);
        assert_eq!(c[0], "1/2");
        assert_eq!(c[1], "CrashLoopBackOff");
        assert_eq!(c[2], "3");
        assert_eq!(c[4], "10.0.0.1");
        assert_eq!(c[5], "n1");
        let svc = json!({"spec": {"type": "NodePort", "clusterIP": "10.96.0.10", "selector": {"app": "web"},
                                  "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}});
        let c = service_cells(&svc);
        assert_eq!(c[0], "NodePort");
        assert_eq!(c[1], "10.96.0.10");
        assert_eq!(c[2], "<none>");
        assert_eq!(c[3], "80:30080/TCP,53/UDP");
        assert_eq!(c[5], "app=web");
    }
}
