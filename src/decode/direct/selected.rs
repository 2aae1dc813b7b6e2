//! The selected rows of a row group ([`Selected`]), handed to the columns one batch at a time
//! ([`Selected::batch`]).
//!
//! The direct reader's columns want, per batch, the positions of its rows in the row group and,
//! per row, the selected rows left in its run (the builders copy a run with one kernel call,
//! told its length without walking it). Reading every row, the positions of a batch are
//! written for that batch only, into a buffer reused from batch to batch: written for the whole
//! row group they were 450 KB per part and row group of TPC-H's lineitem, in fresh pages, for
//! a full scan. A selection's rows are written out once for the row group: per batch, from the
//! selection's runs, measured 1-3% more instructions (`callgrind`, filters keeping 25-98% of
//! lineitem's rows). A slot's parts share them ([`Written`], written by the filter stage when
//! it found the rows: [`super::Prepared`]): written per part they were 3% of the samples of
//! TPC-H Q3 through the DataFusion provider, whose lineitem row groups are read in two parts.
//!
//! Its buffers are sized for the selected rows (and [`LANES`] more) and come from a few spare ones each decode
//! thread keeps ([`scratch`]): grown by doubling into fresh memory for every part of every row
//! group, they were 18% of the page faults of TPC-H Q1 through the DataFusion provider (a
//! `perf record -e page-faults` of the bench), most of them copying into the next doubling.
//!
//! Invariants: a batch's rows are those of positions `from..to` of the selected rows, in
//! order; `left` is, per row, the rows left in its run of consecutive selected rows, itself
//! included (empty when every row is selected: one run).

use std::ops::Range;
use std::sync::Arc;

use parquet::arrow::arrow_reader::RowSelection;

use crate::decode::scratch;

/// Rows [`Selected::of`] writes at a time.
const LANES: usize = 16;
/// Rows [`Selected::of`] writes first for each run (at most [`LANES`]).
const SHORT: usize = 4;

/// Writes at `len` the positions and run lengths of rows `k..k + W` of a run of `n` rows
/// starting at row `base` (past the run's end when it is shorter: later writes overwrite them).
#[inline(always)]
fn put<const W: usize>(
    (rows, left): (&mut [u32], &mut [u32]),
    len: usize,
    (base, n): (u32, u32),
    k: u32,
) {
    let step: [u32; W] = std::array::from_fn(|i| k + i as u32);
    let (r, l) = (&mut rows[len..len + W], &mut left[len..len + W]);
    for i in 0..W {
        r[i] = base.wrapping_add(step[i]);
        l[i] = n.wrapping_sub(step[i]);
    }
}

/// A selection's rows written out for its row group ([`Written::of`]): per selected row, its
/// position and the selected rows left in its run. Written once per row group and shared by
/// its parts (`Arc`), each walking it with its own [`Selected`].
#[derive(Debug)]
pub(crate) struct Written {
    rows: Vec<u32>,
    left: Vec<u32>,
}

impl Written {
    /// The rows of a `rows`-row row group (below `u32::MAX`) that `selection` selects; `None`
    /// when the selection spans more rows than the row group has.
    pub fn of(selection: &RowSelection, rows: usize) -> Option<Self> {
        let selected = selection
            .iter()
            .filter(|s| !s.skip)
            .fold(0usize, |n, s| n.saturating_add(s.row_count));
        Self::counted(selection, rows, selected)
    }

    /// [`Written::of`] for a selection already known to select `selected` rows (its
    /// [`super::Summary`]), which saves walking it once more to count them.
    pub fn counted(selection: &RowSelection, rows: usize, selected: usize) -> Option<Self> {
        let selected = selected.min(rows);
        // Written [`SHORT`], then [`LANES`] rows at a time, past the end of a shorter run (the
        // next run, or the final truncation, overwrites or drops them): runs of deleted rows a few rows
        // apart made a row-at-a-time loop 5% of the CPU of a Delta scan with deletion
        // vectors. The buffers are zero-filled first, so every write is a safe slice copy.
        let buffer = || {
            let mut v = scratch::take(selected + LANES);
            v.resize(selected + LANES, 0);
            v
        };
        let (mut at_rows, mut at_left) = (buffer(), buffer());
        let (mut at, mut len) = (0usize, 0usize);
        for sel in selection.iter() {
            let end = at.checked_add(sel.row_count).filter(|e| *e <= rows)?;
            if !sel.skip {
                // `len + run <= selected`: the runs so far sum to at most `rows` (checked) and
                // to at most `selected` (their count).
                let (base, n) = (at as u32, sel.row_count as u32);
                // A run of at most [`SHORT`] rows (a filter keeping about half the rows,
                // scattered, makes runs of one to three) takes one short write; a longer one
                // goes on [`LANES`] rows at a time.
                put::<SHORT>((&mut at_rows, &mut at_left), len, (base, n), 0);
                let mut k = n.min(SHORT as u32);
                len += k as usize;
                while k < n {
                    put::<LANES>((&mut at_rows, &mut at_left), len, (base, n), k);
                    let w = (n - k).min(LANES as u32);
                    (k, len) = (k + w, len + w as usize);
                }
            }
            at = end;
        }
        at_rows.truncate(len);
        at_left.truncate(len);
        Some(Written {
            rows: at_rows,
            left: at_left,
        })
    }

    /// How many rows are selected.
    pub fn len(&self) -> usize {
        self.rows.len()
    }
}

impl Drop for Written {
    fn drop(&mut self) {
        scratch::give(std::mem::take(&mut self.rows));
        scratch::give(std::mem::take(&mut self.left));
    }
}

/// The selected rows of a row group, and the current batch's.
#[derive(Debug, Default)]
pub(super) struct Selected {
    total: usize,
    /// A selection's rows; `None`: every row of the row group.
    written: Option<Arc<Written>>,
    /// Every row: the current batch's rows.
    batch_rows: Vec<u32>,
    /// The current batch's positions in the rows (in `batch_rows` when every row is read).
    current: Range<usize>,
}

impl Selected {
    /// Every one of `rows` rows (below `u32::MAX`).
    pub fn every(rows: usize) -> Self {
        Selected {
            total: rows,
            written: None,
            batch_rows: scratch::take(0),
            current: 0..0,
        }
    }

    /// The rows of a `rows`-row row group (below `u32::MAX`) that `selection` selects; `None`
    /// when the selection spans more rows than the row group has.
    pub fn of(selection: &RowSelection, rows: usize) -> Option<Self> {
        Some(Self::written(Arc::new(Written::of(selection, rows)?)))
    }

    /// The rows `written` (shared with the row group's other parts).
    pub fn written(written: Arc<Written>) -> Self {
        Selected {
            total: written.len(),
            written: Some(written),
            batch_rows: Vec::new(),
            current: 0..0,
        }
    }

    /// Every selected row (the current batch's only, when every row is read), and per row the
    /// rows left in its run (empty when every row is read).
    fn rows(&self) -> (&[u32], &[u32]) {
        match &self.written {
            Some(w) => (&w.rows, &w.left),
            None => (&self.batch_rows, &[]),
        }
    }

    /// How many rows are selected.
    pub fn len(&self) -> usize {
        self.total
    }

    /// How many of the rows `rows` are selected.
    pub fn count(&self, rows: Range<usize>) -> usize {
        if self.written.is_none() {
            return rows.end.min(self.total).saturating_sub(rows.start);
        }
        let below = |r: usize| self.rows().0.partition_point(|&x| (x as usize) < r);
        below(rows.end) - below(rows.start)
    }

    /// Positions `from..to` of the selected rows (`to` at most [`Selected::len`]): their rows,
    /// and per row the rows left in its run (empty when every row is selected).
    pub fn batch(&mut self, from: usize, to: usize) -> (&[u32], &[u32]) {
        if self.written.is_none() {
            self.batch_rows.clear();
            self.batch_rows.extend(from as u32..to as u32);
            self.current = 0..self.batch_rows.len();
        } else {
            self.current = from..to;
        }
        self.current()
    }

    /// The current batch, as [`Selected::batch`] last made it.
    pub fn current(&self) -> (&[u32], &[u32]) {
        let c = self.current.clone();
        let (rows, left) = self.rows();
        (&rows[c.clone()], left.get(c).unwrap_or(&[]))
    }

    /// The selected rows from position `from` on, as ranges of consecutive rows.
    pub fn ranges_from(&self, from: usize) -> Vec<Range<usize>> {
        if from >= self.total {
            return Vec::new();
        }
        if self.written.is_none() {
            return std::iter::once(from..self.total).collect();
        }
        let mut ranges: Vec<Range<usize>> = Vec::new();
        for &r in &self.rows().0[from..] {
            let r = r as usize;
            match ranges.last_mut() {
                Some(last) if last.end == r => last.end = r + 1,
                _ => ranges.push(r..r + 1),
            }
        }
        ranges
    }
}

impl Drop for Selected {
    fn drop(&mut self) {
        scratch::give(std::mem::take(&mut self.batch_rows));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::arrow::arrow_reader::RowSelector;

    #[test]
    fn batches_are_the_selection_cut_anywhere() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for case in 0..300 {
            // Selectors of 0-40 rows, skipped or not.
            let selectors: Vec<RowSelector> = (0..(next() % 30))
                .map(|_| match (next() % 41) as usize {
                    n if next() % 2 == 0 => RowSelector::select(n),
                    n => RowSelector::skip(n),
                })
                .collect();
            let rows: usize = selectors.iter().map(|s| s.row_count).sum();
            let mask: Vec<bool> = selectors
                .iter()
                .flat_map(|s| std::iter::repeat_n(!s.skip, s.row_count))
                .collect();
            let want: Vec<u32> = (0..rows as u32).filter(|&r| mask[r as usize]).collect();
            let selection = RowSelection::from(selectors);
            let mut s = Selected::of(&selection, rows + (next() % 3) as usize).unwrap();
            assert_eq!(s.len(), want.len(), "case {case}");
            let size = (next() % 50) as usize + 1;
            let mut from = 0;
            while from < s.len() {
                let to = (from + size).min(s.len());
                let (r, l) = s.batch(from, to);
                let (r, l) = (r.to_vec(), l.to_vec());
                assert_eq!(r, &want[from..to], "case {case}");
                // Each row starts `left` consecutive selected rows.
                for (i, &n) in l.iter().enumerate() {
                    let (j, n) = (from + i, n as usize);
                    assert!(n >= 1 && j + n <= want.len(), "case {case}");
                    assert_eq!(want[j + n - 1], r[i] + n as u32 - 1, "case {case}");
                }
                assert_eq!(l.len(), r.len(), "case {case}");
                assert_eq!(s.current(), (&r[..], &l[..]));
                let flat: Vec<u32> = s
                    .ranges_from(from)
                    .into_iter()
                    .flat_map(|r| r.start as u32..r.end as u32)
                    .collect();
                assert_eq!(flat, &want[from..], "case {case}");
                from = to;
            }
            for a in 0..=rows {
                let b = a + (next() % 20) as usize;
                let n = want
                    .iter()
                    .filter(|&&r| (a..b).contains(&(r as usize)))
                    .count();
                assert_eq!(s.count(a..b), n, "case {case}: {a}..{b}");
            }
        }
        let five = RowSelection::from(vec![RowSelector::select(5)]);
        assert!(Selected::of(&five, 4).is_none());
    }

    #[test]
    fn buffers_fit_and_are_reused_on_the_thread() {
        // A fresh thread: no spare buffers of earlier tests.
        std::thread::spawn(|| {
            let selection = RowSelection::from(vec![
                RowSelector::skip(3),
                RowSelector::select(1000),
                RowSelector::skip(7),
                RowSelector::select(24),
            ]);
            let s = Written::of(&selection, 1034).unwrap();
            // Room for the selected rows and a last write of `LANES`, rounded up by less than
            // an eighth (`scratch::take`).
            let room = 1024 + LANES;
            for cap in [s.rows.capacity(), s.left.capacity()] {
                assert!(cap >= room && cap <= room + room / 8, "{cap}");
            }
            let mut used = [s.rows.as_ptr(), s.left.as_ptr()];
            drop(s);
            // The next row group's selection writes into the same memory.
            let w = Arc::new(Written::of(&selection, 1034).unwrap());
            let mut again = [w.rows.as_ptr(), w.left.as_ptr()];
            let mut s = Selected::written(w);
            again.sort();
            used.sort();
            assert_eq!(again, used);
            assert_eq!(s.batch(999, 1001).0, &[1002, 1010]);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn every_row_is_written_a_batch_at_a_time_without_left() {
        let mut s = Selected::every(10);
        assert_eq!(s.len(), 10);
        assert_eq!(s.batch(3, 7), (&[3, 4, 5, 6][..], &[][..]));
        assert_eq!(s.current(), (&[3, 4, 5, 6][..], &[][..]));
        assert_eq!(s.batch(7, 10), (&[7, 8, 9][..], &[][..]));
        assert_eq!(s.count(2..20), 8);
        assert_eq!(s.count(12..20), 0);
        assert_eq!(s.ranges_from(4), vec![4..10]);
        assert!(s.ranges_from(10).is_empty());
        assert_eq!(Selected::every(0).len(), 0);
    }
}
