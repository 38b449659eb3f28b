//! Why a LIST or WATCH request failed, and the error classes the reflector acts on (R9-R16).

use std::time::Duration;

use kube::core::Status;

/// Why a LIST or WATCH request failed. The [reflector](crate::reflector) classifies these into
/// the R9–R16 error classes; [`Error::class`] gives the class.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The API server answered with a `Status` (an HTTP error, or an `ERROR` watch event).
    /// Retryability depends on the code: see [`ErrorClass`].
    #[error("api error {}: {} ({})", .status.code, .status.reason, .status.message)]
    Api {
        /// The `Status` the server sent.
        status: Box<Status>,
        /// The `Retry-After` header or `details.retryAfterSeconds`, if any.
        retry_after: Option<Duration>,
    },
    /// The request could not be sent or the response could not be read (connection refused,
    /// reset, TLS). Retryable.
    #[error("transport error: {0}")]
    Transport(#[source] kube::Error),
    /// A LIST body or a watch line is not valid JSON for the expected type (a malformed line).
    /// Retryable by re-listing.
    // The serde message can quote object contents (Secret data), so only its position is shown;
    // the message stays reachable through `source()`.
    #[error("cannot decode {what} at line {}, column {}", .source.line(), .source.column())]
    Decode {
        /// What was being decoded (`"list"`, `"watch event"`).
        what: &'static str,
        /// The serde error.
        #[source]
        source: serde_json::Error,
    },
    /// The watch body ended in the middle of a line (a cut chunk). Retryable by re-watching.
    #[error("watch stream ended inside an event ({0} bytes of an incomplete line)")]
    CutChunk(usize),
    /// A protobuf LIST body or watch event could not be decoded (T1): malformed (a field this
    /// schema does not know, from a newer Kubernetes version, is passed over instead: T8). The
    /// list-watcher asks for JSON from its next request on; retryable like a malformed line
    /// (R14).
    // A value-level message can quote object contents (Secret data), so only structural
    // errors are shown; the message stays reachable through `source()`.
    #[error("cannot decode the protobuf {what}: {}", protobuf_summary(.source))]
    Protobuf {
        /// What was being decoded (`"list"`, `"watch event"`).
        what: &'static str,
        /// What informer-proto reported.
        #[source]
        source: informer_proto::Error,
    },
    /// A watch line grew past [`WatchRequest::max_line_bytes`](super::WatchRequest::max_line_bytes) without a newline (M16). The
    /// stream is treated as broken and ends here; retryable like a malformed line (R14, else a
    /// new cycle after backoff, R15).
    #[error(
        "watch line longer than {limit} bytes without a newline; treating the stream as broken"
    )]
    LineTooLong {
        /// The limit in bytes.
        limit: usize,
    },
    /// A watch event carries an object of another kind, or a `Table` (R16). The event is dropped; the
    /// watch goes on. Not an error of the connection.
    #[error("unexpected object in {event_type} event: {kind} (expected {expected})")]
    UnexpectedObject {
        /// The watch event type.
        event_type: String,
        /// The kind that arrived.
        kind: String,
        /// The kind this list-watcher serves.
        expected: String,
    },
    /// The request could not be built (an invalid selector or path). Not retryable.
    #[error("cannot build request: {0}")]
    BuildRequest(#[source] http::Error),
    /// The server answered with an HTTP status that is neither a success nor an error: a 3xx
    /// redirect (from a proxy or load balancer in front of the API server; the client follows
    /// none) or a stray 1xx. The body is not read. Retryable by a new cycle after backoff (R15).
    #[error(
        "unexpected HTTP status {code} from the API server{}",
        .location.as_deref().map(|l| format!(" (redirect to {l}, not followed)")).unwrap_or_default()
    )]
    UnexpectedStatus {
        /// The HTTP status code.
        code: u16,
        /// The `Location` header without its query string, if any.
        location: Option<String>,
    },
    /// A watch `ERROR` event whose object is not a `Status` (a broken server or proxy). Only
    /// what kind of object arrived is kept, never its contents (it may be a Secret). Retryable
    /// by a new cycle after backoff (R15), as client-go does.
    #[error("watch ERROR event carries {what}, not a Status")]
    ErrorEventNotStatus {
        /// What arrived, e.g. `"a v1 Secret"`.
        what: String,
    },
    /// A 2xx LIST answer that is not a list of the expected kind (M14): a `Status` reporting
    /// success, a body without `items`, or a list of another kind (a `…List` kind other than the
    /// expected one; a CRD's custom `listKind` passes if it has `items`). It is never read as an empty
    /// list (that would delete every cached object); retryable by a new cycle after backoff
    /// (R15). A 2xx with a failure `Status` is an [`Error::Api`] instead.
    #[error("LIST answered {what} instead of a {expected}")]
    NotAList {
        /// What arrived (`"a PodList"`, `"a list without items"`); never object contents.
        what: String,
        /// The list kind expected.
        expected: String,
    },
    /// No response headers arrived within [`BodyLimits::head`](super::BodyLimits::head)
    /// (T4): a request on a half-open connection. The connection is dropped; like a dead
    /// watch (R7), the reflector backs off and tries again (R15).
    #[error("no response headers within {waited:?} (dead connection?)")]
    NoResponse {
        /// How long the request waited.
        waited: Duration,
    },
    /// A response body made no progress for the idle time (T4): a half-open connection. Like
    /// a dead watch (R7), the reflector backs off and lists again (R15).
    #[error("{what} body made no progress for {idle:?} (dead connection?)")]
    BodyStalled {
        /// Which body (`"LIST"`, `"error"`).
        what: &'static str,
        /// The idle time that passed.
        idle: Duration,
    },
    /// A gzip body (T3) is corrupt, or ended inside a gzip member (a cut connection).
    /// Retryable: a corrupt stream like a malformed line (R14), a cut one like a cut chunk (R9).
    #[error("cannot decode the gzip body: {source}")]
    Gzip {
        /// What the gzip decoder reported.
        #[source]
        source: std::io::Error,
    },
    /// A gzip body inflated more than 64-fold past its first 16 MiB (T3): a gzip bomb, or
    /// data far more repetitive than Kubernetes objects are. The rest is not read, and the
    /// list-watcher asks for identity bodies from its next request on; retryable like a
    /// malformed body (R14).
    #[error(
        "a gzip body inflated from {fed} to {produced} bytes; asking for identity bodies from now on"
    )]
    GzipInflation {
        /// Compressed bytes read.
        fed: u64,
        /// Decompressed bytes they produced.
        produced: u64,
    },
    /// The server answered with a `Content-Encoding` the request did not offer. Retryable by
    /// a new cycle after backoff (R15).
    #[error("the server answered with Content-Encoding {encoding:?}; only gzip was offered")]
    ContentEncoding {
        /// The header's value.
        encoding: String,
    },
    /// A decode on the decode pool panicked: a `Deserialize` impl of the cached type, given
    /// bytes it did not expect (T6). Retryable like a malformed body (R14).
    #[error("a decode panicked (a Deserialize impl); the answer is dropped")]
    DecodePanicked,
    /// A decode pool job stopped at a run boundary because its caller stopped waiting (the
    /// informer was stopped, T6). No caller ever sees it.
    #[error("a decode was abandoned by its caller")]
    DecodeAbandoned,
    /// The decode pool's threads could not be started (T6).
    #[error("cannot start the decode pool: {0}")]
    DecodePool(String),
    /// A response body grew past its cap (T4); the rest is not read.
    #[error("{what} body larger than {limit} bytes")]
    BodyTooLarge {
        /// Which body (`"LIST"`, `"error"`).
        what: &'static str,
        /// The cap, in bytes.
        limit: usize,
    },
    /// An item of a LIST body read as it arrives had not ended after
    /// [`BodyLimits::max_list_item_bytes`](super::BodyLimits::max_list_item_bytes) (T4, as
    /// M16 caps a watch line); the rest is not read. Retryable like a malformed body (R14).
    #[error("LIST item longer than {limit} bytes; treating the answer as malformed")]
    ItemTooLarge {
        /// The cap, in bytes.
        limit: usize,
    },
}

/// The reflector's view of an [`Error`] (docs/behaviour.md R9–R16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// 410 Gone / Expired (R11 on LIST, R12 on WATCH, R4 on a continue page).
    Expired,
    /// "Too large resource version" (R11).
    TooLargeResourceVersion,
    /// 429 Too Many Requests (R13).
    TooManyRequests,
    /// Connection refused (R13).
    ConnectionRefused,
    /// 500 Internal Error, including a malformed watch line (R14).
    InternalError,
    /// 400/422: the server rejects the request itself, e.g. it does not support watch-list (R19).
    Invalid,
    /// The event was dropped; the watch continues (R16).
    UnexpectedObject,
    /// The watch body was cut mid-line: treated like a normal close (R9).
    CutChunk,
    /// Anything else (R15).
    Other,
}

impl Error {
    /// The error class the reflector acts on.
    pub fn class(&self) -> ErrorClass {
        match self {
            Error::Api { status, .. } => classify_status(status),
            Error::Transport(e) if is_connection_refused(e) => ErrorClass::ConnectionRefused,
            Error::Transport(_)
            | Error::BuildRequest(_)
            | Error::NotAList { .. }
            | Error::UnexpectedStatus { .. }
            | Error::ErrorEventNotStatus { .. }
            | Error::BodyStalled { .. }
            | Error::NoResponse { .. }
            | Error::BodyTooLarge { .. }
            | Error::ContentEncoding { .. } => ErrorClass::Other,
            Error::Gzip { source } if source.kind() == std::io::ErrorKind::UnexpectedEof => {
                ErrorClass::CutChunk
            }
            Error::Gzip { .. } | Error::GzipInflation { .. } => ErrorClass::InternalError,
            Error::Decode { .. }
            | Error::Protobuf { .. }
            | Error::LineTooLong { .. }
            | Error::ItemTooLarge { .. }
            | Error::DecodePanicked
            | Error::DecodeAbandoned => ErrorClass::InternalError,
            Error::DecodePool(_) => ErrorClass::Other,
            Error::CutChunk(_) => ErrorClass::CutChunk,
            Error::UnexpectedObject { .. } => ErrorClass::UnexpectedObject,
        }
    }

    /// The server's `Retry-After`, used as the minimum delay before the next attempt.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Error::Api { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// What an [`Error::Protobuf`] shows: the error itself when it is about the wire (field
/// numbers, kinds, lengths), a fixed text when it is about a value.
fn protobuf_summary(e: &informer_proto::Error) -> String {
    match e {
        informer_proto::Error::Custom(_) | informer_proto::Error::Invalid(_) => {
            "a value does not fit its type".to_string()
        }
        other => other.to_string(),
    }
}

/// `Result` with this module's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The `details.retryAfterSeconds` of a `Status`, when positive: kube-apiserver puts a 429's
/// `Retry-After` there too. The one place this project reads it: the reflector (R13) and the
/// controller crate's retried reads (R24), whose `kube::Error::Api` keeps no response headers.
pub fn status_retry_after(status: &Status) -> Option<Duration> {
    status
        .details
        .as_ref()
        .map(|d| d.retry_after_seconds)
        .filter(|s| *s > 0)
        .map(|s| Duration::from_secs(u64::from(s)))
}

/// Builds [`Error::Api`], taking `Retry-After` from the header or from `details.retryAfterSeconds`.
pub(super) fn api_error(status: Status, header_retry: Option<Duration>) -> Error {
    let detail_retry = status_retry_after(&status);
    Error::Api {
        status: Box::new(status),
        retry_after: header_retry.or(detail_retry),
    }
}

/// The `Status` of an error answer (T5): kube-apiserver encodes it as the request's `Accept`
/// negotiates, so a protobuf request's error arrives as a protobuf `Status`. A body that is
/// neither becomes a failure carrying the HTTP code and the body's text.
pub(super) fn status_of_body(body: &[u8], protobuf: bool, code: u16) -> Status {
    let parsed = if protobuf {
        informer_proto::frame::read_status(body).ok()
    } else {
        serde_json::from_slice::<Status>(body).ok()
    };
    match parsed {
        Some(mut s) if s.code != 0 || s.is_failure() => {
            if s.code == 0 {
                s.code = code;
            }
            s
        }
        _ if protobuf => {
            Status::failure("an error body in protobuf that is not a Status", "").with_code(code)
        }
        _ => Status::failure(String::from_utf8_lossy(body).trim(), "").with_code(code),
    }
}

/// The error class of a `Status`, as client-go's reflector tells them apart: "too large
/// resource version" by its cause, or by its message on a 504 Timeout only (servers before
/// 1.19); a 429 whose message quotes that text (a consistent LIST the watch cache could not
/// serve in time, `ConsistentListFromCacheSkipTimeoutFallback`) is a 429 (R11, R13).
pub(super) fn classify_status(status: &Status) -> ErrorClass {
    let too_large = status.details.as_ref().is_some_and(|d| {
        d.causes
            .iter()
            .any(|c| c.reason == "ResourceVersionTooLarge")
    }) || (status.code == 504
        && status
            .message
            .to_ascii_lowercase()
            .contains("too large resource version"));
    if too_large {
        return ErrorClass::TooLargeResourceVersion;
    }
    match status.code {
        410 => ErrorClass::Expired,
        429 => ErrorClass::TooManyRequests,
        500 => ErrorClass::InternalError,
        400 | 422 => ErrorClass::Invalid,
        _ if status.reason == "Expired" || status.reason == "Gone" => ErrorClass::Expired,
        _ => ErrorClass::Other,
    }
}

pub(super) fn is_connection_refused(err: &kube::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    for _ in 0..16 {
        let Some(e) = cur else { return false };
        if let Some(io) = e.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return true;
        }
        if e.to_string().contains("Connection refused") {
            return true;
        }
        cur = e.source();
    }
    false
}
