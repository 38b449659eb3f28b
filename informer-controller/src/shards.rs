//! Shard assignment over Leases (issue 17, rules S1-S6 from issue 25): `n` replicas of an
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
//! - `<set>-member-<identity>`, one per replica: a heartbeat. The replicas of the same view whose
//!   member Lease changed within the lease duration (by the observer's clock, as E3) are the
//!   live ones.
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
//!
//! A 409 on renewing one's own shard Lease (someone labelled it) re-reads the Lease and retries
//! within the renew deadline; only another holder (or a deleted Lease) ends the term. Failures of
//! the assigner's requests (RBAC, conflicts, timeouts) are logged at warn when an operation starts
//! failing or fails differently, and at info when it recovers.
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
//! .hash_field(ShardField::Uid);
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
use kube::api::{Api, ListParams};
use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::leader::record;
use crate::leader::work::{Ended, Work};
use crate::leader::{self, Error, LeaderElectionConfig, Written};
use informer_runtime::shard::{Shard, ShardField};

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
    /// The last failure of each operation, logged once per change (issue 25 item 10).
    failures: Mutex<HashMap<String, String>>,
    /// The last view conflict reported (S1), logged once per change.
    conflict: Mutex<Option<String>>,
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
    /// `metadata.uid` unless [`hash_field`](Self::hash_field) says otherwise. Fails on an
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
            inner: Arc::new(Inner {
                api: Api::namespaced(client, namespace),
                set: set.into(),
                identity,
                shards,
                field: ShardField::Uid,
                config,
                owned: watch::Sender::new(BTreeSet::new()),
                observed: Mutex::new(HashMap::new()),
                failures: Mutex::new(HashMap::new()),
                conflict: Mutex::new(None),
            }),
        })
    }

    /// The field whose hash the set shards by, recorded on its Leases (S1). Set it before
    /// [`run`](Self::run).
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
    /// gains shard `index` (its future runs as a task; `owned` is cancelled when the shard is
    /// lost, released to another replica, or the replica stops), and awaits that work (at most
    /// the drain limit, S6) before the shard can pass to anyone else. On cancel every shard's
    /// work is stopped and awaited, then the shards and the membership are released (E5, when
    /// configured). Dropping the future does the same in the background (S5).
    pub async fn run<F, Fut>(&self, cancel: CancellationToken, mut on_shard: F) -> Result<(), Error>
    where
        F: FnMut(u32, CancellationToken) -> Fut,
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
            // (each held shard renews in its own task, S2). It is cut at the renew deadline.
            let round = self.inner.round(&mut st, &root, &ends_tx, &mut on_shard);
            let next_expiry = tokio::select! {
                biased;
                () = cancel.cancelled() => break,
                r = tokio::time::timeout(config.renew_deadline, round) => r.ok().flatten(),
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
            self.inner.release(&self.inner.member_lease()).await;
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
            rt.spawn(async move { inner.release(&inner.member_lease()).await });
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

/// A live shard Lease held by another replica whose view differs from ours (S1).
struct Conflict {
    lease: String,
    holder: String,
    /// Its view, `count/field`, or `None` if it records none (an older informer-rs).
    view: Option<String>,
}

impl Inner {
    fn shard_lease(&self, index: u32) -> String {
        format!("{}-shard-{index}", self.set)
    }

    fn member_lease(&self) -> String {
        format!("{}-member-{}", self.set, self.identity)
    }

    fn field_name(&self) -> &'static str {
        match self.field {
            ShardField::Uid => "uid",
            ShardField::Namespace => "namespace",
        }
    }

    /// The labels every write puts on the set's Leases: the set and our view of it (S1).
    fn labels(&self) -> BTreeMap<String, String> {
        [
            (SHARD_SET_LABEL.to_string(), self.set.clone()),
            (SHARD_COUNT_LABEL.to_string(), self.shards.to_string()),
            (SHARD_FIELD_LABEL.to_string(), self.field_name().to_string()),
        ]
        .into()
    }

    /// The view a Lease records, `count/field`, if it records one.
    fn view_of(lease: &Lease) -> Option<String> {
        let labels = lease.metadata.labels.as_ref()?;
        let count = labels.get(SHARD_COUNT_LABEL)?;
        let field = labels.get(SHARD_FIELD_LABEL)?;
        Some(format!("{count}/{field}"))
    }

    fn view(&self) -> String {
        format!("{}/{}", self.shards, self.field_name())
    }

    /// Whether the Lease `name` as observed has a holder other than us whose term has not
    /// expired by our observation (E3).
    fn live_foreign(&self, name: &str, now: Instant) -> Option<String> {
        let observed = self.observed.lock();
        let (spec, at) = observed.get(name)?;
        let holder = spec.holder_identity.as_deref().unwrap_or_default();
        (!holder.is_empty() && holder != self.identity && record::expiry(spec, *at) > now)
            .then(|| holder.to_owned())
    }

    /// The first live shard Lease of another replica whose view differs from ours (S1).
    fn conflict(&self, leases: &HashMap<String, Lease>, now: Instant) -> Option<Conflict> {
        let prefix = format!("{}-shard-", self.set);
        let ours = self.view();
        leases
            .iter()
            .filter(|(name, _)| name.starts_with(&prefix))
            .find_map(|(name, lease)| {
                let view = Self::view_of(lease);
                if view.as_deref() == Some(ours.as_str()) {
                    return None;
                }
                let holder = self.live_foreign(name, now)?;
                Some(Conflict {
                    lease: name.clone(),
                    holder,
                    view,
                })
            })
    }

    /// Logs a view conflict (S1) at error once per change, and its end at info.
    fn report_conflict(&self, conflict: Option<&Conflict>) {
        let text = conflict.map(|c| {
            format!(
                "shard Lease {} is held by {} with the view {} (shards/field), ours is {}",
                c.lease,
                c.holder,
                c.view.as_deref().unwrap_or("<none>"),
                self.view()
            )
        });
        let mut last = self.conflict.lock();
        if *last == text {
            return;
        }
        match &text {
            Some(t) => {
                tracing::error!(set = %self.set, identity = %self.identity, "{t}: this replica owns no new shard until that view is gone (S1)")
            }
            None => {
                tracing::info!(set = %self.set, identity = %self.identity, "no shard Lease of another view is live any more (S1)")
            }
        }
        *last = text;
    }

    /// Logs a failure of `op` at warn when it starts failing or fails differently (item 10).
    fn failed(&self, op: &str, err: &dyn Display) {
        let msg = err.to_string();
        let mut failures = self.failures.lock();
        if failures.get(op) == Some(&msg) {
            tracing::debug!(set = %self.set, identity = %self.identity, op, error = %msg, "shard assigner request failed again");
            return;
        }
        tracing::warn!(set = %self.set, identity = %self.identity, op, error = %msg, "shard assigner request failed");
        failures.insert(op.to_owned(), msg);
    }

    /// Records that `op` works (again).
    fn succeeded(&self, op: &str) {
        if self.failures.lock().remove(op).is_some() {
            tracing::info!(set = %self.set, identity = %self.identity, op, "shard assigner request works again");
        }
    }

    fn publish(&self, index: u32, owned: bool) {
        self.owned.send_if_modified(|o| {
            if owned {
                o.insert(index)
            } else {
                o.remove(&index)
            }
        });
    }

    /// One round: read the set, heartbeat, balance. Returns, when this replica holds fewer
    /// shards than its share, when the first shard held by another expires (E3).
    async fn round<F, Fut>(
        self: &Arc<Self>,
        st: &mut RunState,
        root: &CancellationToken,
        ends: &mpsc::UnboundedSender<Report>,
        on_shard: &mut F,
    ) -> Option<Instant>
    where
        F: FnMut(u32, CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let leases = self.read_set().await?;
        // The heartbeat first, so a replica that has just joined counts itself.
        let member = self.member_lease();
        match self.write(&member, leases.get(&member)).await {
            Ok(_) => self.succeeded("heartbeat"),
            Err(err) => self.failed("heartbeat", &err),
        }
        let now = Instant::now();
        let conflict = self.conflict(&leases, now);
        self.report_conflict(conflict.as_ref());
        let live = self.live_members(&leases, now).max(1);
        let target = self.shards.div_ceil(live) as usize;
        let next_expiry = if st.held.len() < target {
            self.earliest_foreign_expiry(&leases, st)
        } else {
            None
        };
        // Too many: stop the highest shards; each one's task releases its Lease once its work
        // has ended, and the shard is not acquired again before that.
        while st.held.len() > target {
            let Some((index, held)) = st.held.pop_last() else {
                break;
            };
            tracing::info!(set = %self.set, identity = %self.identity, shard = index, live, "releasing a shard to rebalance");
            held.stop.cancel();
            st.stopping.insert(index, held.task);
        }
        if let Some(c) = &conflict {
            if c.view.is_none() {
                // A holder that records no view cannot check ours: stop everything.
                for (index, held) in std::mem::take(&mut st.held) {
                    held.stop.cancel();
                    st.stopping.insert(index, held.task);
                }
            }
            return None;
        }
        // Too few: free, released or expired shards, starting at an offset of our own so the
        // replicas do not all race for shard 0.
        let offset =
            (informer_runtime::shard::fnv1a64(&self.identity) % u64::from(self.shards)) as u32;
        let mut acquired = Vec::new();
        for step in 0..self.shards {
            if st.held.len() + acquired.len() >= target || root.is_cancelled() {
                break;
            }
            let index = (offset + step) % self.shards;
            if st.held.contains_key(&index)
                || st.stopping.contains_key(&index)
                || st.cooling(index, now)
            {
                continue;
            }
            let name = self.shard_lease(index);
            let started = Instant::now();
            match self.write(&name, leases.get(&name)).await {
                Ok(true) => acquired.push((index, started)),
                Ok(false) => {}
                Err(err) => self.failed("acquire", &err),
            }
        }
        if acquired.is_empty() {
            return next_expiry;
        }
        // S1: start only after a read begun after the acquiring writes shows no live Lease of
        // another view; a replica of another view acquiring at the same time sees ours.
        let verified = match self.read_set().await {
            Some(after) => {
                let conflict = self.conflict(&after, Instant::now());
                self.report_conflict(conflict.as_ref());
                conflict.is_none()
            }
            None => false,
        };
        for (index, started) in acquired {
            if !verified {
                self.release(&self.shard_lease(index)).await;
                continue;
            }
            if started + self.config.renew_deadline <= Instant::now() {
                // Too late to start: the term would already be over (E4); the Lease expires.
                continue;
            }
            self.start(st, index, started, root, ends, on_shard);
        }
        next_expiry
    }

    /// Starts shard `index`'s term, acquired by the write that started at `acquired`: its
    /// work, and the task that renews its Lease and ends the term (S2).
    fn start<F, Fut>(
        self: &Arc<Self>,
        st: &mut RunState,
        index: u32,
        acquired: Instant,
        root: &CancellationToken,
        ends: &mpsc::UnboundedSender<Report>,
        on_shard: &mut F,
    ) where
        F: FnMut(u32, CancellationToken) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let stop = root.child_token();
        let token = stop.child_token();
        self.publish(index, true);
        tracing::info!(set = %self.set, identity = %self.identity, shard = index, "acquired a shard");
        let work = Work::spawn(
            token.clone(),
            on_shard(index, token),
            self.config.drain_limit(),
            format!("shard {index} of {}", self.set),
        );
        let task = tokio::spawn(Arc::clone(self).term(
            index,
            acquired,
            work,
            stop.clone(),
            root.clone(),
            ends.clone(),
        ));
        st.held.insert(index, Held { stop, task });
    }

    /// One shard's term (S2): renews its Lease every retry period until it is stopped, its
    /// renew deadline passes, another holder appears, or its work ends (S3); then ends it:
    /// the work is cancelled and drained (S6), the Lease released unless it was lost, and the
    /// run loop told.
    async fn term(
        self: Arc<Self>,
        index: u32,
        acquired: Instant,
        mut work: Work,
        stop: CancellationToken,
        root: CancellationToken,
        ends: mpsc::UnboundedSender<Report>,
    ) {
        let name = self.shard_lease(index);
        let mut last_write = acquired;
        let end = self.keep(&name, &mut last_write, &mut work, &stop).await;
        let ended_at = Instant::now();
        work.cancel();
        self.publish(index, false);
        match &end {
            TermEnd::Stopped => {
                tracing::info!(set = %self.set, identity = %self.identity, shard = index, "stopping a shard");
            }
            TermEnd::Expired => {
                tracing::warn!(set = %self.set, identity = %self.identity, shard = index, "lost a shard (not renewed within the renew deadline)");
            }
            TermEnd::Lost => {
                tracing::warn!(set = %self.set, identity = %self.identity, shard = index, "lost a shard to another holder");
            }
            TermEnd::WorkEnded(how) => {
                tracing::warn!(set = %self.set, identity = %self.identity, shard = index, ?how, "the shard's work ended on its own; releasing the shard (S3)");
            }
        }
        work.drain(ended_at).await;
        let release = match end {
            TermEnd::Stopped => !root.is_cancelled() || self.config.release_on_cancel,
            TermEnd::WorkEnded(_) => true,
            TermEnd::Expired | TermEnd::Lost => false,
        };
        if release {
            self.release(&name).await;
        }
        let _ = ends.send((index, end, acquired.elapsed()));
    }

    /// Renews the shard Lease `name` until the term ends; returns why it did.
    async fn keep(
        &self,
        name: &str,
        last_write: &mut Instant,
        work: &mut Work,
        stop: &CancellationToken,
    ) -> TermEnd {
        let mut next = *last_write + self.config.retry_period;
        loop {
            let deadline = *last_write + self.config.renew_deadline;
            tokio::select! {
                biased;
                () = stop.cancelled() => return TermEnd::Stopped,
                () = tokio::time::sleep_until(deadline) => return TermEnd::Expired,
                how = work.ended() => return TermEnd::WorkEnded(how),
                () = tokio::time::sleep_until(next.min(deadline)) => {}
            }
            let started = Instant::now();
            let renewed = tokio::select! {
                biased;
                () = stop.cancelled() => return TermEnd::Stopped,
                () = tokio::time::sleep_until(deadline) => return TermEnd::Expired,
                how = work.ended() => return TermEnd::WorkEnded(how),
                r = self.renew(name) => r,
            };
            match renewed {
                Ok(true) => {
                    *last_write = started;
                    self.succeeded(name);
                }
                Ok(false) => return TermEnd::Lost,
                Err(err) => self.failed(name, &err),
            }
            next = started + self.config.retry_period;
        }
    }

    /// One renewal of our shard Lease `name`: Ok(true) renewed, Ok(false) we no longer hold it
    /// (another holder, or deleted). A 409 (someone else wrote the Lease, e.g. labelled it)
    /// re-reads and retries; the caller bounds it by the renew deadline (item 12).
    async fn renew(&self, name: &str) -> Result<bool, kube::Error> {
        loop {
            let Some(lease) = self.api.get_opt(name).await? else {
                return Ok(false);
            };
            let holder = lease
                .spec
                .as_ref()
                .and_then(|s| s.holder_identity.as_deref());
            if holder != Some(self.identity.as_str()) {
                return Ok(false);
            }
            let written = leader::write_record(
                &self.api,
                name,
                &self.identity,
                self.config.lease_duration,
                Some(self.labels()),
                Some(lease),
                Instant::now(),
            )
            .await;
            match written {
                Ok(Written::Held(_)) => return Ok(true),
                Ok(Written::Wait(_)) => return Ok(false),
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    tracing::debug!(lease = %name, "conflict renewing our own shard Lease; re-reading it");
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Lists the set's Leases (by name), recording when each was first seen in its form (E3).
    async fn read_set(&self) -> Option<HashMap<String, Lease>> {
        let params = ListParams::default().labels(&format!("{SHARD_SET_LABEL}={}", self.set));
        let list = match self.api.list(&params).await {
            Ok(list) => {
                self.succeeded("list");
                list
            }
            Err(err) => {
                self.failed("list", &err);
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
        st: &RunState,
    ) -> Option<Instant> {
        let observed = self.observed.lock();
        (0..self.shards)
            .filter(|i| !st.held.contains_key(i) && !st.stopping.contains_key(i))
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

    /// The replicas of our view whose heartbeat changed within its lease duration, by our
    /// clock (E3); we count ourselves. Replicas of another view (S1) do not share our shards.
    fn live_members(&self, leases: &HashMap<String, Lease>, now: Instant) -> u32 {
        let prefix = format!("{}-member-", self.set);
        let me = self.member_lease();
        let ours = self.view();
        let others = leases
            .iter()
            .filter(|(name, lease)| {
                name.starts_with(&prefix)
                    && **name != me
                    && Self::view_of(lease).as_deref() == Some(ours.as_str())
            })
            .filter(|(name, _)| self.live_foreign(name, now).is_some())
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
        let written = leader::write_record(
            &self.api,
            name,
            &self.identity,
            self.config.lease_duration,
            Some(self.labels()),
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
}
