//! A shard set's view on its Leases ([S1]): the names, the count-and-field labels every write records, and the conflicts with replicas whose view differs.
//!
//! [S1]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#17-shard-sets-ours

use super::*;

/// A live shard Lease held by another replica whose view differs from ours (S1).
pub(super) struct Conflict {
    pub(super) lease: String,
    pub(super) holder: String,
    /// Its view, `count/field`, or `None` if it records none (an older informer-rs).
    pub(super) view: Option<String>,
}

impl Inner {
    pub(super) fn shard_lease(&self, index: u32) -> String {
        format!("{}-shard-{index}", self.set)
    }

    /// The replica's heartbeat Lease: the identity encoded where it is no valid name (S8).
    pub(super) fn member_lease(&self) -> String {
        let prefix = format!("{}-member-", self.set);
        let room = leader::names::NAME_MAX.saturating_sub(prefix.len());
        format!(
            "{prefix}{}",
            leader::names::encode_identity(&self.identity, room)
        )
    }

    pub(super) fn field_name(&self) -> &'static str {
        match self.field {
            ShardField::Uid => "uid",
            ShardField::Namespace => "namespace",
        }
    }

    /// The labels every write puts on the set's Leases: the set and our view of it (S1).
    pub(super) fn labels(&self) -> BTreeMap<String, String> {
        [
            (SHARD_SET_LABEL.to_string(), self.set.clone()),
            (SHARD_COUNT_LABEL.to_string(), self.shards.to_string()),
            (SHARD_FIELD_LABEL.to_string(), self.field_name().to_string()),
        ]
        .into()
    }

    /// The view a Lease records, `count/field`, if it records one.
    pub(super) fn view_of(lease: &Lease) -> Option<String> {
        let labels = lease.metadata.labels.as_ref()?;
        let count = labels.get(SHARD_COUNT_LABEL)?;
        let field = labels.get(SHARD_FIELD_LABEL)?;
        Some(format!("{count}/{field}"))
    }

    pub(super) fn view(&self) -> String {
        format!("{}/{}", self.shards, self.field_name())
    }

    /// Whether the Lease `name` as observed has a holder other than us whose term has not
    /// expired by our observation (E3).
    pub(super) fn live_foreign(&self, name: &str, now: Instant) -> Option<String> {
        let observed = self.observed.lock();
        let (spec, at) = observed.get(name)?;
        let holder = spec.holder_identity.as_deref().unwrap_or_default();
        (!holder.is_empty() && holder != self.identity && record::expiry(spec, *at) > now)
            .then(|| holder.to_owned())
    }

    /// The first live shard Lease of another replica whose view differs from ours (S1).
    pub(super) fn conflict(
        &self,
        leases: &HashMap<String, Lease>,
        now: Instant,
    ) -> Option<Conflict> {
        let prefix = format!("{}-shard-", self.set);
        let ours = self.view();
        leases
            .iter()
            .filter(|(name, _)| name.starts_with(&prefix))
            .find_map(|(name, lease)| {
                let view = Self::view_of(lease);
                if view.as_deref() == Some(ours.as_str()) {
                    return None;
                }
                let holder = self.live_foreign(name, now)?;
                Some(Conflict {
                    lease: name.clone(),
                    holder,
                    view,
                })
            })
    }

    /// Logs a view conflict (S1) at error once per change, and its end at info.
    pub(super) fn report_conflict(&self, conflict: Option<&Conflict>) {
        let text = conflict.map(|c| {
            format!(
                "shard Lease {} is held by {} with the view {} (shards/field), ours is {}",
                c.lease,
                c.holder,
                c.view.as_deref().unwrap_or("<none>"),
                self.view()
            )
        });
        let mut last = self.conflict.lock();
        if *last == text {
            return;
        }
        match &text {
            Some(t) => {
                tracing::error!(set = %self.set, identity = %self.identity, "{t}: this replica owns no new shard until that view is gone (S1)")
            }
            None => {
                tracing::info!(set = %self.set, identity = %self.identity, "no shard Lease of another view is live any more (S1)")
            }
        }
        *last = text;
    }

    /// Logs a failure of `op` at warn when it starts failing or fails differently (item 10).
    pub(super) fn failed(&self, op: &str, err: &dyn Display) {
        let msg = err.to_string();
        let mut failures = self.failures.lock();
        if failures.get(op) == Some(&msg) {
            tracing::debug!(set = %self.set, identity = %self.identity, op, error = %msg, "shard assigner request failed again");
            return;
        }
        tracing::warn!(set = %self.set, identity = %self.identity, op, error = %msg, "shard assigner request failed");
        failures.insert(op.to_owned(), msg);
    }

    /// Records that `op` works (again).
    pub(super) fn succeeded(&self, op: &str) {
        if self.failures.lock().remove(op).is_some() {
            tracing::info!(set = %self.set, identity = %self.identity, op, "shard assigner request works again");
        }
    }

    pub(super) fn publish(&self, index: u32, owned: bool) {
        self.owned.send_if_modified(|o| {
            if owned {
                o.insert(index)
            } else {
                o.remove(&index)
            }
        });
    }
}
