//! Every shard owned (S12) against informer-testserver: real `ShardAssigner`s over HTTP go
//! through joins, graceful leaves, crashes and a rollout that changes the shard count, with more
//! replicas than shards, fewer, and counts that do not divide. The work of every replica is
//! recorded as intervals over the hash space; afterwards every part of the hash space must have
//! been without running work for at most a lease duration plus a round at a time (the bound a
//! crash costs), no two replicas may have run overlapping ranges at once (S1), and each replica's
//! `shard_set_unowned_shards` gauge must read 0 once the set has settled and have seen the gaps.
//!
//! Run with `cargo test -p informer-controller --test shard_coverage`.

// Test helpers outside #[test] fns may unwrap too (clippy's test allowance covers only #[test]).
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use informer_controller::shards::{ShardAssigner, ShardSetMetrics};
use informer_testserver::TestServer;
use prometheus_client::registry::Registry;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::ownership::{Interval, Ownership};
use support::*;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const NS: &str = "default";

/// The longest time each cell went without running work between `from` and `to`, and where.
fn longest_gap(
    all: &[Interval],
    cells: u64,
    from: Instant,
    to: Instant,
) -> (Duration, u64, Instant) {
    let mut worst = (Duration::ZERO, 0, from);
    for cell in 0..cells {
        let mut spans: Vec<(Instant, Instant)> = all
            .iter()
            .filter(|i| i.holds(cell, cells))
            .map(|i| (i.start.max(from), i.stop.unwrap_or(to).min(to)))
            .filter(|(a, b)| a < b)
            .collect();
        spans.sort();
        let mut at = from;
        for (a, b) in spans.into_iter().chain([(to, to)]) {
            if a > at && a - at > worst.0 {
                worst = (a - at, cell, at);
            }
            at = at.max(b);
        }
    }
    worst
}

struct Replica {
    name: String,
    assigner: Arc<ShardAssigner>,
    cancel: CancellationToken,
    task: JoinHandle<()>,
    /// The highest `unowned` this replica's gauge showed.
    max_unowned: Arc<AtomicU32>,
}

struct Sim {
    server: TestServer,
    world: Arc<Ownership>,
    metrics: ShardSetMetrics,
    registry: Registry,
    set: &'static str,
    replicas: Vec<Replica>,
    next: u32,
}

impl Sim {
    async fn new(set: &'static str) -> Self {
        init_tracing();
        let mut registry = Registry::default();
        let metrics = ShardSetMetrics::new(&mut registry);
        Sim {
            server: TestServer::start().await.unwrap(),
            world: Ownership::new(),
            metrics,
            registry,
            set,
            replicas: Vec::new(),
            next: 0,
        }
    }

    /// A new replica of a `count`-shard view, with a client of its own (so a crash can cut it).
    fn join(&mut self, count: u32) {
        self.next += 1;
        let name = format!("r{}", self.next);
        let assigner = Arc::new(
            ShardAssigner::new(
                client_with_agent(&self.server, &name),
                NS,
                self.set,
                name.clone(),
                count,
                fast(),
            )
            .unwrap()
            .metrics(&self.metrics),
        );
        let max_unowned = Arc::new(AtomicU32::new(0));
        let mut gauge = assigner.subscribe_unowned();
        let seen = Arc::clone(&max_unowned);
        tokio::spawn(async move {
            while gauge.changed().await.is_ok() {
                seen.fetch_max(*gauge.borrow_and_update(), Ordering::SeqCst);
            }
        });
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (a, cancel, world, replica) = (
                Arc::clone(&assigner),
                cancel.clone(),
                Arc::clone(&self.world),
                name.clone(),
            );
            async move {
                a.run(cancel, move |index, owned| {
                    let running = world.begin(&replica, count, index);
                    async move {
                        let _running = running;
                        owned.cancelled().await;
                    }
                })
                .await
                .unwrap();
            }
        });
        self.replicas.push(Replica {
            name,
            assigner,
            cancel,
            task,
            max_unowned,
        });
    }

    /// Replica `i` stops gracefully: its work drains, its Leases are released and its
    /// heartbeat deleted.
    async fn leave(&mut self, i: usize) {
        let r = self.replicas.remove(i);
        r.cancel.cancel();
        within("a replica to leave", r.task).await.unwrap();
    }

    /// Replica `i` crashes: from now on none of its requests is answered, and its work stops;
    /// its Leases stay held until they expire.
    async fn crash(&mut self, i: usize) {
        let r = self.replicas.remove(i);
        self.server.faults().refuse_user_agent(&r.name);
        r.cancel.cancel();
        within("a replica to crash", r.task).await.unwrap();
    }

    /// Waits until running work covers the hash space (`cells` cells) and every replica's
    /// gauge reads 0.
    async fn settled(&self, cells: u64, what: &str) {
        let mut changed = self.world.changed.subscribe();
        let settled = async {
            loop {
                let gauges = self.replicas.iter().all(|r| r.assigner.unowned() == 0);
                if self.world.covered_now(cells) && gauges {
                    return;
                }
                // Gauges change every round, work on its own: wake on either.
                tokio::select! {
                    _ = changed.changed() => {}
                    () = tokio::time::sleep(fast().retry_period) => {}
                }
            }
        };
        if tokio::time::timeout(WAIT, settled).await.is_err() {
            panic!(
                "{what}: not settled; gauges {:?}, intervals {:#?}",
                self.replicas
                    .iter()
                    .map(|r| (&r.name, r.assigner.unowned()))
                    .collect::<Vec<_>>(),
                self.world.snapshot()
            );
        }
    }

    /// After the scenario: no part of the hash space went without work for longer than a lease
    /// duration plus a round after `from`, and no two replicas ever ran the same part at once.
    async fn check(self, cells: u64, from: Instant) {
        let to = Instant::now();
        let all = self.world.snapshot();
        let (gap, cell, at) = longest_gap(&all, cells, from, to);
        let config = fast();
        // A crash: the survivors saw the last renewal up to a round after it was written, and
        // take the shard in the round at its expiry by their clock; plus the requests.
        let bound = config.lease_duration + config.retry_period * 2 + Duration::from_millis(400);
        eprintln!(
            "{}: longest time without work: {gap:?} (cell {cell} of {cells}, {:?} in)",
            self.set,
            at - from
        );
        assert!(
            gap <= bound,
            "S12: cell {cell} of {cells} had no work for {gap:?} from {:?} in (bound {bound:?}): {all:#?}",
            at - from
        );
        self.world.assert_exclusive();
        let text = scrape(&self.registry);
        for r in &self.replicas {
            let series = format!(
                "shard_set_unowned_shards{{set=\"{}\",replica=\"{}\"}}",
                self.set, r.name
            );
            assert_eq!(sample(&text, &series), Some(0.0), "{series} in\n{text}");
        }
        for r in self.replicas {
            r.cancel.cancel();
            within("a replica to stop", r.task).await.unwrap();
        }
    }
}

/// A random walk of joins, leaves and crashes over `shards` shards starting from `start`
/// replicas (seeded: the same steps each run). Each step waits for the set to settle.
async fn walk(set: &'static str, shards: u32, start: usize, steps: usize, seed: u64) {
    let mut sim = Sim::new(set).await;
    let cells = u64::from(shards);
    for _ in 0..start {
        sim.join(shards);
    }
    sim.settled(cells, "start").await;
    let from = Instant::now();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut crashed_gauge = false;
    for step in 0..steps {
        let n = sim.replicas.len();
        let what = match rng.random_range(0..3) {
            _ if n <= 1 => 0,
            choice => choice,
        };
        let i = rng.random_range(0..n);
        let label = match what {
            0 => {
                sim.join(shards);
                "join"
            }
            1 => {
                sim.leave(i).await;
                "leave"
            }
            _ => {
                let held = !sim.replicas[i].assigner.owned().is_empty();
                for r in &sim.replicas {
                    r.max_unowned.store(0, Ordering::SeqCst);
                }
                sim.crash(i).await;
                sim.settled(cells, "after a crash").await;
                // A crashed owner's shards showed in some survivor's gauge until taken over.
                if held {
                    crashed_gauge |= sim
                        .replicas
                        .iter()
                        .any(|r| r.max_unowned.load(Ordering::SeqCst) > 0);
                    assert!(
                        crashed_gauge,
                        "S12: no gauge showed the crashed owner's shards"
                    );
                }
                "crash"
            }
        };
        eprintln!(
            "{set} step {step}: {label}, {} replicas",
            sim.replicas.len()
        );
        sim.settled(cells, label).await;
    }
    sim.check(cells, from).await;
}

/// More replicas than shards: 5 replicas over 3 shards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s12_more_replicas_than_shards() {
    walk("more", 3, 5, 10, 7).await;
}

/// Fewer replicas than shards, and counts that do not divide: 3 replicas over 5 shards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s12_fewer_replicas_than_shards_not_dividing() {
    walk("fewer", 5, 3, 10, 11).await;
}

/// A rollout that changes the shard count from 4 to 6: two replicas of the new view join
/// (they own nothing while the 4-shard view holds the set, S1), the old replicas leave one by
/// one, a new one crashes and another joins. The hash space (12 cells: both views' ranges)
/// never goes without work for longer than a lease duration and a round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s12_a_rollout_from_four_to_six_shards() {
    let mut sim = Sim::new("rollout").await;
    let cells = 12;
    sim.join(4);
    sim.join(4);
    sim.settled(cells, "the old view").await;
    let from = Instant::now();
    sim.join(6);
    sim.join(6);
    // The new replicas heartbeat; the old view keeps the whole range.
    sim.settled(cells, "the new replicas joined").await;
    assert!(
        sim.replicas[2..]
            .iter()
            .all(|r| r.assigner.owned().is_empty())
    );
    sim.leave(0).await;
    sim.settled(cells, "one old replica left").await;
    sim.leave(0).await;
    sim.settled(cells, "the last old replica left").await;
    assert!(sim.replicas.iter().all(|r| !r.assigner.owned().is_empty()));
    sim.crash(0).await;
    sim.settled(cells, "a new replica crashed").await;
    sim.join(6);
    sim.settled(cells, "a new replica joined").await;
    sim.check(cells, from).await;
}
