//! What a CRD's structural schema does to the objects written under it, on informer-testserver
//! and kube-apiserver alike: `default`s filled in on create, update, patch and status writes
//! (where the parent exists, in array items and map values, after pruning, before `required` is
//! checked), non-nullable nulls replaced by their default, and a null array item without one
//! refused.

use informer_conformance::*;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use serde_json::{Value, json};

/// A CRD whose schema has a default at every place kube-apiserver applies one.
const DEFAULTED_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: defaulteds.conformance.informer-rs.io
spec:
  group: conformance.informer-rs.io
  scope: Namespaced
  names: {plural: defaulteds, singular: defaulted, kind: Defaulted, listKind: DefaultedList}
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [replicas]
              properties:
                replicas: {type: integer, default: 1}
                mode: {type: string, enum: [Fast, Safe], default: Safe}
                note: {type: string, nullable: true, default: x}
                name: {type: string, default: filled}
                resources:
                  type: object
                  properties:
                    cpu: {type: string, default: 100m}
                limits:
                  type: object
                  default: {}
                  properties:
                    memory: {type: string, default: 64Mi}
                ports:
                  type: array
                  items:
                    type: object
                    properties:
                      port: {type: integer}
                      protocol: {type: string, default: TCP}
                weights:
                  type: object
                  additionalProperties:
                    type: object
                    default: {weight: 5}
                    properties:
                      weight: {type: integer, default: 10}
                free:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
            status:
              type: object
              properties:
                phase: {type: string, default: Pending}
                observed: {type: integer}
"#;

fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("conformance.informer-rs.io", "v1", "Defaulted"),
        "defaulteds",
    )
}

fn defaulted(ns: &str, name: &str, spec: Value) -> DynamicObject {
    let mut obj = DynamicObject::new(name, &resource()).within(ns);
    obj.data = json!({ "spec": spec });
    obj
}

conformance!(crd_defaults_on_every_write);
/// The same object, defaulted the same way by both servers, through every kind of write.
async fn crd_defaults_on_every_write(backend: &Backend) {
    backend.install_crds(DEFAULTED_CRD).await;
    let ns = backend.namespace("defaults").await;
    let api: Api<DynamicObject> = Api::namespaced_with(backend.client().await, &ns, &resource());

    // Create: every default whose parent exists, non-nullable nulls replaced, a nullable null
    // kept, an unknown field pruned first, `status` dropped (status subresource), `required`
    // met by a default.
    let sent = defaulted(
        &ns,
        "d1",
        json!({
            "note": null, "name": null, "unknown": 1,
            "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}],
            "weights": {"a": {}, "b": {"weight": 1}, "c": null},
            "free": {"x": {}}
        }),
    );
    let created = api
        .create(&PostParams::default(), &sent)
        .await
        .expect("create");
    let want_spec = json!({
        "replicas": 1, "mode": "Safe", "note": null, "name": "filled",
        "limits": {"memory": "64Mi"},
        "ports": [{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}],
        "weights": {"a": {"weight": 10}, "b": {"weight": 1}, "c": {"weight": 5}},
        "free": {"x": {}}
    });
    assert_eq!(created.data["spec"], want_spec, "{}", backend.name());
    assert_eq!(created.data.get("status"), None, "{}", backend.name());
    let read = api.get("d1").await.expect("get");
    assert_eq!(read.data["spec"], want_spec, "stored as answered");

    // Update (PUT): fields left out are defaulted again; a nested default lands once its parent
    // is sent.
    let mut next = read.clone();
    next.data["spec"] = json!({"replicas": 3, "resources": {}});
    let updated = api
        .replace("d1", &PostParams::default(), &next)
        .await
        .expect("update");
    assert_eq!(
        updated.data["spec"],
        json!({
            "replicas": 3, "mode": "Safe", "note": "x", "name": "filled",
            "resources": {"cpu": "100m"}, "limits": {"memory": "64Mi"}
        }),
        "{}",
        backend.name()
    );

    // Merge patch: a field set to null is removed, then defaulted.
    let patch = json!({"spec": {"mode": null, "limits": {"memory": "1Gi"}}});
    let patched = api
        .patch("d1", &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("merge patch");
    assert_eq!(
        patched.data["spec"]["mode"],
        json!("Safe"),
        "{}",
        backend.name()
    );
    assert_eq!(patched.data["spec"]["limits"], json!({"memory": "1Gi"}));

    // Status subresource: defaults inside the status that is written.
    let status = json!({"status": {"observed": 2}});
    let with_status = api
        .patch_status("d1", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("status patch");
    assert_eq!(
        with_status.data["status"],
        json!({"phase": "Pending", "observed": 2}),
        "{}",
        backend.name()
    );
    assert_eq!(with_status.data["spec"], patched.data["spec"]);

    // A null array item without a default is invalid (422), not dropped.
    let bad = defaulted(&ns, "d2", json!({"ports": [null]}));
    let err = api
        .create(&PostParams::default(), &bad)
        .await
        .expect_err("a null item of a non-nullable object array");
    let kube::Error::Api(status) = err else {
        panic!("{}: not an API error: {err}", backend.name());
    };
    assert_eq!(status.code, 422, "{}: {status:?}", backend.name());
    assert!(
        status.message.contains("spec.ports[0]"),
        "{}: {}",
        backend.name(),
        status.message
    );
    assert!(api.get_opt("d2").await.expect("get d2").is_none());
    let names: Vec<String> = api
        .list(&Default::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(names, ["d1"]);
}
