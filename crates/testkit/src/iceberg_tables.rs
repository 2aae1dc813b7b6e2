//! Iceberg test tables written with iceberg-rust 0.10.1 itself, and the reference reader
//! (iceberg-rust's own `TableScan::to_arrow()`).
//!
//! Behind the testkit's `iceberg` feature (on by default); an integration test of any crate
//! of the workspace uses it as
//!
//! ```ignore
//! use rayquet_testkit::iceberg_tables::*;
//! ```
//!
//! Every fixture writes a complete table directory into its own `TempDir` through a
//! `MemoryCatalog` backed by `LocalFsStorageFactory`: `<table>/data/**.parquet`,
//! `<table>/metadata/NNNNN-<uuid>.metadata.json` (the highest `NNNNN` is the final state, hand
//! commits included), manifests, manifest lists and `metadata/version-hint.text` (holding the
//! newest `NNNNN` as a plain number). Every fixture also records what it wrote and the answer
//! the Iceberg spec gives for every snapshot (`Fixture::expected`), built from the generator's
//! own values, never by reading the files back.
//!
//! Layout of the values: `V` is a small value model; `batch_from_rows` turns rows of it into an
//! Arrow batch of any (iceberg-derived) Arrow schema, so expectations for evolved schemas are
//! written by hand per schema version.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, FixedSizeBinaryArray, Float32Array,
    Float64Array, Int32Array, Int64Array, LargeBinaryArray, ListArray, MapArray, RecordBatch,
    StringArray, StructArray, Time64MicrosecondArray, TimestampMicrosecondArray,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::{concat_batches, filter_record_batch};
use arrow::datatypes::{
    DataType, Field, FieldRef, Fields, Schema as ArrowSchema, SchemaRef, TimeUnit,
};
use futures::{StreamExt, TryStreamExt};
use iceberg::arrow::{schema_to_arrow_schema, RecordBatchPartitionSplitter};
use iceberg::expr::Predicate;
use iceberg::io::{FileIO, LocalFsStorageFactory};
use iceberg::memory::{MemoryCatalog, MemoryCatalogBuilder, MEMORY_CATALOG_WAREHOUSE};
use iceberg::metadata_columns::{delete_file_path_field, delete_file_pos_field};
use iceberg::scan::FileScanTask;
use iceberg::spec::{
    DataContentType, DataFile, DataFileBuilder, DataFileFormat, FormatVersion, ListType, Literal,
    ManifestListWriter, ManifestWriterBuilder, MapType, NestedField, NestedFieldRef, Operation,
    PartitionKey, PrimitiveType, Schema, SchemaRef as IcebergSchemaRef, Snapshot,
    SnapshotReference, SnapshotRetention, Struct, StructType, Summary, TableMetadata,
    TableMetadataBuilder, Transform, Type, UnboundPartitionSpec, DEFAULT_SCHEMA_NAME_MAPPING,
    MAIN_BRANCH,
};
use iceberg::table::{StaticTable, Table};
use iceberg::transaction::{AddColumn, ApplyTransactionAction, Transaction};
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::base_writer::equality_delete_writer::{
    EqualityDeleteFileWriterBuilder, EqualityDeleteWriterConfig,
};
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::{IcebergWriter, IcebergWriterBuilder};
use iceberg::{
    Catalog, CatalogBuilder, MetadataLocation, NamespaceIdent, Runtime, TableCreation, TableIdent,
};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use tempfile::TempDir;

// ---------------------------------------------------------------------------------------------
// Runtime
// ---------------------------------------------------------------------------------------------

/// The tokio runtime every fixture and the reference reader run on (2 workers). Tables built
/// here carry an `iceberg::Runtime` wrapping it, so they stay usable for the whole process.
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("iceberg-fixtures")
            .enable_all()
            .build()
            .expect("tokio runtime")
    })
}

/// Run `f` on the fixtures' runtime; callable from a test that itself runs on a multi-thread
/// tokio runtime (`#[tokio::test(flavor = "multi_thread")]`), whose worker leaves its runtime
/// for the while.
pub(crate) fn block_on<F: std::future::Future>(f: F) -> F::Output {
    crate::outside_runtime(|| runtime().block_on(f))
}

// ---------------------------------------------------------------------------------------------
// What a fixture returns
// ---------------------------------------------------------------------------------------------

/// A data file as written (and as committed: path as in the manifest).
#[derive(Debug, Clone)]
pub struct WrittenFile {
    /// The path stored in the manifest (`file:///…`).
    pub path: String,
    /// The same file on the local filesystem.
    pub local_path: PathBuf,
    /// The snapshot that added it.
    pub snapshot_id: i64,
    /// Its data sequence number.
    pub sequence_number: i64,
    /// Exactly the rows written, in file order, in the Arrow schema they were written with
    /// (field ids in the metadata unless the fixture wrote the file without ids).
    pub rows: RecordBatch,
    /// Partition tuple recorded in the manifest (empty struct when unpartitioned).
    pub partition: Struct,
    pub partition_spec_id: i32,
    /// Row-group count of the Parquet file.
    pub row_groups: usize,
    /// The `_row_id` of its first row (format v3, when the table knows it): explicit in
    /// the manifest or inherited.
    pub first_row_id: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DeleteKind {
    Position,
    /// A deletion vector (format v3): a blob of a Puffin file, at these bytes.
    Vector {
        offset: u64,
        length: u64,
    },
    /// Equality delete on these field ids.
    Equality(Vec<i32>),
}

/// A delete file as written and committed.
#[derive(Debug, Clone)]
pub struct WrittenDelete {
    pub path: String,
    pub local_path: PathBuf,
    pub snapshot_id: i64,
    pub sequence_number: i64,
    pub kind: DeleteKind,
    /// Position deletes and deletion vectors: `(file_path, pos)`; equality deletes: the
    /// equality columns.
    pub rows: RecordBatch,
    /// `referenced_data_file` in the manifest (position deletes that target one file).
    pub referenced_data_file: Option<String>,
    pub partition: Struct,
}

/// A complete table on local disk plus everything needed to build an independent expectation.
pub struct Fixture {
    pub name: &'static str,
    /// Owns the files; dropping the fixture deletes them.
    pub dir: TempDir,
    /// `<dir>/ns/<name>`: the table root on the local filesystem.
    pub table_root: PathBuf,
    /// The table location as stored in the metadata (`file:///…`).
    pub table_location: String,
    /// The newest metadata JSON (`file:///…/metadata/NNNNN-uuid.metadata.json`).
    pub metadata_location: String,
    /// Loaded from `metadata_location` with `StaticTable::from_metadata_file` (read-only).
    pub table: Table,
    /// Snapshots in commit order (main branch and, where a fixture says so, branch commits).
    pub snapshot_ids: Vec<i64>,
    /// Named refs other than `main` (branches and tags), as `(name, snapshot id)`.
    pub refs: Vec<(String, i64)>,
    pub data_files: Vec<WrittenFile>,
    pub delete_files: Vec<WrittenDelete>,
    /// Data files removed from disk after commit (the "missing file" fixture).
    pub removed_files: Vec<String>,
    /// The Iceberg spec's answer for a full scan of each snapshot: every column of the
    /// snapshot's schema, in schema order, typed as `schema_to_arrow_schema` types them. Row
    /// order is not meaningful (compare as multisets).
    pub expected: BTreeMap<i64, RecordBatch>,
}

impl Fixture {
    /// The spec answer for `snapshot_id` (panics if the fixture did not record one).
    pub fn expected_at(&self, snapshot_id: i64) -> &RecordBatch {
        self.expected
            .get(&snapshot_id)
            .unwrap_or_else(|| panic!("{}: no expectation for snapshot {snapshot_id}", self.name))
    }

    /// The spec answer for the current snapshot (empty batch of the current schema if none).
    pub fn expected_current(&self) -> RecordBatch {
        match self.table.metadata().current_snapshot_id() {
            Some(id) => self.expected_at(id).clone(),
            None => RecordBatch::new_empty(arrow_schema_of(self.table.metadata().current_schema())),
        }
    }

    /// Field id of a top-level or dotted nested column in the current schema.
    pub fn field_id(&self, name: &str) -> i32 {
        self.table
            .metadata()
            .current_schema()
            .field_id_by_name(name)
            .unwrap_or_else(|| panic!("{}: no field {name}", self.name))
    }

    pub fn data_file(&self, path: &str) -> &WrittenFile {
        self.data_files
            .iter()
            .find(|f| f.path == path)
            .unwrap_or_else(|| panic!("{}: no data file {path}", self.name))
    }

    /// Metadata JSON files in `<table>/metadata`, sorted by their version number.
    pub fn metadata_files(&self) -> Vec<(i32, PathBuf)> {
        metadata_files(&self.table_root)
    }
}

/// `schema_to_arrow_schema` as an `Arc`.
pub fn arrow_schema_of(schema: &Schema) -> SchemaRef {
    Arc::new(schema_to_arrow_schema(schema).expect("schema_to_arrow_schema"))
}

/// Metadata JSON files under `<table_root>/metadata`, sorted by version number.
pub fn metadata_files(table_root: &Path) -> Vec<(i32, PathBuf)> {
    let mut out = vec![];
    for e in std::fs::read_dir(table_root.join("metadata")).expect("metadata dir") {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if let Some(stem) = name.strip_suffix(".metadata.json") {
            let v: i32 = stem
                .split('-')
                .next()
                .unwrap()
                .parse()
                .expect("version number");
            out.push((v, p));
        }
    }
    out.sort();
    out
}

/// Local path of a `file://` URI.
pub fn local_path(uri: &str) -> PathBuf {
    PathBuf::from(uri.strip_prefix("file://").unwrap_or(uri))
}

// ---------------------------------------------------------------------------------------------
// Reference reader: iceberg-rust's own scan
// ---------------------------------------------------------------------------------------------

/// Options of the reference scan beyond the ones `to_arrow` takes.
#[derive(Clone, Debug)]
pub struct ScanOptions {
    pub snapshot_id: Option<i64>,
    pub columns: Option<Vec<String>>,
    pub predicate: Option<Predicate>,
    pub case_sensitive: bool,
    pub batch_size: Option<usize>,
    /// `TableScanBuilder::with_concurrency_limit` (None: iceberg's default, the CPU count).
    pub concurrency: Option<usize>,
    pub row_selection: bool,
    /// `with_row_group_filtering_enabled` (iceberg's default: true).
    pub row_group_filtering: bool,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            snapshot_id: None,
            columns: None,
            predicate: None,
            case_sensitive: true,
            batch_size: None,
            concurrency: None,
            row_selection: false,
            row_group_filtering: true,
        }
    }
}

/// `table` again, bound to the fixtures' runtime (so any `Table` can be scanned here).
fn rebind(table: &Table) -> Table {
    let mut b = Table::builder()
        .metadata(table.metadata_ref())
        .identifier(table.identifier().clone())
        .file_io(table.file_io().clone())
        .runtime(Runtime::new(runtime()))
        .readonly(true);
    if let Some(loc) = table.metadata_location() {
        b = b.metadata_location(loc);
    }
    b.build().expect("rebind table")
}

fn build_scan(table: &Table, o: &ScanOptions) -> iceberg::Result<iceberg::scan::TableScan> {
    let mut b = table.scan().with_case_sensitive(o.case_sensitive);
    if let Some(id) = o.snapshot_id {
        b = b.snapshot_id(id);
    }
    if let Some(cols) = &o.columns {
        b = b.select(cols.iter().cloned());
    }
    if let Some(p) = &o.predicate {
        b = b.with_filter(p.clone());
    }
    if let Some(n) = o.concurrency {
        b = b.with_concurrency_limit(n);
    }
    b = b
        .with_batch_size(o.batch_size)
        .with_row_selection_enabled(o.row_selection)
        .with_row_group_filtering_enabled(o.row_group_filtering);
    b.build()
}

/// The Arrow schema iceberg-rust's transformer targets for a scan: the snapshot schema (or the
/// current one) through `schema_to_arrow_schema`, restricted to the selected top-level columns
/// in selection order. Used when a scan yields no batch; it does not model the RunEndEncoded
/// type of constant columns such as `_file`.
pub fn projected_schema(
    table: &Table,
    snapshot_id: Option<i64>,
    columns: Option<&[String]>,
) -> SchemaRef {
    let md = table.metadata();
    let schema = match snapshot_id.or(md.current_snapshot_id()) {
        Some(id) => md
            .snapshot_by_id(id)
            .expect("snapshot")
            .schema(md)
            .expect("snapshot schema"),
        None => md.current_schema().clone(),
    };
    let full = arrow_schema_of(&schema);
    match columns {
        None => full,
        Some(cols) => {
            let idx: Vec<usize> = cols.iter().filter_map(|c| full.index_of(c).ok()).collect();
            Arc::new(full.project(&idx).expect("project"))
        }
    }
}

/// Scan with iceberg-rust (`TableScan::to_arrow()`), returning its error if it fails.
pub fn try_scan(table: &Table, o: &ScanOptions) -> iceberg::Result<(SchemaRef, Vec<RecordBatch>)> {
    let table = rebind(table);
    let batches: Vec<RecordBatch> = block_on(async {
        let scan = build_scan(&table, o)?;
        scan.to_arrow().await?.try_collect().await
    })?;
    let schema = match batches.first() {
        Some(b) => {
            let s = b.schema();
            for other in &batches {
                assert_eq!(
                    other.schema(),
                    s,
                    "to_arrow yielded batches of different schemas"
                );
            }
            s
        }
        None => projected_schema(&table, o.snapshot_id, o.columns.as_deref()),
    };
    Ok((schema, batches))
}

/// Like [`to_arrow`] but returns iceberg's error.
pub fn try_to_arrow(
    table: &Table,
    snapshot_id: Option<i64>,
    columns: Option<&[&str]>,
    predicate: Option<Predicate>,
    case_sensitive: bool,
) -> iceberg::Result<(SchemaRef, Vec<RecordBatch>)> {
    try_scan(
        table,
        &ScanOptions {
            snapshot_id,
            columns: columns.map(|c| c.iter().map(|s| s.to_string()).collect()),
            predicate,
            case_sensitive,
            ..ScanOptions::default()
        },
    )
}

/// The reference: iceberg-rust's `TableScan::to_arrow()` on the fixtures' tokio runtime.
/// Returns the schema of the batches (or, when there are none, [`projected_schema`]) and the
/// batches in iceberg's (unordered) output order. Panics on error.
pub fn to_arrow(
    table: &Table,
    snapshot_id: Option<i64>,
    columns: Option<&[&str]>,
    predicate: Option<Predicate>,
    case_sensitive: bool,
) -> (SchemaRef, Vec<RecordBatch>) {
    try_to_arrow(table, snapshot_id, columns, predicate, case_sensitive)
        .unwrap_or_else(|e| panic!("to_arrow failed: {e:?}"))
}

/// Like [`plan_tasks`] but returns iceberg's error.
pub fn try_plan_tasks(
    table: &Table,
    snapshot_id: Option<i64>,
    columns: Option<&[&str]>,
    predicate: Option<Predicate>,
    case_sensitive: bool,
) -> iceberg::Result<Vec<FileScanTask>> {
    let table = rebind(table);
    let o = ScanOptions {
        snapshot_id,
        columns: columns.map(|c| c.iter().map(|s| s.to_string()).collect()),
        predicate,
        case_sensitive,
        ..ScanOptions::default()
    };
    let mut tasks: Vec<FileScanTask> = block_on(async {
        let scan = build_scan(&table, &o)?;
        scan.plan_files().await?.try_collect().await
    })?;
    tasks.sort_by(|a, b| a.data_file_path.cmp(&b.data_file_path));
    Ok(tasks)
}

/// iceberg-rust's planned `FileScanTask`s (`TableScan::plan_files()`), sorted by data file path.
pub fn plan_tasks(
    table: &Table,
    snapshot_id: Option<i64>,
    columns: Option<&[&str]>,
    predicate: Option<Predicate>,
    case_sensitive: bool,
) -> Vec<FileScanTask> {
    try_plan_tasks(table, snapshot_id, columns, predicate, case_sensitive)
        .unwrap_or_else(|e| panic!("plan_files failed: {e:?}"))
}

/// Read `tasks` with iceberg-rust's `ArrowReader` (what `to_arrow()` runs after planning), at
/// data-file concurrency 1 so batches come in task order. Lets a test alter planned tasks
/// (e.g. set `partition_spec`, split byte ranges) and see what iceberg's reader does with them.
pub fn try_read_tasks(
    table: &Table,
    tasks: Vec<FileScanTask>,
) -> iceberg::Result<Vec<RecordBatch>> {
    let reader =
        iceberg::arrow::ArrowReaderBuilder::new(table.file_io().clone(), Runtime::new(runtime()))
            .with_data_file_concurrency_limit(1)
            .build();
    block_on(async move {
        let stream = futures::stream::iter(tasks.into_iter().map(Ok)).boxed();
        reader.read(stream)?.stream().try_collect().await
    })
}

/// [`try_read_tasks`], panicking on error.
pub fn read_tasks(table: &Table, tasks: Vec<FileScanTask>) -> Vec<RecordBatch> {
    try_read_tasks(table, tasks).unwrap_or_else(|e| panic!("ArrowReader failed: {e:?}"))
}

/// Planned tasks with `partition_spec` filled in from the table metadata (the planner of
/// 0.10.1 leaves it `None`). A task does not carry its data file's spec id, so this uses the
/// default spec and is only right for tables with a single spec (all fixtures here).
pub fn with_partition_spec(table: &Table, mut tasks: Vec<FileScanTask>) -> Vec<FileScanTask> {
    let spec = table.metadata().default_partition_spec().clone();
    for t in tasks.iter_mut() {
        t.partition_spec = Some(spec.clone());
    }
    tasks
}

/// Every row of every batch rendered by `row_strings`, sorted: a multiset to compare.
pub fn sorted_rows(batches: &[RecordBatch]) -> Vec<String> {
    let mut rows: Vec<String> = batches.iter().flat_map(crate::row_strings).collect();
    rows.sort();
    rows
}

/// Concatenate batches of one schema (an empty batch of `schema` if there are none).
pub fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> RecordBatch {
    concat_batches(schema, batches).expect("concat_batches")
}

/// `batch` restricted to the named columns, in that order.
pub fn project(batch: &RecordBatch, columns: &[&str]) -> RecordBatch {
    let idx: Vec<usize> = columns
        .iter()
        .map(|c| {
            batch
                .schema()
                .index_of(c)
                .unwrap_or_else(|_| panic!("no column {c}"))
        })
        .collect();
    batch.project(&idx).expect("project")
}

/// Rows of `batch` for which `keep(row index)` holds.
pub fn filter_rows(batch: &RecordBatch, keep: impl Fn(usize) -> bool) -> RecordBatch {
    let mask = BooleanArray::from((0..batch.num_rows()).map(keep).collect::<Vec<bool>>());
    filter_record_batch(batch, &mask).expect("filter")
}

// ---------------------------------------------------------------------------------------------
// Value model → Arrow
// ---------------------------------------------------------------------------------------------

/// A value of the small model used to describe rows. Dates are days (I32), times and
/// timestamps microseconds (I64), decimals unscaled (Dec), uuids and fixed 16/N bytes (Bytes).
#[derive(Clone, Debug, PartialEq)]
pub enum V {
    Null,
    Bool(bool),
    I32(i32),
    I64(i64),
    F32(f32),
    F64(f64),
    Dec(i128),
    Str(String),
    Bytes(Vec<u8>),
    Struct(Row),
    List(Vec<V>),
    Map(Vec<(V, V)>),
}

/// A row (or struct value): values by column name; a missing name is null.
pub type Row = Vec<(String, V)>;

pub fn s(v: &str) -> V {
    V::Str(v.to_string())
}

pub fn row(cols: Vec<(&str, V)>) -> Row {
    cols.into_iter().map(|(n, v)| (n.to_string(), v)).collect()
}

fn get<'a>(r: &'a Row, name: &str) -> &'a V {
    r.iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v)
        .unwrap_or(&V::Null)
}

/// Build an array of type `dt` from values (I32 widens to Int64, F32 to Float64).
pub fn build_array(dt: &DataType, vals: &[V]) -> ArrayRef {
    fn bad(dt: &DataType, v: &V) -> ! {
        panic!("value {v:?} does not fit {dt}")
    }
    match dt {
        DataType::Boolean => Arc::new(BooleanArray::from(
            vals.iter()
                .map(|v| match v {
                    V::Null => None,
                    V::Bool(b) => Some(*b),
                    v => bad(dt, v),
                })
                .collect::<Vec<_>>(),
        )),
        DataType::Int32 => Arc::new(Int32Array::from(
            vals.iter()
                .map(|v| match v {
                    V::Null => None,
                    V::I32(x) => Some(*x),
                    v => bad(dt, v),
                })
                .collect::<Vec<_>>(),
        )),
        DataType::Date32 => Arc::new(Date32Array::from(
            vals.iter()
                .map(|v| match v {
                    V::Null => None,
                    V::I32(x) => Some(*x),
                    v => bad(dt, v),
                })
                .collect::<Vec<_>>(),
        )),
        DataType::Int64 => Arc::new(Int64Array::from(
            vals.iter()
                .map(|v| match v {
                    V::Null => None,
                    V::I32(x) => Some(*x as i64),
                    V::I64(x) => Some(*x),
                    v => bad(dt, v),
                })
                .collect::<Vec<_>>(),
        )),
        DataType::Time64(TimeUnit::Microsecond) => Arc::new(Time64MicrosecondArray::from(
            vals.iter()
                .map(|v| match v {
                    V::Null => None,
                    V::I64(x) => Some(*x),
                    v => bad(dt, v),
                })
                .collect::<Vec<_>>(),
        )),
        DataType::Null => Arc::new(arrow::array::NullArray::new(vals.len())),
        DataType::Timestamp(TimeUnit::Nanosecond, tz) => Arc::new(
            arrow::array::TimestampNanosecondArray::from(
                vals.iter()
                    .map(|v| match v {
                        V::Null => None,
                        V::I64(x) => Some(*x),
                        v => bad(dt, v),
                    })
                    .collect::<Vec<_>>(),
            )
            .with_timezone_opt(tz.clone()),
        ),
        DataType::Timestamp(TimeUnit::Microsecond, tz) => Arc::new(
            TimestampMicrosecondArray::from(
                vals.iter()
                    .map(|v| match v {
                        V::Null => None,
                        V::I64(x) => Some(*x),
                        v => bad(dt, v),
                    })
                    .collect::<Vec<_>>(),
            )
            .with_timezone_opt(tz.clone()),
        ),
        DataType::Float32 => Arc::new(Float32Array::from(
            vals.iter()
                .map(|v| match v {
                    V::Null => None,
                    V::F32(x) => Some(*x),
                    v => bad(dt, v),
                })
                .collect::<Vec<_>>(),
        )),
        DataType::Float64 => Arc::new(Float64Array::from(
            vals.iter()
                .map(|v| match v {
                    V::Null => None,
                    V::F32(x) => Some(*x as f64),
                    V::F64(x) => Some(*x),
                    v => bad(dt, v),
                })
                .collect::<Vec<_>>(),
        )),
        DataType::Decimal128(p, sc) => Arc::new(
            Decimal128Array::from(
                vals.iter()
                    .map(|v| match v {
                        V::Null => None,
                        V::Dec(x) => Some(*x),
                        v => bad(dt, v),
                    })
                    .collect::<Vec<_>>(),
            )
            .with_precision_and_scale(*p, *sc)
            .expect("decimal precision"),
        ),
        DataType::Utf8 => Arc::new(StringArray::from(
            vals.iter()
                .map(|v| match v {
                    V::Null => None,
                    V::Str(x) => Some(x.as_str()),
                    v => bad(dt, v),
                })
                .collect::<Vec<_>>(),
        )),
        DataType::LargeBinary => Arc::new(LargeBinaryArray::from(
            vals.iter()
                .map(|v| match v {
                    V::Null => None,
                    V::Bytes(x) => Some(x.as_slice()),
                    v => bad(dt, v),
                })
                .collect::<Vec<_>>(),
        )),
        DataType::Binary => Arc::new(arrow::array::BinaryArray::from(
            vals.iter()
                .map(|v| match v {
                    V::Null => None,
                    V::Bytes(x) => Some(x.as_slice()),
                    v => bad(dt, v),
                })
                .collect::<Vec<_>>(),
        )),
        DataType::FixedSizeBinary(w) => Arc::new(
            FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                vals.iter().map(|v| match v {
                    V::Null => None,
                    V::Bytes(x) => Some(x.clone()),
                    v => bad(dt, v),
                }),
                *w,
            )
            .expect("fixed size binary"),
        ),
        DataType::Struct(fields) => struct_array(fields, vals),
        DataType::List(elem) => {
            let mut lens = vec![];
            let mut items = vec![];
            let mut valid = vec![];
            for v in vals {
                match v {
                    V::Null => {
                        lens.push(0);
                        valid.push(false);
                    }
                    V::List(xs) => {
                        lens.push(xs.len());
                        items.extend(xs.iter().cloned());
                        valid.push(true);
                    }
                    v => bad(dt, v),
                }
            }
            let values = build_array(elem.data_type(), &items);
            Arc::new(
                ListArray::try_new(
                    elem.clone(),
                    OffsetBuffer::from_lengths(lens),
                    values,
                    nulls_of(&valid),
                )
                .expect("list array"),
            )
        }
        DataType::Map(entries, sorted) => {
            let DataType::Struct(kv) = entries.data_type() else {
                panic!("map entries must be a struct")
            };
            let mut lens = vec![];
            let mut keys = vec![];
            let mut values = vec![];
            let mut valid = vec![];
            for v in vals {
                match v {
                    V::Null => {
                        lens.push(0);
                        valid.push(false);
                    }
                    V::Map(xs) => {
                        lens.push(xs.len());
                        for (k, x) in xs {
                            keys.push(k.clone());
                            values.push(x.clone());
                        }
                        valid.push(true);
                    }
                    v => bad(dt, v),
                }
            }
            let k = build_array(kv[0].data_type(), &keys);
            let x = build_array(kv[1].data_type(), &values);
            let entries_arr = StructArray::try_new(kv.clone(), vec![k, x], None).expect("entries");
            Arc::new(
                MapArray::try_new(
                    entries.clone(),
                    OffsetBuffer::from_lengths(lens),
                    entries_arr,
                    nulls_of(&valid),
                    *sorted,
                )
                .expect("map array"),
            )
        }
        other => panic!("build_array: unsupported type {other}"),
    }
}

fn nulls_of(valid: &[bool]) -> Option<NullBuffer> {
    if valid.iter().all(|v| *v) {
        None
    } else {
        Some(NullBuffer::from(valid.to_vec()))
    }
}

fn struct_array(fields: &Fields, vals: &[V]) -> ArrayRef {
    let mut valid = vec![];
    let mut children: Vec<Vec<V>> = vec![vec![]; fields.len()];
    for v in vals {
        match v {
            V::Null => {
                valid.push(false);
                for c in children.iter_mut() {
                    c.push(V::Null);
                }
            }
            V::Struct(r) => {
                valid.push(true);
                for (i, f) in fields.iter().enumerate() {
                    children[i].push(get(r, f.name()).clone());
                }
            }
            v => panic!("value {v:?} is not a struct"),
        }
    }
    if fields.is_empty() {
        return Arc::new(StructArray::new_empty_fields(vals.len(), nulls_of(&valid)));
    }
    let arrays: Vec<ArrayRef> = fields
        .iter()
        .zip(&children)
        .map(|(f, c)| build_array(f.data_type(), c))
        .collect();
    Arc::new(StructArray::try_new(fields.clone(), arrays, nulls_of(&valid)).expect("struct array"))
}

/// A batch of `schema` from rows (by column name; missing names are null).
pub fn batch_from_rows(schema: &SchemaRef, rows: &[Row]) -> RecordBatch {
    let cols: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| {
            let vals: Vec<V> = rows.iter().map(|r| get(r, f.name()).clone()).collect();
            build_array(f.data_type(), &vals)
        })
        .collect();
    RecordBatch::try_new_with_options(
        schema.clone(),
        cols,
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(rows.len())),
    )
    .expect("batch_from_rows")
}

// ---------------------------------------------------------------------------------------------
// Deterministic generator
// ---------------------------------------------------------------------------------------------

/// splitmix64: deterministic, seedable.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

// ---------------------------------------------------------------------------------------------
// Harness: writes through iceberg-rust, commits through the catalog or by hand
// ---------------------------------------------------------------------------------------------

/// Days since 1970-01-01 of 2024-03-01 (used as the base date of generated data).
pub const BASE_DAY: i32 = 19783;
/// Microseconds since the epoch of 2024-03-01T00:00:00Z.
pub const BASE_TS: i64 = BASE_DAY as i64 * 86_400_000_000;

pub fn writer_props(row_group_rows: usize) -> WriterProperties {
    WriterProperties::builder()
        .set_max_row_group_row_count(Some(row_group_rows))
        .build()
}

pub(crate) struct Harness {
    pub(crate) name: &'static str,
    pub(crate) dir: TempDir,
    pub(crate) catalog: MemoryCatalog,
    pub(crate) ident: TableIdent,
    pub(crate) table: Table,
    pub(crate) snapshot_ids: Vec<i64>,
    pub(crate) refs: Vec<(String, i64)>,
    pub(crate) data_files: Vec<WrittenFile>,
    pub(crate) delete_files: Vec<WrittenDelete>,
    pub(crate) expected: BTreeMap<i64, RecordBatch>,
    pub(crate) file_counter: usize,
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

pub(crate) fn row_group_count(local: &Path) -> usize {
    let f = std::fs::File::open(local).expect("open parquet");
    let r = parquet::file::reader::SerializedFileReader::new(f).expect("parquet footer");
    parquet::file::reader::FileReader::metadata(&r).num_row_groups()
}

impl Harness {
    pub(crate) fn new(
        name: &'static str,
        schema: Schema,
        spec: Option<UnboundPartitionSpec>,
        properties: HashMap<String, String>,
        version: FormatVersion,
    ) -> Harness {
        let dir = tempfile::Builder::new()
            .prefix(&format!("iceberg-{name}-"))
            .tempdir()
            .expect("tempdir");
        let warehouse = format!("file://{}", dir.path().display());
        let (catalog, table) = block_on(async {
            let catalog = MemoryCatalogBuilder::default()
                .with_storage_factory(Arc::new(LocalFsStorageFactory))
                .with_runtime(Runtime::new(runtime()))
                .load(
                    "fixtures",
                    HashMap::from([(MEMORY_CATALOG_WAREHOUSE.to_string(), warehouse)]),
                )
                .await?;
            let ns = NamespaceIdent::new("ns".to_string());
            catalog.create_namespace(&ns, HashMap::new()).await?;
            let creation = TableCreation::builder()
                .name(name.to_string())
                .schema(schema)
                .partition_spec_opt(spec)
                .properties(properties)
                .format_version(version)
                .build();
            let table = catalog.create_table(&ns, creation).await?;
            iceberg::Result::Ok((catalog, table))
        })
        .expect("create table");
        let ident = table.identifier().clone();
        Harness {
            name,
            dir,
            catalog,
            ident,
            table,
            snapshot_ids: vec![],
            refs: vec![],
            data_files: vec![],
            delete_files: vec![],
            expected: BTreeMap::new(),
            file_counter: 0,
        }
    }

    pub(crate) fn schema(&self) -> IcebergSchemaRef {
        self.table.metadata().current_schema().clone()
    }

    pub(crate) fn arrow_schema(&self) -> SchemaRef {
        arrow_schema_of(&self.schema())
    }

    pub(crate) fn next_tag(&mut self, prefix: &str) -> String {
        self.file_counter += 1;
        format!("{prefix}-{:04}", self.file_counter)
    }

    /// Write one Parquet data file through `DataFileWriter` with `schema` (default: the current
    /// schema); `partition` sets the manifest's partition tuple and the directory.
    pub(crate) fn write_data_with(
        &mut self,
        batch: &RecordBatch,
        schema: IcebergSchemaRef,
        partition: Option<PartitionKey>,
        props: WriterProperties,
    ) -> (DataFile, RecordBatch) {
        let tag = self.next_tag("data");
        let file_io = self.table.file_io().clone();
        let loc = DefaultLocationGenerator::new(self.table.metadata()).expect("location generator");
        let files = block_on(async {
            let pw = ParquetWriterBuilder::new(props, schema);
            let rolling = RollingFileWriterBuilder::new_with_default_file_size(
                pw,
                file_io,
                loc,
                DefaultFileNameGenerator::new(tag, None, DataFileFormat::Parquet),
            );
            let mut w = DataFileWriterBuilder::new(rolling).build(partition).await?;
            w.write(batch.clone()).await?;
            w.close().await
        })
        .expect("write data file");
        assert_eq!(files.len(), 1, "one data file per write");
        (files.into_iter().next().unwrap(), batch.clone())
    }

    pub(crate) fn write_data(
        &mut self,
        batch: &RecordBatch,
        partition: Option<PartitionKey>,
        props: WriterProperties,
    ) -> (DataFile, RecordBatch) {
        let schema = self.schema();
        self.write_data_with(batch, schema, partition, props)
    }

    /// Split `batch` by the default partition spec (computed values) and write one file per
    /// partition.
    pub(crate) fn write_partitioned(
        &mut self,
        batch: &RecordBatch,
        props: WriterProperties,
    ) -> Vec<(DataFile, RecordBatch)> {
        let splitter = RecordBatchPartitionSplitter::try_new_with_computed_values(
            self.schema(),
            self.table.metadata().default_partition_spec().clone(),
        )
        .expect("splitter");
        let parts = splitter.split(batch).expect("split");
        parts
            .into_iter()
            .map(|(key, b)| self.write_data(&b, Some(key), props.clone()))
            .collect()
    }

    pub(crate) fn record_data(
        &mut self,
        files: &[(DataFile, RecordBatch)],
        snapshot_id: i64,
        seq: i64,
    ) {
        let spec_id = self.table.metadata().default_partition_spec_id();
        for (f, rows) in files {
            let local = local_path(f.file_path());
            self.data_files.push(WrittenFile {
                path: f.file_path().to_string(),
                row_groups: row_group_count(&local),
                local_path: local,
                snapshot_id,
                sequence_number: seq,
                rows: rows.clone(),
                partition: f.partition().clone(),
                // `DataFile::partition_spec_id` has no public getter in 0.10.1; the fixtures only
                // write with the default spec.
                partition_spec_id: spec_id,
                first_row_id: None,
            });
        }
    }

    /// `fast_append` through the catalog; returns the new snapshot id.
    pub(crate) fn append(&mut self, files: Vec<(DataFile, RecordBatch)>) -> i64 {
        let data: Vec<DataFile> = files.iter().map(|(f, _)| f.clone()).collect();
        let table = block_on(async {
            let tx = Transaction::new(&self.table);
            let tx = tx.fast_append().add_data_files(data).apply(tx)?;
            tx.commit(&self.catalog).await
        })
        .expect("fast_append");
        self.table = table;
        let snap = self.table.metadata().current_snapshot().unwrap().clone();
        self.snapshot_ids.push(snap.snapshot_id());
        self.record_data(&files, snap.snapshot_id(), snap.sequence_number());
        snap.snapshot_id()
    }

    /// `Transaction::update_schema()` (its action type is not nameable outside the crate, so
    /// this takes the additions and deletions).
    pub(crate) fn update_schema(&mut self, adds: Vec<AddColumn>, deletes: Vec<&str>) {
        let table = block_on(async {
            let tx = Transaction::new(&self.table);
            let mut a = tx.update_schema();
            for c in adds {
                a = a.add_column(c);
            }
            for d in deletes {
                a = a.delete_column(d);
            }
            let tx = a.apply(tx)?;
            tx.commit(&self.catalog).await
        })
        .expect("update_schema");
        self.table = table;
    }

    pub(crate) fn set_properties(&mut self, props: Vec<(String, String)>) {
        let table = block_on(async {
            let tx = Transaction::new(&self.table);
            let mut a = tx.update_table_properties();
            for (k, v) in props {
                a = a.set(k, v);
            }
            let tx = a.apply(tx)?;
            tx.commit(&self.catalog).await
        })
        .expect("update properties");
        self.table = table;
    }

    /// Commit a metadata change by hand: build the next metadata from the current one, write it
    /// as the next `NNNNN-uuid.metadata.json`, and re-register the table in the catalog so
    /// catalog transactions continue from it.
    pub(crate) fn commit_metadata(
        &mut self,
        f: impl FnOnce(TableMetadataBuilder) -> iceberg::Result<TableMetadataBuilder>,
    ) {
        let cur_loc = self
            .table
            .metadata_location()
            .expect("metadata location")
            .to_string();
        let md = self.table.metadata().clone();
        let new_md: TableMetadata = f(md.into_builder(Some(cur_loc.clone())))
            .and_then(|b| b.build())
            .expect("metadata builder")
            .metadata;
        let loc = MetadataLocation::from_str(&cur_loc)
            .expect("metadata location")
            .with_next_version()
            .with_new_metadata(&new_md);
        let table = block_on(async {
            new_md.write_to(self.table.file_io(), &loc).await?;
            self.catalog.drop_table(&self.ident).await?;
            self.catalog
                .register_table(&self.ident, loc.to_string())
                .await
        })
        .expect("hand metadata commit");
        self.table = table;
    }

    /// Commit a snapshot by hand (there is no RowDelta in 0.10.1) on `branch`: the parent's
    /// manifests (unless `keep_existing` is false) plus one data manifest for `data` and one
    /// delete manifest for `deletes`, all with the new sequence number. Returns (id, seq).
    pub(crate) fn commit_snapshot(
        &mut self,
        branch: &str,
        data: Vec<(DataFile, RecordBatch)>,
        deletes: Vec<DataFile>,
        keep_existing: bool,
        operation: Operation,
    ) -> (i64, i64) {
        let md = self.table.metadata().clone();
        let version = md.format_version();
        let parent = md.snapshot_for_ref(branch).cloned();
        let snap_id = md.snapshots().map(|s| s.snapshot_id()).max().unwrap_or(0) + 1;
        let seq = md.next_sequence_number();
        let file_io = self.table.file_io().clone();
        let spec = md.default_partition_spec().as_ref().clone();
        let schema = md.current_schema().clone();
        let location = md.location().to_string();
        let data_files: Vec<DataFile> = data.iter().map(|(f, _)| f.clone()).collect();
        let list_path = format!("{location}/metadata/snap-{snap_id}-hand.avro");
        let snapshot = block_on(async {
            let mut manifests = vec![];
            if keep_existing {
                if let Some(p) = &parent {
                    let existing = self.table.manifest_list_reader(p).load().await?;
                    manifests.extend(existing.entries().iter().cloned());
                }
            }
            if !data_files.is_empty() {
                let mw = ManifestWriterBuilder::new(
                    file_io.new_output(format!("{location}/metadata/hand-data-{snap_id}.avro"))?,
                    Some(snap_id),
                    schema.clone(),
                    spec.clone(),
                );
                let mut mw = match version {
                    FormatVersion::V1 => mw.build_v1(),
                    FormatVersion::V2 => mw.build_v2_data(),
                    FormatVersion::V3 => mw.build_v3_data(),
                };
                for f in data_files {
                    mw.add_file(f, seq)?;
                }
                manifests.push(mw.write_manifest_file().await?);
            }
            if !deletes.is_empty() {
                let mw = ManifestWriterBuilder::new(
                    file_io
                        .new_output(format!("{location}/metadata/hand-deletes-{snap_id}.avro"))?,
                    Some(snap_id),
                    schema.clone(),
                    spec.clone(),
                );
                let mut mw = match version {
                    FormatVersion::V3 => mw.build_v3_deletes(),
                    _ => mw.build_v2_deletes(),
                };
                for f in deletes {
                    mw.add_file(f, seq)?;
                }
                manifests.push(mw.write_manifest_file().await?);
            }
            let writer = file_io.new_output(&list_path)?.writer().await?;
            let parent_id = parent.as_ref().map(|p| p.snapshot_id());
            // v3: the snapshot's rows get ids from the table's next-row-id on.
            let first_row_id = (version == FormatVersion::V3).then(|| md.next_row_id());
            let mut lw = match version {
                FormatVersion::V1 => ManifestListWriter::v1(writer, snap_id, parent_id),
                FormatVersion::V2 => ManifestListWriter::v2(writer, snap_id, parent_id, seq),
                FormatVersion::V3 => {
                    ManifestListWriter::v3(writer, snap_id, parent_id, seq, first_row_id)
                }
            };
            lw.add_manifests(manifests.into_iter())?;
            let next_row_id = lw.next_row_id();
            lw.close().await?;
            macro_rules! snapshot {
                ($b:expr) => {
                    $b.with_snapshot_id(snap_id)
                        .with_parent_snapshot_id(parent_id)
                        .with_sequence_number(seq)
                        .with_timestamp_ms(now_ms())
                        .with_manifest_list(list_path.clone())
                        .with_schema_id(schema.schema_id())
                        .with_summary(Summary {
                            operation,
                            additional_properties: HashMap::new(),
                        })
                        .build()
                };
            }
            iceberg::Result::Ok(match (first_row_id, next_row_id) {
                (Some(first), Some(next)) => {
                    snapshot!(Snapshot::builder().with_row_range(first, next - first))
                }
                _ => snapshot!(Snapshot::builder()),
            })
        })
        .expect("hand snapshot");
        let branch = branch.to_string();
        self.commit_metadata(move |b| b.set_branch_snapshot(snapshot, &branch));
        self.snapshot_ids.push(snap_id);
        self.record_data(&data, snap_id, seq);
        (snap_id, seq)
    }

    /// Write a position-delete file of `(file_path, pos)` rows (sorted here as the spec asks).
    pub(crate) fn write_pos_deletes(
        &mut self,
        mut rows: Vec<(String, i64)>,
        partition: Option<PartitionKey>,
        referenced: Option<String>,
    ) -> (DataFile, RecordBatch) {
        rows.sort();
        let pos_schema = Arc::new(
            Schema::builder()
                .with_fields(vec![
                    delete_file_path_field().clone(),
                    delete_file_pos_field().clone(),
                ])
                .build()
                .expect("pos schema"),
        );
        let arrow = arrow_schema_of(&pos_schema);
        let batch = RecordBatch::try_new(
            arrow,
            vec![
                Arc::new(StringArray::from(
                    rows.iter().map(|r| r.0.as_str()).collect::<Vec<_>>(),
                )),
                Arc::new(Int64Array::from(
                    rows.iter().map(|r| r.1).collect::<Vec<_>>(),
                )),
            ],
        )
        .expect("pos batch");
        let tag = self.next_tag("posdel");
        let file_io = self.table.file_io().clone();
        let loc = DefaultLocationGenerator::new(self.table.metadata()).expect("location generator");
        let builders = block_on(async {
            let mut rw = RollingFileWriterBuilder::new_with_default_file_size(
                ParquetWriterBuilder::new(writer_props(1 << 20), pos_schema),
                file_io,
                loc,
                DefaultFileNameGenerator::new(tag, None, DataFileFormat::Parquet),
            )
            .build();
            rw.write(&partition, &batch).await?;
            rw.close().await
        })
        .expect("write position deletes");
        assert_eq!(builders.len(), 1);
        let mut b = builders.into_iter().next().unwrap();
        b.content(DataContentType::PositionDeletes)
            .referenced_data_file(referenced);
        if let Some(pk) = &partition {
            b.partition(pk.data().clone())
                .partition_spec_id(pk.spec().spec_id());
        }
        (b.build().expect("position delete data file"), batch)
    }

    /// Write an equality-delete file on `eq_ids` from rows of the current schema (the writer
    /// projects them to the equality columns).
    fn write_eq_deletes(
        &mut self,
        eq_ids: Vec<i32>,
        full_rows: &RecordBatch,
        partition: Option<PartitionKey>,
    ) -> (DataFile, RecordBatch) {
        let schema = self.schema();
        let cfg = EqualityDeleteWriterConfig::new(eq_ids, schema).expect("eq config");
        let del_schema = Arc::new(
            iceberg::arrow::arrow_schema_to_schema(cfg.projected_arrow_schema_ref())
                .expect("eq schema"),
        );
        let proj_names: Vec<String> = cfg
            .projected_arrow_schema_ref()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let tag = self.next_tag("eqdel");
        let file_io = self.table.file_io().clone();
        let loc = DefaultLocationGenerator::new(self.table.metadata()).expect("location generator");
        let files = block_on(async {
            let rolling = RollingFileWriterBuilder::new_with_default_file_size(
                ParquetWriterBuilder::new(writer_props(1 << 20), del_schema),
                file_io,
                loc,
                DefaultFileNameGenerator::new(tag, None, DataFileFormat::Parquet),
            );
            let mut w = EqualityDeleteFileWriterBuilder::new(rolling, cfg)
                .build(partition)
                .await?;
            w.write(full_rows.clone()).await?;
            w.close().await
        })
        .expect("write equality deletes");
        assert_eq!(files.len(), 1);
        let names: Vec<&str> = proj_names.iter().map(|s| s.as_str()).collect();
        (
            files.into_iter().next().unwrap(),
            project(full_rows, &names),
        )
    }

    /// Commit delete files (position and/or equality) as a hand-made overwrite snapshot on main.
    fn commit_deletes(&mut self, deletes: Vec<(DataFile, RecordBatch)>) -> i64 {
        let files: Vec<DataFile> = deletes.iter().map(|(f, _)| f.clone()).collect();
        let (snap, seq) =
            self.commit_snapshot(MAIN_BRANCH, vec![], files, true, Operation::Overwrite);
        for (f, rows) in deletes {
            let kind = match f.content_type() {
                DataContentType::PositionDeletes => DeleteKind::Position,
                DataContentType::EqualityDeletes => {
                    DeleteKind::Equality(f.equality_ids().expect("equality ids"))
                }
                DataContentType::Data => unreachable!(),
            };
            self.delete_files.push(WrittenDelete {
                path: f.file_path().to_string(),
                local_path: local_path(f.file_path()),
                snapshot_id: snap,
                sequence_number: seq,
                kind,
                rows,
                referenced_data_file: f.referenced_data_file(),
                partition: f.partition().clone(),
            });
        }
        snap
    }

    /// Write `version-hint.text`, load the newest metadata with `StaticTable`, and check that the
    /// newest file on disk is the catalog's current one.
    pub(crate) fn finish(self) -> Fixture {
        let metadata_location = self
            .table
            .metadata_location()
            .expect("location")
            .to_string();
        let table_location = self.table.metadata().location().to_string();
        let table_root = local_path(&table_location);
        let files = metadata_files(&table_root);
        let (newest_version, newest) = files.last().expect("metadata files").clone();
        assert_eq!(
            newest,
            local_path(&metadata_location),
            "{}: newest metadata file is not the current one",
            self.name
        );
        std::fs::write(
            table_root.join("metadata").join("version-hint.text"),
            newest_version.to_string(),
        )
        .expect("version hint");
        let table = block_on(StaticTable::from_metadata_file(
            &metadata_location,
            self.ident.clone(),
            FileIO::new_with_fs(),
        ))
        .expect("StaticTable::from_metadata_file")
        .into_table();
        Fixture {
            name: self.name,
            dir: self.dir,
            table_root,
            table_location,
            metadata_location,
            table,
            snapshot_ids: self.snapshot_ids,
            refs: self.refs,
            data_files: self.data_files,
            delete_files: self.delete_files,
            removed_files: vec![],
            expected: self.expected,
        }
    }
}

pub(crate) fn prim(p: PrimitiveType) -> Type {
    Type::Primitive(p)
}

pub(crate) fn opt(id: i32, name: &str, t: Type) -> NestedFieldRef {
    NestedField::optional(id, name, t).into()
}

pub(crate) fn req(id: i32, name: &str, t: Type) -> NestedFieldRef {
    NestedField::required(id, name, t).into()
}

pub(crate) fn schema_of(fields: Vec<NestedFieldRef>) -> Schema {
    Schema::builder()
        .with_schema_id(0)
        .with_fields(fields)
        .build()
        .expect("schema")
}

pub(crate) fn concat_rows(schema: &SchemaRef, files: &[(DataFile, RecordBatch)]) -> RecordBatch {
    let batches: Vec<RecordBatch> = files.iter().map(|(_, b)| b.clone()).collect();
    concat(schema, &batches)
}

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/// Columns of [`primitives`], in schema order.
pub const PRIMITIVE_COLUMNS: &[&str] = &[
    "id", "i", "l", "f", "d", "dec", "dt", "tm", "ts", "tstz", "s", "b", "bin", "u", "fx",
];

fn primitives_schema() -> Schema {
    schema_of(vec![
        req(1, "id", prim(PrimitiveType::Long)),
        opt(2, "i", prim(PrimitiveType::Int)),
        opt(3, "l", prim(PrimitiveType::Long)),
        opt(4, "f", prim(PrimitiveType::Float)),
        opt(5, "d", prim(PrimitiveType::Double)),
        opt(6, "dec", Type::decimal(10, 2).unwrap()),
        opt(7, "dt", prim(PrimitiveType::Date)),
        opt(8, "tm", prim(PrimitiveType::Time)),
        opt(9, "ts", prim(PrimitiveType::Timestamp)),
        opt(10, "tstz", prim(PrimitiveType::Timestamptz)),
        opt(11, "s", prim(PrimitiveType::String)),
        opt(12, "b", prim(PrimitiveType::Boolean)),
        opt(13, "bin", prim(PrimitiveType::Binary)),
        opt(14, "u", prim(PrimitiveType::Uuid)),
        opt(15, "fx", prim(PrimitiveType::Fixed(3))),
    ])
}

/// Rows `first..first+n` of the primitives data, in `schema` (every optional column is null
/// on every 7th row, at a different phase per column).
pub fn primitives_batch(schema: &SchemaRef, first: i64, n: usize) -> RecordBatch {
    let cols: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(k, f)| {
            let vals: Vec<V> = (first..first + n as i64)
                .map(|g| {
                    if k > 0 && (g + k as i64) % 7 == 0 {
                        return V::Null;
                    }
                    let mut rng = Rng::new(g as u64 * 31 + k as u64);
                    match f.name().as_str() {
                        "id" => V::I64(g),
                        "i" => V::I32((g * 7 % 1000) as i32 - 500),
                        "l" => V::I64(g * 1_000_003 - 5_000_000_000),
                        "f" => V::F32(g as f32 * 0.25 - 10.0),
                        "d" => V::F64(g as f64 * 1.5 - 100.0),
                        "dec" => V::Dec((g * 37 % 100_000) as i128 - 50_000),
                        "dt" => V::I32(BASE_DAY + (g % 400) as i32 - 200),
                        "tm" => V::I64(g * 1_000_003 % 86_400_000_000),
                        "ts" => V::I64(BASE_TS + g * 3_600_000_000),
                        "tstz" => V::I64(BASE_TS - g * 60_000_000),
                        "s" => V::Str(format!("s{:05}", g * 31 % 10_007)),
                        "b" => V::Bool(g % 3 == 0),
                        "bin" => V::Bytes((0..(g % 5)).map(|i| (g + i) as u8).collect()),
                        "u" => V::Bytes((0..16).map(|_| rng.next_u64() as u8).collect()),
                        "fx" => V::Bytes(vec![g as u8, (g >> 8) as u8, 0xAB]),
                        other => panic!("unknown column {other}"),
                    }
                })
                .collect();
            build_array(f.data_type(), &vals)
        })
        .collect();
    RecordBatch::try_new(schema.clone(), cols).expect("primitives batch")
}

/// Unpartitioned v2 table of every primitive type (with nulls): `files` data files of
/// `rows_per_file` rows, `row_group_rows` rows per row group, appended in one snapshot.
/// Row `g` (global, file-major) has `id = g`.
pub fn primitives(files: usize, rows_per_file: usize, row_group_rows: usize) -> Fixture {
    let mut h = Harness::new(
        "primitives",
        primitives_schema(),
        None,
        HashMap::new(),
        FormatVersion::V2,
    );
    let arrow = h.arrow_schema();
    let mut written = vec![];
    for i in 0..files {
        let b = primitives_batch(&arrow, (i * rows_per_file) as i64, rows_per_file);
        written.push(h.write_data(&b, None, writer_props(row_group_rows)));
    }
    let snap = h.append(written.clone());
    h.expected.insert(snap, concat_rows(&arrow, &written));
    h.finish()
}

/// Like [`primitives`], then one data file (the first) deleted from disk: scanning must fail.
pub fn missing_data_file() -> Fixture {
    let mut fx = primitives(2, 50, 20);
    fx.name = "missing_data_file";
    let victim = fx.data_files[0].clone();
    std::fs::remove_file(&victim.local_path).expect("remove data file");
    fx.removed_files.push(victim.path);
    fx
}

/// Identity partition values of the constants-only file in [`partitioned_identity`].
pub const CONSTANT_PARTITION: (i32, &str, i32) = (7, "ap", BASE_DAY + 2);

/// v2 table partitioned by `identity(cat: int)`, `identity(region: string)`,
/// `identity(day: date)`; columns `id long (required), cat, region, day, v double`.
///
/// Snapshot 1: `rows_per_partition` rows in each of (1,"eu",BASE_DAY), (2,"us",BASE_DAY+1) and
/// (3,NULL,BASE_DAY) (a null identity partition value), one file each.
/// Snapshot 2: one file partitioned as [`CONSTANT_PARTITION`] whose Parquet file contains only
/// `id` and `v` (as files imported from Hive-style layouts do): per the spec (column projection
/// rule 1) its `cat`/`region`/`day` come from the partition tuple.
pub fn partitioned_identity(rows_per_partition: usize) -> Fixture {
    let schema = schema_of(vec![
        req(1, "id", prim(PrimitiveType::Long)),
        opt(2, "cat", prim(PrimitiveType::Int)),
        opt(3, "region", prim(PrimitiveType::String)),
        opt(4, "day", prim(PrimitiveType::Date)),
        opt(5, "v", prim(PrimitiveType::Double)),
    ]);
    let spec = UnboundPartitionSpec::builder()
        .add_partition_field(2, "cat", Transform::Identity)
        .and_then(|b| b.add_partition_field(3, "region", Transform::Identity))
        .and_then(|b| b.add_partition_field(4, "day", Transform::Identity))
        .expect("spec")
        .build();
    let mut h = Harness::new(
        "partitioned_identity",
        schema,
        Some(spec),
        HashMap::new(),
        FormatVersion::V2,
    );
    let arrow = h.arrow_schema();
    let parts: [(i32, Option<&str>, i32); 3] = [
        (1, Some("eu"), BASE_DAY),
        (2, Some("us"), BASE_DAY + 1),
        (3, None, BASE_DAY),
    ];
    let mut rows = vec![];
    let mut id = 0i64;
    for (cat, region, day) in parts {
        for _ in 0..rows_per_partition {
            rows.push(row(vec![
                ("id", V::I64(id)),
                ("cat", V::I32(cat)),
                ("region", region.map(s).unwrap_or(V::Null)),
                ("day", V::I32(day)),
                (
                    "v",
                    if id % 5 == 4 {
                        V::Null
                    } else {
                        V::F64(id as f64 / 4.0)
                    },
                ),
            ]));
            id += 1;
        }
    }
    let batch = batch_from_rows(&arrow, &rows);
    let files = h.write_partitioned(&batch, writer_props(1 << 20));
    assert_eq!(files.len(), 3, "one file per partition");
    let s1 = h.append(files);
    h.expected.insert(s1, batch_from_rows(&arrow, &rows));

    // The constants-only file: written with a schema of just `id` and `v` (same field ids).
    let table_schema = h.schema();
    let reduced = Arc::new(
        Schema::builder()
            .with_fields(
                table_schema
                    .as_struct()
                    .fields()
                    .iter()
                    .filter(|f| f.name == "id" || f.name == "v")
                    .cloned(),
            )
            .build()
            .expect("reduced schema"),
    );
    let (cat, region, day) = CONSTANT_PARTITION;
    let key = PartitionKey::new(
        h.table.metadata().default_partition_spec().as_ref().clone(),
        table_schema.clone(),
        Struct::from_iter([
            Some(Literal::int(cat)),
            Some(Literal::string(region)),
            Some(Literal::date(day)),
        ]),
    );
    let const_rows: Vec<Row> = (0..rows_per_partition as i64)
        .map(|i| row(vec![("id", V::I64(1000 + i)), ("v", V::F64(i as f64))]))
        .collect();
    let file_batch = batch_from_rows(&arrow_schema_of(&reduced), &const_rows);
    let written = h.write_data_with(&file_batch, reduced, Some(key), writer_props(1 << 20));
    let s2 = h.append(vec![written]);
    let mut all = rows.clone();
    all.extend(const_rows.into_iter().map(|mut r| {
        r.extend(row(vec![
            ("cat", V::I32(cat)),
            ("region", s(region)),
            ("day", V::I32(day)),
        ]));
        r
    }));
    h.expected.insert(s2, batch_from_rows(&arrow, &all));
    h.finish()
}

/// v2 table partitioned by `bucket[4](id)` and `day(ts)` (ts: timestamptz, null on every 9th
/// row: a null partition value); columns `id long (required), ts, name string`.
pub fn partitioned_transforms(rows: usize) -> Fixture {
    let schema = schema_of(vec![
        req(1, "id", prim(PrimitiveType::Long)),
        opt(2, "ts", prim(PrimitiveType::Timestamptz)),
        opt(3, "name", prim(PrimitiveType::String)),
    ]);
    let spec = UnboundPartitionSpec::builder()
        .add_partition_field(1, "id_bucket", Transform::Bucket(4))
        .and_then(|b| b.add_partition_field(2, "ts_day", Transform::Day))
        .expect("spec")
        .build();
    let mut h = Harness::new(
        "partitioned_transforms",
        schema,
        Some(spec),
        HashMap::new(),
        FormatVersion::V2,
    );
    let arrow = h.arrow_schema();
    let rows: Vec<Row> = (0..rows as i64)
        .map(|i| {
            row(vec![
                ("id", V::I64(i)),
                (
                    "ts",
                    if i % 9 == 8 {
                        V::Null
                    } else {
                        V::I64(BASE_TS + (i % 3) * 86_400_000_000 + i * 1_000_000)
                    },
                ),
                ("name", V::Str(format!("n{i}"))),
            ])
        })
        .collect();
    let batch = batch_from_rows(&arrow, &rows);
    let files = h.write_partitioned(&batch, writer_props(1 << 20));
    let s1 = h.append(files);
    h.expected.insert(s1, batch);
    h.finish()
}

/// Rows of the nested fixture: struct with a nested struct, list<struct>, map<string,long>,
/// with nulls at every level.
fn nested_rows(n: usize) -> Vec<Row> {
    (0..n as i64)
        .map(|i| {
            let st = match i % 5 {
                0 => V::Null,
                1 => V::Struct(row(vec![
                    ("a", V::I32(i as i32)),
                    ("b", V::Str(format!("b{i}"))),
                ])),
                _ => V::Struct(row(vec![
                    (
                        "a",
                        if i % 7 == 0 {
                            V::Null
                        } else {
                            V::I32(i as i32)
                        },
                    ),
                    ("b", V::Str(format!("b{i}"))),
                    (
                        "inner",
                        V::Struct(row(vec![
                            ("x", V::F64(i as f64 + 0.5)),
                            (
                                "y",
                                if i % 2 == 0 {
                                    V::Null
                                } else {
                                    V::Str(format!("y{i}"))
                                },
                            ),
                        ])),
                    ),
                ])),
            };
            let tags = match i % 4 {
                0 => V::Null,
                1 => V::List(vec![]),
                _ => V::List(
                    (0..(i % 3 + 1))
                        .map(|j| {
                            if j == 1 && i % 2 == 0 {
                                V::Null
                            } else {
                                V::Struct(row(vec![
                                    ("k", V::Str(format!("k{i}.{j}"))),
                                    (
                                        "v",
                                        if j == 2 {
                                            V::Null
                                        } else {
                                            V::I32((i * 10 + j) as i32)
                                        },
                                    ),
                                ]))
                            }
                        })
                        .collect(),
                ),
            };
            let props = match i % 6 {
                0 => V::Null,
                1 => V::Map(vec![]),
                _ => V::Map(
                    (0..(i % 3 + 1))
                        .map(|j| {
                            (
                                V::Str(format!("p{j}")),
                                if j == 1 { V::Null } else { V::I64(i * 100 + j) },
                            )
                        })
                        .collect(),
                ),
            };
            row(vec![
                ("id", V::I64(i)),
                ("s", st),
                ("tags", tags),
                ("props", props),
            ])
        })
        .collect()
}

/// v2 table with nested types: `id long, s struct<a int, b string, inner struct<x double,
/// y string>>, tags list<struct<k string, v int>>, props map<string, long>`; two files.
pub fn nested(rows_per_file: usize) -> Fixture {
    let inner = Type::Struct(StructType::new(vec![
        opt(6, "x", prim(PrimitiveType::Double)),
        opt(7, "y", prim(PrimitiveType::String)),
    ]));
    let schema = schema_of(vec![
        req(1, "id", prim(PrimitiveType::Long)),
        opt(
            2,
            "s",
            Type::Struct(StructType::new(vec![
                opt(3, "a", prim(PrimitiveType::Int)),
                opt(4, "b", prim(PrimitiveType::String)),
                opt(5, "inner", inner),
            ])),
        ),
        opt(
            8,
            "tags",
            Type::List(ListType::new(
                NestedField::list_element(
                    9,
                    Type::Struct(StructType::new(vec![
                        opt(10, "k", prim(PrimitiveType::String)),
                        opt(11, "v", prim(PrimitiveType::Int)),
                    ])),
                    false,
                )
                .into(),
            )),
        ),
        opt(
            12,
            "props",
            Type::Map(MapType::new(
                NestedField::map_key_element(13, prim(PrimitiveType::String)).into(),
                NestedField::map_value_element(14, prim(PrimitiveType::Long), false).into(),
            )),
        ),
    ]);
    let mut h = Harness::new("nested", schema, None, HashMap::new(), FormatVersion::V2);
    let arrow = h.arrow_schema();
    let rows = nested_rows(rows_per_file * 2);
    let mut files = vec![];
    for chunk in rows.chunks(rows_per_file) {
        let b = batch_from_rows(&arrow, chunk);
        files.push(h.write_data(&b, None, writer_props(rows_per_file.div_ceil(2).max(1))));
    }
    let s1 = h.append(files);
    h.expected.insert(s1, batch_from_rows(&arrow, &rows));
    h.finish()
}

/// The `initial-default` of `with_default` in [`evolution`].
pub const INITIAL_DEFAULT: i32 = 42;

/// A logical row of the evolution fixture; `v1` adds the columns introduced by schema 1.
fn evo_row(i: i64, v1: bool) -> Row {
    let mut st = row(vec![("x", V::I32(i as i32))]);
    if v1 {
        st.push((
            "y".into(),
            if i % 3 == 0 {
                V::Null
            } else {
                V::Str(format!("y{i}"))
            },
        ));
    }
    let mut r = row(vec![
        ("id", V::I64(i)),
        (
            "a",
            if i % 5 == 0 {
                V::Null
            } else {
                V::I32(i as i32 * 3)
            },
        ),
        (
            "f",
            if i % 6 == 0 {
                V::Null
            } else {
                V::F32(i as f32 * 0.5)
            },
        ),
        (
            "dec",
            if i % 4 == 0 {
                V::Null
            } else {
                V::Dec(i as i128 * 101)
            },
        ),
        (
            "name",
            if i % 7 == 0 {
                V::Null
            } else {
                V::Str(format!("n{i}"))
            },
        ),
        ("drop_me", V::Str(format!("d{i}"))),
        ("s", if i % 8 == 0 { V::Null } else { V::Struct(st) }),
    ]);
    if v1 {
        r.push((
            "added".into(),
            if i % 2 == 0 {
                V::Null
            } else {
                V::Str(format!("add{i}"))
            },
        ));
        r.push(("with_default".into(), V::I32(100 + i as i32)));
    }
    r
}

/// A logical row seen through schema `version` per the spec: `with_default` missing from the
/// file reads as its initial default, `name` is called `full_name` from schema 2 on (values
/// for other missing columns are null, which `batch_from_rows` does for absent names).
fn evo_view(mut r: Row, version: u32) -> Row {
    if version >= 1 && !r.iter().any(|(n, _)| n == "with_default") {
        r.push(("with_default".into(), V::I32(INITIAL_DEFAULT)));
    }
    if version >= 2 {
        for (n, _) in r.iter_mut() {
            if n == "name" {
                *n = "full_name".into();
            }
        }
    }
    r
}

/// Schema evolution across snapshots (format v3, because `initial-default` is a v3 feature;
/// every commit here is a catalog transaction or a metadata-only hand commit).
///
/// * schema 0: `id long (req), a int, f float, dec decimal(9,2), name string, drop_me string,
///   s struct<x int>`; snapshot 1 appends file A (ids `0..n`).
/// * schema 1 (`Transaction::update_schema`): adds `added string`, `with_default int required`
///   with `initial-default` 42 (`AddColumn::required`), and the nested `s.y string`;
///   snapshot 2 appends file B (ids `1000..`).
/// * schema 2 (hand-committed metadata, no action exists for these): `added` moved first,
///   `a` int→long, `f` float→double, `dec` decimal(9,2)→decimal(18,2), `name` renamed
///   `full_name`, `drop_me` dropped; snapshot 3 appends file C (ids `2000..`).
///
/// `expected` holds each snapshot in its own schema (iceberg-rust scans a snapshot with the
/// schema recorded on it).
pub fn evolution(rows_per_file: usize) -> Fixture {
    let schema0 = schema_of(vec![
        req(1, "id", prim(PrimitiveType::Long)),
        opt(2, "a", prim(PrimitiveType::Int)),
        opt(3, "f", prim(PrimitiveType::Float)),
        opt(4, "dec", Type::decimal(9, 2).unwrap()),
        opt(5, "name", prim(PrimitiveType::String)),
        opt(6, "drop_me", prim(PrimitiveType::String)),
        opt(
            7,
            "s",
            Type::Struct(StructType::new(vec![opt(8, "x", prim(PrimitiveType::Int))])),
        ),
    ]);
    let mut h = Harness::new(
        "evolution",
        schema0,
        None,
        HashMap::new(),
        FormatVersion::V3,
    );
    let n = rows_per_file as i64;
    let props = writer_props(rows_per_file.div_ceil(2).max(1));

    let a_rows: Vec<Row> = (0..n).map(|i| evo_row(i, false)).collect();
    let arrow0 = h.arrow_schema();
    let fa = h.write_data(&batch_from_rows(&arrow0, &a_rows), None, props.clone());
    let s1 = h.append(vec![fa]);
    h.expected.insert(s1, batch_from_rows(&arrow0, &a_rows));

    h.update_schema(
        vec![
            AddColumn::optional("added", prim(PrimitiveType::String)),
            AddColumn::required(
                "with_default",
                prim(PrimitiveType::Int),
                Literal::int(INITIAL_DEFAULT),
            ),
            AddColumn::builder()
                .parent("s")
                .name("y")
                .field_type(prim(PrimitiveType::String))
                .build(),
        ],
        vec![],
    );
    let arrow1 = h.arrow_schema();
    let b_rows: Vec<Row> = (1000..1000 + n).map(|i| evo_row(i, true)).collect();
    let fb = h.write_data(&batch_from_rows(&arrow1, &b_rows), None, props.clone());
    let s2 = h.append(vec![fb]);
    let mut at2: Vec<Row> = a_rows.iter().cloned().map(|r| evo_view(r, 1)).collect();
    at2.extend(b_rows.iter().cloned().map(|r| evo_view(r, 1)));
    h.expected.insert(s2, batch_from_rows(&arrow1, &at2));

    // Schema 2 by hand, keeping every field id.
    let s1_schema = h.schema();
    let field = |name: &str| -> NestedField {
        s1_schema
            .field_by_name(name)
            .unwrap_or_else(|| panic!("no field {name}"))
            .as_ref()
            .clone()
    };
    let retype = |name: &str, t: Type| -> NestedFieldRef {
        let mut f = field(name);
        f.field_type = Box::new(t);
        f.into()
    };
    let mut renamed = field("name");
    renamed.name = "full_name".into();
    let schema2 = Schema::builder()
        .with_schema_id(2)
        .with_fields(vec![
            field("added").into(),
            field("id").into(),
            retype("a", prim(PrimitiveType::Long)),
            retype("f", prim(PrimitiveType::Double)),
            retype("dec", Type::decimal(18, 2).unwrap()),
            renamed.into(),
            field("with_default").into(),
            field("s").into(),
        ])
        .build()
        .expect("schema 2");
    h.commit_metadata(move |b| b.add_current_schema(schema2));
    let arrow2 = h.arrow_schema();
    let c_rows: Vec<Row> = (2000..2000 + n)
        .map(|i| evo_view(evo_row(i, true), 2))
        .collect();
    let fc = h.write_data(&batch_from_rows(&arrow2, &c_rows), None, props);
    let s3 = h.append(vec![fc]);
    let mut at3: Vec<Row> = at2.into_iter().map(|r| evo_view(r, 2)).collect();
    at3.extend(c_rows);
    h.expected.insert(s3, batch_from_rows(&arrow2, &at3));
    h.finish()
}

/// The name mapping [`name_mapped`] stores in `schema.name-mapping.default`, for a schema whose
/// ids are looked up by name: `id` (alias `ident`), `name`, `s` {`a`, `b` (alias `bee`)},
/// `score`.
pub fn name_mapping_json(schema: &Schema) -> String {
    let id = |n: &str| {
        schema
            .field_id_by_name(n)
            .unwrap_or_else(|| panic!("no field {n}"))
    };
    serde_json::json!([
        {"field-id": id("id"), "names": ["id", "ident"]},
        {"field-id": id("name"), "names": ["name"]},
        {"field-id": id("s"), "names": ["s"], "fields": [
            {"field-id": id("s.a"), "names": ["a"]},
            {"field-id": id("s.b"), "names": ["b", "bee"]}
        ]},
        {"field-id": id("score"), "names": ["score"]}
    ])
    .to_string()
}

/// Write `batch` with parquet's own `ArrowWriter` (no field ids) under `<table>/data/` and
/// describe it with a hand-built `DataFile` (record count and size only, no column metrics).
fn write_plain_parquet(h: &mut Harness, batch: &RecordBatch) -> (DataFile, RecordBatch) {
    let tag = h.next_tag("noids");
    let location = h.table.metadata().location().to_string();
    let uri = format!("{location}/data/{tag}.parquet");
    let local = local_path(&uri);
    std::fs::create_dir_all(local.parent().unwrap()).expect("data dir");
    let mut w = ArrowWriter::try_new(
        std::fs::File::create(&local).expect("create"),
        batch.schema(),
        Some(writer_props(1 << 20)),
    )
    .expect("ArrowWriter");
    w.write(batch).expect("write");
    w.close().expect("close");
    let size = std::fs::metadata(&local).unwrap().len();
    let df = DataFileBuilder::default()
        .content(DataContentType::Data)
        .file_path(uri)
        .file_format(DataFileFormat::Parquet)
        .file_size_in_bytes(size)
        .record_count(batch.num_rows() as u64)
        .partition(Struct::empty())
        .partition_spec_id(h.table.metadata().default_partition_spec_id())
        .build()
        .expect("hand-built DataFile");
    (df, batch.clone())
}

fn plain_field(name: &str, dt: DataType) -> FieldRef {
    Arc::new(Field::new(name, dt, true))
}

/// Files written without Parquet field ids (parquet's `ArrowWriter`), committed by
/// `fast_append` with hand-built `DataFile`s. Table schema (all optional): `id long,
/// name string, s struct<a int, b string>, score double`.
///
/// * file 1 (ids `0..n`): the table's names, in table order.
/// * file 2 (ids `100..100+n`, only with `with_mapping`): columns `score, ident, s{bee, a},
///   junk, name` — aliases `ident`/`bee`, different top-level and nested order, and a column
///   the mapping does not know.
///
/// With `with_mapping`, `schema.name-mapping.default` is [`name_mapping_json`] and the spec
/// answer is every value where it belongs. Without it the spec says (column projection rule
/// 4) every column of such a file is null; `expected` then holds that all-null answer (Java
/// and iceberg-rust instead assign fallback ids by position, see the tests).
pub fn name_mapped(with_mapping: bool, rows_per_file: usize) -> Fixture {
    let schema = schema_of(vec![
        opt(1, "id", prim(PrimitiveType::Long)),
        opt(2, "name", prim(PrimitiveType::String)),
        opt(
            3,
            "s",
            Type::Struct(StructType::new(vec![
                opt(4, "a", prim(PrimitiveType::Int)),
                opt(5, "b", prim(PrimitiveType::String)),
            ])),
        ),
        opt(6, "score", prim(PrimitiveType::Double)),
    ]);
    let name = if with_mapping {
        "name_mapped"
    } else {
        "no_ids_no_mapping"
    };
    let mut h = Harness::new(name, schema, None, HashMap::new(), FormatVersion::V2);
    if with_mapping {
        let json = name_mapping_json(&h.schema());
        serde_json::from_str::<iceberg::spec::NameMapping>(&json).expect("valid name mapping");
        h.set_properties(vec![(DEFAULT_SCHEMA_NAME_MAPPING.to_string(), json)]);
    }
    let n = rows_per_file as i64;
    let logical = |i: i64| -> Row {
        row(vec![
            ("id", V::I64(i)),
            (
                "name",
                if i % 4 == 3 {
                    V::Null
                } else {
                    V::Str(format!("nm{i}"))
                },
            ),
            (
                "s",
                if i % 5 == 4 {
                    V::Null
                } else {
                    V::Struct(row(vec![
                        ("a", V::I32(i as i32)),
                        ("b", V::Str(format!("b{i}"))),
                    ]))
                },
            ),
            ("score", V::F64(i as f64 * 1.25)),
        ])
    };
    let sab = Fields::from(vec![
        plain_field("a", DataType::Int32),
        plain_field("b", DataType::Utf8),
    ]);
    let f1_schema = Arc::new(ArrowSchema::new(vec![
        plain_field("id", DataType::Int64),
        plain_field("name", DataType::Utf8),
        plain_field("s", DataType::Struct(sab)),
        plain_field("score", DataType::Float64),
    ]));
    let rows1: Vec<Row> = (0..n).map(logical).collect();
    let mut files = vec![write_plain_parquet(
        &mut h,
        &batch_from_rows(&f1_schema, &rows1),
    )];
    let mut all = rows1.clone();
    if with_mapping {
        let s_bee_a = Fields::from(vec![
            plain_field("bee", DataType::Utf8),
            plain_field("a", DataType::Int32),
        ]);
        let f2_schema = Arc::new(ArrowSchema::new(vec![
            plain_field("score", DataType::Float64),
            plain_field("ident", DataType::Int64),
            plain_field("s", DataType::Struct(s_bee_a)),
            plain_field("junk", DataType::Utf8),
            plain_field("name", DataType::Utf8),
        ]));
        let rows2: Vec<Row> = (100..100 + n).map(logical).collect();
        // Same values under the file's own names.
        let file_rows: Vec<Row> = rows2
            .iter()
            .map(|r| {
                r.iter()
                    .map(|(k, v)| match (k.as_str(), v) {
                        ("id", v) => ("ident".to_string(), v.clone()),
                        ("s", V::Struct(st)) => (
                            "s".to_string(),
                            V::Struct(
                                st.iter()
                                    .map(|(k, v)| {
                                        (if k == "b" { "bee".into() } else { k.clone() }, v.clone())
                                    })
                                    .collect(),
                            ),
                        ),
                        (k, v) => (k.to_string(), v.clone()),
                    })
                    .chain([("junk".to_string(), V::Str("junk".into()))])
                    .collect()
            })
            .collect();
        files.push(write_plain_parquet(
            &mut h,
            &batch_from_rows(&f2_schema, &file_rows),
        ));
        all.extend(rows2);
    }
    let snap = h.append(files);
    let arrow = h.arrow_schema();
    let expected = if with_mapping {
        batch_from_rows(&arrow, &all)
    } else {
        batch_from_rows(&arrow, &vec![Row::new(); all.len()])
    };
    h.expected.insert(snap, expected);
    h.finish()
}

/// Columns of [`deletes`]: `id long (req), k1 int, k2 string, v string`.
fn deletes_row(g: i64) -> Row {
    row(vec![
        ("id", V::I64(g)),
        (
            "k1",
            if g % 13 == 0 {
                V::Null
            } else {
                V::I32((g % 10) as i32)
            },
        ),
        (
            "k2",
            if g % 11 == 0 {
                V::Null
            } else {
                s(["x", "y", "z"][(g % 3) as usize])
            },
        ),
        ("v", V::Str(format!("v{g}"))),
    ])
}

/// The equality-delete keys of [`deletes`]: on `k1` alone, and on `(k1, k2)` with a NULL.
pub const EQ_DELETE_K1: &[i32] = &[3];
pub const EQ_DELETE_K1_K2: &[(Option<i32>, Option<&str>)] =
    &[(Some(5), Some("x")), (None, Some("y"))];

/// Does the spec delete this row (`k1`, `k2`) through the equality deletes of [`deletes`]?
/// Per the spec each delete row is an AND of `column = value` predicates, where a NULL delete
/// value stands for `column IS NULL`; a NULL data value never equals a non-null delete value.
pub fn spec_eq_deleted(k1: Option<i32>, k2: Option<&str>) -> bool {
    EQ_DELETE_K1.iter().any(|d| k1 == Some(*d))
        || EQ_DELETE_K1_K2
            .iter()
            .any(|(d1, d2)| k1 == *d1 && k2 == *d2)
}

/// Merge-on-read, format v2, unpartitioned (`id long, k1 int, k2 string, v string`; `id` is
/// the global row number `g`, `k1 = g % 10` (NULL when `g % 13 == 0`), `k2 = x|y|z` by
/// `g % 3` (NULL when `g % 11 == 0`)). Snapshots, in order:
///
/// 1. append data files D0, D1, D2 (`rows_per_file` rows each, `row_group_rows` per row group);
/// 2. position deletes (hand commit, seq 2): P1 targets D0 and D1 (no
///    `referenced_data_file`), P2a and P2b both target D2 (`referenced_data_file` = D2) and
///    overlap;
/// 3. equality deletes (hand commit, seq 3): E1 on `k1` deleting `k1 = 3`, E2 on `(k1, k2)`
///    deleting `(5, 'x')` and `(NULL, 'y')`;
/// 4. append D3 (seq 4) whose rows include those keys: no delete applies to it.
pub fn deletes(rows_per_file: usize, row_group_rows: usize) -> Fixture {
    assert!(rows_per_file >= 24 && row_group_rows >= 2);
    let schema = schema_of(vec![
        req(1, "id", prim(PrimitiveType::Long)),
        opt(2, "k1", prim(PrimitiveType::Int)),
        opt(3, "k2", prim(PrimitiveType::String)),
        opt(4, "v", prim(PrimitiveType::String)),
    ]);
    let mut h = Harness::new("deletes", schema, None, HashMap::new(), FormatVersion::V2);
    let arrow = h.arrow_schema();
    let r = rows_per_file as i64;
    let mut files = vec![];
    for f in 0..3 {
        let rows: Vec<Row> = (f * r..(f + 1) * r).map(deletes_row).collect();
        files.push(h.write_data(
            &batch_from_rows(&arrow, &rows),
            None,
            writer_props(row_group_rows),
        ));
    }
    let paths: Vec<String> = files
        .iter()
        .map(|(f, _)| f.file_path().to_string())
        .collect();
    let s1 = h.append(files);
    let all: Vec<Row> = (0..3 * r).map(deletes_row).collect();
    h.expected.insert(s1, batch_from_rows(&arrow, &all));

    // Position deletes: (file index, positions).
    let rg = row_group_rows as i64;
    let p1: Vec<(usize, i64)> = vec![
        (0, 0),
        (0, 1),
        (0, rg + 1),
        (0, r / 2),
        (0, r - 1),
        (1, 5),
        (1, 6),
        (1, 7),
        (1, r - 2),
    ];
    let p2a: Vec<(usize, i64)> = vec![(2, 0), (2, 2), (2, 4), (2, 10)];
    let p2b: Vec<(usize, i64)> = vec![(2, 4), (2, 10), (2, 11), (2, r - 1)];
    let to_rows = |ps: &[(usize, i64)]| {
        ps.iter()
            .map(|(f, p)| (paths[*f].clone(), *p))
            .collect::<Vec<_>>()
    };
    let d1 = h.write_pos_deletes(to_rows(&p1), None, None);
    let d2a = h.write_pos_deletes(to_rows(&p2a), None, Some(paths[2].clone()));
    let d2b = h.write_pos_deletes(to_rows(&p2b), None, Some(paths[2].clone()));
    let s2 = h.commit_deletes(vec![d1, d2a, d2b]);
    let pos_deleted: std::collections::HashSet<i64> = p1
        .iter()
        .chain(&p2a)
        .chain(&p2b)
        .map(|(f, p)| *f as i64 * r + p)
        .collect();
    let after_pos: Vec<Row> = all
        .iter()
        .enumerate()
        .filter(|(g, _)| !pos_deleted.contains(&(*g as i64)))
        .map(|(_, r)| r.clone())
        .collect();
    h.expected.insert(s2, batch_from_rows(&arrow, &after_pos));

    // Equality deletes. The writer takes rows of the full schema and keeps the key columns.
    let k1_id = h.schema().field_id_by_name("k1").unwrap();
    let k2_id = h.schema().field_id_by_name("k2").unwrap();
    let e1_rows: Vec<Row> = EQ_DELETE_K1
        .iter()
        .map(|k| row(vec![("id", V::I64(-1)), ("k1", V::I32(*k))]))
        .collect();
    let e1 = h.write_eq_deletes(vec![k1_id], &batch_from_rows(&arrow, &e1_rows), None);
    let e2_rows: Vec<Row> = EQ_DELETE_K1_K2
        .iter()
        .map(|(a, b)| {
            row(vec![
                ("id", V::I64(-1)),
                ("k1", a.map(V::I32).unwrap_or(V::Null)),
                ("k2", b.map(s).unwrap_or(V::Null)),
            ])
        })
        .collect();
    let e2 = h.write_eq_deletes(vec![k1_id, k2_id], &batch_from_rows(&arrow, &e2_rows), None);
    let s3 = h.commit_deletes(vec![e1, e2]);
    let key = |r: &Row| -> (Option<i32>, Option<String>) {
        let k1 = match get(r, "k1") {
            V::I32(x) => Some(*x),
            _ => None,
        };
        let k2 = match get(r, "k2") {
            V::Str(x) => Some(x.clone()),
            _ => None,
        };
        (k1, k2)
    };
    let after_eq: Vec<Row> = after_pos
        .iter()
        .filter(|r| {
            let (k1, k2) = key(r);
            !spec_eq_deleted(k1, k2.as_deref())
        })
        .cloned()
        .collect();
    h.expected.insert(s3, batch_from_rows(&arrow, &after_eq));

    // D3, appended after the equality deletes, holds deleted keys on purpose.
    let d3_rows: Vec<Row> = (3 * r..4 * r).map(deletes_row).collect();
    assert!(d3_rows.iter().any(|r| {
        let (k1, k2) = key(r);
        spec_eq_deleted(k1, k2.as_deref())
    }));
    let d3 = h.write_data(
        &batch_from_rows(&arrow, &d3_rows),
        None,
        writer_props(row_group_rows),
    );
    let s4 = h.append(vec![d3]);
    let mut at4 = after_eq;
    at4.extend(d3_rows);
    h.expected.insert(s4, batch_from_rows(&arrow, &at4));
    h.finish()
}

/// Time travel and refs (v2): `id long, v string`.
/// Snapshots: S1 appends ids 0..10, S2 ids 10..20, S3 ids 20..30 (main = S3); tag `t1` → S1;
/// branch `b1` created at S2, then a hand commit on `b1` only (S4, parent S2) adding ids
/// 100..105. `refs` = `[("t1", S1), ("b1", S4)]`.
pub fn time_travel() -> Fixture {
    let schema = schema_of(vec![
        req(1, "id", prim(PrimitiveType::Long)),
        opt(2, "v", prim(PrimitiveType::String)),
    ]);
    let mut h = Harness::new(
        "time_travel",
        schema,
        None,
        HashMap::new(),
        FormatVersion::V2,
    );
    let arrow = h.arrow_schema();
    let rows = |ids: std::ops::Range<i64>| -> Vec<Row> {
        ids.map(|i| row(vec![("id", V::I64(i)), ("v", V::Str(format!("t{i}")))]))
            .collect()
    };
    let mut main_rows = vec![];
    let mut snaps = vec![];
    for k in 0..3 {
        let r = rows(k * 10..k * 10 + 10);
        let f = h.write_data(&batch_from_rows(&arrow, &r), None, writer_props(4));
        let id = h.append(vec![f]);
        main_rows.extend(r);
        h.expected.insert(id, batch_from_rows(&arrow, &main_rows));
        snaps.push(id);
    }
    let (s1, s2) = (snaps[0], snaps[1]);
    h.commit_metadata(move |b| {
        b.set_ref(
            "t1",
            SnapshotReference::new(
                s1,
                SnapshotRetention::Tag {
                    max_ref_age_ms: None,
                },
            ),
        )?
        .set_ref(
            "b1",
            SnapshotReference::new(
                s2,
                SnapshotRetention::Branch {
                    min_snapshots_to_keep: None,
                    max_snapshot_age_ms: None,
                    max_ref_age_ms: None,
                },
            ),
        )
    });
    let branch_rows = rows(100..105);
    let f = h.write_data(
        &batch_from_rows(&arrow, &branch_rows),
        None,
        writer_props(4),
    );
    let (s4, _) = h.commit_snapshot("b1", vec![f], vec![], true, Operation::Append);
    let mut at4 = rows(0..20);
    at4.extend(branch_rows);
    h.expected.insert(s4, batch_from_rows(&arrow, &at4));
    h.refs = vec![("t1".into(), s1), ("b1".into(), s4)];
    h.finish()
}

/// A table with no snapshot at all (`id long, v string`).
pub fn empty_table() -> Fixture {
    let schema = schema_of(vec![
        req(1, "id", prim(PrimitiveType::Long)),
        opt(2, "v", prim(PrimitiveType::String)),
    ]);
    Harness::new(
        "empty_table",
        schema,
        None,
        HashMap::new(),
        FormatVersion::V2,
    )
    .finish()
}

/// S1 appends 10 rows; S2 (current, hand commit, operation `delete`) has an empty manifest
/// list: the current snapshot holds no data.
pub fn empty_snapshot() -> Fixture {
    let schema = schema_of(vec![
        req(1, "id", prim(PrimitiveType::Long)),
        opt(2, "v", prim(PrimitiveType::String)),
    ]);
    let mut h = Harness::new(
        "empty_snapshot",
        schema,
        None,
        HashMap::new(),
        FormatVersion::V2,
    );
    let arrow = h.arrow_schema();
    let rows: Vec<Row> = (0..10)
        .map(|i| row(vec![("id", V::I64(i)), ("v", V::Str(format!("e{i}")))]))
        .collect();
    let f = h.write_data(&batch_from_rows(&arrow, &rows), None, writer_props(4));
    let s1 = h.append(vec![f]);
    h.expected.insert(s1, batch_from_rows(&arrow, &rows));
    let (s2, _) = h.commit_snapshot(MAIN_BRANCH, vec![], vec![], false, Operation::Delete);
    h.expected.insert(s2, RecordBatch::new_empty(arrow));
    h.finish()
}

/// Columns of [`bench()`].
pub const BENCH_COLUMNS: &[&str] = &["id", "k", "cat", "amount", "ts", "note"];

fn bench_batch(schema: &SchemaRef, first: i64, n: usize) -> RecordBatch {
    let ids: Vec<i64> = (first..first + n as i64).collect();
    let mut rng = Rng::new(first as u64 ^ 0x5EED);
    let cats = ["alpha", "beta", "gamma", "delta", "epsilon"];
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(ids.clone())),
        Arc::new(Int32Array::from(
            ids.iter()
                .map(|i| {
                    if i % 17 == 0 {
                        None
                    } else {
                        Some((i % 1000) as i32)
                    }
                })
                .collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(
            ids.iter()
                .map(|i| Some(cats[(*i % 5) as usize]))
                .collect::<Vec<_>>(),
        )),
        Arc::new(Float64Array::from(
            ids.iter()
                .map(|i| {
                    if i % 23 == 0 {
                        None
                    } else {
                        Some((rng.below(1_000_000) as f64) / 100.0 + *i as f64 * 0.0)
                    }
                })
                .collect::<Vec<_>>(),
        )),
        Arc::new(
            TimestampMicrosecondArray::from(
                ids.iter()
                    .map(|i| BASE_TS + i * 1_000_003)
                    .collect::<Vec<_>>(),
            )
            .with_timezone("+00:00"),
        ),
        Arc::new(StringArray::from(
            ids.iter()
                .map(|i| {
                    if i % 29 == 0 {
                        None
                    } else {
                        Some(format!("note-{i}-{}", "x".repeat((i % 16) as usize)))
                    }
                })
                .collect::<Vec<_>>(),
        )),
    ];
    RecordBatch::try_new(schema.clone(), cols).expect("bench batch")
}

/// Bench-size merge-on-read table (v2, unpartitioned): `files` data files of `rows_per_file`
/// rows (`id long (req) = global row number, k int, cat string, amount double, ts timestamptz,
/// note string`), `row_group_rows` rows per row group, appended as S1 (no deletes).
/// With `with_deletes`, S2 (hand commit) adds one position-delete file per data file deleting
/// ~10% of its rows (`referenced_data_file` set) and one equality-delete file on `id`
/// deleting ~1% of all rows. Deterministic (seeded); `expected` holds both snapshots.
pub fn bench(
    files: usize,
    rows_per_file: usize,
    row_group_rows: usize,
    with_deletes: bool,
) -> Fixture {
    bench_with(files, rows_per_file, row_group_rows, with_deletes, true)
}

/// [`bench()`]'s table with position deletes only (S2 deletes ~10% of each file's rows, no
/// equality deletes): what pyiceberg 0.12, which refuses equality deletes, can read.
pub fn bench_position_deletes(
    files: usize,
    rows_per_file: usize,
    row_group_rows: usize,
) -> Fixture {
    bench_with(files, rows_per_file, row_group_rows, true, false)
}

fn bench_with(
    files: usize,
    rows_per_file: usize,
    row_group_rows: usize,
    with_deletes: bool,
    equality: bool,
) -> Fixture {
    let schema = schema_of(vec![
        req(1, "id", prim(PrimitiveType::Long)),
        opt(2, "k", prim(PrimitiveType::Int)),
        opt(3, "cat", prim(PrimitiveType::String)),
        opt(4, "amount", prim(PrimitiveType::Double)),
        opt(5, "ts", prim(PrimitiveType::Timestamptz)),
        opt(6, "note", prim(PrimitiveType::String)),
    ]);
    let mut h = Harness::new("bench", schema, None, HashMap::new(), FormatVersion::V2);
    let arrow = h.arrow_schema();
    let mut written = vec![];
    for f in 0..files {
        let b = bench_batch(&arrow, (f * rows_per_file) as i64, rows_per_file);
        written.push(h.write_data(&b, None, writer_props(row_group_rows)));
    }
    let all = concat_rows(&arrow, &written);
    let paths: Vec<String> = written
        .iter()
        .map(|(f, _)| f.file_path().to_string())
        .collect();
    let s1 = h.append(written);
    h.expected.insert(s1, all.clone());
    if with_deletes {
        let mut rng = Rng::new(0xDE1E7E);
        let total = files * rows_per_file;
        let mut deleted = vec![false; total];
        let mut dels = vec![];
        for (f, path) in paths.iter().enumerate() {
            let mut rows = vec![];
            for p in 0..rows_per_file {
                if rng.below(10) == 0 {
                    rows.push((path.clone(), p as i64));
                    deleted[f * rows_per_file + p] = true;
                }
            }
            if !rows.is_empty() {
                dels.push(h.write_pos_deletes(rows, None, Some(path.clone())));
            }
        }
        let eq_ids: Vec<usize> = (0..total)
            .filter(|_| rng.below(100) == 0)
            .filter(|_| equality)
            .collect();
        for g in &eq_ids {
            deleted[*g] = true;
        }
        if !eq_ids.is_empty() {
            let id_field = h.schema().field_id_by_name("id").unwrap();
            let keys = filter_rows(&all, |i| eq_ids.binary_search(&i).is_ok());
            dels.push(h.write_eq_deletes(vec![id_field], &keys, None));
        }
        let s2 = h.commit_deletes(dels);
        h.expected.insert(s2, filter_rows(&all, |i| !deleted[i]));
    }
    h.finish()
}
