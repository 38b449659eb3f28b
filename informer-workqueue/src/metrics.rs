//! Prometheus metrics for named work queues, with the metric names, labels and buckets of
//! client-go's (component-base) or controller-runtime's workqueue metrics (W7).

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// The label set of a workqueue series: `name` (and, for controller-runtime, `controller`, and
/// `priority` on the depth).
type Labels = Vec<(&'static str, String)>;

/// A histogram family whose histograms use the flavour's workqueue buckets.
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// A gauge holding seconds as a float.
type SecondsGauge = Gauge<f64, AtomicU64>;

/// Whose workqueue metrics a [`WorkQueueMetrics`] reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flavour {
    /// component-base's `metrics/prometheus/workqueue` (client-go's provider in Kubernetes'
    /// own controllers, v0.37.2): label `name`, buckets `ExponentialBuckets(10e-9, 10, 10)`.
    ClientGo,
    /// controller-runtime's `pkg/internal/metrics/workqueue.go` (v0.25): labels `name` and
    /// `controller` (both the queue's name), `priority` (empty) on the depth, buckets
    /// `ExponentialBuckets(10e-9, 10, 12)`.
    ControllerRuntime,
}

/// The workqueue metric families registered in one [`Registry`] (W7).
///
/// Create it **once per registry** and pass it to every queue builder with
/// [`QueueBuilder::metrics`](super::QueueBuilder::metrics); each named queue gets its own series,
/// told apart by the label `name`. (prometheus-client does not merge two registrations of the same
/// metric name, so registering the families once per queue would expose duplicate metrics.)
/// Unnamed queues record nothing, as in client-go; queues that share a name share its series.
///
/// The names are client-go's and controller-runtime's (they agree); the labels and buckets
/// are either Kubernetes' own controllers' ([`new`](Self::new), component-base v0.37.2) or
/// controller-runtime's ([`controller_runtime`](Self::controller_runtime), v0.25, what
/// informer-controller's controllers use), so a dashboard built for either works unchanged:
///
/// | metric | type | [`new`](Self::new) (client-go) | [`controller_runtime`](Self::controller_runtime) |
/// |---|---|---|---|
/// | `workqueue_depth` | gauge: items that need processing (queued, or re-added while in flight) | `name` | `name`, `controller`, `priority=""` |
/// | `workqueue_adds_total` | counter: adds that were not collapsed into a pending item | `name` | `name`, `controller` |
/// | `workqueue_queue_duration_seconds` | histogram: time from add to `get` | `name`; buckets 10 ns × 10ⁿ, n < 10 (to 10 s) | `name`, `controller`; buckets 10 ns × 10ⁿ, n < 12 (to 1000 s) |
/// | `workqueue_work_duration_seconds` | histogram: time from `get` to `done` | as above | as above |
/// | `workqueue_unfinished_work_seconds` | gauge: summed age of in-flight items, refreshed every 500 ms | `name` | `name`, `controller` |
/// | `workqueue_longest_running_processor_seconds` | gauge: age of the oldest in-flight item, refreshed every 500 ms | `name` | `name`, `controller` |
/// | `workqueue_retries_total` | counter: calls of `add_after`/`add_rate_limited` (as client-go counts) | `name` | `name`, `controller` |
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
#[derive(Clone, Debug)]
pub struct WorkQueueMetrics {
    flavour: Flavour,
    depth: Family<Labels, Gauge>,
    adds: Family<Labels, Counter>,
    queue_duration: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished_work: Family<Labels, SecondsGauge>,
    longest_running: Family<Labels, SecondsGauge>,
    retries: Family<Labels, Counter>,
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

/// component-base's buckets: `ExponentialBuckets(10e-9, 10, 10)`, 10 ns up to 10 s.
fn client_go_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 10))
}

/// controller-runtime's buckets: `ExponentialBuckets(10e-9, 10, 12)`, 10 ns up to 1000 s.
fn controller_runtime_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 12))
}

impl WorkQueueMetrics {
    /// Creates the workqueue metric families as Kubernetes' own controllers export them
    /// (component-base v0.37.2: label `name`, buckets up to 10 s) and registers them in
    /// `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        Self::register(registry, Flavour::ClientGo)
    }

    /// Creates the workqueue metric families as controller-runtime exports them (v0.25:
    /// labels `name` and `controller`, both the queue's name, `priority=""` on the depth,
    /// buckets up to 1000 s) and registers them in `registry`.
    pub fn controller_runtime(registry: &mut Registry) -> Self {
        Self::register(registry, Flavour::ControllerRuntime)
    }

    fn register(registry: &mut Registry, flavour: Flavour) -> Self {
        let histogram: fn() -> Histogram = match flavour {
            Flavour::ClientGo => client_go_histogram,
            Flavour::ControllerRuntime => controller_runtime_histogram,
        };
        let metrics = Self {
            flavour,
            depth: Family::default(),
            adds: Family::default(),
            queue_duration: Family::new_with_constructor(histogram),
            work_duration: Family::new_with_constructor(histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
            retries: Family::default(),
        };
        let (depth_help, retries_help) = match flavour {
            Flavour::ClientGo => (
                "Current depth of workqueue",
                "Total number of retries handled by workqueue",
            ),
            Flavour::ControllerRuntime => (
                "Current depth of workqueue by workqueue and priority",
                "Total number of items added to the workqueue with a non-zero delay \
                 (rate-limited requeues, explicit RequeueAfter or AddAfter calls)",
            ),
        };
        registry.register("workqueue_depth", depth_help, metrics.depth.clone());
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
        registry.register("workqueue_retries", retries_help, metrics.retries.clone());
        metrics
    }

    /// Resolves (creating if needed) the series for the queue called `name`.
    pub(crate) fn for_queue(&self, name: &str) -> QueueMetrics {
        let mut label: Labels = vec![("name", name.to_owned())];
        if self.flavour == Flavour::ControllerRuntime {
            label.push(("controller", name.to_owned()));
        }
        let mut depth_label = label.clone();
        if self.flavour == Flavour::ControllerRuntime {
            // No priority: controller-runtime's label for a queue without priorities.
            depth_label.push(("priority", String::new()));
        }
        QueueMetrics {
            depth: self.depth.get_or_create(&depth_label).clone(),
            adds: self.adds.get_or_create(&label).clone(),
            queue_duration: self.queue_duration.get_or_create(&label).clone(),
            work_duration: self.work_duration.get_or_create(&label).clone(),
            unfinished_work: self.unfinished_work.get_or_create(&label).clone(),
            longest_running: self.longest_running.get_or_create(&label).clone(),
            retries: self.retries.get_or_create(&label).clone(),
        }
    }
}
