//! kubectl against the test server: create -f, apply -f twice, get -o json, get --watch, delete,
//! plus a CRD and one of its objects. Skipped with a printed notice when kubectl is not on PATH.
// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use informer_test_support::Kubectl;
use informer_testserver::TestServer;

const MANIFEST: &str = "apiVersion: v1
kind: ConfigMap
metadata:
  name: demo
  labels: {app: demo}
data:
  color: blue
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports: [{containerPort: 80}]
";

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
";

const WIDGET: &str = "apiVersion: example.com/v1
kind: Widget
metadata:
  name: w1
spec:
  size: 3
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_scenario() {
    let server = TestServer::start().await.unwrap();
    let Some(k) = Kubectl::for_server(&server, "kubectl") else {
        return;
    };
    let manifest = k.file("app.yaml", MANIFEST);

    let out = k.stdout(&["create", "-f", &manifest]).await;
    assert!(
        out.contains("configmap/demo created") && out.contains("deployment.apps/web created"),
        "{out}"
    );
    let out = k.stdout(&["apply", "-f", &manifest]).await;
    assert!(out.contains("configmap/demo configured"), "{out}");
    let out = k.stdout(&["apply", "-f", &manifest]).await;
    assert!(
        out.contains("configmap/demo unchanged") && out.contains("deployment.apps/web unchanged"),
        "{out}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&k.stdout(&["get", "configmap", "demo", "-o", "json"]).await).unwrap();
    assert_eq!(json["data"]["color"], "blue");
    assert!(
        json["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );
    let deploy: serde_json::Value =
        serde_json::from_str(&k.stdout(&["get", "deploy", "web", "-o", "json"]).await).unwrap();
    assert_eq!(
        deploy["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.27"
    );
    let names = k.stdout(&["get", "cm", "-o", "name"]).await;
    assert!(names.contains("configmap/demo"), "{names}");

    // get --watch sees a change made by a later apply.
    let (mut child, mut rx) = k.lines(&["get", "configmap", "demo", "--watch", "-o", "json"]);
    let changed = k.file(
        "app2.yaml",
        &MANIFEST.replace("color: blue", "color: green"),
    );
    let mut seen_blue = false;
    let mut seen_green = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !seen_green {
        let line = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .expect("kubectl get --watch printed nothing in time")
            .expect("kubectl exited");
        if line.contains("\"blue\"") && !seen_blue {
            seen_blue = true;
            k.run(&["apply", "-f", &changed]).await;
        }
        seen_green |= line.contains("\"green\"");
    }
    let _ = child.kill();
    let _ = child.wait();

    // A CRD, then one of its objects (like a real cluster, kubectl cannot map a kind whose CRD
    // is created by the same command), then delete everything.
    let crd = k.file("crd.yaml", CRD);
    let out = k.stdout(&["apply", "-f", &crd]).await;
    assert!(
        out.contains("customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"),
        "{out}"
    );
    let widget = k.file("widget.yaml", WIDGET);
    let out = k.stdout(&["apply", "-f", &widget]).await;
    assert!(out.contains("widget.example.com/w1 created"), "{out}");
    let out = k
        .stdout(&["get", "wd", "w1", "-o", "jsonpath={.spec.size}"])
        .await;
    assert_eq!(out.trim(), "3");
    let out = k.stdout(&["delete", "-f", &manifest]).await;
    assert!(
        out.contains("configmap \"demo\" deleted") || out.contains("configmap/demo deleted"),
        "{out}"
    );
    let gone = k.cmd(&["get", "configmap", "demo"]).output().unwrap();
    assert!(!gone.status.success());
    assert!(String::from_utf8_lossy(&gone.stderr).contains("NotFound"));
}
