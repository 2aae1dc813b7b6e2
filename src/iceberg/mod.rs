//! Iceberg tables (feature `iceberg`): read a table, or `FileScanTask`s planned by
//! iceberg-rust, on every core, through rayquet's pipeline.
//!
//! iceberg-rust plans the scan (`plan_files()`, on rayquet's IO runtime: manifests pruned by
//! partition and column metrics, deletes attached by partition and sequence number), and its
//! tasks stream into one rayquet scan as they come: each becomes a [`FileTask`] whose columns
//! are found by field id (or the table's name mapping, for files written without ids),
//! whose identity-partition columns are constants, whose position deletes are deleted rows
//! and whose equality deletes are a hash-set row filter. Decoding runs on the rayon pool.
//!
//! ```no_run
//! # fn main() -> rayquet::Result<()> {
//! use rayquet::iceberg::{load_table, TableScan};
//! let table = load_table("s3://warehouse/db/events", &[])?; // or a metadata JSON file
//! let reader = TableScan::new(table)
//!     .select(["id", "ts", "payload"])
//!     .filter(rayquet::Expr::parse_sql("ts >= '2024-01-01'")?)
//!     .to_scan()? // a rayquet::Scan: set batch size, budget, ordering... then build
//!     .build()?;
//! for batch in reader {
//!     let batch = batch?;
//! }
//! # Ok(()) }
//! ```
//!
//! Output schema and field metadata are what iceberg-rust's `to_arrow()` gives: the table's
//! schema as of the snapshot (`schema_to_arrow_schema`, with `PARQUET:field_id` metadata),
//! `_file` run-end encoded, `_pos` an `Int64`. Where iceberg-rust 0.10.1's reader departs
//! from the Iceberg spec, rayquet follows the spec: identity-partition values come from the
//! partition metadata (iceberg-rust's planner leaves the spec unset and reads the data file,
//! which fails for files that do not hold the partition column).
//!
//! Metadata, manifests and delete files go through [`storage`], an object_store-backed
//! FileIO configured like the data stores, when rayquet loads the table ([`load_table`]); a
//! `Table` from another catalog keeps its own FileIO for them.

mod deletes;
pub mod predicate;
pub mod storage;

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::{Field, Schema as ArrowSchema, SchemaRef};
use futures::{StreamExt, TryStreamExt};
use iceberg::io::FileIO;
use iceberg::metadata_columns::{
    file_field, RESERVED_COL_NAME_FILE, RESERVED_COL_NAME_POS, RESERVED_FIELD_ID_FILE,
    RESERVED_FIELD_ID_POS,
};
use iceberg::scan::FileScanTask;
use iceberg::spec::{
    DataContentType, Literal, NameMapping as IcebergNameMapping, PartitionSpecRef, Schema,
    Transform, Type,
};
use iceberg::table::{StaticTable, Table};
use iceberg::TableIdent;

use crate::expr::Expr;
use crate::task::{ColumnSource, FileTask, NameMapping, FIELD_ID_KEY};
use crate::{Error, ErrorKind, Result, Scan};

pub use iceberg::expr::Predicate;

use deletes::{DeleteFiles, EqualityDeletes, TaskDeletes};

fn ice(e: iceberg::Error) -> Error {
    Error::new(ErrorKind::Io, e.to_string())
}

/// Load the table at `location`: a metadata JSON file (`.../metadata/00003-....metadata.json`,
/// local path or URL), or a table directory, whose `metadata/version-hint.text` or newest
/// `metadata/*.metadata.json` is read. `options`: object_store configuration keys (as for
/// [`Scan::store_option`]) for the stores of metadata, manifests, delete and data files.
pub fn load_table(location: &str, options: &[(String, String)]) -> Result<Table> {
    let io = crate::runtime::io_handle();
    let loc = location.to_string();
    let options = options.to_vec();
    crate::runtime::wait(&io, async move {
        let metadata = metadata_file(&loc, &options).await?;
        let factory = storage::ObjectStoreStorageFactory {
            options: options.clone(),
        };
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
                Error::new(
                    ErrorKind::CorruptFooter,
                    format!("loading table metadata: {e}"),
                )
                .with_path(metadata.clone())
            })?;
        Ok(table.into_table())
    })
    .unwrap_or_else(|| Err(Error::new(ErrorKind::Io, "the IO runtime stopped")))
}

/// The metadata file of a table location (see [`load_table`]).
async fn metadata_file(location: &str, options: &[(String, String)]) -> Result<String> {
    if location.ends_with(".metadata.json") {
        return Ok(location.to_string());
    }
    let root = location.trim_end_matches('/');
    let dir = format!("{root}/metadata/");
    let (store, prefix) = crate::object_store_for(&dir, options)?;
    use object_store::ObjectStoreExt;
    // version-hint.text (Hadoop-style tables): the current version number.
    let hint = prefix.clone().join("version-hint.text");
    if let Ok(r) = store.get(&hint).await {
        if let Ok(b) = r.bytes().await {
            let v = String::from_utf8_lossy(&b).trim().to_string();
            if !v.is_empty() {
                let candidates = [format!("v{v}.metadata.json"), format!("{v}.metadata.json")];
                for c in candidates {
                    if store.head(&prefix.clone().join(c.as_str())).await.is_ok() {
                        return Ok(format!("{dir}{c}"));
                    }
                }
            }
        }
    }
    let listed: Vec<object_store::ObjectMeta> = store
        .list(Some(&prefix))
        .try_collect()
        .await
        .map_err(|e| Error::new(ErrorKind::Io, e.to_string()).with_path(dir.clone()))?;
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

/// A scan of an Iceberg table: a snapshot (or branch/tag), columns, a filter. Ends in
/// [`TableScan::to_scan`], a rayquet [`Scan`] to configure and build.
pub struct TableScan {
    table: Table,
    snapshot: Option<i64>,
    reference: Option<String>,
    columns: Option<Vec<String>>,
    predicate: Option<Predicate>,
    filter: Option<Expr>,
    case_sensitive: bool,
}

impl std::fmt::Debug for TableScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableScan")
            .field("table", self.table.identifier())
            .field("snapshot", &self.snapshot)
            .field("reference", &self.reference)
            .field("columns", &self.columns)
            .finish_non_exhaustive()
    }
}

impl TableScan {
    /// A scan of the table's current snapshot, all columns.
    pub fn new(table: Table) -> Self {
        TableScan {
            table,
            snapshot: None,
            reference: None,
            columns: None,
            predicate: None,
            filter: None,
            case_sensitive: true,
        }
    }

    /// Read this snapshot (time travel).
    pub fn snapshot_id(mut self, id: i64) -> Self {
        self.snapshot = Some(id);
        self
    }

    /// Read the snapshot a branch or tag points to.
    pub fn reference(mut self, name: impl Into<String>) -> Self {
        self.reference = Some(name.into());
        self
    }

    /// Read only these top-level columns, in this order (`_file` and `_pos` are the
    /// metadata columns: the data file's path and the row's position in it).
    pub fn select<I, S>(mut self, columns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.columns = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Only rows where this iceberg predicate holds: used by iceberg's planner (manifests,
    /// data files) and by rayquet (row groups, pages, bloom filters, then exactly per row).
    pub fn predicate(mut self, predicate: Predicate) -> Self {
        self.predicate = Some(predicate);
        self
    }

    /// Only rows where this rayquet filter holds (column names of the table, e.g. from
    /// [`Expr::parse_sql`]): also handed to iceberg's planner to skip files.
    pub fn filter(mut self, filter: Expr) -> Self {
        self.filter = Some(filter);
        self
    }

    /// Match column names case-sensitively (the default) or not.
    pub fn case_sensitive(mut self, yes: bool) -> Self {
        self.case_sensitive = yes;
        self
    }

    /// The snapshot to read (`None`: the table has none, so the scan is empty) and its schema.
    fn snapshot(&self) -> Result<(Option<i64>, Arc<Schema>)> {
        let md = self.table.metadata();
        let snap = match (&self.reference, self.snapshot) {
            (Some(r), _) => Some(md.snapshot_for_ref(r).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("the table has no branch or tag {r:?}"),
                )
            })?),
            (None, Some(id)) => Some(md.snapshot_by_id(id).ok_or_else(|| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("the table has no snapshot {id}"),
                )
            })?),
            (None, None) => md.current_snapshot(),
        };
        match snap {
            Some(s) => Ok((Some(s.snapshot_id()), s.schema(md).map_err(ice)?)),
            None => Ok((None, Arc::clone(md.current_schema()))),
        }
    }

    /// The field ids the scan projects, in order.
    fn field_ids(&self, schema: &Schema) -> Result<Vec<i32>> {
        let Some(cols) = &self.columns else {
            return Ok(schema.as_struct().fields().iter().map(|f| f.id).collect());
        };
        cols.iter()
            .map(|c| {
                let eq = |a: &str, b: &str| {
                    if self.case_sensitive {
                        a == b
                    } else {
                        a.eq_ignore_ascii_case(b)
                    }
                };
                if eq(c, RESERVED_COL_NAME_FILE) {
                    return Ok(RESERVED_FIELD_ID_FILE);
                }
                if eq(c, RESERVED_COL_NAME_POS) {
                    return Ok(RESERVED_FIELD_ID_POS);
                }
                let f = if self.case_sensitive {
                    schema.field_by_name(c)
                } else {
                    schema.field_by_name_case_insensitive(c)
                };
                match f {
                    Some(f) if schema.as_struct().field_by_id(f.id).is_some() => Ok(f.id),
                    Some(_) => Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!("{c:?} is a nested field: select top-level columns"),
                    )),
                    None => {
                        let names: Vec<_> = schema
                            .as_struct()
                            .fields()
                            .iter()
                            .map(|f| &f.name)
                            .collect();
                        Err(Error::new(
                            ErrorKind::InvalidArgument,
                            format!("no column {c:?}; columns are {names:?}"),
                        ))
                    }
                }
            })
            .collect()
    }

    /// The Arrow schema of the scan's batches.
    pub fn output_schema(&self) -> Result<SchemaRef> {
        let (_, schema) = self.snapshot()?;
        output_schema(&schema, &self.field_ids(&schema)?)
    }

    /// The rayquet scan of this table scan: iceberg plans it on rayquet's IO runtime and its
    /// tasks stream in as they come.
    pub fn to_scan(self) -> Result<Scan> {
        let (snapshot, schema) = self.snapshot()?;
        let ids = self.field_ids(&schema)?;
        let out = output_schema(&schema, &ids)?;
        // Column names of the filter, as the table spells them.
        let mut filter = match (&self.predicate, &self.filter) {
            (Some(p), Some(f)) => Some(predicate::to_expr(p)?.and(f.clone())),
            (Some(p), None) => Some(predicate::to_expr(p)?),
            (None, Some(f)) => Some(f.clone()),
            (None, None) => None,
        };
        if !self.case_sensitive {
            filter = filter.map(|f| respell(f, &schema));
        }
        let plan_predicate = match (&self.predicate, &self.filter) {
            (Some(p), Some(f)) => Some(p.clone().and(predicate::to_predicate(f, &schema))),
            (Some(p), None) => Some(p.clone()),
            (None, Some(f)) => Some(predicate::to_predicate(f, &schema)),
            (None, None) => None,
        };
        let table = self.table.clone();
        let names: Vec<String> = ids
            .iter()
            .map(|id| match *id {
                RESERVED_FIELD_ID_FILE => RESERVED_COL_NAME_FILE.to_string(),
                RESERVED_FIELD_ID_POS => RESERVED_COL_NAME_POS.to_string(),
                id => schema.name_by_field_id(id).unwrap_or_default().to_string(),
            })
            .collect();
        let case_sensitive = self.case_sensitive;
        let context = Context::new(Some(&table), table.file_io().clone(), Arc::clone(&out));
        let tasks = async move {
            let Some(snapshot) = snapshot else {
                return Ok::<_, Error>(futures::stream::empty().boxed());
            };
            let mut b = table
                .scan()
                .snapshot_id(snapshot)
                .select(names)
                .with_case_sensitive(case_sensitive);
            if let Some(p) = plan_predicate {
                b = b.with_filter(p);
            }
            let scan = b.build().map_err(ice)?;
            let specs = spec_of_files(&table, snapshot).await?;
            let context = Arc::new(context.with_spec_of(specs));
            let stream = scan.plan_files().await.map_err(ice)?;
            Ok(stream.map(move |t| context.task(t.map_err(ice)?)).boxed())
        };
        let stream = futures::stream::once(tasks).try_flatten();
        let mut scan = Scan::from_task_stream(out, stream);
        for (k, v) in storage::store_options(self.table.file_io().config().props()) {
            scan = scan.store_option(k, v);
        }
        if let Some(f) = filter {
            scan = scan.filter(f);
        }
        Ok(scan)
    }
}

/// Spell the filter's column names as the table does (case-insensitive scans).
fn respell(e: Expr, schema: &Schema) -> Expr {
    let fix = |c: String| match schema.field_by_name_case_insensitive(&c) {
        Some(f) => f.name.clone(),
        None => c,
    };
    match e {
        Expr::Compare { column, op, value } => Expr::Compare {
            column: fix(column),
            op,
            value,
        },
        Expr::InList {
            column,
            values,
            negated,
        } => Expr::InList {
            column: fix(column),
            values,
            negated,
        },
        Expr::IsNull { column, negated } => Expr::IsNull {
            column: fix(column),
            negated,
        },
        Expr::Between {
            column,
            low,
            high,
            negated,
        } => Expr::Between {
            column: fix(column),
            low,
            high,
            negated,
        },
        Expr::And(a, b) => respell(*a, schema).and(respell(*b, schema)),
        Expr::Or(a, b) => respell(*a, schema).or(respell(*b, schema)),
        Expr::Not(a) => respell(*a, schema).negate(),
        Expr::Literal(b) => Expr::Literal(b),
    }
}

/// The Arrow schema of a scan projecting `ids` of `schema`, as iceberg's `to_arrow()` gives
/// it.
pub fn output_schema(schema: &Schema, ids: &[i32]) -> Result<SchemaRef> {
    let arrow = iceberg::arrow::schema_to_arrow_schema(schema).map_err(ice)?;
    let fields = ids
        .iter()
        .map(|id| match *id {
            RESERVED_FIELD_ID_FILE => {
                let f = file_field();
                let ty =
                    iceberg::arrow::datum_to_arrow_type_with_ree(&iceberg::spec::Datum::string(""));
                Ok(Arc::new(
                    Field::new(&f.name, ty, !f.required).with_metadata(HashMap::from([(
                        FIELD_ID_KEY.to_string(),
                        f.id.to_string(),
                    )])),
                ))
            }
            RESERVED_FIELD_ID_POS => Ok(Arc::new(
                Field::new(
                    RESERVED_COL_NAME_POS,
                    arrow::datatypes::DataType::Int64,
                    false,
                )
                .with_metadata(HashMap::from([(
                    FIELD_ID_KEY.to_string(),
                    RESERVED_FIELD_ID_POS.to_string(),
                )])),
            )),
            id => arrow
                .fields()
                .iter()
                .find(|f| f.metadata().get(FIELD_ID_KEY).and_then(|v| v.parse().ok()) == Some(id))
                .cloned()
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

/// The partition spec id of every data file of `snapshot`, when the table has more than one
/// spec (with one, every file has it).
async fn spec_of_files(table: &Table, snapshot: i64) -> Result<Option<Arc<HashMap<String, i32>>>> {
    let md = table.metadata();
    if md.partition_specs_iter().len() <= 1 {
        return Ok(None);
    }
    let snap = md
        .snapshot_by_id(snapshot)
        .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "no such snapshot"))?;
    let list = table.manifest_list_reader(snap).load().await.map_err(ice)?;
    let mut out = HashMap::new();
    let manifests = list
        .entries()
        .iter()
        .filter(|m| m.content == iceberg::spec::ManifestContentType::Data);
    for m in manifests {
        let manifest = m.load_manifest(table.file_io()).await.map_err(ice)?;
        for e in manifest.entries() {
            out.insert(e.file_path().to_string(), m.partition_spec_id);
        }
    }
    Ok(Some(Arc::new(out)))
}

/// What turning `FileScanTask`s into rayquet tasks needs, shared by a scan's tasks.
struct Context {
    schema: SchemaRef,
    specs: HashMap<i32, PartitionSpecRef>,
    spec_of: Option<Arc<HashMap<String, i32>>>,
    deletes: Arc<DeleteFiles>,
    mappings: std::sync::Mutex<Option<(IcebergNameMapping, Arc<NameMapping>)>>,
}

impl Context {
    fn new(table: Option<&Table>, file_io: FileIO, schema: SchemaRef) -> Self {
        let specs = table
            .map(|t| {
                t.metadata()
                    .partition_specs_iter()
                    .map(|s| (s.spec_id(), Arc::clone(s)))
                    .collect()
            })
            .unwrap_or_default();
        Context {
            schema,
            specs,
            spec_of: None,
            deletes: Arc::new(DeleteFiles::new(file_io)),
            mappings: Default::default(),
        }
    }

    fn with_spec_of(mut self, spec_of: Option<Arc<HashMap<String, i32>>>) -> Self {
        self.spec_of = spec_of;
        self
    }

    /// The partition spec of a task's data file.
    fn spec(&self, t: &FileScanTask) -> Option<PartitionSpecRef> {
        if let Some(s) = &t.partition_spec {
            return Some(Arc::clone(s));
        }
        match &self.spec_of {
            Some(map) => self.specs.get(map.get(&t.data_file_path)?).cloned(),
            None if self.specs.len() == 1 => self.specs.values().next().cloned(),
            None => None,
        }
    }

    /// The name mapping as rayquet takes it (converted once per distinct mapping).
    fn name_mapping(&self, m: &IcebergNameMapping) -> Arc<NameMapping> {
        let mut cached = self.mappings.lock().expect("mapping lock");
        if let Some((k, v)) = cached.as_ref() {
            if k == m {
                return Arc::clone(v);
            }
        }
        let mut out = NameMapping::default();
        fn walk(fields: &[Arc<iceberg::spec::MappedField>], out: &mut NameMapping) {
            for f in fields {
                if let Some(id) = f.field_id() {
                    out.insert(id, f.names().iter().cloned());
                }
                walk(f.fields(), out);
            }
        }
        let top: Vec<Arc<iceberg::spec::MappedField>> =
            m.fields().iter().cloned().map(Arc::new).collect();
        walk(&top, &mut out);
        let out = Arc::new(out);
        *cached = Some((m.clone(), Arc::clone(&out)));
        out
    }

    /// One planned task as a rayquet task.
    fn task(&self, t: FileScanTask) -> Result<FileTask> {
        let path = t.data_file_path.clone();
        if t.data_file_format != iceberg::spec::DataFileFormat::Parquet {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "{:?} data files are not supported (Parquet only)",
                    t.data_file_format
                ),
            )
            .with_path(path));
        }
        let schema = t.schema();
        // Identity-partition constants, by source field id.
        let mut constants: HashMap<i32, Option<crate::expr::Value>> = HashMap::new();
        if let (Some(spec), Some(partition)) = (self.spec(&t), &t.partition) {
            if spec.fields().len() == partition.fields().len() {
                for (pf, value) in spec.fields().iter().zip(partition.iter()) {
                    if pf.transform != Transform::Identity {
                        continue;
                    }
                    let Some(field) = schema.field_by_id(pf.source_id) else {
                        continue;
                    };
                    let Type::Primitive(ty) = field.field_type.as_ref() else {
                        continue;
                    };
                    match value {
                        None => {
                            constants.insert(pf.source_id, None);
                        }
                        Some(Literal::Primitive(p)) => {
                            if let Some(v) = predicate::literal_value(p, ty) {
                                constants.insert(pf.source_id, Some(v));
                            }
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        let columns: Vec<ColumnSource> = t
            .project_field_ids
            .iter()
            .map(|&id| match id {
                RESERVED_FIELD_ID_FILE => ColumnSource::FilePath,
                RESERVED_FIELD_ID_POS => ColumnSource::RowIndex,
                id => match constants.get(&id) {
                    Some(Some(v)) => ColumnSource::Constant(v.clone()),
                    Some(None) => ColumnSource::Null,
                    None => {
                        let src = ColumnSource::field_id(id);
                        let default = schema.field_by_id(id).and_then(|f| {
                            let Type::Primitive(ty) = f.field_type.as_ref() else {
                                return None;
                            };
                            match f.initial_default.as_ref()? {
                                Literal::Primitive(p) => predicate::literal_value(p, ty),
                                _ => None,
                            }
                        });
                        match default {
                            Some(d) => src.or_default(d),
                            None => src,
                        }
                    }
                },
            })
            .collect();
        if columns.len() != self.schema.fields().len() {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the task projects {} fields, the scan {}",
                    columns.len(),
                    self.schema.fields().len()
                ),
            )
            .with_path(path));
        }
        let mut task = FileTask::new(path.clone())
            .size(t.file_size_in_bytes)
            .columns(columns)
            .strict_field_ids(true)
            .positional_field_ids(t.name_mapping.is_none());
        if let Some(m) = &t.name_mapping {
            task = task.name_mapping(self.name_mapping(m));
        }
        if t.start != 0 || t.length != t.file_size_in_bytes {
            task = task.byte_range(t.start..t.start + t.length);
        }
        let positions: Vec<String> = t
            .deletes
            .iter()
            .filter(|d| d.file_type == DataContentType::PositionDeletes)
            .map(|d| d.file_path.clone())
            .collect();
        let equality: Vec<(String, Vec<i32>)> = t
            .deletes
            .iter()
            .filter(|d| d.file_type == DataContentType::EqualityDeletes)
            .map(|d| {
                let ids = d.equality_ids.clone().unwrap_or_default();
                (d.file_path.clone(), ids)
            })
            .collect();
        let equality = if equality.is_empty() {
            None
        } else {
            let eq = Arc::new(EqualityDeletes::new(equality, schema)?);
            task = task.row_filter(Arc::clone(&eq) as Arc<dyn crate::task::RowFilter>);
            Some(eq)
        };
        if !positions.is_empty() || equality.is_some() {
            task = task.delete_loader(Arc::new(TaskDeletes {
                files: Arc::clone(&self.deletes),
                data_file: path,
                positions,
                equality,
            }));
        }
        Ok(task)
    }
}

/// A scan of `FileScanTask`s the caller planned (an engine that plans and shards them
/// itself). Every task must project the same fields; `table` (when given) supplies the
/// partition specs for identity-partition constants and the FileIO for delete files
/// (otherwise the tasks' own specs and an object_store FileIO from the environment).
/// The output schema is the first task's; an empty list gives an error.
pub fn scan_tasks<I>(tasks: I, table: Option<&Table>) -> Result<Scan>
where
    I: IntoIterator<Item = FileScanTask>,
    I::IntoIter: Send + 'static,
{
    let mut tasks = tasks.into_iter().peekable();
    let first = tasks
        .peek()
        .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "no tasks to scan"))?;
    let out = output_schema(first.schema(), &first.project_field_ids)?;
    let file_io = match table {
        Some(t) => t.file_io().clone(),
        None => storage::file_io(Vec::<(String, String)>::new()),
    };
    let context = Arc::new(Context::new(table, file_io, Arc::clone(&out)));
    let mut scan = Scan::from_tasks(out, tasks.map(move |t| context.task(t)));
    if let Some(t) = table {
        for (k, v) in storage::store_options(t.file_io().config().props()) {
            scan = scan.store_option(k, v);
        }
    }
    Ok(scan)
}
