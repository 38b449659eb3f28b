//! Rate limiters that decide how long a failed item waits before its retry (W5, W6).

use std::collections::HashMap;
use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// Decides the delay before an item is retried (W4, W5).
///
/// This is client-go's `TypedRateLimiter[T]`. Limiters are shared between workers, so every
/// method takes `&self` and the implementation synchronises internally. Time is read from
/// [`tokio::time::Instant`], so limiters follow a paused tokio clock in tests.
pub trait RateLimiter<T>: Send + Sync {
    /// Records one more failure of `item` and returns how long it must wait before its retry.
    fn when(&self, item: &T) -> Duration;
    /// Clears the failure history of `item`, typically after it was processed successfully.
    fn forget(&self, item: &T);
    /// How many failures of `item` have been recorded since the last [`forget`](Self::forget).
    fn num_requeues(&self, item: &T) -> u32;
}

/// A boxed or shared limiter is a limiter.
macro_rules! forward_to_pointee {
    ($($pointer:ident),*) => {$(
        impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for $pointer<L> {
            fn when(&self, item: &T) -> Duration {
                (**self).when(item)
            }
            fn forget(&self, item: &T) {
                (**self).forget(item)
            }
            fn num_requeues(&self, item: &T) -> u32 {
                (**self).num_requeues(item)
            }
        }
    )*};
}
forward_to_pointee!(Box, Arc);

/// `forget` and `num_requeues` of a limiter that keeps its history in a `failures: Failures<T>`
/// field.
macro_rules! per_item_history {
    () => {
        fn forget(&self, item: &T) {
            self.failures.forget(item);
        }

        fn num_requeues(&self, item: &T) -> u32 {
            self.failures.count(item)
        }
    };
}

/// The per-item failure counts of the limiters that back off per item (W5): what `when`
/// records, `forget` clears and `num_requeues` reads.
struct Failures<T>(Mutex<HashMap<T, u32>>);

impl<T> Default for Failures<T> {
    fn default() -> Self {
        Failures(Mutex::new(HashMap::new()))
    }
}

impl<T: Hash + Eq + Clone> Failures<T> {
    /// Records one more failure of `item`; returns its count including this one (at least 1).
    fn record(&self, item: &T) -> u32 {
        let mut failures = self.0.lock();
        let count = failures.entry(item.clone()).or_insert(0);
        *count = count.saturating_add(1);
        *count
    }

    fn forget(&self, item: &T) {
        self.0.lock().remove(item);
    }

    fn count(&self, item: &T) -> u32 {
        self.0.lock().get(item).copied().unwrap_or(0)
    }
}

/// The limiter that controllers use by default (W5, W6).
///
/// It is the maximum of a per-item exponential backoff (5 ms doubling up to 1000 s) and an overall
/// token bucket (10 qps, burst 100), and the result is capped at 1000 s **including** the bucket,
/// so a flood of failures can never push a retry hours into the future (M12). The per-item delay
/// reaches the cap on the 19th consecutive failure.
pub fn default_controller_rate_limiter<T>() -> MaxDelayRateLimiter<MaxOfRateLimiter<T>>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    let max = Duration::from_secs(1000);
    with_max_delay(
        MaxOfRateLimiter::new(vec![
            Box::new(ItemExponentialFailureRateLimiter::new(
                Duration::from_millis(5),
                max,
            )),
            Box::new(BucketRateLimiter::new(10.0, 100)),
        ]),
        max,
    )
}

/// The default per-item limiter: exponential from 1 ms up to 1000 s (W5).
pub fn default_item_based_rate_limiter<T>() -> ItemExponentialFailureRateLimiter<T>
where
    T: Hash + Eq + Clone + Send + Sync,
{
    ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1000))
}

/// Caps the delays of any limiter at `max` (W6, ours); client-go's bucket has no cap.
pub fn with_max_delay<L>(limiter: L, max: Duration) -> MaxDelayRateLimiter<L> {
    MaxDelayRateLimiter {
        inner: limiter,
        max,
    }
}

/// Per-item exponential backoff: `base · 2^n`, capped at `max` (W5).
///
/// `n` is the number of failures recorded *before* this call, so the first call returns `base`.
/// The computation saturates instead of overflowing, however many failures there are.
pub struct ItemExponentialFailureRateLimiter<T> {
    base: Duration,
    max: Duration,
    failures: Failures<T>,
}

impl<T: Hash + Eq + Clone + Send + Sync> ItemExponentialFailureRateLimiter<T> {
    /// Creates a limiter that starts at `base` and never returns more than `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max,
            failures: Failures::default(),
        }
    }
}

impl<T: Hash + Eq + Clone + Send + Sync> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let n = self.failures.record(item) - 1;
        // 2^n fits a u32 for n < 32; beyond that any non-zero base saturates at the cap.
        let factor = 1u32.checked_shl(n);
        match factor.and_then(|f| self.base.checked_mul(f)) {
            Some(delay) => delay.min(self.max),
            None if self.base.is_zero() => Duration::ZERO,
            None => self.max,
        }
    }

    per_item_history!();
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

/// An overall token bucket shared by all items (W5).
///
/// Each call reserves one token and returns how long the caller must wait for it, with the
/// semantics of `golang.org/x/time/rate`'s `Reserve`: the bucket starts full with `burst`
/// tokens, refills at `qps` tokens per second, and may go into debt, so the n-th call beyond the
/// burst waits `n / qps`. A bucket with `burst == 0` (or `qps <= 0` once empty) can never grant a
/// token and returns [`Duration::MAX`]; wrap it in [`with_max_delay`] to bound that. It keeps no
/// per-item state: `forget` does nothing and `num_requeues` is always 0.
pub struct BucketRateLimiter {
    qps: f64,
    burst: u32,
    state: Mutex<Bucket>,
}

struct Bucket {
    tokens: f64,
    last: Instant,
}

impl BucketRateLimiter {
    /// Creates a full bucket of `burst` tokens that refills at `qps` tokens per second.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            qps,
            burst,
            state: Mutex::new(Bucket {
                tokens: f64::from(burst),
                last: Instant::now(),
            }),
        }
    }

    /// Reserves one token and returns the wait until it is available.
    fn reserve(&self) -> Duration {
        if self.qps == f64::INFINITY {
            return Duration::ZERO;
        }
        if self.burst == 0 {
            return Duration::MAX;
        }
        let mut bucket = self.state.lock();
        let now = Instant::now().max(bucket.last);
        let refill_rate = if self.qps > 0.0 { self.qps } else { 0.0 };
        let elapsed = now.duration_since(bucket.last).as_secs_f64();
        let tokens = (bucket.tokens + elapsed * refill_rate).min(f64::from(self.burst)) - 1.0;
        if tokens < 0.0 && refill_rate == 0.0 {
            // The reservation can never be honoured; like x/time/rate, do not consume it.
            return Duration::MAX;
        }
        bucket.tokens = tokens;
        bucket.last = now;
        if tokens >= 0.0 {
            return Duration::ZERO;
        }
        let nanos = (-tokens / refill_rate * 1e9).round();
        if nanos >= u64::MAX as f64 {
            Duration::MAX
        } else {
            // `nanos` is finite, positive and below u64::MAX here.
            Duration::from_nanos(nanos as u64)
        }
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve()
    }
    fn forget(&self, _item: &T) {}
    fn num_requeues(&self, _item: &T) -> u32 {
        0
    }
}

impl fmt::Debug for BucketRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BucketRateLimiter")
            .field("qps", &self.qps)
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

/// `fast` for the first `max_fast_attempts` failures of an item, `slow` after that (W5).
pub struct ItemFastSlowRateLimiter<T> {
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
    failures: Failures<T>,
}

impl<T: Hash + Eq + Clone + Send + Sync> ItemFastSlowRateLimiter<T> {
    /// Creates a limiter that waits `fast` for the first `max_fast_attempts` failures, then `slow`.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self {
            fast,
            slow,
            max_fast_attempts,
            failures: Failures::default(),
        }
    }
}

impl<T: Hash + Eq + Clone + Send + Sync> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        if self.failures.record(item) <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    per_item_history!();
}

impl<T> fmt::Debug for ItemFastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .finish_non_exhaustive()
    }
}

/// The maximum over several limiters (W5).
///
/// Every limiter sees every call, so each one keeps its own history. `num_requeues` is the
/// largest count any of them reports.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    /// Combines `limiters`; with none, every delay is zero.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> u32 {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

/// A limiter whose delays never exceed a maximum (W6, ours); built by [`with_max_delay`].
#[derive(Debug)]
pub struct MaxDelayRateLimiter<L> {
    inner: L,
    max: Duration,
}

impl<L> MaxDelayRateLimiter<L> {
    /// The wrapped limiter.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The cap applied to every delay.
    pub fn max_delay(&self) -> Duration {
        self.max
    }
}

impl<T, L: RateLimiter<T>> RateLimiter<T> for MaxDelayRateLimiter<L> {
    fn when(&self, item: &T) -> Duration {
        self.inner.when(item).min(self.max)
    }
    fn forget(&self, item: &T) {
        self.inner.forget(item)
    }
    fn num_requeues(&self, item: &T) -> u32 {
        self.inner.num_requeues(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn w5_exponential_doubles_from_base_and_caps() {
        let rl = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
        let delays: Vec<_> = (0..20).map(|_| rl.when(&"a")).collect();
        assert_eq!(delays[0], 5 * MS);
        assert_eq!(delays[1], 10 * MS);
        assert_eq!(delays[2], 20 * MS);
        assert_eq!(delays[17], Duration::from_millis(655_360));
        // W5: the 19th consecutive failure hits the 1000 s cap.
        assert_eq!(delays[18], Duration::from_secs(1000));
        assert_eq!(rl.num_requeues(&"a"), 20);
        assert_eq!(rl.num_requeues(&"b"), 0);
        rl.forget(&"a");
        assert_eq!(rl.num_requeues(&"a"), 0);
        assert_eq!(rl.when(&"a"), 5 * MS);
    }

    #[test]
    fn w5_exponential_never_overflows() {
        let rl = ItemExponentialFailureRateLimiter::new(Duration::MAX, Duration::MAX);
        for _ in 0..100 {
            assert_eq!(rl.when(&1), Duration::MAX);
        }
        let rl = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(3));
        for _ in 0..200 {
            assert!(rl.when(&1) <= Duration::from_secs(3));
        }
        assert_eq!(rl.when(&1), Duration::from_secs(3));
        let rl = ItemExponentialFailureRateLimiter::new(Duration::ZERO, Duration::from_secs(3));
        for _ in 0..40 {
            assert_eq!(rl.when(&1), Duration::ZERO);
        }
    }

    #[test]
    fn w5_default_item_based_starts_at_1ms() {
        let rl = default_item_based_rate_limiter();
        assert_eq!(rl.when(&"x"), MS);
        assert_eq!(rl.when(&"x"), 2 * MS);
    }

    #[test]
    fn w5_fast_slow() {
        let rl = ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(10), 3);
        let delays: Vec<_> = (0..5).map(|_| rl.when(&"a")).collect();
        assert_eq!(delays, [5 * MS, 5 * MS, 5 * MS, 10_000 * MS, 10_000 * MS]);
        assert_eq!(rl.num_requeues(&"a"), 5);
        rl.forget(&"a");
        assert_eq!(rl.when(&"a"), 5 * MS);
    }

    #[test]
    fn w5_max_of_takes_the_largest() {
        let rl: MaxOfRateLimiter<&str> = MaxOfRateLimiter::new(vec![
            Box::new(ItemFastSlowRateLimiter::new(5 * MS, 3 * MS, 1)),
            Box::new(ItemExponentialFailureRateLimiter::new(
                MS,
                Duration::from_secs(1),
            )),
        ]);
        assert_eq!(rl.when(&"a"), 5 * MS);
        assert_eq!(rl.when(&"a"), 3 * MS);
        assert_eq!(rl.when(&"a"), 4 * MS);
        assert_eq!(rl.when(&"a"), 8 * MS);
        assert_eq!(rl.num_requeues(&"a"), 4);
        rl.forget(&"a");
        assert_eq!(rl.num_requeues(&"a"), 0);
    }

    #[test]
    fn w5_empty_max_of_is_zero() {
        let rl: MaxOfRateLimiter<u8> = MaxOfRateLimiter::new(Vec::new());
        assert_eq!(rl.when(&1), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn w5_bucket_reserves_tokens_like_x_time_rate() {
        let rl = BucketRateLimiter::new(10.0, 3);
        let when = |rl: &BucketRateLimiter| RateLimiter::<()>::when(rl, &());
        // The burst is free, then every reservation queues 100 ms behind the previous one.
        assert_eq!(when(&rl), Duration::ZERO);
        assert_eq!(when(&rl), Duration::ZERO);
        assert_eq!(when(&rl), Duration::ZERO);
        assert_eq!(when(&rl), 100 * MS);
        assert_eq!(when(&rl), 200 * MS);
        // After 1 s the debt of 2 tokens is repaid and the bucket is full again (capped at burst).
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(when(&rl), Duration::ZERO);
        tokio::time::advance(Duration::from_secs(60)).await;
        for _ in 0..3 {
            assert_eq!(when(&rl), Duration::ZERO);
        }
        assert_eq!(when(&rl), 100 * MS);
        assert_eq!(RateLimiter::<()>::num_requeues(&rl, &()), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn w5_bucket_without_burst_or_rate_never_grants() {
        let rl = BucketRateLimiter::new(10.0, 0);
        assert_eq!(RateLimiter::<()>::when(&rl, &()), Duration::MAX);
        let rl = BucketRateLimiter::new(0.0, 1);
        assert_eq!(RateLimiter::<()>::when(&rl, &()), Duration::ZERO);
        assert_eq!(RateLimiter::<()>::when(&rl, &()), Duration::MAX);
        let rl = BucketRateLimiter::new(f64::INFINITY, 0);
        assert_eq!(RateLimiter::<()>::when(&rl, &()), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn w6_max_delay_caps_an_exhausted_bucket() {
        let rl = with_max_delay(BucketRateLimiter::new(0.001, 1), Duration::from_secs(5));
        assert_eq!(RateLimiter::<()>::when(&rl, &()), Duration::ZERO);
        // Without the cap this would be 1000 s, then 2000 s, ...
        for _ in 0..10 {
            assert_eq!(RateLimiter::<()>::when(&rl, &()), Duration::from_secs(5));
        }
        assert_eq!(rl.max_delay(), Duration::from_secs(5));
    }
}
