//! File tasks: a table scan as a stream of per-file units, each with its own column mapping,
//! deleted rows and constants.
//!
//! A table format (Iceberg, Delta) plans a scan as a list of data files, and every file may
//! differ from the table: columns are matched by field id (or a name mapping, or by name),
//! old files lack columns added later or hold them in narrower types, some output columns are
//! constants of the file (partition values) or metadata (row position, file path), and some
//! rows are deleted. A [`FileTask`] describes one such file; [`crate::Scan::from_tasks`] reads
//! an iterator of them, pulled lazily, through the same pipeline as plain files.
//!
//! ```no_run
//! # fn main() -> rayquet::Result<()> {
//! use std::sync::Arc;
//! use arrow::datatypes::{DataType, Field, Schema};
//! use rayquet::task::{ColumnSource, FileTask};
//! use rayquet::reexports::arrow;
//!
//! // The table's schema: the id column is found by Parquet field id 1 (carried in the field's
//! // `PARQUET:field_id` metadata), `region` is a partition value, `_pos` the row position.
//! let id = Field::new("id", DataType::Int64, false).with_metadata(
//!     [("PARQUET:field_id".to_string(), "1".to_string())].into(),
//! );
//! let schema = Arc::new(Schema::new(vec![
//!     id,
//!     Field::new("region", DataType::Utf8, true),
//!     Field::new("_pos", DataType::Int64, false),
//! ]));
//! let tasks = (0..3).map(|i| {
//!     FileTask::new(format!("s3://bucket/table/part-{i}.parquet"))
//!         .size(1 << 20) // known from the table's metadata: no HEAD request
//!         .columns([
//!             ColumnSource::file(),
//!             ColumnSource::constant(if i == 0 { "eu" } else { "us" }),
//!             ColumnSource::RowIndex,
//!         ])
//!         .deleted_rows([3, 17, 18]) // e.g. Iceberg position deletes
//!         .tag(format!("file-{i}"))
//! });
//! let mut reader = rayquet::Scan::from_tasks(schema, tasks).build()?.tagged();
//! while let Some(batch) = reader.next() {
//!     let batch = batch?;
//!     let task = reader.task().expect("a batch came");
//!     println!("task {} ({:?}): {} rows", task.index, task.tag, batch.num_rows());
//! }
//! # Ok(()) }
//! ```
//!
//! Output columns are produced in this order of rules, for each field of the scan's schema:
//! a [`ColumnSource::File`] column is looked up in the file *by field id* when the output
//! field carries one (`PARQUET:field_id` metadata) and the file has field ids, else through
//! the task's [`NameMapping`] (files written without ids), else by name (a field whose id
//! belongs to another output field is never taken by name); nested struct, list and map
//! fields are matched the same way, level by level, so a struct gains or loses fields like the
//! table does. The value is cast to the output type (`int` → `long`, `float` → `double`, wider
//! decimals, `date` → `timestamp`, ...). An output field of Arrow's Parquet variant extension
//! type (`arrow.parquet.variant`) without a `typed_value` field reads a shredded Parquet
//! VARIANT column unshredded: every value whole in `value` (parquet's `unshred_variant`), so
//! files shredded differently give one type. A column the file lacks is the source's default,
//! or null (an error naming the file if the field is not nullable).
//!
//! Invariants: batches never span two tasks, and each can be tied to its task
//! ([`crate::ScanReader::tagged`]); deleted rows are never delivered and row groups whose rows
//! are all deleted are never fetched; a task's byte range keeps exactly the row groups whose
//! midpoint lies inside it, so splits of one file never lose or duplicate a row group.

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, RecordBatch};
use arrow::datatypes::FieldRef;
use futures::future::BoxFuture;
use object_store::path::Path;
use object_store::ObjectStore;
use parquet::arrow::arrow_reader::RowSelection;
/// Deleted row positions of a file: the `roaring` crate's 64-bit bitmap, public on purpose.
/// It is what table formats hand over (Iceberg's Puffin deletion vectors and Delta's are
/// serialized roaring bitmaps, delta-kernel and iceberg-rust build them), so a table layer
/// passes positions through without a copy into a type of rayquet's own. `roaring` is on
/// 0.11; [`reexports::roaring`](crate::reexports::roaring) names the version rayquet uses.
pub use roaring::RoaringTreemap;

use crate::error::Result;
use crate::expr::Value;

/// Metadata key of the Parquet field id on an Arrow field (as parquet's reader writes it).
pub const FIELD_ID_KEY: &str = parquet::arrow::PARQUET_FIELD_ID_META_KEY;

/// How one output column of a task is produced.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum ColumnSource {
    /// A column of the file (see [`FileColumn`]), cast to the output field's type.
    File(FileColumn),
    /// The same value in every row (a partition value), converted exactly to the output
    /// field's type (`Value::Str("2024-01-31")` for a date, `Value::Int(5)` for a decimal...).
    Constant(Value),
    /// Null in every row (the output field must be nullable).
    Null,
    /// The row's position in its file, counted over every row of the file (before deletes,
    /// filters and splits): an `Int64` (or any integer type the output field has).
    RowIndex,
    /// The task's object location as given (URL or path), in every row: `Utf8` (or any string
    /// type, or a run-end encoded string, as the output field says).
    FilePath,
}

impl ColumnSource {
    /// The file column that is the output field itself: matched by the output field's field
    /// id, else by name (see the module docs).
    pub fn file() -> Self {
        ColumnSource::File(FileColumn::default())
    }

    /// The file column with Parquet field id `id`.
    pub fn field_id(id: i32) -> Self {
        ColumnSource::File(FileColumn {
            field_id: Some(id),
            ..Default::default()
        })
    }

    /// The file column at this name path: a top-level name, or a path into structs.
    pub fn path<I, S>(path: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        ColumnSource::File(FileColumn {
            path: Some(path.into_iter().map(Into::into).collect()),
            ..Default::default()
        })
    }

    /// A constant value.
    pub fn constant(value: impl Into<Value>) -> Self {
        ColumnSource::Constant(value.into())
    }

    /// For a file column: the value to use when the file lacks it (Iceberg's initial default)
    /// instead of null. Other sources are returned unchanged.
    pub fn or_default(self, value: impl Into<Value>) -> Self {
        match self {
            ColumnSource::File(mut f) => {
                f.default = Some(value.into());
                ColumnSource::File(f)
            }
            other => other,
        }
    }
}

/// Where a file column is found. With neither a field id nor a path, the output field's own
/// field id (metadata `PARQUET:field_id`) or name is used.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FileColumn {
    /// Match the file column with this Parquet field id (files with field ids), or the names
    /// the task's [`NameMapping`] gives for it (files without).
    pub field_id: Option<i32>,
    /// Match by this name path (a top-level name, or a path into structs).
    pub path: Option<Vec<String>>,
    /// The value when the file lacks the column (else null).
    pub default: Option<Value>,
}

/// Names of fields by field id, for files written without field ids (Iceberg's
/// `schema.name-mapping.default`): at every level, an output field with id `i` matches the
/// file field whose name is one of `names[i]`.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct NameMapping {
    /// Accepted names, by field id.
    pub names: HashMap<i32, Vec<String>>,
}

impl NameMapping {
    /// Accept `names` for field id `id`.
    pub fn insert<I, S>(&mut self, id: i32, names: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.names
            .entry(id)
            .or_default()
            .extend(names.into_iter().map(Into::into));
    }
}

/// Loads a task's deleted row positions while its footer is fetched (for example by reading
/// a deletion vector or position-delete files), instead of the caller loading them before it
/// hands out the task.
///
/// The future runs on the scan's IO runtime: it may await IO but must not block or do heavy
/// CPU work there; hand CPU work to [`LoadContext::spawn_cpu`].
pub trait DeleteLoader: Send + Sync + fmt::Debug {
    /// The positions (in the file) of the deleted rows.
    fn load(&self, ctx: LoadContext) -> BoxFuture<'static, Result<RoaringTreemap>>;
}

/// What a [`DeleteLoader`] may use.
#[derive(Clone)]
pub struct LoadContext {
    pub(crate) pool: Arc<rayon::ThreadPool>,
}

impl fmt::Debug for LoadContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LoadContext")
    }
}

impl LoadContext {
    /// Run `f` on the scan's decode pool and await its result (a panic becomes an
    /// `ErrorKind::Panic` error).
    pub fn spawn_cpu<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> BoxFuture<'static, Result<T>> {
        let pool = Arc::clone(&self.pool);
        Box::pin(
            async move { crate::panic::on_pool(&pool, None, "a delete loader's task", f).await },
        )
    }
}

/// A per-row predicate a task's rows must pass (for example Iceberg equality deletes), run on
/// the decode pool before the task's columns are decoded: rows it drops are not decoded where
/// the page index lets the reader skip them.
pub trait RowFilter: Send + Sync + fmt::Debug {
    /// The columns the predicate reads: a field (name, type, optional field-id metadata) and
    /// how it is produced from the file, as for output columns.
    fn columns(&self) -> Vec<(FieldRef, ColumnSource)>;
    /// For each row, whether to keep it (`false` or null drops it). `columns` are in the
    /// order of [`RowFilter::columns`], with their fields' types.
    fn keep(&self, columns: &[ArrayRef]) -> Result<BooleanArray>;
}

/// A per-task function applied to every batch on the decode pool, after the task's columns
/// are produced (for example Delta's physical-to-logical transform). Its output must have the
/// scan's output schema ([`crate::Scan::transformed_schema`]).
pub type BatchTransform = Arc<dyn Fn(RecordBatch) -> Result<RecordBatch> + Send + Sync>;

/// One Parquet file (or part of one) to read as part of a scan: where it is, how each output
/// column is produced, which rows are deleted. Built with small methods; see the module docs.
///
/// With the `serde` feature a task serializes (so an engine can ship tasks to other
/// processes), except for the object store of [`FileTask::in_store`] and the hooks
/// ([`FileTask::delete_loader`], [`FileTask::row_filter`], [`FileTask::transform`]), which
/// are skipped.
#[derive(Clone, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FileTask {
    pub(crate) location: String,
    /// The location is taken literally (`FileTask::literal`), not as a URL.
    #[cfg_attr(feature = "serde", serde(default))]
    pub(crate) literal: bool,
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) store: Option<(Arc<dyn ObjectStore>, Path)>,
    pub(crate) size: Option<u64>,
    /// The object's version from listing (a footer cache key).
    #[cfg_attr(feature = "serde", serde(default))]
    pub(crate) version: Option<crate::cache::Version>,
    pub(crate) range: Option<Range<u64>>,
    pub(crate) row_groups: Option<Vec<usize>>,
    pub(crate) deletes: Option<RoaringTreemap>,
    pub(crate) columns: Option<Vec<ColumnSource>>,
    pub(crate) name_mapping: Option<Arc<NameMapping>>,
    pub(crate) strict_ids: bool,
    pub(crate) positional_ids: bool,
    pub(crate) tag: Option<Arc<str>>,
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) delete_loader: Option<Arc<dyn DeleteLoader>>,
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) row_filter: Option<Arc<dyn RowFilter>>,
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) transform: Option<BatchTransform>,
    /// Plain scans: the caller's row selection (`Scan::select_rows`).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) selection: Option<RowSelection>,
    /// Plain scans: the file's Hive partition values (one-element arrays, in the order of
    /// the scan's partition columns).
    #[cfg_attr(feature = "serde", serde(skip))]
    pub(crate) partition: Option<Arc<[ArrayRef]>>,
}

impl fmt::Debug for FileTask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileTask")
            .field("location", &self.location)
            .field("size", &self.size)
            .field("range", &self.range)
            .field("row_groups", &self.row_groups)
            .field("deletes", &self.deletes.as_ref().map(|d| d.len()))
            .field("columns", &self.columns)
            .field("tag", &self.tag)
            .finish_non_exhaustive()
    }
}

impl FileTask {
    /// A task reading the object at `location`: a URL (`s3://`, `gs://`, `az://`, `file://`,
    /// `memory://`...; its path percent-decoded, as URLs are) or a local path (as it is). Stores are built from the environment and the scan's
    /// store options, or taken from [`crate::ScanBuilder::object_store`].
    pub fn new(location: impl Into<String>) -> Self {
        FileTask {
            location: location.into(),
            ..Default::default()
        }
    }

    /// A task reading the object at `location` taken literally, as Iceberg (and Hadoop) write
    /// locations: after `scheme://authority/`, the rest is the object's key as it is, `%`
    /// escapes included, and `file:/p`, `file:///p` or a plain path is that local path,
    /// undecoded. (pyiceberg and Java write the partition value `a:b` into a directory named
    /// `a%3Ab`: the key on the store holds `%3A`, which [`FileTask::new`] would decode.)
    pub fn literal(location: impl Into<String>) -> Self {
        FileTask {
            location: location.into(),
            literal: true,
            ..Default::default()
        }
    }

    /// A task reading `path` in a store the caller built (named by its path in errors).
    pub fn in_store(store: Arc<dyn ObjectStore>, path: Path) -> Self {
        FileTask {
            location: path.to_string(),
            store: Some((store, path)),
            ..Default::default()
        }
    }

    /// The object's size in bytes, when known (from a table's metadata): saves a request.
    pub fn size(mut self, bytes: u64) -> Self {
        self.size = Some(bytes);
        self
    }

    /// The object's version (ETag, last-modified time), as listing gave it
    /// ([`DatasetFile::version`](crate::layer::DatasetFile::version)): with the size, it keys the
    /// scan's [`FooterCache`](crate::FooterCache), so the tasks of one file (splits of it, or
    /// repeated scans) read its footer once. Without it a task's footer bypasses the cache.
    /// A file that is never rewritten under its path (a table format's data file) may be
    /// given [`FileVersion::immutable`](crate::FileVersion::immutable).
    pub fn version(mut self, version: crate::FileVersion) -> Self {
        self.version = Some(version);
        self
    }

    /// Read only the row groups whose midpoint (first byte of their first column chunk plus
    /// half their compressed size) lies in `range`. Splits of one file that partition its
    /// bytes therefore read every row group exactly once.
    pub fn byte_range(mut self, range: Range<u64>) -> Self {
        self.range = Some(range);
        self
    }

    /// Read only these row groups (by index in the file; combined with a byte range, both
    /// must hold). Row indices keep counting every row of the file.
    pub fn row_groups(mut self, row_groups: impl IntoIterator<Item = usize>) -> Self {
        self.row_groups = Some(row_groups.into_iter().collect());
        self
    }

    /// Rows (positions in the file) that are deleted: never delivered, and not decoded where
    /// the page index lets the reader skip them. A position past the end of the file ends
    /// the scan with a `CorruptTable` error naming the file (the deletes do not belong to
    /// it). Adds to rows already deleted.
    pub fn deletes(mut self, positions: RoaringTreemap) -> Self {
        match &mut self.deletes {
            Some(d) => *d |= positions,
            None => self.deletes = Some(positions),
        }
        self
    }

    /// [`FileTask::deletes`] from a list of positions (any order).
    pub fn deleted_rows(self, positions: impl IntoIterator<Item = u64>) -> Self {
        self.deletes(positions.into_iter().collect())
    }

    /// Load deleted row positions while the footer is fetched (see [`DeleteLoader`]); they
    /// add to [`FileTask::deletes`].
    pub fn delete_loader(mut self, loader: Arc<dyn DeleteLoader>) -> Self {
        self.delete_loader = Some(loader);
        self
    }

    /// How each field of the scan's schema is produced, one source per field, in order.
    /// Without it every field is [`ColumnSource::file`].
    pub fn columns(mut self, columns: impl IntoIterator<Item = ColumnSource>) -> Self {
        self.columns = Some(columns.into_iter().collect());
        self
    }

    /// Names to match fields by in files written without field ids (see [`NameMapping`]).
    pub fn name_mapping(mut self, mapping: Arc<NameMapping>) -> Self {
        self.name_mapping = Some(mapping);
        self
    }

    /// In files that have field ids, match fields by id only, never by name (Iceberg's rule;
    /// the default also accepts a file field by name when its id is absent or unknown, as
    /// Delta's reader does).
    pub fn strict_field_ids(mut self, strict: bool) -> Self {
        self.strict_ids = strict;
        self
    }

    /// In files without field ids, give top-level columns the ids 1, 2, 3... by position when
    /// no name mapping applies (Iceberg's fallback for such files).
    pub fn positional_field_ids(mut self, positional: bool) -> Self {
        self.positional_ids = positional;
        self
    }

    /// A tag of the caller's, returned with every batch of this task.
    pub fn tag(mut self, tag: impl Into<Arc<str>>) -> Self {
        self.tag = Some(tag.into());
        self
    }

    /// A predicate the task's rows must pass (see [`RowFilter`]).
    pub fn row_filter(mut self, filter: Arc<dyn RowFilter>) -> Self {
        self.row_filter = Some(filter);
        self
    }

    /// A function applied to each of the task's batches on the decode pool (see
    /// [`BatchTransform`]).
    pub fn transform(mut self, transform: BatchTransform) -> Self {
        self.transform = Some(transform);
        self
    }

    /// How each output column is produced, when [`FileTask::columns`] set it (`None`: every
    /// column is the file's own, by field id or name).
    pub fn column_sources(&self) -> Option<&[ColumnSource]> {
        self.columns.as_deref()
    }

    /// Whether [`FileTask::row_filter`] set a predicate.
    pub fn has_row_filter(&self) -> bool {
        self.row_filter.is_some()
    }

    /// The object location as given.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The caller's tag, if any.
    pub fn get_tag(&self) -> Option<&Arc<str>> {
        self.tag.as_ref()
    }
}

/// What a table format's metadata says of one column of one data file (a Delta `add`
/// action's statistics, an Iceberg manifest entry's bounds and counts), for a planner that
/// estimates what a scan returns. The bounds are bounds, not the file's exact least and
/// greatest values: writers cut strings to a prefix and Delta's timestamps to the
/// millisecond (a table layer widens or drops a maximum that may be cut short), and a file's
/// statistics may count rows its deletes remove.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStats {
    /// The column (its top-level name in the table's schema).
    pub column: String,
    /// No value of the file is below this (a one-row array of the column's type), when known.
    pub min: Option<ArrayRef>,
    /// No value of the file is above this (a one-row array of the column's type), when known.
    pub max: Option<ArrayRef>,
    /// How many of the file's values are null, when known.
    pub null_count: Option<u64>,
}

/// Which task a batch came from (see [`crate::TaggedReader::task`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskInfo {
    /// The task's position in the scan's input (0 for the first task, or the first file of a
    /// plain scan).
    pub index: u64,
    /// The task's [`FileTask::tag`].
    pub tag: Option<Arc<str>>,
}

/// An item of a task iterator: a task, or an error from the planner that produces them (it
/// ends the scan at that position).
pub trait IntoTask {
    /// The task, or the planner's error.
    fn into_task(self) -> Result<FileTask>;
}

impl IntoTask for FileTask {
    fn into_task(self) -> Result<FileTask> {
        Ok(self)
    }
}

impl IntoTask for Result<FileTask> {
    fn into_task(self) -> Result<FileTask> {
        self
    }
}
