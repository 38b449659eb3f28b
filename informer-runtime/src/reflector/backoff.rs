//! The reflector's jittered exponential backoff (R1): 800 ms ×2, jitter 1.0, cap 30 s, reset after 2 min.
//!
//! This is client-go's `wait.Backoff` + `backoffManager` shape. kube-runtime's `DefaultBackoff` uses
//! the same constants but resets on a timer of its own and cannot be driven by an injected random
//! source, so the few lines are written out here and tested with paused tokio time.

use std::time::Duration;

use rand::Rng;
use tokio::time::Instant;

/// Backoff settings (R1). `Default` gives client-go's values.
#[derive(Debug, Clone, PartialEq)]
pub struct BackoffConfig {
    /// The first delay, before jitter (800 ms).
    pub initial: Duration,
    /// The growth factor per failure (2.0).
    pub factor: f64,
    /// Jitter: a delay `d` becomes a uniform value in `d..d·(1+jitter)` (1.0).
    pub jitter: f64,
    /// The cap on the delay before jitter (30 s), so delays stay below `cap·(1+jitter)`.
    pub cap: Duration,
    /// After this long without a backoff the delay starts again at `initial` (2 min).
    pub reset_after: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial: Duration::from_millis(800),
            factor: 2.0,
            jitter: 1.0,
            cap: Duration::from_secs(30),
            reset_after: Duration::from_secs(120),
        }
    }
}

/// The backoff state of one reflector. Uses tokio's clock, so paused time drives it in tests.
#[derive(Debug, Clone)]
pub struct Backoff {
    config: BackoffConfig,
    /// The next delay before jitter.
    current: Duration,
    /// When the last delay was handed out.
    last: Option<Instant>,
}

impl Backoff {
    /// A fresh backoff.
    pub fn new(config: BackoffConfig) -> Self {
        let current = config.initial;
        Backoff {
            config,
            current,
            last: None,
        }
    }

    /// The next delay, with jitter from the thread-local random source.
    pub fn next_delay(&mut self) -> Duration {
        let r: f64 = rand::rng().random();
        self.next_delay_with(r)
    }

    /// The next delay, with `unit` (in `[0, 1)`) as the random draw. If the last delay was handed
    /// out more than `reset_after` ago, the sequence starts over at `initial` first (R1).
    pub fn next_delay_with(&mut self, unit: f64) -> Duration {
        let now = Instant::now();
        if let Some(last) = self.last
            && now.saturating_duration_since(last) > self.config.reset_after
        {
            self.current = self.config.initial;
        }
        self.last = Some(now);
        let base = self.current.min(self.config.cap);
        let jitter = self.config.jitter.max(0.0) * unit.clamp(0.0, 1.0);
        let delay = base.mul_f64(1.0 + jitter);
        let factor = if self.config.factor.is_finite() {
            self.config.factor.max(1.0)
        } else {
            1.0
        };
        self.current = base.mul_f64(factor).min(self.config.cap);
        delay
    }

    /// Starts the sequence over at `initial`.
    pub fn reset(&mut self) {
        self.current = self.config.initial;
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(d: Duration) -> f64 {
        d.as_secs_f64()
    }

    #[tokio::test(start_paused = true)]
    async fn r1_first_delay_is_0_8_to_1_6_s_then_doubles() {
        let mut b = Backoff::new(BackoffConfig::default());
        let d0 = b.next_delay();
        assert!((0.8..=1.6).contains(&secs(d0)), "{d0:?}");
        // Without jitter the sequence is 0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30, 30…
        let mut b = Backoff::new(BackoffConfig::default());
        let seq: Vec<f64> = (0..8).map(|_| secs(b.next_delay_with(0.0))).collect();
        let want = [0.8, 1.6, 3.2, 6.4, 12.8, 25.6, 30.0, 30.0];
        for (got, want) in seq.iter().zip(want) {
            assert!((got - want).abs() < 1e-6, "{seq:?}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn r1_persistent_failure_settles_in_30_to_60_s() {
        let mut b = Backoff::new(BackoffConfig::default());
        let mut last = Duration::ZERO;
        for i in 0..50 {
            let d = b.next_delay();
            assert!(d < Duration::from_secs(60), "delay {i} = {d:?}");
            if i >= 6 {
                assert!(d >= Duration::from_secs(30), "delay {i} = {d:?}");
            }
            // Failures follow each other: sleep the delay, as the reflector does.
            tokio::time::sleep(d).await;
            last = d;
        }
        assert!(last >= Duration::from_secs(30));
        let max_jitter = b.clone().next_delay_with(0.999_999);
        assert!(max_jitter < Duration::from_secs(60));
    }

    #[tokio::test(start_paused = true)]
    async fn r1_resets_after_two_minutes_healthy() {
        let mut b = Backoff::new(BackoffConfig::default());
        for _ in 0..6 {
            let d = b.next_delay_with(0.0);
            tokio::time::sleep(d).await;
        }
        assert_eq!(b.next_delay_with(0.0), Duration::from_secs(30));
        // Healthy for just under 2 min: no reset.
        tokio::time::sleep(Duration::from_secs(119)).await;
        assert_eq!(b.next_delay_with(0.0), Duration::from_secs(30));
        // Healthy for more than 2 min: back to 0.8–1.6 s.
        tokio::time::sleep(Duration::from_secs(121)).await;
        let d = b.next_delay();
        assert!((0.8..=1.6).contains(&secs(d)), "{d:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn r1_configurable() {
        let mut b = Backoff::new(BackoffConfig {
            initial: Duration::from_millis(10),
            factor: 3.0,
            jitter: 0.0,
            cap: Duration::from_millis(50),
            reset_after: Duration::from_secs(1),
        });
        let seq: Vec<_> = (0..4).map(|_| b.next_delay()).collect();
        assert_eq!(
            seq,
            [10, 30, 50, 50].map(Duration::from_millis).to_vec(),
            "factor 3, cap 50 ms, no jitter"
        );
    }
}
