//! Helpers shared by informer-rs's tests, so that no crate keeps its own copy: condition waits
//! with one deadline ([`WAIT`]), a test log subscriber, object builders, a log of recorded
//! values that tests wait on, metric scraping, clients with their own user agent, and a kubectl
//! harness.
//!
//! Every wait ends in a panic that names what was awaited: a test never sleeps to synchronise.
//!
//! ```
//! # async fn demo() {
//! use informer_test_support::{Recorder, within};
//! let log = Recorder::new();
//! log.push(1);
//! log.wait_until("one value", |v| v.len() == 1).await;
//! within("a ready future", async {}).await;
//! # }
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

mod kubectl;
mod recorder;

use std::future::Future;
use std::time::Duration;

use http::{HeaderName, HeaderValue};
use informer_testserver::TestServer;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use kube::core::WatchEvent;
use prometheus_client::registry::Registry;
use tokio::sync::watch;

pub use kubectl::Kubectl;
pub use recorder::Recorder;

/// How long any condition may take before a test fails.
pub const WAIT: Duration = Duration::from_secs(20);

/// Installs a test log subscriber once; `RUST_LOG` controls it (default `warn`).
pub fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_test_writer()
        .try_init();
}

/// Awaits `fut`, or panics naming `what` after [`WAIT`].
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// Waits until `cond()` holds, for state that sends no notification (a request log, a
/// counter): re-checks every 5 ms and panics naming `what` after [`WAIT`].
pub async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    poll_within(WAIT, what, || std::future::ready(cond())).await;
}

/// Waits until the async condition holds (a GET against the server), re-checking every 5 ms;
/// panics naming `what` after `limit`.
pub async fn poll_within<F, Fut>(limit: Duration, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    while !cond().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {} s waiting for {what}",
            limit.as_secs()
        );
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until `cond` holds for the value in `rx`, re-checking whenever it changes; panics
/// after [`WAIT`] or when the sender is gone.
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

/// A ConfigMap `ns/name` with `data.v = v` and a `filler` of `kib` KiB: sixty-four of 4 KiB make
/// a LIST body over the 128 KiB above which kube-apiserver gzips (T3).
pub fn big_config_map(ns: &str, name: &str, kib: usize) -> ConfigMap {
    let mut obj = cm(ns, name, "1");
    obj.data
        .get_or_insert_default()
        .insert("filler".into(), "ab".repeat(kib * 512));
    obj
}

/// The objects of a watch-list stream's initial `ADDED` events, read up to its bookmark annotated
/// `k8s.io/initial-events-end` (other bookmarks are skipped; anything else panics).
pub async fn initial_events<K, E, S>(stream: &mut S) -> Vec<K>
where
    K: std::fmt::Debug,
    E: std::fmt::Debug,
    S: futures::Stream<Item = Result<WatchEvent<K>, E>> + Unpin,
{
    let mut objects = Vec::new();
    loop {
        match next_event(stream).await {
            WatchEvent::Added(obj) => objects.push(obj),
            WatchEvent::Bookmark(b)
                if b.metadata
                    .annotations
                    .contains_key("k8s.io/initial-events-end") =>
            {
                return objects;
            }
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected initial event {other:?}"),
        }
    }
}

/// The object of the next `ADDED` event, skipping bookmarks (anything else panics).
pub async fn next_added<K, E, S>(stream: &mut S) -> K
where
    K: std::fmt::Debug,
    E: std::fmt::Debug,
    S: futures::Stream<Item = Result<WatchEvent<K>, E>> + Unpin,
{
    loop {
        match next_event(stream).await {
            WatchEvent::Added(obj) => return obj,
            WatchEvent::Bookmark(_) => {}
            other => panic!("expected an ADDED event: {other:?}"),
        }
    }
}

async fn next_event<K, E, S>(stream: &mut S) -> WatchEvent<K>
where
    E: std::fmt::Debug,
    S: futures::Stream<Item = Result<WatchEvent<K>, E>> + Unpin,
{
    use futures::StreamExt as _;
    match tokio::time::timeout(WAIT, stream.next()).await {
        Ok(Some(Ok(ev))) => ev,
        Ok(Some(Err(e))) => panic!("watch error: {e:?}"),
        Ok(None) => panic!("the watch ended"),
        Err(_) => panic!("timed out waiting for a watch event"),
    }
}

/// A ConfigMap `ns/name` with `data.v = v`.
pub fn cm(ns: &str, name: &str, v: &str) -> ConfigMap {
    config_map(ns, name, v, &[])
}

/// A ConfigMap `ns/name` at resourceVersion `rv` and nothing else: what the delta FIFO's tests
/// queue, where the resourceVersion marks which version of an object a delta carries.
pub fn cm_at(ns: &str, name: &str, rv: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            resource_version: Some(rv.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A ConfigMap `ns/name` with `data.v = v` and the given labels (none: no `labels` field).
pub fn config_map(ns: &str, name: &str, v: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some(ns.into()),
            labels: (!labels.is_empty()).then(|| {
                labels
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect()
            }),
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

/// The registry in the Prometheus text format.
pub fn scrape(registry: &Registry) -> String {
    let mut out = String::new();
    prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
    out
}

/// The value of the sample line of `text` that starts with `series ` (exact labels), if any.
pub fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(series)
                .and_then(|rest| rest.strip_prefix(' '))
        })
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_reads_the_exact_series_only() {
        let text = "a_total{q=\"x\"} 3\na_total{q=\"xy\"} 5\n";
        assert_eq!(sample(text, "a_total{q=\"x\"}"), Some(3.0));
        assert_eq!(sample(text, "a_total{q=\"xy\"}"), Some(5.0));
        assert_eq!(sample(text, "a_total"), None);
    }

    #[tokio::test]
    async fn recorder_wakes_a_waiter_on_push() {
        let log = Recorder::new();
        let waiter = {
            let log = log.clone();
            tokio::spawn(async move { log.wait_until("two", |v: &[u8]| v.len() == 2).await })
        };
        log.push(1);
        log.push(2);
        assert_eq!(waiter.await.unwrap(), vec![1, 2]);
    }
}
