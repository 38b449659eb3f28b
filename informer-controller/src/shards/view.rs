//! A shard set's view on its Leases (S1): the names, the count-and-field labels every write records, and the conflicts with replicas whose view differs.

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

    /// Logs a failure of `op` at warn when it starts failing or fails differently (S13).
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
        self.series.owned.set(self.owned.borrow().len() as i64);
    }

    /// S12: how many shards of our view no live Lease covers, by our observation: a shard we
    /// run or are stopping is covered, and so is a hash range under the live Leases of other
    /// replicas that hash the same field, whatever their shard count (a rolling update from 4 to
    /// 8 shards keeps the whole range covered by the 4-shard view until it hands over). Leases
    /// that record no view cover nothing.
    pub(super) fn unowned(
        &self,
        leases: &HashMap<String, Lease>,
        st: &RunState,
        now: Instant,
    ) -> u32 {
        let prefix = format!("{}-shard-", self.set);
        let field = self.field_name();
        let mine = u64::from(self.shards);
        let mut covering: Vec<(u64, u64)> = st
            .held
            .keys()
            .chain(st.stopping.keys())
            .map(|i| (u64::from(*i), mine))
            .collect();
        for (name, lease) in leases {
            let Some(index) = name
                .strip_prefix(&prefix)
                .and_then(|i| i.parse::<u64>().ok())
            else {
                continue;
            };
            let Some(labels) = lease.metadata.labels.as_ref() else {
                continue;
            };
            if labels.get(SHARD_FIELD_LABEL).map(String::as_str) != Some(field) {
                continue;
            }
            let Some(count) = labels
                .get(SHARD_COUNT_LABEL)
                .and_then(|c| c.parse::<u64>().ok())
                .filter(|c| index < *c)
            else {
                continue;
            };
            if self.live_foreign(name, now).is_some() {
                covering.push((index, count));
            }
        }
        let uncovered = (0..mine).filter(|i| !covered(*i, mine, &covering)).count();
        u32::try_from(uncovered).unwrap_or(u32::MAX)
    }
}

/// Whether the hash range of shard `index` of `count`, `[index/count, (index+1)/count)`, lies in
/// the union of the ranges of `covering` (each `(index, count)`), compared as fractions.
pub(super) fn covered(index: u64, count: u64, covering: &[(u64, u64)]) -> bool {
    // a/b <= c/d, exactly.
    let le = |(a, b): (u64, u64), (c, d): (u64, u64)| {
        u128::from(a) * u128::from(d) <= u128::from(c) * u128::from(b)
    };
    let end = (index + 1, count);
    let mut at = (index, count);
    while !le(end, at) {
        // The range that starts at or before `at` and reaches furthest past it.
        let next = covering
            .iter()
            .filter(|(j, c)| le((*j, *c), at) && !le((*j + 1, *c), at))
            .map(|(j, c)| (*j + 1, *c))
            .reduce(|x, y| if le(x, y) { y } else { x });
        match next {
            Some(reach) => at = reach,
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::covered;

    #[test]
    fn s12_coverage_of_a_range_by_ranges_of_any_count() {
        // Shard 1 of 4 is [1/4, 2/4): covered by shards 2 and 3 of 8, not by shard 2 alone.
        assert!(covered(1, 4, &[(2, 8), (3, 8)]));
        assert!(!covered(1, 4, &[(2, 8)]));
        assert!(!covered(1, 4, &[(3, 8)]));
        // By a coarser range, and by overlapping ranges of different counts.
        assert!(covered(1, 4, &[(0, 2)]));
        assert!(covered(2, 6, &[(1, 4), (2, 4)]));
        assert!(!covered(0, 3, &[(1, 4), (2, 4)]));
        assert!(covered(0, 1, &[(0, 3), (1, 3), (2, 3)]));
        assert!(!covered(0, 1, &[(0, 3), (2, 3)]));
        assert!(!covered(0, 4, &[]));
    }
}
