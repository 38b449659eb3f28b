//! A counting global allocator: live heap bytes, their peak, and allocation counts.
//!
//! This is the only `unsafe` in the workspace outside dependencies, and it is why this crate's
//! `[lints]` table sets `unsafe_code = "deny"` (overridable here) instead of inheriting the
//! workspace's `forbid`. The allocator forwards every call to [`System`] unchanged and only
//! counts, per thread, what it adds in batches to three relaxed atomic counters, so the measured
//! program allocates exactly as it would without it. The benchmark binary installs it with
//! `#[global_allocator]`.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicU64, AtomicUsize, Ordering};

static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// How far a thread's own count may run ahead of the shared counters, in bytes either way.
///
/// Every thread counts in a thread-local first and adds to the shared atomics only when its net
/// change passes this many bytes. With one shared counter per allocation, the decode pool's
/// threads and the handler thread contended for one cache line on every allocation and free:
/// 14% of the decode threads' samples in the updates scenario were that counter, time client-go
/// (whose runtime keeps heap statistics per P) never pays. The price is precision: a snapshot
/// misses at most this much per thread that allocated since its last flush, and a peak is seen
/// at most this much late; the phases measured are megabytes.
const FLUSH_BYTES: isize = 16 * 1024;

/// Allocations counted locally before they are added to [`ALLOCATIONS`].
const FLUSH_ALLOCATIONS: u32 = 256;

/// A thread's counts not yet in the shared counters: net bytes and allocations.
#[derive(Clone, Copy)]
struct Local {
    bytes: isize,
    allocations: u32,
}

thread_local! {
    // A `const` initializer and no `Drop`: no lazy allocation, no destructor, usable from inside
    // the allocator on every thread, also while it exits.
    static LOCAL: Cell<Local> = const { Cell::new(Local { bytes: 0, allocations: 0 }) };
}

/// The global allocator wrapper: [`System`] plus live/peak byte counters.
#[derive(Debug, Clone, Copy, Default)]
pub struct CountingAlloc;

impl CountingAlloc {
    /// Counts `bytes` (net, either sign) and `allocations` on this thread, adding them to the
    /// shared counters when they pass the flush thresholds.
    fn count(bytes: isize, allocations: u32) {
        let flushed = LOCAL.try_with(|cell| {
            let mut local = cell.get();
            local.bytes += bytes;
            local.allocations += allocations;
            if local.bytes.abs() >= FLUSH_BYTES || local.allocations >= FLUSH_ALLOCATIONS {
                Self::publish(local);
                local = Local {
                    bytes: 0,
                    allocations: 0,
                };
            }
            cell.set(local);
        });
        if flushed.is_err() {
            // The thread-local is gone (never, for a const `Cell`): count directly.
            Self::publish(Local { bytes, allocations });
        }
    }

    fn publish(local: Local) {
        if local.allocations > 0 {
            ALLOCATIONS.fetch_add(u64::from(local.allocations), Ordering::Relaxed);
        }
        if local.bytes != 0 {
            let now = CURRENT.fetch_add(local.bytes, Ordering::Relaxed) + local.bytes;
            if local.bytes > 0 {
                PEAK.fetch_max(usize::try_from(now).unwrap_or(0), Ordering::Relaxed);
            }
        }
    }

    fn grew(by: usize) {
        Self::count(isize::try_from(by).unwrap_or(isize::MAX), 0);
    }

    fn shrank(by: usize) {
        Self::count(-isize::try_from(by).unwrap_or(isize::MAX), 0);
    }

    fn allocated(size: usize) {
        Self::count(isize::try_from(size).unwrap_or(isize::MAX), 1);
    }
}

/// Adds the calling thread's pending counts to the shared counters.
fn flush_this_thread() {
    let _ = LOCAL.try_with(|cell| {
        CountingAlloc::publish(cell.get());
        cell.set(Local {
            bytes: 0,
            allocations: 0,
        });
    });
}

// SAFETY: every method forwards to `System` with the caller's arguments, so `System`'s guarantees
// carry over unchanged; the counters never influence what is allocated.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's (valid, non-zero-size) layout.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            Self::allocated(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            Self::allocated(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was returned by this allocator (hence by `System`) with this `layout`.
        unsafe { System.dealloc(ptr, layout) };
        Self::shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller upholds `realloc`'s contract, which `System` shares.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            Self::count(0, 1);
            if new_size >= layout.size() {
                Self::grew(new_size - layout.size());
            } else {
                Self::shrank(layout.size() - new_size);
            }
        }
        p
    }
}

/// A snapshot of the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct HeapStats {
    /// Live heap bytes now.
    pub current: usize,
    /// The most live heap bytes since start or the last [`reset_peak`].
    pub peak: usize,
    /// Allocations (including reallocations) since start.
    pub allocations: u64,
}

/// Reads the counters. All zero unless [`CountingAlloc`] is the global allocator.
pub fn heap_stats() -> HeapStats {
    flush_this_thread();
    HeapStats {
        current: usize::try_from(CURRENT.load(Ordering::Relaxed)).unwrap_or(0),
        peak: PEAK.load(Ordering::Relaxed),
        allocations: ALLOCATIONS.load(Ordering::Relaxed),
    }
}

/// Restarts peak tracking from the current live size (to measure the peak of one phase).
pub fn reset_peak() {
    flush_this_thread();
    let current = usize::try_from(CURRENT.load(Ordering::Relaxed)).unwrap_or(0);
    PEAK.store(current, Ordering::Relaxed);
}
