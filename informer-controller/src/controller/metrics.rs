//! Reconcile metrics with controller-runtime's names (C8), registered next to the workqueue's (W7).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

type ControllerLabel = [(&'static str, String); 1];
type ResultLabels = [(&'static str, String); 2];
type HistogramFamily = Family<ControllerLabel, Histogram, fn() -> Histogram>;

/// controller-runtime's reconcile-time buckets (`pkg/internal/controller/metrics`).
const RECONCILE_TIME_BUCKETS: [f64; 40] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9,
    1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 15.0, 20.0,
    25.0, 30.0, 40.0, 50.0, 60.0,
];

fn reconcile_time_histogram() -> Histogram {
    Histogram::new(RECONCILE_TIME_BUCKETS)
}

/// The controller metric families of one registry (C8).
///
/// Create it once per registry and share it between controllers (each controller's series
/// carry its name in the label `controller`). The exposed names are controller-runtime's:
///
/// | metric | type |
/// |---|---|
/// | `controller_runtime_reconcile_total{controller,result}` | counter; `result` is `success`, `error`, `requeue` or `requeue_after` |
/// | `controller_runtime_reconcile_errors_total{controller}` | counter: reconciles that returned an error or panicked |
/// | `controller_runtime_reconcile_panics_total{controller}` | counter: reconciles that panicked |
/// | `controller_runtime_reconcile_time_seconds{controller}` | histogram of reconcile durations |
/// | `controller_runtime_active_workers{controller}` | gauge: workers inside a reconcile now |
/// | `controller_runtime_max_concurrent_reconciles{controller}` | gauge: configured workers |
/// | `controller_runtime_terminal_reconcile_errors_total{controller}` | counter, always 0: every error is retried (no terminal errors) |
/// | `controller_runtime_reconcile_timeouts_total{controller}` | counter, always 0: reconciles have no timeout of their own |
///
/// Names, labels, help texts and the histogram's buckets are those of controller-runtime v0.25
/// (`pkg/internal/controller/metrics`), whose families are all here, so its dashboards work
/// unchanged; the last two exist for them only. Next to them: `stale_sync_skips_total` (K3).
#[derive(Clone, Debug)]
pub struct ControllerMetrics {
    reconcile_total: Family<ResultLabels, Counter>,
    reconcile_errors: Family<ControllerLabel, Counter>,
    reconcile_panics: Family<ControllerLabel, Counter>,
    reconcile_time: HistogramFamily,
    active_workers: Family<ControllerLabel, Gauge>,
    max_concurrent: Family<ControllerLabel, Gauge>,
    terminal_errors: Family<ControllerLabel, Counter>,
    timeouts: Family<ControllerLabel, Counter>,
    stale_sync_skips: Family<ControllerLabel, Counter>,
}

impl ControllerMetrics {
    /// Creates the families and registers them in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let m = ControllerMetrics {
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_panics: Family::default(),
            reconcile_time: Family::new_with_constructor(reconcile_time_histogram),
            active_workers: Family::default(),
            max_concurrent: Family::default(),
            terminal_errors: Family::default(),
            timeouts: Family::default(),
            stale_sync_skips: Family::default(),
        };
        // prometheus-client appends `_total` to counter names.
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            m.reconcile_total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            m.reconcile_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_panics",
            "Total number of reconciliation panics per controller",
            m.reconcile_panics.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            m.reconcile_time.clone(),
        );
        registry.register(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            m.active_workers.clone(),
        );
        registry.register(
            "controller_runtime_max_concurrent_reconciles",
            "Maximum number of concurrent reconciles per controller",
            m.max_concurrent.clone(),
        );
        registry.register(
            "controller_runtime_terminal_reconcile_errors",
            "Total number of terminal reconciliation errors per controller",
            m.terminal_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_timeouts",
            "Total number of reconciliation timeouts per controller",
            m.timeouts.clone(),
        );
        registry.register(
            "stale_sync_skips",
            "Reconciles that waited for the caches to hold their key's own earlier writes (K3)",
            m.stale_sync_skips.clone(),
        );
        m
    }

    /// The series of one controller, resolved once.
    pub(crate) fn for_controller(&self, name: &str) -> Series {
        let label = [("controller", name.to_owned())];
        // Created at 0, as controller-runtime creates every series of a controller at start.
        drop(self.terminal_errors.get_or_create(&label));
        drop(self.timeouts.get_or_create(&label));
        let result = |r: &str| {
            self.reconcile_total
                .get_or_create(&[("controller", name.to_owned()), ("result", r.to_owned())])
                .clone()
        };
        Series {
            success: result("success"),
            error: result("error"),
            requeue: result("requeue"),
            requeue_after: result("requeue_after"),
            errors: self.reconcile_errors.get_or_create(&label).clone(),
            panics: self.reconcile_panics.get_or_create(&label).clone(),
            time: self.reconcile_time.get_or_create(&label).clone(),
            active_workers: self.active_workers.get_or_create(&label).clone(),
            max_concurrent: self.max_concurrent.get_or_create(&label).clone(),
            stale_sync_skips: self.stale_sync_skips.get_or_create(&label).clone(),
        }
    }
}

/// One controller's series; without metrics every series is a detached metric nobody reads.
#[derive(Clone, Debug)]
pub(crate) struct Series {
    success: Counter,
    error: Counter,
    requeue: Counter,
    requeue_after: Counter,
    pub(crate) errors: Counter,
    pub(crate) panics: Counter,
    pub(crate) time: Histogram,
    pub(crate) active_workers: Gauge,
    pub(crate) max_concurrent: Gauge,
    pub(crate) stale_sync_skips: Counter,
}

impl Series {
    pub(crate) fn detached() -> Self {
        Series {
            success: Counter::default(),
            error: Counter::default(),
            requeue: Counter::default(),
            requeue_after: Counter::default(),
            errors: Counter::default(),
            panics: Counter::default(),
            time: reconcile_time_histogram(),
            active_workers: Gauge::default(),
            max_concurrent: Gauge::default(),
            stale_sync_skips: Counter::default(),
        }
    }

    /// Counts one reconcile under `result` (`success`, `error`, `requeue`, `requeue_after`).
    pub(crate) fn count(&self, result: &str) {
        match result {
            "success" => self.success.inc(),
            "requeue" => self.requeue.inc(),
            "requeue_after" => self.requeue_after.inc(),
            _ => self.error.inc(),
        };
    }
}
