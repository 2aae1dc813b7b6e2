//! Fetched: a slot's byte ranges fetched in one round, and what its rounds leave for its
//! decoders. Shared by a slot without a filter stage ([`materialize`](super::materialize))
//! and the rounds around one ([`rounds`](super::rounds)).
//!
//! Invariant: a round's ranges are coalesced per the store's reach, and across at most
//! `PAGE_COALESCE_GAP` when the plan skips pages, so skipped data is not fetched anyway.

use std::sync::Arc;

use arrow::array::ArrayRef;
use parquet::arrow::arrow_reader::RowSelection;

use crate::decode::direct;
use crate::drive::DriveCtx;
use crate::error::Result;
use crate::footer::FileMeta;
use crate::io::chunk::SparseChunk;
use crate::options::Reach;

/// What a slot's fetch rounds leave for its decoders.
pub(super) struct Fetched {
    /// Rows the parts read; `None`: every row of the row group.
    pub selection: Option<Arc<RowSelection>>,
    /// Pages the decoders must not touch were left out (by the plan or by a second round).
    pub page_level: bool,
    pub chunk: SparseChunk,
    /// The selection as the direct reader reads it, worked out once by the filter stage.
    pub prepared: Option<Arc<direct::Prepared>>,
    /// Output columns the filter stage decoded whole, by file root: not decoded again.
    pub stage_cols: Vec<(usize, ArrayRef)>,
}

/// Fetch `ranges` of `meta`'s file (serving what its footer read holds).
pub(super) async fn fetch_ranges(
    ctx: &DriveCtx,
    meta: &FileMeta,
    ranges: &[std::ops::Range<u64>],
    page_level: bool,
    rg: usize,
) -> Result<SparseChunk> {
    let reach = Reach::of(meta.file.store.as_ref());
    let gap = ctx.opts.coalesce_gap(reach);
    // Page-level plans skip data between pages: coalescing across large gaps would fetch it.
    let gap = if page_level {
        gap.min(PAGE_COALESCE_GAP)
    } else {
        gap
    };
    let request = ctx.opts.request_size(reach);
    let (chunk, _) = ctx
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
