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
//! rows each (16 MiB at most, outside any budget); a buffer taken is empty with room for the
//! rows asked; nothing is shared between threads (a buffer given back on another thread than
//! the one it was taken on joins that thread's spares).

use std::cell::RefCell;

/// Spare buffers a thread keeps.
pub(crate) const SPARE_BUFFERS: usize = 4;
/// The most rows a kept buffer holds (4 MiB).
pub(crate) const SPARE_ROWS: usize = 1 << 20;

thread_local! {
    /// The thread's spares, by capacity, the largest last.
    static SPARE: RefCell<Vec<Vec<u32>>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with room for `rows` rows: the thread's largest spare one when it is
/// large enough, else a new one.
pub(crate) fn take(rows: usize) -> Vec<u32> {
    let spare = SPARE.try_with(|s| s.borrow_mut().pop()).ok().flatten();
    match spare {
        Some(mut v) if v.capacity() >= rows => {
            v.clear();
            v
        }
        // Growing a smaller one would copy its old bytes for nothing; it is dropped.
        _ => Vec::with_capacity(rows),
    }
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
    fn buffers_come_back_largest_first_and_are_bounded() {
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
            // Larger than the spare: a new buffer, and the spare is dropped.
            let c = take(5000);
            assert!(c.capacity() >= 5000 && c.as_ptr() != ptr);
            assert!(spares().is_empty());
            for n in [1, 7, 3, 9, 5, 2] {
                give(Vec::with_capacity(n * 100));
            }
            assert_eq!(spares(), vec![300, 500, 700, 900]);
            give(Vec::with_capacity(SPARE_ROWS + 1));
            give(Vec::new());
            assert_eq!(spares(), vec![300, 500, 700, 900]);
            assert_eq!(take(800).capacity(), 900);
        })
        .join()
        .unwrap();
    }
}
