//! Planned scans that can be read elsewhere: a [`ScanPlan`] (what every task of a scan
//! shares: the snapshot's schema, the projected field ids, the filter, the name mapping) and a
//! stream of [`TaskUnit`]s (one data file or split, with its identity-partition constants and
//! its delete files), both serializable and free of credentials. [`TableScan::plan`] plans on
//! the coordinator; [`ScanPlan::scan`] reads units anywhere, with that process's own stores.
//! A local [`TableScan::to_scan`] is the two steps in one process.
//!
//! Invariant: a unit carries everything a task needs that is not in the plan (no table
//! metadata is read to rebuild it); the rebuilt task is the one a local scan builds: same
//! columns, constants, deletes (position and equality), byte range.
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
use crate::{predicate, storage, Layout};

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
}

/// One data file (or a split of one) of a planned Iceberg scan, with what reading it needs
/// beyond the [`ScanPlan`]: serializable (serde), no credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
        }
    }

    /// The Arrow schema of the batches a scan of this plan delivers (as iceberg-rust's
    /// `to_arrow()` gives it).
    pub fn output_schema(&self) -> Result<arrow::datatypes::SchemaRef> {
        crate::output_schema(&self.schema, &self.ids)
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
        self.scan_with(UnitSource::Stream(units.boxed()), options, file_io)
    }

    /// [`ScanPlan::scan`] with the FileIO that reads delete files.
    pub(crate) fn scan_with(
        &self,
        units: UnitSource,
        options: ScanOptions,
        file_io: FileIO,
    ) -> Result<Scan> {
        let context = Arc::new(Context::new(self, file_io)?);
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
    spec_of: Option<Arc<HashMap<String, i32>>>,
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
            spec_of: None,
            planned: Default::default(),
        }
    }

    pub fn with_spec_of(mut self, spec_of: Option<Arc<HashMap<String, i32>>>) -> Self {
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
        Ok(TaskUnit {
            positions: deletes(DataContentType::PositionDeletes)
                .into_iter()
                .map(|(p, _)| p)
                .collect(),
            equality: deletes(DataContentType::EqualityDeletes),
            path,
            size: t.file_size_in_bytes,
            start: t.start,
            length: t.length,
            constants,
            mapped: t.name_mapping.is_some(),
        })
    }
}

/// What turning units into rayquet tasks needs (the reading side), shared by a scan's tasks.
struct Context {
    schema: Arc<Schema>,
    layout: Layout,
    project: Option<rayquet::task::BatchTransform>,
    deletes: Arc<DeleteFiles>,
    name_mapping: Arc<NameMapping>,
    /// The mapping of tables without one: it maps nothing.
    no_mapping: Arc<NameMapping>,
}

impl Context {
    fn new(plan: &ScanPlan, file_io: FileIO) -> Result<Self> {
        let layout = Layout::new(&plan.schema, plan.ids.clone(), plan.filter.as_ref())?;
        Ok(Context {
            schema: Arc::clone(&plan.schema),
            project: layout.projection(),
            layout,
            deletes: Arc::new(DeleteFiles::new(file_io)),
            name_mapping: Arc::new(plan.name_mapping.clone().unwrap_or_default()),
            no_mapping: Arc::default(),
        })
    }

    /// One unit as a rayquet task.
    fn task(&self, t: TaskUnit) -> Result<FileTask> {
        let path = t.path;
        let schema = self.schema.as_ref();
        let constants: HashMap<i32, Option<Value>> = t.constants.into_iter().collect();
        // How a field of the table is produced in this file: a partition constant, else the
        // file's column by field id (or its initial default when the file lacks it).
        let source = |id: i32| match id {
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
        };
        let columns: Vec<ColumnSource> =
            self.layout.read_ids.iter().map(|&id| source(id)).collect();
        let mut task = FileTask::literal(path.clone())
            .size(t.size)
            .columns(columns)
            .strict_field_ids(true);
        // Files without field ids resolve columns through the table's name mapping only: with
        // none, no column (the spec's rules 2-4; Java and iceberg-rust fall back to ids by
        // position, which the spec does not have).
        task = task.name_mapping(match t.mapped {
            true => Arc::clone(&self.name_mapping),
            false => Arc::clone(&self.no_mapping),
        });
        if let Some(p) = &self.project {
            task = task.transform(Arc::clone(p));
        }
        if t.start != 0 || t.length != t.size {
            task = task.byte_range(t.start..t.start + t.length);
        }
        let (positions, equality) = (t.positions, t.equality);
        let equality = if equality.is_empty() {
            None
        } else {
            let eq = Arc::new(EqualityDeletes::new(equality, schema, &source)?);
            task = task.row_filter(Arc::clone(&eq) as Arc<dyn rayquet::task::RowFilter>);
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
/// itself, splits files by byte range...). Every task must project the same fields and
/// carry the same predicate (as iceberg's planner makes them); the predicate filters rows
/// exactly. `table` (when given) supplies the partition specs for identity-partition
/// constants and the FileIO for delete files (otherwise the tasks' own `partition_spec` and
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
    let plan = ScanPlan::new(schema, ids.clone(), filter, first.name_mapping.as_deref());
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
    plan.scan_with(UnitSource::Iter(Box::new(tasks)), options, file_io)
}
