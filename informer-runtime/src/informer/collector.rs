//! Per-informer metrics read at scrape time (V4): the reflector's counters, sync state, cache size,
//! FIFO depth, processing latency and the resource versions of the reflector and of the store.
//!
//! The factory registers one collector over all its informers
//! ([`SharedInformerFactoryBuilder::metrics`](crate::factory::SharedInformerFactoryBuilder::metrics));
//! a hand-built informer registers its own [`InformerCollector`].
//!
//! The families and how they map onto client-go's are listed on [`InformerCollector`].

use std::sync::Weak;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;

use super::Inner;
use crate::reflector::ReflectorCounters;

/// The resource an informer lists and watches, as client-go's metric labels name it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResourceLabels {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) resource: String,
}

impl ResourceLabels {
    /// The group, version and resource of a list-watch URL path: `/api/v1/pods`,
    /// `/apis/apps/v1/namespaces/prod/deployments`. Empty parts for a path of another shape.
    pub(crate) fn of_path(path: &str) -> Self {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        let (group, rest) = match segments.as_slice() {
            ["api", version, rest @ ..] => (("", *version), rest),
            ["apis", group, version, rest @ ..] => ((*group, *version), rest),
            _ => return Self::default(),
        };
        let resource = match rest {
            ["namespaces", _, resource, ..] => *resource,
            [resource, ..] => *resource,
            [] => "",
        };
        ResourceLabels {
            group: group.0.to_owned(),
            version: group.1.to_owned(),
            resource: resource.to_owned(),
        }
    }
}

/// What one informer reports at a scrape.
pub(crate) struct Snapshot {
    pub(crate) name: String,
    /// Its resource, for client-go's `group`, `version` and `resource` labels.
    pub(crate) resource: ResourceLabels,
    pub(crate) counters: ReflectorCounters,
    pub(crate) last_resource_version: Option<String>,
    pub(crate) store_resource_version: Option<u64>,
    pub(crate) synced: bool,
    pub(crate) cached: usize,
    pub(crate) queued: usize,
    /// Index function failures met while storing objects (X2).
    pub(crate) index_errors: u64,
    /// Panics caught around one key's processing (H17).
    pub(crate) process_panics: u64,
    /// Time to apply one popped key's deltas to the store and hand them to the handlers.
    pub(crate) processing: Histogram,
    /// How the informer's shard is applied (KEP-5866), if it has one.
    pub(crate) shard_mode: Option<crate::shard::ShardMode>,
}

/// client-go's `informer_processing_latency_seconds` buckets (component-base 1.37).
const PROCESSING_BUCKETS: [f64; 12] = [
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// A fresh processing-latency histogram with client-go's buckets: 1 ms to 10 s.
pub(crate) fn processing_histogram() -> Histogram {
    Histogram::new(PROCESSING_BUCKETS)
}

/// client-go's store resource version gauge: the 15 least significant decimal digits (so the
/// value is exact in a float), 0 before the first or when not numeric.
fn store_rv_gauge(rv: Option<u64>) -> i64 {
    rv.and_then(|v| i64::try_from(v % 1_000_000_000_000_000).ok())
        .unwrap_or(0)
}

type Counter = fn(&Snapshot) -> u64;
type GaugeOf = fn(&Snapshot) -> i64;

/// A numeric resource version as a gauge value; -1 when absent or not numeric.
fn rv_gauge(rv: Option<u64>) -> i64 {
    rv.and_then(|v| i64::try_from(v).ok()).unwrap_or(-1)
}

const COUNTERS: [(&str, &str, Counter); 12] = [
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
        "informer_watch_pauses",
        "Times the watch stopped reading until the delta FIFO drained to half its bound (D12)",
        |s| s.counters.watch_pauses,
    ),
    (
        "informer_protobuf_fields_passed_over",
        "Protobuf fields of a newer Kubernetes version passed over while decoding (T8)",
        |s| s.counters.protobuf_fields_passed_over,
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

const GAUGES: [(&str, &str, GaugeOf); 4] = [
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
];

/// A gauge that has no series for some informers: `None` leaves the informer out.
type MaybeGaugeOf = fn(&Snapshot) -> Option<i64>;

/// client-go's gauges (component-base `clientgo/fifo`), labelled `name, group, version, resource`.
const CLIENT_GO_GAUGES: [(&str, &str, MaybeGaugeOf); 2] = [
    (
        "informer_queued_items",
        "Number of items currently queued in the FIFO.",
        |s| Some(i64::try_from(s.queued).unwrap_or(i64::MAX)),
    ),
    (
        // V4: client-go v0.38 sets it first when the informer has synced; no series before.
        "informer_store_resource_version",
        "The 15 least significant digits of the resource version of the store.",
        |s| s.synced.then(|| store_rv_gauge(s.store_resource_version)),
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
    let client_go_labels = |s: &Snapshot| {
        [
            ("name", s.name.clone()),
            ("group", s.resource.group.clone()),
            ("version", s.resource.version.clone()),
            ("resource", s.resource.resource.clone()),
        ]
    };
    for (name, help, read) in CLIENT_GO_GAUGES {
        let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for s in snapshots {
            if let Some(v) = read(s) {
                ConstGauge::new(v).encode(family.encode_family(&client_go_labels(s))?)?;
            }
        }
    }
    let mut family = encoder.encode_descriptor(
        "informer_processing_latency_seconds",
        "Time taken to process events after popping from the queue.",
        None,
        MetricType::Histogram,
    )?;
    for s in snapshots {
        s.processing
            .encode(family.encode_family(&client_go_labels(s))?)?;
    }
    Ok(())
}

/// The per-informer metrics of one informer built by hand (the factory reports its own
/// informers already). Holds the informer weakly: a dropped informer reports nothing.
///
/// # client-go's families
///
/// The three families client-go 1.37 exports for an informer (component-base
/// `metrics/prometheus/clientgo/fifo`) have client-go's names, types, labels and buckets, so a
/// dashboard built for Go informers works unchanged. Their `name` label is the informer's name
/// (the factory's [`informer_name`](crate::factory::SharedInformerFactoryBuilder::informer_name)
/// prefix included, as in its logs), and `group`, `version`, `resource` are those it lists and
/// watches (`group=""` for the core group):
///
/// | client-go 1.37 | informer-rs (before) | what |
/// |---|---|---|
/// | `informer_queued_items{name,group,version,resource}` gauge | `informer_fifo_queued_items{informer}` | keys queued in the delta FIFO (deltas in the ordered mode, as client-go's `RealFIFO`) |
/// | `informer_processing_latency_seconds{name,group,version,resource}` histogram, buckets 1 ms … 10 s (`0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10`) | same name, `{informer}`, buckets 100 µs × 4ⁿ | one observation per popped batch: store update and hand-off to the handlers |
/// | `informer_store_resource_version{name,group,version,resource}` gauge | same name, `{informer}`, -1 before the first | the store's resourceVersion (K4), its 15 least significant digits, 0 when not numeric; no series before the informer synced (client-go v0.38) |
///
/// Every other family is ours and labelled `informer=<name>`: `informer_list_requests_total`,
/// `informer_relists_total`, `informer_watch_requests_total`, `informer_rewatches_total`,
/// `informer_watch_list_fallbacks_total`, `informer_reflector_errors_total`,
/// `informer_invalid_objects_total`, `informer_transform_panics_total`,
/// `informer_watch_pauses_total`, `informer_protobuf_fields_passed_over_total`, `informer_index_errors_total`, `informer_process_panics_total`, `informer_shard_mode`,
/// `informer_synced`, `informer_cached_objects`, `informer_last_resource_version`. client-go
/// 1.37 exports no reflector metrics (its reflector metrics provider is a no-op by default).
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_client_go_labels_come_from_the_list_watch_path() {
        let of = |p: &str| {
            let r = ResourceLabels::of_path(p);
            (r.group, r.version, r.resource)
        };
        let s = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
        assert_eq!(of("/api/v1/pods"), s("", "v1", "pods"));
        assert_eq!(of("/api/v1/namespaces/prod/pods"), s("", "v1", "pods"));
        assert_eq!(of("/api/v1/namespaces"), s("", "v1", "namespaces"));
        assert_eq!(
            of("/apis/apps/v1/namespaces/prod/deployments"),
            s("apps", "v1", "deployments")
        );
        assert_eq!(
            of("/apis/example.com/v1alpha1/foos"),
            s("example.com", "v1alpha1", "foos")
        );
        // The plural the server serves, irregular ones included (client-go v0.38 takes the
        // label from the real plural too).
        assert_eq!(
            of("/apis/networking.k8s.io/v1/namespaces/a/ingresses"),
            s("networking.k8s.io", "v1", "ingresses")
        );
        assert_eq!(of("/api/v1/endpoints"), s("", "v1", "endpoints"));
        assert_eq!(
            of("/apis/networking.k8s.io/v1/networkpolicies"),
            s("networking.k8s.io", "v1", "networkpolicies")
        );
        assert_eq!(of("/healthz"), s("", "", ""));
    }

    #[test]
    fn v4_the_store_resource_version_gauge_keeps_15_digits_as_client_go() {
        assert_eq!(store_rv_gauge(None), 0);
        assert_eq!(store_rv_gauge(Some(42)), 42);
        assert_eq!(
            store_rv_gauge(Some(12_345_678_901_234_567_890)),
            678_901_234_567_890
        );
    }
}
