//! Decode: parquet's sync reader over fetched bytes, run on the rayon pool only.
//!
//! One [`PartDecoder`] per part of a slot. A decode task produces batches until its part holds
//! more undelivered bytes than its *allowance* (its share of the slot's budget reservation) and
//! at least `decode_ahead` undelivered batches; then it *parks*: it stores its reader state in
//! the part's [`PartCtl`] and returns, so a rayon thread never waits on the consumer. When the
//! consumer takes a batch it resumes the parked decoder with a new task. A panic inside parquet
//! is caught and becomes an `Err` naming the file and row group.
//!
//! Invariants: per part, batches are sent in row order by one task at a time; the fetched bytes
//! a part holds are counted as buffered until the part finishes or is dropped.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow::array::RecordBatch;
use parquet::arrow::arrow_reader::{
    ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder, RowSelection, RowSelectionPolicy,
};
use parquet::arrow::ProjectionMask;

use crate::chunk::SparseChunk;
use crate::deliver::Event;
use crate::error::{Error, ErrorKind, Result};
use crate::metrics::Metrics;
use crate::pipeline::{Held, Shared};
use crate::plan::{FileMeta, PartPlan};
use crate::select::RowIndexer;

/// Which rows a part reads: all, or a selection (read by selectors when only the selected
/// pages were fetched), and whether it appends the row-index column.
#[derive(Debug, Default)]
pub(crate) struct PartRows {
    pub selection: Option<RowSelection>,
    pub page_level: bool,
    pub row_index: Option<RowIndexer>,
}

/// Flow control between one part's decoder and the consumer.
#[derive(Debug)]
pub(crate) struct PartCtl {
    /// Undelivered batches this part may always hold.
    ahead: usize,
    state: Mutex<CtlState>,
}

#[derive(Debug, Default)]
struct CtlState {
    /// Undelivered decoded bytes this part may hold (beyond `ahead` batches); unlimited once
    /// its slot is the one the consumer is reading.
    allowance: u64,
    /// Batches sent but not yet delivered to the caller, and their bytes.
    outstanding: usize,
    outstanding_bytes: u64,
    /// The decoder, while it waits for the consumer.
    parked: Option<PartDecoder>,
}

impl CtlState {
    fn full(&self, ctl: &PartCtl) -> bool {
        self.outstanding >= ctl.ahead && self.outstanding_bytes >= self.allowance
    }
}

impl PartCtl {
    pub fn new(allowance: u64, ahead: usize) -> Self {
        PartCtl {
            ahead,
            state: Mutex::new(CtlState {
                allowance,
                ..Default::default()
            }),
        }
    }

    /// The consumer now reads this part's slot (ordered mode): let it decode to the end without
    /// parking, so its progress never waits behind later slots' tasks in the pool's queue. This
    /// is the "one slot" the budget may be exceeded by.
    pub fn promote(&self) {
        let mut st = self.state.lock().expect("part lock");
        st.allowance = u64::MAX;
        if let Some(dec) = st.parked.take() {
            drop(st);
            dec.spawn();
        }
    }

    /// Drop the parked decoder, if any (it holds an `Arc` to this control: a cycle that the
    /// consumer breaks when it cancels).
    pub fn abandon(&self) {
        let parked = self.state.lock().expect("part lock").parked.take();
        drop(parked);
    }

    /// The consumer delivered one batch of `bytes` of this part: resume the decoder if it was
    /// parked and now has room.
    pub fn consumed(&self, bytes: u64) {
        let mut st = self.state.lock().expect("part lock");
        st.outstanding = st.outstanding.saturating_sub(1);
        st.outstanding_bytes = st.outstanding_bytes.saturating_sub(bytes);
        if !st.full(self) {
            if let Some(dec) = st.parked.take() {
                drop(st);
                dec.spawn();
            }
        }
    }
}

/// Counts a running decode task in `Shared::decoding` while it lives.
struct Busy(Arc<AtomicUsize>);

impl Busy {
    fn new(counter: &Arc<AtomicUsize>) -> Self {
        counter.fetch_add(1, Relaxed);
        Busy(Arc::clone(counter))
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Relaxed);
    }
}

/// The decoding state of one part, movable between rayon tasks.
pub(crate) struct PartDecoder {
    pub shared: Arc<Shared>,
    pub ctl: Arc<PartCtl>,
    pub slot: usize,
    pub part: usize,
    pub file: Arc<FileMeta>,
    pub row_group: usize,
    pub leaves: Vec<usize>,
    /// Uncompressed Parquet bytes of the part's column chunks, and Arrow bytes decoded so far.
    uncompressed: u64,
    decoded: u64,
    /// The fetched bytes, until the reader is built from them.
    pub chunk: Option<SparseChunk>,
    rows: PartRows,
    /// Keeps the slot's fetched bytes counted as buffered until every part has ended.
    held: Option<Arc<Held>>,
    reader: Option<ParquetRecordBatchReader>,
}

impl std::fmt::Debug for PartDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartDecoder")
            .field("slot", &self.slot)
            .field("part", &self.part)
            .field("row_group", &self.row_group)
            .finish()
    }
}

impl PartDecoder {
    /// A decoder for `part` of `slot` (`ids` = (slot, part)) of row group `row_group` of
    /// `file`, over the slot's fetched `chunk`,
    /// whose bytes stay counted as buffered while `held` lives.
    pub fn new(
        shared: Arc<Shared>,
        ctl: Arc<PartCtl>,
        ids: (usize, usize),
        (file, row_group): (Arc<FileMeta>, usize),
        plan: PartPlan,
        (chunk, held): (SparseChunk, Arc<Held>),
        rows: PartRows,
    ) -> Self {
        PartDecoder {
            shared,
            ctl,
            slot: ids.0,
            part: ids.1,
            file,
            row_group,
            leaves: plan.leaves,
            uncompressed: plan.uncompressed,
            decoded: 0,
            chunk: Some(chunk),
            rows,
            held: Some(held),
            reader: None,
        }
    }

    /// Run this decoder as a task on the decode pool.
    pub fn spawn(self) {
        let guard = self.shared.metrics.task_started();
        let pool = Arc::clone(&self.shared.pool);
        pool.spawn(move || {
            let _guard = guard;
            self.run();
        });
    }

    fn error(&self, e: Error) {
        let _ = self.shared.tx.send(Event::Error {
            slot: self.slot,
            error: e,
        });
    }

    fn run(mut self) {
        let _busy = Busy::new(&self.shared.decoding);
        loop {
            if self.shared.quit.load(Relaxed) {
                return;
            }
            {
                let ctl = Arc::clone(&self.ctl);
                let mut st = ctl.state.lock().expect("part lock");
                if st.full(&ctl) {
                    // Checked under the lock that `abandon` takes after setting `quit`: a
                    // cancelled scan never gets a decoder parked after it has looked.
                    if !self.shared.quit.load(Relaxed) {
                        st.parked = Some(self);
                    }
                    return;
                }
            }
            let t = Instant::now();
            let step = catch_unwind(AssertUnwindSafe(|| self.next_batch()));
            Metrics::add_time(&self.shared.metrics.decode_nanos, t.elapsed());
            match step {
                Ok(Ok(Some(batch))) => {
                    if let Some(held) = &self.held {
                        held.started();
                    }
                    let bytes = batch.get_array_memory_size() as u64;
                    self.shared.metrics.buffer(bytes);
                    Metrics::add(&self.shared.metrics.bytes_decoded, bytes);
                    self.decoded += bytes;
                    {
                        let mut st = self.ctl.state.lock().expect("part lock");
                        st.outstanding += 1;
                        st.outstanding_bytes += bytes;
                    }
                    let _ = self.shared.tx.send(Event::Batch {
                        slot: self.slot,
                        part: self.part,
                        batch,
                        bytes,
                    });
                }
                Ok(Ok(None)) => {
                    self.reader = None;
                    let ratio = &self.shared.decoded_ratio;
                    Metrics::add(&ratio.0, self.decoded);
                    Metrics::add(&ratio.1, self.uncompressed);
                    self.held = None;
                    let _ = self.shared.tx.send(Event::PartDone {
                        slot: self.slot,
                        part: self.part,
                    });
                    return;
                }
                Ok(Err(e)) => return self.error(e),
                Err(panic) => {
                    let msg = panic
                        .downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| panic.downcast_ref::<&str>().copied())
                        .unwrap_or("unknown panic");
                    let e =
                        Error::new(ErrorKind::Panic, format!("parquet decoder panicked: {msg}"))
                            .with_path(&*self.file.file.name)
                            .with_row_group(self.row_group);
                    return self.error(e);
                }
            }
        }
    }

    fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let name = &*self.file.file.name;
        if self.reader.is_none() {
            let chunk = self.chunk.take().unwrap_or_default();
            let meta = &self.file.reader;
            let mask = ProjectionMask::leaves(meta.parquet_schema(), self.leaves.iter().copied());
            let mut builder =
                ParquetRecordBatchReaderBuilder::new_with_metadata(chunk, meta.clone())
                    .with_projection(mask)
                    .with_row_groups(vec![self.row_group])
                    .with_batch_size(self.shared.opts.batch_size);
            if let Some(sel) = self.rows.selection.take() {
                builder = builder.with_row_selection(sel);
                if self.rows.page_level {
                    // Only the selected pages were fetched: selectors skip the others unread.
                    builder = builder.with_row_selection_policy(RowSelectionPolicy::Selectors);
                }
            }
            let reader = builder
                .build()
                .map_err(|e| Error::decode(e, name, self.row_group))?;
            self.reader = Some(reader);
        }
        let reader = self.reader.as_mut().expect("reader built above");
        match reader.next() {
            None => Ok(None),
            Some(Ok(b)) => match self.rows.row_index.as_mut() {
                None => Ok(Some(b)),
                Some(ix) => {
                    // The row index travels as this part's last column (see `output_layout`).
                    let index = ix.take(b.num_rows());
                    let mut fields: Vec<_> = b.schema().fields().iter().cloned().collect();
                    fields.push(Arc::new(arrow::datatypes::Field::new(
                        "row_index",
                        arrow::datatypes::DataType::Int64,
                        false,
                    )));
                    let mut columns = b.columns().to_vec();
                    columns.push(index);
                    let schema = Arc::new(arrow::datatypes::Schema::new(fields));
                    let opts =
                        arrow::array::RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
                    arrow::array::RecordBatch::try_new_with_options(schema, columns, &opts)
                        .map(Some)
                        .map_err(|e| Error::decode(e, name, self.row_group))
                }
            },
            Some(Err(e)) => Err(Error::decode(e, name, self.row_group)),
        }
    }
}
