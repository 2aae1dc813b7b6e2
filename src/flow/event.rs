//! The events the pipeline sends to the consumer, and the [`Outbox`] they go through.
//!
//! Invariant: every slot's story on the channel is `Slot`, then its `Batch`es (in any order),
//! then `SlotDone` (or an `Error`); the driver's ends with `End` (or an `Error`). Once the
//! consumer has cancelled (the quit flag), stages stop producing and what they send is
//! dropped on the consumer's side. Every send, and every cancellation, wakes the consumer's
//! registered waker (an async consumer polling the channel, `deliver::stream`) after the fact
//! it announces is visible, so a consumer that registers and then looks again misses nothing.

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use arrow::array::RecordBatch;
use crossbeam_channel::{Receiver, Sender};
use futures::task::AtomicWaker;

use crate::error::Error;
use crate::flow::part::PartCtl;
use crate::task::TaskInfo;

/// What a slot needs on the delivery side, sent when the slot is admitted.
#[derive(Debug)]
pub(crate) struct SlotInfo {
    pub parts: Vec<Arc<PartCtl>>,
    pub reserve: u64,
    pub task: Arc<TaskInfo>,
}

/// Messages from the pipeline to the reader.
#[derive(Debug)]
pub(crate) enum Event {
    /// A slot was admitted; its batches follow.
    Slot { slot: usize, info: SlotInfo },
    /// Batch number `seq` of a slot (batches of one slot may arrive out of order), and for
    /// each of the slot's parts the decoded bytes of the part's batch it completes, if it
    /// completes one (a part's batch may be delivered in slices over several output batches:
    /// `None` in all but the last).
    Batch {
        slot: usize,
        seq: usize,
        batch: RecordBatch,
        bytes: Vec<Option<u64>>,
    },
    /// The slot has sent all its `batches`.
    SlotDone { slot: usize, batches: usize },
    /// The slot (or, for planning errors, the position) failed.
    Error { slot: usize, error: Error },
    /// No slot after `slots - 1` will be planned.
    End { slots: usize },
}

/// The sending side of a scan's event channel, with the consumer's quit flag and waker.
#[derive(Debug, Clone)]
pub(crate) struct Outbox {
    tx: Sender<Event>,
    quit: Arc<AtomicBool>,
    waker: Arc<AtomicWaker>,
}

impl Outbox {
    /// A new channel: the outbox, and the consumer's receiver.
    pub fn new() -> (Outbox, Receiver<Event>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let quit = Arc::new(AtomicBool::new(false));
        let waker = Arc::new(AtomicWaker::new());
        (Outbox { tx, quit, waker }, rx)
    }

    /// Send an event to the consumer (who may be gone: then nothing happens), and wake it if
    /// it polls.
    pub fn send(&self, ev: Event) {
        let _ = self.tx.send(ev);
        self.waker.wake();
    }

    /// The waker slot of a consumer that polls (woken by every send and cancellation).
    pub fn waker(&self) -> &Arc<AtomicWaker> {
        &self.waker
    }

    /// The quit flag: set once the consumer has cancelled the scan.
    pub fn quit(&self) -> &AtomicBool {
        &self.quit
    }

    /// Whether the consumer has cancelled the scan.
    pub fn cancelled(&self) -> bool {
        self.quit.load(Relaxed)
    }

    /// The quit flag itself, for a handle that cancels from another thread.
    pub fn quit_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.quit)
    }

    /// The consumer cancels the scan.
    pub fn cancel(&self) {
        self.quit.store(true, Relaxed);
        self.waker.wake();
    }
}
