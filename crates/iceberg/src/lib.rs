//! Iceberg tables read on every core by rayquet: a table, or `FileScanTask`s planned by
//! iceberg-rust, through rayquet's pipeline. A layer on rayquet's public API.
//!
//! iceberg-rust plans the scan (`plan_files()`, on rayquet's IO runtime: manifests pruned by
//! partition and column metrics, deletes attached by partition and sequence number), and its
//! tasks stream into one rayquet scan as they come: each becomes a
//! [`FileTask`](rayquet::task::FileTask) whose columns are found by field id (or the table's name mapping, for files written without ids),
//! whose identity-partition columns are constants, whose position deletes are deleted rows
//! and whose equality deletes are a hash-set row filter. Decoding runs on the rayon pool.
//! [`TableScan::plan`] gives those tasks as serializable [`TaskUnit`]s, with their columns'
//! statistics from the manifests when asked ([`TableScan::statistics`], for a query planner).
//!
//! ```no_run
//! # fn main() -> rayquet::Result<()> {
//! use rayquet::prelude::*;
//! use rayquet_iceberg::TableScan;
//! let options = ScanOptions::new().store_option("aws_region", "eu-west-1");
//! // A table directory or metadata JSON file; or TableScan::from_table(any catalog's Table)
//! let reader = TableScan::open("s3://warehouse/db/events")
//!     .with_options(options)                       // the same options as any rayquet scan
//!     .columns(["id", "ts", "payload"])
//!     .filter(col("ts").gt_eq("2024-01-01"))
//!     .snapshot_id(42)                             // Iceberg's own: time travel
//!     .build()?;
//! for batch in reader {
//!     let batch = batch?;
//! }
//! # Ok(()) }
//! ```
//!
//! Output schema and field metadata are what iceberg-rust's `to_arrow()` gives: the table's
//! schema as of the snapshot (`schema_to_arrow_schema`, with `PARQUET:field_id` metadata on
//! every field, nested ones included), the selected columns in selection order, `_file` run-end
//! encoded (non-null, id `i32::MAX - 1`), and `_pos` (which iceberg-rust does not support) a
//! non-null `Int64` with id `i32::MAX - 2`: the row's position in its data file, counting
//! every row, deleted ones included. One departure, as pyiceberg types them: `uuid` columns
//! (nested ones too) carry Arrow's canonical `arrow.uuid` extension
//! (`ARROW:extension:name`) over the same `FixedSizeBinary(16)`.
//!
//! # Semantics, and where rayquet departs from iceberg-rust 0.10.1
//!
//! Rows are those the Iceberg spec gives. Where iceberg-rust's `to_arrow()` departs from the
//! spec (each case is pinned by `tests/iceberg_fixtures.rs` and checked against rayquet in
//! `tests/iceberg.rs`), rayquet follows the spec:
//!
//! * **Identity-partition columns** come from the partition tuple, with the partition spec
//!   the data file was written with (looked up in the table metadata by the file's spec id:
//!   iceberg-rust's planner leaves `partition_spec` unset and reads the column from the file,
//!   so files that lack it read NULL and filters on it find nothing).
//! * **Nested fields added later** read NULL (or are cast when promoted) inside old files'
//!   structs; iceberg-rust fails the scan.
//! * **Name mapping** applies at every level (iceberg-rust maps top-level columns only, so
//!   mapped structs read NULL). Files without field ids and without a table name mapping
//!   resolve no column (spec rules 2-4: NULL, or the initial default); iceberg-rust (and Java)
//!   assign ids by position instead.
//! * **Filters on columns missing from a file** see the column's initial default (or the
//!   partition value), not NULL; **filters on promoted columns** (`int` → `long`...) are left
//!   out of the planner's predicate, whose metrics evaluator compares the old type's bounds
//!   with the new type's literal and drops those files; rayquet prunes them itself, with the
//!   statistics cast to the new type.
//! * **Equality deletes** delete a row iff its key equals a delete row's key on every
//!   equality column, a NULL delete value matching only NULL (a hash set of the keys,
//!   O(rows + deletes)). iceberg-rust drops every row whose key has a NULL compared
//!   with a non-null delete value (Kleene logic in a row filter).
//! * **Case-insensitive** scans resolve selections, predicates and filters without regard to
//!   case (iceberg-rust ignores the flag for selections and filters); output columns keep the
//!   table's spelling.
//! * **Filters** use SQL's three-valued logic, as rayquet's filters always do and as
//!   iceberg-rust's reader does: a row whose filter is NULL is dropped, so `c != 5` and
//!   `NOT starts_with(c, 'p')` drop rows where `c` is NULL. (Iceberg Java's row-level
//!   `Evaluator` keeps them for `notEqual`/`notStartsWith`; the spec leaves row filtering to
//!   the engine.) Filters may name columns that are not selected, and nested fields by dotted
//!   path.
//!
//! Sequence numbers (which deletes apply to which data file) are the planner's, as are
//! partition and metrics pruning of manifests and files. Each delete file is read once per
//! scan, however many data files it applies to; a data file, delete file or manifest that is
//! missing or cannot be read fails the scan with an error naming it (rows of a data file are
//! never delivered without its deletes).
//!
//! # Format versions
//!
//! Formats v1, v2 and v3 are read. Metadata iceberg-rust 0.10.1 refuses although valid
//! writers produce it is rewritten before it parses it ([`normalize`]): a v1 table's `void`
//! partition field named like a column (partition evolution), and the v3 types it lacks.
//! Format v3:
//!
//! * **Deletion vectors** (Puffin `deletion-vector-v1` blobs) delete rows like position
//!   deletes; a vector replaces the position-delete files of its data file (the spec). Each
//!   Puffin file is read about once per scan (the blobs its tasks need, coalesced), and
//!   shared; a damaged vector (length, magic, CRC, Roaring structure, cardinality, bounds) is
//!   `ErrorKind::CorruptTable` naming the Puffin file. They are found in the snapshot's delete
//!   manifests (iceberg-rust's `FileScanTask` lacks their offsets), so `FileScanTask`s
//!   planned elsewhere ([`scan_tasks`]) with a Puffin file attached are `Unsupported`.
//! * **Row lineage**: `_row_id` (the value the file stores, else the data file's first row
//!   id, explicit or inherited as the spec says, plus `_pos`; null when the table does not
//!   know it) and `_last_updated_sequence_number` (stored, else the file's data sequence
//!   number) are selectable like `_pos`: nullable `Int64`, reserved field ids. Selecting them
//!   on a v1/v2 table is `InvalidArgument`; filtering on them is `Unsupported`.
//! * **Initial defaults** of top-level columns (nanosecond timestamps included, which
//!   iceberg-rust's parser drops); `write-default` is for writers and ignored. A default
//!   rayquet cannot apply (binary, fixed, uuid, nested fields) is `Unsupported` when the
//!   column is read.
//! * **Types**: `timestamp_ns`/`timestamptz_ns` (nanosecond Arrow timestamps); `unknown` reads
//!   as an all-null `Null` column; `geometry` and `geography` columns are `Unsupported`
//!   (naming the column and a data file) when a scan reads them, selected or in a filter;
//!   other columns of such tables read.
//! * **`variant`** (at any depth) reads in the Arrow form of Parquet's variant encoding:
//!   [`variant_type`], `Struct<metadata: Binary (non-null), value: Binary (nullable)>`, the
//!   field tagged with Arrow's canonical extension type `arrow.parquet.variant` (parquet's
//!   `parquet::variant::VariantType`; `VariantArray::try_new` reads a column as variants,
//!   `variant_to_json` as JSON), with the field id and nullability of the table's field. The
//!   data files store a variant as the Iceberg spec has it, a Parquet group annotated
//!   `VARIANT` holding `metadata` and `value` (the field id on the group); a file that shreds
//!   it (a `typed_value` field, per Parquet's variant shredding spec) is unshredded as it is
//!   read (parquet-variant-compute's `unshred_variant`), every value whole in `value`. One
//!   type for every file however each shreds (a scan's schema is the table's), the canonical
//!   unshredded storage of the extension type (its children as parquet's reader gives an
//!   unshredded file's, so such files are not copied). `metadata` and `value` carry no field
//!   id (Iceberg gives them none). Filters on a variant column are `Unsupported`.
//!
//! Not supported: ORC/Avro data files, predicates with binary/fixed/uuid literals.
//!
//! Metadata, manifests and delete files go through [`storage`], an object_store-backed
//! FileIO configured like the data stores, when rayquet loads the table ([`load_table`]); a
//! `Table` from another catalog keeps its own FileIO for them.

mod avro_bounds;
#[cfg(feature = "catalog")]
pub mod catalog;
mod deletes;
mod dv;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod integrity;
pub mod normalize;
mod plan;
pub mod predicate;
mod stats;
pub mod storage;

pub use dv::DeletionVector;

pub use normalize::V3Types;
pub use plan::{scan_tasks, ScanPlan, TaskUnit};

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::datatypes::{Field, Schema as ArrowSchema, SchemaRef};
use futures::{StreamExt, TryStreamExt};
use iceberg::metadata_columns::{
    file_field, RESERVED_COL_NAME_FILE, RESERVED_COL_NAME_LAST_UPDATED_SEQUENCE_NUMBER,
    RESERVED_COL_NAME_POS, RESERVED_COL_NAME_ROW_ID, RESERVED_FIELD_ID_FILE,
    RESERVED_FIELD_ID_LAST_UPDATED_SEQUENCE_NUMBER, RESERVED_FIELD_ID_POS,
    RESERVED_FIELD_ID_ROW_ID,
};
use iceberg::spec::{Schema, Type};
use iceberg::table::{StaticTable, Table};
use iceberg::TableIdent;

use rayquet::expr::Expr;
use rayquet::task::FIELD_ID_KEY;
use rayquet::{Error, ErrorKind, Result, Scan, ScanBuilder, ScanOptions, ScanReader};

pub use iceberg::expr::Predicate;

/// An iceberg error as a rayquet one (kept as the source). Damaged metadata is
/// `CorruptTable`, a missing object `NotFound`, unsupported features `Unsupported`.
pub(crate) fn ice(e: iceberg::Error) -> Error {
    use iceberg::ErrorKind as K;
    // A rayquet error inside (a damaged metadata file, a store's error) comes back whole.
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(&e);
    while let Some(c) = cause {
        if let Some(inner) = c.downcast_ref::<Error>() {
            if inner.kind() == ErrorKind::CorruptTable {
                return inner.clone();
            }
        }
        cause = c.source();
    }
    let kind = match e.kind() {
        K::DataInvalid => ErrorKind::CorruptTable,
        K::FeatureUnsupported => ErrorKind::Unsupported,
        K::PreconditionFailed => ErrorKind::InvalidArgument,
        _ => ErrorKind::Io,
    };
    Error::new(kind, e.to_string()).with_source(e)
}

/// Load the table at `location`: a metadata JSON file (`.../metadata/00003-....metadata.json`,
/// local path or URL), or a table directory, whose `metadata/version-hint.text` or newest
/// `metadata/*.metadata.json` is read. `options`: the stores (store options, caller stores
/// by URL root) and IO runtime used for metadata, manifests, delete and data files.
pub fn load_table(location: &str, options: &ScanOptions) -> Result<Table> {
    let loc = location.to_string();
    let opts = options.clone();
    rayquet::layer::block_on(options, async move {
        let metadata = metadata_file(&loc, &opts).await?;
        let factory = storage::ObjectStoreStorageFactory::new(&opts);
        let file_io = iceberg::io::FileIOBuilder::new(Arc::new(factory)).build();
        let name = loc
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("table");
        let ident = TableIdent::from_strs(["rayquet", name]).map_err(ice)?;
        let table = StaticTable::from_metadata_file(&metadata, ident, file_io)
            .await
            .map_err(|e| {
                ice(e)
                    .context("loading table metadata")
                    .with_path(metadata.clone())
            })?;
        Ok(table.into_table())
    })
}

/// The metadata file of a table location (see [`load_table`]).
async fn metadata_file(location: &str, options: &ScanOptions) -> Result<String> {
    if location.ends_with(".metadata.json") {
        return Ok(location.to_string());
    }
    let root = location.trim_end_matches('/');
    let dir = format!("{root}/metadata/");
    let (store, prefix) = rayquet::layer::store_for_literal(options, &dir)?;
    use object_store::ObjectStoreExt;
    // version-hint.text (Hadoop-style tables): the current version number, or an older one
    // (a writer that failed to update it, or a copy): as Iceberg Java's HadoopTableOperations,
    // read the newest of N, N+1, N+2... that exists.
    let hint = prefix.clone().join("version-hint.text");
    if let Ok(r) = store.get(&hint).await {
        if let Ok(b) = r.bytes().await {
            let v = String::from_utf8_lossy(&b).trim().to_string();
            if let Ok(mut v) = v.parse::<u64>() {
                let exists = |v: u64| {
                    let (store, prefix) = (&store, &prefix);
                    async move {
                        for c in [format!("v{v}.metadata.json"), format!("{v}.metadata.json")] {
                            if store.head(&prefix.clone().join(c.as_str())).await.is_ok() {
                                return Some(c);
                            }
                        }
                        None
                    }
                };
                if let Some(mut name) = exists(v).await {
                    while let Some(next) = exists(v + 1).await {
                        (v, name) = (v + 1, next);
                    }
                    return Ok(format!("{dir}{name}"));
                }
            }
        }
    }
    let listed: Vec<object_store::ObjectMeta> = store
        .list(Some(&prefix))
        .try_collect()
        .await
        .map_err(|e| Error::from(e).context("listing").with_path(dir.clone()))?;
    let version = |name: &str| -> Option<u64> {
        let stem = name.strip_suffix(".metadata.json")?;
        let digits: String = stem
            .trim_start_matches('v')
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse().ok()
    };
    listed
        .iter()
        .filter_map(|m| {
            let name = m.location.filename()?;
            version(name).map(|v| (v, name.to_string()))
        })
        .max()
        .map(|(_, name)| format!("{dir}{name}"))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::NotFound,
                "no metadata/*.metadata.json (or version-hint.text) under the table location",
            )
            .with_path(location)
        })
}

/// A scan of an Iceberg table: a snapshot (or branch/tag), and every option of a rayquet scan
/// ([`ScanBuilder`]: columns, filter, limit, batch size, budget, stores, runtime...). Ends in
/// [`TableScan::build`] (or [`TableScan::to_scan`], the rayquet [`Scan`] of its tasks).
///
/// [`ScanBuilder::columns`] selects top-level columns, in order (a column may be named twice;
/// `_file` and `_pos` are the metadata columns: the data file's path and the row's position in
/// it, counting every row of the file, deleted ones included; `_row_id` and
/// `_last_updated_sequence_number` are format v3's row lineage). [`ScanBuilder::filter`] names
/// columns of the table (dotted paths into structs), selected or not; it is also handed to
/// iceberg's planner to skip files.
///
/// Files come in the order iceberg's planner emits them, which varies from run to run (it
/// reads manifests concurrently); within a file rows keep their order. A scan whose order
/// matters should sort, or plan the tasks itself and use [`scan_tasks`].
#[derive(Clone)]
pub struct TableScan {
    /// The table, once loaded (given, or loaded from `location` with the scan's options).
    table: std::sync::OnceLock<Table>,
    location: Option<String>,
    /// The catalog and `namespace.table` it is loaded from, when it is named so.
    #[cfg(feature = "catalog")]
    catalog: Option<(catalog::CatalogConfig, String)>,
    snapshot: Option<i64>,
    reference: Option<String>,
    as_of: Option<i64>,
    case_sensitive: bool,
    statistics: bool,
    options: ScanOptions,
}

impl ScanBuilder for TableScan {
    fn options_mut(&mut self) -> &mut ScanOptions {
        &mut self.options
    }
}

impl std::fmt::Debug for TableScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableScan")
            .field("table", &self.table.get().map(|t| t.identifier()))
            .field("location", &self.location)
            .field("snapshot", &self.snapshot)
            .field("reference", &self.reference)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl TableScan {
    /// A scan of the table at `location` (a table directory, with its `metadata/` folder, or
    /// a metadata JSON file; a local path or URL, taken literally as Iceberg writes
    /// locations), its current snapshot, all columns. The table is loaded when the scan needs
    /// it, through the scan's stores ([`load_table`]).
    pub fn open(location: impl Into<String>) -> Self {
        Self::with(std::sync::OnceLock::new(), Some(location.into()))
    }

    /// A scan of a table loaded elsewhere (any catalog's `iceberg::table::Table`, or
    /// [`load_table`]'s), its current snapshot, all columns. Its metadata, manifests and
    /// delete files are read through the table's own FileIO.
    pub fn from_table(table: Table) -> Self {
        Self::with(std::sync::OnceLock::from(table), None)
    }

    /// A scan of `table` (`namespace.table`; nested namespaces dotted, `a.b.table`) in
    /// `catalog` (pyiceberg's configuration of a catalog by name:
    /// [`catalog::CatalogConfig::load`]), its current snapshot, all columns. The table is
    /// loaded when the scan needs it, its FileIO reading through the scan's stores with the
    /// catalog's vended properties over them (feature `rest`).
    #[cfg(feature = "catalog")]
    pub fn from_catalog(catalog: catalog::CatalogConfig, table: impl Into<String>) -> Self {
        let mut scan = Self::with(std::sync::OnceLock::new(), None);
        scan.catalog = Some((catalog, table.into()));
        scan
    }

    fn with(table: std::sync::OnceLock<Table>, location: Option<String>) -> Self {
        TableScan {
            table,
            location,
            #[cfg(feature = "catalog")]
            catalog: None,
            snapshot: None,
            reference: None,
            as_of: None,
            case_sensitive: true,
            statistics: false,
            options: ScanOptions::default(),
        }
    }

    /// The snapshot the scan reads (`None`: the table has none, so the scan is empty), as
    /// [`TableScan::snapshot_id`], [`TableScan::reference`] or
    /// [`TableScan::as_of_timestamp`] choose it (the current one by default). Loads the table
    /// if needed.
    pub fn snapshot_to_read(&self) -> Result<Option<iceberg::spec::SnapshotRef>> {
        let (id, _, _) = self.snapshot()?;
        let md = self.table()?.metadata();
        Ok(id.and_then(|id| md.snapshot_by_id(id).cloned()))
    }

    /// The table, loaded from its location on first use (through the scan's stores).
    pub fn table(&self) -> Result<&Table> {
        if let Some(t) = self.table.get() {
            return Ok(t);
        }
        #[cfg(feature = "catalog")]
        if let Some((catalog, name)) = &self.catalog {
            let loaded = catalog.load_table(name, &self.options)?;
            return Ok(self.table.get_or_init(|| loaded));
        }
        let location = self.location.as_deref().unwrap_or_default();
        let loaded = load_table(location, &self.options)?;
        Ok(self.table.get_or_init(|| loaded))
    }

    /// Read this snapshot (time travel), in the schema it was written with.
    pub fn snapshot_id(mut self, id: i64) -> Self {
        self.snapshot = Some(id);
        self
    }

    /// Read the snapshot a branch or tag points to (takes precedence over
    /// [`TableScan::snapshot_id`] and [`TableScan::as_of_timestamp`]). A branch (`main`
    /// included) is read in the table's current schema, a tag in its snapshot's schema, as
    /// Iceberg Java does.
    pub fn reference(mut self, name: impl Into<String>) -> Self {
        self.reference = Some(name.into());
        self
    }

    /// Read the snapshot that was current at this time (milliseconds since the Unix epoch):
    /// the last entry of the table's snapshot log at or before it, in that snapshot's schema
    /// (Iceberg Java's `SnapshotUtil.snapshotIdAsOfTime`, Spark's `TIMESTAMP AS OF`). A time
    /// before the first snapshot is an error. Takes precedence over
    /// [`TableScan::snapshot_id`].
    pub fn as_of_timestamp(mut self, millis: i64) -> Self {
        self.as_of = Some(millis);
        self
    }

    /// Match column names (selection and filter) case-sensitively (the default) or
    /// not. Output columns are named as the table names them.
    pub fn case_sensitive(mut self, yes: bool) -> Self {
        self.case_sensitive = yes;
        self
    }

    /// Give each planned [`TaskUnit`] its columns' statistics from the snapshot's manifests
    /// ([`TaskUnit::stats`]: the entries' lower and upper bounds and null counts), for a
    /// planner that estimates what a scan returns. Off by default: the data manifests are
    /// then read once more at planning.
    pub fn statistics(mut self, on: bool) -> Self {
        self.statistics = on;
        self
    }

    /// The snapshot to read (`None`: the table has none, so the scan is empty), the schema
    /// the scan reads it in, and the snapshot's own schema (which iceberg's planner binds
    /// names in).
    ///
    /// The read schema follows Iceberg Java's `SnapshotUtil.schemaFor`: the table's current
    /// schema for the current snapshot and for any branch (a rename or added column with no
    /// write since shows); the snapshot's schema for a snapshot id, a timestamp or a tag.
    fn snapshot(&self) -> Result<(Option<i64>, Arc<Schema>, Arc<Schema>)> {
        let md = self.table()?.metadata();
        let current = Arc::clone(md.current_schema());
        let (snap, current_schema) = match (&self.reference, self.as_of, self.snapshot) {
            (Some(r), _, _) => {
                let (id, branch) = table_ref(md, r).ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidArgument,
                        format!("the table has no branch or tag {r:?}"),
                    )
                })?;
                let snap = md.snapshot_by_id(id).ok_or_else(|| {
                    Error::new(
                        ErrorKind::CorruptTable,
                        format!("the ref {r:?} names snapshot {id}, which the table lacks"),
                    )
                })?;
                (Some(snap), branch)
            }
            (None, Some(ts), _) => {
                let id = md
                    .history()
                    .iter()
                    .filter(|l| l.timestamp_ms <= ts)
                    .max_by_key(|l| l.timestamp_ms)
                    .map(|l| l.snapshot_id)
                    .ok_or_else(|| {
                        Error::new(
                            ErrorKind::InvalidArgument,
                            format!("the table has no snapshot at or before {ts} ms"),
                        )
                    })?;
                let snap = md.snapshot_by_id(id).ok_or_else(|| {
                    Error::new(
                        ErrorKind::CorruptTable,
                        format!("the snapshot log names snapshot {id}, which the table lacks"),
                    )
                })?;
                (Some(snap), false)
            }
            (None, None, Some(id)) => (
                Some(md.snapshot_by_id(id).ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidArgument,
                        format!("the table has no snapshot {id}"),
                    )
                })?),
                false,
            ),
            (None, None, None) => (md.current_snapshot(), true),
        };
        match snap {
            Some(s) => {
                let own = s.schema(md).map_err(ice)?;
                let read = if current_schema {
                    current
                } else {
                    Arc::clone(&own)
                };
                Ok((Some(s.snapshot_id()), read, own))
            }
            None => Ok((None, Arc::clone(&current), current)),
        }
    }

    /// The field ids the scan projects, in order.
    fn field_ids(&self, schema: &Schema) -> Result<Vec<i32>> {
        let Some(cols) = rayquet::layer::columns(&self.options) else {
            return Ok(schema.as_struct().fields().iter().map(|f| f.id).collect());
        };
        cols.iter()
            .map(|c| {
                let (name, top) = resolve_column(schema, c, self.case_sensitive)?;
                let top_name = match schema.as_struct().field_by_id(top) {
                    Some(f) => f.name.as_str(),
                    None => name.as_str(), // _file, _pos, row lineage
                };
                if name != top_name {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!("{c:?} is a nested field: select top-level columns"),
                    ));
                }
                Ok(top)
            })
            .collect()
    }

    /// The Arrow schema of the scan's batches.
    pub fn output_schema(&self) -> Result<SchemaRef> {
        let (_, schema, _) = self.snapshot()?;
        let types = V3Types::of(self.table()?.metadata().properties(), schema.schema_id());
        output_schema_with(&schema, &self.field_ids(&schema)?, &types)
    }

    /// Plan the scan (iceberg plans on the scan's IO runtime; its tasks stream in as they
    /// come) and start reading.
    pub fn build(self) -> Result<ScanReader> {
        self.to_scan()?.build()
    }

    /// The rayquet scan of this table scan's tasks, with its options: iceberg plans it on the
    /// scan's IO runtime and its tasks stream in as they come.
    pub fn to_scan(self) -> Result<Scan> {
        let file_io = self.table()?.file_io().clone();
        let Planned {
            plan,
            units,
            options,
            vectors,
        } = self.plan()?;
        plan.scan_with(plan::UnitSource::Stream(units), options, file_io, vectors)
    }

    /// Plan the scan for reading elsewhere: the [`ScanPlan`] its tasks share and the stream of
    /// their [`TaskUnit`]s (iceberg plans on the scan's IO runtime, lazily, as the stream is
    /// polled), both serializable and free of credentials, and the scan's options (its
    /// columns and filter are in the plan; the table's FileIO storage properties, a catalog's
    /// vended credentials among them, are under the caller's store options). A process that
    /// reads units calls [`ScanPlan::scan`] with its own options (stores, credentials, pools).
    pub fn plan(mut self) -> Result<Planned> {
        self.table()?;
        let (snapshot, schema, snapshot_schema) = self.snapshot()?;
        let ids = self.field_ids(&schema)?;
        let mut options = std::mem::take(&mut self.options);
        // The table's FileIO properties (its catalog's endpoint, region, vended credentials)
        // for the data files too, under the caller's own store options.
        let file_io = storage::store_options(self.table()?.file_io().config().props());
        rayquet::layer::default_store_options(&mut options, file_io);
        rayquet::layer::take_columns(&mut options);
        let filter = rayquet::layer::take_filter(&mut options);
        // Column names as the table spells them (unknown names fail here).
        let case_sensitive = self.case_sensitive;
        let filter = filter
            .map(|f| {
                f.try_map_columns(&mut |c| {
                    resolve_column(&schema, &c, case_sensitive).map(|(n, _)| n)
                })
            })
            .transpose()?;
        let table = self.table()?;
        let md = table.metadata();
        let types = V3Types::of(md.properties(), schema.schema_id());
        let v3 = md.format_version() >= iceberg::spec::FormatVersion::V3;
        let lineage = ids.iter().any(|id| is_lineage(*id));
        let stats_columns = self.statistics.then(|| stats::stats_columns(&schema, &ids));
        if lineage && !v3 {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{RESERVED_COL_NAME_ROW_ID} and {RESERVED_COL_NAME_LAST_UPDATED_SEQUENCE_NUMBER} \
                     (row lineage) exist in Iceberg format v3 tables only; this table is format \
                     {}",
                    md.format_version()
                ),
            ));
        }
        // Checks the projection and filter now (unknown columns, bad literals).
        let layout = Layout::new(&schema, ids.clone(), filter.as_ref(), &types)?;
        // The planner only skips files: columns whose type was promoted are left out of its
        // predicate (iceberg-rust 0.10.1 compares the old type's bounds with the new type's
        // literal and wrongly skips those files).
        let promoted = promoted_ids(table, &schema);
        // iceberg's planner binds names in the snapshot's own schema, which may be older than
        // the schema read (a rename, an added column): the filter and selection reach it by
        // field id, spelled as the snapshot's schema spells them; a column the snapshot's
        // schema lacks prunes nothing.
        let plan_predicate = filter.as_ref().map(|f| {
            let renamed = f.clone().try_map_columns(&mut |c| {
                Ok::<_, std::convert::Infallible>(
                    schema
                        .field_by_name(&c)
                        .and_then(|field| snapshot_schema.name_by_field_id(field.id))
                        .map(str::to_string)
                        .unwrap_or_else(|| "\u{1}absent from the snapshot".to_string()),
                )
            });
            let renamed = renamed.unwrap_or_else(|never| match never {});
            predicate::to_predicate(&renamed, &snapshot_schema, &promoted)
        });
        let table = on_io_runtime(table, &options)?;
        let (planner_ids, names): (Vec<i32>, Vec<String>) = layout
            .out_ids()
            .iter()
            .filter_map(|id| match *id {
                RESERVED_FIELD_ID_FILE => Some((*id, RESERVED_COL_NAME_FILE.to_string())),
                RESERVED_FIELD_ID_POS => Some((*id, RESERVED_COL_NAME_POS.to_string())),
                // Row lineage is rayquet's (iceberg-rust 0.10.1 has no reader for it).
                id if is_lineage(id) => None,
                id => Some((id, snapshot_schema.name_by_field_id(id)?.to_string())),
            })
            .unzip();
        let mapping = table
            .metadata()
            .properties()
            .get(iceberg::spec::DEFAULT_SCHEMA_NAME_MAPPING)
            .and_then(|json| serde_json::from_str::<iceberg::spec::NameMapping>(json).ok());
        let plan = ScanPlan::new(Arc::clone(&schema), ids.clone(), filter, mapping.as_ref())
            .with_types(types);
        let planner = plan::Units::new(Some(&table), planner_ids);
        // Without a filter every data file is read, so every deletion vector is needed: they
        // are registered as soon as they are known, and each Puffin file is read once.
        let vectors = dv::Registry::default();
        let register = plan.filter_is_none().then(|| vectors.clone());
        let units = async move {
            let Some(snapshot) = snapshot else {
                return Ok::<_, Error>(futures::stream::empty().boxed());
            };
            let mut b = table
                .scan()
                .snapshot_id(snapshot)
                .select(names)
                .with_case_sensitive(true);
            if let Some(p) = plan_predicate {
                b = b.with_filter(p);
            }
            let scan = b.build().map_err(ice)?;
            let index = FileIndex::load(&table, snapshot, lineage, stats_columns).await?;
            if let Some(r) = register {
                index.vectors.values().for_each(|v| r.want(v));
            }
            let planner = Arc::new(planner.with_index(Arc::new(index)));
            let stream = scan.plan_files().await.map_err(ice)?;
            Ok(stream.map(move |t| planner.unit(t.map_err(ice)?)).boxed())
        };
        Ok(Planned {
            plan,
            units: futures::stream::once(units).try_flatten().boxed(),
            options,
            vectors,
        })
    }
}

/// A planned Iceberg scan ([`TableScan::plan`]): what its tasks share, their units as iceberg
/// plans them, and the scan's remaining options.
pub struct Planned {
    /// What every task shares (serializable).
    pub plan: ScanPlan,
    /// The units, planned lazily as the stream is polled (on the scan's IO runtime).
    pub units: futures::stream::BoxStream<'static, Result<TaskUnit>>,
    /// The scan's options, without the columns and filter (they are in the plan).
    pub options: ScanOptions,
    /// The deletion vectors a local read of these units will need.
    vectors: dv::Registry,
}

impl std::fmt::Debug for Planned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planned")
            .field("plan", &self.plan)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// `table` bound to the scan's IO runtime, so iceberg plans (and spawns) there, whatever
/// runtime the caller's catalog used (a table whose runtime has stopped plans nothing).
fn on_io_runtime(table: &Table, options: &ScanOptions) -> Result<Table> {
    let io = rayquet::layer::io_runtime(options);
    let runtime = {
        let _guard = io.enter();
        iceberg::Runtime::try_current().map_err(ice)?
    };
    let mut b = Table::builder()
        .metadata(table.metadata_ref())
        .identifier(table.identifier().clone())
        .file_io(table.file_io().clone())
        .runtime(runtime)
        .readonly(true);
    if let Some(loc) = table.metadata_location() {
        b = b.metadata_location(loc);
    }
    b.build().map_err(ice)
}

/// The snapshot id of the ref `name` of the table and whether it is a branch (`main` always
/// is). iceberg 0.10.1 keeps the refs' kinds private (its metadata serializes them:
/// `refs.<name>`), and drops the refs of a format v1 table when it parses it (the normalised
/// metadata keeps them in a table property, see `normalize`).
fn table_ref(md: &iceberg::spec::TableMetadata, name: &str) -> Option<(i64, bool)> {
    let of = |r: &serde_json::Value| -> Option<(i64, bool)> {
        let id = r.get("snapshot-id")?.as_i64()?;
        let kind = r.get("type").and_then(|t| t.as_str()).unwrap_or("branch");
        Some((id, kind.eq_ignore_ascii_case("branch")))
    };
    let v1_refs = md
        .properties()
        .get(normalize::REFS_PROPERTY)
        .and_then(|j| serde_json::from_str::<serde_json::Value>(j).ok());
    if let Some(found) = v1_refs.as_ref().and_then(|r| r.get(name)).and_then(of) {
        return Some(found);
    }
    if let Some(found) = serde_json::to_value(md)
        .ok()
        .and_then(|v| v.get("refs")?.get(name).and_then(of))
    {
        return Some(found);
    }
    // A table without refs has its current snapshot as `main`.
    (name == iceberg::spec::MAIN_BRANCH)
        .then(|| md.current_snapshot_id())
        .flatten()
        .map(|id| (id, true))
}

/// Field ids of `schema` (at any depth) whose primitive type differs in another schema of the
/// table: columns promoted by schema evolution (int → long, float → double, wider decimals).
fn promoted_ids(table: &Table, schema: &Schema) -> HashSet<i32> {
    let mut out = HashSet::new();
    for other in table.metadata().schemas_iter() {
        for (id, f) in schema.field_id_to_fields() {
            if let Some(g) = other.field_by_id(*id) {
                if let (Type::Primitive(a), Type::Primitive(b)) =
                    (f.field_type.as_ref(), g.field_type.as_ref())
                {
                    if a != b {
                        out.insert(*id);
                    }
                }
            }
        }
    }
    out
}

/// A column named in a selection or filter, as `schema` spells it (a top-level name or a
/// dotted path through structs; `_file`, `_pos`), and the id of its top-level field.
fn resolve_column(schema: &Schema, name: &str, case_sensitive: bool) -> Result<(String, i32)> {
    let eq = |a: &str, b: &str| {
        if case_sensitive {
            a == b
        } else {
            a.eq_ignore_ascii_case(b) || a.to_lowercase() == b.to_lowercase()
        }
    };
    if eq(name, RESERVED_COL_NAME_FILE) {
        return Ok((RESERVED_COL_NAME_FILE.to_string(), RESERVED_FIELD_ID_FILE));
    }
    if eq(name, RESERVED_COL_NAME_POS) {
        return Ok((RESERVED_COL_NAME_POS.to_string(), RESERVED_FIELD_ID_POS));
    }
    if eq(name, RESERVED_COL_NAME_ROW_ID) {
        return Ok((
            RESERVED_COL_NAME_ROW_ID.to_string(),
            RESERVED_FIELD_ID_ROW_ID,
        ));
    }
    if eq(name, RESERVED_COL_NAME_LAST_UPDATED_SEQUENCE_NUMBER) {
        return Ok((
            RESERVED_COL_NAME_LAST_UPDATED_SEQUENCE_NUMBER.to_string(),
            RESERVED_FIELD_ID_LAST_UPDATED_SEQUENCE_NUMBER,
        ));
    }
    let top = schema.as_struct().fields();
    if let Some(f) = top.iter().find(|f| f.name == name) {
        return Ok((f.name.clone(), f.id));
    }
    let found = top.iter().filter(|f| eq(&f.name, name)).collect::<Vec<_>>();
    if let [f] = found.as_slice() {
        return Ok((f.name.clone(), f.id));
    }
    // A path into structs.
    let first = name.split('.').next().unwrap_or_default();
    let walk = || -> Option<(String, i32)> {
        let root = top.iter().find(|f| eq(&f.name, first))?;
        let mut path = root.name.clone();
        let mut field = root;
        for p in name.split('.').skip(1) {
            let Type::Struct(st) = field.field_type.as_ref() else {
                return None;
            };
            field = st.fields().iter().find(|f| eq(&f.name, p))?;
            path.push('.');
            path.push_str(&field.name);
        }
        Some((path, root.id))
    };
    if name.contains('.') {
        if let Some(found) = walk() {
            return Ok(found);
        }
    }
    let names: Vec<_> = top.iter().map(|f| &f.name).collect();
    Err(Error::new(
        ErrorKind::InvalidArgument,
        format!("no column {name:?}; columns are {names:?}"),
    ))
}

/// Whether `id` is a row lineage column's (`_row_id`, `_last_updated_sequence_number`).
pub(crate) fn is_lineage(id: i32) -> bool {
    id == RESERVED_FIELD_ID_ROW_ID || id == RESERVED_FIELD_ID_LAST_UPDATED_SEQUENCE_NUMBER
}

/// The columns a scan reads: the output's, then the top-level columns only its filter
/// needs (dropped again by a transform once the filter ran), then the row position when
/// `_row_id` needs it.
pub(crate) struct Layout {
    /// Field ids read, in order: the output's, then the filter's.
    read_ids: Vec<i32>,
    /// How many of them are output columns.
    n_out: usize,
    read: SchemaRef,
    out: SchemaRef,
    /// Output columns of row lineage (index, field id): read as the file stores them (by
    /// their reserved field ids), completed per task ([`Layout::transform`]).
    lineage: Vec<(usize, i32)>,
    /// The read column holding the row's position (for `_row_id`).
    pos: Option<usize>,
}

impl Layout {
    pub(crate) fn new(
        schema: &Schema,
        ids: Vec<i32>,
        filter: Option<&Expr>,
        types: &V3Types,
    ) -> Result<Layout> {
        let out = output_schema_with(schema, &ids, types)?;
        let n_out = ids.len();
        let mut read_ids = ids;
        if let Some(f) = filter {
            for c in f.columns() {
                let (_, top) = resolve_column(schema, c, true)?;
                if is_lineage(top) {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!("filters on the row lineage column {c} are not supported"),
                    ));
                }
                if schema
                    .field_by_name(c)
                    .is_some_and(|f| types.get(f.id) == Some("variant"))
                {
                    return Err(Error::new(
                        ErrorKind::Unsupported,
                        format!(
                            "filters on the variant column {c:?} are not supported (select it \
                             and filter its decoded values)"
                        ),
                    ));
                }
                if out.fields().iter().any(|o| o.name() == c) {
                    continue;
                }
                if !read_ids.contains(&top) {
                    read_ids.push(top);
                }
            }
        }
        if read_ids.is_empty() {
            // No column selected: read one to count rows (the output keeps none).
            if let Some(f) = schema.as_struct().fields().first() {
                read_ids.push(f.id);
            }
        }
        let lineage: Vec<(usize, i32)> = read_ids[..n_out]
            .iter()
            .enumerate()
            .filter(|(_, id)| is_lineage(**id))
            .map(|(i, id)| (i, *id))
            .collect();
        if lineage
            .iter()
            .any(|(_, id)| *id == RESERVED_FIELD_ID_ROW_ID)
            && !read_ids.contains(&RESERVED_FIELD_ID_POS)
        {
            read_ids.push(RESERVED_FIELD_ID_POS);
        }
        let pos = read_ids.iter().position(|id| *id == RESERVED_FIELD_ID_POS);
        let read = if read_ids.len() == n_out {
            Arc::clone(&out)
        } else {
            output_schema_with(schema, &read_ids, types)?
        };
        Ok(Layout {
            read_ids,
            n_out,
            read,
            out,
            lineage,
            pos,
        })
    }

    fn out_ids(&self) -> &[i32] {
        &self.read_ids[..self.n_out]
    }

    /// The transform from the read columns to the output's, when they differ.
    fn projection(&self) -> Option<rayquet::task::BatchTransform> {
        if self.read_ids.len() == self.n_out {
            return None;
        }
        let (out, n) = (Arc::clone(&self.out), self.n_out);
        Some(Arc::new(move |b: arrow::array::RecordBatch| {
            let options =
                arrow::array::RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
            arrow::array::RecordBatch::try_new_with_options(
                Arc::clone(&out),
                b.columns()[..n].to_vec(),
                &options,
            )
            .map_err(|e| Error::new(ErrorKind::SchemaMismatch, e.to_string()))
        }))
    }

    /// The transform of one data file's batches: row lineage completed with the file's first
    /// row id and data sequence number (the spec: a value the file stores wins, a null is
    /// inherited), then the output's columns.
    fn transform(
        &self,
        first_row_id: Option<i64>,
        sequence_number: Option<i64>,
    ) -> Option<rayquet::task::BatchTransform> {
        if self.lineage.is_empty() {
            return self.projection();
        }
        let (out, n, pos) = (Arc::clone(&self.out), self.n_out, self.pos);
        let lineage = self.lineage.clone();
        Some(Arc::new(move |b: arrow::array::RecordBatch| {
            use arrow::array::{Array, AsArray, Int64Array};
            use arrow::datatypes::Int64Type;
            let mut columns = b.columns()[..n].to_vec();
            for &(i, id) in &lineage {
                let stored = columns[i].as_primitive::<Int64Type>();
                if stored.null_count() == 0 {
                    continue;
                }
                let filled: Int64Array = if id == RESERVED_FIELD_ID_ROW_ID {
                    let pos = b
                        .column(pos.expect("a position column"))
                        .as_primitive::<Int64Type>();
                    (0..b.num_rows())
                        .map(|r| match stored.is_valid(r) {
                            true => Some(stored.value(r)),
                            false => first_row_id.map(|f| f + pos.value(r)),
                        })
                        .collect()
                } else {
                    (0..b.num_rows())
                        .map(|r| match stored.is_valid(r) {
                            true => Some(stored.value(r)),
                            false => sequence_number,
                        })
                        .collect()
                };
                columns[i] = Arc::new(filled);
            }
            let options =
                arrow::array::RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
            arrow::array::RecordBatch::try_new_with_options(Arc::clone(&out), columns, &options)
                .map_err(|e| Error::new(ErrorKind::SchemaMismatch, e.to_string()))
        }))
    }
}

/// The Arrow schema of a scan projecting `ids` of `schema`, as iceberg's `to_arrow()` gives
/// it.
pub fn output_schema(schema: &Schema, ids: &[i32]) -> Result<SchemaRef> {
    output_schema_with(schema, ids, &V3Types::default())
}

/// A metadata column's field: its name, an Arrow type, nullability and field id.
fn metadata_field(name: &str, ty: arrow::datatypes::DataType, nullable: bool, id: i32) -> Field {
    Field::new(name, ty, nullable)
        .with_metadata(HashMap::from([(FIELD_ID_KEY.to_string(), id.to_string())]))
}

/// [`output_schema`] of a table whose schema had v3 types replaced ([`V3Types`]): `unknown`
/// fields are `Null`, `variant` fields [`variant_type`] (at any depth).
pub(crate) fn output_schema_with(
    schema: &Schema,
    ids: &[i32],
    types: &V3Types,
) -> Result<SchemaRef> {
    let arrow = iceberg::arrow::schema_to_arrow_schema(schema).map_err(ice)?;
    let fields = ids
        .iter()
        .map(|id| match *id {
            RESERVED_FIELD_ID_FILE => {
                let f = file_field();
                let ty =
                    iceberg::arrow::datum_to_arrow_type_with_ree(&iceberg::spec::Datum::string(""));
                Ok(Arc::new(metadata_field(&f.name, ty, !f.required, f.id)))
            }
            RESERVED_FIELD_ID_POS => Ok(Arc::new(metadata_field(
                RESERVED_COL_NAME_POS,
                arrow::datatypes::DataType::Int64,
                false,
                RESERVED_FIELD_ID_POS,
            ))),
            // Nullable, as Iceberg Java has them: a row of a file whose first row id is
            // unknown (written before the table moved to v3) has no `_row_id`.
            RESERVED_FIELD_ID_ROW_ID => Ok(Arc::new(metadata_field(
                RESERVED_COL_NAME_ROW_ID,
                arrow::datatypes::DataType::Int64,
                true,
                RESERVED_FIELD_ID_ROW_ID,
            ))),
            RESERVED_FIELD_ID_LAST_UPDATED_SEQUENCE_NUMBER => Ok(Arc::new(metadata_field(
                RESERVED_COL_NAME_LAST_UPDATED_SEQUENCE_NUMBER,
                arrow::datatypes::DataType::Int64,
                true,
                RESERVED_FIELD_ID_LAST_UPDATED_SEQUENCE_NUMBER,
            ))),
            id => arrow
                .fields()
                .iter()
                .find(|f| f.metadata().get(FIELD_ID_KEY).and_then(|v| v.parse().ok()) == Some(id))
                .map(|f| uuid_field(&v3_field(f, types), schema))
                .ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidArgument,
                        format!("field id {id} is not a top-level field of the schema"),
                    )
                }),
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(ArrowSchema::new(fields)))
}

/// The Arrow type of an Iceberg `variant` column: the storage of Arrow's canonical Parquet
/// variant extension type (`arrow.parquet.variant`), unshredded: a struct of the variant's
/// `metadata` (non-null) and `value` (nullable, as the Arrow spec has it; never null in a
/// non-null row) binaries, in the Parquet variant binary encoding.
pub fn variant_type() -> arrow::datatypes::DataType {
    use arrow::datatypes::DataType;
    DataType::Struct(
        vec![
            Field::new("metadata", DataType::Binary, false),
            Field::new("value", DataType::Binary, true),
        ]
        .into(),
    )
}

/// `f` with its v3 types (by field id, at any depth) given their Arrow types: `unknown`
/// fields `Null`, `variant` fields [`variant_type`] tagged `arrow.parquet.variant`.
fn v3_field(f: &arrow::datatypes::FieldRef, types: &V3Types) -> arrow::datatypes::FieldRef {
    use arrow::datatypes::DataType;
    if types.no_types() {
        return Arc::clone(f);
    }
    let id = f.metadata().get(FIELD_ID_KEY).and_then(|v| v.parse().ok());
    match id.and_then(|id| types.get(id)) {
        Some("unknown") => {
            return Arc::new(
                f.as_ref()
                    .clone()
                    .with_data_type(DataType::Null)
                    .with_nullable(true),
            )
        }
        Some("variant") => {
            let field = f.as_ref().clone().with_data_type(variant_type());
            return Arc::new(field.with_extension_type(parquet::variant::VariantType));
        }
        _ => {}
    }
    let ty = match f.data_type() {
        DataType::Struct(children) => {
            DataType::Struct(children.iter().map(|c| v3_field(c, types)).collect())
        }
        DataType::List(e) => DataType::List(v3_field(e, types)),
        DataType::LargeList(e) => DataType::LargeList(v3_field(e, types)),
        DataType::Map(e, sorted) => DataType::Map(v3_field(e, types), *sorted),
        _ => return Arc::clone(f),
    };
    Arc::new(f.as_ref().clone().with_data_type(ty))
}

/// `f` with its Iceberg `uuid` fields (nested ones too) typed as Arrow's canonical
/// `arrow.uuid` extension over their 16 bytes, as pyiceberg's `to_arrow()` types them.
fn uuid_field(f: &arrow::datatypes::FieldRef, schema: &Schema) -> arrow::datatypes::FieldRef {
    use arrow::datatypes::DataType;
    use iceberg::spec::PrimitiveType;
    let ty = match f.data_type() {
        DataType::FixedSizeBinary(16) => {
            let id = f.metadata().get(FIELD_ID_KEY).and_then(|v| v.parse().ok());
            let is_uuid = id
                .and_then(|id| schema.field_by_id(id))
                .is_some_and(|field| {
                    matches!(*field.field_type, Type::Primitive(PrimitiveType::Uuid))
                });
            if !is_uuid {
                return Arc::clone(f);
            }
            let mut metadata = f.metadata().clone();
            metadata.insert(EXTENSION_NAME.to_string(), "arrow.uuid".to_string());
            return Arc::new(f.as_ref().clone().with_metadata(metadata));
        }
        DataType::Struct(children) => {
            DataType::Struct(children.iter().map(|c| uuid_field(c, schema)).collect())
        }
        DataType::List(e) => DataType::List(uuid_field(e, schema)),
        DataType::LargeList(e) => DataType::LargeList(uuid_field(e, schema)),
        DataType::Map(e, sorted) => DataType::Map(uuid_field(e, schema), *sorted),
        _ => return Arc::clone(f),
    };
    Arc::new(f.as_ref().clone().with_data_type(ty))
}

/// The field metadata key naming an Arrow extension type.
const EXTENSION_NAME: &str = "ARROW:extension:name";

/// A data file's first row id (when the table knows it) and data sequence number.
pub(crate) type Lineage = (Option<i64>, Option<i64>);

/// What a snapshot's manifests say that iceberg-rust's `FileScanTask` does not carry: the
/// partition spec of each data file (tables with several specs), row lineage (first row id,
/// inherited as the spec says, and data sequence number: scans selecting it), and deletion
/// vectors (format v3: which Puffin blob deletes rows of which data file).
#[derive(Debug, Default)]
pub(crate) struct FileIndex {
    /// Partition spec id by data file path (`None`: the table has one spec).
    pub spec_of: Option<HashMap<String, i32>>,
    /// Column statistics by data file path (when asked for).
    pub stats: Option<stats::StatsByFile>,
    /// Usable split offsets by data file path (with the statistics, for planning).
    pub splits: Option<HashMap<String, Vec<u64>>>,
    /// First row id (when known) and data sequence number by data file path.
    pub lineage: Option<HashMap<String, Lineage>>,
    /// Deletion vectors by the data file they apply to.
    pub vectors: HashMap<String, DeletionVector>,
    /// The Puffin files of those vectors (iceberg-rust attaches them as position deletes).
    pub puffins: HashSet<String>,
}

impl FileIndex {
    /// The index of `snapshot`: data manifests are read when the table has several specs or
    /// `lineage` or the statistics of `stats` columns (field id, name) are asked for, delete
    /// manifests when the table is format v3.
    async fn load(
        table: &Table,
        snapshot: i64,
        lineage: bool,
        stats: Option<Vec<(i32, String)>>,
    ) -> Result<FileIndex> {
        use iceberg::spec::{DataContentType, DataFileFormat, ManifestContentType};
        let md = table.metadata();
        let specs = md.partition_specs_iter().len() > 1;
        let v3 = md.format_version() >= iceberg::spec::FormatVersion::V3;
        let mut index = FileIndex {
            spec_of: specs.then(HashMap::new),
            lineage: lineage.then(HashMap::new),
            stats: stats.is_some().then(HashMap::new),
            splits: stats.is_some().then(HashMap::new),
            ..Default::default()
        };
        let data_manifests = specs || lineage || stats.is_some();
        if !data_manifests && !v3 {
            return Ok(index);
        }
        let snap = md
            .snapshot_by_id(snapshot)
            .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "no such snapshot"))?;
        let list = table.manifest_list_reader(snap).load().await.map_err(ice)?;
        for m in list.entries() {
            let data = m.content == ManifestContentType::Data;
            if (data && !data_manifests) || (!data && !v3) {
                continue;
            }
            let manifest = m.load_manifest(table.file_io()).await.map_err(ice)?;
            let corrupt = |why: String| {
                Error::new(ErrorKind::CorruptTable, why).with_path(m.manifest_path.clone())
            };
            // First row id inheritance: a live data file without one gets the manifest's
            // plus the record counts of the live files before it that had none.
            let mut next_row_id = m.first_row_id.map(|f| f as i64);
            for e in manifest.entries() {
                if !e.is_alive() {
                    continue;
                }
                let f = e.data_file();
                if data {
                    if let Some(map) = &mut index.spec_of {
                        map.insert(f.file_path().to_string(), m.partition_spec_id);
                    }
                    if let (Some(map), Some(columns)) = (&mut index.stats, &stats) {
                        map.insert(f.file_path().to_string(), stats::file_stats(f, columns));
                    }
                    if let (Some(map), Some(offsets)) = (&mut index.splits, stats::split_offsets(f))
                    {
                        map.insert(f.file_path().to_string(), offsets);
                    }
                    if let Some(map) = &mut index.lineage {
                        let first = match f.first_row_id() {
                            Some(id) => Some(id),
                            None => {
                                let id = next_row_id;
                                if let Some(n) = &mut next_row_id {
                                    *n += f.record_count() as i64;
                                }
                                id
                            }
                        };
                        map.insert(f.file_path().to_string(), (first, e.sequence_number()));
                    }
                } else if e.content_type() == DataContentType::PositionDeletes
                    && f.file_format() == DataFileFormat::Puffin
                {
                    let path = f.file_path();
                    let (Some(target), Some(offset), Some(length)) = (
                        f.referenced_data_file(),
                        f.content_offset(),
                        f.content_size_in_bytes(),
                    ) else {
                        return Err(corrupt(format!(
                            "the deletion vector in {path} lacks its referenced data file, \
                             content offset or content size"
                        )));
                    };
                    let end = offset.checked_add(length);
                    if offset < 0
                        || length < 0
                        || end.is_none_or(|e| e as u64 > f.file_size_in_bytes())
                    {
                        return Err(corrupt(format!(
                            "the deletion vector at bytes {offset}+{length} of {path} lies \
                             outside the file ({} bytes)",
                            f.file_size_in_bytes()
                        )));
                    }
                    let dv = DeletionVector {
                        path: path.to_string(),
                        offset: offset as u64,
                        length: length as u64,
                        cardinality: f.record_count(),
                    };
                    index.puffins.insert(path.to_string());
                    if let Some(other) = index.vectors.insert(target.clone(), dv) {
                        return Err(corrupt(format!(
                            "two deletion vectors for the data file {target} ({} and {path})",
                            other.path
                        )));
                    }
                }
            }
        }
        Ok(index)
    }
}
