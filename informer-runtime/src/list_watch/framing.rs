//! A watch body split into its events, whatever the format ([`WireFormat::split_event`]: JSON's
//! newline-terminated lines, protobuf's length-prefixed frames). Each event is capped by the
//! line cap (M16, counted decompressed, T3); a body that ends inside an event is a cut
//! chunk (R9).

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

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
/// It is split between the task that reads ([`READER_BYTES`]) and the decoder ([`DECODER_BYTES`]);
/// neither takes a further event while its share is used, so at most two events (one waiting
/// for room in each, at most M16's line cap each) go past it, besides the event the framer is
/// cutting out. Counting runs alone held up to `2 x threads x 32` events: gigabytes of 1 MiB events
/// on a large machine. The decoder's 15 MiB keep 15 threads busy on 1 MiB events, and every
/// thread on Pod-sized ones.
pub(super) const AHEAD_BYTES: usize = 16 << 20;

/// The share of [`AHEAD_BYTES`] read and not yet taken by [`Ahead`] ([`read_on_own_task`]): four
/// runs of [`RUN_BYTES`], so the decoder always finds a whole run read while the reader reads on.
/// The reader only needs to outlast a decode or an apply on the consumer's task; what it holds
/// beyond that is memory alone, paid by every watch that syncs at once. Half of `AHEAD_BYTES`
/// (8 MiB) made a fleet of 20 clusters of 2 000 Pods peak at 269 MiB of heap over its steady
/// 182; 1 MiB peaks at 192, with every sync speed within its spread (BENCHMARKS.md, scenario 12).
const READER_BYTES: usize = 4 * RUN_BYTES;
const _: () = assert!(
    READER_BYTES <= u32::MAX as usize,
    "an event's charge is a u32 of permits"
);

/// The share of [`AHEAD_BYTES`] that [`Ahead`] holds: queued, decoding or decoded.
const DECODER_BYTES: usize = AHEAD_BYTES - READER_BYTES;

/// A run expected to take this long or longer to decode is decoded on the decode pool (T6); a
/// shorter one costs less to decode than to hand over. Handing the pool one Pod-sized event at
/// a time was slower than decoding inline where an event decodes in tens of microseconds (a
/// burst of 8 000 Pod updates, two cores shared with the server: the projection's events/s
/// 0.66x, the compact Pod's 0.87x), so cheap events go in runs: those a burst or a watch-list
/// has already delivered, up to [`EVENT_RUN`], one job each. What a run costs depends on the
/// form as much as on its bytes: a k8s-openapi Pod from kube-apiserver decodes in about 400
/// microseconds, its projection in 50, and over TLS a watch-list's events arrive a record or
/// two at a time, so a threshold in bytes kept every k8s-openapi Pod of a watch-list on the
/// reflector's thread (0.45x client-go's sync where its paged LIST, decoded on the pool, made
/// 0.86x). The cost is learned per watch ([`DecodeCost`]).
const POOLED_COST_NS: u64 = 200_000;

/// What decoding costs on one watch stream (T6): nanoseconds per KiB on the wire, a moving
/// mean over its runs, wherever they decoded. It starts where a 64 KiB run costs
/// [`POOLED_COST_NS`], the bytes threshold it replaces.
struct DecodeCost(AtomicU64);

impl DecodeCost {
    fn new() -> Self {
        DecodeCost(AtomicU64::new(POOLED_COST_NS / 64))
    }

    /// Whether a run of `bytes` is expected to cost [`POOLED_COST_NS`] or more.
    fn pooled(&self, bytes: usize) -> bool {
        (bytes as u64).saturating_mul(self.0.load(Ordering::Relaxed)) / 1024 >= POOLED_COST_NS
    }

    /// Records that a run of `bytes` took `took` to decode: a quarter of the new figure.
    fn record(&self, bytes: usize, took: std::time::Duration) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        let per_kib = nanos.saturating_mul(1024) / (bytes.max(1) as u64);
        let old = self.0.load(Ordering::Relaxed);
        self.0.store(
            (old.saturating_mul(3) / 4).saturating_add(per_kib / 4),
            Ordering::Relaxed,
        );
    }
}

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
    let cost = Arc::new(DecodeCost::new());
    let start: StartRun<K> = Box::new(move |run, bytes| {
        let (format, ctx) = (format.clone(), Arc::clone(&ctx));
        let pooled = cost.pooled(bytes);
        let cost = Arc::clone(&cost);
        let decode = move || -> Decoded<K> {
            let started = Instant::now();
            // The strings a run's events repeat (field names of their managedFields, labels,
            // images) are found in this thread's cache, not the shared interner (P3).
            let _scope = crate::projection::InternScope::enter();
            let decoded = run
                .into_iter()
                .map(|e| {
                    let size = e.as_ref().map_or(0, Bytes::len);
                    (e.and_then(|e| format.event::<K>(e, &ctx)), size)
                })
                .collect();
            cost.record(bytes, started.elapsed());
            decoded
        };
        if !pooled {
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
        frames: read_on_own_task(frames),
        start,
        runs: FuturesOrdered::new(),
        out: Vec::new().into_iter(),
        held: 0,
        max_runs,
        ended: false,
    }
    .boxed()
}

/// Reads a watch body's events on a task of its own (T6), so that a decode or an apply on the
/// watch's task never delays the next read. At most [`READER_BYTES`] of events wait between
/// this task and [`Ahead`], besides the one event waiting for room (an event is charged its
/// size, at least 1 and at most [`READER_BYTES`], so one of M16's line cap still passes).
/// Dropping the stream aborts the task, which drops the body and so the connection, even while
/// no event arrives. Outside a Tokio runtime the events are read on the consumer's task.
fn read_on_own_task(
    frames: impl Stream<Item = Result<Bytes>> + Send + 'static,
) -> BoxStream<'static, Result<Bytes>> {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return frames.boxed();
    };
    let room = Arc::new(tokio::sync::Semaphore::new(READER_BYTES));
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let reader = runtime.spawn(async move {
        let mut frames = std::pin::pin!(frames);
        while let Some(event) = frames.next().await {
            // At most READER_BYTES, which fits a u32 (asserted at its definition).
            let size = event.as_ref().map_or(0, Bytes::len).clamp(1, READER_BYTES) as u32;
            let Ok(permit) = Arc::clone(&room).acquire_many_owned(size).await else {
                return;
            };
            if tx.send((event, permit)).is_err() {
                return;
            }
        }
    });
    let guard = tokio_util::task::AbortOnDropHandle::new(reader);
    futures::stream::unfold((rx, guard), |(mut rx, guard)| async move {
        // The event's room is given back as it is handed on.
        let (event, _room): (Result<Bytes>, tokio::sync::OwnedSemaphorePermit) = rx.recv().await?;
        Some((event, (rx, guard)))
    })
    .boxed()
}

/// The events of a watch decoded ahead of the consumer in runs, within [`DECODER_BYTES`] and
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
    /// and fewer than [`DECODER_BYTES`] held.
    fn fill(&mut self, cx: &mut Context<'_>) {
        while !self.ended && self.runs.len() < self.max_runs && self.held < DECODER_BYTES {
            let (mut run, mut bytes, mut waiting) = (Vec::new(), 0, false);
            while run.len() < EVENT_RUN && bytes < RUN_BYTES && self.held + bytes < DECODER_BYTES {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::list_watch::format::Json;
    use crate::test_support::until;
    use k8s_openapi::api::core::v1::ConfigMap;
    use std::time::Duration;

    /// A ConfigMap that takes 300 µs to decode (a k8s-openapi Pod from kube-apiserver takes
    /// about 400), and says whether a pool thread decoded it.
    struct Slow {
        name: String,
        on_pool: bool,
    }

    impl<'de> serde::Deserialize<'de> for Slow {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
            let cm = ConfigMap::deserialize(d)?;
            let until = Instant::now() + Duration::from_micros(300);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
            let on_pool = std::thread::current()
                .name()
                .is_some_and(|n| n.starts_with("informer-decode"));
            Ok(Slow {
                name: cm.metadata.name.unwrap_or_default(),
                on_pool,
            })
        }
    }

    #[tokio::test]
    async fn t6_small_events_that_are_slow_to_decode_are_decoded_on_the_pool_in_order() {
        let body: String = (0..200)
            .map(|i| {
                format!(
                    r#"{{"type":"ADDED","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}","resourceVersion":"{i}"}}}}}}"#
                ) + "\n"
            })
            .collect();
        let ctx = Arc::new(EventCtx::<Slow> {
            expected_kind: "ConfigMap".into(),
            check: None,
            shard: None,
        });
        let pool = DecodePool::new(2).expect("a pool of two threads");
        let stream = events(
            Json {
                exact_capacity: false,
            },
            BodyReader::whole(Bytes::from(body)),
            1 << 20,
            ctx,
            pool,
        );
        let decoded: Vec<Slow> = stream
            .map(|e| match e {
                Ok(Probed::Event(kube::core::WatchEvent::Added(o))) => o,
                _ => panic!("an ADDED event"),
            })
            .collect()
            .await;
        let names: Vec<String> = decoded.iter().map(|s| s.name.clone()).collect();
        let want: Vec<String> = (0..200).map(|i| format!("cm-{i}")).collect();
        assert_eq!(names, want, "wire order");
        // Every run of these 200 events is far under 64 KiB (32 events are about 4 KiB).
        let pooled = decoded.iter().filter(|s| s.on_pool).count();
        assert!(
            pooled >= 100,
            "{pooled} of 200 events decoded on the pool: the rest cost 300 µs each on the watch's task"
        );
    }

    /// A source of `n` events of `size` bytes, each numbered, that counts the bytes taken from it.
    fn counted_source(
        n: usize,
        size: usize,
        taken: Arc<AtomicU64>,
    ) -> impl Stream<Item = Result<Bytes>> + Send + 'static {
        futures::stream::iter(0..n).map(move |i| {
            taken.fetch_add(size as u64, Ordering::SeqCst);
            let mut event = vec![0u8; size];
            event[..8].copy_from_slice(&(i as u64).to_le_bytes());
            Ok(Bytes::from(event))
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn t6_the_reader_task_keeps_wire_order_and_reads_at_most_its_allowance_ahead() {
        let taken = Arc::new(AtomicU64::new(0));
        // Sixteen events fill the allowance: a bound by count of events would not hold it.
        let size = READER_BYTES / 16;
        let n = 4 * READER_BYTES / size;
        let mut events = read_on_own_task(counted_source(n, size, Arc::clone(&taken)));
        // Nobody consumes: the reader stops once its allowance is used, one event past it at most.
        let full = READER_BYTES as u64;
        let secs = Duration::from_secs(5);
        assert!(until(secs, || taken.load(Ordering::SeqCst) >= full).await);
        let past = full + size as u64;
        assert!(
            !until(Duration::from_millis(300), || taken.load(Ordering::SeqCst)
                > past)
            .await,
            "the reader took {} bytes with nobody consuming, over its {past}",
            taken.load(Ordering::SeqCst)
        );
        for i in 0..n {
            let event = events.next().await.expect("an event").expect("no error");
            assert_eq!(event[..8], (i as u64).to_le_bytes(), "wire order");
        }
        assert!(events.next().await.is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn t6_dropping_the_events_drops_the_body_read_on_its_own_task() {
        // A source that delivers one event and then never another (an idle watch), owning
        // `body` as a watch's stream owns its connection.
        let body = Arc::new(());
        let held = Arc::downgrade(&body);
        let source = counted_source(1, 64, Arc::default())
            .chain(futures::stream::pending())
            .map(move |event| {
                let _owned = &body;
                event
            });
        let mut events = read_on_own_task(source);
        assert!(events.next().await.is_some());
        assert_eq!(held.strong_count(), 1, "the reader task holds the body");
        drop(events);
        assert!(
            until(Duration::from_secs(5), || held.strong_count() == 0).await,
            "the reader task still holds the body of a dropped watch"
        );
    }

    #[test]
    fn t6_a_run_goes_to_the_pool_by_what_it_costs_to_decode_not_by_its_bytes() {
        let cost = DecodeCost::new();
        // Before any run is measured: the bytes threshold it replaces.
        assert!(!cost.pooled(60 << 10));
        assert!(cost.pooled(64 << 10));
        // Events of 10 KiB that take 400 µs each (a k8s-openapi Pod from kube-apiserver): after
        // a few runs, one event alone is worth handing over.
        for _ in 0..8 {
            cost.record(10 << 10, Duration::from_micros(400));
        }
        assert!(cost.pooled(10 << 10));
        // Events of 10 KiB that take 20 µs (a projection): a run of seven is still cheaper to
        // decode than to hand over, one of eleven is not.
        for _ in 0..16 {
            cost.record(10 << 10, Duration::from_micros(20));
        }
        assert!(!cost.pooled(10 << 10));
        assert!(!cost.pooled(70 << 10));
        assert!(cost.pooled(110 << 10));
        // Nothing overflows on absurd figures.
        cost.record(0, Duration::from_secs(u64::MAX / 4));
        assert!(cost.pooled(1));
        cost.record(usize::MAX, Duration::ZERO);
    }
}
