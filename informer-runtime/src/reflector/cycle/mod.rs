//! The driver of the reflector's state machine (`state.rs`): it performs each [`Command`] the
//! pure `step` returns (LIST and replace, watch-list stream, WATCH, backoff) and feeds back the
//! [`Event`] it observed. It makes no decision of its own: which request comes next, at which
//! RV, after which delay, is `step`'s and the error table's (R1-R23). What it does do is the I/O
//! around a decision: applying watch events to the store (R5, R8, R16), the resync timer (R22),
//! the dead-connection timer (R7), logging and counting.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;

use kube::core::WatchEvent;
use serde::de::DeserializeOwned;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, debug, info, warn};

mod watch;

use super::io::{ActiveWatch, Io};
use super::policy::{
    DEAD_WATCH_GRACE, ErrorAnswer, EventRvGate, Facts, Phase, on_error, retry_after_floor,
};
use super::state::{Command, Event, Failure, Machine, Note, Settings, Wait, WatchEnd};
use super::watch_list::is_initial_events_end;
use super::{Backoff, Error, Finish, InitialListStrategy, Reflector, bump, list, watch_list};
use crate::list_watch::{self, Probed};
use crate::shard::ShardMode;
use crate::store::{Keyed, StoreError};

/// The driver: the reflector's I/O handles and what it keeps between actions. The decisions'
/// state is the [`Machine`]'s.
struct Driver<K> {
    io: Io<K>,
    backoff: Backoff,
    listed_once: bool,
    /// Whether the server has sent a periodic bookmark (not only an initial-events-end one): from
    /// then on a watch silent for `max_bookmark_gap` is dead (R7).
    periodic_bookmarks: bool,
    /// The resync timer (R22): restarted with each cycle's first watch, kept across re-watches.
    resync: Option<Interval>,
}

pub(super) async fn run<K>(r: Reflector<K>, cancel: CancellationToken)
where
    K: crate::object::Meta + DeserializeOwned,
{
    let settings = Settings {
        // A sharded reflector lists: only a LIST answer says whether the server applied the
        // shard selector (KEP-5866's `shardInfo`).
        strategy: if r.config.shard.is_some() {
            InitialListStrategy::ListWatch
        } else {
            r.config.strategy
        },
        initial_list_rv: r.config.initial_list_rv.clone(),
        page_size: r.config.page_size,
    };
    let mut machine = Machine::new(settings, r.config.max_internal_error_retry);
    let mut ctx = Driver::new(r, cancel);
    // The watch-list connection between its bookmark and `ConsumeStream` (R17).
    let mut synced = None;
    let mut event = ctx.cycle_due();
    loop {
        let (next, action, note) = machine.step(event, Instant::now());
        machine = next;
        if let Some(note) = note {
            ctx.note(note);
        }
        event = match action {
            Command::Stop => break,
            Command::Backoff { floor } => ctx.back_off(floor).await,
            Command::List { rv, limit } => ctx.list(rv, limit).await,
            Command::Stream { rv } => {
                let (event, watch) = ctx.stream(rv).await;
                synced = watch;
                event
            }
            Command::Watch { rv, wait, rewatch } => ctx.watch(rv, wait, rewatch).await,
            Command::ConsumeStream { rv } => ctx.consume_stream(synced.take(), rv).await,
        };
        if event == Event::StoreClosed {
            info!("store closed; reflector stops");
        }
    }
    debug!("reflector stopped");
}

impl<K> Driver<K>
where
    K: crate::object::Meta + DeserializeOwned,
{
    fn new(r: Reflector<K>, cancel: CancellationToken) -> Self {
        Driver {
            backoff: Backoff::new(r.config.backoff.clone()),
            io: Io {
                // Built on the reflector's task, in its span (T6).
                finish: Arc::new(Finish::capture(r.store.clone(), r.handle.shared.clone())),
                lw: r.lw,
                store: r.store,
                account: (r.config.budget.as_ref()).map(|b| Arc::new(b.account(&r.config.name))),
                config: r.config,
                shared: r.handle.shared,
                cancel,
            },
            listed_once: false,
            periodic_bookmarks: false,
            resync: None,
        }
    }

    /// A cycle starts (counted).
    fn cycle_due(&self) -> Event {
        bump(&self.io.shared.counters.cycles);
        Event::CycleDue
    }

    /// Reports what `step` noted.
    fn note(&self, note: Note) {
        match note {
            Note::FellBack { disabled } => {
                bump(&self.io.shared.counters.watch_list_fallbacks);
                if disabled {
                    warn!("watch-list abandoned; using paged LIST until the informer restarts");
                }
            }
            Note::VeryShortWatch(elapsed) => self.io.report(Error::VeryShortWatch(elapsed)),
        }
    }

    /// One backoff delay, at least the server's `Retry-After` capped at the backoff maximum
    /// (R1, R13).
    fn backoff_delay(&mut self, floor: Option<Duration>) -> Duration {
        let floor = retry_after_floor(floor, self.io.config.backoff.cap);
        self.backoff.next_delay().max(floor)
    }

    /// R1: every cycle after the first starts after one backoff delay.
    async fn back_off(&mut self, floor: Option<Duration>) -> Event {
        let delay = self.backoff_delay(floor);
        debug!(?delay, "backing off before the next list+watch cycle");
        if self.io.sleep(delay).await {
            self.cycle_due()
        } else {
            Event::Cancelled
        }
    }

    /// Publishes `rv` as the last synced RV (R23).
    fn set_rv(&self, rv: &str) {
        *self.io.shared.last_sync_rv.write() = Some(rv.to_string());
    }

    /// Replaces the store with a complete list at `rv` (D5) and publishes the RV; the first
    /// complete list is the initial list, the rest are relists.
    fn replace(&mut self, items: Vec<Keyed<K>>, rv: &str, what: &str) -> Result<(), StoreError> {
        self.io.charge_replaced(items.len());
        match self.io.store.replace_shared(items, rv.to_string()) {
            Err(StoreError::Closed) => return Err(StoreError::Closed),
            Err(e) => warn!(error = %e, "store refused part of the {what}"),
            Ok(()) => {}
        }
        self.set_rv(rv);
        if self.listed_once {
            bump(&self.io.shared.counters.relists);
        }
        self.listed_once = true;
        Ok(())
    }

    /// [`Command::List`]: the whole list at `rv`, then `replace` (R2-R4).
    async fn list(&mut self, rv: String, limit: Option<u32>) -> Event {
        let span = tracing::info_span!(
            "list",
            rv = %rv,
            limit = ?limit,
            items = tracing::field::Empty,
            list_rv = tracing::field::Empty,
        );
        let res = tokio::select! {
            _ = self.io.cancel.cancelled() => return Event::Cancelled,
            res = list::list_all(&self.io, &rv, limit).instrument(span.clone()) => res,
        };
        match res {
            Ok(listed) => {
                span.record("items", listed.items.len());
                span.record("list_rv", listed.resource_version.as_str());
                if self
                    .replace(listed.items, &listed.resource_version, "list")
                    .is_err()
                {
                    return Event::StoreClosed;
                }
                Event::Listed {
                    rv: listed.resource_version,
                    paginated: listed.paginated,
                }
            }
            Err(failed) => {
                self.io.abandon_listing();
                let failure = match &failed.error {
                    Error::List(e) => Failure::of(e),
                    // B2 (decision record 30): a new cycle after backoff.
                    Error::OverBudget(_) => {
                        self.io.report(failed.error);
                        return Event::OverBudget;
                    }
                    _ => Failure::other(),
                };
                self.io.report(failed.error);
                Event::ListFailed {
                    failure,
                    page: failed.page,
                }
            }
        }
    }

    /// [`Command::Stream`]: a watch-list stream at `rv` up to its bookmark (R17-R20); the
    /// connection, once synced, for [`Command::ConsumeStream`].
    async fn stream(&mut self, rv: String) -> (Event, Option<ActiveWatch<K>>) {
        let started = Instant::now();
        let streamed = watch_list::initial(&self.io, rv).await;
        if !matches!(streamed, watch_list::Streamed::Synced { .. }) {
            self.io.abandon_listing();
        }
        match streamed {
            watch_list::Streamed::Synced { watch, items } => {
                let rv = watch.start_rv.clone();
                let n = items.len();
                if self.replace(items, &rv, "watch-list").is_err() {
                    return (Event::StoreClosed, None);
                }
                let elapsed = started.elapsed();
                if elapsed.as_secs() >= 10 {
                    info!(?elapsed, objects = n, rv = %rv, "slow watch-list"); // R23
                } else {
                    info!(objects = n, rv = %rv, "watch-list synced");
                }
                (Event::StreamSynced { rv }, Some(watch))
            }
            watch_list::Streamed::StartFailed(e) => {
                let failure = Failure::of(&e);
                self.io.report(Error::WatchStart(e));
                (Event::StartFailed(failure), None)
            }
            watch_list::Streamed::Failed(e) => {
                let failure = Failure::of(&e);
                self.io.report(Error::Watch(e));
                (Event::StreamFailed(failure), None)
            }
            watch_list::Streamed::Incomplete { reason, idle } => {
                self.io.report(Error::WatchListIncomplete(reason));
                (Event::StreamIncomplete { idle }, None)
            }
            watch_list::Streamed::OverBudget(breach) => {
                // B2: a new cycle after backoff, streaming again.
                self.io.report(Error::OverBudget(breach));
                (Event::OverBudget, None)
            }
            watch_list::Streamed::Cancelled => (Event::Cancelled, None),
        }
    }

    /// [`Command::ConsumeStream`]: live events on the watch-list connection (R17).
    async fn consume_stream(&mut self, synced: Option<ActiveWatch<K>>, rv: String) -> Event {
        match synced {
            Some(w) => {
                self.resync = self.resync_timer();
                self.run_watch(w).await
            }
            // Only if the driver lost the connection: a plain WATCH from the same RV.
            None => self.watch(rv, Wait::Now, false).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::watch::Consumed;
    use super::*;
    use crate::key::ObjectKey;
    use crate::list_watch::ListWatch;
    use crate::reflector::ReflectorConfig;
    use crate::store::ReflectorStore;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;
    use parking_lot::Mutex;

    #[derive(Default)]
    struct Ops(Mutex<Vec<String>>);

    impl ReflectorStore<ConfigMap> for Ops {
        fn add_shared(&self, _: ObjectKey, o: Arc<ConfigMap>) -> Result<(), StoreError> {
            let name = o.metadata.name.clone().unwrap_or_default();
            self.0.lock().push(format!("add {name}"));
            Ok(())
        }
        fn update_shared(&self, _: ObjectKey, o: Arc<ConfigMap>) -> Result<(), StoreError> {
            let name = o.metadata.name.clone().unwrap_or_default();
            self.0.lock().push(format!("update {name}"));
            Ok(())
        }
        fn delete(&self, _: ObjectKey, o: ConfigMap) -> Result<(), StoreError> {
            self.0
                .lock()
                .push(format!("delete {}", o.metadata.name.unwrap_or_default()));
            Ok(())
        }
        fn replace_shared(
            &self,
            items: Vec<Keyed<ConfigMap>>,
            rv: String,
        ) -> Result<(), StoreError> {
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
    fn ctx(store: Arc<Ops>, config: ReflectorConfig) -> Driver<ConfigMap> {
        let kc = kube::Config::new(http::Uri::from_static("http://127.0.0.1:9"));
        let client = kube::Client::try_from(kc).unwrap();
        let lw = ListWatch::new(kube::Api::<ConfigMap>::all(client));
        let r = Reflector::new(lw, store, config);
        Driver::new(r, CancellationToken::new())
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
        let s = futures::stream::iter(events.into_iter().map(|e| e.map(Probed::Event)));
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
        let (end, events, _) = c.consume(&mut w, &mut None).await;
        assert!(
            matches!(end, Consumed::Ended(WatchEnd::Closed)),
            "handled like a close (R9)"
        );
        assert_eq!(events, 0);
        assert_eq!(started.elapsed(), Duration::from_secs(305));
        assert_eq!(
            c.io.shared
                .counters
                .errors
                .load(std::sync::atomic::Ordering::Relaxed),
            1
        );
    }

    /// R7: an event the client shard dropped is traffic: it restarts the
    /// dead-connection timer and counts as an event (R10).
    #[tokio::test(start_paused = true)]
    async fn r7_r10_an_event_dropped_by_the_client_shard_keeps_the_watch_alive() {
        let store = Arc::new(Ops::default());
        let mut c = ctx(store.clone(), ReflectorConfig::default());
        let foreign = futures::stream::once(async {
            tokio::time::sleep(Duration::from_secs(200)).await;
            Ok(Probed::Foreign)
        });
        let mut w = ActiveWatch {
            stream: foreign.chain(futures::stream::pending()).boxed(),
            start_rv: "10".into(),
            timeout: Duration::from_secs(300),
        };
        let started = Instant::now();
        let (end, events, _) = c.consume(&mut w, &mut None).await;
        assert!(matches!(end, Consumed::Ended(WatchEnd::Closed)));
        assert_eq!(events, 1, "the dropped event counts (R10)");
        assert_eq!(
            started.elapsed(),
            Duration::from_secs(505),
            "R7 from the dropped event"
        );
        assert!(store.0.lock().is_empty(), "nothing reached the store");
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
        let (end, events, last_rv) = c.consume(&mut w, &mut None).await;
        assert!(matches!(end, Consumed::Ended(WatchEnd::Closed)));
        assert_eq!(events, 2);
        assert_eq!(last_rv, None, "synthetic ADDED events are out of RV order");
        assert_eq!(*c.io.shared.last_sync_rv.read(), None);
        let mut w = active(
            vec![
                Ok(WatchEvent::Added(cm("c", "3"))),
                Ok(WatchEvent::Modified(cm("a", "11"))),
                Ok(WatchEvent::Added(cm("d", "12"))),
            ],
            "0",
            false,
        );
        let (_, _, last_rv) = c.consume(&mut w, &mut None).await;
        assert_eq!(last_rv.as_deref(), Some("12"));
        assert_eq!(c.io.shared.last_sync_rv.read().as_deref(), Some("12"));
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
        let (_, _, last_rv) = c.consume(&mut w, &mut None).await;
        assert_eq!(*store.0.lock(), vec!["bookmark 77".to_string()]);
        assert_eq!(last_rv.as_deref(), Some("77"));
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
        let (end, events, _) = c.consume(&mut w, &mut None).await;
        assert!(matches!(end, Consumed::Ended(WatchEnd::Closed)));
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
}
