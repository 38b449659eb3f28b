//! The Lease's writes (E3-E5): one acquire-or-renew write as `record::decide` says, and the
//! release of a held Lease. Shared by the elector and the shard sets (S1).

use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, PostParams};
use tokio::time::Instant;

use super::record::{self, Decision};
use crate::reads;

/// What one acquire-or-renew write did.
pub(crate) enum Written {
    /// `identity` holds the Lease now, with this record.
    Held(LeaseSpec),
    /// Another holder's term runs until this instant (our clock, E3).
    Wait(Instant),
}

/// The write half of client-go's `tryAcquireOrRenew` for `identity` on the Lease `name`, as
/// `current` was read (and first observed in that form at `observed_at`, E3): creates the
/// Lease (with `labels`, which every later write restores) when there is none, else takes it
/// over or renews it as
/// [`record::decide`] says, carrying the read resourceVersion so a concurrent writer makes
/// this a 409. A 409 is returned as the error it is; callers decide what a lost race means.
pub(crate) async fn write_record(
    api: &Api<Lease>,
    name: &str,
    identity: &str,
    lease_duration: Duration,
    labels: Option<std::collections::BTreeMap<String, String>>,
    current: Option<Lease>,
    observed_at: Instant,
) -> Result<Written, kube::Error> {
    let Some(mut lease) = current else {
        let spec = record::initial(identity, lease_duration, Timestamp::now());
        let lease = Lease {
            metadata: ObjectMeta {
                name: Some(name.to_string()),
                labels,
                ..Default::default()
            },
            spec: Some(spec.clone()),
        };
        api.create(&PostParams::default(), &lease).await?;
        return Ok(Written::Held(spec));
    };
    let spec = lease.spec.take().unwrap_or_default();
    match record::decide(
        identity,
        lease_duration,
        &spec,
        observed_at,
        Instant::now(),
        Timestamp::now(),
    ) {
        Decision::Wait { expires, .. } => Ok(Written::Wait(expires)),
        Decision::Write(new) => {
            // The labels describe the writer (a shard set's view, S1): every write restores
            // them, so a Lease relabelled by someone else is put right by its holder.
            if let Some(labels) = labels {
                lease.metadata.labels.get_or_insert_default().extend(labels);
            }
            lease.spec = Some(new.clone());
            api.replace(name, &PostParams::default(), &lease).await?;
            Ok(Written::Held(new))
        }
    }
}

/// Writes an empty holder with a 1 s duration to the Lease `name` if `identity` still holds it
/// (E5), giving up after `timeout`; logs the outcome.
pub(crate) async fn release(api: &Api<Lease>, name: &str, identity: &str, timeout: Duration) {
    let until = Instant::now() + timeout;
    let result = async {
        // R24: a 429 is waited out within the timeout.
        let read = reads::retrying("lease get", Some(until), || api.get_opt(name)).await?;
        let Some(mut lease) = read else {
            return Ok(false);
        };
        let spec = lease.spec.clone().unwrap_or_default();
        if spec.holder_identity.as_deref() != Some(identity) {
            return Ok(false);
        }
        lease.spec = Some(record::released(&spec, Timestamp::now()));
        api.replace(name, &PostParams::default(), &lease).await?;
        Ok::<_, kube::Error>(true)
    };
    match tokio::time::timeout(timeout, result).await {
        Ok(Ok(true)) => tracing::info!(lease = %name, %identity, "released the lease"),
        Ok(Ok(false)) => {}
        Ok(Err(err)) => tracing::warn!(lease = %name, error = %err, "releasing the lease failed"),
        Err(_) => tracing::warn!(lease = %name, "releasing the lease timed out"),
    }
}
