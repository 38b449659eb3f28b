//! How long to wait for an answer and how much of a body to read (T4).

use std::time::Duration;

use bytes::BytesMut;

use super::body::BodyReader;
use super::{Error, Result};

/// Bounds on waiting for an answer and reading a LIST body or an error body (T4): a request
/// on a half-open connection fails after `head` without response headers, and a body after
/// `idle` without bytes, like a dead watch (R7), instead of freezing a list or a watch for the
/// kernel's TCP timeout (about 15 minutes); a body above its cap fails with
/// [`Error::BodyTooLarge`] instead of exhausting memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyLimits {
    /// The longest wait for the status line and headers of any LIST, WATCH or watch-list
    /// answer. Default [`DEFAULT_RESPONSE_HEAD_TIMEOUT`].
    pub head: Duration,
    /// The longest time without a byte of the body. Default [`DEFAULT_BODY_IDLE_TIMEOUT`].
    pub idle: Duration,
    /// The largest LIST body, in bytes. Default [`DEFAULT_MAX_LIST_BODY_BYTES`].
    pub max_list_bytes: usize,
    /// The largest error body (a `Status`), in bytes. Default [`DEFAULT_MAX_ERROR_BODY_BYTES`].
    pub max_error_bytes: usize,
    /// The largest item of a LIST body read as it arrives, in bytes: an item that has not ended
    /// past it fails the list with [`Error::ItemTooLarge`]. Default
    /// [`DEFAULT_MAX_LIST_ITEM_BYTES`].
    pub max_list_item_bytes: usize,
}

/// T4's default wait for response headers: 90 s, longer than kube-apiserver's own request
/// timeout (`--request-timeout`, 60 s by default), after which a live server answers a slow
/// LIST with 504 itself; a watch's headers come at once.
pub const DEFAULT_RESPONSE_HEAD_TIMEOUT: Duration = Duration::from_secs(90);
/// T4's default idle time of a body (docs/behaviour.md: 60 s).
pub const DEFAULT_BODY_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// The default cap of one LIST body: 4 GiB, far above a 500-object page (a few MiB) and above
/// an unpaged relist of 200 000 realistic Pods.
pub const DEFAULT_MAX_LIST_BODY_BYTES: usize = 4 << 30;
/// The default cap of an error body: 1 MiB (a `Status` is a few hundred bytes).
pub const DEFAULT_MAX_ERROR_BODY_BYTES: usize = 1 << 20;
/// The default cap of one LIST item (T4): M16's watch line cap, 16 MiB, since an object
/// larger than that could not come on a watch either (an etcd object is at most 1.5 MiB by
/// default).
pub const DEFAULT_MAX_LIST_ITEM_BYTES: usize = super::DEFAULT_MAX_WATCH_LINE_BYTES;

impl Default for BodyLimits {
    fn default() -> Self {
        BodyLimits {
            head: DEFAULT_RESPONSE_HEAD_TIMEOUT,
            idle: DEFAULT_BODY_IDLE_TIMEOUT,
            max_list_bytes: DEFAULT_MAX_LIST_BODY_BYTES,
            max_error_bytes: DEFAULT_MAX_ERROR_BODY_BYTES,
            max_list_item_bytes: DEFAULT_MAX_LIST_ITEM_BYTES,
        }
    }
}

/// Reads a whole body within `limits` (T4): fails when no bytes arrive for `limits.idle` or
/// when the decoded body grows past `max` bytes (a gzip body counts decompressed, T3).
pub(super) async fn read_body(
    mut body: BodyReader,
    idle: Duration,
    max: usize,
    what: &'static str,
) -> Result<bytes::Bytes> {
    let mut buf = BytesMut::new();
    loop {
        let data = match tokio::time::timeout(idle, body.next()).await {
            Err(_) => return Err(Error::BodyStalled { what, idle }),
            Ok(None) => return Ok(buf.freeze()),
            Ok(Some(data)) => data?,
        };
        if buf.len().saturating_add(data.len()) > max {
            return Err(Error::BodyTooLarge { what, limit: max });
        }
        buf.extend_from_slice(&data);
    }
}
