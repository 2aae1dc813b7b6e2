//! The budget: admission control for slots, run on the IO runtime.
//!
//! The [`Budget`] bounds bytes fetched or decoded but not yet delivered: a slot is admitted
//! only when its reservation fits, or when nothing else is in flight, so a slot larger than the
//! whole budget still runs, alone. It also keeps IO from running far ahead of decoding: an
//! adaptive *IO window* bounds the bytes being fetched, and it widens only while decoders are
//! found waiting on IO.
//!
//! Invariant: admission is in call order (one caller, the driver), i.e. in delivery order, so
//! the slot the consumer waits for is always admitted.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Mutex;

use tokio::sync::Notify;

use crate::metrics::Metrics;

/// Admission control for slots: reserved bytes and slots in flight.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: u64,
    /// Largest IO window (bytes being fetched), and the fetched bytes waiting for the decoders
    /// above which nothing is admitted.
    prefetch: u64,
    queue: u64,
    /// The IO window now: starts at `queue` and doubles (up to `prefetch`) whenever data
    /// arrives to find decoders idle and no data waiting, i.e. the decoders wait on IO.
    window: std::sync::atomic::AtomicU64,
    /// A slot has been decoded: decoders found idle from now on were starved by IO.
    warm: std::sync::atomic::AtomicBool,
    state: Mutex<(u64, usize)>,
    /// Compressed bytes of admitted slots being fetched or waiting to be decoded.
    held: std::sync::atomic::AtomicU64,
    /// Of those, bytes that have arrived and wait for (or are in) decoding.
    waiting: std::sync::atomic::AtomicU64,
    notify: Notify,
}

impl Budget {
    pub fn new(limit: u64, prefetch: u64, queue: u64) -> Self {
        Budget {
            limit,
            prefetch: prefetch.max(queue),
            queue,
            window: queue.into(),
            warm: false.into(),
            state: Mutex::new((0, 0)),
            held: Default::default(),
            waiting: Default::default(),
            notify: Notify::new(),
        }
    }

    /// Admit a slot reserving `bytes` (fetching `fetch` of them) when it fits next to the
    /// reservations in flight and the bytes actually buffered, and IO is not ahead of decoding:
    /// fewer than `queue` fetched bytes wait for the decoders and fewer than `window` bytes are
    /// being fetched (each at least the slot's own fetch, so one slot always fits). The first
    /// slot in flight is always admitted, whatever its size.
    fn try_admit(&self, bytes: u64, fetch: u64, metrics: &Metrics) -> bool {
        let mut st = self.state.lock().expect("budget lock");
        let (reserved, in_flight) = *st;
        let buffered = metrics.buffered_bytes.load(Relaxed);
        let fits = reserved.max(buffered) + bytes <= self.limit;
        let waiting = self.waiting.load(Relaxed);
        let fetching = self.held.load(Relaxed).saturating_sub(waiting);
        let window = self.window.load(Relaxed).max(fetch);
        let io_ahead = waiting >= self.queue.max(2 * fetch) || fetching + fetch > window;
        if in_flight == 0 || (fits && !io_ahead) {
            *st = (reserved + bytes, in_flight + 1);
            true
        } else {
            false
        }
    }

    /// Wait until a slot reserving `bytes` (fetching `fetch`) may start. Admission is in call
    /// order (one caller).
    pub async fn admit(&self, bytes: u64, fetch: u64, metrics: &Metrics) {
        loop {
            let notified = self.notify.notified();
            if self.try_admit(bytes, fetch, metrics) {
                return;
            }
            notified.await;
        }
    }

    /// A slot that reserved `bytes` is fully delivered (or abandoned).
    pub fn release(&self, bytes: u64) {
        let mut st = self.state.lock().expect("budget lock");
        st.0 = st.0.saturating_sub(bytes);
        st.1 = st.1.saturating_sub(1);
        drop(st);
        self.notify.notify_one();
    }

    /// A slot was admitted: its bytes are being fetched, then wait to be decoded.
    pub fn hold(&self, bytes: u64) {
        self.held.fetch_add(bytes, Relaxed);
    }

    /// `bytes` of a slot's data arrived. Arriving to an empty queue while decode threads are
    /// `idle` means the decoders were waiting on IO: widen the IO window.
    /// Before the first slot has been decoded the decoders necessarily wait: not counted.
    pub fn arrived(&self, bytes: u64, idle: bool) {
        let warm = self.warm.load(Relaxed);
        if self.waiting.fetch_add(bytes, Relaxed) == 0 && idle && warm {
            let w = self.window.load(Relaxed);
            self.window.store((w * 2).min(self.prefetch), Relaxed);
        }
        self.notify.notify_one();
    }

    /// A slot's bytes (`planned`, of which `arrived` came) are decoded or dropped: admission
    /// may go on.
    pub fn unhold(&self, planned: u64, arrived: u64) {
        self.warm.store(true, Relaxed);
        self.held.fetch_sub(planned, Relaxed);
        self.waiting.fetch_sub(arrived, Relaxed);
        self.notify.notify_one();
    }

    /// The IO window has widened: decoders have been found waiting on IO.
    pub fn io_bound(&self) -> bool {
        self.window.load(Relaxed) > self.queue
    }

    /// Memory was released outside a slot's end (a batch delivered): let admission re-check.
    pub fn poke(&self) {
        self.notify.notify_one();
    }
}
