//! The driver's WATCH: one connection opened after its wait and consumed until it ends, each
//! event applied to the store (R5, R8, R16) under the resync timer (R22) and the
//! dead-connection timer (R7).

use super::*;

impl<K> Driver<K>
where
    K: crate::object::Meta + DeserializeOwned,
{
    /// [`Command::Watch`]: a WATCH at `rv` after `wait`, consumed until it ends.
    pub(super) async fn watch(&mut self, rv: String, wait: Wait, rewatch: bool) -> Event {
        let delay = match wait {
            Wait::Now => Duration::ZERO,
            Wait::Backoff { floor } => self.backoff_delay(floor),
        };
        if !self.io.sleep(delay).await {
            return Event::Cancelled;
        }
        if rewatch {
            bump(&self.io.shared.counters.rewatches);
        } else {
            self.resync = self.resync_timer();
        }
        let req = self.io.watch_request(rv, false); // R18: a resumed watch never sends initial events
        bump(&self.io.shared.counters.watch_requests);
        debug!(rv = %req.resource_version, timeout_s = req.timeout.as_secs(), "starting watch");
        let res = tokio::select! {
            _ = self.io.cancel.cancelled() => return Event::Cancelled,
            res = self.io.lw.watch_probed(&req) => res,
        };
        match res {
            Ok(stream) => {
                self.run_watch(ActiveWatch {
                    stream,
                    start_rv: req.resource_version,
                    timeout: req.timeout,
                })
                .await
            }
            Err(e) => {
                let failure = Failure::of(&e);
                self.io.report(Error::WatchStart(e));
                Event::StartFailed(failure)
            }
        }
    }

    /// Consumes one watch connection until it ends.
    pub(super) async fn run_watch(&mut self, mut w: ActiveWatch<K>) -> Event {
        let span = tracing::debug_span!("watch", rv = %w.start_rv, timeout_s = w.timeout.as_secs(), events = tracing::field::Empty);
        let started = Instant::now();
        let mut resync = self.resync.take();
        let (end, events, last_rv) = self
            .consume(&mut w, &mut resync)
            .instrument(span.clone())
            .await;
        self.resync = resync;
        span.record("events", events);
        match end {
            Consumed::Cancelled => Event::Cancelled,
            Consumed::StoreClosed => Event::StoreClosed,
            Consumed::Ended(end) => Event::WatchEnded {
                end,
                events,
                elapsed: started.elapsed(),
                last_rv,
            },
        }
    }

    /// How long watch `w` may stay silent before it is dead (R7).
    fn idle_limit(&self, w: &ActiveWatch<K>) -> Duration {
        let own = w.timeout + DEAD_WATCH_GRACE;
        if self.periodic_bookmarks {
            own.min(self.io.config.max_bookmark_gap)
        } else {
            own
        }
    }

    pub(super) fn resync_timer(&self) -> Option<Interval> {
        let period = self.io.config.resync_period;
        if period.is_zero() {
            return None;
        }
        let mut t = tokio::time::interval_at(Instant::now() + period, period);
        t.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Some(t)
    }

    /// Applies the watch's events until it ends; returns how, the events it received (those
    /// the client shard dropped included: they are traffic, R7 and R10) and the newest RV it
    /// recorded (R8).
    pub(super) async fn consume(
        &mut self,
        w: &mut ActiveWatch<K>,
        resync: &mut Option<Interval>,
    ) -> (Consumed, u64, Option<String>) {
        let mut idle = self.idle_limit(w);
        let mut deadline = Instant::now() + idle;
        let mut gate = EventRvGate::new(&w.start_rv);
        let mut events = 0u64;
        let mut last_rv = None;
        let mut warned_foreign = false;
        loop {
            if let Some(room) = self.io.store.room() {
                // D12: the consumer is a bound of deltas behind; what it has not caught up with
                // waits in the connection, not decoded in memory.
                bump(&self.io.shared.counters.watch_pauses);
                tokio::select! {
                    biased;
                    _ = self.io.cancel.cancelled() => return (Consumed::Cancelled, events, last_rv),
                    () = room => {}
                }
                // R7: the connection was silent because it was not read.
                deadline = Instant::now() + idle;
            }
            tokio::select! {
                biased;
                _ = self.io.cancel.cancelled() => return (Consumed::Cancelled, events, last_rv),
                _ = tick(resync) => {
                    let due = self.io.config.should_resync.as_ref().is_none_or(|f| f());
                    if due {
                        bump(&self.io.shared.counters.resyncs);
                        if let Err(e) = self.io.store.resync() {
                            self.io.report(Error::Resync(e));
                            return (Consumed::Ended(WatchEnd::ResyncFailed), events, last_rv);
                        }
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    // R7: nothing for timeout + 5 s, or for the bookmark gap once the server
                    // sends bookmarks: a dead connection, handled like a close.
                    self.io.report(Error::DeadWatch(idle));
                    return (Consumed::Ended(WatchEnd::Closed), events, last_rv);
                }
                item = w.stream.next() => {
                    deadline = Instant::now() + idle;
                    match item {
                        None => return (Consumed::Ended(WatchEnd::Closed), events, last_rv),
                        Some(Ok(Probed::Foreign)) => {
                            // R7 and R10: a dropped event is still watch activity.
                            events += 1;
                            if !warned_foreign && self.io.shared.shard_mode() == Some(ShardMode::Server) {
                                warned_foreign = true;
                                warn!("the watch sent objects outside the shard although the LIST was filtered by the server; dropping them on the client (S4)");
                            }
                        }
                        Some(Ok(Probed::Event(ev))) => {
                            events += 1;
                            if !self.periodic_bookmarks
                                && matches!(&ev, WatchEvent::Bookmark(b) if !is_initial_events_end(b))
                            {
                                self.periodic_bookmarks = true;
                                idle = self.idle_limit(w);
                                deadline = Instant::now() + idle;
                            }
                            match self.apply(ev, &mut gate) {
                                Ok(Some(rv)) => last_rv = Some(rv),
                                Ok(None) => {}
                                Err(_) => return (Consumed::StoreClosed, events, last_rv),
                            }
                        }
                        Some(Err(e)) => {
                            let facts = Facts {
                                transport: matches!(e, list_watch::Error::Transport(_)),
                                ..Facts::default()
                            };
                            if on_error(Phase::Watch, e.class(), facts) == ErrorAnswer::DropEvent {
                                // R16: drop the event, log it, keep watching.
                                self.io.report(Error::UnexpectedObject(e));
                                continue;
                            }
                            let failure = Failure::of(&e);
                            self.io.report(Error::Watch(e));
                            let end = WatchEnd::Failed(failure);
                            return (Consumed::Ended(end), events, last_rv);
                        }
                    }
                }
            }
        }
    }

    /// Applies one watch event to the store (R5) and publishes its RV if the gate admits it
    /// (R8); returns that RV. Err means the store closed.
    fn apply(
        &self,
        ev: WatchEvent<K>,
        gate: &mut EventRvGate,
    ) -> Result<Option<String>, StoreError> {
        // M17: an object the finish stage drops (no name, or a panicking transform) is that
        // event only; its RV is still recorded, so the watch goes on past it.
        let (res, rv, is_added) = match ev {
            // D8: added/modified objects finish as soon as they are decoded, on the same stage
            // as a LIST's; deleted ones are left to the store, which transforms only a real
            // `Deleted` (D4).
            WatchEvent::Added(o) => {
                let rv = o.object_resource_version().map(str::to_owned);
                let res = match self.io.finish.apply(o) {
                    Some((key, obj)) => self.io.store.add_shared(key, obj).map(|()| Some(true)),
                    None => Ok(None),
                };
                (res, rv, true)
            }
            WatchEvent::Modified(o) => {
                let rv = o.object_resource_version().map(str::to_owned);
                let res = match self.io.finish.apply(o) {
                    Some((key, obj)) => self.io.store.update_shared(key, obj).map(|()| None),
                    None => Ok(None),
                };
                (res, rv, false)
            }
            WatchEvent::Deleted(o) => {
                let rv = o.object_resource_version().map(str::to_owned);
                (self.io.finish.delete(o).map(|()| Some(false)), rv, false)
            }
            WatchEvent::Bookmark(b) => {
                // R5: a bookmark only advances the RV and tells the store; handlers never see it.
                let rv = b.metadata.resource_version;
                self.io.store.bookmark(&rv);
                (Ok(None), Some(rv), false)
            }
            // Decoding turns ERROR events into stream errors; nothing to apply.
            WatchEvent::Error(_) => return Ok(None),
        };
        match res {
            Err(StoreError::Closed) => return Err(StoreError::Closed),
            Err(e) => {
                if matches!(e, StoreError::Key(_)) {
                    bump(&self.io.shared.counters.invalid_objects);
                }
                warn!(error = %e, "dropping watch event the store refused");
            }
            // B1, B3 (decision record 30): the cache grew or shrank by one.
            Ok(Some(added)) => self.io.charge_live(added),
            Ok(None) => {}
        }
        if gate.admit(is_added)
            && let Some(rv) = rv.filter(|rv| !rv.is_empty())
        {
            self.set_rv(&rv);
            return Ok(Some(rv));
        }
        Ok(None)
    }
}

/// How consuming one watch connection ended.
pub(super) enum Consumed {
    Cancelled,
    StoreClosed,
    Ended(WatchEnd),
}

async fn tick(t: &mut Option<Interval>) {
    match t {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    }
}
