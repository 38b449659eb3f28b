//! Test support for the reflector tests: a recording [`ReflectorStore`] that tests can wait on.

#![allow(dead_code, unreachable_pub)]

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::Mutex;
use std::time::Duration;

use informer_runtime::key::ObjectKey;
use informer_runtime::store::{Keyed, ReflectorStore, StoreError};
use kube::Resource;

/// One call the reflector made on the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Add(String),
    Update(String),
    Delete(String),
    Replace { items: usize, rv: String },
    Resync,
    Bookmark(String),
}

/// What the store has seen.
#[derive(Debug, Default)]
pub struct Recorded<K> {
    pub objects: BTreeMap<String, K>,
    pub ops: Vec<Op>,
}

impl<K> Recorded<K> {
    pub fn replaces(&self) -> usize {
        self.ops
            .iter()
            .filter(|o| matches!(o, Op::Replace { .. }))
            .count()
    }
}

/// A store that applies operations to a map and records them.
pub struct RecordingStore<K> {
    closed: std::sync::atomic::AtomicBool,
    state: Mutex<Recorded<K>>,
    changed: tokio::sync::watch::Sender<u64>,
}

impl<K: Resource + Send + Sync + 'static> RecordingStore<K> {
    pub fn new() -> Arc<Self> {
        Arc::new(RecordingStore {
            closed: std::sync::atomic::AtomicBool::new(false),
            state: Mutex::new(Recorded {
                objects: BTreeMap::new(),
                ops: Vec::new(),
            }),
            changed: tokio::sync::watch::channel(0).0,
        })
    }

    /// From now on every write answers `StoreError::Closed`, as a closed DeltaFifo does.
    pub fn close(&self) {
        self.closed.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The key the reflector handed over, as text; checks the reflector built it right.
    fn key(&self, key: &ObjectKey, obj: &K) -> Result<String, StoreError> {
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(StoreError::Closed);
        }
        assert_eq!(
            *key,
            ObjectKey::from_resource(obj)?,
            "the reflector keys objects"
        );
        Ok(key.to_string())
    }

    fn record(&self, f: impl FnOnce(&mut Recorded<K>)) {
        f(&mut self.state.lock());
        self.changed.send_modify(|v| *v += 1);
    }

    /// Runs `f` on the recorded state.
    pub fn with<R>(&self, f: impl FnOnce(&Recorded<K>) -> R) -> R {
        f(&self.state.lock())
    }

    /// Waits until `cond` holds (checked after every store operation), or panics after `timeout`.
    pub async fn wait_for(
        &self,
        what: &str,
        timeout: Duration,
        cond: impl Fn(&Recorded<K>) -> bool,
    ) {
        let mut rx = self.changed.subscribe();
        let res = tokio::time::timeout(timeout, async {
            loop {
                if self.with(&cond) {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        if res.is_err() {
            let ops = self.with(|r| format!("{:?}", r.ops));
            panic!("timed out after {timeout:?} waiting for {what}; ops: {ops}");
        }
    }
}

impl<K: Resource + Clone + Send + Sync + 'static> ReflectorStore<K> for RecordingStore<K> {
    fn add_shared(&self, key: ObjectKey, obj: Arc<K>) -> Result<(), StoreError> {
        let key = self.key(&key, &obj)?;
        self.record(|r| {
            r.ops.push(Op::Add(key.clone()));
            r.objects.insert(key, Arc::unwrap_or_clone(obj));
        });
        Ok(())
    }

    fn update_shared(&self, key: ObjectKey, obj: Arc<K>) -> Result<(), StoreError> {
        let key = self.key(&key, &obj)?;
        self.record(|r| {
            r.ops.push(Op::Update(key.clone()));
            r.objects.insert(key, Arc::unwrap_or_clone(obj));
        });
        Ok(())
    }

    fn delete(&self, key: ObjectKey, obj: K) -> Result<(), StoreError> {
        let key = self.key(&key, &obj)?;
        self.record(|r| {
            r.ops.push(Op::Delete(key.clone()));
            r.objects.remove(&key);
        });
        Ok(())
    }

    fn replace_shared(
        &self,
        items: Vec<Keyed<K>>,
        resource_version: String,
    ) -> Result<(), StoreError> {
        let mut map = BTreeMap::new();
        for (key, obj) in items {
            map.insert(self.key(&key, &obj)?, Arc::unwrap_or_clone(obj));
        }
        self.record(|r| {
            r.ops.push(Op::Replace {
                items: map.len(),
                rv: resource_version,
            });
            r.objects = map;
        });
        Ok(())
    }

    fn resync(&self) -> Result<(), StoreError> {
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(StoreError::Closed);
        }
        self.record(|r| r.ops.push(Op::Resync));
        Ok(())
    }

    fn bookmark(&self, resource_version: &str) {
        let rv = resource_version.to_string();
        self.record(|r| r.ops.push(Op::Bookmark(rv)));
    }
}

// ---- running a reflector against an informer-testserver ----

use informer_runtime::list_watch::ListWatch;
use informer_runtime::reflector::{
    BackoffConfig, Error, Reflector, ReflectorConfig, ReflectorHandle,
};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use tokio_util::sync::CancellationToken;

/// Generous bound for conditions that take milliseconds when things work.
pub const WAIT: Duration = Duration::from_secs(10);

/// Settings with short intervals so the suite runs in seconds: backoff 50 ms ×2 up to 400 ms, no jitter.
pub fn fast_config() -> ReflectorConfig {
    ReflectorConfig {
        backoff: BackoffConfig {
            initial: Duration::from_millis(50),
            factor: 2.0,
            jitter: 0.0,
            cap: Duration::from_millis(400),
            reset_after: Duration::from_secs(120),
        },
        watch_list_idle_timeout: Duration::from_secs(1),
        ..Default::default()
    }
}

/// A reflector running on its own task, with the errors it reported.
pub struct Running {
    pub store: Arc<RecordingStore<ConfigMap>>,
    pub handle: ReflectorHandle,
    pub errors: Arc<Mutex<Vec<String>>>,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// A reflector started by the caller (see [`start`] for the usual one).
    pub fn new(
        store: Arc<RecordingStore<ConfigMap>>,
        handle: ReflectorHandle,
        errors: Arc<Mutex<Vec<String>>>,
        cancel: CancellationToken,
        task: tokio::task::JoinHandle<()>,
    ) -> Self {
        Running {
            store,
            handle,
            errors,
            cancel,
            task,
        }
    }

    /// Cancels the reflector and checks that its task ends promptly.
    pub async fn stop(self) {
        self.cancel.cancel();
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("reflector ends after cancel")
            .expect("reflector task did not panic");
    }

    /// Waits for the reflector to end by itself (without cancelling it).
    pub async fn ended(self) {
        tokio::time::timeout(WAIT, self.task)
            .await
            .expect("reflector ends by itself")
            .expect("reflector task did not panic");
    }

    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().clone()
    }
}

/// Starts a ConfigMap reflector (all namespaces) on `server` with `config`.
pub fn start(server: &TestServer, mut config: ReflectorConfig) -> Running {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let errors2 = errors.clone();
    config.watch_error_handler = Some(Arc::new(move |e: &Error| {
        errors2.lock().push(format!("{e:?}"));
    }));
    let store = RecordingStore::<ConfigMap>::new();
    // kube's default client retries 429/503/504 itself (`Config::default_retry`); switch that off
    // so these tests exercise the reflector's own handling (R13).
    let mut kc = server.kube_config();
    kc.default_retry = false;
    let client = kube::Client::try_from(kc).expect("client");
    let lw = ListWatch::new(kube::Api::<ConfigMap>::all(client));
    let reflector = Reflector::new(lw, store.clone(), config);
    let handle = reflector.handle();
    let cancel = CancellationToken::new();
    let task = tokio::spawn(reflector.run(cancel.clone()));
    Running {
        store,
        handle,
        errors,
        cancel,
        task,
    }
}

/// A ConfigMap in namespace `default`.
pub fn cm(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            labels: Some([("app".to_string(), "demo".to_string())].into()),
            ..Default::default()
        },
        data: Some([("k".to_string(), "v".to_string())].into()),
        ..Default::default()
    }
}

/// Creates `n` ConfigMaps `cm-0000`….
pub fn seed(server: &TestServer, n: usize) {
    for i in 0..n {
        server.create(&cm(&format!("cm-{i:04}"))).expect("create");
    }
}

pub type Record = informer_testserver::RequestRecord;

/// The LIST requests so far.
pub fn lists(server: &TestServer) -> Vec<Record> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.is_list())
        .collect()
}

/// The WATCH requests so far.
pub fn watches(server: &TestServer) -> Vec<Record> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.is_watch())
        .collect()
}

/// R12: once the first watch is open, expires it with a 410 and waits for the relist that
/// follows (the store's second replace); returns the LIST requests made so far.
pub async fn relist_after_watch_410(server: &TestServer, r: &Running) -> Vec<Record> {
    wait_log(server, "the first watch", |log| {
        log.iter().any(|x| x.is_watch())
    })
    .await;
    server.faults().expire_open_watches();
    wait_replaces(&r.store, 2).await;
    lists(server)
}

/// Waits until the request log satisfies `cond`. The log has no change notification, so this
/// re-checks every 10 ms until `WAIT` (a condition wait with a timeout, not a sleep).
pub async fn wait_log(server: &TestServer, what: &str, cond: impl Fn(&[Record]) -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let log = server.requests();
        if cond(&log) {
            return;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}; log: {:#?}", summary(&log));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A compact view of the log for failure messages.
pub fn summary(log: &[Record]) -> Vec<String> {
    log.iter()
        .map(|r| {
            format!(
                "{:?} {} rv={:?} limit={:?} continue={} sie={:?} -> {}",
                r.verb,
                r.path,
                r.query.resource_version,
                r.query.limit,
                r.query.continue_token.is_some(),
                r.query.send_initial_events,
                r.status
            )
        })
        .collect()
}

/// Waits until the store has been replaced `n` times in total.
pub async fn wait_replaces(store: &RecordingStore<ConfigMap>, n: usize) {
    store
        .wait_for(&format!("{n} replace(s)"), WAIT, |r| r.replaces() >= n)
        .await;
}
