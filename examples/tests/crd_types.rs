//! Types generated from CRD schemas (`crd-types`, decision record 07): every schema feature of
//! `examples/crds/features.yaml` decodes and re-encodes to the same JSON, and the generated kind
//! works with `kube::Api` and with the generated informers and listers over HTTP against
//! informer-testserver.
//!
//! Run with `cargo test -p informer-examples --test crd_types`.

use informer_test_support::{WAIT, wait_until};

use informer_examples::generated::InformerFactoryExt;
use informer_examples::generated::gizmos::{v1, v1alpha1};
use informer_runtime::compact::IStr;
use informer_runtime::{Meta, SharedInformerFactory};
use informer_testserver::TestServer;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::Selector;
use kube::core::object::{HasSpec, HasStatus};
use serde_json::{Value, json};

/// A Gizmo using every schema feature, as the API server would send it.
fn gizmo_json(name: &str, size: i32) -> Value {
    json!({
        "apiVersion": "features.example.com/v1",
        "kind": "Gizmo",
        "metadata": {"name": name, "namespace": "prod", "labels": {"app": "gizmo"}},
        "spec": {
            "size": size,
            "count": 1,
            "ratio": 0.25,
            "enabled": null,
            "name": "first",
            "phase": "Paused",
            "level": 2,
            "created": "2026-11-20T08:14:03Z",
            "payload": "aGVsbG8=",
            "port": "http",
            "config": {"b": [1, 2.5, "x", null, true], "a": {"nested": {}}},
            "anyValue": [1, "two"],
            "extra": {"known": "k", "surprise": {"deep": [1]}, "other": "o"},
            "labels": {"tier": "backend", "zone": "a"},
            "limits": {"cpu": {"max": 4}, "mem": {}},
            "anything": {"x": 1, "y": {"z": null}},
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t"},
                         "spec": {"containers": [{"name": "c", "image": "i"}]}},
            "child": {"apiVersion": "apps/v1", "kind": "Deployment",
                      "metadata": {"name": "child", "labels": {"a": "b"}},
                      "spec": {"replicas": 3}},
            "nested": {"level1": {"level2": {"value": "deep"}}},
            "items": [
                {"type": "a", "self": "s", "fooBar": "camel", "foo_bar": "snake", "$ref": "r", "8080": 1},
                {"type": "b"}
            ],
            "tags": ["x", "y"],
            "matrix": [[1, 2], [], [3]],
            "nullableObject": null,
            "requiredNullable": null,
            "empty": {}
        },
        "specItems": {"note": "collision"},
        "status": {
            "replicas": size,
            "selector": "app=gizmo",
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-20T08:14:05Z",
                 "message": "ok"},
                {"type": "Degraded", "status": "Maybe"}
            ]
        }
    })
}

#[test]
fn every_schema_feature_round_trips() {
    let json = gizmo_json("g1", 2);
    let g: v1::Gizmo = serde_json::from_value(json.clone()).expect("decodes");
    assert_eq!(
        serde_json::to_value(&g).unwrap(),
        json,
        "re-encodes the same JSON"
    );
    // The full form (`kube::Api`'s) reads and writes the same JSON, and converts to and from the
    // compact one without a difference (decision record 27).
    let full: v1::full::Gizmo = serde_json::from_value(json.clone()).expect("decodes");
    assert_eq!(serde_json::to_value(&full).unwrap(), json);
    assert_eq!(v1::Gizmo::from(&full), g);
    assert_eq!(v1::full::Gizmo::from(&g), full);

    let spec = &g.spec;
    assert_eq!(spec.size, 2);
    // `type: number` keeps the number as written: an integral value does not come back as `1.0`.
    for ratio in ["1", "0.25", "1.0", "12345678901234567890"] {
        let mut doc = json.clone();
        doc["spec"]["ratio"] = serde_json::from_str(ratio).unwrap();
        let text = serde_json::to_string(&doc).unwrap();
        let again: v1::Gizmo = serde_json::from_str(&text).unwrap();
        assert_eq!(
            serde_json::to_string(&again).unwrap(),
            text,
            "ratio {ratio}"
        );
    }
    // An enum value the schema does not list is kept (forward compatibility).
    assert_eq!(
        spec.phase,
        Some(v1::GizmoSpecPhase::Other(IStr::new("Paused")))
    );
    // Every value reads back in the JSON's own spelling, listed or not.
    for (phase, json) in [
        (v1::GizmoSpecPhase::Running, "Running"),
        (v1::GizmoSpecPhase::running, "running"),
        (v1::GizmoSpecPhase::Empty, ""),
        (v1::GizmoSpecPhase::T3d, "3d"),
        (v1::GizmoSpecPhase::Other(IStr::new("Paused")), "Paused"),
    ] {
        assert_eq!(phase.as_str(), json);
        assert_eq!(phase.to_string(), json);
        assert_eq!(serde_json::to_value(&phase).unwrap(), json);
    }
    // `nullable`: an explicit null is `Some(None)`, absent is `None`.
    assert_eq!(spec.enabled, Some(None));
    assert_eq!(spec.nullable_object, Some(None));
    assert_eq!(spec.required_nullable, None);
    assert_eq!(spec.port, Some(IntOrString::String("http".into())));
    assert_eq!(spec.labels.as_ref().unwrap().get("zone"), Some("a"));
    assert_eq!(
        spec.limits.as_ref().unwrap().get("cpu").unwrap().max,
        Some(4)
    );
    let extra = spec.extra.as_ref().unwrap();
    assert_eq!(extra.known.as_deref(), Some("k"));
    assert_eq!(extra.unknown_fields.len(), 2, "unknown fields are kept");
    let items = spec.items.as_deref().unwrap();
    assert_eq!(
        (items[0].foo_bar.as_deref(), items[0].foo_bar_2.as_deref()),
        (Some("camel"), Some("snake"))
    );
    assert_eq!(items[0].r#type.as_str(), "a");
    assert_eq!(items[0].self_.as_deref(), Some("s"));
    assert_eq!(items[0].r#ref.as_deref(), Some("r"));
    assert_eq!(items[0]._8080, Some(1));
    let child = spec.child.as_deref().unwrap();
    assert_eq!(
        child.metadata.as_ref().unwrap().name.as_deref(),
        Some("child")
    );
    assert_eq!(child.spec.as_deref().unwrap().replicas, Some(3));
    let status = g.status().unwrap();
    let conditions = status.conditions.as_deref().unwrap();
    assert_eq!(conditions[0].status, v1::GizmoStatusConditionsStatus::True);
    assert_eq!(
        conditions[1].status,
        v1::GizmoStatusConditionsStatus::Other(IStr::new("Maybe"))
    );

    // Absent optional fields stay absent; a known enum value is its variant.
    let minimal = json!({"apiVersion": "features.example.com/v1", "kind": "Gizmo",
                         "metadata": {"name": "m"},
                         "spec": {"size": 1, "phase": "Running", "requiredNullable": "set"}});
    let m: v1::Gizmo = serde_json::from_value(minimal.clone()).unwrap();
    assert_eq!(m.spec.phase, Some(v1::GizmoSpecPhase::Running));
    assert_eq!(m.spec.enabled, None);
    assert_eq!(serde_json::to_value(&m).unwrap(), minimal);
}

#[test]
fn required_fields_kind_checks_and_other_versions() {
    // A required field missing is an error that names it.
    let err = serde_json::from_value::<v1::Gizmo>(json!({"metadata": {"name": "x"}, "spec": {}}))
        .unwrap_err();
    assert!(err.to_string().contains("size"), "{err}");
    // Another kind is refused (R16).
    let err = serde_json::from_value::<v1::Gizmo>(
        json!({"kind": "Widget", "metadata": {"name": "x"}, "spec": {"size": 1, "requiredNullable": null}}),
    )
    .unwrap_err();
    assert!(err.to_string().contains("expected kind `Gizmo`"), "{err}");
    // The older version has its own module and types.
    let old = json!({"apiVersion": "features.example.com/v1alpha1", "kind": "Gizmo",
                     "metadata": {"name": "o"}, "spec": {"size": 7}});
    let g: v1alpha1::Gizmo = serde_json::from_value(old.clone()).unwrap();
    assert_eq!(g.spec.as_ref().unwrap().size, 7_i64);
    assert_eq!(serde_json::to_value(&g).unwrap(), old);
    // A kind whose schema preserves unknown fields keeps them at the top level.
    let thing = json!({"apiVersion": "features.example.com/v1", "kind": "Thing",
                       "metadata": {"name": "t"}, "owner": "me", "data": {"k": [1, 2]}, "x": 1});
    let t: informer_examples::generated::gizmos::v1::Thing =
        serde_json::from_value(thing.clone()).unwrap();
    assert_eq!(t.owner.as_deref(), Some("me"));
    assert_eq!(serde_json::to_value(&t).unwrap(), thing);
}

#[test]
fn the_full_kind_is_a_kube_resource_and_the_compact_one_shares_its_constants() {
    use kube::Resource;
    assert_eq!(v1::full::Gizmo::plural(&()), "gizmos");
    assert_eq!(v1::full::Gizmo::api_version(&()), "features.example.com/v1");
    assert_eq!(v1::full::Gizmo::kind(&()), "Gizmo");
    assert_eq!(
        <v1::full::Gizmo as k8s_openapi::ListableResource>::LIST_KIND,
        "GizmoList"
    );
    // The compact form, which the informers cache, answers to the same kind.
    assert_eq!(
        <v1::Gizmo as k8s_openapi::Resource>::URL_PATH_SEGMENT,
        "gizmos"
    );
    assert_eq!(
        <v1::Gizmo as k8s_openapi::Resource>::API_VERSION,
        "features.example.com/v1"
    );
    let url = v1::full::Gizmo::url_path(&(), Some("prod"));
    assert_eq!(url, "/apis/features.example.com/v1/namespaces/prod/gizmos");
    let cluster = v1::full::Thing::url_path(&(), None);
    assert_eq!(cluster, "/apis/features.example.com/v1/things");
    let mut g = v1::full::Gizmo::new(
        "n",
        v1::GizmoSpec {
            size: 3,
            ..Default::default()
        },
    );
    assert_eq!(g.meta().name.as_deref(), Some("n"));
    g.spec_mut().size = 4;
    assert_eq!(g.spec().size, 4);
    assert!(g.status().is_none());
}

/// An operator-style loop over HTTP: the CRD from the manifest is installed, objects are written
/// through `kube::Api<full::Gizmo>` (the generated full form) and read back through the generated
/// informer and lister, which cache the compact form; the status subresource is written the way a
/// controller reports progress.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generated_types_work_with_kube_api_and_generated_informers() {
    let server = TestServer::start().await.expect("testserver");
    server
        .apply_yaml(include_str!("../crds/features.yaml"))
        .expect("the manifest installs");
    let factory = SharedInformerFactory::builder(server.client()).build();
    let gizmos = factory.features().v1().gizmos();
    let lister = gizmos.lister();
    // `full()`: a second informer of the same endpoint, caching the full form.
    let full_lister = gizmos.full().lister();
    factory.start();
    assert!(
        factory.wait_for_cache_sync_timeout(WAIT).await.is_ok(),
        "syncs"
    );

    let api: Api<v1::full::Gizmo> = Api::namespaced(server.client(), "prod");
    // The API server validates against the schema (informer-testserver as kube-apiserver): an
    // enum value outside the schema's list, which the type keeps when it reads one, is refused.
    let mut paused = gizmo_json("g1", 2);
    let refused = api
        .create(
            &PostParams::default(),
            &serde_json::from_value(paused.clone()).unwrap(),
        )
        .await
        .expect_err("Paused is not in the schema's enum");
    assert!(
        matches!(&refused, kube::Error::Api(s) if s.code == 422 && s.message.contains("spec.phase: Unsupported value: \"Paused\"")),
        "{refused}"
    );
    paused["spec"]["phase"] = json!("Running");
    let sent: v1::full::Gizmo = serde_json::from_value(paused).unwrap();
    let created = api
        .create(&PostParams::default(), &sent)
        .await
        .expect("create");
    assert_eq!(
        created.spec, sent.spec,
        "the server's copy decodes to the same spec"
    );
    let mut small = v1::full::Gizmo::new(
        "g2",
        v1::GizmoSpec {
            size: 1,
            ..Default::default()
        },
    );
    small.metadata.labels = Some([("app".to_owned(), "other".to_owned())].into());
    api.create(&PostParams::default(), &small)
        .await
        .expect("create g2");

    wait_until("both gizmos cached", || {
        lister.namespaced("prod").list(&Selector::default()).len() == 2
    })
    .await;
    // The lister hands out the compact form (decision record 27); it converts to exactly what
    // the server holds, in one call.
    let cached: std::sync::Arc<v1::Gizmo> = lister.namespaced("prod").get("g1").expect("cached");
    assert_eq!(cached.spec, sent.spec);
    assert_eq!(cached.object_uid(), created.metadata.uid.as_deref());
    assert_eq!(
        cached.metadata.labels.as_ref().and_then(|l| l.get("app")),
        Some("gizmo"),
        "the compact ObjectMeta"
    );
    let read = api.get("g1").await.expect("get");
    assert_eq!(v1::full::Gizmo::from(&*cached), read);
    wait_until("the full informer has g1", || {
        full_lister.namespaced("prod").get("g1").is_ok()
    })
    .await;
    let full: std::sync::Arc<v1::full::Gizmo> = full_lister.namespaced("prod").get("g1").unwrap();
    assert_eq!(*full, read);
    assert_eq!(
        lister.list(&Selector::from_iter([("app", "gizmo")])).len(),
        1,
        "label selectors work on the generated type"
    );

    // The controller reports progress through the status subresource.
    let status =
        json!({"status": {"replicas": 1, "conditions": [{"type": "Ready", "status": "True"}]}});
    api.patch_status("g2", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("status patch");
    wait_until("the status reaches the cache", || {
        lister
            .namespaced("prod")
            .get("g2")
            .ok()
            .and_then(|g| g.status.as_ref().and_then(|s| s.replicas))
            == Some(1)
    })
    .await;
    let g2 = lister.namespaced("prod").get("g2").unwrap();
    assert_eq!(
        g2.status().unwrap().conditions.as_deref().unwrap()[0].status,
        v1::GizmoStatusConditionsStatus::True
    );
    factory.shutdown().await;
}

/// Real-world manifests (examples/crds/vendor/): objects as cert-manager and prometheus-operator
/// write them decode and re-encode to the same JSON, and list through the generated informers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vendored_operator_crds_round_trip_and_list() {
    use informer_examples::generated::certificate_requests::v1::{
        CertificateRequest, CertificateRequestSpecUsages, CertificateRequestStatusConditionsStatus,
    };
    use informer_examples::generated::prometheus_rules::v1::PrometheusRule;

    let cr = json!({
        "apiVersion": "cert-manager.io/v1", "kind": "CertificateRequest",
        "metadata": {"name": "web-tls-1", "namespace": "prod",
                     "annotations": {"cert-manager.io/certificate-name": "web-tls"}},
        "spec": {
            "request": "aGVsbG8gd29ybGQ=",
            "issuerRef": {"name": "letsencrypt", "kind": "ClusterIssuer", "group": "cert-manager.io"},
            "usages": ["digital signature", "key encipherment", "server auth"],
            "duration": "2160h0m0s", "isCA": false,
            "extra": {"scopes": ["a", "b"]}, "groups": ["system:authenticated"],
            "username": "system:serviceaccount:cert-manager:cert-manager", "uid": "7c2e"
        },
        "status": {
            "certificate": "aGVsbG8gd29ybGQ=",
            "conditions": [
                {"type": "Approved", "status": "True", "reason": "cert-manager.io",
                 "message": "Certificate request has been approved by cert-manager.io",
                 "lastTransitionTime": "2026-11-20T08:14:03Z"},
                {"type": "Ready", "status": "True", "reason": "Issued",
                 "lastTransitionTime": "2026-11-20T08:14:09Z"}
            ]
        }
    });
    let typed: CertificateRequest = serde_json::from_value(cr.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), cr);
    let spec = typed.spec.as_deref().unwrap();
    assert_eq!(
        spec.usages.as_deref().unwrap()[2],
        CertificateRequestSpecUsages::ServerAuth
    );
    assert_eq!(spec.request.0, b"hello world");
    assert_eq!(
        typed.status().unwrap().conditions.as_deref().unwrap()[1].status,
        CertificateRequestStatusConditionsStatus::True
    );

    let rule = json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": "node-rules", "namespace": "monitoring", "labels": {"role": "alert-rules"}},
        "spec": {"groups": [{
            "name": "node", "interval": "30s", "partial_response_strategy": "warn",
            "rules": [
                {"alert": "NodeDown", "expr": "up{job=\"node\"} == 0", "for": "5m",
                 "labels": {"severity": "critical"}, "annotations": {"summary": "node down"}},
                {"record": "job:up:sum", "expr": 1}
            ]
        }]}
    });
    let typed: PrometheusRule = serde_json::from_value(rule.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), rule);
    let rules = typed.spec.groups.as_deref().unwrap()[0]
        .rules
        .as_deref()
        .unwrap();
    assert_eq!(rules[1].expr, IntOrString::Int(1));
    assert_eq!(rules[0].r#for.as_deref(), Some("5m"));

    // Both kinds list and watch through the generated accessors.
    let server = TestServer::start().await.expect("testserver");
    for manifest in [
        include_str!("../crds/vendor/cert-manager.io_certificaterequests.yaml"),
        include_str!("../crds/vendor/monitoring.coreos.com_prometheusrules.yaml"),
    ] {
        server.apply_yaml(manifest).expect("manifest installs");
    }
    server.create_json(cr).unwrap();
    server.create_json(rule).unwrap();
    let factory = SharedInformerFactory::builder(server.client()).build();
    let requests = factory.cert_manager().v1().certificate_requests().lister();
    let rules = factory.monitoring().v1().prometheus_rules().lister();
    factory.start();
    assert!(
        factory.wait_for_cache_sync_timeout(WAIT).await.is_ok(),
        "syncs"
    );
    let cached = requests
        .namespaced("prod")
        .get("web-tls-1")
        .expect("cached");
    assert_eq!(
        cached.spec.as_deref().unwrap().issuer_ref.name.as_str(),
        "letsencrypt"
    );
    assert_eq!(
        rules
            .list(&Selector::from_iter([("role", "alert-rules")]))
            .len(),
        1
    );
    factory.shutdown().await;
}
