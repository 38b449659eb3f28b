//! LIST pages: decoded (`ListPage`) and raw (`RawListPage`, whose items are decoded while the
//! next page is fetched, R3), and the item pipeline between them (`PageItems`): walk, filter,
//! decode, one item at a time, written once for every wire format (`format/`).

use std::marker::PhantomData;
use std::sync::Arc;

use bytes::Bytes;
use serde::de::DeserializeOwned;

use super::format::{Format, ItemWalk, Json, Protobuf, WireFormat, item_outside_list};
use super::{DecodePool, Error, Result};
use crate::shard::Shard;

/// One decoded LIST page.
#[derive(Debug, Clone)]
pub struct ListPage<K> {
    /// The page's objects.
    pub items: Vec<K>,
    /// `metadata.resourceVersion` of the list.
    pub resource_version: String,
    /// `metadata.continue`, if more pages follow.
    pub continue_token: Option<String>,
}

/// A LIST response whose body has arrived but whose items are not decoded yet, so the next page can
/// be fetched while this one decodes (R3). Cloning it shares the body.
#[derive(Clone)]
pub struct RawListPage<K> {
    pub(super) body: Bytes,
    /// The format the body came in.
    pub(super) format: Format,
    /// The list kinds this page may have (M14).
    pub(super) list_kinds: Arc<[String]>,
    /// `metadata.resourceVersion` of the list.
    pub resource_version: String,
    /// `metadata.continue`, if more pages follow.
    pub continue_token: Option<String>,
    /// `metadata.shardInfo.selector`: the shard selector the server applied (KEP-5866); `None`
    /// when it sent everything.
    pub shard_info: Option<String>,
    /// Items outside this shard are skipped before their decode (see [`Self::client_shard`]).
    pub(super) client_shard: Option<Shard>,
    pub(super) _k: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for RawListPage<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawListPage")
            .field("bytes", &self.body.len())
            .field("resource_version", &self.resource_version)
            .field("continue_token", &self.continue_token)
            .field("shard_info", &self.shard_info)
            .finish_non_exhaustive()
    }
}

impl<K> RawListPage<K> {
    /// The page `body` in `format` holds, its head read (M14: a `Status` or a list of another
    /// kind is the error it stands for).
    pub(super) fn read(body: Bytes, format: Format, list_kinds: Arc<[String]>) -> Result<Self> {
        let head = match &format {
            Format::Json(f) => f.list_head(&body, &list_kinds),
            Format::Protobuf(f) => f.list_head(&body, &list_kinds),
        }?;
        Ok(RawListPage {
            body,
            format,
            list_kinds,
            resource_version: head.resource_version,
            continue_token: head.continue_token,
            shard_info: head.shard_info,
            client_shard: None,
            _k: PhantomData,
        })
    }

    /// Filters the items on the client (KEP-5866 on a server without the feature): the decode
    /// reads each item's UID or namespace first and skips an item outside `shard` without
    /// decoding the rest of it.
    pub fn client_shard(mut self, shard: Option<Shard>) -> Self {
        self.client_shard = shard;
        self
    }
}

impl<K: DeserializeOwned> RawListPage<K> {
    /// Decodes the items (the CPU-heavy half of a LIST).
    pub fn decode(self) -> Result<ListPage<K>> {
        let mut items = Vec::new();
        let (resource_version, continue_token) = self.decode_each(|obj| items.push(obj))?;
        Ok(ListPage {
            items,
            resource_version,
            continue_token,
        })
    }

    /// Decodes the items one at a time, handing each to `each` before the next is decoded, so
    /// the page never exists twice (decoded and converted); returns the resourceVersion and
    /// continue token. On a decode error the items already handed out stay with `each`.
    ///
    /// A body without `items`, or whose `kind` is not the expected list kind, is an error
    /// (M14), never an empty list; `items: null` is an empty list.
    pub fn decode_each(self, mut each: impl FnMut(K)) -> Result<(String, Option<String>)> {
        let mut items = self.items();
        for obj in &mut items {
            each(obj?);
        }
        items.finish()?;
        Ok((self.resource_version, self.continue_token))
    }

    /// The page's objects, decoded one per `next` (the item pipeline): the format's walk finds
    /// each item's bytes without interpreting them, a client shard drops foreign items by a
    /// probed field before their decode (KEP-5866), and the decode builds `K` (JSON with
    /// exactly sized `Vec`s, M8, unless turned off). Nothing is decoded ahead of the caller,
    /// so a consumer that yields every few hundred objects bounds both memory and the time it
    /// holds a worker, whatever the body's size (R3). After the last item,
    /// [`PageItems::finish`] checks the body was a list of the expected kind (M14).
    pub fn items(&self) -> PageItems<'_, K> {
        let shard = self.client_shard.as_ref();
        let pipeline = match &self.format {
            Format::Json(f) => {
                Pipelines::Json(Pipeline::new(f, &self.body, &self.list_kinds, shard))
            }
            Format::Protobuf(f) => {
                Pipelines::Protobuf(Pipeline::new(f, &self.body, &self.list_kinds, shard))
            }
        };
        PageItems {
            pipeline,
            list_kinds: &self.list_kinds,
            _k: PhantomData,
        }
    }
}

impl<K: DeserializeOwned + Send + 'static> RawListPage<K> {
    /// Decodes the items on `pool` (T6) and hands each decoded object to `map` on the thread
    /// that decoded it; returns what `map` kept, in wire order.
    ///
    /// The walk (the format's item boundaries) runs first, as one job; then each run of items
    /// is filtered and decoded as a job of its own, under its own interning scope (P3), and the
    /// results are taken in wire order once the last run ends. No job waits on a pool thread for another, so none is
    /// ever started inside another on one thread's stack. The error is the one the sequential
    /// pipeline ([`items`](Self::items)) reports: the first in wire order, whether of the walk,
    /// a shard probe or a decode, and the body's own checks only once every item decoded.
    /// Dropping the future cancels the runs not yet started (T6). Inline, this is the
    /// sequential pipeline. The reflector decodes a LIST body this way when it cannot decode it
    /// as it arrives (`streamed.rs`: a body of an unusual shape); it is public so a benchmark can
    /// time the same decode on pools of different sizes.
    pub async fn decode_on<T, M>(self, pool: &DecodePool, map: M) -> Result<Vec<T>>
    where
        T: Send + 'static,
        M: Fn(K) -> Option<T> + Send + Sync + 'static,
    {
        match self.format.clone() {
            Format::Json(f) => decode_runs(f, self, pool, map).await,
            Format::Protobuf(f) => decode_runs(f, self, pool, map).await,
        }
    }
}

/// Items per run of a parallel page decode: enough that a run's scheduling costs little
/// beside its decodes, few enough that both threads get several runs of a 500-item page.
const RUN: usize = 32;

/// The item boundaries of a LIST body in runs of [`RUN`], with the error the walk stopped at
/// and the body's own checks after its last item (`ItemWalk::finish`).
struct Walked<H> {
    runs: Vec<Vec<(std::ops::Range<usize>, H)>>,
    items: usize,
    walk_error: Option<Error>,
    finished: Result<()>,
}

/// Walks `page`'s body in format `F`.
fn walk_runs<F: WireFormat, K>(format: &F, page: &RawListPage<K>) -> Walked<F::Hint> {
    let mut walk = format.walk(&page.body);
    let mut runs = Vec::new();
    let mut run = Vec::with_capacity(RUN);
    let mut items = 0;
    let mut walk_error = None;
    while let Some(item) = walk.next_item() {
        match item {
            Ok(item) => {
                items += 1;
                run.push(item);
                if run.len() == RUN {
                    runs.push(std::mem::replace(&mut run, Vec::with_capacity(RUN)));
                }
            }
            Err(e) => {
                walk_error = Some(e);
                break;
            }
        }
    }
    if !run.is_empty() {
        runs.push(run);
    }
    let finished = match walk_error {
        Some(_) => Ok(()),
        None => walk.finish(&page.list_kinds),
    };
    Walked {
        runs,
        items,
        walk_error,
        finished,
    }
}

/// [`RawListPage::decode_on`] in format `F`: the walk as one job, then a job per run.
async fn decode_runs<F, K, T, M>(
    format: F,
    page: RawListPage<K>,
    pool: &DecodePool,
    map: M,
) -> Result<Vec<T>>
where
    F: WireFormat,
    K: DeserializeOwned + Send + 'static,
    T: Send + 'static,
    M: Fn(K) -> Option<T> + Send + Sync + 'static,
{
    let page = Arc::new(page);
    let walked = {
        let (format, page) = (format.clone(), Arc::clone(&page));
        pool.run(move || Ok(walk_runs(&format, &page))).await?
    };
    let map = Arc::new(map);
    // T6: every run is a job of its own, all started at once; the caller wakes when the last
    // ends. Dropping the wait (the caller stopped waiting) cancels those not started.
    let jobs: Vec<_> = walked
        .runs
        .into_iter()
        .map(|run| {
            let (format, page, map) = (format.clone(), Arc::clone(&page), Arc::clone(&map));
            move || {
                let shard = page.client_shard.as_ref();
                Ok(decode_run(
                    &format,
                    &page.body,
                    run,
                    shard,
                    &*map,
                    &page.list_kinds,
                ))
            }
        })
        .collect();
    let mut all = Vec::with_capacity(walked.items);
    for (out, error) in pool.submit_all(jobs).wait().await? {
        if let Some(e) = error {
            return Err(e);
        }
        all.extend(out);
    }
    if let Some(e) = walked.walk_error {
        return Err(e);
    }
    walked.finished?;
    Ok(all)
}

/// Decodes the items at `run`'s ranges of `body` under one interning scope (P3), skipping those
/// outside `shard`; returns what `map` kept and the error the run stopped at. One run of a
/// parallel page decode (`decode_runs`) or of a body decoded as it arrives (`streamed.rs`).
pub(super) fn decode_run<F, K, T>(
    format: &F,
    body: &[u8],
    run: Vec<(std::ops::Range<usize>, F::Hint)>,
    shard: Option<&Shard>,
    map: &(dyn Fn(K) -> Option<T> + Send + Sync),
    list_kinds: &[String],
) -> (Vec<T>, Option<Error>)
where
    F: WireFormat,
    K: DeserializeOwned,
{
    let _scope = crate::projection::InternScope::enter();
    let mut out = Vec::with_capacity(run.len());
    for (range, hint) in run {
        let Some(item) = body.get(range) else {
            return (out, Some(item_outside_list(list_kinds)));
        };
        if let Some(shard) = shard {
            match format.admits(shard, item) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => return (out, Some(e)),
            }
        }
        match format.decode::<K>(item, hint) {
            Ok(obj) => out.extend(map(obj)),
            Err(e) => return (out, Some(e)),
        }
    }
    (out, None)
}

/// The item pipeline of one body in one format: walk, filter, decode.
pub(super) struct Pipeline<'a, F: WireFormat> {
    format: &'a F,
    body: &'a [u8],
    list_kinds: &'a [String],
    walk: F::Walk<'a>,
    shard: Option<&'a Shard>,
    skipped: usize,
    done: bool,
}

impl<'a, F: WireFormat> Pipeline<'a, F> {
    pub(super) fn new(
        format: &'a F,
        body: &'a [u8],
        list_kinds: &'a [String],
        shard: Option<&'a Shard>,
    ) -> Self {
        Pipeline {
            format,
            body,
            list_kinds,
            walk: format.walk(body),
            shard,
            skipped: 0,
            done: false,
        }
    }

    /// The next item that passes the filter, with its decode hint: its bytes are not
    /// interpreted beyond the shard probe. `None` at the end of the walk.
    pub(super) fn next_raw(&mut self) -> Option<Result<(&'a [u8], F::Hint)>> {
        loop {
            if self.done {
                return None;
            }
            let (range, hint) = match self.walk.next_item() {
                None => {
                    self.done = true;
                    return None;
                }
                Some(Err(e)) => return Some(Err(self.fail(e))),
                Some(Ok(item)) => item,
            };
            let Some(item) = self.body.get(range) else {
                return Some(Err(self.fail(item_outside_list(self.list_kinds))));
            };
            // The filter stage: an item outside the client shard is never decoded.
            if let Some(shard) = self.shard {
                match self.format.admits(shard, item) {
                    Ok(true) => {}
                    Ok(false) => {
                        self.skipped += 1;
                        continue;
                    }
                    Err(e) => return Some(Err(self.fail(e))),
                }
            }
            return Some(Ok((item, hint)));
        }
    }

    /// The next item, decoded.
    fn next_decoded<K: DeserializeOwned>(&mut self) -> Option<Result<K>> {
        let decoded = match self.next_raw()? {
            Ok((item, hint)) => self.format.decode::<K>(item, hint),
            Err(e) => Err(e),
        };
        Some(decoded.map_err(|e| self.fail(e)))
    }

    /// Ends the walk at an error: nothing after it is read.
    fn fail(&mut self, e: Error) -> Error {
        self.done = true;
        e
    }

    /// How many items the client shard dropped so far.
    pub(super) fn skipped(&self) -> usize {
        self.skipped
    }

    /// Whether the walk has ended.
    pub(super) fn done(&self) -> bool {
        self.done
    }

    /// The checks of the body as a whole, after the walk (M14).
    pub(super) fn finish(&self, list_kinds: &[String]) -> Result<()> {
        self.walk.finish(list_kinds)
    }
}

/// The pipeline of a page in whichever format it came.
enum Pipelines<'a> {
    Json(Pipeline<'a, Json>),
    Protobuf(Pipeline<'a, Protobuf>),
}

/// The objects of a [`RawListPage`], decoded one at a time ([`RawListPage::items`]).
pub struct PageItems<'a, K> {
    pipeline: Pipelines<'a>,
    list_kinds: &'a [String],
    _k: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for PageItems<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageItems")
            .field("skipped", &self.skipped())
            .finish_non_exhaustive()
    }
}

impl<K> PageItems<'_, K> {
    /// How many items a client shard dropped so far, undecoded.
    pub fn skipped(&self) -> usize {
        match &self.pipeline {
            Pipelines::Json(p) => p.skipped(),
            Pipelines::Protobuf(p) => p.skipped(),
        }
    }

    /// After the last item: the body's checks (M14), its `kind` and that it had `items`. An
    /// error if the walk stopped early (a decode error, or a caller that did not read on).
    pub fn finish(self) -> Result<()> {
        let (done, checked) = match &self.pipeline {
            Pipelines::Json(p) => (p.done(), p.finish(self.list_kinds)),
            Pipelines::Protobuf(p) => (p.done(), p.finish(self.list_kinds)),
        };
        if !done {
            return Err(Error::NotAList {
                what: "a list whose items were not all read".to_string(),
                expected: self.list_kinds.first().cloned().unwrap_or_default(),
            });
        }
        checked
    }
}

impl<K: DeserializeOwned> Iterator for PageItems<'_, K> {
    type Item = Result<K>;

    fn next(&mut self) -> Option<Result<K>> {
        match &mut self.pipeline {
            Pipelines::Json(p) => p.next_decoded(),
            Pipelines::Protobuf(p) => p.next_decoded(),
        }
    }
}
