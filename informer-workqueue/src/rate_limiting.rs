//! The rate-limited work queue that controllers use: a delaying queue plus a [`RateLimiter`] (W4).

use std::fmt;
use std::hash::Hash;
use std::ops::Deref;
use std::sync::Arc;

use super::delaying::DelayingQueue;
#[cfg(doc)]
use super::queue::WorkQueue;
use super::rate_limiter::RateLimiter;

/// A [`DelayingQueue`] whose retries are spaced by a [`RateLimiter`] (W4).
///
/// This is client-go's `TypedRateLimitingInterface`: [`add_rate_limited`](Self::add_rate_limited)
/// is `add_after(item, limiter.when(item))`, [`forget`](Self::forget) clears an item's failure
/// history and [`num_requeues`](Self::num_requeues) reports it. Without an explicit limiter the
/// queue uses [`default_controller_rate_limiter`](super::default_controller_rate_limiter)
/// (W5, W6: capped at 1000 s).
///
/// The handle is cheap to clone. Creating the queue spawns the timer task of the delaying queue,
/// so it needs a tokio runtime.
///
/// # Example
///
/// The usual controller worker: succeed and forget, or fail and retry later.
///
/// ```no_run
/// use std::time::Duration;
/// use informer_workqueue::{
///     ItemExponentialFailureRateLimiter, RateLimitingQueue, WorkQueueMetrics,
/// };
/// # async fn reconcile(_key: &str) -> Result<(), ()> { Ok(()) }
/// # async fn run() {
/// let mut registry = prometheus_client::registry::Registry::default();
/// let metrics = WorkQueueMetrics::new(&mut registry);
/// let queue: RateLimitingQueue<String> = RateLimitingQueue::builder()
///     .name("deployments")
///     .rate_limiter(ItemExponentialFailureRateLimiter::new(
///         Duration::from_millis(5),
///         Duration::from_secs(300),
///     ))
///     .metrics(&metrics)
///     .build();
///
/// let worker = {
///     let queue = queue.clone();
///     tokio::spawn(async move {
///         while let Some(key) = queue.get().await {
///             match reconcile(&key).await {
///                 Ok(()) => queue.forget(&key),
///                 Err(()) => queue.add_rate_limited(key.clone()),
///             }
///             queue.done(&key);
///         }
///     })
/// };
/// queue.add("default/web".to_string());
/// queue.shut_down_with_drain().await;
/// worker.await.ok();
/// # }
/// ```
pub struct RateLimitingQueue<T> {
    delaying: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            delaying: self.delaying.clone(),
            limiter: Arc::clone(&self.limiter),
        }
    }
}

impl<T> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("delaying", &self.delaying)
            .finish_non_exhaustive()
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> RateLimitingQueue<T> {
    pub(crate) fn from_parts(delaying: DelayingQueue<T>, limiter: Arc<dyn RateLimiter<T>>) -> Self {
        Self { delaying, limiter }
    }

    /// Adds `item` after the delay the rate limiter picks for it (W4).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.limiter.when(&item);
        self.delaying.add_after(item, delay);
    }

    /// Clears the failure history of `item` in the rate limiter (W4). It does not remove the
    /// item from the queue.
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item)
    }

    /// How many times `item` was rate-limited since the last [`forget`](Self::forget) (W4).
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.limiter.num_requeues(item)
    }

    /// The rate limiter of this queue.
    pub fn rate_limiter(&self) -> &Arc<dyn RateLimiter<T>> {
        &self.limiter
    }

    /// The underlying [`DelayingQueue`] (also reached by deref).
    pub fn delaying(&self) -> &DelayingQueue<T> {
        &self.delaying
    }
}

/// Every [`DelayingQueue`] and [`WorkQueue`] method (`add`, `add_after`, `get`, `get_guarded`,
/// `done`, `len`, `shut_down_with_drain`, `pause`, `resume`, …) works on a rate-limited queue as
/// is: it is the same queue with a rate limiter beside it (W4). Pausing it (W9) leaves the rate
/// limiter alone: [`add_rate_limited`](Self::add_rate_limited) still counts a requeue and waits
/// the limiter's delay, and [`forget`](Self::forget) still clears the history.
impl<T> Deref for RateLimitingQueue<T> {
    type Target = DelayingQueue<T>;

    fn deref(&self) -> &DelayingQueue<T> {
        &self.delaying
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ItemExponentialFailureRateLimiter, default_controller_rate_limiter};
    use std::time::Duration;
    use tokio::time::Instant;

    const MS: Duration = Duration::from_millis(1);

    /// `get` under a virtual-time limit, so a broken timer fails the test instead of hanging it.
    async fn get<T: Hash + Eq + Clone + Send + Sync + 'static>(
        q: &RateLimitingQueue<T>,
    ) -> Option<T> {
        tokio::time::timeout(Duration::from_secs(86_400), q.get())
            .await
            .expect("no item within a virtual day")
    }

    #[tokio::test(start_paused = true)]
    async fn w4_add_rate_limited_waits_for_the_limiter_delay() {
        let q = RateLimitingQueue::new(ItemExponentialFailureRateLimiter::new(
            10 * MS,
            Duration::from_secs(1),
        ));
        let start = Instant::now();
        q.add_rate_limited("a");
        assert_eq!(q.num_requeues(&"a"), 1);
        assert_eq!(q.len(), 0);
        assert_eq!(get(&q).await, Some("a"));
        assert_eq!(start.elapsed(), 10 * MS);
        q.add_rate_limited("a");
        q.done(&"a");
        assert_eq!(get(&q).await, Some("a"));
        assert_eq!(start.elapsed(), 30 * MS);
        assert_eq!(q.num_requeues(&"a"), 2);
        q.forget(&"a");
        assert_eq!(q.num_requeues(&"a"), 0);
        q.done(&"a");
    }

    #[tokio::test(start_paused = true)]
    async fn w5_default_controller_delays_double_up_to_the_cap_on_the_19th_failure() {
        let rl = default_controller_rate_limiter();
        let mut want = 5 * MS;
        for failure in 1..=25u32 {
            let got = rl.when(&"key");
            if failure < 19 {
                assert_eq!(got, want, "failure {failure}");
                want *= 2;
            } else {
                assert_eq!(got, Duration::from_secs(1000), "failure {failure}");
            }
        }
        assert_eq!(rl.num_requeues(&"key"), 25);
    }

    #[tokio::test(start_paused = true)]
    async fn w6_default_controller_cap_holds_under_bucket_exhaustion() {
        let rl = default_controller_rate_limiter();
        // Exhaust the shared bucket with many distinct items: client-go would climb to
        // (n - 100) / 10 s, e.g. 19 990 s for the 20 100th item, without bound.
        let mut max = Duration::ZERO;
        for i in 0..20_100u32 {
            max = max.max(rl.when(&i));
        }
        assert_eq!(max, Duration::from_secs(1000));
        // A fresh item whose own backoff is 5 ms still waits for the (capped) bucket.
        assert_eq!(rl.when(&u32::MAX), Duration::from_secs(1000));
    }
}
