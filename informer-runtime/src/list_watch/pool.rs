//! The decode pool ([T6]): where LIST pages and large watch events are decoded, so an informer
//! decodes on every core instead of the one its task runs on.
//!
//! A [`DecodePool`] is a few threads (by default one per core), shared by every list-watcher
//! that is given it; a factory shares one among its informers. A decode is handed to the pool
//! as one job that owns what it reads (the body is reference-counted `Bytes`), and the task
//! that asked awaits it without holding a worker. Results come back in wire order: the caller
//! applies them as if it had decoded them itself. A pool of one thread is no pool: decodes
//! then run on the caller's task, as they did before the pool existed.
//!
//! The threads are long-lived and decode every large object the informers cache, so the
//! memory a cached object frees when an update replaces it is reused by the next decode on the
//! same thread (an allocator's per-thread arena that never allocates again would keep it).
//! Each thread has a large stack, so the deepest object the decoders accept (informer-proto's
//! `MAX_DEPTH`, serde_json's recursion limit) decodes there with room to spare.
//!
//! [T6]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#18-transport-after-kube-apiserver-and-client-go

use std::sync::{Arc, LazyLock};

use super::{Error, Result};

/// Stack of each decode thread: a deeply nested object (a CRD schema, about 62 levels) takes
/// about 1 MiB in a debug build.
const STACK: usize = 8 << 20;

/// Where a list-watcher decodes: on a pool of threads, or inline on the task that reads the
/// answer. Cloning shares the pool.
///
/// ```
/// use informer_runtime::list_watch::DecodePool;
///
/// let pool = DecodePool::new(2)?;
/// assert_eq!(pool.threads(), 2);
/// assert_eq!(DecodePool::new(1)?.threads(), 1); // inline: no threads of its own
/// # Ok::<(), informer_runtime::list_watch::Error>(())
/// ```
#[derive(Clone, Default)]
pub struct DecodePool {
    /// `None`: inline.
    threads: Option<Arc<rayon::ThreadPool>>,
}

impl std::fmt::Debug for DecodePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DecodePool")
            .field("threads", &self.threads())
            .finish()
    }
}

/// The process-wide pool every list-watcher uses unless given another.
static SHARED: LazyLock<DecodePool> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    DecodePool::new(cores).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "cannot start the decode pool; decoding inline");
        DecodePool::inline()
    })
});

impl DecodePool {
    /// A pool of `threads` decode threads; `0` or `1` decodes inline, on the caller's task.
    pub fn new(threads: usize) -> Result<Self> {
        if threads <= 1 {
            return Ok(DecodePool::inline());
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .stack_size(STACK)
            .thread_name(|i| format!("informer-decode-{i}"))
            .build()
            .map_err(|e| Error::DecodePool(e.to_string()))?;
        Ok(DecodePool {
            threads: Some(Arc::new(pool)),
        })
    }

    /// Decodes inline, on the task that reads the answer.
    pub fn inline() -> Self {
        DecodePool { threads: None }
    }

    /// The process-wide pool, one thread per core (inline on a single core), started on first
    /// use; the default of every list-watcher.
    pub fn shared() -> Self {
        SHARED.clone()
    }

    /// How many threads decode: `1` when inline.
    pub fn threads(&self) -> usize {
        self.threads.as_ref().map_or(1, |p| p.current_num_threads())
    }

    /// Whether decodes run on the caller's task.
    pub(crate) fn is_inline(&self) -> bool {
        self.threads.is_none()
    }

    /// Runs `job` on the pool and awaits its result; inline, runs it right here. A job that
    /// panics (a `Deserialize` impl of the caller's type) is [`Error::DecodePanicked`].
    pub(super) async fn run<T, F>(&self, job: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T> + Send + 'static,
    {
        self.submit(job).wait().await
    }

    /// Starts `job` on the pool at once and returns what awaits its result, so several jobs run
    /// while their caller goes on reading; inline, runs it right here. A job that panics is
    /// [`Error::DecodePanicked`], as in [`run`](Self::run).
    pub(super) fn submit<T, F>(&self, job: F) -> Submitted<T>
    where
        T: Send + 'static,
        F: FnOnce() -> Result<T> + Send + 'static,
    {
        let guarded = move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
                .unwrap_or(Err(Error::DecodePanicked))
        };
        let Some(pool) = &self.threads else {
            return Submitted::Done(guarded());
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        pool.spawn(move || {
            // The receiver is gone only if the caller stopped waiting (it was cancelled).
            let _ = tx.send(guarded());
        });
        Submitted::Running(rx)
    }

    /// Runs `f` on each of `parts` across the pool's threads and returns the results in the
    /// order of `parts`. Called from a pool job ([`run`](Self::run)); inline, in order.
    pub(super) fn map_in_order<P, R>(
        &self,
        parts: Vec<P>,
        f: impl Fn(P) -> R + Send + Sync,
    ) -> Vec<R>
    where
        P: Send,
        R: Send,
    {
        use rayon::prelude::*;
        match &self.threads {
            Some(pool) => pool.install(|| parts.into_par_iter().map(f).collect()),
            None => parts.into_iter().map(f).collect(),
        }
    }
}

/// A job [`DecodePool::submit`] started.
pub(super) enum Submitted<T> {
    /// Run inline: its result.
    Done(Result<T>),
    /// Running on the pool.
    Running(tokio::sync::oneshot::Receiver<Result<T>>),
}

impl<T> Submitted<T> {
    /// The job's result.
    pub(super) async fn wait(self) -> Result<T> {
        match self {
            Submitted::Done(res) => res,
            Submitted::Running(rx) => rx.await.unwrap_or(Err(Error::DecodePanicked)),
        }
    }
}
