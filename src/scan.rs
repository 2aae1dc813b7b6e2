//! The public entry point: [`Scan`], a builder that ends in [`Scan::build`], which resolves the
//! inputs, reads the first footer to learn the schema, and starts the pipeline.
//!
//! Everything here runs on the caller's thread; the work it starts runs on the IO runtime and
//! the decode pool (see `ARCHITECTURE.md`).

use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore};

use parquet::arrow::arrow_reader::RowSelection;

use crate::deliver::ScanReader;
use crate::error::{Error, ErrorKind, Result};
use crate::expr::Expr;
use crate::runtime;
use crate::source::{Input, ObjectRef};

/// Default rows per batch.
pub const DEFAULT_BATCH_SIZE: usize = 8192;
/// Default memory budget: bytes fetched or decoded but not yet delivered.
pub const DEFAULT_MEMORY_BUDGET: usize = 256 << 20;
/// Default limit on GET requests in flight per scan.
pub const DEFAULT_REQUESTS_IN_FLIGHT: usize = 48;
/// Default size of the suffix read that fetches a footer: the metadata and page index of most
/// files, and the last row group's data, which is then reused.
pub const DEFAULT_FOOTER_SIZE_HINT: usize = 512 << 10;
/// Default footer read of a scan that reads only part of each file (a projection, a filter or
/// a row selection): the metadata and page index, little else, since the data that a larger
/// suffix read would bring is mostly not wanted.
pub const NARROW_FOOTER_SIZE_HINT: usize = 64 << 10;
/// Files of known size up to this are read whole in one request by default (no second round
/// trip for their data), unless the scan reads only part of each file.
pub const WHOLE_FILE_BYTES: u64 = 2 << 20;
/// Default largest gap between two byte ranges that are merged into one request. Requests
/// run in parallel (up to `max_requests_in_flight`), so a gap costs bandwidth and saves little.
pub const DEFAULT_COALESCE_GAP: usize = 64 << 10;
/// Default size of the parallel requests a large range is split into.
pub const DEFAULT_REQUEST_SIZE: usize = 2 << 20;
/// Default number of footers loaded ahead of the file being scheduled.
pub const DEFAULT_FOOTERS_AHEAD: usize = 16;
/// Default number of decoded batches a row group may hold undelivered (part of its reservation).
pub const DEFAULT_DECODE_AHEAD: usize = 4;
/// Default largest IO window: compressed bytes being fetched at once.
pub const DEFAULT_PREFETCH_BYTES: usize = 128 << 20;
/// Default uncompressed size of a row group above which it is split by columns.
pub const DEFAULT_SPLIT_BYTES: usize = 1 << 20;

/// Tuning knobs of a scan, all with defaults. Set through [`Scan`]'s methods.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub columns: Option<Vec<String>>,
    pub batch_size: usize,
    pub limit: Option<usize>,
    pub ordered: bool,
    pub memory_budget: usize,
    pub requests_in_flight: usize,
    /// `None`: [`DEFAULT_FOOTER_SIZE_HINT`] (small files read whole), or
    /// [`NARROW_FOOTER_SIZE_HINT`] with a projection, filter or row selection (see
    /// `pipeline::load_footer`).
    pub footer_size_hint: Option<usize>,
    pub coalesce_gap: usize,
    pub request_size: usize,
    pub footers_ahead: usize,
    pub decode_ahead: usize,
    pub split_bytes: usize,
    pub prefetch_bytes: usize,
    pub filter: Option<Expr>,
    /// The caller's row selections, by file name or object path.
    pub selections: Vec<(String, RowSelection)>,
    pub row_index: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            columns: None,
            batch_size: DEFAULT_BATCH_SIZE,
            limit: None,
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
            filter: None,
            selections: Vec::new(),
            row_index: None,
        }
    }
}

/// A scan of one or more Parquet files, configured with small methods and started by
/// [`Scan::build`].
///
/// ```no_run
/// # fn main() -> rayquet::Result<()> {
/// let reader = rayquet::Scan::new("s3://bucket/table/")?
///     .columns(["l_orderkey", "l_extendedprice"])
///     .batch_size(8192)
///     .build()?;
/// let schema = reader.schema();
/// for batch in reader {
///     let batch = batch?;
///     println!("{} rows", batch.num_rows());
/// }
/// # Ok(()) }
/// ```
pub struct Scan {
    inputs: Vec<Input>,
    store_options: Vec<(String, String)>,
    options: Options,
    io: Option<tokio::runtime::Handle>,
    pool: Option<Arc<rayon::ThreadPool>>,
}

impl std::fmt::Debug for Scan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scan")
            .field("inputs", &self.inputs.len())
            .field("options", &self.options)
            .finish()
    }
}

impl Scan {
    /// A scan of one URL or local path: `s3://`, `gs://`, `az://`, `abfss://`, `file://`,
    /// `memory://` or a plain path. A directory or prefix (a trailing `/`, or a path that is not an
    /// object) means every `*.parquet` object under it, in lexical order.
    ///
    /// Credentials and endpoints come from the usual environment variables (`AWS_*`,
    /// `GOOGLE_*`, `AZURE_*`) and from [`Scan::store_option`].
    pub fn new(url_or_path: impl AsRef<str>) -> Result<Scan> {
        Scan::from_urls([url_or_path])
    }

    /// A scan of several URLs or paths, in the caller's order (each may be a file or a prefix).
    pub fn from_urls<I, S>(urls: I) -> Result<Scan>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let inputs = urls
            .into_iter()
            .map(|u| Input::parse(u.as_ref()))
            .collect::<Result<Vec<_>>>()?;
        if inputs.is_empty() {
            return Err(Error::new(ErrorKind::InvalidArgument, "no input given"));
        }
        Ok(Scan::with_inputs(inputs))
    }

    /// A scan of objects in a store the caller built, in the caller's order. Pass
    /// [`ObjectMeta`]s (sizes known: no extra request per file) or [`Path`]s.
    pub fn from_store<I, O>(store: Arc<dyn ObjectStore>, objects: I) -> Scan
    where
        I: IntoIterator<Item = O>,
        O: Into<ObjectRef>,
    {
        let objects = objects.into_iter().map(Into::into).collect();
        Scan::with_inputs(vec![Input::Objects { store, objects }])
    }

    fn with_inputs(inputs: Vec<Input>) -> Scan {
        Scan {
            inputs,
            store_options: Vec::new(),
            options: Options::default(),
            io: None,
            pool: None,
        }
    }

    /// An object-store configuration option for URL inputs, such as `aws_endpoint`,
    /// `aws_allow_http`, `aws_region`, `google_service_account` or `azure_storage_account_name`
    /// (the keys of object_store's `AmazonS3ConfigKey`, `GoogleConfigKey`, `AzureConfigKey`).
    /// Options override the environment.
    pub fn store_option(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.store_options.push((key.into(), value.into()));
        self
    }

    /// Read only these columns, by name. A dotted path (`a.b`) selects a nested field; a name
    /// that is itself a top-level column wins over a path. The output keeps the order in which
    /// top-level columns are first named. Unknown names fail [`Scan::build`].
    pub fn columns<I, S>(mut self, columns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.options.columns = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Deliver only the rows for which `filter` is true (null counts as false), in order.
    ///
    /// Row groups whose statistics or bloom filters prove that no row matches are never
    /// fetched; with a page index, neither are pages that cannot match. The filter's columns
    /// are fetched and decoded first, and only the pages of the other columns that hold
    /// matching rows are fetched after (late materialization). The filter's columns need not
    /// be among [`Scan::columns`]. See [`crate::expr`] for the semantics.
    ///
    /// ```no_run
    /// # fn main() -> rayquet::Result<()> {
    /// use rayquet::expr::col;
    /// let reader = rayquet::Scan::new("/data/lineitem/")?
    ///     .filter(col("l_quantity").lt(5).and(col("l_shipmode").eq("AIR")))
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn filter(mut self, filter: Expr) -> Self {
        self.options.filter = Some(filter);
        self
    }

    /// Read only the rows of `selection` from the file named `file` (its path or URL as
    /// given, or its object path in the store). Rows past the end of the selection are
    /// skipped. Row groups and pages holding no selected row are never fetched. Combines with
    /// [`Scan::filter`] (a row must be selected and match). A name that matches no file of
    /// the scan fails [`Scan::build`].
    ///
    /// This is the building block for Iceberg positional deletes and Delta deletion vectors.
    pub fn select_rows(mut self, file: impl Into<String>, selection: RowSelection) -> Self {
        self.options.selections.push((file.into(), selection));
        self
    }

    /// Add a non-null `Int64` column named `name`, last, holding each row's position in its
    /// file (counted over every row of the file, before any filter or selection).
    pub fn row_index(mut self, name: impl Into<String>) -> Self {
        self.options.row_index = Some(name.into());
        self
    }

    /// Rows per batch (default 8192). A row group's last batch may be shorter.
    pub fn batch_size(mut self, rows: usize) -> Self {
        self.options.batch_size = rows;
        self
    }

    /// Deliver at most this many rows; fetching stops once enough rows are planned.
    pub fn limit(mut self, rows: usize) -> Self {
        self.options.limit = Some(rows);
        self
    }

    /// Deliver batches in file, row group and row order (`true`, the default) or as soon as
    /// each is ready (`false`).
    pub fn ordered(mut self, ordered: bool) -> Self {
        self.options.ordered = ordered;
        self
    }

    /// Bytes fetched or decoded but not yet delivered that the scan may hold (default 256 MiB).
    /// A single unit of work larger than the budget is still admitted, alone.
    pub fn memory_budget(mut self, bytes: usize) -> Self {
        self.options.memory_budget = bytes;
        self
    }

    /// GET requests this scan may have in flight at once (default 48).
    pub fn max_requests_in_flight(mut self, n: usize) -> Self {
        self.options.requests_in_flight = n;
        self
    }

    /// Bytes of the suffix read that fetches a footer. Files no larger than this are fetched
    /// whole in one request and their data is served from those bytes. Default: 512 KiB, and
    /// files of known size up to 2 MiB read whole; with a projection, filter or row selection,
    /// 64 KiB (metadata and page index: most data will be skipped).
    pub fn footer_size_hint(mut self, bytes: usize) -> Self {
        self.options.footer_size_hint = Some(bytes);
        self
    }

    /// Largest gap between two byte ranges that are fetched as one request (default 64 KiB:
    /// parallel requests cost little, bytes of unread columns cost bandwidth).
    pub fn coalesce_gap(mut self, bytes: usize) -> Self {
        self.options.coalesce_gap = bytes;
        self
    }

    /// Size of the parallel requests a large byte range is split into (default 8 MiB).
    pub fn request_size(mut self, bytes: usize) -> Self {
        self.options.request_size = bytes;
        self
    }

    /// Footers loaded concurrently ahead of the file being scheduled (default 16).
    pub fn footers_ahead(mut self, n: usize) -> Self {
        self.options.footers_ahead = n;
        self
    }

    /// Decoded batches each row group may hold undelivered before its decode tasks park
    /// (default 4); they are part of the row group's budget reservation.
    pub fn decode_ahead(mut self, batches: usize) -> Self {
        self.options.decode_ahead = batches;
        self
    }

    /// Uncompressed bytes of a row group's projection above which it is split by columns into
    /// parts decoded in parallel (default 1 MiB).
    pub fn split_bytes(mut self, bytes: usize) -> Self {
        self.options.split_bytes = bytes;
        self
    }

    /// Largest IO window: compressed bytes being fetched at once (default 128 MiB). The window
    /// starts at 16 MiB and doubles whenever decoders are found waiting on IO, so under
    /// object-store latency it grows towards bandwidth x latency while a fast disk is not read
    /// far ahead. The memory budget bounds it too.
    pub fn prefetch_bytes(mut self, bytes: usize) -> Self {
        self.options.prefetch_bytes = bytes;
        self
    }

    /// Run IO on this tokio runtime instead of the shared one the library owns. It must be a
    /// multi-thread runtime: the scan's tasks run on it while the caller blocks in `next()`.
    pub fn io_runtime(mut self, handle: tokio::runtime::Handle) -> Self {
        self.io = Some(handle);
        self
    }

    /// Decode on this rayon pool instead of the shared one the library owns.
    pub fn decode_pool(mut self, pool: Arc<rayon::ThreadPool>) -> Self {
        self.pool = Some(pool);
        self
    }

    /// Resolve the inputs (listing prefixes), read the first footer for the schema, and start
    /// fetching. Blocks the calling thread until the schema is known.
    pub fn build(self) -> Result<ScanReader> {
        let o = &self.options;
        if o.batch_size == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "batch_size must be > 0",
            ));
        }
        if o.requests_in_flight == 0 || o.decode_ahead == 0 || o.footers_ahead == 0 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "max_requests_in_flight, decode_ahead and footers_ahead must be > 0",
            ));
        }
        if o.request_size == 0 || o.footer_size_hint.is_some_and(|h| h < 8) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "request_size must be > 0 and footer_size_hint >= 8",
            ));
        }
        let io = self.io.unwrap_or_else(runtime::io_handle);
        if io.runtime_flavor() == tokio::runtime::RuntimeFlavor::CurrentThread {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "io_runtime needs a multi-thread tokio runtime (a current-thread runtime is only \
                 driven while its owner blocks on it)",
            ));
        }
        let pool = self.pool.unwrap_or_else(runtime::decode_pool);
        crate::deliver::start(self.inputs, self.store_options, self.options, io, pool)
    }
}

/// Build an [`ObjectRef`] from a path alone (size unknown: the footer read learns it).
impl From<Path> for ObjectRef {
    fn from(path: Path) -> Self {
        ObjectRef { path, size: None }
    }
}

/// Build an [`ObjectRef`] from a listing entry (size known: no extra request).
impl From<ObjectMeta> for ObjectRef {
    fn from(meta: ObjectMeta) -> Self {
        ObjectRef {
            path: meta.location,
            size: Some(meta.size),
        }
    }
}

impl From<&str> for ObjectRef {
    fn from(path: &str) -> Self {
        ObjectRef {
            path: Path::from(path),
            size: None,
        }
    }
}
