//! One round of the assigner (S1, S2, S10): read the set, then heartbeat, sweep (S9) and
//! acquire at once, verify what was won, start it.
//!
//! Every request of a round is bounded by the renew deadline on its own, and nothing cuts the
//! round as a whole, not even the replica's cancel: a shard won by a write is started once
//! verified, or released, never dropped with the round (S10). A cancelled round reads and
//! acquires nothing more and releases what its writes in flight win.

use super::*;

impl Inner {
    /// One round: read the set, then heartbeat, sweep and acquire concurrently, and balance.
    /// Returns, when this replica holds fewer shards than its share, when the first shard held
    /// by another expires (E3).
    pub(super) async fn round<F, Fut>(
        self: &Arc<Self>,
        st: &mut RunState,
        root: &CancellationToken,
        ends: &mpsc::UnboundedSender<Report>,
        on_shard: &mut F,
    ) -> Option<Instant>
    where
        F: FnMut(u32, Term) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let bound = self.config.renew_deadline;
        // Cancelled (the replica leaves) before anything is written: nothing to finish.
        let leases = tokio::select! {
            biased;
            () = root.cancelled() => return None,
            read = tokio::time::timeout(bound, self.read_set(Instant::now() + bound)) => read.ok().flatten()?,
        };
        let now = Instant::now();
        let conflict = self.conflict(&leases, now);
        self.report_conflict(conflict.as_ref());
        let live = self.live_members(&leases, now).max(1);
        let target = self.shards.div_ceil(live) as usize;
        // S12: what this LIST shows, before this round acquires anything.
        let unowned = self.unowned(&leases, st, now);
        self.unowned.send_replace(unowned);
        self.series.unowned.set(i64::from(unowned));
        self.series.live.set(i64::from(live));
        let next_expiry = if st.held.len() < target {
            self.earliest_foreign_expiry(&leases, st)
        } else {
            None
        };
        // Too many: stop the highest shards; each one's task releases its Lease once its work
        // has ended, and the shard is not acquired again before that.
        while st.held.len() > target {
            let Some((index, held)) = st.held.pop_last() else {
                break;
            };
            tracing::info!(set = %self.set, identity = %self.identity, shard = index, live, "releasing a shard to rebalance");
            held.stop.cancel();
            st.stopping.insert(index, held.task);
        }
        let candidates = match &conflict {
            // A holder that records no view cannot check ours: stop everything.
            Some(c) if c.view.is_none() => {
                for (index, held) in std::mem::take(&mut st.held) {
                    held.stop.cancel();
                    st.stopping.insert(index, held.task);
                }
                Vec::new()
            }
            Some(_) => Vec::new(),
            None if root.is_cancelled() => Vec::new(),
            None => self.candidates(&leases, st, target, now),
        };
        // S10: the heartbeat, the sweep and every acquiring write at once, each bounded by the
        // renew deadline: K shards at write latency L take L, not K x L.
        let ((), (), won) = tokio::join!(
            self.heartbeat(&leases),
            async {
                if tokio::time::timeout(bound, self.sweep(&leases, now))
                    .await
                    .is_err()
                {
                    self.failed("sweep", &"timed out");
                }
            },
            self.acquire(&leases, &candidates),
        );
        if !won.is_empty() {
            self.start_won(won, st, root, ends, on_shard).await;
        }
        next_expiry
    }

    /// The shards this replica tries to take this round (at most its share less what it
    /// holds): free, released or expired by our observation (E3), or held by us without a
    /// term (a write whose answer came too late), starting at an offset of our own so the
    /// replicas do not all race for shard 0.
    fn candidates(
        &self,
        leases: &HashMap<String, Lease>,
        st: &RunState,
        target: usize,
        now: Instant,
    ) -> Vec<u32> {
        let need = target.saturating_sub(st.held.len());
        let offset =
            (informer_runtime::shard::fnv1a64(&self.identity) % u64::from(self.shards)) as u32;
        (0..self.shards)
            .map(|step| (offset + step) % self.shards)
            .filter(|i| {
                !st.held.contains_key(i) && !st.stopping.contains_key(i) && !st.cooling(*i, now)
            })
            .filter(|i| {
                let name = self.shard_lease(*i);
                !leases.contains_key(&name) || self.live_foreign(&name, now).is_none()
            })
            .take(need)
            .collect()
    }

    /// Renews our heartbeat (creating it on the first round), bounded by the renew deadline.
    async fn heartbeat(&self, leases: &HashMap<String, Lease>) {
        let member = self.member_lease();
        let written = tokio::time::timeout(
            self.config.renew_deadline,
            self.write(&member, leases.get(&member)),
        )
        .await;
        match written {
            Ok(Ok(_)) => self.succeeded("heartbeat"),
            Ok(Err(err)) => self.failed("heartbeat", &err),
            Err(_) => self.failed("heartbeat", &"timed out"),
        }
    }

    /// Writes our record into every candidate's Lease at once (S10); returns the shards won and
    /// when each winning write started. A write cut at the renew deadline that landed leaves
    /// the Lease ours without a term: a later round takes it again (it is a candidate).
    async fn acquire(
        &self,
        leases: &HashMap<String, Lease>,
        candidates: &[u32],
    ) -> Vec<(u32, Instant)> {
        let writes = candidates.iter().map(|&index| async move {
            let name = self.shard_lease(index);
            let started = Instant::now();
            let written = tokio::time::timeout(
                self.config.renew_deadline,
                self.write(&name, leases.get(&name)),
            )
            .await;
            match written {
                Ok(Ok(true)) => Some((index, started)),
                Ok(Ok(false)) => None,
                Ok(Err(err)) => {
                    self.failed("acquire", &err);
                    None
                }
                Err(_) => {
                    self.failed("acquire", &"timed out");
                    None
                }
            }
        });
        futures::future::join_all(writes)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    /// Starts the shards `won` once verified (S1: a read begun after the acquiring writes shows
    /// no live Lease of another view; a replica of another view acquiring at the same time sees
    /// ours), each within its own renew deadline (E4). What cannot start is released at once
    /// rather than left to expire (S10).
    async fn start_won<F, Fut>(
        self: &Arc<Self>,
        won: Vec<(u32, Instant)>,
        st: &mut RunState,
        root: &CancellationToken,
        ends: &mpsc::UnboundedSender<Report>,
        on_shard: &mut F,
    ) where
        F: FnMut(u32, Term) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let first = won.iter().map(|(_, started)| *started).min();
        let until = first.unwrap_or_else(Instant::now) + self.config.renew_deadline;
        // Cancelled (the replica leaves), before or during the read: nothing starts, what was
        // won is released at once below (S10).
        let verified = tokio::select! {
            biased;
            () = root.cancelled() => false,
            read = tokio::time::timeout_at(until, self.read_set(until)) => match read {
                Ok(Some(after)) => {
                    let conflict = self.conflict(&after, Instant::now());
                    self.report_conflict(conflict.as_ref());
                    conflict.is_none()
                }
                _ => false,
            },
        };
        let mut release = Vec::new();
        for (index, started) in won {
            // Too late to start: the term would already be over (E4). Cancelled: leaving.
            if !verified
                || started + self.config.renew_deadline <= Instant::now()
                || root.is_cancelled()
            {
                release.push(self.shard_lease(index));
                continue;
            }
            self.start(st, index, started, root, ends, on_shard);
        }
        futures::future::join_all(release.iter().map(|name| self.release(name))).await;
    }
}
