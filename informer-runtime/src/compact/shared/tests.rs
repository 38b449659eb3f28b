//! The sharing pools' tests (P3, P8): sharing, sweeps, the decode-skip table and its races.

use super::*;
use crate::pool::MIN_SWEEP;
use proptest::prelude::*;

/// A part of a test object, with its own pool per test (pools are per type).
macro_rules! part {
    ($name:ident) => {
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        struct $name {
            name: IStr,
            n: i64,
            tags: Box<[IStr]>,
        }
        impl ShareHash for $name {
            fn share_hash<H: Hasher>(&self, state: &mut H) {
                self.name.share_hash(state);
                self.n.share_hash(state);
                self.tags.share_hash(state);
            }
        }
        impl Share for $name {
            fn pool() -> &'static Pool<Self> {
                static POOL: std::sync::LazyLock<Pool<$name>> = std::sync::LazyLock::new(Pool::new);
                &POOL
            }
        }
        impl $name {
            fn of(n: i64) -> Self {
                $name {
                    name: IStr::new(&format!("part-{}", n % 3)),
                    n,
                    tags: [IStr::new("a"), IStr::new(&n.to_string())].into(),
                }
            }
        }
    };
}

#[test]
fn equal_parts_share_one_allocation_and_stay_lossless() {
    part!(Decoded);
    let json = r#"{"name":"web","n":7,"tags":["x","y"]}"#;
    let a: Shared<Decoded> = serde_json::from_str(json).unwrap();
    let b: Shared<Decoded> = serde_json::from_str(json).unwrap();
    let c = Shared::new(Decoded::of(7));
    assert!(Shared::ptr_eq(&a, &b));
    assert!(!Shared::ptr_eq(&a, &c));
    assert_ne!(a, c);
    assert_eq!(serde_json::to_string(&a).unwrap(), json);
    assert_eq!(Decoded::pool().stats(), PoolStats { held: 2, in_use: 2 });
    assert!(Decoded::pool().holds(&Decoded::of(7)));
}

#[test]
fn a_pool_frees_what_nothing_uses_and_stays_bounded() {
    part!(Churned);
    let held: Vec<Shared<Churned>> = (0..100).map(|n| Shared::new(Churned::of(n))).collect();
    for n in 100..20_000 {
        drop(Shared::new(Churned::of(n)));
    }
    // Amortised sweeping keeps at most about twice the live values per shard.
    let stats = Churned::pool().stats();
    assert_eq!(stats.in_use, 100);
    assert!(stats.held <= 2 * (100 + SHARDS * MIN_SWEEP), "{stats:?}");
    Churned::pool().sweep();
    assert_eq!(
        Churned::pool().stats(),
        PoolStats {
            held: 100,
            in_use: 100
        }
    );
    assert!(!Churned::pool().holds(&Churned::of(150)));
    // The held values are still the shared ones.
    assert!(Shared::ptr_eq(&held[7], &Shared::new(Churned::of(7))));
    drop(held);
    Churned::pool().sweep();
    assert_eq!(Churned::pool().stats(), PoolStats::default());
}

/// A part holding another pool's part, as a container holds its image string or a
/// `RawJson` node its children.
#[derive(Debug, Clone, PartialEq)]
struct Branch {
    leaf: Shared<Leaf>,
    n: i64,
}
part!(Leaf);
impl ShareHash for Branch {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        self.leaf.share_hash(state);
        self.n.share_hash(state);
    }
}
impl Share for Branch {
    fn pool() -> &'static Pool<Self> {
        static POOL: std::sync::LazyLock<Pool<Branch>> = std::sync::LazyLock::new(Pool::new);
        &POOL
    }
}

#[tokio::test]
async fn p3_one_background_pass_frees_parts_nested_in_freed_parts() {
    // The leaves' set is swept first in every round, the order in which a leaf is still
    // used by a branch not swept yet.
    let sets: [Arc<dyn crate::pool::Sweep>; 2] =
        [Leaf::pool().set.clone(), Branch::pool().set.clone()];
    let branches: Vec<Shared<Branch>> = (0..100)
        .map(|n| {
            Shared::new(Branch {
                leaf: Shared::new(Leaf::of(n)),
                n,
            })
        })
        .collect();
    assert_eq!(Leaf::pool().stats().in_use, 100);
    drop(branches);
    // Round one frees the branches, round two their leaves, round three nothing.
    assert_eq!(crate::pool::pass(&sets).await, 3);
    assert_eq!(Branch::pool().stats(), PoolStats::default());
    assert_eq!(Leaf::pool().stats(), PoolStats::default());
}

/// A part holding a part of its own type, as a `RawJson` node holds its children.
#[derive(Debug, Clone, PartialEq)]
struct Link {
    next: Option<Shared<Link>>,
    n: i64,
}
impl ShareHash for Link {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        self.next.share_hash(state);
        self.n.share_hash(state);
    }
}
impl Share for Link {
    fn pool() -> &'static Pool<Self> {
        static POOL: std::sync::LazyLock<Pool<Link>> = std::sync::LazyLock::new(Pool::new);
        &POOL
    }
}

#[test]
fn p3_a_sweep_frees_chains_within_one_pool() {
    // 20 chains of 8 links: a link's shard is its hash's, so parents and children sit in
    // shards swept in every order.
    let heads: Vec<Shared<Link>> = (0..20)
        .map(|c| {
            (0..8).fold(None, |next, i| {
                Some(Shared::new(Link { next, n: c * 8 + i }))
            })
        })
        .map(|head| head.expect("8 links"))
        .collect();
    assert_eq!(Link::pool().stats().in_use, 160);
    drop(heads);
    Link::pool().sweep();
    assert_eq!(Link::pool().stats(), PoolStats::default());
}

#[test]
fn threads_sharing_equal_parts_get_one_allocation() {
    part!(Raced);
    let results: Vec<Vec<Shared<Raced>>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..4)
            .map(|_| s.spawn(|| (0..200).map(|n| Shared::new(Raced::of(n % 50))).collect()))
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    for (i, a) in results.iter().flatten().enumerate() {
        let first = &results[0][i % 200];
        assert_eq!(Shared::ptr_eq(a, first), a.n == first.n, "{a:?} {first:?}");
    }
    assert_eq!(Raced::pool().stats().in_use, 50);
}

#[derive(Debug, Clone)]
enum Op {
    Add(i64),
    Remove(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0i64..12).prop_map(Op::Add),
        any::<usize>().prop_map(Op::Remove)
    ]
}

proptest! {
    /// Against a model (a list of live values): equal live parts are one allocation,
    /// unequal ones never are, and after a sweep the pool holds exactly the distinct live
    /// values (nothing else is kept).
    #[test]
    fn sharing_matches_a_model_and_frees_the_rest(ops in prop::collection::vec(op(), 1..60)) {
        part!(Modelled);
        let mut live: Vec<Shared<Modelled>> = Vec::new();
        for op in ops {
            match op {
                Op::Add(n) => live.push(Shared::new(Modelled::of(n))),
                Op::Remove(i) if !live.is_empty() => {
                    let i = i % live.len();
                    live.swap_remove(i);
                }
                Op::Remove(_) => {}
            }
            for a in &live {
                for b in &live {
                    prop_assert_eq!(Shared::ptr_eq(a, b), a.n == b.n);
                }
            }
        }
        Modelled::pool().sweep();
        let distinct: std::collections::BTreeSet<i64> = live.iter().map(|p| p.n).collect();
        prop_assert_eq!(Modelled::pool().stats(), PoolStats { held: distinct.len(), in_use: distinct.len() });
        drop(live);
        Modelled::pool().sweep();
        prop_assert_eq!(Modelled::pool().stats(), PoolStats::default());
    }
}
/// P3, P8: a lookup in the table of recent encodings that meets a sweep of the value's shard
/// (the sweep has judged the value unused, only the pool holding it) never hands out the
/// value the sweep drops: whatever it returns is the pool's one allocation. Deterministic:
/// the sweep stops right after judging the value until the lookup has returned or is about
/// to take the shard's lock.
#[test]
fn p8_a_recent_lookup_racing_a_sweep_hands_out_only_pooled_values() {
    part!(Racy);
    enum Seen {
        AtLock,
        Done(Option<Shared<Racy>>),
    }
    let pool = Racy::pool();
    let digest = Digest::of("test", b"racy");
    let (shared, hash) = pool.share_hashed(Racy::of(1));
    pool.recent.put(digest, hash, &shared.0);
    drop(shared);
    let (tx, rx) = std::sync::mpsc::channel();
    let limit = std::time::Duration::from_secs(10);
    let got = std::rc::Rc::new(std::cell::RefCell::new(None));
    let in_hook = std::rc::Rc::clone(&got);
    hooks::set_after_in_use(move || {
        let lookup = std::thread::spawn(move || {
            let at_lock = tx.clone();
            hooks::set_before_shard(move || {
                let _ = at_lock.send(Seen::AtLock);
            });
            let _ = tx.send(Seen::Done(Racy::pool().recalled(digest)));
        });
        // The lookup either finished (it never waited for the shard) or waits for it.
        match rx.recv_timeout(limit) {
            Ok(Seen::Done(found)) => *in_hook.borrow_mut() = Some((found, lookup, None)),
            Ok(Seen::AtLock) => *in_hook.borrow_mut() = Some((None, lookup, Some(rx))),
            Err(e) => panic!("the lookup neither returned nor reached the lock: {e}"),
        }
    });
    pool.sweep();
    let (found, lookup, rx) = got.borrow_mut().take().expect("the sweep judged the value");
    let found = match rx {
        None => found,
        Some(rx) => match rx.recv_timeout(limit) {
            Ok(Seen::Done(found)) => found,
            _ => panic!("the lookup did not return"),
        },
    };
    lookup.join().expect("lookup thread");
    if let Some(found) = found {
        assert!(
            Shared::ptr_eq(&found, &Shared::new(Racy::of(1))),
            "a value handed out after its sweep is not the pool's"
        );
    } else {
        assert!(!pool.holds(&Racy::of(1)));
    }
    pool.sweep();
    assert_eq!(
        pool.recent.held(),
        0,
        "no slot left pinning the freed value"
    );
}

/// P8: the pool's sweep clears the table's slots of the values it frees.
#[test]
fn p8_a_pool_sweep_clears_the_slots_of_freed_values() {
    part!(Remembered);
    let pool = Remembered::pool();
    // The values stay alive until the slots are counted: a sweep of every pool that another
    // test's informer runs meanwhile may clear the slot of a value already freed.
    let held: Vec<_> = (0..10i64)
        .map(|n| {
            let (shared, hash) = pool.share_hashed(Remembered::of(n));
            pool.recent
                .put(Digest::of("test", &n.to_le_bytes()), hash, &shared.0);
            shared
        })
        .collect();
    assert_eq!(pool.recent.held(), 10);
    drop(held);
    pool.sweep();
    assert_eq!(pool.stats(), PoolStats::default());
    assert_eq!(pool.recent.held(), 0);
}
