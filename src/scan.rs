//! The public entry point: [`Scan`], a builder of a scan of files or of file tasks that ends in
//! [`Scan::build`], which resolves the inputs (plain files: listing prefixes and reading the
//! first footer for the schema; tasks: the caller's schema), wires the stages together and
//! starts the driver.
//!
//! Everything here runs on the caller's thread; the work it starts runs on the IO runtime and
//! the decode pool (see `ARCHITECTURE.md`).

use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::ArrayRef;
use arrow::datatypes::SchemaRef;
use crossbeam_channel::Receiver;
use futures::StreamExt;
use object_store::ObjectStore;
use parquet::arrow::arrow_reader::RowSelection;

use crate::builder::ScanBuilder;
use crate::decode::DecodeCtx;
use crate::deliver::ScanReader;
use crate::drive::tasks::{iter_stream, TaskStream};
use crate::drive::{driver, open, DriveCtx};
use crate::error::{Error, ErrorKind, Result};
use crate::expr::Expr;
use crate::flow::budget::Budget;
use crate::flow::event::{Event, Outbox};
use crate::flow::held::Decoding;
use crate::flow::part::DecodeWindow;
use crate::flow::Flow;
use crate::input::hive::{self, Partitioning};
use crate::input::list::resolve;
use crate::input::{FileRef, Input, ObjectRef, Stores};
use crate::io::fetch::Fetcher;
use crate::metrics::Metrics;
use crate::options::{Reach, ScanOptions};
use crate::plan::file::Mode;
use crate::runtime::block_on_io;
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

/// A scan of one or more Parquet files (or of file tasks), configured with the
/// [`ScanBuilder`] methods and started by [`Scan::build`].
///
/// ```no_run
/// # fn main() -> rayquet::Result<()> {
/// use rayquet::prelude::*;
/// let reader = Scan::new("s3://bucket/table/")?
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
    options: ScanOptions,
    transformed: Option<SchemaRef>,
    // What belongs to this scan alone, not to the reusable options: `with_options` keeps it.
    partitioning: Partitioning,
    selections: Vec<(String, RowSelection)>,
    row_index: Option<String>,
    prune: Option<Expr>,
    union_by_name: bool,
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

impl ScanBuilder for Scan {
    fn options_mut(&mut self) -> &mut ScanOptions {
        &mut self.options
    }
}

impl Scan {
    /// A scan of one URL or local path: `s3://`, `gs://`, `az://`, `abfss://`, `file://`,
    /// `memory://` or a plain path. A directory or prefix (a trailing `/`, or a path that is not an
    /// object) means every `*.parquet` object under it, in lexical order.
    ///
    /// Credentials and endpoints come from the usual environment variables (`AWS_*`,
    /// `GOOGLE_*`, `AZURE_*`) and from [`ScanBuilder::store_option`].
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
        Ok(Scan::with_source(Source::Files(inputs)))
    }

    /// A scan of objects in a store the caller built, in the caller's order. Pass
    /// `object_store::ObjectMeta`s (sizes known: no extra request per file) or
    /// `object_store::path::Path`s.
    pub fn from_store<I, O>(store: Arc<dyn ObjectStore>, objects: I) -> Scan
    where
        I: IntoIterator<Item = O>,
        O: Into<ObjectRef>,
    {
        let objects = objects.into_iter().map(Into::into).collect();
        Scan::with_source(Source::Files(vec![Input::Objects { store, objects }]))
    }

    fn with_source(source: Source) -> Scan {
        Scan {
            source,
            options: ScanOptions::default(),
            transformed: None,
            partitioning: Partitioning::default(),
            selections: Vec::new(),
            row_index: None,
            prune: None,
            union_by_name: false,
        }
    }

    /// A scan of file tasks (see [`crate::task`]): every task maps its file to `schema`, and
    /// the batches have that schema (or [`Scan::transformed_schema`]). `tasks` is pulled
    /// lazily, a few at a time, on the IO runtime's blocking pool, as the scan needs them, so
    /// a planner may stream them while the first files are already read. Items are
    /// [`FileTask`]s or `Result<FileTask>`s (an `Err` ends the scan at that position).
    ///
    /// Batches never span two tasks; [`ScanReader::tagged`] tells which task each came from.
    /// [`ScanBuilder::columns`] keeps only those top-level fields of `schema` (and of every
    /// task's columns), in that order.
    pub fn from_tasks<I>(schema: SchemaRef, tasks: I) -> Scan
    where
        I: IntoIterator,
        I::IntoIter: Send + 'static,
        I::Item: IntoTask + 'static,
    {
        let iter = tasks.into_iter().map(IntoTask::into_task);
        Scan::with_source(Source::Tasks {
            schema,
            tasks: iter_stream(iter),
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
        self.prune = Some(filter);
        self
    }

    /// Plain files only: read only the rows of `selection` from the file named `file` (its
    /// path or URL as given, or its object path in the store). Rows past the end of the
    /// selection are skipped. Row groups and pages holding no selected row are never fetched.
    /// Combines with [`ScanBuilder::filter`] (a row must be selected and match). A name that
    /// matches no file of the scan fails [`Scan::build`]. (Tasks carry their deleted rows
    /// themselves: [`FileTask::deletes`].)
    pub fn select_rows(mut self, file: impl Into<String>, selection: RowSelection) -> Self {
        self.selections.push((file.into(), selection));
        self
    }

    /// Plain files only: add a non-null `Int64` column named `name`, last, holding each row's
    /// position in its file (counted over every row of the file, before any filter or
    /// selection). (Tasks use [`crate::ColumnSource::RowIndex`].)
    pub fn row_index(mut self, name: impl Into<String>) -> Self {
        self.row_index = Some(name.into());
        self
    }

    /// Plain files only: how partition columns are found in the paths of the files listed
    /// under a directory or prefix (default [`Partitioning::Infer`]: Hive-style `name=value`
    /// directories become columns, last in the schema). A filter on partition columns skips
    /// whole files before any of their bytes are read
    /// ([`MetricsSnapshot::files_pruned`](crate::MetricsSnapshot::files_pruned)).
    pub fn partitioning(mut self, partitioning: Partitioning) -> Self {
        self.partitioning = partitioning;
        self
    }

    /// Plain files only: read files whose schemas differ as one schema, matching columns by
    /// name (default `false`: every file must have the first file's schema exactly, and a
    /// file that differs is a `SchemaMismatch` error naming both). With `true`, as duckdb's
    /// `union_by_name` and pyarrow's `unify_schemas`:
    /// - the scan's columns are every file's, in the order they first appear (files in the
    ///   scan's order); a column a file lacks is null in that file's rows;
    /// - a column whose type differs between files takes a type that holds both exactly:
    ///   integers widen (`int32` and `int64`: `int64`; `uint32` and `int32`: `int64`), floats
    ///   widen, an integer that a float holds exactly becomes that float, decimals keep both
    ///   integer digits and scales, strings and binaries the large or view type either has,
    ///   timestamps of one time zone the finer unit, structs, lists and maps child by child;
    ///   anything else (a string and an integer, `int64` and `float64`) is a `SchemaMismatch`
    ///   naming the column and both files;
    /// - [`ScanBuilder::columns`] names top-level columns of that schema (or partition
    ///   columns), and filters may name any of them.
    ///
    /// [`Scan::build`] then reads every file's footer before the first batch (in parallel; the
    /// footer cache keeps them for the scan).
    pub fn union_by_name(mut self, yes: bool) -> Self {
        self.union_by_name = yes;
        self
    }

    /// Resolve the inputs (plain files: list prefixes and read the first footer for the
    /// schema), and start fetching. Blocks the calling thread until the schema is known.
    pub fn build(mut self) -> Result<ScanReader> {
        let mut opts = self.checked_options()?;
        let source = self.checked_source(&mut opts)?;
        let io = opts.io_handle();
        let metrics = Arc::new(Metrics::default());
        let stores = Stores::new(&opts, Some(Arc::clone(&metrics)))?;
        let (mode, stores, start) = match source {
            Source::Files(inputs) => {
                let (stores, files, hive) = self.resolve_files(inputs, stores, &io)?;
                let mode = Mode::Plain {
                    first: OnceLock::new(),
                    hive: hive.as_ref().map(|h| h.fields.clone()).unwrap_or_default(),
                    union: self.union_by_name.then(OnceLock::new),
                };
                (mode, stores, Start::Files(files, hive))
            }
            Source::Tasks { schema, tasks } => (Mode::Tasks(schema), stores, Start::Tasks(tasks)),
        };
        let (ctx, flow, outbox) = scan_context(opts, metrics, mode, stores);
        let (schema, driver) = match start {
            Start::Tasks(tasks) => {
                let Mode::Tasks(read) = &ctx.mode else {
                    unreachable!("tasks have a schema")
                };
                let schema = self.transformed.unwrap_or_else(|| Arc::clone(read));
                let _ = ctx.decode.output.set(Arc::clone(&schema));
                let driver = io.spawn(driver::run(Arc::clone(&ctx), None, tasks, 0));
                (schema, driver)
            }
            Start::Files(files, hive) => start_files(&ctx, &io, files, hive)?,
        };
        Ok(ScanReader::new(outbox, flow, &ctx.opts, schema, driver, io))
    }

    /// The scan's options, with its row selections, row index and pruning hint, validated.
    fn checked_options(&mut self) -> Result<ScanOptions> {
        let mut opts = std::mem::take(&mut self.options);
        opts.selections = std::mem::take(&mut self.selections);
        opts.row_index = self.row_index.take();
        if let Some(hint) = self.prune.take() {
            if opts.filter.is_some() {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "prune() and filter() on one scan: give the exact filter (which prunes \
                     too) or the pruning hint, not both",
                ));
            }
            opts.filter = Some(hint);
            opts.filter_exact = false;
        }
        opts.validate()?;
        Ok(opts)
    }

    /// The scan's source, its options checked against it: a scan of tasks takes its
    /// projection (`columns`) into its schema and tasks, and refuses the options of plain
    /// files.
    fn checked_source(&mut self, opts: &mut ScanOptions) -> Result<Source> {
        let source = std::mem::replace(&mut self.source, Source::Files(Vec::new()));
        let Source::Tasks { schema, tasks } = source else {
            return Ok(source);
        };
        let refused = if !opts.selections.is_empty() || opts.row_index.is_some() {
            Some(
                "select_rows() and row_index() do not apply to a scan of tasks: give each task \
                 its deleted rows or a ColumnSource::RowIndex column instead",
            )
        } else if self.union_by_name {
            Some(
                "union_by_name() does not apply to a scan of tasks: their schema is the \
                 caller's, each task maps its file to it",
            )
        } else if opts.columns.is_some() && self.transformed.is_some() {
            Some(
                "columns() cannot project a scan whose tasks transform their batches \
                 (transformed_schema): project in the transform",
            )
        } else {
            None
        };
        if let Some(why) = refused {
            return Err(Error::new(ErrorKind::InvalidArgument, why));
        }
        let (schema, tasks) = match opts.columns.take() {
            Some(columns) => project_tasks(&schema, &columns, tasks)?,
            None => (schema, tasks),
        };
        Ok(Source::Tasks { schema, tasks })
    }

    /// List the plain inputs (on the IO runtime, with `stores`) and find their Hive
    /// partitions.
    fn resolve_files(
        &self,
        inputs: Vec<Input>,
        stores: Stores,
        io: &tokio::runtime::Handle,
    ) -> Result<(Stores, Vec<FileRef>, Option<hive::Hive>)> {
        let mut stores = stores;
        let (resolved, stores) = block_on_io(io, async move {
            let r = resolve(inputs, &mut stores).await;
            Ok((r, stores))
        })?;
        let resolved = resolved?;
        let rels: Vec<Option<String>> = resolved.iter().map(|l| l.under.clone()).collect();
        let names: Vec<Arc<str>> = resolved.iter().map(|l| l.file.name.clone()).collect();
        let hive = hive::discover(&self.partitioning, &rels, &names)?;
        let files = resolved.into_iter().map(|l| l.file).collect();
        Ok((stores, files, hive))
    }
}

/// What a scan's driver starts from: the caller's tasks, or plain files (and their Hive
/// partitions).
enum Start {
    Tasks(TaskStream),
    Files(Vec<FileRef>, Option<hive::Hive>),
}

/// The shared state of one scan: its flow control (budget, decode window), the decoders'
/// context and the driver's; and the outbox its batches come through.
fn scan_context(
    opts: ScanOptions,
    metrics: Arc<Metrics>,
    mode: Mode,
    stores: Stores,
) -> (Arc<DriveCtx>, Arc<Flow>, (Outbox, Receiver<Event>)) {
    let pool = opts.pool();
    let flow = Arc::new(Flow {
        budget: Budget::new(
            opts.memory_budget as u64,
            opts.tuning.prefetch_bytes as u64,
            driver::DECODE_QUEUE_BYTES,
            opts.limits.clone(),
        ),
        decoding: Arc::new(Decoding::new(pool.current_num_threads())),
        // Enough undelivered slots decoding to keep every thread busy while the first one is
        // delivered.
        window: DecodeWindow::new(pool.current_num_threads() + 1),
        expansion: Default::default(),
        metrics: Arc::clone(&metrics),
    });
    let (outbox, rx) = Outbox::new();
    let decode = Arc::new(DecodeCtx {
        pool,
        outbox: outbox.clone(),
        flow: Arc::clone(&flow),
        batch_size: opts.batch_size,
        page_limit: crate::validate::page_limit(opts.memory_budget),
        verify_checksums: opts.verify_checksums,
        batch_bytes: crate::flow::budget::batch_bytes(opts.memory_budget as u64),
        output: OnceLock::new(),
    });
    let ctx = Arc::new(DriveCtx {
        fetcher: Fetcher {
            permits: Arc::new(tokio::sync::Semaphore::new(
                opts.requests_in_flight(Reach::Near),
            )),
            far_permits: Arc::new(tokio::sync::Semaphore::new(
                opts.requests_in_flight(Reach::Far),
            )),
            shared: opts.limits.as_ref().map(|s| Arc::clone(s.connections())),
            metrics,
            memory_map: opts.memory_map,
        },
        opts,
        mode,
        stores: Mutex::new(stores),
        late: Default::default(),
        claims: Default::default(),
        decode,
        early: Default::default(),
    });
    (ctx, flow, (outbox, rx))
}

/// Start a plain scan: its tasks (partitions the filter excludes left out), the union schema
/// when asked, and the first file opened here for the scan's schema; the driver reads the
/// rest.
fn start_files(
    ctx: &Arc<DriveCtx>,
    io: &tokio::runtime::Handle,
    files: Vec<FileRef>,
    hive: Option<hive::Hive>,
) -> Result<(SchemaRef, tokio::task::JoinHandle<()>)> {
    let tasks = plain_tasks(&ctx.opts, files, hive)?;
    let tasks = prune_partitions(ctx, tasks)?;
    if let Mode::Plain { union: Some(u), .. } = &ctx.mode {
        let schema = open::union_schema(ctx, &tasks)?;
        let _ = u.set(schema);
    }
    let mut tasks = tasks.into_iter();
    let first = tasks.next().expect("plain_tasks gives at least one");
    if !matches!(&ctx.mode, Mode::Plain { union: Some(_), .. }) {
        open::read_footers_early(ctx, io, 1, tasks.as_slice())?;
    }
    let first = block_on_io(io, open::open(Arc::clone(ctx), 0, first))?;
    let schema = Arc::clone(&first.schema);
    let _ = ctx.decode.output.set(Arc::clone(&schema));
    let rest = futures::stream::iter(tasks.map(Ok)).boxed();
    let driver = io.spawn(driver::run(Arc::clone(ctx), Some(first), rest, 1));
    Ok((schema, driver))
}

/// A task scan's `schema` and `tasks` keeping only the top-level fields named `columns`, in
/// that order (an unknown name is an error).
fn project_tasks(
    schema: &SchemaRef,
    columns: &[String],
    tasks: TaskStream,
) -> Result<(SchemaRef, TaskStream)> {
    let keep = columns
        .iter()
        .map(|c| {
            schema.index_of(c).map_err(|_| {
                let names: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("no column named {c:?}; the scan's columns are {names:?}"),
                )
            })
        })
        .collect::<Result<Vec<usize>>>()?;
    let projected = Arc::new(schema.project(&keep)?);
    let tasks = tasks
        .map(move |task| {
            task.map(|mut t| {
                if let Some(cols) = t.columns.take() {
                    t.columns = Some(keep.iter().filter_map(|&i| cols.get(i).cloned()).collect());
                }
                t
            })
        })
        .boxed();
    Ok((projected, tasks))
}

/// Whether `key` names `file`: its name (URL or path as given) or its object path.
fn names_file(key: &str, file: &FileRef) -> bool {
    key == &*file.name || key.trim_start_matches('/') == file.path.as_ref()
}

/// The tasks of a plain scan: one per file, with the caller's row selection for it and its
/// partition values.
fn plain_tasks(
    opts: &ScanOptions,
    files: Vec<FileRef>,
    hive: Option<hive::Hive>,
) -> Result<Vec<FileTask>> {
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
    let mut values = hive.map(|h| h.values.into_iter());
    Ok(files
        .into_iter()
        .map(|f| {
            let partition = values.as_mut().and_then(|v| v.next());
            let selection = opts
                .selections
                .iter()
                .find(|(k, _)| names_file(k, &f))
                .map(|(_, s)| s.clone());
            FileTask {
                location: f.name.to_string(),
                size: f.size,
                version: f.version,
                selection,
                partition,
                store: Some((f.store, f.path)),
                ..Default::default()
            }
        })
        .collect())
}

/// A plain scan's tasks without the files whose partition values prove that the filter
/// keeps none of their rows (no byte of them is read; counted in `files_pruned`). The first
/// file stays when every file goes: its footer gives the scan's schema (and its row groups
/// are pruned by the same filter).
fn prune_partitions(ctx: &DriveCtx, tasks: Vec<FileTask>) -> Result<Vec<FileTask>> {
    let (Some(filter), Mode::Plain { hive, .. }) = (&ctx.opts.filter, &ctx.mode) else {
        return Ok(tasks);
    };
    if hive.is_empty() {
        return Ok(tasks);
    }
    let total = tasks.len();
    let mut first = None;
    let mut kept = Vec::with_capacity(total);
    for (i, t) in tasks.into_iter().enumerate() {
        let values = t.partition.as_deref().unwrap_or_default();
        let constants: Vec<(String, ArrayRef)> = hive
            .iter()
            .zip(values)
            .map(|(f, v)| (f.name().clone(), Arc::clone(v)))
            .collect();
        let excluded = match crate::expr::fold::excluded_by_constants(filter, &constants) {
            Ok(x) => x,
            // A pruning hint (`Scan::prune`) that does not resolve prunes nothing.
            Err(_) if !ctx.opts.filter_exact => false,
            Err(e) => return Err(e.with_path(t.location.as_str())),
        };
        if excluded {
            if i == 0 {
                first = Some(t);
            }
        } else {
            kept.push(t);
        }
    }
    if kept.is_empty() {
        kept.extend(first);
    }
    Metrics::add(
        &ctx.decode.flow.metrics.files_pruned,
        (total - kept.len()) as u64,
    );
    Ok(kept)
}
