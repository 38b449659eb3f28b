//! One conformance suite, two backends.
//!
//! Every scenario in `tests/` is an `async fn(&Backend)` written once; [`conformance!`] runs it
//! against [`informer-testserver`](informer_testserver) (`<scenario>::testserver`) and against a
//! real kube-apiserver with etcd from [`informer_envtest`] (`<scenario>::kube_apiserver`). Where
//! the two disagree, the test server is wrong (ARCHITECTURE.md lists what was found and fixed).
//!
//! Scenarios talk to both backends over HTTP through `kube::Client` only; the only
//! backend-specific operations are the ones a cluster operator would do: [`Backend::compact`]
//! (etcd compaction) and the server's feature gates ([`Flavor`]).
//!
//! Run with `cargo test -p informer-conformance`; `cargo xtask envtest` builds the API server
//! first and runs this suite.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use informer_envtest::{Envtest, Options};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, ResourceExt};

/// How long any condition may take before a scenario fails (a real API server on two busy cores
/// is slower than the in-memory one).
pub const WAIT: Duration = Duration::from_secs(60);

/// Which server configuration a scenario needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// `WatchList` and `ShardedListAndWatch` on, the watch cache on.
    Default,
    /// `ShardedListAndWatch` off: the server ignores `shardSelector` (the client filters).
    ShardGateOff,
    /// The watch cache off: a watch from a compacted resourceVersion reaches etcd (410 Gone), and
    /// a LIST at resourceVersion "0" is paged.
    NoWatchCache,
    /// `ConsistentListFromCacheSkipTimeoutFallback` on (alpha in 1.37): a consistent LIST the
    /// watch cache cannot serve in time answers 429 instead of reading etcd (R13).
    SkipTimeoutFallback,
    /// Garbage collection by owner references: kube-controller-manager's collector beside
    /// kube-apiserver, `garbage_collection(true)` on the test server.
    GarbageCollector,
}

impl Flavor {
    fn options(self) -> Options {
        let gates = Options::default()
            .feature_gate("WatchList", true)
            .feature_gate("ShardedListAndWatch", true);
        match self {
            Flavor::Default => gates,
            Flavor::ShardGateOff => gates.feature_gate("ShardedListAndWatch", false),
            Flavor::NoWatchCache => gates.watch_cache(false),
            Flavor::SkipTimeoutFallback => {
                gates.feature_gate("ConsistentListFromCacheSkipTimeoutFallback", true)
            }
            Flavor::GarbageCollector => gates.garbage_collector(true),
        }
    }
}

/// The server a scenario runs against.
pub enum Backend {
    /// A fresh informer-testserver for this scenario.
    TestServer(TestServer),
    /// The test binary's shared kube-apiserver for this flavor.
    KubeApiserver(&'static Envtest),
}

impl std::fmt::Debug for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Backend {
    /// A fresh informer-testserver configured as `flavor`.
    pub async fn testserver(flavor: Flavor) -> Backend {
        init_tracing();
        let server = TestServer::builder()
            .watch_cache(flavor != Flavor::NoWatchCache)
            .garbage_collection(flavor == Flavor::GarbageCollector)
            .start()
            .await
            .expect("informer-testserver starts");
        match flavor {
            Flavor::ShardGateOff => server.set_sharded_list_and_watch(false),
            Flavor::SkipTimeoutFallback => {
                server.set_consistent_list_from_cache_skip_timeout_fallback(true);
            }
            Flavor::Default | Flavor::NoWatchCache | Flavor::GarbageCollector => {}
        }
        Backend::TestServer(server)
    }

    /// The shared kube-apiserver for `flavor`; `None` (the scenario is skipped, loudly) where it
    /// cannot be built, except under `CI=true`.
    pub async fn kube_apiserver(flavor: Flavor, scenario: &str) -> Option<Backend> {
        init_tracing();
        let env = informer_envtest::shared(flavor.options()).await;
        informer_envtest::skip_unless_available(scenario, env).map(Backend::KubeApiserver)
    }

    /// `testserver` or `kube-apiserver`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::TestServer(_) => "testserver",
            Backend::KubeApiserver(_) => "kube-apiserver",
        }
    }

    /// A client for this scenario's runtime.
    pub async fn client(&self) -> kube::Client {
        match self {
            Backend::TestServer(server) => server.client(),
            Backend::KubeApiserver(env) => env.client().await.expect("envtest client"),
        }
    }

    /// The client configuration of this backend (TLS and credentials included): what a fleet
    /// engages it with.
    pub async fn config(&self) -> kube::Config {
        match self {
            Backend::TestServer(server) => server.kube_config(),
            Backend::KubeApiserver(env) => kube::Config::from_custom_kubeconfig(
                env.kubeconfig().expect("kubeconfig"),
                &kube::config::KubeConfigOptions::default(),
            )
            .await
            .expect("config"),
        }
    }

    /// A client that leaves every retry to the caller: kube's default client retries 429, 503
    /// and 504 answers up to 15 times (with `Retry-After`) before the caller sees one, which
    /// hides what the server answered from a scenario that checks it.
    pub async fn client_without_retry(&self) -> kube::Client {
        let mut config = self.config().await;
        config.read_timeout = None;
        config.default_retry = false;
        kube::Client::try_from(config).expect("client")
    }

    /// Creates a namespace of this scenario's own, `prefix-<random>`, and returns its name.
    pub async fn namespace(&self, prefix: &str) -> String {
        let name = format!("{prefix}-{:08x}", rand::random::<u32>());
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..Default::default()
            },
            ..Default::default()
        };
        Api::<Namespace>::all(self.client().await)
            .create(&PostParams::default(), &ns)
            .await
            .expect("create namespace");
        name
    }

    /// Compacts the server's history at its current revision: a watch or list from any earlier
    /// resourceVersion answers 410 Gone (kube-apiserver: where the watch cache does not answer it).
    pub async fn compact(&self) {
        match self {
            Backend::TestServer(server) => server.compact_all(),
            Backend::KubeApiserver(env) => {
                env.compact().await.expect("etcd compaction");
            }
        }
    }

    /// Turns the server's `ShardedListAndWatch` on or off. Only the test server can switch at
    /// run time; a kube-apiserver scenario picks a [`Flavor`] instead.
    pub fn set_sharded_list_and_watch(&self, on: bool) {
        if let Backend::TestServer(server) = self {
            server.set_sharded_list_and_watch(on);
        }
    }

    /// Installs every CustomResourceDefinition in `yaml` through the API (documents of other
    /// kinds are ignored) and waits until each is `Established`, as `kubectl wait` would.
    pub async fn install_crds(&self, yaml: &str) -> Vec<String> {
        let client = self.client().await;
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        let docs: Vec<serde_json::Value> =
            serde_saphyr::from_multiple(yaml).expect("the manifest is YAML");
        let mut names = Vec::new();
        for doc in docs {
            if doc.get("kind").and_then(|k| k.as_str()) != Some("CustomResourceDefinition") {
                continue;
            }
            let crd: CustomResourceDefinition =
                serde_json::from_value(doc).expect("a CustomResourceDefinition");
            let created = crds
                .create(&PostParams::default(), &crd)
                .await
                .expect("create CRD");
            names.push(created.name_any());
        }
        for name in &names {
            informer_examples::demo::wait_established(&client, name)
                .await
                .expect("the CRD is Established");
        }
        names
    }
}

/// Runs each named scenario against both backends: `conformance!(name)` or
/// `conformance!(name, NoWatchCache)` (a [`Flavor`]) makes `mod name { testserver, kube_apiserver }`;
/// `conformance!(name, Flavor, module)` runs the scenario once more, under another flavor, as
/// `mod module`.
#[macro_export]
macro_rules! conformance {
    ($name:ident) => {
        $crate::conformance!($name, Default);
    };
    ($name:ident, $flavor:ident) => {
        $crate::conformance!($name, $flavor, $name);
    };
    ($name:ident, $flavor:ident, $module:ident) => {
        mod $module {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn testserver() {
                let backend = $crate::Backend::testserver($crate::Flavor::$flavor).await;
                super::$name(&backend).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn kube_apiserver() {
                let Some(backend) =
                    $crate::Backend::kube_apiserver($crate::Flavor::$flavor, stringify!($name))
                        .await
                else {
                    return;
                };
                super::$name(&backend).await;
            }
        }
    };
}

pub use informer_test_support::{config_map, init_tracing};

/// Waits until the async condition holds; panics naming `what` after [`WAIT`].
pub async fn wait_for<F, Fut>(what: &str, cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    informer_test_support::poll_within(WAIT, what, cond).await;
}

/// Waits until the condition holds; panics naming `what` after [`WAIT`].
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    wait_for(what, || std::future::ready(cond())).await;
}

/// The server's ConfigMaps in `ns` as name -> resourceVersion (a LIST through the API).
pub async fn server_config_maps(client: &kube::Client, ns: &str) -> BTreeMap<String, String> {
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .list(&ListParams::default())
        .await
        .expect("list")
        .items
        .into_iter()
        .map(|cm| (cm.name_any(), cm.resource_version().unwrap_or_default()))
        .collect()
}

/// Objects as name -> resourceVersion.
pub fn by_name<K: kube::Resource>(
    objects: impl IntoIterator<Item = std::sync::Arc<K>>,
) -> BTreeMap<String, String> {
    objects
        .into_iter()
        .map(|o| (o.name_any(), o.resource_version().unwrap_or_default()))
        .collect()
}

/// A resourceVersion as a number: both backends use etcd-like revisions, which scenarios compare
/// only to check order (clients must not, in general).
pub fn rv_number(rv: &str) -> u64 {
    rv.parse()
        .unwrap_or_else(|_| panic!("resourceVersion {rv:?} is not a number"))
}

/// A handler that records each notification as a line (`add <name> initial`, `update <name>`,
/// `delete <name>`), for scenarios that assert what a handler saw.
#[derive(Debug, Default)]
pub struct EventLog {
    lines: parking_lot::Mutex<Vec<String>>,
}

impl EventLog {
    /// A new, empty log behind an `Arc` (register it as a handler).
    pub fn new() -> std::sync::Arc<Self> {
        std::sync::Arc::default()
    }

    /// Every line so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().clone()
    }

    /// Waits until `line` has been recorded.
    pub async fn wait_line(&self, line: &str) {
        wait_until(&format!("handler event {line:?}"), || {
            self.lines.lock().iter().any(|l| l == line)
        })
        .await;
    }
}

impl<K: kube::Resource + Send + Sync + 'static> informer_runtime::informer::ResourceEventHandler<K>
    for EventLog
{
    fn on_add(&self, obj: &std::sync::Arc<K>, initial: bool) {
        let suffix = if initial { " initial" } else { "" };
        self.lines
            .lock()
            .push(format!("add {}{suffix}", obj.name_any()));
    }

    fn on_update(&self, _old: &std::sync::Arc<K>, new: &std::sync::Arc<K>) {
        self.lines.lock().push(format!("update {}", new.name_any()));
    }

    fn on_delete(&self, obj: &informer_runtime::informer::DeletedObject<K>) {
        let name = obj.last_known().map(|o| o.name_any()).unwrap_or_default();
        self.lines.lock().push(format!("delete {name}"));
    }
}

/// A loopback TCP proxy in front of a backend whose connections a scenario can cut, as a network
/// fault or an API server restart would: every open connection (watches included) breaks, new
/// ones go through. TLS passes through untouched (the certificate names 127.0.0.1).
#[derive(Debug)]
pub struct CutProxy {
    addr: std::net::SocketAddr,
    cut: tokio::sync::watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl CutProxy {
    /// Starts a proxy to `upstream` on a free loopback port.
    pub async fn start(upstream: std::net::SocketAddr) -> CutProxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let (cut, _) = tokio::sync::watch::channel(0u64);
        let cuts = cut.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                let mut cut = cuts.subscribe();
                tokio::spawn(async move {
                    let Ok(mut outbound) = tokio::net::TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        CutProxy { addr, cut, task }
    }

    /// The proxy's address.
    pub fn addr(&self) -> std::net::SocketAddr {
        self.addr
    }

    /// Breaks every connection open now.
    pub fn cut(&self) {
        self.cut.send_modify(|n| *n += 1);
    }
}

impl Drop for CutProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Backend {
    /// A client whose connections pass through a [`CutProxy`].
    pub async fn proxied_client(&self) -> (kube::Client, CutProxy) {
        match self {
            Backend::TestServer(server) => {
                let proxy = CutProxy::start(server.addr()).await;
                let mut config = server.kube_config();
                config.cluster_url = format!("http://{}", proxy.addr())
                    .parse()
                    .expect("proxy url");
                (kube::Client::try_from(config).expect("client"), proxy)
            }
            Backend::KubeApiserver(env) => {
                let upstream: std::net::SocketAddr = env
                    .server_url()
                    .trim_start_matches("https://")
                    .parse()
                    .expect("the server's address");
                let proxy = CutProxy::start(upstream).await;
                let mut kubeconfig = env.kubeconfig().expect("kubeconfig");
                for cluster in &mut kubeconfig.clusters {
                    if let Some(c) = cluster.cluster.as_mut() {
                        c.server = Some(format!("https://{}", proxy.addr()));
                    }
                }
                let mut config =
                    kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
                        .await
                        .expect("config");
                config.read_timeout = None;
                (kube::Client::try_from(config).expect("client"), proxy)
            }
        }
    }
}
