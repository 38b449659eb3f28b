//! Helpers the crate's unit tests share.

use std::time::Duration;

/// Waits (yielding to the runtime) until `cond` holds; false after `limit`.
pub(crate) async fn until(limit: Duration, cond: impl Fn() -> bool) -> bool {
    tokio::time::timeout(limit, async {
        while !cond() {
            tokio::task::yield_now().await;
        }
    })
    .await
    .is_ok()
}
