//! Rate-limited work queues for controllers, with client-go's semantics and metrics (W1–W9).
//!
//! `informer-runtime` re-exports this crate as `informer_runtime::workqueue`; it depends on
//! nothing else of informer-rs, like client-go's `util/workqueue`. Rule IDs (W1, …) are defined
//! in `docs/behaviour.md` at the repository root.
//!
//! Three layers, each a cheap cloneable handle:
//!
//! * [`WorkQueue`]: FIFO with `dirty` and `processing` sets. An item is never handed to two
//!   workers at once, duplicates collapse, and shutdown drains (W1, W2).
//! * [`DelayingQueue`]: adds [`add_after`](DelayingQueue::add_after), driven by one timer task
//!   with no polling (W3).
//! * [`RateLimitingQueue`]: adds [`add_rate_limited`](RateLimitingQueue::add_rate_limited),
//!   [`forget`](RateLimitingQueue::forget) and [`num_requeues`](RateLimitingQueue::num_requeues)
//!   on top of a [`RateLimiter`] (W4–W6).
//!
//! Each layer can [`pause`](WorkQueue::pause) and [`resume`](WorkQueue::resume) handing out
//! items, as client-go v0.38's queues can (W9).
//!
//! Named queues built with [`WorkQueueMetrics`] export client-go's `workqueue_*` metrics (W7).
//! Unlike kube-rs's scheduler, the queue has per-item rate limiting and metrics (W8).
//!
//! # Quick start
//!
//! ```no_run
//! use informer_workqueue::{RateLimitingQueue, WorkQueueMetrics};
//! # async fn reconcile(_key: &str) -> Result<(), ()> { Ok(()) }
//! # async fn run() {
//! let mut registry = prometheus_client::registry::Registry::default();
//! let metrics = WorkQueueMetrics::new(&mut registry);
//! // Default limiter: max(exponential 5 ms..1000 s, bucket 10 qps / burst 100), capped at 1000 s.
//! let queue: RateLimitingQueue<String> =
//!     RateLimitingQueue::builder().name("pods").metrics(&metrics).build();
//!
//! for _ in 0..4 {
//!     let queue = queue.clone();
//!     tokio::spawn(async move {
//!         while let Some(key) = queue.get_guarded().await {
//!             match reconcile(&key).await {
//!                 Ok(()) => queue.forget(&key),
//!                 Err(()) => queue.add_rate_limited(key.clone()),
//!             }
//!             // Dropping `key` marks it done.
//!         }
//!     });
//! }
//! queue.add("default/web".to_string());
//! # }
//! ```

mod builder;
mod delaying;
mod metrics;
mod queue;
mod rate_limiter;
mod rate_limiting;

pub use builder::QueueBuilder;
pub use delaying::DelayingQueue;
pub use metrics::WorkQueueMetrics;
pub use queue::{WorkGuard, WorkQueue};
pub use rate_limiter::{
    BucketRateLimiter, ItemExponentialFailureRateLimiter, ItemFastSlowRateLimiter,
    MaxDelayRateLimiter, MaxOfRateLimiter, RateLimiter, default_controller_rate_limiter,
    default_item_based_rate_limiter, with_max_delay,
};
pub use rate_limiting::RateLimitingQueue;

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A queue that runs a background task (the delay timer or the metrics refresher) was built
    /// outside a tokio runtime. Not retryable: build the queue from inside a runtime.
    #[error("building this workqueue spawns a background task and needs a running tokio runtime")]
    NoRuntime,
}

/// The result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
