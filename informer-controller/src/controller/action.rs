//! What a reconcile receives (a [`Request`] and a [`Context`]) and what it returns (an [`Action`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use informer_runtime::key::ObjectKey;
use informer_runtime::lister::Lister;
use informer_runtime::{Object, SharedInformerFactory};

use super::writes::{WriteLog, WriteRecorder};

/// What the controller does with a key after a successful reconcile (C3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Done: the key's rate-limit history is forgotten; it runs again on the next change.
    Done,
    /// Run again after the key's rate-limited delay, without counting an error
    /// (controller-runtime's `Result{Requeue: true}`; metric result `requeue`).
    Requeue,
    /// Forget the rate-limit history and run again after this delay (metric result
    /// `requeue_after`), e.g. to re-check an external system periodically.
    RequeueAfter(Duration),
}

impl Action {
    /// [`Action::Done`].
    pub fn done() -> Self {
        Action::Done
    }

    /// [`Action::RequeueAfter`].
    pub fn requeue_after(delay: Duration) -> Self {
        Action::RequeueAfter(delay)
    }

    /// The `result` label of `controller_runtime_reconcile_total` for this action.
    pub(crate) fn result_label(self) -> &'static str {
        match self {
            Action::Done => "success",
            Action::Requeue => "requeue",
            Action::RequeueAfter(_) => "requeue_after",
        }
    }
}

/// One reconcile request: the key of a primary object and its cached state.
pub struct Request<K> {
    /// `namespace/name` (or `name` for cluster-scoped kinds) of the primary object.
    pub key: ObjectKey,
    /// The primary object as the cache holds it when the reconcile starts (the shared `Arc`,
    /// X7), or `None` when it is gone: deleted primaries are still reconciled so that cleanup
    /// can run (C5).
    pub object: Option<Arc<K>>,
}

impl<K> Request<K> {
    /// The primary object's namespace (`None` for cluster-scoped kinds).
    pub fn namespace(&self) -> Option<&str> {
        self.key.namespace()
    }

    /// The primary object's name.
    pub fn name(&self) -> &str {
        self.key.name()
    }

    /// True when the primary object is no longer in the cache (C5).
    pub fn is_deleted(&self) -> bool {
        self.object.is_none()
    }
}

impl<K> Clone for Request<K> {
    fn clone(&self) -> Self {
        Request {
            key: self.key.clone(),
            object: self.object.clone(),
        }
    }
}

impl<K> fmt::Debug for Request<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Object contents (possibly a Secret) are never logged; the key is enough.
        f.debug_struct("Request")
            .field("key", &self.key)
            .field("deleted", &self.object.is_none())
            .finish()
    }
}

/// What every reconcile of one controller run shares: the client, the factory (so listers of
/// every kind the controller uses), and the user's data.
pub struct Context<D> {
    client: kube::Client,
    factory: SharedInformerFactory,
    controller: Arc<str>,
    data: D,
    writes: Option<Arc<WriteLog>>,
}

impl<D> Context<D> {
    pub(crate) fn new(
        factory: SharedInformerFactory,
        controller: Arc<str>,
        data: D,
        writes: Option<Arc<WriteLog>>,
    ) -> Self {
        Context {
            client: factory.client().clone(),
            factory,
            controller,
            data,
            writes,
        }
    }

    /// Records the writes a reconcile of `key` makes, so that the next reconcile of `key`
    /// waits until the caches hold them (K2, K3). Pass it to the write helpers
    /// ([`finalizer`](crate::finalizer::finalizer), [`update_status`](crate::status::update_status)),
    /// or call [`WriteRecorder::record`] with what a `kube::Api` write returned. With the guard
    /// off ([`Controller::read_your_writes`](super::Controller::read_your_writes)) it records
    /// nothing.
    pub fn recorder(&self, key: &ObjectKey) -> WriteRecorder {
        match &self.writes {
            Some(log) => WriteRecorder::new(key.clone(), Arc::clone(log), self.factory.clone()),
            None => WriteRecorder::detached(),
        }
    }

    /// The client the factory lists and watches with; writes go through it (`kube::Api`).
    pub fn client(&self) -> &kube::Client {
        &self.client
    }

    /// The shared informer factory the controller's informers come from.
    pub fn factory(&self) -> &SharedInformerFactory {
        &self.factory
    }

    /// A lister of `T` from the factory (the same cache the controller's handlers read). For a
    /// kind the controller does not own or watch, the informer is created on first use and
    /// stays empty until someone calls [`SharedInformerFactory::start`] (F3).
    pub fn lister<T: Object>(&self) -> Lister<T> {
        Lister::from_indexer(self.factory.informer_for::<T>().indexer())
    }

    /// The controller's name (its metric label and workqueue name).
    pub fn controller(&self) -> &str {
        &self.controller
    }

    /// The user data passed to [`Controller::run`](super::Controller::run).
    pub fn data(&self) -> &D {
        &self.data
    }
}

impl<D> fmt::Debug for Context<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("controller", &self.controller)
            .finish_non_exhaustive()
    }
}
