//! Leader election over a `coordination.k8s.io/v1` Lease with client-go's semantics (E1-E7).
//!
//! ```no_run
//! # use std::time::Duration;
//! # use informer_controller::leader::{LeaderElectionConfig, LeaderElector};
//! # use tokio_util::sync::CancellationToken;
//! # async fn demo(client: kube::Client) -> Result<(), informer_controller::leader::Error> {
//! let elector = LeaderElector::new(
//!     client,
//!     "kube-system",
//!     "my-operator",
//!     std::env::var("POD_NAME").unwrap_or_else(|_| "local".into()),
//!     LeaderElectionConfig::default(), // 15 s / 10 s / 2 s (E2)
//! )?
//! .on_new_leader(|holder| tracing::info!(%holder, "new leader"));
//! let cancel = CancellationToken::new();
//! elector
//!     .run(cancel, |leading| async move {
//!         // Work that must run on one replica only; stop when `leading` is cancelled.
//!         leading.cancelled().await;
//!     })
//!     .await
//! # }
//! ```
//!
//! Timing (E2-E4): a leader renews every retry period; if it has not renewed within the renew
//! deadline, counted from the *start* of its last successful write, it stops leading. A
//! follower takes over only after the lease duration has passed on its own clock since it
//! last saw the record change. The write reached the server after it started, and the
//! follower saw it even later, so with renew deadline < lease duration the old leader has
//! stepped down before anyone else can acquire (E7), whatever the clocks' offsets; only their
//! rates must roughly agree, as client-go documents.
//!
//! The term's work (the same rules hold per shard in [`crate::shards`]):
//!
//! - **S3** Work that ends on its own while leading (it returned, e.g. a controller whose sync
//!   timed out, or it panicked) ends the term: the candidate steps down, releases the Lease
//!   (E5) and campaigns again after a backoff (the retry period, doubled per such term in a
//!   row, at most the lease duration). A Lease is never renewed for work that no longer runs.
//! - **S5** Dropping the [`LeaderElector::run`] future while leading is a cancel: the term
//!   ends (`is_leader` false, stopped-leading runs), the work's token is cancelled, and the
//!   work is awaited in the background (bounded as below), then the Lease released (when
//!   `release_on_cancel`).
//! - **S6** After a term ends, its work may run for at most
//!   [`LeaderElectionConfig::drain_limit`] (`lease_duration - renew_deadline` less a margin);
//!   longer work is aborted with `JoinHandle::abort` and logged, so it stops before a
//!   successor can lead. (client-go and controller-runtime exit the process instead.) The limit
//!   counts from the term's end, its valid-until instant at the latest.
//! - **S11** The work gets a [`Term`]: it ends when cancelled or when the term's valid-until
//!   instant (the start of its last successful write plus the renew deadline) passes, by the
//!   work's own clock, so work on another runtime stops in time even if the renew task is
//!   starved. An acquire answer seen after its write's renew deadline starts no term.
//!
//! Recovery and the write gate (E8, after KEP-6361): [`LeaderElector::write_gated_client`]
//! gates a client's writes on leadership (reads always pass; writes in flight are cancelled
//! when the gate closes). With [`LeaderElector::recovery_deadline`] (off by default), a leader
//! that misses its renew deadline closes the gate but keeps its term and work, and renews only
//! the Lease it held until the recovery deadline; a renewal in time resumes the term.

mod gate;
mod lease;
pub(crate) mod names;
pub(crate) mod record;
mod term;
pub(crate) mod work;

pub use gate::{WriteGate, WriteGateClosed, WriteGated};
pub(crate) use lease::{Written, release, write_record};
pub use term::Term;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use kube::api::Api;
use parking_lot::Mutex;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use rand::Rng;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::reads;
use gate::GateControl;
use work::Work;

/// client-go's `JitterFactor`, also the factor of E2's validity rule.
pub const JITTER_FACTOR: f64 = 1.2;

/// Why leader election could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The timing violates E2 (lease duration > renew deadline > 1.2 x retry period > 0).
    /// Not retryable.
    #[error("invalid leader election timing: {0}")]
    InvalidConfig(String),
    /// The identity is empty. Not retryable.
    #[error("leader election identity must not be empty")]
    EmptyIdentity,
    /// A Lease or shard set name that kube-apiserver would refuse on every write (S8). Not
    /// retryable.
    #[error("{0}")]
    InvalidName(String),
}

/// Leader election timing (E2). Defaults are client-go's: 15 s, 10 s, 2 s, jitter 1.2,
/// release on cancel.
#[derive(Debug, Clone)]
pub struct LeaderElectionConfig {
    /// How long followers wait after the last observed change before taking over.
    pub lease_duration: Duration,
    /// How long a leader keeps trying to renew before it steps down.
    pub renew_deadline: Duration,
    /// How often a leader renews and a candidate retries.
    pub retry_period: Duration,
    /// A candidate waits `retry_period * (1 + rand * jitter)` between attempts (client-go 1.2);
    /// never longer than until the observed lease expires.
    pub jitter_factor: f64,
    /// On cancel, a leader writes an empty holder with a 1 s duration so a successor can take
    /// over at once (E5).
    pub release_on_cancel: bool,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        LeaderElectionConfig {
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            jitter_factor: JITTER_FACTOR,
            release_on_cancel: true,
        }
    }
}

impl LeaderElectionConfig {
    /// How long a term's work may go on after the term ended before it is aborted (S6):
    /// `lease_duration - renew_deadline`, less a fifth of it as a margin for the requests and
    /// clocks. A term ends at the latest at the renew deadline after the start of its last
    /// successful write, and nobody else can take the Lease before the lease duration after
    /// it, so work that stops within this limit never overlaps a successor's.
    pub fn drain_limit(&self) -> Duration {
        let window = self.lease_duration.saturating_sub(self.renew_deadline);
        window.saturating_sub(window / 5)
    }

    /// A candidate's wait between attempts: `retry_period * (1 + rand * jitter_factor)`.
    pub(crate) fn jittered_retry(&self) -> Duration {
        let factor = 1.0 + rand::rng().random::<f64>() * self.jitter_factor;
        self.retry_period.mul_f64(factor)
    }

    /// Checks this timing (E2) and a candidate's identity; returns the identity.
    pub(crate) fn candidate(&self, identity: String) -> Result<String, Error> {
        self.validate()?;
        if identity.is_empty() {
            return Err(Error::EmptyIdentity);
        }
        Ok(identity)
    }

    /// Checks E2: lease duration > renew deadline > 1.2 x retry period > 0.
    pub fn validate(&self) -> Result<(), Error> {
        if self.retry_period.is_zero() {
            return Err(Error::InvalidConfig("retry period must be positive".into()));
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(Error::InvalidConfig(format!(
                "lease duration {:?} must be greater than renew deadline {:?}",
                self.lease_duration, self.renew_deadline
            )));
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return Err(Error::InvalidConfig(format!(
                "renew deadline {:?} must be greater than {JITTER_FACTOR} x retry period {:?}",
                self.renew_deadline, self.retry_period
            )));
        }
        if !(self.jitter_factor >= 0.0 && self.jitter_factor.is_finite()) {
            return Err(Error::InvalidConfig(
                "jitter factor must be finite and >= 0".into(),
            ));
        }
        Ok(())
    }
}

/// What one candidate currently knows, published on [`LeaderElector::subscribe`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderState {
    /// The holder this candidate last observed (or wrote), if any.
    pub leader: Option<String>,
    /// Whether this candidate believes it leads now.
    pub is_leader: bool,
}

type Callback = Arc<dyn Fn() + Send + Sync>;
type LeaderCallback = Arc<dyn Fn(&str) + Send + Sync>;

/// One candidate for one Lease (client-go's `LeaderElector`).
pub struct LeaderElector {
    api: Api<Lease>,
    name: String,
    identity: String,
    config: LeaderElectionConfig,
    state: watch::Sender<LeaderState>,
    /// The record as last observed, and when we first saw it in that form (E3).
    observed: Mutex<Option<(LeaseSpec, Instant)>>,
    on_stopped_leading: Option<Callback>,
    on_new_leader: Option<LeaderCallback>,
    /// client-go's `leader_election_master_status{name}` series, once [`LeaderElector::metrics`]
    /// registered it (C8).
    master_status: Option<Gauge>,
    /// How long a leader whose renewals failed past the renew deadline keeps trying to renew
    /// with its writes gated before it stops leading (E8); zero (the default) for no recovery.
    recovery: Duration,
    /// The write gate (E8): open while leading, not recovering.
    gate: GateControl,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("lease", &self.name)
            .field("identity", &self.identity)
            .field("config", &self.config)
            .field("recovery_deadline", &self.recovery)
            .field("state", &*self.state.borrow())
            .finish_non_exhaustive()
    }
}

/// Why a leading term ended.
#[derive(Debug)]
enum TermEnd {
    /// The renew deadline passed, or another holder appeared.
    Lost,
    /// The caller cancelled.
    Cancelled,
    /// The work ended on its own (returned or panicked) while leading (S3).
    WorkEnded(work::Ended),
}

/// The outcome of one read-decide-write round.
enum Attempt {
    /// We hold the lease now; the write started at `started`.
    Held,
    /// Someone else holds it until `expires` (our clock); while recovering, also a Lease that
    /// is gone or released (E8).
    Wait(Instant),
}

impl LeaderElector {
    /// A candidate `identity` for the Lease `namespace/name`. Fails on an invalid timing (E2),
    /// an empty identity, or a name kube-apiserver would refuse (not a lowercase RFC 1123
    /// subdomain, S8). The identity is free text: it is only the Lease's holder.
    pub fn new(
        client: kube::Client,
        namespace: &str,
        name: impl Into<String>,
        identity: impl Into<String>,
        config: LeaderElectionConfig,
    ) -> Result<Self, Error> {
        let identity = config.candidate(identity.into())?;
        let name = name.into();
        names::check("the Lease name", &name, names::NAME_MAX).map_err(Error::InvalidName)?;
        Ok(LeaderElector {
            api: Api::namespaced(client, namespace),
            name,
            identity,
            config,
            state: watch::Sender::new(LeaderState::default()),
            observed: Mutex::new(None),
            on_stopped_leading: None,
            on_new_leader: None,
            master_status: None,
            recovery: Duration::ZERO,
            gate: GateControl::default(),
        })
    }

    /// Recovery after a failed renewal (E8, after KEP-6361; off by default): when the renew
    /// deadline passes without a successful renewal, the term does not end at once. The
    /// [write gate](Self::write_gate) closes (writes in flight are cancelled), `is_leader`
    /// turns false, and the elector keeps trying to renew the Lease it held, never to take one
    /// that shows another holder (that ends the term at once), for up to `deadline` more. A
    /// renewal that succeeds in time resumes the term: the gate reopens, `is_leader` turns
    /// true, the work goes on as it was (not cancelled, no stopped-leading, no new term). If
    /// `deadline` passes, the term is lost as without recovery.
    ///
    /// The work's [`Term`] stays valid until the renew deadline plus `deadline` after the start
    /// of the last successful renewal, so with recovery only writes through a gated client are
    /// kept from overlapping a successor's (E7, E8): work that writes any other way should
    /// not use recovery.
    pub fn recovery_deadline(mut self, deadline: Duration) -> Self {
        self.recovery = deadline;
        self
    }

    /// The write gate of this elector (E8): writes pass only while it leads and is not
    /// recovering, checked by the caller's clock against the renew deadline after the start of
    /// the last successful renewal; reads always pass. See [`WriteGate`].
    pub fn write_gate(&self) -> WriteGate {
        self.gate.gate()
    }

    /// `client` with its writes gated by this elector's [write gate](Self::write_gate) (E8).
    /// Build the elector itself with an ungated client (it must renew while the gate is
    /// closed). Must be called within a Tokio runtime.
    ///
    /// ```no_run
    /// # use informer_controller::leader::{LeaderElectionConfig, LeaderElector, WriteGateClosed};
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # use kube::api::{Api, PostParams};
    /// # async fn demo(client: kube::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// let elector = LeaderElector::new(
    ///     client.clone(),
    ///     "kube-system",
    ///     "my-operator",
    ///     "replica-1",
    ///     LeaderElectionConfig::default(),
    /// )?
    /// .recovery_deadline(std::time::Duration::from_secs(60));
    /// let gated = elector.write_gated_client(client);
    /// let configmaps: Api<ConfigMap> = Api::namespaced(gated, "default");
    /// match configmaps.create(&PostParams::default(), &ConfigMap::default()).await {
    ///     Ok(_) => {}
    ///     // Not leading, recovering, or cancelled in flight: requeue without a penalty.
    ///     Err(err) if WriteGateClosed::of(&err).is_some() => {}
    ///     Err(err) => return Err(err.into()),
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn write_gated_client(&self, client: kube::Client) -> kube::Client {
        self.write_gate().client(client)
    }

    /// Whether this elector is recovering: its renewals failed past the renew deadline, its
    /// term goes on with its writes gated, and it keeps trying to renew (E8).
    pub fn is_recovering(&self) -> bool {
        self.gate.is_recovering()
    }

    /// Registers client-go's (and controller-runtime's) `leader_election_master_status{name}` in
    /// `registry`: 1 while this candidate leads the Lease `name`, 0 otherwise (C8), so a Go
    /// dashboard of leader elections reads it unchanged.
    pub fn metrics(mut self, registry: &mut Registry) -> Self {
        let family = Family::<[(&'static str, String); 1], Gauge>::default();
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            family.clone(),
        );
        let gauge = family.get_or_create(&[("name", self.name.clone())]).clone();
        gauge.set(i64::from(self.is_leader()));
        self.master_status = Some(gauge);
        self
    }

    /// Turns the leading state (and its gauge) on or off.
    fn set_leading(&self, on: bool) {
        self.state.send_modify(|s| s.is_leader = on);
        if let Some(g) = &self.master_status {
            g.set(i64::from(on));
        }
    }

    /// Called exactly once at the end of every leading term, when lost or released (E6), at
    /// the moment this candidate stops believing it leads (before the work is awaited).
    pub fn on_stopped_leading(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.on_stopped_leading = Some(Arc::new(f));
        self
    }

    /// Called whenever the observed holder changes, ourselves included (E6).
    pub fn on_new_leader(mut self, f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_new_leader = Some(Arc::new(f));
        self
    }

    /// The candidate's identity.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The state as a watch channel: `is_leader` flips at the instant the term starts and
    /// ends; `leader` follows the observed holder.
    pub fn subscribe(&self) -> watch::Receiver<LeaderState> {
        self.state.subscribe()
    }

    /// Whether this candidate believes it leads now.
    pub fn is_leader(&self) -> bool {
        self.state.borrow().is_leader
    }

    /// Campaigns until `cancel`: acquires the lease, calls `on_started_leading` with the term's
    /// [`Term`] (ended when the term ends or its valid-until instant passes, S11; its future
    /// runs as a task), renews, and on loss steps
    /// down (the token is cancelled, [`on_stopped_leading`](Self::on_stopped_leading) runs, the
    /// work is awaited for at most [`LeaderElectionConfig::drain_limit`], then aborted: S6)
    /// and campaigns again. On cancel a leader steps down, waits for its work and releases the
    /// lease (E5, when configured). The closure's synchronous part runs at the instant the term
    /// starts.
    ///
    /// Work that ends on its own while leading (it returned, or panicked) ends the term: the
    /// candidate steps down, releases the lease so another candidate can lead at once, and
    /// campaigns again after a backoff (S3: a lease is never renewed for work that no longer
    /// runs). Dropping this future while leading is a cancel: the work is stopped, awaited in
    /// the background (bounded, S6) and the lease released (S5).
    pub async fn run<F, Fut>(
        &self,
        cancel: CancellationToken,
        mut on_started_leading: F,
    ) -> Result<(), Error>
    where
        F: FnMut(Term) -> Fut,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut dead_terms = 0u32;
        loop {
            let Some(mut last_write) = self.acquire(&cancel).await else {
                return Ok(());
            };
            // The term starts now, valid until the renew deadline after its winning write (S11),
            // plus the recovery deadline (E8); writes pass until the renew deadline.
            let (valid, valid_until) = watch::channel(self.valid_until(last_write));
            let term = Term::new(cancel.child_token(), valid_until, self.config.drain_limit());
            self.gate
                .open_until(last_write + self.config.renew_deadline);
            self.set_leading(true);
            tracing::info!(lease = %self.name, identity = %self.identity, "started leading");
            let started = Instant::now();
            let mut guard = TermGuard {
                elector: self,
                work: Work::spawn(
                    term.clone(),
                    on_started_leading(term),
                    self.config.drain_limit(),
                    format!("lease {}", self.name),
                ),
                leading: true,
            };
            guard.release_if_dropped();
            let end = self
                .renew(&cancel, &mut last_write, &valid, &mut guard.work)
                .await;
            // Step down first, then let the work wind down.
            let ended_at = Instant::now();
            guard.step_down();
            tracing::info!(lease = %self.name, identity = %self.identity, ?end, "stopped leading");
            match end {
                TermEnd::WorkEnded(how) => {
                    tracing::warn!(lease = %self.name, identity = %self.identity, ?how,
                        "the leading work ended on its own; releasing the lease (S3)");
                    self.release().await;
                    // A term that ran a lease duration or more was healthy; a string of short
                    // ones backs off, so a crashing controller does not hold the lease in a loop.
                    if started.elapsed() >= self.config.lease_duration {
                        dead_terms = 0;
                    }
                    dead_terms = dead_terms.saturating_add(1);
                    let backoff = dead_term_backoff(&self.config, dead_terms);
                    tokio::select! {
                        () = cancel.cancelled() => return Ok(()),
                        () = tokio::time::sleep(backoff) => {}
                    }
                }
                TermEnd::Cancelled => {
                    guard.work.drain(ended_at).await;
                    if self.config.release_on_cancel {
                        self.release().await;
                    }
                    return Ok(());
                }
                TermEnd::Lost => {
                    guard.work.drain(ended_at).await;
                }
            }
        }
    }

    /// Tries until we hold the lease (returns the start instant of the winning write) or
    /// `cancel` (None).
    async fn acquire(&self, cancel: &CancellationToken) -> Option<Instant> {
        loop {
            let started = Instant::now();
            let attempt = tokio::select! {
                () = cancel.cancelled() => return None,
                a = tokio::time::timeout(self.config.renew_deadline, self.try_acquire_or_renew(false, started + self.config.renew_deadline)) => a,
            };
            let wake = match attempt {
                // S11: only an answer that came before the renew deadline of its write starts a
                // term; a late one (a stalled runtime resumed) would start it already over.
                Ok(Ok(Attempt::Held)) if Instant::now() < started + self.config.renew_deadline => {
                    return Some(started);
                }
                Ok(Ok(Attempt::Held)) => {
                    tracing::warn!(lease = %self.name, identity = %self.identity,
                        "the answer to an acquiring write came after its renew deadline; not leading on it (S11)");
                    Instant::now() + self.jittered_retry()
                }
                Ok(Ok(Attempt::Wait(expires))) => {
                    expires.min(Instant::now() + self.jittered_retry())
                }
                Ok(Err(err)) => {
                    tracing::debug!(lease = %self.name, error = %err, "acquire attempt failed");
                    Instant::now() + self.jittered_retry()
                }
                Err(_) => Instant::now() + self.jittered_retry(),
            };
            tokio::select! {
                () = cancel.cancelled() => return None,
                () = tokio::time::sleep_until(wake) => {}
            }
        }
    }

    /// Until when a term whose last successful write started at `write` is valid (S11): the
    /// renew deadline after it, plus the recovery deadline (E8).
    fn valid_until(&self, write: Instant) -> Instant {
        write + self.config.renew_deadline + self.recovery
    }

    /// Renews every retry period until the renew deadline passes without success (counted from
    /// the start of the last successful write, E4), another holder appears, the work ends on
    /// its own (S3), or `cancel`. With a recovery deadline, a missed renew deadline closes
    /// the write gate and renewals go on until the recovery deadline after it; one that
    /// succeeds resumes the term (E8).
    async fn renew(
        &self,
        cancel: &CancellationToken,
        last_write: &mut Instant,
        valid: &watch::Sender<Instant>,
        work: &mut Work,
    ) -> TermEnd {
        let mut recovering = false;
        let mut next = Instant::now() + self.config.retry_period;
        loop {
            let renew_by = *last_write + self.config.renew_deadline;
            let give_up = self.valid_until(*last_write);
            let wake = next.min(if recovering { give_up } else { renew_by });
            tokio::select! {
                biased;
                () = cancel.cancelled() => return TermEnd::Cancelled,
                how = work.ended() => return self.work_ended(how, give_up),
                () = tokio::time::sleep_until(wake) => {}
            }
            let now = Instant::now();
            if now >= renew_by && !recovering {
                if self.recovery.is_zero() {
                    tracing::warn!(lease = %self.name, identity = %self.identity, "failed to renew within the renew deadline");
                    return TermEnd::Lost;
                }
                recovering = true;
                self.start_recovery();
            }
            if now >= give_up {
                tracing::warn!(lease = %self.name, identity = %self.identity, "failed to renew within the recovery deadline (E8)");
                return TermEnd::Lost;
            }
            // Each attempt is cut at its own renew deadline: a later answer could not open the
            // gate anyway (E4).
            let cut = (now + self.config.renew_deadline).min(give_up);
            let attempt = tokio::select! {
                biased;
                () = cancel.cancelled() => return TermEnd::Cancelled,
                () = tokio::time::sleep_until(cut) => None,
                how = work.ended() => return self.work_ended(how, give_up),
                a = self.try_acquire_or_renew(recovering, cut) => Some(a),
            };
            match attempt {
                Some(Ok(Attempt::Held)) => {
                    *last_write = now;
                    valid.send_replace(self.valid_until(now));
                    self.gate.open_until(now + self.config.renew_deadline);
                    if std::mem::take(&mut recovering) {
                        self.end_recovery();
                    }
                }
                Some(Ok(Attempt::Wait(_))) => return TermEnd::Lost,
                Some(Err(err)) => {
                    tracing::debug!(lease = %self.name, error = %err, "renew attempt failed");
                }
                None => tracing::debug!(lease = %self.name, "renew attempt timed out"),
            }
            next = Instant::now() + self.config.retry_period;
        }
    }

    /// The renew deadline passed with a recovery deadline set (E8): the write gate closes,
    /// cancelling writes in flight, and `is_leader` turns false; the term and its work go on.
    fn start_recovery(&self) {
        tracing::warn!(lease = %self.name, identity = %self.identity, recovery_deadline = ?self.recovery,
            "failed to renew within the renew deadline; writes gated, recovering (E8)");
        self.gate.close(true);
        self.set_leading(false);
    }

    /// A renewal succeeded while recovering (E8): the term resumes (the gate reopened with
    /// the renewal).
    fn end_recovery(&self) {
        tracing::info!(lease = %self.name, identity = %self.identity, "renewed while recovering; leading again (E8)");
        self.set_leading(true);
    }

    /// Why a term whose work just ended is over: the work ended on its own (S3), unless the
    /// term was already past its renew deadline, which the work sees on its own clock (S11)
    /// and may have stopped for: then the Lease was lost, nothing needs a backoff.
    fn work_ended(&self, how: work::Ended, deadline: Instant) -> TermEnd {
        if Instant::now() >= deadline {
            tracing::warn!(lease = %self.name, identity = %self.identity, "failed to renew within the renew deadline");
            TermEnd::Lost
        } else {
            TermEnd::WorkEnded(how)
        }
    }

    /// One read-decide-write round (client-go's `tryAcquireOrRenew`). With `renew_only` (while
    /// recovering, E8) a Lease that is gone or not held by us is not taken: `Wait`. The read
    /// waits out a 429 unless its wait would pass `deadline`, where the caller cuts it (R24).
    async fn try_acquire_or_renew(
        &self,
        renew_only: bool,
        deadline: Instant,
    ) -> Result<Attempt, kube::Error> {
        let current = reads::retrying("leader lease get", Some(deadline), || {
            self.api.get_opt(&self.name)
        })
        .await?;
        if renew_only && !self.holds(current.as_ref()) {
            if let Some(spec) = current.and_then(|l| l.spec) {
                self.observe(spec);
            }
            return Ok(Attempt::Wait(Instant::now()));
        }
        let observed_at = match &current {
            Some(lease) => self.observe(lease.spec.clone().unwrap_or_default()),
            None => Instant::now(),
        };
        // A concurrent creator or writer wins with a 409: a lost race, an error here.
        let written = write_record(
            &self.api,
            &self.name,
            &self.identity,
            self.config.lease_duration,
            None,
            current,
            observed_at,
        )
        .await?;
        Ok(match written {
            Written::Held(spec) => {
                self.observe(spec);
                Attempt::Held
            }
            Written::Wait(expires) => Attempt::Wait(expires),
        })
    }

    /// Whether `lease` exists and names us as its holder.
    fn holds(&self, lease: Option<&Lease>) -> bool {
        lease
            .and_then(|l| l.spec.as_ref())
            .and_then(|s| s.holder_identity.as_deref())
            == Some(self.identity.as_str())
    }

    /// Records `spec` as observed; returns when we first saw it in this form (E3).
    fn observe(&self, spec: LeaseSpec) -> Instant {
        let holder = spec.holder_identity.clone().filter(|h| !h.is_empty());
        let at = {
            let mut observed = self.observed.lock();
            match &*observed {
                Some((old, at)) if *old == spec => *at,
                _ => {
                    let now = Instant::now();
                    *observed = Some((spec, now));
                    now
                }
            }
        };
        let changed = self.state.send_if_modified(|s| {
            if s.leader == holder {
                return false;
            }
            s.leader.clone_from(&holder);
            true
        });
        if changed && let (Some(f), Some(h)) = (&self.on_new_leader, holder.as_deref()) {
            f(h);
        }
        at
    }

    /// Writes an empty holder with a 1 s duration if we still hold the lease (E5).
    async fn release(&self) {
        release(
            &self.api,
            &self.name,
            &self.identity,
            self.config.renew_deadline,
        )
        .await;
    }

    fn jittered_retry(&self) -> Duration {
        self.config.jittered_retry()
    }
}

/// The wait before campaigning again after the `n`th term in a row whose work ended on its
/// own (S3): the retry period, doubled per such term, at most the lease duration.
pub(crate) fn dead_term_backoff(config: &LeaderElectionConfig, n: u32) -> Duration {
    let factor = 1u32 << n.saturating_sub(1).min(16);
    config
        .retry_period
        .saturating_mul(factor)
        .min(config.lease_duration)
}

/// A leading term in progress: dropping it (the run future was dropped) steps down and hands
/// the work to [`Work`]'s background drain, followed by the release (S5).
struct TermGuard<'a> {
    elector: &'a LeaderElector,
    work: Work,
    leading: bool,
}

impl TermGuard<'_> {
    /// Arms the release that follows the background drain if the guard is dropped (S5).
    fn release_if_dropped(&mut self) {
        let e = self.elector;
        if !e.config.release_on_cancel {
            return;
        }
        let (api, name, identity, timeout) = (
            e.api.clone(),
            e.name.clone(),
            e.identity.clone(),
            e.config.renew_deadline,
        );
        self.work.after_drop(async move {
            release(&api, &name, &identity, timeout).await;
        });
    }

    /// The term ends: `is_leader` turns false, the work's token is cancelled and
    /// stopped-leading runs (E6), once.
    fn step_down(&mut self) {
        if !std::mem::replace(&mut self.leading, false) {
            return;
        }
        let e = self.elector;
        // E8: writes stop before anything else; those in flight are cancelled.
        e.gate.close(false);
        e.set_leading(false);
        self.work.cancel();
        if let Some(f) = &e.on_stopped_leading {
            f();
        }
    }
}

impl Drop for TermGuard<'_> {
    fn drop(&mut self) {
        // Dropped while leading: the run future went away mid-term.
        self.step_down();
    }
}
