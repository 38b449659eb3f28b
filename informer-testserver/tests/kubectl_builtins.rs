//! kubectl's imperative commands against the test server, as a new user types them: `create
//! namespace/configmap/secret generic/deployment` (kubectl sends these as protobuf), `run`,
//! `expose`, `scale` (the scale subresource), `get -o wide` (Table columns), `get -w`,
//! `apply` client-side and `--server-side`, `label` and `delete`. Every step is checked twice:
//! kubectl's output and the object the server holds. Skipped with a printed notice when kubectl
//! is not on PATH.
//!
//! The server runs without a bearer token: kubectl (client-go) sends no `Authorization` header
//! to a plain-`http://` server, token in the kubeconfig or not (checked with kubectl 1.32), so a
//! token-protected test server answers kubectl 401.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use informer_test_support::Kubectl;
use informer_testserver::TestServer;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod, Secret, Service};
use kube::Api;
use kube::api::PostParams;

/// The whitespace-separated cells of the line of `out` whose first cell is `name`.
fn row<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    out.lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|cells| cells.first() == Some(&name))
        .unwrap_or_else(|| panic!("no row {name:?} in:\n{out}"))
}

const MANIFEST: &str = "apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: demo}
data: {mode: fast}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: demo}
spec:
  replicas: 1
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: api
        image: api:1.0
        ports: [{containerPort: 8080, name: http}]
        resources: {limits: {cpu: 500m, memory: 128Mi}}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: demo}
spec:
  type: NodePort
  selector: {app: api}
  ports: [{port: 80, targetPort: http}]
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_imperative_commands_apply_and_watch() {
    let server = TestServer::start().await.unwrap();
    let Some(k) = Kubectl::for_server(&server, "kubectl built-ins") else {
        return;
    };
    let client = server.client();
    let ns = "demo";

    // create namespace / configmap / secret generic / deployment: protobuf bodies.
    let out = k.stdout(&["create", "namespace", ns]).await;
    assert_eq!(out.trim(), "namespace/demo created");
    let namespace = Api::<Namespace>::all(client.clone()).get(ns).await.unwrap();
    assert_eq!(namespace.status.unwrap().phase.as_deref(), Some("Active"));

    let out = k
        .stdout(&[
            "create",
            "configmap",
            "app-config",
            "-n",
            ns,
            "--from-literal=color=blue",
            "--from-literal=size=3",
        ])
        .await;
    assert_eq!(out.trim(), "configmap/app-config created");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
    let data = cms.get("app-config").await.unwrap().data.unwrap();
    assert_eq!(
        (data["color"].as_str(), data["size"].as_str()),
        ("blue", "3")
    );

    let out = k
        .stdout(&[
            "create",
            "secret",
            "generic",
            "creds",
            "-n",
            ns,
            "--from-literal=password=hunter2",
        ])
        .await;
    assert_eq!(out.trim(), "secret/creds created");
    let secret = Api::<Secret>::namespaced(client.clone(), ns)
        .get("creds")
        .await
        .unwrap();
    assert_eq!(secret.data.unwrap()["password"].0, b"hunter2");
    assert_eq!(secret.type_.as_deref(), Some("Opaque"));

    let out = k
        .stdout(&[
            "create",
            "deployment",
            "web",
            "-n",
            ns,
            "--image=nginx:1.27",
            "--replicas=2",
            "--port=80",
        ])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web created");
    let deploys: Api<Deployment> = Api::namespaced(client.clone(), ns);
    let web = deploys.get("web").await.unwrap();
    assert_eq!(web.spec.replicas, Some(2));
    let container = &web.spec.template.spec.as_ref().unwrap().containers[0];
    assert_eq!(container.image.as_deref(), Some("nginx:1.27"));
    assert_eq!(container.ports.as_ref().unwrap()[0].container_port, 80);

    // More typed generators (protobuf too), and their columns.
    let out = k
        .stdout(&[
            "create",
            "job",
            "once",
            "-n",
            ns,
            "--image=busybox",
            "--",
            "echo",
            "hi",
        ])
        .await;
    assert_eq!(out.trim(), "job.batch/once created");
    let out = k
        .stdout(&[
            "create",
            "cronjob",
            "tick",
            "-n",
            ns,
            "--image=busybox",
            "--schedule=*/5 * * * *",
            "--",
            "date",
        ])
        .await;
    assert_eq!(out.trim(), "cronjob.batch/tick created");
    let out = k.stdout(&["get", "jobs,cronjobs", "-n", ns]).await;
    assert_eq!(&row(&out, "job.batch/once")[1..3], ["Running", "0/1"]);
    assert_eq!(
        &row(&out, "cronjob.batch/tick")[1..10],
        ["*/5", "*", "*", "*", "*", "<none>", "False", "0", "<none>"]
    );

    // run, expose, scale.
    let out = k
        .stdout(&[
            "run",
            "debug",
            "-n",
            ns,
            "--image=busybox",
            "--restart=Never",
            "--labels=tier=debug",
            "--",
            "sleep",
            "60",
        ])
        .await;
    assert_eq!(out.trim(), "pod/debug created");
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let pod = pods.get("debug").await.unwrap();
    assert_eq!(
        pod.spec.unwrap().containers[0].args.as_deref(),
        Some(&["sleep".to_owned(), "60".to_owned()][..])
    );

    let out = k
        .stdout(&[
            "expose",
            "deployment",
            "web",
            "-n",
            ns,
            "--port=80",
            "--target-port=8080",
        ])
        .await;
    assert_eq!(out.trim(), "service/web exposed");
    let svc = Api::<Service>::namespaced(client.clone(), ns)
        .get("web")
        .await
        .unwrap()
        .spec
        .unwrap();
    assert_eq!(svc.selector.unwrap()["app"], "web");
    assert!(
        svc.cluster_ip
            .as_deref()
            .is_some_and(|ip| ip.starts_with("10.96."))
    );

    let out = k
        .stdout(&["scale", "deployment", "web", "-n", ns, "--replicas=4"])
        .await;
    assert_eq!(out.trim(), "deployment.apps/web scaled");
    assert_eq!(deploys.get("web").await.unwrap().spec.replicas, Some(4));

    // get -o wide: the Table columns kubectl prints.
    let out = k
        .stdout(&["get", "deployments", "-n", ns, "-o", "wide"])
        .await;
    assert!(out.starts_with("NAME"), "{out}");
    for header in [
        "READY",
        "UP-TO-DATE",
        "AVAILABLE",
        "AGE",
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ] {
        assert!(
            out.lines().next().unwrap().contains(header),
            "{header} in {out}"
        );
    }
    let cells = row(&out, "web");
    assert_eq!((cells[1], cells[2], cells[3]), ("0/4", "0", "0"));
    assert_eq!(&cells[5..], ["nginx", "nginx:1.27", "app=web"]);
    let out = k.stdout(&["get", "pods", "-n", ns, "-o", "wide"]).await;
    assert!(
        out.lines().next().unwrap().contains("NOMINATED NODE"),
        "{out}"
    );
    assert_eq!(&row(&out, "debug")[1..4], ["0/1", "Pending", "0"]);
    let out = k.stdout(&["get", "services", "-n", ns]).await;
    let cells = row(&out, "web");
    assert_eq!(
        (cells[1], cells[3], cells[4]),
        ("ClusterIP", "<none>", "80/TCP")
    );
    assert!(cells[2].starts_with("10.96."), "{out}");
    let out = k.stdout(&["get", "configmaps,secrets", "-n", ns]).await;
    assert_eq!(row(&out, "configmap/app-config")[1], "2");
    assert_eq!(&row(&out, "secret/creds")[1..3], ["Opaque", "1"]);
    let out = k.stdout(&["get", "namespace", ns]).await;
    assert_eq!(row(&out, ns)[1], "Active");

    // get -w: the existing object, then one created afterwards; bounded by a deadline.
    let (mut child, mut rx) = k.lines(&[
        "get",
        "configmaps",
        "-n",
        ns,
        "--watch",
        "--output-watch-events",
        "--request-timeout=60s",
    ]);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut next_line = async || {
        tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("kubectl get --watch printed nothing in time")
            .expect("kubectl get --watch exited")
    };
    loop {
        let line = next_line().await;
        if line.contains("ADDED") && line.contains("app-config") {
            break;
        }
    }
    let mut late = ConfigMap::default();
    late.metadata.name = Some("late".into());
    cms.create(&PostParams::default(), &late).await.unwrap();
    loop {
        let line = next_line().await;
        if line.split_whitespace().collect::<Vec<_>>()[..2] == ["ADDED", "late"] {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();

    // apply: client-side twice (created, unchanged), a change (configured), then server-side.
    let manifest = k.file("app.yaml", MANIFEST);
    let out = k.stdout(&["apply", "-f", &manifest]).await;
    for line in [
        "configmap/settings created",
        "deployment.apps/api created",
        "service/api created",
    ] {
        assert!(out.contains(line), "{line} in {out}");
    }
    let out = k.stdout(&["apply", "-f", &manifest]).await;
    assert!(
        out.contains("configmap/settings unchanged") && out.contains("service/api unchanged"),
        "{out}"
    );
    let changed = k.file(
        "app2.yaml",
        &MANIFEST
            .replace("mode: fast", "mode: safe")
            .replace("replicas: 1", "replicas: 3"),
    );
    let out = k.stdout(&["apply", "-f", &changed]).await;
    assert!(
        out.contains("configmap/settings configured")
            && out.contains("deployment.apps/api configured"),
        "{out}"
    );
    assert_eq!(
        cms.get("settings").await.unwrap().data.unwrap()["mode"],
        "safe"
    );
    assert_eq!(deploys.get("api").await.unwrap().spec.replicas, Some(3));
    let ssa = k.file("app3.yaml", &MANIFEST.replace("mode: fast", "mode: server"));
    let out = k
        .stdout(&["apply", "--server-side", "--force-conflicts", "-f", &ssa])
        .await;
    assert!(
        out.contains("configmap/settings serverside-applied"),
        "{out}"
    );
    assert_eq!(
        cms.get("settings").await.unwrap().data.unwrap()["mode"],
        "server"
    );
    let api_svc = Api::<Service>::namespaced(client.clone(), ns)
        .get("api")
        .await
        .unwrap()
        .spec
        .unwrap();
    assert!(
        api_svc.ports.unwrap()[0]
            .node_port
            .is_some_and(|p| (30000..=32767).contains(&p))
    );

    // label, and a label selector over what was labelled.
    let out = k
        .stdout(&["label", "pod", "debug", "-n", ns, "color=red"])
        .await;
    assert_eq!(out.trim(), "pod/debug labeled");
    let labels = pods.get("debug").await.unwrap().metadata.labels.unwrap();
    assert_eq!(
        (labels["color"].as_str(), labels["tier"].as_str()),
        ("red", "debug")
    );
    let out = k
        .stdout(&["get", "pods", "-n", ns, "-l", "color=red", "-o", "name"])
        .await;
    assert_eq!(out.trim(), "pod/debug");
    let out = k
        .stdout(&["label", "configmap", "app-config", "-n", ns, "tier=backend"])
        .await;
    assert_eq!(out.trim(), "configmap/app-config labeled");
    let out = k
        .stdout(&["label", "configmap", "app-config", "-n", ns, "tier-"])
        .await;
    assert_eq!(out.trim(), "configmap/app-config unlabeled");
    assert!(
        cms.get("app-config")
            .await
            .unwrap()
            .metadata
            .labels
            .unwrap_or_default()
            .is_empty()
    );

    // delete: one object, a manifest, then the namespace with everything left in it.
    let out = k.stdout(&["delete", "deployment", "web", "-n", ns]).await;
    assert!(out.contains("deployment.apps \"web\" deleted"), "{out}");
    assert!(deploys.get_opt("web").await.unwrap().is_none());
    let out = k.stdout(&["delete", "-f", &manifest]).await;
    assert!(out.contains("service \"api\" deleted"), "{out}");
    let out = k.stdout(&["delete", "namespace", ns]).await;
    assert!(out.contains("namespace \"demo\" deleted"), "{out}");
    assert!(
        cms.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    assert!(pods.get_opt("debug").await.unwrap().is_none());
}
