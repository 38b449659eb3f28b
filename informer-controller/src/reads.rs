//! Reads that wait out a 429 (R24): the GETs and LISTs this crate sends on its own (the leader's
//! and the shard sets' Lease reads, the re-read after a status conflict) retry a 429 Too Many
//! Requests after the server's `Retry-After`, as client-go's rest client does
//! (`with_retry.go`). kube-apiserver 1.38 answers a consistent GET it serves from a lagging watch
//! cache (KEP-6404) that way; `kube::Api` does not retry.
//!
//! `kube::Error::Api` keeps the `Status` of the answer but not its headers, so the wait comes from
//! the `Status`'s `details.retryAfterSeconds` (kube-apiserver writes it beside the header), read
//! by the same function the reflector uses (R13).

use std::future::Future;
use std::time::Duration;

use informer_runtime::list_watch::status_retry_after;
use tokio::time::Instant;

/// Retries after the first attempt, as client-go's default `maxRetries`.
pub(crate) const MAX_RETRIES: u32 = 10;
/// The wait when a 429 names no `Retry-After` (client-go then waits the `Retry-After` it
/// reads, at least 1 s).
pub(crate) const DEFAULT_WAIT: Duration = Duration::from_secs(1);
/// The longest wait for one 429, whatever the server asks: R1's backoff cap.
pub(crate) const MAX_WAIT: Duration = Duration::from_secs(30);

/// Runs the read `attempt` until it answers something other than a 429 (R24). After a 429 it
/// waits the answer's `Retry-After` (default [`DEFAULT_WAIT`], at most [`MAX_WAIT`]) and tries
/// again, at most [`MAX_RETRIES`] times. A wait that would end at or past `deadline` (the
/// caller's renew deadline) is not started: the 429 is returned at once, as the caller would
/// have cut the read there anyway. Cancellation-safe: dropping the future drops the attempt or
/// the wait in progress.
pub(crate) async fn retrying<T, F, Fut>(
    what: &str,
    deadline: Option<Instant>,
    mut attempt: F,
) -> Result<T, kube::Error>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, kube::Error>>,
{
    let mut retries = 0;
    loop {
        let err = match attempt().await {
            Ok(value) => return Ok(value),
            Err(err) => err,
        };
        let Some(wait) = too_many_requests_wait(&err) else {
            return Err(err);
        };
        if retries >= MAX_RETRIES {
            tracing::debug!(
                read = what,
                retries,
                "429 Too Many Requests; out of retries (R24)"
            );
            return Err(err);
        }
        if deadline.is_some_and(|d| Instant::now() + wait >= d) {
            tracing::debug!(
                read = what,
                ?wait,
                "429 Too Many Requests; its Retry-After ends past the deadline (R24)"
            );
            return Err(err);
        }
        retries += 1;
        tracing::debug!(
            read = what,
            retry = retries,
            ?wait,
            "429 Too Many Requests; waiting its Retry-After (R24)"
        );
        tokio::time::sleep(wait).await;
    }
}

/// How long to wait before retrying after `err`, if it is a 429 (R24).
fn too_many_requests_wait(err: &kube::Error) -> Option<Duration> {
    match err {
        kube::Error::Api(status) if status.code == 429 => Some(
            status_retry_after(status)
                .unwrap_or(DEFAULT_WAIT)
                .min(MAX_WAIT),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use kube::core::Status;
    use kube::core::response::StatusDetails;

    use super::*;

    fn status(code: u16, retry_after: Option<u32>) -> kube::Error {
        let mut s = Status::failure("injected", "TooManyRequests").with_code(code);
        s.details = retry_after.map(|secs| StatusDetails {
            name: String::new(),
            group: String::new(),
            kind: String::new(),
            uid: String::new(),
            causes: Vec::new(),
            retry_after_seconds: secs,
        });
        kube::Error::Api(s.boxed())
    }

    /// A read that fails with `errors` in turn, then answers the attempt count.
    async fn run(
        errors: Vec<kube::Error>,
        deadline: Option<Instant>,
    ) -> (Result<u32, kube::Error>, u32, Duration) {
        let errors = parking_lot::Mutex::new(errors.into_iter());
        let calls = AtomicU32::new(0);
        let start = Instant::now();
        let res = retrying("test", deadline, || {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            let next = errors.lock().next();
            async move { next.map_or(Ok(n), Err) }
        })
        .await;
        (res, calls.load(Ordering::SeqCst), start.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn waits_the_retry_after_of_the_status_details() {
        let (res, calls, took) = run(vec![status(429, Some(3)), status(429, None)], None).await;
        assert_eq!(res.ok(), Some(3));
        assert_eq!(calls, 3);
        // 3 s from details, then the 1 s default.
        assert_eq!(took, Duration::from_secs(4));
    }

    #[tokio::test(start_paused = true)]
    async fn caps_the_wait() {
        let (res, _, took) = run(vec![status(429, Some(3600))], None).await;
        assert_eq!(res.ok(), Some(2));
        assert_eq!(took, MAX_WAIT);
    }

    #[tokio::test(start_paused = true)]
    async fn gives_up_after_max_retries() {
        let errors = (0..=MAX_RETRIES).map(|_| status(429, Some(1))).collect();
        let (res, calls, took) = run(errors, None).await;
        assert!(matches!(res, Err(kube::Error::Api(s)) if s.code == 429));
        assert_eq!(calls, MAX_RETRIES + 1);
        assert_eq!(took, Duration::from_secs(u64::from(MAX_RETRIES)));
    }

    #[tokio::test(start_paused = true)]
    async fn other_errors_are_not_retried() {
        for code in [404, 409, 500, 503] {
            let (res, calls, _) = run(vec![status(code, Some(1))], None).await;
            assert!(matches!(res, Err(kube::Error::Api(s)) if s.code == code));
            assert_eq!(calls, 1);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_past_the_deadline_is_not_started() {
        let deadline = Instant::now() + Duration::from_millis(2500);
        let errors = vec![status(429, Some(1)), status(429, Some(2))];
        let (res, calls, took) = run(errors, Some(deadline)).await;
        // The first wait (1 s) fits; the second (2 s, ending at 3 s) would pass 2.5 s.
        assert!(matches!(res, Err(kube::Error::Api(s)) if s.code == 429));
        assert_eq!(calls, 2);
        assert_eq!(took, Duration::from_secs(1));
    }
}
