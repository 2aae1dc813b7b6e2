//! Materialize: fetch one slot's bytes and start its decoders, on the IO runtime.
//!
//! A slot without a filter stage fetches its parts' byte ranges in one coalesced round. A
//! slot with one (late materialization: the scan's exact filter, or the task's row filter)
//! first fetches and decodes the columns those read, on the decode pool, to find the rows to
//! deliver; then fetches only the pages of the other columns that hold such rows (or, when
//! that cannot pay, everything in the first round).
//!
//! Invariants: bytes already fetched are never requested again; a slot that delivers no row
//! ends with `SlotDone` after fetching only its filter columns; the decoders of a slot share
//! one zero-copy chunk and one [`Held`] that keeps its bytes counted until they end.

use std::sync::Arc;

use crate::decode::assemble::Assembler;
use crate::decode::direct;
use crate::decode::part::{PartDecoder, PartRows};
use crate::decode::positions::RowPositions;
use crate::decode::stage;
use crate::drive::DriveCtx;
use crate::error::{Error, ErrorKind, Result};
use crate::flow::event::Event;
use crate::flow::held::Held;
use crate::flow::part::PartCtl;
use crate::footer::FileMeta;
use crate::io::chunk::SparseChunk;
use crate::metrics::Metrics;
use crate::options::Reach;
use crate::plan::file::FileRun;
use crate::plan::prune::Verdict;
use crate::plan::selection::SelectedRows;
use crate::plan::slots::{self, FilterStage, SlotPlan};

/// Fetch one slot's bytes and start its decoders. One fetch per stage: the parts' ranges are
/// coalesced together (so a gap between two parts' columns is never fetched twice) and every
/// part decodes from the same zero-copy chunk.
///
/// With a filter stage (late materialization), the filter's columns are fetched first and
/// decoded on the pool to find the matching rows; then only the pages of the projected
/// columns that hold matching rows are fetched. A row group with no match delivers nothing.
pub(crate) async fn fetch_slot(
    sh: &Arc<DriveCtx>,
    run: Arc<FileRun>,
    clustered: bool,
    plan: SlotPlan,
    ctls: Vec<Arc<PartCtl>>,
    mut held: Held,
    slot: usize,
) -> Result<()> {
    // Taken before the first await: a probe reports even if this slot fails or is dropped.
    let mut probe = sh.late.probe(slot);
    let rg = plan.row_group;
    let meta = Arc::clone(&run.meta);
    let mut plan = plan;
    // Decoded columns the filter stage hands over, by file root.
    let mut stage_cols: Vec<(usize, arrow::array::ArrayRef)> = Vec::new();
    let filter_stage = plan.filter.clone();
    let (selection, page_level, chunk, prepared) = match &filter_stage {
        Some(stage) => {
            // Late materialization costs a round trip; it pays only when many pages of the
            // other columns hold no match. Fetch everything at once when the page index (or
            // the caller's selection) already narrowed the rows to a quarter, when statistics
            // found the filter's column clustered, or when late materialization has not been
            // saving bytes on this scan.
            let narrowed = plan
                .selection
                .as_ref()
                .is_some_and(|s| s.row_count() as u64 * 4 <= plan.rows);
            // Whether it would save bytes is decided by the scan's first slots (probes), so the
            // same scan makes the same requests every run (`late`). A probe fetches in one
            // round and measures what a second round would have fetched.
            let measure = probe.is_some() && !(narrowed || clustered);
            let single = narrowed || clustered || measure || !sh.late.worth_it(slot).await;
            let mut wanted = stage.ranges.clone();
            if single {
                wanted.extend(plan.parts.iter().flat_map(|p| p.ranges.iter().cloned()));
            }
            let first = fetch_ranges(sh, &meta, &wanted, plan.page_level, rg).await?;
            held.fetched(first.bytes());
            let (r, c, pre) = (Arc::clone(&run), first.clone(), plan.selection.clone());
            let (page_level, first_row) = (plan.page_level, plan.first_row);
            let limit = sh.decode.batch_limit();
            let leaves = stage.leaves.clone();
            let checks = sh.decode.checks();
            let group_rows = meta.reader.metadata().row_group(rg).num_rows().max(0) as u64;
            // Output columns the stage decodes whole: kept from it, not decoded again (not
            // past the rows a row buffer may hold: decoded again by the parts then).
            let reused = match group_rows <= checks.buffer_rows() {
                true => reusable(&run, &stage.leaves),
                false => Vec::new(),
            };
            // The leaves each part will read once the stage's columns are kept.
            let part_leaves: Vec<Vec<usize>> = plan
                .parts
                .iter()
                .map(|p| {
                    let mut leaves = p.leaves.clone();
                    leaves.retain(|&l| !reused.iter().any(|(root, _)| *root == root_of(&run, l)));
                    leaves
                })
                .collect();
            let keep: Vec<usize> = reused.iter().map(|(_, k)| *k).collect();
            let metrics = Arc::clone(sh.metrics());
            // The second round reads only the pages holding selected rows: their runs.
            let late_pages = (!single || measure) && slots::has_offset_index(&meta, rg);
            let work = move || {
                let t = std::time::Instant::now();
                let md = (r.meta.reader.metadata().as_ref(), &*r.meta.file.name);
                let sizes = crate::validate::check_row_group(md, rg, &leaves, &c, checks)?;
                // A row group too large for the stage's row-sized state (a bit per row, kept
                // columns) is refused once its pages' counts were found to agree with its own,
                // before anything is decoded for it.
                if group_rows > checks.stage_rows() {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!(
                            "row group {rg} has {group_rows} rows, more than a filter is \
                             evaluated over at once ({}, with this memory budget): read it \
                             without a filter, or with a larger memory_budget",
                            checks.stage_rows()
                        ),
                    )
                    .with_path(md.1)
                    .with_row_group(rg));
                }
                let p = &r.prune;
                let exact_filter = p.exact && p.verdicts.get(rg) == Some(&Verdict::Some);
                let stage = crate::decode::stage_io::Stage {
                    filter: p.filter.as_deref().filter(|_| exact_filter),
                    row_filter: r.row_filter.as_ref(),
                    leaves: &leaves,
                    buffer_rows: checks.buffer_rows(),
                };
                let res = stage::filter_rows(
                    &r.meta,
                    rg,
                    first_row,
                    stage,
                    pre.as_deref(),
                    page_level,
                    (c, sizes),
                    (limit, &keep),
                );
                // Counted here, not on the IO runtime: a scattered selection has a run every
                // few rows, and each count walks them all. So is the selection the parts'
                // direct readers share (`direct::Prepared`), once for all of them.
                let res = res.map(|out| {
                    let summary = direct::Summary::of(&out.exact);
                    let kept = summary.selected as u64;
                    let every_row = summary.selected == summary.total;
                    let runs = late_pages.then(|| SelectedRows::new(&out.exact));
                    let prepared = (kept > 0 && !every_row).then(|| {
                        let sel = (&out.exact, summary);
                        Arc::new(direct::Prepared::new(&r.meta.reader, rg, &part_leaves, sel))
                    });
                    (out, kept, every_row, runs, prepared)
                });
                Metrics::add_time(&metrics.decode_nanos, t.elapsed());
                res
            };
            let (out, kept_rows, every_row, runs, prepared) = sh
                .on_pool((&meta.file.name, "filter evaluation"), work)
                .await?;
            let (exact, read) = (out.exact, out.read);
            if kept_rows > 0 {
                stage_cols = reused
                    .iter()
                    .zip(out.kept)
                    .filter_map(|((root, _), a)| Some((*root, a?)))
                    .collect();
                let taken = |root: usize| stage_cols.iter().any(|(x, _)| *x == root);
                for part in plan.parts.iter_mut() {
                    part.roots.retain(|&r| !taken(r));
                    part.leaves.retain(|&l| !taken(root_of(&run, l)));
                }
            }
            Metrics::add(&sh.metrics().rows_filtered, read - kept_rows);
            Metrics::add(&sh.metrics().dictionary_filtered, out.dictionary as u64);
            if kept_rows == 0 {
                if let Some(probe) = probe.take().filter(|_| !single || measure) {
                    // Late materialization saved every other column's bytes.
                    probe.record(late_bytes(&meta, &plan, stage)?, 0);
                }
                sh.decode.outbox.send(Event::SlotDone { slot, batches: 0 });
                return Ok(());
            }
            // Pages the decoders must not touch: left out by the plan, or by this round.
            let mut left_out = plan.page_level;
            let chunk = if single {
                if let Some(probe) = probe.take().filter(|_| measure) {
                    let after = second_round(&meta, &plan, stage, runs.as_ref(), late_pages)?;
                    probe.record(late_bytes(&meta, &plan, stage)?, after);
                }
                first
            } else {
                let mut ranges = Vec::new();
                let mut after = 0;
                for leaf in plan.parts.iter().flat_map(|p| &p.leaves) {
                    let (r, skipped) =
                        slots::chunk_ranges(&meta, rg, *leaf, runs.as_ref(), late_pages)?;
                    if !stage.leaves.contains(leaf) {
                        Metrics::add(&sh.metrics().pages_pruned, skipped);
                        after += r.iter().map(|r| r.end - r.start).sum::<u64>();
                        left_out |= skipped > 0;
                    }
                    ranges.extend(r.into_iter().filter(|r| !first.covers(r)));
                }
                if let Some(probe) = probe.take() {
                    probe.record(late_bytes(&meta, &plan, stage)?, after);
                }
                let second = fetch_ranges(sh, &meta, &ranges, late_pages, rg).await?;
                held.fetched(second.bytes());
                let mut chunk = first;
                chunk.merge(&second);
                chunk
            };
            let page_level = left_out;
            // Every row matched: decode without a selection (cheaper than one long run).
            let exact = (!every_row).then(|| Arc::new(exact));
            (exact, page_level, chunk, prepared)
        }
        None => {
            let ranges: Vec<_> = plan.parts.iter().flat_map(|p| p.ranges.clone()).collect();
            let chunk = fetch_ranges(sh, &meta, &ranges, plan.page_level, rg).await?;
            held.fetched(chunk.bytes());
            (plan.selection.clone(), plan.page_level, chunk, None)
        }
    };
    let held = Arc::new(held);
    let positions = run
        .mapping
        .has_row_index()
        .then(|| RowPositions::new(plan.first_row, plan.rows, selection.as_deref()));
    let roots: Vec<Vec<usize>> = plan.parts.iter().map(|p| p.roots.clone()).collect();
    let assembler = Arc::new(Assembler::new(
        Arc::clone(&sh.decode),
        Arc::clone(&run),
        (slot, rg),
        (&roots, stage_cols),
        positions,
    ));
    let rows = PartRows {
        selection,
        page_level,
        prepared,
    };
    for (part, (part_plan, ctl)) in plan.parts.into_iter().zip(ctls).enumerate() {
        PartDecoder::new(
            Arc::clone(&sh.decode),
            (ctl, Arc::clone(&assembler)),
            (slot, part),
            (Arc::clone(&run), rg),
            part_plan,
            (chunk.clone(), Arc::clone(&held)),
            rows.clone(),
        )
        .spawn();
    }
    Ok(())
}

/// Bytes of the slot's non-filter columns under the page index's selection: what late
/// materialization could have had to fetch.
fn late_bytes(meta: &FileMeta, plan: &SlotPlan, stage: &FilterStage) -> Result<u64> {
    let rg = plan.row_group;
    let offsets = slots::has_offset_index(meta, rg);
    let mut before = 0;
    let runs = plan
        .selection
        .as_deref()
        .filter(|_| offsets)
        .map(SelectedRows::new);
    for leaf in plan.parts.iter().flat_map(|p| &p.leaves) {
        if !stage.leaves.contains(leaf) {
            let (r, _) = slots::chunk_ranges(meta, rg, *leaf, runs.as_ref(), offsets)?;
            before += r.iter().map(|r| r.end - r.start).sum::<u64>();
        }
    }
    Ok(before)
}

/// Bytes a second round would have fetched for `plan` with `stage`: the pages of its other
/// columns that hold the rows of `runs` (all their pages without `late_pages`).
fn second_round(
    meta: &FileMeta,
    plan: &SlotPlan,
    stage: &FilterStage,
    runs: Option<&SelectedRows>,
    late_pages: bool,
) -> Result<u64> {
    let mut after = 0;
    for leaf in plan.parts.iter().flat_map(|p| &p.leaves) {
        if !stage.leaves.contains(leaf) {
            let (r, _) = slots::chunk_ranges(meta, plan.row_group, *leaf, runs, late_pages)?;
            after += r.iter().map(|r| r.end - r.start).sum::<u64>();
        }
    }
    Ok(after)
}

/// Fetch `ranges` of `meta`'s file (serving what its footer read holds).
async fn fetch_ranges(
    sh: &DriveCtx,
    meta: &FileMeta,
    ranges: &[std::ops::Range<u64>],
    page_level: bool,
    rg: usize,
) -> Result<SparseChunk> {
    let reach = Reach::of(meta.file.store.as_ref());
    let gap = sh.opts.coalesce_gap(reach);
    // Page-level plans skip data between pages: coalescing across large gaps would fetch it.
    let gap = if page_level {
        gap.min(PAGE_COALESCE_GAP)
    } else {
        gap
    };
    let request = sh.opts.request_size(reach);
    let (chunk, _) = sh
        .fetcher
        .ranges(
            (&meta.file, &format!("row group {rg}'s column chunks")),
            meta.size,
            ranges,
            &meta.cached,
            gap,
            request,
        )
        .await?;
    Ok(chunk)
}

/// Largest gap coalesced between the pages of a page-level fetch plan.
const PAGE_COALESCE_GAP: u64 = 64 << 10;

/// The file root of leaf `leaf`.
fn root_of(run: &FileRun, leaf: usize) -> usize {
    run.meta.reader.parquet_schema().get_column_root_idx(leaf)
}

/// The roots the mapping reads whose leaves are exactly the filter stage's leaves of that
/// root (so the stage decodes them as the parts would), with their column in the stage's
/// batches.
fn reusable(run: &FileRun, stage_leaves: &[usize]) -> Vec<(usize, usize)> {
    let mut stage_roots: Vec<usize> = stage_leaves.iter().map(|&l| root_of(run, l)).collect();
    stage_roots.dedup();
    run.mapping
        .roots
        .iter()
        .filter_map(|(root, leaves)| {
            let in_stage: Vec<usize> = stage_leaves
                .iter()
                .copied()
                .filter(|&l| root_of(run, l) == *root)
                .collect();
            (in_stage == *leaves)
                .then(|| {
                    stage_roots
                        .iter()
                        .position(|r| r == root)
                        .map(|k| (*root, k))
                })
                .flatten()
        })
        .collect()
}
