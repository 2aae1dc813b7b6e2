//! Row positions: the row-index column of a slot ([`RowPositions`]): the position in its file
//! of each delivered row, following the slot's final selection, for any range of delivered
//! rows.
//!
//! Invariant: the row index of a delivered row is its position in the unfiltered file.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array};
use parquet::arrow::arrow_reader::RowSelection;

/// Positions in the file of the rows a slot delivers, for any range of them.
#[derive(Debug, Clone)]
pub(crate) struct RowPositions {
    /// Runs of delivered rows: (file position of the first, rows).
    runs: Vec<(u64, u64)>,
    /// Delivered rows before each run.
    before: Vec<u64>,
}

impl RowPositions {
    /// For a row group starting at file row `first_row`, delivering `selection`'s rows (or
    /// all `rows`).
    pub fn new(first_row: u64, rows: u64, selection: Option<&RowSelection>) -> Self {
        let mut runs = Vec::new();
        match selection {
            None => runs.push((first_row, rows)),
            Some(sel) => {
                let mut at = first_row;
                for s in sel.iter() {
                    if !s.skip && s.row_count > 0 {
                        runs.push((at, s.row_count as u64));
                    }
                    at += s.row_count as u64;
                }
            }
        }
        let mut before = Vec::with_capacity(runs.len());
        let mut n = 0;
        for (_, len) in &runs {
            before.push(n);
            n += len;
        }
        RowPositions { runs, before }
    }

    /// The positions of delivered rows `start..start + n`.
    pub fn range(&self, start: u64, n: usize) -> ArrayRef {
        let mut out = Vec::with_capacity(n);
        let mut i = self
            .before
            .partition_point(|&b| b <= start)
            .saturating_sub(1);
        let mut skip = start.saturating_sub(self.before.get(i).copied().unwrap_or(0));
        while out.len() < n && i < self.runs.len() {
            let (pos, len) = self.runs[i];
            let take = (len - skip.min(len)).min((n - out.len()) as u64);
            out.extend((pos + skip..pos + skip + take).map(|p| p as i64));
            skip = 0;
            i += 1;
        }
        Arc::new(Int64Array::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::arrow::arrow_reader::RowSelector;

    #[test]
    fn row_positions_follow_the_selection() {
        let sel: RowSelection = vec![
            RowSelector::skip(2),
            RowSelector::select(3),
            RowSelector::skip(1),
            RowSelector::select(2),
        ]
        .into();
        let p = RowPositions::new(100, 8, Some(&sel));
        let vals = |a: ArrayRef| {
            a.as_any()
                .downcast_ref::<Int64Array>()
                .unwrap()
                .values()
                .to_vec()
        };
        assert_eq!(vals(p.range(0, 4)), vec![102, 103, 104, 106]);
        assert_eq!(vals(p.range(4, 4)), vec![107]);
        assert_eq!(vals(p.range(2, 2)), vec![104, 106]);
        assert_eq!(vals(p.range(3, 1)), vec![106]);
        let all = RowPositions::new(10, 5, None);
        assert_eq!(vals(all.range(1, 3)), vec![11, 12, 13]);
    }
}
