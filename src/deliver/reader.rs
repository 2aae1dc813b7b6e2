//! Deliver: the blocking iterator the caller pulls batches from.
//!
//! The pipeline sends [`Event`]s on one channel; this side keeps the batches of each slot in
//! flight and hands them out in slot order, each slot's in batch order. Unordered, it hands
//! out the batch that arrived last: the one decoded most recently, whose arrays are the likeliest
//! to be still in the CPU's caches when the caller reads them (older batches wait for a
//! moment when nothing newer has arrived). Delivering a batch releases its memory and resumes
//! the parked decoders it came from; finishing a slot returns its reservation to the budget.
//!
//! Invariants: ordered mode yields exactly the rows of parquet's reader (after the tasks'
//! mappings), task by task and row group by row group; an error is yielded at its position
//! (ordered) or at once (unordered), after which the iterator is fused and the pipeline
//! cancelled; dropping the reader cancels. Waiting happens only here, on the caller's thread,
//! never inside tokio or rayon; an async caller ([`crate::ScanStream`]) polls the same state
//! without waiting (`poll_item`): it registers its waker, looks at the channel once more, and
//! returns `Pending`.
//!
//! Imports only `flow` (events, budget, part control) and the leaf modules.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use crossbeam_channel::{Receiver, RecvTimeoutError, TryRecvError};
use futures::task::AtomicWaker;

use crate::error::{Error, ErrorKind, Result};
use crate::flow::event::{Event, Outbox, SlotInfo};
use crate::flow::Flow;
use crate::metrics::Metrics;
use crate::options::ScanOptions;
use crate::task::TaskInfo;

/// A delivered batch and its task.
pub(crate) type Item = (Arc<TaskInfo>, RecordBatch);

#[derive(Debug, Default)]
struct SlotBuf {
    info: Option<SlotInfo>,
    /// Batches that arrived, by number, with each part's decoded bytes.
    batches: BTreeMap<usize, (RecordBatch, Vec<Option<u64>>)>,
    /// How many of its batches were delivered (ordered: the number of the next one), and how
    /// many there are (once known).
    delivered: usize,
    total: Option<usize>,
    error: Option<Error>,
    /// Its decoders were told it is the slot being read (ordered mode).
    promoted: bool,
}

/// A running scan: a blocking, `Send` iterator of Arrow record batches, and an arrow
/// [`RecordBatchReader`].
///
/// Created by `build()` on any scan builder. Items are arrow's `Result<RecordBatch,
/// ArrowError>`; a scan's error is carried whole (`ArrowError::ExternalError`) and
/// `rayquet::Error::from(e)` (or `?` into a [`crate::Result`]) gives it back, with its kind,
/// file and row group. Dropping the reader cancels the scan: no new requests are sent, work in
/// flight is abandoned, and the shared pools stay usable. After an `Err` the iterator is fused
/// (it returns `None`). [`ScanReader::tagged`] also tells which task each batch came from.
///
/// `next()` blocks: async callers poll [`ScanReader::into_stream`] instead (or iterate inside
/// `tokio::task::spawn_blocking`).
///
/// ```no_run
/// # fn main() -> rayquet::Result<()> {
/// use rayquet::prelude::*;
/// let reader = Scan::new("/data/lineitem/")?.build()?;
/// let metrics = reader.metrics();
/// for batch in reader {
///     let batch = batch?; // a rayquet::Error again: kind, file, row group, source
///     println!("{} rows", batch.num_rows());
/// }
/// println!("{:?}", metrics.snapshot());
/// # Ok(()) }
/// ```
pub struct ScanReader {
    outbox: Outbox,
    flow: Arc<Flow>,
    rx: Receiver<Event>,
    schema: SchemaRef,
    task: Option<tokio::task::JoinHandle<()>>,
    /// The IO runtime, for the stall check's timer while an async caller waits.
    io: tokio::runtime::Handle,
    /// Polled (not iterated): since when no event has come while the pipeline looked
    /// stalled, and whether a timer that polls again is set.
    stall_since: Option<Instant>,
    pub(crate) stall_timer: Arc<AtomicBool>,
    /// Panics that had escaped the shared pool's jobs when the scan started
    /// ([`crate::panic::strays`]).
    strays: u64,
    slots: BTreeMap<usize, SlotBuf>,
    /// One past the highest slot number any event has named.
    seen: usize,
    next_slot: usize,
    finished_slots: usize,
    end: Option<usize>,
    remaining: Option<u64>,
    ordered: bool,
    /// Unordered: the (slot, batch number) of each batch held, in the order they arrived; the
    /// last is handed out first.
    arrived: Vec<(usize, usize)>,
    done: bool,
}

impl std::fmt::Debug for ScanReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanReader")
            .field("schema", &self.schema)
            .field("metrics", &self.flow.metrics.snapshot())
            .finish()
    }
}

/// Cancels a running scan from any thread, even while another thread is blocked in the
/// reader's `next()`: that `next()` then returns a [`ErrorKind::Cancelled`] error at once (the
/// reader winds the scan down, as when dropped), and later calls return `None`. Obtained from
/// [`ScanReader::canceller`]; cheap to clone. For a caller that waits for batches on a helper
/// thread and must be able to give up (an interrupt, a deadline), as rayquet's Python package
/// does.
///
/// ```no_run
/// # fn main() -> rayquet::Result<()> {
/// let mut reader = rayquet::Scan::new("/data/lineitem/")?.build()?;
/// let canceller = reader.canceller();
/// std::thread::spawn(move || {
///     std::thread::sleep(std::time::Duration::from_secs(1));
///     canceller.cancel();
/// });
/// for batch in reader.by_ref() {
///     if batch.is_err() { break; } // Cancelled, if the scan was still running after 1 s
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Canceller {
    quit: Arc<AtomicBool>,
    waker: Arc<AtomicWaker>,
    driver: Option<tokio::task::AbortHandle>,
}

impl Canceller {
    /// Stop the scan: no further requests, its tasks wind down, and the reader's `next()`
    /// (running or next) returns a `Cancelled` error. Calling it again, or after the scan
    /// ended, does nothing.
    pub fn cancel(&self) {
        self.quit.store(true, Relaxed);
        self.waker.wake();
        if let Some(driver) = &self.driver {
            driver.abort();
        }
    }
}

impl ScanReader {
    /// A handle that cancels this scan from another thread ([`Canceller`]).
    pub fn canceller(&self) -> Canceller {
        Canceller {
            quit: self.outbox.quit_flag(),
            waker: Arc::clone(self.outbox.waker()),
            driver: self.task.as_ref().map(|t| t.abort_handle()),
        }
    }

    /// A reader of the events of a pipeline (driven by `task`, sending through `outbox` to
    /// `rx`, accounting in `flow`) of a scan with `opts`, delivering batches of `schema`.
    pub(crate) fn new(
        (outbox, rx): (Outbox, Receiver<Event>),
        flow: Arc<Flow>,
        opts: &ScanOptions,
        schema: SchemaRef,
        task: tokio::task::JoinHandle<()>,
        io: tokio::runtime::Handle,
    ) -> Self {
        ScanReader {
            remaining: opts.limit.map(|l| l as u64),
            ordered: opts.ordered,
            outbox,
            flow,
            rx,
            schema,
            task: Some(task),
            io,
            stall_since: None,
            stall_timer: Arc::new(AtomicBool::new(false)),
            strays: crate::panic::strays(),
            slots: BTreeMap::new(),
            seen: 0,
            next_slot: 0,
            finished_slots: 0,
            end: None,
            arrived: Vec::new(),
            done: false,
        }
    }

    /// The Arrow schema of every batch, known before the first batch.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    /// The scan's live counters; they stay readable after the reader is dropped.
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.flow.metrics)
    }

    /// Stop the pipeline: set the quit flag, abort the driver (and with it every fetch).
    fn cancel(&mut self) {
        self.done = true;
        self.outbox.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
        }
        // Parked decoders hold fetched bytes and an Arc to their own control: drop them now,
        // including those of slots whose announcement is still in the channel. (A decoder that
        // looks after `quit` was set does not park.)
        let metrics = &self.flow.metrics;
        let pending = self.rx.try_iter().filter_map(|ev| match ev {
            Event::Slot { info, .. } => Some(info),
            Event::Batch { bytes, .. } => {
                metrics.release(bytes.iter().flatten().sum());
                None
            }
            _ => None,
        });
        let buffered = std::mem::take(&mut self.slots)
            .into_values()
            .filter_map(|s| {
                for (_, bytes) in s.batches.values() {
                    metrics.release(bytes.iter().flatten().sum());
                }
                s.info
            });
        for info in buffered.chain(pending.collect::<Vec<_>>()) {
            info.parts.iter().for_each(|ctl| ctl.abandon());
        }
        // Reservations of the slots left go back to the memory shared with other scans now,
        // not once the last task has wound down.
        self.flow.budget.close();
    }

    fn apply(&mut self, ev: Event) {
        match &ev {
            Event::Slot { slot, .. }
            | Event::Batch { slot, .. }
            | Event::SlotDone { slot, .. }
            | Event::Error { slot, .. } => self.seen = self.seen.max(slot + 1),
            Event::End { .. } => {}
        }
        match ev {
            Event::Slot { slot, info } => {
                self.slots.entry(slot).or_default().info = Some(info);
                self.open_window();
            }
            Event::Batch {
                slot,
                seq,
                batch,
                bytes,
            } => match self.slots.get_mut(&slot) {
                Some(s) => {
                    s.batches.insert(seq, (batch, bytes));
                    if !self.ordered {
                        self.arrived.push((slot, seq));
                    }
                }
                None => {
                    self.flow.metrics.release(bytes.iter().flatten().sum());
                }
            },
            Event::SlotDone { slot, batches } => {
                self.slots.entry(slot).or_default().total = Some(batches);
            }
            Event::Error { slot, error } => {
                let s = self.slots.entry(slot).or_default();
                s.error.get_or_insert(error);
            }
            Event::End { slots } => self.end = Some(slots),
        }
    }

    /// Ordered: try to produce the next item of slot `idx` without waiting. `Some(None)` means
    /// the slot is finished.
    fn take(&mut self, idx: usize) -> Option<Option<Result<Item>>> {
        let s = self.slots.get_mut(&idx)?;
        if let Some(e) = s.error.take() {
            return Some(Some(Err(e)));
        }
        let info = s.info.as_ref()?;
        if !s.promoted {
            // The head slot decodes to its end without parking (see `PartCtl::promote`).
            s.promoted = true;
            info.parts.iter().for_each(|ctl| ctl.promote());
        }
        let (seq, total) = (s.delivered, s.total);
        if let Some(item) = self.hand_out(idx, seq) {
            return Some(Some(Ok(item)));
        }
        if total.is_some_and(|t| seq >= t) {
            return Some(None);
        }
        None
    }

    /// Batch `seq` of slot `idx`, if it is here and its slot announced: its memory released and
    /// its decoders resumed.
    fn hand_out(&mut self, idx: usize, seq: usize) -> Option<Item> {
        let s = self.slots.get_mut(&idx)?;
        let info = s.info.as_ref()?;
        let (batch, bytes) = s.batches.remove(&seq)?;
        s.delivered += 1;
        for (ctl, b) in info.parts.iter().zip(&bytes) {
            if let Some(b) = b {
                ctl.consumed(*b);
            }
        }
        self.flow
            .budget
            .unbuffered(bytes.iter().flatten().sum(), &self.flow.metrics);
        Some((Arc::clone(&info.task), batch))
    }

    /// Release a finished slot's reservation; the decode window moves past it.
    fn finish_slot(&mut self, idx: usize) {
        if let Some(s) = self.slots.remove(&idx) {
            if let Some(info) = s.info {
                self.flow.budget.release(info.reserve);
            }
        }
        self.finished_slots += 1;
        self.open_window();
    }

    /// The decode window is the first `slots()` undelivered slots: those this reader knows,
    /// then the ones not announced yet (numbered after every slot it has heard of). Move its
    /// end there and open the gated parts of the announced slots inside it. Once IO is the
    /// bottleneck (the IO window has widened: object-store latency), the window opens for
    /// good and parts decode as far ahead as the budget allows.
    fn open_window(&mut self) {
        let window = &self.flow.window;
        let n = window.slots();
        let end = match self.slots.keys().nth(n - 1) {
            _ if self.flow.budget.io_bound() => usize::MAX,
            Some(&last) => last + 1,
            None => self.seen + (n - self.slots.len()),
        };
        window.advance(end);
        for s in self.slots.range(..end).map(|(_, s)| s) {
            if let Some(info) = &s.info {
                info.parts.iter().for_each(|ctl| ctl.open());
            }
        }
    }

    /// The next item if one is ready now; `Some(None)` at the end of the scan.
    fn ready(&mut self) -> Option<Option<Result<Item>>> {
        if !self.ordered {
            return self.ready_unordered();
        }
        loop {
            if self.at_last_slot() {
                return Some(None);
            }
            match self.take(self.next_slot)? {
                Some(item) => return Some(Some(item)),
                None => {
                    self.finish_slot(self.next_slot);
                    self.next_slot += 1;
                }
            }
        }
    }

    /// Unordered: an error at once, else the batch that arrived last. What is in the channel
    /// is taken in first, so that the batch handed out is the one decoded most recently.
    fn ready_unordered(&mut self) -> Option<Option<Result<Item>>> {
        while let Ok(ev) = self.rx.try_recv() {
            self.apply(ev);
        }
        if let Some(e) = self.slots.values_mut().find_map(|s| s.error.take()) {
            return Some(Some(Err(e)));
        }
        let complete: Vec<usize> = self
            .slots
            .iter()
            .filter(|(_, s)| s.info.is_some() && s.total.is_some_and(|t| s.delivered >= t))
            .map(|(&idx, _)| idx)
            .collect();
        for idx in complete {
            self.finish_slot(idx);
        }
        if self.at_last_slot() {
            return Some(None);
        }
        while let Some((idx, seq)) = self.arrived.pop() {
            if let Some(item) = self.hand_out(idx, seq) {
                return Some(Some(Ok(item)));
            }
            if self.slots.get(&idx).is_some_and(|s| s.info.is_none()) {
                // Its slot is not announced yet (the channel announces slots first): later.
                self.arrived.push((idx, seq));
                break;
            }
        }
        None
    }

    /// Every slot there will be is finished.
    fn at_last_slot(&self) -> bool {
        self.end.is_some_and(|n| self.finished_slots >= n) && self.slots.is_empty()
    }

    /// Nothing runs and nothing will come: the driver finished (or a panic escaped a pool job
    /// since the scan started, [`crate::panic::stray`], and the driver may wait forever for the
    /// task it ended).
    fn stalled(&self) -> bool {
        self.flow.metrics.tasks_running.load(Relaxed) == 0
            && self.rx.is_empty()
            && (self.task.as_ref().is_none_or(|t| t.is_finished()) || self.stray())
    }

    /// A panic escaped a job of the shared pool since this scan started.
    fn stray(&self) -> bool {
        crate::panic::strays() > self.strays
    }

    /// The error of a stalled scan.
    fn stalled_error(&self) -> Error {
        match self.stray() {
            true => crate::panic::stray_error(),
            false => stalled_error(),
        }
    }

    /// The next batch and its task, waiting for it.
    pub(crate) fn next_item(&mut self) -> Option<Result<Item>> {
        if let Some(end) = self.at_end() {
            return end;
        }
        let mut waited: Option<Instant> = None;
        let item = loop {
            if let Some(item) = self.step() {
                break item;
            }
            waited.get_or_insert_with(Instant::now);
            match self.rx.recv_timeout(STALL_CHECK) {
                Ok(ev) => self.apply(ev),
                Err(RecvTimeoutError::Timeout) => {
                    if self.stalled() && self.ready().is_none() {
                        break Some(Err(self.stalled_error()));
                    }
                }
                Err(RecvTimeoutError::Disconnected) => break Some(Err(gone_error())),
            }
        };
        if let Some(t) = waited {
            Metrics::add_time(&self.flow.metrics.wait_nanos, t.elapsed());
        }
        self.deliver(item)
    }

    /// The next batch and its task if one is ready, else `Pending` with `cx`'s waker
    /// registered: every event and a cancellation wake it. Never waits.
    pub(crate) fn poll_item(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Item>>> {
        if let Some(end) = self.at_end() {
            return Poll::Ready(end);
        }
        let mut registered = false;
        let item = loop {
            if let Some(item) = self.step() {
                break item;
            }
            match self.rx.try_recv() {
                Ok(ev) => {
                    self.stall_since = None;
                    self.apply(ev);
                    continue;
                }
                Err(TryRecvError::Disconnected) => break Some(Err(gone_error())),
                Err(TryRecvError::Empty) if !registered => {
                    // An event (or cancellation) between the look above and this registration
                    // woke nobody: look once more.
                    self.outbox.waker().register(cx.waker());
                    registered = true;
                    continue;
                }
                Err(TryRecvError::Empty) => {}
            }
            // The same safety net as `next_item`'s: no event for `STALL_CHECK` while nothing
            // runs is an internal error, not a wait forever. Nothing would wake this stream
            // then, so a timer polls it again.
            if self.stalled() {
                let since = *self.stall_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= STALL_CHECK {
                    break Some(Err(self.stalled_error()));
                }
            }
            self.arm_stall_timer(cx);
            return Poll::Pending;
        };
        Poll::Ready(self.deliver(item))
    }

    /// While an async caller waits, poll it again after `STALL_CHECK` (one timer at a time).
    fn arm_stall_timer(&self, cx: &Context<'_>) {
        if self.stall_timer.swap(true, Relaxed) {
            return;
        }
        let armed = Arc::clone(&self.stall_timer);
        let waker = cx.waker().clone();
        self.io.spawn(async move {
            tokio::time::sleep(STALL_CHECK).await;
            armed.store(false, Relaxed);
            waker.wake();
        });
    }

    /// `Some(None)` once the scan is over (fused, or the limit met), else `None`.
    fn at_end(&mut self) -> Option<Option<Result<Item>>> {
        if self.done {
            return Some(None);
        }
        if self.remaining == Some(0) {
            self.cancel();
            return Some(None);
        }
        None
    }

    /// What can be yielded without a new event: a cancellation or a ready item.
    fn step(&mut self) -> Option<Option<Result<Item>>> {
        // Cancelled through a `Canceller` (our own `cancel()` also sets `done`).
        if self.outbox.cancelled() {
            return Some(Some(Err(Error::new(
                ErrorKind::Cancelled,
                "the scan was cancelled",
            ))));
        }
        self.ready()
    }

    /// Hand out an item: apply the limit, count it, fuse and cancel after the end or an error.
    fn deliver(&mut self, item: Option<Result<Item>>) -> Option<Result<Item>> {
        self.stall_since = None;
        match item {
            None => {
                self.done = true;
                None
            }
            Some(Err(e)) => {
                self.cancel();
                Some(Err(e))
            }
            Some(Ok((task, mut batch))) => {
                if let Some(rem) = self.remaining.as_mut() {
                    if (batch.num_rows() as u64) >= *rem {
                        batch = batch.slice(0, *rem as usize);
                    }
                    *rem -= batch.num_rows() as u64;
                }
                Metrics::add(&self.flow.metrics.rows, batch.num_rows() as u64);
                Metrics::add(&self.flow.metrics.batches, 1);
                if self.remaining == Some(0) {
                    self.cancel();
                }
                Some(Ok((task, batch)))
            }
        }
    }
}

/// How long a consumer waits without an event before checking the pipeline is still running.
const STALL_CHECK: Duration = Duration::from_millis(250);

fn stalled_error() -> Error {
    Error::new(
        ErrorKind::Io,
        "the scan stopped making progress (internal error)",
    )
}

fn gone_error() -> Error {
    Error::new(ErrorKind::Cancelled, "the scan's pipeline went away")
}

impl Iterator for ScanReader {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_item()
            .map(|r| r.map(|(_, b)| b).map_err(ArrowError::from))
    }
}

impl RecordBatchReader for ScanReader {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }
}

impl Drop for ScanReader {
    fn drop(&mut self) {
        self.cancel();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Array, Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::ScanReader;
    use crate::flow::budget::Budget;
    use crate::flow::event::{Event, Outbox, SlotInfo};
    use crate::flow::held::Decoding;
    use crate::flow::part::{DecodeWindow, PartCtl};
    use crate::flow::Flow;
    use crate::options::ScanOptions;
    use crate::task::TaskInfo;

    /// A reader fed by hand: the events go to `outbox`; no pipeline runs (its driver is a
    /// task that never ends).
    fn reader(ordered: bool, rt: &tokio::runtime::Runtime) -> (ScanReader, Outbox, Arc<Schema>) {
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, false)]));
        let flow = Arc::new(Flow {
            budget: Budget::new(1 << 30, 1 << 20, 1 << 20, None),
            decoding: Arc::new(Decoding::new(2)),
            window: DecodeWindow::new(3),
            expansion: Default::default(),
            metrics: Default::default(),
        });
        let (outbox, rx) = Outbox::new();
        let opts = ScanOptions {
            ordered,
            ..Default::default()
        };
        let task = rt.spawn(std::future::pending::<()>());
        let reader = ScanReader::new(
            (outbox.clone(), rx),
            flow,
            &opts,
            Arc::clone(&schema),
            task,
            rt.handle().clone(),
        );
        (reader, outbox, schema)
    }

    fn slot(outbox: &Outbox, slot: usize) {
        let info = SlotInfo {
            parts: vec![Arc::new(PartCtl::new(0, 16, false, u64::MAX))],
            reserve: 0,
            task: Arc::new(TaskInfo {
                index: 0,
                tag: None,
            }),
        };
        outbox.send(Event::Slot { slot, info });
    }

    /// Batch `seq` of `slot`, holding the one value `slot * 100 + seq`.
    fn batch(outbox: &Outbox, schema: &Arc<Schema>, slot: usize, seq: usize) {
        let v = Int64Array::from(vec![(slot * 100 + seq) as i64]);
        let batch = RecordBatch::try_new(Arc::clone(schema), vec![Arc::new(v)]).unwrap();
        outbox.send(Event::Batch {
            slot,
            seq,
            batch,
            bytes: vec![Some(8)],
        });
    }

    fn value(reader: &mut ScanReader) -> Option<i64> {
        let batch = reader.next()?.unwrap();
        let v = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(v.len(), 1);
        Some(v.value(0))
    }

    /// The same events, arriving out of order across two slots: ordered, slot by slot and
    /// batch by batch; unordered, the batch that arrived last first. Both hand out every batch
    /// once and then end.
    #[test]
    fn unordered_hands_out_the_batch_that_arrived_last() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let mut seen = Vec::new();
        for ordered in [true, false] {
            let (mut reader, outbox, schema) = reader(ordered, &rt);
            slot(&outbox, 0);
            slot(&outbox, 1);
            batch(&outbox, &schema, 1, 0);
            batch(&outbox, &schema, 0, 1);
            batch(&outbox, &schema, 0, 0);
            let mut got = vec![value(&mut reader).unwrap()];
            // More arrive after the first was handed out.
            batch(&outbox, &schema, 1, 1);
            outbox.send(Event::SlotDone {
                slot: 0,
                batches: 2,
            });
            outbox.send(Event::SlotDone {
                slot: 1,
                batches: 2,
            });
            outbox.send(Event::End { slots: 2 });
            got.extend(std::iter::from_fn(|| value(&mut reader)));
            assert!(reader.next().is_none(), "fused after the end");
            seen.push(got);
        }
        assert_eq!(seen[0], [0, 1, 100, 101], "ordered");
        assert_eq!(
            seen[1],
            [0, 101, 1, 100],
            "unordered: the last arrived first"
        );
    }
}
