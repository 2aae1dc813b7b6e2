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

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow::buffer::BooleanBuffer;
use arrow::compute::prep_null_mask_filter;

use crate::decode::dict_filter;
use crate::decode::pages::{row_group_reader, Leaves, RowsRead};
use crate::decode::positions::RowPositions;
use crate::decode::stage_io::{Stage, StageOutput, StageRead};
use crate::error::{Error, Result};
use crate::footer::FileMeta;
use crate::plan::selection::pad;

/// Decode the stage's columns of `read`'s row group (the rows of its selection, or all) from
/// its fetched chunk and find the rows to deliver; keep the decoded columns at positions
/// `read.keep` of the stage's batches.
pub(crate) fn filter_rows(meta: &FileMeta, stage: Stage, read: StageRead) -> Result<StageOutput> {
    if let Some(out) = dict_filter::filter_rows(meta, &stage, &read) {
        return Ok(out);
    }
    let StageRead {
        rg,
        first_row,
        pre,
        page_level,
        chunk,
        sizes,
        limit,
        keep,
    } = read;
    let name = &*meta.file.name;
    let columns = crate::decode::columns_named(meta, stage.leaves);
    let leaves = Leaves {
        leaves: stage.leaves,
        sizes,
    };
    let rows = RowsRead {
        selection: pre.cloned(),
        page_level,
    };
    let reader = row_group_reader(&meta.reader, rg, leaves, chunk, rows, limit)
        .map_err(|e| Error::decoding(e, name, rg).context(&columns))?;
    let rows = meta.reader.metadata().row_group(rg).num_rows().max(0) as usize;
    let positions = RowPositions::new(first_row, rows as u64, pre);
    let mut masks = Vec::new();
    let mut kept: Vec<Vec<ArrayRef>> = vec![Vec::new(); keep.len()];
    let mut read = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| Error::decoding(e, name, rg).context(&columns))?;
        let (n, from) = (batch.num_rows(), read);
        let mask = batch_mask(&stage, &batch, || positions.range(from, n), (name, rg))?;
        for (out, &k) in kept.iter_mut().zip(keep) {
            out.push(arrow::compute::filter(batch.column(k), &mask)?);
        }
        masks.push(mask);
        read += batch.num_rows() as u64;
    }
    let matched = crate::plan::selection::from_masks(&masks);
    let exact = match pre {
        Some(pre) if pre.row_count() != read as usize => {
            let why = format!(
                "read {read} rows where the selection holds {}",
                pre.row_count()
            );
            return Err(Error::decode(why, name, rg));
        }
        Some(pre) => pre.and_then(&matched),
        None if read as usize != rows => {
            let why = format!("read {read} rows of a {rows}-row row group");
            return Err(Error::decode(why, name, rg));
        }
        None => matched,
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

/// The rows of one decoded `batch` the stage keeps (the filter and the row filter, ANDed;
/// null counts as not kept); `positions`: the batch's rows' positions in the file, for a row
/// filter that reads them.
fn batch_mask(
    stage: &Stage,
    batch: &RecordBatch,
    positions: impl FnOnce() -> ArrayRef,
    (name, rg): (&str, usize),
) -> Result<BooleanArray> {
    let n = batch.num_rows();
    let at = |e: Error| e.with_path(name).with_row_group(rg);
    let mut keep_rows: Option<BooleanArray> = match stage.filter {
        Some(f) => Some(f.evaluate(batch).map_err(at)?),
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
            .apply(&roots, n, positions, (name, rg))
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
    Ok(match mask.null_count() {
        0 => mask,
        _ => prep_null_mask_filter(&mask),
    })
}
