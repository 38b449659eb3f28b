//! Content negotiation: request bodies in JSON, YAML or Kubernetes protobuf; responses in JSON
//! unless the client accepts only protobuf (then `k8s\0` + `runtime.Unknown`), and 406 for what
//! neither covers.

use axum::body::{Body, to_bytes};
use axum::response::Response;
use http::{HeaderValue, header};
use serde_json::Value;

use super::Mode;
use crate::protobuf::{self, Schema};
use crate::status::ApiError;

/// Largest response body re-encoded as protobuf (a whole LIST may be large).
const MAX_TRANSCODE: usize = 1 << 30;

/// The encoding of a response body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// `application/json` (everything the store holds).
    Json,
    /// `application/vnd.kubernetes.protobuf`.
    Protobuf,
}

/// One media range of an Accept header: the type and its `as` and `drop` parameters.
struct MediaRange<'a> {
    base: &'a str,
    as_kind: Option<&'a str>,
    /// `drop` (KEP-5958): the field to leave out of every object.
    drop: Option<&'a str>,
}

/// The only field KEP-5958 lets a client drop.
const DROPPABLE: &str = "metadata.managedFields";

fn media_ranges(accept: &str) -> impl Iterator<Item = MediaRange<'_>> {
    accept.split(',').map(|part| {
        let mut it = part.split(';');
        let base = it.next().unwrap_or_default().trim();
        let params: Vec<(&str, &str)> = it
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim(), v.trim()))
            .collect();
        let param = |name: &str| params.iter().find(|(k, _)| *k == name).map(|(_, v)| *v);
        MediaRange {
            base,
            as_kind: param("as"),
            drop: param("drop"),
        }
    })
}

impl MediaRange<'_> {
    /// Under `ManagedFieldsOptOut` (`drop_gate`): whether the range asks to drop managedFields
    /// (`Some(true)`), does not (`Some(false)`: no `drop`, or an empty one, which 1.38 accepts
    /// as dropping nothing), or asks to drop something else and so is not acceptable (`None`).
    /// Without the gate the parameter is ignored.
    fn drops(&self, drop_gate: bool) -> Option<bool> {
        match self.drop {
            Some("") => Some(false),
            Some(field) if drop_gate => (field == DROPPABLE).then_some(true),
            _ => Some(false),
        }
    }
}

/// The outcome of content negotiation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Negotiated {
    /// The encoding of the answer.
    pub(crate) wire: Wire,
    /// How objects are rendered.
    pub(crate) mode: Mode,
    /// Whether plain JSON objects are acceptable too: the fallback when protobuf cannot carry an
    /// answer (a watch, a custom resource, a field the schema lacks).
    pub(crate) json_ok: bool,
    /// Whether objects are sent without `metadata.managedFields` (KEP-5958, T7).
    pub(crate) drop_managed_fields: bool,
}

/// Picks the response encoding and rendering from an Accept header: the first media range the
/// server can produce wins, as in kube-apiserver. Under `ManagedFieldsOptOut` (`drop_gate`,
/// KEP-5958) a range may ask to drop `metadata.managedFields`, and a range that asks to drop
/// anything else is not acceptable; without the gate `drop` is ignored. `Err` is 406 Not
/// Acceptable.
pub(crate) fn negotiate(accept: &str, drop_gate: bool) -> Result<Negotiated, ApiError> {
    let json_ok = accept.trim().is_empty()
        || media_ranges(accept).any(|r| {
            matches!(r.base, "application/json" | "application/*" | "*/*")
                && r.as_kind.is_none()
                && r.drops(drop_gate).is_some()
        });
    let (wire, mode, drop_managed_fields) = first_servable(accept, drop_gate)?;
    Ok(Negotiated {
        wire,
        mode,
        json_ok,
        drop_managed_fields,
    })
}

fn first_servable(accept: &str, drop_gate: bool) -> Result<(Wire, Mode, bool), ApiError> {
    if accept.trim().is_empty() {
        return Ok((Wire::Json, Mode::Full, false));
    }
    for r in media_ranges(accept) {
        let Some(drop) = r.drops(drop_gate) else {
            continue;
        };
        let json = matches!(r.base, "application/json" | "application/*" | "*/*");
        let mode = match r.as_kind {
            None => Mode::Full,
            Some("Table") => Mode::Table,
            Some("PartialObjectMetadata" | "PartialObjectMetadataList") => Mode::Metadata,
            Some(_) => continue,
        };
        if json {
            return Ok((Wire::Json, mode, drop));
        }
        if r.base == protobuf::MEDIA_TYPE && mode == Mode::Full {
            return Ok((Wire::Protobuf, Mode::Full, drop));
        }
    }
    Err(ApiError::new(
        406,
        "NotAcceptable",
        format!(
            "only the following media types are accepted: application/json, application/json;as=Table;v=v1;g=meta.k8s.io, application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io, {} (got {accept:?})",
            protobuf::MEDIA_TYPE
        ),
    ))
}

/// The encoding of an error's `Status` (T5): the first media range of `accept` that is JSON
/// or protobuf without an `as=` conversion (a `Status` is neither a Table nor metadata); JSON
/// when none is, as kube-apiserver falls back to when negotiation fails.
pub(crate) fn error_wire(accept: &str) -> Wire {
    media_ranges(accept)
        .filter(|r| r.as_kind.is_none())
        .find_map(|r| match r.base {
            "application/json" | "application/*" | "*/*" => Some(Wire::Json),
            protobuf::MEDIA_TYPE => Some(Wire::Protobuf),
            _ => None,
        })
        .unwrap_or(Wire::Json)
}

/// An error answer whose `Status` is encoded as `wire` (T5), with its `Retry-After`.
pub(crate) fn negotiated_error(err: &ApiError, wire: Wire) -> Response {
    let mut resp = super::error_response(err);
    if wire == Wire::Json {
        return resp;
    }
    let encoded = serde_json::from_slice::<Value>(&err.body())
        .map_err(|e| protobuf::Error::Invalid(e.to_string()))
        .and_then(|v| protobuf::encode_object(&v, Schema::Built));
    match encoded {
        Ok(pb) => {
            *resp.body_mut() = Body::from(pb);
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(protobuf::MEDIA_TYPE),
            );
            resp
        }
        Err(e) => {
            tracing::warn!(error = %e, "a Status that protobuf cannot carry; answering in JSON");
            resp
        }
    }
}

/// Decodes a create/update request body by its Content-Type into a JSON object.
pub(crate) fn request_object(content_type: &str, body: &[u8]) -> Result<Value, ApiError> {
    let base = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let v = match base.as_str() {
        "" | "application/json" | "*/*" => serde_json::from_slice::<Value>(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the object provided is unrecognized or malformed JSON: {e}"
            ))
        })?,
        "application/yaml" => {
            let text = std::str::from_utf8(body).map_err(|e| {
                ApiError::bad_request(format!("the object provided is not UTF-8 YAML: {e}"))
            })?;
            serde_saphyr::from_str::<Value>(text).map_err(|e| {
                ApiError::bad_request(format!("the object provided is malformed YAML: {e}"))
            })?
        }
        protobuf::MEDIA_TYPE => protobuf::decode_object(body).map_err(|e| {
            ApiError::bad_request(format!(
                "the object provided is unrecognized or malformed protobuf: {e}"
            ))
        })?,
        _ => {
            return Err(ApiError::new(
                415,
                "UnsupportedMediaType",
                format!(
                    "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, {} (got {content_type:?})",
                    protobuf::MEDIA_TYPE
                ),
            ));
        }
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the object provided must be a JSON object",
        ));
    }
    Ok(v)
}

/// Re-encodes a successful JSON response as protobuf; error responses stay JSON `Status`es,
/// which every client decodes by their Content-Type. When protobuf cannot carry the answer, a
/// client that also accepts JSON (`json_ok`) gets the JSON, any other a 406.
pub(crate) async fn to_protobuf(resp: Response, json_ok: bool, schema: Schema) -> Response {
    let already = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(protobuf::MEDIA_TYPE.as_bytes()));
    if !resp.status().is_success() || already {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let bytes = match to_bytes(body, MAX_TRANSCODE).await {
        Ok(b) => b,
        Err(e) => return super::error_response(&ApiError::internal(e.to_string())),
    };
    let encoded = serde_json::from_slice::<Value>(&bytes)
        .map_err(|e| protobuf::Error::Invalid(e.to_string()))
        .and_then(|v| protobuf::encode_object(&v, schema));
    match encoded {
        Ok(pb) => {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(protobuf::MEDIA_TYPE),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(pb))
        }
        Err(e) if json_ok => {
            tracing::debug!(error = %e, "answering in JSON: protobuf cannot carry the response");
            Response::from_parts(parts, Body::from(bytes))
        }
        Err(e) => super::error_response(&ApiError::new(
            406,
            "NotAcceptable",
            format!(
                "the response cannot be encoded as {}: {e}; accept application/json",
                protobuf::MEDIA_TYPE
            ),
        )),
    }
}

/// Whether watch events of `info`'s kind can be served as protobuf (a built-in kind).
pub(crate) fn protobuf_watchable(info: &crate::resources::ResourceInfo) -> bool {
    protobuf::for_kind(&info.api_version(), &info.kind).is_some()
}

/// 406 for a watch asked for in protobuf only, of a kind protobuf cannot carry.
pub(crate) fn watch_not_acceptable() -> ApiError {
    ApiError::new(
        406,
        "NotAcceptable",
        format!(
            "watch streams of this kind are served as application/json only, not {}",
            protobuf::MEDIA_TYPE
        ),
    )
}

/// Re-frames JSON watch event lines as kube-apiserver's protobuf frames: each
/// newline-terminated event becomes a 4-byte big-endian length and a `metav1.WatchEvent` message
/// whose `object.raw` is the object in the `k8s\0` envelope. A last line cut short (the cut-chunk
/// fault) becomes a frame cut short; a line that is not an event (the malformed fault) becomes a
/// frame of garbage. Objects go through their cached messages instead (`watch.rs`); this serves
/// bookmarks, errors and the faults.
pub(crate) fn reframe(data: &[u8], schema: Schema) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len() / 2);
    for line in data.split_inclusive(|b| *b == b'\n') {
        let frame = match event_message(line.strip_suffix(b"\n").unwrap_or(line), schema) {
            Some(msg) => msg,
            None => b"\xff\xfe not a watch event".to_vec(),
        };
        let len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        if line.ends_with(b"\n") {
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(&frame);
        } else {
            // Cut: the length of the whole frame, then half of it.
            out.extend_from_slice(&len.to_be_bytes());
            out.extend_from_slice(&frame[..frame.len() / 2]);
        }
    }
    out
}

/// One JSON event line as a `WatchEvent` message.
fn event_message(line: &[u8], schema: Schema) -> Option<Vec<u8>> {
    let v: Value = serde_json::from_slice(line).ok()?;
    let event_type = v.get("type")?.as_str()?;
    let object = protobuf::encode_object(v.get("object")?, schema).ok()?;
    let mut raw_extension = Vec::with_capacity(object.len() + 8);
    informer_proto::wire::put_len(&mut raw_extension, 1, &object);
    let mut msg = Vec::with_capacity(raw_extension.len() + 16);
    informer_proto::wire::put_len(&mut msg, 1, event_type.as_bytes());
    informer_proto::wire::put_len(&mut msg, 2, &raw_extension);
    Some(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_prefers_the_first_servable_range() {
        let pb = "application/vnd.kubernetes.protobuf";
        let n = negotiate(&format!("{pb},application/json"), false).expect("ok");
        assert_eq!(
            (n.wire, n.mode, n.json_ok),
            (Wire::Protobuf, Mode::Full, true)
        );
        let n = negotiate(pb, false).expect("ok");
        assert_eq!((n.wire, n.json_ok), (Wire::Protobuf, false));
        assert_eq!(
            first_servable(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
                false
            )
            .expect("ok"),
            (Wire::Json, Mode::Table, false)
        );
        assert_eq!(
            first_servable(
                &format!("{pb};as=Table;v=v1;g=meta.k8s.io,application/json"),
                false
            )
            .expect("ok"),
            (Wire::Json, Mode::Full, false)
        );
        assert_eq!(
            first_servable("", false).expect("ok"),
            (Wire::Json, Mode::Full, false)
        );
        assert_eq!(
            first_servable("*/*", false).expect("ok"),
            (Wire::Json, Mode::Full, false)
        );
        assert_eq!(negotiate("text/html", false).expect_err("406").code, 406);
        assert_eq!(
            negotiate(&format!("{pb};as=Table;v=v1;g=meta.k8s.io"), false)
                .expect_err("406")
                .code,
            406
        );
    }

    #[test]
    fn t7_drop_managed_fields_under_the_gate_and_ignored_without_it() {
        let pb = "application/vnd.kubernetes.protobuf";
        let drop = ";drop=metadata.managedFields";
        let n = negotiate(&format!("{pb}{drop}, application/json{drop}"), true).expect("ok");
        assert_eq!(
            (n.wire, n.drop_managed_fields, n.json_ok),
            (Wire::Protobuf, true, true)
        );
        let n = negotiate(&format!("{pb}{drop}, application/json{drop}"), false).expect("ok");
        assert_eq!((n.wire, n.drop_managed_fields), (Wire::Protobuf, false));
        // Any other field makes that media type unacceptable under the gate, and only then.
        let other = "application/json;drop=metadata.labels";
        assert_eq!(negotiate(other, true).expect_err("406").code, 406);
        let n = negotiate(other, false).expect("ignored");
        assert!(!n.drop_managed_fields);
        let n = negotiate(&format!("{other}, {pb}"), true).expect("the next range");
        assert_eq!((n.wire, n.drop_managed_fields), (Wire::Protobuf, false));
        // An empty `drop=` drops nothing and is acceptable, with the gate and without.
        for gate in [true, false] {
            let n = negotiate(&format!("{pb};drop="), gate).expect("an empty drop");
            assert_eq!((n.wire, n.drop_managed_fields), (Wire::Protobuf, false));
        }
    }

    #[test]
    fn t5_errors_are_encoded_as_the_accept_header_negotiates() {
        let pb = "application/vnd.kubernetes.protobuf";
        assert_eq!(
            error_wire(&format!("{pb}, application/json")),
            Wire::Protobuf
        );
        assert_eq!(error_wire(&format!("application/json, {pb}")), Wire::Json);
        assert_eq!(error_wire(""), Wire::Json);
        assert_eq!(error_wire("text/html"), Wire::Json);
        assert_eq!(
            error_wire(&format!(
                "{pb};as=Table;v=v1;g=meta.k8s.io, application/json"
            )),
            Wire::Json
        );
        let err = ApiError::new(429, "TooManyRequests", "slow down").with_retry_after(Some(2));
        let resp = negotiated_error(&err, Wire::Protobuf);
        assert_eq!(resp.status().as_u16(), 429);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], pb);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "2");
    }

    #[test]
    fn request_bodies_by_content_type() {
        let v = request_object("application/json", br#"{"kind":"ConfigMap"}"#).expect("json");
        assert_eq!(v["kind"], "ConfigMap");
        let v =
            request_object("application/yaml", b"kind: ConfigMap\ndata: {a: b}\n").expect("yaml");
        assert_eq!(v["data"]["a"], "b");
        let e = request_object("application/vnd.kubernetes.protobuf", b"{}").expect_err("pb");
        assert!(e.message.contains("malformed protobuf"), "{}", e.message);
        assert_eq!(
            request_object("text/plain", b"x").expect_err("415").code,
            415
        );
        assert_eq!(
            request_object("application/json", b"[1]")
                .expect_err("400")
                .code,
            400
        );
    }
}
