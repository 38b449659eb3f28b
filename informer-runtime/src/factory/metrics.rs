//! Informer metrics read at scrape time: reflector restarts, last resource version, sync state and cache size per informer.

use std::sync::{Arc, OnceLock, Weak};

/// A per-informer counter read from a [`Snapshot`]: name, help, reader.
type SnapshotCounter = (&'static str, &'static str, fn(&Snapshot) -> u64);

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

use super::Inner;
use crate::reflector::ReflectorCounters;

/// What one informer reports at a scrape.
pub(super) struct Snapshot {
    pub(super) name: String,
    pub(super) counters: ReflectorCounters,
    pub(super) last_resource_version: Option<String>,
    pub(super) synced: bool,
    pub(super) cached: usize,
    /// Index function failures met while storing objects (item 9).
    pub(super) index_errors: u64,
    /// Panics caught around one key's processing (item 4).
    pub(super) process_panics: u64,
}

/// The factory the collector reports on; filled in when the factory is built.
pub(super) type Slot = Arc<OnceLock<Weak<Inner>>>;

/// A prometheus-client collector over every informer of one factory. It holds the factory
/// weakly, so registering it never keeps a shut-down factory alive.
#[derive(Debug)]
pub(super) struct FactoryCollector {
    pub(super) slot: Slot,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedInformerFactory")
            .finish_non_exhaustive()
    }
}

type Counter = fn(&ReflectorCounters) -> u64;
type GaugeOf = fn(&Snapshot) -> i64;

const COUNTERS: [(&str, &str, Counter); 8] = [
    (
        "informer_list_requests",
        "LIST requests sent by the informer's reflector",
        |c| c.list_requests,
    ),
    (
        "informer_relists",
        "Relists after the first list (R11, R12, R15)",
        |c| c.relists,
    ),
    (
        "informer_watch_requests",
        "WATCH requests sent by the informer's reflector",
        |c| c.watch_requests,
    ),
    (
        "informer_rewatches",
        "Watches restarted without a relist (R9, R13)",
        |c| c.rewatches,
    ),
    (
        "informer_watch_list_fallbacks",
        "Watch-list streams abandoned for a paged LIST (R19, R20)",
        |c| c.watch_list_fallbacks,
    ),
    (
        "informer_reflector_errors",
        "List and watch errors the reflector handled",
        |c| c.errors,
    ),
    (
        "informer_invalid_objects",
        "Listed or watched objects dropped for having no name",
        |c| c.invalid_objects,
    ),
    (
        "informer_transform_panics",
        "Objects dropped because the transform panicked on them",
        |c| c.transform_panics,
    ),
];

impl Collector for FactoryCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
        let Some(inner) = self.slot.get().and_then(Weak::upgrade) else {
            return Ok(());
        };
        let snapshots = inner.snapshots();
        for (name, help, read) in COUNTERS {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for s in &snapshots {
                let labels = [("informer", s.name.as_str())];
                ConstCounter::new(read(&s.counters)).encode(family.encode_family(&labels)?)?;
            }
        }
        let informer_counters: [SnapshotCounter; 2] = [
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
        for (name, help, read) in informer_counters {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for s in &snapshots {
                let labels = [("informer", s.name.as_str())];
                ConstCounter::new(read(s)).encode(family.encode_family(&labels)?)?;
            }
        }
        let gauges: [(&str, &str, GaugeOf); 3] = [
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
                "informer_last_resource_version",
                "The last synced resourceVersion, when it is numeric (R23); -1 before the first list",
                |s| {
                    s.last_resource_version
                        .as_deref()
                        .and_then(|rv| rv.parse::<i64>().ok())
                        .unwrap_or(-1)
                },
            ),
        ];
        for (name, help, read) in gauges {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for s in &snapshots {
                let labels = [("informer", s.name.as_str())];
                ConstGauge::new(read(s)).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}
