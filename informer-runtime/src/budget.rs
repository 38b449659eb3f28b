//! A bound on the objects a set of informers holds (decision record 30).
//!
//! A [`CacheBudget`] is shared by the informers it bounds (every informer of a factory with
//! [`SharedInformerFactoryBuilder::cache_budget`](crate::factory::SharedInformerFactoryBuilder::cache_budget),
//! one cluster's in a fleet). Each informer's reflector charges it from inside, as objects
//! arrive, so a list is stopped while it is read, not once it is applied:
//!
//! - **B1.** An informer holds `max(cached, listing)` objects: what its last complete list left
//!   in the cache, adjusted by live `ADDED` and `DELETED` events, and the list it is reading now.
//!   A relist shares each unchanged object with the cache (M8), so an object counts once.
//! - **B2.** A list (paged LIST or watch-list stream) that would take the budget's total past
//!   its limit is abandoned: it is charged object by object as each is decoded, each object past
//!   the limit is dropped at once (a LIST decodes the rest of its page, dropping it, then stops),
//!   what it read is dropped, the cache keeps what it held (nothing, for an initial list, so the
//!   informer does not sync), and the reflector starts a new cycle after its backoff (R1, R15).
//! - **B3.** A live `ADDED` event that takes the total past the limit is applied (dropping it
//!   would make the cache wrong), and reported like B2.
//! - **B4.** Each time, the budget records a [`Breach`] and wakes [`CacheBudget::breached`];
//!   what to do about it is its owner's: informer-controller's `Fleet` backs the cluster off,
//!   which stops its informers and frees their caches.
//!
//! # Example
//!
//! ```
//! use informer_runtime::budget::CacheBudget;
//!
//! let budget = CacheBudget::objects(50_000);
//! assert_eq!(budget.limit(), 50_000);
//! assert_eq!(budget.used(), 0);
//! assert!(budget.last_breach().is_none());
//! // let factory = SharedInformerFactory::builder(client).cache_budget(budget.clone()).build();
//! ```

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;
use tokio::sync::watch;

/// A cap on the objects the informers that share it hold together (see the [module](self)).
/// Cheap to clone; every clone is the same budget.
#[derive(Clone)]
pub struct CacheBudget {
    inner: Arc<Inner>,
}

struct Inner {
    limit: usize,
    used: AtomicUsize,
    breaches: AtomicU64,
    last: Mutex<Option<Breach>>,
    /// The breach count, for [`CacheBudget::breached`].
    notify: watch::Sender<u64>,
}

/// An informer's charge that would have taken a [`CacheBudget`] past its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breach {
    /// The informer (its reflector's name).
    pub informer: String,
    /// The budget's total with the charge.
    pub wanted: usize,
    /// The budget's limit.
    pub limit: usize,
    /// Whether the objects were kept (a live event, B3) or dropped (a list, B2).
    pub applied: bool,
}

impl fmt::Display for Breach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.applied {
            "a live event, applied (B3)"
        } else {
            "its list was dropped (B2)"
        };
        write!(
            f,
            "{} would take its cache budget to {} objects, past its limit of {}: {what}",
            self.informer, self.wanted, self.limit
        )
    }
}

impl std::error::Error for Breach {}

impl CacheBudget {
    /// A budget of `limit` objects.
    pub fn objects(limit: usize) -> Self {
        CacheBudget {
            inner: Arc::new(Inner {
                limit,
                used: AtomicUsize::new(0),
                breaches: AtomicU64::new(0),
                last: Mutex::new(None),
                notify: watch::Sender::new(0),
            }),
        }
    }

    /// The limit, in objects.
    pub fn limit(&self) -> usize {
        self.inner.limit
    }

    /// The objects its informers hold now (B1).
    pub fn used(&self) -> usize {
        self.inner.used.load(Ordering::Relaxed)
    }

    /// How many breaches there have been.
    pub fn breaches(&self) -> u64 {
        self.inner.breaches.load(Ordering::Relaxed)
    }

    /// The latest breach, if any.
    pub fn last_breach(&self) -> Option<Breach> {
        self.inner.last.lock().clone()
    }

    /// Resolves with the latest breach once there has been one (at once if there was).
    pub async fn breached(&self) -> Breach {
        let mut rx = self.inner.notify.subscribe();
        loop {
            // The sender lives in `self`, so the channel never closes while this waits.
            if rx.wait_for(|n| *n > 0).await.is_err() {
                std::future::pending::<()>().await;
            }
            if let Some(breach) = self.last_breach() {
                return breach;
            }
        }
    }

    /// An account for one informer's reflector, charging nothing yet.
    pub(crate) fn account(&self, informer: &str) -> Account {
        Account {
            budget: self.clone(),
            informer: informer.to_string(),
            counts: Mutex::new(Counts::default()),
        }
    }

    fn record(&self, breach: Breach) {
        tracing::warn!(error = %breach, "cache budget exceeded");
        *self.inner.last.lock() = Some(breach);
        self.inner.breaches.fetch_add(1, Ordering::Relaxed);
        self.inner.notify.send_modify(|n| *n += 1);
    }
}

impl fmt::Debug for CacheBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheBudget")
            .field("limit", &self.limit())
            .field("used", &self.used())
            .field("breaches", &self.breaches())
            .finish()
    }
}

/// One reflector's charge on a [`CacheBudget`] (B1); dropping it gives the charge back. The
/// reflector's task changes it, and a paged LIST's page tasks on the decode pool too
/// ([`ListCharge`]), so its counts sit behind a lock; the budget's total is shared.
pub(crate) struct Account {
    budget: CacheBudget,
    informer: String,
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    cached: usize,
    listing: usize,
    /// What is charged now: `max(cached, listing)`.
    held: usize,
}

impl Account {
    /// The list being read holds `n` objects so far; refused if it would breach (B2).
    pub(crate) fn listing(&self, n: usize) -> Result<(), Breach> {
        let mut counts = self.counts.lock();
        let cached = counts.cached;
        self.charge(&mut counts, cached, n, false)
    }

    /// The list was abandoned: its objects are gone.
    pub(crate) fn abandon(&self) {
        let mut counts = self.counts.lock();
        let cached = counts.cached;
        let _ = self.charge(&mut counts, cached, 0, true);
    }

    /// A complete list of `n` objects replaced the cache.
    pub(crate) fn replaced(&self, n: usize) {
        let _ = self.charge(&mut self.counts.lock(), n, 0, true);
    }

    /// A live `ADDED` event: applied whatever the budget says (B3).
    pub(crate) fn added(&self) {
        let mut counts = self.counts.lock();
        let (cached, listing) = (counts.cached.saturating_add(1), counts.listing);
        let _ = self.charge(&mut counts, cached, listing, true);
    }

    /// A live `DELETED` event.
    pub(crate) fn deleted(&self) {
        let mut counts = self.counts.lock();
        let (cached, listing) = (counts.cached.saturating_sub(1), counts.listing);
        let _ = self.charge(&mut counts, cached, listing, true);
    }

    /// Moves the charge to `max(cached, listing)`. Growth past the limit is recorded as a
    /// breach; it is refused (nothing changes) unless `apply`.
    fn charge(
        &self,
        counts: &mut Counts,
        cached: usize,
        listing: usize,
        apply: bool,
    ) -> Result<(), Breach> {
        let inner = &self.budget.inner;
        let want = cached.max(listing);
        if want > counts.held {
            let grow = want - counts.held;
            let total = inner.used.fetch_add(grow, Ordering::Relaxed) + grow;
            if total > inner.limit {
                let breach = Breach {
                    informer: self.informer.clone(),
                    wanted: total,
                    limit: inner.limit,
                    applied: apply,
                };
                self.budget.record(breach.clone());
                if !apply {
                    inner.used.fetch_sub(grow, Ordering::Relaxed);
                    return Err(breach);
                }
            }
        } else {
            inner.used.fetch_sub(counts.held - want, Ordering::Relaxed);
        }
        *counts = Counts {
            cached,
            listing,
            held: want,
        };
        Ok(())
    }
}

impl Drop for Account {
    fn drop(&mut self) {
        let held = self.counts.get_mut().held;
        self.budget.inner.used.fetch_sub(held, Ordering::Relaxed);
    }
}

/// One list's charge, object by object, from every page task of the list (B2): past the
/// budget, each further object is dropped as soon as it is decoded, never held, and the list
/// is abandoned when its page ends.
pub(crate) struct ListCharge {
    account: Arc<Account>,
    /// The objects kept so far, and the breach that stopped the list once one did.
    state: Mutex<(usize, Option<Breach>)>,
}

impl ListCharge {
    pub(crate) fn new(account: Arc<Account>) -> Self {
        ListCharge {
            account,
            state: Mutex::new((0, None)),
        }
    }

    /// Whether one more decoded object may be kept; false once the list went past the budget.
    pub(crate) fn admit(&self) -> bool {
        let mut state = self.state.lock();
        let (kept, breach) = &mut *state;
        if breach.is_some() {
            return false;
        }
        match self.account.listing(*kept + 1) {
            Ok(()) => {
                *kept += 1;
                true
            }
            Err(b) => {
                *breach = Some(b);
                false
            }
        }
    }

    /// The breach that stopped the list, if one did.
    pub(crate) fn breach(&self) -> Option<Breach> {
        self.state.lock().1.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_list_past_the_limit_is_refused_and_recorded() {
        let budget = CacheBudget::objects(10);
        let a = budget.account("pods");
        a.listing(6).unwrap();
        let b = budget.account("configmaps");
        b.listing(4).unwrap();
        assert_eq!(budget.used(), 10);
        let breach = b.listing(5).unwrap_err();
        assert_eq!(
            (breach.wanted, breach.limit, breach.applied),
            (11, 10, false)
        );
        assert_eq!(budget.used(), 10, "a refused charge is not kept");
        assert_eq!(budget.breaches(), 1);
        b.abandon();
        assert_eq!(budget.used(), 6);
        a.replaced(6);
        // B1: a relist of the same objects shares them with the cache.
        a.listing(6).unwrap();
        assert_eq!(budget.used(), 6);
        drop(a);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn live_growth_is_applied_and_recorded() {
        let budget = CacheBudget::objects(2);
        let a = budget.account("pods");
        a.replaced(2);
        a.added();
        assert_eq!(budget.used(), 3);
        let breach = budget.last_breach().unwrap();
        assert!(breach.applied);
        a.deleted();
        a.deleted();
        assert_eq!(budget.used(), 1);
    }

    #[tokio::test]
    async fn breached_resolves_for_a_breach_before_or_after_the_call() {
        let budget = CacheBudget::objects(1);
        let waiter = tokio::spawn({
            let budget = budget.clone();
            async move { budget.breached().await }
        });
        let a = budget.account("pods");
        assert!(a.listing(2).is_err());
        let breach = tokio::time::timeout(std::time::Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(breach.informer, "pods");
        // Already breached: at once.
        assert_eq!(budget.breached().await, breach);
    }

    #[derive(Debug, Clone)]
    enum Op {
        Listing(usize, usize),
        Abandon(usize),
        Replaced(usize, usize),
        Added(usize),
        Deleted(usize),
        Drop(usize),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (0..3usize, 0..40usize).prop_map(|(a, n)| Op::Listing(a, n)),
            (0..3usize).prop_map(Op::Abandon),
            (0..3usize, 0..40usize).prop_map(|(a, n)| Op::Replaced(a, n)),
            (0..3usize).prop_map(Op::Added),
            (0..3usize).prop_map(Op::Deleted),
            (0..3usize).prop_map(Op::Drop),
        ]
    }

    proptest! {
        /// Against a model of three informers' (cached, listing) pairs: the total is the sum
        /// of their maxima (B1), a refused list changes nothing (B2), and the total stays
        /// within the limit unless a live event (B3) or a replace took it past.
        #[test]
        fn the_total_is_the_sum_of_each_informers_maximum(ops in proptest::collection::vec(op(), 0..60)) {
            let budget = CacheBudget::objects(50);
            let mut accounts: Vec<Option<Account>> =
                (0..3).map(|i| Some(budget.account(&format!("i{i}")))).collect();
            let mut model = [(0usize, 0usize); 3];
            let total = |m: &[(usize, usize); 3]| m.iter().map(|(c, l)| *c.max(l)).sum::<usize>();
            for op in ops {
                match op {
                    Op::Listing(i, n) => {
                        let Some(a) = &accounts[i] else { continue };
                        let mut next = model;
                        next[i].1 = n;
                        let grows = next[i].0.max(n) > model[i].0.max(model[i].1);
                        let over = total(&next) > 50;
                        let refused = a.listing(n).is_err();
                        prop_assert_eq!(refused, grows && over);
                        if !refused {
                            model = next;
                        }
                    }
                    Op::Abandon(i) => {
                        let Some(a) = &accounts[i] else { continue };
                        a.abandon();
                        model[i].1 = 0;
                    }
                    Op::Replaced(i, n) => {
                        let Some(a) = &accounts[i] else { continue };
                        a.replaced(n);
                        model[i] = (n, 0);
                    }
                    Op::Added(i) => {
                        let Some(a) = &accounts[i] else { continue };
                        a.added();
                        model[i].0 += 1;
                    }
                    Op::Deleted(i) => {
                        let Some(a) = &accounts[i] else { continue };
                        a.deleted();
                        model[i].0 = model[i].0.saturating_sub(1);
                    }
                    Op::Drop(i) => {
                        accounts[i] = None;
                        model[i] = (0, 0);
                    }
                }
                prop_assert_eq!(budget.used(), total(&model));
            }
        }
    }
}
