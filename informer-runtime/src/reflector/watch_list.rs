//! The watch-list initial state (KEP-3157, R17–R20): one stream delivers the initial objects, then live events.

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;

use kube::core::WatchEvent;
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tracing::{Instrument, info, warn};

use super::cycle::{ActiveWatch, Ctx, Next};
use super::policy::{Action, Facts, Phase, on_error};
use super::{Error, bump, transform_and_share};
use crate::key::ObjectKey;
use crate::list_watch;
use crate::store::StoreError;

/// The annotation on the bookmark that ends the initial events (R17).
pub(super) const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

/// How the watch-list phase ended.
pub(super) enum Outcome<K> {
    /// `replace` ran; keep using the same connection for live events (R17).
    Synced(ActiveWatch<K>),
    /// Do a paged LIST in this cycle (R19, R20).
    Fallback,
    /// End the phase (cancelled, store closed, or a retryable error).
    End(Next),
}

/// The objects received so far, keyed so MODIFIED/DELETED during the initial phase apply in place.
struct Collected<K> {
    items: Vec<Option<Arc<K>>>,
    index: HashMap<ObjectKey, usize>,
}

impl<K: crate::object::Meta> Collected<K> {
    fn upsert(&mut self, obj: Arc<K>) {
        let Ok(key) = ObjectKey::from_resource(&*obj) else {
            warn!("dropping an initial event without a name");
            return;
        };
        match self.index.get(&key) {
            Some(&i) => self.items[i] = Some(obj),
            None => {
                self.index.insert(key, self.items.len());
                self.items.push(Some(obj));
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

/// Runs the watch-list stream until its `initial-events-end` bookmark (R17). Expired or too-large
/// RVs retry once at `""` (R19); "unsupported" (400/422) and non-retriable errors fall back to a paged
/// LIST, as does an idle or ended stream (R20, which also disables streaming for good).
pub(super) async fn initial<K>(ctx: &mut Ctx<K>) -> Outcome<K>
where
    K: crate::object::Meta + DeserializeOwned,
{
    let started = Instant::now();
    let mut retried_at_empty = false;
    'stream: loop {
        let req = ctx.watch_request(ctx.rv.watch_list_rv(), true);
        bump(&ctx.shared.counters.watch_requests);
        let span = tracing::info_span!("watch_list", rv = %req.resource_version, items = tracing::field::Empty);
        let res = tokio::select! {
            _ = ctx.cancel.cancelled() => return Outcome::End(Next::Cancelled),
            res = ctx.lw.watch(&req).instrument(span.clone()) => res,
        };
        let mut stream = match res {
            Ok(s) => s,
            Err(e) => {
                let class = e.class();
                let retry_after = e.retry_after();
                let transport = matches!(e, list_watch::Error::Transport(_));
                ctx.report(Error::WatchStart(e));
                let facts = Facts {
                    transport,
                    retried_at_empty,
                    ..Facts::default()
                };
                match on_error(Phase::StreamStart, class, facts) {
                    Action::RetryStreamAtEmpty => {
                        ctx.rv.unavailable = true;
                        retried_at_empty = true;
                        continue 'stream;
                    }
                    Action::FallBackToList { disable_streaming } => {
                        if disable_streaming {
                            warn!(
                                "the server does not support watch-list; using paged LIST from now on"
                            );
                            ctx.streaming_disabled = true;
                        }
                        bump(&ctx.shared.counters.watch_list_fallbacks);
                        return Outcome::Fallback;
                    }
                    _ => {
                        return Outcome::End(Next::NewCycle {
                            min_delay: retry_after,
                        });
                    }
                }
            }
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
        // live events of a busy resource never extend that wait (issue 14 item 15). The server
        // may legitimately send the bookmark a few seconds late (R20), well within `idle`.
        let mut deadline = Instant::now() + idle;
        let mut live_seen = false;
        loop {
            let item = tokio::select! {
                _ = ctx.cancel.cancelled() => return Outcome::End(Next::Cancelled),
                item = tokio::time::timeout_at(deadline, stream.next()) => item,
            };
            match &item {
                Ok(Some(Ok(WatchEvent::Added(_)))) if !live_seen => {
                    deadline = Instant::now() + idle;
                }
                Ok(Some(Ok(WatchEvent::Modified(_) | WatchEvent::Deleted(_)))) => {
                    live_seen = true;
                }
                _ => {}
            }
            let ev = match item {
                Err(_) => {
                    return fallback(
                        ctx,
                        format!("no object event for {idle:?} before `{INITIAL_EVENTS_END}`"),
                    );
                }
                Ok(None) => {
                    return fallback(ctx, format!("stream ended before `{INITIAL_EVENTS_END}`"));
                }
                Ok(Some(Ok(ev))) => ev,
                Ok(Some(Err(e))) => {
                    let class = e.class();
                    let retry_after = e.retry_after();
                    let transport = matches!(e, list_watch::Error::Transport(_));
                    let facts = Facts {
                        transport,
                        retried_at_empty,
                        ..Facts::default()
                    };
                    match on_error(Phase::Stream, class, facts) {
                        Action::DropEvent => {
                            ctx.report(Error::UnexpectedObject(e)); // R16
                            continue;
                        }
                        Action::TreatAsClose => {
                            // The connection broke: the stream ended before its bookmark (R20),
                            // as a close of a plain watch is a close (R9).
                            return fallback(
                                ctx,
                                format!("stream broke before `{INITIAL_EVENTS_END}`: {e}"),
                            );
                        }
                        Action::RetryStreamAtEmpty => {
                            ctx.report(Error::Watch(e));
                            ctx.rv.unavailable = true;
                            retried_at_empty = true;
                            continue 'stream;
                        }
                        Action::FallBackToList { disable_streaming } => {
                            ctx.report(Error::Watch(e));
                            if disable_streaming {
                                ctx.streaming_disabled = true;
                            }
                            bump(&ctx.shared.counters.watch_list_fallbacks);
                            return Outcome::Fallback;
                        }
                        _ => {
                            ctx.report(Error::Watch(e));
                            return Outcome::End(Next::NewCycle {
                                min_delay: retry_after,
                            });
                        }
                    }
                }
            };
            match ev {
                WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                    if let Some(obj) = transform_and_share(&*ctx.store, &ctx.shared, o) {
                        got.upsert(obj);
                    }
                }
                WatchEvent::Deleted(o) => got.remove(&o),
                WatchEvent::Bookmark(b) => {
                    let end = b
                        .metadata
                        .annotations
                        .get(INITIAL_EVENTS_END)
                        .map(String::as_str)
                        == Some("true");
                    if !end {
                        continue;
                    }
                    let rv = b.metadata.resource_version;
                    let items: Vec<Arc<K>> = got.items.into_iter().flatten().collect();
                    let n = items.len();
                    span.record("items", n);
                    match ctx.store.replace_shared(items, rv.clone()) {
                        Err(StoreError::Closed) => return Outcome::End(Next::Stop),
                        Err(e) => warn!(error = %e, "store refused part of the watch-list"),
                        Ok(()) => {}
                    }
                    ctx.rv.listed(&req.resource_version, rv.clone(), false);
                    ctx.set_rv(rv.clone());
                    ctx.count_list_done();
                    let elapsed = started.elapsed();
                    if elapsed.as_secs() >= 10 {
                        info!(?elapsed, objects = n, rv = %rv, "slow watch-list"); // R23
                    } else {
                        info!(objects = n, rv = %rv, "watch-list synced");
                    }
                    return Outcome::Synced(ActiveWatch {
                        stream,
                        start_rv: rv,
                        timeout: req.timeout,
                    });
                }
                WatchEvent::Error(_) => {}
            }
        }
    }
}

/// R20: abandon the stream, count it, and stay on paged LIST until restarted.
fn fallback<K>(ctx: &mut Ctx<K>, reason: String) -> Outcome<K>
where
    K: crate::object::Meta + DeserializeOwned,
{
    ctx.streaming_disabled = true;
    bump(&ctx.shared.counters.watch_list_fallbacks);
    ctx.report(Error::WatchListIncomplete(reason));
    Outcome::Fallback
}
