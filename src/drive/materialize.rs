//! Materialize: fetch one slot's bytes and start its decoders, on the IO runtime.
//!
//! A slot without a filter stage fetches its parts' byte ranges in one coalesced round. A
//! slot with one (late materialization: the scan's exact filter, or the task's row filter)
//! goes through [`rounds`]: it first fetches and decodes the columns the filter reads, on
//! the decode pool, to find the rows to deliver; then fetches only the pages of the other
//! columns that hold such rows (or, when that cannot pay, everything in the first round).
//!
//! Invariants: bytes already fetched are never requested again; a slot that delivers no row
//! ends with `SlotDone` after fetching only its filter columns; the decoders of a slot share
//! one zero-copy chunk and one [`Held`] that keeps its bytes counted until they end.

use std::sync::Arc;

use crate::decode::assemble::Assembler;
use crate::decode::direct::PartRows;
use crate::decode::part::{PartDecoder, SlotShare};
use crate::decode::positions::RowPositions;
use crate::drive::claims::Claim;
use crate::drive::fetched::{fetch_ranges, Fetched};
use crate::drive::rounds::LateSlot;
use crate::drive::DriveCtx;
use crate::error::Result;
use crate::flow::event::Event;
use crate::flow::held::Held;
use crate::flow::part::PartCtl;
use crate::plan::file::FileRun;
use crate::plan::slots::SlotPlan;

/// What the driver tells a slot beyond its plan.
#[derive(Debug)]
pub(crate) struct SlotTerms {
    /// Statistics found the filter's column clustered: matches sit together.
    pub clustered: bool,
    /// The rows a limit counted before the slot's filter checked them (`drive::claims`).
    pub claim: Option<Claim>,
}

/// Fetch one slot's bytes and start its decoders. One fetch per round: the parts' ranges
/// are coalesced together (so a gap between two parts' columns is never fetched twice) and
/// every part decodes from the same zero-copy chunk.
///
/// With a filter stage (late materialization, [`LateSlot`]), the filter's columns are
/// fetched first and decoded on the pool to find the matching rows; then only the pages of
/// the projected columns that hold matching rows are fetched. A row group with no match
/// delivers nothing.
pub(crate) async fn fetch_slot(
    ctx: &Arc<DriveCtx>,
    run: Arc<FileRun>,
    terms: SlotTerms,
    mut plan: SlotPlan,
    ctls: Vec<Arc<PartCtl>>,
    mut held: Held,
    slot: usize,
) -> Result<()> {
    // Taken by every slot (filtered or not: the later slots wait for every probe's report),
    // before the first await: a probe reports even if this slot fails or is dropped.
    let probe = ctx.late.probe(slot);
    let fetched = match plan.filter.clone() {
        Some(stage) => {
            let late = LateSlot {
                ctx,
                run: &run,
                slot,
                clustered: terms.clustered,
                probe,
                claim: terms.claim,
            };
            match late.fetch(&stage, &mut plan, &mut held).await? {
                Some(fetched) => fetched,
                None => {
                    ctx.decode.outbox.send(Event::SlotDone { slot, batches: 0 });
                    return Ok(());
                }
            }
        }
        None => {
            drop(probe); // no outcome to report
            let ranges: Vec<_> = plan.parts.iter().flat_map(|p| p.ranges.clone()).collect();
            let chunk = fetch_ranges(ctx, &run.meta, &ranges, plan.page_level, plan.row_group);
            let chunk = chunk.await?;
            held.fetched(chunk.bytes());
            Fetched {
                selection: plan.selection.clone(),
                page_level: plan.page_level,
                chunk,
                prepared: None,
                stage_cols: Vec::new(),
            }
        }
    };
    start_decoders(ctx, run, plan, ctls, held, slot, fetched);
    Ok(())
}

/// Start the decoders of `plan`'s parts over what was fetched, one assembler joining them.
fn start_decoders(
    ctx: &DriveCtx,
    run: Arc<FileRun>,
    plan: SlotPlan,
    ctls: Vec<Arc<PartCtl>>,
    held: Held,
    slot: usize,
    fetched: Fetched,
) {
    let rg = plan.row_group;
    let selection = fetched.selection;
    let positions = run
        .mapping
        .has_row_index()
        .then(|| RowPositions::new(plan.first_row, plan.rows, selection.as_deref()));
    let roots: Vec<Vec<usize>> = plan.parts.iter().map(|p| p.roots.clone()).collect();
    let assembler = Arc::new(Assembler::new(
        Arc::clone(&ctx.decode),
        Arc::clone(&run),
        (slot, rg),
        (&roots, fetched.stage_cols),
        positions,
    ));
    let share = SlotShare {
        run,
        slot,
        row_group: rg,
        assembler,
        chunk: fetched.chunk,
        held: Arc::new(held),
        rows: PartRows {
            selection,
            page_level: fetched.page_level,
            prepared: fetched.prepared,
        },
    };
    for (part, (part_plan, ctl)) in plan.parts.into_iter().zip(ctls).enumerate() {
        PartDecoder::new(Arc::clone(&ctx.decode), share.clone(), part, part_plan, ctl).spawn();
    }
}
