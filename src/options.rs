//! [`ScanOptions`]: everything about a scan except what it reads, as one value that can be
//! built once and handed to every scan (plain files, tasks, Iceberg, Delta, DataFusion), like
//! parquet's `ArrowReaderOptions`. Its setters are the [`ScanBuilder`](crate::ScanBuilder) methods, the same on
//! every builder.
//!
//! Also the one place where the request plan's sizes live: how a footer is read
//! ([`ScanOptions::footer_read`]) and how byte ranges become requests
//! ([`ScanOptions::coalesce_gap`], [`ScanOptions::request_size`]), each by the [`Reach`] of the
//! file's store. They depend on sizes and the store only, never on timings, so the same scan
//! makes the same requests every run.
//!
//! Invariant: the defaults here are the documented ones (README's option table); every stage
//! reads its knobs from this struct and from nowhere else.

use std::sync::Arc;

use object_store::ObjectStore;
use parquet::arrow::arrow_reader::RowSelection;

use crate::error::{Error, ErrorKind, Result};
use crate::expr::Expr;
use crate::limits::SharedLimits;

/// Default rows per batch.
pub(crate) const DEFAULT_BATCH_SIZE: usize = 8192;
/// Default memory budget: bytes fetched or decoded but not yet delivered.
const DEFAULT_MEMORY_BUDGET: usize = 256 << 20;
/// Default limit on requests in flight per scan to local disks and memory: reads in blocking
/// tasks, where more only adds threads.
const NEAR_REQUESTS_IN_FLIGHT: usize = 48;
/// Default limit on GET requests in flight per scan to object stores: each waits a round trip
/// for its first byte, so many small objects need many at once (10,000 files of 20 KB behind
/// 30 ms: 7.5 s with 48, 2.9-3.2 s with 256, about the scan's time without delay). The bytes
/// in flight are bounded by the budget, not by this count.
const FAR_REQUESTS_IN_FLIGHT: usize = 256;
/// Default size of the suffix read that fetches a footer: the metadata and page index of most
/// files, and the last row group's data, which is then reused.
const DEFAULT_FOOTER_SIZE_HINT: u64 = 512 << 10;
/// Footer read of a scan that reads only part of each file (a projection, a filter or a row
/// selection): the metadata and page index, little else, since the data that a larger suffix
/// read would bring is mostly not wanted.
const NARROW_FOOTER_SIZE_HINT: u64 = 64 << 10;
/// Files of known size up to this are read whole in one request by default (no second round
/// trip for their data): always on a far store, where one round trip (~30 ms on S3) costs
/// more than reading the rest of such a file (~2 MiB at ~70 MB/s per connection); on a near
/// one unless the scan reads only part of each file.
const WHOLE_FILE_BYTES: u64 = 2 << 20;
/// Default largest gap between two byte ranges merged into one request, near stores: a
/// request costs microseconds, a gap's bytes cost their reading.
const NEAR_COALESCE_GAP: usize = 64 << 10;
/// Default largest gap merged on far stores, object_store's own: a round trip is worth about
/// a megabyte of bandwidth, and each GET is billed.
const FAR_COALESCE_GAP: usize = 1 << 20;
/// Default size of the parallel requests a large range is split into, near stores.
const NEAR_REQUEST_SIZE: usize = 2 << 20;
/// Default size of the requests a large range is split into, far stores (polars' target
/// request size): fewer, longer GETs, still many in flight across row groups.
const FAR_REQUEST_SIZE: usize = 8 << 20;
/// Default number of footers loaded ahead of the file being scheduled.
const DEFAULT_FOOTERS_AHEAD: usize = 16;
/// Default number of decoded batches a row group may hold undelivered (part of its reservation).
const DEFAULT_DECODE_AHEAD: usize = 16;
/// Default largest IO window: compressed bytes being fetched at once.
const DEFAULT_PREFETCH_BYTES: usize = 128 << 20;
/// Default uncompressed size of a row group above which it is split by columns.
const DEFAULT_SPLIT_BYTES: usize = 1 << 20;

/// How a scan fetches: request sizes and counts, how far it reads ahead. Where object stores
/// and local disks want different values, a field is an `Option` whose `None` (the default)
/// picks by each file's store; change them after measuring (see BENCHMARKS.md).
/// One value, set with [`ScanBuilder::io_tuning`](crate::ScanBuilder::io_tuning), like
/// object_store's `RetryConfig`; build it from the defaults:
///
/// ```
/// use rayquet::{IoTuning, ScanBuilder, ScanOptions};
/// let tuning = IoTuning::default().max_requests_in_flight(96).request_size(4 << 20);
/// let options = ScanOptions::new().io_tuning(tuning);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IoTuning {
    /// Requests a scan may have in flight at once (`None`, the default: 256 on object
    /// stores, where each waits a round trip and many small objects need many at once; 48 on
    /// local disks and in memory).
    pub max_requests_in_flight: Option<usize>,
    /// Bytes of the suffix read that fetches a footer (`None`, the default: 512 KiB; with a
    /// projection, filter or row selection, 64 KiB: metadata and page index, as most data
    /// will be skipped; files of known size up to 2 MiB read whole, on object stores always,
    /// on local disks and in memory by full scans). Files no larger than the read are fetched
    /// whole in one request and their data served from those bytes.
    pub footer_size_hint: Option<usize>,
    /// Largest gap between two byte ranges fetched as one request (`None`, the default: 1 MiB
    /// on object stores, where a round trip is worth about that much bandwidth; 64 KiB on
    /// local disks and in memory, where requests cost little and bytes of unread columns
    /// cost their reading; a store of the caller's own counts as an object store).
    pub coalesce_gap: Option<usize>,
    /// Size of the parallel requests a large byte range is split into (`None`, the default:
    /// 8 MiB on object stores, 2 MiB on local disks and in memory). On local disks and in
    /// memory a request holds at most this and is cut where a column chunk starts; on object
    /// stores a range becomes the fewest requests of about this size (its length over it,
    /// rounded: a 9 MiB chunk is one request), cut at chunk starts where one is near.
    pub request_size: Option<usize>,
    /// Footers loaded concurrently ahead of the file being scheduled (default 16; more while
    /// the bytes they bring stay under a quarter of the memory budget).
    pub footers_ahead: usize,
    /// Decoded batches each row group may hold undelivered before its decode tasks park
    /// (default 16), part of the row group's budget reservation. Fewer hold less memory
    /// but, in ordered scans, leave decode threads idle while the row group the caller reads
    /// finishes (4 cost a 2-core full scan 15% of its time).
    pub decode_ahead: usize,
    /// Uncompressed bytes of a row group's projection above which it is split by columns
    /// into parts decoded in parallel (default 1 MiB).
    pub split_bytes: usize,
    /// Largest IO window: compressed bytes being fetched at once (default 128 MiB). The
    /// window starts at 16 MiB and doubles whenever decoders are found waiting on IO, so
    /// under object-store latency it grows towards bandwidth x latency while a fast disk is
    /// not read far ahead. The memory budget bounds it too.
    pub prefetch_bytes: usize,
}

impl Default for IoTuning {
    fn default() -> Self {
        IoTuning {
            max_requests_in_flight: None,
            footer_size_hint: None,
            coalesce_gap: None,
            request_size: None,
            footers_ahead: DEFAULT_FOOTERS_AHEAD,
            decode_ahead: DEFAULT_DECODE_AHEAD,
            split_bytes: DEFAULT_SPLIT_BYTES,
            prefetch_bytes: DEFAULT_PREFETCH_BYTES,
        }
    }
}

impl IoTuning {
    /// Set [`IoTuning::max_requests_in_flight`].
    pub fn max_requests_in_flight(mut self, n: usize) -> Self {
        self.max_requests_in_flight = Some(n);
        self
    }
    /// Set [`IoTuning::footer_size_hint`].
    pub fn footer_size_hint(mut self, bytes: usize) -> Self {
        self.footer_size_hint = Some(bytes);
        self
    }
    /// Set [`IoTuning::coalesce_gap`].
    pub fn coalesce_gap(mut self, bytes: usize) -> Self {
        self.coalesce_gap = Some(bytes);
        self
    }
    /// Set [`IoTuning::request_size`].
    pub fn request_size(mut self, bytes: usize) -> Self {
        self.request_size = Some(bytes);
        self
    }
    /// Set [`IoTuning::footers_ahead`].
    pub fn footers_ahead(mut self, n: usize) -> Self {
        self.footers_ahead = n;
        self
    }
    /// Set [`IoTuning::decode_ahead`].
    pub fn decode_ahead(mut self, batches: usize) -> Self {
        self.decode_ahead = batches;
        self
    }
    /// Set [`IoTuning::split_bytes`].
    pub fn split_bytes(mut self, bytes: usize) -> Self {
        self.split_bytes = bytes;
        self
    }
    /// Set [`IoTuning::prefetch_bytes`].
    pub fn prefetch_bytes(mut self, bytes: usize) -> Self {
        self.prefetch_bytes = bytes;
        self
    }
}

/// How a scan runs: columns, filter and limit, batch size and ordering, memory budget and IO
/// tuning, object-store configuration and the thread pools. Every field has a default; set them
/// with the [`ScanBuilder`](crate::ScanBuilder) methods, on this value or on any scan builder.
///
/// Build it once and reuse it for many scans (it is cheap to clone):
///
/// ```no_run
/// # fn main() -> rayquet::Result<()> {
/// use rayquet::{Scan, ScanBuilder, ScanOptions};
/// let options = ScanOptions::new()
///     .batch_size(16 * 1024)
///     .memory_budget(512 << 20)
///     .store_option("aws_region", "eu-west-1");
/// for table in ["s3://bucket/a/", "s3://bucket/b/"] {
///     let reader = Scan::new(table)?.with_options(options.clone()).build()?;
///     // ...
/// #   drop(reader);
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ScanOptions {
    pub(crate) columns: Option<Vec<String>>,
    pub(crate) filter: Option<Expr>,
    /// `false`: the filter only prunes row groups and pages (`Scan::prune`); rows that were
    /// read are delivered whether or not they match.
    pub(crate) filter_exact: bool,
    pub(crate) limit: Option<usize>,
    pub(crate) batch_size: usize,
    pub(crate) ordered: bool,
    pub(crate) memory_budget: usize,
    /// How the scan fetches: request sizes and counts, read-ahead.
    pub(crate) tuning: IoTuning,
    /// Decode strings and binaries to Arrow's view types.
    pub(crate) string_views: bool,
    /// Plain scans: the caller's row selections, by file name or object path (set from the
    /// `Scan` at `build()`: they belong to one scan, not to reusable options).
    pub(crate) selections: Vec<(String, RowSelection)>,
    /// Plain scans: the name of the row index column (likewise the `Scan`'s).
    pub(crate) row_index: Option<String>,
    /// object_store configuration keys for the stores the scan builds.
    pub(crate) store_options: Vec<(String, String)>,
    /// The caller's stores, by URL root (`scheme://authority`).
    pub(crate) stores: Vec<(String, Arc<dyn ObjectStore>)>,
    /// How requests to cloud stores are retried (`None`: object_store's default).
    #[cfg(feature = "cloud")]
    pub(crate) retry: Option<object_store::RetryConfig>,
    /// HTTP client options of cloud stores (timeouts, proxies...).
    #[cfg(feature = "cloud")]
    pub(crate) client_options: Option<object_store::ClientOptions>,
    pub(crate) io: Option<tokio::runtime::Handle>,
    pub(crate) pool: Option<Arc<rayon::ThreadPool>>,
    /// Map local files into memory rather than read them.
    pub(crate) memory_map: bool,
    /// Verify the CRC-32 of pages whose headers carry one.
    pub(crate) verify_checksums: bool,
    /// Parsed footers shared with other scans (default: the process-wide cache; `None`: off).
    pub(crate) footer_cache: Option<crate::cache::FooterCache>,
    /// Memory and connections shared with other scans.
    pub(crate) limits: Option<SharedLimits>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            columns: None,
            filter: None,
            filter_exact: true,
            limit: None,
            batch_size: DEFAULT_BATCH_SIZE,
            ordered: true,
            memory_budget: DEFAULT_MEMORY_BUDGET,
            tuning: IoTuning::default(),
            string_views: false,
            selections: Vec::new(),
            row_index: None,
            store_options: Vec::new(),
            stores: Vec::new(),
            #[cfg(feature = "cloud")]
            retry: None,
            #[cfg(feature = "cloud")]
            client_options: None,
            io: None,
            pool: None,
            memory_map: false,
            verify_checksums: true,
            footer_cache: Some(crate::cache::FooterCache::global()),
            limits: None,
        }
    }
}

impl std::fmt::Debug for ScanOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<&str> = self.store_options.iter().map(|(k, _)| k.as_str()).collect();
        let stores: Vec<&str> = self.stores.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ScanOptions")
            .field("columns", &self.columns)
            .field("filter", &self.filter.as_ref().map(|e| e.to_string()))
            .field("limit", &self.limit)
            .field("batch_size", &self.batch_size)
            .field("ordered", &self.ordered)
            .field("memory_budget", &self.memory_budget)
            .field("io_tuning", &self.tuning)
            .field("string_views", &self.string_views)
            .field("store_option_keys", &keys)
            .field("stores", &stores)
            .field("memory_map", &self.memory_map)
            .field("verify_checksums", &self.verify_checksums)
            .field("footer_cache", &self.footer_cache)
            .field("shared_limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl ScanOptions {
    /// The defaults.
    pub fn new() -> Self {
        ScanOptions::default()
    }

    /// The IO runtime scans with these options use: the one given to
    /// [`ScanBuilder::io_runtime`](crate::ScanBuilder::io_runtime), else the shared one.
    pub(crate) fn io_handle(&self) -> tokio::runtime::Handle {
        self.io.clone().unwrap_or_else(crate::runtime::io_handle)
    }

    /// The decode pool scans with these options use: the one given to
    /// [`ScanBuilder::decode_pool`](crate::ScanBuilder::decode_pool), else the shared one.
    pub(crate) fn pool(&self) -> Arc<rayon::ThreadPool> {
        self.pool
            .clone()
            .unwrap_or_else(crate::runtime::decode_pool)
    }

    /// Check the values that must be positive; an error names the first bad one.
    pub(crate) fn validate(&self) -> Result<()> {
        let t = &self.tuning;
        let positive = [
            ("batch_size", self.batch_size),
            (
                "max_requests_in_flight",
                t.max_requests_in_flight.unwrap_or(1),
            ),
            ("decode_ahead", t.decode_ahead),
            ("footers_ahead", t.footers_ahead),
            ("request_size", t.request_size.unwrap_or(1)),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("{name} must be > 0"),
            ));
        }
        if let Some(s) = &self.limits {
            if s.memory_limit() == 0 || s.max_connections() == 0 {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "shared limits need a positive memory limit and connection cap",
                ));
            }
        }
        if t.footer_size_hint.is_some_and(|h| h < 8) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "footer_size_hint must be >= 8",
            ));
        }
        if let Some(io) = &self.io {
            if io.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "io_runtime needs a multi-thread tokio runtime (a current-thread runtime is \
                     only driven while its owner blocks on it)",
                ));
            }
        }
        Ok(())
    }

    /// Bytes of the suffix read that loads the footer of a file of `size` bytes (when known)
    /// on a store of `reach`: the caller's [`IoTuning::footer_size_hint`]; else the whole
    /// file when it is at most 2 MiB and the store is far, or the scan reads all of it (one
    /// round trip instead of footer, then data); else 64 KiB when the scan reads only part of
    /// the file (`narrow`: a projection, filter, selection, byte range...); else 512 KiB,
    /// whose data is reused.
    pub(crate) fn footer_read(&self, size: Option<u64>, narrow: bool, reach: Reach) -> u64 {
        let whole = size.filter(|&s| s <= WHOLE_FILE_BYTES && (reach == Reach::Far || !narrow));
        match (self.tuning.footer_size_hint, whole) {
            (Some(h), _) => h as u64,
            (None, Some(size)) => size,
            (None, None) if narrow => NARROW_FOOTER_SIZE_HINT,
            (None, None) => DEFAULT_FOOTER_SIZE_HINT,
        }
    }

    /// Largest gap merged between two byte ranges of one request, on a store of `reach`.
    pub(crate) fn coalesce_gap(&self, reach: Reach) -> u64 {
        let default = match reach {
            Reach::Near => NEAR_COALESCE_GAP,
            Reach::Far => FAR_COALESCE_GAP,
        };
        self.tuning.coalesce_gap.unwrap_or(default) as u64
    }

    /// Requests in flight at once to stores of `reach`.
    pub(crate) fn requests_in_flight(&self, reach: Reach) -> usize {
        let default = match reach {
            Reach::Near => NEAR_REQUESTS_IN_FLIGHT,
            Reach::Far => FAR_REQUESTS_IN_FLIGHT,
        };
        self.tuning.max_requests_in_flight.unwrap_or(default)
    }

    /// Size of the requests a large range is split into, on a store of `reach`.
    pub(crate) fn request_size(&self, reach: Reach) -> u64 {
        let default = match reach {
            Reach::Near => NEAR_REQUEST_SIZE,
            Reach::Far => FAR_REQUEST_SIZE,
        };
        self.tuning.request_size.unwrap_or(default) as u64
    }
}

/// How far a file's store is, as the request plan weighs it: what one round trip costs
/// against the bytes it could bring instead. Decided from the store alone (never from
/// timings), so the same scan makes the same requests every run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// A local disk or memory (object_store's `LocalFileSystem` and `InMemory`): a request
    /// costs microseconds, so only the bytes wanted are read.
    Near,
    /// Any other store (S3, GCS, Azure, HTTP, or a store of the caller's own): a round trip
    /// costs tens of milliseconds, worth a megabyte or more of bandwidth, so requests are
    /// merged and small files read whole.
    Far,
}

impl Reach {
    /// The reach of `store`: near for object_store's local file system (with or without a
    /// prefix) and in-memory store, far for every other.
    pub(crate) fn of(store: &dyn ObjectStore) -> Reach {
        // object_store names its stores in `Display`; a wrapper (a limit, a throttle, a
        // caller's own) names itself first and is taken as far.
        let name = store.to_string();
        match name.starts_with("LocalFileSystem(") || name == "InMemory" {
            true => Reach::Near,
            false => Reach::Far,
        }
    }
}
