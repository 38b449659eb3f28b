//! Controllers over a fleet: one [`Controller`] per engaged cluster, started when the cluster
//! is engaged and ended when it leaves (decision record 29).

use std::collections::BTreeMap;
use std::error::Error as StdError;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use informer_runtime::{Object, ObjectKey};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use super::{ClusterHandle, ClusterName, Fleet, FleetError};
use crate::{Action, Context, Controller, Request};

/// One reconcile request of a [`FleetController`]: a primary object's key in one cluster.
pub struct FleetRequest<K> {
    /// The cluster the object is in.
    pub cluster: ClusterName,
    /// `namespace/name` of the primary object.
    pub key: ObjectKey,
    /// The object as that cluster's cache holds it, `None` once it is gone (C5).
    pub object: Option<Arc<K>>,
}

impl<K> fmt::Debug for FleetRequest<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetRequest")
            .field("cluster", &self.cluster)
            .field("key", &self.key)
            .field("deleted", &self.object.is_none())
            .finish()
    }
}

/// What a [`FleetController`]'s reconcile finds in its [`Context`]'s data: the cluster it
/// runs on, the fleet (to reach another cluster) and the data given to
/// [`FleetController::run`]. The context's `client()`, `lister()` and `recorder()` are the
/// cluster's.
pub struct ClusterData<D> {
    cluster: ClusterHandle,
    fleet: Fleet,
    data: Arc<D>,
}

impl<D> ClusterData<D> {
    /// The cluster this reconcile runs on.
    pub fn cluster(&self) -> &ClusterHandle {
        &self.cluster
    }

    /// The fleet: `fleet().cluster(&name)?` reaches another cluster, and its
    /// [`FleetError::ClusterNotFound`], returned from the reconcile, finishes the request.
    pub fn fleet(&self) -> &Fleet {
        &self.fleet
    }

    /// The data given to [`FleetController::run`], shared by every cluster.
    pub fn data(&self) -> &D {
        &self.data
    }
}

impl<D> fmt::Debug for ClusterData<D> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterData")
            .field("cluster", &self.cluster)
            .finish_non_exhaustive()
    }
}

/// Sets up each cluster's controller (`owns`, `watches`, workers, rate limiter, timeouts).
type Configure<K> = Arc<dyn Fn(Controller<K>) -> Controller<K> + Send + Sync>;

/// A controller of `K` over every cluster of a fleet: the same reconcile, one [`Controller`]
/// per cluster on the cluster's factory, so each cluster has its own queue and workers, and a
/// cluster that leaves takes its queued keys and in-flight reconciles with it (drained within
/// the controller's shutdown timeout).
///
/// A reconcile that returns an error whose source chain holds
/// [`FleetError::ClusterNotFound`] (another cluster it reached for has left) is finished, not
/// retried: the request is dropped and logged. Every other error is retried as
/// [`Controller::run`] retries it (C3).
///
/// ```no_run
/// # async fn demo(fleet: informer_controller::fleet::Fleet) {
/// use informer_controller::Action;
/// use informer_controller::fleet::{FleetController, FleetError};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let controller = FleetController::<ConfigMap>::new(&fleet, "summaries")
///     .configure(|c| c.workers(2));
/// let cancel = tokio_util::sync::CancellationToken::new();
/// controller
///     .run(
///         |req, ctx| async move {
///             // ctx.client() and ctx.lister() are req.cluster's.
///             let _configs = ctx.lister::<ConfigMap>();
///             Ok::<_, FleetError>(Action::Done)
///         },
///         (),
///         cancel,
///     )
///     .await
///     .ok();
/// # }
/// ```
pub struct FleetController<K> {
    fleet: Fleet,
    name: String,
    configure: Option<Configure<K>>,
}

impl<K> fmt::Debug for FleetController<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FleetController")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<K: Object> FleetController<K> {
    /// A controller named `name` (each cluster's controller has that name) over `fleet`.
    pub fn new(fleet: &Fleet, name: impl Into<String>) -> Self {
        FleetController {
            fleet: fleet.clone(),
            name: name.into(),
            configure: None,
        }
    }

    /// Sets up each cluster's [`Controller`] before it runs: `owns`, `watches`, `workers`,
    /// `rate_limiter`, timeouts.
    #[must_use]
    pub fn configure(
        mut self,
        configure: impl Fn(Controller<K>) -> Controller<K> + Send + Sync + 'static,
    ) -> Self {
        self.configure = Some(Arc::new(configure));
        self
    }

    /// Runs `reconcile` on every cluster that can serve, starting on clusters as they are
    /// engaged (or re-engaged) and ending on each as it leaves, until `cancel`; then ends every
    /// cluster's run (each drains within its shutdown timeout) and returns.
    ///
    /// A cluster's run that fails (its sources cannot be registered, or its caches do not
    /// sync) is logged and not restarted until the cluster is engaged again.
    pub async fn run<D, F, Fut, E>(
        &self,
        reconcile: F,
        data: D,
        cancel: CancellationToken,
    ) -> Result<(), FleetError>
    where
        D: Send + Sync + 'static,
        F: Fn(FleetRequest<K>, Arc<Context<ClusterData<D>>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: StdError + Send + Sync + 'static,
    {
        let reconcile = Arc::new(reconcile);
        let data = Arc::new(data);
        let mut changes = self.fleet.subscribe();
        // Each cluster's engagement this controller ran, with the token that ends its run.
        let mut runs: BTreeMap<ClusterName, (u64, CancellationToken)> = BTreeMap::new();
        let mut tasks = JoinSet::new();
        loop {
            changes.mark_unchanged();
            // A cluster that left keeps nothing here: its run ended with its token. One that is
            // engaged but not serving (it did not sync in time) keeps its run, if it has one.
            let engaged = self.fleet.engaged_generations();
            runs.retain(|name, (generation, _)| engaged.get(name) == Some(generation));
            for handle in self.fleet.serving() {
                let generation = handle.generation();
                if runs
                    .get(handle.name())
                    .is_some_and(|(g, _)| *g == generation)
                {
                    continue;
                }
                // The cluster's token ends the run when it leaves; this one when we stop.
                let stop = handle.cancelled();
                runs.insert(handle.name().clone(), (generation, stop.clone()));
                // Tracked: the fleet waits for this run to drain before the cluster's caches stop.
                let tracked = handle.clone();
                let run = self.cluster_run(handle, Arc::clone(&reconcile), Arc::clone(&data), stop);
                tasks.spawn(tracked.track(run));
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                changed = changes.changed() => {
                    if changed.is_err() {
                        break;
                    }
                }
                Some(ended) = tasks.join_next() => {
                    if let Err(e) = ended {
                        tracing::error!(controller = %self.name, error = %e, "fleet controller: a cluster's run panicked");
                    }
                }
            }
        }
        for (_, stop) in runs.values() {
            stop.cancel();
        }
        while let Some(ended) = tasks.join_next().await {
            if let Err(e) = ended {
                tracing::error!(controller = %self.name, error = %e, "fleet controller: a cluster's run panicked");
            }
        }
        Ok(())
    }

    /// One cluster's controller run, until `stop`.
    fn cluster_run<D, F, Fut, E>(
        &self,
        handle: ClusterHandle,
        reconcile: Arc<F>,
        data: Arc<D>,
        stop: CancellationToken,
    ) -> impl Future<Output = ()> + Send + 'static
    where
        D: Send + Sync + 'static,
        F: Fn(FleetRequest<K>, Arc<Context<ClusterData<D>>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: StdError + Send + Sync + 'static,
    {
        let cluster = handle.name().clone();
        let mut controller = Controller::<K>::new(handle.factory().clone(), self.name.clone());
        if let Some(configure) = &self.configure {
            controller = configure(controller);
        }
        let cluster_data = ClusterData {
            cluster: handle,
            fleet: self.fleet.clone(),
            data,
        };
        let name = self.name.clone();
        let wrapped = {
            let cluster = cluster.clone();
            move |req: Request<K>, ctx: Arc<Context<ClusterData<D>>>| {
                let reconcile = Arc::clone(&reconcile);
                let cluster = cluster.clone();
                async move {
                    let request = FleetRequest {
                        cluster: cluster.clone(),
                        key: req.key.clone(),
                        object: req.object,
                    };
                    match reconcile(request, ctx).await {
                        Err(e) => match cluster_not_found(&e) {
                            Some(gone) => {
                                tracing::info!(cluster = %cluster, key = %req.key, missing = %gone,
                                    "fleet controller: a cluster the reconcile reached for has left; request dropped");
                                Ok(Action::Done)
                            }
                            None => Err(e),
                        },
                        done => done,
                    }
                }
            }
        };
        async move {
            if let Err(e) = controller.run(wrapped, cluster_data, stop).await {
                tracing::warn!(controller = %name, cluster = %cluster, error = %e,
                    "fleet controller: the cluster's run ended with an error");
            }
        }
    }
}

/// The cluster named by a [`FleetError::ClusterNotFound`] in `e`'s source chain.
fn cluster_not_found<'e>(e: &'e (dyn StdError + 'static)) -> Option<&'e ClusterName> {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(FleetError::ClusterNotFound(name)) = e.downcast_ref::<FleetError>() {
            return Some(name);
        }
        next = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("reconcile failed")]
    struct Wrapper(#[source] FleetError);

    #[test]
    fn a_missing_cluster_is_found_in_the_source_chain() {
        let direct = FleetError::ClusterNotFound("b".into());
        assert_eq!(
            cluster_not_found(&direct).map(ClusterName::as_str),
            Some("b")
        );
        let wrapped = Wrapper(FleetError::ClusterNotFound("c".into()));
        assert_eq!(
            cluster_not_found(&wrapped).map(ClusterName::as_str),
            Some("c")
        );
        let other = Wrapper(FleetError::Unavailable {
            cluster: "d".into(),
            reason: "down".into(),
        });
        assert_eq!(cluster_not_found(&other), None);
    }
}
