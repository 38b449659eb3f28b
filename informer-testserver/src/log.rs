//! The request log: every request with its parsed query, verb and answer status.

use std::sync::{Mutex, MutexGuard};
use std::time::SystemTime;

use http::{Method, StatusCode};

/// What a request did, as the server classified it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verb {
    /// GET of one object (or subresource).
    Get,
    /// GET of a collection without `watch`.
    List,
    /// GET of a collection with `watch=true`.
    Watch,
    /// POST.
    Create,
    /// PUT.
    Update,
    /// PATCH.
    Patch,
    /// DELETE of one object.
    Delete,
    /// DELETE of a collection.
    DeleteCollection,
    /// Discovery, /version, OpenAPI.
    Discovery,
    /// Anything else (unknown paths, rejected requests).
    Other,
}

/// The query parameters the API cares about, parsed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryParams {
    /// `resourceVersion` (None when absent; `Some("")` when present and empty).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<String>,
    /// `limit`.
    pub limit: Option<u64>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `watch=true|1`.
    pub watch: bool,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u64>,
    /// `allowWatchBookmarks=true`.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents`.
    pub send_initial_events: Option<bool>,
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `shardSelector` (KEP-5866).
    pub shard_selector: Option<String>,
    /// `dryRun`.
    pub dry_run: bool,
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `force` (server-side apply).
    pub force: bool,
    /// Every pair as sent.
    pub raw: Vec<(String, String)>,
}

impl QueryParams {
    /// Parses a raw query string.
    pub fn parse(query: &str) -> Self {
        let raw: Vec<(String, String)> = form_pairs(query);
        let mut q = QueryParams::default();
        let truthy = |v: &str| v == "true" || v == "1";
        for (k, v) in &raw {
            match k.as_str() {
                "resourceVersion" => q.resource_version = Some(v.clone()),
                "resourceVersionMatch" => q.resource_version_match = Some(v.clone()),
                "limit" => q.limit = v.parse().ok(),
                "continue" => q.continue_token = Some(v.clone()),
                "watch" => q.watch = truthy(v),
                "timeoutSeconds" => q.timeout_seconds = v.parse().ok(),
                "allowWatchBookmarks" => q.allow_watch_bookmarks = truthy(v),
                "sendInitialEvents" => q.send_initial_events = Some(truthy(v)),
                "labelSelector" => q.label_selector = Some(v.clone()),
                "fieldSelector" => q.field_selector = Some(v.clone()),
                "shardSelector" => q.shard_selector = Some(v.clone()),
                "dryRun" => q.dry_run = !v.is_empty(),
                "fieldManager" => q.field_manager = Some(v.clone()),
                "force" => q.force = truthy(v),
                _ => {}
            }
        }
        q.raw = raw;
        q
    }
}

/// Decodes `application/x-www-form-urlencoded` pairs.
fn form_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect()
}

fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One served request.
#[derive(Debug, Clone)]
pub struct RequestRecord {
    /// HTTP method.
    pub method: Method,
    /// Path without the query.
    pub path: String,
    /// Parsed query.
    pub query: QueryParams,
    /// The server's classification.
    pub verb: Verb,
    /// Status of the response head (200 for a watch that later sent an ERROR event).
    pub status: StatusCode,
    /// Whether the response body was gzipped (`Content-Encoding: gzip`, T3).
    pub gzip: bool,
    /// Whether the response body was Kubernetes protobuf (T1).
    pub protobuf: bool,
    /// Whether the objects went out without `metadata.managedFields`: the request's `Accept`
    /// asked for that and the `ManagedFieldsOptOut` gate is on (KEP-5958, T7).
    pub managed_fields_dropped: bool,
    /// When the request arrived.
    pub time: SystemTime,
}

impl RequestRecord {
    /// Whether this was a LIST.
    pub fn is_list(&self) -> bool {
        self.verb == Verb::List
    }

    /// Whether this was a WATCH.
    pub fn is_watch(&self) -> bool {
        self.verb == Verb::Watch
    }
}

/// The shared log.
#[derive(Debug, Default)]
pub(crate) struct RequestLog(Mutex<Vec<RequestRecord>>);

impl RequestLog {
    fn lock(&self) -> MutexGuard<'_, Vec<RequestRecord>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn push(&self, rec: RequestRecord) {
        self.lock().push(rec);
    }

    pub(crate) fn snapshot(&self) -> Vec<RequestRecord> {
        self.lock().clone()
    }

    pub(crate) fn clear(&self) {
        self.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_query() {
        let q = QueryParams::parse(
            "labelSelector=app%3Dweb%2Ctier+in+%28a%29&limit=500&watch=1&resourceVersion=&sendInitialEvents=true",
        );
        assert_eq!(q.label_selector.as_deref(), Some("app=web,tier in (a)"));
        assert_eq!(q.limit, Some(500));
        assert!(q.watch);
        assert_eq!(q.resource_version.as_deref(), Some(""));
        assert_eq!(q.send_initial_events, Some(true));
    }
}
