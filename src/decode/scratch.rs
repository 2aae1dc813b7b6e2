//! Row buffers (`Vec<u32>`: row positions, dictionary indices) that a decode thread reuses
//! rather than asking the allocator for fresh memory for every row group and part.
//!
//! A buffer the size of a row group's rows (450 KB for TPC-H's lineitem) taken fresh for
//! every part of every row group is written into pages the kernel has to fault in and clear:
//! the direct reader's selected rows, grown by doubling, were 18% of the page faults of TPC-H
//! Q1 through the DataFusion provider (`perf record -e page-faults` of the bench). Taken here
//! instead, they come from the few a thread keeps, already touched.
//!
//! Invariants: a thread keeps at most [`SPARE_BUFFERS`] buffers of at most [`SPARE_ROWS`]
//! rows each (32 MiB at most, outside any budget); a buffer taken is empty with room for the
//! rows asked; nothing is shared between threads (a buffer given back on another thread than
//! the one it was taken on joins that thread's spares).

use std::cell::RefCell;

/// Spare buffers a thread keeps.
pub(crate) const SPARE_BUFFERS: usize = 8;
/// The most rows a kept buffer holds (4 MiB).
pub(crate) const SPARE_ROWS: usize = 1 << 20;

thread_local! {
    /// The thread's spares, by capacity, the largest last.
    static SPARE: RefCell<Vec<Vec<u32>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with room for `rows` rows: the thread's smallest spare one that is large
/// enough, else a new one (of [`rounded`] rows). The smallest, not the largest: a thread
/// reading tables of different row group sizes (a join's two sides) gave its largest spare to
/// the smaller table's rows, then found the rest too small for the larger one's.
pub(crate) fn take(rows: usize) -> Vec<u32> {
    if rows == 0 {
        return Vec::new();
    }
    let spare = SPARE
        .try_with(|s| {
            let mut s = s.borrow_mut();
            let at = s.partition_point(|x| x.capacity() < rows);
            (at < s.len()).then(|| s.remove(at))
        })
        .ok()
        .flatten();
    match spare {
        Some(mut v) => {
            v.clear();
            v
        }
        None => Vec::with_capacity(rounded(rows)),
    }
}

/// `rows` rounded up to a multiple of a sixteenth of its next power of two (less than an
/// eighth more). Row groups whose row counts differ a little (TPC-H's `lineitem`: 52 counts
/// from 112,683 to 113,928 rows in 53 row groups) then take buffers of one size, so that a
/// spare fits the next row group instead of being dropped for a fresh one: a thread that
/// holds two buffers at once (a filter's indices, a part's rows) dropped its smaller spare for
/// every other row group, and its fresh pages were about a tenth of TPC-H Q3's page faults.
fn rounded(rows: usize) -> usize {
    let step = rows
        .checked_next_power_of_two()
        .map_or(1, |p| (p / 16).max(1));
    rows.div_ceil(step).checked_mul(step).unwrap_or(rows)
}

/// Keep `v` for a later [`take`] on this thread, when it is not too large; beyond
/// [`SPARE_BUFFERS`], the smallest spare is freed.
pub(crate) fn give(v: Vec<u32>) {
    if v.capacity() == 0 || v.capacity() > SPARE_ROWS {
        return;
    }
    let _ = SPARE.try_with(|s| {
        let mut s = s.borrow_mut();
        let at = s.partition_point(|x| x.capacity() <= v.capacity());
        s.insert(at, v);
        if s.len() > SPARE_BUFFERS {
            s.remove(0);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spares() -> Vec<usize> {
        SPARE.with(|s| s.borrow().iter().map(Vec::capacity).collect())
    }

    #[test]
    fn the_smallest_spare_that_fits_comes_back_and_spares_are_bounded() {
        // A fresh thread: no spares of earlier tests.
        std::thread::spawn(|| {
            let a = take(1000);
            assert!(a.is_empty() && a.capacity() >= 1000);
            let ptr = a.as_ptr();
            give(a);
            let b = take(10);
            assert_eq!(b.as_ptr(), ptr, "the spare is reused");
            assert!(b.is_empty());
            give(b);
            // Larger than the spare: a new buffer, and the spare stays for a smaller one.
            let c = take(5000);
            assert!(c.capacity() >= 5000 && c.as_ptr() != ptr);
            assert_eq!(spares().len(), 1);
            give(c);
            // The smallest that fits, whichever order they come in.
            let (d, e) = (take(900), take(900));
            assert_eq!(d.as_ptr(), ptr);
            assert!(e.capacity() >= 5000);
            assert!(spares().is_empty());
            // Two more than are kept, in no order: the largest are kept, by capacity.
            let n = SPARE_BUFFERS + 2;
            for i in (0..n).map(|i| (i * 7) % n) {
                give(Vec::with_capacity((i + 1) * 100));
            }
            let kept: Vec<usize> = (3..=n).map(|i| i * 100).collect();
            assert_eq!(spares(), kept);
            give(Vec::with_capacity(SPARE_ROWS + 1));
            give(Vec::new());
            assert_eq!(spares(), kept);
            assert_eq!(take(350).capacity(), 400);
            assert_eq!(take(0).capacity(), 0, "no spare for nothing");
            assert_eq!(spares().len(), SPARE_BUFFERS - 1);
        })
        .join()
        .unwrap();
    }

    /// Row counts a little apart take buffers of one size, so each fits the next.
    #[test]
    fn row_counts_a_little_apart_share_a_buffer() {
        std::thread::spawn(|| {
            let (a, b) = (take(113_928), take(112_683));
            assert_eq!(a.capacity(), b.capacity());
            let ptrs = [a.as_ptr(), b.as_ptr()];
            give(b);
            give(a);
            // Both spares fit both counts, whichever comes first.
            for rows in [112_683, 113_928, 113_000] {
                let (x, y) = (take(rows), take(rows));
                assert!(ptrs.contains(&x.as_ptr()) && ptrs.contains(&y.as_ptr()));
                give(x);
                give(y);
            }
        })
        .join()
        .unwrap();
        for rows in [
            0,
            1,
            15,
            16,
            17,
            1000,
            65_536,
            65_537,
            113_928,
            usize::MAX / 2,
            usize::MAX,
        ] {
            let r = rounded(rows);
            assert!(r >= rows, "{rows} -> {r}");
            assert!(r - rows <= rows / 8 + 1, "{rows} -> {r}");
        }
    }
}
