//! What every stage of one scan shares: options, counters, the quit flag, the pools, the
//! fetcher and budget, the channel of [`Event`]s to the consumer, and the accounting of a
//! slot's bytes ([`Held`]). Stages import this module; it imports no stage.
//!
//! Invariants: every task of a scan (tokio or rayon) holds a `TaskGuard` while it lives, so
//! `Metrics::tasks_running` reaches 0 once a scan has wound down; every slot's story on the
//! channel is `Slot`, then its `Batch`es, then `SlotDone` (or an `Error`).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use crossbeam_channel::Sender;

use crate::budget::Budget;
use crate::error::{Error, ErrorKind, Result};
use crate::fetch::Fetcher;
use crate::flow::PartCtl;
use crate::metrics::Metrics;
use crate::options::Options;
use crate::source::Stores;

/// The task a slot belongs to, as the caller knows it.
#[derive(Debug, Clone)]
pub(crate) struct TaskId {
    /// Position in the scan's input.
    pub index: u64,
    pub tag: Option<Arc<str>>,
}

/// What a slot needs on the delivery side, sent when the slot is admitted.
#[derive(Debug)]
pub(crate) struct SlotInfo {
    pub parts: Vec<Arc<PartCtl>>,
    pub reserve: u64,
    pub task: Arc<TaskId>,
}

/// Messages from the pipeline to the reader.
#[derive(Debug)]
pub(crate) enum Event {
    /// A slot was admitted; its batches follow.
    Slot { slot: usize, info: SlotInfo },
    /// Batch number `seq` of a slot (batches of one slot may arrive out of order), and the
    /// decoded bytes it holds from each of the slot's parts.
    Batch {
        slot: usize,
        seq: usize,
        batch: RecordBatch,
        bytes: Vec<u64>,
    },
    /// The slot has sent all its `batches`.
    SlotDone { slot: usize, batches: usize },
    /// The slot (or, for planning errors, the position) failed.
    Error { slot: usize, error: Error },
    /// No slot after `slots - 1` will be planned.
    End { slots: usize },
}

/// How the scan's schema is known.
#[derive(Debug)]
pub(crate) enum Mode {
    /// Plain files: the schema is the first file's (projected), and every other file must
    /// match it exactly. Set when the first footer is read: (schema, first file's name).
    Plain(OnceLock<(SchemaRef, Arc<str>)>),
    /// Tasks: the caller's schema, which every task maps its file to.
    Tasks(SchemaRef),
}

/// What every task of one scan shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub opts: Options,
    pub mode: Mode,
    /// The schema of delivered batches (after the tasks' transforms), once known.
    pub output: OnceLock<SchemaRef>,
    pub metrics: Arc<Metrics>,
    pub quit: AtomicBool,
    pub pool: Arc<rayon::ThreadPool>,
    pub fetcher: Fetcher,
    pub budget: Budget,
    pub stores: Mutex<Stores>,
    pub tx: Sender<Event>,
    /// Arrow bytes decoded and parquet uncompressed bytes of the parts finished so far: the
    /// ratio sharpens the estimate of what later slots decode to.
    pub decoded_ratio: (AtomicU64, AtomicU64),
    /// Decode tasks running now: fewer than the pool's threads means decoders are waiting.
    pub decoding: Arc<AtomicUsize>,
    /// What late materialization has saved so far on this scan.
    pub late: LateStats,
}

impl Shared {
    /// Decoded Arrow bytes per uncompressed Parquet byte, learnt from finished parts (1.0
    /// before any has finished).
    pub fn expansion(&self) -> f64 {
        let decoded = self.decoded_ratio.0.load(Relaxed) as f64;
        let uncompressed = self.decoded_ratio.1.load(Relaxed) as f64;
        if uncompressed > 0.0 {
            (decoded / uncompressed).clamp(0.1, 64.0)
        } else {
            1.0
        }
    }

    /// Send an event to the consumer (who may be gone: then nothing happens).
    pub fn send(&self, ev: Event) {
        let _ = self.tx.send(ev);
    }

    /// Run `f` on the decode pool and await its result from async code, turning a panic into
    /// an error about `what` in file `name`.
    pub async fn on_pool<T: Send + 'static>(
        self: &Arc<Self>,
        (name, what): (&str, &str),
        f: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let guard = self.metrics.task_started();
        self.pool.spawn(move || {
            let _guard = guard;
            let r = crate::panic::catch(f);
            let _ = tx.send(r);
        });
        match rx.await {
            Ok(Ok(r)) => r,
            Ok(Err(msg)) => {
                Err(Error::new(ErrorKind::Panic, format!("{what} panicked: {msg}")).with_path(name))
            }
            Err(_) => {
                Err(Error::new(ErrorKind::Panic, format!("{what} was dropped")).with_path(name))
            }
        }
    }
}

/// Bytes of the non-filter columns' pages that late materialization could have fetched
/// (`before`: under the page index's selection) and did fetch (`after`: pages holding
/// matches), summed over the row groups that used it.
#[derive(Debug, Default)]
pub(crate) struct LateStats {
    before: AtomicU64,
    after: AtomicU64,
    slots: AtomicU64,
}

impl LateStats {
    pub fn record(&self, before: u64, after: u64) {
        Metrics::add(&self.before, before);
        Metrics::add(&self.after, after);
        Metrics::add(&self.slots, 1);
    }

    /// Keep paying a round trip per row group for late materialization while it saves at
    /// least a tenth of the bytes (judged after a few row groups).
    pub fn worth_it(&self) -> bool {
        let (b, a) = (self.before.load(Relaxed), self.after.load(Relaxed));
        self.slots.load(Relaxed) < 4 || a * 10 < b * 9
    }
}

/// A slot's bytes between admission and the end of its decoding: its planned compressed bytes
/// count as *held* (being fetched or waiting to be decoded) for admission, and, once they have
/// arrived, its fetched bytes count as buffered. The slot's parts share it and drop it when
/// they end; a failed or aborted fetch drops it at once.
#[derive(Debug)]
pub(crate) struct Held {
    shared: Arc<Shared>,
    planned: u64,
    fetched: u64,
    /// Decoding has started: the bytes no longer wait for the decoders (see [`Held::started`]).
    started: AtomicBool,
}

impl Held {
    pub fn new(shared: Arc<Shared>, planned: u64) -> Self {
        shared.budget.hold(planned);
        Held {
            shared,
            planned,
            fetched: 0,
            started: false.into(),
        }
    }

    /// A part of the slot decoded its first batch: the slot's bytes are with the decoders, no
    /// longer in the IO queue, so admission may go on even while the slot's decoders wait
    /// (parked) for the consumer. Without this, in ordered mode the slots decoded ahead of the
    /// consumer held the queue full and admission came in waves, one per budget's worth.
    /// Only while IO is the bottleneck (the IO window has grown): from a fast disk, keeping
    /// parked slots' bytes queued holds memory (and page faults) down, measurably.
    pub fn started(&self) {
        if self.shared.budget.io_bound() && !self.started.swap(true, Relaxed) {
            self.shared.budget.unhold(self.planned, self.fetched);
        }
    }

    /// `bytes` of the slot arrived.
    pub fn fetched(&mut self, bytes: u64) {
        self.shared.metrics.buffer(bytes);
        let idle = self.shared.decoding.load(Relaxed) < self.shared.pool.current_num_threads();
        self.shared.budget.arrived(bytes, idle);
        self.fetched += bytes;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.shared.metrics.release(self.fetched);
        if !*self.started.get_mut() {
            self.shared.budget.unhold(self.planned, self.fetched);
        }
    }
}
