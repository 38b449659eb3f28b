//! The watch-list initial state (KEP-3157, R17–R20): one stream delivers the initial objects, then live events.

use std::collections::HashMap;

use futures::StreamExt;

use kube::core::WatchEvent;
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tracing::Instrument;

use super::io::{ActiveWatch, Io};
use super::policy::{ErrorAnswer, Facts, Phase, on_error};
use super::{Error, bump};
use crate::key::ObjectKey;
use crate::list_watch::{self, Probed};
use crate::store::Keyed;

/// The annotation on the bookmark that ends the initial events (R17).
pub(super) const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// Whether `b` is the bookmark that ends a watch-list's initial events (R17).
pub(super) fn is_initial_events_end(b: &kube::core::watch::Bookmark) -> bool {
    b.metadata
        .annotations
        .get(INITIAL_EVENTS_END)
        .map(String::as_str)
        == Some("true")
}

/// How a watch-list stream ended; what happens next (R19's retry at `""`, R19/R20's fallback
/// to a paged LIST, R15) is the state machine's decision (`state.rs`).
pub(super) enum Streamed<K> {
    /// The initial-events-end bookmark arrived: the objects to `replace` with, and the same
    /// connection for live events, started at the bookmark's RV (R17).
    Synced {
        watch: ActiveWatch<K>,
        items: Vec<Keyed<K>>,
    },
    /// The request failed.
    StartFailed(list_watch::Error),
    /// The stream failed before its bookmark.
    Failed(list_watch::Error),
    /// The stream closed (`idle` false), or sent no initial event for the idle timeout (`idle`
    /// true), before its bookmark (R20); why.
    Incomplete { reason: String, idle: bool },
    /// The stream would have taken the cache budget past its limit (B2).
    OverBudget(crate::budget::Breach),
    /// Cancelled.
    Cancelled,
}

/// The objects received so far, keyed so MODIFIED/DELETED during the initial phase apply in place.
struct Collected<K> {
    items: Vec<Option<Keyed<K>>>,
    index: HashMap<ObjectKey, usize>,
}

impl<K: crate::object::Meta> Collected<K> {
    fn upsert(&mut self, (key, obj): Keyed<K>) {
        match self.index.get(&key) {
            Some(&i) => self.items[i] = Some((key, obj)),
            None => {
                self.index.insert(key.clone(), self.items.len());
                self.items.push(Some((key, obj)));
            }
        }
    }

    fn remove(&mut self, obj: &K) {
        if let Ok(key) = ObjectKey::from_resource(obj)
            && let Some(i) = self.index.remove(&key)
        {
            self.items[i] = None;
        }
    }
}

/// Runs a watch-list stream at `rv` until its `initial-events-end` bookmark (R17), and says how
/// it ended.
pub(super) async fn initial<K>(ctx: &Io<K>, rv: String) -> Streamed<K>
where
    K: crate::object::Meta + DeserializeOwned,
{
    let req = ctx.watch_request(rv, true);
    bump(&ctx.shared.counters.watch_requests);
    let span = tracing::info_span!("watch_list", rv = %req.resource_version, items = tracing::field::Empty);
    let res = tokio::select! {
        _ = ctx.cancel.cancelled() => return Streamed::Cancelled,
        res = ctx.lw.watch_probed(&req).instrument(span.clone()) => res,
    };
    let mut stream = match res {
        Ok(s) => s,
        Err(e) => return Streamed::StartFailed(e),
    };
    let idle = ctx.config.watch_list_idle_timeout;
    let mut got = Collected {
        items: Vec::new(),
        index: HashMap::new(),
    };
    // Only initial events count as progress: a server that sends plain progress bookmarks but
    // never the end bookmark must still be abandoned (M3). Initial events are all ADDED and
    // come before any change (KEP-3157); a MODIFIED or DELETED event is live, so the
    // snapshot is complete and from then on the bookmark itself must arrive within `idle`:
    // live events of a busy resource never extend that wait (decision record 10). The server
    // may legitimately send the bookmark a few seconds late (R20), well within `idle`.
    let mut deadline = Instant::now() + idle;
    let mut live_seen = false;
    loop {
        let item = tokio::select! {
            _ = ctx.cancel.cancelled() => return Streamed::Cancelled,
            item = tokio::time::timeout_at(deadline, stream.next()) => item,
        };
        match &item {
            Ok(Some(Ok(Probed::Event(WatchEvent::Added(_))))) if !live_seen => {
                deadline = Instant::now() + idle;
            }
            Ok(Some(Ok(Probed::Event(WatchEvent::Modified(_) | WatchEvent::Deleted(_))))) => {
                live_seen = true;
            }
            _ => {}
        }
        let ev = match item {
            Err(_) => {
                return Streamed::Incomplete {
                    reason: format!("no object event for {idle:?} before `{INITIAL_EVENTS_END}`"),
                    idle: true,
                };
            }
            Ok(None) => {
                return Streamed::Incomplete {
                    reason: format!("stream ended before `{INITIAL_EVENTS_END}`"),
                    idle: false,
                };
            }
            // A sharded reflector never streams (it lists, to read `shardInfo`); an event a
            // client shard dropped is no initial event either way.
            Ok(Some(Ok(Probed::Foreign))) => continue,
            Ok(Some(Ok(Probed::Event(ev)))) => ev,
            Ok(Some(Err(e))) => {
                let facts = Facts {
                    transport: matches!(e, list_watch::Error::Transport(_)),
                    ..Facts::default()
                };
                if on_error(Phase::Stream, e.class(), facts) == ErrorAnswer::DropEvent {
                    ctx.report(Error::UnexpectedObject(e)); // R16
                    continue;
                }
                return Streamed::Failed(e);
            }
        };
        match ev {
            WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                if let Some(finished) = ctx.finish.apply(o) {
                    got.upsert(finished);
                    // B2 (decision record 30): charged object by object, so the stream stops at the limit.
                    if let Err(breach) = ctx.charge_listing(got.index.len()) {
                        return Streamed::OverBudget(breach);
                    }
                }
            }
            WatchEvent::Deleted(o) => got.remove(&o),
            WatchEvent::Bookmark(b) => {
                if !is_initial_events_end(&b) {
                    continue;
                }
                let items: Vec<Keyed<K>> = got.items.into_iter().flatten().collect();
                span.record("items", items.len());
                return Streamed::Synced {
                    watch: ActiveWatch {
                        stream,
                        start_rv: b.metadata.resource_version,
                        timeout: req.timeout,
                    },
                    items,
                };
            }
            WatchEvent::Error(_) => {}
        }
    }
}
