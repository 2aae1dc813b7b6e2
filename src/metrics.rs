//! Counters a scan keeps while it runs, readable at any time through [`Metrics::snapshot`].
//!
//! All counters are relaxed atomics: they are written from tokio tasks, rayon tasks and the
//! consumer thread, and read as a best-effort consistent snapshot.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

/// Live counters of one scan. Obtain them with [`crate::ScanReader::metrics`]; they stay
/// readable after the reader is dropped.
#[derive(Debug, Default)]
pub struct Metrics {
    pub(crate) files: AtomicU64,
    pub(crate) row_groups: AtomicU64,
    pub(crate) units: AtomicU64,
    pub(crate) requests: AtomicU64,
    pub(crate) bytes_fetched: AtomicU64,
    pub(crate) bytes_decoded: AtomicU64,
    pub(crate) rows: AtomicU64,
    pub(crate) batches: AtomicU64,
    pub(crate) io_nanos: AtomicU64,
    pub(crate) decode_nanos: AtomicU64,
    pub(crate) wait_nanos: AtomicU64,
    pub(crate) buffered_bytes: AtomicU64,
    pub(crate) peak_buffered_bytes: AtomicU64,
    pub(crate) tasks_running: AtomicU64,
    pub(crate) row_groups_pruned: AtomicU64,
    pub(crate) bloom_pruned: AtomicU64,
    pub(crate) pages_pruned: AtomicU64,
    pub(crate) rows_filtered: AtomicU64,
    pub(crate) dictionary_filtered: AtomicU64,
    pub(crate) metadata_bytes: AtomicU64,
    pub(crate) rows_deleted: AtomicU64,
    pub(crate) http_requests: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) footer_cache_hits: AtomicU64,
    pub(crate) files_pruned: AtomicU64,
}

/// A point-in-time copy of a scan's [`Metrics`]. New counters may be added (it is
/// `#[non_exhaustive]`): read its fields, don't build one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MetricsSnapshot {
    /// Files whose footer has been read.
    pub files: u64,
    /// Row groups admitted for fetching.
    pub row_groups: u64,
    /// Units of work (a row group's projected column chunks, or a part of them) admitted.
    pub units: u64,
    /// GET requests sent to the object store (footers and data).
    pub requests: u64,
    /// Bytes received from the object store.
    pub bytes_fetched: u64,
    /// In-memory Arrow size of the decoded batches.
    pub bytes_decoded: u64,
    /// Rows delivered to the caller.
    pub rows: u64,
    /// Batches delivered to the caller.
    pub batches: u64,
    /// Sum over requests of the time each request took (overlapping requests add up).
    pub io_time: Duration,
    /// Sum over decode tasks of the time they ran (on rayon threads; tasks add up), including
    /// the decoding and evaluation of filters.
    pub decode_time: Duration,
    /// Time the caller spent blocked in `next()` waiting for a batch.
    pub wait_time: Duration,
    /// Bytes fetched or decoded but not yet delivered, now.
    pub buffered_bytes: u64,
    /// Highest value `buffered_bytes` reached.
    pub peak_buffered_bytes: u64,
    /// Tokio and rayon tasks of this scan still running (0 once a dropped scan has wound down).
    pub tasks_running: u64,
    /// Row groups never fetched because a filter excludes every row (by statistics, bloom
    /// filters or an explicit row selection).
    pub row_groups_pruned: u64,
    /// Of those, row groups excluded by a bloom filter.
    pub bloom_pruned: u64,
    /// Data pages of the columns read that were never fetched (page index pruning, late
    /// materialization and row selections).
    pub pages_pruned: u64,
    /// Rows a filter removed after decoding (read but not delivered).
    pub rows_filtered: u64,
    /// Row groups whose filter was evaluated on dictionary indices, once per dictionary entry
    /// rather than once per row (every column it reads dictionary-encoded).
    pub dictionary_filtered: u64,
    /// Of `bytes_fetched`, the bytes of requests for metadata: footer suffixes (which may also
    /// hold data that is then reused), page indexes and bloom filters.
    pub metadata_bytes: u64,
    /// Rows of the row groups read that a task's deleted positions removed (never decoded
    /// where the page index let the reader skip them).
    pub rows_deleted: u64,
    /// HTTP requests the scan's S3/GCS/Azure stores sent, retries included (0 for local
    /// files and stores the caller built).
    pub http_requests: u64,
    /// Requests repeated after a transient failure (HTTP retries by object_store, listings
    /// started again).
    pub retries: u64,
    /// Files whose footer came from the scan's [`crate::FooterCache`] (no footer request).
    pub footer_cache_hits: u64,
    /// Files never opened because their Hive partition values exclude every row of the
    /// filter ([`crate::Partitioning`]).
    pub files_pruned: u64,
}

impl Metrics {
    /// Copy the current values.
    pub fn snapshot(&self) -> MetricsSnapshot {
        MetricsSnapshot {
            files: self.files.load(Relaxed),
            row_groups: self.row_groups.load(Relaxed),
            units: self.units.load(Relaxed),
            requests: self.requests.load(Relaxed),
            bytes_fetched: self.bytes_fetched.load(Relaxed),
            bytes_decoded: self.bytes_decoded.load(Relaxed),
            rows: self.rows.load(Relaxed),
            batches: self.batches.load(Relaxed),
            io_time: Duration::from_nanos(self.io_nanos.load(Relaxed)),
            decode_time: Duration::from_nanos(self.decode_nanos.load(Relaxed)),
            wait_time: Duration::from_nanos(self.wait_nanos.load(Relaxed)),
            buffered_bytes: self.buffered_bytes.load(Relaxed),
            peak_buffered_bytes: self.peak_buffered_bytes.load(Relaxed),
            tasks_running: self.tasks_running.load(Relaxed),
            row_groups_pruned: self.row_groups_pruned.load(Relaxed),
            bloom_pruned: self.bloom_pruned.load(Relaxed),
            pages_pruned: self.pages_pruned.load(Relaxed),
            rows_filtered: self.rows_filtered.load(Relaxed),
            dictionary_filtered: self.dictionary_filtered.load(Relaxed),
            metadata_bytes: self.metadata_bytes.load(Relaxed),
            rows_deleted: self.rows_deleted.load(Relaxed),
            http_requests: self.http_requests.load(Relaxed),
            retries: self.retries.load(Relaxed),
            footer_cache_hits: self.footer_cache_hits.load(Relaxed),
            files_pruned: self.files_pruned.load(Relaxed),
        }
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    pub(crate) fn add_time(counter: &AtomicU64, d: Duration) {
        counter.fetch_add(d.as_nanos() as u64, Relaxed);
    }

    /// Count `n` more bytes as buffered, updating the peak.
    pub(crate) fn buffer(&self, n: u64) {
        let now = self.buffered_bytes.fetch_add(n, Relaxed) + n;
        self.peak_buffered_bytes.fetch_max(now, Relaxed);
    }

    /// Count `n` buffered bytes as released; the buffered bytes before.
    pub(crate) fn release(&self, n: u64) -> u64 {
        self.buffered_bytes.fetch_sub(n, Relaxed)
    }

    pub(crate) fn task_started(self: &Arc<Self>) -> TaskGuard {
        self.tasks_running.fetch_add(1, Relaxed);
        TaskGuard(Arc::clone(self))
    }
}

/// Decrements `tasks_running` when dropped, so aborted tasks are counted out too.
pub(crate) struct TaskGuard(Arc<Metrics>);

impl Drop for TaskGuard {
    fn drop(&mut self) {
        self.0.tasks_running.fetch_sub(1, Relaxed);
    }
}
