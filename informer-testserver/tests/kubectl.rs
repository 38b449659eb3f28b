//! kubectl against the test server: create -f, apply -f twice, get -o json, get --watch, delete,
//! plus a CRD and one of its objects. Skipped with a printed notice when kubectl is not on PATH.
// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

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

struct Kubectl {
    kubeconfig: PathBuf,
    cache: PathBuf,
    dir: PathBuf,
}

impl Kubectl {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new("kubectl");
        c.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args);
        c
    }

    async fn run(&self, args: &[&str]) -> Output {
        let mut cmd = self.cmd(args);
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .unwrap()
            .unwrap();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    async fn stdout(&self, args: &[&str]) -> String {
        String::from_utf8_lossy(&self.run(args).await.stdout).into_owned()
    }

    fn file(&self, name: &str, text: &str) -> String {
        let p = self.dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    }
}

fn kubectl_available() -> bool {
    Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_scenario() {
    if !kubectl_available() {
        println!("NOTICE: kubectl is not on PATH; skipping the kubectl scenario");
        return;
    }
    let server = TestServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!(
        "informer-testserver-kubectl-{}-{}",
        std::process::id(),
        server.addr().port()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let k = Kubectl {
        kubeconfig: dir.join("kubeconfig"),
        cache: dir.join("cache"),
        dir: dir.clone(),
    };
    server.write_kubeconfig(&k.kubeconfig).unwrap();
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
    let mut child = k
        .cmd(&["get", "configmap", "demo", "--watch", "-o", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
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
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}
