//! Prometheus metrics for named work queues, with client-go's metric names and the label `name` ([W7]).
//!
//! [W7]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#8-workqueue

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The label set of every workqueue metric: `name="<queue name>"`.
type NameLabel = [(&'static str, String); 1];

/// A histogram family whose histograms use client-go's workqueue buckets.
type HistogramFamily = Family<NameLabel, Histogram, fn() -> Histogram>;

/// A gauge holding seconds as a float.
type SecondsGauge = Gauge<f64, AtomicU64>;

/// The workqueue metric families registered in one [`Registry`] ([W7]).
///
/// Create it **once per registry** and pass it to every queue builder with
/// [`QueueBuilder::metrics`](super::QueueBuilder::metrics); each named queue gets its own series,
/// told apart by the label `name`. (prometheus-client does not merge two registrations of the same
/// metric name, so registering the families once per queue would expose duplicate metrics.)
/// Unnamed queues record nothing, as in client-go; queues that share a name share its series.
///
/// The exposed names are exactly client-go's:
///
/// | metric | type |
/// |---|---|
/// | `workqueue_depth` | gauge: items that need processing (queued, or re-added while in flight) |
/// | `workqueue_adds_total` | counter: adds that were not collapsed into a pending item |
/// | `workqueue_queue_duration_seconds` | histogram: time from add to `get` |
/// | `workqueue_work_duration_seconds` | histogram: time from `get` to `done` |
/// | `workqueue_unfinished_work_seconds` | gauge: summed age of in-flight items, refreshed every 500 ms |
/// | `workqueue_longest_running_processor_seconds` | gauge: age of the oldest in-flight item, refreshed every 500 ms |
/// | `workqueue_retries_total` | counter: calls of `add_after`/`add_rate_limited` (as client-go counts) |
///
/// ```no_run
/// use informer_workqueue::{RateLimitingQueue, WorkQueueMetrics};
/// # async fn run() {
/// let mut registry = prometheus_client::registry::Registry::default();
/// let metrics = WorkQueueMetrics::new(&mut registry);
/// let pods: RateLimitingQueue<String> =
///     RateLimitingQueue::builder().name("pods").metrics(&metrics).build();
/// let nodes: RateLimitingQueue<String> =
///     RateLimitingQueue::builder().name("nodes").metrics(&metrics).build();
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
/// # }
/// ```
///
/// [W7]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#8-workqueue
#[derive(Clone, Debug)]
pub struct WorkQueueMetrics {
    depth: Family<NameLabel, Gauge>,
    adds: Family<NameLabel, Counter>,
    queue_duration: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished_work: Family<NameLabel, SecondsGauge>,
    longest_running: Family<NameLabel, SecondsGauge>,
    retries: Family<NameLabel, Counter>,
}

/// The series of one named queue, resolved once so the hot path never looks up a family.
#[derive(Clone, Debug)]
pub(crate) struct QueueMetrics {
    pub(crate) depth: Gauge,
    pub(crate) adds: Counter,
    pub(crate) queue_duration: Histogram,
    pub(crate) work_duration: Histogram,
    pub(crate) unfinished_work: SecondsGauge,
    pub(crate) longest_running: SecondsGauge,
    pub(crate) retries: Counter,
}

/// client-go's buckets: `prometheus.ExponentialBuckets(10e-9, 10, 10)`, 10 ns up to 10 s.
fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 10))
}

impl WorkQueueMetrics {
    /// Creates the workqueue metric families and registers them in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let metrics = Self {
            depth: Family::default(),
            adds: Family::default(),
            queue_duration: Family::new_with_constructor(duration_histogram),
            work_duration: Family::new_with_constructor(duration_histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
            retries: Family::default(),
        };
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            metrics.depth.clone(),
        );
        // prometheus-client appends `_total` to counter names.
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            metrics.adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            metrics.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            metrics.work_duration.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed \
             by work_duration. Large values indicate stuck threads. One can deduce the number of \
             stuck threads by observing the rate at which this increases",
            metrics.unfinished_work.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            metrics.longest_running.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            metrics.retries.clone(),
        );
        metrics
    }

    /// Resolves (creating if needed) the series for the queue called `name`.
    pub(crate) fn for_queue(&self, name: &str) -> QueueMetrics {
        let label = [("name", name.to_owned())];
        QueueMetrics {
            depth: self.depth.get_or_create(&label).clone(),
            adds: self.adds.get_or_create(&label).clone(),
            queue_duration: self.queue_duration.get_or_create(&label).clone(),
            work_duration: self.work_duration.get_or_create(&label).clone(),
            unfinished_work: self.unfinished_work.get_or_create(&label).clone(),
            longest_running: self.longest_running.get_or_create(&label).clone(),
            retries: self.retries.get_or_create(&label).clone(),
        }
    }
}
