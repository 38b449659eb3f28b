//! WATCH: chunked newline-delimited `WatchEvent` JSON, or for protobuf clients of built-in kinds
//! kube-apiserver's length-prefixed `WatchEvent` frames. Replay from the bounded history (410 ERROR
//! event when too old), synthetic ADDED for RV ""/"0", `sendInitialEvents` with the
//! `k8s.io/initial-events-end` bookmark, periodic bookmarks, `timeoutSeconds`, selector
//! transitions, and the watch-chunk faults. A watcher that falls behind the broadcast buffer is
//! closed (the client re-watches), never buffered without bound.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use http::{HeaderValue, StatusCode, header};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::time::{Instant, Interval, MissedTickBehavior};

use super::codec::Wire;
use super::list::{ShardGate, parse_rv, selectors};
use super::{Mode, Target, object_bytes_of};
use crate::faults::Kick;
use crate::log::QueryParams;
use crate::protobuf;
use crate::selectors::Selectors;
use crate::state::Shared;
use crate::status::ApiError;
use crate::store::{Event, EventType, Stored, WatchFrom, WatchStart};

/// Chunks are cut at about this size so a fast stream is not one write per event.
const CHUNK: usize = 256 * 1024;

/// Serves a WATCH.
pub(crate) fn watch(
    sh: &Arc<Shared>,
    t: &Target,
    q: &QueryParams,
    mode: Mode,
    wire: Wire,
) -> Result<Response, ApiError> {
    let sel = selectors(sh, t, q, ShardGate::Watch)?;
    let table = match mode {
        Mode::Table => Some(super::table::TableRenderer::new(sh, &t.info, q)?),
        _ => None,
    };
    let rv = q.resource_version.as_deref().unwrap_or_default();
    let rvm = q.resource_version_match.as_deref().unwrap_or_default();
    let initial_events = q.send_initial_events == Some(true);
    // kube-apiserver's ListOptions validation for watches (422 Invalid).
    if q.send_initial_events.is_some() && rvm != "NotOlderThan" {
        return Err(ApiError::invalid_list_options(
            "resourceVersionMatch",
            "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if !rvm.is_empty() && q.send_initial_events.is_none() {
        return Err(ApiError::invalid_list_options(
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    if !rvm.is_empty() && rvm != "NotOlderThan" {
        return Err(ApiError::invalid_list_options(
            "resourceVersionMatch",
            &format!("Unsupported value: {rvm:?}: supported values: \"NotOlderThan\""),
        ));
    }
    let from = if initial_events {
        WatchFrom::Now { initial: true }
    } else {
        match rv {
            "" | "0" => WatchFrom::Now {
                initial: q.send_initial_events != Some(false),
            },
            n => WatchFrom::After(parse_rv(n)?),
        }
    };
    let res = t.info.storage_key();
    let (start, error_first) = match sh.store.watch(&res, t.namespace.as_deref(), from) {
        Ok(s) => (s, None),
        // The real server answers 200 and sends the 410 as an ERROR event.
        Err(e) => (
            sh.store.watch(
                &res,
                t.namespace.as_deref(),
                WatchFrom::Now { initial: false },
            )?,
            Some(e),
        ),
    };
    let error_first = match (error_first, sh.faults.take_gone_watch()) {
        (Some(e), _) => Some(e),
        (None, true) => Some(ApiError::expired(format!(
            "too old resource version: {rv} ({})",
            sh.store.current_rv()
        ))),
        (None, false) => None,
    };
    let WatchStart {
        initial,
        replay,
        rx,
        rv: start_rv,
    } = start;
    let mut ticker = tokio::time::interval_at(
        Instant::now() + sh.settings.bookmark_interval,
        sh.settings.bookmark_interval.max(Duration::from_millis(1)),
    );
    ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
    // Subscribed before the watch counts as open: a kick or a removal sent once a test sees it
    // open must reach it (a receiver made later would take that change as already seen).
    let kick = sh.faults.kick_rx();
    let removed = sh.resources_removed.subscribe();
    sh.active_watches.fetch_add(1, Ordering::SeqCst);
    sh.notify();
    let w = Watcher {
        guard: ActiveGuard(sh.clone()),
        sh: sh.clone(),
        res,
        info_kind: t.info.kind.clone(),
        info: t.info.clone(),
        ns: t.namespace.clone(),
        sel,
        mode,
        wire,
        initial: initial.into_iter(),
        replay: replay.into_iter(),
        end_bookmark: initial_events.then_some(start_rv),
        rx,
        last_rv: start_rv,
        bookmarks: q.allow_watch_bookmarks,
        ticker,
        // timeoutSeconds=0 means "server default", which here is "no deadline".
        deadline: q
            .timeout_seconds
            .filter(|s| *s > 0)
            .map(|s| Instant::now() + Duration::from_secs(s)),
        removed,
        kick,
        sent: 0,
        state: Phase::Running,
        error_first,
        table,
        drop_managed_fields: t.drop_managed_fields,
        schema: t.schema,
    };
    let stream = futures::stream::unfold(w, |mut w| async move {
        let item = w.next_chunk().await?;
        Some((item, w))
    });
    let mut resp = Response::new(Body::from_stream(stream));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(match wire {
            Wire::Json => "application/json",
            Wire::Protobuf => "application/vnd.kubernetes.protobuf;stream=watch",
        }),
    );
    Ok(resp)
}

/// Decrements the open-watch count when the stream is dropped.
struct ActiveGuard(Arc<Shared>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        self.0.active_watches.fetch_sub(1, Ordering::SeqCst);
        self.0.notify();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Running,
    /// Send an error on the next poll (the cut-chunk fault), then end.
    Abort,
    Done,
}

struct Watcher {
    #[allow(dead_code)] // held for its Drop
    guard: ActiveGuard,
    sh: Arc<Shared>,
    res: Arc<str>,
    info: Arc<crate::resources::ResourceInfo>,
    info_kind: String,
    ns: Option<String>,
    sel: Selectors,
    mode: Mode,
    /// JSON lines, or kube-apiserver's protobuf frames (built-in kinds only, `Mode::Full`).
    wire: Wire,
    initial: std::vec::IntoIter<Arc<Stored>>,
    replay: std::vec::IntoIter<Arc<Event>>,
    end_bookmark: Option<u64>,
    rx: tokio::sync::broadcast::Receiver<Arc<Event>>,
    last_rv: u64,
    bookmarks: bool,
    ticker: Interval,
    deadline: Option<Instant>,
    kick: tokio::sync::watch::Receiver<(u64, Kick)>,
    removed: tokio::sync::watch::Receiver<u64>,
    sent: usize,
    state: Phase,
    error_first: Option<ApiError>,
    /// Set for `as=Table` watches: every event's object is a one-row Table.
    table: Option<super::table::TableRenderer>,
    /// Objects go out without `metadata.managedFields` (KEP-5958).
    drop_managed_fields: bool,
    schema: crate::protobuf::Schema,
}

type Chunk = Result<Bytes, std::io::Error>;

impl Watcher {
    /// Whether the close-after-N fault has been reached.
    fn limit_reached(&self) -> bool {
        self.sh.faults.close_after().is_some_and(|n| self.sent >= n)
    }

    /// Appends one event (a JSON line or a protobuf frame); applies the chunk faults. Returns
    /// false when the stream must stop after this chunk.
    fn push_event(&mut self, buf: &mut BytesMut, kind: &str, obj: &Stored) -> bool {
        let (cut, malformed) = self.sh.faults.take_chunk_fault();
        if malformed {
            let garbage = format!("{{\"type\":\"{kind}\",\"object\":{{\"kind\":\n");
            self.put_line(buf, garbage.as_bytes());
        }
        match self.object_frame(kind, obj, cut) {
            Some(frame) => buf.put_slice(&frame),
            None => {
                let body = match &self.table {
                    Some(table) => table.render_one(obj),
                    None => object_bytes_of(obj, &self.info, self.mode, self.drop_managed_fields),
                };
                let mut line = BytesMut::with_capacity(body.len() + 32);
                line.put_slice(b"{\"type\":\"");
                line.put_slice(kind.as_bytes());
                line.put_slice(b"\",\"object\":");
                line.put_slice(&body);
                line.put_slice(b"}\n");
                let len = if cut { line.len() / 2 } else { line.len() };
                self.put_line(buf, &line[..len]);
            }
        }
        if cut {
            self.state = Phase::Abort;
            return false;
        }
        self.sent += 1;
        if self.limit_reached() {
            self.state = Phase::Done;
            return false;
        }
        true
    }

    /// A protobuf watch frame built from the object's cached message (half of it when `cut`);
    /// `None` for a JSON watch, or an object without a protobuf form in this version.
    fn object_frame(&self, kind: &str, obj: &Stored, cut: bool) -> Option<Vec<u8>> {
        if self.wire != Wire::Protobuf || self.table.is_some() || self.mode != Mode::Full {
            return None;
        }
        let api_version = self.info.api_version();
        if obj.api_version != api_version && !obj.api_version.is_empty() {
            return None;
        }
        let message = obj.protobuf_as(&self.info_kind, self.drop_managed_fields, self.schema)?;
        let enveloped = protobuf::envelope(&api_version, &self.info_kind, &message);
        let mut frame = Vec::with_capacity(enveloped.len() + 32);
        protobuf::watch_frame(&mut frame, kind, &enveloped, cut);
        Some(frame)
    }

    /// Appends a JSON event line (or part of one) in the stream's encoding: as it is, or as
    /// the protobuf frame `codec::reframe` makes of it.
    fn put_line(&self, buf: &mut BytesMut, line: &[u8]) {
        match self.wire {
            Wire::Json => buf.put_slice(line),
            Wire::Protobuf => buf.put_slice(&super::codec::reframe(line, self.schema)),
        }
    }

    /// A whole JSON event line (a bookmark, an error) in the stream's encoding.
    fn encoded(&self, line: Bytes) -> Bytes {
        match self.wire {
            Wire::Json => line,
            Wire::Protobuf => Bytes::from(super::codec::reframe(&line, self.schema)),
        }
    }

    fn bookmark(&self, rv: u64, end: bool) -> Bytes {
        let (kind, api_version) = match self.mode {
            Mode::Metadata => (
                "PartialObjectMetadata".to_owned(),
                "meta.k8s.io/v1".to_owned(),
            ),
            Mode::Full | Mode::Table => (self.info_kind.clone(), self.info.api_version()),
        };
        let ann = if end {
            ",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}"
        } else {
            ""
        };
        Bytes::from(format!(
            "{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"{kind}\",\"apiVersion\":\"{api_version}\",\"metadata\":{{\"resourceVersion\":\"{rv}\",\"creationTimestamp\":null{ann}}}}}}}\n"
        ))
    }

    fn error_event(err: &ApiError) -> Bytes {
        let mut out = b"{\"type\":\"ERROR\",\"object\":".to_vec();
        out.extend_from_slice(&err.body());
        out.extend_from_slice(b"}\n");
        Bytes::from(out)
    }

    /// The event type to send for a live event, after namespace and selector filtering.
    fn classify(&self, ev: &Event) -> Option<EventType> {
        if *ev.res != *self.res {
            return None;
        }
        if let Some(ns) = &self.ns
            && ev.obj.namespace != *ns
        {
            return None;
        }
        if self.sel.is_empty() {
            return Some(ev.kind);
        }
        let now = self.sel.matches(&ev.obj);
        let before = ev.prev.as_ref().is_some_and(|p| self.sel.matches(p));
        match ev.kind {
            EventType::Added => now.then_some(EventType::Added),
            EventType::Deleted => (before || now).then_some(EventType::Deleted),
            EventType::Modified => match (before, now) {
                (true, true) => Some(EventType::Modified),
                (false, true) => Some(EventType::Added),
                (true, false) => Some(EventType::Deleted),
                (false, false) => None,
            },
        }
    }

    /// Handles one live event into `buf`; false when the stream must stop after this chunk.
    fn push_live(&mut self, buf: &mut BytesMut, ev: &Event) -> bool {
        self.last_rv = self.last_rv.max(ev.rv);
        match self.classify(ev) {
            Some(kind) => self.push_event(buf, kind.as_str(), &ev.obj),
            None => true,
        }
    }

    async fn next_chunk(&mut self) -> Option<Chunk> {
        match self.state {
            Phase::Done => return None,
            Phase::Abort => {
                self.state = Phase::Done;
                return Some(Err(std::io::Error::other(
                    "watch chunk cut by fault injection",
                )));
            }
            Phase::Running => {}
        }
        if let Some(err) = self.error_first.take() {
            self.state = Phase::Done;
            return Some(Ok(self.encoded(Self::error_event(&err))));
        }
        let mut buf = BytesMut::new();
        // Initial state and replay, in chunks.
        while buf.len() < CHUNK {
            let Some(obj) = self.initial.next() else {
                break;
            };
            if self.sel.matches(&obj) && !self.push_event(&mut buf, "ADDED", &obj) {
                return Some(Ok(buf.freeze()));
            }
        }
        while buf.len() < CHUNK {
            let Some(ev) = self.replay.next() else { break };
            if !self.push_live(&mut buf, &ev) {
                return Some(Ok(buf.freeze()));
            }
        }
        if !buf.is_empty() {
            return Some(Ok(buf.freeze()));
        }
        if let Some(rv) = self.end_bookmark.take()
            && !self.sh.faults.end_suppressed()
        {
            return Some(Ok(self.encoded(self.bookmark(rv, true))));
        }
        loop {
            let deadline = self.deadline;
            tokio::select! {
                biased;
                () = self.sh.shutdown.cancelled() => return None,
                changed = self.removed.changed() => {
                    // Like kube-apiserver, watches of a resource that stopped being served end.
                    let info = &self.info;
                    let gone = self.sh.registry().get(&info.group, &info.version, &info.plural).is_none();
                    if changed.is_err() || gone {
                        return None;
                    }
                }
                changed = self.kick.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                    let (_, kick) = *self.kick.borrow_and_update();
                    match kick {
                        Kick::None => {}
                        Kick::Close => return None,
                        Kick::Freeze => {
                            self.sh.shutdown.cancelled().await;
                            return None;
                        }
                        Kick::Gone => {
                            self.state = Phase::Done;
                            let err = ApiError::expired(format!("too old resource version: {} ({})", self.last_rv, self.sh.store.current_rv()));
                            return Some(Ok(self.encoded(Self::error_event(&err))));
                        }
                    }
                }
                () = async { if let Some(d) = deadline { tokio::time::sleep_until(d).await } else { std::future::pending::<()>().await } } => {
                    return None;
                }
                r = self.rx.recv() => match r {
                    Ok(ev) => {
                        if !self.push_live(&mut buf, &ev) {
                            return Some(Ok(buf.freeze()));
                        }
                        while buf.len() < CHUNK {
                            match self.rx.try_recv() {
                                Ok(ev) => {
                                    if !self.push_live(&mut buf, &ev) {
                                        return Some(Ok(buf.freeze()));
                                    }
                                }
                                Err(TryRecvError::Lagged(_)) => {
                                    tracing::debug!(res = %self.res, "closing a watcher that fell behind");
                                    self.state = Phase::Done;
                                    break;
                                }
                                Err(_) => break,
                            }
                        }
                        if !buf.is_empty() {
                            return Some(Ok(buf.freeze()));
                        }
                        if self.state == Phase::Done {
                            return None;
                        }
                    }
                    Err(RecvError::Lagged(_)) => {
                        tracing::debug!(res = %self.res, "closing a watcher that fell behind");
                        return None;
                    }
                    Err(RecvError::Closed) => return None,
                },
                _ = self.ticker.tick(), if self.bookmarks => {
                    return Some(Ok(self.encoded(self.bookmark(self.last_rv, false))));
                }
            }
        }
    }
}
