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
//! (`WireFormat::stream_start`) is read whole and decoded as before, so streaming changes when
//! items decode, never what a body decodes to (but for an item over its cap).

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf as _, Bytes, BytesMut};
use serde::de::DeserializeOwned;

use super::body::BodyReader;
use super::format::{Format, ItemStream, Next, Start, WireFormat, item_outside_list, shifted};
use super::page::decode_run;
use super::pool::Submitted;
use super::{DecodePool, Error, ListPage, RawListPage, Result};

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
    pub(super) _k: PhantomData<fn() -> K>,
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
    /// those two as soon as the whole body has arrived and been checked (M14), before the
    /// last runs finish decoding (the reflector starts the next page's fetch then, R3).
    ///
    /// The error is the one [`RawListPage::decode_on`] reports for the same body: the first in
    /// wire order, of an item's decode or of the body's shape, and the checks of the body as a
    /// whole only once every item decoded.
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
        decode_streamed(body, self.format, self.list_kinds, pool, map, on_body).await
    }
}

/// [`StreamedList::decode_on`] of the body `body` in `format`.
pub(super) async fn decode_streamed<K, S, T, M, B>(
    body: Body<S>,
    format: Format,
    list_kinds: Arc<[String]>,
    pool: &DecodePool,
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
    let map = Arc::new(map);
    match format.clone() {
        Format::Json(f) => decode_in(f, body, format, list_kinds, pool, map, on_body).await,
        Format::Protobuf(f) => decode_in(f, body, format, list_kinds, pool, map, on_body).await,
    }
}

async fn decode_in<F, K, S, T, M, B>(
    format: F,
    mut body: Body<S>,
    whole_format: Format,
    list_kinds: Arc<[String]>,
    pool: &DecodePool,
    map: Arc<M>,
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
        match format.stream_start(&buf, &list_kinds) {
            Start::Items { at, stream } => {
                buf.advance(at);
                break stream;
            }
            Start::More if !body.eof && buf.len() < START_LIMIT => {
                body.read(&mut buf).await?;
            }
            _ => {
                body.read_to_end(&mut buf).await?;
                let page = RawListPage::<K>::read(buf.freeze(), whole_format, list_kinds)?;
                on_body(&page.resource_version, page.continue_token.as_deref());
                let resource_version = page.resource_version.clone();
                let continue_token = page.continue_token.clone();
                let items = page.decode_on(pool, move |obj| map(obj)).await?;
                return Ok(ListPage {
                    items,
                    resource_version,
                    continue_token,
                });
            }
        }
    };
    let mut runs = Runs {
        pending: VecDeque::new(),
        items: Vec::new(),
        limit: if pool.is_inline() {
            0
        } else {
            2 * pool.threads()
        },
    };
    let mut run: Vec<(Range<usize>, F::Hint)> = Vec::new();
    // The bytes at the front of `buf` that the current run's items (and skipped fields)
    // take.
    let mut pos = 0;
    let outcome = loop {
        let full = run.len() >= RUN_ITEMS || pos >= RUN_BYTES;
        if full {
            let seg = buf.split_to(pos).freeze();
            pos = 0;
            runs.start(
                pool,
                &format,
                seg,
                std::mem::take(&mut run),
                &map,
                &list_kinds,
            );
            runs.settle(runs.limit).await?;
            if pool.is_inline() {
                // Inline, the decode ran on this task: let the others run between runs.
                tokio::task::yield_now().await;
            }
        }
        match stream.next(&buf[pos..], body.eof) {
            Next::Item(range, hint) => {
                let end = range.end;
                run.push((shifted(range, pos), hint));
                pos += end;
            }
            Next::Skip { consumed } => pos += consumed,
            Next::More if body.eof => {
                break Err(item_outside_list(&list_kinds));
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
                break stream.finish(&rest, &list_kinds);
            }
            Next::Err(e) => break Err(e),
        }
    };
    if !run.is_empty() {
        let seg = buf.split_to(pos).freeze();
        runs.start(pool, &format, seg, run, &map, &list_kinds);
    }
    drop(buf);
    match outcome {
        Ok(head) => {
            on_body(&head.resource_version, head.continue_token.as_deref());
            runs.settle(0).await?;
            Ok(ListPage {
                items: runs.items,
                resource_version: head.resource_version,
                continue_token: head.continue_token,
            })
        }
        Err(e) => {
            runs.settle(0).await?;
            Err(e)
        }
    }
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

/// The runs started and not yet collected, and what the collected ones decoded.
struct Runs<T> {
    pending: VecDeque<Submitted<Decoded<T>>>,
    items: Vec<T>,
    /// How many runs may be pending once [`settle`](Self::settle) returns.
    limit: usize,
}

impl<T: Send + 'static> Runs<T> {
    /// Starts decoding the items at `run`'s ranges of `seg`.
    fn start<F, K, M>(
        &mut self,
        pool: &DecodePool,
        format: &F,
        seg: bytes::Bytes,
        run: Vec<(Range<usize>, F::Hint)>,
        map: &Arc<M>,
        list_kinds: &Arc<[String]>,
    ) where
        F: WireFormat,
        K: DeserializeOwned,
        M: Fn(K) -> Option<T> + Send + Sync + 'static,
    {
        let format = format.clone();
        let map = Arc::clone(map);
        let list_kinds = Arc::clone(list_kinds);
        self.pending.push_back(pool.submit(move || {
            let map: &(dyn Fn(K) -> Option<T> + Send + Sync) = &*map;
            Ok(decode_run(&format, &seg, run, None, map, &list_kinds))
        }));
    }

    /// Collects runs in order until at most `keep` are pending; the first error in wire order
    /// ends the list.
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
        Ok(())
    }
}
