//! The dictionary filter: the filter stage ([`crate::decode::stage`]) without decoding a row,
//! when every column the filter reads is dictionary-encoded in the row group.
//!
//! Per column, the dictionary's values and the rows' indices are read by
//! [`read_chunk`](crate::decode::dictionary::read_chunk). Each leaf predicate of the filter is evaluated once per dictionary
//! entry, plus once on a null, with the same arrow kernels as the row path; the rows' verdicts
//! are looked up by index and combined through the filter's `AND`s and `OR`s. Output columns
//! the stage would have kept are gathered from the dictionary values with arrow's `take`.
//!
//! Invariants: the result equals the row path's (`stage::filter_rows` over decoded batches):
//! the filter is in negation normal form, so collapsing a leaf's null to false before `AND`/`OR`
//! keeps every row's final verdict. Anything this path does not handle (a page not
//! dictionary-encoded, nested columns, a row filter, pages left out of the fetch) or any error
//! (corrupt pages, a cast the dictionary's unused entries cannot take) returns `None`, and the
//! row path runs instead and reports errors as parquet does.

use std::sync::Arc;

use arrow::array::{Array, RecordBatch, UInt32Array};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{Field, Schema};
use parquet::arrow::arrow_reader::RowSelection;

use crate::decode::dictionary::{all_dictionary, read_chunk, DictChunk};
use crate::decode::flat::flat;
use crate::decode::pages::leaf_pages;
use crate::decode::scratch;
use crate::decode::stage_io::{Stage, StageOutput, StageRead};
use crate::error::{Error, ErrorKind, Result};
use crate::expr::Expr;
use crate::footer::FileMeta;
use crate::plan::prune::filter::leaf_column;
use crate::plan::prune::FileFilter;

/// The filter stage of `read`'s row group (see [`crate::decode::stage::filter_rows`]) on
/// dictionary indices, or `None` when this path does not apply or fails (the row path then
/// runs).
pub(crate) fn filter_rows(meta: &FileMeta, stage: &Stage, read: &StageRead) -> Option<StageOutput> {
    let (rg, pre, page_level) = (read.rg, read.pre, read.page_level);
    let (chunk, sizes, keep) = (&read.chunk, &read.sizes[..], read.keep);
    let filter = stage.filter?;
    if stage.row_filter.is_some()
        || page_level
        || matches!(filter.expr, Expr::Literal(_))
        || stage.leaves != filter.leaves.as_slice()
        || sizes.len() != stage.leaves.len()
    {
        return None;
    }
    let md = meta.reader.metadata();
    let group = md.row_group(rg);
    let rows = usize::try_from(group.num_rows()).ok()?;
    // An index per row: not for a row group larger than a row buffer may be (the row path
    // reads it in batches).
    if rows as u64 > stage.buffer_rows {
        return None;
    }
    if md.file_metadata().num_rows() < group.num_rows() {
        // A footer claiming fewer rows in the file than in a row group: parquet reads it in
        // batches of at most the file's count; leave that to the row path.
        return None;
    }
    let descr = meta.reader.parquet_schema();
    let mut columns = Vec::with_capacity(stage.leaves.len());
    for (&leaf, sizes) in stage.leaves.iter().zip(sizes) {
        let cd = descr.column(leaf);
        if !flat(&cd) || all_dictionary(group.column(leaf)) == Some(false) {
            return None;
        }
        let pages = leaf_pages(md, rg, leaf, chunk, Some(sizes.clone())).ok()?;
        let nullable = cd.max_def_level() == 1;
        columns.push((
            leaf,
            read_chunk(&meta.reader, (rg, leaf), pages, nullable, rows)?,
        ));
    }
    let at = |leaf: usize| columns.iter().find(|(l, _)| *l == leaf).map(|(_, c)| c);
    let matched = mask(&filter.expr, filter, &at, rows).ok()?;
    let (kept_rows, read) = match pre {
        None => (matched, rows),
        Some(pre) => (&matched & &selected(pre, rows)?, pre.row_count()),
    };
    // The kept rows as runs, found once: the selection, and each kept column's indices copied
    // a run at a time (a filter keeping most rows has long runs; a walk bit by bit cost Q1's
    // columns 6% of the scan). Counted first, so that the vector never grows by copying.
    let mut runs = Vec::with_capacity(kept_rows.set_slices().count());
    runs.extend(kept_rows.set_slices().map(|(a, b)| a..b));
    let count = kept_rows.count_set_bits();
    let mut kept = Vec::with_capacity(keep.len());
    for &k in keep {
        let column = &columns.get(k)?.1;
        // The kept rows' indices in a buffer of the thread's (`scratch`), taken back once the
        // values are gathered.
        let mut idx = scratch::take(count);
        for run in &runs {
            idx.extend_from_slice(column.rows.get(run.clone())?);
        }
        let idx = UInt32Array::from(idx);
        kept.push(Some(arrow::compute::take(&column.values, &idx, None).ok()?));
        if let Ok(v) = idx.into_parts().1.into_inner().into_vec::<u32>() {
            scratch::give(v);
        }
    }
    let exact = crate::plan::selection::from_runs(|| runs.iter().cloned(), rows);
    Some(StageOutput {
        exact: crate::plan::selection::pad(exact, rows),
        read: read as u64,
        kept,
        dictionary: true,
    })
}

/// Per row of the row group: whether `e` (in negation normal form) holds, false for null.
fn mask<'a>(
    e: &Expr,
    filter: &FileFilter,
    column: &impl Fn(usize) -> Option<&'a DictChunk>,
    rows: usize,
) -> Result<BooleanBuffer> {
    Ok(match e {
        Expr::Literal(true) => BooleanBuffer::new_set(rows),
        Expr::Literal(false) => BooleanBuffer::new_unset(rows),
        Expr::And(a, b) => {
            let a = mask(a, filter, column, rows)?;
            if a.count_set_bits() == 0 {
                return Ok(a);
            }
            &a & &mask(b, filter, column, rows)?
        }
        Expr::Or(a, b) => &mask(a, filter, column, rows)? | &mask(b, filter, column, rows)?,
        Expr::Not(_) => {
            return Err(Error::new(
                ErrorKind::Unsupported,
                "a filter not in negation normal form",
            ))
        }
        leaf => {
            let fc = filter.column(leaf_column(leaf));
            let c = column(fc.leaf)
                .ok_or_else(|| Error::new(ErrorKind::Unsupported, "a filter column not read"))?;
            let values = if c.values.data_type() == &fc.data_type {
                Arc::clone(&c.values)
            } else {
                let opts = arrow::compute::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                arrow::compute::cast_with_options(&c.values, &fc.data_type, &opts)?
            };
            let field = Field::new(&fc.name, fc.data_type.clone(), true);
            let batch = RecordBatch::try_new(Arc::new(Schema::new(vec![field])), vec![values])?;
            let verdict = leaf.evaluate(&batch)?;
            let lut: Vec<bool> = (0..verdict.len())
                .map(|i| verdict.is_valid(i) && verdict.value(i))
                .collect();
            BooleanBuffer::collect_bool(rows, |i| lut[c.rows[i] as usize])
        }
    })
}

/// The rows of `sel` as a mask over a row group of `rows` rows; `None` if it spans more.
fn selected(sel: &RowSelection, rows: usize) -> Option<BooleanBuffer> {
    let mut b = arrow::array::BooleanBufferBuilder::new(rows);
    for s in sel.iter() {
        if b.len() + s.row_count > rows {
            return None;
        }
        b.append_n(s.row_count, !s.skip);
    }
    b.append_n(rows - b.len(), false);
    Some(b.finish())
}
