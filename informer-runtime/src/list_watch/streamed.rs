//! LIST answers decoded as they arrive (R3, T6): the items of a body are cut out of the
//! bytes received so far and decoded in runs on the decode pool while the rest downloads, so
//! a LIST never holds its whole body. kube-apiserver answers a list served from its watch cache
//! in one response whatever its `limit` (all 50 000 Pods, a gigabyte of JSON, in one body), so
//! this is what keeps a relist's peak near the steady heap there, as paging does elsewhere.
//!
//! What is held at a time: the bytes of the item being received (at most
//! [`BodyLimits::max_list_item_bytes`](super::BodyLimits::max_list_item_bytes), else the list
//! fails, T4), the runs queued or decoding (at most two per pool thread), and the body's head
//! and tail (kind, metadata). A body of another shape than the usual
//! (`WireFormat::stream_start`) is read whole, then cut into the same runs and decoded by the
//! same code (`decode_whole`), so streaming changes when items decode, never what a body decodes
//! to (but for an item over its cap).

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf as _, Bytes, BytesMut};
use serde::de::DeserializeOwned;

use super::body::BodyReader;
use super::format::{
    Format, ItemStream, ItemWalk as _, Next, Start, WireFormat, item_outside_list, shifted,
};
use super::pool::Submitted;
use super::{DecodePool, Error, ListPage, Result};
use crate::shard::Shard;

/// A body whose items have not begun within this many bytes is read whole.
const START_LIMIT: usize = 1 << 20;
/// A run of items is decoded as one job once it has this many items...
const RUN_ITEMS: usize = 32;
/// ...or this many bytes.
const RUN_BYTES: usize = 256 << 10;
/// An item that has not ended is scanned again only after this many more bytes, or as many
/// again as it has so far if that is more ([`read_more`]), so a large item arriving in small
/// frames is scanned a few times over its length in all, not once per frame.
const READ_AHEAD: usize = 64 << 10;

/// A LIST answer whose headers have arrived and whose body has not been read yet: its items
/// are decoded as they arrive ([`decode_on`](Self::decode_on)).
pub struct StreamedList<K> {
    pub(super) reader: BodyReader,
    pub(super) format: Format,
    pub(super) list_kinds: Arc<[String]>,
    pub(super) idle: Duration,
    pub(super) max: usize,
    /// The longest item ([`BodyLimits::max_list_item_bytes`](super::BodyLimits::max_list_item_bytes)).
    pub(super) max_item: usize,
    /// Decides the client shard from the echoed selector ([`shard_by`](Self::shard_by)).
    pub(super) shard_by: Option<ShardBy>,
    pub(super) _k: PhantomData<fn() -> K>,
}

/// What decides a LIST's client shard from the selector its answer echoes (S4).
pub(super) type ShardBy = Box<dyn FnOnce(Option<&str>) -> Option<Shard> + Send>;

impl<K> StreamedList<K> {
    /// KEP-5866, S4: `decide` is called once, with the selector the answer echoes
    /// (`metadata.shardInfo.selector`, `None` without one), before any item is decoded; the
    /// items outside the shard it returns are dropped by a probe of one field (UID or
    /// namespace) before their decode, the rest of them never read. Without it, or when it
    /// returns `None`, every item is decoded.
    pub fn shard_by(
        mut self,
        decide: impl FnOnce(Option<&str>) -> Option<Shard> + Send + 'static,
    ) -> Self {
        self.shard_by = Some(Box::new(decide));
        self
    }
}

impl<K> std::fmt::Debug for StreamedList<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamedList").finish_non_exhaustive()
    }
}

/// What a run decoded, and the error it stopped at.
type Decoded<T> = (Vec<T>, Option<Error>);

impl<K: DeserializeOwned + Send + 'static> StreamedList<K> {
    /// Reads the body, decoding its items in runs on `pool` while it arrives, and hands each
    /// decoded object to `map` on the thread that decoded it; returns what `map` kept, in wire
    /// order, with the list's resourceVersion and continue token. `on_body` is called with
    /// those two as soon as the whole body has arrived and its head was checked (M14), before
    /// the last runs finish decoding (the reflector starts the next page's fetch then, R3).
    ///
    /// The error is the first in wire order, of an item's decode, a shard probe or the body's
    /// shape, and the checks of the body as a whole only once every item decoded. A body of
    /// an unusual shape (metadata after the items, a `Status`) is read whole first and then
    /// decoded in the same runs. Dropping the future cancels the runs not yet started (T6).
    pub async fn decode_on<T, M, B>(
        self,
        pool: &DecodePool,
        map: M,
        on_body: B,
    ) -> Result<ListPage<T>>
    where
        T: Send + 'static,
        M: Fn(K) -> Option<T> + Send + Sync + 'static,
        B: FnOnce(&str, Option<&str>),
    {
        let body = Body {
            reader: self.reader,
            idle: self.idle,
            max: self.max,
            max_item: self.max_item,
            total: 0,
            eof: false,
        };
        let (format, kinds, shard_by) = (self.format, self.list_kinds, self.shard_by);
        decode(body, format, kinds, pool, shard_by, map, on_body).await
    }
}

/// [`StreamedList::decode_on`] of `body` in `format` (a test's chunks, or the response's).
pub(super) async fn decode<K, S, T, M, B>(
    body: Body<S>,
    format: Format,
    list_kinds: Arc<[String]>,
    pool: &DecodePool,
    shard_by: Option<ShardBy>,
    map: M,
    on_body: B,
) -> Result<ListPage<T>>
where
    K: DeserializeOwned + Send + 'static,
    S: Chunks,
    T: Send + 'static,
    M: Fn(K) -> Option<T> + Send + Sync + 'static,
    B: FnOnce(&str, Option<&str>),
{
    let list = List {
        list_kinds,
        shard_by,
        pool,
        map: Arc::new(map),
    };
    match format {
        Format::Json(f) => decode_in(f, body, list, on_body).await,
        Format::Protobuf(f) => decode_in(f, body, list, on_body).await,
    }
}

/// What one list's items are decoded with.
pub(super) struct List<'p, M> {
    pub(super) list_kinds: Arc<[String]>,
    pub(super) shard_by: Option<ShardBy>,
    pub(super) pool: &'p DecodePool,
    pub(super) map: Arc<M>,
}

impl<M> List<'_, M> {
    /// The client shard for an answer that echoes `echoed` (S4).
    fn shard(&mut self, echoed: Option<&str>) -> Option<Arc<Shard>> {
        let decide = self.shard_by.take()?;
        decide(echoed).map(Arc::new)
    }
}

/// [`decode`] in the format `F`.
async fn decode_in<F, K, S, T, M, B>(
    format: F,
    mut body: Body<S>,
    mut list: List<'_, M>,
    on_body: B,
) -> Result<ListPage<T>>
where
    F: WireFormat,
    K: DeserializeOwned + Send + 'static,
    S: Chunks,
    T: Send + 'static,
    M: Fn(K) -> Option<T> + Send + Sync + 'static,
    B: FnOnce(&str, Option<&str>),
{
    let mut buf = BytesMut::new();
    let mut stream = loop {
        match format.stream_start(&buf, &list.list_kinds) {
            Start::Items { at, stream } => {
                buf.advance(at);
                break stream;
            }
            Start::More if !body.eof && buf.len() < START_LIMIT => {
                body.read(&mut buf).await?;
            }
            _ => {
                body.read_to_end(&mut buf).await?;
                return decode_whole(format, buf.freeze(), list, on_body).await;
            }
        }
    };
    let shard = list.shard(stream.shard_info());
    let mut runs = Runs::new(&format, &list, shard);
    // The bytes at the front of `buf` that the current run's items (and skipped fields)
    // take.
    let mut pos = 0;
    let outcome = loop {
        if runs.full(pos) {
            let seg = buf.split_to(pos).freeze();
            pos = 0;
            runs.start(seg);
            runs.settle(runs.limit).await?;
        }
        match stream.next(&buf[pos..], body.eof) {
            Next::Item(range, hint) => {
                let end = range.end;
                runs.run.push((shifted(range, pos), hint));
                pos += end;
            }
            Next::Skip { consumed } => pos += consumed,
            Next::More if body.eof => {
                break Err(item_outside_list(&list.list_kinds));
            }
            Next::More => {
                // T4: the item that has not ended is all of `buf[pos..]`.
                let unfinished = buf.len() - pos;
                if unfinished > body.max_item {
                    break Err(Error::ItemTooLarge {
                        limit: body.max_item,
                    });
                }
                body.read_at_least(&mut buf, read_more(unfinished, body.max_item))
                    .await?;
            }
            Next::End { tail } => {
                let mut rest = buf.split_off(pos + tail);
                body.read_to_end(&mut rest).await?;
                break stream.finish(&rest, &list.list_kinds);
            }
            Next::Err(e) => break Err(e),
        }
    };
    runs.start(buf.split_to(pos).freeze());
    drop(buf);
    let head = runs.end(outcome).await?;
    on_body(&head.resource_version, head.continue_token.as_deref());
    runs.settle(0).await?;
    Ok(ListPage {
        items: runs.items,
        resource_version: head.resource_version,
        continue_token: head.continue_token,
    })
}

/// A body of an unusual shape, read whole: its head is checked first (M14), then its items
/// are walked and decoded in the same runs as a streamed body's.
async fn decode_whole<F, K, T, M, B>(
    format: F,
    body: Bytes,
    mut list: List<'_, M>,
    on_body: B,
) -> Result<ListPage<T>>
where
    F: WireFormat,
    K: DeserializeOwned + Send + 'static,
    T: Send + 'static,
    M: Fn(K) -> Option<T> + Send + Sync + 'static,
    B: FnOnce(&str, Option<&str>),
{
    let head = format.list_head(&body, &list.list_kinds)?;
    on_body(&head.resource_version, head.continue_token.as_deref());
    let shard = list.shard(head.shard_info.as_deref());
    let mut runs = Runs::new(&format, &list, shard);
    let mut walk = format.walk(&body);
    // The bytes the run being gathered takes.
    let mut bytes = 0;
    let outcome = loop {
        match walk.next_item() {
            Some(Ok(item)) => {
                // The ranges are the whole body's: every run's segment is all of it.
                bytes += item.0.len();
                runs.run.push(item);
                if runs.full(bytes) {
                    bytes = 0;
                    runs.start(body.clone());
                    runs.settle(runs.limit).await?;
                }
            }
            Some(Err(e)) => break Err(e),
            None => break walk.finish(&list.list_kinds),
        }
    };
    runs.start(body.clone());
    drop(walk);
    runs.end(outcome).await?;
    runs.settle(0).await?;
    Ok(ListPage {
        items: runs.items,
        resource_version: head.resource_version,
        continue_token: head.continue_token,
    })
}

/// Decodes the items at `run`'s ranges of `body` under one interning scope (P3), skipping those
/// outside `shard`; returns what `map` kept and the error the run stopped at. One run of
/// a LIST's items ([`Runs::start`]).
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

/// How many more bytes to read for an item that has not ended after `unfinished` bytes: as
/// many again (at least [`READ_AHEAD`]), so the scans of one item add up to a few times its
/// length however small the frames it comes in, where a fixed step made them quadratic in it;
/// and no more than one byte past `max_item`, where it fails (T4).
fn read_more(unfinished: usize, max_item: usize) -> usize {
    unfinished
        .max(READ_AHEAD)
        .min(max_item.saturating_sub(unfinished).saturating_add(1))
}

/// Where a body's bytes come from: the response ([`BodyReader`]), or a test's chunks.
pub(super) trait Chunks: Send {
    /// The next bytes; `None` at the end of the body.
    fn next_chunk(&mut self) -> impl Future<Output = Option<Result<Bytes>>> + Send;
}

impl Chunks for BodyReader {
    async fn next_chunk(&mut self) -> Option<Result<Bytes>> {
        self.next().await
    }
}

#[cfg(test)]
impl Chunks for VecDeque<Bytes> {
    async fn next_chunk(&mut self) -> Option<Result<Bytes>> {
        self.pop_front().map(Ok)
    }
}

/// The body being read, within its limits (T4).
pub(super) struct Body<S> {
    pub(super) reader: S,
    pub(super) idle: Duration,
    pub(super) max: usize,
    /// The longest item, in bytes ([`StreamedList::max_item`]).
    pub(super) max_item: usize,
    pub(super) total: usize,
    pub(super) eof: bool,
}

impl<S: Chunks> Body<S> {
    /// Appends the next bytes to `buf`, or sets `eof`.
    async fn read(&mut self, buf: &mut BytesMut) -> Result<()> {
        let what = "LIST";
        let data = match tokio::time::timeout(self.idle, self.reader.next_chunk()).await {
            Err(_) => {
                return Err(Error::BodyStalled {
                    what,
                    idle: self.idle,
                });
            }
            Ok(None) => {
                self.eof = true;
                return Ok(());
            }
            Ok(Some(data)) => data?,
        };
        self.total = self.total.saturating_add(data.len());
        if self.total > self.max {
            return Err(Error::BodyTooLarge {
                what,
                limit: self.max,
            });
        }
        buf.extend_from_slice(&data);
        Ok(())
    }

    /// Appends at least `n` more bytes to `buf`, or the rest of the body.
    async fn read_at_least(&mut self, buf: &mut BytesMut, n: usize) -> Result<()> {
        let want = buf.len().saturating_add(n);
        while !self.eof && buf.len() < want {
            self.read(buf).await?;
        }
        Ok(())
    }

    async fn read_to_end(&mut self, buf: &mut BytesMut) -> Result<()> {
        while !self.eof {
            self.read(buf).await?;
        }
        Ok(())
    }
}

/// The runs of one list: the one being gathered, those started and not yet collected, and
/// what the collected ones decoded.
struct Runs<F: WireFormat, M, T> {
    format: F,
    map: Arc<M>,
    list_kinds: Arc<[String]>,
    pool: DecodePool,
    /// The client shard (S4), probed before each item's decode.
    shard: Option<Arc<Shard>>,
    /// The items of the run being gathered: their ranges in its segment.
    run: Vec<(Range<usize>, F::Hint)>,
    pending: VecDeque<Submitted<Decoded<T>>>,
    items: Vec<T>,
    /// How many runs may be pending once [`settle`](Self::settle) returns: two per thread,
    /// none inline.
    limit: usize,
}

impl<F: WireFormat, M, T: Send + 'static> Runs<F, M, T> {
    fn new(format: &F, list: &List<'_, M>, shard: Option<Arc<Shard>>) -> Self {
        let pool = list.pool.clone();
        Runs {
            format: format.clone(),
            map: Arc::clone(&list.map),
            list_kinds: Arc::clone(&list.list_kinds),
            limit: if pool.is_inline() {
                0
            } else {
                2 * pool.threads()
            },
            pool,
            shard,
            run: Vec::new(),
            pending: VecDeque::new(),
            items: Vec::new(),
        }
    }

    /// Whether the run being gathered, whose items take `bytes` of its segment, is a job.
    fn full(&self, bytes: usize) -> bool {
        self.run.len() >= RUN_ITEMS || bytes >= RUN_BYTES
    }

    /// Starts decoding the gathered items at their ranges of `seg`, if any.
    fn start<K>(&mut self, seg: Bytes)
    where
        K: DeserializeOwned,
        M: Fn(K) -> Option<T> + Send + Sync + 'static,
    {
        if self.run.is_empty() {
            return;
        }
        let run = std::mem::take(&mut self.run);
        let format = self.format.clone();
        let map = Arc::clone(&self.map);
        let list_kinds = Arc::clone(&self.list_kinds);
        let shard = self.shard.clone();
        self.pending.push_back(self.pool.submit(move || {
            let map: &(dyn Fn(K) -> Option<T> + Send + Sync) = &*map;
            Ok(decode_run(
                &format,
                &seg,
                run,
                shard.as_deref(),
                map,
                &list_kinds,
            ))
        }));
    }

    /// Collects runs in order until at most `keep` are pending; the first error in wire order
    /// ends the list. Inline, the decodes ran on this task: the others run between runs.
    async fn settle(&mut self, keep: usize) -> Result<()> {
        while self.pending.len() > keep {
            let Some(front) = self.pending.pop_front() else {
                break;
            };
            let (out, error) = front.wait().await?;
            self.items.extend(out);
            if let Some(e) = error {
                return Err(e);
            }
        }
        if self.pool.is_inline() {
            tokio::task::yield_now().await;
        }
        Ok(())
    }

    /// The outcome of the body's reading once the runs before its error are collected: an
    /// item's error comes before one found later in the body (wire order).
    async fn end<H>(&mut self, outcome: Result<H>) -> Result<H> {
        match outcome {
            Ok(head) => Ok(head),
            Err(e) => {
                self.settle(0).await?;
                Err(e)
            }
        }
    }
}
