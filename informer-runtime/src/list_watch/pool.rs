//! The decode pool (T6): where LIST pages and large watch events are decoded, so an informer
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

use std::sync::{Arc, LazyLock};

use tokio_util::sync::{CancellationToken, DropGuard};

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
        let Some(pool) = &self.threads else {
            return Submitted::Done(guarded(job));
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        let (token, guard) = cancellation();
        spawn_cancellable(pool, token, job, move |result| {
            // The receiver is gone only if the caller stopped waiting (it was cancelled).
            let _ = tx.send(result);
        });
        Submitted::Running(rx, guard)
    }
}

/// Runs `job`, a panic in it (a `Deserialize` impl of the caller's type) becoming
/// [`Error::DecodePanicked`].
fn guarded<T>(job: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(job))
        .unwrap_or(Err(Error::DecodePanicked))
}

/// A token cancelled when its guard drops: the guard goes to the caller, which drops it when it
/// stops waiting (its informer stopped).
fn cancellation() -> (CancellationToken, DropGuard) {
    let token = CancellationToken::new();
    let guard = token.clone().drop_guard();
    (token, guard)
}

/// Spawns `job` on `pool`, guarded, and hands its result to `deliver`. Once `token` is
/// cancelled, a job not yet started does not start and delivers [`Error::DecodeAbandoned`]
/// (T6: a LIST's items decode in a job per run, so it stops at a run boundary).
fn spawn_cancellable<T, F>(
    pool: &rayon::ThreadPool,
    token: CancellationToken,
    job: F,
    deliver: impl FnOnce(Result<T>) + Send + 'static,
) where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    pool.spawn(move || {
        let result = if token.is_cancelled() {
            Err(Error::DecodeAbandoned)
        } else {
            #[cfg(test)]
            let _counted = tests::Running::enter();
            guarded(job)
        };
        deliver(result);
    });
}

/// A job [`DecodePool::submit`] started.
pub(super) enum Submitted<T> {
    /// Run inline: its result.
    Done(Result<T>),
    /// Running on the pool; dropping it (the caller stopped waiting) cancels the job.
    Running(tokio::sync::oneshot::Receiver<Result<T>>, DropGuard),
}

impl<T> Submitted<T> {
    /// The job's result.
    pub(super) async fn wait(self) -> Result<T> {
        match self {
            Submitted::Done(res) => res,
            Submitted::Running(rx, _cancel_on_drop) => {
                rx.await.unwrap_or(Err(Error::DecodePanicked))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use bytes::Bytes;
    use k8s_openapi::api::core::v1::ConfigMap;
    use parking_lot::{Condvar, Mutex};

    use super::*;
    use crate::list_watch::RawListPage;
    use crate::list_watch::format::{Format, Json};

    const LIMIT: Duration = Duration::from_secs(10);

    /// Jobs that started on a pool thread while another job was running there (T6): each such
    /// job stacks a whole decode on that thread's stack.
    static NESTED: AtomicUsize = AtomicUsize::new(0);

    thread_local! {
        /// Whether this pool thread is running a job.
        static RUNNING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Marks this pool thread as running a job while it lives, counting a job started inside
    /// another in [`NESTED`].
    pub(super) struct Running(bool);

    impl Running {
        pub(super) fn enter() -> Running {
            let outer = RUNNING.replace(true);
            if outer {
                NESTED.fetch_add(1, Ordering::SeqCst);
            }
            Running(outer)
        }
    }

    impl Drop for Running {
        fn drop(&mut self) {
            RUNNING.set(self.0);
        }
    }

    /// Items per run of a LIST decode (`streamed.rs`).
    const RUN: usize = 32;

    fn page(items: usize) -> RawListPage<ConfigMap> {
        let items: Vec<String> = (0..items)
            .map(|i| {
                format!(
                    r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}"}}}}"#
                )
            })
            .collect();
        let body = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMapList","metadata":{{"resourceVersion":"1"}},"items":[{}]}}"#,
            items.join(",")
        );
        RawListPage::read(
            Bytes::from(body),
            Format::Json(Json {
                exact_capacity: true,
            }),
            Arc::from(vec!["ConfigMapList".to_string()]),
        )
        .expect("a list page")
    }

    /// A gate the decodes wait at until the test opens it.
    #[derive(Default)]
    struct Gate {
        open: Mutex<bool>,
        opened: Condvar,
    }

    impl Gate {
        fn wait(&self) {
            let mut open = self.open.lock();
            while !*open {
                assert!(
                    !self.opened.wait_for(&mut open, LIMIT).timed_out(),
                    "gate never opened"
                );
            }
        }

        fn open(&self) {
            *self.open.lock() = true;
            self.opened.notify_all();
        }
    }

    /// T6: a page decode whose caller stopped waiting (its informer was stopped) stops at a
    /// run boundary: each thread finishes the run it is in, and no other run starts.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn t6_a_page_decode_stops_at_a_run_boundary_once_abandoned() {
        let pool = DecodePool::new(2).expect("a pool of two threads");
        let decoded = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(Gate::default());
        let (started, mut started_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        // Dropped with the last job's closure: tells the test every job has ended.
        let (alive, ended) = mpsc::channel::<()>();
        let (d, g) = (Arc::clone(&decoded), Arc::clone(&gate));
        let map = move |_: ConfigMap| {
            let _ = (&alive, started.send(()));
            g.wait();
            d.fetch_add(1, Ordering::SeqCst);
            Some(())
        };
        let decode = tokio::spawn({
            let pool = pool.clone();
            async move {
                let list = page(20 * RUN).stream();
                list.decode_on(&pool, map, |_, _| ()).await.map(|p| p.items)
            }
        });
        tokio::time::timeout(LIMIT, started_rx.recv())
            .await
            .expect("a run started in time");
        decode.abort();
        assert!(decode.await.is_err_and(|e| e.is_cancelled()));
        gate.open();
        let ended = tokio::task::spawn_blocking(move || ended.recv_timeout(LIMIT))
            .await
            .expect("no panic");
        assert_eq!(
            ended,
            Err(mpsc::RecvTimeoutError::Disconnected),
            "every job ended"
        );
        let after = decoded.load(Ordering::SeqCst);
        assert!(
            after <= pool.threads() * RUN,
            "{after} objects decoded after the caller left: more than the runs in flight"
        );
    }

    /// T6: no decode job starts on a pool thread inside another one: a page decode never waits
    /// on a pool thread for its runs, where the thread would pick up queued jobs and stack them
    /// (every deep object's decode on one 8 MiB stack).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn t6_no_decode_job_runs_nested_in_another() {
        let pool = DecodePool::new(2).expect("a pool of two threads");
        let pages = (0..32).map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let list = page(20 * RUN).stream();
                list.decode_on(&pool, Some, |_, _| ())
                    .await
                    .map(|p| p.items)
            })
        });
        for decoded in futures::future::join_all(pages).await {
            let decoded = decoded.expect("no panic").expect("decoded");
            assert_eq!(decoded.len(), 20 * RUN);
        }
        assert_eq!(NESTED.load(Ordering::SeqCst), 0, "jobs ran nested");
    }
}
