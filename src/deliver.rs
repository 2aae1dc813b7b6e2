//! Deliver: the blocking iterator the caller pulls batches from.
//!
//! Workers send [`Event`]s on one channel; this side keeps a small buffer per slot in flight,
//! joins the parts of a split row group back into one batch, and hands batches out in slot
//! order (or, unordered, from whichever slot has one). Delivering a batch releases its memory
//! and resumes the parked decoders it came from; finishing a slot returns its reservation to
//! the budget.
//!
//! Invariants: ordered mode yields exactly the rows of parquet's reader, file by file and row
//! group by row group; an error is yielded at its position (ordered) or at once (unordered),
//! after which the iterator is fused and the pipeline cancelled; dropping the reader cancels.
//! Waiting happens only here, on the caller's thread, never inside tokio or rayon.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::SchemaRef;
use crossbeam_channel::{Receiver, RecvTimeoutError};

use crate::decode::PartCtl;
use crate::error::{Error, ErrorKind, Result};
use crate::fetch::{Budget, Fetcher};
use crate::metrics::Metrics;
use crate::pipeline::{self, Shared};
use crate::scan::Options;
use crate::source::{self, Input};

/// What a slot needs on the delivery side, sent when the slot is admitted.
#[derive(Debug)]
pub(crate) struct SlotInfo {
    pub parts: Vec<Arc<PartCtl>>,
    pub reserve: u64,
    /// Output column i is column `.1` of part `.0`'s batches.
    pub layout: Arc<Vec<(usize, usize)>>,
}

/// Messages from the pipeline to the reader.
#[derive(Debug)]
pub(crate) enum Event {
    /// A slot was admitted; its batches follow.
    Slot { slot: usize, info: SlotInfo },
    /// The next batch of one part of a slot.
    Batch {
        slot: usize,
        part: usize,
        batch: RecordBatch,
        bytes: u64,
    },
    /// A part has sent all its batches.
    PartDone { slot: usize, part: usize },
    /// The slot (or, for planning errors, the position) failed.
    Error { slot: usize, error: Error },
    /// No slot after `slots - 1` will be planned.
    End { slots: usize },
}

#[derive(Debug, Default)]
struct PartBuf {
    queue: VecDeque<(RecordBatch, u64)>,
    done: bool,
}

#[derive(Debug, Default)]
struct SlotBuf {
    info: Option<SlotInfo>,
    parts: Vec<PartBuf>,
    error: Option<Error>,
    /// Its decoders were told it is the slot being read (ordered mode).
    promoted: bool,
}

/// Run `fut` on the IO runtime and wait for it on this thread, without `block_on` (so this is
/// safe to call from any thread, including a tokio worker).
fn wait<T: Send + 'static>(
    io: &tokio::runtime::Handle,
    fut: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    io.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().unwrap_or_else(|_| {
        Err(Error::new(
            ErrorKind::Io,
            "the IO runtime stopped (or the task panicked) before answering",
        ))
    })
}

/// Resolve inputs, read the first footer, and start the pipeline.
pub(crate) fn start(
    inputs: Vec<Input>,
    store_options: Vec<(String, String)>,
    opts: Options,
    io: tokio::runtime::Handle,
    pool: Arc<rayon::ThreadPool>,
) -> Result<ScanReader> {
    let metrics = Arc::new(Metrics::default());
    let (tx, rx) = crossbeam_channel::unbounded();
    let shared = Arc::new(Shared {
        fetcher: Fetcher {
            permits: Arc::new(tokio::sync::Semaphore::new(opts.requests_in_flight)),
            metrics: Arc::clone(&metrics),
        },
        budget: Budget::new(
            opts.memory_budget as u64,
            opts.prefetch_bytes as u64,
            pipeline::DECODE_QUEUE_BYTES,
        ),
        opts,
        metrics,
        quit: Default::default(),
        pool,
        tx,
        decoded_ratio: Default::default(),
        decoding: Default::default(),
        late: Default::default(),
    });
    let files = wait(
        &io,
        async move { source::resolve(inputs, &store_options).await },
    )?;
    let Some(first) = files.first().cloned() else {
        return Err(Error::new(ErrorKind::NotFound, "no files to scan"));
    };
    for (key, _) in &shared.opts.selections {
        if !files.iter().any(|f| pipeline::names_file(key, f)) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the row selection for {key:?} matches no file of the scan (files are named \
                     like {:?}, or by their object path {:?})",
                    &*files[0].name,
                    files[0].path.as_ref()
                ),
            ));
        }
    }
    let first = wait(&io, pipeline::load_footer(Arc::clone(&shared), first))?;
    let file_schema = Arc::clone(&first.1.schema);
    let mut schema = Arc::clone(&file_schema);
    if let Some(name) = &shared.opts.row_index {
        if schema.field_with_name(name).is_ok() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("the row index column {name:?} has the name of a column of the file"),
            )
            .with_path(&*first.0.file.name));
        }
        let mut fields: Vec<_> = schema.fields().iter().cloned().collect();
        fields.push(Arc::new(arrow::datatypes::Field::new(
            name,
            arrow::datatypes::DataType::Int64,
            false,
        )));
        schema = Arc::new(arrow::datatypes::Schema::new_with_metadata(
            fields,
            schema.metadata().clone(),
        ));
    }
    let task = io.spawn(pipeline::run(
        Arc::clone(&shared),
        files,
        first,
        file_schema,
    ));
    Ok(ScanReader {
        remaining: shared.opts.limit.map(|l| l as u64),
        ordered: shared.opts.ordered,
        shared,
        rx,
        schema,
        task: Some(task),
        slots: BTreeMap::new(),
        next_slot: 0,
        finished_slots: 0,
        end: None,
        done: false,
    })
}

/// A running scan: a blocking, `Send` iterator of Arrow record batches.
///
/// Created by [`crate::Scan::build`]. Dropping it cancels the scan: no new requests are sent,
/// work in flight is abandoned, and the shared pools stay usable. After an `Err` the iterator
/// is fused (it returns `None`).
///
/// Async callers should iterate inside `tokio::task::spawn_blocking`, since `next()` blocks.
pub struct ScanReader {
    shared: Arc<Shared>,
    rx: Receiver<Event>,
    schema: SchemaRef,
    task: Option<tokio::task::JoinHandle<()>>,
    slots: BTreeMap<usize, SlotBuf>,
    next_slot: usize,
    finished_slots: usize,
    end: Option<usize>,
    remaining: Option<u64>,
    ordered: bool,
    done: bool,
}

impl std::fmt::Debug for ScanReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanReader")
            .field("schema", &self.schema)
            .field("metrics", &self.shared.metrics.snapshot())
            .finish()
    }
}

impl ScanReader {
    /// The Arrow schema of every batch, known before the first batch.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// The scan's live counters; they stay readable after the reader is dropped.
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.shared.metrics)
    }

    /// Stop the pipeline: set the quit flag, abort the driver (and with it every fetch).
    fn cancel(&mut self) {
        self.done = true;
        self.shared.quit.store(true, Relaxed);
        if let Some(task) = self.task.take() {
            task.abort();
        }
        // Parked decoders hold fetched bytes and an Arc to their own control: drop them now,
        // including those of slots whose announcement is still in the channel. (A decoder that
        // looks after `quit` was set does not park.)
        let metrics = &self.shared.metrics;
        let pending = self.rx.try_iter().filter_map(|ev| match ev {
            Event::Slot { info, .. } => Some(info),
            Event::Batch { bytes, .. } => {
                metrics.release(bytes);
                None
            }
            _ => None,
        });
        let buffered = std::mem::take(&mut self.slots)
            .into_values()
            .filter_map(|s| {
                let queued = s.parts.iter().flat_map(|p| &p.queue);
                queued.for_each(|(_, bytes)| metrics.release(*bytes));
                s.info
            });
        for info in buffered.chain(pending.collect::<Vec<_>>()) {
            info.parts.iter().for_each(|ctl| ctl.abandon());
        }
    }

    fn apply(&mut self, ev: Event) {
        match ev {
            Event::Slot { slot, info } => {
                let s = self.slots.entry(slot).or_default();
                s.parts = info.parts.iter().map(|_| PartBuf::default()).collect();
                s.info = Some(info);
            }
            Event::Batch {
                slot,
                part,
                batch,
                bytes,
            } => match self
                .slots
                .get_mut(&slot)
                .and_then(|s| s.parts.get_mut(part))
            {
                Some(p) => p.queue.push_back((batch, bytes)),
                None => self.shared.metrics.release(bytes),
            },
            Event::PartDone { slot, part } => {
                if let Some(p) = self
                    .slots
                    .get_mut(&slot)
                    .and_then(|s| s.parts.get_mut(part))
                {
                    p.done = true;
                }
            }
            Event::Error { slot, error } => {
                let s = self.slots.entry(slot).or_default();
                s.error.get_or_insert(error);
            }
            Event::End { slots } => self.end = Some(slots),
        }
    }

    /// Try to produce the next item of slot `idx` without waiting. `Some(None)` means the slot
    /// is finished.
    fn take(&mut self, idx: usize) -> Option<Option<Result<RecordBatch>>> {
        let s = self.slots.get_mut(&idx)?;
        if let Some(e) = s.error.take() {
            return Some(Some(Err(e)));
        }
        let info = s.info.as_ref()?;
        if self.ordered && !s.promoted {
            // The head slot decodes to its end without parking (see `PartCtl::promote`).
            s.promoted = true;
            info.parts.iter().for_each(|ctl| ctl.promote());
        }
        if !s.parts.is_empty() && s.parts.iter().all(|p| !p.queue.is_empty()) {
            let batches: Vec<(RecordBatch, u64)> = s
                .parts
                .iter_mut()
                .map(|p| p.queue.pop_front().expect("checked non-empty"))
                .collect();
            for (ctl, (_, bytes)) in info.parts.iter().zip(&batches) {
                ctl.consumed(*bytes);
            }
            let bytes: u64 = batches.iter().map(|b| b.1).sum();
            self.shared.metrics.release(bytes);
            self.shared.budget.poke();
            return Some(Some(join(&self.schema, &info.layout, batches)));
        }
        let all_done = s.parts.iter().all(|p| p.done);
        let all_empty = s.parts.iter().all(|p| p.queue.is_empty());
        if all_done && all_empty {
            return Some(None);
        }
        // A part that ended while another still has batches: the row counts disagree.
        if !all_empty && s.parts.iter().any(|p| p.done && p.queue.is_empty()) {
            return Some(Some(Err(Error::new(
                ErrorKind::CorruptData,
                "the column parts of a row group decoded to different row counts",
            ))));
        }
        None
    }

    /// Release a finished slot's reservation.
    fn finish_slot(&mut self, idx: usize) {
        if let Some(s) = self.slots.remove(&idx) {
            if let Some(info) = s.info {
                self.shared.budget.release(info.reserve);
            }
        }
        self.finished_slots += 1;
    }

    /// The next item if one is ready now; `Some(None)` at the end of the scan.
    fn ready(&mut self) -> Option<Option<Result<RecordBatch>>> {
        loop {
            if self.end.is_some_and(|n| self.finished_slots >= n) && self.slots.is_empty() {
                return Some(None);
            }
            let candidates: Vec<usize> = if self.ordered {
                vec![self.next_slot]
            } else {
                self.slots.keys().copied().collect()
            };
            let mut progressed = false;
            for idx in candidates {
                match self.take(idx) {
                    Some(Some(item)) => return Some(Some(item)),
                    Some(None) => {
                        self.finish_slot(idx);
                        if self.ordered {
                            self.next_slot += 1;
                        }
                        progressed = true;
                    }
                    None => {}
                }
            }
            if !progressed {
                return None;
            }
        }
    }

    fn stalled(&self) -> bool {
        self.shared.metrics.tasks_running.load(Relaxed) == 0
            && self.rx.is_empty()
            && self.task.as_ref().is_none_or(|t| t.is_finished())
    }
}

/// Join the part batches of one slot into a batch of the output schema.
fn join(
    schema: &SchemaRef,
    layout: &[(usize, usize)],
    batches: Vec<(RecordBatch, u64)>,
) -> Result<RecordBatch> {
    let rows = batches[0].0.num_rows();
    if batches.iter().any(|(b, _)| b.num_rows() != rows) {
        return Err(Error::new(
            ErrorKind::CorruptData,
            "the column parts of a row group decoded to different row counts",
        ));
    }
    let columns: Vec<ArrayRef> = layout
        .iter()
        .map(|&(p, c)| Arc::clone(batches[p].0.column(c)))
        .collect();
    let opts = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(Arc::clone(schema), columns, &opts)
        .map_err(|e| Error::new(ErrorKind::SchemaMismatch, e.to_string()))
}

impl Iterator for ScanReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        if self.remaining == Some(0) {
            self.cancel();
            return None;
        }
        let mut waited: Option<Instant> = None;
        let item = loop {
            if let Some(item) = self.ready() {
                break item;
            }
            waited.get_or_insert_with(Instant::now);
            match self.rx.recv_timeout(Duration::from_millis(250)) {
                Ok(ev) => self.apply(ev),
                Err(RecvTimeoutError::Timeout) => {
                    if self.stalled() && self.ready().is_none() {
                        break Some(Err(Error::new(
                            ErrorKind::Io,
                            "the scan stopped making progress (internal error)",
                        )));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    break Some(Err(Error::new(
                        ErrorKind::Io,
                        "the scan's pipeline went away",
                    )))
                }
            }
        };
        if let Some(t) = waited {
            Metrics::add_time(&self.shared.metrics.wait_nanos, t.elapsed());
        }
        match item {
            None => {
                self.done = true;
                None
            }
            Some(Err(e)) => {
                self.cancel();
                Some(Err(e))
            }
            Some(Ok(mut batch)) => {
                if let Some(rem) = self.remaining.as_mut() {
                    if (batch.num_rows() as u64) >= *rem {
                        batch = batch.slice(0, *rem as usize);
                    }
                    *rem -= batch.num_rows() as u64;
                }
                Metrics::add(&self.shared.metrics.rows, batch.num_rows() as u64);
                Metrics::add(&self.shared.metrics.batches, 1);
                if self.remaining == Some(0) {
                    self.cancel();
                }
                Some(Ok(batch))
            }
        }
    }
}

impl Drop for ScanReader {
    fn drop(&mut self) {
        self.cancel();
    }
}
