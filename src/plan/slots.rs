//! Slots: decide the units of work of one file and the byte ranges each needs.
//!
//! A *slot* is one row group of one file, the unit of ordering. A slot holds one or more
//! *parts*: the column chunks one decode task reads. A row group whose projected columns are
//! large is split by top-level column into several parts, decoded in parallel and joined again
//! by the consumer, so one huge row group still keeps every decode thread busy.
//!
//! Invariants: every byte range a part will read lies inside its file (checked here, so a
//! corrupt footer is an error and never an out-of-bounds request); parts of one slot select
//! disjoint top-level columns whose union is the projection.

use std::ops::Range;
use std::sync::Arc;

use parquet::arrow::arrow_reader::RowSelection;
use parquet::file::metadata::RowGroupMetaData;

use crate::error::{Error, ErrorKind, Result};
use crate::footer::FileMeta;
use crate::plan::prune::{FileFilter, Verdict};
use crate::plan::selection::SelectedRows;

/// One part of a slot: the leaves one decode task reads, and the bytes it needs.
#[derive(Debug, Clone)]
pub(crate) struct PartPlan {
    /// Top-level columns of this part, in file order.
    pub roots: Vec<usize>,
    pub leaves: Vec<usize>,
    /// Column chunk byte ranges, in file order.
    pub ranges: Vec<Range<u64>>,
    pub compressed: u64,
    pub uncompressed: u64,
}

/// The first stage of a filtered row group (late materialization): the filter's columns,
/// fetched and decoded first to find the rows that match.
#[derive(Debug, Clone)]
pub(crate) struct FilterStage {
    pub leaves: Vec<usize>,
    pub ranges: Vec<Range<u64>>,
    pub compressed: u64,
    /// Statistics judged every row a match (`Verdict::All`): the stage only checks that
    /// claim, so the row group is fetched in one round. Statistics are the writer's word; a
    /// false minimum must not let through rows the filter excludes.
    pub check_only: bool,
}

/// One row group of one file: the unit of ordering.
#[derive(Debug, Clone)]
pub(crate) struct SlotPlan {
    pub row_group: usize,
    pub rows: u64,
    /// Position in its file of the row group's first row.
    pub first_row: u64,
    /// Rows to read (the caller's selection and the pages the filter may match), `None`:
    /// all. Never empty: a row group with nothing to read is not planned.
    pub selection: Option<Arc<RowSelection>>,
    /// Pages holding no selected row are left out of the fetch (with an offset index), so
    /// decoders must read by selectors, which never touch them; otherwise every page is
    /// fetched and parquet picks how to apply the selection (a bitmask when it is fragmented).
    pub page_level: bool,
    /// The filter still has to run on this row group (every row group of an exact filter).
    pub filter: Option<FilterStage>,
    pub parts: Vec<PartPlan>,
}

impl SlotPlan {
    /// Bytes the slot fetches at most (its parts, and its filter stage).
    pub fn compressed(&self) -> u64 {
        self.parts.iter().map(|p| p.compressed).sum::<u64>()
            + self.filter.as_ref().map_or(0, |f| f.compressed)
    }

    /// Whether [`Self::known_rows`] are statistics' word, still to be checked by the filter.
    pub fn claimed(&self) -> bool {
        self.filter.as_ref().is_some_and(|f| f.check_only)
    }

    /// Rows this slot delivers by its plan: those of its selection, unless a filter is left
    /// to decide; statistics' word when they judged every row a match (see [`Self::claimed`]).
    pub fn known_rows(&self) -> u64 {
        if self.filter.as_ref().is_some_and(|f| !f.check_only) {
            return 0;
        }
        self.selection
            .as_ref()
            .map_or(self.rows, |s| s.row_count() as u64)
    }
    /// Uncompressed bytes of the slot's column chunks.
    pub fn uncompressed(&self) -> u64 {
        self.parts.iter().map(|p| p.uncompressed).sum()
    }
}

/// What pruning decided for one file, before planning: per row group, the filter's verdict
/// from statistics and bloom filters, the rows the page index cannot exclude, the rows the
/// caller selected and the task did not delete, and which row groups the task reads at all.
#[derive(Debug, Clone, Default)]
pub(crate) struct FilePrune {
    pub filter: Option<Arc<FileFilter>>,
    /// The filter is exact (rows that do not match are not delivered); else it only prunes.
    pub exact: bool,
    /// Empty when there is no filter (every row group: `All`).
    pub verdicts: Vec<Verdict>,
    /// Row groups a bloom filter excluded (their verdict is `None`).
    pub by_bloom: Vec<bool>,
    /// Per row group: rows whose pages the filter may match (`None`: all, or no filter).
    pub pages: Vec<Option<RowSelection>>,
    /// Per row group: rows to read by the caller's selection and the task's deletes, exactly
    /// as long as the row group (`None`: all).
    /// Shared with the slots planned from it (a deletion vector's selection of a row group
    /// is tens of thousands of selectors: cloned per slot and part, 1-3% of a Delta scan).
    pub selected: Vec<Option<Arc<RowSelection>>>,
    /// Per row group: outside the task's byte range or row groups (empty: none is).
    pub excluded: Vec<bool>,
    /// The task has a row filter: every row group read runs the filter stage.
    pub row_filter: bool,
    /// Leaves the filter stage decodes (the exact filter's and the row filter's).
    pub stage_leaves: Vec<usize>,
}

/// Counts of what planning one file skipped.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Skipped {
    pub row_groups: u64,
    pub by_bloom: u64,
    pub pages: u64,
}

/// The validated byte range of column chunk `leaf` of row group `rg`.
fn chunk_range(meta: &FileMeta, rg: usize, leaf: usize) -> Result<Range<u64>> {
    let md = meta.reader.metadata();
    let rgm = md.row_group(rg);
    let bad = |msg: String| {
        Error::new(ErrorKind::CorruptFooter, msg)
            .with_path(&*meta.file.name)
            .with_row_group(rg)
    };
    if leaf >= rgm.num_columns() {
        return Err(bad(format!("column {leaf} missing from the row group")));
    }
    let col = rgm.column(leaf);
    let start = col
        .dictionary_page_offset()
        .unwrap_or(col.data_page_offset());
    let len = col.compressed_size();
    if start < 0 || len < 0 || (start as u64).saturating_add(len as u64) > meta.data_end {
        return Err(bad(format!(
            "column chunk {} at {start}+{len} lies outside the data of a {}-byte file",
            col.column_path(),
            meta.size
        )));
    }
    Ok(start as u64..start as u64 + len as u64)
}

/// Whether row group `rg` has an offset index for every column, so reads can skip pages.
pub(crate) fn has_offset_index(meta: &FileMeta, rg: usize) -> bool {
    let md = meta.reader.metadata();
    md.offset_index()
        .and_then(|oi| oi.get(rg))
        .is_some_and(|cols| cols.len() == md.row_group(rg).num_columns())
}

/// Byte ranges of column chunk `leaf` of row group `rg` that reading `selection`'s rows needs:
/// with an offset index (`page_level`), the dictionary page and the data pages holding
/// selected rows; else the whole chunk. Also returns how many data pages it leaves out.
pub(crate) fn chunk_ranges(
    meta: &FileMeta,
    rg: usize,
    leaf: usize,
    selection: Option<&SelectedRows>,
    page_level: bool,
) -> Result<(Vec<Range<u64>>, u64)> {
    let whole = chunk_range(meta, rg, leaf)?;
    let (Some(sel), true) = (selection, page_level) else {
        return Ok((vec![whole], 0));
    };
    let oi = &meta.reader.metadata().offset_index().expect("page_level")[rg][leaf];
    let locations = oi.page_locations();
    let inside = |r: &Range<u64>| r.start >= whole.start && r.end <= whole.end && r.end > r.start;
    let pages: Vec<Range<u64>> = locations
        .iter()
        .map(|p| {
            p.offset.max(0) as u64
                ..(p.offset.max(0) as u64).saturating_add(p.compressed_page_size.max(0) as u64)
        })
        .collect();
    if locations.is_empty() || !pages.iter().all(inside) {
        // An offset index that does not fit its chunk is not trusted: read the whole chunk.
        return Ok((vec![whole], 0));
    }
    let mut ranges = Vec::new();
    let first = pages[0].start;
    if first > whole.start {
        ranges.push(whole.start..first); // dictionary page
    }
    let mut skipped = 0;
    for (i, page) in pages.into_iter().enumerate() {
        let from = locations[i].first_row_index.max(0) as usize;
        let to = locations
            .get(i + 1)
            .map_or(usize::MAX, |p| p.first_row_index.max(0) as usize);
        if sel.any_in(from..to) {
            ranges.push(page);
        } else {
            skipped += 1;
        }
    }
    Ok((ranges, skipped))
}

/// Plan the row groups of a file that pruning keeps: byte ranges per projected column chunk
/// (or per page, under a selection with an offset index), the filter stage when the filter
/// still has to run, and the split into parts when the row group's projection is larger than
/// `split_bytes`.
pub(crate) fn plan_file(
    meta: &FileMeta,
    roots: &[(usize, Vec<usize>)],
    prune: &FilePrune,
    split_bytes: usize,
    threads: usize,
) -> Result<(Vec<SlotPlan>, Skipped)> {
    let md = meta.reader.metadata();
    let mut slots = Vec::with_capacity(md.num_row_groups());
    let mut skipped = Skipped::default();
    let mut first_row = 0u64;
    for (rg_idx, rg) in md.row_groups().iter().enumerate() {
        if rg.num_rows() < 0 {
            return Err(Error::new(
                ErrorKind::CorruptFooter,
                format!("negative row count {}", rg.num_rows()),
            )
            .with_path(&*meta.file.name)
            .with_row_group(rg_idx));
        }
        let rows = rg.num_rows() as u64;
        let row_group_start = first_row;
        first_row += rows;
        if prune.excluded.get(rg_idx).copied().unwrap_or(false) {
            continue;
        }
        let verdict = prune.verdicts.get(rg_idx).copied().unwrap_or(Verdict::All);
        let selection = selection_of(prune, rg_idx, verdict);
        let empty = selection.as_ref().is_some_and(|s| !s.selects_any());
        if verdict == Verdict::None || empty || (rows == 0 && prune.filter.is_some()) {
            skipped.row_groups += 1;
            if prune.by_bloom.get(rg_idx).copied().unwrap_or(false) {
                skipped.by_bloom += 1;
            }
            continue;
        }
        let mut pages = PageReads::new(meta, rg_idx, selection.as_deref());
        let filter = filter_stage(prune, &mut pages, verdict, &mut skipped)?;
        let fraction = selection
            .as_ref()
            .map_or(1.0, |s| s.row_count() as f64 / rows.max(1) as f64);
        // With a filter stage, the pages parts skip are known (and counted) only once the
        // filter has run (`drive::rounds`).
        let count = filter.is_none().then_some(&mut skipped);
        let per_root = root_parts(rg, roots, &mut pages, fraction, count)?;
        slots.push(SlotPlan {
            row_group: rg_idx,
            rows,
            first_row: row_group_start,
            selection,
            // Whether any page is actually left out decides how the decoders read.
            page_level: pages.offsets && pages.left_out,
            filter,
            parts: split_parts(per_root, split_bytes, threads),
        });
    }
    Ok((slots, skipped))
}

/// The filter stage of a row group with `verdict`, if it has one: every row group of an
/// exact filter (row groups judged `All` too: a false statistic must not add rows) or of a
/// task with a row filter.
fn filter_stage(
    prune: &FilePrune,
    pages: &mut PageReads,
    verdict: Verdict,
    skipped: &mut Skipped,
) -> Result<Option<FilterStage>> {
    let exact = prune.exact && prune.filter.is_some();
    if !(prune.row_filter || exact) {
        return Ok(None);
    }
    let (ranges, n) = pages.of_leaves(&prune.stage_leaves)?;
    skipped.pages += n;
    Ok(Some(FilterStage {
        leaves: prune.stage_leaves.clone(),
        compressed: ranges.iter().map(|r| r.end - r.start).sum(),
        ranges,
        check_only: !prune.row_filter && verdict == Verdict::All,
    }))
}

/// One part per projected root of row group `rg`: its ranges, and its uncompressed bytes
/// scaled to the `fraction` of rows read. Pages left out are added to `count`, if given.
fn root_parts(
    rg: &RowGroupMetaData,
    roots: &[(usize, Vec<usize>)],
    pages: &mut PageReads,
    fraction: f64,
    mut count: Option<&mut Skipped>,
) -> Result<Vec<PartPlan>> {
    let mut per_root = Vec::with_capacity(roots.len());
    for (root, leaves) in roots {
        let (ranges, n) = pages.of_leaves(leaves)?;
        if let Some(skipped) = count.as_deref_mut() {
            skipped.pages += n;
        }
        let uncompressed = leaves
            .iter()
            .map(|&leaf| (rg.column(leaf).uncompressed_size().max(0) as f64 * fraction) as u64)
            .sum();
        per_root.push(PartPlan {
            roots: vec![*root],
            leaves: leaves.clone(),
            compressed: ranges.iter().map(|r| r.end - r.start).sum(),
            ranges,
            uncompressed,
        });
    }
    Ok(per_root)
}

/// The rows of row group `rg` to read: the caller's selection and, when statistics could
/// not decide (`Some`), the pages the page index says may match; `None`: all.
fn selection_of(prune: &FilePrune, rg: usize, verdict: Verdict) -> Option<Arc<RowSelection>> {
    let user = prune.selected.get(rg).cloned().flatten();
    let pages = match verdict {
        Verdict::Some => prune.pages.get(rg).cloned().flatten(),
        _ => None,
    };
    match (user, pages) {
        (Some(a), Some(b)) => Some(Arc::new(a.intersection(&b))),
        (a, b) => a.or(b.map(Arc::new)),
    }
}

/// The byte ranges a row group's reads need: with a selection and an offset index
/// (`offsets`), only the pages holding selected rows; else whole column chunks.
struct PageReads<'a> {
    meta: &'a FileMeta,
    rg: usize,
    runs: Option<SelectedRows>,
    offsets: bool,
    /// Some read so far left out a page.
    left_out: bool,
}

impl<'a> PageReads<'a> {
    fn new(meta: &'a FileMeta, rg: usize, selection: Option<&RowSelection>) -> Self {
        let offsets = selection.is_some() && has_offset_index(meta, rg);
        let runs = selection.filter(|_| offsets).map(SelectedRows::new);
        PageReads {
            meta,
            rg,
            runs,
            offsets,
            left_out: false,
        }
    }

    /// The ranges of `leaves`' column chunks, and how many data pages they leave out.
    fn of_leaves(&mut self, leaves: &[usize]) -> Result<(Vec<Range<u64>>, u64)> {
        let mut ranges = Vec::with_capacity(leaves.len());
        let mut skipped = 0;
        for &leaf in leaves {
            let (r, n) = chunk_ranges(self.meta, self.rg, leaf, self.runs.as_ref(), self.offsets)?;
            ranges.extend(r);
            skipped += n;
        }
        self.left_out |= skipped > 0;
        Ok((ranges, skipped))
    }
}

/// The row group's reads (one part per root) split into parts for up to `threads` decode
/// tasks when their uncompressed bytes exceed `split_bytes`, balanced greedily: the largest
/// root to the lightest part.
fn split_parts(per_root: Vec<PartPlan>, split_bytes: usize, threads: usize) -> Vec<PartPlan> {
    let total: u64 = per_root.iter().map(|r| r.uncompressed).sum();
    let n_parts = if total > split_bytes as u64 {
        per_root.len().min(threads.max(1)).max(1)
    } else {
        1
    };
    let mut order: Vec<usize> = (0..per_root.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(per_root[i].uncompressed));
    let mut assign = vec![0usize; per_root.len()];
    let mut load = vec![0u64; n_parts];
    for i in order {
        let p = (0..n_parts).min_by_key(|&p| load[p]).unwrap_or(0);
        assign[i] = p;
        load[p] += per_root[i].uncompressed.max(1);
    }
    let mut parts: Vec<PartPlan> = (0..n_parts)
        .map(|_| PartPlan {
            roots: Vec::new(),
            leaves: Vec::new(),
            ranges: Vec::new(),
            compressed: 0,
            uncompressed: 0,
        })
        .collect();
    for (i, root) in per_root.into_iter().enumerate() {
        let p = &mut parts[assign[i]];
        p.roots.extend(root.roots);
        p.leaves.extend(root.leaves);
        p.ranges.extend(root.ranges);
        p.compressed += root.compressed;
        p.uncompressed += root.uncompressed;
    }
    parts.retain(|p| !p.roots.is_empty() || n_parts == 1);
    parts
}
