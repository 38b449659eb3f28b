//! The paged list (R2-R4, R23, M15): pages are fetched and decoded one ahead of the page
//! being consumed. It returns what it listed, or how it failed; what happens next (R4's
//! unpaged retry, R11, R15) is the state machine's decision (`state.rs`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{Instrument, debug, info};

use super::io::Io;
use super::{Error, Shared, bump};
use crate::budget::ListCharge;
use crate::list_watch::{self, ListRequest, ListWatch};
use crate::shard::{Shard, ShardMode};
use crate::store::Keyed;

/// A list that runs longer than this logs every page at info level and a step trace at the end (R23).
const LONG_LIST: Duration = Duration::from_secs(10);

/// A complete list: every item transformed, keyed and shared (D8, M8).
pub(super) struct Listed<K> {
    pub(super) items: Vec<Keyed<K>>,
    pub(super) resource_version: String,
    /// The server answered with more than one page (R3).
    pub(super) paginated: bool,
}

/// A list that failed, and on which page (1-based; a later page's 410 is R4's).
pub(super) struct ListFailed {
    pub(super) error: Error,
    pub(super) page: u32,
}

/// Aborts a page task when the list is dropped (cancelled), so no task outlives the reflector.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// One LIST page, fetched and then decoded on its own task.
struct PageTask<K> {
    /// The page's resourceVersion and continue token, sent as soon as its body has arrived and
    /// before it is decoded, so the next page's fetch can start. Dropped unsent if the fetch fails.
    meta: oneshot::Receiver<(String, Option<String>)>,
    /// The page's objects, transformed (D8), keyed and shared through the store (M8).
    items: AbortOnDrop<list_watch::Result<Vec<Keyed<K>>>>,
}

impl<K> PageTask<K>
where
    K: crate::object::Meta + DeserializeOwned,
{
    fn spawn(ctx: &Io<K>, req: ListRequest, charge: Option<Arc<ListCharge>>) -> Self {
        bump(&ctx.shared.counters.list_requests);
        let lw: ListWatch<K> = ctx.lw.clone();
        let finish = Arc::clone(&ctx.finish);
        let shared = Arc::clone(&ctx.shared);
        let shard = ctx.config.shard.clone();
        let (tx, meta) = oneshot::channel();
        let task = async move {
            // R3: the items are decoded as the body arrives, on the decode pool (T6) or
            // inline, so an unpaged answer (kube-apiserver's watch cache ignores `limit`)
            // is never held whole. The next page's fetch starts once this body has ended.
            let mut list = lw.list_streamed(&req).await?;
            if let Some(shard) = shard {
                let sent = req.shard_selector;
                list = list.shard_by(move |echoed| shard_filter(&shared, sent, shard, echoed));
            }
            // T6: the transform runs in the reflector's runtime and span on a pool thread;
            // there the memory an update frees is reused by the next decode (the tokio
            // blocking pool's threads, which never allocate again, kept it: 1.8x
            // kube-runtime's RSS after 20 000 updates).
            let on_body = move |rv: &str, token: Option<&str>| {
                // The receiver is gone only if the list was abandoned.
                let _ = tx.send((rv.to_string(), token.map(str::to_string)));
            };
            let pool = lw.pool().clone();
            // B2 (decision record 30): each object is charged as it is decoded; past the
            // budget it is dropped at once, so an unpaged answer is never held past it.
            let keep = move |obj| {
                let finished = finish.apply(obj)?;
                charge
                    .as_ref()
                    .is_none_or(|c| c.admit())
                    .then_some(finished)
            };
            Ok(list.decode_on(&pool, keep, on_body).await?.items)
        };
        PageTask {
            meta,
            items: AbortOnDrop(tokio::spawn(task.in_current_span())),
        }
    }

    /// Waits for the page's objects (or the error that ended its fetch or decode).
    async fn items(mut self) -> list_watch::Result<Vec<Keyed<K>>> {
        match (&mut self.items.0).await {
            Ok(res) => res,
            // The task only fails if it panicked or the runtime shuts down.
            Err(e) => Err(list_watch::Error::Transport(kube::Error::Service(e.into()))),
        }
    }
}

/// KEP-5866: an answer without `shardInfo` is the whole collection: it is filtered here, before
/// the decode of each object outside the shard. S4: so is an answer whose echoed selector is not
/// the one we `sent` (another server behind the same address, or one that applied something
/// else): only an exact echo is trusted, page by page. kube-apiserver echoes the parsed selector
/// re-rendered (`k8s.io/apimachinery/pkg/sharding`, `shardSelector.String`) in the canonical
/// form `Shard::selector` sends, so a server that applied it echoes it verbatim. The echo is
/// read from the list's metadata before its first item (a body with its metadata after its
/// items is read whole first), so it decides the filter before any item is decoded.
fn shard_filter(
    shared: &Shared,
    sent: Option<String>,
    shard: Shard,
    echoed: Option<&str>,
) -> Option<Shard> {
    if echoed == sent.as_deref() {
        shared.set_shard_mode(ShardMode::Server);
        return None;
    }
    if let Some(echoed) = echoed {
        tracing::warn!(
            ?sent,
            %echoed,
            "the server echoed another shard selector; filtering on the client (S4)"
        );
    }
    shared.set_shard_mode(ShardMode::Client);
    Some(shard)
}

/// Fetches all pages at `rv`. Each page is fetched and decoded on its own task; the next page's
/// fetch starts as soon as this page's body (and so its continue token) has arrived, so page N+1
/// downloads and decodes while page N decodes, on another core, and at most one page is in
/// flight beyond the one being consumed (R3). A 410 on page 2 or later repeats the list once,
/// unpaged, at `rv` (R4, decided by the state machine). A repeated `continue` token, or more
/// than `max_list_pages` pages, abandons the list (M15).
pub(super) async fn list_all<K>(
    ctx: &Io<K>,
    rv: &str,
    limit: Option<u32>,
) -> Result<Listed<K>, ListFailed>
where
    K: crate::object::Meta + DeserializeOwned,
{
    let started = Instant::now();
    let base = ListRequest {
        resource_version: Some(rv.to_string()),
        limit,
        label_selector: ctx.config.label_selector.clone(),
        field_selector: ctx.config.field_selector.clone(),
        shard_selector: ctx.config.shard.as_ref().map(|s| s.selector()),
        ..Default::default()
    };
    let charge = ctx.list_charge();
    let mut current = PageTask::spawn(ctx, base.clone(), charge.clone());
    let mut list_rv = String::new();
    let mut items: Vec<Keyed<K>> = Vec::new();
    let mut pages = 0u32;
    let mut steps: Vec<(u32, Duration, usize)> = Vec::new();
    // M15: every token this list was given; a repeat means the server pages in a circle.
    let mut tokens: HashSet<String> = HashSet::new();
    let max_pages = ctx.config.max_list_pages;
    loop {
        pages += 1;
        // Once this page has arrived, start fetching the next one (pipelining, one page ahead).
        let next = match (&mut current.meta).await {
            Ok((page_rv, token)) => {
                if pages == 1 {
                    list_rv = page_rv;
                }
                match token {
                    Some(token) if !tokens.insert(token.clone()) => {
                        return Err(endless(pages, "the server repeated a continue token"));
                    }
                    Some(_) if max_pages != 0 && pages >= max_pages => {
                        let reason = "the server asks for more than max_list_pages pages";
                        return Err(endless(pages, reason));
                    }
                    Some(token) => {
                        let req = ListRequest {
                            resource_version: None,
                            continue_token: Some(token),
                            ..base.clone()
                        };
                        Some(PageTask::spawn(ctx, req, charge.clone()))
                    }
                    None => None,
                }
            }
            // The fetch failed: `items()` returns its error.
            Err(_) => None,
        };
        match current.items().await {
            Ok(page) => {
                items.extend(page);
                // B2 (decision record 30): past the budget, the pages read so far are dropped.
                if let Some(breach) = charge.as_ref().and_then(|c| c.breach()) {
                    return Err(ListFailed {
                        error: Error::OverBudget(breach),
                        page: 1,
                    });
                }
            }
            Err(e) => {
                return Err(ListFailed {
                    error: Error::List(e),
                    page: pages,
                });
            }
        }
        let elapsed = started.elapsed();
        steps.push((pages, elapsed, items.len()));
        if elapsed >= LONG_LIST {
            let rate = items.len() as f64 / elapsed.as_secs_f64().max(1e-3);
            info!(
                page = pages,
                objects = items.len(),
                objects_per_s = rate as u64,
                "still listing"
            );
        } else {
            debug!(page = pages, objects = items.len(), "listed page");
        }
        match next {
            Some(next) => current = next,
            None => break,
        }
    }
    let elapsed = started.elapsed();
    if elapsed >= LONG_LIST {
        // R23: a trace of a slow list.
        info!(?elapsed, pages, objects = items.len(), ?steps, "slow list");
    }
    Ok(Listed {
        items,
        resource_version: list_rv,
        paginated: pages > 1,
    })
}

/// M15: the error that abandons an endless list; the pages read so far are dropped with it.
/// It is an error of the list as a whole, not of a later page (so never R4's).
fn endless(pages: u32, reason: &str) -> ListFailed {
    ListFailed {
        error: Error::EndlessList {
            pages,
            reason: reason.to_string(),
        },
        page: 1,
    }
}
