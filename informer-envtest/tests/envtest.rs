//! The envtest server itself: it starts, reports its version, verifies TLS, authenticates with
//! its token only, compacts on request, and cleans up after itself.

use informer_envtest::{Envtest, KUBERNETES_VERSION, Options, skip_unless_available};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{ObjectMeta, PostParams};
use kube::{Api, ResourceExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_its_version_over_verified_tls_and_cleans_up() {
    let Some(env) = skip_unless_available("envtest", Envtest::start(Options::default()).await)
    else {
        return;
    };
    let client = env.client().await.expect("client");
    let version = client.apiserver_version().await.expect("/version");
    assert_eq!(version.git_version, KUBERNETES_VERSION);
    assert!(env.server_url().starts_with("https://127.0.0.1:"));

    // Namespaced writes need the namespace to exist (NamespaceLifecycle admission).
    let namespaces: Api<Namespace> = Api::all(client.clone());
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some("envtest-smoke".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
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

    // Without the token the server refuses (401), with a wrong CA the client refuses.
    let mut anonymous = env.kubeconfig().expect("kubeconfig");
    for user in &mut anonymous.auth_infos {
        if let Some(info) = user.auth_info.as_mut() {
            info.token = None;
        }
    }
    let config = kube::Config::from_custom_kubeconfig(anonymous, &Default::default())
        .await
        .expect("config");
    let anonymous = kube::Client::try_from(config).expect("client");
    let err = Api::<ConfigMap>::namespaced(anonymous, "envtest-smoke")
        .list(&Default::default())
        .await
        .expect_err("anonymous list");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 401 || s.code == 403),
        "{err}"
    );

    let dir = env.data_dir().to_path_buf();
    assert!(dir.join("pki").join("ca.crt").exists());
    drop(env);
    assert!(!dir.exists(), "{} outlived the server", dir.display());
}

/// A kube-apiserver that cannot start (here: an unknown flag) is a clear error carrying its own
/// words, and its log stays on disk for reading.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_start_says_why_and_keeps_the_log() {
    let mut options = Options::default();
    options.extra_args.push("--no-such-flag=1".into());
    let err = match Envtest::start(options).await {
        Ok(_) => panic!("an unknown flag must stop kube-apiserver"),
        Err(unavailable @ informer_envtest::Error::Unavailable(_)) => {
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
    assert!(std::path::Path::new(log).exists(), "{log} was kept");
    if let Some(dir) = std::path::Path::new(log).parent() {
        let _ = std::fs::remove_dir_all(dir);
    }
}
