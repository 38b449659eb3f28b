//! Hostile responses (`Faults::hostile_next`): well-formed HTTP that breaks the API contract (M14-M16).

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderValue, StatusCode, header};

use super::codec::Wire;
use super::list::{PageOverride, list_with};
use super::{Mode, Target, json_response};
use crate::faults::{HostileProtobuf, HostileResponse};
use crate::log::QueryParams;
use crate::protobuf;
use crate::state::Shared;
use crate::status::ApiError;

/// The prefix of every token [`HostileResponse::EndlessContinue`] hands out.
const TOKEN_PREFIX: &str = "hostile-";

/// The unterminated watch line is sent in chunks of this size.
const LINE_CHUNK: usize = 64 * 1024;

/// Answers one request with `response`.
pub(crate) fn respond(
    sh: &Arc<Shared>,
    t: &Target,
    q: &QueryParams,
    mode: Mode,
    response: HostileResponse,
) -> Result<Response, ApiError> {
    let rv = sh.store.current_rv();
    match response {
        HostileResponse::ListStatusBody { code, reason } => {
            let status = ApiError::new(code, &reason, format!("hostile {code} {reason} with 200"));
            Ok(json_response(StatusCode::OK, status.body()))
        }
        HostileResponse::ListWithoutItems => Ok(json_response(
            StatusCode::OK,
            Bytes::from(format!(
                "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{{\"resourceVersion\":\"{rv}\"}}}}",
                t.info.list_kind(),
                t.info.api_version()
            )),
        )),
        HostileResponse::ListOfKind(kind) => Ok(json_response(
            StatusCode::OK,
            Bytes::from(format!(
                "{{\"kind\":\"{kind}\",\"apiVersion\":\"{}\",\"metadata\":{{\"resourceVersion\":\"{rv}\"}},\"items\":[]}}",
                t.info.api_version()
            )),
        )),
        HostileResponse::EndlessContinue { same_token } => {
            let token = if same_token {
                format!("{TOKEN_PREFIX}repeat")
            } else {
                format!("{TOKEN_PREFIX}{}", sh.faults.next_hostile_token())
            };
            // A request with one of our tokens is served from the start again.
            let mut q = q.clone();
            if q.continue_token
                .as_deref()
                .is_some_and(|c| c.starts_with(TOKEN_PREFIX))
            {
                q.continue_token = None;
            }
            let over = PageOverride {
                continue_token: Some(token),
                extra_item: None,
            };
            list_with(sh, t, &q, mode, Wire::Json, &over)
        }
        HostileResponse::ListExtraItem(item) => {
            let over = PageOverride {
                continue_token: None,
                extra_item: Some(item),
            };
            list_with(sh, t, q, mode, Wire::Json, &over)
        }
        HostileResponse::UnterminatedWatchLine { len } => Ok(unterminated_line(sh, t, len)),
        HostileResponse::StalledListBody => {
            let head = format!(
                "{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{{\"resourceVersion\":\"{rv}\"}},\"items\":[",
                t.info.list_kind(),
                t.info.api_version()
            );
            Ok(stalled_body(sh, vec![Bytes::from(head)]))
        }
        HostileResponse::WatchErrorObject(object) => {
            let line = format!("{{\"type\":\"ERROR\",\"object\":{object}}}\n");
            Ok(json_response(StatusCode::OK, Bytes::from(line)))
        }
        HostileResponse::WatchEvents { lines, cut } => {
            let mut body = String::new();
            for line in lines {
                body.push_str(&line);
                body.push('\n');
            }
            body.push_str(&cut);
            Ok(json_response(StatusCode::OK, Bytes::from(body)))
        }
        HostileResponse::CorruptGzip { body } => {
            let mut wire = super::gzip::member(body.as_bytes())
                .map_err(|e| ApiError::internal(e.to_string()))?;
            // A gzip magic and method, then a header and data that are garbage.
            wire.extend_from_slice(b"\x1f\x8b\x08\x00garbage that inflates to nothing");
            let mut resp = json_response(StatusCode::OK, Bytes::from(wire));
            resp.headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            Ok(resp)
        }
        HostileResponse::GzipBomb { inflated } => {
            let wire = super::gzip::member(&vec![b' '; inflated])
                .map_err(|e| ApiError::internal(e.to_string()))?;
            let mut resp = json_response(StatusCode::OK, Bytes::from(wire));
            resp.headers_mut()
                .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            Ok(resp)
        }
        HostileResponse::Protobuf(p) => {
            let body = protobuf_body(t, rv, &p)?;
            Ok(super::list::protobuf_response(body))
        }
        HostileResponse::Body { content_type, body } => {
            let mut resp = Response::new(Body::from(body));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_str(&content_type)
                    .unwrap_or(HeaderValue::from_static("application/octet-stream")),
            );
            Ok(resp)
        }
        HostileResponse::Redirect(code) => {
            let mut resp = Response::new(Body::from("<html><body>Moved</body></html>"));
            *resp.status_mut() =
                StatusCode::from_u16(code).unwrap_or(StatusCode::TEMPORARY_REDIRECT);
            resp.headers_mut().insert(
                header::LOCATION,
                HeaderValue::from_static("https://apiserver.example.invalid/"),
            );
            resp.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
            Ok(resp)
        }
    }
}

/// The bytes of a hostile protobuf answer for `t` at `rv`.
fn protobuf_body(t: &Target, rv: u64, p: &HostileProtobuf) -> Result<Vec<u8>, ApiError> {
    use informer_proto::wire::{LEN, put_key, put_len, put_varint};
    const HUGE: u64 = 1 << 62;
    let api_version = t.info.api_version();
    let rv = rv.to_string();
    let list_meta = |out: &mut Vec<u8>| {
        let mut meta = Vec::new();
        put_len(&mut meta, 2, rv.as_bytes());
        put_len(out, 1, &meta);
    };
    Ok(match p {
        HostileProtobuf::ListWithoutRaw => {
            let mut tm = Vec::new();
            put_len(&mut tm, 1, api_version.as_bytes());
            put_len(&mut tm, 2, t.info.list_kind().as_bytes());
            let mut out = protobuf::MAGIC.to_vec();
            put_len(&mut out, 1, &tm);
            out
        }
        HostileProtobuf::ListOfKind(kind) => {
            let mut list = Vec::new();
            list_meta(&mut list);
            protobuf::envelope(&api_version, kind, &list)
        }
        HostileProtobuf::HugeItemLength => {
            let mut list = Vec::new();
            list_meta(&mut list);
            put_key(&mut list, 2, LEN);
            put_varint(&mut list, HUGE);
            list.extend_from_slice(b"\x0a\x02ab");
            protobuf::envelope(&api_version, &t.info.list_kind(), &list)
        }
        HostileProtobuf::HugeFrameLength => {
            let mut out = (u32::MAX - 15).to_be_bytes().to_vec();
            out.extend_from_slice(b"\x0a\x05ADDED");
            out
        }
        HostileProtobuf::HugeObjectLength => {
            let mut object = protobuf::MAGIC.to_vec();
            let mut tm = Vec::new();
            put_len(&mut tm, 1, api_version.as_bytes());
            put_len(&mut tm, 2, t.info.kind.as_bytes());
            put_len(&mut object, 1, &tm);
            put_key(&mut object, 2, LEN);
            put_varint(&mut object, HUGE);
            object.extend_from_slice(b"\x0a\x00");
            let mut out = Vec::new();
            protobuf::watch_frame(&mut out, "ADDED", &object, false);
            out
        }
        HostileProtobuf::DeepSchema { levels } => {
            let mut schema = serde_json::json!({"type": "string"});
            for _ in 1..*levels {
                schema = serde_json::json!({"type": "object", "properties": {"a": schema}});
            }
            let crd = serde_json::json!({
                "metadata": {"name": "deeps.example.com", "resourceVersion": rv, "uid": "deep"},
                "spec": {"group": "example.com", "scope": "Namespaced",
                         "names": {"kind": "Deep", "plural": "deeps"},
                         "versions": [{"name": "v1", "served": true, "storage": true,
                                       "schema": {"openAPIV3Schema": schema}}]}
            });
            let item = protobuf::encode_message(
                "apiextensions.k8s.io/v1",
                "CustomResourceDefinition",
                &crd,
                protobuf::Schema::Built,
            )
            .map_err(|e| ApiError::internal(e.to_string()))?;
            let head = protobuf::ListHead {
                api_version: "apiextensions.k8s.io/v1",
                kind: "CustomResourceDefinitionList",
                resource_version: &rv,
                continue_token: None,
                shard_selector: None,
            };
            protobuf::list(&head, &[item])
        }
    })
}

/// A watch body holding one event line of `len` bytes with no newline, then nothing until the
/// server shuts down.
fn unterminated_line(sh: &Arc<Shared>, t: &Target, len: usize) -> Response {
    let head = format!(
        "{{\"type\":\"ADDED\",\"object\":{{\"kind\":\"{}\",\"apiVersion\":\"{}\",\"metadata\":{{\"name\":\"huge\"}},\"data\":{{\"k\":\"",
        t.info.kind,
        t.info.api_version()
    );
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut left = len.saturating_sub(head.len());
    chunks.push(Bytes::from(head));
    let filler = Bytes::from(vec![b'a'; LINE_CHUNK]);
    while left > 0 {
        let n = left.min(LINE_CHUNK);
        chunks.push(filler.slice(..n));
        left -= n;
    }
    stalled_body(sh, chunks)
}

/// A JSON body of `chunks`, then nothing until the server shuts down.
fn stalled_body(sh: &Arc<Shared>, chunks: Vec<Bytes>) -> Response {
    let shutdown = sh.shutdown.clone();
    let body = futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>)).chain(
        futures::stream::once(async move {
            shutdown.cancelled().await;
            Ok(Bytes::new())
        }),
    );
    let mut resp = Response::new(Body::from_stream(body));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}
