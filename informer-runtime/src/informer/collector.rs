//! Per-informer metrics read at scrape time ([V4]): the reflector's counters, sync state, cache size,
//! FIFO depth, processing latency and the resource versions of the reflector and of the store,
//! each labelled with the informer's name.
//!
//! The factory registers one collector over all its informers
//! ([`SharedInformerFactoryBuilder::metrics`](crate::factory::SharedInformerFactoryBuilder::metrics));
//! a hand-built informer registers its own [`InformerCollector`].
//!
//! [V4]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#15-client-go-135-137-additions

use std::sync::Weak;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};

use super::Inner;
use crate::reflector::ReflectorCounters;

/// What one informer reports at a scrape.
pub(crate) struct Snapshot {
    pub(crate) name: String,
    pub(crate) counters: ReflectorCounters,
    pub(crate) last_resource_version: Option<String>,
    pub(crate) store_resource_version: Option<u64>,
    pub(crate) synced: bool,
    pub(crate) cached: usize,
    pub(crate) queued: usize,
    /// Index function failures met while storing objects (issue 14 item 9).
    pub(crate) index_errors: u64,
    /// Panics caught around one key's processing (issue 14 item 4).
    pub(crate) process_panics: u64,
    /// Time to apply one popped key's deltas to the store and hand them to the handlers.
    pub(crate) processing: Histogram,
    /// How the informer's shard is applied (KEP-5866), if it has one.
    pub(crate) shard_mode: Option<crate::shard::ShardMode>,
}

/// A fresh processing-latency histogram: 100 µs to about 26 s.
pub(crate) fn processing_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 4.0, 10))
}

type Counter = fn(&Snapshot) -> u64;
type GaugeOf = fn(&Snapshot) -> i64;

/// A numeric resource version as a gauge value; -1 when absent or not numeric.
fn rv_gauge(rv: Option<u64>) -> i64 {
    rv.and_then(|v| i64::try_from(v).ok()).unwrap_or(-1)
}

const COUNTERS: [(&str, &str, Counter); 10] = [
    (
        "informer_list_requests",
        "LIST requests sent by the informer's reflector",
        |s| s.counters.list_requests,
    ),
    (
        "informer_relists",
        "Relists after the first list (R11, R12, R15)",
        |s| s.counters.relists,
    ),
    (
        "informer_watch_requests",
        "WATCH requests sent by the informer's reflector",
        |s| s.counters.watch_requests,
    ),
    (
        "informer_rewatches",
        "Watches restarted without a relist (R9, R13)",
        |s| s.counters.rewatches,
    ),
    (
        "informer_watch_list_fallbacks",
        "Watch-list streams abandoned for a paged LIST (R19, R20)",
        |s| s.counters.watch_list_fallbacks,
    ),
    (
        "informer_reflector_errors",
        "List and watch errors the reflector handled",
        |s| s.counters.errors,
    ),
    (
        "informer_invalid_objects",
        "Listed or watched objects dropped for having no name",
        |s| s.counters.invalid_objects,
    ),
    (
        "informer_transform_panics",
        "Objects dropped because the transform panicked on them",
        |s| s.counters.transform_panics,
    ),
    (
        "informer_index_errors",
        "Index function failures (errors and panics); the object was stored without that index entry",
        |s| s.index_errors,
    ),
    (
        "informer_process_panics",
        "Panics caught while processing one key's deltas; its deltas were dropped",
        |s| s.process_panics,
    ),
];

const GAUGES: [(&str, &str, GaugeOf); 6] = [
    (
        "informer_shard_mode",
        "How the informer's shard is applied (KEP-5866): 0 no shard or not listed yet, 1 by the server, 2 filtered on the client",
        |s| match s.shard_mode {
            None => 0,
            Some(crate::shard::ShardMode::Server) => 1,
            Some(crate::shard::ShardMode::Client) => 2,
        },
    ),
    (
        "informer_synced",
        "1 once the informer's first list has been processed (D7)",
        |s| i64::from(s.synced),
    ),
    (
        "informer_cached_objects",
        "Objects in the informer's store",
        |s| i64::try_from(s.cached).unwrap_or(i64::MAX),
    ),
    (
        "informer_fifo_queued_items",
        "Keys waiting in the informer's delta FIFO (V4, client-go fifo_queued_items)",
        |s| i64::try_from(s.queued).unwrap_or(i64::MAX),
    ),
    (
        "informer_last_resource_version",
        "The reflector's last synced resourceVersion, when it is numeric (R23); -1 before the first list",
        |s| {
            rv_gauge(
                s.last_resource_version
                    .as_deref()
                    .and_then(|rv| rv.parse().ok()),
            )
        },
    ),
    (
        "informer_store_resource_version",
        "The resourceVersion the store reflects: of the last processed object, or of the last list or bookmark once the FIFO is drained (V4); -1 before the first",
        |s| rv_gauge(s.store_resource_version),
    ),
];

/// Encodes every per-informer family for `snapshots`, one series per informer (`informer` label).
pub(crate) fn encode(
    snapshots: &[Snapshot],
    encoder: &mut DescriptorEncoder<'_>,
) -> Result<(), std::fmt::Error> {
    for (name, help, read) in COUNTERS {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
        for s in snapshots {
            let labels = [("informer", s.name.as_str())];
            ConstCounter::new(read(s)).encode(family.encode_family(&labels)?)?;
        }
    }
    for (name, help, read) in GAUGES {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for s in snapshots {
            let labels = [("informer", s.name.as_str())];
            ConstGauge::new(read(s)).encode(family.encode_family(&labels)?)?;
        }
    }
    let mut family = encoder.encode_descriptor(
        "informer_processing_latency_seconds",
        "Time to apply one popped key's deltas to the store and hand them to the handlers (V4)",
        None,
        MetricType::Histogram,
    )?;
    for s in snapshots {
        let labels = [("informer", s.name.as_str())];
        s.processing.encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// The per-informer metrics of one informer built by hand (the factory reports its own
/// informers already). Holds the informer weakly: a dropped informer reports nothing.
///
/// ```no_run
/// # use informer_runtime::informer::{InformerConfig, SharedIndexInformer};
/// # use informer_runtime::list_watch::ListWatch;
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// let informer = SharedIndexInformer::new(
///     ListWatch::new(kube::Api::<ConfigMap>::all(client)),
///     InformerConfig { name: "configmaps".into(), ..Default::default() },
/// )?;
/// let mut registry = prometheus_client::registry::Registry::default();
/// registry.register_collector(Box::new(informer.collector()));
/// # Ok(()) }
/// ```
pub struct InformerCollector<K> {
    pub(super) inner: Weak<Inner<K>>,
}

impl<K> std::fmt::Debug for InformerCollector<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = self.inner.upgrade().map(|i| i.name.to_string());
        f.debug_struct("InformerCollector")
            .field("informer", &name)
            .finish()
    }
}

impl<K: crate::object::Meta> Collector for InformerCollector<K> {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let Some(inner) = self.inner.upgrade() else {
            return Ok(());
        };
        encode(&[inner.snapshot()], &mut encoder)
    }
}
