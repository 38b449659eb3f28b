//! The Lease requests of a shard set: one labelled LIST of the set (E3's observation times), the live members, and each Lease's write and release (E4, E5).

use super::*;
use crate::reads;

impl Inner {
    /// Writes our record into the shard Lease `name` (E4): creates it when `current` is none,
    /// takes or renews it otherwise, with the set's labels.
    pub(super) async fn write_lease(
        &self,
        name: &str,
        current: Option<Lease>,
        observed_at: Instant,
    ) -> Result<Written, kube::Error> {
        leader::write_record(
            &self.api,
            name,
            &self.identity,
            self.config.lease_duration,
            Some(self.labels()),
            current,
            observed_at,
        )
        .await
    }

    /// Lists the set's Leases (by name), recording when each was first seen in its form (E3).
    /// A 429 is waited out unless its wait would pass `deadline`, where the caller cuts the
    /// read (R24).
    pub(super) async fn read_set(&self, deadline: Instant) -> Option<HashMap<String, Lease>> {
        let params = ListParams::default().labels(&format!("{SHARD_SET_LABEL}={}", self.set));
        let read = reads::retrying("shard lease list", Some(deadline), || {
            self.api.list(&params)
        })
        .await;
        let list = match read {
            Ok(list) => {
                self.succeeded("list");
                list
            }
            Err(err) => {
                self.failed("list", &err);
                return None;
            }
        };
        let leases: HashMap<String, Lease> = list
            .items
            .into_iter()
            .filter_map(|l| Some((l.metadata.name.clone()?, l)))
            .collect();
        let mut observed = self.observed.lock();
        observed.retain(|name, _| leases.contains_key(name));
        let now = Instant::now();
        for (name, lease) in &leases {
            let spec = lease.spec.clone().unwrap_or_default();
            match observed.get(name) {
                Some((old, _)) if *old == spec => {}
                _ => {
                    observed.insert(name.clone(), (spec, now));
                }
            }
        }
        Some(leases)
    }

    /// When the earliest shard Lease held by another replica expires by our observation (E3).
    pub(super) fn earliest_foreign_expiry(
        &self,
        leases: &HashMap<String, Lease>,
        st: &RunState,
    ) -> Option<Instant> {
        let observed = self.observed.lock();
        (0..self.shards)
            .filter(|i| !st.held.contains_key(i) && !st.stopping.contains_key(i))
            .filter_map(|i| {
                let name = self.shard_lease(i);
                leases.get(&name)?;
                let (spec, at) = observed.get(&name)?;
                let holder = spec.holder_identity.as_deref().unwrap_or_default();
                if holder.is_empty() || holder == self.identity {
                    return None;
                }
                Some(record::expiry(spec, *at))
            })
            .min()
    }

    /// The replicas of our view whose heartbeat changed within its lease duration, by our
    /// clock (E3); we count ourselves. Replicas of another view (S1) do not share our shards.
    pub(super) fn live_members(&self, leases: &HashMap<String, Lease>, now: Instant) -> u32 {
        let prefix = format!("{}-member-", self.set);
        let me = self.member_lease();
        let ours = self.view();
        let others = leases
            .iter()
            .filter(|(name, lease)| {
                name.starts_with(&prefix)
                    && **name != me
                    && Self::view_of(lease).as_deref() == Some(ours.as_str())
            })
            .filter(|(name, _)| self.live_foreign(name, now).is_some())
            .count();
        u32::try_from(others).unwrap_or(u32::MAX).saturating_add(1)
    }

    /// Acquires or renews the Lease `name` (`current` as read this round): Ok(true) if we hold
    /// it now, Ok(false) if another holder's term has not expired or a concurrent writer won
    /// (409).
    pub(super) async fn write(
        &self,
        name: &str,
        current: Option<&Lease>,
    ) -> Result<bool, kube::Error> {
        let observed_at = current
            .and_then(|lease| {
                let spec = lease.spec.as_ref()?;
                let observed = self.observed.lock();
                let (seen, at) = observed.get(name)?;
                (seen == spec).then_some(*at)
            })
            .unwrap_or_else(Instant::now);
        let written = self.write_lease(name, current.cloned(), observed_at).await;
        match written {
            Ok(Written::Held(_)) => Ok(true),
            Ok(Written::Wait(_)) => Ok(false),
            // Another replica created or wrote it first: a lost race.
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Writes an empty holder with a 1 s duration if we hold `name` (E5).
    pub(super) async fn release(&self, name: &str) {
        leader::release(&self.api, name, &self.identity, self.config.renew_deadline).await;
    }

    /// The replica leaves the set (S9): its heartbeat Lease is deleted, if it still holds it,
    /// so no other replica lists it again; bounded by the renew deadline, logged.
    pub(super) async fn leave(&self) {
        let name = self.member_lease();
        let until = Instant::now() + self.config.renew_deadline;
        let result = async {
            match self.read_ours(&name, until).await? {
                Some(lease) => self.delete_as_read(&lease).await,
                None => Ok(false),
            }
        };
        match tokio::time::timeout_at(until, result).await {
            Ok(Ok(true)) => {
                tracing::info!(set = %self.set, identity = %self.identity, lease = %name, "left the shard set; deleted the heartbeat Lease")
            }
            Ok(Ok(false)) => {}
            Ok(Err(err)) => {
                tracing::warn!(set = %self.set, lease = %name, error = %err, "deleting the heartbeat Lease failed")
            }
            Err(_) => {
                tracing::warn!(set = %self.set, lease = %name, "deleting the heartbeat Lease timed out")
            }
        }
    }

    /// Deletes the set's Leases that nobody has written for two lease durations by our clock
    /// (S9): heartbeats of replicas that left without deleting theirs (a crash, an older
    /// informer-rs), and shard Leases beyond our shard count (a set that shrank). Each delete
    /// carries the resourceVersion we read, so a replica that writes meanwhile wins (409); a
    /// Lease another replica deleted first is a 404. Our own shards' Leases are kept: they
    /// are reused.
    pub(super) async fn sweep(&self, leases: &HashMap<String, Lease>, now: Instant) {
        let members = format!("{}-member-", self.set);
        let shards = format!("{}-shard-", self.set);
        let me = self.member_lease();
        let stale: Vec<&Lease> = {
            let observed = self.observed.lock();
            leases
                .iter()
                .filter(|(name, _)| {
                    let beyond = name
                        .strip_prefix(&shards)
                        .and_then(|i| i.parse::<u32>().ok())
                        .is_some_and(|i| i >= self.shards);
                    (name.starts_with(&members) && **name != me) || beyond
                })
                .filter(|(name, _)| {
                    observed.get(*name).is_some_and(|(spec, at)| {
                        record::expiry(spec, *at) + self.config.lease_duration <= now
                    })
                })
                .map(|(_, lease)| lease)
                .collect()
        };
        for lease in stale {
            let name = lease.metadata.name.as_deref().unwrap_or_default();
            match self.delete_as_read(lease).await {
                Ok(true) => {
                    tracing::info!(set = %self.set, identity = %self.identity, lease = %name, "deleted a Lease nobody renews (S9)")
                }
                Ok(false) => {}
                Err(err) => self.failed("sweep", &err),
            }
        }
    }

    /// The Lease `name` as read now, if it exists and we hold it. A 429 is waited out unless
    /// its wait would pass `deadline`, where the caller cuts the read (R24).
    pub(super) async fn read_ours(
        &self,
        name: &str,
        deadline: Instant,
    ) -> Result<Option<Lease>, kube::Error> {
        let lease =
            reads::retrying("shard lease get", Some(deadline), || self.api.get_opt(name)).await?;
        Ok(lease.filter(|l| {
            l.spec.as_ref().and_then(|s| s.holder_identity.as_deref())
                == Some(self.identity.as_str())
        }))
    }

    /// Deletes `lease` if it is still as read (its resourceVersion): Ok(true) deleted,
    /// Ok(false) changed meanwhile (409) or already gone (404).
    async fn delete_as_read(&self, lease: &Lease) -> Result<bool, kube::Error> {
        let name = lease.metadata.name.as_deref().unwrap_or_default();
        let params = DeleteParams::default().preconditions(Preconditions {
            resource_version: lease.metadata.resource_version.clone(),
            uid: lease.metadata.uid.clone(),
        });
        match self.api.delete(name, &params).await {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }
}
