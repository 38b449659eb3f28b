//! Property tests of the workqueue against a reference model (W1, W2, W3, W9).
//!
//! Each property builds its own current-thread tokio runtime; the delaying-queue property runs on
//! paused time, so its sleeps only advance the virtual clock.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::Duration;

use futures::FutureExt;
use informer_workqueue::{DelayingQueue, WorkQueue};
use proptest::prelude::*;
use tokio::time::Instant;

#[derive(Clone, Debug)]
enum Op {
    Add(u8),
    Get,
    /// Finish the n-th (modulo) item in processing, in key order.
    Done(usize),
    ShutDown,
    /// `shut_down_with_drain`, polled once: whether it returns at once.
    Drain,
    Pause,
    Resume,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..6).prop_map(Op::Add),
        4 => Just(Op::Get),
        3 => any::<usize>().prop_map(Op::Done),
        1 => Just(Op::ShutDown),
        1 => Just(Op::Drain),
        2 => Just(Op::Pause),
        2 => Just(Op::Resume),
    ]
}

/// The W1/W2/W9 reference model: FIFO plus dirty and processing sets, and the pause flag.
#[derive(Default)]
struct Model {
    queue: VecDeque<u8>,
    dirty: HashSet<u8>,
    processing: HashSet<u8>,
    shutting_down: bool,
    paused: bool,
}

impl Model {
    fn add(&mut self, k: u8) {
        if self.shutting_down || !self.dirty.insert(k) {
            return;
        }
        if !self.processing.contains(&k) {
            self.queue.push_back(k);
        }
    }

    /// `None`: would block; `Some(None)`: shut down; `Some(Some(k))`: an item. A paused queue
    /// hands nothing out, not even on shutdown (W9).
    fn get(&mut self) -> Option<Option<u8>> {
        let next = if self.paused {
            None
        } else {
            self.queue.pop_front()
        };
        match next {
            Some(k) => {
                self.dirty.remove(&k);
                assert!(self.processing.insert(k), "model handed out a key twice");
                Some(Some(k))
            }
            None => self.shutting_down.then_some(None),
        }
    }

    fn done(&mut self, k: u8) {
        if self.processing.remove(&k) && self.dirty.contains(&k) {
            self.queue.push_back(k);
        }
    }

    /// Whether a draining shutdown has nothing left to wait for: nothing in flight, and
    /// nothing queued that a worker could take (W2, W9).
    fn drained(&self) -> bool {
        self.processing.is_empty() && (self.queue.is_empty() || self.paused)
    }
}

fn runtime(paused: bool) -> tokio::runtime::Runtime {
    let mut b = tokio::runtime::Builder::new_current_thread();
    b.enable_time();
    if paused {
        b.start_paused(true);
    }
    b.build().expect("a current-thread runtime always builds")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// W1/W2/W9: the queue matches the model step by step, paused or not; a key is never handed
    /// out while it is being processed; every add is followed by a `get` of that key once the
    /// queue is resumed; shutdown drains.
    #[test]
    fn w1_w2_queue_matches_model(ops in proptest::collection::vec(op(), 1..80)) {
        runtime(false).block_on(async {
            let q = WorkQueue::new();
            let mut model = Model::default();
            // Step of the last accepted add and the last get, per key.
            let mut last_add: HashMap<u8, usize> = HashMap::new();
            let mut last_get: HashMap<u8, usize> = HashMap::new();
            for (step, op) in ops.iter().enumerate() {
                match *op {
                    Op::Add(k) => {
                        if !model.shutting_down {
                            last_add.insert(k, step);
                        }
                        q.add(k);
                        model.add(k);
                    }
                    Op::Get => {
                        let got = q.get().now_or_never();
                        let want = model.get();
                        prop_assert_eq!(got, want);
                        if let Some(Some(k)) = got {
                            last_get.insert(k, step);
                        }
                    }
                    Op::Done(n) => {
                        let mut keys: Vec<_> = model.processing.iter().copied().collect();
                        keys.sort_unstable();
                        if let Some(&k) = keys.get(n % keys.len().max(1)) {
                            q.done(&k);
                            model.done(k);
                        }
                    }
                    Op::ShutDown => {
                        q.shut_down();
                        model.shutting_down = true;
                    }
                    Op::Drain => {
                        let returned = q.shut_down_with_drain().now_or_never().is_some();
                        model.shutting_down = true;
                        prop_assert_eq!(returned, model.drained());
                    }
                    Op::Pause => {
                        q.pause();
                        model.paused = true;
                    }
                    Op::Resume => {
                        q.resume();
                        model.paused = false;
                    }
                }
                prop_assert_eq!(q.len(), model.queue.len());
            }
            // A paused, shut-down queue hands out nothing (W9); resuming it drains (W2).
            q.shut_down();
            model.shutting_down = true;
            if model.paused {
                prop_assert_eq!(q.get().now_or_never(), Some(None));
            }
            q.resume();
            model.paused = false;
            // Drain: finish what is in flight, then take everything left (W2).
            let mut step = ops.len();
            let in_flight: Vec<_> = model.processing.iter().copied().collect();
            for k in in_flight {
                q.done(&k);
                model.done(k);
            }
            loop {
                step += 1;
                let got = q.get().now_or_never();
                prop_assert_eq!(got, model.get());
                match got {
                    Some(Some(k)) => {
                        last_get.insert(k, step);
                        q.done(&k);
                        model.done(k);
                    }
                    Some(None) => break,
                    None => prop_assert!(false, "get blocked on a shut-down queue with work left"),
                }
            }
            for (k, added) in &last_add {
                prop_assert!(
                    last_get.get(k).is_some_and(|got| got > added),
                    "key {} added at step {} was not processed afterwards", k, added
                );
            }
            prop_assert!(q.is_empty());
            Ok(())
        })?;
    }

    /// W3: with many `add_after` calls between clock advances, each key becomes ready at the
    /// earliest ready time requested while it was waiting.
    #[test]
    fn w3_delaying_queue_keeps_the_earliest_ready_time(
        ops in proptest::collection::vec((0u8..5, 0u64..30, 0u64..4), 1..40)
    ) {
        runtime(true).block_on(async {
            let q = DelayingQueue::new();
            let start = Instant::now();
            let consumer = tokio::spawn({
                let q = q.clone();
                async move {
                    let mut seen = Vec::new();
                    while let Some(k) = q.get().await {
                        seen.push((start.elapsed(), k));
                        q.done(&k);
                    }
                    seen
                }
            });
            // Ops happen at multiples of 10 ms and ready times end in 5 ms, so the two never
            // coincide and the expected order is unambiguous.
            let ms = Duration::from_millis;
            let mut now = ms(0);
            let mut waiting: BTreeMap<u8, Duration> = BTreeMap::new();
            let mut expected = Vec::new();
            for &(k, delay, advance) in &ops {
                let ready = now + ms(delay * 10 + 5);
                q.add_after(k, ready - now);
                let at = waiting.entry(k).or_insert(ready);
                *at = (*at).min(ready);
                let next = now + ms(advance * 10);
                tokio::time::sleep_until(start + next).await;
                now = next;
                waiting.retain(|&k, &mut at| {
                    if at <= now {
                        expected.push((at, k));
                        false
                    } else {
                        true
                    }
                });
            }
            expected.extend(waiting.iter().map(|(&k, &at)| (at, k)));
            expected.sort();
            // Let every remaining timer fire, then stop the consumer.
            tokio::time::sleep(ms(400)).await;
            q.shut_down();
            let mut seen = consumer.await.unwrap();
            // Keys due at the same instant may come in either order; the times must match.
            seen.sort();
            prop_assert_eq!(seen, expected);
            Ok(())
        })?;
    }
}
