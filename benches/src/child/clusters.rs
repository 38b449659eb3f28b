//! Scenario 12, the informer-rs side: one `informer_controller::fleet::Fleet` over every
//! cluster's server, at its defaults.
//!
//! The fleet declares one informer, the Pod in the form a user gets without asking:
//! `informer_k8s::api::core::v1::Pod`, the compact Pod that `factory.core().v1().pods()` caches
//! (decision record 26), read over protobuf (T1) with the streaming initial list (V1), the
//! factory's defaults. A `StaticProvider` engages every cluster at once (decision record 29:
//! one client and one factory per cluster). The only settings are the ones every child of the
//! benchmark shares: gzip as `--gzip` says (off unless asked, for every side alike) and the
//! decode pool when `--decode-threads` sizes it. The clock starts before the fleet is built and
//! stops when [`Fleet::clusters`] reports every cluster [`ClusterState::Ready`]: each factory's
//! informers synced.

use std::time::{Duration, Instant};

use anyhow::Context;
use informer_controller::fleet::{ClusterSpec, ClusterState, Fleet, StaticProvider};
use informer_k8s::api::core::v1::Pod as CachedPod;
use informer_runtime::list_watch::DecodePool;
use tokio_util::sync::CancellationToken;

use super::{ChildSpec, PHASE_TIMEOUT_S, memory_metrics, within};
use crate::protocol::Metrics;

/// How often the child looks at the clusters' states while they sync: far below any sync's
/// time, and the look is one read lock.
const POLL: Duration = Duration::from_millis(2);

/// Syncs every cluster of `spec.cluster_urls` and reports time, heap, RSS and CPU seconds.
pub(crate) async fn run(spec: &ChildSpec) -> anyhow::Result<Metrics> {
    anyhow::ensure!(
        !spec.cluster_urls.is_empty(),
        "scenario clusters needs --cluster-urls"
    );
    let start = Instant::now();
    let pool = spec
        .decode_threads
        .map(DecodePool::new)
        .transpose()
        .context("starting the decode pool")?;
    let gzip = spec.gzip;
    let fleet = Fleet::builder()
        .informer::<CachedPod>()
        .factory(move |_, factory| {
            let factory = factory.gzip(gzip);
            match &pool {
                Some(pool) => factory.decode_pool(pool.clone()),
                None => factory,
            }
        })
        .build();
    let mut clusters = Vec::with_capacity(spec.cluster_urls.len());
    for (c, url) in spec.cluster_urls.iter().enumerate() {
        let mut config = kube::Config::new(
            url.parse::<http::Uri>()
                .with_context(|| format!("bad server url {url:?}"))?,
        );
        // Watches may be open for up to 10 minutes (R6); never cut them on the client side.
        config.read_timeout = None;
        clusters.push((format!("cluster-{c:02}"), ClusterSpec::new(config)));
    }
    let n = clusters.len();
    let cancel = CancellationToken::new();
    // Dropping the guard at the end of the scenario stops the fleet (and every cluster).
    let _stop = cancel.clone().drop_guard();
    let running = fleet.clone();
    let provider = StaticProvider::new(clusters);
    tokio::spawn(async move { running.run(provider, cancel).await });
    within(
        PHASE_TIMEOUT_S,
        "every cluster's sync",
        all_ready(&fleet, n),
    )
    .await?;
    let sync_s = start.elapsed().as_secs_f64();
    let mut objects = 0;
    for status in fleet.clusters() {
        let cluster = fleet.cluster(&status.name)?;
        objects += cluster
            .factory()
            .existing_informer::<CachedPod>()
            .map_or(0, |informer| informer.indexer().len());
    }
    anyhow::ensure!(
        objects == spec.objects,
        "the fleet cached {objects} Pods; the servers hold {}",
        spec.objects
    );
    let cpu_s = crate::sys::cpu_seconds().context("reading /proc/self/stat")?;
    let per_object = objects.max(1) as f64;
    let mut m = Metrics::from([
        ("sync_s".to_string(), sync_s),
        ("clusters".to_string(), n as f64),
        ("objects".to_string(), objects as f64),
        ("objects_per_s".to_string(), per_object / sync_s.max(1e-9)),
        ("cpu_s".to_string(), cpu_s),
    ]);
    m.extend(memory_metrics());
    if let Some(heap) = m.get("heap_mib").copied() {
        // Everything the process holds once every cluster synced, per cached Pod: the caches,
        // their indices, the shared strings, and every cluster's client, factory and tasks.
        m.insert(
            "heap_bytes_per_object".into(),
            heap * crate::protocol::MIB / per_object,
        );
    }
    Ok(m)
}

/// Returns once the fleet reports `n` clusters, every one [`ClusterState::Ready`]. A cluster
/// reported `Failed` (its sync took longer than the fleet's timeout) goes on syncing and is
/// waited for, up to the caller's bound.
async fn all_ready(fleet: &Fleet, n: usize) {
    loop {
        let states = fleet.clusters();
        if states.len() == n && states.iter().all(|s| s.state == ClusterState::Ready) {
            return;
        }
        tokio::time::sleep(POLL).await;
    }
}
