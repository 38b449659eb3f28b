//! Shard assignment over Leases (issue 17): `n` replicas of an operator split a collection's
//! [`Shard`]s between them, each shard owned by exactly one replica at a time, with client-go's
//! leader-election rules (E2-E5, E7) applied to every shard's Lease.
//!
//! # Design
//!
//! A *shard set* `set` of `shards` shards lives in one namespace as Leases labelled
//! `informer-rs.io/shard-set=<set>`:
//!
//! - `<set>-shard-<i>`, one per shard: its holder owns shard `i`. Acquired, renewed, taken over
//!   after expiry and released exactly like a leader-election Lease (the same record decision:
//!   E3's observation-clock expiry, E4's renew deadline from the start of the last successful
//!   write, E5's release), so E7's argument holds per shard: with renew deadline < lease duration
//!   a shard is never owned by two replicas at once.
//! - `<set>-member-<identity>`, one per replica: a heartbeat, renewed every retry period. The
//!   replicas whose member Lease changed within the lease duration (by the observer's clock, as
//!   E3) are the live ones.
//!
//! Every retry period a replica renews its heartbeat and its shards, reads the set with one LIST,
//! and balances: with `live` replicas each aims at `ceil(shards / live)` shards. Above that it
//! releases shards (its work for a shard is stopped and awaited *before* the release is written,
//! so the successor never overlaps it); below it acquires free, released or expired ones. A
//! replica that joins makes the others shed shards on their next round; a replica that dies
//! stops renewing, and its shards are taken within the lease duration plus a retry period. A
//! shard is left unowned at most a lease duration (a crash) or about a retry period (a release).
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
//! )?;
//! let shards = &assigner;
//! assigner
//!     .run(CancellationToken::new(), |index, owned| {
//!         let factory = SharedInformerFactory::builder(client.clone())
//!             .shard(shards.shard(index, ShardField::Uid))
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
use std::future::Future;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::{Api, ListParams};
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::leader::record;
use crate::leader::{self, Error, LeaderElectionConfig, Written};
use informer_runtime::shard::{Shard, ShardField};

/// The label that marks a shard set's Leases.
pub const SHARD_SET_LABEL: &str = "informer-rs.io/shard-set";

/// One owned shard: its work and when its Lease was last written (E4).
struct Term {
    token: CancellationToken,
    work: JoinHandle<()>,
    last_write: Instant,
}

/// One replica's membership in a shard set (see the module docs).
pub struct ShardAssigner {
    api: Api<Lease>,
    set: String,
    identity: String,
    shards: u32,
    config: LeaderElectionConfig,
    owned: watch::Sender<BTreeSet<u32>>,
    /// Every Lease of the set as last observed, and when we first saw it in that form (E3).
    observed: Mutex<HashMap<String, (LeaseSpec, Instant)>>,
}

impl std::fmt::Debug for ShardAssigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardAssigner")
            .field("set", &self.set)
            .field("identity", &self.identity)
            .field("shards", &self.shards)
            .field("owned", &*self.owned.borrow())
            .finish_non_exhaustive()
    }
}

impl ShardAssigner {
    /// Replica `identity` of the shard set `namespace/set` of `shards` shards. Fails on an
    /// invalid timing (E2), an empty identity, or zero shards.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        set: impl Into<String>,
        identity: impl Into<String>,
        shards: u32,
        config: LeaderElectionConfig,
    ) -> Result<Self, Error> {
        let identity = config.candidate(identity.into())?;
        if shards == 0 {
            return Err(Error::InvalidConfig(
                "a shard set needs at least one shard".into(),
            ));
        }
        Ok(ShardAssigner {
            api: Api::namespaced(client, namespace),
            set: set.into(),
            identity,
            shards,
            config,
            owned: watch::Sender::new(BTreeSet::new()),
            observed: Mutex::new(HashMap::new()),
        })
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The number of shards in the set.
    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// Shard `index` of the set, hashing `field` ([`Shard::of`]); `index` is taken modulo the
    /// shard count.
    pub fn shard(&self, index: u32, field: ShardField) -> Shard {
        let count = self.shards.max(1);
        match Shard::of(index % count, count, field) {
            Ok(shard) => shard,
            // `index % count < count` and `count > 0`: `of` cannot refuse them.
            Err(_) => unreachable!("shard {index} of {count}"),
        }
    }

    /// The shards this replica owns now; changes are published the moment a term starts or
    /// ends.
    pub fn subscribe(&self) -> watch::Receiver<BTreeSet<u32>> {
        self.owned.subscribe()
    }

    /// The shards this replica owns now.
    pub fn owned(&self) -> BTreeSet<u32> {
        self.owned.borrow().clone()
    }

    fn shard_lease(&self, index: u32) -> String {
        format!("{}-shard-{index}", self.set)
    }

    fn member_lease(&self) -> String {
        format!("{}-member-{}", self.set, self.identity)
    }

    /// Takes part in the set until `cancel`: calls `on_shard(index, owned)` when this replica
    /// gains shard `index` (its future runs as a task; `owned` is cancelled when the shard is
    /// lost, released to another replica, or the replica stops), and awaits that work before
    /// the shard can pass to anyone else. On cancel every shard's work is stopped and awaited,
    /// then the shards and the membership are released (E5, when configured).
    pub async fn run<F, Fut>(&self, cancel: CancellationToken, mut on_shard: F) -> Result<(), Error>
    where
        F: FnMut(u32, CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut held: BTreeMap<u32, Term> = BTreeMap::new();
        while !cancel.is_cancelled() {
            let round_started = Instant::now();
            // A round that hangs (a stuck request) is cut at the first renew deadline, so no
            // work outlives its term (E4); an acquire cut short leaves a lease that expires.
            let deadline = earliest_deadline(&held, self.config.renew_deadline);
            let next_expiry = tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                () = sleep_until_opt(deadline) => None,
                next = self.round(&mut held, &cancel, &mut on_shard) => next,
            };
            // E4: a shard not renewed within the renew deadline is lost, whatever the round did.
            self.drop_expired(&mut held).await;
            let mut wake = round_started + self.jittered_retry();
            // A replica below its share starts its next round when the first shard it could
            // take expires by its observation, not a retry period later, so a dead replica's
            // shard moves a lease duration after it was last seen renewed (E3), as a follower
            // `LeaderElector` sleeps until the lease it waits for expires. Only a future
            // expiry: one that has passed and still was not taken (a write failed) waits the
            // normal retry period, so failures never spin.
            if let Some(expiry) = next_expiry.filter(|e| *e > Instant::now()) {
                wake = wake.min(expiry);
            }
            tokio::select! {
                () = cancel.cancelled() => break,
                () = self.sleep_until_or_deadline(wake, &held) => {}
            }
            self.drop_expired(&mut held).await;
        }
        let released: Vec<u32> = held.keys().copied().collect();
        for (_, term) in std::mem::take(&mut held) {
            stop(term).await;
        }
        self.publish(&held);
        if self.config.release_on_cancel {
            for index in released {
                self.release(&self.shard_lease(index)).await;
            }
            self.release(&self.member_lease()).await;
        }
        Ok(())
    }

    /// One round: heartbeat, renew, read the set, balance. Returns, when this replica holds
    /// fewer shards than its share, when the first shard held by another expires (E3).
    async fn round<F, Fut>(
        &self,
        held: &mut BTreeMap<u32, Term>,
        cancel: &CancellationToken,
        on_shard: &mut F,
    ) -> Option<Instant>
    where
        F: FnMut(u32, CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let leases = self.read_set().await?;
        // The heartbeat first, so a replica that has just joined counts itself.
        let member = self.member_lease();
        if let Err(err) = self.write(&member, leases.get(&member)).await {
            tracing::debug!(lease = %member, error = %err, "heartbeat failed");
        }
        // Renew what we hold (E4); a lease another holder took is lost at once.
        let mut lost = Vec::new();
        for (&index, term) in held.iter_mut() {
            let name = self.shard_lease(index);
            let started = Instant::now();
            match self.write(&name, leases.get(&name)).await {
                Ok(true) => term.last_write = started,
                Ok(false) => lost.push(index),
                Err(err) => {
                    tracing::debug!(lease = %name, error = %err, "renewing a shard failed")
                }
            }
        }
        for index in lost {
            self.lose(held, index, "lost a shard to another holder")
                .await;
        }
        self.drop_expired(held).await;
        let now = Instant::now();
        let live = self.live_members(&leases, now).max(1);
        let target = self.shards.div_ceil(live) as usize;
        let next_expiry =
            (held.len() < target).then(|| self.earliest_foreign_expiry(&leases, held));
        // Too many: release the highest shards; each one's work ends before the release.
        while held.len() > target {
            let Some((index, term)) = held.pop_last() else {
                break;
            };
            stop(term).await;
            self.publish(held);
            tracing::info!(set = %self.set, identity = %self.identity, shard = index, live, "releasing a shard to rebalance");
            self.release(&self.shard_lease(index)).await;
        }
        // Too few: free, released or expired shards, starting at an offset of our own so the
        // replicas do not all race for shard 0.
        let offset =
            (informer_runtime::shard::fnv1a64(&self.identity) % u64::from(self.shards)) as u32;
        for step in 0..self.shards {
            if held.len() >= target || cancel.is_cancelled() {
                break;
            }
            let index = (offset + step) % self.shards;
            if held.contains_key(&index) {
                continue;
            }
            let name = self.shard_lease(index);
            let started = Instant::now();
            match self.write(&name, leases.get(&name)).await {
                Ok(true) => {
                    let token = cancel.child_token();
                    let work = tokio::spawn(on_shard(index, token.clone()));
                    held.insert(
                        index,
                        Term {
                            token,
                            work,
                            last_write: started,
                        },
                    );
                    self.publish(held);
                    tracing::info!(set = %self.set, identity = %self.identity, shard = index, live, "acquired a shard");
                }
                Ok(false) => {}
                Err(err) => {
                    tracing::debug!(lease = %name, error = %err, "acquiring a shard failed")
                }
            }
        }
        next_expiry.flatten()
    }

    /// Lists the set's Leases (by name), recording when each was first seen in its form (E3).
    async fn read_set(&self) -> Option<HashMap<String, Lease>> {
        let params = ListParams::default().labels(&format!("{SHARD_SET_LABEL}={}", self.set));
        let list = match self.api.list(&params).await {
            Ok(list) => list,
            Err(err) => {
                tracing::debug!(set = %self.set, error = %err, "reading the shard set failed");
                return None;
            }
        };
        let leases: HashMap<String, Lease> = list
            .items
            .into_iter()
            .filter_map(|l| Some((l.metadata.name.clone()?, l)))
            .collect();
        let mut observed = self.observed.lock();
        observed.retain(|name, _| leases.contains_key(name));
        let now = Instant::now();
        for (name, lease) in &leases {
            let spec = lease.spec.clone().unwrap_or_default();
            match observed.get(name) {
                Some((old, _)) if *old == spec => {}
                _ => {
                    observed.insert(name.clone(), (spec, now));
                }
            }
        }
        Some(leases)
    }

    /// When the earliest shard Lease held by another replica expires by our observation (E3).
    fn earliest_foreign_expiry(
        &self,
        leases: &HashMap<String, Lease>,
        held: &BTreeMap<u32, Term>,
    ) -> Option<Instant> {
        let observed = self.observed.lock();
        (0..self.shards)
            .filter(|i| !held.contains_key(i))
            .filter_map(|i| {
                let name = self.shard_lease(i);
                leases.get(&name)?;
                let (spec, at) = observed.get(&name)?;
                let holder = spec.holder_identity.as_deref().unwrap_or_default();
                if holder.is_empty() || holder == self.identity {
                    return None;
                }
                Some(record::expiry(spec, *at))
            })
            .min()
    }

    /// The replicas whose heartbeat changed within its lease duration, by our clock (E3); we
    /// count ourselves.
    fn live_members(&self, leases: &HashMap<String, Lease>, now: Instant) -> u32 {
        let prefix = format!("{}-member-", self.set);
        let observed = self.observed.lock();
        let others = leases
            .keys()
            .filter(|name| name.starts_with(&prefix) && **name != self.member_lease())
            .filter(|name| {
                observed.get(*name).is_some_and(|(spec, at)| {
                    let holder = spec.holder_identity.as_deref().unwrap_or_default();
                    !holder.is_empty() && record::expiry(spec, *at) > now
                })
            })
            .count();
        u32::try_from(others).unwrap_or(u32::MAX).saturating_add(1)
    }

    /// Acquires or renews the Lease `name` (`current` as read this round): Ok(true) if we hold
    /// it now, Ok(false) if another holder's term has not expired or a concurrent writer won
    /// (409).
    async fn write(&self, name: &str, current: Option<&Lease>) -> Result<bool, kube::Error> {
        let observed_at = current
            .and_then(|lease| {
                let spec = lease.spec.as_ref()?;
                let observed = self.observed.lock();
                let (seen, at) = observed.get(name)?;
                (seen == spec).then_some(*at)
            })
            .unwrap_or_else(Instant::now);
        let labels = [(SHARD_SET_LABEL.to_string(), self.set.clone())].into();
        let written = leader::write_record(
            &self.api,
            name,
            &self.identity,
            self.config.lease_duration,
            Some(labels),
            current.cloned(),
            observed_at,
        )
        .await;
        match written {
            Ok(Written::Held(_)) => Ok(true),
            Ok(Written::Wait(_)) => Ok(false),
            // Another replica created or wrote it first: a lost race.
            Err(kube::Error::Api(e)) if e.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Writes an empty holder with a 1 s duration if we hold `name` (E5).
    async fn release(&self, name: &str) {
        leader::release(&self.api, name, &self.identity, self.config.renew_deadline).await;
    }

    /// Ends every term whose renew deadline has passed (E4): its work is stopped and awaited.
    async fn drop_expired(&self, held: &mut BTreeMap<u32, Term>) {
        let now = Instant::now();
        let expired: Vec<u32> = held
            .iter()
            .filter(|(_, t)| t.last_write + self.config.renew_deadline <= now)
            .map(|(&i, _)| i)
            .collect();
        for index in expired {
            self.lose(
                held,
                index,
                "lost a shard (not renewed within the renew deadline)",
            )
            .await;
        }
    }

    /// Ends the term of shard `index`: published at once, its work stopped and awaited.
    async fn lose(&self, held: &mut BTreeMap<u32, Term>, index: u32, why: &str) {
        if let Some(term) = held.remove(&index) {
            tracing::warn!(set = %self.set, identity = %self.identity, shard = index, "{why}");
            self.publish(held);
            stop(term).await;
        }
    }

    /// Sleeps until `wake`, or until the earliest renew deadline of a held shard if sooner.
    async fn sleep_until_or_deadline(&self, wake: Instant, held: &BTreeMap<u32, Term>) {
        let until =
            earliest_deadline(held, self.config.renew_deadline).map_or(wake, |d| d.min(wake));
        tokio::time::sleep_until(until).await;
    }

    fn publish(&self, held: &BTreeMap<u32, Term>) {
        let owned: BTreeSet<u32> = held.keys().copied().collect();
        self.owned.send_if_modified(|o| {
            if *o == owned {
                return false;
            }
            *o = owned;
            true
        });
    }

    fn jittered_retry(&self) -> Duration {
        self.config.jittered_retry()
    }
}

/// The earliest instant a held shard's term ends without a renewal (E4).
fn earliest_deadline(held: &BTreeMap<u32, Term>, renew_deadline: Duration) -> Option<Instant> {
    held.values().map(|t| t.last_write + renew_deadline).min()
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Stops a term's work and waits for it.
async fn stop(term: Term) {
    term.token.cancel();
    if let Err(err) = term.work.await {
        tracing::error!(error = %err, "shard work panicked");
    }
}
