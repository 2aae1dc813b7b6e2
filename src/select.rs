//! Select: which rows of a row group are delivered, and their positions in the file.
//!
//! [`filter_rows`] is the first stage of late materialization: it decodes only the filter's
//! columns (of the rows the page index kept), evaluates the filter exactly with arrow's
//! kernels, and returns the selection of matching rows, against which the projected columns
//! are then fetched and decoded. Runs on the decode pool only.
//!
//! [`RowIndexer`] produces the row-index column: the position in its file of each delivered
//! row, following the slot's final selection.
//!
//! Invariants: a selection always spans exactly its row group's rows; a filter's null counts
//! as false; the row index of a delivered row is its position in the unfiltered file.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array};
use arrow::compute::prep_null_mask_filter;
use parquet::arrow::arrow_reader::{
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelectionPolicy, RowSelector,
};
use parquet::arrow::ProjectionMask;

use crate::chunk::SparseChunk;
use crate::error::{Error, Result};
use crate::plan::FileMeta;
use crate::prune::FileFilter;

/// Decode the filter's columns of row group `rg` (rows of `pre`, or all) from `chunk` and
/// return the exact selection of matching rows (spanning the whole row group) and the number
/// of rows read.
pub(crate) fn filter_rows(
    meta: &FileMeta,
    rg: usize,
    filter: &FileFilter,
    pre: Option<&RowSelection>,
    page_level: bool,
    chunk: SparseChunk,
    batch_size: usize,
) -> Result<(RowSelection, u64)> {
    let name = &*meta.file.name;
    let mask = ProjectionMask::leaves(meta.reader.parquet_schema(), filter.leaves.iter().copied());
    let mut builder =
        ParquetRecordBatchReaderBuilder::new_with_metadata(chunk, meta.reader.clone())
            .with_projection(mask)
            .with_row_groups(vec![rg])
            .with_batch_size(batch_size);
    if let Some(pre) = pre {
        builder = builder.with_row_selection(pre.clone());
        if page_level {
            // Only the selected pages were fetched: read by selectors, which skip whole pages
            // without touching their bytes.
            builder = builder.with_row_selection_policy(RowSelectionPolicy::Selectors);
        }
    }
    let reader = builder.build().map_err(|e| Error::decode(e, name, rg))?;
    let mut masks = Vec::new();
    let mut read = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| Error::decode(e, name, rg))?;
        read += batch.num_rows() as u64;
        let keep = filter
            .expr
            .evaluate(&batch)
            .map_err(|e| e.with_path(name).with_row_group(rg))?;
        masks.push(match keep.null_count() {
            0 => keep,
            _ => prep_null_mask_filter(&keep),
        });
    }
    let rows = meta.reader.metadata().row_group(rg).num_rows().max(0) as usize;
    let matched = RowSelection::from_filters(&masks);
    let exact = match pre {
        Some(pre) => {
            if pre.row_count() != read as usize {
                return Err(Error::decode(
                    format!(
                        "read {read} rows where the selection holds {}",
                        pre.row_count()
                    ),
                    name,
                    rg,
                ));
            }
            pre.and_then(&matched)
        }
        None => {
            if read as usize != rows {
                return Err(Error::decode(
                    format!("read {read} rows of a {rows}-row row group"),
                    name,
                    rg,
                ));
            }
            matched
        }
    };
    Ok((pad(exact, rows), read))
}

/// `sel` extended with skipped rows (or cut) to span exactly `rows` rows.
pub(crate) fn pad(sel: RowSelection, rows: usize) -> RowSelection {
    let len = sel.row_count() + sel.skipped_row_count();
    if len == rows {
        return sel;
    }
    let mut selectors: Vec<RowSelector> = Vec::new();
    let mut left = rows;
    for s in sel.iter() {
        if left == 0 {
            break;
        }
        let n = s.row_count.min(left);
        selectors.push(if s.skip {
            RowSelector::skip(n)
        } else {
            RowSelector::select(n)
        });
        left -= n;
    }
    if left > 0 {
        selectors.push(RowSelector::skip(left));
    }
    selectors.into()
}

/// Row positions, in file order, of the rows a slot delivers.
#[derive(Debug)]
pub(crate) struct RowIndexer {
    /// Position of the next row the selectors describe.
    next: u64,
    runs: VecDeque<RowSelector>,
}

impl RowIndexer {
    /// For a row group starting at file row `first_row`, delivering `selection`'s rows (or
    /// all `rows`).
    pub fn new(first_row: u64, rows: u64, selection: Option<&RowSelection>) -> Self {
        let runs = match selection {
            Some(s) => s.iter().copied().collect(),
            None => VecDeque::from([RowSelector::select(rows as usize)]),
        };
        RowIndexer {
            next: first_row,
            runs,
        }
    }

    /// The positions of the next `n` delivered rows.
    pub fn take(&mut self, n: usize) -> ArrayRef {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let Some(run) = self.runs.front_mut() else {
                break;
            };
            if run.skip {
                self.next += run.row_count as u64;
                self.runs.pop_front();
                continue;
            }
            let k = run.row_count.min(n - out.len());
            out.extend(self.next..self.next + k as u64);
            self.next += k as u64;
            run.row_count -= k;
            if run.row_count == 0 {
                self.runs.pop_front();
            }
        }
        Arc::new(Int64Array::from(
            out.into_iter().map(|x| x as i64).collect::<Vec<_>>(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_indexer_follows_the_selection() {
        let sel: RowSelection = vec![
            RowSelector::skip(2),
            RowSelector::select(3),
            RowSelector::skip(1),
            RowSelector::select(2),
        ]
        .into();
        let mut ix = RowIndexer::new(100, 8, Some(&sel));
        let a = ix.take(4);
        let b = ix.take(4);
        let a = a.as_any().downcast_ref::<Int64Array>().unwrap();
        let b = b.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(a.values().to_vec(), vec![102, 103, 104, 106]);
        assert_eq!(b.values().to_vec(), vec![107]);
    }

    #[test]
    fn pad_extends_and_cuts() {
        let sel: RowSelection = vec![RowSelector::select(3)].into();
        let p = pad(sel.clone(), 5);
        assert_eq!((p.row_count(), p.skipped_row_count()), (3, 2));
        let p = pad(sel, 2);
        assert_eq!((p.row_count(), p.skipped_row_count()), (2, 0));
    }
}
