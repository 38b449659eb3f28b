//! Sweeping without new arrivals (P3), and the sets' sizes as metrics.
//!
//! A shard of a [`ShardedSet`](super::ShardedSet) sweeps itself when it has doubled, which
//! needs new values: after a cache loses most of its objects (deletes, a relist's tombstones)
//! nothing arrives and the garbage would stay. So every set registers here, and each running
//! informer hosts a sweep task ([`sweep_in_background`]) that passes over every set when
//! informers have deleted objects (at most once per [`RELEASE_INTERVAL`]) and otherwise every
//! [`PERIOD`] (objects a handler held past the delete, a stopped informer's store), in rounds
//! until one frees nothing, so parts nested in freed parts go in the same pass. One pass
//! runs at a time in the process however many informers run (the other tasks wait for its
//! end on a notification, never polling); it locks one shard at a time
//! (O(shard), as an insert's own sweep does) and yields to the runtime between shards, so no
//! worker is held for a whole pool. The hot path pays one atomic add per batch that deleted.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The shortest time between two passes started by deletes.
pub(crate) const RELEASE_INTERVAL: Duration = Duration::from_secs(1);

/// A pass runs at least this often while any informer runs.
pub(crate) const PERIOD: Duration = Duration::from_secs(300);

/// What a pass and the metrics need of a set, whatever its entries.
pub(crate) trait Sweep: Send + Sync {
    /// Its shard count.
    fn shard_count(&self) -> usize;
    /// Drops the garbage of shard `i` (under that shard's lock alone); returns how many entries.
    fn sweep_shard(&self, i: usize) -> usize;
    /// Entries held, in use or not swept yet: O(shards).
    fn held(&self) -> usize;
}

/// Which set a registration is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The string interner (`IStr`).
    Strings,
    /// The pool of one type's `Shared` values.
    Shared(&'static str),
    /// A pool's table of recent encodings (P8): swept for dead slots, not a metric.
    Recent,
}

struct Registered {
    kind: Kind,
    set: Weak<dyn Sweep>,
}

/// Every set of the process (the interner and each type's pool), held weakly.
static SETS: Mutex<Vec<Registered>> = Mutex::new(Vec::new());
/// Objects deleted from caches since the last pass started.
static RELEASED: AtomicUsize = AtomicUsize::new(0);
/// Wakes the sweep tasks when objects were deleted.
static WAKE: Notify = Notify::const_new();
/// Whether a pass is running (one at a time in the process).
static PASSING: AtomicBool = AtomicBool::new(false);
/// Wakes the sweep tasks waiting for another task's pass to end.
static PASS_DONE: Notify = Notify::const_new();
/// When the last pass started.
static LAST_PASS: Mutex<Option<Instant>> = Mutex::new(None);
/// Passes run so far (a metric).
static PASSES: AtomicU64 = AtomicU64::new(0);

/// Registers a set for background passes and metrics. Held weakly: a dropped set leaves.
pub(crate) fn register(kind: Kind, set: &Arc<dyn Sweep>) {
    let mut sets = SETS.lock();
    sets.retain(|r| r.set.strong_count() > 0);
    sets.push(Registered {
        kind,
        set: Arc::downgrade(set),
    });
}

/// The live sets, in registration order.
fn sets() -> Vec<(Kind, Arc<dyn Sweep>)> {
    SETS.lock()
        .iter()
        .filter_map(|r| r.set.upgrade().map(|s| (r.kind, s)))
        .collect()
}

/// `n` cached objects were deleted: what only they used is garbage now. Cheap: an atomic add
/// and, for `n > 0`, a wake-up.
pub(crate) fn released(n: usize) {
    if n > 0 {
        RELEASED.fetch_add(n, Ordering::Relaxed);
        WAKE.notify_waiters();
    }
}

/// Resets [`PASSING`] when a pass ends, also when its task is cancelled mid-pass.
struct Pass;

impl Pass {
    fn begin() -> Option<Pass> {
        // Built only on success: a `Pass` made and dropped on failure would end the running
        // pass's claim, and two passes would run at once.
        if PASSING.swap(true, Ordering::AcqRel) {
            None
        } else {
            Some(Pass)
        }
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        PASSING.store(false, Ordering::Release);
        PASS_DONE.notify_waiters();
    }
}

/// Runs passes for as long as it is polled (an informer's run hosts it): one after deletes, at
/// most once per [`RELEASE_INTERVAL`], and one every [`PERIOD`] otherwise. Cancel-safe: a pass
/// cut short leaves the sets consistent (each shard sweep is one locked step).
pub(crate) async fn sweep_in_background() {
    let start = Instant::now();
    loop {
        let last = LAST_PASS.lock().unwrap_or(start);
        let notified = WAKE.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if RELEASED.load(Ordering::Relaxed) == 0 {
            tokio::select! {
                () = notified => {}
                () = tokio::time::sleep_until(last + PERIOD) => {}
            }
        }
        let last = LAST_PASS.lock().unwrap_or(start);
        tokio::time::sleep_until(last + RELEASE_INTERVAL).await;
        // Registered before the check, so a pass that ends in between still wakes this task.
        let done = PASS_DONE.notified();
        tokio::pin!(done);
        done.as_mut().enable();
        let Some(_pass) = Pass::begin() else {
            // Another task's pass runs: wait for its end, not in a loop (P3). It set
            // `LAST_PASS`, so the next round waits out the interval after it.
            #[cfg(test)]
            hooks::WAITED.with(|n| n.set(n.get() + 1));
            done.await;
            continue;
        };
        *LAST_PASS.lock() = Some(Instant::now());
        RELEASED.store(0, Ordering::Relaxed);
        let sets: Vec<Arc<dyn Sweep>> = sets().into_iter().map(|(_, set)| set).collect();
        pass(&sets).await;
        PASSES.fetch_add(1, Ordering::Relaxed);
        #[cfg(test)]
        hooks::PASSED.with(|n| n.set(n.get() + 1));
    }
}

/// One pass now, whatever the schedule: what the caller just dropped (a stopped factory and its
/// stores) is freed before this returns, not at the next [`PERIOD`]. If another pass is
/// running, it may have passed over those values while they were still in use, so this waits
/// for its end and runs one of its own after it.
pub(crate) async fn release_now() {
    loop {
        let done = PASS_DONE.notified();
        tokio::pin!(done);
        done.as_mut().enable();
        if let Some(_pass) = Pass::begin() {
            *LAST_PASS.lock() = Some(Instant::now());
            let sets: Vec<Arc<dyn Sweep>> = sets().into_iter().map(|(_, set)| set).collect();
            pass(&sets).await;
            PASSES.fetch_add(1, Ordering::Relaxed);
            return;
        }
        done.await;
    }
}

/// What the tests observe of the sweep tasks on their own thread (a current-thread runtime
/// runs them there), untouched by other tests' informers.
#[cfg(test)]
mod hooks {
    use std::cell::Cell;

    thread_local! {
        /// Times a sweep task of this thread found another task's pass running.
        pub(super) static WAITED: Cell<usize> = const { Cell::new(0) };
        /// Passes the sweep tasks of this thread ran.
        pub(super) static PASSED: Cell<usize> = const { Cell::new(0) };
    }
}

/// One pass over `sets`, in rounds: a swept value can hold the last use of another set's value
/// (a container's image string, a `RawJson` node's children), which only a later round frees,
/// so the rounds go on until one frees nothing (at most [`MAX_ROUNDS`]) and memory follows the
/// caches down in one pass rather than one nesting level per [`PERIOD`]. Yields to the runtime
/// between shards. Returns the rounds made.
pub(crate) async fn pass(sets: &[Arc<dyn Sweep>]) -> usize {
    for round in 1..=MAX_ROUNDS {
        let mut freed = 0;
        for set in sets {
            for shard in 0..set.shard_count() {
                freed += set.sweep_shard(shard);
                tokio::task::yield_now().await;
            }
        }
        if freed == 0 {
            return round;
        }
    }
    MAX_ROUNDS
}

/// The most rounds one pass makes: a value nested this deep in shared values (a `RawJson` tree
/// of managedFields is about 8 levels) is freed by one pass; a deeper one by the next.
const MAX_ROUNDS: usize = 16;

/// Encodes the sets' sizes (P3): `informer_interned_strings` (the interner),
/// `informer_shared_values{type}` (each type's pool), both counting entries in use or not swept
/// yet, and `informer_pool_sweeps_total` (background passes).
pub(crate) fn encode(encoder: &mut DescriptorEncoder<'_>) -> Result<(), std::fmt::Error> {
    let sets = sets();
    let strings: usize = sets
        .iter()
        .filter(|(kind, _)| *kind == Kind::Strings)
        .map(|(_, set)| set.held())
        .sum();
    let gauge = |n: usize| ConstGauge::new(i64::try_from(n).unwrap_or(i64::MAX));
    gauge(strings).encode(encoder.encode_descriptor(
        "informer_interned_strings",
        "Distinct strings the process-wide interner holds, in use or not swept yet (P3)",
        None,
        MetricType::Gauge,
    )?)?;
    let mut family = encoder.encode_descriptor(
        "informer_shared_values",
        "Distinct values a type's sharing pool holds, in use or not swept yet (P3, decision record 18)",
        None,
        MetricType::Gauge,
    )?;
    // One series per type, should a type have several pools.
    let mut per_type = std::collections::BTreeMap::<&str, usize>::new();
    for (kind, set) in &sets {
        if let Kind::Shared(name) = kind {
            *per_type.entry(*name).or_default() += set.held();
        }
    }
    for (name, held) in per_type {
        gauge(held).encode(family.encode_family(&[("type", name)])?)?;
    }
    ConstCounter::new(PASSES.load(Ordering::Relaxed)).encode(encoder.encode_descriptor(
        "informer_pool_sweeps",
        "Background passes that swept the interner and the sharing pools (P3)",
        None,
        MetricType::Counter,
    )?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::until;
    use std::cell::Cell;

    /// P3: a sweep task that finds another task's pass running waits for its end without
    /// spinning (it is woken once, not polled in a loop), and runs its own pass after it.
    #[tokio::test]
    async fn p3_a_sweep_task_waits_for_a_running_pass_without_spinning() {
        let limit = Duration::from_secs(10);
        // Another test's informer may be passing: take the pass once it is free.
        let held = tokio::time::timeout(limit, async {
            loop {
                if let Some(pass) = Pass::begin() {
                    break pass;
                }
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the pass is free within the limit");
        // A pass is due now: objects were deleted, and the interval since the last is over.
        *LAST_PASS.lock() = Instant::now().checked_sub(2 * RELEASE_INTERVAL);
        released(1);
        let waited = || hooks::WAITED.with(Cell::get);
        let passed = || hooks::PASSED.with(Cell::get);
        let before = (waited(), passed());
        let task = tokio::spawn(sweep_in_background());
        assert!(
            until(limit, || waited() > before.0).await,
            "the task met the held pass"
        );
        // The held pass goes on; a spinning task would find it again on every poll.
        for _ in 0..200 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            waited() - before.0,
            1,
            "woken in a loop while the pass is held"
        );
        assert_eq!(passed(), before.1);
        drop(held);
        assert!(
            until(limit, || passed() > before.1).await,
            "the task ran its pass"
        );
        task.abort();
    }
}
