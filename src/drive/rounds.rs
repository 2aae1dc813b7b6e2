//! Late materialization of one slot: its filter stage's fetch rounds, on the IO runtime.
//!
//! The first round fetches the columns the filter reads (with every other column too, when
//! a second round cannot pay); the filter is evaluated on the decode pool ([`StageJob`]);
//! the second round fetches only the pages of the other columns that hold matching rows.
//! Whether a second round pays is decided by the scan's first slots, its probes (`late`),
//! so that the same scan makes the same requests every run.
//!
//! Invariants: bytes of the first round are never requested again; a probe reports once,
//! measured or not (its [`Probe`] is dropped with the slot); a slot none of whose rows
//! match fetches nothing after its first round.

use std::sync::Arc;

use arrow::array::ArrayRef;
use parquet::arrow::arrow_reader::RowSelection;

use crate::decode::bound::BatchLimit;
use crate::decode::direct;
use crate::decode::stage;
use crate::decode::stage_io::{Stage, StageOutput, StageRead};
use crate::drive::claims::Claim;
use crate::drive::fetched::{fetch_ranges, Fetched};
use crate::drive::late::Probe;
use crate::drive::DriveCtx;
use crate::error::{Error, ErrorKind, Result};
use crate::flow::held::Held;
use crate::footer::FileMeta;
use crate::io::chunk::SparseChunk;
use crate::metrics::Metrics;
use crate::plan::file::FileRun;
use crate::plan::selection::SelectedRows;
use crate::plan::slots::{self, FilterStage, SlotPlan};
use crate::validate::pages::PageChecks;

/// One slot whose filter stage still has to run.
pub(super) struct LateSlot<'a> {
    pub ctx: &'a Arc<DriveCtx>,
    pub run: &'a Arc<FileRun>,
    pub slot: usize,
    /// Statistics found the filter's column clustered: matches sit together.
    pub clustered: bool,
    /// The report this slot owes, if it is one of the scan's probes.
    pub probe: Option<Probe<'a>>,
    /// The rows a limit counted before this slot's filter checked them, owed a settlement.
    pub claim: Option<Claim>,
}

impl LateSlot<'_> {
    /// Fetch the slot's bytes around its filter `stage`, narrowing `plan`'s parts to the
    /// columns the stage did not decode; `None` when no row matches.
    pub async fn fetch(
        self,
        stage: &FilterStage,
        plan: &mut SlotPlan,
        held: &mut Held,
    ) -> Result<Option<Fetched>> {
        let LateSlot {
            ctx,
            run,
            slot,
            clustered,
            mut probe,
            claim,
        } = self;
        let (meta, rg) = (&run.meta, plan.row_group);
        let rounds = Rounds::decide(ctx, run, plan, stage, clustered, probe.is_some(), slot).await;
        let mut wanted = stage.ranges.clone();
        if rounds.single {
            wanted.extend(plan.parts.iter().flat_map(|p| p.ranges.iter().cloned()));
        }
        let first = fetch_ranges(ctx, meta, &wanted, plan.page_level, rg).await?;
        held.fetched(first.bytes());

        let job = StageJob::new(ctx, run, stage, plan, first.clone(), rounds.late_pages);
        let reused = job.reused.clone();
        let done = ctx
            .on_pool((&meta.file.name, "filter evaluation"), move || job.run())
            .await?;
        let out = done.out;
        let kept_rows = done.kept;
        if let Some(claim) = claim {
            claim.kept(kept_rows);
        }
        let stage_cols = match kept_rows > 0 {
            true => take_stage_columns(run, plan, &reused, out.kept),
            false => Vec::new(),
        };
        Metrics::add(&ctx.metrics().rows_filtered, out.read - kept_rows);
        Metrics::add(&ctx.metrics().dictionary_filtered, out.dictionary as u64);
        if kept_rows == 0 {
            if let Some(probe) = probe.take().filter(|_| !rounds.single || rounds.measure) {
                // Late materialization saved every other column's bytes.
                probe.record(late_bytes(meta, plan, stage)?, 0);
            }
            return Ok(None);
        }
        let runs = done.runs.as_ref();
        // Pages the decoders must not touch: left out by the plan, or by the second round.
        let (chunk, page_level) = if rounds.single {
            if let Some(probe) = probe.take().filter(|_| rounds.measure) {
                let none = SparseChunk::default();
                let second = SecondRound::plan(meta, plan, stage, runs, rounds.late_pages, &none)?;
                probe.record(late_bytes(meta, plan, stage)?, second.after);
            }
            (first, plan.page_level)
        } else {
            let second = SecondRound::plan(meta, plan, stage, runs, rounds.late_pages, &first)?;
            Metrics::add(&ctx.metrics().pages_pruned, second.skipped);
            if let Some(probe) = probe.take() {
                probe.record(late_bytes(meta, plan, stage)?, second.after);
            }
            let bytes = fetch_ranges(ctx, meta, &second.ranges, rounds.late_pages, rg).await?;
            held.fetched(bytes.bytes());
            let mut chunk = first;
            chunk.merge(&bytes);
            (chunk, plan.page_level || second.skipped > 0)
        };
        Ok(Some(Fetched {
            // Every row matched: decode without a selection (cheaper than one long run).
            selection: (!done.every_row).then(|| Arc::new(out.exact)),
            page_level,
            chunk,
            prepared: done.prepared,
            stage_cols,
        }))
    }
}

/// How one slot's filter stage fetches: in one round or two, and whether it measures.
#[derive(Debug, Clone, Copy)]
struct Rounds {
    /// Fetch the filter's columns and every other column in one round.
    single: bool,
    /// A probe: fetch in one round and report what a second round would have fetched.
    measure: bool,
    /// A second round (real or measured) reads only the pages holding selected rows.
    late_pages: bool,
}

impl Rounds {
    /// Late materialization costs a round trip; it pays only when many pages of the other
    /// columns hold no match. Fetch everything at once when the page index (or the caller's
    /// selection) already narrowed the rows to a quarter, when statistics found the filter's
    /// column clustered or judged every row a match, or when late materialization has not
    /// been saving bytes on this scan. A probe fetches in one round and measures what a
    /// second round would have fetched.
    async fn decide(
        ctx: &DriveCtx,
        run: &FileRun,
        plan: &SlotPlan,
        stage: &FilterStage,
        clustered: bool,
        probe: bool,
        slot: usize,
    ) -> Rounds {
        let narrowed = plan
            .selection
            .as_ref()
            .is_some_and(|s| s.row_count() as u64 * 4 <= plan.rows);
        // A row group statistics judged all matching: nothing for a probe to measure, and a
        // second round would only add its round trip.
        let one_round = narrowed || clustered || stage.check_only;
        let measure = probe && !one_round;
        let single = one_round || measure || !ctx.late.worth_it(slot).await;
        let late_pages = (!single || measure) && slots::has_offset_index(&run.meta, plan.row_group);
        Rounds {
            single,
            measure,
            late_pages,
        }
    }
}

/// A slot's second round: the pages of its other columns that hold matching rows.
struct SecondRound {
    /// Ranges not fetched by the first round.
    ranges: Vec<std::ops::Range<u64>>,
    /// Bytes of the other columns' pages the round reads (fetched before or not).
    after: u64,
    /// Pages of the other columns left out: they hold no selected row.
    skipped: u64,
}

impl SecondRound {
    /// The pages of `plan`'s columns outside `stage` holding the rows of `runs` (every page
    /// unless `late_pages`), less what `first` holds.
    fn plan(
        meta: &FileMeta,
        plan: &SlotPlan,
        stage: &FilterStage,
        runs: Option<&SelectedRows>,
        late_pages: bool,
        first: &SparseChunk,
    ) -> Result<SecondRound> {
        let mut round = SecondRound {
            ranges: Vec::new(),
            after: 0,
            skipped: 0,
        };
        for leaf in plan.parts.iter().flat_map(|p| &p.leaves) {
            let (r, skipped) = slots::chunk_ranges(meta, plan.row_group, *leaf, runs, late_pages)?;
            if !stage.leaves.contains(leaf) {
                round.after += r.iter().map(|r| r.end - r.start).sum::<u64>();
                round.skipped += skipped;
            }
            round
                .ranges
                .extend(r.into_iter().filter(|r| !first.covers(r)));
        }
        Ok(round)
    }
}

/// Keep the output columns the stage decoded whole (`reused`: root and stage column) and
/// take them out of `plan`'s parts.
fn take_stage_columns(
    run: &FileRun,
    plan: &mut SlotPlan,
    reused: &[(usize, usize)],
    kept: Vec<Option<ArrayRef>>,
) -> Vec<(usize, ArrayRef)> {
    let stage_cols: Vec<(usize, ArrayRef)> = reused
        .iter()
        .zip(kept)
        .filter_map(|((root, _), a)| Some((*root, a?)))
        .collect();
    let taken = |root: usize| stage_cols.iter().any(|(x, _)| *x == root);
    for part in plan.parts.iter_mut() {
        part.roots.retain(|&r| !taken(r));
        part.leaves.retain(|&l| !taken(root_of(run, l)));
    }
    stage_cols
}

/// The filter stage's work on the decode pool: check the fetched pages of its columns,
/// evaluate the filter, and work out what the slot's parts share.
struct StageJob {
    run: Arc<FileRun>,
    rg: usize,
    first_row: u64,
    chunk: SparseChunk,
    /// The plan's selection, applied before the filter.
    pre: Option<Arc<RowSelection>>,
    page_level: bool,
    leaves: Vec<usize>,
    /// Output columns the stage decodes whole: root, and their column in its batches.
    reused: Vec<(usize, usize)>,
    /// The leaves each part reads once the reused columns are kept.
    part_leaves: Vec<Vec<usize>>,
    /// Count the selection's runs for a second round that reads only their pages.
    late_pages: bool,
    limit: BatchLimit,
    checks: PageChecks,
    metrics: Arc<Metrics>,
}

/// What [`StageJob::run`] found.
struct StageDone {
    out: StageOutput,
    kept: u64,
    every_row: bool,
    runs: Option<SelectedRows>,
    prepared: Option<Arc<direct::Prepared>>,
}

impl StageJob {
    fn new(
        ctx: &DriveCtx,
        run: &Arc<FileRun>,
        stage: &FilterStage,
        plan: &SlotPlan,
        chunk: SparseChunk,
        late_pages: bool,
    ) -> Self {
        let rg = plan.row_group;
        let checks = ctx.decode.checks();
        let group_rows = run.meta.reader.metadata().row_group(rg).num_rows().max(0) as u64;
        // Output columns the stage decodes whole: kept from it, not decoded again (not past
        // the rows a row buffer may hold: decoded again by the parts then).
        let reused = match group_rows <= checks.buffer_rows() {
            true => reusable(run, &stage.leaves),
            false => Vec::new(),
        };
        let part_leaves = plan
            .parts
            .iter()
            .map(|p| {
                let mut leaves = p.leaves.clone();
                leaves.retain(|&l| !reused.iter().any(|(root, _)| *root == root_of(run, l)));
                leaves
            })
            .collect();
        StageJob {
            run: Arc::clone(run),
            rg,
            first_row: plan.first_row,
            chunk,
            pre: plan.selection.clone(),
            page_level: plan.page_level,
            leaves: stage.leaves.clone(),
            reused,
            part_leaves,
            late_pages,
            limit: ctx.decode.batch_limit(),
            checks,
            metrics: Arc::clone(ctx.metrics()),
        }
    }

    fn run(self) -> Result<StageDone> {
        let t = std::time::Instant::now();
        let (r, rg, checks) = (&self.run, self.rg, self.checks);
        let md = (r.meta.reader.metadata().as_ref(), &*r.meta.file.name);
        let sizes = crate::validate::check_row_group(md, rg, &self.leaves, &self.chunk, checks)?;
        // A row group too large for the stage's row-sized state (a bit per row, kept
        // columns) is refused once its pages' counts were found to agree with its own,
        // before anything is decoded for it.
        let group_rows = md.0.row_group(rg).num_rows().max(0) as u64;
        if group_rows > checks.stage_rows() {
            return Err(Error::new(
                ErrorKind::Unsupported,
                format!(
                    "row group {rg} has {group_rows} rows, more than a filter is evaluated \
                     over at once ({}, with this memory budget): read it without a filter, \
                     or with a larger memory_budget",
                    checks.stage_rows()
                ),
            )
            .with_path(md.1)
            .with_row_group(rg));
        }
        let p = &r.prune;
        // Row groups judged `None` have no slot; `All` and `Some` are both filtered.
        let stage = Stage {
            filter: p.filter.as_deref().filter(|_| p.exact),
            row_filter: r.row_filter.as_ref(),
            leaves: &self.leaves,
            buffer_rows: checks.buffer_rows(),
        };
        let keep: Vec<usize> = self.reused.iter().map(|(_, k)| *k).collect();
        let read = StageRead {
            rg,
            first_row: self.first_row,
            pre: self.pre.as_deref(),
            page_level: self.page_level,
            chunk: self.chunk.clone(),
            sizes,
            limit: self.limit,
            keep: &keep,
        };
        let out = stage::filter_rows(&r.meta, stage, read);
        // Counted here, not on the IO runtime: a scattered selection has a run every few
        // rows, and each count walks them all. So is the selection the parts' direct
        // readers share (`direct::Prepared`), once for all of them.
        let done = out.map(|out| {
            let summary = direct::Summary::of(&out.exact);
            let kept = summary.selected as u64;
            let every_row = summary.selected == summary.total;
            let runs = self.late_pages.then(|| SelectedRows::new(&out.exact));
            let prepared = (kept > 0 && !every_row).then(|| {
                let sel = (&out.exact, summary);
                Arc::new(direct::Prepared::new(
                    &r.meta.reader,
                    rg,
                    &self.part_leaves,
                    sel,
                ))
            });
            StageDone {
                out,
                kept,
                every_row,
                runs,
                prepared,
            }
        });
        Metrics::add_time(&self.metrics.decode_nanos, t.elapsed());
        done
    }
}

/// Bytes of the slot's non-filter columns under the page index's selection: what late
/// materialization could have had to fetch.
fn late_bytes(meta: &FileMeta, plan: &SlotPlan, stage: &FilterStage) -> Result<u64> {
    let offsets = slots::has_offset_index(meta, plan.row_group);
    let runs = plan
        .selection
        .as_deref()
        .filter(|_| offsets)
        .map(SelectedRows::new);
    let none = SparseChunk::default();
    SecondRound::plan(meta, plan, stage, runs.as_ref(), offsets, &none).map(|r| r.after)
}

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
