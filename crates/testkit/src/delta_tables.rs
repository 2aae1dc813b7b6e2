//! Delta test tables and the reference reader, behind the testkit's `delta` feature (on by
//! default); an integration test of any crate of the workspace uses it as
//!
//! ```ignore
//! use rayquet_testkit::delta_tables;
//! ```
//!
//! * **Golden tables** (`../shared/delta-golden/*.tar.zst`, written by Delta Lake's Spark
//!   implementation, see `SOURCE.txt` there): [`unpack`], [`GOLDEN_TABLES`] classified the way
//!   delta-kernel-rs' own `golden_tables.rs` uses them, [`expected`] / [`expected_table`].
//! * **Reference reader**: delta-kernel's default engine and its own `Scan::execute`
//!   ([`read_table`], [`read_table_with`]), and the per-file listing from `scan_metadata`
//!   ([`scan_files`]). [`RecordingEngine`] wraps any engine and records what its
//!   `ParquetHandler` is asked.
//! * **Comparison** following the kernel's golden-table rule ([`compare_tables`]).
//! * **Tables written with delta-kernel itself** ([`TableWriter`] and the fixtures
//!   [`dv_fixture`], [`column_mapping_fixture`], [`partitioned_fixture`],
//!   [`checkpoint_fixture`], [`time_travel_fixture`], [`row_groups_fixture`], [`bench_table`]):
//!   every fixture carries its own expected rows, computed from the data it wrote and the rows
//!   it deleted, never from a Delta reader.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float64Array,
    Int32Array, Int64Array, ListArray, RecordBatch, RecordBatchReader, StringArray, StructArray,
    TimestampMicrosecondArray,
};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType as ArrowType, Field, Fields, Schema, SchemaRef as ArrowSchemaRef};
use delta_kernel::actions::deletion_vector_writer::{
    KernelDeletionVector, StreamingDeletionVectorWriter,
};
use delta_kernel::committer::FileSystemCommitter;
use delta_kernel::engine::arrow_conversion::TryFromKernel as _;
use delta_kernel::engine::arrow_data::{ArrowEngineData, EngineDataArrowExt as _};
use delta_kernel::engine::writer_options;
use delta_kernel::expressions::Scalar;
use delta_kernel::scan::state::{DvInfo, ScanFile};
use delta_kernel::scan::ScanMetadata;
use delta_kernel::schema::{DataType, MetadataColumnSpec, SchemaRef, StructField, StructType};
use delta_kernel::transaction::create_table::create_table;
use delta_kernel::transaction::data_layout::DataLayout;
use delta_kernel::transaction::{BoundWriteContext, Transaction};
use delta_kernel::{
    DeltaResult, Engine, EngineData, EvaluationHandler, FileDataReadResultIterator, FileMeta,
    FilteredEngineData, JsonHandler, ParquetFooter, ParquetHandler, PredicateRef, Snapshot,
    SnapshotRef, StorageHandler,
};
use delta_kernel_default_engine::executor::tokio::TokioMultiThreadExecutor;
use delta_kernel_default_engine::parquet::DataFileMetadata;
use delta_kernel_default_engine::stats::collect_stats;
use delta_kernel_default_engine::{build_add_file_metadata, DefaultEngine, DefaultEngineBuilder};
use object_store::local::LocalFileSystem;
use object_store::DynObjectStore;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use url::Url;

// ---------------------------------------------------------------------------------------------
// Golden tables
// ---------------------------------------------------------------------------------------------

/// Where the golden archives live: `../shared/delta-golden` from the workspace root, or
/// `$RAYQUET_DELTA_GOLDEN`.
pub fn golden_dir() -> PathBuf {
    match std::env::var_os("RAYQUET_DELTA_GOLDEN") {
        Some(dir) => PathBuf::from(dir),
        None => crate::shared("delta-golden"),
    }
}

/// How delta-kernel-rs (`kernel/tests/integration/golden_tables.rs`, the commit named in
/// `SOURCE.txt`) uses a golden table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GoldenKind {
    /// Full scan of the latest snapshot compared with `expected/` (`golden_test!` with
    /// `latest_snapshot_test`).
    Compared,
    /// `skip_test!`, with the kernel's reason.
    Skipped(&'static str),
    /// `negative_test!`: reading the latest snapshot must fail, for this reason.
    Negative(&'static str),
    /// The `checkpoint` table has its own test: latest version 14 and `scan_metadata` yields
    /// exactly one batch.
    Checkpoint,
    /// Shipped with the golden data but not named by the kernel's test file (no `expected/`).
    Unlisted(&'static str),
}

/// One golden table and its classification.
#[derive(Debug, Clone, Copy)]
pub struct GoldenTable {
    pub name: &'static str,
    pub kind: GoldenKind,
}

const fn compared(name: &'static str) -> GoldenTable {
    GoldenTable {
        name,
        kind: GoldenKind::Compared,
    }
}
const fn skipped(name: &'static str, reason: &'static str) -> GoldenTable {
    GoldenTable {
        name,
        kind: GoldenKind::Skipped(reason),
    }
}
const fn negative(name: &'static str, reason: &'static str) -> GoldenTable {
    GoldenTable {
        name,
        kind: GoldenKind::Negative(reason),
    }
}
const fn unlisted(name: &'static str, what: &'static str) -> GoldenTable {
    GoldenTable {
        name,
        kind: GoldenKind::Unlisted(what),
    }
}

/// Every archive in the golden directory, classified (a test checks the list is complete).
pub const GOLDEN_TABLES: &[GoldenTable] = &[
    compared("124-decimal-decode-bug"),
    compared("125-iterator-bug"),
    compared("basic-decimal-table"),
    compared("basic-decimal-table-legacy"),
    compared("basic-with-inserts-deletes-checkpoint"),
    compared("basic-with-inserts-merge"),
    compared("basic-with-inserts-overwrite-restore"),
    compared("basic-with-inserts-updates"),
    compared("basic-with-vacuum-protocol-check-feature"),
    GoldenTable {
        name: "checkpoint",
        kind: GoldenKind::Checkpoint,
    },
    compared("corrupted-last-checkpoint-kernel"),
    compared("data-reader-array-complex-objects"),
    compared("data-reader-array-primitives"),
    compared("data-reader-date-types-America"),
    compared("data-reader-date-types-Asia"),
    compared("data-reader-date-types-Etc"),
    compared("data-reader-date-types-Iceland"),
    compared("data-reader-date-types-Jst"),
    compared("data-reader-date-types-Pst"),
    compared("data-reader-date-types-utc"),
    compared("data-reader-escaped-chars"),
    compared("data-reader-map"),
    compared("data-reader-nested-struct"),
    compared("data-reader-nullable-field-invalid-schema-key"),
    skipped(
        "data-reader-partition-values",
        "Golden data needs to have 2021-09-08T11:11:11+00:00 as expected value for as_timestamp col",
    ),
    compared("data-reader-primitives"),
    compared("data-reader-timestamp_ntz"),
    compared("data-reader-timestamp_ntz-id-mode"),
    compared("data-reader-timestamp_ntz-name-mode"),
    compared("data-skipping-basic-stats-all-types"),
    compared("data-skipping-basic-stats-all-types-checkpoint"),
    skipped(
        "data-skipping-basic-stats-all-types-columnmapping-id",
        "id column mapping mode not supported",
    ),
    compared("data-skipping-basic-stats-all-types-columnmapping-name"),
    compared("data-skipping-change-stats-collected-across-versions"),
    compared("data-skipping-partition-and-data-column"),
    compared("decimal-various-scale-precision"),
    compared("deltalog-getChanges"),
    compared("dv-partitioned-with-checkpoint"),
    compared("dv-with-columnmapping"),
    skipped("hive", "test not yet implemented - different file structure"),
    compared("kernel-timestamp-int96"),
    compared("kernel-timestamp-pst"),
    compared("kernel-timestamp-timestamp_micros"),
    compared("kernel-timestamp-timestamp_millis"),
    compared("log-replay-dv-key-cases"),
    compared("log-replay-latest-metadata-protocol"),
    compared("log-replay-special-characters"),
    compared("log-replay-special-characters-a"),
    compared("multi-part-checkpoint"),
    compared("only-checkpoint-files"),
    skipped(
        "parquet-all-types",
        "schemas disagree about nullability, need to figure out which is correct and adjust",
    ),
    skipped(
        "parquet-all-types-legacy-format",
        "legacy parquet has name `array`, we should have adjusted this to `element`",
    ),
    compared("parquet-decimal-dictionaries"),
    // parquet-decimal-dictionaries-v1 is compared by the kernel but absent here (SOURCE.txt).
    compared("parquet-decimal-dictionaries-v2"),
    compared("parquet-decimal-type"),
    compared("snapshot-data0"),
    compared("snapshot-data1"),
    compared("snapshot-data2"),
    compared("snapshot-data2-deleted"),
    compared("snapshot-data3"),
    compared("snapshot-repartitioned"),
    compared("snapshot-vacuumed"),
    compared("table-with-columnmapping-mode-name"),
    compared("table-with-columnmapping-mode-id"),
    compared("time-travel-partition-changes-a"),
    compared("time-travel-partition-changes-b"),
    compared("time-travel-schema-changes-a"),
    compared("time-travel-schema-changes-b"),
    compared("time-travel-start"),
    compared("time-travel-start-start20"),
    compared("time-travel-start-start20-start40"),
    compared("v2-checkpoint-json"),
    compared("v2-checkpoint-parquet"),
    skipped("canonicalized-paths-normal-a", "BUG: path canonicalization"),
    skipped("canonicalized-paths-normal-b", "BUG: path canonicalization"),
    skipped("canonicalized-paths-special-a", "BUG: path canonicalization"),
    skipped("canonicalized-paths-special-b", "BUG: path canonicalization"),
    skipped(
        "delete-re-add-same-file-different-transactions",
        "test not yet implemented",
    ),
    skipped("log-replay-special-characters-b", "test not yet implemented"),
    negative(
        "deltalog-invalid-protocol-version",
        "the protocol's reader version is unsupported",
    ),
    negative(
        "deltalog-state-reconstruction-from-checkpoint-missing-metadata",
        "the checkpoint has no metaData action",
    ),
    negative(
        "deltalog-state-reconstruction-from-checkpoint-missing-protocol",
        "the checkpoint has no protocol action",
    ),
    negative(
        "deltalog-state-reconstruction-without-metadata",
        "the log has no metaData action",
    ),
    negative(
        "deltalog-state-reconstruction-without-protocol",
        "the log has no protocol action",
    ),
    negative(
        "no-delta-log-folder",
        "expected DELTA_TABLE_NOT_FOUND: no _delta_log folder",
    ),
    negative(
        "versions-not-contiguous",
        "expected DELTA_VERSIONS_NOT_CONTIGUOUS: a commit is missing from the log",
    ),
    unlisted(
        "data-reader-absolute-paths-escaped-chars",
        "add paths are absolute file: URLs into the writer's machine; no expected/",
    ),
    unlisted("deltalog-commit-info", "commitInfo only; no expected/"),
    unlisted("update-deleted-directory", "no expected/"),
];

/// The names of the golden tables of one kind.
pub fn golden_names(pred: impl Fn(&GoldenKind) -> bool) -> Vec<&'static str> {
    GOLDEN_TABLES
        .iter()
        .filter(|t| pred(&t.kind))
        .map(|t| t.name)
        .collect()
}

/// The tables the kernel compares with their `expected/` rows.
pub fn compared_tables() -> Vec<&'static str> {
    golden_names(|k| matches!(k, GoldenKind::Compared))
}

/// Reads every compared golden table with `read` (its schema and batches, or an error text)
/// and checks it against `expected/` as a multiset; panics listing every table that differs.
pub fn check_compared_golden(
    reader: &str,
    read: impl Fn(&Url) -> Result<(ArrowSchemaRef, Vec<RecordBatch>), String>,
) {
    let names = compared_tables();
    let mut failures = Vec::new();
    for name in &names {
        match read(&golden_table_url(name)) {
            Err(e) => failures.push(format!("{name}: read failed: {e}")),
            Ok((schema_read, batches)) => {
                let (schema, expected) = expected_table(name);
                if let Err(e) = compare_tables(&schema, &expected, &schema_read, &batches) {
                    failures.push(format!("{name}: {e}"));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{reader} differs from expected/ on {} of {} compared tables:\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}

/// Reads every negative golden table with `read` (rows read, or the error's text) and returns
/// the problems: a panic, rows instead of an error, an empty error, or an error without the
/// kernel's wording (`NEGATIVE_ERRORS`; tables in `any_wording` may word it their own way).
/// `check` adds the reader's own checks of an error message.
pub fn negative_golden_problems(
    reader: &str,
    any_wording: &[&str],
    read: impl Fn(&Url) -> Result<usize, String>,
    check: impl Fn(&Url, &str) -> Option<String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (name, _) in negative_tables() {
        let want = NEGATIVE_ERRORS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, e)| *e)
            .expect("an expected error for every negative table");
        let url = golden_table_url(name);
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| read(&url))) {
            Err(_) => problems.push(format!("{name}: {reader} panicked instead of an error")),
            Ok(Ok(rows)) => problems.push(format!(
                "{name}: {reader} read {rows} rows, expected an error"
            )),
            Ok(Err(msg)) => {
                if !any_wording.contains(&name) && !msg.contains(want) {
                    problems.push(format!("{name}: {reader} error {msg:?} lacks {want:?}"));
                }
                if msg.trim().is_empty() {
                    problems.push(format!("{name}: {reader} gave an empty error"));
                }
                if let Some(p) = check(&url, &msg) {
                    problems.push(format!("{name}: {reader} error {msg:?} {p}"));
                }
            }
        }
    }
    problems
}

/// The tables the kernel skips, with its reason.
pub fn skipped_tables() -> Vec<(&'static str, &'static str)> {
    GOLDEN_TABLES
        .iter()
        .filter_map(|t| match t.kind {
            GoldenKind::Skipped(reason) => Some((t.name, reason)),
            _ => None,
        })
        .collect()
}

/// The tables whose latest snapshot must fail to read, with the reason.
pub fn negative_tables() -> Vec<(&'static str, &'static str)> {
    GOLDEN_TABLES
        .iter()
        .filter_map(|t| match t.kind {
            GoldenKind::Negative(reason) => Some((t.name, reason)),
            _ => None,
        })
        .collect()
}

/// The errors delta-kernel 0.29's default engine gives for the negative tables.
pub const NEGATIVE_ERRORS: &[(&str, &str)] = &[
    (
        "deltalog-invalid-protocol-version",
        "Reader features must not be present when minimum reader version != 3",
    ),
    (
        "deltalog-state-reconstruction-from-checkpoint-missing-metadata",
        "No table metadata found in delta log",
    ),
    (
        "deltalog-state-reconstruction-from-checkpoint-missing-protocol",
        "Found unmasked nulls for non-nullable StructArray field \"schemaString\"",
    ),
    (
        "deltalog-state-reconstruction-without-metadata",
        "No table metadata found in delta log",
    ),
    (
        "deltalog-state-reconstruction-without-protocol",
        "No protocol found in delta log",
    ),
    ("no-delta-log-folder", "No table version found"),
    (
        "versions-not-contiguous",
        "Table version 1 is missing or unavailable",
    ),
];

/// The classification of one golden table.
pub fn golden_kind(name: &str) -> Option<GoldenKind> {
    GOLDEN_TABLES
        .iter()
        .find(|t| t.name == name)
        .map(|t| t.kind)
}

/// Unpack `NAME.tar.zst` once per process (and reuse an earlier process' copy) into
/// `temp_dir()/rayquet-delta-golden/NAME`; returns that directory, which holds `delta/` (the
/// table) and usually `expected/`. Safe to call from several threads and processes at once:
/// each unpacks into a private directory and renames it into place.
pub fn unpack(name: &str) -> PathBuf {
    static CELLS: OnceLock<Mutex<HashMap<String, Arc<OnceLock<PathBuf>>>>> = OnceLock::new();
    let cell = CELLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(name.to_string())
        .or_default()
        .clone();
    cell.get_or_init(|| unpack_uncached(name)).clone()
}

fn unpack_uncached(name: &str) -> PathBuf {
    let archive = golden_dir().join(format!("{name}.tar.zst"));
    let len = std::fs::metadata(&archive)
        .unwrap_or_else(|e| {
            panic!(
                "golden table archive {} ({e}): the Delta tests need ../shared/delta-golden \
                 relative to the workspace root (or RAYQUET_DELTA_GOLDEN)",
                archive.display()
            )
        })
        .len();
    let stamp = format!("{len}\n");
    let root = std::env::temp_dir().join("rayquet-delta-golden");
    let dest = root.join(name);
    let marker = ".rayquet-unpacked";
    if std::fs::read_to_string(dest.join(marker)).ok().as_deref() == Some(stamp.as_str()) {
        return dest;
    }
    std::fs::create_dir_all(&root).expect("create the golden cache dir");
    if dest.exists() {
        // A copy of another archive version, or an interrupted one: move it away first.
        let trash = root.join(format!(".old-{name}-{}-{}", std::process::id(), nanos()));
        let _ = std::fs::rename(&dest, &trash);
        let _ = std::fs::remove_dir_all(&trash);
    }
    let tmp = root.join(format!(".tmp-{name}-{}-{}", std::process::id(), nanos()));
    std::fs::create_dir_all(&tmp).expect("create a temp dir");
    let file = File::open(&archive).expect("open archive");
    let decoder = zstd::Decoder::new(file).expect("zstd decoder");
    let mut tar = tar::Archive::new(decoder);
    tar.set_preserve_mtime(false);
    tar.unpack(&tmp)
        .unwrap_or_else(|e| panic!("unpack {}: {e}", archive.display()));
    let unpacked = tmp.join(name);
    assert!(
        unpacked.is_dir(),
        "{} does not unpack to {name}/",
        archive.display()
    );
    std::fs::write(unpacked.join(marker), &stamp).expect("write marker");
    if std::fs::rename(&unpacked, &dest).is_err() {
        // Another process won the race; its copy is complete (renamed in one step).
        assert!(dest.join(marker).exists(), "cannot move {name} into place");
    }
    let _ = std::fs::remove_dir_all(&tmp);
    dest
}

fn nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0)
}

/// The table root (`NAME/delta/`) of a golden table, unpacked.
pub fn golden_table_path(name: &str) -> PathBuf {
    unpack(name).join("delta")
}

/// The table root URL (with a trailing slash) of a golden table, unpacked.
pub fn golden_table_url(name: &str) -> Url {
    dir_url(&golden_table_path(name))
}

/// A directory as a `file://` URL with a trailing slash.
pub fn dir_url(path: &Path) -> Url {
    Url::from_directory_path(path).expect("absolute directory path")
}

/// The rows of `NAME/expected/*.parquet` (every file, in name order), read with parquet's own
/// sync reader: the logical rows of a full scan of the latest snapshot, in no particular order.
pub fn expected(name: &str) -> Vec<RecordBatch> {
    expected_table(name).1
}

/// [`expected`] with the schema of the first file (known even when there are no rows).
pub fn expected_table(name: &str) -> (ArrowSchemaRef, Vec<RecordBatch>) {
    let dir = unpack(name).join("expected");
    let mut files = Vec::new();
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d)
            .unwrap_or_else(|e| panic!("golden table {name} has no expected/ ({e})"));
        for entry in entries {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "parquet") {
                files.push(path);
            }
        }
    }
    files.sort();
    assert!(!files.is_empty(), "{}: no parquet files", dir.display());
    let mut schema = None;
    let mut batches = Vec::new();
    for path in files {
        let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).expect("open"))
            .and_then(|b| b.build())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        schema.get_or_insert_with(|| reader.schema());
        for batch in reader {
            batches.push(batch.unwrap_or_else(|e| panic!("{}: {e}", path.display())));
        }
    }
    (schema.expect("at least one file"), batches)
}

// ---------------------------------------------------------------------------------------------
// Engines
// ---------------------------------------------------------------------------------------------

/// An object store for `file://` URLs: the default engine resolves a file URL to the store path
/// `Path::from_url_path(url.path())`, so the store must be rooted at `/`.
pub fn local_store() -> Arc<DynObjectStore> {
    Arc::new(LocalFileSystem::new())
}

/// The reference engine: `DefaultEngineBuilder::new(store).build()`, i.e. the default engine
/// with its default `TokioBackgroundExecutor` (one background current-thread runtime).
pub fn reference_engine(store: Arc<DynObjectStore>) -> Arc<dyn Engine> {
    Arc::new(DefaultEngineBuilder::new(store).build())
}

/// One reference engine over the local filesystem, shared by the whole process.
pub fn local_engine() -> Arc<dyn Engine> {
    static ENGINE: OnceLock<Arc<dyn Engine>> = OnceLock::new();
    ENGINE
        .get_or_init(|| reference_engine(local_store()))
        .clone()
}

/// A multi-thread tokio runtime shared by the writers (kernel's checkpoint writer needs the
/// multi-thread executor, see `Snapshot::checkpoint`'s doc).
pub fn shared_runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("delta-fixtures-io")
            .enable_all()
            .build()
            .expect("tokio runtime")
    })
}

/// The default engine running on a caller-supplied multi-thread runtime:
/// `with_task_executor(Arc::new(TokioMultiThreadExecutor::new(handle)))`.
pub fn engine_on_runtime(
    store: Arc<DynObjectStore>,
    handle: tokio::runtime::Handle,
) -> DefaultEngine<TokioMultiThreadExecutor> {
    DefaultEngineBuilder::new(store)
        .with_task_executor(Arc::new(TokioMultiThreadExecutor::new(handle)))
        .build()
}

/// What a [`RecordingEngine`]'s parquet handler was asked.
#[derive(Debug, Clone)]
pub enum ParquetCall {
    Read {
        /// The file URLs, in the order given.
        files: Vec<String>,
        /// The `FileMeta::size` of each file.
        sizes: Vec<u64>,
        /// The physical schema asked for.
        schema: SchemaRef,
        /// The pushed-down predicate, if any (Display form).
        predicate: Option<String>,
    },
    Footer {
        file: String,
    },
    Write {
        file: String,
    },
}

/// An [`Engine`] that delegates everything to `inner` and records every call its
/// `ParquetHandler` receives: the kernel's own view of what a parquet handler must do.
pub struct RecordingEngine {
    inner: Arc<dyn Engine>,
    parquet: Arc<RecordingParquetHandler>,
}

impl RecordingEngine {
    pub fn new(inner: Arc<dyn Engine>) -> Self {
        let parquet = Arc::new(RecordingParquetHandler {
            inner: inner.parquet_handler(),
            calls: Mutex::new(Vec::new()),
        });
        Self { inner, parquet }
    }

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<ParquetCall> {
        self.parquet.calls.lock().unwrap().clone()
    }

    /// Forget the calls so far.
    pub fn clear(&self) {
        self.parquet.calls.lock().unwrap().clear();
    }
}

impl Engine for RecordingEngine {
    fn evaluation_handler(&self) -> Arc<dyn EvaluationHandler> {
        self.inner.evaluation_handler()
    }
    fn storage_handler(&self) -> Arc<dyn StorageHandler> {
        self.inner.storage_handler()
    }
    fn json_handler(&self) -> Arc<dyn JsonHandler> {
        self.inner.json_handler()
    }
    fn parquet_handler(&self) -> Arc<dyn ParquetHandler> {
        self.parquet.clone()
    }
}

struct RecordingParquetHandler {
    inner: Arc<dyn ParquetHandler>,
    calls: Mutex<Vec<ParquetCall>>,
}

impl ParquetHandler for RecordingParquetHandler {
    fn read_parquet_files(
        &self,
        files: &[FileMeta],
        physical_schema: SchemaRef,
        predicate: Option<PredicateRef>,
    ) -> DeltaResult<FileDataReadResultIterator> {
        self.calls.lock().unwrap().push(ParquetCall::Read {
            files: files.iter().map(|f| f.location.to_string()).collect(),
            sizes: files.iter().map(|f| f.size).collect(),
            schema: physical_schema.clone(),
            predicate: predicate.as_ref().map(|p| p.to_string()),
        });
        self.inner
            .read_parquet_files(files, physical_schema, predicate)
    }

    fn write_parquet_file(
        &self,
        location: Url,
        data: delta_kernel::DeltaResultIteratorStatic<Box<dyn EngineData>>,
    ) -> DeltaResult<()> {
        self.calls.lock().unwrap().push(ParquetCall::Write {
            file: location.to_string(),
        });
        self.inner.write_parquet_file(location, data)
    }

    fn read_parquet_footer(&self, file: &FileMeta) -> DeltaResult<ParquetFooter> {
        self.calls.lock().unwrap().push(ParquetCall::Footer {
            file: file.location.to_string(),
        });
        self.inner.read_parquet_footer(file)
    }
}

// ---------------------------------------------------------------------------------------------
// Reference reader
// ---------------------------------------------------------------------------------------------

/// What to read: a version (latest when `None`), top-level columns (all when `None`), a
/// predicate (data skipping only: `Scan::execute` does not filter rows), and metadata columns
/// appended to the logical schema (`StructType::add_metadata_column`), e.g.
/// `("_metadata.row_index", MetadataColumnSpec::RowIndex)` or `("_file", FilePath)`.
#[derive(Debug, Clone, Default)]
pub struct ReadOptions {
    pub version: Option<u64>,
    pub columns: Option<Vec<String>>,
    pub predicate: Option<PredicateRef>,
    pub metadata_columns: Vec<(String, MetadataColumnSpec)>,
}

impl ReadOptions {
    pub fn at_version(version: u64) -> Self {
        Self {
            version: Some(version),
            ..Self::default()
        }
    }
}

/// The logical rows of a scan.
#[derive(Debug, Clone)]
pub struct TableRead {
    /// The snapshot version read.
    pub version: u64,
    /// `Scan::logical_schema()` converted to Arrow.
    pub schema: ArrowSchemaRef,
    pub batches: Vec<RecordBatch>,
}

impl TableRead {
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }
}

fn build_scan(
    engine: &dyn Engine,
    url: &Url,
    opts: &ReadOptions,
) -> DeltaResult<(SnapshotRef, delta_kernel::scan::Scan)> {
    let mut builder = Snapshot::builder_for(url.as_str());
    if let Some(v) = opts.version {
        builder = builder.at_version(v);
    }
    let snapshot = builder.build(engine)?;
    let mut scan = snapshot.clone().scan_builder();
    if opts.columns.is_some() || !opts.metadata_columns.is_empty() {
        let mut schema = match &opts.columns {
            Some(cols) => snapshot.schema().project_as_struct(cols)?,
            None => snapshot.schema().as_ref().clone(),
        };
        for (name, spec) in &opts.metadata_columns {
            schema = schema.add_metadata_column(name.clone(), *spec)?;
        }
        scan = scan.with_schema(Arc::new(schema));
    }
    if let Some(p) = &opts.predicate {
        scan = scan.with_predicate(p.clone());
    }
    Ok((snapshot, scan.build()?))
}

/// Read a table with the reference engine ([`local_engine`]) through `Scan::execute`.
pub fn read_table(url: &Url, opts: &ReadOptions) -> DeltaResult<TableRead> {
    read_table_with(local_engine(), url, opts)
}

/// Read a table through `Scan::execute` with any engine (the reference for another engine is
/// the same call with [`local_engine`]).
pub fn read_table_with(
    engine: Arc<dyn Engine>,
    url: &Url,
    opts: &ReadOptions,
) -> DeltaResult<TableRead> {
    let (snapshot, scan) = build_scan(engine.as_ref(), url, opts)?;
    let schema = Arc::new(Schema::try_from_kernel(scan.logical_schema().as_ref())?);
    let batches = scan
        .execute(engine)?
        .map(|data| data.and_then(|d| d.try_into_record_batch()))
        .collect::<DeltaResult<Vec<_>>>()?;
    Ok(TableRead {
        version: snapshot.version(),
        schema,
        batches,
    })
}

/// One file of a scan, as `scan_metadata` + `visit_scan_files` describe it.
#[derive(Debug, Clone)]
pub struct ScanFileInfo {
    /// `add.path` as in the log (relative to the table root, URL-encoded).
    pub path: String,
    /// `table_root.join(path)`: what the kernel passes as `FileMeta::location`.
    pub location: Url,
    pub size: i64,
    pub modification_time: i64,
    /// `stats.numRecords`, when the add had stats.
    pub num_records: Option<u64>,
    /// Partition values by (physical) partition column name; `None` entries are absent.
    pub partition_values: HashMap<String, String>,
    /// `DvInfo::has_vector()`.
    pub has_dv: bool,
    /// `DvInfo::get_row_indexes`: the deleted row positions (read through the storage handler).
    pub deleted_rows: Option<Vec<u64>>,
    /// The physical-to-logical transform expression, if the file needs one (Display form).
    pub transform: Option<String>,
}

/// List the files of a scan (`Scan::scan_metadata`, `ScanMetadata::visit_scan_files`) with the
/// reference engine, the deletion vectors read.
pub fn scan_files(url: &Url, opts: &ReadOptions) -> DeltaResult<Vec<ScanFileInfo>> {
    scan_files_with(local_engine().as_ref(), url, opts)
}

/// [`scan_files`] with any engine.
pub fn scan_files_with(
    engine: &dyn Engine,
    url: &Url,
    opts: &ReadOptions,
) -> DeltaResult<Vec<ScanFileInfo>> {
    fn collect(files: &mut Vec<ScanFile>, file: ScanFile) {
        files.push(file);
    }
    let (_snapshot, scan) = build_scan(engine, url, opts)?;
    let root = scan.table_root().clone();
    let mut files = Vec::new();
    for meta in scan.scan_metadata(engine)? {
        let meta: ScanMetadata = meta?;
        files = meta.visit_scan_files(files, collect)?;
    }
    files
        .into_iter()
        .map(|f| {
            let dv: &DvInfo = &f.dv_info;
            Ok(ScanFileInfo {
                location: root.join(&f.path)?,
                deleted_rows: dv.get_row_indexes(engine, &root)?,
                has_dv: dv.has_vector(),
                path: f.path,
                size: f.size,
                modification_time: f.modification_time,
                num_records: f.stats.map(|s| s.num_records),
                partition_values: f.partition_values,
                transform: f.transform.map(|t| t.to_string()),
            })
        })
        .collect()
}

/// A kernel error's message without the backtrace the kernel appends to many errors when
/// `RUST_BACKTRACE` is set (`Error::Backtraced`'s Display is `"{source}\n{backtrace}"`).
pub fn error_message(e: &delta_kernel::Error) -> String {
    match e {
        delta_kernel::Error::Backtraced { source, .. } => error_message(source),
        other => other.to_string(),
    }
}

// ---------------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------------

/// `dt` with what the kernel's golden comparison ignores taken out: every nested field made
/// nullable and its metadata dropped; list items named `item`, map entries `entries` /
/// `key` / `value` (struct field names are kept: they are data).
pub fn normalize_type(dt: &ArrowType) -> ArrowType {
    fn field(name: &str, f: &Field, nullable: bool) -> Arc<Field> {
        Arc::new(Field::new(name, normalize_type(f.data_type()), nullable))
    }
    match dt {
        ArrowType::Struct(fields) => ArrowType::Struct(
            fields
                .iter()
                .map(|f| field(f.name(), f, true))
                .collect::<Fields>(),
        ),
        ArrowType::List(f) => ArrowType::List(field("item", f, true)),
        ArrowType::LargeList(f) => ArrowType::LargeList(field("item", f, true)),
        ArrowType::ListView(f) => ArrowType::ListView(field("item", f, true)),
        ArrowType::LargeListView(f) => ArrowType::LargeListView(field("item", f, true)),
        ArrowType::FixedSizeList(f, n) => ArrowType::FixedSizeList(field("item", f, true), *n),
        ArrowType::Map(entries, sorted) => {
            let ArrowType::Struct(kv) = entries.data_type() else {
                return dt.clone();
            };
            let kv: Fields = vec![field("key", &kv[0], false), field("value", &kv[1], true)].into();
            ArrowType::Map(
                Arc::new(Field::new("entries", ArrowType::Struct(kv), false)),
                *sorted,
            )
        }
        other => other.clone(),
    }
}

/// Compare two tables the way delta-kernel-rs compares golden tables: the same column names
/// (matched by name, in any order), the same types once nullability, field metadata and the
/// names of list/map children are ignored ([`normalize_type`]), and the same rows as a multiset
/// (the kernel sorts both sides and compares them in order; comparing sorted row renderings is
/// the same rule, and also covers struct/map columns the kernel cannot sort by).
///
/// Returns a description of the first difference.
pub fn compare_tables(
    expected_schema: &Schema,
    expected: &[RecordBatch],
    actual_schema: &Schema,
    actual: &[RecordBatch],
) -> Result<(), String> {
    let mut names: Vec<&str> = expected_schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    let mut actual_names: Vec<&str> = actual_schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    names.sort_unstable();
    actual_names.sort_unstable();
    if names != actual_names {
        return Err(format!(
            "column names differ: expected {names:?}, actual {actual_names:?}"
        ));
    }
    for name in &names {
        let e = normalize_type(expected_schema.field_with_name(name).unwrap().data_type());
        let a = normalize_type(actual_schema.field_with_name(name).unwrap().data_type());
        if e != a {
            return Err(format!(
                "column {name}: type differs: expected {e}, actual {a}"
            ));
        }
    }
    let expected_rows = sorted_rows(&names, expected)?;
    let actual_rows = sorted_rows(&names, actual)?;
    if expected_rows == actual_rows {
        return Ok(());
    }
    let (missing, extra) = multiset_diff(&expected_rows, &actual_rows);
    let show = |rows: &[&String]| {
        rows.iter()
            .take(5)
            .map(|r| format!("\n    {r}"))
            .collect::<String>()
    };
    Err(format!(
        "rows differ: expected {} rows, actual {}; columns {names:?}; {} expected rows \
         missing:{}\n  {} unexpected rows:{}",
        expected_rows.len(),
        actual_rows.len(),
        missing.len(),
        show(&missing),
        extra.len(),
        show(&extra),
    ))
}

/// [`compare_tables`] for two [`TableRead`]-like pairs, panicking with `what` on a difference.
pub fn assert_same_table(
    what: &str,
    expected_schema: &Schema,
    expected: &[RecordBatch],
    actual_schema: &Schema,
    actual: &[RecordBatch],
) {
    if let Err(e) = compare_tables(expected_schema, expected, actual_schema, actual) {
        panic!("{what}: {e}");
    }
}

/// Every row of `batches`, columns in `names` order, rendered and sorted. Each batch's column
/// types must match its own schema's; the comparison of types is done on the schemas.
pub fn sorted_rows(names: &[&str], batches: &[RecordBatch]) -> Result<Vec<String>, String> {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let opts = FormatOptions::default().with_null("NULL");
    let mut rows = Vec::new();
    for batch in batches {
        let mut cols = Vec::with_capacity(names.len());
        for name in names {
            let col = batch
                .column_by_name(name)
                .ok_or_else(|| format!("a batch has no column {name}"))?;
            cols.push(col.clone());
        }
        let fmts = cols
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        for r in 0..batch.num_rows() {
            let row: Vec<String> = fmts.iter().map(|f| f.value(r).to_string()).collect();
            rows.push(row.join(" | "));
        }
    }
    rows.sort_unstable();
    Ok(rows)
}

fn multiset_diff<'a>(
    expected: &'a [String],
    actual: &'a [String],
) -> (Vec<&'a String>, Vec<&'a String>) {
    let (mut i, mut j) = (0, 0);
    let (mut missing, mut extra) = (Vec::new(), Vec::new());
    while i < expected.len() || j < actual.len() {
        match (expected.get(i), actual.get(j)) {
            (Some(e), Some(a)) if e == a => {
                i += 1;
                j += 1;
            }
            (Some(e), Some(a)) if e < a => {
                missing.push(e);
                i += 1;
            }
            (Some(_), Some(a)) => {
                extra.push(a);
                j += 1;
            }
            (Some(e), None) => {
                missing.push(e);
                i += 1;
            }
            (None, Some(a)) => {
                extra.push(a);
                j += 1;
            }
            (None, None) => break,
        }
    }
    (missing, extra)
}

// ---------------------------------------------------------------------------------------------
// Writing tables with delta-kernel
// ---------------------------------------------------------------------------------------------

/// The rows a table should give at one version.
#[derive(Debug, Clone)]
pub struct Expected {
    /// The table's logical schema at that version (Arrow form of the kernel schema).
    pub schema: ArrowSchemaRef,
    pub batches: Vec<RecordBatch>,
}

impl Expected {
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }
}

/// A data file to add.
#[derive(Debug, Clone)]
pub struct NewFile {
    /// The logical data columns (the table's columns minus the partition columns, by logical
    /// name, in table order). Only the arrays are used: names and nullability come from the
    /// write context's logical data schema.
    pub data: RecordBatch,
    /// One value per partition column (logical name); empty for an unpartitioned table.
    pub partition_values: Vec<(String, Scalar)>,
    /// `WriterProperties::max_row_group_row_count`.
    pub rows_per_group: usize,
    /// Write the top-level columns under made-up names (`renamed_<i>`), keeping their parquet
    /// field ids: valid only in column-mapping mode `id`, where readers must resolve by id.
    pub scramble_names: bool,
}

impl NewFile {
    pub fn new(data: RecordBatch, rows_per_group: usize) -> Self {
        Self {
            data,
            partition_values: Vec::new(),
            rows_per_group,
            scramble_names: false,
        }
    }

    pub fn partition(mut self, column: &str, value: impl Into<Scalar>) -> Self {
        self.partition_values
            .push((column.to_string(), value.into()));
        self
    }
}

/// What the model knows about one live data file.
#[derive(Debug, Clone)]
pub struct FileModel {
    /// `add.path` as committed (relative, URL-encoded).
    pub path: String,
    /// The file's logical rows, partition columns included, in the table schema when written.
    pub rows: RecordBatch,
    /// The deleted row positions (the union of every deletion vector committed for it).
    pub deleted: BTreeSet<u64>,
    /// Row groups in the parquet file.
    pub row_groups: usize,
    pub partition_values: Vec<(String, Scalar)>,
    pub size: u64,
}

/// A table written with delta-kernel's own transaction API (create_table, add_files,
/// remove_files, update_deletion_vectors, alter_table, checkpoint) on the default engine,
/// with parquet files written here (row groups under control), plus a model of the rows each
/// version must give, computed from the data written and the rows deleted.
pub struct TableWriter {
    pub root: PathBuf,
    pub url: Url,
    engine: Arc<DefaultEngine<TokioMultiThreadExecutor>>,
    partition_columns: Vec<String>,
    /// Keep the rows of every file (off for bench tables).
    track_rows: bool,
    live: BTreeMap<String, FileModel>,
    versions: BTreeMap<u64, Expected>,
    version: u64,
    files_written: usize,
    rows_written: u64,
}

fn k<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> T {
    r.unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// The version a commit produced (panics on a conflict or a retryable error).
fn committed<S>(
    what: &str,
    result: DeltaResult<delta_kernel::transaction::CommitResult<S>>,
) -> u64 {
    match k(what, result) {
        delta_kernel::transaction::CommitResult::Committed(c) => c.commit_version(),
        delta_kernel::transaction::CommitResult::Conflicted(c) => {
            panic!("{what}: conflict at version {}", c.conflict_version())
        }
        delta_kernel::transaction::CommitResult::Retryable(_) => panic!("{what}: retryable error"),
    }
}

impl TableWriter {
    /// Create the table (version 0) at `root` (a directory that need not exist).
    pub fn create(
        root: &Path,
        schema: StructType,
        partition_columns: &[&str],
        properties: &[(&str, &str)],
    ) -> Self {
        std::fs::create_dir_all(root).expect("create table dir");
        let root = root.canonicalize().expect("canonical table dir");
        let url = dir_url(&root);
        let engine = Arc::new(engine_on_runtime(
            local_store(),
            shared_runtime().handle().clone(),
        ));
        let mut builder = create_table(url.as_str(), Arc::new(schema), "rayquet-tests/0")
            .with_table_properties(properties.iter().copied());
        if !partition_columns.is_empty() {
            builder = builder
                .with_data_layout(DataLayout::partitioned(partition_columns.iter().copied()));
        }
        let txn = k(
            "create_table",
            builder.build(engine.as_ref(), Box::new(FileSystemCommitter::new())),
        );
        let version = committed("commit create_table", txn.commit(engine.as_ref()));
        assert_eq!(version, 0);
        let mut w = Self {
            root,
            url,
            engine,
            partition_columns: partition_columns.iter().map(|s| s.to_string()).collect(),
            track_rows: true,
            live: BTreeMap::new(),
            versions: BTreeMap::new(),
            version,
            files_written: 0,
            rows_written: 0,
        };
        w.record_version();
        w
    }

    /// Do not keep the rows written (bench tables): no expectations are recorded.
    pub fn untracked(mut self) -> Self {
        self.track_rows = false;
        self.versions.clear();
        self
    }

    pub fn engine(&self) -> &dyn Engine {
        self.engine.as_ref()
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    pub fn snapshot(&self) -> SnapshotRef {
        k(
            "snapshot",
            Snapshot::builder_for(self.url.as_str()).build(self.engine()),
        )
    }

    /// The table's current logical schema, as Arrow.
    pub fn logical_schema(&self) -> ArrowSchemaRef {
        let snapshot = self.snapshot();
        Arc::new(k(
            "schema to arrow",
            Schema::try_from_kernel(snapshot.schema().as_ref()),
        ))
    }

    /// The live files of the model.
    pub fn live_files(&self) -> &BTreeMap<String, FileModel> {
        &self.live
    }

    fn transaction(&self, snapshot: &SnapshotRef, operation: &str) -> Transaction {
        k(
            "transaction",
            snapshot
                .clone()
                .transaction(Box::new(FileSystemCommitter::new()), self.engine()),
        )
        .with_operation(operation.to_string())
        .with_engine_info("rayquet-tests")
    }

    fn commit(&mut self, txn: Transaction) -> u64 {
        let version = committed("commit", txn.commit(self.engine()));
        assert_eq!(version, self.version + 1, "commits are sequential");
        self.version = version;
        self.record_version();
        version
    }

    fn record_version(&mut self) {
        if !self.track_rows {
            return;
        }
        let schema = self.logical_schema();
        let mut batches = Vec::new();
        for file in self.live.values() {
            let batch = conform(&file.rows, &schema);
            let keep: BooleanArray = (0..batch.num_rows() as u64)
                .map(|i| Some(!file.deleted.contains(&i)))
                .collect();
            let batch = arrow::compute::filter_record_batch(&batch, &keep).expect("filter");
            if batch.num_rows() > 0 {
                batches.push(batch);
            }
        }
        self.versions
            .insert(self.version, Expected { schema, batches });
    }

    /// The expected rows at `version` (panics if it was not recorded or was dropped).
    pub fn expected_at(&self, version: u64) -> &Expected {
        self.versions
            .get(&version)
            .unwrap_or_else(|| panic!("no expectation recorded for version {version}"))
    }

    /// Write one parquet file for `file` under the write context's directory; returns its
    /// `add.path` and the add metadata.
    fn write_file(
        &mut self,
        txn: &Transaction,
        file: &NewFile,
    ) -> (FileModel, Box<dyn EngineData>) {
        let state = k("write_state", txn.write_state());
        let mut builder = state.write_context_builder();
        if !self.partition_columns.is_empty() {
            builder = builder.with_partition_values(
                file.partition_values
                    .iter()
                    .cloned()
                    .collect::<HashMap<_, _>>(),
            );
        }
        let ctx: BoundWriteContext = k("write context", builder.build());
        let logical_data_schema = Arc::new(k(
            "logical data schema",
            Schema::try_from_kernel(ctx.logical_data_schema().as_ref()),
        ));
        let columns = file
            .data
            .columns()
            .iter()
            .zip(logical_data_schema.fields())
            .map(|(c, f)| retype(c, f.data_type()))
            .collect();
        let data = RecordBatch::try_new_with_options(
            logical_data_schema,
            columns,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(file.data.num_rows())),
        )
        .expect("data matches the logical data schema");
        let evaluator = k(
            "logical-to-physical evaluator",
            self.engine.evaluation_handler().new_expression_evaluator(
                ctx.logical_data_schema().clone(),
                ctx.logical_to_physical(),
                ctx.physical_data_schema().clone().into(),
            ),
        );
        let physical = k(
            "logical to physical",
            evaluator
                .evaluate(&ArrowEngineData::new(data.clone()))
                .and_then(|d| d.try_into_record_batch()),
        );
        let stats = k(
            "collect_stats",
            collect_stats(&physical, ctx.stats_columns(), ctx.physical_data_schema()),
        );
        let to_write = if file.scramble_names {
            scramble_top_level_names(&physical)
        } else {
            physical
        };
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(file.rows_per_group.max(1)))
            .build();
        let mut bytes = Vec::new();
        let mut writer = ArrowWriter::try_new_with_options(
            &mut bytes,
            to_write.schema(),
            writer_options().with_properties(props),
        )
        .expect("ArrowWriter");
        writer.write(&to_write).expect("write");
        let meta = writer.close().expect("close");
        let row_groups = meta.num_row_groups();

        self.files_written += 1;
        self.rows_written += to_write.num_rows() as u64;
        let name = format!("part-{:05}-{}.parquet", self.files_written, nanos());
        let file_url = ctx.write_dir().join(&name).expect("file url");
        let fs_path = file_url.to_file_path().expect("file path");
        std::fs::create_dir_all(fs_path.parent().unwrap()).expect("create data dir");
        std::fs::write(&fs_path, &bytes).expect("write data file");
        let mtime = std::fs::metadata(&fs_path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_millis() as i64);
        let size = bytes.len() as u64;
        let file_meta = FileMeta::new(file_url.clone(), mtime, size);
        let add = k(
            "build_add_file_metadata",
            build_add_file_metadata(DataFileMetadata::new(file_meta, stats), &ctx),
        );
        let path = k("resolve_file_path", ctx.resolve_file_path(&file_url));
        let rows = if self.track_rows {
            self.full_logical_rows(&data, &file.partition_values)
        } else {
            RecordBatch::new_empty(Arc::new(Schema::empty()))
        };
        let model = FileModel {
            path,
            rows,
            deleted: BTreeSet::new(),
            row_groups,
            partition_values: file.partition_values.clone(),
            size,
        };
        (model, add)
    }

    /// The data columns plus one constant array per partition column, in table order: what a
    /// reader must return for this file (independent of the kernel's own transform).
    fn full_logical_rows(&self, data: &RecordBatch, partition: &[(String, Scalar)]) -> RecordBatch {
        let schema = self.logical_schema();
        let n = data.num_rows();
        let columns = schema
            .fields()
            .iter()
            .map(|f| match data.column_by_name(f.name()) {
                Some(c) => c.clone(),
                None => {
                    let value = partition
                        .iter()
                        .find(|(name, _)| name.eq_ignore_ascii_case(f.name()))
                        .map(|(_, v)| v)
                        .unwrap_or_else(|| panic!("no data or partition value for {}", f.name()));
                    scalar_array(value, f.data_type(), n)
                }
            })
            .collect();
        RecordBatch::try_new_with_options(
            schema,
            columns,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(n)),
        )
        .expect("full logical rows")
    }

    /// Commit one transaction adding `files`; returns their `add.path`s.
    pub fn append(&mut self, files: Vec<NewFile>) -> Vec<String> {
        let snapshot = self.snapshot();
        let mut txn = self.transaction(&snapshot, "WRITE");
        let mut paths = Vec::new();
        let mut models = Vec::new();
        for file in &files {
            let (model, add) = self.write_file(&txn, file);
            txn.add_files(add);
            paths.push(model.path.clone());
            models.push(model);
        }
        for m in models {
            self.live.insert(m.path.clone(), m);
        }
        self.commit(txn);
        paths
    }

    /// Commit one transaction removing the files `paths` and adding `files` (an overwrite).
    pub fn replace(&mut self, paths: &[String], files: Vec<NewFile>) -> Vec<String> {
        let snapshot = self.snapshot();
        let mut txn = self.transaction(&snapshot, "MERGE");
        for removal in self.scan_rows_for(&snapshot, paths) {
            txn.remove_files(removal);
        }
        let mut added = Vec::new();
        let mut models = Vec::new();
        for file in &files {
            let (model, add) = self.write_file(&txn, file);
            txn.add_files(add);
            added.push(model.path.clone());
            models.push(model);
        }
        for p in paths {
            assert!(self.live.remove(p).is_some(), "{p} is not live");
        }
        for m in models {
            self.live.insert(m.path.clone(), m);
        }
        self.commit(txn);
        added
    }

    /// Commit one transaction removing the files `paths`.
    pub fn remove(&mut self, paths: &[String]) -> u64 {
        self.replace(paths, Vec::new());
        self.version
    }

    /// The scan rows (`scan_metadata`'s `scan_files`) selecting exactly the files `paths`.
    fn scan_rows_for(&self, snapshot: &SnapshotRef, paths: &[String]) -> Vec<FilteredEngineData> {
        let scan = k("scan", snapshot.clone().scan_builder().build());
        let mut found = 0;
        let mut out = Vec::new();
        for meta in k("scan_metadata", scan.scan_metadata(self.engine())) {
            let (data, selection) = k("scan metadata", meta).scan_files.into_parts();
            let data = data
                .into_any()
                .downcast::<ArrowEngineData>()
                .expect("ArrowEngineData");
            let path_col = data
                .record_batch()
                .column_by_name("path")
                .expect("path column");
            let path_col = path_col
                .as_any()
                .downcast_ref::<StringArray>()
                .expect("path is a string column");
            let sel: Vec<bool> = (0..path_col.len())
                .map(|i| {
                    selection.get(i).copied().unwrap_or(true)
                        && path_col.is_valid(i)
                        && paths.iter().any(|p| p == path_col.value(i))
                })
                .collect();
            found += sel.iter().filter(|s| **s).count();
            out.push(k(
                "FilteredEngineData",
                FilteredEngineData::try_new(data, sel),
            ));
        }
        assert_eq!(found, paths.len(), "every file to remove is live");
        out
    }

    /// Commit one transaction that deletes `rows` of each file (by position in the file) with
    /// deletion vectors, all written into one DV file (so they sit at different offsets). A
    /// file that already has a DV gets a new one holding the union.
    pub fn delete_rows(&mut self, deletes: &[(String, Vec<u64>)]) -> u64 {
        let snapshot = self.snapshot();
        let mut txn = self.transaction(&snapshot, "DELETE");
        let state = k("write_state", txn.write_state());
        let mut builder = state.write_context_builder();
        if !self.partition_columns.is_empty() {
            let first = &self.live[&deletes[0].0];
            builder = builder.with_partition_values(
                first
                    .partition_values
                    .iter()
                    .cloned()
                    .collect::<HashMap<_, _>>(),
            );
        }
        let ctx = k("write context", builder.build());
        let dv_path = ctx.new_deletion_vector_path(String::new());
        let mut buf = Vec::new();
        let mut descriptors = HashMap::new();
        let mut unions = Vec::new();
        {
            let mut writer = StreamingDeletionVectorWriter::new(&mut buf);
            for (path, rows) in deletes {
                let model = self
                    .live
                    .get(path)
                    .unwrap_or_else(|| panic!("{path} is not live"));
                let mut all = model.deleted.clone();
                all.extend(rows.iter().copied());
                let mut dv = KernelDeletionVector::new();
                dv.add_deleted_row_indexes(all.iter().copied());
                let res = k("write_deletion_vector", writer.write_deletion_vector(dv));
                descriptors.insert(path.clone(), res.to_descriptor(&dv_path));
                unions.push((path.clone(), all));
            }
            k("finalize DV file", writer.finalize());
        }
        let dv_file = k("dv path", dv_path.absolute_path())
            .to_file_path()
            .expect("dv file path");
        std::fs::write(&dv_file, &buf).expect("write DV file");
        let scan = k("scan", snapshot.clone().scan_builder().build());
        let files =
            k("scan_metadata", scan.scan_metadata(self.engine())).map(|m| m.map(|m| m.scan_files));
        k(
            "update_deletion_vectors",
            txn.update_deletion_vectors(descriptors, files),
        );
        for (path, all) in unions {
            self.live.get_mut(&path).unwrap().deleted = all;
        }
        self.commit(txn)
    }

    /// `ALTER TABLE ADD COLUMN` (nullable field): older files read it as NULL.
    pub fn add_column(&mut self, field: StructField) -> u64 {
        let snapshot = self.snapshot();
        let txn = k(
            "alter_table",
            snapshot
                .alter_table()
                .add_column(field)
                .build(self.engine(), Box::new(FileSystemCommitter::new())),
        );
        let version = committed("commit alter_table", txn.commit(self.engine()));
        assert_eq!(version, self.version + 1);
        self.version = version;
        self.record_version();
        version
    }

    /// Write a classic checkpoint of the current version (`Snapshot::checkpoint`, through the
    /// parquet handler's `write_parquet_file`). With `drop_older_commits`, delete the JSON
    /// commits before it (as log cleanup would), so that reading the table *must* go through
    /// the checkpoint parquet; their versions can no longer be read.
    pub fn checkpoint(&mut self, drop_older_commits: bool) -> u64 {
        let snapshot = self.snapshot();
        let (_result, after) = k("checkpoint", snapshot.checkpoint(self.engine(), None));
        let version = after.version();
        assert_eq!(version, self.version);
        let log = self.root.join("_delta_log");
        assert!(
            log.join(format!("{version:020}.checkpoint.parquet"))
                .exists(),
            "checkpoint file written"
        );
        if drop_older_commits {
            for v in 0..version {
                let commit = log.join(format!("{v:020}.json"));
                std::fs::remove_file(&commit).expect("remove old commit");
                let _ = std::fs::remove_file(log.join(format!("{v:020}.crc")));
                self.versions.remove(&v);
            }
        }
        version
    }

    /// Finish: the fixture with the expectations of every readable version.
    pub fn finish(self, name: &'static str) -> Fixture {
        Fixture {
            name,
            root: self.root,
            url: self.url,
            latest: self.version,
            versions: self.versions,
            files: self.live,
            rows_written: self.rows_written,
        }
    }
}

/// `batch` in `schema`: columns taken by name, missing ones (added later) all NULL.
fn conform(batch: &RecordBatch, schema: &ArrowSchemaRef) -> RecordBatch {
    let n = batch.num_rows();
    let columns = schema
        .fields()
        .iter()
        .map(|f| match batch.column_by_name(f.name()) {
            Some(c) => c.clone(),
            None => arrow::array::new_null_array(f.data_type(), n),
        })
        .collect();
    RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(n)),
    )
    .expect("conform to the table schema")
}

/// `array` with the data type `target`, which may differ from its own only in nested field
/// names, nullability and metadata (the kernel's Arrow schemas carry column-mapping metadata on
/// nested fields).
pub fn retype(array: &ArrayRef, target: &ArrowType) -> ArrayRef {
    arrow::array::make_array(retype_data(array.to_data(), target))
}

fn retype_data(data: arrow::array::ArrayData, target: &ArrowType) -> arrow::array::ArrayData {
    if data.data_type() == target {
        return data;
    }
    let children: Vec<arrow::array::ArrayData> = match target {
        ArrowType::Struct(fields) => data
            .child_data()
            .iter()
            .zip(fields.iter())
            .map(|(c, f)| retype_data(c.clone(), f.data_type()))
            .collect(),
        ArrowType::List(f) | ArrowType::LargeList(f) | ArrowType::Map(f, _) => {
            vec![retype_data(data.child_data()[0].clone(), f.data_type())]
        }
        _ => data.child_data().to_vec(),
    };
    data.into_builder()
        .data_type(target.clone())
        .child_data(children)
        .build()
        .expect("retype")
}

fn scramble_top_level_names(batch: &RecordBatch) -> RecordBatch {
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| f.as_ref().clone().with_name(format!("renamed_{i}")))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), batch.columns().to_vec())
        .expect("scrambled batch")
}

/// A constant array of `n` values of a partition value, built here from the protocol's
/// meaning of each scalar (not from the kernel's conversion). An empty string is NULL, as the
/// protocol says for partition values.
pub fn scalar_array(value: &Scalar, dt: &ArrowType, n: usize) -> ArrayRef {
    match (value, dt) {
        (Scalar::Null(_), _) => arrow::array::new_null_array(dt, n),
        (Scalar::String(s), ArrowType::Utf8) if s.is_empty() => arrow::array::new_null_array(dt, n),
        (Scalar::String(s), ArrowType::Utf8) => Arc::new(StringArray::from(vec![s.as_str(); n])),
        (Scalar::Integer(v), ArrowType::Int32) => Arc::new(Int32Array::from(vec![*v; n])),
        (Scalar::Long(v), ArrowType::Int64) => Arc::new(Int64Array::from(vec![*v; n])),
        (Scalar::Date(v), ArrowType::Date32) => Arc::new(Date32Array::from(vec![*v; n])),
        (Scalar::Boolean(v), ArrowType::Boolean) => Arc::new(BooleanArray::from(vec![*v; n])),
        (
            Scalar::Timestamp(v),
            ArrowType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some(tz)),
        ) => Arc::new(TimestampMicrosecondArray::from(vec![*v; n]).with_timezone(tz.as_ref())),
        (
            Scalar::TimestampNtz(v),
            ArrowType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None),
        ) => Arc::new(TimestampMicrosecondArray::from(vec![*v; n])),
        (v, dt) => panic!("scalar_array: {v:?} as {dt} is not supported here"),
    }
}

/// A table written by a fixture and the rows each readable version must give.
pub struct Fixture {
    pub name: &'static str,
    pub root: PathBuf,
    /// Table root URL (trailing slash).
    pub url: Url,
    /// The latest version.
    pub latest: u64,
    /// Expected rows of every version that can be read.
    pub versions: BTreeMap<u64, Expected>,
    /// The live files at the latest version, by `add.path`.
    pub files: BTreeMap<String, FileModel>,
    /// Rows written over the whole history.
    pub rows_written: u64,
}

impl Fixture {
    /// The expected rows of the latest version.
    pub fn expected(&self) -> &Expected {
        &self.versions[&self.latest]
    }

    /// Read `version` (latest when `None`) with the reference engine and compare it with the
    /// expectation.
    pub fn check_version(&self, version: Option<u64>) -> Result<(), String> {
        self.check_version_with(local_engine(), version)
    }

    /// [`Fixture::check_version`] with any engine.
    pub fn check_version_with(
        &self,
        engine: Arc<dyn Engine>,
        version: Option<u64>,
    ) -> Result<(), String> {
        let v = version.unwrap_or(self.latest);
        let expected = self
            .versions
            .get(&v)
            .ok_or_else(|| format!("{}: no expectation for version {v}", self.name))?;
        let opts = ReadOptions {
            version,
            ..ReadOptions::default()
        };
        let read = read_table_with(engine, &self.url, &opts)
            .map_err(|e| format!("{} v{v}: read failed: {e}", self.name))?;
        if read.version != v {
            return Err(format!(
                "{}: read version {} not {v}",
                self.name, read.version
            ));
        }
        compare_tables(
            &expected.schema,
            &expected.batches,
            &read.schema,
            &read.batches,
        )
        .map_err(|e| format!("{} v{v}: {e}", self.name))
    }
}

// ---------------------------------------------------------------------------------------------
// Data generation
// ---------------------------------------------------------------------------------------------

/// A small deterministic PRNG (splitmix64).
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    pub fn word(&mut self, min: usize, max: usize) -> String {
        const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let len = min + self.below((max - min + 1) as u64) as usize;
        (0..len)
            .map(|_| CHARS[self.below(CHARS.len() as u64) as usize] as char)
            .collect()
    }
}

/// A batch of `(name, array)` columns (only the arrays matter to [`NewFile`]).
pub fn batch(columns: Vec<(&str, ArrayRef)>) -> RecordBatch {
    let n = columns.first().map_or(0, |(_, a)| a.len());
    let fields: Vec<Field> = columns
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
        .collect();
    RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns.into_iter().map(|(_, a)| a).collect(),
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(n)),
    )
    .expect("batch")
}

/// `id: LONG` (`first..first+n`), `name: STRING` (`"name-<id>"`, every 7th NULL),
/// `score: DOUBLE` (`id / 4`).
pub fn simple_rows(first: i64, n: usize) -> RecordBatch {
    let ids: Vec<i64> = (first..first + n as i64).collect();
    batch(vec![
        ("id", Arc::new(Int64Array::from(ids.clone()))),
        (
            "name",
            Arc::new(StringArray::from(
                ids.iter()
                    .map(|i| (i % 7 != 3).then(|| format!("name-{i}")))
                    .collect::<Vec<_>>(),
            )),
        ),
        (
            "score",
            Arc::new(Float64Array::from(
                ids.iter().map(|i| *i as f64 / 4.0).collect::<Vec<_>>(),
            )),
        ),
    ])
}

/// The kernel schema of [`simple_rows`].
pub fn simple_schema() -> StructType {
    StructType::try_new([
        StructField::nullable("id", DataType::LONG),
        StructField::nullable("name", DataType::STRING),
        StructField::nullable("score", DataType::DOUBLE),
    ])
    .expect("schema")
}

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

/// Deletion vectors (DVs enabled, 5 files of small row groups, unpartitioned):
/// * file 0: 30 rows in row groups of 10, no DV;
/// * file 1: 30 rows / 10, DV `{0, 7, 29}`, then replaced by `{0, 7, 15, 29}` in a later commit;
/// * file 2: 30 rows / 7, DV = all of row group 1 (rows 7..14) and row 20;
/// * file 3: 25 rows / 5, DV deleting every row of the file;
/// * file 4: 20 rows in one row group, DV `{0, 19}`.
///
/// The DVs of one commit share one DV file (different offsets). Versions 0..=3 are readable.
pub fn dv_fixture(root: &Path) -> Fixture {
    let mut w = TableWriter::create(
        root,
        simple_schema(),
        &[],
        &[("delta.enableDeletionVectors", "true")],
    );
    let p = w.append(vec![
        NewFile::new(simple_rows(0, 30), 10),
        NewFile::new(simple_rows(100, 30), 10),
        NewFile::new(simple_rows(200, 30), 7),
        NewFile::new(simple_rows(300, 25), 5),
        NewFile::new(simple_rows(400, 20), 1000),
    ]);
    w.delete_rows(&[
        (p[1].clone(), vec![0, 7, 29]),
        (p[2].clone(), (7..14).chain([20]).collect()),
        (p[3].clone(), (0..25).collect()),
        (p[4].clone(), vec![0, 19]),
    ]);
    w.delete_rows(&[(p[1].clone(), vec![15])]);
    w.finish("dv")
}

/// The schema of [`cm_rows`]: `id: LONG, name: STRING, s: STRUCT<a: INTEGER, b: STRING>`.
pub fn cm_schema() -> StructType {
    StructType::try_new([
        StructField::nullable("id", DataType::LONG),
        StructField::nullable("name", DataType::STRING),
        StructField::nullable(
            "s",
            DataType::try_struct_type([
                StructField::nullable("a", DataType::INTEGER),
                StructField::nullable("b", DataType::STRING),
            ])
            .expect("struct"),
        ),
    ])
    .expect("schema")
}

/// Rows of [`cm_schema`] (every 5th struct NULL), plus `extra: STRING` when `extra`.
pub fn cm_rows(first: i64, n: usize, extra: bool) -> RecordBatch {
    let ids: Vec<i64> = (first..first + n as i64).collect();
    let a: ArrayRef = Arc::new(Int32Array::from(
        ids.iter().map(|i| (*i as i32) * 10).collect::<Vec<_>>(),
    ));
    let b: ArrayRef = Arc::new(StringArray::from(
        ids.iter()
            .map(|i| (i % 3 != 0).then(|| format!("b{i}")))
            .collect::<Vec<_>>(),
    ));
    let nulls: arrow::buffer::NullBuffer = ids.iter().map(|i| i % 5 != 4).collect();
    let s = StructArray::new(
        vec![
            Field::new("a", ArrowType::Int32, true),
            Field::new("b", ArrowType::Utf8, true),
        ]
        .into(),
        vec![a, b],
        Some(nulls),
    );
    let mut cols: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(Int64Array::from(ids.clone()))),
        (
            "name",
            Arc::new(StringArray::from(
                ids.iter().map(|i| format!("n{i}")).collect::<Vec<_>>(),
            )),
        ),
        ("s", Arc::new(s)),
    ];
    if extra {
        cols.push((
            "extra",
            Arc::new(StringArray::from(
                ids.iter().map(|i| format!("x{i}")).collect::<Vec<_>>(),
            )),
        ));
    }
    batch(cols)
}

/// Column mapping `mode` (`"name"` or `"id"`), DVs enabled:
/// * v1: two files (12 rows / 4, 8 rows / 3);
/// * v2: `ALTER TABLE ADD COLUMN extra STRING` (the older files read it as NULL);
/// * v3: a file with `extra`; in mode `id` its top-level parquet columns carry made-up names
///   (`renamed_<i>`) and only their field ids identify them;
/// * v4: DV `{1, 2, 11}` on the first file.
pub fn column_mapping_fixture(root: &Path, mode: &str) -> Fixture {
    let mut w = TableWriter::create(
        root,
        cm_schema(),
        &[],
        &[
            ("delta.columnMapping.mode", mode),
            ("delta.enableDeletionVectors", "true"),
        ],
    );
    let p = w.append(vec![
        NewFile::new(cm_rows(0, 12, false), 4),
        NewFile::new(cm_rows(100, 8, false), 3),
    ]);
    w.add_column(StructField::nullable("extra", DataType::STRING));
    let mut third = NewFile::new(cm_rows(200, 10, true), 4);
    third.scramble_names = mode == "id";
    w.append(vec![third]);
    w.delete_rows(&[(p[0].clone(), vec![1, 2, 11])]);
    w.finish(if mode == "id" {
        "column-mapping-id"
    } else {
        "column-mapping-name"
    })
}

/// The schema of [`partitioned_fixture`]: data `id: LONG, value: STRING`; partition columns
/// `p_str: STRING, p_int: INTEGER, p_date: DATE, p_ts: TIMESTAMP, p_ntz: TIMESTAMP_NTZ`.
pub fn partitioned_schema() -> StructType {
    StructType::try_new([
        StructField::nullable("id", DataType::LONG),
        StructField::nullable("value", DataType::STRING),
        StructField::nullable("p_str", DataType::STRING),
        StructField::nullable("p_int", DataType::INTEGER),
        StructField::nullable("p_date", DataType::DATE),
        StructField::nullable("p_ts", DataType::TIMESTAMP),
        StructField::nullable("p_ntz", DataType::TIMESTAMP_NTZ),
    ])
    .expect("schema")
}

fn id_value_rows(first: i64, n: usize) -> RecordBatch {
    let ids: Vec<i64> = (first..first + n as i64).collect();
    batch(vec![
        ("id", Arc::new(Int64Array::from(ids.clone()))),
        (
            "value",
            Arc::new(StringArray::from(
                ids.iter().map(|i| format!("v{i}")).collect::<Vec<_>>(),
            )),
        ),
    ])
}

fn part_file(first: i64, s: Scalar, i: Scalar, date: Scalar, ts: Scalar, ntz: Scalar) -> NewFile {
    NewFile::new(id_value_rows(first, 10), 4)
        .partition("p_str", s)
        .partition("p_int", i)
        .partition("p_date", date)
        .partition("p_ts", ts)
        .partition("p_ntz", ntz)
}

/// Partitioned by string, int, date, timestamp and timestamp_ntz columns (hive-style
/// directories, column mapping off), 10 rows per file in row groups of 4:
/// * v1: `("a", 1, 2024-01-01, 2024-01-01T12:34:56.789012Z, 2024-01-01T00:00:00)`,
///   `("b b/=%:x#é", -5, 1969-12-31, 1970-01-01T00:00:00Z, 1969-12-31T23:59:59.999999)`,
///   `(NULL, 7, 1970-01-01, 1970-01-01T00:00:01Z, 1970-01-02T00:00:00)`;
/// * v2: `("a", NULL, NULL, NULL, NULL)`, `("" = NULL, i32::MAX, 9999-12-31,
///   9999-12-31T23:59:59Z, 9999-12-31T23:59:59)`;
/// * v3: DV `{0, 9}` on the first file (DVs enabled).
pub fn partitioned_fixture(root: &Path) -> Fixture {
    use Scalar::*;
    let mut w = TableWriter::create(
        root,
        partitioned_schema(),
        &["p_str", "p_int", "p_date", "p_ts", "p_ntz"],
        &[("delta.enableDeletionVectors", "true")],
    );
    let p = w.append(vec![
        part_file(
            0,
            String("a".into()),
            Integer(1),
            Date(19723),
            Timestamp(1_704_112_496_789_012),
            TimestampNtz(1_704_067_200_000_000),
        ),
        part_file(
            100,
            String("b b/=%:x#é".into()),
            Integer(-5),
            Date(-1),
            Timestamp(0),
            TimestampNtz(-1),
        ),
        part_file(
            200,
            Null(DataType::STRING),
            Integer(7),
            Date(0),
            Timestamp(1_000_000),
            TimestampNtz(86_400_000_000),
        ),
    ]);
    w.append(vec![
        part_file(
            300,
            String("a".into()),
            Null(DataType::INTEGER),
            Null(DataType::DATE),
            Null(DataType::TIMESTAMP),
            Null(DataType::TIMESTAMP_NTZ),
        ),
        part_file(
            400,
            String(std::string::String::new()),
            Integer(i32::MAX),
            Date(2_932_896),
            Timestamp(253_402_300_799_000_000),
            TimestampNtz(253_402_300_799_000_000),
        ),
    ]);
    w.delete_rows(&[(p[0].clone(), vec![0, 9])]);
    w.finish("partitioned")
}

/// A checkpoint in the middle of the history, with the commits before it deleted (so the log
/// *must* be read through the checkpoint parquet), DVs and a remove before it:
/// * v1: files A (20 rows / 5), B (20 / 5), C (15 / 4); v2: D (10 / 3); v3: remove A;
///   v4: DV `{0, 5, 19}` on B; **checkpoint at v4**, `0..=3.json` deleted;
/// * v5: E (12 / 4); v6: DVs `{11}` on E and `{0}` on C.
///
/// Readable versions: 4, 5, 6.
pub fn checkpoint_fixture(root: &Path) -> Fixture {
    let mut w = TableWriter::create(
        root,
        simple_schema(),
        &[],
        &[("delta.enableDeletionVectors", "true")],
    );
    let p = w.append(vec![
        NewFile::new(simple_rows(0, 20), 5),
        NewFile::new(simple_rows(100, 20), 5),
        NewFile::new(simple_rows(200, 15), 4),
    ]);
    w.append(vec![NewFile::new(simple_rows(300, 10), 3)]);
    w.remove(&[p[0].clone()]);
    w.delete_rows(&[(p[1].clone(), vec![0, 5, 19])]);
    let cp = w.checkpoint(true);
    assert_eq!(cp, 4);
    let e = w.append(vec![NewFile::new(simple_rows(400, 12), 4)]);
    w.delete_rows(&[(e[0].clone(), vec![11]), (p[2].clone(), vec![0])]);
    w.finish("checkpoint")
}

/// Time travel: every version readable and different.
/// * v1: A (10 rows / 3), B (10 / 3); v2: C (10 / 4); v3: remove A and add D in one commit;
///   v4: DV `{0..5}` on C; v5: remove B; v6: E (5 / 2); v7: `ADD COLUMN extra STRING`;
///   v8: F (6 / 4) with `extra`.
pub fn time_travel_fixture(root: &Path) -> Fixture {
    let mut w = TableWriter::create(
        root,
        simple_schema(),
        &[],
        &[("delta.enableDeletionVectors", "true")],
    );
    let ab = w.append(vec![
        NewFile::new(simple_rows(0, 10), 3),
        NewFile::new(simple_rows(100, 10), 3),
    ]);
    let c = w.append(vec![NewFile::new(simple_rows(200, 10), 4)]);
    w.replace(
        &[ab[0].clone()],
        vec![NewFile::new(simple_rows(300, 10), 4)],
    );
    w.delete_rows(&[(c[0].clone(), (0..5).collect())]);
    w.remove(&[ab[1].clone()]);
    w.append(vec![NewFile::new(simple_rows(400, 5), 2)]);
    w.add_column(StructField::nullable("extra", DataType::STRING));
    let f = simple_rows(500, 6);
    let schema = f.schema();
    let extra: ArrayRef = Arc::new(StringArray::from(vec![
        Some("e0"),
        None,
        Some("e2"),
        Some(""),
        Some("e4"),
        Some("e5"),
    ]));
    let mut cols: Vec<(&str, ArrayRef)> = schema
        .fields()
        .iter()
        .map(|fl| fl.name().as_str())
        .zip(f.columns().iter().cloned())
        .collect();
    cols.push(("extra", extra));
    w.append(vec![NewFile::new(batch(cols), 4)]);
    w.finish("time-travel")
}

/// The schema of [`typed_rows`]: one column of most primitive types and three nested ones.
pub fn typed_schema() -> StructType {
    StructType::try_new([
        StructField::nullable("id", DataType::LONG),
        StructField::nullable("i", DataType::INTEGER),
        StructField::nullable("s", DataType::STRING),
        StructField::nullable("d", DataType::DOUBLE),
        StructField::nullable("b", DataType::BOOLEAN),
        StructField::nullable("dt", DataType::DATE),
        StructField::nullable("ts", DataType::TIMESTAMP),
        StructField::nullable("ntz", DataType::TIMESTAMP_NTZ),
        StructField::nullable("dec", DataType::decimal(10, 2).expect("decimal")),
        StructField::nullable("bin", DataType::BINARY),
        StructField::nullable(
            "list",
            delta_kernel::schema::ArrayType::new(DataType::INTEGER, true),
        ),
        StructField::nullable(
            "st",
            DataType::try_struct_type([
                StructField::nullable("x", DataType::LONG),
                StructField::nullable("y", DataType::STRING),
            ])
            .expect("struct"),
        ),
    ])
    .expect("schema")
}

/// `n` rows of [`typed_schema`] with ids `first..`, NULLs sprinkled (deterministic in `seed`).
pub fn typed_rows(first: i64, n: usize, seed: u64) -> RecordBatch {
    let mut rng = SplitMix(seed);
    let ids: Vec<i64> = (first..first + n as i64).collect();
    let null = |rng: &mut SplitMix| rng.below(10) == 0;
    let i: Int32Array = ids
        .iter()
        .map(|_| (!null(&mut rng)).then(|| rng.next_u64() as i32))
        .collect();
    let s: StringArray = ids
        .iter()
        .map(|_| (!null(&mut rng)).then(|| rng.word(0, 12)))
        .collect();
    let d: Float64Array = ids
        .iter()
        .map(|_| (!null(&mut rng)).then(|| (rng.next_u64() % 1_000_000) as f64 / 7.0))
        .collect();
    let b: BooleanArray = ids
        .iter()
        .map(|_| (!null(&mut rng)).then(|| rng.below(2) == 0))
        .collect();
    let dt: Date32Array = ids
        .iter()
        .map(|_| (!null(&mut rng)).then(|| rng.below(40_000) as i32 - 10_000))
        .collect();
    let ts: TimestampMicrosecondArray = ids
        .iter()
        .map(|_| (!null(&mut rng)).then(|| (rng.next_u64() % (1 << 52)) as i64 - (1 << 51)))
        .collect::<TimestampMicrosecondArray>()
        .with_timezone("UTC");
    let ntz: TimestampMicrosecondArray = ids
        .iter()
        .map(|_| (!null(&mut rng)).then(|| (rng.next_u64() % (1 << 52)) as i64 - (1 << 51)))
        .collect();
    let dec: Decimal128Array = ids
        .iter()
        .map(|_| (!null(&mut rng)).then(|| rng.below(20_000_000_000) as i128 - 9_999_999_999))
        .collect::<Decimal128Array>()
        .with_precision_and_scale(10, 2)
        .expect("decimal");
    let bin: BinaryArray = ids
        .iter()
        .map(|_| {
            (!null(&mut rng)).then(|| {
                let len = rng.below(6) as usize;
                (0..len).map(|_| rng.below(256) as u8).collect::<Vec<u8>>()
            })
        })
        .collect();
    let mut offsets = vec![0i32];
    let mut values = Vec::new();
    let mut list_valid = Vec::new();
    for _ in &ids {
        let valid = !null(&mut rng);
        if valid {
            for _ in 0..rng.below(4) {
                values.push((!null(&mut rng)).then(|| rng.below(1000) as i32));
            }
        }
        list_valid.push(valid);
        offsets.push(values.len() as i32);
    }
    let list = ListArray::new(
        Arc::new(Field::new("element", ArrowType::Int32, true)),
        OffsetBuffer::new(offsets.into()),
        Arc::new(Int32Array::from(values)),
        Some(list_valid.into()),
    );
    let x: ArrayRef = Arc::new(Int64Array::from(
        ids.iter().map(|i| i * 3).collect::<Vec<_>>(),
    ));
    let y: ArrayRef = Arc::new(StringArray::from(
        ids.iter()
            .map(|i| (i % 4 != 1).then(|| format!("y{i}")))
            .collect::<Vec<_>>(),
    ));
    let st_valid: arrow::buffer::NullBuffer = ids.iter().map(|i| i % 6 != 5).collect();
    let st = StructArray::new(
        vec![
            Field::new("x", ArrowType::Int64, true),
            Field::new("y", ArrowType::Utf8, true),
        ]
        .into(),
        vec![x, y],
        Some(st_valid),
    );
    batch(vec![
        ("id", Arc::new(Int64Array::from(ids.clone()))),
        ("i", Arc::new(i)),
        ("s", Arc::new(s)),
        ("d", Arc::new(d)),
        ("b", Arc::new(b)),
        ("dt", Arc::new(dt)),
        ("ts", Arc::new(ts)),
        ("ntz", Arc::new(ntz)),
        ("dec", Arc::new(dec)),
        ("bin", Arc::new(bin)),
        ("list", Arc::new(list)),
        ("st", Arc::new(st)),
    ])
}

/// Many small row groups and many types ([`typed_schema`]):
/// * file 0: 1000 rows in row groups of 7 (143 row groups), DV = ids divisible by 3 among the
///   first 100 rows plus all of row group 10 (rows 70..77);
/// * file 1: 100 rows in one row group;
/// * file 2: no rows at all (no row group, `numRecords` 0).
pub fn row_groups_fixture(root: &Path) -> Fixture {
    let mut w = TableWriter::create(
        root,
        typed_schema(),
        &[],
        &[("delta.enableDeletionVectors", "true")],
    );
    let p = w.append(vec![
        NewFile::new(typed_rows(0, 1000, 1), 7),
        NewFile::new(typed_rows(5000, 100, 2), 1000),
        NewFile::new(typed_rows(9000, 0, 3), 10),
    ]);
    let deleted: BTreeSet<u64> = (0..100).filter(|r| r % 3 == 0).chain(70..77).collect();
    w.delete_rows(&[(p[0].clone(), deleted.into_iter().collect())]);
    w.finish("row-groups")
}

/// A bench table: `files` files of about `target_file_bytes` each.
#[derive(Debug, Clone)]
pub struct BenchSpec {
    pub files: usize,
    pub target_file_bytes: usize,
    /// Rows per row group; `None`: one row group per file (up to parquet's default cap of
    /// 1Mi rows).
    pub rows_per_group: Option<usize>,
    /// Files per commit.
    pub files_per_commit: usize,
    pub seed: u64,
}

impl BenchSpec {
    /// 100 files of about 1 MiB (one row group each).
    pub fn many_files() -> Self {
        Self {
            files: 100,
            target_file_bytes: 1 << 20,
            rows_per_group: None,
            files_per_commit: 25,
            seed: 42,
        }
    }

    /// 8 files of about 32 MiB, each a single large row group (about 800k rows).
    pub fn large_row_groups() -> Self {
        Self {
            files: 8,
            target_file_bytes: 32 << 20,
            rows_per_group: None,
            files_per_commit: 8,
            seed: 43,
        }
    }
}

/// What [`bench_table`] wrote.
#[derive(Debug, Clone)]
pub struct BenchTable {
    pub root: PathBuf,
    pub url: Url,
    pub version: u64,
    pub files: usize,
    pub rows_per_file: usize,
    pub row_groups_per_file: usize,
    /// Rows in the table; ids are `0..rows`.
    pub rows: u64,
    /// Bytes of data files.
    pub bytes: u64,
}

/// The schema of [`bench_rows`]: `id: LONG` (sequential), `a: LONG` (random), `b: DOUBLE`
/// (random), `c: STRING` (random, 8..=24 chars), `d: INTEGER` (0..100).
pub fn bench_schema() -> StructType {
    StructType::try_new([
        StructField::nullable("id", DataType::LONG),
        StructField::nullable("a", DataType::LONG),
        StructField::nullable("b", DataType::DOUBLE),
        StructField::nullable("c", DataType::STRING),
        StructField::nullable("d", DataType::INTEGER),
    ])
    .expect("schema")
}

/// Rows of [`bench_schema`].
pub fn bench_rows(first: i64, n: usize, rng: &mut SplitMix) -> RecordBatch {
    let a: Int64Array = (0..n).map(|_| Some(rng.next_u64() as i64)).collect();
    let b: Float64Array = (0..n)
        .map(|_| Some((rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64))
        .collect();
    let c: StringArray = (0..n).map(|_| Some(rng.word(8, 24))).collect();
    let d: Int32Array = (0..n).map(|_| Some(rng.below(100) as i32)).collect();
    batch(vec![
        (
            "id",
            Arc::new(Int64Array::from_iter_values(first..first + n as i64)),
        ),
        ("a", Arc::new(a)),
        ("b", Arc::new(b)),
        ("c", Arc::new(c)),
        ("d", Arc::new(d)),
    ])
}

/// Write a bench table at `root` (created): calibrates rows per file from a 20k-row sample so
/// that files come out at about `target_file_bytes`.
pub fn bench_table(root: &Path, spec: &BenchSpec) -> BenchTable {
    let mut rng = SplitMix(spec.seed);
    let sample_rows = 20_000;
    let sample = bench_rows(0, sample_rows, &mut rng.clone());
    let mut sample_bytes = Vec::new();
    let mut writer =
        ArrowWriter::try_new_with_options(&mut sample_bytes, sample.schema(), writer_options())
            .expect("writer");
    writer.write(&sample).expect("write");
    writer.close().expect("close");
    let bytes_per_row = sample_bytes.len() as f64 / sample_rows as f64;
    let rows_per_file = ((spec.target_file_bytes as f64 / bytes_per_row) as usize).max(1);
    let rows_per_group = spec.rows_per_group.unwrap_or(usize::MAX);

    let mut w = TableWriter::create(root, bench_schema(), &[], &[]).untracked();
    let mut next_id = 0i64;
    let mut row_groups = 0;
    let mut written = 0;
    while written < spec.files {
        let n = spec.files_per_commit.min(spec.files - written).max(1);
        let files: Vec<NewFile> = (0..n)
            .map(|_| {
                let data = bench_rows(next_id, rows_per_file, &mut rng);
                next_id += rows_per_file as i64;
                NewFile::new(data, rows_per_group)
            })
            .collect();
        w.append(files);
        written += n;
    }
    let bytes = w.live_files().values().map(|f| f.size).sum();
    if let Some(f) = w.live_files().values().next() {
        row_groups = f.row_groups;
    }
    BenchTable {
        root: w.root.clone(),
        url: w.url.clone(),
        version: w.version(),
        files: spec.files,
        rows_per_file,
        row_groups_per_file: row_groups,
        rows: next_id as u64,
        bytes,
    }
}
