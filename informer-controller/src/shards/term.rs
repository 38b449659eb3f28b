//! One shard's term (S2, S3, S6): each held shard renews in a task of its own, cut at its own deadline.

use super::*;

impl Inner {
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
        F: FnMut(u32, Term) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let stop = root.child_token();
        // S11: the work's term is valid until the renew deadline after the shard's last
        // successful write, on the work's own clock.
        let (valid, valid_until) = watch::channel(acquired + self.config.renew_deadline);
        let term = Term::new(stop.child_token(), valid_until, self.config.drain_limit());
        self.publish(index, true);
        tracing::info!(set = %self.set, identity = %self.identity, shard = index, "acquired a shard");
        let work = Work::spawn(
            term.clone(),
            on_shard(index, term),
            self.config.drain_limit(),
            format!("shard {index} of {}", self.set),
        );
        let task = tokio::spawn(Arc::clone(self).term(
            index,
            acquired,
            (work, valid),
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
        (mut work, valid): (Work, watch::Sender<Instant>),
        stop: CancellationToken,
        root: CancellationToken,
        ends: mpsc::UnboundedSender<Report>,
    ) {
        let name = self.shard_lease(index);
        let mut last_write = acquired;
        let end = self
            .keep(&name, &mut last_write, &valid, &mut work, &stop)
            .await;
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
        valid: &watch::Sender<Instant>,
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
                how = work.ended() => return ended(how, deadline),
                () = tokio::time::sleep_until(next.min(deadline)) => {}
            }
            let started = Instant::now();
            let renewed = tokio::select! {
                biased;
                () = stop.cancelled() => return TermEnd::Stopped,
                () = tokio::time::sleep_until(deadline) => return TermEnd::Expired,
                how = work.ended() => return ended(how, deadline),
                r = self.renew(name, deadline) => r,
            };
            match renewed {
                Ok(true) => {
                    *last_write = started;
                    valid.send_replace(started + self.config.renew_deadline);
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
    /// re-reads and retries; the caller bounds it by the renew `deadline` (S14), which a 429 on
    /// the read is waited out within (R24).
    pub(super) async fn renew(&self, name: &str, deadline: Instant) -> Result<bool, kube::Error> {
        loop {
            let Some(lease) = self.read_ours(name, deadline).await? else {
                return Ok(false);
            };
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

/// Why a shard term whose work just ended is over: the work ended on its own (S3), unless the
/// term was already past its renew deadline, which the work sees on its own clock (S11) and may
/// have stopped for: then the shard expired, and no dead-work backoff applies.
fn ended(how: Ended, deadline: Instant) -> TermEnd {
    if Instant::now() >= deadline {
        TermEnd::Expired
    } else {
        TermEnd::WorkEnded(how)
    }
}
