//! Interned strings ([`IStr`]): equal strings of the cache share one allocation (P3).

use std::borrow::Borrow;
use std::fmt;
use std::hash::BuildHasher;
use std::ops::Deref;
use std::sync::LazyLock;

use arcstr::ArcStr;

use crate::pool::{Entry, Kind, ShardedSet};
use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};

/// An interned, immutable string: 8 bytes inline (a thin pointer; `Option<IStr>` is 8 bytes too),
/// and one shared allocation per distinct value across every cached object (P3).
///
/// Use it in projections for strings that repeat across objects: label and annotation keys and
/// values, namespaces, owner kinds and names, images, condition types and reasons. Unique strings
/// (names, UIDs, resourceVersions) are cheaper as `Box<str>`. Deserializing an `IStr` looks the
/// text up in the process-wide [`Interner`] and allocates only for a value not seen before.
///
/// ```
/// use informer_runtime::projection::IStr;
/// let a = IStr::new("app.kubernetes.io/name");
/// let b: IStr = serde_json::from_str("\"app.kubernetes.io/name\"").unwrap();
/// assert_eq!(a, b);
/// assert!(IStr::ptr_eq(&a, &b));
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IStr(ArcStr);

impl IStr {
    /// The interned copy of `s`.
    pub fn new(s: &str) -> Self {
        let hash = INTERNER.set.hasher().hash_one(s);
        LOCAL
            .try_with(|local| local.intern(s, hash))
            .ok()
            .flatten()
            .unwrap_or_else(|| INTERNER.intern_hashed(s, hash))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `a` and `b` share one allocation.
    pub fn ptr_eq(a: &IStr, b: &IStr) -> bool {
        ArcStr::ptr_eq(&a.0, &b.0)
    }
}

impl Default for IStr {
    /// The empty string (static: no allocation, no interner lookup).
    fn default() -> Self {
        IStr(ArcStr::new())
    }
}

impl Deref for IStr {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for IStr {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for IStr {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for IStr {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for IStr {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl From<&str> for IStr {
    fn from(s: &str) -> Self {
        IStr::new(s)
    }
}

impl From<String> for IStr {
    fn from(s: String) -> Self {
        IStr::new(&s)
    }
}

impl From<&IStr> for String {
    fn from(s: &IStr) -> Self {
        s.as_str().to_owned()
    }
}

impl fmt::Debug for IStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for IStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for IStr {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for IStr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = IStr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<IStr, E> {
                Ok(IStr::new(s))
            }
        }
        deserializer.deserialize_str(V)
    }
}

/// The process-wide string interner behind [`IStr`].
///
/// Sharded by hash so that page decodes on several workers rarely contend. A shard drops the
/// strings no object uses any more whenever it has doubled since its last sweep, so the interner
/// holds at most about twice the strings in use (plus a small constant per shard); when objects
/// leave the caches and nothing new arrives, a running informer's background pass frees them
/// (after deletes, within a second or so; otherwise every few minutes), so its memory follows
/// the cache down (P3). [`Interner::sweep`] frees them at once. Its size is the
/// `informer_interned_strings` gauge of a factory's metrics.
pub struct Interner {
    set: std::sync::Arc<ShardedSet<ArcStr>>,
}

const SHARDS: usize = 32;

static INTERNER: LazyLock<Interner> = LazyLock::new(|| Interner {
    set: ShardedSet::registered(SHARDS, Kind::Strings),
});

impl Entry for ArcStr {
    fn rehash(&self, hasher: &foldhash::fast::RandomState) -> u64 {
        hasher.hash_one(self.as_str())
    }

    fn in_use(&self) -> bool {
        // The empty string is static in `ArcStr` (no count, no allocation): never kept.
        ArcStr::strong_count(self).is_some_and(|n| n > 1)
    }
}

/// How many strings the interner holds and their bytes (for tests, benchmarks and metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InternerStats {
    /// Distinct strings held.
    pub strings: usize,
    /// Their text, in bytes.
    pub bytes: usize,
}

impl Interner {
    /// The process-wide interner.
    pub fn global() -> &'static Interner {
        &INTERNER
    }

    fn intern_hashed(&self, s: &str, hash: u64) -> IStr {
        let shard = self.set.shard(hash);
        if let Some(found) = shard.find(|e| e.as_str() == s) {
            return IStr(found);
        }
        IStr(shard.insert(ArcStr::from(s)))
    }

    /// Drops every string that no [`IStr`] refers to any more.
    pub fn sweep(&self) {
        self.set.sweep();
    }

    /// The strings held now (including unused ones not swept yet).
    pub fn stats(&self) -> InternerStats {
        let mut stats = InternerStats::default();
        self.set.for_each(|s| {
            stats.strings += 1;
            stats.bytes += s.len();
        });
        stats
    }
}

impl fmt::Debug for Interner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Interner")
            .field("stats", &self.stats())
            .finish()
    }
}

/// A decode in progress on this thread: while one is alive, [`IStr::new`] first looks in a small
/// per-thread cache of the strings this decode interned, and only then in the process-wide
/// [`Interner`] (which costs a shard lock and a probe of a large table).
///
/// The objects of one LIST page repeat most of their strings (label keys and values, images,
/// owner names, field names of managedFields), so most lookups end in the cache. The cache holds
/// its strings only while the scope lives: dropping the last scope of the thread empties it, so
/// an interned string is still freed when no cached object uses it (P3). informer-rs opens one
/// around each run of items a LIST page decodes between two yields; open one around your own
/// batch decodes. Scopes nest; a scope is not `Send` (it belongs to its thread).
///
/// ```
/// use informer_runtime::projection::{IStr, InternScope};
/// let names: Vec<IStr> = {
///     let _scope = InternScope::enter();
///     (0..1000).map(|i| IStr::new(["web", "api"][i % 2])).collect()
/// };
/// assert!(IStr::ptr_eq(&names[0], &IStr::new("web")));
/// ```
#[must_use = "the cache is used only while the scope is alive"]
pub struct InternScope {
    _thread: std::marker::PhantomData<*const ()>,
}

impl InternScope {
    /// Opens a scope on this thread.
    pub fn enter() -> Self {
        let _ = LOCAL.try_with(|local| local.depth.set(local.depth.get() + 1));
        InternScope {
            _thread: std::marker::PhantomData,
        }
    }
}

impl Drop for InternScope {
    fn drop(&mut self) {
        let _ = LOCAL.try_with(|local| {
            let depth = local.depth.get().saturating_sub(1);
            local.depth.set(depth);
            if depth == 0 {
                local.slots.borrow_mut().iter_mut().for_each(|s| *s = None);
            }
        });
    }
}

impl fmt::Debug for InternScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("InternScope")
    }
}

/// Slots of the per-thread cache (direct-mapped by hash; a power of two).
const LOCAL_SLOTS: usize = 1024;

struct Local {
    depth: std::cell::Cell<u32>,
    slots: std::cell::RefCell<Box<[Option<IStr>]>>,
}

thread_local! {
    static LOCAL: Local = Local {
        depth: std::cell::Cell::new(0),
        slots: std::cell::RefCell::new(vec![None; LOCAL_SLOTS].into_boxed_slice()),
    };
}

impl Local {
    /// The interned `s` through the cache, or `None` outside a scope.
    fn intern(&self, s: &str, hash: u64) -> Option<IStr> {
        if self.depth.get() == 0 {
            return None;
        }
        let mut slots = self.slots.try_borrow_mut().ok()?;
        let slot = slots.get_mut(hash as usize & (LOCAL_SLOTS - 1))?;
        if let Some(found) = slot.as_ref().filter(|f| f.as_str() == s) {
            return Some(found.clone());
        }
        let interned = INTERNER.intern_hashed(s, hash);
        *slot = Some(interned.clone());
        Some(interned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pool::MIN_SWEEP;

    #[test]
    fn p3_equal_strings_share_one_allocation() {
        let a = IStr::new("p3-shared-value");
        let b = IStr::from(String::from("p3-shared-value"));
        let c: IStr = serde_json::from_str("\"p3-shared-value\"").unwrap();
        assert!(IStr::ptr_eq(&a, &b) && IStr::ptr_eq(&a, &c));
        assert_eq!(serde_json::to_string(&c).unwrap(), "\"p3-shared-value\"");
    }

    #[test]
    fn p3_a_decode_scope_shares_like_the_interner_and_holds_nothing_after_it() {
        let prefix = "p3-scope-";
        let (inside, again) = {
            let _outer = InternScope::enter();
            let _inner = InternScope::enter();
            let inside: Vec<IStr> = (0..3000)
                .map(|i| IStr::new(&format!("{prefix}{}", i % 700)))
                .collect();
            (inside, IStr::new(&format!("{prefix}7")))
        };
        // Equal strings are one allocation, in and out of a scope.
        assert!(IStr::ptr_eq(&inside[7], &again));
        assert!(IStr::ptr_eq(&inside[7], &IStr::new(&format!("{prefix}7"))));
        assert!(IStr::ptr_eq(&inside[7], &inside[707]));
        // Once the scope is gone, its cache keeps nothing alive: what no object uses is freed.
        drop((inside, again));
        Interner::global().sweep();
        let mut left = 0;
        Interner::global()
            .set
            .for_each(|k| left += usize::from(k.starts_with(prefix)));
        assert_eq!(left, 0);
    }

    #[test]
    fn p3_unused_strings_are_released_and_the_set_stays_bounded() {
        let prefix = "p3-release-";
        let held: Vec<IStr> = (0..100)
            .map(|i| IStr::new(&format!("{prefix}held-{i}")))
            .collect();
        // Intern and drop far more strings than the shards' sweep thresholds.
        for i in 0..50_000 {
            drop(IStr::new(&format!("{prefix}dropped-{i}")));
        }
        let count = |pat: &str| {
            let mut n = 0;
            Interner::global()
                .set
                .for_each(|k| n += usize::from(k.starts_with(pat)));
            n
        };
        // Amortised sweeping keeps at most about twice the live strings per shard.
        assert!(count(&format!("{prefix}dropped-")) <= SHARDS * MIN_SWEEP * 2);
        Interner::global().sweep();
        assert_eq!(count(&format!("{prefix}dropped-")), 0);
        assert_eq!(count(&format!("{prefix}held-")), 100);
        // The held strings are still the interned ones.
        assert!(IStr::ptr_eq(
            &held[7],
            &IStr::new(&format!("{prefix}held-7"))
        ));
    }
}
