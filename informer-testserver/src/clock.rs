//! The server's clock, as Kubernetes writes timestamps.

/// The current time as Kubernetes writes timestamps (RFC 3339, seconds).
pub(crate) fn now() -> String {
    jiff::Timestamp::from_second(jiff::Timestamp::now().as_second())
        .map(|t| t.to_string())
        .unwrap_or_default()
}
