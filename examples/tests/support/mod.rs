//! Helpers shared by the example crate's integration tests.

use std::time::Duration;

/// How long a test waits for a condition before it fails.
pub(crate) const WAIT: Duration = Duration::from_secs(20);

/// Waits until `cond` holds, polling every 10 ms; panics naming `what` after [`WAIT`].
pub(crate) async fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
