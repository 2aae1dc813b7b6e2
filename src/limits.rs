//! [`SharedLimits`]: a memory limit and a connection cap that many concurrent scans share,
//! created once by a service and handed to its scans
//! ([`ScanBuilder::shared_limits`](crate::ScanBuilder::shared_limits)).
//!
//! Memory is a [`MemoryPool`] of bytes: each scan's budget ([`crate::flow::budget`]) asks it
//! for every slot it admits and every file it opens ahead, and gives the bytes back when the
//! slot is delivered (or the scan dropped). Requests are served first come, first served
//! across scans: a request is granted when it fits in the limit next to what is reserved *and
//! what every earlier waiting request asks for*, so a later (smaller) request never delays an
//! earlier one, and none starves. A request marked *urgent* — the one its scan cannot make
//! progress without: its next slot when it holds none, the file its planner waits for — is
//! granted at once, even past the limit; so every scan always progresses whatever the others
//! hold or how its caller interleaves them (no deadlock), and the limit is exceeded by at most
//! one slot and one footer read per scan. Connections are a fair (FIFO) tokio semaphore
//! around every GET.
//!
//! A leaf: it imports nothing of the crate, so `flow` and `io` can use it.
//! Invariant: every byte granted is given back exactly once (slot reservations by the scan's
//! budget, on delivery or when the scan ends; footer charges by their guard); a waiting
//! request that is dropped (a cancelled scan) leaves the queue.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::futures::Notified;
use tokio::sync::{Notify, Semaphore};

/// A memory limit and a connection cap shared by every scan it is given to (with
/// [`ScanBuilder::shared_limits`](crate::ScanBuilder::shared_limits)): the process-wide
/// bounds of a service that runs many scans at once. Create it once; it is a cheap handle
/// (clones share the same limits).
///
/// - **Memory**: the bytes all these scans hold fetched or decoded but not yet delivered
///   (their slot reservations, see each scan's
///   [`memory_budget`](crate::ScanBuilder::memory_budget), which still applies to each), and
///   the footer reads of files opened ahead, stay within `memory_limit`, plus at most one row
///   group and one footer read per scan (each scan may always read its next row group, so no
///   scan waits forever for the others). Scans are served in the order they ask (no scan
///   starves), and once the shared memory is half used, every scan prefetches less: its IO
///   window and queue of fetched bytes are halved (a quarter past three quarters), and its row
///   groups reserve fewer decoded batches ahead (`decode_ahead` halved, then quartered, at
///   least 1).
/// - **Connections**: at most `max_connections` GET requests in flight across all these
///   scans, granted in request order, on top of each scan's own
///   [`max_requests_in_flight`](crate::IoTuning::max_requests_in_flight).
///
/// Without shared limits (the default) each scan has only its own budget and request cap.
///
/// ```no_run
/// # fn main() -> rayquet::Result<()> {
/// use rayquet::prelude::*;
/// use rayquet::SharedLimits;
/// // Once, at start-up: 2 GiB and 64 connections for all scans together.
/// let options = ScanOptions::new().shared_limits(SharedLimits::new(2 << 30, 64));
/// // In each request handler:
/// let reader = Scan::new("s3://bucket/table/")?.with_options(options.clone()).build()?;
/// # drop(reader); Ok(()) }
/// ```
#[derive(Clone)]
pub struct SharedLimits {
    inner: Arc<Inner>,
}

struct Inner {
    memory: MemoryPool,
    connections: Arc<Semaphore>,
    max_connections: usize,
}

impl std::fmt::Debug for SharedLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedLimits")
            .field("memory_limit", &self.inner.memory.limit)
            .field("max_connections", &self.inner.max_connections)
            .finish()
    }
}

/// A point-in-time view of a [`SharedLimits`]: what its scans hold and wait for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SharedLimitsSnapshot {
    /// The memory limit, in bytes.
    pub memory_limit: u64,
    /// Bytes granted to scans now (slot reservations and footer reads of files opened ahead).
    pub reserved_bytes: u64,
    /// The most bytes granted at once so far.
    pub peak_reserved_bytes: u64,
    /// Memory requests waiting to be granted now.
    pub waiting: usize,
    /// Scans using these limits now (built and not yet wound down).
    pub scans: usize,
    /// The connection cap.
    pub max_connections: usize,
    /// GET requests in flight now.
    pub connections_in_use: usize,
}

impl SharedLimits {
    /// Limits for the scans given them: `memory_limit` bytes held by all of them together
    /// (fetched or decoded, not yet delivered), `max_connections` GET requests in flight
    /// across all of them. Both must be positive (checked when a scan is built).
    pub fn new(memory_limit: usize, max_connections: usize) -> Self {
        SharedLimits {
            inner: Arc::new(Inner {
                memory: MemoryPool::new(memory_limit as u64),
                connections: Arc::new(Semaphore::new(max_connections.min(Semaphore::MAX_PERMITS))),
                max_connections,
            }),
        }
    }

    /// The memory limit, in bytes.
    pub fn memory_limit(&self) -> usize {
        self.inner.memory.limit as usize
    }

    /// The cap on GET requests in flight across the scans.
    pub fn max_connections(&self) -> usize {
        self.inner.max_connections
    }

    /// What the scans hold and wait for now.
    pub fn snapshot(&self) -> SharedLimitsSnapshot {
        let st = self.inner.memory.lock();
        SharedLimitsSnapshot {
            memory_limit: self.inner.memory.limit,
            reserved_bytes: st.reserved,
            peak_reserved_bytes: st.peak,
            waiting: st.queue.len(),
            scans: st.scans,
            max_connections: self.inner.max_connections,
            connections_in_use: self
                .inner
                .max_connections
                .saturating_sub(self.inner.connections.available_permits()),
        }
    }

    /// The shared memory pool.
    pub(crate) fn memory(&self) -> &MemoryPool {
        &self.inner.memory
    }

    /// The connection semaphore (one permit per GET in flight).
    pub(crate) fn connections(&self) -> &Arc<Semaphore> {
        &self.inner.connections
    }
}

/// The bytes scans hold under one limit, and the queue of requests waiting for them.
pub(crate) struct MemoryPool {
    limit: u64,
    state: Mutex<PoolState>,
    /// Woken (all waiters) whenever bytes are given back or a waiting request leaves.
    notify: Notify,
}

#[derive(Default)]
struct PoolState {
    reserved: u64,
    peak: u64,
    /// Waiting requests in arrival order: (ticket number, bytes).
    queue: VecDeque<(u64, u64)>,
    next_ticket: u64,
    scans: usize,
}

impl MemoryPool {
    fn new(limit: u64) -> Self {
        MemoryPool {
            limit,
            state: Mutex::new(PoolState::default()),
            notify: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, PoolState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place in the queue, taken on the first failed [`MemoryPool::try_reserve`] and left
    /// when granted or dropped.
    pub fn ticket(&self) -> Ticket<'_> {
        Ticket {
            pool: Some(self),
            id: None,
        }
    }

    /// Grant `bytes` now if `urgent`, or if they fit in the limit next to what is reserved and
    /// what every request queued before `ticket` asks for; else queue `ticket` (once) and
    /// return `false`. A request larger than the whole limit is never queued: only urgency
    /// grants it.
    pub fn try_reserve(&self, ticket: &mut Ticket<'_>, bytes: u64, urgent: bool) -> bool {
        let mut st = self.lock();
        let granted = urgent || {
            let id = match ticket.id {
                Some(id) => Some(id),
                None if bytes <= self.limit => {
                    let id = st.next_ticket;
                    st.next_ticket += 1;
                    st.queue.push_back((id, bytes));
                    ticket.id = Some(id);
                    Some(id)
                }
                None => None,
            };
            let ahead: u64 = st
                .queue
                .iter()
                .take_while(|(t, _)| Some(*t) != id)
                .map(|(_, b)| *b)
                .sum();
            id.is_some() && st.reserved.saturating_add(ahead).saturating_add(bytes) <= self.limit
        };
        if granted {
            st.reserved += bytes;
            st.peak = st.peak.max(st.reserved);
            if let Some(id) = ticket.id.take() {
                st.queue.retain(|(t, _)| *t != id);
            }
        }
        granted
    }

    /// Give back `bytes` granted earlier.
    pub fn release(&self, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let mut st = self.lock();
        st.reserved = st.reserved.saturating_sub(bytes);
        drop(st);
        self.notify.notify_waiters();
    }

    /// A future woken when bytes are given back or a waiting request leaves. Create it before
    /// the check it waits after (it sees every wake-up from its creation on).
    pub fn notified(&self) -> Notified<'_> {
        self.notify.notified()
    }

    /// How far prefetching backs off: 0 while less than half the limit is granted, 1 (halve)
    /// up to three quarters, 2 (quarter) beyond.
    pub fn backoff(&self) -> u32 {
        let reserved = self.lock().reserved;
        if reserved.saturating_mul(4) >= self.limit.saturating_mul(3) {
            2
        } else if reserved.saturating_mul(2) >= self.limit {
            1
        } else {
            0
        }
    }

    /// A scan starts (`true`) or ends using the pool (counted for the snapshot).
    pub fn scan(&self, starts: bool) {
        let mut st = self.lock();
        if starts {
            st.scans += 1;
        } else {
            st.scans = st.scans.saturating_sub(1);
        }
    }
}

/// A request's place in a [`MemoryPool`]'s queue; dropping it (a cancelled scan's request)
/// leaves the queue and lets later requests through.
pub(crate) struct Ticket<'a> {
    pool: Option<&'a MemoryPool>,
    id: Option<u64>,
}

impl Ticket<'static> {
    /// A ticket of no pool (a scan without shared limits never queues).
    pub fn none() -> Self {
        Ticket {
            pool: None,
            id: None,
        }
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if let (Some(pool), Some(id)) = (self.pool, self.id.take()) {
            pool.lock().queue.retain(|(t, _)| *t != id);
            pool.notify.notify_waiters();
        }
    }
}

/// Bytes granted by a pool outside a slot (a footer read of a file opened ahead), given back
/// when dropped.
pub(crate) struct Charge {
    limits: SharedLimits,
    bytes: u64,
}

impl Charge {
    /// `bytes` already granted by `limits`' pool.
    pub fn new(limits: SharedLimits, bytes: u64) -> Self {
        Charge { limits, bytes }
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.limits.memory().release(self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_come_first_served() {
        let pool = MemoryPool::new(100);
        let (mut a, mut b, mut c) = (pool.ticket(), pool.ticket(), pool.ticket());
        assert!(pool.try_reserve(&mut a, 60, false));
        // 50 does not fit: queued.
        assert!(!pool.try_reserve(&mut b, 50, false));
        // 30 would fit, but not next to the 50 queued before it.
        assert!(!pool.try_reserve(&mut c, 30, false));
        pool.release(60);
        // Now both fit: the later one goes first, since it no longer delays the earlier.
        assert!(pool.try_reserve(&mut c, 30, false));
        assert!(pool.try_reserve(&mut b, 50, false));
        assert_eq!(pool.lock().reserved, 80);
        assert!(pool.lock().queue.is_empty());
    }

    #[test]
    fn urgent_requests_pass_and_dropped_tickets_leave() {
        let pool = MemoryPool::new(100);
        let mut a = pool.ticket();
        assert!(pool.try_reserve(&mut a, 90, false));
        let mut b = pool.ticket();
        assert!(!pool.try_reserve(&mut b, 50, false));
        let mut c = pool.ticket();
        // Urgent: granted past the limit, ahead of the queue.
        assert!(pool.try_reserve(&mut c, 40, true));
        assert_eq!(pool.lock().reserved, 130);
        assert_eq!(pool.backoff(), 2);
        let mut d = pool.ticket();
        assert!(!pool.try_reserve(&mut d, 5, false));
        drop(b);
        pool.release(130);
        assert_eq!(pool.backoff(), 0);
        assert!(pool.try_reserve(&mut d, 5, false));
        // Larger than the limit: never queued, so it holds nobody up.
        let mut e = pool.ticket();
        assert!(!pool.try_reserve(&mut e, 500, false));
        assert!(pool.lock().queue.is_empty());
    }
}
