//! Helpers shared by the informer integration tests: object builders, a recording handler with
//! condition waits, informer setup, start and stop, a seeded and synced informer.

#![allow(dead_code, unreachable_pub, unused_imports)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use informer_runtime::indexer::Indexer;
use informer_runtime::informer::{
    DeletedObject, InformerConfig, ResourceEventHandler, SharedIndexInformer,
};
use informer_runtime::key::ObjectKey;
use informer_runtime::list_watch::ListWatch;
use informer_runtime::reflector::BackoffConfig;
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use informer_test_support::{WAIT, cm, init_tracing, wait_until};

/// Writes through the real HTTP API.
pub struct Writer {
    pub api: Api<ConfigMap>,
    ns: String,
}

impl Writer {
    pub fn new(client: kube::Client, ns: &str) -> Self {
        Writer {
            api: Api::namespaced(client, ns),
            ns: ns.to_string(),
        }
    }

    pub async fn create(&self, name: &str, v: &str) -> ConfigMap {
        self.api
            .create(&PostParams::default(), &cm(&self.ns, name, v))
            .await
            .expect("create")
    }

    pub async fn set(&self, name: &str, v: &str) -> ConfigMap {
        let patch = serde_json::json!({ "data": { "v": v } });
        self.api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .expect("patch")
    }

    pub async fn delete(&self, name: &str) {
        self.api
            .delete(name, &DeleteParams::default())
            .await
            .expect("delete");
    }
}

/// A test informer over all ConfigMaps with fast backoff and the paged-LIST initial strategy:
/// these tests exercise the LIST path (paging, relists, hostile list answers). The informer's
/// streaming-list default (V1) is covered in `informer_parity.rs`.
pub fn informer(
    client: kube::Client,
    configure: impl FnOnce(&mut InformerConfig<ConfigMap>),
) -> SharedIndexInformer<ConfigMap> {
    let mut config = InformerConfig::<ConfigMap> {
        name: "configmaps".into(),
        ..Default::default()
    };
    config.reflector.strategy = informer_runtime::reflector::InitialListStrategy::ListWatch;
    config.reflector.backoff = BackoffConfig {
        initial: Duration::from_millis(20),
        cap: Duration::from_millis(200),
        ..BackoffConfig::default()
    };
    configure(&mut config);
    SharedIndexInformer::new(ListWatch::new(Api::<ConfigMap>::all(client)), config)
        .expect("informer")
}

/// One recorded notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ev {
    /// on_add
    Add {
        key: String,
        rv: String,
        initial: bool,
        /// H2: the store already held this object when the handler ran.
        in_store: bool,
        /// X7: the handler's Arc is the store's Arc.
        same_arc: bool,
    },
    /// on_update
    Update {
        key: String,
        old_rv: String,
        new_rv: String,
        ptr_eq: bool,
    },
    /// on_delete
    Delete {
        key: String,
        rv: Option<String>,
        tombstone: bool,
    },
}

impl Ev {
    pub fn key(&self) -> &str {
        match self {
            Ev::Add { key, .. } | Ev::Update { key, .. } | Ev::Delete { key, .. } => key,
        }
    }

    pub fn is_resync(&self) -> bool {
        matches!(self, Ev::Update { old_rv, new_rv, .. } if old_rv == new_rv)
    }
}

fn rv(obj: &ConfigMap) -> String {
    obj.metadata.resource_version.clone().unwrap_or_default()
}

fn key(obj: &ConfigMap) -> String {
    ObjectKey::from_resource(obj)
        .map(|k| k.to_string())
        .unwrap_or_default()
}

/// Records every call; tests wait on conditions over the recorded events.
pub struct Recorder {
    events: Mutex<Vec<Ev>>,
    changed: watch::Sender<usize>,
    indexer: Option<Arc<Indexer<ConfigMap>>>,
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Recorder {
            events: Mutex::new(Vec::new()),
            changed: watch::Sender::new(0),
            indexer: None,
        })
    }

    /// A recorder that also checks the store from inside `on_add` (H2, X7).
    pub fn with_indexer(indexer: Arc<Indexer<ConfigMap>>) -> Arc<Self> {
        Arc::new(Recorder {
            events: Mutex::new(Vec::new()),
            changed: watch::Sender::new(0),
            indexer: Some(indexer),
        })
    }

    fn push(&self, ev: Ev) {
        self.events.lock().push(ev);
        self.changed.send_modify(|n| *n += 1);
    }

    pub fn events(&self) -> Vec<Ev> {
        self.events.lock().clone()
    }

    pub fn len(&self) -> usize {
        self.events.lock().len()
    }

    /// Waits until `pred` holds over the events (re-checked on every new event).
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&[Ev]) -> bool) -> Vec<Ev> {
        let mut rx = self.changed.subscribe();
        let res = tokio::time::timeout(WAIT, rx.wait_for(|_| pred(&self.events.lock()))).await;
        let events = self.events();
        assert!(
            res.is_ok(),
            "timed out waiting for {what}; {} events: {:?}",
            events.len(),
            tail(&events)
        );
        events
    }

    /// The last view of each key: `Some(rv)` if present, `None` after a delete.
    pub fn last_view(&self) -> BTreeMap<String, Option<String>> {
        view_of(&self.events.lock())
    }
}

/// The last view of each key in `events`: `Some(rv)` if present, `None` after a delete.
pub fn view_of(events: &[Ev]) -> BTreeMap<String, Option<String>> {
    let mut view = BTreeMap::new();
    for ev in events {
        match ev {
            Ev::Add { key, rv, .. } => view.insert(key.clone(), Some(rv.clone())),
            Ev::Update { key, new_rv, .. } => view.insert(key.clone(), Some(new_rv.clone())),
            Ev::Delete { key, .. } => view.insert(key.clone(), None),
        };
    }
    view
}

fn tail(events: &[Ev]) -> &[Ev] {
    &events[events.len().saturating_sub(10)..]
}

impl ResourceEventHandler<ConfigMap> for Recorder {
    fn on_add(&self, obj: &Arc<ConfigMap>, initial: bool) {
        let k = key(obj);
        let stored = self.indexer.as_ref().and_then(|i| i.get_by_key(&k));
        self.push(Ev::Add {
            key: k,
            rv: rv(obj),
            initial,
            in_store: stored.is_some(),
            same_arc: stored.is_some_and(|s| Arc::ptr_eq(&s, obj)),
        });
    }

    fn on_update(&self, old: &Arc<ConfigMap>, new: &Arc<ConfigMap>) {
        self.push(Ev::Update {
            key: key(new),
            old_rv: rv(old),
            new_rv: rv(new),
            ptr_eq: Arc::ptr_eq(old, new),
        });
    }

    fn on_delete(&self, obj: &DeletedObject<ConfigMap>) {
        let k = obj.key().map(|k| k.to_string()).unwrap_or_default();
        self.push(Ev::Delete {
            key: k,
            rv: obj.last_known().map(|o| rv(o)),
            tombstone: obj.is_tombstone(),
        });
    }
}

/// The server's current ConfigMaps as key -> RV, read over HTTP.
pub async fn server_state(client: kube::Client) -> BTreeMap<String, String> {
    let api: Api<ConfigMap> = Api::all(client);
    api.list(&Default::default())
        .await
        .expect("list")
        .items
        .iter()
        .map(|o| (key(o), rv(o)))
        .collect()
}

/// The informer cache as key -> RV.
pub fn cache_state(indexer: &Indexer<ConfigMap>) -> BTreeMap<String, String> {
    indexer.list().iter().map(|o| (key(o), rv(o))).collect()
}

/// Starts `informer`, returning the cancel token and the run task.
pub fn start(
    informer: &SharedIndexInformer<ConfigMap>,
) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let task = informer.start(cancel.clone());
    (cancel, task)
}

/// Stops an informer and proves its run task (and so every task it spawned) ended.
pub async fn stop(cancel: CancellationToken, task: tokio::task::JoinHandle<()>) {
    cancel.cancel();
    tokio::time::timeout(WAIT, task)
        .await
        .expect("informer did not stop")
        .expect("run task");
}

/// Creates `cm-0000`..`cm-{n-1}` in the writer's namespace.
pub async fn seed(w: &Writer, n: usize) {
    for i in 0..n {
        w.create(&format!("cm-{i:04}"), "0").await;
    }
}

/// A testserver seeded with `n` ConfigMaps, and a started informer listing them `page_size` at a
/// time whose recording handler (with the indexer, for H2/X7 checks) has synced.
pub struct Synced {
    pub server: TestServer,
    pub w: Writer,
    pub inf: SharedIndexInformer<ConfigMap>,
    pub rec: Arc<Recorder>,
    pub cancel: CancellationToken,
    pub task: tokio::task::JoinHandle<()>,
}

pub async fn seeded_and_synced(n: usize, page_size: u32) -> Synced {
    init_tracing();
    let server = TestServer::start().await.expect("testserver");
    let w = Writer::new(server.client(), "default");
    seed(&w, n).await;
    let inf = informer(server.client(), |c| c.reflector.page_size = page_size);
    let rec = Recorder::with_indexer(inf.indexer());
    let reg = inf.add_event_handler(rec.clone()).expect("handler");
    let (cancel, task) = start(&inf);
    assert_synced(reg.wait_for_sync()).await;
    Synced {
        server,
        w,
        inf,
        rec,
        cancel,
        task,
    }
}

/// Waits up to [`WAIT`] for a `wait_for_sync` future and fails the test unless it reports
/// synced (false means the informer or handler stopped first).
pub async fn assert_synced(sync: impl std::future::Future<Output = bool>) {
    let synced = tokio::time::timeout(WAIT, sync)
        .await
        .expect("synced within WAIT");
    assert!(synced, "synced before the informer stopped");
}
