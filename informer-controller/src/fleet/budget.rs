//! A cluster's cache budget (decision record 30): the fleet backs off a cluster whose
//! informers went past it.

use informer_runtime::budget::CacheBudget;
use tokio::sync::mpsc;

use super::{ClusterName, Internal};

/// Waits for engagement `generation` of `name` to breach `budget` (B4), then asks the fleet's
/// loop to back it off: its informers stop and their caches go, so what the cluster holds
/// never stays past the budget. Aborted when the engagement ends.
pub(super) async fn watch(
    name: ClusterName,
    generation: u64,
    budget: CacheBudget,
    internal: mpsc::UnboundedSender<Internal>,
) {
    let breach = budget.breached().await;
    let reason = format!("over its cache budget: {breach}");
    // The loop is gone only if the fleet stopped, and then the cluster stops anyway.
    let _ = internal.send(Internal::BackOff {
        name,
        generation,
        reason,
    });
}
