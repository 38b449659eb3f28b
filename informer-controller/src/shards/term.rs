//! One round of the assigner and one shard's term ([S2], [S3], [S6]): read, heartbeat, balance; each held shard renews in a task of its own, cut at its own deadline.
//!
//! [S2]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#17-shard-sets-ours
//! [S3]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#17-shard-sets-ours
//! [S6]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#17-shard-sets-ours

use super::*;

impl Inner {
    /// One round: read the set, heartbeat, balance. Returns, when this replica holds fewer
    /// shards than its share, when the first shard held by another expires (E3).
    pub(super) async fn round<F, Fut>(
        self: &Arc<Self>,
        st: &mut RunState,
        root: &CancellationToken,
        ends: &mpsc::UnboundedSender<Report>,
        on_shard: &mut F,
    ) -> Option<Instant>
    where
        F: FnMut(u32, CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let leases = self.read_set().await?;
        // The heartbeat first, so a replica that has just joined counts itself.
        let member = self.member_lease();
        match self.write(&member, leases.get(&member)).await {
            Ok(_) => self.succeeded("heartbeat"),
            Err(err) => self.failed("heartbeat", &err),
        }
        let now = Instant::now();
        self.sweep(&leases, now).await;
        let conflict = self.conflict(&leases, now);
        self.report_conflict(conflict.as_ref());
        let live = self.live_members(&leases, now).max(1);
        let target = self.shards.div_ceil(live) as usize;
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
        if let Some(c) = &conflict {
            if c.view.is_none() {
                // A holder that records no view cannot check ours: stop everything.
                for (index, held) in std::mem::take(&mut st.held) {
                    held.stop.cancel();
                    st.stopping.insert(index, held.task);
                }
            }
            return None;
        }
        // Too few: free, released or expired shards, starting at an offset of our own so the
        // replicas do not all race for shard 0.
        let offset =
            (informer_runtime::shard::fnv1a64(&self.identity) % u64::from(self.shards)) as u32;
        let mut acquired = Vec::new();
        for step in 0..self.shards {
            if st.held.len() + acquired.len() >= target || root.is_cancelled() {
                break;
            }
            let index = (offset + step) % self.shards;
            if st.held.contains_key(&index)
                || st.stopping.contains_key(&index)
                || st.cooling(index, now)
            {
                continue;
            }
            let name = self.shard_lease(index);
            let started = Instant::now();
            match self.write(&name, leases.get(&name)).await {
                Ok(true) => acquired.push((index, started)),
                Ok(false) => {}
                Err(err) => self.failed("acquire", &err),
            }
        }
        if acquired.is_empty() {
            return next_expiry;
        }
        // S1: start only after a read begun after the acquiring writes shows no live Lease of
        // another view; a replica of another view acquiring at the same time sees ours.
        let verified = match self.read_set().await {
            Some(after) => {
                let conflict = self.conflict(&after, Instant::now());
                self.report_conflict(conflict.as_ref());
                conflict.is_none()
            }
            None => false,
        };
        for (index, started) in acquired {
            if !verified {
                self.release(&self.shard_lease(index)).await;
                continue;
            }
            if started + self.config.renew_deadline <= Instant::now() {
                // Too late to start: the term would already be over (E4); the Lease expires.
                continue;
            }
            self.start(st, index, started, root, ends, on_shard);
        }
        next_expiry
    }

    /// Starts shard `index`'s term, acquired by the write that started at `acquired`: its
    /// work, and the task that renews its Lease and ends the term (S2).
    pub(super) fn start<F, Fut>(
        self: &Arc<Self>,
        st: &mut RunState,
        index: u32,
        acquired: Instant,
        root: &CancellationToken,
        ends: &mpsc::UnboundedSender<Report>,
        on_shard: &mut F,
    ) where
        F: FnMut(u32, CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let stop = root.child_token();
        let token = stop.child_token();
        self.publish(index, true);
        tracing::info!(set = %self.set, identity = %self.identity, shard = index, "acquired a shard");
        let work = Work::spawn(
            token.clone(),
            on_shard(index, token),
            self.config.drain_limit(),
            format!("shard {index} of {}", self.set),
        );
        let task = tokio::spawn(Arc::clone(self).term(
            index,
            acquired,
            work,
            stop.clone(),
            root.clone(),
            ends.clone(),
        ));
        st.held.insert(index, Held { stop, task });
    }

    /// One shard's term (S2): renews its Lease every retry period until it is stopped, its
    /// renew deadline passes, another holder appears, or its work ends (S3); then ends it:
    /// the work is cancelled and drained (S6), the Lease released unless it was lost, and the
    /// run loop told.
    pub(super) async fn term(
        self: Arc<Self>,
        index: u32,
        acquired: Instant,
        mut work: Work,
        stop: CancellationToken,
        root: CancellationToken,
        ends: mpsc::UnboundedSender<Report>,
    ) {
        let name = self.shard_lease(index);
        let mut last_write = acquired;
        let end = self.keep(&name, &mut last_write, &mut work, &stop).await;
        let ended_at = Instant::now();
        work.cancel();
        self.publish(index, false);
        match &end {
            TermEnd::Stopped => {
                tracing::info!(set = %self.set, identity = %self.identity, shard = index, "stopping a shard");
            }
            TermEnd::Expired => {
                tracing::warn!(set = %self.set, identity = %self.identity, shard = index, "lost a shard (not renewed within the renew deadline)");
            }
            TermEnd::Lost => {
                tracing::warn!(set = %self.set, identity = %self.identity, shard = index, "lost a shard to another holder");
            }
            TermEnd::WorkEnded(how) => {
                tracing::warn!(set = %self.set, identity = %self.identity, shard = index, ?how, "the shard's work ended on its own; releasing the shard (S3)");
            }
        }
        work.drain(ended_at).await;
        let release = match end {
            TermEnd::Stopped => !root.is_cancelled() || self.config.release_on_cancel,
            TermEnd::WorkEnded(_) => true,
            TermEnd::Expired | TermEnd::Lost => false,
        };
        if release {
            self.release(&name).await;
        }
        let _ = ends.send((index, end, acquired.elapsed()));
    }

    /// Renews the shard Lease `name` until the term ends; returns why it did.
    pub(super) async fn keep(
        &self,
        name: &str,
        last_write: &mut Instant,
        work: &mut Work,
        stop: &CancellationToken,
    ) -> TermEnd {
        let mut next = *last_write + self.config.retry_period;
        loop {
            let deadline = *last_write + self.config.renew_deadline;
            tokio::select! {
                biased;
                () = stop.cancelled() => return TermEnd::Stopped,
                () = tokio::time::sleep_until(deadline) => return TermEnd::Expired,
                how = work.ended() => return TermEnd::WorkEnded(how),
                () = tokio::time::sleep_until(next.min(deadline)) => {}
            }
            let started = Instant::now();
            let renewed = tokio::select! {
                biased;
                () = stop.cancelled() => return TermEnd::Stopped,
                () = tokio::time::sleep_until(deadline) => return TermEnd::Expired,
                how = work.ended() => return TermEnd::WorkEnded(how),
                r = self.renew(name) => r,
            };
            match renewed {
                Ok(true) => {
                    *last_write = started;
                    self.succeeded(name);
                }
                Ok(false) => return TermEnd::Lost,
                Err(err) => self.failed(name, &err),
            }
            next = started + self.config.retry_period;
        }
    }

    /// One renewal of our shard Lease `name`: Ok(true) renewed, Ok(false) we no longer hold it
    /// (another holder, or deleted). A 409 (someone else wrote the Lease, e.g. labelled it)
    /// re-reads and retries; the caller bounds it by the renew deadline (item 12).
    pub(super) async fn renew(&self, name: &str) -> Result<bool, kube::Error> {
        loop {
            let Some(lease) = self.api.get_opt(name).await? else {
                return Ok(false);
            };
            let holder = lease
                .spec
                .as_ref()
                .and_then(|s| s.holder_identity.as_deref());
            if holder != Some(self.identity.as_str()) {
                return Ok(false);
            }
            let written = self.write_lease(name, Some(lease), Instant::now()).await;
            match written {
                Ok(Written::Held(_)) => return Ok(true),
                Ok(Written::Wait(_)) => return Ok(false),
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    tracing::debug!(lease = %name, "conflict renewing our own shard Lease; re-reading it");
                }
                Err(e) => return Err(e),
            }
        }
    }
}
