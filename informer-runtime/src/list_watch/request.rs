//! The parameters of one LIST and one WATCH request, as the reflector asks for them.

use std::fmt::Write as _;
use std::time::Duration;

use crate::shard::Shard;

/// The parameters of one LIST request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListRequest {
    /// `resourceVersion`; `None` sends none. Ignored on continue pages.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch` (`NotOlderThan`, `Exact`).
    pub resource_version_match: Option<String>,
    /// `limit`; `None` asks for everything at once.
    pub limit: Option<u32>,
    /// `continue` token of the previous page.
    pub continue_token: Option<String>,
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `shardSelector` (KEP-5866; [`Shard::selector`]). Whether the server applied it is in
    /// [`RawListPage::shard_info`](super::RawListPage::shard_info).
    pub shard_selector: Option<String>,
}

/// The parameters of one WATCH request. `allowWatchBookmarks=true` is always sent (R5).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WatchRequest {
    /// `resourceVersion` to start from.
    pub resource_version: String,
    /// `timeoutSeconds` (R6; not limited to < 295 s).
    pub timeout: Duration,
    /// Watch-list (R17): sends `sendInitialEvents=true&resourceVersionMatch=NotOlderThan`.
    pub send_initial_events: bool,
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// The longest event line accepted, in bytes (M16); `None` means
    /// [`DEFAULT_MAX_WATCH_LINE_BYTES`]. A longer line ends the stream with
    /// [`Error::LineTooLong`](super::Error::LineTooLong).
    pub max_line_bytes: Option<usize>,
    /// `shardSelector` (KEP-5866; [`Shard::selector`]).
    pub shard_selector: Option<String>,
    /// Filter events on the client: an event whose object is outside this shard is skipped
    /// before its object is decoded (for a server that ignores `shardSelector`, or one that
    /// claims to apply it; S4 probes every sharded watch).
    pub client_shard: Option<Shard>,
}

/// The default longest watch event line: 16 MiB, the limit of client-go's streaming decoder
/// (an etcd object is at most 1.5 MiB by default, so only a broken stream gets there).
pub const DEFAULT_MAX_WATCH_LINE_BYTES: usize = 16 << 20;

/// Appends `key=value` when `value` is set and not empty.
pub(super) fn push_opt(query: &mut String, key: &str, value: Option<&str>) {
    if let Some(v) = value.filter(|v| !v.is_empty()) {
        push_pair(query, key, v);
    }
}

/// Appends `key=value`, percent-encoding everything but RFC 3986 unreserved characters.
pub(super) fn push_pair(query: &mut String, key: &str, value: &str) {
    if !query.is_empty() {
        query.push('&');
    }
    query.push_str(key);
    query.push('=');
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            query.push(char::from(b));
        } else {
            let _ = write!(query, "%{b:02X}");
        }
    }
}
