//! [`QueueBuilder`]: one builder for plain, delaying and rate-limited queues, with name and
//! metrics, and every queue's constructors (`builder`, `new`, `Default`), so that the queues
//! themselves never refer back to their builder.

use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::sync::Arc;

use super::delaying::DelayingQueue;
use super::metrics::{QueueMetrics, WorkQueueMetrics};
use super::queue::WorkQueue;
use super::rate_limiter::{RateLimiter, default_controller_rate_limiter};
use super::rate_limiting::RateLimitingQueue;
use super::{Error, Result};

/// Configures and builds a [`WorkQueue`], [`DelayingQueue`] or [`RateLimitingQueue`].
///
/// Start from [`WorkQueue::builder`], [`DelayingQueue::builder`] or
/// [`RateLimitingQueue::builder`]; the second type parameter is the queue that
/// [`build`](QueueBuilder::build) returns, so the choice is made once, at the start.
///
/// Metrics (W7) are recorded only when the queue has both a [`name`](Self::name) and
/// [`metrics`](Self::metrics), as client-go records them only for named queues.
///
/// ```no_run
/// use informer_workqueue::{
///     RateLimitingQueue, WorkQueueMetrics, default_controller_rate_limiter,
/// };
/// # async fn run() {
/// let mut registry = prometheus_client::registry::Registry::default();
/// let metrics = WorkQueueMetrics::new(&mut registry);
/// let queue: RateLimitingQueue<String> = RateLimitingQueue::builder()
///     .name("configmaps")
///     .rate_limiter(default_controller_rate_limiter())
///     .metrics(&metrics)
///     .build();
/// # }
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct QueueBuilder<T, Q> {
    name: Option<String>,
    metrics: Option<WorkQueueMetrics>,
    limiter: Option<Arc<dyn RateLimiter<T>>>,
    _queue: PhantomData<fn() -> Q>,
}

impl<T, Q> fmt::Debug for QueueBuilder<T, Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueBuilder")
            .field("name", &self.name)
            .field("metrics", &self.metrics.is_some())
            .field("rate_limiter", &self.limiter.is_some())
            .finish()
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static, Q> QueueBuilder<T, Q> {
    pub(crate) fn new() -> Self {
        Self {
            name: None,
            metrics: None,
            limiter: None,
            _queue: PhantomData,
        }
    }

    /// Names the queue; the name becomes the `name` label of its metrics.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Records metrics for this queue in `metrics` (W7). Needs a [`name`](Self::name) too.
    pub fn metrics(mut self, metrics: &WorkQueueMetrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    fn queue_metrics(&self) -> Option<QueueMetrics> {
        match (&self.name, &self.metrics) {
            (Some(name), Some(metrics)) => Some(metrics.for_queue(name)),
            _ => None,
        }
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> QueueBuilder<T, WorkQueue<T>> {
    /// Builds the queue.
    ///
    /// # Panics
    ///
    /// With metrics, the 500 ms gauge refresher is spawned, which panics outside a tokio
    /// runtime; see [`try_build`](Self::try_build). Without metrics no runtime is needed.
    pub fn build(self) -> WorkQueue<T> {
        // The message names the misuse; the error itself carries no more detail.
        self.try_build().unwrap_or_else(|err| panic!("{err}"))
    }

    /// Builds the queue, or returns [`Error::NoRuntime`] if it needs a tokio runtime and none
    /// is running.
    pub fn try_build(self) -> Result<WorkQueue<T>> {
        let metrics = self.queue_metrics();
        let with_metrics = metrics.is_some();
        let queue = WorkQueue::with_metrics(metrics);
        if with_metrics {
            let rt = tokio::runtime::Handle::try_current().map_err(|_| Error::NoRuntime)?;
            queue.spawn_metrics_refresher(&rt);
        }
        Ok(queue)
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> QueueBuilder<T, DelayingQueue<T>> {
    /// Builds the queue and spawns its timer task.
    ///
    /// # Panics
    ///
    /// Panics outside a tokio runtime; see [`try_build`](Self::try_build).
    pub fn build(self) -> DelayingQueue<T> {
        self.try_build().unwrap_or_else(|err| panic!("{err}"))
    }

    /// Builds the queue, or returns [`Error::NoRuntime`] outside a tokio runtime.
    pub fn try_build(self) -> Result<DelayingQueue<T>> {
        DelayingQueue::start(WorkQueue::with_metrics(self.queue_metrics()))
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> QueueBuilder<T, RateLimitingQueue<T>> {
    /// Sets the rate limiter (default:
    /// [`default_controller_rate_limiter`](super::default_controller_rate_limiter)).
    pub fn rate_limiter(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.limiter = Some(Arc::new(limiter));
        self
    }

    /// Builds the queue and spawns its timer task.
    ///
    /// # Panics
    ///
    /// Panics outside a tokio runtime; see [`try_build`](Self::try_build).
    pub fn build(self) -> RateLimitingQueue<T> {
        self.try_build().unwrap_or_else(|err| panic!("{err}"))
    }

    /// Builds the queue, or returns [`Error::NoRuntime`] outside a tokio runtime.
    pub fn try_build(self) -> Result<RateLimitingQueue<T>> {
        let metrics = self.queue_metrics();
        let limiter = self
            .limiter
            .unwrap_or_else(|| Arc::new(default_controller_rate_limiter()));
        let delaying = DelayingQueue::start(WorkQueue::with_metrics(metrics))?;
        Ok(RateLimitingQueue::from_parts(delaying, limiter))
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> WorkQueue<T> {
    /// Starts a [`QueueBuilder`] for a plain queue with a name and metrics.
    ///
    /// ```no_run
    /// use informer_workqueue::{WorkQueue, WorkQueueMetrics};
    /// # async fn run() {
    /// let mut registry = prometheus_client::registry::Registry::default();
    /// let metrics = WorkQueueMetrics::new(&mut registry);
    /// let queue: WorkQueue<String> = WorkQueue::builder().name("pods").metrics(&metrics).build();
    /// # }
    /// ```
    pub fn builder() -> QueueBuilder<T, WorkQueue<T>> {
        QueueBuilder::new()
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> Default for DelayingQueue<T> {
    /// The same as [`DelayingQueue::new`]; panics outside a tokio runtime.
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> DelayingQueue<T> {
    /// Creates an unnamed delaying queue without metrics.
    ///
    /// # Panics
    ///
    /// Panics when called outside a tokio runtime, like [`tokio::spawn`]. Use
    /// [`QueueBuilder::try_build`] to get an error instead.
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// Starts a [`QueueBuilder`] for a delaying queue.
    pub fn builder() -> QueueBuilder<T, DelayingQueue<T>> {
        QueueBuilder::new()
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> Default for RateLimitingQueue<T> {
    /// An unnamed queue with the default controller limiter; panics outside a tokio runtime.
    fn default() -> Self {
        Self::builder().build()
    }
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> RateLimitingQueue<T> {
    /// Creates an unnamed queue without metrics that uses `limiter`.
    ///
    /// # Panics
    ///
    /// Panics when called outside a tokio runtime, like [`tokio::spawn`]. Use
    /// [`QueueBuilder::try_build`] to get an error instead.
    pub fn new(limiter: impl RateLimiter<T> + 'static) -> Self {
        Self::builder().rate_limiter(limiter).build()
    }

    /// Starts a [`QueueBuilder`] for a rate-limited queue.
    pub fn builder() -> QueueBuilder<T, RateLimitingQueue<T>> {
        QueueBuilder::new()
    }
}
