//! The envtest server itself: it starts, reports its version, verifies TLS, authenticates with
//! its token only, compacts on request, runs existing binaries from an assets directory,
//! installs CRDs and waits on conditions, and never outlives its test process.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use informer_envtest::{
    Binaries, Envtest, Error, KUBERNETES_VERSION, Options, skip_unless_available,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ObjectMeta, PostParams};
use kube::{Api, ResourceExt};

const WAIT: Duration = Duration::from_secs(60);

async fn namespace(client: &kube::Client, name: &str) {
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
}

/// A client from the server's kubeconfig as `change` leaves it.
async fn client_with(
    env: &Envtest,
    change: impl FnOnce(&mut kube::config::Kubeconfig),
) -> kube::Client {
    let mut kubeconfig = env.kubeconfig().expect("kubeconfig");
    change(&mut kubeconfig);
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("config");
    kube::Client::try_from(config).expect("client")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_its_version_over_verified_tls_and_cleans_up() {
    let Some(env) = skip_unless_available("envtest", Envtest::start(Options::default()).await)
    else {
        return;
    };
    let client = env.client().await.expect("client");
    let version = client.apiserver_version().await.expect("/version");
    if matches!(env.binaries(), Binaries::Launcher(_)) {
        assert_eq!(version.git_version, KUBERNETES_VERSION);
    }
    assert!(env.server_url().starts_with("https://127.0.0.1:"));
    assert!(env.data_dir().starts_with(informer_envtest::cache_dir()));

    // Namespaced writes need the namespace to exist (NamespaceLifecycle admission).
    namespace(&client, "envtest-smoke").await;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "envtest-smoke");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("a".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let created = cms
        .create(&PostParams::default(), &cm)
        .await
        .expect("create");
    let rv: i64 = created
        .resource_version()
        .expect("rv")
        .parse()
        .expect("numeric rv");
    let compacted = env.compact().await.expect("compact");
    assert!(compacted >= rv, "compacted at {compacted}, wrote at {rv}");

    // Without the token the server refuses (401).
    let anonymous = client_with(&env, |kubeconfig| {
        for user in kubeconfig
            .auth_infos
            .iter_mut()
            .filter_map(|u| u.auth_info.as_mut())
        {
            user.token = None;
        }
    })
    .await;
    let err = Api::<ConfigMap>::namespaced(anonymous, "envtest-smoke")
        .list(&Default::default())
        .await
        .expect_err("anonymous list");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 401 || s.code == 403),
        "{err}"
    );
    // Without the server's certificate authority the client refuses the server.
    let untrusted = client_with(&env, |kubeconfig| {
        for cluster in kubeconfig
            .clusters
            .iter_mut()
            .filter_map(|c| c.cluster.as_mut())
        {
            cluster.certificate_authority = None;
        }
    })
    .await;
    assert!(
        untrusted.apiserver_version().await.is_err(),
        "TLS is verified"
    );

    let dir = env.data_dir().to_path_buf();
    assert!(dir.join("pki").join("apiserver.crt").exists());
    drop(env);
    assert!(!dir.exists(), "{} outlived the server", dir.display());
}

/// A kube-apiserver that cannot start (here: an unknown flag) is a clear error carrying its own
/// words, and its log stays on disk for reading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_start_says_why_and_keeps_the_log() {
    let options = Options::default().apiserver_flag("no-such-flag", 1);
    let err = match Envtest::start(options).await {
        Ok(_) => panic!("an unknown flag must stop kube-apiserver"),
        Err(unavailable @ Error::Unavailable(_)) => {
            // No Go here: skipped loudly, or a failure under CI=true.
            let _ = skip_unless_available::<()>("envtest", Err(unavailable));
            return;
        }
        Err(e) => e,
    };
    let text = err.to_string();
    assert!(text.contains("no-such-flag"), "{text}");
    let log = text
        .lines()
        .find_map(|l| l.strip_prefix("(whole log: ")?.strip_suffix(')'))
        .expect("the error names the log");
    assert!(Path::new(log).exists(), "{log} was kept");
    if let Some(dir) = Path::new(log).parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

const GADGETS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-crd}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.envtest.informer-rs.io}
spec:
  group: envtest.informer-rs.io
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer, default: 3}
"#;

/// `kube-apiserver` and `etcd` from a directory, as `KUBEBUILDER_ASSETS` or
/// `Options::binary_assets_directory` names one (here: links to the launcher, which is either
/// program by the name it is called through): two processes, the same server. On it, a CRD
/// installed from YAML is served at once, and a wait on an object sees its changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn existing_binaries_crds_and_waits() {
    let launcher = tokio::task::spawn_blocking(informer_envtest::build_launcher)
        .await
        .expect("build task");
    let Some(launcher) = skip_unless_available("envtest", launcher) else {
        return;
    };
    let assets =
        std::env::temp_dir().join(format!("informer-envtest-assets-{}", std::process::id()));
    std::fs::create_dir_all(&assets).expect("assets dir");
    for name in ["kube-apiserver", "etcd"] {
        let link = assets.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&launcher, &link).expect("link");
    }
    let options = Options::default().binary_assets_directory(&assets);
    let env = Envtest::start(options)
        .await
        .expect("start from the assets directory");
    assert!(
        matches!(env.binaries(), Binaries::External { .. }),
        "{:?}",
        env.binaries()
    );
    let client = env.client().await.expect("client");
    namespace(&client, "gadgets").await;

    // Installed, and served once this returns: an object can be created at once.
    let installed = env.install_crds_from_yaml(GADGETS).await.expect("install");
    assert_eq!(installed.len(), 1, "the ConfigMap document is skipped");
    // Installing the same CRD again (tests sharing a server) replaces it.
    env.install_crds_from_yaml(GADGETS)
        .await
        .expect("install again");
    let gadget = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("envtest.informer-rs.io", "v1", "Gadget"),
        "gadgets",
    );
    let gadgets: Api<DynamicObject> = Api::namespaced_with(client.clone(), "gadgets", &gadget);
    let mut g1 = DynamicObject::new("g1", &gadget);
    g1.data = serde_json::json!({"spec": {}});
    let created = gadgets
        .create(&PostParams::default(), &g1)
        .await
        .expect("create a Gadget");
    assert_eq!(
        created.data["spec"]["size"], 3,
        "defaulted by the CRD schema"
    );

    // A wait sees a change made after it started, and times out on one that never comes.
    let waiting = {
        let client = client.clone();
        let gadget = gadget.clone();
        tokio::spawn(async move {
            let gadgets: Api<DynamicObject> = Api::namespaced_with(client, "gadgets", &gadget);
            informer_envtest::wait_until(&gadgets, "g1", WAIT, |g| {
                g.is_some_and(|g| g.data["spec"]["size"] == 5)
            })
            .await
        })
    };
    let patch = serde_json::json!({"spec": {"size": 5}});
    gadgets
        .patch("g1", &Default::default(), &kube::api::Patch::Merge(&patch))
        .await
        .expect("patch");
    let seen = waiting.await.expect("task").expect("the wait");
    assert_eq!(seen.map(|g| g.data["spec"]["size"].clone()), Some(5.into()));
    let err = env
        .wait_until::<ConfigMap>(Some("gadgets"), "never", Duration::from_millis(500), |cm| {
            cm.is_some()
        })
        .await
        .expect_err("nothing creates it");
    assert!(matches!(err, Error::Timeout { .. }), "{err}");
    let gone = env
        .wait_until::<Namespace>(None, "no-such-namespace", WAIT, |ns| ns.is_none())
        .await
        .expect("absent at once");
    assert!(gone.is_none());

    let compacted = env
        .compact()
        .await
        .expect("compact an etcd binary through its gateway");
    assert!(compacted > 0);
    let dir = env.data_dir().to_path_buf();
    drop(env);
    assert!(!dir.exists(), "{} outlived the server", dir.display());
    let _ = std::fs::remove_dir_all(&assets);
}

/// Run by `a_killed_test_process_leaves_no_server` in a process of its own (and a no-op
/// otherwise): starts the shared server, which is never dropped, prints where it is, and waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process_holding_a_server() {
    if std::env::var_os("INFORMER_ENVTEST_CHILD").is_none() {
        return;
    }
    let env = informer_envtest::shared(Options::default())
        .await
        .expect("the shared server");
    println!("DIR={}", env.data_dir().display());
    println!("PID={}", env.pid());
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line); // killed before anything arrives
}

/// A test process killed outright (here: SIGKILL) takes its servers with it, shared ones
/// included: the watchdogs see its end and stop kube-apiserver and etcd and remove their data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_test_process_leaves_no_server() {
    let found = tokio::task::spawn_blocking(|| Binaries::find(&Options::default()))
        .await
        .expect("task");
    if skip_unless_available("envtest", found).is_none() {
        return;
    }
    let mut child = Command::new(std::env::current_exe().expect("this test binary"))
        .args(["--exact", "child_process_holding_a_server", "--nocapture"])
        .env("INFORMER_ENVTEST_CHILD", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn the child");
    let stdout = child.stdout.take().expect("stdout");
    let (dir, pid) = tokio::task::spawn_blocking(move || {
        let mut dir = None;
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.expect("a line");
            if let Some(d) = line.strip_prefix("DIR=") {
                dir = Some(PathBuf::from(d));
            }
            if let Some(p) = line.strip_prefix("PID=") {
                return (dir, p.parse::<u32>().ok());
            }
        }
        (dir, None)
    })
    .await
    .expect("read the child");
    let (Some(dir), Some(pid)) = (dir, pid) else {
        panic!("the child printed no server");
    };
    assert!(dir.exists() && pid > 0);
    child.kill().expect("kill the child");
    let _ = child.wait();
    let proc_dir = Path::new("/proc").join(pid.to_string());
    let linux = Path::new("/proc/self").exists();
    informer_test_support::poll_within(WAIT, "the orphaned server to stop", || {
        let running = dir.exists() || (linux && proc_dir.exists());
        std::future::ready(!running)
    })
    .await;
}
