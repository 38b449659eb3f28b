//! Decoding of LIST bodies and newline-delimited watch bodies: each watch line is decoded once (R16 aside).

use bytes::{Bytes, BytesMut};
use futures::Stream;
use http_body_util::BodyExt;
use kube::core::{Status, WatchEvent};
use serde::de::DeserializeOwned;

use super::{Error, ObjectCheck, Result, api_error};

/// Decodes one watch line exactly once into `WatchEvent<K>`. Only when that fails is the line looked
/// at again, to tell an object of another kind (R16) from a malformed line.
pub(super) fn decode_event<K: DeserializeOwned>(
    line: Bytes,
    check: Option<&ObjectCheck<K>>,
    expected: &str,
) -> Result<WatchEvent<K>> {
    match super::sized::from_slice::<WatchEvent<K>>(&line) {
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

/// Splits a response body into newline-terminated lines.
pub(super) struct LineDecoder {
    pub(super) body: kube::client::Body,
    pub(super) buf: BytesMut,
    /// `buf[..scanned]` holds no newline, so a large event split over many frames is scanned once.
    pub(super) scanned: usize,
    pub(super) done: bool,
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
            if let Some(off) = self.buf[self.scanned..].iter().position(|b| *b == b'\n') {
                let pos = self.scanned + off;
                self.scanned = 0;
                let mut line = self.buf.split_to(pos + 1).freeze();
                line.truncate(pos);
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Some(Ok(line));
            }
            self.scanned = self.buf.len();
            if self.done {
                return None;
            }
            match self.body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
                Some(Err(e)) => {
                    // The connection broke (e.g. a chunk was cut): surface it and end the stream.
                    self.done = true;
                    self.buf.clear();
                    return Some(Err(Error::Transport(e)));
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

/// The items of a list body; `null` items decode as empty.
#[derive(serde::Deserialize)]
#[serde(bound(deserialize = "K: DeserializeOwned"))]
pub(super) struct ItemsOnly<K> {
    #[serde(default)]
    pub(super) items: Option<Vec<K>>,
}

#[derive(serde::Deserialize)]
pub(super) struct ListMetaOnly {
    #[serde(default)]
    pub(super) metadata: ListMetaFields,
}

#[derive(serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct ListMetaFields {
    pub(super) resource_version: Option<String>,
    #[serde(rename = "continue")]
    pub(super) continue_: Option<String>,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::list_watch::ErrorClass;
    use k8s_openapi::api::core::v1::ConfigMap;

    #[test]
    fn malformed_line_is_a_decode_error() {
        let err = decode_event::<ConfigMap>(Bytes::from_static(b"{\"type\":"), None, "ConfigMap")
            .unwrap_err();
        assert!(matches!(err, Error::Decode { .. }), "{err:?}");
        assert_eq!(err.class(), ErrorClass::InternalError);
    }

    #[test]
    fn r16_other_kind_is_unexpected_object() {
        let line = br#"{"type":"ADDED","object":{"apiVersion":"meta.k8s.io/v1","kind":"Table","rows":[]}}"#;
        let err =
            decode_event::<ConfigMap>(Bytes::from_static(line), None, "ConfigMap").unwrap_err();
        assert_eq!(err.class(), ErrorClass::UnexpectedObject, "{err:?}");
    }

    #[test]
    fn error_event_is_classified() {
        let line = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}"#;
        let err =
            decode_event::<ConfigMap>(Bytes::from_static(line), None, "ConfigMap").unwrap_err();
        assert_eq!(err.class(), ErrorClass::Expired);
    }
}
