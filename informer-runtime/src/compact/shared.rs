//! Structural sharing (P3 generalised from strings to sub-objects): equal parts of cached
//! compact objects share one allocation.
//!
//! The Pods of one ReplicaSet carry the same containers, volumes, tolerations and affinity; a
//! cache that decodes each Pod on its own holds one copy per Pod. A [`Shared<T>`] is an `Arc<T>`
//! that every constructor looks up in `T`'s [`Pool`]: an equal value already held by some cached
//! object is reused and the freshly decoded one dropped, so siblings share one copy. Which types
//! are shared is decided by informer-gen from each type's estimated size and shape (see
//! ARCHITECTURE.md, decision record 18); the generated code only names `Shared<T>` and implements
//! [`Share`] for `T`.
//!
//! - Lossless (P1): a `Shared<T>` serializes, compares and converts as its `T`.
//! - Freed with its last user: a pool holds at most about twice the values cached objects use,
//!   sweeping the ones only it holds (as the string interner does).
//! - Safe under concurrent readers: values are immutable once shared; pools are sharded by hash,
//!   with no global lock.
//! - An update that changes one container of one Pod allocates only that container: the Pod's
//!   other parts decode to values the pool already holds.

use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};
use std::ops::Deref;
use std::sync::Arc;

use std::marker::PhantomData;

use serde::de::{self, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::recent::{Digest, Recent};
use super::{CMap, JsonNumber};
use crate::pool::{Entry, Kind, ShardedSet};
use crate::projection::{IStr, ProjectFrom, StrMap};

/// A hash of a value's content, consistent with its `PartialEq`: equal values hash equally.
///
/// The pools of [`Shared`] values find equal values by it. Unlike `std::hash::Hash` it is
/// implemented for the k8s-openapi leaf types compact types keep (`Time`, `IntOrString`, …)
/// and for floats, and it hashes an [`IStr`] or a [`Shared`] by address: both are interned, so
/// equal ones are one allocation. A hash may leave fields out (informer-gen does for types it
/// cannot hash); equality still compares them.
pub trait ShareHash {
    /// Feeds the value's content to `state`.
    fn share_hash<H: Hasher>(&self, state: &mut H);
}

/// A type whose equal values share one allocation when wrapped in [`Shared`]. informer-gen
/// implements it, with one [`Pool`] per type, for the compact types it decides to share.
pub trait Share: ShareHash + PartialEq + Send + Sync + Sized + 'static {
    /// The process-wide pool of this type's shared values.
    fn pool() -> &'static Pool<Self>;

    /// Slots of the pool's table of recently decoded encodings (P8), allocated on the type's
    /// first skippable decode, 32 bytes each (and, for a slot whose value was freed and not
    /// cleared yet, that value's allocation: `size_of::<Self>()` plus 16 bytes). The default holds a LIST page's worth of distinct
    /// parts; a type whose values are mostly distinct per object and come back unchanged in
    /// its updates asks for more.
    const RECENT_SLOTS: usize = super::recent::SLOTS;
}

/// A shared, immutable value: an `Arc<T>` (8 bytes) whose equal values are one allocation
/// across every cached object.
///
/// - Lossless (P1): it serializes, compares and converts as its `T`.
/// - Freed with its last user: `T`'s [`Pool`] holds at most about twice the values cached
///   objects use, sweeping the ones only it holds (as the string interner does).
/// - Safe under concurrent readers: values are immutable once shared; pools are sharded by
///   hash, with no global lock.
/// - An update that changes one container of one Pod allocates only that container: the Pod's
///   other parts decode to values the pool already holds.
///
/// Which types are shared is decided by informer-gen (decision record 18); the generated code
/// names `Shared<T>` and implements [`Share`] for `T`:
///
/// ```
/// use informer_runtime::compact::{Pool, Share, ShareHash, Shared};
///
/// #[derive(Debug, PartialEq, serde::Deserialize, serde::Serialize)]
/// struct Toleration { key: String, effect: String }
///
/// impl ShareHash for Toleration {
///     fn share_hash<H: std::hash::Hasher>(&self, state: &mut H) {
///         self.key.share_hash(state);
///         self.effect.share_hash(state);
///     }
/// }
/// impl Share for Toleration {
///     fn pool() -> &'static Pool<Self> {
///         static POOL: std::sync::LazyLock<Pool<Toleration>> = std::sync::LazyLock::new(Pool::new);
///         &POOL
///     }
/// }
///
/// let json = r#"{"key":"node.kubernetes.io/not-ready","effect":"NoExecute"}"#;
/// let a: Shared<Toleration> = serde_json::from_str(json)?;
/// let b: Shared<Toleration> = serde_json::from_str(json)?;
/// assert!(Shared::ptr_eq(&a, &b));
/// assert_eq!(serde_json::to_string(&a)?, json);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub struct Shared<T>(Arc<T>);

impl<T: Share> Shared<T> {
    /// The shared copy of `value`: the one the pool holds if an equal value is in use, else
    /// `value` itself, now held by the pool.
    pub fn new(value: T) -> Self {
        T::pool().share(value)
    }
}

impl<T> Shared<T> {
    /// Whether `a` and `b` are one allocation.
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.0, &b.0)
    }

    /// The value.
    pub fn get(&self) -> &T {
        &self.0
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared(Arc::clone(&self.0))
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T> AsRef<T> for Shared<T> {
    fn as_ref(&self) -> &T {
        &self.0
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        // Equal shared values are one allocation; a value built outside a pool still compares.
        Arc::ptr_eq(&self.0, &other.0) || *self.0 == *other.0
    }
}

impl<T: Share + Default> Default for Shared<T> {
    fn default() -> Self {
        Shared::new(T::default())
    }
}

impl<T: Share> From<T> for Shared<T> {
    fn from(value: T) -> Self {
        Shared::new(value)
    }
}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl<T: Serialize> Serialize for Shared<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (*self.0).serialize(serializer)
    }
}

impl<'de, T: Share + Deserialize<'de>> Deserialize<'de> for Shared<T> {
    /// Decodes a `T` (from JSON or protobuf alike) and shares it; where the deserializer hands
    /// out the value's encoded bytes ([`informer_proto::RAW_PART`]) and this type's pool decoded
    /// the same bytes recently, the shared value is taken without a decode (P8).
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_newtype_struct(informer_proto::RAW_PART, SharedVisitor(PhantomData))
    }
}

/// Decodes a [`Shared`] value, skipping bytes decoded before (P8).
struct SharedVisitor<T>(PhantomData<fn() -> T>);

impl<'de, T: Share + Deserialize<'de>> Visitor<'de> for SharedVisitor<T> {
    type Value = Shared<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a shared value")
    }

    /// A deserializer that does not hand out encodings: decode and share.
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Shared<T>, D::Error> {
        T::deserialize(d).map(Shared::new)
    }

    /// The encoding's name, its bytes, then (only if asked for) the value.
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shared<T>, A::Error> {
        let missing = || de::Error::custom("a shared value's encoding ended early");
        let encoding: &'de str = seq.next_element()?.ok_or_else(missing)?;
        let bytes: &'de [u8] = seq.next_element()?.ok_or_else(missing)?;
        let digest = Digest::of(encoding, bytes);
        let pool = T::pool();
        if let Some(found) = pool.recalled(digest) {
            return Ok(found);
        }
        let value: T = seq.next_element()?.ok_or_else(missing)?;
        let (shared, hash) = pool.share_hashed(value);
        pool.recent.put(digest, hash, &shared.0);
        Ok(shared)
    }
}

// A projection of a shared part is a projection of the part itself (P5).
impl<P: ProjectFrom<S>, S> ProjectFrom<Shared<S>> for P {}

/// The pool of one type's [`Shared`] values: a sharded set that sweeps the values no cached
/// object uses any more whenever a shard has doubled since its last sweep, and, when objects
/// leave the caches and nothing new arrives, in a running informer's background pass (P3).
/// Its size is the `informer_shared_values{type}` gauge of a factory's metrics.
pub struct Pool<T> {
    set: std::sync::Arc<ShardedSet<PoolEntry<T>>>,
    /// The encodings decoded recently, to skip their next decode (P8).
    recent: Arc<Recent<T>>,
}

/// How many values a [`Pool`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStats {
    /// Distinct values held, including unused ones not swept yet.
    pub held: usize,
    /// Values some object still uses.
    pub in_use: usize,
}

/// Shards of a pool: fewer than the string interner's, as each type has its own pool.
const SHARDS: usize = 8;

impl<T: Share> Pool<T> {
    /// An empty pool (informer-gen puts one in a `static` per shared type).
    pub fn new() -> Self {
        let set = ShardedSet::registered(SHARDS, Kind::Shared(std::any::type_name::<T>()));
        // Registered after the set, so a pass clears the slots of values it freed in the
        // same round (P8).
        let recent = Arc::new(Recent::with_slots(T::RECENT_SLOTS));
        let sweep: Arc<dyn crate::pool::Sweep> = recent.clone();
        crate::pool::register(Kind::Recent, &sweep);
        Pool { set, recent }
    }

    fn share(&self, value: T) -> Shared<T> {
        self.share_hashed(value).0
    }

    /// [`share`](Self::share), and the value's hash in this pool.
    fn share_hashed(&self, value: T) -> (Shared<T>, u64) {
        let hash = hash_of(self.set.hasher(), &value);
        let shard = self.set.shard(hash);
        if let Some(found) = shard.find(|e| *e.0 == value) {
            return (Shared(found.0), hash);
        }
        (Shared(shard.insert(PoolEntry(Arc::new(value))).0), hash)
    }

    /// The value an encoding with this digest decoded to recently, if it is still held (P8).
    /// The weak reference is upgraded under the lock of the value's shard: a sweep there either
    /// ran before (and the value, only the pool's, is gone) or runs after (and sees it used), so
    /// a value handed out here is always the pool's (P3).
    fn recalled(&self, digest: Digest) -> Option<Shared<T>> {
        let (hash, weak) = self.recent.get(digest)?;
        #[cfg(test)]
        hooks::before_shard();
        let shard = self.set.shard(hash);
        let found = weak.upgrade();
        drop(shard);
        if found.is_none() {
            // Freed since the lookup: clear its slot now rather than at the next pass.
            drop(weak);
            let _ = self.recent.get(digest);
        }
        found.map(Shared)
    }

    /// Drops every value that no [`Shared`] refers to any more, and the table's slots of
    /// freed values (P8).
    pub fn sweep(&self) {
        self.set.sweep();
        self.recent.sweep();
    }

    /// Whether the pool holds a value equal to `value` (in use or not swept yet).
    pub fn holds(&self, value: &T) -> bool {
        self.set
            .shard(hash_of(self.set.hasher(), value))
            .find(|e| *e.0 == *value)
            .is_some()
    }

    /// The values held now.
    pub fn stats(&self) -> PoolStats {
        let counts = self.set.counts();
        PoolStats {
            held: counts.held,
            in_use: counts.in_use,
        }
    }
}

impl<T: Share> Default for Pool<T> {
    fn default() -> Self {
        Pool::new()
    }
}

impl<T: Share> fmt::Debug for Pool<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("type", &std::any::type_name::<T>())
            .field("stats", &self.stats())
            .finish()
    }
}

fn hash_of<T: ShareHash>(hasher: &foldhash::fast::RandomState, value: &T) -> u64 {
    let mut state = hasher.build_hasher();
    value.share_hash(&mut state);
    state.finish()
}

struct PoolEntry<T>(Arc<T>);

impl<T> Clone for PoolEntry<T> {
    fn clone(&self) -> Self {
        PoolEntry(Arc::clone(&self.0))
    }
}

impl<T: ShareHash> Entry for PoolEntry<T> {
    fn rehash(&self, hasher: &foldhash::fast::RandomState) -> u64 {
        hash_of(hasher, &*self.0)
    }

    fn in_use(&self) -> bool {
        let used = Arc::strong_count(&self.0) > 1;
        #[cfg(test)]
        hooks::after_in_use();
        used
    }
}

/// Points where a test can run code of its own, on the thread that reaches them.
#[cfg(test)]
mod hooks {
    use std::cell::RefCell;

    type Hook = Option<Box<dyn FnOnce()>>;

    thread_local! {
        static AFTER_IN_USE: RefCell<Hook> = const { RefCell::new(None) };
        static BEFORE_SHARD: RefCell<Hook> = const { RefCell::new(None) };
    }

    /// Runs `f` once, the next time this thread's sweep has judged an entry.
    pub(super) fn set_after_in_use(f: impl FnOnce() + 'static) {
        AFTER_IN_USE.with(|h| *h.borrow_mut() = Some(Box::new(f)));
    }

    /// Runs `f` once, the next time this thread is about to lock a shard to upgrade.
    pub(super) fn set_before_shard(f: impl FnOnce() + 'static) {
        BEFORE_SHARD.with(|h| *h.borrow_mut() = Some(Box::new(f)));
    }

    pub(super) fn after_in_use() {
        if let Some(f) = AFTER_IN_USE.with(|h| h.borrow_mut().take()) {
            f();
        }
    }

    pub(super) fn before_shard() {
        if let Some(f) = BEFORE_SHARD.with(|h| h.borrow_mut().take()) {
            f();
        }
    }
}

// --- ShareHash for what compact types are made of ---

macro_rules! share_hash_by_hash {
    ($($t:ty),*) => {$(
        impl ShareHash for $t {
            fn share_hash<H: Hasher>(&self, state: &mut H) {
                self.hash(state);
            }
        }
    )*};
}

share_hash_by_hash!(bool, i32, i64, u8, str, String);

impl ShareHash for JsonNumber {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl ShareHash for f64 {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        // `-0.0 == 0.0`: hash them alike. NaN never comes from JSON.
        let v = if *self == 0.0 { 0.0 } else { *self };
        v.to_bits().hash(state);
    }
}

impl ShareHash for IStr {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        // Interned: equal strings are one allocation, so the address stands for the text.
        self.as_str().as_ptr().hash(state);
    }
}

impl<T> ShareHash for Shared<T> {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.0).hash(state);
    }
}

impl ShareHash for StrMap {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        // Keys and values are interned strings: their addresses stand for their text.
        state.write_usize(self.len());
        for (k, v) in self.iter() {
            k.as_ptr().hash(state);
            v.as_ptr().hash(state);
        }
    }
}

impl<V: ShareHash> ShareHash for CMap<V> {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.len());
        for (k, v) in self.iter() {
            k.as_ptr().hash(state);
            v.share_hash(state);
        }
    }
}

impl<T: ShareHash> ShareHash for [T] {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.len());
        for v in self {
            v.share_hash(state);
        }
    }
}

impl<T: ShareHash + ?Sized> ShareHash for Box<T> {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        (**self).share_hash(state);
    }
}

impl<T: ShareHash> ShareHash for Option<T> {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        match self {
            None => state.write_u8(0),
            Some(v) => {
                state.write_u8(1);
                v.share_hash(state);
            }
        }
    }
}

impl ShareHash for k8s_openapi::apimachinery::pkg::apis::meta::v1::Time {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl ShareHash for k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl ShareHash for k8s_openapi::apimachinery::pkg::util::intstr::IntOrString {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
        match self {
            IntOrString::Int(i) => (0u8, *i).hash(state),
            IntOrString::String(s) => (1u8, s).hash(state),
        }
    }
}

impl ShareHash for k8s_openapi::ByteString {
    fn share_hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

#[cfg(test)]
mod tests {
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
                    static POOL: std::sync::LazyLock<Pool<$name>> =
                        std::sync::LazyLock::new(Pool::new);
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
        for n in 0..10 {
            let (shared, hash) = pool.share_hashed(Remembered::of(n));
            pool.recent
                .put(Digest::of("test", &n.to_le_bytes()), hash, &shared.0);
        }
        assert_eq!(pool.recent.held(), 10);
        pool.sweep();
        assert_eq!(pool.stats(), PoolStats::default());
        assert_eq!(pool.recent.held(), 0);
    }
}
