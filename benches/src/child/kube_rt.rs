//! The kube-runtime side of every scenario: `watcher` + `reflector` + `Store`, default config.
//!
//! This is kube-runtime as its documentation recommends using it: `watcher::Config::default()`
//! (page size 500, bookmarks on), `.default_backoff()`, a `reflector` writing a `Store`, and the
//! application's "handler" as the consumer of the reflector's event stream. Transforms use
//! `.modify()`, metadata-only uses `metadata_watcher`, and shared mode uses `store_shared` with
//! `subscribe()` (feature `unstable-runtime`).

use std::fmt::Debug;
use std::future::ready;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;

use super::track::{Sentinel, UpdateTracker, relist_phase, time_queries, update_phase};
use super::{ChildIo, ChildSpec, PHASE_TIMEOUT_S, client, memory_metrics, within};
use crate::protocol::{ChildMsg, Command, Impl, Metrics, Scenario};

/// Subscriber buffer of the shared-stream mode (the kube-runtime docs use 100-256; larger is kinder).
const SHARED_BUFFER: usize = 1024;

/// Runs `spec.scenario` with kube-runtime and returns the final metrics.
pub(crate) async fn run(spec: &ChildSpec, io: &mut ChildIo) -> anyhow::Result<Metrics> {
    let client = client(&spec.url, spec.kubeconfig.as_deref()).await?;
    let api: Api<Pod> = Api::all(client.clone());
    let mut config = watcher::Config::default().page_size(spec.page_size);
    if let Some(selector) = &spec.label_selector {
        config = config.labels(selector);
    }
    let start = Instant::now();
    match (spec.scenario, spec.imp) {
        // kube-runtime's default initial list is the paged LIST: scenarios 1 and 1b alike.
        (Scenario::Sync | Scenario::SyncPaged, _) => {
            let (store, _task) = reflect(watcher(api, config).default_backoff(), |_| {});
            synced(&store, start, "sync").await
        }
        (Scenario::SyncStrip, _) => {
            let stream = watcher(api, config)
                .default_backoff()
                .modify(|p: &mut Pod| p.managed_fields_mut().clear());
            let (store, _task) = reflect(stream, |_| {});
            synced(&store, start, "sync").await
        }
        (Scenario::SyncMeta, _) => {
            let api: Api<PartialObjectMeta<Pod>> = Api::all(client);
            let (store, _task) = reflect(watcher(api, config).default_backoff(), |_| {});
            synced(&store, start, "sync").await
        }
        (Scenario::Updates, _) => {
            let tracker = Arc::new(UpdateTracker::new(spec.objects, spec.final_generation));
            let handler = tracker.clone();
            let (store, _task) = reflect(watcher(api, config).default_backoff(), move |ev| {
                if let watcher::Event::Apply(pod) = ev {
                    handler.on_update(pod);
                }
            });
            let m = synced(&store, start, "sync").await?;
            update_phase(m, &tracker, spec, io).await
        }
        (Scenario::Four, Impl::KubeShared) => four_shared(api, config, spec, io, start).await,
        (Scenario::Four, _) => {
            let mut stores = Vec::new();
            let mut tasks = Vec::new();
            for _ in 0..4 {
                let (store, task) = reflect(
                    watcher(api.clone(), config.clone()).default_backoff(),
                    |_| {},
                );
                stores.push(store);
                tasks.push(task);
            }
            for store in &stores {
                within(PHASE_TIMEOUT_S, "the sync", store.wait_until_ready()).await??;
            }
            let mut m = Metrics::from([
                ("sync_s".to_string(), start.elapsed().as_secs_f64()),
                ("objects".to_string(), stores[0].len() as f64),
            ]);
            m.extend(memory_metrics());
            io.send(&ChildMsg::Synced { metrics: m.clone() });
            io.expect(Command::Proceed).await?;
            Ok(m)
        }
        (Scenario::Relist, _) => {
            let sentinel = Arc::new(Sentinel::new(&spec.sentinel));
            let handler = sentinel.clone();
            let (store, _task) = reflect(watcher(api, config).default_backoff(), move |ev| {
                // Only a live event: the orchestrator creates the sentinel after the relist's LIST.
                if let watcher::Event::Apply(pod) = ev {
                    handler.on_pod(pod);
                }
            });
            let sync = synced(&store, start, "sync").await?;
            io.send(&ChildMsg::Synced { metrics: sync });
            relist_phase(io, sentinel, || store.len()).await
        }
        (Scenario::NsQuery, _) => {
            let (store, _task) = reflect(watcher(api, config).default_backoff(), |_| {});
            let mut m = synced(&store, start, "sync").await?;
            m.extend(time_queries(
                spec.namespaces,
                Duration::from_millis(spec.query_ms),
                |ns| {
                    // kube-runtime has no index: a namespaced query is a scan of the whole store (KR3).
                    store
                        .state_filter(|p| p.metadata.namespace.as_deref() == Some(ns))
                        .len()
                },
            ));
            Ok(m)
        }
        (Scenario::Decode, _) => anyhow::bail!("scenario decode has no kube-runtime side"),
        (Scenario::Shard, _) => anyhow::bail!("kube-runtime has no sharded list and watch"),
        (Scenario::Scale, _) => anyhow::bail!("the scale run measures informer-rs's compact Pod"),
        (Scenario::Operator, _) => anyhow::bail!("scenario operator has no kube-runtime side"),
        (Scenario::Clusters, _) => anyhow::bail!("scenario clusters has no kube-runtime side"),
    }
}

/// Spawns `stream` into a reflector over a fresh store; `handler` sees every event after the store
/// applied it (kube-runtime's place for application logic).
fn reflect<K, S>(
    stream: S,
    mut handler: impl FnMut(&watcher::Event<K>) + Send + 'static,
) -> (Store<K>, JoinHandle<()>)
where
    K: Resource<DynamicType = ()> + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    S: futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send + 'static,
{
    let writer = reflector::store::Writer::<K>::default();
    let store = writer.as_reader();
    let task = tokio::spawn(reflector::reflector(writer, stream).for_each(move |ev| {
        match ev {
            Ok(ev) => handler(&ev),
            Err(e) => tracing::debug!("kube watcher error: {e}"),
        }
        ready(())
    }));
    (store, task)
}

/// Waits for the store's first sync and reports its time, size and memory.
async fn synced<K>(store: &Store<K>, start: Instant, what: &str) -> anyhow::Result<Metrics>
where
    K: Resource<DynamicType = ()> + Clone + 'static,
{
    within(PHASE_TIMEOUT_S, what, store.wait_until_ready())
        .await?
        .context("reflector dropped")?;
    let mut m = Metrics::from([
        ("sync_s".to_string(), start.elapsed().as_secs_f64()),
        ("objects".to_string(), store.len() as f64),
    ]);
    m.extend(memory_metrics());
    Ok(m)
}

/// Scenario 3 in shared-stream mode: one watcher and store, four subscribers.
async fn four_shared(
    api: Api<Pod>,
    config: watcher::Config,
    spec: &ChildSpec,
    io: &mut ChildIo,
    start: Instant,
) -> anyhow::Result<Metrics> {
    let writer = reflector::store::Writer::<Pod>::new_shared(SHARED_BUFFER, ());
    let store = writer.as_reader();
    let mut subscribers = Vec::new();
    for i in 0..4 {
        // Subscribers must exist before the root stream starts (kube-rs#1630).
        let sub = writer
            .subscribe()
            .context("store_shared writer must be subscribable")?;
        let (tx, rx) = tokio::sync::watch::channel(0usize);
        subscribers.push((
            rx,
            tokio::spawn(async move {
                let mut seen = 0usize;
                let mut sub = std::pin::pin!(sub);
                while let Some(_pod) = sub.next().await {
                    seen += 1;
                    let _ = tx.send(seen);
                }
                tracing::debug!("subscriber {i} ended after {seen} objects");
            }),
        ));
    }
    let _root = tokio::spawn(
        watcher(api, config)
            .default_backoff()
            .reflect_shared(writer)
            .for_each(|_| ready(())),
    );
    within(PHASE_TIMEOUT_S, "the shared sync", store.wait_until_ready()).await??;
    for (rx, _) in &mut subscribers {
        // Each subscriber gets every object once after the initial list (the InitDone broadcast).
        let want = spec.objects;
        within(
            PHASE_TIMEOUT_S,
            "the subscribers",
            rx.wait_for(|n| *n >= want),
        )
        .await??;
    }
    let mut m = Metrics::from([
        ("sync_s".to_string(), start.elapsed().as_secs_f64()),
        ("objects".to_string(), store.len() as f64),
    ]);
    m.extend(memory_metrics());
    io.send(&ChildMsg::Synced { metrics: m.clone() });
    io.expect(Command::Proceed).await?;
    Ok(m)
}
