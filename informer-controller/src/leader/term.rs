//! [`Term`]: what the work of a leader or shard term is given (S11). A cancellation token that
//! also knows the instant the term is valid until, so the work stops then on its own clock,
//! whatever the task that renews the Lease is doing.

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The token of one leading or shard term (S11), given to the term's work by
/// [`LeaderElector::run`](super::LeaderElector::run) and
/// [`ShardAssigner::run`](crate::shards::ShardAssigner::run).
///
/// A term ends when its token is cancelled (the Lease was lost or released, the replica stops)
/// **or** when its valid-until instant passes: the start of its last successful Lease write
/// plus the renew deadline (E4; plus the recovery deadline if the elector has one, E8: its
/// writes are then kept apart by the write gate). The second is checked on the clock of whoever asks, so work
/// that runs on another runtime or thread pool than the elector stops in time even while the
/// task that renews the Lease gets no CPU (a stalled runtime, a long GC-like pause): a
/// successor can take the Lease only a lease duration after that write, later than
/// valid-until.
///
/// [`Controller::run`](crate::Controller::run) takes a `Term` (or a plain
/// `CancellationToken`): its workers stop at the term's end, and in-flight reconciles are
/// aborted once the term's drain limit has passed (S6).
///
/// ```no_run
/// # use informer_controller::leader::Term;
/// async fn work(term: Term) {
///     while term.is_valid() {
///         // ... one step that must not run beside a successor ...
///         tokio::select! {
///             () = term.cancelled() => break,
///             () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
///         }
///     }
/// }
/// ```
#[derive(Clone)]
pub struct Term {
    token: CancellationToken,
    /// The valid-until instant, moved by each renewal; `None` for a token with no Lease.
    valid_until: Option<watch::Receiver<Instant>>,
    /// How long the work may go on after the term ended (S6); `None` for no Lease.
    drain_limit: Option<Duration>,
    /// Cancelled when the term ends, valid-until included: the parent of every
    /// [`child_token`](Term::child_token), shared by the term's clones. Set by the first
    /// `child_token` call on a runtime, with the one task per term that watches the
    /// valid-until instant, so a child costs no task of its own (S11).
    ended: Arc<OnceLock<CancellationToken>>,
}

impl fmt::Debug for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Term")
            .field("cancelled", &self.token.is_cancelled())
            .field("valid_until", &self.valid_until())
            .field("drain_limit", &self.drain_limit)
            .finish()
    }
}

impl From<CancellationToken> for Term {
    /// A term with no Lease: it ends when `token` is cancelled, and has no drain limit.
    fn from(token: CancellationToken) -> Self {
        Term {
            token,
            valid_until: None,
            drain_limit: None,
            ended: Arc::default(),
        }
    }
}

impl Term {
    /// A term ended by `token` or at the instant `valid_until` holds, whichever comes first.
    pub(crate) fn new(
        token: CancellationToken,
        valid_until: watch::Receiver<Instant>,
        drain_limit: Duration,
    ) -> Self {
        Term {
            token,
            valid_until: Some(valid_until),
            drain_limit: Some(drain_limit),
            ended: Arc::default(),
        }
    }

    /// The instant the term is valid until now (each renewal moves it on); `None` without a
    /// Lease.
    pub fn valid_until(&self) -> Option<Instant> {
        self.valid_until.as_ref().map(|rx| *rx.borrow())
    }

    /// How long the work may go on after the term ended before it is aborted (S6); `None`
    /// without a Lease.
    pub fn drain_limit(&self) -> Option<Duration> {
        self.drain_limit
    }

    /// Whether the term has ended: its token was cancelled or its valid-until instant passed
    /// (by the caller's clock).
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled() || self.valid_until().is_some_and(|v| Instant::now() >= v)
    }

    /// Whether the term still runs: the opposite of [`is_cancelled`](Self::is_cancelled).
    pub fn is_valid(&self) -> bool {
        !self.is_cancelled()
    }

    /// Resolves when the term ends: its token is cancelled or its valid-until instant passes,
    /// on the timer of the runtime that polls this future (not the elector's).
    pub async fn cancelled(&self) {
        let Some(rx) = &self.valid_until else {
            return self.token.cancelled().await;
        };
        let mut rx = rx.clone();
        let mut renewing = true;
        loop {
            let until = *rx.borrow_and_update();
            if Instant::now() >= until {
                return;
            }
            tokio::select! {
                biased;
                () = self.token.cancelled() => return,
                () = tokio::time::sleep_until(until) => {}
                // A renewal moved the instant on; without a renewer it no longer moves.
                changed = rx.changed(), if renewing => renewing = changed.is_ok(),
            }
        }
    }

    /// A plain token cancelled when this term ends, valid-until included, for code that takes
    /// a `CancellationToken`. Cheap enough to call per reconcile: every child hangs off one
    /// token of the term, which the term's token cancels at once and one task per term
    /// (spawned on the current runtime by the first call) cancels at the valid-until instant
    /// (S11); a dropped child leaves nothing behind. Without a runtime the child follows only
    /// the term's token.
    pub fn child_token(&self) -> CancellationToken {
        if self.valid_until.is_none() {
            return self.token.child_token();
        }
        if let Some(ended) = self.ended.get() {
            return ended.child_token();
        }
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return self.token.child_token();
        };
        self.ended
            .get_or_init(|| {
                let ended = self.token.child_token();
                // The watcher holds the term's clock, not its `ended` cell: it ends with the term.
                let term = Term {
                    token: self.token.clone(),
                    valid_until: self.valid_until.clone(),
                    drain_limit: self.drain_limit,
                    ended: Arc::default(),
                };
                let cancel = ended.clone();
                rt.spawn(async move {
                    term.cancelled().await;
                    cancel.cancel();
                });
                ended
            })
            .child_token()
    }

    /// The underlying token, cancelled when the elector or assigner notices the term's end
    /// (without the valid-until check).
    pub fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// When work that started draining at `noticed` must have stopped (S6): the drain limit
    /// after the term's end, which is no later than its valid-until instant; `None` without a
    /// Lease.
    pub(crate) fn drain_deadline(&self, noticed: Instant) -> Option<Instant> {
        let limit = self.drain_limit?;
        let end = self.valid_until().map_or(noticed, |v| v.min(noticed));
        Some(end + limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn s11_a_term_ends_at_its_valid_until_instant_unless_renewed() {
        let t0 = Instant::now();
        let (renew, rx) = watch::channel(t0 + Duration::from_secs(1));
        let term = Term::new(CancellationToken::new(), rx, Duration::from_millis(800));
        assert!(term.is_valid());
        // Renewed at 0.5 s: valid until 1.5 s.
        tokio::time::sleep(Duration::from_millis(500)).await;
        renew.send_replace(t0 + Duration::from_millis(1500));
        term.cancelled().await;
        assert_eq!(Instant::now(), t0 + Duration::from_millis(1500));
        assert!(term.is_cancelled());
        assert!(
            !term.token().is_cancelled(),
            "the token knows nothing of it"
        );
        assert_eq!(
            term.drain_deadline(t0 + Duration::from_secs(5)),
            Some(t0 + Duration::from_millis(2300)),
            "the drain counts from valid-until, not from when the end was noticed"
        );
        drop(renew);
        let plain = Term::from(CancellationToken::new());
        assert!(plain.valid_until().is_none() && plain.drain_deadline(t0).is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn s11_a_child_token_is_cancelled_at_valid_until() {
        let t0 = Instant::now();
        let (_renew, rx) = watch::channel(t0 + Duration::from_secs(2));
        let term = Term::new(CancellationToken::new(), rx, Duration::from_millis(800));
        let child = term.child_token();
        child.cancelled().await;
        assert_eq!(Instant::now(), t0 + Duration::from_secs(2));
    }

    /// S11: a child token costs no task of its own (it used to spawn one per call, alive until
    /// the term ended: unbounded when called per reconcile), and every child still ends with
    /// the term, at its valid-until instant or when its token is cancelled.
    #[tokio::test(start_paused = true)]
    async fn s11_child_tokens_cost_no_task_each() {
        let t0 = Instant::now();
        let metrics = tokio::runtime::Handle::current().metrics();
        let before = metrics.num_alive_tasks();
        let (_renew, rx) = watch::channel(t0 + Duration::from_secs(2));
        let term = Term::new(CancellationToken::new(), rx, Duration::from_millis(800));
        let kept: Vec<CancellationToken> = (0..1_000).map(|_| term.child_token()).collect();
        for _ in 0..1_000 {
            drop(term.clone().child_token());
        }
        let alive = metrics.num_alive_tasks();
        assert!(
            alive <= before + 1,
            "2 000 child tokens left {} tasks alive (one per term at most)",
            alive - before
        );
        kept[0].cancelled().await;
        assert_eq!(Instant::now(), t0 + Duration::from_secs(2));
        assert!(kept.iter().all(CancellationToken::is_cancelled));

        // Ended by its token before valid-until: the children at once.
        let (_renew, rx) = watch::channel(Instant::now() + Duration::from_secs(60));
        let token = CancellationToken::new();
        let term = Term::new(token.clone(), rx, Duration::from_millis(800));
        let children: Vec<CancellationToken> = (0..10).map(|_| term.child_token()).collect();
        token.cancel();
        assert!(children.iter().all(CancellationToken::is_cancelled));
        assert!(
            term.child_token().is_cancelled(),
            "a child of an ended term"
        );
    }
}
