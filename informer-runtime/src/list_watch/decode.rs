//! Decoding of LIST bodies and newline-delimited watch bodies: each watch line is decoded once ([R16] aside).
//!
//! [R16]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#1-reflector-list-watch-relist

use bytes::{Bytes, BytesMut};
use futures::Stream;
use kube::core::{Status, WatchEvent};
use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor,
};

use super::{Error, ObjectCheck, Result, api_error};

/// Decodes one watch line exactly once into `WatchEvent<K>`. Only when that fails is the line looked
/// at again, to tell an object of another kind (R16) from a malformed line.
pub(super) fn decode_event<K: DeserializeOwned>(
    line: Bytes,
    check: Option<&ObjectCheck<K>>,
    expected: &str,
    exact_capacity: bool,
) -> Result<WatchEvent<K>> {
    let decoded = if exact_capacity {
        super::sized::from_slice::<WatchEvent<K>>(&line)
    } else {
        super::sized::from_slice_seed_unsized(&line, std::marker::PhantomData::<WatchEvent<K>>)
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

/// Splits a response body into newline-terminated lines.
pub(super) struct LineDecoder {
    pub(super) body: super::body::BodyReader,
    pub(super) buf: BytesMut,
    /// `buf[..scanned]` holds no newline, so a large event split over many frames is scanned once.
    pub(super) scanned: usize,
    pub(super) done: bool,
    /// The longest line accepted (M16); a longer one ends the stream with an error.
    pub(super) max_line: usize,
}

impl LineDecoder {
    pub(super) fn into_stream(self) -> impl Stream<Item = Result<Bytes>> + Send + 'static {
        futures::stream::unfold(self, |mut st| async move {
            let item = st.next_line().await?;
            Some((item, st))
        })
    }

    async fn next_line(&mut self) -> Option<Result<Bytes>> {
        loop {
            if let Some(off) = memchr::memchr(b'\n', &self.buf[self.scanned..]) {
                let pos = self.scanned + off;
                if pos > self.max_line {
                    return Some(Err(self.too_long()));
                }
                self.scanned = 0;
                let mut line = self.buf.split_to(pos + 1).freeze();
                line.truncate(pos);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some(Ok(line));
            }
            self.scanned = self.buf.len();
            if self.buf.len() > self.max_line {
                // M16: a line without a newline must not grow without limit.
                return Some(Err(self.too_long()));
            }
            if self.done {
                return None;
            }
            match self.body.next().await {
                Some(Ok(data)) => self.buf.extend_from_slice(&data),
                Some(Err(e)) => {
                    // The connection broke (e.g. a chunk was cut) or its gzip is corrupt:
                    // surface it and end the stream.
                    self.done = true;
                    self.buf.clear();
                    return Some(Err(e));
                }
                None => {
                    self.done = true;
                    let rest = self.buf.iter().filter(|b| !b.is_ascii_whitespace()).count();
                    self.buf.clear();
                    if rest > 0 {
                        return Some(Err(Error::CutChunk(rest)));
                    }
                    return None;
                }
            }
        }
    }
}

impl LineDecoder {
    /// Ends the stream because a line passed `max_line` bytes ([M16]).
    ///
    /// [M16]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#11-known-failure-modes-to-design-against
    fn too_long(&mut self) -> Error {
        self.done = true;
        self.buf = BytesMut::new();
        self.scanned = 0;
        Error::LineTooLong {
            limit: self.max_line,
        }
    }
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
pub(super) fn list_meta(body: &[u8]) -> serde_json::Result<ListMetaFields> {
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
pub(super) struct ListMetaFields {
    pub(super) resource_version: Option<String>,
    #[serde(rename = "continue")]
    pub(super) continue_: Option<String>,
    /// KEP-5866: the shard selector the server applied.
    pub(super) shard_info: Option<ShardInfo>,
    /// The list's `kind` when it precedes `metadata` (filled in by [`list_meta`], not part of
    /// `metadata`).
    #[serde(skip)]
    pub(super) kind: Option<String>,
}

/// `metadata.shardInfo` of a sharded LIST answer (KEP-5866).
#[derive(serde::Deserialize, Default, Debug)]
pub(super) struct ShardInfo {
    pub(super) selector: Option<String>,
}

/// The error for a 2xx LIST body that is not a list of one of the `expected` kinds (M14), or
/// `None` if it is one. A non-Success `Status` becomes the API error it reports, so a 410
/// Status is handled like a 410; every other mismatch is [`Error::NotAList`]. `body` is only
/// parsed again when `kind` is `Status`.
pub(super) fn check_list_kind(
    body: &[u8],
    kind: Option<&str>,
    expected: &[String],
) -> Option<Error> {
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
    // to be wrong. Anything else must still have `items` (`decode_each` checks).
    if kind.ends_with("List") {
        return Some(not_a_list(format!("a {kind}")));
    }
    None
}

/// The error for a 2xx LIST answer that is a `Status` (M14): the failure it reports, so a 410
/// Status is handled like a 410; a Success Status is [`Error::NotAList`].
pub(super) fn status_list_error(status: Status, expected: &[String]) -> Error {
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
