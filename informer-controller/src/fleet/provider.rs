//! Where clusters come from: the [`Provider`] trait, the [`ClusterSink`] a provider reports to,
//! and [`StaticProvider`], a list changed by hand.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// A cluster's name in the fleet: the key of every route to it.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClusterName(Arc<str>);

impl ClusterName {
    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A name compares, orders and hashes as its string, so tables keyed by it are read by `&str`.
impl std::borrow::Borrow<str> for ClusterName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<&str> for ClusterName {
    fn from(name: &str) -> Self {
        ClusterName(name.into())
    }
}

impl From<String> for ClusterName {
    fn from(name: String) -> Self {
        ClusterName(name.into())
    }
}

impl fmt::Display for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// How to reach a cluster: its client configuration and a revision that names this version of
/// it. Reporting a cluster again with another revision re-engages it (the old generation is
/// disengaged first); with the same revision it changes nothing.
#[derive(Clone)]
pub struct ClusterSpec {
    /// The client configuration (`kube::Config::from_custom_kubeconfig`, `TestServer::kube_config`).
    pub config: kube::Config,
    /// What identifies this configuration, chosen by the provider (a hash of a kubeconfig's
    /// bytes, a Secret's resourceVersion); 0 by default.
    pub revision: u64,
}

impl ClusterSpec {
    /// A spec of revision 0.
    pub fn new(config: kube::Config) -> Self {
        ClusterSpec {
            config,
            revision: 0,
        }
    }

    /// The same spec with `revision`.
    #[must_use]
    pub fn revision(mut self, revision: u64) -> Self {
        self.revision = revision;
        self
    }
}

impl fmt::Debug for ClusterSpec {
    /// The server and revision only: a configuration holds credentials.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterSpec")
            .field("cluster_url", &self.config.cluster_url.to_string())
            .field("revision", &self.revision)
            .finish_non_exhaustive()
    }
}

/// A change a provider reports.
pub(super) enum Change {
    Engage(ClusterName, Box<ClusterSpec>),
    /// With a sender, answered once the cluster is disengaged.
    Disengage(ClusterName, Option<oneshot::Sender<()>>),
}

/// Where a [`Provider`] reports the clusters it finds. Cheap to clone; its calls never block.
/// Changes are applied in the order they are reported.
#[derive(Clone)]
pub struct ClusterSink {
    pub(super) tx: mpsc::UnboundedSender<Change>,
}

impl ClusterSink {
    /// Engages `name` with `spec`, or re-engages it if it is engaged with another revision.
    pub fn engage(&self, name: impl Into<ClusterName>, spec: ClusterSpec) {
        // The fleet has stopped when the receiver is gone: nothing is left to engage.
        let _ = self.tx.send(Change::Engage(name.into(), Box::new(spec)));
    }

    /// Disengages `name`; nothing if it is not engaged.
    pub fn disengage(&self, name: impl Into<ClusterName>) {
        let _ = self.tx.send(Change::Disengage(name.into(), None));
    }

    /// Disengages `name` and resolves once the fleet has: its controllers and informers have
    /// stopped (or it was not engaged, or the fleet stopped). The fleet's changes are applied
    /// in order, so this also waits for every change reported before it.
    pub fn disengage_and_wait(
        &self,
        name: impl Into<ClusterName>,
    ) -> impl Future<Output = ()> + Send + 'static {
        disengage_waiting(&self.tx, name.into())
    }
}

impl fmt::Debug for ClusterSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClusterSink").finish_non_exhaustive()
    }
}

/// Sends a disengagement that the fleet answers once it is done; the future resolves then, or
/// when the fleet stopped (its receiver dropped, with every cluster disengaged).
fn disengage_waiting(
    tx: &mpsc::UnboundedSender<Change>,
    name: ClusterName,
) -> impl Future<Output = ()> + Send + 'static {
    let (done, disengaged) = oneshot::channel();
    let _ = tx.send(Change::Disengage(name, Some(done)));
    async move {
        let _ = disengaged.await;
    }
}

/// A provider's failure: it ends [`Fleet::run`](super::Fleet::run), which disengages every
/// cluster first.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProviderError(pub String);

/// A source of clusters, run by [`Fleet::run`](super::Fleet::run): it reports clusters to the
/// sink as it finds, changes and loses them, until `cancel`. Returning `Ok` early keeps the
/// clusters it reported engaged until the fleet stops.
pub trait Provider: Send + 'static {
    /// Runs the provider.
    fn run(
        self,
        sink: ClusterSink,
        cancel: CancellationToken,
    ) -> impl Future<Output = Result<(), ProviderError>> + Send;
}

/// A list of clusters given up front and changed by hand through its [`StaticClusters`] handle.
///
/// ```no_run
/// # async fn demo(a: kube::Config, b: kube::Config) {
/// use informer_controller::fleet::{ClusterSpec, Fleet, StaticProvider};
/// let provider = StaticProvider::new([("a", ClusterSpec::new(a))]);
/// let clusters = provider.handle();
/// let fleet = Fleet::builder().build();
/// let cancel = tokio_util::sync::CancellationToken::new();
/// tokio::spawn({
///     let fleet = fleet.clone();
///     let cancel = cancel.clone();
///     async move { fleet.run(provider, cancel).await }
/// });
/// clusters.insert("b", ClusterSpec::new(b)); // engaged while the fleet runs
/// clusters.remove("a"); // disengaged: its informers stop and its caches go
/// # }
/// ```
pub struct StaticProvider {
    initial: Vec<(ClusterName, ClusterSpec)>,
    tx: mpsc::UnboundedSender<Change>,
    rx: mpsc::UnboundedReceiver<Change>,
}

impl StaticProvider {
    /// A provider that engages `clusters` when the fleet starts.
    pub fn new<N: Into<ClusterName>>(clusters: impl IntoIterator<Item = (N, ClusterSpec)>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        StaticProvider {
            initial: clusters.into_iter().map(|(n, s)| (n.into(), s)).collect(),
            tx,
            rx,
        }
    }

    /// A handle that adds and removes clusters while the fleet runs.
    pub fn handle(&self) -> StaticClusters {
        StaticClusters {
            tx: self.tx.clone(),
        }
    }
}

impl Provider for StaticProvider {
    async fn run(self, sink: ClusterSink, cancel: CancellationToken) -> Result<(), ProviderError> {
        let StaticProvider {
            initial,
            tx,
            mut rx,
            ..
        } = self;
        // The handles hold senders; this one would keep the channel open forever.
        drop(tx);
        for (name, spec) in initial {
            sink.engage(name, spec);
        }
        loop {
            tokio::select! {
                () = cancel.cancelled() => return Ok(()),
                change = rx.recv() => match change {
                    Some(change) => {
                        let _ = sink.tx.send(change);
                    }
                    // Every handle is gone: the list can no longer change.
                    None => return Ok(()),
                },
            }
        }
    }
}

impl fmt::Debug for StaticProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticProvider")
            .field("initial", &self.initial)
            .finish_non_exhaustive()
    }
}

/// Changes a [`StaticProvider`]'s list while the fleet runs. Cheap to clone.
#[derive(Clone)]
pub struct StaticClusters {
    tx: mpsc::UnboundedSender<Change>,
}

impl StaticClusters {
    /// Adds `name` (or re-engages it, if `spec`'s revision differs).
    pub fn insert(&self, name: impl Into<ClusterName>, spec: ClusterSpec) {
        let _ = self.tx.send(Change::Engage(name.into(), Box::new(spec)));
    }

    /// Removes `name`: the fleet disengages it.
    pub fn remove(&self, name: impl Into<ClusterName>) {
        let _ = self.tx.send(Change::Disengage(name.into(), None));
    }

    /// Removes `name` and resolves once the fleet has disengaged it: its controllers and
    /// informers have stopped and what only its caches used is freed (see
    /// [`ClusterSink::disengage_and_wait`]).
    pub fn remove_and_wait(
        &self,
        name: impl Into<ClusterName>,
    ) -> impl Future<Output = ()> + Send + 'static {
        disengage_waiting(&self.tx, name.into())
    }
}

impl fmt::Debug for StaticClusters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StaticClusters").finish_non_exhaustive()
    }
}
