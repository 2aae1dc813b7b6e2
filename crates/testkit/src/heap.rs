//! A counting global allocator for tests that bound memory: live bytes, their peak, and the
//! largest single request, over the system allocator. A test binary installs it with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: rayquet_testkit::heap::Counting = rayquet_testkit::heap::Counting;
//! ```
//!
//! and reads [`live`], [`peak`] and [`largest`] (counted whatever the allocator underneath
//! keeps for itself, unlike RSS).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The counting allocator (see the module docs).
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static LARGEST: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Relaxed) + by;
    PEAK.fetch_max(now, Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Relaxed);
        let p = System.alloc(l);
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        LARGEST.fetch_max(l.size(), Relaxed);
        let p = System.alloc_zeroed(l);
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        LIVE.fetch_sub(l.size(), Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LARGEST.fetch_max(new, Relaxed);
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            if new >= l.size() {
                grew(new - l.size());
            } else {
                LIVE.fetch_sub(l.size() - new, Relaxed);
            }
        }
        q
    }
}

/// Bytes allocated and not yet freed now (0 unless [`Counting`] is the global allocator).
pub fn live() -> usize {
    LIVE.load(Relaxed)
}

/// The most bytes live at once since the last [`reset_peaks`].
pub fn peak() -> usize {
    PEAK.load(Relaxed)
}

/// The largest single allocation since the last [`reset_peaks`].
pub fn largest() -> usize {
    LARGEST.load(Relaxed)
}

/// Start [`peak`] over from the live bytes now, and [`largest`] from 0.
pub fn reset_peaks() {
    PEAK.store(LIVE.load(Relaxed), Relaxed);
    LARGEST.store(0, Relaxed);
}
