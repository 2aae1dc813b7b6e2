//! [`ScanOptions`]: everything about a scan except what it reads, as one value that can be
//! built once and handed to every scan (plain files, tasks, Iceberg, Delta, DataFusion), like
//! parquet's `ArrowReaderOptions`. Its setters are the [`ScanBuilder`](crate::ScanBuilder) methods, the same on
//! every builder.
//!
//! Also the one place where the footer read-size policy lives ([`ScanOptions::footer_read`]).
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
/// Default limit on GET requests in flight per scan.
const DEFAULT_REQUESTS_IN_FLIGHT: usize = 48;
/// Default size of the suffix read that fetches a footer: the metadata and page index of most
/// files, and the last row group's data, which is then reused.
const DEFAULT_FOOTER_SIZE_HINT: u64 = 512 << 10;
/// Footer read of a scan that reads only part of each file (a projection, a filter or a row
/// selection): the metadata and page index, little else, since the data that a larger suffix
/// read would bring is mostly not wanted.
const NARROW_FOOTER_SIZE_HINT: u64 = 64 << 10;
/// Files of known size up to this are read whole in one request by default (no second round
/// trip for their data), unless the scan reads only part of each file.
const WHOLE_FILE_BYTES: u64 = 2 << 20;
/// Default largest gap between two byte ranges that are merged into one request. Requests
/// run in parallel (up to `max_requests_in_flight`), so a gap costs bandwidth and saves little.
const DEFAULT_COALESCE_GAP: usize = 64 << 10;
/// Default size of the parallel requests a large range is split into.
const DEFAULT_REQUEST_SIZE: usize = 2 << 20;
/// Default number of footers loaded ahead of the file being scheduled.
const DEFAULT_FOOTERS_AHEAD: usize = 16;
/// Default number of decoded batches a row group may hold undelivered (part of its reservation).
const DEFAULT_DECODE_AHEAD: usize = 16;
/// Default largest IO window: compressed bytes being fetched at once.
const DEFAULT_PREFETCH_BYTES: usize = 128 << 20;
/// Default uncompressed size of a row group above which it is split by columns.
const DEFAULT_SPLIT_BYTES: usize = 1 << 20;

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
    pub(crate) requests_in_flight: usize,
    /// `None`: the policy of [`ScanOptions::footer_read`].
    pub(crate) footer_size_hint: Option<usize>,
    pub(crate) coalesce_gap: usize,
    pub(crate) request_size: usize,
    pub(crate) footers_ahead: usize,
    pub(crate) decode_ahead: usize,
    pub(crate) split_bytes: usize,
    pub(crate) prefetch_bytes: usize,
    /// Decode strings and binaries to Arrow's view types.
    pub(crate) string_views: bool,
    /// Plain scans: the caller's row selections, by file name or object path.
    pub(crate) selections: Vec<(String, RowSelection)>,
    /// Plain scans: the name of the row index column.
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
    /// Parsed footers shared with other scans.
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
            requests_in_flight: DEFAULT_REQUESTS_IN_FLIGHT,
            footer_size_hint: None,
            coalesce_gap: DEFAULT_COALESCE_GAP,
            request_size: DEFAULT_REQUEST_SIZE,
            footers_ahead: DEFAULT_FOOTERS_AHEAD,
            decode_ahead: DEFAULT_DECODE_AHEAD,
            split_bytes: DEFAULT_SPLIT_BYTES,
            prefetch_bytes: DEFAULT_PREFETCH_BYTES,
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
            footer_cache: None,
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
            .field("requests_in_flight", &self.requests_in_flight)
            .field("footer_size_hint", &self.footer_size_hint)
            .field("coalesce_gap", &self.coalesce_gap)
            .field("request_size", &self.request_size)
            .field("footers_ahead", &self.footers_ahead)
            .field("decode_ahead", &self.decode_ahead)
            .field("split_bytes", &self.split_bytes)
            .field("prefetch_bytes", &self.prefetch_bytes)
            .field("string_views", &self.string_views)
            .field("store_option_keys", &keys)
            .field("stores", &stores)
            .field("memory_map", &self.memory_map)
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

    /// The columns set with [`ScanBuilder::columns`](crate::ScanBuilder::columns) (`None`: all).
    pub fn get_columns(&self) -> Option<&[String]> {
        self.columns.as_deref()
    }

    /// The filter set with [`ScanBuilder::filter`](crate::ScanBuilder::filter).
    pub fn get_filter(&self) -> Option<&Expr> {
        self.filter.as_ref()
    }

    /// The row limit set with [`ScanBuilder::limit`](crate::ScanBuilder::limit).
    pub fn get_limit(&self) -> Option<usize> {
        self.limit
    }

    /// Take the projection out of these options (table readers resolve it against the
    /// table's schema and give the scan of their tasks its columns themselves).
    pub fn take_columns(&mut self) -> Option<Vec<String>> {
        self.columns.take()
    }

    /// Take the filter out of these options (table readers rewrite it in the table's terms
    /// before handing it to the scan of their tasks).
    pub fn take_filter(&mut self) -> Option<Expr> {
        self.filter.take()
    }

    /// The footer cache set with [`ScanBuilder::footer_cache`](crate::ScanBuilder::footer_cache).
    pub fn get_footer_cache(&self) -> Option<&crate::FooterCache> {
        self.footer_cache.as_ref()
    }

    /// Rows per batch.
    pub fn get_batch_size(&self) -> usize {
        self.batch_size
    }

    /// The memory budget (bytes fetched or decoded but not yet delivered).
    pub fn get_memory_budget(&self) -> usize {
        self.memory_budget
    }

    /// The object-store configuration keys and values set with [`ScanBuilder::store_option`](crate::ScanBuilder::store_option).
    pub fn get_store_options(&self) -> &[(String, String)] {
        &self.store_options
    }

    /// The IO runtime scans with these options use: the one given to
    /// [`ScanBuilder::io_runtime`](crate::ScanBuilder::io_runtime), else the shared one (2 worker threads, created on first use).
    pub fn get_io_runtime(&self) -> tokio::runtime::Handle {
        self.io.clone().unwrap_or_else(crate::runtime::io_handle)
    }

    /// The decode pool scans with these options use: the one given to
    /// [`ScanBuilder::decode_pool`](crate::ScanBuilder::decode_pool), else the shared one (a thread per core).
    pub fn get_decode_pool(&self) -> Arc<rayon::ThreadPool> {
        self.pool
            .clone()
            .unwrap_or_else(crate::runtime::decode_pool)
    }

    /// Run `fut` on the IO runtime of these options and wait for its result on this thread,
    /// without `block_on` (so it may be called from any thread, even a tokio worker, which it
    /// blocks). Table readers use it to plan on the IO runtime from sync code.
    pub fn wait<T: Send + 'static>(
        &self,
        fut: impl std::future::Future<Output = Result<T>> + Send + 'static,
    ) -> Result<T> {
        crate::runtime::block_on_io(&self.get_io_runtime(), fut)
    }

    /// Check the values that must be positive; an error names the first bad one.
    pub(crate) fn validate(&self) -> Result<()> {
        let positive = [
            ("batch_size", self.batch_size),
            ("max_requests_in_flight", self.requests_in_flight),
            ("decode_ahead", self.decode_ahead),
            ("footers_ahead", self.footers_ahead),
            ("request_size", self.request_size),
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
        if self.footer_size_hint.is_some_and(|h| h < 8) {
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

    /// Bytes of the suffix read that loads the footer of a file of `size` bytes (when known):
    /// the caller's [`ScanBuilder::footer_size_hint`](crate::ScanBuilder::footer_size_hint); else 64 KiB when the scan reads only
    /// part of the file (`narrow`: a projection, filter, selection, byte range...); else the
    /// whole file when it is at most 2 MiB (one round trip instead of footer, then data);
    /// else 512 KiB, whose data is reused. The one place this policy lives.
    pub(crate) fn footer_read(&self, size: Option<u64>, narrow: bool) -> u64 {
        match (self.footer_size_hint, size) {
            (Some(h), _) => h as u64,
            (None, _) if narrow => NARROW_FOOTER_SIZE_HINT,
            (None, Some(size)) if size <= WHOLE_FILE_BYTES => size,
            (None, _) => DEFAULT_FOOTER_SIZE_HINT,
        }
    }
}
