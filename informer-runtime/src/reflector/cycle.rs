//! The list+watch cycle loop (R1) and the watch loop with its error classes (R5, R7–R10, R12–R16, R22).

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use kube::core::WatchEvent;
use rand::Rng;
use serde::de::DeserializeOwned;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, warn};

use super::policy::{
    Action, DEAD_WATCH_GRACE, EventRvGate, Facts, Phase, RetryWindow, RvState, VERY_SHORT_WATCH,
    on_error, retry_after_floor, watch_timeout,
};
use super::{
    Backoff, Error, InitialListStrategy, Reflector, ReflectorConfig, Shared, bump, guard_transform,
    guard_transform_owned, list, watch_list,
};
use crate::key::ObjectKey;
use crate::list_watch::{self, ErrorClass, ListWatch, WatchRequest, WatchStream};
use crate::store::{ReflectorStore, StoreError};

/// How a phase of a cycle ended.
pub(super) enum Next {
    /// The token was cancelled.
    Cancelled,
    /// The store closed.
    Stop,
    /// Start a new cycle after a backoff delay of at least `min_delay` (R1, Retry-After).
    NewCycle { min_delay: Option<Duration> },
}

impl Next {
    fn new_cycle(min_delay: Option<Duration>) -> Self {
        Next::NewCycle { min_delay }
    }
}

/// A started watch and what it was started with.
pub(super) struct ActiveWatch<K> {
    pub(super) stream: WatchStream<K>,
    /// The RV the watch started from (R8).
    pub(super) start_rv: String,
    /// Its `timeoutSeconds` (R6), for dead-connection detection (R7).
    pub(super) timeout: Duration,
}

/// The reflector's state across cycles.
pub(super) struct Ctx<K> {
    pub(super) lw: ListWatch<K>,
    pub(super) store: Arc<dyn ReflectorStore<K>>,
    pub(super) config: ReflectorConfig,
    pub(super) shared: Arc<Shared>,
    pub(super) cancel: CancellationToken,
    pub(super) backoff: Backoff,
    pub(super) rv: RvState,
    /// Set by R19 "unsupported" or an R20 fallback: paged LIST until restarted.
    pub(super) streaming_disabled: bool,
    retry_window: RetryWindow,
    listed_once: bool,
}

/// What to do after a watch error.
enum Decision {
    /// Re-watch at the last RV after `delay` (R9, R13, R14).
    Rewatch(Option<Duration>),
    /// End the cycle.
    End(Next),
}

pub(super) async fn run<K>(r: Reflector<K>, cancel: CancellationToken)
where
    K: crate::object::Meta + DeserializeOwned,
{
    let mut ctx = Ctx {
        backoff: Backoff::new(r.config.backoff.clone()),
        retry_window: RetryWindow::new(r.config.max_internal_error_retry),
        lw: r.lw,
        store: r.store,
        config: r.config,
        shared: r.handle.shared,
        cancel,
        rv: RvState::default(),
        streaming_disabled: false,
        listed_once: false,
    };
    let mut pending: Option<Option<Duration>> = None;
    loop {
        if let Some(min_delay) = pending {
            // R1: every cycle after the first starts after one backoff delay; Retry-After is a
            // minimum, capped at the backoff maximum (item 7).
            let floor = retry_after_floor(min_delay, ctx.config.backoff.cap);
            let delay = ctx.backoff.next_delay().max(floor);
            debug!(?delay, "backing off before the next list+watch cycle");
            if !ctx.sleep(delay).await {
                break;
            }
        }
        bump(&ctx.shared.counters.cycles);
        match ctx.cycle().await {
            Next::Cancelled => break,
            Next::Stop => {
                info!("store closed; reflector stops");
                break;
            }
            Next::NewCycle { min_delay } => pending = Some(min_delay),
        }
    }
    debug!("reflector stopped");
}

impl<K> Ctx<K>
where
    K: crate::object::Meta + DeserializeOwned,
{
    /// Sleeps unless cancelled first; false if cancelled.
    pub(super) async fn sleep(&self, d: Duration) -> bool {
        if d.is_zero() {
            return !self.cancel.is_cancelled();
        }
        tokio::select! {
            _ = self.cancel.cancelled() => false,
            _ = tokio::time::sleep(d) => true,
        }
    }

    /// Logs and counts an error and hands it to the watch error handler.
    pub(super) fn report(&self, err: Error) {
        bump(&self.shared.counters.errors);
        match &err {
            // R16: an event of the wrong kind is logged as an error.
            Error::UnexpectedObject(_) => tracing::error!(error = %err, "dropped watch event"),
            Error::DeadWatch(_) | Error::VeryShortWatch(_) => info!(error = %err, "watch ended"),
            _ => warn!(error = %err, "reflector error"),
        }
        if let Some(h) = &self.config.watch_error_handler {
            h(&err);
        }
    }

    /// Records `rv` as the last synced RV (R23).
    pub(super) fn set_rv(&mut self, rv: String) {
        *self.shared.last_sync_rv.write() = Some(rv.clone());
        self.rv.last_synced = Some(rv);
    }

    /// A watch request at `rv` with a fresh random timeout (R6).
    pub(super) fn watch_request(&self, rv: String, send_initial_events: bool) -> WatchRequest {
        let unit: f64 = rand::rng().random();
        WatchRequest {
            resource_version: rv,
            timeout: watch_timeout(self.config.min_watch_timeout, unit),
            send_initial_events,
            label_selector: self.config.label_selector.clone(),
            field_selector: self.config.field_selector.clone(),
            max_line_bytes: Some(self.config.max_watch_line_bytes),
        }
    }

    /// Counts a complete list: the first is the initial list, the rest are relists.
    pub(super) fn count_list_done(&mut self) {
        if self.listed_once {
            bump(&self.shared.counters.relists);
        }
        self.listed_once = true;
    }

    async fn cycle(&mut self) -> Next {
        let mut initial = None;
        if self.config.strategy == InitialListStrategy::StreamingList && !self.streaming_disabled {
            match watch_list::initial(self).await {
                watch_list::Outcome::Synced(w) => initial = Some(w),
                watch_list::Outcome::Fallback => {}
                watch_list::Outcome::End(next) => return next,
            }
        }
        if initial.is_none()
            && let Err(next) = list::list_and_replace(self).await
        {
            return next;
        }
        self.watch_loop(initial).await
    }

    async fn watch_loop(&mut self, mut active: Option<ActiveWatch<K>>) -> Next {
        let mut resync = self.resync_timer();
        loop {
            let mut w = match active.take() {
                Some(w) => w,
                None => match self.start_watch().await {
                    Ok(w) => w,
                    Err(decision) => match decision {
                        Decision::Rewatch(delay) => {
                            if !self.sleep(delay.unwrap_or_default()).await {
                                return Next::Cancelled;
                            }
                            bump(&self.shared.counters.rewatches);
                            continue;
                        }
                        Decision::End(next) => return next,
                    },
                },
            };
            let span = tracing::debug_span!("watch", rv = %w.start_rv, timeout_s = w.timeout.as_secs(), events = tracing::field::Empty);
            let started = Instant::now();
            let (end, events) = self
                .consume(&mut w, &mut resync)
                .instrument(span.clone())
                .await;
            span.record("events", events);
            drop(w);
            let decision = match end {
                StreamEnd::Cancelled => return Next::Cancelled,
                StreamEnd::Stop => return Next::Stop,
                StreamEnd::Resync(e) => {
                    // R22: a resync failure ends the current watch.
                    self.report(Error::Resync(e));
                    return Next::new_cycle(None);
                }
                StreamEnd::Closed if events == 0 && started.elapsed() < VERY_SHORT_WATCH => {
                    // R10: a very short watch is an error: the next cycle relists.
                    self.report(Error::VeryShortWatch(started.elapsed()));
                    return Next::new_cycle(None);
                }
                StreamEnd::Closed => Decision::Rewatch(None), // R9
                StreamEnd::Failed(e) => {
                    let class = e.class();
                    let retry_after = e.retry_after();
                    let transport = matches!(e, list_watch::Error::Transport(_));
                    self.report(Error::Watch(e));
                    self.decide(Phase::Watch, class, transport, retry_after)
                }
            };
            match decision {
                Decision::Rewatch(delay) => {
                    if !self.sleep(delay.unwrap_or_default()).await {
                        return Next::Cancelled;
                    }
                    bump(&self.shared.counters.rewatches);
                }
                Decision::End(next) => return next,
            }
        }
    }

    fn resync_timer(&self) -> Option<Interval> {
        let period = self.config.resync_period;
        if period.is_zero() {
            return None;
        }
        let mut t = tokio::time::interval_at(Instant::now() + period, period);
        t.set_missed_tick_behavior(MissedTickBehavior::Delay);
        Some(t)
    }

    async fn start_watch(&mut self) -> Result<ActiveWatch<K>, Decision> {
        let rv = self.rv.last_synced.clone().unwrap_or_default();
        let req = self.watch_request(rv, false); // R18: a resumed watch never sends initial events
        bump(&self.shared.counters.watch_requests);
        debug!(rv = %req.resource_version, timeout_s = req.timeout.as_secs(), "starting watch");
        let res = tokio::select! {
            _ = self.cancel.cancelled() => return Err(Decision::End(Next::Cancelled)),
            res = self.lw.watch(&req) => res,
        };
        match res {
            Ok(stream) => Ok(ActiveWatch {
                stream,
                start_rv: req.resource_version,
                timeout: req.timeout,
            }),
            Err(e) => {
                let class = e.class();
                let retry_after = e.retry_after();
                let transport = matches!(e, list_watch::Error::Transport(_));
                self.report(Error::WatchStart(e));
                Err(self.decide(Phase::WatchStart, class, transport, retry_after))
            }
        }
    }

    /// Performs the error table's answer ([`on_error`]) for a WATCH error (R9-R15).
    fn decide(
        &mut self,
        phase: Phase,
        class: ErrorClass,
        transport: bool,
        retry_after: Option<Duration>,
    ) -> Decision {
        // R14's window counts only the internal errors it is asked about.
        let internal_retry_allowed =
            class == ErrorClass::InternalError && self.retry_window.should_retry();
        let facts = Facts {
            transport,
            internal_retry_allowed,
            ..Facts::default()
        };
        match on_error(phase, class, facts) {
            // R13: re-watch at the same RV after backoff; Retry-After is the minimum delay.
            Action::Rewatch { backoff: true } => {
                let floor = retry_after_floor(retry_after, self.config.backoff.cap);
                let delay = self.backoff.next_delay().max(floor);
                Decision::Rewatch(Some(delay))
            }
            // R14 inside its window; R9 for a close.
            Action::Rewatch { backoff: false } | Action::TreatAsClose | Action::DropEvent => {
                Decision::Rewatch(None)
            }
            // R12 (relist at the last RV, never ""), R15; the table gives a WATCH nothing else.
            _ => Decision::End(Next::new_cycle(retry_after)),
        }
    }

    async fn consume(
        &mut self,
        w: &mut ActiveWatch<K>,
        resync: &mut Option<Interval>,
    ) -> (StreamEnd, u64) {
        let idle = w.timeout + DEAD_WATCH_GRACE;
        let mut deadline = Instant::now() + idle;
        let mut gate = EventRvGate::new(&w.start_rv);
        let mut events = 0u64;
        loop {
            tokio::select! {
                biased;
                _ = self.cancel.cancelled() => return (StreamEnd::Cancelled, events),
                _ = tick(resync) => {
                    let due = self.config.should_resync.as_ref().is_none_or(|f| f());
                    if due {
                        bump(&self.shared.counters.resyncs);
                        if let Err(e) = self.store.resync() {
                            return (StreamEnd::Resync(e), events);
                        }
                    }
                }
                _ = tokio::time::sleep_until(deadline) => {
                    // R7: nothing for timeout + 5 s: a dead connection, handled like a close.
                    self.report(Error::DeadWatch(idle));
                    return (StreamEnd::Closed, events);
                }
                item = w.stream.next() => {
                    deadline = Instant::now() + idle;
                    match item {
                        None => return (StreamEnd::Closed, events),
                        Some(Ok(ev)) => {
                            events += 1;
                            if self.apply(ev, &mut gate).is_err() {
                                return (StreamEnd::Stop, events);
                            }
                        }
                        Some(Err(e)) => {
                            let transport = matches!(e, list_watch::Error::Transport(_));
                            let facts = Facts { transport, ..Facts::default() };
                            // The two answers of the error table that do not depend on retry
                            // state are handled here; the rest in `decide`.
                            match on_error(Phase::Watch, e.class(), facts) {
                                Action::DropEvent => {
                                    // R16: drop the event, log it, keep watching.
                                    self.report(Error::UnexpectedObject(e));
                                }
                                Action::TreatAsClose => {
                                    // A broken body ends the watch like a close (R9): nothing
                                    // after the last complete event was recorded.
                                    self.report(Error::Watch(e));
                                    return (StreamEnd::Closed, events);
                                }
                                _ => return (StreamEnd::Failed(e), events),
                            }
                        }
                    }
                }
            }
        }
    }

    /// Transforms a watched object (D8) and hands it to `write`; a transform that panics drops
    /// the object (item 5) and writes nothing.
    fn transform_then(
        &self,
        mut obj: K,
        write: impl FnOnce(&dyn ReflectorStore<K>, K) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        let store = &*self.store;
        if guard_transform(&self.shared, &mut obj, |o| store.transform(o)) {
            write(store, obj)
        } else {
            Ok(())
        }
    }

    /// Applies one watch event to the store and records its RV (R5, R8). Err means the store closed.
    fn apply(&mut self, ev: WatchEvent<K>, gate: &mut EventRvGate) -> Result<(), StoreError> {
        // Item 5: a panicking transform drops that event only (`guard_transform`); its RV is
        // still recorded, so the watch goes on past it.
        let (res, rv, is_added) = match ev {
            // D8: added/modified objects are transformed as soon as they are decoded; deleted
            // ones are left to the store, which transforms only a real `Deleted` (D4).
            WatchEvent::Added(o) => {
                let rv = o.object_resource_version().map(str::to_owned);
                (self.transform_then(o, |s, o| s.add(o)), rv, true)
            }
            WatchEvent::Modified(o) => {
                let rv = o.object_resource_version().map(str::to_owned);
                (self.transform_then(o, |s, o| s.update(o)), rv, false)
            }
            WatchEvent::Deleted(o) => {
                let rv = o.object_resource_version().map(str::to_owned);
                // The store transforms a real `Deleted` inside `delete` (outside its lock).
                let res = match ObjectKey::from_resource(&o) {
                    Ok(key) => {
                        let store = &self.store;
                        guard_transform_owned(&self.shared, &key, o, |o| store.delete(o))
                            .unwrap_or(Ok(()))
                    }
                    Err(e) => Err(StoreError::Key(e)),
                };
                (res, rv, false)
            }
            WatchEvent::Bookmark(b) => {
                // R5: a bookmark only advances the RV and tells the store; handlers never see it.
                let rv = b.metadata.resource_version;
                self.store.bookmark(&rv);
                (Ok(()), Some(rv), false)
            }
            // Decoding turns ERROR events into stream errors; nothing to apply.
            WatchEvent::Error(_) => return Ok(()),
        };
        match res {
            Err(StoreError::Closed) => return Err(StoreError::Closed),
            Err(e) => {
                if matches!(e, StoreError::Key(_)) {
                    bump(&self.shared.counters.invalid_objects);
                }
                warn!(error = %e, "dropping watch event the store refused");
            }
            Ok(()) => {}
        }
        if gate.admit(is_added)
            && let Some(rv) = rv.filter(|rv| !rv.is_empty())
        {
            self.set_rv(rv);
        }
        Ok(())
    }
}

/// How one watch connection ended.
enum StreamEnd {
    Cancelled,
    Stop,
    /// EOF, server timeout, cut body or dead connection (R7, R9).
    Closed,
    Failed(list_watch::Error),
    Resync(StoreError),
}

async fn tick(t: &mut Option<Interval>) {
    match t {
        Some(t) => {
            t.tick().await;
        }
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;
    use parking_lot::Mutex;

    #[derive(Default)]
    struct Ops(Mutex<Vec<String>>);

    impl ReflectorStore<ConfigMap> for Ops {
        fn add(&self, o: ConfigMap) -> Result<(), StoreError> {
            self.0
                .lock()
                .push(format!("add {}", o.metadata.name.unwrap_or_default()));
            Ok(())
        }
        fn update(&self, o: ConfigMap) -> Result<(), StoreError> {
            self.0
                .lock()
                .push(format!("update {}", o.metadata.name.unwrap_or_default()));
            Ok(())
        }
        fn delete(&self, o: ConfigMap) -> Result<(), StoreError> {
            self.0
                .lock()
                .push(format!("delete {}", o.metadata.name.unwrap_or_default()));
            Ok(())
        }
        fn replace_shared(&self, items: Vec<Arc<ConfigMap>>, rv: String) -> Result<(), StoreError> {
            self.0.lock().push(format!("replace {} {rv}", items.len()));
            Ok(())
        }
        fn resync(&self) -> Result<(), StoreError> {
            self.0.lock().push("resync".into());
            Ok(())
        }
        fn bookmark(&self, rv: &str) {
            self.0.lock().push(format!("bookmark {rv}"));
        }
    }

    /// A context whose client points nowhere; these tests never send a request.
    fn ctx(store: Arc<Ops>, config: ReflectorConfig) -> Ctx<ConfigMap> {
        let kc = kube::Config::new(http::Uri::from_static("http://127.0.0.1:9"));
        let client = kube::Client::try_from(kc).unwrap();
        let lw = ListWatch::new(kube::Api::<ConfigMap>::all(client));
        let r = Reflector::new(lw, store, config);
        Ctx {
            backoff: Backoff::new(r.config.backoff.clone()),
            retry_window: RetryWindow::new(r.config.max_internal_error_retry),
            lw: r.lw,
            store: r.store,
            config: r.config,
            shared: r.handle.shared,
            cancel: CancellationToken::new(),
            rv: RvState::default(),
            streaming_disabled: false,
            listed_once: false,
        }
    }

    fn cm(name: &str, rv: &str) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.into()),
                namespace: Some("ns".into()),
                resource_version: Some(rv.into()),
                ..Default::default()
            },
            ..Default::default()
        }
    }

    fn active(
        events: Vec<list_watch::Result<WatchEvent<ConfigMap>>>,
        start_rv: &str,
        then_pending: bool,
    ) -> ActiveWatch<ConfigMap> {
        let s = futures::stream::iter(events);
        let stream = if then_pending {
            s.chain(futures::stream::pending()).boxed()
        } else {
            s.boxed()
        };
        ActiveWatch {
            stream,
            start_rv: start_rv.into(),
            timeout: Duration::from_secs(300),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn r7_silent_watch_is_dead_after_timeout_plus_5s() {
        let store = Arc::new(Ops::default());
        let mut c = ctx(store, ReflectorConfig::default());
        let mut w = active(vec![], "10", true);
        let started = Instant::now();
        let (end, events) = c.consume(&mut w, &mut None).await;
        assert!(
            matches!(end, StreamEnd::Closed),
            "handled like a close (R9)"
        );
        assert_eq!(events, 0);
        assert_eq!(started.elapsed(), Duration::from_secs(305));
        assert_eq!(
            c.shared
                .counters
                .errors
                .load(std::sync::atomic::Ordering::Relaxed),
            1
        );
    }

    #[tokio::test(start_paused = true)]
    async fn r8_rv_not_recorded_before_first_non_added_event() {
        let store = Arc::new(Ops::default());
        let mut c = ctx(store.clone(), ReflectorConfig::default());
        let mut w = active(
            vec![
                Ok(WatchEvent::Added(cm("a", "9"))),
                Ok(WatchEvent::Added(cm("b", "4"))),
            ],
            "0",
            false,
        );
        let (end, events) = c.consume(&mut w, &mut None).await;
        assert!(matches!(end, StreamEnd::Closed));
        assert_eq!(events, 2);
        assert_eq!(
            c.rv.last_synced, None,
            "synthetic ADDED events are out of RV order"
        );
        let mut w = active(
            vec![
                Ok(WatchEvent::Added(cm("c", "3"))),
                Ok(WatchEvent::Modified(cm("a", "11"))),
                Ok(WatchEvent::Added(cm("d", "12"))),
            ],
            "0",
            false,
        );
        c.consume(&mut w, &mut None).await;
        assert_eq!(c.rv.last_synced.as_deref(), Some("12"));
        assert_eq!(c.shared.last_sync_rv.read().as_deref(), Some("12"));
        assert_eq!(store.0.lock().len(), 5);
    }

    #[tokio::test(start_paused = true)]
    async fn r5_bookmark_advances_rv_and_reaches_store_only_as_bookmark() {
        let store = Arc::new(Ops::default());
        let mut c = ctx(store.clone(), ReflectorConfig::default());
        let bookmark: WatchEvent<ConfigMap> = serde_json::from_value(serde_json::json!({
            "type": "BOOKMARK",
            "object": {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"resourceVersion": "77"}}
        }))
        .unwrap();
        let mut w = active(vec![Ok(bookmark)], "50", false);
        c.consume(&mut w, &mut None).await;
        assert_eq!(*store.0.lock(), vec!["bookmark 77".to_string()]);
        assert_eq!(c.rv.last_synced.as_deref(), Some("77"));
    }

    #[tokio::test(start_paused = true)]
    async fn r16_unexpected_object_is_dropped_and_watch_continues() {
        let store = Arc::new(Ops::default());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let seen2 = seen.clone();
        let config = ReflectorConfig {
            watch_error_handler: Some(Arc::new(move |e: &Error| seen2.lock().push(e.to_string()))),
            ..Default::default()
        };
        let mut c = ctx(store.clone(), config);
        let mut w = active(
            vec![
                Err(list_watch::Error::UnexpectedObject {
                    event_type: "ADDED".into(),
                    kind: "Table".into(),
                    expected: "ConfigMap".into(),
                }),
                Ok(WatchEvent::Added(cm("a", "60"))),
            ],
            "50",
            false,
        );
        let (end, events) = c.consume(&mut w, &mut None).await;
        assert!(matches!(end, StreamEnd::Closed));
        assert_eq!(events, 1);
        assert_eq!(*store.0.lock(), vec!["add a".to_string()]);
        assert_eq!(
            seen.lock().len(),
            1,
            "the watch error handler saw the dropped event"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn r22_resync_ticks_alongside_the_watch_and_asks_should_resync() {
        let store = Arc::new(Ops::default());
        let asked = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let asked2 = asked.clone();
        let config = ReflectorConfig {
            resync_period: Duration::from_secs(100),
            // Only every second tick is due.
            should_resync: Some(Arc::new(move || {
                asked2.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2 == 1
            })),
            ..Default::default()
        };
        let mut c = ctx(store.clone(), config);
        let mut resync = c.resync_timer();
        let mut w = active(vec![], "50", true);
        // The watch dies at 305 s: ticks at 100, 200, 300.
        c.consume(&mut w, &mut resync).await;
        assert_eq!(asked.load(std::sync::atomic::Ordering::Relaxed), 3);
        assert_eq!(*store.0.lock(), vec!["resync".to_string()]);
    }

    #[tokio::test(start_paused = true)]
    async fn r9_to_r15_decisions() {
        let store = Arc::new(Ops::default());
        let mut c = ctx(store, ReflectorConfig::default());
        assert!(matches!(
            c.decide(Phase::Watch, ErrorClass::Expired, false, None),
            Decision::End(Next::NewCycle { .. })
        ));
        match c.decide(
            Phase::Watch,
            ErrorClass::TooManyRequests,
            false,
            Some(Duration::from_secs(7)),
        ) {
            Decision::Rewatch(Some(d)) => assert!(d >= Duration::from_secs(7), "{d:?}"),
            _ => panic!("R13: 429 re-watches"),
        }
        assert!(matches!(
            c.decide(Phase::Watch, ErrorClass::ConnectionRefused, false, None),
            Decision::Rewatch(Some(_))
        ));
        assert!(
            matches!(
                c.decide(Phase::Watch, ErrorClass::InternalError, false, None),
                Decision::End(_)
            ),
            "R14 window 0: R15"
        );
        assert!(matches!(
            c.decide(Phase::Watch, ErrorClass::CutChunk, false, None),
            Decision::Rewatch(None)
        ));
        assert!(matches!(
            c.decide(Phase::Watch, ErrorClass::Other, false, None),
            Decision::End(_)
        ));
        let mut c = ctx(
            Arc::new(Ops::default()),
            ReflectorConfig {
                max_internal_error_retry: Duration::from_secs(5),
                ..Default::default()
            },
        );
        assert!(matches!(
            c.decide(Phase::Watch, ErrorClass::InternalError, false, None),
            Decision::Rewatch(None)
        ));
    }
}
