//! The filter stage: the first stage of late materialization ([`filter_rows`]). It decodes
//! only the columns the filter and the task's row filter read (of the rows the page index, the
//! caller's selection and the task's deletes kept), evaluates them exactly (arrow's kernels for
//! the filter, the row filter's own `keep`), and returns the selection of rows to deliver,
//! against which the other columns are then fetched and decoded. When every column it reads
//! is dictionary-encoded, [`dict_filter`] does the same without decoding a row; this row path
//! runs otherwise. Runs on the decode pool only.
//!
//! Invariants: the selection returned spans exactly its row group's rows; a filter's (or row
//! filter's) null counts as false.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray};
use arrow::buffer::BooleanBuffer;
use arrow::compute::prep_null_mask_filter;
use parquet::arrow::arrow_reader::RowSelection;

use crate::decode::bound::BatchLimit;
use crate::decode::dict_filter;
use crate::decode::pages::{row_group_reader, Leaves};
use crate::decode::positions::RowPositions;
use crate::decode::stage_io::{Stage, StageOutput};
use crate::error::{Error, Result};
use crate::footer::FileMeta;
use crate::io::chunk::SparseChunk;
use crate::plan::selection::pad;
use crate::validate::pages::PageSizes;

/// Decode the stage's columns of row group `rg` (rows of `pre`, or all) from `chunk` (whose page
/// headers claim `sizes`, from [`crate::validate::check_row_group`]) and find
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
    (chunk, sizes): (SparseChunk, Vec<PageSizes>),
    (limit, keep): (BatchLimit, &[usize]),
) -> Result<StageOutput> {
    let dict = (&chunk, &sizes[..], keep);
    if let Some(out) = dict_filter::filter_rows(meta, rg, &stage, pre, page_level, dict) {
        return Ok(out);
    }
    let name = &*meta.file.name;
    let columns = crate::decode::columns_named(meta, stage.leaves);
    let leaves = Leaves {
        leaves: stage.leaves,
        sizes,
    };
    let selection = (pre.cloned(), page_level);
    let reader = row_group_reader(&meta.reader, rg, leaves, chunk, selection, limit)
        .map_err(|e| Error::decoding(e, name, rg).context(&columns))?;
    let rows = meta.reader.metadata().row_group(rg).num_rows().max(0) as usize;
    let positions = RowPositions::new(first_row, rows as u64, pre);
    let mut masks = Vec::new();
    let mut kept: Vec<Vec<ArrayRef>> = vec![Vec::new(); keep.len()];
    let mut read = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| Error::decoding(e, name, rg).context(&columns))?;
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
                .apply(&roots, n, || positions.range(read, n), (name, rg))
                .map_err(at)?;
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
        let mask = keep_rows.unwrap_or_else(|| BooleanArray::new(BooleanBuffer::new_set(n), None));
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
    let matched = crate::plan::selection::from_masks(&masks);
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
        dictionary: false,
    })
}
