//! [`PauseHandle`]: pauses and resumes a controller's reconciles through its workqueue (C11, W9).

use std::fmt;
use std::sync::Arc;

use informer_runtime::key::ObjectKey;
use informer_runtime::workqueue::WorkQueue;
use parking_lot::Mutex;

/// Pauses and resumes the reconciles of a [`Controller`](super::Controller) (C11).
///
/// While paused, no reconcile starts: the workqueue of the controller's run is paused (W9).
/// Reconciles already running finish, events keep queueing their keys (deduplicated, W1) and
/// retries still wait out their backoff; [`resume`](Self::resume) lets the workers take the
/// queued keys again. The state outlives a run: a run that starts while paused syncs its
/// caches and waits, and cancelling a paused run ends it without reconciling what is queued
/// (the next run lists those objects again).
///
/// Get it with [`Controller::pause_handle`](super::Controller::pause_handle), or share one
/// between controllers with [`Controller::with_pause_handle`](super::Controller::with_pause_handle).
/// The handle is cheap to clone. `pause` and `resume` are idempotent and do not nest.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use informer_controller::{Action, Context, Controller, Request};
/// # use k8s_openapi::api::core::v1::ConfigMap;
/// # use tokio_util::sync::CancellationToken;
/// # async fn reconcile(_: Request<ConfigMap>, _: Arc<Context<()>>) -> Result<Action, kube::Error> {
/// #     Ok(Action::Done)
/// # }
/// # async fn demo(factory: informer_runtime::SharedInformerFactory) {
/// let controller = Controller::<ConfigMap>::new(factory, "config");
/// let pause = controller.pause_handle();
/// let run = tokio::spawn(async move {
///     controller.run(reconcile, (), CancellationToken::new()).await
/// });
/// // A maintenance window: nothing is reconciled, changes wait in the queue.
/// pause.pause();
/// // ... maintenance ...
/// pause.resume(); // the changes made meanwhile are reconciled now
/// # let _ = run;
/// # }
/// ```
#[derive(Clone, Default)]
pub struct PauseHandle {
    inner: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    paused: bool,
    /// The queues of the runs going on now, each with the number its [`Attached`] removes.
    queues: Vec<(u64, WorkQueue<ObjectKey>)>,
    next: u64,
}

impl fmt::Debug for PauseHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.lock();
        f.debug_struct("PauseHandle")
            .field("paused", &st.paused)
            .field("runs", &st.queues.len())
            .finish()
    }
}

impl PauseHandle {
    /// A handle that is not paused and applies to no controller yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stops starting reconciles, in the run going on and in later runs, until
    /// [`resume`](Self::resume) (C11). Returns at once; reconciles already running finish.
    pub fn pause(&self) {
        let mut st = self.inner.lock();
        st.paused = true;
        for (_, queue) in &st.queues {
            queue.pause();
        }
    }

    /// Lets the workers take keys again, the ones queued while paused first (C11).
    pub fn resume(&self) {
        let mut st = self.inner.lock();
        st.paused = false;
        for (_, queue) in &st.queues {
            queue.resume();
        }
    }

    /// Whether [`pause`](Self::pause) was called and no [`resume`](Self::resume) since.
    pub fn is_paused(&self) -> bool {
        self.inner.lock().paused
    }

    /// Makes `queue`, a run's new queue, follow this handle until the returned guard is dropped.
    /// Under the handle's lock, so a `pause` racing with the start of a run reaches its queue.
    pub(super) fn attach(&self, queue: &WorkQueue<ObjectKey>) -> Attached {
        let mut st = self.inner.lock();
        if st.paused {
            queue.pause();
        }
        let id = st.next;
        st.next += 1;
        st.queues.push((id, queue.clone()));
        Attached {
            handle: self.clone(),
            id,
        }
    }
}

/// A run's queue attached to a [`PauseHandle`]; dropping it (the run ends, or its future is
/// dropped) detaches the queue.
pub(super) struct Attached {
    handle: PauseHandle,
    id: u64,
}

impl Drop for Attached {
    fn drop(&mut self) {
        self.handle
            .inner
            .lock()
            .queues
            .retain(|(id, _)| *id != self.id);
    }
}
