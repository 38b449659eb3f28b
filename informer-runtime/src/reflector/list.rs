//! The paged initial list (R2–R4, R11, R23): pages are fetched one ahead of the page being decoded.

use std::time::Duration;

use kube::Resource;
use serde::de::DeserializeOwned;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::{Instrument, debug, info};

use super::cycle::{Ctx, Next};
use super::policy::list_limit;
use super::{Error, bump};
use crate::list_watch::{self, ErrorClass, ListRequest, ListWatch, RawListPage};
use crate::store::StoreError;

/// A list that runs longer than this logs every page at info level and a step trace at the end (R23).
const LONG_LIST: Duration = Duration::from_secs(10);

/// Lists at the relist RV and replaces the store (R2). A 410 or "too large RV" marks the RV
/// unavailable and lists again at once at `""` (R11); other errors end the cycle (R15).
pub(super) async fn list_and_replace<K>(ctx: &mut Ctx<K>) -> Result<(), Next>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    loop {
        let rv = ctx.rv.relist_rv(&ctx.config.initial_list_rv);
        let limit = list_limit(&rv, ctx.config.page_size, ctx.rv.paginated_result);
        let span = tracing::info_span!(
            "list",
            rv = %rv,
            limit = ?limit,
            items = tracing::field::Empty,
            list_rv = tracing::field::Empty,
        );
        let res = tokio::select! {
            _ = ctx.cancel.cancelled() => return Err(Next::Cancelled),
            res = list_all(ctx, &rv, limit).instrument(span.clone()) => res,
        };
        match res {
            Ok(listed) => {
                span.record("items", listed.items.len());
                span.record("list_rv", listed.resource_version.as_str());
                let list_rv = listed.resource_version.clone();
                match ctx.store.replace(listed.items, list_rv.clone()) {
                    Err(StoreError::Closed) => return Err(Next::Stop),
                    Err(e) => tracing::warn!(error = %e, "store refused part of the list"),
                    Ok(()) => {}
                }
                ctx.rv.listed(list_rv.clone(), listed.paginated);
                ctx.set_rv(list_rv);
                ctx.count_list_done();
                return Ok(());
            }
            Err(e) => {
                let class = e.class();
                let retry_after = e.retry_after();
                ctx.report(Error::List(e));
                let expired = matches!(
                    class,
                    ErrorClass::Expired | ErrorClass::TooLargeResourceVersion
                );
                if expired && !ctx.rv.unavailable {
                    // R11: mark the RV unavailable and relist immediately at "".
                    ctx.rv.unavailable = true;
                    continue;
                }
                return Err(Next::NewCycle {
                    min_delay: retry_after,
                });
            }
        }
    }
}

/// A complete list.
struct Listed<K> {
    items: Vec<K>,
    resource_version: String,
    /// The server answered with more than one page (R3).
    paginated: bool,
}

/// Aborts the prefetch task when the list is dropped (cancelled), so no task outlives the reflector.
struct AbortOnDrop<T>(Option<JoinHandle<T>>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        if let Some(h) = &self.0 {
            h.abort();
        }
    }
}

/// Fetches all pages at `rv`. Page N+1 is fetched by a task while page N decodes, and at most one
/// page is in flight beyond the one being consumed (R3). A 410 on page 2 or later repeats the list
/// once, unpaged, at `rv` (R4).
async fn list_all<K>(ctx: &Ctx<K>, rv: &str, limit: Option<u32>) -> list_watch::Result<Listed<K>>
where
    K: Resource + DeserializeOwned + Send + Sync + 'static,
{
    let started = Instant::now();
    let base = ListRequest {
        resource_version: Some(rv.to_string()),
        limit,
        label_selector: ctx.config.label_selector.clone(),
        field_selector: ctx.config.field_selector.clone(),
        ..Default::default()
    };
    bump(&ctx.shared.counters.list_requests);
    let mut page: RawListPage<K> = ctx.lw.list_raw(&base).await?;
    let list_rv = page.resource_version.clone();
    let mut items: Vec<K> = Vec::new();
    let mut pages = 1u32;
    let mut steps: Vec<(u32, Duration, usize)> = Vec::new();
    loop {
        // Start the next fetch before decoding this page (pipelining, one page ahead).
        let mut next = AbortOnDrop(page.continue_token.clone().map(|token| {
            bump(&ctx.shared.counters.list_requests);
            let lw: ListWatch<K> = ctx.lw.clone();
            let req = ListRequest {
                resource_version: None,
                continue_token: Some(token),
                ..base.clone()
            };
            tokio::spawn(async move { lw.list_raw(&req).await }.in_current_span())
        }));
        let decoded = page.decode()?;
        // D8/M8: transform each object as soon as its page is decoded, so the whole list is
        // never held untransformed.
        items.extend(decoded.items.into_iter().map(|mut obj| {
            ctx.store.transform(&mut obj);
            obj
        }));
        let elapsed = started.elapsed();
        steps.push((pages, elapsed, items.len()));
        let rate = items.len() as f64 / elapsed.as_secs_f64().max(1e-3);
        if elapsed >= LONG_LIST {
            info!(
                page = pages,
                objects = items.len(),
                objects_per_s = rate as u64,
                "still listing"
            );
        } else {
            debug!(page = pages, objects = items.len(), "listed page");
        }
        let Some(handle) = next.0.take() else { break };
        let fetched = match handle.await {
            Ok(res) => res,
            // The task only fails if it panicked or the runtime shuts down.
            Err(e) => return Err(list_watch::Error::Transport(kube::Error::Service(e.into()))),
        };
        pages += 1;
        page = match fetched {
            Ok(p) => p,
            Err(e) if e.class() == ErrorClass::Expired => {
                // R4: the continue token expired: one unpaged LIST at the original RV.
                info!(
                    page = pages,
                    "continue token expired; listing once without paging"
                );
                ctx.report(Error::List(e));
                bump(&ctx.shared.counters.list_requests);
                let full = ListRequest {
                    limit: None,
                    ..base.clone()
                };
                let mut page = ctx.lw.list(&full).await?;
                for obj in &mut page.items {
                    ctx.store.transform(obj); // D8
                }
                return Ok(Listed {
                    items: page.items,
                    resource_version: page.resource_version,
                    paginated: false,
                });
            }
            Err(e) => return Err(e),
        };
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
