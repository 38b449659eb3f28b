//! Kubernetes protobuf on the wire ([T1]): what a LIST or WATCH answer in
//! `application/vnd.kubernetes.protobuf` looks like, read with `informer-proto`.
//!
//! Built-in kinds are asked for in protobuf with JSON as the fallback, as client-go's typed
//! clients do; the answer's `Content-Type` says which arrived. A LIST is the `k8s\0` envelope
//! around the list message, whose items the item pipeline walks by byte range (`page.rs`); a
//! WATCH is a stream of length-prefixed `WatchEvent` frames ([`FrameDecoder`]). Objects decode
//! straight into the cached form through `informer-proto`'s serde `Deserializer`, with no
//! intermediate value ([T2]).
//!
//! A protobuf answer this schema cannot read (a field of a newer Kubernetes version, say) is an
//! error once: the list-watcher then asks for JSON from its next request on ([`Fallback`]), so
//! a schema gap costs a retry, never the informer.
//!
//! [T1]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#18-transport-after-kube-apiserver-and-client-go
//! [T2]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#18-transport-after-kube-apiserver-and-client-go

use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::{Buf as _, Bytes, BytesMut};
use futures::Stream;
use informer_proto::frame::{self, Envelope, WatchFrame};
use informer_proto::{Message, from_slice};
use kube::core::WatchEvent;
use kube::core::watch::{Bookmark, BookmarkMeta};
use serde::de::DeserializeOwned;

use super::body::BodyReader;
use super::{Error, Probed, Result, api_error};
use crate::shard::{Shard, ShardField};

/// The `Accept` of a LIST or WATCH of a built-in kind: protobuf, then JSON.
pub(super) const ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

/// Whether a response is protobuf, by its `Content-Type`.
pub(super) fn is_protobuf(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            t.split(';')
                .next()
                .is_some_and(|base| base.trim() == informer_proto::MEDIA_TYPE)
        })
}

/// Whether a list-watcher still asks for protobuf; shared by its clones. Set off, for good, by
/// the first protobuf answer that could not be decoded.
#[derive(Debug, Clone, Default)]
pub(super) struct Fallback(Arc<AtomicBool>);

impl Fallback {
    pub(super) fn to_json(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Records a protobuf decode error and turns protobuf off.
    pub(super) fn fail(&self, what: &'static str, source: informer_proto::Error) -> Error {
        if !self.0.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                error = %source,
                "cannot decode a protobuf {what}; this list-watcher asks for JSON from now on"
            );
        }
        Error::Protobuf { what, source }
    }
}

/// What a protobuf LIST body holds besides its items.
pub(super) struct ListHead {
    pub(super) resource_version: String,
    pub(super) continue_token: Option<String>,
    pub(super) shard_info: Option<String>,
    /// The list message's bytes within the body, whose items the pipeline walks.
    pub(super) raw: Range<usize>,
}

/// Reads a protobuf LIST body's envelope and list metadata. A `Status` is the error it reports;
/// a list of another kind is [`Error::NotAList`] (M14).
pub(super) fn list_head(
    body: &Bytes,
    list_kinds: &[String],
    fallback: &Fallback,
) -> Result<ListHead> {
    let env = Envelope::read(body).map_err(|e| fallback.fail("list", e))?;
    if env.kind == "Status" {
        let status = frame::read_status(body).map_err(|e| fallback.fail("list", e))?;
        return Err(super::decode::status_list_error(status, list_kinds));
    }
    if !list_kinds.iter().any(|k| k == env.kind) {
        return Err(Error::NotAList {
            what: format!("a {}", env.kind),
            expected: list_kinds.first().cloned().unwrap_or_default(),
        });
    }
    // A list message always holds its `ListMeta` (gogo writes the non-nullable field even when
    // empty), so an envelope without `raw` is malformed, not an empty list (M14).
    let raw = frame::range_within(body, env.raw)
        .filter(|r| !r.is_empty())
        .ok_or_else(|| {
            fallback.fail(
                "list",
                informer_proto::Error::Invalid(
                    "the protobuf list envelope holds no list message (runtime.Unknown.raw)".into(),
                ),
            )
        })?;
    let list = frame::List::read(env.raw).map_err(|e| fallback.fail("list", e))?;
    Ok(ListHead {
        resource_version: list.meta.resource_version.to_string(),
        continue_token: Some(list.meta.continue_token)
            .filter(|c| !c.is_empty())
            .map(str::to_string),
        shard_info: list.meta.shard_selector.map(str::to_string),
        raw,
    })
}

/// Whether `shard` admits the object `item` (a message's bytes), by its probed metadata.
pub(super) fn shard_admits(shard: &Shard, item: &[u8]) -> Result<bool, informer_proto::Error> {
    let meta = frame::probe_meta(item)?;
    let value = match shard.field() {
        ShardField::Namespace => meta.namespace,
        ShardField::Uid => meta.uid,
    };
    Ok(shard.admits_bytes(value.as_bytes()))
}

/// Decodes one object's message bytes into `K`.
pub(super) fn decode_object<K: DeserializeOwned>(
    message: &'static Message,
    item: &[u8],
) -> Result<K, informer_proto::Error> {
    from_slice(message, item)
}

/// Splits a protobuf watch body into its length-prefixed frames; each frame is capped at
/// `max_frame` bytes (M16's line cap), counted decompressed.
pub(super) struct FrameDecoder {
    pub(super) body: BodyReader,
    pub(super) buf: BytesMut,
    pub(super) done: bool,
    pub(super) max_frame: usize,
}

impl FrameDecoder {
    pub(super) fn into_stream(self) -> impl Stream<Item = Result<Bytes>> + Send + 'static {
        futures::stream::unfold(self, |mut st| async move {
            let item = st.next_frame().await?;
            Some((item, st))
        })
    }

    async fn next_frame(&mut self) -> Option<Result<Bytes>> {
        loop {
            if self.done && self.buf.is_empty() {
                return None;
            }
            match frame::read_watch_frame(&self.buf, self.max_frame) {
                Ok(WatchFrame::Frame { event, consumed }) => {
                    let start = consumed - event.len();
                    let mut frame = self.buf.split_to(consumed).freeze();
                    frame.advance(start);
                    return Some(Ok(frame));
                }
                Ok(WatchFrame::Incomplete { .. }) if self.done => {
                    let rest = self.buf.len();
                    self.buf.clear();
                    return Some(Err(Error::CutChunk(rest)));
                }
                Ok(WatchFrame::Incomplete { .. }) => {}
                Err(_) => {
                    self.done = true;
                    self.buf = BytesMut::new();
                    return Some(Err(Error::LineTooLong {
                        limit: self.max_frame,
                    }));
                }
            }
            match self.body.next().await {
                Some(Ok(data)) => self.buf.extend_from_slice(&data),
                Some(Err(e)) => {
                    self.done = true;
                    self.buf.clear();
                    return Some(Err(e));
                }
                None => self.done = true,
            }
        }
    }
}

/// What a protobuf watch stream needs to decode its events.
#[derive(Clone)]
pub(super) struct EventDecoder {
    pub(super) message: &'static Message,
    pub(super) expected_kind: String,
    pub(super) shard: Option<Shard>,
    pub(super) fallback: Fallback,
}

impl EventDecoder {
    /// Decodes one frame (a `WatchEvent` message) into an event; an object outside the client
    /// shard is [`Probed::Foreign`], read up to its metadata only.
    pub(super) fn decode<K: DeserializeOwned>(&self, frame: &[u8]) -> Result<Probed<K>> {
        let fail = |e| self.fallback.fail("watch event", e);
        let event = frame::WatchEvent::read(frame).map_err(fail)?;
        let env = event.envelope().map_err(fail)?;
        let object = |env: &Envelope<'_>| -> Result<Option<K>> {
            if env.kind != self.expected_kind {
                // R16: an object of another kind is dropped, the watch goes on.
                return Err(Error::UnexpectedObject {
                    event_type: event.event_type.to_string(),
                    kind: env.kind.to_string(),
                    expected: self.expected_kind.clone(),
                });
            }
            if let Some(shard) = &self.shard
                && !shard_admits(shard, env.raw).map_err(fail)?
            {
                return Ok(None);
            }
            decode_object(self.message, env.raw).map(Some).map_err(fail)
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

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use serde_json::{Value, json};

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
            let err = match list_head(&envelope("ConfigMapList", raw), &kinds, &fallback) {
                Ok(_) => panic!("{raw:?}: read as a list"),
                Err(e) => e,
            };
            assert!(matches!(err, Error::Protobuf { .. }), "{err:?}");
            assert!(fallback.to_json(), "a malformed answer turns to JSON");
        }
        let ok = list_head(
            &envelope("ConfigMapList", Some(&[0x0a, 0x03, 0x12, 0x01, b'7'])),
            &kinds,
            &Fallback::default(),
        )
        .unwrap_or_else(|e| panic!("a list: {e}"));
        assert_eq!(ok.resource_version, "7");
        assert!(matches!(
            list_head(
                &envelope("PodList", Some(&[0x0a, 0x00])),
                &kinds,
                &Fallback::default()
            ),
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
        let from_json = super::super::sized::from_slice::<CustomResourceDefinition>(&json);
        let body = informer_testserver::encode_protobuf(v).expect("encode");
        let env = informer_proto::frame::Envelope::read(&body).expect("envelope");
        let message =
            informer_proto::for_kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")
                .expect("a built-in kind");
        let from_pb = decode_object::<CustomResourceDefinition>(message, env.raw);
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
