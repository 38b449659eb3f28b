//! A watch body split into its events, whatever the format ([`WireFormat::split_event`]: JSON's
//! newline-terminated lines, protobuf's length-prefixed frames). Each event is capped by the
//! line cap (M16, counted decompressed, T3); a body that ends inside an event is a cut
//! chunk (R9).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Buf as _, Bytes, BytesMut};
use futures::FutureExt as _;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, FuturesOrdered, Stream, StreamExt};
use serde::de::DeserializeOwned;

use super::body::BodyReader;
use super::format::{EventCtx, Split, WireFormat};
use super::{DecodePool, Error, Probed, ProbedStream, Result};

/// Splits a watch body into events.
pub(super) struct EventFramer<F> {
    body: BodyReader,
    format: F,
    buf: BytesMut,
    /// `buf[..scanned]` holds no event boundary, so a large event split over many network
    /// frames is scanned once.
    scanned: usize,
    done: bool,
    /// The longest event accepted (M16); a longer one ends the stream with an error.
    max: usize,
}

impl<F: WireFormat> EventFramer<F> {
    pub(super) fn new(body: BodyReader, format: F, max: usize) -> Self {
        EventFramer {
            body,
            format,
            buf: BytesMut::new(),
            scanned: 0,
            done: false,
            max,
        }
    }

    /// The events, each its own bytes; an error ends the stream.
    pub(super) fn into_stream(self) -> impl Stream<Item = Result<Bytes>> + Send + 'static {
        futures::stream::unfold(self, |mut st| async move {
            let item = st.next_event().await?;
            Some((item, st))
        })
    }

    async fn next_event(&mut self) -> Option<Result<Bytes>> {
        loop {
            if self.done && self.buf.is_empty() {
                return None;
            }
            match self.format.split_event(&self.buf, self.scanned, self.max) {
                Split::Event { event, consumed } => {
                    self.scanned = 0;
                    let mut bytes = self.buf.split_to(consumed).freeze();
                    bytes.truncate(event.end);
                    bytes.advance(event.start);
                    return Some(Ok(bytes));
                }
                Split::Skip { consumed } => {
                    self.scanned = 0;
                    self.buf.advance(consumed);
                    continue;
                }
                Split::TooLong => {
                    // M16: the stream is treated as broken and ends here.
                    self.done = true;
                    self.buf = BytesMut::new();
                    self.scanned = 0;
                    return Some(Err(Error::LineTooLong { limit: self.max }));
                }
                Split::Incomplete { scanned } => self.scanned = scanned,
            }
            if self.done {
                let cut = self.format.cut_at_end(&self.buf);
                self.buf.clear();
                return (cut > 0).then_some(Err(Error::CutChunk(cut)));
            }
            match self.body.next().await {
                Some(Ok(data)) => self.buf.extend_from_slice(&data),
                Some(Err(e)) => {
                    // The connection broke (a chunk was cut) or its gzip is corrupt: surface
                    // it and end the stream.
                    self.done = true;
                    self.buf.clear();
                    return Some(Err(e));
                }
                None => self.done = true,
            }
        }
    }
}

/// At most this many events that are already read are decoded as one run (T6).
const EVENT_RUN: usize = 32;

/// A run takes no more events once it holds this many bytes, as a LIST's runs (T6): large
/// events spread over the threads instead of queueing behind one another in one job.
const RUN_BYTES: usize = 256 << 10;

/// The most bytes of events read ahead of the consumer (T6): taken off the connection and
/// not yet handed on, whether queued, decoding or decoded (counted by their size on the wire).
/// No further event is read while this many are held, so at most one event (the one that
/// crossed it, at most M16's line cap) goes past it, besides the event the framer is cutting
/// out. Counting runs alone held up to `2 x threads x 32` events: gigabytes of 1 MiB events
/// on a large machine. 16 MiB keeps 16 threads busy on 1 MiB events, and every thread on
/// Pod-sized ones.
pub(super) const AHEAD_BYTES: usize = 16 << 20;

/// A run this large or larger (in bytes) is decoded on the decode pool (T6); a
/// smaller one costs less to decode than to hand over. Handing the pool one Pod-sized event at a
/// time was slower than decoding inline (a burst of 8 000 Pod updates, two cores shared with the
/// server: the projection's events/s 0.66x, the compact Pod's 0.87x), so the pool gets runs: the
/// events a burst or a watch-list has already delivered, up to [`EVENT_RUN`], one job each. A
/// single event of a quiet watch stays on the watch's task unless it is itself this large.
const POOLED_RUN: usize = 64 << 10;

/// A run's decoded events, each with its size on the wire.
type Decoded<K> = Vec<(Result<Probed<K>>, usize)>;

/// Starts the decode of one run of `bytes` bytes.
type StartRun<K> =
    Box<dyn FnMut(Vec<Result<Bytes>>, usize) -> BoxFuture<'static, Decoded<K>> + Send>;

/// A watch body's events in format `F`, each decoded against `ctx`: inline, or in runs of the
/// events already read on `pool`, a few runs and at most [`AHEAD_BYTES`] ahead of the consumer,
/// handed on in wire order (T6). Taking a run never waits for an event that has not arrived.
pub(super) fn events<F, K>(
    format: F,
    body: BodyReader,
    max: usize,
    ctx: Arc<EventCtx<K>>,
    pool: DecodePool,
) -> ProbedStream<K>
where
    F: WireFormat,
    K: DeserializeOwned + Send + 'static,
{
    let frames = EventFramer::new(body, format.clone(), max).into_stream();
    if pool.is_inline() {
        return frames
            .map(move |event| event.and_then(|e| format.event::<K>(e, &ctx)))
            .boxed();
    }
    let max_runs = 2 * pool.threads();
    let start: StartRun<K> = Box::new(move |run, bytes| {
        let (format, ctx) = (format.clone(), Arc::clone(&ctx));
        let decode = move || -> Decoded<K> {
            // The strings a run's events repeat (field names of their managedFields, labels,
            // images) are found in this thread's cache, not the shared interner (P3).
            let _scope = crate::projection::InternScope::enter();
            run.into_iter()
                .map(|e| {
                    let size = e.as_ref().map_or(0, Bytes::len);
                    (e.and_then(|e| format.event::<K>(e, &ctx)), size)
                })
                .collect()
        };
        if bytes < POOLED_RUN {
            return futures::future::ready(decode()).boxed();
        }
        let pool = pool.clone();
        async move {
            // A panic in the run's decode ends the watch like any decode error; its events
            // come again on the next WATCH from the last delivered resourceVersion.
            pool.run(move || Ok(decode()))
                .await
                .unwrap_or_else(|e| vec![(Err(e), bytes)])
        }
        .boxed()
    });
    Ahead {
        frames: frames.boxed(),
        start,
        runs: FuturesOrdered::new(),
        out: Vec::new().into_iter(),
        held: 0,
        max_runs,
        ended: false,
    }
    .boxed()
}

/// The events of a watch decoded ahead of the consumer in runs, within [`AHEAD_BYTES`] and
/// `max_runs` runs, handed on in wire order (T6).
struct Ahead<K> {
    frames: BoxStream<'static, Result<Bytes>>,
    start: StartRun<K>,
    /// The runs started, in wire order.
    runs: FuturesOrdered<BoxFuture<'static, Decoded<K>>>,
    /// What is left of the oldest run, decoded.
    out: std::vec::IntoIter<(Result<Probed<K>>, usize)>,
    /// The bytes of the events taken off `frames` and not handed on yet.
    held: usize,
    max_runs: usize,
    /// `frames` has ended.
    ended: bool,
}

// Nothing of `Ahead` is pinned in place: its stream and futures are boxed.
impl<K> Unpin for Ahead<K> {}

impl<K> Ahead<K> {
    /// Starts runs of the events already read while there is room: fewer than `max_runs` runs
    /// and fewer than [`AHEAD_BYTES`] held.
    fn fill(&mut self, cx: &mut Context<'_>) {
        while !self.ended && self.runs.len() < self.max_runs && self.held < AHEAD_BYTES {
            let (mut run, mut bytes, mut waiting) = (Vec::new(), 0, false);
            while run.len() < EVENT_RUN && bytes < RUN_BYTES && self.held + bytes < AHEAD_BYTES {
                match self.frames.poll_next_unpin(cx) {
                    Poll::Ready(Some(event)) => {
                        bytes += event.as_ref().map_or(0, Bytes::len);
                        run.push(event);
                    }
                    Poll::Ready(None) => {
                        self.ended = true;
                        break;
                    }
                    Poll::Pending => {
                        waiting = true;
                        break;
                    }
                }
            }
            if !run.is_empty() {
                self.held += bytes;
                self.runs.push_back((self.start)(run, bytes));
            }
            if waiting {
                break;
            }
        }
    }
}

impl<K> Stream for Ahead<K> {
    type Item = Result<Probed<K>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            this.fill(cx);
            if let Some((event, size)) = this.out.next() {
                this.held = this.held.saturating_sub(size);
                return Poll::Ready(Some(event));
            }
            match this.runs.poll_next_unpin(cx) {
                Poll::Ready(Some(run)) => this.out = run.into_iter(),
                Poll::Ready(None) if this.ended => return Poll::Ready(None),
                // Nothing is held, so `fill` polled `frames`, which will wake this task.
                Poll::Ready(None) | Poll::Pending => return Poll::Pending,
            }
        }
    }
}
