//! The budget: admission control for slots, run on the IO runtime.
//!
//! The [`Budget`] bounds bytes fetched or decoded but not yet delivered: a slot is admitted
//! only when its reservation fits, or when nothing else is in flight, so a slot larger than the
//! whole budget still runs, alone. It also keeps IO from running far ahead of decoding: an
//! adaptive *IO window* bounds the bytes being fetched, and it widens only while decoders are
//! found waiting on IO.
//!
//! With [`SharedLimits`] (many scans under one memory limit) a slot must also be granted its
//! reservation by the shared pool, first come first served across scans; a slot admitted while
//! its scan has nothing in flight is granted at once (*urgent*), so the slot the consumer waits
//! for never waits on other scans. As the shared pool fills, the scan backs off: its IO window,
//! decode queue and decode-ahead shrink ([`Budget::backoff`]).
//!
//! Invariants: admission is in call order (one caller, the driver), i.e. in delivery order, so
//! the slot the consumer waits for is always admitted; every byte granted by the shared pool
//! is given back once: on the slot's release, or all at once when the scan closes
//! ([`Budget::close`], after which nothing more is taken from the pool).

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Mutex;

use tokio::sync::Notify;

use crate::limits::{SharedLimits, Ticket};
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
    state: Mutex<State>,
    /// Compressed bytes of admitted slots being fetched or waiting to be decoded.
    held: std::sync::atomic::AtomicU64,
    /// Of those, bytes that have arrived and wait for (or are in) decoding.
    waiting: std::sync::atomic::AtomicU64,
    notify: Notify,
    /// The memory limit shared with other scans, if any.
    shared: Option<SharedLimits>,
}

/// What the admitted slots reserve.
#[derive(Debug, Default)]
struct State {
    reserved: u64,
    in_flight: usize,
    /// The scan has ended: its reservations went back to the shared pool, and nothing more is
    /// taken from it.
    closed: bool,
}

impl Budget {
    /// A budget of `limit` bytes, an IO window up to `prefetch` and a decode queue of `queue`
    /// bytes; with `shared`, slots are also granted their bytes by the shared memory pool.
    pub fn new(limit: u64, prefetch: u64, queue: u64, shared: Option<SharedLimits>) -> Self {
        if let Some(s) = &shared {
            s.memory().scan(true);
        }
        Budget {
            limit,
            prefetch: prefetch.max(queue),
            queue,
            window: queue.into(),
            warm: false.into(),
            state: Mutex::new(State::default()),
            held: Default::default(),
            waiting: Default::default(),
            notify: Notify::new(),
            shared,
        }
    }

    /// How far prefetching backs off under shared-memory pressure (0 without shared limits):
    /// the IO window and decode queue are shifted right by it, as is `decode_ahead`.
    pub fn backoff(&self) -> u32 {
        self.shared.as_ref().map_or(0, |s| s.memory().backoff())
    }

    /// Decoded batches a slot admitted now reserves ahead: `decode_ahead`, backed off under
    /// shared-memory pressure, at least 1.
    pub fn decode_ahead(&self, decode_ahead: usize) -> usize {
        (decode_ahead >> self.backoff()).max(1)
    }

    /// Admit a slot reserving `bytes` (fetching `fetch` of them) when it fits next to the
    /// reservations in flight and the bytes actually buffered, and IO is not ahead of decoding:
    /// fewer than `queue` fetched bytes wait for the decoders and fewer than `window` bytes are
    /// being fetched (each at least the slot's own fetch, so one slot always fits; both backed
    /// off under shared-memory pressure). The first slot in flight is always admitted, whatever
    /// its size, and granted by the shared pool at once; other slots wait their turn there.
    fn try_admit(
        &self,
        bytes: u64,
        fetch: u64,
        metrics: &Metrics,
        ticket: &mut Ticket<'_>,
    ) -> bool {
        let mut st = self.state.lock().expect("budget lock");
        let shift = self.backoff();
        let buffered = metrics.buffered_bytes.load(Relaxed);
        let fits = st.reserved.max(buffered) + bytes <= self.limit;
        let waiting = self.waiting.load(Relaxed);
        let fetching = self.held.load(Relaxed).saturating_sub(waiting);
        let window = (self.window.load(Relaxed) >> shift).max(fetch);
        let queue = (self.queue >> shift).max(2 * fetch);
        let io_ahead = waiting >= queue || fetching + fetch > window;
        let alone = st.in_flight == 0;
        if !(alone || (fits && !io_ahead)) {
            return false;
        }
        if let Some(s) = self.shared.as_ref().filter(|_| !st.closed) {
            if !s.memory().try_reserve(ticket, bytes, alone) {
                return false;
            }
        }
        st.reserved += bytes;
        st.in_flight += 1;
        true
    }

    /// Wait until a slot reserving `bytes` (fetching `fetch`) may start. Admission is in call
    /// order (one caller). Dropping the future (a cancelled scan) leaves the shared queue.
    pub async fn admit(&self, bytes: u64, fetch: u64, metrics: &Metrics) {
        let Some(shared) = &self.shared else {
            let mut ticket = Ticket::none();
            loop {
                let notified = self.notify.notified();
                if self.try_admit(bytes, fetch, metrics, &mut ticket) {
                    return;
                }
                notified.await;
            }
        };
        let pool = shared.memory();
        let mut ticket = pool.ticket();
        loop {
            let mine = std::pin::pin!(self.notify.notified());
            let others = std::pin::pin!(pool.notified());
            if self.try_admit(bytes, fetch, metrics, &mut ticket) {
                return;
            }
            futures::future::select(mine, others).await;
        }
    }

    /// A slot that reserved `bytes` is fully delivered (or abandoned).
    pub fn release(&self, bytes: u64) {
        let mut st = self.state.lock().expect("budget lock");
        st.reserved = st.reserved.saturating_sub(bytes);
        st.in_flight = st.in_flight.saturating_sub(1);
        let give_back = !st.closed;
        drop(st);
        if let Some(s) = self.shared.as_ref().filter(|_| give_back) {
            s.memory().release(bytes);
        }
        self.notify.notify_one();
    }

    /// The scan has ended (delivered everything, failed or was dropped): give every byte its
    /// slots still reserve back to the shared pool now, and take nothing more from it.
    pub fn close(&self) {
        // Also called from `drop`: never panic on a poisoned lock here.
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if std::mem::replace(&mut st.closed, true) {
            return;
        }
        let reserved = st.reserved;
        drop(st);
        if let Some(s) = &self.shared {
            s.memory().release(reserved);
        }
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

    /// A file on a far store was opened: every fetch costs a round trip before its first
    /// byte, so open the IO window to at least `bytes` (at most the largest window) at once,
    /// rather than only after decoders have waited (each doubling cost a round trip: 4 files
    /// of 2 x 14 MB row groups over a 30 ms store fetched their first row groups one by one).
    /// The window only decides when slots are admitted, never which requests they make.
    pub fn far_store(&self, bytes: u64) {
        self.window.fetch_max(bytes.min(self.prefetch), Relaxed);
    }

    /// The IO window has widened: decoders have been found waiting on IO.
    pub fn io_bound(&self) -> bool {
        self.window.load(Relaxed) > self.queue
    }

    /// `bytes` are no longer buffered: a batch was delivered, or a slot's fetched bytes were
    /// dropped. Admission counts buffered bytes only where they exceed the slots'
    /// reservations (`fits` in [`Budget::try_admit`]), so the driver is woken only when they
    /// did: waking it for every batch cost a wake-up of an IO thread per batch for an
    /// admission that could not change (half of TPC-H Q1's context switches through
    /// DataFusion: 12,392 / 12,658 before, 6,652 / 7,315 after, `perf stat -e
    /// context-switches` on the tpch bench's Q1, 2026-12-02, Zen 5).
    pub fn unbuffered(&self, bytes: u64, metrics: &Metrics) {
        let before = metrics.release(bytes);
        // Buffered bytes only grow elsewhere, which never helps admission, and reservations
        // only shrink in `release`, which wakes the driver itself: a driver that found
        // `reserved` the larger still does, whatever these bytes.
        // Also called from `Held`'s drop: never panic on a poisoned lock here.
        let reserved = self
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .reserved;
        if before > reserved {
            self.notify.notify_one();
        }
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        self.close();
        if let Some(s) = &self.shared {
            s.memory().scan(false);
        }
    }
}

/// The most decoded bytes one part's batch may hold (the batch byte limit): a sixteenth of the
/// memory budget, at least 1 MiB. A batch whose values would hold more is cut to fewer rows
/// (`decode::bound`); a single value larger than the budget is an error.
pub(crate) fn batch_bytes(memory_budget: u64) -> u64 {
    (memory_budget / 16).max(1 << 20)
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::task::Context;

    use futures::task::noop_waker;
    use futures::FutureExt;

    use super::*;

    /// A budget of 100 bytes with one slot of `reserved` bytes in flight and `buffered` bytes
    /// buffered.
    fn budget(reserved: u64, buffered: u64) -> (Budget, Metrics) {
        let budget = Budget::new(100, 1 << 20, 1 << 20, None);
        let metrics = Metrics::default();
        assert!(budget.try_admit(reserved, 1, &metrics, &mut Ticket::none()));
        metrics.buffer(buffered);
        (budget, metrics)
    }

    #[test]
    fn a_delivered_batch_admits_the_slot_that_waited_on_buffered_bytes() {
        // Decoded bytes beyond the first slot's reservation: 95 + 10 > 100.
        let (budget, metrics) = budget(10, 95);
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut admit = pin!(budget.admit(10, 1, &metrics));
        assert!(admit.as_mut().poll(&mut cx).is_pending());
        budget.unbuffered(20, &metrics);
        assert_eq!(metrics.buffered_bytes.load(Relaxed), 75);
        assert!(
            admit.as_mut().poll(&mut cx).is_ready(),
            "75 + 10 fit in 100: the delivery must wake admission"
        );
    }

    #[test]
    fn a_delivered_batch_within_the_reservations_wakes_nothing() {
        // Admission looks at max(reserved, buffered): 90 reserved, 50 buffered.
        let (budget, metrics) = budget(90, 50);
        budget.unbuffered(10, &metrics);
        assert_eq!(metrics.buffered_bytes.load(Relaxed), 40);
        assert!(
            budget.notify.notified().now_or_never().is_none(),
            "no wake-up stored for an admission the delivery cannot change"
        );
        // Above the reservations, a delivery wakes it.
        metrics.buffer(70);
        budget.unbuffered(10, &metrics);
        assert!(budget.notify.notified().now_or_never().is_some());
    }
}
