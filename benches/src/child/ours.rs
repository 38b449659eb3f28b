//! The informer-rs side of every scenario: `SharedIndexInformer`, its indexer and listers.
//!
//! Each scenario uses the informer the way its documentation shows: `ListWatch::new(Api::all)`,
//! `InformerConfig::default()` (page size 500, the namespace index), handlers from `handler_fn`,
//! `set_transform(strip_managed_fields)` for scenario 7a and `ListWatch::metadata` for 7b.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use informer_runtime::informer::{
    InformerConfig, SharedIndexInformer, handler_fn, strip_managed_fields,
};
use informer_runtime::list_watch::{DecodePool, ListWatch};
use informer_runtime::lister::Lister;
use informer_runtime::reflector::InitialListStrategy;
use informer_runtime::shard::{Shard, ShardField, ShardMode};
use k8s_openapi::api::core::v1::Pod;
use kube::api::Api;
use kube::core::{PartialObjectMeta, Selector};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

use super::track::{Sentinel, UpdateTracker, relist_phase, time_queries, update_phase};
use super::{ChildIo, ChildSpec, PHASE_TIMEOUT_S, client, memory_metrics, within};
use crate::CompactPod;
use crate::projection::PodView;
use crate::protocol::{ChildMsg, Command, GENERATION_ANNOTATION, Metrics, Scenario};

/// Runs `spec.scenario` with informer-rs and returns the final metrics.
pub(crate) async fn run(spec: &ChildSpec, io: &mut ChildIo) -> anyhow::Result<Metrics> {
    let client = client(&spec.url, spec.kubeconfig.as_deref()).await?;
    let api: Api<Pod> = Api::all(client.clone());
    let cancel = CancellationToken::new();
    // Dropping the guard at the end of the scenario stops the informer's tasks.
    let _stop = cancel.clone().drop_guard();
    let start = Instant::now();
    match spec.scenario {
        Scenario::Sync | Scenario::SyncPaged => {
            let informer = informer(ListWatch::new(api), spec)?;
            informer.start(cancel);
            synced(&informer, start).await
        }
        Scenario::SyncStrip => {
            let informer = informer(ListWatch::new(api), spec)?;
            informer.set_transform(strip_managed_fields::<Pod>)?;
            informer.start(cancel);
            synced(&informer, start).await
        }
        Scenario::SyncMeta => {
            let informer: SharedIndexInformer<PartialObjectMeta<Pod>> =
                informer(ListWatch::metadata(api), spec)?;
            informer.start(cancel);
            synced(&informer, start).await
        }
        Scenario::Updates => {
            let informer = informer(ListWatch::new(api), spec)?;
            updates(informer, pod_generation, spec, io, cancel).await
        }
        Scenario::Four => {
            let informer = informer(ListWatch::new(api), spec)?;
            let mut registrations = Vec::new();
            let mut counters = Vec::new();
            for _ in 0..4 {
                let seen = Arc::new(AtomicUsize::new(0));
                let counter = seen.clone();
                registrations.push(informer.add_event_handler(handler_fn().on_add(
                    move |_pod: &Arc<Pod>, _initial| {
                        counter.fetch_add(1, Ordering::Relaxed);
                    },
                ))?);
                counters.push(seen);
            }
            informer.start(cancel);
            for reg in &registrations {
                // Per-handler sync (H6): the informer synced and this handler ran every initial add.
                within(PHASE_TIMEOUT_S, "the handlers' sync", reg.wait_for_sync()).await?;
            }
            let mut m = Metrics::from([
                ("sync_s".to_string(), start.elapsed().as_secs_f64()),
                ("objects".to_string(), informer.indexer().len() as f64),
                (
                    "handler_adds".to_string(),
                    counters
                        .iter()
                        .map(|c| c.load(Ordering::Relaxed))
                        .sum::<usize>() as f64,
                ),
            ]);
            m.extend(memory_metrics());
            io.send(&ChildMsg::Synced { metrics: m.clone() });
            io.expect(Command::Proceed).await?;
            Ok(m)
        }
        Scenario::Relist => {
            relist(
                informer(ListWatch::new(api), spec)?,
                spec,
                io,
                start,
                cancel,
            )
            .await
        }
        Scenario::NsQuery => {
            let informer = informer(ListWatch::new(api), spec)?;
            informer.start(cancel);
            let mut m = synced(&informer, start).await?;
            let lister = Lister::from_indexer(informer.indexer());
            let everything = Selector::default();
            m.extend(time_queries(
                spec.namespaces,
                Duration::from_millis(spec.query_ms),
                |ns| {
                    // L2: served by the namespace index (X3).
                    lister.namespaced(ns).list(&everything).len()
                },
            ));
            Ok(m)
        }
        Scenario::Shard => {
            anyhow::ensure!(
                spec.imp.sharding().is_some(),
                "scenario shard runs the shard variants"
            );
            let informer = informer(ListWatch::new(api), spec)?;
            let read_before = crate::sys::loopback_received();
            informer.start(cancel);
            let mut m = synced(&informer, start).await?;
            if let (Some(before), Some(after)) = (read_before, crate::sys::loopback_received()) {
                m.insert(
                    "received_mib".into(),
                    after.saturating_sub(before) as f64 / crate::protocol::MIB,
                );
            }
            let mode = informer.reflector_handle().and_then(|h| h.shard_mode());
            m.insert(
                "server_sharded".into(),
                f64::from(u8::from(mode == Some(ShardMode::Server))),
            );
            Ok(m)
        }
        Scenario::Decode => anyhow::bail!("scenario decode has no informer-rs side"),
        Scenario::Scale => {
            anyhow::bail!("the scale run measures the compact Pod and the projection")
        }
        Scenario::Operator => anyhow::bail!("scenario operator runs child::operator"),
        Scenario::Clusters => anyhow::bail!("scenario clusters runs child::clusters"),
    }
}

/// The decode pool (T6) an informer-rs child decodes its LIST pages and large watch events on:
/// `--decode-threads N` gives it a pool of N threads (`1`: inline, on the informer's own task);
/// without it the runtime's default, the process-wide pool of one thread per core.
pub(crate) fn decode_pool(asked: Option<usize>) -> anyhow::Result<DecodePool> {
    match asked {
        Some(n) => DecodePool::new(n).context("starting the decode pool"),
        None => Ok(DecodePool::shared()),
    }
}

/// How many threads [`decode_pool`] decodes on, for the report.
pub(crate) fn decode_threads(asked: Option<usize>) -> usize {
    asked.map_or_else(|| DecodePool::shared().threads(), |n| n.max(1))
}

/// An informer with the default configuration and the run's page size.
/// Scenario 4 with `informer`, whatever form of the Pod it caches: sync, then the relist phase,
/// its end seen by the sentinel Pod.
async fn relist<K>(
    informer: SharedIndexInformer<K>,
    spec: &ChildSpec,
    io: &mut ChildIo,
    start: Instant,
    cancel: CancellationToken,
) -> anyhow::Result<Metrics>
where
    K: informer_runtime::Meta + Clone + DeserializeOwned + Debug,
{
    let sentinel = Arc::new(Sentinel::new(&spec.sentinel));
    let (on_add, on_update) = (sentinel.clone(), sentinel.clone());
    informer.add_event_handler(
        handler_fn()
            .on_add(move |o: &Arc<K>, _initial| on_add.on_name(o.object_name()))
            .on_update(move |_old, o: &Arc<K>| on_update.on_name(o.object_name())),
    )?;
    informer.start(cancel);
    let sync = synced(&informer, start).await?;
    io.send(&ChildMsg::Synced { metrics: sync });
    let indexer = informer.indexer();
    relist_phase(io, sentinel, || indexer.len()).await
}

fn informer<K>(lw: ListWatch<K>, spec: &ChildSpec) -> anyhow::Result<SharedIndexInformer<K>>
where
    K: informer_runtime::Meta + Clone + DeserializeOwned + Debug,
{
    let mut config = InformerConfig::default();
    config.reflector.page_size = spec.page_size;
    config.reflector.label_selector = spec.label_selector.clone();
    // The default (V1: the streaming list) unless the scenario pins the paged LIST;
    // `ours-streaming` streams in every scenario.
    if spec.imp == crate::protocol::Impl::OursStreaming {
        config.reflector.strategy = InitialListStrategy::StreamingList;
    } else if spec.paged {
        config.reflector.strategy = InitialListStrategy::ListWatch;
    }
    if spec.imp == crate::protocol::Impl::OursOrdered {
        config.fifo_mode = informer_runtime::delta_fifo::FifoMode::Ordered;
    }
    // Scenario 9: one replica of n is shard 0 (every replica's share is alike, by the hash).
    if let Some((replicas, _)) = spec.imp.sharding() {
        config.reflector.shard = Some(Shard::of(0, replicas, ShardField::Uid)?);
    }
    // The `-proto` variants read protobuf (the runtime's default for built-in kinds), every
    // other one JSON, so the JSON figures stay comparable with earlier runs.
    let lw = lw
        .accept_gzip(spec.gzip)
        .prefer_protobuf(spec.imp.protobuf())
        .decode_pool(decode_pool(spec.decode_threads)?);
    SharedIndexInformer::new(lw, config).context("creating the informer")
}

/// Waits for the informer's first sync and reports its time, size and memory.
async fn synced<K>(informer: &SharedIndexInformer<K>, start: Instant) -> anyhow::Result<Metrics>
where
    K: informer_runtime::Meta + Clone + DeserializeOwned + Debug,
{
    let ok = within(PHASE_TIMEOUT_S, "the sync", informer.wait_for_sync()).await?;
    anyhow::ensure!(ok, "the informer stopped before it synced");
    let sync_s = start.elapsed().as_secs_f64();
    let objects = informer.indexer().len().max(1) as f64;
    let mut m = Metrics::from([
        ("sync_s".to_string(), sync_s),
        ("objects".to_string(), informer.indexer().len() as f64),
        ("objects_per_s".to_string(), objects / sync_s.max(1e-9)),
    ]);
    m.extend(memory_metrics());
    if let Some(heap) = m.get("heap_mib").copied() {
        // Everything the process holds after the sync, per cached object: the cache, its
        // indices and the interned strings (a few MiB of runtime and client are included).
        m.insert(
            "heap_bytes_per_object".into(),
            heap * 1024.0 * 1024.0 / objects,
        );
    }
    Ok(m)
}

/// Scenario 2 on an informer of `K`: one handler tracks the generation annotation of every
/// updated Pod, read by `generation` (the typed Pod and the projection keep it differently).
async fn updates<K>(
    informer: SharedIndexInformer<K>,
    generation: fn(&K) -> Option<&str>,
    spec: &ChildSpec,
    io: &mut ChildIo,
    cancel: CancellationToken,
) -> anyhow::Result<Metrics>
where
    K: informer_runtime::Meta + Clone + DeserializeOwned + Debug,
{
    let start = Instant::now();
    let tracker = Arc::new(UpdateTracker::new(spec.objects, spec.final_generation));
    let handler = tracker.clone();
    let reg = informer.add_event_handler(
        handler_fn().on_update(move |_old, new: &Arc<K>| handler.on_generation(generation(new))),
    )?;
    informer.start(cancel);
    let m = synced(&informer, start).await?;
    let handler_synced = within(
        PHASE_TIMEOUT_S,
        "the handler's initial adds",
        reg.wait_for_sync(),
    )
    .await?;
    anyhow::ensure!(
        handler_synced,
        "the informer stopped before the handler synced"
    );
    update_phase(m, &tracker, spec, io).await
}

/// The generation annotation of a typed Pod.
fn pod_generation(pod: &Pod) -> Option<&str> {
    let annotations = pod.metadata.annotations.as_ref()?;
    annotations.get(GENERATION_ANNOTATION).map(String::as_str)
}

/// The generation annotation of a projected Pod.
fn view_generation(pod: &PodView) -> Option<&str> {
    pod.metadata.annotations.get(GENERATION_ANNOTATION)
}

/// Runs `spec.scenario` with informer-rs caching the controller projection [`PodView`] (P4).
pub(crate) async fn run_projection(spec: &ChildSpec, io: &mut ChildIo) -> anyhow::Result<Metrics> {
    run_view::<PodView>(spec, io, view_generation).await
}

fn compact_generation(pod: &CompactPod) -> Option<&str> {
    pod.metadata
        .annotations
        .as_ref()?
        .get(GENERATION_ANNOTATION)
}

/// Runs `spec.scenario` with informer-rs caching the generated compact Pod (P1).
pub(crate) async fn run_compact(spec: &ChildSpec, io: &mut ChildIo) -> anyhow::Result<Metrics> {
    run_view::<CompactPod>(spec, io, compact_generation).await
}

/// Runs `spec.scenario` with an informer of `V`, another cached shape of the Pod: it lists and
/// watches the Pod endpoint and decodes each object into `V` (P4, P6).
async fn run_view<V>(
    spec: &ChildSpec,
    io: &mut ChildIo,
    generation: fn(&V) -> Option<&str>,
) -> anyhow::Result<Metrics>
where
    V: informer_runtime::Meta + Clone + DeserializeOwned + Debug,
{
    let client = client(&spec.url, spec.kubeconfig.as_deref()).await?;
    let api: Api<Pod> = Api::all(client.clone());
    let cancel = CancellationToken::new();
    let _stop = cancel.clone().drop_guard();
    let start = Instant::now();
    let lw = ListWatch::<V>::of_source(api);
    match spec.scenario {
        // The scale run is the sync at scale; the orchestrator adds the server's figures.
        Scenario::Sync | Scenario::SyncPaged | Scenario::Scale => {
            let informer = informer(lw, spec)?;
            informer.start(cancel);
            synced(&informer, start).await
        }
        Scenario::Updates => updates(informer(lw, spec)?, generation, spec, io, cancel).await,
        Scenario::Relist => relist(informer(lw, spec)?, spec, io, start, cancel).await,
        other => anyhow::bail!("scenario {other} has no variant for {}", spec.imp),
    }
}
