//! Every replica's ownership intervals in a shard set test: when each replica's work for each
//! shard (of its view's count) ran, with waits on them and the checks the tests make (S1, S2,
//! S12).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use tokio::sync::watch;

use super::WAIT;

/// When one replica's work for one shard ran.
#[derive(Debug, Clone)]
pub struct Interval {
    pub replica: String,
    /// The shard count of the replica's view, and the shard.
    pub count: u32,
    pub index: u32,
    pub start: Instant,
    pub stop: Option<Instant>,
}

impl Interval {
    /// Whether the two hash ranges `index/count` overlap (`Shard::of` splits the space evenly).
    pub fn ranges_overlap(&self, other: &Interval) -> bool {
        let (a, b) = (u64::from(self.index), u64::from(other.index));
        let (ca, cb) = (u64::from(self.count), u64::from(other.count));
        a * cb < (b + 1) * ca && b * ca < (a + 1) * cb
    }

    /// Whether the interval's range holds cell `cell` of `cells` (a multiple of its count).
    pub fn holds(&self, cell: u64, cells: u64) -> bool {
        let per = cells / u64::from(self.count);
        cell / per == u64::from(self.index)
    }

    pub fn times_overlap(&self, other: &Interval) -> bool {
        let end = |i: &Interval| i.stop.unwrap_or_else(Instant::now);
        self.start < end(other) && other.start < end(self)
    }
}

/// Every replica's ownership intervals, with waits on them.
pub struct Ownership {
    intervals: Mutex<Vec<Interval>>,
    /// Bumped on every start and stop.
    pub changed: watch::Sender<u64>,
}

/// Closes its interval when dropped: when the work's future ends or is aborted.
pub struct Owning {
    own: Arc<Ownership>,
    at: usize,
}

impl Drop for Owning {
    fn drop(&mut self) {
        self.own.intervals.lock()[self.at].stop = Some(Instant::now());
        self.own.changed.send_modify(|n| *n += 1);
    }
}

impl Ownership {
    pub fn new() -> Arc<Self> {
        Arc::new(Ownership {
            intervals: Mutex::new(Vec::new()),
            changed: watch::Sender::new(0),
        })
    }

    pub fn begin(self: &Arc<Self>, replica: &str, count: u32, index: u32) -> Owning {
        let at = {
            let mut all = self.intervals.lock();
            all.push(Interval {
                replica: replica.to_owned(),
                count,
                index,
                start: Instant::now(),
                stop: None,
            });
            all.len() - 1
        };
        self.changed.send_modify(|n| *n += 1);
        Owning {
            own: Arc::clone(self),
            at,
        }
    }

    pub fn snapshot(&self) -> Vec<Interval> {
        self.intervals.lock().clone()
    }

    /// Every pair of intervals of different replicas that overlap in time and range (S1, S2).
    pub fn overlaps(&self) -> Vec<String> {
        let all = self.snapshot();
        let mut out = Vec::new();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                if a.replica != b.replica && a.ranges_overlap(b) && a.times_overlap(b) {
                    out.push(format!("{a:?} overlaps {b:?}"));
                }
            }
        }
        out
    }

    pub fn assert_exclusive(&self) {
        let overlaps = self.overlaps();
        assert!(overlaps.is_empty(), "overlapping ownership: {overlaps:#?}");
    }

    /// Whether running work covers every one of `cells` cells of the hash space now.
    pub fn covered_now(&self, cells: u64) -> bool {
        let all = self.snapshot();
        (0..cells).all(|c| all.iter().any(|i| i.stop.is_none() && i.holds(c, cells)))
    }

    /// The shards whose work runs now on `replica`.
    pub fn running(&self, replica: &str) -> BTreeSet<u32> {
        self.snapshot()
            .iter()
            .filter(|i| i.replica == replica && i.stop.is_none())
            .map(|i| i.index)
            .collect()
    }

    /// Waits until `cond` holds for the intervals; panics after [`WAIT`].
    pub async fn wait_until(&self, what: &str, cond: impl Fn(&[Interval]) -> bool) {
        let mut rx = self.changed.subscribe();
        let wait = async {
            loop {
                rx.borrow_and_update();
                if cond(&self.snapshot()) {
                    return;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        };
        if tokio::time::timeout(WAIT, wait).await.is_err() {
            panic!("timed out waiting for {what}: {:#?}", self.snapshot());
        }
    }
}
