//! Select: which rows of a row group are delivered, and their positions in the file.
//!
//! [`filter_rows`] is the first stage of late materialization: it decodes only the columns
//! the filter and the task's row filter read (of the rows the page index, the caller's
//! selection and the task's deletes kept), evaluates them exactly (arrow's kernels for the
//! filter, the row filter's own `keep`), and returns the selection of rows to deliver,
//! against which the other columns are then fetched and decoded. Runs on the decode pool only.
//!
//! [`RowPositions`] gives the row-index column: the position in its file of each delivered
//! row, following the slot's final selection, for any range of delivered rows.
//!
//! Invariants: a selection always spans exactly its row group's rows; a filter's (or row
//! filter's) null counts as false; the row index of a delivered row is its position in the
//! unfiltered file.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, Int64Array};
use arrow::compute::prep_null_mask_filter;
use parquet::arrow::arrow_reader::{
    ParquetRecordBatchReaderBuilder, RowSelection, RowSelectionPolicy, RowSelector,
};
use parquet::arrow::ProjectionMask;

use crate::chunk::SparseChunk;
use crate::error::{Error, Result};
use crate::footer::FileMeta;
use crate::mapping::Mapping;
use crate::prune::FileFilter;
use crate::task::RowFilter;

/// A task's row filter resolved against its file: the columns it reads, produced through a
/// mapping prepared against the filter stage's decoded batch.
#[derive(Debug)]
pub(crate) struct RowFilterPlan {
    pub filter: Arc<dyn RowFilter>,
    pub mapping: Mapping,
    /// For each root of `mapping`, its column in the filter stage's decoded batch.
    pub columns: Vec<usize>,
}

/// What the filter stage of a row group evaluates.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stage<'a> {
    /// The scan's filter, when it is exact and statistics could not decide the row group.
    pub filter: Option<&'a FileFilter>,
    pub row_filter: Option<&'a RowFilterPlan>,
    /// Leaves to decode.
    pub leaves: &'a [usize],
}

/// What a filter stage found: the exact selection of rows to deliver (spanning the whole row
/// group), the number of rows read, and the decoded columns asked to be kept (the rows
/// delivered only, in order), so that they need not be decoded a second time.
pub(crate) struct StageOutput {
    pub exact: RowSelection,
    pub read: u64,
    /// `None` when no row was read.
    pub kept: Vec<Option<ArrayRef>>,
}

/// Decode the stage's columns of row group `rg` (rows of `pre`, or all) from `chunk` and find
/// the rows to deliver; keep the decoded columns at positions `keep` of the stage's batches.
/// `first_row`: the row group's first row in the file.
#[allow(clippy::too_many_arguments)]
pub(crate) fn filter_rows(
    meta: &FileMeta,
    rg: usize,
    first_row: u64,
    stage: Stage,
    pre: Option<&RowSelection>,
    page_level: bool,
    chunk: SparseChunk,
    (batch_size, keep): (usize, &[usize]),
) -> Result<StageOutput> {
    let name = &*meta.file.name;
    let mask = ProjectionMask::leaves(meta.reader.parquet_schema(), stage.leaves.iter().copied());
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
    let rows = meta.reader.metadata().row_group(rg).num_rows().max(0) as usize;
    let positions = RowPositions::new(first_row, rows as u64, pre);
    let mut masks = Vec::new();
    let mut kept: Vec<Vec<ArrayRef>> = vec![Vec::new(); keep.len()];
    let mut read = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| Error::decode(e, name, rg))?;
        let n = batch.num_rows();
        let at = |e: Error| e.with_path(name).with_row_group(rg);
        let mut keep_rows: Option<BooleanArray> = match stage.filter {
            Some(f) => Some(f.evaluate(&batch).map_err(at)?),
            None => None,
        };
        if let Some(rf) = stage.row_filter {
            let roots: Vec<ArrayRef> = rf
                .columns
                .iter()
                .map(|&c| Arc::clone(batch.column(c)))
                .collect();
            let cols = rf
                .mapping
                .apply(&roots, n, || positions.range(read, n))
                .map_err(|e| at(Error::decode(e, name, rg)))?;
            let k = rf.filter.keep(&cols).map_err(at)?;
            if k.len() != n {
                return Err(Error::decode(
                    format!("the row filter returned {} values for {n} rows", k.len()),
                    name,
                    rg,
                ));
            }
            keep_rows = Some(match keep_rows {
                Some(prev) => arrow::compute::and_kleene(&prev, &k)?,
                None => k,
            });
        }
        let mask = keep_rows.unwrap_or_else(|| BooleanArray::from(vec![true; n]));
        let mask = match mask.null_count() {
            0 => mask,
            _ => prep_null_mask_filter(&mask),
        };
        for (out, &k) in kept.iter_mut().zip(keep) {
            out.push(arrow::compute::filter(batch.column(k), &mask)?);
        }
        masks.push(mask);
        read += n as u64;
    }
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
    let kept = kept
        .into_iter()
        .map(|parts| {
            let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            match refs.len() {
                0 => Ok(None),
                1 => Ok(Some(Arc::clone(&parts[0]))),
                _ => arrow::compute::concat(&refs).map(Some),
            }
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(StageOutput {
        exact: pad(exact, rows),
        read,
        kept,
    })
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

    #[test]
    fn pad_extends_and_cuts() {
        let sel: RowSelection = vec![RowSelector::select(3)].into();
        let p = pad(sel.clone(), 5);
        assert_eq!((p.row_count(), p.skipped_row_count()), (3, 2));
        let p = pad(sel, 2);
        assert_eq!((p.row_count(), p.skipped_row_count()), (2, 0));
    }
}
