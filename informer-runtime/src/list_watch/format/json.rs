//! JSON on the wire: LIST bodies (walked by hand, `chunked.rs`, and decoded with exactly sized
//! `Vec`s, `sized.rs`) and newline-delimited watch events, each decoded exactly once (R16
//! aside).

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

use bytes::Bytes;
use kube::core::{Status, WatchEvent};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor,
};

use super::{EventCtx, ItemStream, ItemWalk, ListHead, Next, Scan, Split, Start, WireFormat};
use crate::list_watch::chunked::{self, ChunkedList, key_named, malformed, string_end, value_end};
use crate::list_watch::{Error, ObjectCheck, Probed, Result, api_error, sized};
use crate::shard::Shard;

/// JSON (`application/json`), the format of every list-watcher and the fallback of protobuf.
#[derive(Debug, Clone, Copy)]
pub(in crate::list_watch) struct Json {
    /// Decode with exactly sized `Vec`s (M8); off for projections.
    pub(in crate::list_watch) exact_capacity: bool,
}

impl WireFormat for Json {
    /// The counts of the item's arrays (exact capacity), found by the pass that found its end.
    type Hint = Option<Vec<u32>>;
    type Walk<'a> = JsonWalk<'a>;
    type Stream = JsonStream;

    fn list_head(&self, body: &Bytes, list_kinds: &[String]) -> Result<ListHead> {
        let meta = list_meta(body).map_err(|source| Error::Decode {
            what: "list",
            source,
        })?;
        // M14: a Status or a list of another kind with a 2xx is an error before anything else
        // (the apiserver writes `kind` first; a later `kind` is checked by the walk's `finish`).
        if let Some(err) = check_list_kind(body, meta.kind.as_deref(), list_kinds) {
            return Err(err);
        }
        Ok(ListHead {
            resource_version: meta.resource_version.unwrap_or_default(),
            continue_token: meta.continue_.filter(|c| !c.is_empty()),
            shard_info: meta.shard_info.and_then(|i| i.selector),
        })
    }

    fn walk<'a>(&self, body: &'a [u8]) -> JsonWalk<'a> {
        JsonWalk {
            list: ChunkedList::new(body),
            body,
            exact_capacity: self.exact_capacity,
            done: false,
        }
    }

    fn admits(&self, shard: &Shard, item: &[u8]) -> Result<bool> {
        // An item whose field cannot be read is decoded, and its decode says what is wrong.
        Ok(
            chunked::probe_metadata_field(item, shard.field().metadata_key())
                .is_none_or(|value| shard.admits_bytes(&value)),
        )
    }

    fn decode<K: DeserializeOwned>(&self, item: &[u8], hint: Self::Hint) -> Result<K> {
        match hint {
            Some(lens) => sized::from_slice_with_lengths::<K>(item, None, lens),
            None => sized::from_slice_seed_unsized(item, PhantomData::<K>),
        }
        .map_err(|source| Error::Decode {
            what: "list",
            source,
        })
    }

    fn split_event(&self, buf: &[u8], scanned: usize, max: usize) -> Split {
        let from = scanned.min(buf.len());
        match memchr::memchr(b'\n', &buf[from..]) {
            Some(off) => {
                let end = from + off;
                if end > max {
                    Split::TooLong
                } else if buf[..end].iter().all(u8::is_ascii_whitespace) {
                    Split::Skip { consumed: end + 1 }
                } else {
                    Split::Event {
                        event: 0..end,
                        consumed: end + 1,
                    }
                }
            }
            // M16: a line without a newline must not grow without limit.
            None if buf.len() > max => Split::TooLong,
            None => Split::Incomplete { scanned: buf.len() },
        }
    }

    fn cut_at_end(&self, rest: &[u8]) -> usize {
        rest.iter().filter(|b| !b.is_ascii_whitespace()).count()
    }

    fn stream_start(&self, prefix: &[u8], list_kinds: &[String]) -> Start<Self::Stream> {
        json_start(self, prefix, list_kinds)
    }

    fn event<K: DeserializeOwned>(&self, event: Bytes, ctx: &EventCtx<K>) -> Result<Probed<K>> {
        // KEP-5866 on the client: an event of an object outside the shard is dropped after
        // reading its type and metadata, before the decode.
        if ctx
            .shard
            .as_ref()
            .is_some_and(|s| !chunked::shard_admits_event(s, &event))
        {
            return Ok(Probed::Foreign);
        }
        decode_event::<K>(
            event,
            ctx.check.as_ref(),
            &ctx.expected_kind,
            self.exact_capacity,
        )
        .map(Probed::Event)
    }
}

/// The walk over a JSON LIST body: the top level and `items` by hand (strings and bracket
/// depth only, `chunked.rs`); each item's end is found by the pass that counts its arrays for
/// an exactly sized decode, so an item is scanned once before its decode.
pub(in crate::list_watch) struct JsonWalk<'a> {
    list: ChunkedList<'a>,
    body: &'a [u8],
    exact_capacity: bool,
    done: bool,
}

impl ItemWalk for JsonWalk<'_> {
    type Hint = Option<Vec<u32>>;

    fn next_item(&mut self) -> Option<Result<(Range<usize>, Self::Hint)>> {
        if self.done {
            return None;
        }
        let start = match self.list.next_element_start() {
            Ok(Some(start)) => start,
            Ok(None) => {
                self.done = true;
                return None;
            }
            Err(source) => {
                self.done = true;
                return Some(Err(Error::Decode {
                    what: "list",
                    source,
                }));
            }
        };
        let rest = &self.body[start..];
        let found = item_end(rest, self.exact_capacity);
        match found {
            Some((end, hint)) => {
                self.list.element_ends_at(start + end);
                Some(Ok((start..start + end, hint)))
            }
            // Not an object or array, or one that does not close: the item is the rest of the
            // body, whose decode says what is wrong, and the walk ends there.
            None => {
                self.done = true;
                Some(Ok((start..self.body.len(), None)))
            }
        }
    }

    fn finish(&self, list_kinds: &[String]) -> Result<()> {
        if let Some(err) = check_list_kind(self.body, self.list.kind.as_deref(), list_kinds) {
            return Err(err);
        }
        if !self.list.has_items {
            return Err(Error::NotAList {
                what: "a body without `items`".to_string(),
                expected: list_kinds.first().cloned().unwrap_or_default(),
            });
        }
        Ok(())
    }
}

/// Where the list item that starts `rest` ends, and its decode hint (the counts of its arrays
/// with `exact_capacity`); `None` when it is not an object or array, or does not end in `rest`.
/// The one scan of an item before its decode, for the whole-body walk and the stream alike.
fn item_end(rest: &[u8], exact_capacity: bool) -> Option<(usize, Option<Vec<u32>>)> {
    let found = match rest.first() {
        Some(b'{' | b'[') if exact_capacity => {
            sized::value_array_lengths(rest).map(|(lens, end)| (end, Some(lens)))
        }
        Some(b'{' | b'[') => value_end(rest).map(|end| (end, None)),
        _ => None,
    };
    #[cfg(test)]
    SCANNED.with(|n| n.set(n.get() + found.as_ref().map_or(rest.len(), |(end, _)| *end)));
    found
}

#[cfg(test)]
thread_local! {
    /// The bytes [`item_end`] has looked at on this thread, for the tests that its scans of one
    /// item add up to a few times the item's length (R3, T4).
    static SCANNED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The bytes the item scans have looked at on this thread so far.
#[cfg(test)]
pub(in crate::list_watch) fn scanned() -> usize {
    SCANNED.with(std::cell::Cell::get)
}

/// Decodes one watch line exactly once into `WatchEvent<K>`. Only when that fails is the line looked
/// at again, to tell an object of another kind (R16) from a malformed line.
fn decode_event<K: DeserializeOwned>(
    line: Bytes,
    check: Option<&ObjectCheck<K>>,
    expected: &str,
    exact_capacity: bool,
) -> Result<WatchEvent<K>> {
    let decoded = if exact_capacity {
        sized::from_slice::<WatchEvent<K>>(&line)
    } else {
        sized::from_slice_seed_unsized(&line, std::marker::PhantomData::<WatchEvent<K>>)
    };
    match decoded {
        // Every field of `Status` has a default, so any object decodes as one; a real Status
        // has a code or a status.
        Ok(WatchEvent::Error(status)) if status.code == 0 && status.status.is_none() => {
            Err(error_event_not_status(&line))
        }
        Ok(WatchEvent::Error(status)) => Err(api_error(*status, None)),
        Ok(ev) => {
            let (event_type, obj) = match &ev {
                WatchEvent::Added(o) => ("ADDED", o),
                WatchEvent::Modified(o) => ("MODIFIED", o),
                WatchEvent::Deleted(o) => ("DELETED", o),
                _ => return Ok(ev),
            };
            match check.and_then(|c| c(obj)) {
                Some(kind) => Err(Error::UnexpectedObject {
                    event_type: event_type.to_string(),
                    kind,
                    expected: expected.to_string(),
                }),
                None => Ok(ev),
            }
        }
        Err(source) => {
            if let Ok(probe) = serde_json::from_slice::<EventProbe>(&line)
                && let Some(kind) = probe.object.kind.filter(|k| k != expected)
            {
                return Err(Error::UnexpectedObject {
                    event_type: probe.type_,
                    kind,
                    expected: expected.to_string(),
                });
            }
            if let Ok(status) = serde_json::from_slice::<Status>(&line)
                && status.code != 0
            {
                return Err(api_error(status, None));
            }
            Err(Error::Decode {
                what: "watch event",
                source,
            })
        }
    }
}

/// The error for an `ERROR` event whose object is not a `Status`: names the object's kind and
/// apiVersion only; the line itself (maybe a Secret) is logged at debug level at most.
fn error_event_not_status(line: &[u8]) -> Error {
    tracing::debug!(line = %String::from_utf8_lossy(line), "watch ERROR event without a Status");
    let what = match serde_json::from_slice::<EventProbe>(line) {
        Ok(EventProbe {
            object:
                ObjectProbe {
                    kind: Some(kind),
                    api_version,
                },
            ..
        }) => match api_version {
            Some(v) => format!("a {v} {kind}"),
            None => format!("a {kind}"),
        },
        _ => "an object without a kind".to_string(),
    };
    Error::ErrorEventNotStatus { what }
}

/// The fields of a list object the decoders look at; every other field is `Other` and skipped.
/// An identifier, so reading a key allocates nothing.
#[derive(serde::Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum ListField {
    Kind,
    Metadata,
    Items,
    #[serde(other)]
    Other,
}

/// The marker error [`list_meta`] stops the parse with once it has the list metadata.
const STOP: &str = "informer-rs: list metadata read";

/// Reads `metadata.resourceVersion` and `metadata.continue` of a list body, and its `kind` if that
/// comes first (M14). The API server writes `kind` and `metadata` before `items`, so the parse
/// stops at `metadata` instead of walking megabytes of items that the item pipeline decodes anyway; a
/// body with `items` first is walked to its end. A malformed body is an error here only up to
/// the metadata; the rest fails when the items are decoded.
fn list_meta(body: &[u8]) -> serde_json::Result<ListMetaFields> {
    let mut found = None;
    let mut kind = None;
    let mut de = serde_json::Deserializer::from_slice(body);
    let res = MetaSeed {
        slot: &mut found,
        kind: &mut kind,
    }
    .deserialize(&mut de);
    if let Some(mut meta) = found {
        meta.kind = kind;
        return Ok(meta);
    }
    res?;
    de.end()?;
    Ok(ListMetaFields {
        kind,
        ..ListMetaFields::default()
    })
}

/// Stashes the list metadata in its slot (and the `kind` seen before it), then stops the parse.
struct MetaSeed<'s> {
    slot: &'s mut Option<ListMetaFields>,
    kind: &'s mut Option<String>,
}

impl<'de> DeserializeSeed<'de> for MetaSeed<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(field) = map.next_key::<ListField>()? {
            match field {
                ListField::Metadata => {
                    let meta: Option<ListMetaFields> = map.next_value()?;
                    *self.slot = Some(meta.unwrap_or_default());
                    // Stop here: `list_meta` takes the stashed metadata and ignores this error.
                    return Err(de::Error::custom(STOP));
                }
                ListField::Kind => *self.kind = map.next_value()?,
                ListField::Items | ListField::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

#[derive(serde::Deserialize, Default, Debug)]
#[serde(rename_all = "camelCase")]
struct ListMetaFields {
    resource_version: Option<String>,
    #[serde(rename = "continue")]
    continue_: Option<String>,
    /// KEP-5866: the shard selector the server applied.
    shard_info: Option<ShardInfo>,
    /// The list's `kind` when it precedes `metadata` (filled in by [`list_meta`], not part of
    /// `metadata`).
    #[serde(skip)]
    kind: Option<String>,
}

/// `metadata.shardInfo` of a sharded LIST answer (KEP-5866).
#[derive(serde::Deserialize, Default, Debug)]
struct ShardInfo {
    selector: Option<String>,
}

/// The error for a 2xx LIST body that is not a list of one of the `expected` kinds (M14), or
/// `None` if it is one. A non-Success `Status` becomes the API error it reports, so a 410
/// Status is handled like a 410; every other mismatch is [`Error::NotAList`]. `body` is only
/// parsed again when `kind` is `Status`.
fn check_list_kind(body: &[u8], kind: Option<&str>, expected: &[String]) -> Option<Error> {
    let kind = kind?;
    if expected.iter().any(|e| e == kind) {
        return None;
    }
    let not_a_list = |what: String| Error::NotAList {
        what,
        expected: expected.first().cloned().unwrap_or_default(),
    };
    if kind == "Status" {
        return Some(match serde_json::from_slice::<Status>(body) {
            Ok(status) => status_list_error(status, expected),
            Err(_) => not_a_list("a Status that cannot be read".to_string()),
        });
    }
    // A CRD may name its list kind freely (`spec.names.listKind`), and a dynamic informer does
    // not know it: only a kind that follows the `…List` convention of another kind is known
    // to be wrong. Anything else must still have `items` (the walk's `finish` checks).
    if kind.ends_with("List") {
        return Some(not_a_list(format!("a {kind}")));
    }
    None
}

/// The error for a 2xx LIST answer that is a `Status` (M14): the failure it reports, so a 410
/// Status is handled like a 410; a Success Status is [`Error::NotAList`].
pub(in crate::list_watch) fn status_list_error(status: Status, expected: &[String]) -> Error {
    if status.is_failure() || status.code >= 300 {
        tracing::warn!(
            code = status.code,
            reason = %status.reason,
            "the server answered a LIST with a success code and a failure Status"
        );
        return api_error(status, None);
    }
    Error::NotAList {
        what: "a Success Status".to_string(),
        expected: expected.first().cloned().unwrap_or_default(),
    }
}

#[derive(serde::Deserialize)]
struct EventProbe {
    #[serde(rename = "type")]
    type_: String,
    object: ObjectProbe,
}

#[derive(serde::Deserialize)]
struct ObjectProbe {
    kind: Option<String>,
    #[serde(rename = "apiVersion")]
    api_version: Option<String>,
}

// Streaming (`WireFormat::stream_start`): the items of a LIST body as it arrives.

fn ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\n' | b'\r' | b'\t')) {
        i += 1;
    }
    i
}

/// Where the `[` of a JSON list's top-level `items` is in `b`, a prefix of the body.
fn items_open(b: &[u8]) -> Scan<usize> {
    let mut i = ws(b, 0);
    match b.get(i) {
        None => return Scan::More,
        Some(b'{') => i += 1,
        Some(_) => return Scan::Bad,
    }
    let mut first = true;
    loop {
        i = ws(b, i);
        match b.get(i) {
            None => return Scan::More,
            Some(b'}') => return Scan::Bad,
            Some(_) => {}
        }
        if !first {
            if b[i] != b',' {
                return Scan::Bad;
            }
            i = ws(b, i + 1);
        }
        match b.get(i) {
            None => return Scan::More,
            Some(b'"') => {}
            Some(_) => return Scan::Bad,
        }
        let Some(key_end) = string_end(b, i + 1) else {
            return Scan::More;
        };
        let key = &b[i..key_end];
        i = ws(b, key_end);
        match b.get(i) {
            None => return Scan::More,
            Some(b':') => i = ws(b, i + 1),
            Some(_) => return Scan::Bad,
        }
        let Some(&c) = b.get(i) else {
            return Scan::More;
        };
        if key_named(key, "items") {
            // `items: null` (an empty list) and anything odd are read whole.
            return if c == b'[' { Scan::Got(i) } else { Scan::Bad };
        }
        i = match c {
            b'{' | b'[' => match value_end(&b[i..]) {
                Some(end) => i + end,
                None => return Scan::More,
            },
            b'"' => match string_end(b, i + 1) {
                Some(end) => end,
                None => return Scan::More,
            },
            _ => {
                let mut j = i;
                while let Some(&d) = b.get(j) {
                    if matches!(d, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t') {
                        break;
                    }
                    j += 1;
                }
                if j == b.len() {
                    return Scan::More;
                }
                j
            }
        };
        first = false;
    }
}

pub(super) fn json_start(json: &Json, prefix: &[u8], list_kinds: &[String]) -> Start<JsonStream> {
    let open = match items_open(prefix) {
        Scan::Got(at) => at,
        Scan::More => return Start::More,
        Scan::Bad => return Start::Whole,
    };
    let head = prefix[..open].to_vec();
    // The head must read as a list of the expected kind before any item is decoded (M14).
    let mut early = head.clone();
    early.extend_from_slice(b"[]}");
    let Ok(early) = json.list_head(&Bytes::from(early), list_kinds) else {
        return Start::Whole;
    };
    Start::Items {
        at: open + 1,
        stream: JsonStream {
            json: *json,
            head,
            shard_info: early.shard_info,
            first: true,
            at: open + 1,
            done: false,
        },
    }
}

/// The items of a JSON LIST body as they arrive.
pub(in crate::list_watch) struct JsonStream {
    json: Json,
    /// The body up to the `[` of `items`.
    head: Vec<u8>,
    /// `metadata.shardInfo.selector` in `head`.
    shard_info: Option<String>,
    /// Before the first item.
    first: bool,
    /// Where the bytes not yet consumed begin in the body (for error positions).
    at: usize,
    /// The rest of the body was handed out as an item that is not an object.
    done: bool,
}

impl JsonStream {
    /// The bytes ran out at `i`: more may come, or the body is cut.
    fn ran_out(&self, eof: bool, i: usize) -> Next<Option<Vec<u32>>> {
        if eof {
            Next::Err(Error::Decode {
                what: "list",
                source: malformed(self.at + i, "the body ends inside `items`"),
            })
        } else {
            Next::More
        }
    }
}

impl ItemStream for JsonStream {
    type Hint = Option<Vec<u32>>;

    fn next(&mut self, buf: &[u8], eof: bool) -> Next<Self::Hint> {
        if self.done {
            return Next::End { tail: buf.len() };
        }
        let mut i = ws(buf, 0);
        let Some(&c) = buf.get(i) else {
            return self.ran_out(eof, i);
        };
        if c == b']' {
            self.done = true;
            return Next::End { tail: i + 1 };
        }
        if !self.first {
            if c != b',' {
                return Next::Err(Error::Decode {
                    what: "list",
                    source: malformed(self.at + i, "expected `,`"),
                });
            }
            i = ws(buf, i + 1);
            if i == buf.len() {
                return self.ran_out(eof, i);
            }
        }
        let rest = &buf[i..];
        let found = item_end(rest, self.json.exact_capacity);
        match found {
            Some((end, hint)) => {
                self.first = false;
                self.at += i + end;
                Next::Item(i..i + end, hint)
            }
            None if !eof && matches!(rest.first(), Some(b'{' | b'[')) => Next::More,
            // Not an object or array, or one the body ends inside: as in the whole-body walk,
            // the item is the rest, whose decode says what is wrong.
            None => {
                self.done = true;
                self.at += buf.len();
                Next::Item(i..buf.len(), None)
            }
        }
    }

    fn finish(&self, tail: &[u8], list_kinds: &[String]) -> Result<ListHead> {
        let mut rest = self.head.clone();
        rest.extend_from_slice(b"[]");
        rest.extend_from_slice(tail);
        let rest = Bytes::from(rest);
        let head = self.json.list_head(&rest, list_kinds)?;
        let mut walk = self.json.walk(&rest);
        match walk.next_item() {
            None => {}
            Some(Err(e)) => return Err(e),
            Some(Ok(_)) => {
                return Err(Error::NotAList {
                    what: "a list with `items` twice".to_string(),
                    expected: list_kinds.first().cloned().unwrap_or_default(),
                });
            }
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
    use crate::list_watch::ErrorClass;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn malformed_line_is_a_decode_error() {
        let err =
            decode_event::<ConfigMap>(Bytes::from_static(b"{\"type\":"), None, "ConfigMap", true)
                .unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err:?}");
        assert_eq!(err.class(), ErrorClass::InternalError);
    }

    #[test]
    fn r16_other_kind_is_unexpected_object() {
        let line = br#"{"type":"ADDED","object":{"apiVersion":"meta.k8s.io/v1","kind":"Table","rows":[]}}"#;
        let err = decode_event::<ConfigMap>(Bytes::from_static(line), None, "ConfigMap", true)
            .unwrap_err();
        assert_eq!(err.class(), ErrorClass::UnexpectedObject, "{err:?}");
    }

    #[test]
    fn error_event_is_classified() {
        let line = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#;
        let err = decode_event::<ConfigMap>(Bytes::from_static(line), None, "ConfigMap", true)
            .unwrap_err();
        assert_eq!(err.class(), ErrorClass::Expired);
    }
    #[test]
    fn error_event_without_status_names_the_kind_only() {
        let line = br#"{"type":"ERROR","object":{"kind":"Secret","apiVersion":"v1","data":{"p":"czNjcjN0"}}}"#;
        let err = decode_event::<ConfigMap>(Bytes::from_static(line), None, "ConfigMap", true)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "watch ERROR event carries a v1 Secret, not a Status"
        );
        assert_eq!(err.class(), ErrorClass::Other, "R15");
        let line = br#"{"type":"ERROR","object":{}}"#;
        let err = decode_event::<ConfigMap>(Bytes::from_static(line), None, "ConfigMap", true)
            .unwrap_err();
        assert!(err.to_string().contains("without a kind"), "{err}");
    }

    #[test]
    fn list_meta_stops_at_metadata_and_handles_other_layouts() {
        // The apiserver's layout: metadata first. The items after it are not even looked at,
        // so garbage there does not fail this step (the item decode reports it).
        let body = br#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"12","continue":"abc"},"items":[{not json"#;
        let meta = list_meta(body).unwrap();
        assert_eq!(meta.resource_version.as_deref(), Some("12"));
        assert_eq!(meta.continue_.as_deref(), Some("abc"));
        assert_eq!(
            list_meta(body).unwrap().kind.as_deref(),
            Some("ConfigMapList")
        );
        // Items first: walked, then metadata read.
        let body = br#"{"items":[{"metadata":{"name":"a"}}],"metadata":{"resourceVersion":"7"}}"#;
        assert_eq!(
            list_meta(body).unwrap().resource_version.as_deref(),
            Some("7")
        );
        // No or null metadata: empty.
        assert!(
            list_meta(br#"{"items":[]}"#)
                .unwrap()
                .resource_version
                .is_none()
        );
        assert!(
            list_meta(br#"{"metadata":null}"#)
                .unwrap()
                .resource_version
                .is_none()
        );
        // Malformed before the metadata, or not an object: a real error, not the stop marker.
        for bad in [
            &br#"{"kind":"#[..],
            b"[1,2]",
            b"{\"metadata\":{\"resourceVersion\":5}}",
        ] {
            let err = list_meta(bad).unwrap_err();
            assert!(!err.to_string().contains(STOP), "{err}");
        }
    }

    #[test]
    fn m14_check_list_kind() {
        let expected = ["ConfigMapList".to_string()];
        assert!(check_list_kind(b"", Some("ConfigMapList"), &expected).is_none());
        assert!(
            check_list_kind(b"", None, &expected).is_none(),
            "no kind: items decide"
        );
        let err = check_list_kind(b"", Some("PodList"), &expected).unwrap();
        assert!(matches!(err, Error::NotAList { .. }), "{err:?}");
        assert!(err.to_string().contains("PodList"), "{err}");
        assert!(
            check_list_kind(b"", Some("FooCollection"), &expected).is_none(),
            "a CRD's own listKind: items decide"
        );
        let gone = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old","reason":"Expired","code":410}"#;
        let err = check_list_kind(gone, Some("Status"), &expected).unwrap();
        assert_eq!(
            err.class(),
            ErrorClass::Expired,
            "a 410 Status is a 410: {err:?}"
        );
        let ok =
            br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","code":200}"#;
        let err = check_list_kind(ok, Some("Status"), &expected).unwrap();
        assert!(matches!(err, Error::NotAList { .. }), "{err:?}");
    }
}
