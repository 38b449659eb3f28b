//! What an operator is made of, on informer-testserver and kube-apiserver alike: a controller
//! with an owned kind and a finalizer; CRDs installed from manifests and served with the types
//! informer-gen generates from them (examples/crds/, the vendored cert-manager manifest
//! included); compact and projected Pod informers; and the example operator end to end.

use std::collections::BTreeMap;
use std::sync::Arc;

use informer_conformance::*;
use informer_controller::finalizer::{self, Event};
use informer_controller::{Action, Context, Controller, Request};
use informer_examples::demo;
use informer_examples::generated::InformerFactoryExt;
use informer_examples::generated::gizmos::v1 as gizmos;
use informer_examples::operator::{Operator, OperatorConfig, config_map_name};
use informer_examples::views::PodSummary;
use informer_k8s::InformerFactoryExt as _;
use informer_k8s::compact::api::core::v1 as compact;
use informer_runtime::Meta;
use informer_runtime::SharedInformerFactory;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Pod, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind, Selector};
use kube::{Api, ResourceExt};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const FINALIZER: &str = "conformance.informer-rs.io/cleanup";

/// The Secret a primary ConfigMap owns: its data, under the owner's name.
fn owned_secret(primary: &ConfigMap) -> Secret {
    let data = primary
        .data
        .clone()
        .unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k, ByteString(v.into_bytes())))
        .collect();
    Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(format!("{}-owned", primary.name_any())),
            namespace: primary.namespace(),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: primary.name_any(),
                uid: primary.uid().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

/// Makes the owned Secret match the primary (server-side apply), or deletes it on cleanup.
async fn reconcile(
    req: Request<ConfigMap>,
    ctx: Arc<Context<()>>,
) -> Result<Action, finalizer::Error<kube::Error>> {
    let Some(primary) = req.object.clone() else {
        return Ok(Action::Done);
    };
    let ns = req.namespace().unwrap_or("default").to_owned();
    let configmaps: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(ctx.client().clone(), &ns);
    let recorder = ctx.recorder(&req.key);
    finalizer::finalizer(
        &configmaps,
        FINALIZER,
        primary,
        &recorder,
        |event| async move {
            match event {
                Event::Apply(primary) => {
                    let mut secret = owned_secret(&primary);
                    secret.metadata.managed_fields = None;
                    let patch = serde_json::to_value(&secret).map(|mut v| {
                        v["apiVersion"] = json!("v1");
                        v["kind"] = json!("Secret");
                        v
                    });
                    let patch = patch.map_err(kube::Error::SerdeError)?;
                    secrets
                        .patch(
                            &secret.name_any(),
                            &PatchParams::apply("conformance").force(),
                            &Patch::Apply(&patch),
                        )
                        .await?;
                }
                Event::Cleanup(primary) => {
                    let name = format!("{}-owned", primary.name_any());
                    match secrets.delete(&name, &DeleteParams::default()).await {
                        Ok(_) => {}
                        Err(kube::Error::Api(s)) if s.code == 404 => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            Ok(Action::Done)
        },
    )
    .await
}

conformance!(controller_with_owned_objects_and_a_finalizer);
/// A controller over ConfigMaps that owns Secrets: it adds its finalizer, creates the owned
/// Secret, follows an edit, recreates the Secret when someone deletes it (the owned kind maps
/// to its owner), and on deletion cleans up and removes its finalizer so the object goes.
async fn controller_with_owned_objects_and_a_finalizer(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("owner").await;
    let factory = SharedInformerFactory::builder(client.clone())
        .namespace(ns.clone())
        .build();
    let controller = Controller::<ConfigMap>::new(factory, "owner")
        .owns::<Secret>()
        .workers(2);
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move { controller.run(reconcile, (), cancel).await }
    });

    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    let secrets: Api<Secret> = Api::namespaced(client.clone(), &ns);
    configmaps
        .create(
            &PostParams::default(),
            &config_map(&ns, "primary", "one", &[]),
        )
        .await
        .expect("create");
    let secret_says = |want: &'static str| {
        let secrets = secrets.clone();
        move || {
            let secrets = secrets.clone();
            async move {
                secrets
                    .get_opt("primary-owned")
                    .await
                    .ok()
                    .flatten()
                    .and_then(|s| s.data)
                    .and_then(|d| d.get("v").cloned())
                    == Some(ByteString(want.as_bytes().to_vec()))
            }
        }
    };
    wait_for("the owned Secret", secret_says("one")).await;
    let primary = configmaps.get("primary").await.expect("get");
    assert!(primary.finalizers().iter().any(|f| f == FINALIZER));
    let secret = secrets.get("primary-owned").await.expect("get");
    assert_eq!(
        secret.owner_references()[0].uid,
        primary.uid().unwrap_or_default()
    );

    let edit = json!({ "data": { "v": "two" } });
    configmaps
        .patch("primary", &PatchParams::default(), &Patch::Merge(&edit))
        .await
        .expect("edit");
    wait_for("the Secret follows the edit", secret_says("two")).await;

    secrets
        .delete("primary-owned", &DeleteParams::default())
        .await
        .expect("delete the owned Secret");
    wait_for("the owned Secret is recreated", secret_says("two")).await;

    configmaps
        .delete("primary", &DeleteParams::default())
        .await
        .expect("delete the primary");
    wait_for("cleanup ran and the primary is gone", || async {
        configmaps.get_opt("primary").await.ok().flatten().is_none()
            && secrets
                .get_opt("primary-owned")
                .await
                .ok()
                .flatten()
                .is_none()
    })
    .await;
    stop(cancel, run).await;
}

/// Cancels a controller run and checks it ended cleanly.
async fn stop<E: std::fmt::Debug>(
    cancel: CancellationToken,
    run: tokio::task::JoinHandle<Result<(), E>>,
) {
    cancel.cancel();
    tokio::time::timeout(WAIT, run)
        .await
        .expect("the controller stops")
        .expect("no panic")
        .expect("the controller ran cleanly");
}

/// The server's copy of a custom object as JSON.
async fn server_json(
    client: &kube::Client,
    gvk: GroupVersionKind,
    plural: &str,
    ns: &str,
    name: &str,
) -> serde_json::Value {
    let resource = ApiResource::from_gvk_with_plural(&gvk, plural);
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &resource);
    serde_json::to_value(api.get(name).await.expect("get")).expect("json")
}

/// The cached object of a generated type re-encodes to exactly the server's JSON for it
/// (`kind` = (group, kind, plural), version `v1`).
async fn assert_reencodes(
    client: &kube::Client,
    cached: &impl serde::Serialize,
    (group, kind, plural): (&str, &str, &str),
    ns: &str,
    name: &str,
) {
    let gvk = GroupVersionKind::gvk(group, "v1", kind);
    assert_eq!(
        serde_json::to_value(cached).expect("json"),
        server_json(client, gvk, plural, ns, name).await,
        "the generated {kind} re-encodes to the server's JSON"
    );
}

conformance!(reconciles_read_their_own_writes);
/// K1-K3 with the server's own resourceVersions: a controller that bumps a counter and requeues
/// at once sees each of its writes in the next reconcile (the counts go 0, 1, 2, 3 with no
/// repeat), kube-apiserver's resourceVersions being comparable integers (KEP-5504).
async fn reconciles_read_their_own_writes(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("ryw").await;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
    api.create(
        &PostParams::default(),
        &config_map(&ns, "counter", "0", &[]),
    )
    .await
    .expect("create");
    let factory = SharedInformerFactory::builder(client.clone())
        .namespace(ns.clone())
        .build();
    let seen: Arc<parking_lot::Mutex<Vec<u32>>> = Arc::default();
    let controller = Controller::<ConfigMap>::new(factory, "count-up");
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (cancel, seen) = (cancel.clone(), Arc::clone(&seen));
        async move {
            controller
                .run(
                    |req: Request<ConfigMap>,
                     ctx: Arc<Context<Arc<parking_lot::Mutex<Vec<u32>>>>>| async move {
                        let Some(cm) = req.object.clone() else {
                            return Ok::<_, kube::Error>(Action::Done);
                        };
                        let count: u32 = cm
                            .data
                            .as_ref()
                            .and_then(|d| d.get("v"))
                            .and_then(|v| v.parse().ok())
                            .unwrap_or(0);
                        ctx.data().lock().push(count);
                        if count >= 3 {
                            return Ok(Action::Done);
                        }
                        let api: Api<ConfigMap> = Api::namespaced(
                            ctx.client().clone(),
                            req.namespace().unwrap_or_default(),
                        );
                        let patch = json!({"data": {"v": (count + 1).to_string()}});
                        let written = api
                            .patch(req.name(), &PatchParams::default(), &Patch::Merge(&patch))
                            .await?;
                        ctx.recorder(&req.key).record(&written);
                        Ok(Action::Requeue)
                    },
                    seen,
                    cancel,
                )
                .await
        }
    });
    wait_until("a reconcile that sees 3", || seen.lock().contains(&3)).await;
    stop(cancel, run).await;
    // The write of 3 and the requeue after it may both reconcile 3; a stale read would repeat
    // a smaller count.
    let seen = seen.lock().clone();
    let below: Vec<u32> = seen.iter().copied().filter(|c| *c < 3).collect();
    assert_eq!(
        below,
        [0, 1, 2],
        "each reconcile saw the previous write: {seen:?}"
    );
    assert!(seen.is_sorted(), "{seen:?}");
}

conformance!(generated_crd_types_are_served);
/// CRDs from examples/crds/ (one with every schema feature, and the vendored cert-manager and
/// prometheus-operator manifests) are installed and served; objects written through the generated types come back through the
/// generated informers and listers, and decode and re-encode to exactly the server's JSON.
async fn generated_crd_types_are_served(backend: &Backend) {
    // `kube::Api` writes the full forms; the listers hand out the compact ones (decision record 27).
    use informer_examples::generated::certificate_requests::v1::full::CertificateRequest;
    use informer_examples::generated::prometheus_rules::v1::full::PrometheusRule;

    let client = backend.client().await;
    backend
        .install_crds(include_str!("../../examples/crds/features.yaml"))
        .await;
    backend
        .install_crds(include_str!(
            "../../examples/crds/vendor/cert-manager.io_certificaterequests.yaml"
        ))
        .await;
    backend
        .install_crds(include_str!(
            "../../examples/crds/vendor/monitoring.coreos.com_prometheusrules.yaml"
        ))
        .await;
    let ns = backend.namespace("crds").await;
    let factory = SharedInformerFactory::builder(client.clone())
        .namespace(ns.clone())
        .build();
    let gizmo_lister = factory.features().v1().gizmos().lister();
    let request_lister = factory.cert_manager().v1().certificate_requests().lister();
    let rule_lister = factory.monitoring().v1().prometheus_rules().lister();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("sync");

    let gizmo: gizmos::full::Gizmo = serde_json::from_value(json!({
        "apiVersion": "features.example.com/v1", "kind": "Gizmo",
        "metadata": {"name": "g1", "namespace": ns, "labels": {"app": "gizmo"}},
        "spec": {
            "size": 2, "count": 1, "ratio": 0.25, "name": "first", "phase": "Running",
            "level": 2, "created": "2026-11-20T08:14:03Z", "payload": "aGVsbG8=", "port": "http",
            "config": {"b": [1, 2.5, "x", null, true], "a": {"nested": {}}},
            "labels": {"tier": "backend"},
            "nested": {"level1": {"level2": {"value": "deep"}}},
            "items": [{"type": "a", "self": "s"}, {"type": "b"}],
            "tags": ["x", "y"], "matrix": [[1, 2], [], [3]], "empty": {}
        }
    }))
    .expect("a Gizmo");
    let gizmos_api: Api<gizmos::full::Gizmo> = Api::namespaced(client.clone(), &ns);
    let created = gizmos_api
        .create(&PostParams::default(), &gizmo)
        .await
        .expect("create Gizmo");
    assert_eq!(
        created.spec, gizmo.spec,
        "the server's copy decodes to the same spec"
    );
    let request: CertificateRequest = serde_json::from_value(json!({
        "apiVersion": "cert-manager.io/v1", "kind": "CertificateRequest",
        "metadata": {"name": "web-tls-1", "namespace": ns},
        "spec": {
            "request": "aGVsbG8gd29ybGQ=",
            "issuerRef": {"name": "letsencrypt", "kind": "ClusterIssuer", "group": "cert-manager.io"},
            "usages": ["digital signature", "key encipherment", "server auth"],
            "duration": "2160h0m0s", "isCA": false
        }
    }))
    .expect("a CertificateRequest");
    Api::<CertificateRequest>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &request)
        .await
        .expect("create CertificateRequest");
    // An int-or-string `expr`, a duration `for`, and a snake_case field name.
    let rule: PrometheusRule = serde_json::from_value(json!({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": "node-rules", "namespace": ns, "labels": {"role": "alert-rules"}},
        "spec": {"groups": [{
            "name": "node", "interval": "30s", "partial_response_strategy": "warn",
            "rules": [
                {"alert": "NodeDown", "expr": "up{job=\"node\"} == 0", "for": "5m",
                 "labels": {"severity": "critical"}, "annotations": {"summary": "node down"}},
                {"record": "job:up:sum", "expr": 1}
            ]
        }]}
    }))
    .expect("a PrometheusRule");
    Api::<PrometheusRule>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &rule)
        .await
        .expect("create PrometheusRule");

    wait_until("the three objects cached", || {
        gizmo_lister.namespaced(&ns).get("g1").is_ok()
            && request_lister.namespaced(&ns).get("web-tls-1").is_ok()
            && rule_lister.namespaced(&ns).get("node-rules").is_ok()
    })
    .await;
    let cached: std::sync::Arc<gizmos::Gizmo> =
        gizmo_lister.namespaced(&ns).get("g1").expect("cached");
    assert_eq!(cached.spec, gizmo.spec);
    // The compact form converts back to exactly what the server returned.
    assert_eq!(gizmos::full::Gizmo::from(&*cached), created);
    assert_eq!(
        gizmo_lister
            .list(&Selector::from_iter([("app", "gizmo")]))
            .len(),
        1
    );
    assert_reencodes(
        &client,
        &*cached,
        ("features.example.com", "Gizmo", "gizmos"),
        &ns,
        "g1",
    )
    .await;
    let cached = request_lister
        .namespaced(&ns)
        .get("web-tls-1")
        .expect("cached");
    assert_reencodes(
        &client,
        &*cached,
        (
            "cert-manager.io",
            "CertificateRequest",
            "certificaterequests",
        ),
        &ns,
        "web-tls-1",
    )
    .await;
    let cached = rule_lister
        .namespaced(&ns)
        .get("node-rules")
        .expect("cached");
    assert_eq!(cached.spec, rule.spec);
    assert_eq!(
        rule_lister
            .list(&Selector::from_iter([("role", "alert-rules")]))
            .len(),
        1
    );
    assert_reencodes(
        &client,
        &*cached,
        ("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
        &ns,
        "node-rules",
    )
    .await;

    // The status subresource, as a controller reports progress.
    let status =
        json!({"status": {"replicas": 1, "conditions": [{"type": "Ready", "status": "True"}]}});
    gizmos_api
        .patch_status("g1", &PatchParams::default(), &Patch::Merge(&status))
        .await
        .expect("status patch");
    wait_until("the status reaches the cache", || {
        gizmo_lister
            .namespaced(&ns)
            .get("g1")
            .ok()
            .and_then(|g| g.status.as_ref().and_then(|s| s.replicas))
            == Some(1)
    })
    .await;
    factory.shutdown().await;
}

conformance!(compact_and_projected_pods);
/// Pods as the API server stores them (defaults applied) are cached by the generated compact Pod
/// field for field, and by a projection with just the fields it declares.
async fn compact_and_projected_pods(backend: &Backend) {
    let client = backend.client().await;
    let ns = backend.namespace("pods").await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), &ns);
    for (i, node) in ["n1", "n1", "n2"].iter().enumerate() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("web-{i}"), "labels": {"app": "web"}},
            "spec": {
                "nodeName": node,
                "containers": [{
                    "name": "app", "image": "registry.example/web:1.2.3",
                    "ports": [{"containerPort": 8080, "name": "http"}],
                    "env": [{"name": "MODE", "value": "prod"}],
                    "resources": {"limits": {"memory": "256Mi"}, "requests": {"cpu": "100m"}}
                }],
                "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
            }
        }))
        .expect("a Pod");
        pods.create(&PostParams::default(), &pod)
            .await
            .expect("create Pod");
    }
    let factory = SharedInformerFactory::builder(client.clone())
        .namespace(ns.clone())
        .build();
    let compact_pods = factory.core().v1().pods().compact();
    let compact_lister = compact_pods.lister();
    let summaries = factory
        .core()
        .v1()
        .pods()
        .projected::<PodSummary>()
        .informer();
    factory.start();
    factory
        .wait_for_cache_sync_timeout(WAIT)
        .await
        .expect("sync");
    wait_until("three Pods in each cache", || {
        compact_lister
            .namespaced(&ns)
            .list(&Selector::default())
            .len()
            == 3
            && summaries.indexer().list().len() == 3
    })
    .await;
    for i in 0..3 {
        let name = format!("web-{i}");
        let full = pods.get(&name).await.expect("get");
        let cached = compact_lister.namespaced(&ns).get(&name).expect("cached");
        assert_eq!(*cached, compact::Pod::from(&full), "{name}");
        assert_eq!(Pod::from(&*cached), full, "{name}");
        assert_eq!(
            serde_json::to_value(&*cached).expect("json"),
            serde_json::to_value(&full).expect("json"),
            "{name}: the compact Pod re-encodes to the server's Pod"
        );
        let summary = summaries
            .indexer()
            .get_by_key(&format!("{ns}/{name}"))
            .expect("projected");
        assert_eq!(summary.object_uid(), full.metadata.uid.as_deref());
        assert_eq!(
            summary.spec.as_ref().and_then(|s| s.node_name.as_deref()),
            full.spec.as_ref().and_then(|s| s.node_name.as_deref())
        );
        assert_eq!(
            summary.status.as_ref().and_then(|s| s.phase.as_deref()),
            full.status.as_ref().and_then(|s| s.phase.as_deref())
        );
    }
    factory.shutdown().await;
}

conformance!(example_operator_end_to_end);
/// The example operator (examples/src/operator.rs) converges, follows an edit and cleans up a
/// deleted Foo.
async fn example_operator_end_to_end(backend: &Backend) {
    let client = backend.client().await;
    // install() waits for the CRD to be Established (served).
    demo::install(&client).await.expect("install");
    demo::create_samples(
        &client,
        &[("alpha", "hello"), ("beta", "hola"), ("gamma", "salut")],
    )
    .await
    .expect("samples");
    let operator = Operator::new(
        client.clone(),
        OperatorConfig {
            namespace: Some(demo::NAMESPACE.into()),
            workers: 2,
            ..Default::default()
        },
    )
    .expect("operator");
    let cancel = CancellationToken::new();
    let run = tokio::spawn(Arc::clone(&operator).run(cancel.clone()));
    let state = demo::wait_converged(&client).await.expect("converges");
    assert_eq!(state.foos.len(), 3);
    demo::set_message(&client, "beta", "bonjour")
        .await
        .expect("edit");
    demo::delete_foo(&client, "gamma").await.expect("delete");
    let state = demo::wait_converged(&client)
        .await
        .expect("converges again");
    assert_eq!(
        state.config_maps,
        BTreeMap::from([
            (config_map_name("alpha"), "hello".to_string()),
            (config_map_name("beta"), "bonjour".to_string()),
        ])
    );
    cancel.cancel();
    let _ = tokio::time::timeout(WAIT, run)
        .await
        .expect("the operator stops");
}

conformance!(an_owned_kind_cached_in_one_namespace_beside_a_cluster_wide_primary);
/// F11 (controller-runtime's `cache.ByObject`): one factory, its primary kind (Secrets) listed
/// in every namespace, the kind it owns (ConfigMaps, cached in their compact form) in one
/// namespace only. Both Secrets are reconciled; the ConfigMap cache holds only the first
/// namespace's (a ConfigMap of the other, there before the start, never reaches it); an owned
/// ConfigMap deleted in the scoped namespace is recreated through its owner.
async fn an_owned_kind_cached_in_one_namespace_beside_a_cluster_wide_primary(backend: &Backend) {
    use informer_runtime::factory::CacheScope;

    let client = backend.client().await;
    let (ns_a, ns_b) = (
        backend.namespace("scope-a").await,
        backend.namespace("scope-b").await,
    );
    // Every object of this scenario carries this label, and the factory selects it: other
    // scenarios' objects on a shared kube-apiserver stay out of its cluster-wide informer.
    let label = ("conformance.informer-rs.io/scope", ns_a.as_str());
    for ns in [&ns_a, &ns_b] {
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        cms.create(
            &PostParams::default(),
            &config_map(ns, "marker", "m", &[label]),
        )
        .await
        .expect("create the marker");
        let mut secret = Secret::default();
        secret.metadata.name = Some("s".into());
        secret.metadata.labels = Some([(label.0.to_owned(), label.1.to_owned())].into());
        let secrets: Api<Secret> = Api::namespaced(client.clone(), ns);
        secrets
            .create(&PostParams::default(), &secret)
            .await
            .expect("create the primary");
    }
    let selector = format!("{}={}", label.0, label.1);
    let factory = SharedInformerFactory::builder(client.clone())
        .tweak_list_options(move |lp| lp.label_selector = Some(selector.clone()))
        .scope_for::<ConfigMap>(CacheScope::new().namespace(ns_a.clone()))
        .build();
    let owned = factory.core().v1().config_maps().informer();
    let primaries = factory.informer_for::<Secret>();
    let controller =
        Controller::<Secret>::new(factory.clone(), "scoped-owner").owns::<compact::ConfigMap>();
    let cancel = CancellationToken::new();
    let data = (label.0.to_owned(), label.1.to_owned());
    let run = tokio::spawn({
        let cancel = cancel.clone();
        async move {
            controller
                .run(
                    move |req: Request<Secret>, ctx: Arc<Context<(String, String)>>| async move {
                        let Some(secret) = req.object.clone() else {
                            return Ok::<_, kube::Error>(Action::Done);
                        };
                        let ns = req.namespace().unwrap_or_default().to_owned();
                        let (key, value) = ctx.data().clone();
                        let mut cm = config_map(&ns, "s-owned", "o", &[(&key, &value)]);
                        cm.metadata.owner_references = Some(vec![OwnerReference {
                            api_version: "v1".into(),
                            kind: "Secret".into(),
                            name: secret.name_any(),
                            uid: secret.uid().unwrap_or_default(),
                            controller: Some(true),
                            block_owner_deletion: None,
                        }]);
                        let api: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), &ns);
                        match api.create(&PostParams::default(), &cm).await {
                            Ok(written) => ctx.recorder(&req.key).record(&written),
                            Err(kube::Error::Api(s)) if s.code == 409 => {}
                            Err(e) => return Err(e),
                        }
                        Ok(Action::Done)
                    },
                    data,
                    cancel,
                )
                .await
        }
    });

    wait_until("both informers synced", || {
        owned.has_synced() && primaries.has_synced()
    })
    .await;
    let cached = |ns: &str, name: &str| {
        owned
            .indexer()
            .get_by_key(&format!("{ns}/{name}"))
            .is_some()
    };
    assert!(cached(&ns_a, "marker"), "the scoped namespace is listed");
    assert!(
        !cached(&ns_b, "marker"),
        "a ConfigMap of another namespace never reaches the scoped cache"
    );
    let primary_namespaces: Vec<String> = primaries
        .indexer()
        .list()
        .iter()
        .filter_map(|s| s.namespace())
        .collect();
    assert!(
        primary_namespaces.contains(&ns_a) && primary_namespaces.contains(&ns_b),
        "the primary kind is cluster-wide: {primary_namespaces:?}"
    );
    // Both primaries are reconciled; only the scoped namespace's owned object is cached.
    for ns in [&ns_a, &ns_b] {
        let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        wait_for("the owned ConfigMap on the server", || {
            let cms = cms.clone();
            async move { cms.get_opt("s-owned").await.ok().flatten().is_some() }
        })
        .await;
    }
    wait_until("the scoped owned ConfigMap is cached", || {
        cached(&ns_a, "s-owned")
    })
    .await;
    let namespaces: Vec<String> = owned
        .indexer()
        .list()
        .iter()
        .filter_map(|cm| cm.object_namespace().map(str::to_owned))
        .collect();
    assert!(
        namespaces.iter().all(|ns| *ns == ns_a),
        "only {ns_a} is cached: {namespaces:?}"
    );
    // The owned kind's watch maps to the owner (C4): a deleted owned ConfigMap comes back.
    let cms_a: Api<ConfigMap> = Api::namespaced(client.clone(), &ns_a);
    let before = cms_a.get("s-owned").await.expect("get").uid();
    cms_a
        .delete("s-owned", &DeleteParams::default())
        .await
        .expect("delete the owned ConfigMap");
    wait_for("the owned ConfigMap is recreated", || {
        let cms_a = cms_a.clone();
        let before = before.clone();
        async move {
            let now = cms_a.get_opt("s-owned").await.ok().flatten();
            now.is_some_and(|cm| cm.uid() != before)
        }
    })
    .await;
    stop(cancel, run).await;
}
