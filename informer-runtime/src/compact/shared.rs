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
mod tests;
