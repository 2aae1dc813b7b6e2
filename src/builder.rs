//! [`ScanBuilder`]: the one dialect of every rayquet scan builder. A builder (plain files,
//! tasks, an Iceberg or Delta table, a DataFusion table) carries a [`ScanOptions`] and gets
//! every method here from it, with the same names, meanings and defaults; `ScanOptions` itself
//! is a `ScanBuilder`, so options can be built once and handed to any builder with
//! [`ScanBuilder::with_options`].
//!
//! Invariant: a method here only records a value in the builder's `ScanOptions`; checking
//! it (and failing) happens in the builder's `build()`.

use std::sync::Arc;

use object_store::ObjectStore;

use crate::cache::FooterCache;
use crate::expr::Expr;
use crate::limits::SharedLimits;
use crate::options::{IoTuning, ScanOptions};

/// The options every scan builder shares: what the query asks (columns, filter, limit,
/// batch size, ordering, memory budget), object stores, thread pools and shared resources,
/// and the IO tuning as one [`IoTuning`] value. Bring it into scope with
/// `use rayquet::ScanBuilder` (or `use rayquet::prelude::*`).
///
/// ```no_run
/// # fn main() -> rayquet::Result<()> {
/// use rayquet::prelude::*;
/// let reader = Scan::new("s3://bucket/lineitem/")?
///     .columns(["l_orderkey", "l_extendedprice"])
///     .filter(col("l_quantity").lt(5))
///     .limit(1_000_000)
///     .batch_size(8192)
///     .store_option("aws_region", "us-east-1")
///     .build()?;
/// # drop(reader); Ok(()) }
/// ```
pub trait ScanBuilder: Sized {
    /// The options this builder carries.
    fn options_mut(&mut self) -> &mut ScanOptions;

    /// Replace every option with `options` (built once, reused by many scans).
    fn with_options(mut self, options: ScanOptions) -> Self {
        *self.options_mut() = options;
        self
    }

    /// Read only these columns, by name, in this order. A dotted path (`a.b`) selects a nested
    /// field; a name that is itself a top-level column wins over a path. Unknown names fail
    /// `build()`. Default: all columns.
    fn columns<I, S>(mut self, columns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.options_mut().columns = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Deliver only the rows for which `filter` is true (null counts as false), in order.
    ///
    /// Row groups whose statistics or bloom filters prove that no row matches are never
    /// fetched; with a page index, neither are pages that cannot match. The filter's columns
    /// are fetched and decoded first, and only the pages of the other columns that hold
    /// matching rows are fetched after (late materialization). The filter's columns need not
    /// be among [`ScanBuilder::columns`]. See [`crate::expr`] for the semantics.
    fn filter(mut self, filter: Expr) -> Self {
        let o = self.options_mut();
        o.filter = Some(filter);
        o.filter_exact = true;
        self
    }

    /// Deliver at most this many rows; fetching stops once enough rows are planned.
    fn limit(mut self, rows: usize) -> Self {
        self.options_mut().limit = Some(rows);
        self
    }

    /// Rows per batch (default 8192). A row group's last batch may be shorter.
    fn batch_size(mut self, rows: usize) -> Self {
        self.options_mut().batch_size = rows;
        self
    }

    /// Deliver batches in file (task), row group and row order (`true`, the default) or as
    /// soon as each is ready (`false`; the most recently decoded first, while its arrays are
    /// still in the CPU's caches).
    fn ordered(mut self, ordered: bool) -> Self {
        self.options_mut().ordered = ordered;
        self
    }

    /// Bytes fetched or decoded but not yet delivered that the scan may hold (default 256 MiB).
    /// A single row group larger than the budget is still read, alone.
    fn memory_budget(mut self, bytes: usize) -> Self {
        self.options_mut().memory_budget = bytes;
        self
    }

    /// Decode string and binary columns to Arrow's view types, `Utf8View` and `BinaryView`
    /// (default `false`: the file's own Arrow schema hint, else `Utf8` / `Binary`). Views skip
    /// copying each value into one contiguous buffer. Task scans ignore it: their output
    /// schema decides (files are decoded to views when it has a view type, each column then
    /// cast to its output field's type).
    fn string_views(mut self, yes: bool) -> Self {
        self.options_mut().string_views = yes;
        self
    }

    /// An object-store configuration option for the stores the scan builds from URLs, such as
    /// `aws_endpoint`, `aws_allow_http`, `aws_region`, `google_service_account` or
    /// `azure_storage_account_name` (the keys of object_store's `AmazonS3ConfigKey`,
    /// `GoogleConfigKey`, `AzureConfigKey`), or an Iceberg FileIO property as pyiceberg names
    /// it (`s3.endpoint`, `s3.access-key-id`, `client.region`, `adls.account-name`...; see
    /// [`store_key`](crate::layer::store_key)). Options override the environment. A key no
    /// store knows makes the scan's build fail with `InvalidArgument`, naming it.
    fn store_option(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.options_mut()
            .store_options
            .push((key.into(), value.into()));
        self
    }

    /// Use `store` for every URL under `url_root` (`scheme://authority`, e.g. `s3://bucket`,
    /// or `file://` for local paths), instead of a store built from the environment and the
    /// store options.
    fn object_store(mut self, url_root: impl Into<String>, store: Arc<dyn ObjectStore>) -> Self {
        self.options_mut().stores.push((url_root.into(), store));
        self
    }

    /// How requests to the S3, GCS and Azure stores the scan builds are retried after transient
    /// failures (5xx, throttling, connection errors, timeouts): object_store's `RetryConfig`
    /// (default: 10 retries within 3 minutes, exponential backoff from 100 ms). A permanent
    /// failure (not found, access denied) is never retried. Retries are counted in
    /// [`crate::MetricsSnapshot::retries`].
    #[cfg(feature = "cloud")]
    fn retry(mut self, config: object_store::RetryConfig) -> Self {
        self.options_mut().retry = Some(config);
        self
    }

    /// HTTP client options of the cloud stores the scan builds: request and connect timeouts,
    /// proxies, HTTP/2... (object_store's `ClientOptions`).
    #[cfg(feature = "cloud")]
    fn client_options(mut self, options: object_store::ClientOptions) -> Self {
        self.options_mut().client_options = Some(options);
        self
    }

    /// Run IO on this tokio runtime instead of the shared one the library owns. It must be a
    /// multi-thread runtime: the scan's tasks run on it while the caller blocks in `next()`.
    fn io_runtime(mut self, handle: tokio::runtime::Handle) -> Self {
        self.options_mut().io = Some(handle);
        self
    }

    /// Decode on this rayon pool instead of the shared one the library owns.
    fn decode_pool(mut self, pool: Arc<rayon::ThreadPool>) -> Self {
        self.options_mut().pool = Some(pool);
        self
    }

    /// Map local files (`file://` and plain paths) into memory instead of reading them into
    /// buffers (default `false`). Saves copying every byte out of the page cache, about a tenth
    /// of a local scan's CPU, as polars does by default and pyarrow's `memory_map=True` does.
    /// The mapping is private and read-only, so the scan never writes to the file; the risks,
    /// as for polars and pyarrow, come from other processes *while the scan maps the file*:
    /// truncating it kills the process with SIGBUS instead of an error, and writing it in
    /// place changes the bytes under the decoders (Linux shows other processes' writes even in
    /// a private mapping), so values, even strings already checked to be UTF-8, are undefined.
    /// Turn it on only for files nobody modifies while they are scanned (table data files,
    /// written once); object stores are not affected.
    fn memory_map(mut self, yes: bool) -> Self {
        self.options_mut().memory_map = yes;
        self
    }

    /// Verify the CRC-32 checksum of every page whose header carries one, on the bytes as
    /// stored, before they are decompressed or decoded (default `true`): a damaged page is a
    /// [`CorruptData`](crate::ErrorKind::CorruptData) error naming the file, row group, column
    /// and page rather than values. Writers add checksums on request (pyarrow's
    /// `write_page_checksum`, parquet-mr's `parquet.page.write-checksum.enabled`); pages
    /// without one are not checked. `false` skips the check (measured cost: BENCHMARKS.md,
    /// "Page checksums").
    fn verify_checksums(mut self, yes: bool) -> Self {
        self.options_mut().verify_checksums = yes;
        self
    }

    /// Share parsed footers with the other scans given the same [`FooterCache`]: a file whose
    /// version (ETag, last-modified time) the scan knows from listing, a HEAD request or the
    /// file system is read without its footer request and thrift decoding when an earlier
    /// scan read the same version of it. Default: the process-wide [`FooterCache::global`]
    /// (at most [`DEFAULT_FOOTER_CACHE_BYTES`](crate::DEFAULT_FOOTER_CACHE_BYTES)); give a
    /// cache of your own to size it or keep a group of scans apart, or
    /// [`no_footer_cache`](ScanBuilder::no_footer_cache) to read every footer afresh.
    fn footer_cache(mut self, cache: FooterCache) -> Self {
        self.options_mut().footer_cache = Some(cache);
        self
    }

    /// Read every footer afresh: no footer cache, neither the process-wide one nor another
    /// (e.g. to measure a cold scan, or for files rewritten in place faster than the file
    /// system's timestamps tell apart).
    fn no_footer_cache(mut self) -> Self {
        self.options_mut().footer_cache = None;
        self
    }

    /// Share a memory limit and a connection cap with every other scan given the same
    /// [`SharedLimits`] (a service creates one at start-up and hands it to all its scans).
    /// The scan's own [`memory_budget`](ScanBuilder::memory_budget) and
    /// [`max_requests_in_flight`](IoTuning::max_requests_in_flight) still apply; the shared
    /// limits bound all the scans together, serve them in turn, and make each prefetch less
    /// as the shared memory fills. Default: none (the scan is bounded only by its own budget).
    fn shared_limits(mut self, limits: SharedLimits) -> Self {
        self.options_mut().limits = Some(limits);
        self
    }

    /// How the scan fetches: request sizes and counts, read-ahead ([`IoTuning`]; default
    /// `IoTuning::default()`).
    fn io_tuning(mut self, tuning: IoTuning) -> Self {
        self.options_mut().tuning = tuning;
        self
    }
}

/// The options value is a builder of itself: the same methods build a `ScanOptions` to reuse.
impl ScanBuilder for ScanOptions {
    fn options_mut(&mut self) -> &mut ScanOptions {
        self
    }
}
