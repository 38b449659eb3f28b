//! A shard set's metrics (S12): per replica, the shards of its view that no live Lease covers,
//! the shards whose work runs on it, and the live members it counts.

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

type Labels = [(&'static str, String); 2];

/// The shard set metric families of one registry (S12). Create it once per registry and hand
/// it to every [`ShardAssigner`](super::ShardAssigner) of the process
/// ([`metrics`](super::ShardAssigner::metrics)); each replica's series carry the labels `set`
/// and `replica`:
///
/// | metric | type |
/// |---|---|
/// | `shard_set_unowned_shards{set,replica}` | gauge: shards of this replica's view whose hash range no live Lease covers, by its own observation |
/// | `shard_set_owned_shards{set,replica}` | gauge: shards whose work runs on this replica |
/// | `shard_set_live_members{set,replica}` | gauge: live replicas of this replica's view, itself included |
///
/// An alert on `max by (set) (shard_set_unowned_shards) > 0` for longer than a lease duration
/// and a round catches what bucket-based sharding in the field has failed with: shards owned by
/// nobody, with no error (knative/pkg#3384, argo-cd#29476).
#[derive(Clone, Debug)]
pub struct ShardSetMetrics {
    unowned: Family<Labels, Gauge>,
    owned: Family<Labels, Gauge>,
    live: Family<Labels, Gauge>,
}

impl ShardSetMetrics {
    /// Creates the families and registers them in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let m = ShardSetMetrics {
            unowned: Family::default(),
            owned: Family::default(),
            live: Family::default(),
        };
        registry.register(
            "shard_set_unowned_shards",
            "Shards of this replica's view of the set whose hash range no live Lease covers",
            m.unowned.clone(),
        );
        registry.register(
            "shard_set_owned_shards",
            "Shards of the set whose work runs on this replica",
            m.owned.clone(),
        );
        registry.register(
            "shard_set_live_members",
            "Live replicas of this replica's view of the set, itself included",
            m.live.clone(),
        );
        m
    }

    /// One replica's series.
    pub(super) fn series(&self, set: &str, replica: &str) -> Series {
        let labels = [("set", set.to_owned()), ("replica", replica.to_owned())];
        Series {
            unowned: self.unowned.get_or_create(&labels).clone(),
            owned: self.owned.get_or_create(&labels).clone(),
            live: self.live.get_or_create(&labels).clone(),
        }
    }
}

/// One replica's series; without metrics, detached gauges nobody reads.
#[derive(Clone, Debug, Default)]
pub(super) struct Series {
    pub(super) unowned: Gauge,
    pub(super) owned: Gauge,
    pub(super) live: Gauge,
}
