//! A watch body split into its events, whatever the format ([`WireFormat::split_event`]: JSON's
//! newline-terminated lines, protobuf's length-prefixed frames). Each event is capped by the
//! line cap ([M16], counted decompressed, [T3]); a body that ends inside an event is a cut
//! chunk ([R9]).
//!
//! [M16]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#11-known-failure-modes-to-design-against
//! [T3]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#18-transport-after-kube-apiserver-and-client-go
//! [R9]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#1-reflector-list-watch-relist

use std::sync::Arc;

use bytes::{Buf as _, Bytes, BytesMut};
use futures::FutureExt as _;
use futures::stream::{Stream, StreamExt};
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
    /// The longest event accepted ([M16]); a longer one ends the stream with an error.
    ///
    /// [M16]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#11-known-failure-modes-to-design-against
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

/// At most this many events that are already read are decoded as one run ([T6]).
///
/// [T6]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#18-transport-after-kube-apiserver-and-client-go
const EVENT_RUN: usize = 32;

/// A run of events this large or larger (in bytes) is decoded on the decode pool ([T6]); a
/// smaller one costs less to decode than to hand over. Handing the pool one Pod-sized event at a
/// time was slower than decoding inline (a burst of 8 000 Pod updates, two cores shared with the
/// server: the projection's events/s 0.66x, the compact Pod's 0.87x), so the pool gets runs: the
/// events a burst or a watch-list has already delivered, up to [`EVENT_RUN`], one job each. A
/// single event of a quiet watch stays on the watch's task unless it is itself this large.
///
/// [T6]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#18-transport-after-kube-apiserver-and-client-go
const POOLED_RUN: usize = 64 << 10;

/// A watch body's events in format `F`, each decoded against `ctx`: inline, or in runs of the
/// events already read on `pool`, a few runs ahead of the consumer, handed on in wire order
/// ([T6]). Taking a run never waits for an event that has not arrived.
///
/// [T6]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#18-transport-after-kube-apiserver-and-client-go
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
    let ahead = 2 * pool.threads();
    frames
        .ready_chunks(EVENT_RUN)
        .map(move |run| {
            let bytes: usize = run.iter().map(|e| e.as_ref().map_or(0, Bytes::len)).sum();
            let (format, ctx) = (format.clone(), Arc::clone(&ctx));
            let decode = move || -> Vec<Result<Probed<K>>> {
                // The strings a run's events repeat (field names of their managedFields, labels,
                // images) are found in this thread's cache, not the shared interner (P3).
                let _scope = crate::projection::InternScope::enter();
                run.into_iter()
                    .map(|e| e.and_then(|e| format.event::<K>(e, &ctx)))
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
                    .unwrap_or_else(|e| vec![Err(e)])
            }
            .boxed()
        })
        .buffered(ahead)
        .flat_map(futures::stream::iter)
        .boxed()
}
