//! The framing of protobuf LIST and WATCH answers (T1 in `docs/behaviour.md`).
//!
//! - A LIST answer (and any single object) is `k8s\0` + a `runtime.Unknown` envelope
//!   (`typeMeta` {apiVersion 1, kind 2} at 1, `raw` at 2, `contentEncoding` at 3, `contentType`
//!   at 4) whose `raw` is the list message: `ListMeta` at 1 (selfLink 1, resourceVersion 2,
//!   continue 3, remainingItemCount 4), the items at 2, each an object's message without
//!   envelope or type meta.
//! - A WATCH answer is a stream of frames, each a 4-byte big-endian length and then a
//!   `metav1.WatchEvent` message (no magic, no envelope): type at 1, and at 2 a
//!   `runtime.RawExtension` whose `raw` (1) is the object as `k8s\0` + `runtime.Unknown`.
//!   An `ERROR` event's object is a `metav1.Status`; see [`read_status`].

use std::ops::Range;

use crate::schema::{Message, by_name, for_kind};
use crate::wire::{Reader, Value as Wire};
use crate::{Deserializer, Error, MAGIC};

/// The fields of a `runtime.Unknown` envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Envelope<'a> {
    /// `typeMeta.apiVersion` (`v1`, `apps/v1`).
    pub api_version: &'a str,
    /// `typeMeta.kind` (`PodList`, `Pod`, `Status`).
    pub kind: &'a str,
    /// The message of the object or list.
    pub raw: &'a [u8],
    /// `contentType`, empty from kube-apiserver.
    pub content_type: &'a str,
}

fn text<'a>(b: &'a [u8], what: &str) -> Result<&'a str, Error> {
    std::str::from_utf8(b).map_err(|e| Error::not_utf8(what, e))
}

const UNKNOWN: &str = "apimachinery.pkg.runtime.Unknown";
const TYPE_META: &str = "apimachinery.pkg.runtime.TypeMeta";
const LIST_META: &str = "apimachinery.pkg.apis.meta.v1.ListMeta";
const WATCH_EVENT: &str = "apimachinery.pkg.apis.meta.v1.WatchEvent";
const RAW_EXTENSION: &str = "apimachinery.pkg.runtime.RawExtension";

/// A field of a framing message that none of its readers' patterns took: one of its first
/// `known` fields with the wrong wire type is an error; a later field is a newer schema's,
/// passed over and counted (T8), as the object readers pass them over.
fn other(message: &'static str, known: u32, tag: u32) -> Result<(), Error> {
    if tag <= known {
        return Err(Error::Invalid(format!(
            "field {tag} of {message} has the wrong wire type"
        )));
    }
    crate::skipped::pass_over(message, tag);
    Ok(())
}

impl<'a> Envelope<'a> {
    /// Reads `k8s\0` + `runtime.Unknown` from `body`. A non-empty `contentEncoding` is an error
    /// (none is defined), and so is an envelope without a kind.
    pub fn read(body: &'a [u8]) -> Result<Self, Error> {
        let rest = body.strip_prefix(MAGIC).ok_or(Error::NoMagic)?;
        let mut env = Envelope {
            api_version: "",
            kind: "",
            raw: &[],
            content_type: "",
        };
        let mut r = Reader::new(rest);
        let mut raw_seen = false;
        while let Some((tag, w)) = r.next_field()? {
            match (tag, w) {
                (1, Wire::Len(b)) => {
                    let mut tm = Reader::new(b);
                    while let Some((t, w)) = tm.next_field()? {
                        match (t, w) {
                            (1, Wire::Len(s)) => env.api_version = text(s, "typeMeta.apiVersion")?,
                            (2, Wire::Len(s)) => env.kind = text(s, "typeMeta.kind")?,
                            _ => other(TYPE_META, 2, t)?,
                        }
                    }
                }
                // One object per envelope: a second `raw` would make the last one win here
                // and the first one win for a reader that streams the body (M14).
                (2, Wire::Len(_)) if raw_seen => {
                    return Err(Error::Invalid(
                        "the runtime.Unknown envelope holds its raw field twice".into(),
                    ));
                }
                (2, Wire::Len(b)) => {
                    env.raw = b;
                    raw_seen = true;
                }
                (3, Wire::Len(b)) if !b.is_empty() => {
                    return Err(Error::ContentEncoding(
                        String::from_utf8_lossy(b).into_owned(),
                    ));
                }
                (3, Wire::Len(_)) => {}
                (4, Wire::Len(b)) => env.content_type = text(b, "contentType")?,
                _ => other(UNKNOWN, 4, tag)?,
            }
        }
        if env.kind.is_empty() {
            return Err(Error::Invalid(
                "the protobuf envelope names no kind (typeMeta.kind)".into(),
            ));
        }
        Ok(env)
    }

    /// The schema message of the envelope's apiVersion and kind.
    pub fn message(&self) -> Result<&'static Message, Error> {
        for_kind(self.api_version, self.kind).ok_or_else(|| Error::UnknownKind {
            api_version: self.api_version.to_owned(),
            kind: self.kind.to_owned(),
        })
    }

    /// A deserializer of the enveloped object, presenting its `apiVersion` and `kind` too.
    pub fn deserializer(&self) -> Result<Deserializer<'a>, Error> {
        Ok(
            Deserializer::new(self.message()?, self.raw)
                .with_type_meta(self.api_version, self.kind),
        )
    }
}

/// Where `part` lies within `whole`, as a byte range of `whole`; `None` when `part` is not a
/// sub-slice of it (an absent field's `&[]`, say). For turning the slices [`Envelope::read`]
/// and [`List::items`] hand out back into offsets without trusting pointer arithmetic.
pub fn range_within(whole: &[u8], part: &[u8]) -> Option<Range<usize>> {
    let (w, p) = (whole.as_ptr_range(), part.as_ptr_range());
    if p.start < w.start || p.end > w.end {
        return None;
    }
    let start = (p.start as usize).checked_sub(w.start as usize)?;
    Some(start..start + part.len())
}

/// Deserializes the object in a `k8s\0` + `runtime.Unknown` body (a GET answer, a watch event's
/// object), with the envelope's `apiVersion` and `kind` presented as the object's.
///
/// ```
/// # fn body() -> Vec<u8> {
/// #     use informer_proto::wire::put_len;
/// #     let mut tm = Vec::new();
/// #     put_len(&mut tm, 1, b"v1");
/// #     put_len(&mut tm, 2, b"ConfigMap");
/// #     let mut out = informer_proto::MAGIC.to_vec();
/// #     put_len(&mut out, 1, &tm);
/// #     put_len(&mut out, 2, &[0x0a, 4, 0x0a, 2, b'c', b'm']);
/// #     out
/// # }
/// #[derive(serde::Deserialize)]
/// #[serde(rename_all = "camelCase")]
/// struct Typed { api_version: String, kind: String }
/// let t: Typed = informer_proto::frame::from_envelope(&body())?;
/// assert_eq!((t.api_version.as_str(), t.kind.as_str()), ("v1", "ConfigMap"));
/// # Ok::<(), informer_proto::Error>(())
/// ```
pub fn from_envelope<'de, T: serde::Deserialize<'de>>(body: &'de [u8]) -> Result<T, Error> {
    T::deserialize(Envelope::read(body)?.deserializer()?)
}

/// The `ListMeta` of a list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListMeta<'a> {
    /// `metadata.resourceVersion`.
    pub resource_version: &'a str,
    /// `metadata.continue`, empty on the last page.
    pub continue_token: &'a str,
    /// `metadata.remainingItemCount`, when the server counted.
    pub remaining_item_count: Option<i64>,
    /// `shardInfo.selector` (KEP-5866, field 5): the shard selector the server applied; `None`
    /// when it sent the whole collection.
    pub shard_selector: Option<&'a str>,
}

/// A list message: its `ListMeta`, and its items, not decoded.
#[derive(Debug, Clone, Copy)]
pub struct List<'a> {
    /// The list's metadata.
    pub meta: ListMeta<'a>,
    raw: &'a [u8],
}

impl<'a> List<'a> {
    /// Reads the list message `raw` (an [`Envelope::raw`] whose kind is a `…List`): its
    /// `ListMeta`, passing over the items by their lengths. `metadata` (1) or `items` (2) of
    /// another wire type is an error; a later field (a newer schema's) is passed over (T8).
    pub fn read(raw: &'a [u8]) -> Result<Self, Error> {
        let mut meta = ListMeta::default();
        let mut r = Reader::new(raw);
        while let Some((tag, w)) = r.next_field()? {
            match (tag, w) {
                (1, Wire::Len(b)) => meta = list_meta(b)?,
                (2, Wire::Len(_)) => {}
                _ => other("a list message", 2, tag)?,
            }
        }
        Ok(List { meta, raw })
    }

    /// The list message's bytes, which [`List::items`] indexes.
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// Each item's byte range in [`List::raw`], in order: `&list.raw()[range]` is the item's
    /// message, for [`crate::from_slice`] with the item kind's message.
    pub fn items(&self) -> Items<'a> {
        Items {
            reader: Reader::new(self.raw),
            len: self.raw.len(),
        }
    }
}

/// The items of a [`List`], as byte ranges.
#[derive(Debug, Clone)]
pub struct Items<'a> {
    reader: Reader<'a>,
    len: usize,
}

impl Iterator for Items<'_> {
    type Item = Result<Range<usize>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.reader.next_field() {
                Err(e) => return Some(Err(e)),
                Ok(None) => return None,
                Ok(Some((2, Wire::Len(b)))) => {
                    let end = self.len - self.reader.rest().len();
                    return Some(Ok(end - b.len()..end));
                }
                Ok(Some(_)) => {}
            }
        }
    }
}

fn list_meta(b: &[u8]) -> Result<ListMeta<'_>, Error> {
    let mut meta = ListMeta::default();
    let mut r = Reader::new(b);
    while let Some((tag, w)) = r.next_field()? {
        match (tag, w) {
            (1, Wire::Len(_)) => {}
            (2, Wire::Len(s)) => meta.resource_version = text(s, "metadata.resourceVersion")?,
            (3, Wire::Len(s)) => meta.continue_token = text(s, "metadata.continue")?,
            (4, Wire::Varint(n)) => meta.remaining_item_count = Some(n as i64),
            (5, Wire::Len(info)) => {
                let mut ir = Reader::new(info);
                let mut selector = "";
                while let Some((t, w)) = ir.next_field()? {
                    if let (1, Wire::Len(s)) = (t, w) {
                        selector = text(s, "metadata.shardInfo.selector")?;
                    }
                }
                meta.shard_selector = Some(selector);
            }
            _ => other(LIST_META, 5, tag)?,
        }
    }
    Ok(meta)
}

/// What [`read_watch_frame`] found at the start of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFrame<'a> {
    /// A whole frame.
    Frame {
        /// The `WatchEvent` message (see [`WatchEvent::read`]).
        event: &'a [u8],
        /// Bytes the frame takes in the buffer, length prefix included: drop them before the
        /// next call.
        consumed: usize,
    },
    /// The buffer holds only part of a frame: read at least `needed` more bytes.
    Incomplete {
        /// Bytes missing, at least.
        needed: usize,
    },
}

/// Reads the watch frame at the start of `buf`: a 4-byte big-endian length, then that many
/// bytes. A length above `max_frame` is an error (before any of it is buffered).
pub fn read_watch_frame(buf: &[u8], max_frame: usize) -> Result<WatchFrame<'_>, Error> {
    let Some((head, rest)) = buf.split_first_chunk::<4>() else {
        return Ok(WatchFrame::Incomplete {
            needed: 4 - buf.len(),
        });
    };
    let len = u32::from_be_bytes(*head);
    let n = usize::try_from(len)
        .ok()
        .filter(|n| *n <= max_frame)
        .ok_or(Error::FrameTooLarge {
            len: u64::from(len),
            max: max_frame,
        })?;
    match rest.get(..n) {
        Some(event) => Ok(WatchFrame::Frame {
            event,
            consumed: 4 + n,
        }),
        None => Ok(WatchFrame::Incomplete {
            needed: n - rest.len(),
        }),
    }
}

/// A `metav1.WatchEvent`: its type and its object, not decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchEvent<'a> {
    /// `ADDED`, `MODIFIED`, `DELETED`, `BOOKMARK` or `ERROR`.
    pub event_type: &'a str,
    /// The object: `k8s\0` + `runtime.Unknown` (see [`Envelope::read`]; [`read_status`] for
    /// `ERROR`).
    pub object: &'a [u8],
}

impl<'a> WatchEvent<'a> {
    /// Splits a `WatchEvent` message (a frame's bytes) into its type and object.
    pub fn read(event: &'a [u8]) -> Result<Self, Error> {
        let mut out = WatchEvent {
            event_type: "",
            object: &[],
        };
        let mut r = Reader::new(event);
        while let Some((tag, w)) = r.next_field()? {
            match (tag, w) {
                (1, Wire::Len(s)) => out.event_type = text(s, "the watch event's type")?,
                (2, Wire::Len(ext)) => {
                    let mut er = Reader::new(ext);
                    while let Some((t, w)) = er.next_field()? {
                        match (t, w) {
                            (1, Wire::Len(raw)) => out.object = raw,
                            _ => other(RAW_EXTENSION, 1, t)?,
                        }
                    }
                }
                _ => other(WATCH_EVENT, 2, tag)?,
            }
        }
        if out.event_type.is_empty() {
            return Err(Error::Invalid("a watch event without a type".into()));
        }
        Ok(out)
    }

    /// The object's envelope.
    pub fn envelope(&self) -> Result<Envelope<'a>, Error> {
        Envelope::read(self.object)
    }
}

/// An object's namespace, name and uid, as [`probe_meta`] reads them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ObjectRef<'a> {
    /// `metadata.namespace`, empty for cluster-scoped objects.
    pub namespace: &'a str,
    /// `metadata.name`.
    pub name: &'a str,
    /// `metadata.uid`.
    pub uid: &'a str,
}

/// Reads only an object's `metadata` (field 1 of every built-in kind's message, an
/// `ObjectMeta`) for its namespace (3), name (1) and uid (5): enough to filter by shard before
/// decoding. The other fields are passed over by their lengths.
pub fn probe_meta(object: &[u8]) -> Result<ObjectRef<'_>, Error> {
    let mut out = ObjectRef::default();
    let mut r = Reader::new(object);
    while let Some((tag, w)) = r.next_field()? {
        let (1, Wire::Len(meta)) = (tag, w) else {
            continue;
        };
        let mut mr = Reader::new(meta);
        while let Some((t, w)) = mr.next_field()? {
            match (t, w) {
                (1, Wire::Len(s)) => out.name = text(s, "metadata.name")?,
                (3, Wire::Len(s)) => out.namespace = text(s, "metadata.namespace")?,
                (5, Wire::Len(s)) => out.uid = text(s, "metadata.uid")?,
                _ => {}
            }
        }
    }
    Ok(out)
}

/// Decodes a `metav1.Status` (`k8s\0` + envelope, as in an `ERROR` watch event or an error
/// answer) into kube's `Status`.
pub fn read_status(body: &[u8]) -> Result<kube_core::Status, Error> {
    let env = Envelope::read(body)?;
    if env.kind != "Status" {
        return Err(Error::Invalid(format!(
            "expected a Status, the envelope holds a {}",
            env.kind
        )));
    }
    let msg =
        by_name("apimachinery.pkg.apis.meta.v1.Status").ok_or_else(|| Error::UnknownKind {
            api_version: env.api_version.to_owned(),
            kind: env.kind.to_owned(),
        })?;
    serde::Deserialize::deserialize(
        Deserializer::new(msg, env.raw).with_type_meta(env.api_version, env.kind),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::put_len;

    #[test]
    fn list_meta_reads_the_shard_selector_kep_5866() {
        let mut info = Vec::new();
        put_len(&mut info, 1, b"shardRange(object.metadata.uid, 0x0, 0x8)");
        let mut meta = Vec::new();
        put_len(&mut meta, 2, b"42");
        put_len(&mut meta, 5, &info);
        let mut list = Vec::new();
        put_len(&mut list, 1, &meta);
        let read = List::read(&list).expect("a list");
        assert_eq!(read.meta.resource_version, "42");
        assert_eq!(
            read.meta.shard_selector,
            Some("shardRange(object.metadata.uid, 0x0, 0x8)")
        );
        let mut plain = Vec::new();
        put_len(&mut plain, 2, b"7");
        let mut list = Vec::new();
        put_len(&mut list, 1, &plain);
        assert_eq!(List::read(&list).expect("a list").meta.shard_selector, None);
    }
}
