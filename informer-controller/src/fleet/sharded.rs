//! [`ShardedProvider`]: a provider's clusters spread over replicas by a shard set over Leases.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::provider::{Change, ClusterName, ClusterSink, ClusterSpec, Provider, ProviderError};
use crate::shards::ShardAssigner;

/// Spreads the clusters of a provider over the replicas of an operator: each cluster belongs to
/// one shard of a [`ShardAssigner`]'s shard set (by the FNV-1a hash of its name, as shards split
/// keys), and this replica engages only the clusters of the shards it holds.
///
/// Every replica runs the same provider (the same Secrets, the same directory) and the same
/// shard set; the assigner's Leases (S1-S14) then give each cluster to one replica at a time:
///
/// - a shard's clusters are engaged only once its Lease is held and checked (S1);
/// - when the shard goes (rebalanced to a replica that joined, or its renew deadline passed,
///   S2), its clusters are disengaged and the shard's work ends only when the fleet has stopped
///   them, so its Lease is released (or expires) only after this replica's informers and
///   controllers for those clusters ended: no cluster is served by two replicas at once;
/// - a replica that dies leaves its shards, and so its clusters, unowned for at most a lease
///   duration plus a round (S12).
///
/// ```no_run
/// # async fn demo(management: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
/// use informer_controller::fleet::{Fleet, SecretProvider, ShardedProvider};
/// use informer_controller::leader::LeaderElectionConfig;
/// use informer_controller::shards::ShardAssigner;
///
/// let identity = std::env::var("POD_NAME")?;
/// let assigner = ShardAssigner::new(
///     management.clone(), "fleet-system", "my-fleet", identity, 16, LeaderElectionConfig::default(),
/// )?;
/// let provider = ShardedProvider::new(SecretProvider::cluster_api(management), assigner);
/// let fleet = Fleet::builder().build();
/// fleet.run(provider, tokio_util::sync::CancellationToken::new()).await?;
/// # Ok(()) }
/// ```
pub struct ShardedProvider<P> {
    provider: P,
    assigner: ShardAssigner,
}

impl<P: Provider> ShardedProvider<P> {
    /// The clusters of `provider` that fall into the shards `assigner` holds.
    pub fn new(provider: P, assigner: ShardAssigner) -> Self {
        ShardedProvider { provider, assigner }
    }
}

impl<P> fmt::Debug for ShardedProvider<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardedProvider")
            .field("identity", &self.assigner.identity())
            .field("shards", &self.assigner.shards())
            .finish_non_exhaustive()
    }
}

/// What the shard set tells the provider's loop.
enum ShardEvent {
    /// This replica holds shard `0` now.
    Gained(u32),
    /// Shard `0` went; answer once its clusters are disengaged.
    Lost(u32, oneshot::Sender<()>),
}

/// The provider's view: the clusters reported, the shards held, the clusters engaged.
struct Spread {
    known: BTreeMap<ClusterName, ClusterSpec>,
    held: BTreeSet<u32>,
    engaged: BTreeSet<ClusterName>,
}

/// The shard `name` falls into: the one whose hash range admits it.
fn shard_of(assigner: &ShardAssigner, name: &ClusterName) -> Option<u32> {
    informer_runtime::shard::Shard::index_of(name.as_str(), assigner.shards().max(1))
}

impl<P: Provider> Provider for ShardedProvider<P> {
    async fn run(self, sink: ClusterSink, cancel: CancellationToken) -> Result<(), ProviderError> {
        let ShardedProvider { provider, assigner } = self;
        let (tx, mut reported) = mpsc::unbounded_channel();
        let mut inner = tokio::spawn(provider.run(ClusterSink { tx }, cancel.child_token()));
        let (events, mut shard_events) = mpsc::unbounded_channel();
        let shards = assigner.run(cancel.child_token(), move |index, term| {
            let events = events.clone();
            async move {
                let _ = events.send(ShardEvent::Gained(index));
                term.cancelled().await;
                // The shard's work, and so its Lease, ends once its clusters are stopped.
                let (done, stopped) = oneshot::channel();
                if events.send(ShardEvent::Lost(index, done)).is_ok() {
                    let _ = stopped.await;
                }
            }
        });
        tokio::pin!(shards);
        let mut spread = Spread {
            known: BTreeMap::new(),
            held: BTreeSet::new(),
            engaged: BTreeSet::new(),
        };
        let (mut inner_done, mut reports_open) = (false, true);
        let result = loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    // The fleet disengages every cluster as it stops, and only then drops this
                    // future, with the shard set, whose Leases go last: no other replica takes
                    // a cluster this one still serves.
                    let stopping: Vec<_> = spread
                        .engaged
                        .iter()
                        .map(|name| sink.disengage_and_wait(name.clone()))
                        .collect();
                    futures::future::join_all(stopping).await;
                    break Ok(());
                }
                event = shard_events.recv() => match event {
                    Some(ShardEvent::Gained(index)) => {
                        spread.held.insert(index);
                        for (name, spec) in &spread.known {
                            if shard_of(&assigner, name) == Some(index) {
                                spread.engaged.insert(name.clone());
                                sink.engage(name.clone(), spec.clone());
                            }
                        }
                    }
                    Some(ShardEvent::Lost(index, done)) => {
                        spread.held.remove(&index);
                        let leaving: Vec<ClusterName> = spread
                            .engaged
                            .iter()
                            .filter(|name| shard_of(&assigner, name) == Some(index))
                            .cloned()
                            .collect();
                        let mut stopped = Vec::with_capacity(leaving.len());
                        for name in leaving {
                            spread.engaged.remove(&name);
                            stopped.push(sink.disengage_and_wait(name));
                        }
                        // Waited for in a task of its own: this loop goes on with the others.
                        tokio::spawn(async move {
                            futures::future::join_all(stopped).await;
                            let _ = done.send(());
                        });
                    }
                    // The assigner's closure holds a sender for as long as it runs.
                    None => break Ok(()),
                },
                change = reported.recv(), if reports_open => match change {
                    Some(Change::Engage(name, spec)) => {
                        let ours = shard_of(&assigner, &name)
                            .is_some_and(|i| spread.held.contains(&i));
                        if ours {
                            spread.engaged.insert(name.clone());
                            sink.engage(name.clone(), (*spec).clone());
                        }
                        spread.known.insert(name, *spec);
                    }
                    Some(Change::Disengage(name, done)) => {
                        spread.known.remove(&name);
                        if spread.engaged.remove(&name) {
                            let stopped = sink.disengage_and_wait(name);
                            if let Some(done) = done {
                                tokio::spawn(async move {
                                    stopped.await;
                                    let _ = done.send(());
                                });
                            }
                        }
                    }
                    None => reports_open = false,
                },
                ended = &mut inner, if !inner_done => {
                    inner_done = true;
                    match ended {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => break Err(e),
                        Err(e) => break Err(ProviderError(format!("the provider's task ended: {e}"))),
                    }
                }
                ended = &mut shards => break ended.map_err(|e| {
                    ProviderError(format!("the shard set of the fleet's replicas failed: {e}"))
                }),
            }
        };
        inner.abort();
        result
    }
}
