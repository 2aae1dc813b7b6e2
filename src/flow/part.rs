//! Flow control between one part's decoder and the consumer.
//!
//! A decode task may hold at most `decode_ahead` undelivered batches *and* its allowance of
//! undelivered bytes (its share of the slot's budget reservation); beyond that it *parks*: it
//! leaves a closure that resumes it here and returns, so a rayon thread never waits on the
//! consumer. Delivering a batch (or promoting the slot the consumer reads) runs the closure.
//!
//! The [`DecodeWindow`]: only the parts of the first few undelivered slots decode. A part of a
//! later slot starts *gated* and parks before its first batch; the reader opens it when its
//! slot enters the window (a slot ahead of it has been delivered). So the decoded batches a
//! scan holds are those of a few slots, however far the budget lets fetching run ahead. Once
//! IO is the bottleneck (object-store latency widened the IO window) the window opens for good:
//! decoding ahead then keeps the decoders busy while the next bytes are in flight.
//!
//! Invariant: at most one resume closure is stored per part; `abandon` drops it (a cancelled
//! scan), and a decoder checks the scan's quit flag under this lock before parking, so none
//! parks after the consumer cancelled. The slot the consumer waits for is always in the
//! window, so gating never stops a scan.

use std::sync::atomic::Ordering::{Acquire, Relaxed};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Mutex;

/// Resumes a parked decoder (spawns it on the decode pool again).
pub(crate) type Resume = Box<dyn FnOnce() + Send>;

/// Flow control of one part of a slot.
pub(crate) struct PartCtl {
    /// Undelivered batches this part may always hold.
    ahead: usize,
    /// Undelivered bytes at which this part parks, however few its batches and even when its
    /// slot is the one the consumer reads ([`part_cap`]).
    cap: u64,
    state: Mutex<CtlState>,
}

impl std::fmt::Debug for PartCtl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartCtl")
            .field("ahead", &self.ahead)
            .finish()
    }
}

#[derive(Default)]
struct CtlState {
    /// Undelivered decoded bytes this part may hold (beyond `ahead` batches); unlimited once
    /// its slot is the one the consumer is reading.
    allowance: u64,
    /// Batches produced but not yet delivered to the caller, and their bytes.
    outstanding: usize,
    outstanding_bytes: u64,
    /// The parked decoder's resume closure.
    parked: Option<Resume>,
    /// Its slot is outside the decode window: decode nothing until the reader opens it.
    gated: bool,
}

impl CtlState {
    fn full(&self, ahead: usize, cap: u64) -> bool {
        self.gated
            || self.outstanding_bytes >= cap
            || (self.outstanding >= ahead && self.outstanding_bytes >= self.allowance)
    }
}

/// The most undelivered decoded bytes one of a slot's `parts` parts holds before it parks: a
/// quarter of the memory budget shared among them, and at least two batches of
/// `batch_bytes` (the batch byte limit, `flow::budget::batch_bytes`). Batches of ordinary
/// sizes never reach it (16 of a few MiB); large values (a batch cut to the byte limit) do,
/// and the decoded bytes of the decode window's slots stay near the budget instead of
/// `decode_ahead` large batches per part, or a whole row group for the slot being read.
pub(crate) fn part_cap(memory_budget: u64, parts: usize, batch_bytes: u64) -> u64 {
    (memory_budget / 4 / parts.max(1) as u64).max(batch_bytes.saturating_mul(2))
}

impl PartCtl {
    /// A part's control: `allowance` bytes and `ahead` batches undelivered, never `cap`
    /// bytes ([`part_cap`]); `gated` when its slot is outside the decode window
    /// ([`DecodeWindow::gates`]).
    pub fn new(allowance: u64, ahead: usize, gated: bool, cap: u64) -> Self {
        PartCtl {
            ahead,
            cap,
            state: Mutex::new(CtlState {
                allowance,
                gated,
                ..Default::default()
            }),
        }
    }

    /// Whether its slot is still outside the decode window.
    pub fn gated(&self) -> bool {
        self.state.lock().expect("part lock").gated
    }

    /// Its slot entered the decode window: let it decode (resume it if it parked).
    pub fn open(&self) {
        let mut st = self.state.lock().expect("part lock");
        if !st.gated {
            return;
        }
        st.gated = false;
        if !st.full(self.ahead, self.cap) {
            if let Some(resume) = st.parked.take() {
                drop(st);
                resume();
            }
        }
    }

    /// The consumer now reads this part's slot (ordered mode): let it decode to the end without
    /// parking (but at its byte cap), so its progress never waits behind later slots' tasks in
    /// the pool's queue. This is the "one slot" the budget may be exceeded by.
    pub fn promote(&self) {
        let mut st = self.state.lock().expect("part lock");
        st.allowance = u64::MAX;
        st.gated = false;
        if let Some(resume) = st.parked.take() {
            drop(st);
            resume();
        }
    }

    /// Drop the parked decoder, if any (it holds fetched bytes and an `Arc` to this control:
    /// a cycle that the consumer breaks when it cancels).
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
        if !st.full(self.ahead, self.cap) {
            if let Some(resume) = st.parked.take() {
                drop(st);
                resume();
            }
        }
    }

    /// The decoder produced a batch of `bytes`.
    pub fn produced(&self, bytes: u64) {
        let mut st = self.state.lock().expect("part lock");
        st.outstanding += 1;
        st.outstanding_bytes += bytes;
    }

    /// Before decoding another batch: when the part has room, `Some(decoder)` back to go
    /// on; when it is full, park (store a closure that runs `resume(decoder)`, unless `quit`
    /// says the scan is cancelled, in which case the decoder is dropped) and `None`.
    pub fn room_or_park<D: Send + 'static>(
        &self,
        quit: &AtomicBool,
        decoder: D,
        resume: fn(D),
    ) -> Option<D> {
        let mut st = self.state.lock().expect("part lock");
        if !st.full(self.ahead, self.cap) {
            return Some(decoder);
        }
        // Checked under the lock that `abandon` takes after `quit` is set: a cancelled scan
        // never gets a decoder parked after it has looked.
        if !quit.load(Relaxed) {
            st.parked = Some(Box::new(move || resume(decoder)));
        }
        None
    }
}

/// Which slots may decode: the first `slots` that are not yet delivered, in slot order (the
/// reader moves its end as slots are delivered; the driver gates a new slot's parts beyond it).
#[derive(Debug)]
pub(crate) struct DecodeWindow {
    slots: usize,
    end: AtomicUsize,
}

impl DecodeWindow {
    /// A window of `slots` slots (at least 1), starting at slot 0.
    pub fn new(slots: usize) -> Self {
        let slots = slots.max(1);
        DecodeWindow {
            slots,
            end: AtomicUsize::new(slots),
        }
    }

    /// How many undelivered slots may decode at once.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Whether the parts of slot `slot`, admitted now, start gated.
    pub fn gates(&self, slot: usize) -> bool {
        slot >= self.end.load(Acquire)
    }

    /// Slots below `end` may decode (it only grows).
    pub fn advance(&self, end: usize) {
        self.end.fetch_max(end, std::sync::atomic::Ordering::AcqRel);
    }
}
