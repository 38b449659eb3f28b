//! Shard assignment over Leases (docs/behaviour.md section 17, S1-S14): `n` replicas of an
//! operator split a collection's [`Shard`]s between them, each shard owned by exactly one replica
//! at a time, with client-go's leader-election rules (E2-E5, E7) applied to every shard's Lease.
//!
//! # Design
//!
//! A *shard set* `set` of `shards` shards over one hash field lives in one namespace as Leases
//! labelled `informer-rs.io/shard-set=<set>`, each also labelled with the writer's view of the
//! set: `informer-rs.io/shard-count=<shards>` and `informer-rs.io/shard-field=uid|namespace`:
//!
//! - `<set>-shard-<i>`, one per shard: its holder owns shard `i`. Acquired, renewed, taken over
//!   after expiry and released exactly like a leader-election Lease (the same record decision:
//!   E3's observation-clock expiry, E4's renew deadline from the start of the last successful
//!   write, E5's release), so E7's argument holds per shard.
//! - `<set>-member-<identity>`, one per replica: a heartbeat (the identity encoded where it is
//!   no valid name, S8). The replicas of the same view whose member Lease changed within the
//!   lease duration (by the observer's clock, as E3) are the live ones. A replica that leaves
//!   deletes its heartbeat; Leases nobody wrote for two lease durations (a crashed replica's
//!   heartbeat, a shard beyond the count) are deleted by the others (S9).
//!
//! Every retry period a replica renews its heartbeat, reads the set with one LIST and balances:
//! with `live` replicas each aims at `ceil(shards / live)` shards. Above that it stops its highest
//! shards' work and releases them once the work has ended; below it acquires free, released or
//! expired ones. A shard is left unowned at most a lease duration (a crash) or about a retry
//! period (a release).
//!
//! The rules, as they hold here:
//!
//! - **S1 Exclusive ranges.** Every write records the writer's view (count and field) on the
//!   Lease. A replica that sees a live shard Lease held by another replica with another view
//!   (a rolling update from 4 to 8 shards) acquires nothing and logs an error; a shard it acquires
//!   is only started after a second read of the set, begun after the acquiring write, shows no
//!   such Lease. Of two replicas with different views that acquire at the same time, each one's
//!   check therefore sees the other's Lease and neither starts; a term already running keeps its
//!   shard (the newcomer is the one whose view differs), except against a Lease with no view at
//!   all (an older informer-rs), which stops everything. Only live replicas of the same view
//!   count for the share.
//! - **S2 Deadlines per shard.** Each held shard is a task of its own that renews its Lease every
//!   retry period (read, then write) and cancels its work at its own renew deadline (start of its
//!   last successful renewal plus the renew deadline), whatever the other shards or the round
//!   are doing; stopping one shard's work (which may take the drain limit) happens in that
//!   shard's task, so it never delays another's renewal or cancellation.
//! - **S3 Dead work releases.** Work that ends on its own (returns, panics) ends the term: its
//!   Lease is released (E5), and this replica leaves the shard alone for a backoff (the retry
//!   period, doubled per dead term in a row, at most the lease duration) so another replica can
//!   take it.
//! - **S4** is the reflector's (`informer_runtime::shard`).
//! - **S5 Drop safety.** Dropping the [`ShardAssigner::run`] future cancels every shard's work;
//!   each shard's task (detached, not aborted) then waits for its work (bounded by the drain
//!   limit) and releases its Lease, and the heartbeat is released in the background (E5, when
//!   configured).
//! - **S6 Bounded drain.** After a term ends, its work may run for at most
//!   [`LeaderElectionConfig::drain_limit`]; longer work is aborted (`JoinHandle::abort`) and
//!   logged.
//! - **S12 Every shard owned.** No part of the hash space goes without work for longer than a
//!   lease duration plus a round, across joins, leaves, crashes and rollouts; each replica
//!   reports the shards its view sees unowned ([`ShardSetMetrics`], [`ShardAssigner::unowned`]).
//!
//! - **S13 Failures are told once.** Failures of the assigner's requests (RBAC, conflicts,
//!   timeouts) are logged at warn when an operation starts failing or fails differently, and at
//!   info when it recovers.
//! - **S14 Our Lease, written by others.** A 409 on renewing one's own shard Lease (someone
//!   labelled it) re-reads the Lease and retries within the renew deadline; only another holder
//!   (or a deleted Lease) ends the term.
//!
//! Each owned shard's work (`run`'s closure) typically builds a factory with
//! `SharedInformerFactoryBuilder::shard(assigner.shard(i, field))` and runs a
//! [`Controller`](crate::Controller) on it, so its workers only ever see the keys of that shard.
//!
//! ```no_run
//! # use informer_controller::leader::LeaderElectionConfig;
//! # use informer_controller::shards::ShardAssigner;
//! # use informer_runtime::shard::ShardField;
//! # use informer_runtime::SharedInformerFactory;
//! # use tokio_util::sync::CancellationToken;
//! # async fn demo(client: kube::Client) -> Result<(), informer_controller::leader::Error> {
//! let assigner = ShardAssigner::new(
//!     client.clone(), "default", "my-operator", "replica-a", 8, LeaderElectionConfig::default(),
//! )?
//! .hash_field(ShardField::Namespace); // the default: a key's objects stay together (S7)
//! let shards = &assigner;
//! assigner
//!     .run(CancellationToken::new(), |index, owned| {
//!         let factory = SharedInformerFactory::builder(client.clone())
//!             .shard(shards.shard(index, shards.field()))
//!             .build();
//!         async move {
//!             factory.start();
//!             owned.cancelled().await; // the shard moved away or the replica stops
//!             factory.shutdown().await;
//!         }
//!     })
//!     .await
//! # }
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Display;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::{Api, DeleteParams, ListParams, Preconditions};
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::leader::record;
use crate::leader::work::{Ended, Work};
use crate::leader::{self, Error, LeaderElectionConfig, Term, Written};
use informer_runtime::shard::{Shard, ShardField};

pub use metrics::ShardSetMetrics;

mod leases;
mod metrics;
mod round;
mod term;
mod view;

/// The label that marks a shard set's Leases.
pub const SHARD_SET_LABEL: &str = "informer-rs.io/shard-set";

/// The label recording the shard count of the writer's view of the set (S1).
pub const SHARD_COUNT_LABEL: &str = "informer-rs.io/shard-count";

/// The label recording the hash field of the writer's view of the set (S1): `uid` or
/// `namespace`.
pub const SHARD_FIELD_LABEL: &str = "informer-rs.io/shard-field";

/// One replica's membership in a shard set (see the module docs).
pub struct ShardAssigner {
    inner: Arc<Inner>,
}

/// What the assigner, its rounds and its shard tasks share.
struct Inner {
    api: Api<Lease>,
    set: String,
    identity: String,
    shards: u32,
    field: ShardField,
    config: LeaderElectionConfig,
    owned: watch::Sender<BTreeSet<u32>>,
    /// Every Lease of the set as last observed, and when we first saw it in that form (E3).
    observed: Mutex<HashMap<String, (LeaseSpec, Instant)>>,
    /// The last failure of each operation, logged once per change (S13).
    failures: Mutex<HashMap<String, String>>,
    /// The last view conflict reported (S1), logged once per change.
    conflict: Mutex<Option<String>>,
    /// The shards of our view no live Lease covers, as of the last round (S12).
    unowned: watch::Sender<u32>,
    /// This replica's metric series (S12).
    series: metrics::Series,
}

impl std::fmt::Debug for ShardAssigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.inner;
        f.debug_struct("ShardAssigner")
            .field("set", &i.set)
            .field("identity", &i.identity)
            .field("shards", &i.shards)
            .field("field", &i.field)
            .field("owned", &*i.owned.borrow())
            .finish_non_exhaustive()
    }
}

impl ShardAssigner {
    /// Replica `identity` of the shard set `namespace/set` of `shards` shards, hashing
    /// `metadata.namespace` unless [`hash_field`](Self::hash_field) says otherwise (S7: a
    /// controller's primary object, the objects it owns and every object that ever had its name
    /// share a namespace, never a UID). Fails on an invalid timing (E2), an empty identity,
    /// zero shards, or a set name that is not a lowercase RFC 1123 subdomain of at most 63
    /// characters (S8). The identity is free text: where it names the replica's heartbeat
    /// Lease it is encoded (S8).
    pub fn new(
        client: kube::Client,
        namespace: &str,
        set: impl Into<String>,
        identity: impl Into<String>,
        shards: u32,
        config: LeaderElectionConfig,
    ) -> Result<Self, Error> {
        let identity = config.candidate(identity.into())?;
        let set = set.into();
        // S8: the set names every Lease of it and is a label value on each.
        leader::names::check("the shard set name", &set, leader::names::LABEL_VALUE_MAX)
            .map_err(Error::InvalidName)?;
        if shards == 0 {
            return Err(Error::InvalidConfig(
                "a shard set needs at least one shard".into(),
            ));
        }
        Ok(ShardAssigner {
            inner: Arc::new(Inner {
                api: Api::namespaced(client, namespace),
                set,
                identity,
                shards,
                field: ShardField::Namespace,
                config,
                owned: watch::Sender::new(BTreeSet::new()),
                observed: Mutex::new(HashMap::new()),
                failures: Mutex::new(HashMap::new()),
                conflict: Mutex::new(None),
                unowned: watch::Sender::new(0),
                series: metrics::Series::default(),
            }),
        })
    }

    /// Reports this replica's view of the set in `metrics` (S12): unowned shards, owned
    /// shards, live members. Set it before [`run`](Self::run).
    pub fn metrics(mut self, metrics: &ShardSetMetrics) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.series = metrics.series(&inner.set, &inner.identity);
        }
        self
    }

    /// How many shards of this replica's view no live Lease covered at its last round, by its
    /// own observation (S12); 0 before the first round.
    pub fn unowned(&self) -> u32 {
        *self.inner.unowned.borrow()
    }

    /// [`unowned`](Self::unowned) as a watch channel, updated every round.
    pub fn subscribe_unowned(&self) -> watch::Receiver<u32> {
        self.inner.unowned.subscribe()
    }

    /// The field whose hash the set shards by, recorded on its Leases (S1). Set it before
    /// [`run`](Self::run). The default, `metadata.namespace`, keeps what a controller
    /// reconciles together (S7); [`ShardField::Uid`] spreads objects evenly but splits a
    /// key's objects over replicas, so a [`Controller`](crate::Controller) refuses a factory
    /// sharded by it: use it for caches and work keyed by UID only.
    pub fn hash_field(mut self, field: ShardField) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.field = field;
        }
        self
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// The number of shards in the set.
    pub fn shards(&self) -> u32 {
        self.inner.shards
    }

    /// The field the set hashes ([`hash_field`](Self::hash_field)).
    pub fn field(&self) -> ShardField {
        self.inner.field
    }

    /// Shard `index` of the set, hashing `field` ([`Shard::of`]); `index` is taken modulo the
    /// shard count. Pass the set's [`field`](Self::field): its Leases record that one.
    pub fn shard(&self, index: u32, field: ShardField) -> Shard {
        let count = self.inner.shards.max(1);
        match Shard::of(index % count, count, field) {
            Ok(shard) => shard,
            // `index % count < count` and `count > 0`: `of` cannot refuse them.
            Err(_) => unreachable!("shard {index} of {count}"),
        }
    }

    /// The shards whose work runs on this replica now; changes are published the moment a
    /// term starts or ends.
    pub fn subscribe(&self) -> watch::Receiver<BTreeSet<u32>> {
        self.inner.owned.subscribe()
    }

    /// The shards whose work runs on this replica now.
    pub fn owned(&self) -> BTreeSet<u32> {
        self.inner.owned.borrow().clone()
    }

    /// Takes part in the set until `cancel`: calls `on_shard(index, owned)` when this replica
    /// gains shard `index` (its future runs as a task; the [`Term`] `owned` ends when the shard
    /// is lost, released to another replica, the replica stops, or its valid-until instant
    /// passes, S11), and awaits that work (at most the drain limit, S6) before the shard
    /// can pass to anyone else. On cancel every shard's
    /// work is stopped and awaited, then the shards and the membership are released (E5, when
    /// configured); a round in flight finishes first and releases the shards its writes won
    /// (S10). Dropping the future does the same in the background (S5).
    pub async fn run<F, Fut>(&self, cancel: CancellationToken, mut on_shard: F) -> Result<(), Error>
    where
        F: FnMut(u32, Term) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let root = CancellationToken::new();
        let mut guard = RunGuard {
            root: root.clone(),
            inner: Arc::clone(&self.inner),
            armed: true,
        };
        let (ends_tx, mut ends_rx) = mpsc::unbounded_channel();
        let mut st = RunState::default();
        let config = &self.inner.config;
        let mut wake = Instant::now();
        loop {
            tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                Some(end) = ends_rx.recv() => {
                    st.ended(end, config);
                    continue;
                }
                () = tokio::time::sleep_until(wake) => {}
            }
            let round_started = Instant::now();
            // A round only balances; a hung request delays the next round, never a renewal
            // (each held shard renews in its own task, S2). Each of its requests is bounded by
            // the renew deadline; the round as a whole is not cut, so what it won is started
            // or released, never dropped (S10).
            let round = self.inner.round(&mut st, &root, &ends_tx, &mut on_shard);
            tokio::pin!(round);
            let next_expiry = tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    // S10: not cut on cancel either. With `root` cancelled the round reads and
                    // acquires nothing more, lets acquiring writes in flight finish (each
                    // bounded by the renew deadline) and releases what they won instead of
                    // starting it, so no Lease is left held until it expires.
                    root.cancel();
                    round.await;
                    break;
                }
                r = &mut round => r,
            };
            wake = round_started + config.jittered_retry();
            // A replica below its share starts its next round when the first shard it could
            // take expires by its observation, not a retry period later (E3). Only a future
            // expiry, so failures never spin.
            if let Some(expiry) = next_expiry.filter(|e| *e > Instant::now()) {
                wake = wake.min(expiry);
            }
        }
        // Stop every shard: each task drains its work (S6) and releases its Lease (E5).
        root.cancel();
        let tasks: Vec<JoinHandle<()>> = std::mem::take(&mut st.held)
            .into_values()
            .map(|h| h.task)
            .chain(std::mem::take(&mut st.stopping).into_values())
            .collect();
        let bound = config.drain_limit() + config.renew_deadline + config.retry_period;
        if tokio::time::timeout(bound, futures::future::join_all(tasks))
            .await
            .is_err()
        {
            tracing::warn!(set = %self.inner.set, identity = %self.inner.identity, "shard tasks did not stop in time");
        }
        if config.release_on_cancel {
            self.inner.leave().await;
        }
        guard.armed = false;
        Ok(())
    }
}

/// Dropping the run future (S5): every shard's work is cancelled at once; the shard tasks,
/// detached, drain it and release their Leases, and the heartbeat is released here.
struct RunGuard {
    root: CancellationToken,
    inner: Arc<Inner>,
    armed: bool,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        tracing::warn!(set = %self.inner.set, identity = %self.inner.identity, "the shard assigner's run future was dropped; stopping every shard (S5)");
        self.root.cancel();
        if self.inner.config.release_on_cancel
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            let inner = Arc::clone(&self.inner);
            rt.spawn(async move { inner.leave().await });
        }
    }
}

/// One held shard, as the run loop sees it: `stop` ends its term; `task` renews it.
struct Held {
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// How a shard's term ended.
#[derive(Debug)]
enum TermEnd {
    /// The run loop stopped it (rebalance, or the replica stops).
    Stopped,
    /// Not renewed within the renew deadline (E4).
    Expired,
    /// Another holder has the Lease, or it was deleted.
    Lost,
    /// The work ended on its own (S3).
    WorkEnded(Ended),
}

/// A shard task's report to the run loop: the shard, how its term ended, how long it ran.
type Report = (u32, TermEnd, Duration);

/// The run loop's own state.
#[derive(Default)]
struct RunState {
    held: BTreeMap<u32, Held>,
    /// Shards told to stop whose task has not reported yet: not acquired again until then.
    stopping: BTreeMap<u32, JoinHandle<()>>,
    /// S3: shards whose work ended on its own: left alone until the instant, and how many
    /// such terms in a row.
    cooldown: HashMap<u32, (Instant, u32)>,
}

impl RunState {
    fn ended(&mut self, (index, end, ran): Report, config: &LeaderElectionConfig) {
        self.held.remove(&index);
        self.stopping.remove(&index);
        match end {
            TermEnd::WorkEnded(_) => {
                let before = match self.cooldown.get(&index) {
                    Some(&(_, n)) if ran < config.lease_duration => n,
                    _ => 0,
                };
                let n = before.saturating_add(1);
                let until = Instant::now() + leader::dead_term_backoff(config, n);
                self.cooldown.insert(index, (until, n));
            }
            _ => {
                self.cooldown.remove(&index);
            }
        }
    }

    fn cooling(&self, index: u32, now: Instant) -> bool {
        self.cooldown
            .get(&index)
            .is_some_and(|(until, _)| *until > now)
    }
}
