//! Sharded list and watch (KEP-5866, Kubernetes 1.36 alpha, feature gate `ShardedListAndWatch`):
//! an informer that caches only its slice of a collection.
//!
//! A [`Shard`] is one or more ranges of the 64-bit FNV-1a hash of `metadata.uid` or
//! `metadata.namespace` (start inclusive, end exclusive). The reflector sends it as the
//! `shardSelector` parameter of every LIST and WATCH, in the grammar the API server parses
//! (`shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')`, terms joined
//! by `||`). A server with the gate answers each LIST with `metadata.shardInfo`, echoing the
//! selector it applied, and sends only the slice. A server without it ignores the parameter and
//! sends everything; the reflector then filters on the client with the same hash (S4: only an
//! exact echo of the selector sent is trusted, page by page, and every watch event is probed on
//! the client in either mode, since a WATCH may reach another server than the LIST), reading each
//! object's UID or namespace before decoding it and skipping the rest of an object outside the
//! shard, so a replica never pays the decode of objects it does not own ([`ShardMode`]).
//!
//! ```
//! use informer_runtime::shard::{Shard, ShardField};
//!
//! // Replica 1 of 4, by UID.
//! let shard = Shard::of(1, 4, ShardField::Uid).unwrap();
//! assert_eq!(
//!     shard.selector(),
//!     "shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')"
//! );
//! ```

use std::fmt;

/// One past the largest 64-bit hash: the exclusive end of the whole hash space.
const SPACE: u128 = 1 << 64;

/// The 64-bit FNV-1a hash the API server shards by (`k8s.io/apimachinery/pkg/sharding`), over
/// the field's UTF-8 bytes.
pub fn fnv1a64(value: &str) -> u64 {
    fnv1a64_bytes(value.as_bytes())
}

/// [`fnv1a64`] over raw UTF-8 bytes (a field read out of a JSON body without a `String`).
fn fnv1a64_bytes(value: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in value {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The field whose hash places an object in a shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ShardField {
    /// `object.metadata.uid`: an even spread; an object never changes shard.
    Uid,
    /// `object.metadata.namespace`: every object of a namespace in one shard (a cluster-scoped
    /// object's namespace is empty).
    Namespace,
}

impl ShardField {
    /// The field as the selector names it.
    pub fn path(self) -> &'static str {
        match self {
            ShardField::Uid => "object.metadata.uid",
            ShardField::Namespace => "object.metadata.namespace",
        }
    }

    /// The field's key inside `metadata`.
    pub(crate) fn metadata_key(self) -> &'static str {
        match self {
            ShardField::Uid => "uid",
            ShardField::Namespace => "namespace",
        }
    }
}

/// Why a [`Shard`] could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// `Shard::of(index, count, _)` with `count == 0` or `index >= count`.
    #[error("shard {index} of {count} does not exist (index must be below count, count above 0)")]
    NoSuchShard {
        /// The index asked for.
        index: u32,
        /// The shard count asked for.
        count: u32,
    },
    /// A range whose start is not below its end, or whose end is past 2^64.
    #[error("empty or out-of-space shard range [{start:#x}, {end:#x})")]
    BadRange {
        /// The inclusive start.
        start: u64,
        /// The exclusive end.
        end: u128,
    },
}

/// A slice of a collection: objects whose field hash is in any of the ranges.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Shard {
    field: ShardField,
    /// `[start, end)` ranges, `end` at most 2^64.
    ranges: Vec<(u64, u128)>,
}

impl Shard {
    /// The objects whose `field` hashes into `[start, end)`; `end` may be 2^64 to include the
    /// top of the space.
    pub fn range(field: ShardField, start: u64, end: u128) -> Result<Self, ShardError> {
        if u128::from(start) >= end || end > SPACE {
            return Err(ShardError::BadRange { start, end });
        }
        Ok(Shard {
            field,
            ranges: vec![(start, end)],
        })
    }

    /// Shard `index` of `count` equal slices of the hash space (the last one takes the
    /// remainder): `count` replicas that each take a different `index` cover every object
    /// exactly once.
    pub fn of(index: u32, count: u32, field: ShardField) -> Result<Self, ShardError> {
        if count == 0 || index >= count {
            return Err(ShardError::NoSuchShard { index, count });
        }
        let bound = |i: u32| SPACE * u128::from(i) / u128::from(count);
        let start = bound(index) as u64; // below 2^64: index < count
        Ok(Shard {
            field,
            ranges: vec![(start, bound(index + 1))],
        })
    }

    /// The index of the one shard of [`of`](Self::of)`(_, count, _)` that admits `value`, in
    /// constant time (no scan of the `count` shards); `None` if `count` is 0.
    pub fn index_of(value: &str, count: u32) -> Option<u32> {
        if count == 0 {
            return None;
        }
        let h = u128::from(fnv1a64(value));
        let bound = |i: u32| SPACE * u128::from(i) / u128::from(count);
        // `h * count / 2^64` is the index up to the floor in `bound`: at most one off.
        let mut index = u32::try_from(h * u128::from(count) / SPACE).unwrap_or(count - 1);
        index = index.min(count - 1);
        if bound(index) > h {
            index -= 1;
        } else if index + 1 < count && bound(index + 1) <= h {
            index += 1;
        }
        Some(index)
    }

    /// This shard plus `other`'s ranges (a replica that owns several shards); `None` if the
    /// fields differ (the selector grammar allows one field).
    pub fn union(mut self, other: &Shard) -> Option<Self> {
        if self.field != other.field {
            return None;
        }
        self.ranges.extend_from_slice(&other.ranges);
        self.ranges.sort_unstable();
        Some(self)
    }

    /// The field hashed.
    pub fn field(&self) -> ShardField {
        self.field
    }

    /// The `[start, end)` ranges.
    pub fn ranges(&self) -> &[(u64, u128)] {
        &self.ranges
    }

    /// The `shardSelector` parameter: `shardRange(<field>, '<start>', '<end>')` terms joined by
    /// ` || `, bounds as 16 lowercase hex digits (`0x10000000000000000` for 2^64).
    pub fn selector(&self) -> String {
        let terms: Vec<String> = self
            .ranges
            .iter()
            .map(|&(start, end)| {
                let end = if end == SPACE {
                    "0x10000000000000000".to_string()
                } else {
                    format!("{end:#018x}")
                };
                format!(
                    "shardRange({}, '{start:#018x}', '{end}')",
                    self.field.path()
                )
            })
            .collect();
        terms.join(" || ")
    }

    /// Whether an object whose field has this value belongs to the shard.
    pub fn admits(&self, value: &str) -> bool {
        self.admits_bytes(value.as_bytes())
    }

    /// [`admits`](Self::admits) for the field's UTF-8 bytes.
    pub(crate) fn admits_bytes(&self, value: &[u8]) -> bool {
        let h = u128::from(fnv1a64_bytes(value));
        self.ranges
            .iter()
            .any(|&(start, end)| u128::from(start) <= h && h < end)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.selector())
    }
}

/// How the reflector applies a shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardMode {
    /// The server applied `shardSelector` (its LIST answer echoed it in `shardInfo`); watch
    /// events are still probed on the client (S4).
    Server,
    /// The server ignored it, or echoed another selector: the reflector filters on the client.
    Client,
}

#[cfg(test)]
mod tests;
