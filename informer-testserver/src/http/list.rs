//! LIST: resourceVersion semantics ("", "0", specific with NotOlderThan/Exact), limit/continue
//! with consistent pages, selectors, and metadata-only lists.

use std::sync::Arc;

use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use http::StatusCode;

use super::codec::Wire;
use super::{Mode, Target, json_response, object_bytes};
use crate::log::QueryParams;
use crate::protobuf;
use crate::selectors::{FieldSelector, LabelSelector, Selectors, field_paths};
use crate::shard::ShardSelector;
use crate::state::Shared;
use crate::status::ApiError;
use crate::store::{ListRead, ObjKey};

/// Which feature gate switch a request's shard selector obeys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ShardGate {
    /// LIST and DELETECOLLECTION.
    List,
    /// WATCH (and watch-list).
    Watch,
}

/// Parses the selectors of a request (400 on a bad one). The shard selector (KEP-5866) only
/// while the feature gate is on for `gate`; off, it is ignored unparsed, as by an older server.
/// A shard selector override replaces the request's (S4 tests).
pub(crate) fn selectors(
    sh: &Shared,
    t: &Target,
    q: &QueryParams,
    gate: ShardGate,
) -> Result<Selectors, ApiError> {
    let sharding = match gate {
        ShardGate::List => &sh.sharded_list,
        ShardGate::Watch => &sh.sharded_watch,
    }
    .load(std::sync::atomic::Ordering::Relaxed);
    let shard = match q.shard_selector.as_deref() {
        Some(text) if sharding && !text.is_empty() => {
            let replaced = sh
                .shard_selector_override
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone();
            Some(ShardSelector::parse(replaced.as_deref().unwrap_or(text))?)
        }
        _ => None,
    };
    Ok(Selectors {
        labels: LabelSelector::parse(q.label_selector.as_deref().unwrap_or_default())?,
        fields: FieldSelector::parse(
            q.field_selector.as_deref().unwrap_or_default(),
            field_paths(&t.info.group, &t.info.kind),
        )?,
        shard,
    })
}

/// The list metadata's `shardInfo` (KEP-5866) as JSON text, when a shard selector was applied.
fn shard_info(sel: &Selectors) -> Option<String> {
    let shard = sel.shard.as_ref()?;
    let selector = serde_json::Value::String(shard.text().to_owned());
    Some(format!("{{\"selector\":{selector}}}"))
}

/// A LIST page from its items' cached protobuf messages; `None` when an item has none, or is
/// stored in another version than the one asked for (served relabelled, in JSON).
fn protobuf_page(
    t: &Target,
    page: &crate::store::Page,
    cont: Option<&str>,
    sel: &Selectors,
) -> Option<Vec<u8>> {
    let api_version = t.info.api_version();
    let items = page
        .items
        .iter()
        .map(|o| {
            let same = o.api_version == api_version || o.api_version.is_empty();
            same.then(|| o.protobuf_as(&t.info.kind, t.drop_managed_fields, t.schema))
                .flatten()
        })
        .collect::<Option<Vec<_>>>()?;
    let rv = page.rv.to_string();
    let head = protobuf::ListHead {
        api_version: &api_version,
        kind: &t.info.list_kind(),
        resource_version: &rv,
        continue_token: cont,
        shard_selector: sel.shard.as_ref().map(|s| s.text()),
    };
    Some(protobuf::list(&head, &items))
}

/// A protobuf response.
pub(crate) fn protobuf_response(body: Vec<u8>) -> Response {
    let mut resp = Response::new(axum::body::Body::from(body));
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(protobuf::MEDIA_TYPE),
    );
    resp
}

/// Parses a resourceVersion query value.
pub(crate) fn parse_rv(s: &str) -> Result<u64, ApiError> {
    s.parse::<u64>()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s:?}")))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Encodes a continue token (the list RV and the last key).
fn encode_continue(rv: u64, key: &ObjKey) -> String {
    hex(format!("{rv}\0{}\0{}", key.0, key.1).as_bytes())
}

fn decode_continue(tok: &str) -> Result<(u64, ObjKey), ApiError> {
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = unhex(tok).ok_or_else(bad)?;
    let text = String::from_utf8(raw).map_err(|_| bad())?;
    let mut parts = text.split('\0');
    let (Some(rv), Some(ns), Some(name), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    Ok((
        rv.parse().map_err(|_| bad())?,
        (ns.to_owned(), name.to_owned()),
    ))
}

/// Where a list reads and from which key.
fn read_point(sh: &Shared, q: &QueryParams) -> Result<(Option<u64>, Option<ObjKey>), ApiError> {
    let rv = q.resource_version.as_deref().unwrap_or_default();
    let rvm = q.resource_version_match.as_deref().unwrap_or_default();
    if let Some(tok) = q.continue_token.as_deref().filter(|t| !t.is_empty()) {
        if !rv.is_empty() && rv != "0" {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        if !rvm.is_empty() {
            return Err(ApiError::invalid_list_options(
                "resourceVersionMatch",
                "Forbidden: resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        let (at, key) = decode_continue(tok)?;
        if !sh.store.continue_valid(at) || sh.faults.take_expired_continue() {
            return Err(ApiError::expired(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
            ));
        }
        return Ok((Some(at), Some(key)));
    }
    match (rv, rvm) {
        ("", "") => Ok((None, None)),
        ("", _) => Err(ApiError::invalid_list_options(
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        )),
        ("0", "" | "NotOlderThan") => Ok((None, None)),
        ("0", "Exact") => Err(ApiError::invalid_list_options(
            "resourceVersionMatch",
            "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
        )),
        (n, "Exact") => Ok((Some(parse_rv(n)?), None)),
        (n, "NotOlderThan") => {
            let want = parse_rv(n)?;
            let cur = sh.store.current_rv();
            if want > cur {
                return Err(ApiError::too_large_rv(want, cur));
            }
            Ok((None, None))
        }
        // Legacy semantics without a match: paged lists are exact, unpaged are "not older than".
        (n, "") => {
            let want = parse_rv(n)?;
            let cur = sh.store.current_rv();
            if want > cur {
                return Err(ApiError::too_large_rv(want, cur));
            }
            Ok((q.limit.filter(|l| *l > 0).map(|_| want), None))
        }
        (_, other) => Err(ApiError::invalid_list_options(
            "resourceVersionMatch",
            &format!(
                "Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\", \"\""
            ),
        )),
    }
}

/// Whether kube-apiserver serves this LIST from its watch cache in one response, ignoring
/// `limit`: resourceVersion "0" with no `resourceVersionMatch` or `NotOlderThan`, no continue
/// token (the cacher's `shouldDelegateList`; KEP-4988 keeps the limit ignored there).
fn from_watch_cache(sh: &Shared, q: &QueryParams) -> bool {
    sh.settings.watch_cache
        && q.continue_token.as_deref().is_none_or(str::is_empty)
        && q.resource_version.as_deref() == Some("0")
        && matches!(
            q.resource_version_match.as_deref(),
            None | Some("" | "NotOlderThan")
        )
}

/// Serves a LIST.
pub(crate) fn list(
    sh: &Arc<Shared>,
    t: &Target,
    q: &QueryParams,
    mode: Mode,
    wire: Wire,
) -> Result<Response, ApiError> {
    list_with(sh, t, q, mode, wire, &PageOverride::default())
}

/// What a hostile LIST changes in an otherwise real page (see `hostile.rs`).
#[derive(Debug, Default)]
pub(crate) struct PageOverride {
    /// The `continue` token to send instead of the real one.
    pub(crate) continue_token: Option<String>,
    /// A raw JSON object put first in `items`.
    pub(crate) extra_item: Option<String>,
}

/// Serves a LIST page, with `over` applied. Asked for in protobuf, the page is built from the
/// items' cached messages; where protobuf cannot carry an item the answer is JSON, which the
/// caller transcodes or refuses (`codec::to_protobuf`).
pub(crate) fn list_with(
    sh: &Arc<Shared>,
    t: &Target,
    q: &QueryParams,
    mode: Mode,
    wire: Wire,
    over: &PageOverride,
) -> Result<Response, ApiError> {
    if q.send_initial_events == Some(true) {
        return Err(ApiError::invalid_list_options(
            "sendInitialEvents",
            "Forbidden: sendInitialEvents is forbidden for list",
        ));
    }
    let sel = selectors(sh, t, q, ShardGate::List)?;
    let (at, start_after) = read_point(sh, q)?;
    let filter = |o: &crate::store::Stored| sel.matches(o);
    let read = ListRead {
        namespace: t.namespace.as_deref(),
        at,
        start_after,
        limit: if from_watch_cache(sh, q) {
            None
        } else {
            q.limit.and_then(|l| usize::try_from(l).ok())
        },
        filter: &filter,
    };
    let page = sh.store.list(&t.info.storage_key(), &read)?;
    let (kind, api_version) = match mode {
        Mode::Metadata => (
            "PartialObjectMetadataList".to_owned(),
            "meta.k8s.io/v1".to_owned(),
        ),
        Mode::Full | Mode::Table => (t.info.list_kind(), t.info.api_version()),
    };
    let cont = match &over.continue_token {
        Some(c) => Some(c.clone()),
        None => page.next.as_ref().map(|k| encode_continue(page.rv, k)),
    };
    if mode == Mode::Table {
        let mut meta = serde_json::json!({"resourceVersion": page.rv.to_string()});
        if let Some(c) = &cont {
            meta["continue"] = serde_json::Value::String(c.clone());
        }
        if let Some(shard) = &sel.shard {
            meta["shardInfo"] = serde_json::json!({ "selector": shard.text() });
        }
        let table = super::table::TableRenderer::new(sh, &t.info, q)?;
        let body = table.render(page.items.iter().map(|o| &**o), meta);
        return Ok(json_response(StatusCode::OK, body));
    }
    if wire == Wire::Protobuf
        && mode == Mode::Full
        && over.extra_item.is_none()
        && let Some(body) = protobuf_page(t, &page, cont.as_deref(), &sel)
    {
        return Ok(protobuf_response(body));
    }
    let size: usize = page.items.iter().map(|o| o.json_len() + 1).sum();
    let mut buf = BytesMut::with_capacity(size + 256);
    buf.put_slice(format!("{{\"kind\":\"{kind}\",\"apiVersion\":\"{api_version}\",\"metadata\":{{\"resourceVersion\":\"{}\"", page.rv).as_bytes());
    if let Some(c) = &cont {
        buf.put_slice(format!(",\"continue\":\"{c}\"").as_bytes());
    }
    if let Some(info) = shard_info(&sel) {
        buf.put_slice(format!(",\"shardInfo\":{info}").as_bytes());
    }
    buf.put_slice(b"},\"items\":[");
    if let Some(extra) = &over.extra_item {
        buf.put_slice(extra.as_bytes());
    }
    for (i, o) in page.items.iter().enumerate() {
        if i > 0 || over.extra_item.is_some() {
            buf.put_u8(b',');
        }
        buf.put_slice(&object_bytes(o, t, mode));
    }
    buf.put_slice(b"]}");
    Ok(json_response(StatusCode::OK, Bytes::from(buf)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens_round_trip() {
        let key = ("ns".to_owned(), "pod-1".to_owned());
        let tok = encode_continue(42, &key);
        assert_eq!(decode_continue(&tok).expect("decode"), (42, key));
        assert_eq!(decode_continue("zz").expect_err("bad").code, 400);
    }

    proptest::proptest! {
        /// Hostile input: any token, arbitrary or a mutated real one, decodes or is a 400;
        /// never a panic. What decodes re-encodes to a token that decodes the same.
        #[test]
        fn continue_tokens_never_panic(
            arbitrary in ".{0,80}",
            rv in proptest::num::u64::ANY,
            ns in "[a-z0-9-]{0,12}",
            name in "[a-z0-9.-]{0,20}",
            flips in proptest::collection::vec((proptest::num::usize::ANY, proptest::num::u8::ANY), 0..4),
            cut in proptest::num::usize::ANY,
        ) {
            let mut mutated = encode_continue(rv, &(ns, name)).into_bytes();
            for (at, byte) in flips {
                if !mutated.is_empty() {
                    let i = at % mutated.len();
                    mutated[i] = byte;
                }
            }
            mutated.truncate(cut % (mutated.len() + 1));
            let mutated = String::from_utf8_lossy(&mutated).into_owned();
            for tok in [arbitrary.as_str(), mutated.as_str()] {
                match decode_continue(tok) {
                    Ok((rv, key)) => {
                        let again = decode_continue(&encode_continue(rv, &key)).expect("re-encoded");
                        proptest::prop_assert_eq!(again, (rv, key));
                    }
                    Err(e) => proptest::prop_assert_eq!(e.code, 400),
                }
            }
        }
    }
}
