//! Watching over engaged clusters: a probe per cluster, and the back-off of a cluster that
//! keeps failing it (decision record 29).

use std::time::Duration;

use tokio::sync::mpsc;

use super::{ClusterName, ClusterState, Fleet, Internal};

/// How the fleet watches over its clusters' health.
///
/// Every engaged cluster is probed with an authenticated request (`GET /api`) every
/// `probe_interval`. A probe that fails (no answer within `probe_timeout`, a transport error,
/// or a 401 or 403 from stale credentials) marks the cluster
/// [`Degraded`](super::ClusterState::Degraded): it still serves its caches, and its informers
/// ride out the blip with their own back-off. After `failures_before_backoff` failures in a
/// row the cluster backs off ([`BackingOff`](super::ClusterState::BackingOff)): its
/// controllers and informers stop and its caches go, as when it leaves, but it stays in the
/// fleet and is engaged again after a delay that starts at `backoff_initial` and doubles with
/// each back-off in a row, up to `backoff_max`. A cluster that syncs starts again from
/// `backoff_initial`. A new revision from the provider (new credentials, say) engages it at
/// once. None of this holds up another cluster.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HealthConfig {
    /// How often each cluster is probed; 10 s by default.
    pub probe_interval: Duration,
    /// How long a probe may take; 5 s by default.
    pub probe_timeout: Duration,
    /// Failed probes in a row before the cluster backs off; 3 by default.
    pub failures_before_backoff: u32,
    /// The first back-off's delay; 5 s by default.
    pub backoff_initial: Duration,
    /// The longest delay; 5 minutes by default.
    pub backoff_max: Duration,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            probe_interval: Duration::from_secs(10),
            probe_timeout: Duration::from_secs(5),
            failures_before_backoff: 3,
            backoff_initial: Duration::from_secs(5),
            backoff_max: Duration::from_secs(300),
        }
    }
}

impl HealthConfig {
    /// The delay before the `attempt`th back-off in a row (from 1) ends.
    pub(super) fn delay(&self, attempt: u32) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        self.backoff_initial
            .saturating_mul(1u32 << doublings)
            .min(self.backoff_max)
    }
}

/// Probes one engagement of a cluster until it is aborted (when the cluster leaves or backs
/// off) or until it asks the fleet's loop to back the cluster off.
pub(super) async fn watch(
    fleet: Fleet,
    name: ClusterName,
    generation: u64,
    client: kube::Client,
    internal: mpsc::UnboundedSender<Internal>,
) {
    let config = fleet.inner.health.clone();
    let mut failures = 0u32;
    loop {
        tokio::time::sleep(config.probe_interval).await;
        match probe(&client, config.probe_timeout).await {
            Ok(()) => {
                if failures > 0 {
                    tracing::info!(cluster = %name, "fleet: cluster answers again");
                }
                failures = 0;
                fleet.probe_passed(&name, generation);
            }
            Err(reason) => {
                failures += 1;
                if failures >= config.failures_before_backoff.max(1) {
                    let _ = internal.send(Internal::BackOff {
                        name,
                        generation,
                        reason,
                    });
                    return;
                }
                if failures == 1 {
                    tracing::warn!(cluster = %name, %reason, "fleet: cluster probe failed");
                }
                fleet.probe_failed(&name, generation, reason);
            }
        }
    }
}

impl Fleet {
    /// A probe of engagement `generation` passed: a degraded cluster serves as before.
    fn probe_passed(&self, name: &ClusterName, generation: u64) {
        self.update(name, generation, |slot| {
            if matches!(slot.state, ClusterState::Degraded(_)) {
                slot.state = if slot.synced {
                    ClusterState::Ready
                } else {
                    ClusterState::Syncing
                };
            }
        });
    }

    /// A probe of engagement `generation` failed: a serving cluster is degraded.
    fn probe_failed(&self, name: &ClusterName, generation: u64, reason: String) {
        self.update(name, generation, |slot| {
            if matches!(
                slot.state,
                ClusterState::Syncing | ClusterState::Ready | ClusterState::Degraded(_)
            ) {
                slot.state = ClusterState::Degraded(reason);
            }
        });
    }

    /// Backs off engagement `generation` of `name`: its controllers and informers stop as
    /// when it leaves, and a timer engages it again after the delay ([`HealthConfig`]).
    pub(super) async fn back_off(
        &self,
        name: &ClusterName,
        generation: u64,
        reason: String,
        internal: &mpsc::UnboundedSender<Internal>,
    ) {
        let (handle, tasks, delay, attempt) = {
            let mut slots = self.inner.slots.write();
            let Some(slot) = slots.get_mut(name) else {
                return;
            };
            if slot
                .handle
                .as_ref()
                .is_none_or(|h| h.generation != generation)
            {
                return;
            }
            let attempt = slot.attempts.saturating_add(1);
            let delay = self.inner.health.delay(attempt);
            slot.attempts = attempt;
            slot.synced = false;
            slot.state = ClusterState::BackingOff {
                reason: reason.clone(),
                attempt,
            };
            let retry = Internal::Retry {
                name: name.clone(),
                revision: slot.spec.revision,
            };
            let internal = internal.clone();
            let timer = tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                let _ = internal.send(retry);
            });
            let tasks = std::mem::replace(&mut slot.tasks, vec![timer]);
            (slot.handle.take(), tasks, delay, attempt)
        };
        tracing::warn!(cluster = %name, %reason, attempt, retry_in = ?delay,
            "fleet: cluster backs off; its informers stop until then");
        self.stop(handle, tasks).await;
    }

    /// Engages `name` again once its back-off is over, if it is still backing off at
    /// `revision` (a new revision engaged it already; a removal forgot it).
    pub(super) fn retry(
        &self,
        name: ClusterName,
        revision: u64,
        internal: &mpsc::UnboundedSender<Internal>,
    ) {
        let again = self.inner.slots.read().get(&name).and_then(|slot| {
            let backing_off = matches!(slot.state, ClusterState::BackingOff { .. });
            (backing_off && slot.spec.revision == revision)
                .then(|| (slot.spec.clone(), slot.attempts))
        });
        if let Some((spec, attempts)) = again {
            tracing::info!(cluster = %name, attempt = attempts, "fleet: engaging a cluster again after its back-off");
            self.start(name, spec, attempts, internal);
        }
    }
}

/// One probe: an authenticated discovery request, which answers 401 or 403 to credentials the
/// server no longer takes.
async fn probe(client: &kube::Client, timeout: Duration) -> Result<(), String> {
    match tokio::time::timeout(timeout, client.list_core_api_versions()).await {
        Err(_) => Err(format!("no answer within {timeout:?}")),
        Ok(Ok(_)) => Ok(()),
        Ok(Err(kube::Error::Api(status))) if matches!(status.code, 401 | 403) => Err(format!(
            "its credentials were rejected (HTTP {})",
            status.code
        )),
        Ok(Err(e)) => Err(format!("unreachable: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap() {
        let config = HealthConfig {
            backoff_initial: Duration::from_secs(5),
            backoff_max: Duration::from_secs(60),
            ..HealthConfig::default()
        };
        let delays: Vec<u64> = (1..=6).map(|a| config.delay(a).as_secs()).collect();
        assert_eq!(delays, [5, 10, 20, 40, 60, 60]);
        assert_eq!(config.delay(0).as_secs(), 5);
        assert_eq!(config.delay(u32::MAX).as_secs(), 60);
    }
}
