//! The fleet's metrics, read at scrape time: a series per engaged cluster, gone with it.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Weak};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::gauge::ConstGauge;

use super::{ClusterState, Fleet, Inner};

impl Fleet {
    /// Registers the fleet's metrics in `registry`, read at each scrape, with a series per
    /// engaged cluster that goes when the cluster leaves:
    ///
    /// | family | labels | what |
    /// |---|---|---|
    /// | `fleet_clusters` | `state` | engaged clusters by state (`syncing`, `ready`, `degraded`, `backing_off`, `failed`) |
    /// | `fleet_cluster_state` | `cluster`, `state` | 1 for each engaged cluster, in its state |
    /// | `fleet_cluster_objects` | `cluster` | objects in its caches, over the declared informers |
    /// | `fleet_cluster_backoffs` | `cluster` | its back-offs in a row |
    ///
    /// There is no per-cluster byte count: equal strings and parts of cached objects are shared
    /// across every cache of the process (P3), so no byte belongs to one cluster.
    ///
    /// ```
    /// let fleet = informer_controller::fleet::Fleet::builder().build();
    /// let mut registry = prometheus_client::registry::Registry::default();
    /// fleet.metrics(&mut registry);
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry).expect("encoded");
    /// assert!(text.contains("fleet_clusters{state=\"ready\"} 0"));
    /// ```
    pub fn metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        registry.register_collector(Box::new(FleetCollector {
            fleet: Arc::downgrade(&self.inner),
        }));
    }

    /// What the metrics report of each engaged cluster.
    fn metric_rows(&self) -> Vec<Row> {
        self.inner
            .slots
            .read()
            .iter()
            .map(|(name, slot)| Row {
                cluster: name.to_string(),
                state: state_label(&slot.state),
                objects: slot.handle.as_ref().map(|handle| {
                    self.inner
                        .counts
                        .iter()
                        .map(|count| count(&handle.factory))
                        .sum()
                }),
                backoffs: slot.attempts,
            })
            .collect()
    }
}

/// The states as their label values, in the order `fleet_clusters` reports them.
const STATES: [&str; 5] = ["syncing", "ready", "degraded", "backing_off", "failed"];

/// A state's label value.
pub(super) fn state_label(state: &ClusterState) -> &'static str {
    match state {
        ClusterState::Syncing => "syncing",
        ClusterState::Ready => "ready",
        ClusterState::Degraded(_) => "degraded",
        ClusterState::BackingOff { .. } => "backing_off",
        ClusterState::Failed(_) => "failed",
    }
}

/// What the collector reads of one engaged cluster.
pub(super) struct Row {
    pub(super) cluster: String,
    pub(super) state: &'static str,
    /// Objects in the caches of the informers the fleet declares; `None` with no factory.
    pub(super) objects: Option<usize>,
    pub(super) backoffs: u32,
}

/// The fleet's collector. It holds the fleet weakly, so a registry never keeps it alive.
pub(super) struct FleetCollector {
    pub(super) fleet: Weak<Inner>,
}

impl fmt::Debug for FleetCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetCollector").finish_non_exhaustive()
    }
}

fn gauge(n: u64) -> ConstGauge {
    ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX))
}

impl Collector for FleetCollector {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> Result<(), fmt::Error> {
        let Some(inner) = self.fleet.upgrade() else {
            return Ok(());
        };
        let rows = Fleet { inner }.metric_rows();
        let mut by_state: BTreeMap<&str, u64> = STATES.iter().map(|s| (*s, 0)).collect();
        for row in &rows {
            *by_state.entry(row.state).or_default() += 1;
        }
        let mut family = encoder.encode_descriptor(
            "fleet_clusters",
            "Engaged clusters by state (decision record 29)",
            None,
            MetricType::Gauge,
        )?;
        for state in STATES {
            let n = by_state.get(state).copied().unwrap_or(0);
            gauge(n).encode(family.encode_family(&[("state", state)])?)?;
        }
        let mut family = encoder.encode_descriptor(
            "fleet_cluster_state",
            "1 for each engaged cluster, labelled with its state",
            None,
            MetricType::Gauge,
        )?;
        for row in &rows {
            let labels = [("cluster", row.cluster.as_str()), ("state", row.state)];
            gauge(1).encode(family.encode_family(&labels)?)?;
        }
        let mut family = encoder.encode_descriptor(
            "fleet_cluster_objects",
            "Objects in an engaged cluster's caches, over the informers the fleet declares",
            None,
            MetricType::Gauge,
        )?;
        for row in &rows {
            if let Some(objects) = row.objects {
                let objects = u64::try_from(objects).unwrap_or(u64::MAX);
                gauge(objects)
                    .encode(family.encode_family(&[("cluster", row.cluster.as_str())])?)?;
            }
        }
        let mut family = encoder.encode_descriptor(
            "fleet_cluster_backoffs",
            "Back-offs in a row of an engaged cluster (0 once it syncs)",
            None,
            MetricType::Gauge,
        )?;
        for row in &rows {
            gauge(u64::from(row.backoffs))
                .encode(family.encode_family(&[("cluster", row.cluster.as_str())])?)?;
        }
        Ok(())
    }
}
