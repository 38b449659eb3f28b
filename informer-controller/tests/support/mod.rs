//! Helpers shared by the controller tests: object builders, a recorder with condition waits,
//! clients with their own user agent, and metric scraping.

#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

/// Lease timings with E2's proportions, short (lease 2 s, renew 1 s, retry 250 ms) and without
/// jitter, so a takeover's bound is lease + retry.
pub fn fast() -> informer_controller::leader::LeaderElectionConfig {
    informer_controller::leader::LeaderElectionConfig {
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_secs(1),
        retry_period: Duration::from_millis(250),
        jitter_factor: 0.0,
        release_on_cancel: true,
    }
}

/// How long any condition may take before a test fails.
pub const WAIT: Duration = Duration::from_secs(20);

/// Installs a test log subscriber once (RUST_LOG controls it).
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_test_writer()
        .try_init();
}

/// A ConfigMap `ns/name` with `data.v = v`.
pub fn cm(ns: &str, name: &str, v: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            ..Default::default()
        },
        data: Some([("v".to_string(), v.to_string())].into()),
        ..Default::default()
    }
}

/// A client of `server` that sends `User-Agent: agent` (for `Faults::refuse_user_agent`).
pub fn client_with_agent(server: &TestServer, agent: &str) -> kube::Client {
    let mut config = server.kube_config();
    config.headers.push((
        HeaderName::from_static("user-agent"),
        HeaderValue::from_str(agent).unwrap(),
    ));
    kube::Client::try_from(config).unwrap()
}

/// A log of `T`s that tests wait on: every push wakes the waiters.
pub struct Recorder<T> {
    items: Mutex<Vec<T>>,
    changed: watch::Sender<u64>,
}

impl<T: Clone> Recorder<T> {
    pub fn new() -> Arc<Self> {
        Arc::new(Recorder {
            items: Mutex::new(Vec::new()),
            changed: watch::Sender::new(0),
        })
    }

    pub fn push(&self, item: T) {
        self.items.lock().push(item);
        self.changed.send_modify(|n| *n += 1);
    }

    pub fn snapshot(&self) -> Vec<T> {
        self.items.lock().clone()
    }

    /// Waits until `cond` holds for the log; panics with the log after [`WAIT`].
    pub async fn wait_until(&self, what: &str, cond: impl Fn(&[T]) -> bool) -> Vec<T>
    where
        T: std::fmt::Debug,
    {
        let mut rx = self.changed.subscribe();
        let wait = async {
            loop {
                rx.borrow_and_update();
                let items = self.snapshot();
                if cond(&items) {
                    return items;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        match tokio::time::timeout(WAIT, wait).await {
            Ok(items) => items,
            Err(_) => panic!("timed out waiting for {what}; log: {:?}", self.snapshot()),
        }
    }
}

/// Waits until `cond()` holds, re-checking whenever `rx` changes; panics after [`WAIT`].
pub async fn wait_watch<S: Clone>(
    what: &str,
    rx: &mut watch::Receiver<S>,
    cond: impl Fn(&S) -> bool,
) -> S {
    match tokio::time::timeout(WAIT, rx.wait_for(|s| cond(s))).await {
        Ok(Ok(s)) => s.clone(),
        Ok(Err(_)) => panic!("{what}: channel closed"),
        Err(_) => panic!("timed out waiting for {what}"),
    }
}

/// Awaits `fut` or panics after [`WAIT`].
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// The registry in the text format.
pub fn scrape(registry: &Registry) -> String {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
    out
}

/// The value of the sample line starting with `series ` (exact labels), if present.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(series)
                .and_then(|rest| rest.strip_prefix(' '))
        })
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}
