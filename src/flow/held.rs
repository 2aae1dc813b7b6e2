//! The accounting of a slot's fetched bytes ([`Held`]) and of how busy the decode pool is
//! ([`Decoding`]).
//!
//! Invariant: a slot's planned bytes count as held from admission until every part has
//! ended (or its fetch failed); its fetched bytes count as buffered for as long.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;

use crate::flow::Flow;

/// Decode tasks running now, out of the pool's threads: fewer means decoders wait on IO.
#[derive(Debug)]
pub(crate) struct Decoding {
    running: AtomicUsize,
    threads: usize,
}

impl Decoding {
    pub fn new(threads: usize) -> Self {
        Decoding {
            running: AtomicUsize::new(0),
            threads,
        }
    }

    /// Count a decode task as running until the guard drops.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.running.fetch_add(1, Relaxed);
        Busy(Arc::clone(self))
    }

    /// Some decode thread has nothing to do.
    pub fn idle(&self) -> bool {
        self.running.load(Relaxed) < self.threads
    }
}

/// A running decode task (see [`Decoding::busy`]).
pub(crate) struct Busy(Arc<Decoding>);

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Relaxed);
    }
}

/// A slot's bytes between admission and the end of its decoding: its planned compressed bytes
/// count as *held* (being fetched or waiting to be decoded) for admission, and, once they have
/// arrived, its fetched bytes count as buffered. The slot's parts share it and drop it when
/// they end; a failed or aborted fetch drops it at once.
#[derive(Debug)]
pub(crate) struct Held {
    flow: Arc<Flow>,
    planned: u64,
    fetched: u64,
    /// Decoding has started: the bytes no longer wait for the decoders (see [`Held::started`]).
    started: AtomicBool,
}

impl Held {
    pub fn new(flow: Arc<Flow>, planned: u64) -> Self {
        flow.budget.hold(planned);
        Held {
            flow,
            planned,
            fetched: 0,
            started: false.into(),
        }
    }

    /// A part of the slot decoded its first batch (or parked outside the decode window before
    /// it): the slot's bytes are with the decoders, no
    /// longer in the IO queue, so admission may go on even while the slot's decoders wait
    /// (parked) for the consumer. Without this, in ordered mode the slots decoded ahead of the
    /// consumer held the queue full and admission came in waves, one per budget's worth.
    /// Only while IO is the bottleneck (the IO window has grown): from a fast disk, keeping
    /// parked slots' bytes queued holds memory (and page faults) down, measurably.
    pub fn started(&self) {
        if self.flow.budget.io_bound() && !self.started.swap(true, Relaxed) {
            self.flow.budget.unhold(self.planned, self.fetched);
        }
    }

    /// `bytes` of the slot arrived.
    pub fn fetched(&mut self, bytes: u64) {
        self.flow.metrics.buffer(bytes);
        let idle = self.flow.decoding.idle();
        self.flow.budget.arrived(bytes, idle);
        self.fetched += bytes;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.flow
            .budget
            .unbuffered(self.fetched, &self.flow.metrics);
        if !*self.started.get_mut() {
            self.flow.budget.unhold(self.planned, self.fetched);
        }
    }
}
