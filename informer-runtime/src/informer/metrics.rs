//! Prometheus metrics of the handler layer: pending backlog gauge (H10), panic and coalescing counters (H11).

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// Label set of one handler: `informer` and `handler` names.
pub type HandlerLabels = Vec<(String, String)>;

/// Metric families shared by every handler of one or more informers.
///
/// Cloning shares the underlying series, so a factory can hand one `InformerMetrics` to every
/// informer it builds (via [`InformerConfig::metrics`](super::InformerConfig)) and register it
/// once with [`register`](Self::register).
#[derive(Debug, Clone, Default)]
pub struct InformerMetrics {
    pending: Family<HandlerLabels, Gauge>,
    panics: Family<HandlerLabels, Counter>,
    coalesced: Family<HandlerLabels, Counter>,
}

impl InformerMetrics {
    /// Fresh, unregistered metric families.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the families: `informer_handler_pending` (gauge, H10),
    /// `informer_handler_panics` (counter, H11) and `informer_handler_coalesced` (counter, H10).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "informer_handler_pending",
            "Notifications waiting in a handler's backlog",
            self.pending.clone(),
        );
        registry.register(
            "informer_handler_panics",
            "Handler calls that panicked and were caught",
            self.panics.clone(),
        );
        registry.register(
            "informer_handler_coalesced",
            "Notifications merged into a pending one because the backlog was full",
            self.coalesced.clone(),
        );
    }

    /// The series of one handler.
    pub(crate) fn handler(&self, informer: &str, handler: &str) -> HandlerMetrics {
        let labels = vec![
            ("informer".to_string(), informer.to_string()),
            ("handler".to_string(), handler.to_string()),
        ];
        HandlerMetrics {
            pending: self.pending.get_or_create_owned(&labels),
            panics: self.panics.get_or_create_owned(&labels),
            coalesced: self.coalesced.get_or_create_owned(&labels),
            labels,
        }
    }

    /// Drops the series of a removed handler.
    pub(crate) fn forget(&self, handler: &HandlerMetrics) {
        self.pending.remove(&handler.labels);
        self.panics.remove(&handler.labels);
        self.coalesced.remove(&handler.labels);
    }
}

/// The series of one handler (cheap handles onto the shared families).
#[derive(Debug, Clone)]
pub(crate) struct HandlerMetrics {
    labels: HandlerLabels,
    /// Pending notifications (H10).
    pub(crate) pending: Gauge,
    /// Caught panics (H11).
    pub(crate) panics: Counter,
    /// Coalesced notifications (H10).
    pub(crate) coalesced: Counter,
}
