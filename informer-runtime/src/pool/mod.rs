//! The sharded, self-sweeping set behind both interners: strings ([`IStr`], P3) and equal
//! sub-objects of compact types ([`Shared`]); `background.rs` sweeps them when caches shrink
//! with nothing new arriving, and reports their sizes.
//!
//! A value is found by its hash and an equality test, so a lookup needs neither an owned key
//! nor `Borrow`. Each shard is a mutex around a `hashbrown` table; the shard is picked by the
//! value's hash, so decoders on several workers rarely meet on one lock and there is no global
//! lock on the hot path. An entry the set alone holds (reference count 1) is garbage: a shard
//! drops its garbage whenever it has doubled since its last sweep, so a set holds at most about
//! twice the values in use (plus a small constant per shard) while values arrive, and the
//! background passes (`background.rs`) bring it down when objects leave the caches and nothing
//! arrives.
//!
//! [`IStr`]: crate::projection::IStr
//! [`Shared`]: crate::compact::Shared

mod background;

use hashbrown::HashTable;
use parking_lot::{Mutex, MutexGuard};

#[cfg(test)]
pub(crate) use background::pass;
pub(crate) use background::{
    Kind, Sweep, encode, register, release_now, released, sweep_in_background,
};

/// A shard sweeps when it reaches this many entries, at the least.
pub(crate) const MIN_SWEEP: usize = 64;

/// An entry of a [`ShardedSet`]: a reference-counted value.
pub(crate) trait Entry: Clone {
    /// The hash the entry was inserted under (recomputed when a shard's table grows).
    fn rehash(&self, hasher: &foldhash::fast::RandomState) -> u64;
    /// Whether anything but the set holds the entry. The caller holds the shard's lock, so an
    /// entry only the set holds cannot be cloned concurrently.
    fn in_use(&self) -> bool;
}

/// A set of reference-counted values split into shards by hash.
pub(crate) struct ShardedSet<E> {
    shards: Box<[Mutex<Shard<E>>]>,
    /// Seeded per process: the values come from the API server, so their hashes stay
    /// unpredictable (as std's SipHash), at a fraction of its cost.
    hasher: foldhash::fast::RandomState,
}

pub(crate) struct Shard<E> {
    table: HashTable<E>,
    sweep_at: usize,
}

/// How many values a set holds (for tests, benchmarks and metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    /// Entries held, including unused ones not swept yet.
    pub(crate) held: usize,
    /// Entries some value outside the set still uses.
    pub(crate) in_use: usize,
}

impl<E: Entry> ShardedSet<E> {
    pub(crate) fn new(shards: usize) -> Self {
        ShardedSet {
            shards: (0..shards.max(1))
                .map(|_| {
                    Mutex::new(Shard {
                        table: HashTable::new(),
                        sweep_at: MIN_SWEEP,
                    })
                })
                .collect(),
            hasher: foldhash::fast::RandomState::default(),
        }
    }

    /// A new set, registered for background passes and metrics as `kind` (held weakly there).
    pub(crate) fn registered(shards: usize, kind: Kind) -> std::sync::Arc<Self>
    where
        E: Send + 'static,
    {
        let set = std::sync::Arc::new(Self::new(shards));
        let sweep: std::sync::Arc<dyn Sweep> = set.clone();
        register(kind, &sweep);
        set
    }

    /// The hasher every value's hash comes from.
    pub(crate) fn hasher(&self) -> &foldhash::fast::RandomState {
        &self.hasher
    }

    /// The locked shard of values with hash `hash`.
    pub(crate) fn shard(&self, hash: u64) -> ShardGuard<'_, E> {
        // The low bits pick the table slot; the shard comes from the high bits.
        let i = ((hash >> 40) as usize) % self.shards.len();
        ShardGuard {
            shard: self.shards[i].lock(),
            hasher: &self.hasher,
            hash,
        }
    }

    /// Drops every entry that nothing outside the set uses any more, including entries only
    /// freed entries of this set used (a `RawJson` node's children): it sweeps every shard
    /// again until a round frees nothing.
    pub(crate) fn sweep(&self) {
        while self
            .shards
            .iter()
            .map(|shard| shard.lock().sweep(&self.hasher))
            .sum::<usize>()
            > 0
        {}
    }

    /// Visits every entry held (under each shard's lock in turn).
    pub(crate) fn for_each(&self, mut f: impl FnMut(&E)) {
        for shard in self.shards.iter() {
            shard.lock().table.iter().for_each(&mut f);
        }
    }

    pub(crate) fn counts(&self) -> Counts {
        let mut counts = Counts::default();
        self.for_each(|e| {
            counts.held += 1;
            counts.in_use += usize::from(e.in_use());
        });
        counts
    }
}

impl<E: Entry + Send> Sweep for ShardedSet<E> {
    fn shard_count(&self) -> usize {
        self.shards.len()
    }

    fn sweep_shard(&self, i: usize) -> usize {
        self.shards
            .get(i)
            .map_or(0, |shard| shard.lock().sweep(&self.hasher))
    }

    fn held(&self) -> usize {
        self.shards.iter().map(|s| s.lock().table.len()).sum()
    }
}

/// One locked shard, for one hash: find the equal entry, or insert a new one.
pub(crate) struct ShardGuard<'a, E> {
    shard: MutexGuard<'a, Shard<E>>,
    hasher: &'a foldhash::fast::RandomState,
    hash: u64,
}

impl<E: Entry> ShardGuard<'_, E> {
    /// A clone of the held entry `eq` accepts.
    pub(crate) fn find(&self, eq: impl FnMut(&E) -> bool) -> Option<E> {
        self.shard.table.find(self.hash, eq).cloned()
    }

    /// Inserts `entry` (which no held entry equals) and returns a clone of it.
    pub(crate) fn insert(mut self, entry: E) -> E {
        let hasher = self.hasher;
        let shard = &mut *self.shard;
        shard
            .table
            .insert_unique(self.hash, entry.clone(), |e| e.rehash(hasher));
        if shard.table.len() >= shard.sweep_at {
            shard.sweep(hasher);
        }
        entry
    }
}

impl<E: Entry> Shard<E> {
    /// Drops the entries nothing else uses; returns how many.
    fn sweep(&mut self, hasher: &foldhash::fast::RandomState) -> usize {
        let held = self.table.len();
        self.table.retain(|e| e.in_use());
        let freed = held - self.table.len();
        // Room for the live entries to double before the next sweep, and no more: the
        // memory follows the cache down.
        let keep = self.table.len() * 2;
        self.table.shrink_to(keep, |e| e.rehash(hasher));
        self.sweep_at = keep.max(MIN_SWEEP);
        freed
    }
}
