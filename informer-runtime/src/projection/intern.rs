//! Interned strings ([`IStr`]): equal strings of the cache share one allocation ([P3]).
//!
//! [P3]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#12-compact-types-and-projections-ours

use std::borrow::Borrow;
use std::fmt;
use std::hash::BuildHasher;
use std::ops::Deref;
use std::sync::LazyLock;

use arcstr::ArcStr;

use crate::pool::{Entry, ShardedSet};
use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};

/// An interned, immutable string: 8 bytes inline (a thin pointer; `Option<IStr>` is 8 bytes too),
/// and one shared allocation per distinct value across every cached object ([P3]).
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
///
/// [P3]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#12-compact-types-and-projections-ours
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IStr(ArcStr);

impl IStr {
    /// The interned copy of `s`.
    pub fn new(s: &str) -> Self {
        INTERNER.intern(s)
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
/// holds at most about twice the strings in use (plus a small constant per shard) and its memory
/// follows the cache down when objects leave it ([P3]). [`Interner::sweep`] frees them at once.
///
/// [P3]: https://github.com/informer-rs/informer-rs/blob/main/docs/behaviour.md#12-compact-types-and-projections-ours
pub struct Interner {
    set: ShardedSet<ArcStr>,
}

const SHARDS: usize = 32;

static INTERNER: LazyLock<Interner> = LazyLock::new(|| Interner {
    set: ShardedSet::new(SHARDS),
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

    fn intern(&self, s: &str) -> IStr {
        let shard = self.set.shard(self.set.hasher().hash_one(s));
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
