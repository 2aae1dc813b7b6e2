//! Planned scans that can be read elsewhere: a [`ScanPlan`] (what every task of a scan
//! shares: the snapshot's schema, the projected field ids, the filter, the name mapping) and a
//! stream of [`TaskUnit`]s (one data file or split, with its identity-partition constants and
//! its delete files), both serializable and free of credentials. [`TableScan::plan`] plans on
//! the coordinator; [`ScanPlan::scan`] reads units anywhere, with that process's own stores.
//! A local [`TableScan::to_scan`] is the two steps in one process.
//!
//! Invariant: a unit carries everything a task needs that is not in the plan (no table
//! metadata is read to rebuild it); the rebuilt task is the one a local scan builds: same
//! columns, constants, deletes (position, equality, deletion vector: its Puffin file, offset,
//! length), byte range, row lineage (first row id, data sequence number).
//!
//! [`TableScan::plan`]: crate::TableScan::plan
//! [`TableScan::to_scan`]: crate::TableScan::to_scan

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use iceberg::io::{FileIO, FileIOBuilder};
use iceberg::metadata_columns::{RESERVED_FIELD_ID_FILE, RESERVED_FIELD_ID_POS};
use iceberg::scan::FileScanTask;
use iceberg::spec::{
    DataContentType, Literal, NameMapping as IcebergNameMapping, PartitionSpecRef, Schema,
    Transform, Type,
};
use iceberg::table::Table;
use rayquet::expr::{Expr, Value};
use rayquet::task::{ColumnSource, FileTask, NameMapping};
use rayquet::{Error, ErrorKind, Result, Scan, ScanBuilder, ScanOptions};
use serde::{Deserialize, Serialize};

use crate::deletes::{DeleteFiles, EqualityDeletes, TaskDeletes};
use crate::dv::{DeletionVector, Registry};
use crate::normalize::V3Types;
use crate::{is_lineage, predicate, storage, FileIndex, Layout};

/// What every task of a planned Iceberg scan shares: serializable (serde), no credentials.
/// Made by [`crate::TableScan::plan`]; read units with [`ScanPlan::scan`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScanPlan {
    /// The schema of the snapshot read.
    schema: Arc<Schema>,
    /// The projected field ids, in output order (`_file`, `_pos` included).
    ids: Vec<i32>,
    /// The exact filter, in the table's column names.
    filter: Option<Expr>,
    /// The table's name mapping (for data files written without field ids), as rayquet takes
    /// it.
    name_mapping: Option<NameMapping>,
    /// Fields of `schema` whose v3 type iceberg-rust lacks (see [`V3Types`]).
    #[serde(default)]
    types: V3Types,
}

/// One data file (or a split of one) of a planned Iceberg scan, with what reading it needs
/// beyond the [`ScanPlan`]: serializable (serde), no credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// A field this version does not know is an error, never ignored (a unit from a newer
// coordinator could ask for less than the whole file).
#[serde(deny_unknown_fields)]
pub struct TaskUnit {
    /// The data file (a URL or path as the table's metadata names it).
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// The split: row groups whose midpoint lies in `start..start + length`.
    pub start: u64,
    /// The split's length.
    pub length: u64,
    /// Identity-partition values by source field id (`None`: null).
    pub constants: Vec<(i32, Option<Value>)>,
    /// Position-delete files that apply to it.
    pub positions: Vec<String>,
    /// Equality-delete files that apply to it, with their equality field ids.
    pub equality: Vec<(String, Vec<i32>)>,
    /// Columns of files without field ids resolve through the plan's name mapping.
    pub mapped: bool,
    /// Its rows (the manifest's record count), when known.
    #[serde(default)]
    pub record_count: Option<u64>,
    /// Its deletion vector (format v3), which replaces position-delete files.
    #[serde(default)]
    pub deletion_vector: Option<DeletionVector>,
    /// The `_row_id` of its first row (row lineage; set when the scan selects it and the
    /// table knows it).
    #[serde(default)]
    pub first_row_id: Option<i64>,
    /// Its data sequence number (row lineage; set when the scan selects it).
    #[serde(default)]
    pub sequence_number: Option<i64>,
    /// Its columns' statistics from the manifest, when the scan asked for them
    /// ([`crate::TableScan::statistics`]; empty otherwise): for planning on the coordinator,
    /// so not sent with the unit. The data file's, for each of its splits.
    #[serde(skip)]
    pub stats: Vec<rayquet::task::ColumnStats>,
    /// The first bytes of its file's row groups, from the manifest's split offsets, when the
    /// scan asked for statistics and the offsets are usable (empty otherwise): for cutting
    /// the file into splits on the coordinator without reading its footer, so not sent with
    /// the unit.
    #[serde(skip)]
    pub split_offsets: Vec<u64>,
    /// Only these row groups of the file (a unit below the file, with the split; row
    /// positions, and so position deletes, still count every row of the file). `None`: every
    /// row group of the split.
    #[serde(default)]
    pub row_groups: Option<std::ops::Range<usize>>,
}

impl TaskUnit {
    /// Every file the unit reads: its data file, its delete files and its deletion vector's
    /// Puffin file, as the manifests name them. What a worker checks against the roots it may
    /// read (`rayquet_datafusion::guard`) before it opens any.
    pub fn paths(&self) -> Vec<&str> {
        let mut out = vec![self.path.as_str()];
        out.extend(self.positions.iter().map(String::as_str));
        out.extend(self.equality.iter().map(|(p, _)| p.as_str()));
        out.extend(self.deletion_vector.as_ref().map(|dv| dv.path.as_str()));
        out
    }
}

impl ScanPlan {
    pub(crate) fn new(
        schema: Arc<Schema>,
        ids: Vec<i32>,
        filter: Option<Expr>,
        mapping: Option<&IcebergNameMapping>,
    ) -> Self {
        ScanPlan {
            schema,
            ids,
            filter,
            name_mapping: mapping.map(name_mapping),
            types: V3Types::default(),
        }
    }

    pub(crate) fn filter_is_none(&self) -> bool {
        self.filter.is_none()
    }

    pub(crate) fn with_types(mut self, types: V3Types) -> Self {
        self.types = types;
        self
    }

    /// The Arrow schema of the batches a scan of this plan delivers (as iceberg-rust's
    /// `to_arrow()` gives it).
    pub fn output_schema(&self) -> Result<arrow::datatypes::SchemaRef> {
        crate::output_schema_with(&self.schema, &self.ids, &self.types)
    }

    /// A rayquet scan of `units` of this plan, in this process: data and delete files are read
    /// through the stores of `options` (this process's environment and store options), decoded
    /// on its pool. Units are pulled lazily as the scan needs them.
    pub fn scan<S>(&self, units: S, options: ScanOptions) -> Result<Scan>
    where
        S: Stream<Item = Result<TaskUnit>> + Send + 'static,
    {
        let factory = storage::ObjectStoreStorageFactory::new(&options);
        let file_io = FileIOBuilder::new(Arc::new(factory)).build();
        let vectors = Registry::default();
        self.scan_with(UnitSource::Stream(units.boxed()), options, file_io, vectors)
    }

    /// [`ScanPlan::scan`] with the FileIO that reads delete files.
    pub(crate) fn scan_with(
        &self,
        units: UnitSource,
        options: ScanOptions,
        file_io: FileIO,
        vectors: Registry,
    ) -> Result<Scan> {
        let context = Arc::new(Context::new(self, file_io, vectors)?);
        let (read, out) = (
            Arc::clone(&context.layout.read),
            Arc::clone(&context.layout.out),
        );
        let scan = match units {
            UnitSource::Stream(units) => {
                let tasks = units.map(move |u| context.task(u?));
                Scan::from_task_stream(Arc::clone(&read), tasks)
            }
            // A caller's iterator (which may block): pulled on the IO runtime's blocking pool.
            UnitSource::Iter(units) => {
                let tasks = units.map(move |u| context.task(u?));
                Scan::from_tasks(Arc::clone(&read), tasks)
            }
        };
        let mut scan = scan.with_options(options);
        if read != out {
            scan = scan.transformed_schema(out);
        }
        if let Some(f) = &self.filter {
            scan = scan.filter(f.clone());
        }
        Ok(scan)
    }
}

/// Where a scan's units come from.
pub(crate) enum UnitSource {
    /// An async stream (iceberg's planner).
    Stream(BoxStream<'static, Result<TaskUnit>>),
    /// A caller's blocking iterator.
    Iter(Box<dyn Iterator<Item = Result<TaskUnit>> + Send>),
}

/// An iceberg name mapping as rayquet takes it.
fn name_mapping(m: &IcebergNameMapping) -> NameMapping {
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
    out
}

/// What turning `FileScanTask`s into units needs (the planning side): the table's partition
/// specs and which spec each data file was written with.
pub(crate) struct Units {
    ids: Vec<i32>,
    specs: HashMap<i32, PartitionSpecRef>,
    index: Arc<FileIndex>,
    /// The data files planned so far: none twice, but as disjoint splits.
    planned: crate::integrity::PlanFiles,
}

impl Units {
    pub fn new(table: Option<&Table>, ids: Vec<i32>) -> Self {
        let specs = table
            .map(|t| {
                t.metadata()
                    .partition_specs_iter()
                    .map(|s| (s.spec_id(), Arc::clone(s)))
                    .collect()
            })
            .unwrap_or_default();
        Units {
            ids,
            specs,
            index: Arc::default(),
            planned: Default::default(),
        }
    }

    pub fn with_index(mut self, index: Arc<FileIndex>) -> Self {
        self.index = index;
        self
    }

    /// The partition spec of a task's data file.
    fn spec(&self, t: &FileScanTask) -> Option<PartitionSpecRef> {
        if let Some(s) = &t.partition_spec {
            return Some(Arc::clone(s));
        }
        match &self.index.spec_of {
            Some(map) => self.specs.get(map.get(&t.data_file_path)?).cloned(),
            None if self.specs.len() == 1 => self.specs.values().next().cloned(),
            None => None,
        }
    }

    /// One planned task as a unit: its data file, identity-partition constants and deletes.
    pub fn unit(&self, t: FileScanTask) -> Result<TaskUnit> {
        let path = t.data_file_path.clone();
        // A plan that reads a file twice is damaged metadata (a manifest entry duplicated, a
        // deleted file come back), never rows to deliver twice.
        let end = t.start.saturating_add(t.length);
        self.planned
            .add(&path, t.start..end)
            .map_err(|e| Error::new(ErrorKind::CorruptTable, e).with_path(path.clone()))?;
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
        if t.project_field_ids != self.ids {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!(
                    "the task projects the fields {:?}, the scan {:?}: every task of a scan \
                     must project the same fields",
                    t.project_field_ids, self.ids
                ),
            )
            .with_path(path));
        }
        let schema = t.schema();
        // Identity-partition constants, by source field id.
        let mut constants: Vec<(i32, Option<Value>)> = Vec::new();
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
                        None => constants.push((pf.source_id, None)),
                        Some(Literal::Primitive(p)) => {
                            if let Some(v) = predicate::literal_value(p, ty) {
                                constants.push((pf.source_id, Some(v)));
                            }
                        }
                        Some(_) => {}
                    }
                }
            }
        }
        let deletes = |kind: DataContentType| {
            t.deletes
                .iter()
                .filter(|d| d.file_type == kind)
                .map(|d| {
                    (
                        d.file_path.clone(),
                        d.equality_ids.clone().unwrap_or_default(),
                    )
                })
                .collect::<Vec<_>>()
        };
        // A deletion vector replaces the position-delete files of its data file (the spec:
        // it holds their deletes too); the Puffin files iceberg-rust attaches as position
        // deletes are read as vectors only.
        let index = &self.index;
        let deletion_vector = index.vectors.get(&path).cloned();
        let positions = match deletion_vector {
            Some(_) => Vec::new(),
            None => deletes(DataContentType::PositionDeletes)
                .into_iter()
                .map(|(p, _)| p)
                .filter(|p| !index.puffins.contains(p))
                .collect(),
        };
        let (first_row_id, sequence_number) = match &index.lineage {
            Some(map) => {
                let (first, seq) = map.get(&path).copied().ok_or_else(|| {
                    Error::new(
                        ErrorKind::CorruptTable,
                        "the planned data file is in none of the snapshot's data manifests",
                    )
                    .with_path(path.clone())
                })?;
                (first, seq)
            }
            None => (None, None),
        };
        // What the manifests say of this file for planning (empty when not asked for).
        fn of<T: Clone + Default>(map: &Option<HashMap<String, T>>, path: &str) -> T {
            map.as_ref()
                .and_then(|m| m.get(path))
                .cloned()
                .unwrap_or_default()
        }
        let stats = of(&index.stats, &path);
        let split_offsets = of(&index.splits, &path);
        Ok(TaskUnit {
            positions,
            equality: deletes(DataContentType::EqualityDeletes),
            path,
            size: t.file_size_in_bytes,
            start: t.start,
            length: t.length,
            constants,
            mapped: t.name_mapping.is_some(),
            record_count: t.record_count,
            stats,
            split_offsets,
            row_groups: None,
            deletion_vector,
            first_row_id,
            sequence_number,
        })
    }
}

/// What turning units into rayquet tasks needs (the reading side), shared by a scan's tasks.
struct Context {
    schema: Arc<Schema>,
    layout: Layout,
    /// Why a column read cannot be produced (a v3 type rayquet cannot read: `geometry`,
    /// `geography`; an initial default it cannot apply).
    refused: Option<String>,
    /// `unknown` fields: always null.
    types: V3Types,
    project: Option<rayquet::task::BatchTransform>,
    deletes: Arc<DeleteFiles>,
    name_mapping: Arc<NameMapping>,
    /// The mapping of tables without one: it maps nothing.
    no_mapping: Arc<NameMapping>,
}

impl Context {
    fn new(plan: &ScanPlan, file_io: FileIO, vectors: Registry) -> Result<Self> {
        let layout = Layout::new(
            &plan.schema,
            plan.ids.clone(),
            plan.filter.as_ref(),
            &plan.types,
        )?;
        // A column read that rayquet cannot produce: a field of a type it cannot read, or an
        // initial default it cannot apply, at any depth.
        let refused = layout.read_ids.iter().find_map(|&id| {
            let top = plan.schema.field_by_id(id)?;
            let mut inner = vec![top.id];
            collect_ids(&top.field_type, &mut inner);
            let name = |i: i32| {
                plan.schema
                    .name_by_field_id(i)
                    .unwrap_or(&top.name)
                    .to_string()
            };
            let ty = inner.iter().find_map(|&i| {
                let ty = plan.types.get(i)?;
                // `unknown` reads as nulls, `variant` as Arrow's variant struct (the core
                // unshreds shredded files).
                (ty != "unknown" && ty != "variant").then(|| {
                    format!(
                        "column {:?} is of the Iceberg v3 type {ty}, which rayquet cannot read \
                         (select other columns)",
                        name(i)
                    )
                })
            });
            let nested_default = inner[1..].iter().find_map(|&i| {
                let f = plan.schema.field_by_id(i)?;
                (f.initial_default.is_some() || plan.types.dropped_default(i).is_some()).then(
                    || {
                        format!(
                        "field {:?} has an initial default, which rayquet applies to top-level \
                         columns only",
                        name(i)
                    )
                    },
                )
            });
            let top_default = initial_default(&plan.schema, &plan.types, id)
                .err()
                .map(|why| {
                    format!(
                        "column {:?} has {why}, which rayquet cannot apply",
                        name(id)
                    )
                });
            ty.or(nested_default).or(top_default)
        });
        Ok(Context {
            refused,
            types: plan.types.clone(),
            schema: Arc::clone(&plan.schema),
            project: layout.projection(),
            layout,
            deletes: Arc::new(DeleteFiles::new(file_io, vectors)),
            name_mapping: Arc::new(plan.name_mapping.clone().unwrap_or_default()),
            no_mapping: Arc::default(),
        })
    }

    /// One unit as a rayquet task.
    fn task(&self, t: TaskUnit) -> Result<FileTask> {
        let path = t.path;
        if let Some(why) = &self.refused {
            return Err(Error::new(ErrorKind::Unsupported, why.clone()).with_path(path));
        }
        let schema = self.schema.as_ref();
        let types = &self.types;
        let constants: HashMap<i32, Option<Value>> = t.constants.into_iter().collect();
        // How a field of the table is produced in this file: a partition constant, else the
        // file's column by field id (or its initial default when the file lacks it).
        let source = |id: i32| match id {
            RESERVED_FIELD_ID_FILE => ColumnSource::FilePath,
            RESERVED_FIELD_ID_POS => ColumnSource::RowIndex,
            // Row lineage as the file stores it (null where it does not), completed by the
            // task's transform.
            id if is_lineage(id) => ColumnSource::field_id(id),
            id if types.is_unknown(id) => ColumnSource::Null,
            id => match constants.get(&id) {
                Some(Some(v)) => ColumnSource::Constant(v.clone()),
                Some(None) => ColumnSource::Null,
                None => {
                    let src = ColumnSource::field_id(id);
                    // (A default that cannot be applied refused the scan in `Context::new`.)
                    match initial_default(schema, types, id).ok().flatten() {
                        Some(d) => src.or_default(d),
                        None => src,
                    }
                }
            },
        };
        let columns: Vec<ColumnSource> =
            self.layout.read_ids.iter().map(|&id| source(id)).collect();
        // Data files are immutable (the spec: a table never rewrites a file under its path):
        // the scans of the table share their footers through the footer cache.
        let mut task = FileTask::literal(path.clone())
            .size(t.size)
            .version(rayquet::FileVersion::immutable())
            .columns(columns)
            .strict_field_ids(true);
        // Files without field ids resolve columns through the table's name mapping only: with
        // none, no column (the spec's rules 2-4; Java and iceberg-rust fall back to ids by
        // position, which the spec does not have).
        task = task.name_mapping(match t.mapped {
            true => Arc::clone(&self.name_mapping),
            false => Arc::clone(&self.no_mapping),
        });
        if !self.layout.lineage.is_empty() {
            if let Some(f) = self.layout.transform(t.first_row_id, t.sequence_number) {
                task = task.transform(f);
            }
        } else if let Some(p) = &self.project {
            task = task.transform(Arc::clone(p));
        }
        if t.start != 0 || t.length != t.size {
            task = task.byte_range(t.start..t.start + t.length);
        }
        if let Some(run) = t.row_groups {
            task = task.row_groups(run);
        }
        let (positions, equality) = (t.positions, t.equality);
        let equality = if equality.is_empty() {
            None
        } else {
            let eq = Arc::new(EqualityDeletes::new(equality, schema, &source)?);
            task = task.row_filter(Arc::clone(&eq) as Arc<dyn rayquet::task::RowFilter>);
            Some(eq)
        };
        let vector = t.deletion_vector;
        if let Some(dv) = &vector {
            self.deletes.vectors.want(dv);
        }
        if !positions.is_empty() || equality.is_some() || vector.is_some() {
            task = task.delete_loader(Arc::new(TaskDeletes {
                files: Arc::clone(&self.deletes),
                data_file: path,
                rows: t.record_count,
                positions,
                vector,
                equality,
            }));
        }
        Ok(task)
    }
}

/// The initial default of the top-level field `id` as rayquet applies it to files that lack
/// the column (`None`: null), or why it cannot: the spec's JSON single-value form where
/// iceberg-rust dropped it (nanosecond timestamps), else iceberg-rust's literal.
fn initial_default(
    schema: &Schema,
    types: &V3Types,
    id: i32,
) -> std::result::Result<Option<Value>, String> {
    let Some(f) = schema.field_by_id(id) else {
        return Ok(None);
    };
    if let Some(json) = types.dropped_default(id) {
        return match json {
            serde_json::Value::String(s) => Ok(Some(Value::Str(s.clone()))),
            serde_json::Value::Bool(b) => Ok(Some(Value::Bool(*b))),
            serde_json::Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => Ok(Some(Value::Int(i))),
                (None, Some(x)) => Ok(Some(Value::Float(x))),
                _ => Err(format!("the initial default {n}")),
            },
            other => Err(format!("the initial default {other}")),
        };
    }
    let Some(default) = &f.initial_default else {
        return Ok(None);
    };
    match (default, f.field_type.as_ref()) {
        (Literal::Primitive(p), Type::Primitive(ty)) => predicate::literal_value(p, ty)
            .map(Some)
            .ok_or_else(|| format!("an initial default of type {ty}")),
        (_, ty) => Err(format!("an initial default of type {ty}")),
    }
}

/// The field ids inside a type (struct children, list elements, map keys and values), at
/// every depth.
fn collect_ids(t: &Type, out: &mut Vec<i32>) {
    match t {
        Type::Struct(s) => {
            for f in s.fields() {
                out.push(f.id);
                collect_ids(&f.field_type, out);
            }
        }
        Type::List(l) => {
            out.push(l.element_field.id);
            collect_ids(&l.element_field.field_type, out);
        }
        Type::Map(m) => {
            for f in [&m.key_field, &m.value_field] {
                out.push(f.id);
                collect_ids(&f.field_type, out);
            }
        }
        Type::Primitive(_) => {}
    }
}

/// A scan of `FileScanTask`s the caller planned (an engine that plans and shards them
/// itself, splits files by byte range...). Every task must project the same fields and
/// carry the same predicate (as iceberg's planner makes them); the predicate filters rows
/// exactly. `table` (when given) supplies the partition specs for identity-partition
/// constants, the v3 types of a table [`crate::load_table`] loaded (`unknown`, `variant`) and
/// the FileIO for delete files (otherwise the tasks' own `partition_spec` and
/// an object_store FileIO from the environment). The output schema is the first task's; an
/// empty list gives an error.
///
/// Tasks are pulled lazily, as the scan needs them, in their order (ordered scans deliver
/// them in that order). Set the scan's other options on the `Scan` returned (`ScanBuilder`).
pub fn scan_tasks<I>(tasks: I, table: Option<&Table>) -> Result<Scan>
where
    I: IntoIterator<Item = FileScanTask>,
    I::IntoIter: Send + 'static,
{
    let mut tasks = tasks.into_iter().peekable();
    let first = tasks
        .peek()
        .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, "no tasks to scan"))?;
    let schema = first.schema_ref();
    let bound = first.predicate.clone();
    let filter = bound
        .as_ref()
        .map(|p| predicate::bound_to_expr(p, &schema))
        .transpose()?;
    let ids = first.project_field_ids.clone();
    if ids.iter().any(|id| is_lineage(*id)) {
        // Their first row ids and sequence numbers are in the manifests, not in the tasks.
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            "row lineage (_row_id, _last_updated_sequence_number) is read by \
             rayquet_iceberg::TableScan, not from FileScanTasks planned elsewhere",
        ));
    }
    // The v3 types rayquet's normaliser recorded (a table it loaded: `crate::load_table`).
    let types = table
        .map(|t| V3Types::of(t.metadata().properties(), schema.schema_id()))
        .unwrap_or_default();
    let plan =
        ScanPlan::new(schema, ids.clone(), filter, first.name_mapping.as_deref()).with_types(types);
    let file_io = match table {
        Some(t) => t.file_io().clone(),
        None => storage::file_io(Vec::<(String, String)>::new()),
    };
    let units = Units::new(table, ids);
    let tasks = tasks.map(move |t| {
        if t.predicate != bound {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                "every task of a scan must carry the same predicate",
            )
            .with_path(t.data_file_path.clone()));
        }
        units.unit(t)
    });
    let mut options = ScanOptions::new();
    if let Some(t) = table {
        for (k, v) in storage::store_options(t.file_io().config().props()) {
            options = options.store_option(k, v);
        }
    }
    plan.scan_with(
        UnitSource::Iter(Box::new(tasks)),
        options,
        file_io,
        Registry::default(),
    )
}
