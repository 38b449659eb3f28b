//! Kubernetes protobuf on the wire (T1): what a LIST or WATCH answer in
//! `application/vnd.kubernetes.protobuf` looks like, read with `informer-proto`.
//!
//! Built-in kinds are asked for in protobuf with JSON as the fallback, as client-go's typed
//! clients do; the answer's `Content-Type` says which arrived. A LIST is the `k8s\0` envelope
//! around the list message, whose items are walked by their length prefixes; a WATCH is a
//! stream of length-prefixed `WatchEvent` frames. Objects decode straight into the cached form
//! through `informer-proto`'s serde `Deserializer`, with no intermediate value (T2).
//!
//! A field of a newer Kubernetes version (a number this build's schema lacks) is passed over
//! and counted (T8, [`Newer`]), as the JSON path passes over a field it does not know: a newer
//! server keeps an informer on protobuf. An answer that still cannot be read (malformed) is an
//! error once: the list-watcher then asks for JSON from its next request on ([`Fallback`]), so
//! it costs a retry, never the informer.

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use informer_proto::frame::{self, Envelope, WatchFrame};
use informer_proto::wire::put_len;
use informer_proto::{MAGIC, Message, Skipped, SkippedFields, from_slice};
use kube::core::WatchEvent;
use kube::core::watch::{Bookmark, BookmarkMeta};
use serde::de::DeserializeOwned;

use super::{EventCtx, ItemStream, ItemWalk, ListHead, Next, Scan, Split, Start, WireFormat};
use crate::list_watch::{Error, Probed, Result, api_error};
use crate::shard::{Shard, ShardField};

/// The media type of Kubernetes protobuf.
pub(in crate::list_watch) const MEDIA_TYPE: &str = informer_proto::MEDIA_TYPE;

/// Whether a response is protobuf, by its `Content-Type`.
pub(in crate::list_watch) fn is_protobuf(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            t.split(';')
                .next()
                .is_some_and(|base| base.trim() == MEDIA_TYPE)
        })
}

/// Whether a list-watcher still asks for protobuf; shared by its clones. Set off, for good, by
/// the first protobuf answer that could not be decoded.
#[derive(Debug, Clone, Default)]
pub(in crate::list_watch) struct Fallback(Arc<AtomicBool>);

impl Fallback {
    /// Whether protobuf was turned off.
    pub(in crate::list_watch) fn to_json(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Records a protobuf decode error and turns protobuf off.
    pub(in crate::list_watch) fn fail(
        &self,
        what: &'static str,
        source: informer_proto::Error,
    ) -> Error {
        if !self.0.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                error = %source,
                "cannot decode a protobuf {what}; this list-watcher asks for JSON from now on"
            );
        }
        Error::Protobuf { what, source }
    }
}

/// The fields of a newer schema a list-watcher passed over (T8); shared by its clones.
#[derive(Debug, Clone, Default)]
pub(in crate::list_watch) struct Newer {
    count: Arc<AtomicU64>,
    logged: Arc<AtomicBool>,
}

impl Newer {
    /// The count, for the reflector's counters (`informer_protobuf_unknown_fields`).
    pub(in crate::list_watch) fn counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.count)
    }

    /// Adds what one decode passed over; the first time, says so once.
    fn record(&self, skipped: SkippedFields) {
        if skipped.count == 0 {
            return;
        }
        self.count.fetch_add(skipped.count, Ordering::Relaxed);
        if !self.logged.swap(true, Ordering::Relaxed) {
            let (message, field) = skipped.example.unwrap_or_default();
            tracing::info!(
                message,
                field,
                "the server sends protobuf fields this build's schema does not have (a newer \
                 Kubernetes version); passing over them, as the JSON path does (T8)"
            );
        }
    }
}

/// Kubernetes protobuf for one built-in kind.
#[derive(Debug, Clone)]
pub(in crate::list_watch) struct Protobuf {
    /// The kind's message, which every object is decoded through.
    pub(in crate::list_watch) message: &'static Message,
    /// Turned on by the first answer this list-watcher could not decode.
    pub(in crate::list_watch) fallback: Fallback,
    /// The fields of a newer schema passed over.
    pub(in crate::list_watch) newer: Newer,
}

impl Protobuf {
    /// Runs `read` (one decode, on this thread) and counts the newer fields it passed over.
    fn counted<T>(&self, read: impl FnOnce() -> T) -> T {
        let start = Skipped::start();
        let out = read();
        self.newer.record(start.since());
        out
    }
}

impl WireFormat for Protobuf {
    type Hint = ();
    type Walk<'a> = ProtobufWalk<'a>;
    type Stream = ProtobufStream;

    fn list_head(&self, body: &Bytes, list_kinds: &[String]) -> Result<ListHead> {
        self.counted(|| self.read_list_head(body, list_kinds))
    }

    fn walk<'a>(&self, body: &'a [u8]) -> ProtobufWalk<'a> {
        let walk = Envelope::read(body).and_then(|env| {
            let region = list_region(body, &env)?;
            let list = frame::List::read(env.raw)?;
            Ok((region.start, list.items()))
        });
        ProtobufWalk {
            walk: walk.map_err(Some),
            fallback: self.fallback.clone(),
        }
    }

    fn admits(&self, shard: &Shard, item: &[u8]) -> Result<bool> {
        let meta = frame::probe_meta(item).map_err(|e| self.fallback.fail("list", e))?;
        let value = match shard.field() {
            ShardField::Namespace => meta.namespace,
            ShardField::Uid => meta.uid,
        };
        Ok(shard.admits_bytes(value.as_bytes()))
    }

    fn decode<K: DeserializeOwned>(&self, item: &[u8], (): ()) -> Result<K> {
        self.counted(|| from_slice(self.message, item))
            .map_err(|e| self.fallback.fail("list", e))
    }

    fn split_event(&self, buf: &[u8], _scanned: usize, max: usize) -> Split {
        match frame::read_watch_frame(buf, max) {
            Ok(WatchFrame::Frame { event, consumed }) => Split::Event {
                event: consumed - event.len()..consumed,
                consumed,
            },
            Ok(WatchFrame::Incomplete { .. }) => Split::Incomplete { scanned: 0 },
            Err(_) => Split::TooLong,
        }
    }

    fn cut_at_end(&self, rest: &[u8]) -> usize {
        rest.len()
    }

    fn stream_start(&self, prefix: &[u8], list_kinds: &[String]) -> Start<Self::Stream> {
        protobuf_start(self, prefix, list_kinds)
    }

    fn event<K: DeserializeOwned>(&self, event: Bytes, ctx: &EventCtx<K>) -> Result<Probed<K>> {
        self.counted(|| self.read_event(event, ctx))
    }
}

impl Protobuf {
    fn read_list_head(&self, body: &Bytes, list_kinds: &[String]) -> Result<ListHead> {
        let env = Envelope::read(body).map_err(|e| self.fallback.fail("list", e))?;
        if env.kind == "Status" {
            let status = frame::read_status(body).map_err(|e| self.fallback.fail("list", e))?;
            return Err(super::json::status_list_error(status, list_kinds));
        }
        if !list_kinds.iter().any(|k| k == env.kind) {
            return Err(Error::NotAList {
                what: format!("a {}", env.kind),
                expected: list_kinds.first().cloned().unwrap_or_default(),
            });
        }
        list_region(body, &env).map_err(|e| self.fallback.fail("list", e))?;
        let list = frame::List::read(env.raw).map_err(|e| self.fallback.fail("list", e))?;
        Ok(ListHead {
            resource_version: list.meta.resource_version.to_string(),
            continue_token: Some(list.meta.continue_token)
                .filter(|c| !c.is_empty())
                .map(str::to_string),
            shard_info: list.meta.shard_selector.map(str::to_string),
        })
    }

    fn read_event<K: DeserializeOwned>(
        &self,
        event: Bytes,
        ctx: &EventCtx<K>,
    ) -> Result<Probed<K>> {
        let fail = |e| self.fallback.fail("watch event", e);
        let event = frame::WatchEvent::read(&event).map_err(fail)?;
        let env = event.envelope().map_err(fail)?;
        let object = |env: &Envelope<'_>| -> Result<Option<K>> {
            if env.kind != ctx.expected_kind {
                // R16: an object of another kind is dropped, the watch goes on.
                return Err(Error::UnexpectedObject {
                    event_type: event.event_type.to_string(),
                    kind: env.kind.to_string(),
                    expected: ctx.expected_kind.clone(),
                });
            }
            if let Some(shard) = &ctx.shard
                && !self.admits(shard, env.raw)?
            {
                return Ok(None);
            }
            from_slice(self.message, env.raw).map(Some).map_err(fail)
        };
        let ev = match event.event_type {
            "ADDED" | "MODIFIED" | "DELETED" => match object(&env)? {
                None => return Ok(Probed::Foreign),
                Some(obj) => match event.event_type {
                    "ADDED" => WatchEvent::Added(obj),
                    "MODIFIED" => WatchEvent::Modified(obj),
                    _ => WatchEvent::Deleted(obj),
                },
            },
            "BOOKMARK" => {
                let meta = bookmark_meta(&env).map_err(fail)?;
                WatchEvent::Bookmark(Bookmark {
                    types: kube::core::TypeMeta {
                        api_version: env.api_version.to_string(),
                        kind: env.kind.to_string(),
                    },
                    metadata: meta,
                })
            }
            "ERROR" => {
                let status =
                    frame::read_status(event.object).map_err(|_| Error::ErrorEventNotStatus {
                        what: format!("a {} {}", env.api_version, env.kind),
                    })?;
                return Err(api_error(status, None));
            }
            other => {
                return Err(fail(informer_proto::Error::Invalid(format!(
                    "unknown watch event type {other:?}"
                ))));
            }
        };
        Ok(Probed::Event(ev))
    }
}

/// Where the list message of a LIST envelope lies in `body`. A list message always holds its
/// `ListMeta` (gogo writes the non-nullable field even when empty), so an envelope without
/// `raw` is malformed, not an empty list (M14).
fn list_region(body: &[u8], env: &Envelope<'_>) -> Result<Range<usize>, informer_proto::Error> {
    frame::range_within(body, env.raw)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| {
            informer_proto::Error::Invalid(
                "the protobuf list envelope holds no list message (runtime.Unknown.raw)".into(),
            )
        })
}

/// The walk over a protobuf LIST body: the list message's `items` fields, by length prefix.
pub(in crate::list_watch) struct ProtobufWalk<'a> {
    /// Where the list message starts in the body, and its items; `Err` holds the error of
    /// reading the envelope or the list message, handed out once.
    walk: std::result::Result<(usize, frame::Items<'a>), Option<informer_proto::Error>>,
    fallback: Fallback,
}

impl ItemWalk for ProtobufWalk<'_> {
    type Hint = ();

    fn next_item(&mut self) -> Option<Result<(Range<usize>, ())>> {
        let (start, items) = match &mut self.walk {
            Ok((start, items)) => (*start, items),
            Err(e) => return e.take().map(|e| Err(self.fallback.fail("list", e))),
        };
        match items.next()? {
            Ok(range) => Some(Ok((start + range.start..start + range.end, ()))),
            Err(e) => {
                self.walk = Err(None);
                Some(Err(self.fallback.fail("list", e)))
            }
        }
    }

    fn finish(&self, _list_kinds: &[String]) -> Result<()> {
        // A protobuf list's kind was checked from its envelope before the walk, and a list
        // message without items is an empty list.
        Ok(())
    }
}

/// A bookmark's `metadata.resourceVersion` and annotations, read through the object's own
/// message (any kind's `metadata` is an `ObjectMeta`).
fn bookmark_meta(env: &Envelope<'_>) -> Result<BookmarkMeta, informer_proto::Error> {
    #[derive(serde::Deserialize)]
    struct Object {
        metadata: BookmarkMeta,
    }
    let object: Object = from_slice(env.message()?, env.raw)?;
    Ok(object.metadata)
}

// Streaming (`WireFormat::stream_start`): the items of a LIST body as it arrives.

/// A varint at `at`: its value and length.
fn varint(b: &[u8], at: usize) -> Scan<(u64, usize)> {
    let mut v = 0u64;
    for n in 0..10 {
        let Some(&byte) = b.get(at + n) else {
            return Scan::More;
        };
        v |= u64::from(byte & 0x7f) << (7 * n);
        if byte & 0x80 == 0 {
            return Scan::Got((v, n + 1));
        }
    }
    Scan::Bad
}

/// A length-delimited field at `at`: its number, where its content begins and where it ends
/// (both offsets in `b`, the end maybe past `b`'s end); `Bad` for another wire type.
fn len_field(b: &[u8], at: usize) -> Scan<(u64, usize, usize)> {
    match field(b, at) {
        Scan::Got((tag, 2, content, end)) => Scan::Got((tag, content, end)),
        Scan::Got(_) | Scan::Bad => Scan::Bad,
        Scan::More => Scan::More,
    }
}

/// The field at `at`, of any wire type but groups: its number, its wire type, where its value
/// begins and where it ends (the end maybe past `b`'s end).
fn field(b: &[u8], at: usize) -> Scan<(u64, u64, usize, usize)> {
    let (key, klen) = match varint(b, at) {
        Scan::Got(v) => v,
        Scan::More => return Scan::More,
        Scan::Bad => return Scan::Bad,
    };
    let value = at + klen;
    let (wire, tag) = (key & 7, key >> 3);
    let end = match wire {
        0 => match varint(b, value) {
            Scan::Got((_, n)) => Some(value + n),
            Scan::More => return Scan::More,
            Scan::Bad => return Scan::Bad,
        },
        1 => value.checked_add(8),
        5 => value.checked_add(4),
        2 => {
            let (len, llen) = match varint(b, value) {
                Scan::Got(v) => v,
                Scan::More => return Scan::More,
                Scan::Bad => return Scan::Bad,
            };
            let content = value + llen;
            return match usize::try_from(len)
                .ok()
                .and_then(|l| content.checked_add(l))
            {
                Some(end) => Scan::Got((tag, 2, content, end)),
                None => Scan::Bad,
            };
        }
        _ => return Scan::Bad,
    };
    match end {
        Some(end) => Scan::Got((tag, wire, value, end)),
        None => Scan::Bad,
    }
}

pub(super) fn protobuf_start(
    pb: &Protobuf,
    prefix: &[u8],
    list_kinds: &[String],
) -> Start<ProtobufStream> {
    if prefix.len() < MAGIC.len() {
        return if MAGIC.starts_with(prefix) {
            Start::More
        } else {
            Start::Whole
        };
    }
    if !prefix.starts_with(MAGIC) {
        return Start::Whole;
    }
    let mut i = MAGIC.len();
    loop {
        let (tag, raw_at, raw_end) = match len_field(prefix, i) {
            Scan::Got(v) => v,
            Scan::More => return Start::More,
            Scan::Bad => return Start::Whole,
        };
        if tag != 2 {
            if raw_end >= prefix.len() {
                return Start::More;
            }
            i = raw_end;
            continue;
        }
        // `raw`, the list message: the envelope before it must name a list kind.
        let mut env = prefix[..i].to_vec();
        put_len(&mut env, 2, &[]);
        match Envelope::read(&env) {
            Ok(e) if list_kinds.iter().any(|k| k == e.kind) => {}
            _ => return Start::Whole,
        }
        env.truncate(i);
        // Its fields up to the first item: the list's metadata.
        let mut j = raw_at;
        loop {
            if j >= raw_end {
                return Start::Whole;
            }
            let (field, _, end) = match len_field(prefix, j) {
                Scan::Got(v) => v,
                Scan::More => return Start::More,
                Scan::Bad => return Start::Whole,
            };
            if end > raw_end {
                return Start::Whole;
            }
            if field == 2 {
                let mut stream = ProtobufStream {
                    pb: pb.clone(),
                    envelope: env,
                    meta: prefix[raw_at..j].to_vec(),
                    raw_left: raw_end - j,
                    shard_info: None,
                };
                // The metadata before the items, read as a list without items; a reading that
                // fails here fails again, with its error, in `finish` (and filters on the
                // client until then, S4).
                stream.shard_info = stream
                    .finish(&[], list_kinds)
                    .ok()
                    .and_then(|head| head.shard_info);
                return Start::Items { at: j, stream };
            }
            if end > prefix.len() {
                return Start::More;
            }
            j = end;
        }
    }
}

/// The items of a protobuf LIST body as they arrive.
pub(in crate::list_watch) struct ProtobufStream {
    pb: Protobuf,
    /// The body up to the list message (`k8s\0`, the envelope's fields before `raw`).
    envelope: Vec<u8>,
    /// The list message's fields other than its items.
    meta: Vec<u8>,
    /// How much of the list message is still to come.
    raw_left: usize,
    /// `metadata.shardInfo.selector` in the metadata before the items.
    shard_info: Option<String>,
}

impl ProtobufStream {
    fn fail(&self, source: informer_proto::Error) -> Next<()> {
        Next::Err(self.pb.fallback.fail("list", source))
    }
}

impl ItemStream for ProtobufStream {
    type Hint = ();

    fn next(&mut self, buf: &[u8], eof: bool) -> Next<()> {
        if self.raw_left == 0 {
            return Next::End { tail: 0 };
        }
        // `metadata` (1) and `items` (2) are length-delimited; a later field of any wire type
        // is a newer schema's, kept with the metadata for `finish`, which passes over it (T8)
        // as the whole body's reading does.
        let (field, at, end) = match field(buf, 0) {
            Scan::Got((tag, 2, at, end)) => (tag, at, end),
            Scan::Got((tag, _, at, end)) if tag > 2 => (tag, at, end),
            Scan::More if eof => return self.fail(informer_proto::Error::Truncated),
            Scan::More => return Next::More,
            Scan::Got(_) | Scan::Bad => {
                return self.fail(informer_proto::Error::Invalid(
                    "a field of a list message is not metadata (1) or items (2)".into(),
                ));
            }
        };
        if end > self.raw_left {
            return self.fail(informer_proto::Error::Truncated);
        }
        if end > buf.len() {
            return if eof {
                self.fail(informer_proto::Error::Truncated)
            } else {
                Next::More
            };
        }
        self.raw_left -= end;
        if field == 2 {
            Next::Item(at..end, ())
        } else {
            self.meta.extend_from_slice(&buf[..end]);
            Next::Skip { consumed: end }
        }
    }

    fn finish(&self, tail: &[u8], list_kinds: &[String]) -> Result<ListHead> {
        let mut rest = self.envelope.clone();
        // A list message of items only has an empty `ListMeta`.
        let meta: &[u8] = if self.meta.is_empty() {
            &[0x0a, 0]
        } else {
            &self.meta
        };
        put_len(&mut rest, 2, meta);
        rest.extend_from_slice(tail);
        let rest = Bytes::from(rest);
        let head = self.pb.list_head(&rest, list_kinds)?;
        let mut walk = self.pb.walk(&rest);
        while let Some(item) = walk.next_item() {
            item?;
        }
        walk.finish(list_kinds)?;
        Ok(head)
    }

    fn shard_info(&self) -> Option<&str> {
        self.shard_info.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use informer_proto::for_kind;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use serde_json::{Value, json};

    fn format(fallback: &Fallback) -> Protobuf {
        Protobuf {
            message: for_kind("v1", "ConfigMap").expect("a built-in kind"),
            fallback: fallback.clone(),
            newer: Newer::default(),
        }
    }

    /// The `k8s\0` envelope naming `kind`, with `raw` as field 2 when given.
    fn envelope(kind: &str, raw: Option<&[u8]>) -> Bytes {
        let mut tm = Vec::new();
        informer_proto::wire::put_len(&mut tm, 1, b"v1");
        informer_proto::wire::put_len(&mut tm, 2, kind.as_bytes());
        let mut out = informer_proto::MAGIC.to_vec();
        informer_proto::wire::put_len(&mut out, 1, &tm);
        if let Some(raw) = raw {
            informer_proto::wire::put_len(&mut out, 2, raw);
        }
        Bytes::from(out)
    }

    #[test]
    fn a_list_envelope_without_its_list_message_is_an_error() {
        let kinds = ["ConfigMapList".to_string()];
        for raw in [None, Some(&b""[..])] {
            let fallback = Fallback::default();
            let err = match format(&fallback).list_head(&envelope("ConfigMapList", raw), &kinds) {
                Ok(_) => panic!("{raw:?}: read as a list"),
                Err(e) => e,
            };
            assert!(matches!(err, Error::Protobuf { .. }), "{err:?}");
            assert!(fallback.to_json(), "a malformed answer turns to JSON");
        }
        let ok = format(&Fallback::default())
            .list_head(
                &envelope("ConfigMapList", Some(&[0x0a, 0x03, 0x12, 0x01, b'7'])),
                &kinds,
            )
            .unwrap_or_else(|e| panic!("a list: {e}"));
        assert_eq!(ok.resource_version, "7");
        assert!(matches!(
            format(&Fallback::default())
                .list_head(&envelope("PodList", Some(&[0x0a, 0x00])), &kinds),
            Err(Error::NotAList { .. })
        ));
    }

    /// A CustomResourceDefinition whose schema nests `levels` schemas, each the only property
    /// of the one above.
    fn deep_crd(levels: usize) -> Value {
        let mut schema = json!({"type": "string"});
        for _ in 1..levels {
            schema = json!({"type": "object", "properties": {"a": schema}});
        }
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "deeps.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Deep", "plural": "deeps"},
                     "versions": [{"name": "v1", "served": true, "storage": true,
                                   "schema": {"openAPIV3Schema": schema}}]}
        })
    }

    /// Whether each format decodes `v` as a LIST item is decoded: (JSON, protobuf).
    fn decodes(v: &Value) -> (bool, bool) {
        let json = serde_json::to_vec(v).expect("serialize");
        let from_json = crate::list_watch::sized::from_slice::<CustomResourceDefinition>(&json);
        let body = informer_testserver::encode_protobuf(v).expect("encode");
        let env = informer_proto::frame::Envelope::read(&body).expect("envelope");
        let message =
            informer_proto::for_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
                .expect("a built-in kind");
        let from_pb = from_slice::<CustomResourceDefinition>(message, env.raw);
        if let (Ok(a), Ok(b)) = (&from_json, &from_pb) {
            assert_eq!(a, b, "T2");
        }
        (from_json.is_ok(), from_pb.is_ok())
    }

    /// Protobuf nests as deep as JSON, no deeper (informer-proto's `MAX_DEPTH`), and the
    /// deepest object either accepts decodes within a tokio worker's 2 MiB stack.
    #[test]
    fn protobuf_and_json_accept_the_same_nesting_within_a_worker_stack() {
        let run = || {
            let mut deepest = 0;
            for levels in 1..=96 {
                let (json, pb) = decodes(&deep_crd(levels));
                assert_eq!(json, pb, "{levels} levels: JSON {json}, protobuf {pb}");
                if json {
                    deepest = levels;
                }
            }
            deepest
        };
        let deepest = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(run)
            .expect("spawn")
            .join()
            .expect("no panic, no stack overflow");
        assert!(
            (55..90).contains(&deepest),
            "schemas nest up to {deepest} levels"
        );
    }
}
