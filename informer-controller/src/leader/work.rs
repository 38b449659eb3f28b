//! The work of one leader or shard term as a task that is never detached (S5, S6): its token is
//! cancelled when the term ends, it is awaited for at most the drain limit and then aborted, and
//! if its owner is dropped before that (the run future was dropped), the same happens in the
//! background, followed by the owner's release of the Lease.

use std::future::Future;
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::task::{JoinError, JoinHandle};
use tokio::time::Instant;

use super::term::Term;

/// How a term's work ended.
#[derive(Debug)]
pub(crate) enum Ended {
    /// It returned.
    Returned,
    /// It panicked.
    Panicked(String),
    /// It outlived the drain limit and was aborted (S6).
    Aborted,
}

impl Ended {
    fn of(res: Result<(), JoinError>) -> Self {
        match res {
            Ok(()) => Ended::Returned,
            Err(err) if err.is_panic() => Ended::Panicked(err.to_string()),
            Err(_) => Ended::Aborted,
        }
    }
}

/// One term's work task: `term` tells it to stop; `handle` is `None` once it has ended.
pub(crate) struct Work {
    term: Term,
    handle: Option<JoinHandle<()>>,
    /// How long the work may run after its term ended (S6).
    limit: Duration,
    /// Names the term in logs (`lease`, `shard`).
    label: String,
    /// Runs after the background drain when the owner is dropped first (the E5 release).
    after_drop: Option<BoxFuture<'static, ()>>,
    /// When the term's end was noticed (the token was cancelled); the drain limit counts from
    /// this or the term's valid-until instant, whichever is earlier (S6).
    since: Option<Instant>,
}

impl Work {
    /// Spawns `fut` as the term's work; `term` is the one `fut` watches.
    pub(crate) fn spawn<Fut>(term: Term, fut: Fut, limit: Duration, label: String) -> Self
    where
        Fut: Future<Output = ()> + Send + 'static,
    {
        Work {
            term,
            handle: Some(tokio::spawn(fut)),
            limit,
            label,
            after_drop: None,
            since: None,
        }
    }

    /// The term's end was noticed now: the work's token is cancelled (once; the drain limit
    /// counts from the first call, or from the term's valid-until instant if that is earlier).
    pub(crate) fn cancel(&mut self) {
        self.since.get_or_insert_with(Instant::now);
        self.term.token().cancel();
    }

    /// When the work must have stopped, the term's end having been noticed at `noticed`: the
    /// drain limit after that or after the term's valid-until instant, whichever is earlier
    /// (S6: a replica that resumes from a stall gets no fresh drain beside its successor).
    fn drain_until(&self, noticed: Instant) -> Instant {
        self.term
            .drain_deadline(noticed)
            .unwrap_or(noticed + self.limit)
    }

    /// Runs `after` once the work has been drained in the background, should this be dropped
    /// unfinished (S5: the release of the Lease, after the work).
    pub(crate) fn after_drop(&mut self, after: impl Future<Output = ()> + Send + 'static) {
        self.after_drop = Some(Box::pin(after));
    }

    /// Waits until the work ends on its own (S3); pending forever once it has ended. Cancel
    /// safe: the task is polled by reference.
    pub(crate) async fn ended(&mut self) -> Ended {
        match &mut self.handle {
            Some(handle) => {
                let res = handle.await;
                self.handle = None;
                Ended::of(res)
            }
            None => std::future::pending().await,
        }
    }

    /// Ends the term: cancels the token, waits for the work at most the drain limit from the
    /// term's end (when it was noticed, `since`, or its valid-until instant if earlier), then
    /// aborts it and logs that (S6). Returns how it ended (`Returned` if it had already).
    pub(crate) async fn drain(&mut self, since: Instant) -> Ended {
        let since = *self.since.get_or_insert(since);
        self.term.token().cancel();
        let until = self.drain_until(since);
        let Some(handle) = self.handle.as_mut() else {
            return Ended::Returned;
        };
        let ended = drain(handle, until, self.limit, &self.label).await;
        self.handle = None;
        ended
    }
}

/// Awaits `handle` until `until`, then aborts it and waits at most `limit` more (S6); logs an
/// abort or a panic.
async fn drain(handle: &mut JoinHandle<()>, until: Instant, limit: Duration, label: &str) -> Ended {
    let ended = match tokio::time::timeout_at(until, &mut *handle).await {
        Ok(res) => Ended::of(res),
        Err(_) => {
            tracing::warn!(
                term = %label,
                ?limit,
                "the term's work outlived the drain limit after its term ended; aborting it (S6)"
            );
            handle.abort();
            // An aborted task ends at its next await; a task stuck in synchronous code cannot
            // be stopped from here, and is not waited for beyond the limit again.
            let _ = tokio::time::timeout(limit, &mut *handle).await;
            Ended::Aborted
        }
    };
    if let Ended::Panicked(msg) = &ended {
        tracing::error!(term = %label, panic = %msg, "the term's work panicked");
    }
    ended
}

impl Drop for Work {
    fn drop(&mut self) {
        self.term.token().cancel();
        let after = self.after_drop.take();
        let until = self.drain_until(self.since.unwrap_or_else(Instant::now));
        let Some(mut handle) = self.handle.take() else {
            return;
        };
        let (limit, label) = (self.limit, std::mem::take(&mut self.label));
        match tokio::runtime::Handle::try_current() {
            // The background task owns the bare handle, not a `Work`: dropping it unpolled
            // (a runtime shutting down) cannot spawn again.
            Ok(rt) => {
                rt.spawn(async move {
                    tracing::warn!(term = %label, "the run future was dropped during a term; stopping its work (S5)");
                    drain(&mut handle, until, limit, &label).await;
                    if let Some(after) = after {
                        after.await;
                    }
                });
            }
            // No runtime to wait on: the work cannot be awaited, only aborted.
            Err(_) => handle.abort(),
        }
    }
}
