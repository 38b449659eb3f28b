//! Object names: which names kube-apiserver accepts for which kinds, and the 422 it answers
//! otherwise, on informer-testserver and kube-apiserver. (A Lease named after a replica's
//! identity, `<set>-member-Host_A`, is refused: the shard set encodes identities for that.)

use informer_conformance::*;
use serde_json::{Value, json};

/// One kind: its collection path (`{ns}` for the scenario's namespace), and the rest of a
/// body kube-apiserver accepts.
struct Kind {
    path: &'static str,
    api_version: &'static str,
    kind: &'static str,
    extra: fn() -> Value,
    namespaced: bool,
}

const CONFIG_MAP: Kind = Kind {
    path: "/api/v1/namespaces/{ns}/configmaps",
    api_version: "v1",
    kind: "ConfigMap",
    extra: || json!({}),
    namespaced: true,
};
const LEASE: Kind = Kind {
    path: "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
    api_version: "coordination.k8s.io/v1",
    kind: "Lease",
    extra: || json!({"spec": {}}),
    namespaced: true,
};
const NAMESPACE: Kind = Kind {
    path: "/api/v1/namespaces",
    api_version: "v1",
    kind: "Namespace",
    extra: || json!({}),
    namespaced: false,
};
const SERVICE: Kind = Kind {
    path: "/api/v1/namespaces/{ns}/services",
    api_version: "v1",
    kind: "Service",
    extra: || json!({"spec": {"ports": [{"port": 80}]}}),
    namespaced: true,
};
const CLUSTER_ROLE: Kind = Kind {
    path: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    api_version: "rbac.authorization.k8s.io/v1",
    kind: "ClusterRole",
    extra: || json!({"rules": []}),
    namespaced: false,
};

const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of";
const LABEL: &str = "a lowercase RFC 1123 label must consist of";

/// (kind, name, `None` if created, else a part of the `metadata.name` cause's message), as
/// kube-apiserver 1.37 answers them.
fn cases(long: &'static str) -> Vec<(&'static Kind, &'static str, Option<&'static str>)> {
    vec![
        (&CONFIG_MAP, "plain-name", None),
        (&CONFIG_MAP, "dots.in.name", None),
        (&CONFIG_MAP, "9-starts-with-digit", None),
        (&CONFIG_MAP, "Upper-Case", Some(SUBDOMAIN)),
        (&CONFIG_MAP, "under_score", Some(SUBDOMAIN)),
        (&CONFIG_MAP, "system:colon", Some(SUBDOMAIN)),
        (&CONFIG_MAP, "-leading-dash", Some(SUBDOMAIN)),
        (&CONFIG_MAP, "..", Some(SUBDOMAIN)),
        (
            &CONFIG_MAP,
            long,
            Some("must be no more than 253 characters"),
        ),
        (&LEASE, "set-member-replica-0", None),
        (&LEASE, "set-member-Host_A", Some(SUBDOMAIN)),
        (&LEASE, "set-member-10.0.0.1", None),
        (&NAMESPACE, "9-starts-with-digit", None),
        (&NAMESPACE, "Upper-Case", Some(LABEL)),
        (&NAMESPACE, "dots.in.name", Some("must not contain dots")),
        (&SERVICE, "9-starts-with-digit", None),
        (&SERVICE, "dots.in.name", Some("must not contain dots")),
        (&SERVICE, "under_score", Some(LABEL)),
        // (A Service named ".." fails kube-apiserver's cluster IP allocation before its name
        // is validated; the test server allocates no IPs.)
        (&CLUSTER_ROLE, "system:Upper_Case", None),
        (&CLUSTER_ROLE, long, None),
        (&CLUSTER_ROLE, "..", Some("may not be '..'")),
    ]
}

async fn send(
    client: &kube::Client,
    method: http::Method,
    path: &str,
    body: Option<&Value>,
) -> Result<Value, kube::Error> {
    let req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json")
        .body(
            body.map(|b| serde_json::to_vec(b).expect("JSON"))
                .unwrap_or_default(),
        )
        .expect("a request");
    client.request::<Value>(req).await
}

conformance!(object_names_are_validated_per_kind);
/// Names are validated per kind on create: a lowercase RFC 1123 subdomain for most kinds
/// (Leases and ConfigMaps included), an RFC 1123 label for Namespaces and Services, any path
/// segment for RBAC roles. A refused name is a 422 Invalid whose causes name `metadata.name`.
async fn object_names_are_validated_per_kind(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("names").await;
    let long: &'static str = Box::leak("x".repeat(254).into_boxed_str());
    let mut created = Vec::new();
    for (kind, name, refused) in cases(long) {
        let path = kind.path.replace("{ns}", &ns);
        let mut body = (kind.extra)();
        body["apiVersion"] = json!(kind.api_version);
        body["kind"] = json!(kind.kind);
        body["metadata"] = json!({ "name": name });
        let what = format!("{} {} {name:.40}", backend.name(), kind.kind);
        match (
            send(&client, http::Method::POST, &path, Some(&body)).await,
            refused,
        ) {
            (Ok(_), None) => {
                if !kind.namespaced {
                    created.push(format!("{path}/{name}"));
                }
            }
            (Ok(_), Some(why)) => panic!("{what}: created, but kube-apiserver refuses it ({why})"),
            (Err(kube::Error::Api(s)), Some(why)) => {
                assert_eq!(
                    (s.code, s.reason.as_str()),
                    (422, "Invalid"),
                    "{what}: {s:?}"
                );
                let causes = s
                    .details
                    .as_ref()
                    .map(|d| d.causes.clone())
                    .unwrap_or_default();
                assert!(
                    causes
                        .iter()
                        .any(|c| c.field == "metadata.name" && c.message.contains(why)),
                    "{what}: no metadata.name cause saying {why:?}: {s:?}"
                );
                let qualified = match kind.api_version.rsplit_once('/') {
                    Some((group, _)) => format!("{}.{group}", kind.kind),
                    None => kind.kind.to_owned(),
                };
                assert!(
                    s.message
                        .starts_with(&format!("{qualified} \"{name}\" is invalid: ")),
                    "{what}: {}",
                    s.message
                );
            }
            (Err(e), None) => panic!("{what}: refused, but kube-apiserver accepts it: {e}"),
            (Err(e), Some(_)) => panic!("{what}: {e}"),
        }
    }
    // The exact text of one refusal, as kube-apiserver writes it.
    let mut body =
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Upper-Case"}});
    body["data"] = json!({});
    let Err(kube::Error::Api(s)) = send(
        &client,
        http::Method::POST,
        &CONFIG_MAP.path.replace("{ns}", &ns),
        Some(&body),
    )
    .await
    else {
        panic!("Upper-Case was created");
    };
    assert_eq!(
        s.message,
        "ConfigMap \"Upper-Case\" is invalid: metadata.name: Invalid value: \"Upper-Case\": a lowercase RFC 1123 \
         subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an \
         alphanumeric character (e.g. 'example.com', regex used for validation is \
         '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
    for path in created {
        let _ = send(&client, http::Method::DELETE, &path, None).await;
    }
}
