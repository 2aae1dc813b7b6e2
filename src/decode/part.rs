//! Decode: parquet's sync reader over fetched bytes (pages decompressed into pooled buffers,
//! [`crate::decode::pages`]), or the direct reader of selected rows
//! ([`crate::decode::direct`]), run on the rayon pool only.
//!
//! One [`PartDecoder`] per part of a slot. A decode task produces batches into the slot's
//! [`Assembler`] until its part holds more undelivered bytes than its allowance and at least
//! `decode_ahead` undelivered batches; then it parks in its [`PartCtl`] and returns, so a
//! rayon thread never waits on the consumer. A panic inside parquet is caught and becomes an
//! `Err` naming the file and row group.
//!
//! Invariants: per part, batches are produced in row order by one task at a time; the fetched
//! bytes a part holds are counted as buffered until the part finishes or is dropped.

use std::sync::Arc;
use std::time::Instant;

use arrow::array::RecordBatch;

use crate::decode::assemble::Assembler;
use crate::decode::direct::{self, PartRows, RowGroupReader};
use crate::decode::pages::Leaves;
use crate::decode::DecodeCtx;
use crate::error::{Error, Result};
use crate::flow::event::Event;
use crate::flow::held::Held;
use crate::flow::part::PartCtl;
use crate::io::chunk::SparseChunk;
use crate::metrics::Metrics;
use crate::plan::file::FileRun;
use crate::plan::slots::PartPlan;

/// What every part of one slot shares: its file and row group, the assembler joining the
/// parts' batches, the fetched bytes (counted as buffered while `held` lives) and the rows
/// to read.
#[derive(Clone)]
pub(crate) struct SlotShare {
    pub run: Arc<FileRun>,
    pub slot: usize,
    pub row_group: usize,
    pub assembler: Arc<Assembler>,
    pub chunk: SparseChunk,
    pub held: Arc<Held>,
    pub rows: PartRows,
}

/// The decoding state of one part, movable between rayon tasks.
pub(crate) struct PartDecoder {
    ctx: Arc<DecodeCtx>,
    ctl: Arc<PartCtl>,
    assembler: Arc<Assembler>,
    slot: usize,
    part: usize,
    run: Arc<FileRun>,
    row_group: usize,
    leaves: Vec<usize>,
    /// Uncompressed Parquet bytes of the part's column chunks, and Arrow bytes decoded so far.
    uncompressed: u64,
    decoded: u64,
    /// The fetched bytes, until the reader is built from them.
    chunk: Option<SparseChunk>,
    rows: PartRows,
    /// Keeps the slot's fetched bytes counted as buffered until every part has ended.
    held: Option<Arc<Held>>,
    reader: Option<RowGroupReader>,
}

impl std::fmt::Debug for PartDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartDecoder")
            .field("slot", &self.slot)
            .field("part", &self.part)
            .field("row_group", &self.row_group)
            .field("file", &self.run.meta.file.name)
            .finish()
    }
}

impl PartDecoder {
    /// A decoder for part `part` (planned as `plan`) of the slot `share` describes; `ctl`
    /// parks and wakes it.
    pub fn new(
        ctx: Arc<DecodeCtx>,
        share: SlotShare,
        part: usize,
        plan: PartPlan,
        ctl: Arc<PartCtl>,
    ) -> Self {
        PartDecoder {
            ctx,
            ctl,
            assembler: share.assembler,
            slot: share.slot,
            part,
            run: share.run,
            row_group: share.row_group,
            leaves: plan.leaves,
            uncompressed: plan.uncompressed,
            decoded: 0,
            chunk: Some(share.chunk),
            rows: share.rows,
            held: Some(share.held),
            reader: None,
        }
    }

    /// Run this decoder as a task on the decode pool. Everything it runs is inside
    /// [`crate::panic::catch`] (its batches joined by the assembler too): a panic ends the
    /// scan with an error naming the file and row group, never the process.
    pub fn spawn(self) {
        let guard = self.ctx.metrics().task_started();
        let pool = Arc::clone(&self.ctx.pool);
        pool.spawn(move || {
            let _guard = guard;
            let (outbox, slot) = (self.ctx.outbox.clone(), self.slot);
            let (name, rg) = (Arc::clone(&self.run.meta.file.name), self.row_group);
            if let Err(msg) = crate::panic::catch(|| self.run()) {
                let error = crate::panic::panicked("a decode task", msg)
                    .with_path(&*name)
                    .with_row_group(rg);
                outbox.send(Event::Error { slot, error });
            }
        });
    }

    fn error(&self, e: Error) {
        self.ctx.outbox.send(Event::Error {
            slot: self.slot,
            error: e,
        });
    }

    fn run(mut self) {
        let _busy = self.ctx.flow.decoding.busy();
        // Parking outside the decode window, its bytes are with the decoders as much as those
        // of a part parked after its first batch: under latency, admission goes on (see
        // `Held::started`) rather than stalling on bytes gated by design.
        if self.ctl.gated() {
            if let Some(held) = &self.held {
                held.started();
            }
        }
        loop {
            if self.ctx.outbox.cancelled() {
                return;
            }
            let ctl = Arc::clone(&self.ctl);
            let ctx = Arc::clone(&self.ctx);
            self = match ctl.room_or_park(ctx.outbox.quit(), self, PartDecoder::spawn) {
                Some(me) => me,
                None => return,
            };
            let t = Instant::now();
            let step = crate::panic::catch(|| self.next_batch());
            Metrics::add_time(&self.ctx.metrics().decode_nanos, t.elapsed());
            match step {
                // Nothing to join (parquet's reader gives none; a coalesced read may).
                Ok(Ok(Some(batch))) if batch.num_rows() == 0 => {}
                Ok(Ok(Some(batch))) => {
                    if let Some(held) = &self.held {
                        held.started();
                    }
                    let bytes = batch.get_array_memory_size() as u64;
                    self.ctx.metrics().buffer(bytes);
                    Metrics::add(&self.ctx.metrics().bytes_decoded, bytes);
                    self.decoded += bytes;
                    self.ctl.produced(bytes);
                    self.assembler.push(self.part, batch, bytes);
                }
                Ok(Ok(None)) => {
                    self.reader = None;
                    let expansion = &self.ctx.flow.expansion;
                    expansion.record(self.decoded, self.uncompressed);
                    self.held = None;
                    self.assembler.part_done(self.part);
                    return;
                }
                Ok(Err(e)) => return self.error(e),
                Err(msg) => {
                    let e = crate::panic::panicked("the parquet decoder", msg)
                        .with_path(&*self.run.meta.file.name)
                        .with_row_group(self.row_group);
                    return self.error(e);
                }
            }
        }
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let name = &*self.run.meta.file.name;
        if self.reader.is_none() {
            let chunk = self.chunk.take().unwrap_or_default();
            let (meta, rg) = (&self.run.meta, self.row_group);
            let batch = self.ctx.batch_limit();
            let md = (meta.reader.metadata().as_ref(), name);
            let checks = self.ctx.checks();
            let sizes = crate::validate::check_row_group(md, rg, &self.leaves, &chunk, checks)?;
            let leaves = Leaves {
                leaves: &self.leaves,
                sizes,
            };
            let rows = std::mem::take(&mut self.rows);
            let reader = direct::open(&meta.reader, rg, leaves, chunk, rows, batch)
                .map_err(|e| self.decoding(e))?;
            self.reader = Some(reader);
        }
        let reader = self.reader.as_mut().expect("reader built above");
        match reader.next() {
            None => Ok(None),
            Some(Ok(b)) => Ok(Some(b)),
            Some(Err(e)) => Err(self.decoding(e)),
        }
    }

    /// A decoder's error `e`, naming the file, row group and the part's columns (parquet's
    /// errors name none of them).
    fn decoding<E: std::error::Error + Send + Sync + 'static>(&self, e: E) -> Error {
        let what = crate::decode::columns_named(&self.run.meta, &self.leaves);
        Error::decoding(e, &self.run.meta.file.name, self.row_group).context(what)
    }
}
