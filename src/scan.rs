//! The public entry point: [`Scan`], a builder that ends in [`Scan::build`], which resolves the
//! inputs (plain files: listing prefixes and reading the first footer for the schema; tasks:
//! the caller's schema) and starts the pipeline.
//!
//! Everything here runs on the caller's thread; the work it starts runs on the IO runtime and
//! the decode pool (see `ARCHITECTURE.md`).

use std::sync::{Arc, Mutex, OnceLock};

use arrow::datatypes::SchemaRef;
use futures::StreamExt;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore};

use parquet::arrow::arrow_reader::RowSelection;

use crate::budget::Budget;
use crate::deliver::ScanReader;
use crate::driver::{self, TaskStream};
use crate::error::{Error, ErrorKind, Result};
use crate::expr::Expr;
use crate::fetch::Fetcher;
use crate::metrics::Metrics;
use crate::options::Options;
use crate::runtime;
use crate::source::{self, FileRef, Input, ObjectRef, Stores};
use crate::state::{Mode, Shared};
use crate::task::{FileTask, IntoTask};

/// What a scan reads.
enum Source {
    /// Plain files (URLs, paths, a caller's store's objects): one schema, columns by name.
    Files(Vec<Input>),
    /// Tasks, each mapping its file to `schema`.
    Tasks {
        schema: SchemaRef,
        tasks: TaskStream,
    },
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
    source: Source,
    store_options: Vec<(String, String)>,
    stores: Vec<(String, Arc<dyn ObjectStore>)>,
    options: Options,
    transformed: Option<SchemaRef>,
    io: Option<tokio::runtime::Handle>,
    pool: Option<Arc<rayon::ThreadPool>>,
}

impl std::fmt::Debug for Scan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let source = match &self.source {
            Source::Files(inputs) => format!("{} inputs", inputs.len()),
            Source::Tasks { schema, .. } => format!("tasks of {schema}"),
        };
        f.debug_struct("Scan")
            .field("source", &source)
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
        Scan::with_source(Source::Files(inputs))
    }

    fn with_source(source: Source) -> Scan {
        Scan {
            source,
            store_options: Vec::new(),
            stores: Vec::new(),
            options: Options::default(),
            transformed: None,
            io: None,
            pool: None,
        }
    }

    /// A scan of file tasks (see [`crate::task`]): every task maps its file to `schema`, and
    /// the batches have that schema (or [`Scan::transformed_schema`]). `tasks` is pulled
    /// lazily, a few at a time, on the IO runtime's blocking pool, as the scan needs them, so
    /// a planner may stream them while the first files are already read. Items are
    /// [`FileTask`]s or `Result<FileTask>`s (an `Err` ends the scan at that position).
    ///
    /// Batches never span two tasks; [`ScanReader::tagged`] tells which task each came from.
    pub fn from_tasks<I>(schema: SchemaRef, tasks: I) -> Scan
    where
        I: IntoIterator,
        I::IntoIter: Send + 'static,
        I::Item: IntoTask + 'static,
    {
        let iter = tasks.into_iter().map(IntoTask::into_task);
        Scan::with_source(Source::Tasks {
            schema,
            tasks: driver::iter_stream(iter),
        })
    }

    /// [`Scan::from_tasks`] from an async stream of tasks (an async planner's output), polled
    /// on the IO runtime.
    pub fn from_task_stream<S>(schema: SchemaRef, tasks: S) -> Scan
    where
        S: futures::Stream<Item = Result<FileTask>> + Send + 'static,
    {
        Scan::with_source(Source::Tasks {
            schema,
            tasks: tasks.boxed(),
        })
    }

    /// Use `store` for every URL under `url_root` (`scheme://authority`, e.g.
    /// `s3://bucket`), instead of a store built from the environment and store options.
    pub fn object_store(
        mut self,
        url_root: impl Into<String>,
        store: Arc<dyn ObjectStore>,
    ) -> Self {
        self.stores.push((url_root.into(), store));
        self
    }

    /// The schema of the batches after the tasks' transforms ([`FileTask::transform`]), when
    /// they change the schema the tasks produce. Each transformed batch must have its columns
    /// and types (an error names the file otherwise).
    pub fn transformed_schema(mut self, schema: SchemaRef) -> Self {
        self.transformed = Some(schema);
        self
    }

    /// Use `filter` only to skip row groups and pages that it proves hold no matching row
    /// (statistics, bloom filters, the page index); the rows read are delivered whether they
    /// match or not. (A pruning hint, as delta-kernel's readers take one.) In a file where the
    /// hint cannot be resolved (a column the file cannot filter on, a literal of another type),
    /// it prunes nothing rather than failing the scan.
    pub fn prune(mut self, filter: Expr) -> Self {
        self.options.filter = Some(filter);
        self.options.filter_exact = false;
        self
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
        self.options.filter_exact = true;
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

    /// Decode string and binary columns (top-level and inside structs) to Arrow's view types,
    /// `Utf8View` and `BinaryView` (default: the file's own Arrow schema hint, else `Utf8` /
    /// `Binary`). Views skip copying each value into one contiguous buffer: short strings are
    /// kept inline, long ones point into the decoded page. For task scans the output schema
    /// decides, so only a `Utf8View` output field avoids the cast.
    pub fn string_views(mut self, yes: bool) -> Self {
        self.options.string_views = yes;
        self
    }

    /// Rows per batch (default 8192). A row group's last batch may be shorter.
    pub fn batch_size(mut self, rows: usize) -> Self {
        self.options.batch_size = rows;
        self
    }

    /// Deliver at most this many rows (counted as delivered, after the tasks' transforms);
    /// fetching stops once enough rows are planned (for tasks with a transform, which may drop
    /// rows, once enough are delivered).
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

    /// How requests to S3, GCS and Azure stores that the scan builds (from URLs) are retried
    /// after transient failures (5xx, throttling, connection errors, timeouts): object_store's
    /// `RetryConfig` (default: 10 retries within 3 minutes, exponential backoff from 100 ms).
    /// A permanent failure (not found, access denied) is never retried. Retries are counted
    /// in [`crate::MetricsSnapshot::retries`].
    #[cfg(feature = "cloud")]
    pub fn retry(mut self, config: object_store::RetryConfig) -> Self {
        self.options.retry = Some(config);
        self
    }

    /// HTTP client options of the cloud stores the scan builds: request and connect timeouts,
    /// proxies, HTTP/2... (object_store's `ClientOptions`).
    #[cfg(feature = "cloud")]
    pub fn client_options(mut self, options: object_store::ClientOptions) -> Self {
        self.options.client_options = Some(options);
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

    /// Resolve the inputs (plain files: list prefixes and read the first footer for the
    /// schema), and start fetching. Blocks the calling thread until the schema is known.
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
        if let Source::Tasks { .. } = &self.source {
            let bad = |what: &str| {
                Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!(
                        "{what} does not apply to a scan of tasks: give each task its columns \
                         (ColumnSource), deleted rows or row index column instead"
                    ),
                ))
            };
            if o.columns.is_some() {
                return bad("columns()");
            }
            if !o.selections.is_empty() {
                return bad("select_rows()");
            }
            if o.row_index.is_some() {
                return bad("row_index()");
            }
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
        let metrics = Arc::new(Metrics::default());
        let (tx, rx) = crossbeam_channel::unbounded();
        let mut stores = Stores::new(self.store_options, self.stores);
        stores.http = crate::retry::Http {
            #[cfg(feature = "cloud")]
            retry: self.options.retry.clone(),
            #[cfg(feature = "cloud")]
            client: self.options.client_options.clone(),
            metrics: Some(Arc::clone(&metrics)),
        };
        let (mode, files, tasks) = match self.source {
            Source::Files(inputs) => {
                let (resolved, back) = wait(&io, async move {
                    let r = source::resolve(inputs, &mut stores).await;
                    Ok((r, stores))
                })?;
                stores = back;
                (Mode::Plain(OnceLock::new()), resolved?, None)
            }
            Source::Tasks { schema, tasks } => (Mode::Tasks(schema), Vec::new(), Some(tasks)),
        };
        let opts = self.options;
        let shared = Arc::new(Shared {
            fetcher: Fetcher {
                permits: Arc::new(tokio::sync::Semaphore::new(opts.requests_in_flight)),
                metrics: Arc::clone(&metrics),
            },
            budget: Budget::new(
                opts.memory_budget as u64,
                opts.prefetch_bytes as u64,
                driver::DECODE_QUEUE_BYTES,
            ),
            opts,
            mode,
            output: OnceLock::new(),
            metrics,
            quit: Default::default(),
            pool,
            stores: Mutex::new(stores),
            tx,
            decoded_ratio: Default::default(),
            decoding: Default::default(),
            late: Default::default(),
        });
        let (schema, driver) = match tasks {
            Some(tasks) => {
                let Mode::Tasks(read) = &shared.mode else {
                    unreachable!("tasks have a schema")
                };
                let schema = self.transformed.unwrap_or_else(|| Arc::clone(read));
                let _ = shared.output.set(Arc::clone(&schema));
                let driver = io.spawn(driver::run(Arc::clone(&shared), None, tasks, 0));
                (schema, driver)
            }
            None => {
                let mut tasks = plain_tasks(&shared.opts, files)?.into_iter();
                let first = tasks.next().expect("plain_tasks gives at least one");
                let sh = Arc::clone(&shared);
                let first = wait(&io, crate::open::open(sh, 0, first))?;
                let schema = Arc::clone(&first.schema);
                let _ = shared.output.set(Arc::clone(&schema));
                let rest = futures::stream::iter(tasks.map(Ok)).boxed();
                let driver = io.spawn(driver::run(Arc::clone(&shared), Some(first), rest, 1));
                (schema, driver)
            }
        };
        Ok(ScanReader::new(shared, rx, schema, driver))
    }
}

/// Run `fut` on the IO runtime and wait for it (see [`runtime::wait`]).
fn wait<T: Send + 'static>(
    io: &tokio::runtime::Handle,
    fut: impl std::future::Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    runtime::wait(io, fut).unwrap_or_else(|| {
        Err(Error::new(
            ErrorKind::Io,
            "the IO runtime stopped (or the task panicked) before answering",
        ))
    })
}

/// Whether `key` names `file`: its name (URL or path as given) or its object path.
fn names_file(key: &str, file: &FileRef) -> bool {
    key == &*file.name || key.trim_start_matches('/') == file.path.as_ref()
}

/// The tasks of a plain scan: one per file, with the caller's row selection for it.
fn plain_tasks(opts: &Options, files: Vec<FileRef>) -> Result<Vec<FileTask>> {
    let Some(first) = files.first() else {
        return Err(Error::new(ErrorKind::NotFound, "no files to scan"));
    };
    for (key, _) in &opts.selections {
        if !files.iter().any(|f| names_file(key, f)) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the row selection for {key:?} matches no file of the scan (files are named \
                     like {:?}, or by their object path {:?})",
                    &*first.name,
                    first.path.as_ref()
                ),
            ));
        }
    }
    Ok(files
        .into_iter()
        .map(|f| {
            let selection = opts
                .selections
                .iter()
                .find(|(k, _)| names_file(k, &f))
                .map(|(_, s)| s.clone());
            FileTask {
                location: f.name.to_string(),
                size: f.size,
                selection,
                resolved: Some(f),
                ..Default::default()
            }
        })
        .collect())
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
