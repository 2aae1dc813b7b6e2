//! Planned Delta scans that can be read elsewhere: a [`ScanPlan`] (what every file of a scan
//! shares: the table root, the physical and logical schemas, the delivered columns, the
//! filters) and the [`FileUnit`]s of the kernel's log replay (a data file, its deletion
//! vector's descriptor and the kernel's transform to logical rows: partition values, column
//! mapping), both serializable and free of credentials. [`crate::TableScan::plan`] replays the
//! log on the coordinator; [`ScanPlan::scan`] reads units anywhere, with that process's stores.
//!
//! Invariant: the task rebuilt from a unit is the one a local scan builds from the kernel's
//! scan file: same columns, deleted rows, transform and filter.

use std::sync::Arc;

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::{Schema as ArrowSchema, SchemaRef as ArrowSchemaRef};
use delta_kernel::actions::deletion_vector::{DeletionVectorDescriptor, DeletionVectorStorageType};
use delta_kernel::engine::arrow_conversion::TryIntoArrow;
use delta_kernel::engine::arrow_data::{ArrowEngineData, EngineDataArrowExt};
use delta_kernel::engine_data::{FilteredRowVisitor, GetData, RowIndexIterator, TypedGetData};
use delta_kernel::expressions::ColumnName;
use delta_kernel::expressions::Expression;
use delta_kernel::scan::state::{transform_to_logical, ScanFile};
use delta_kernel::scan::ScanMetadata;
use delta_kernel::schema::{DataType, StructType};
use delta_kernel::{DeltaResult, Engine, EngineData};
use rayquet::expr::Expr;
use rayquet::task::{ColumnSource, FileTask};
use rayquet::{Error, ErrorKind, Result, Scan, ScanBuilder, ScanOptions};
use serde::{Deserialize, Serialize};
use url::Url;

use crate::stats::{file_stats, StatsColumn};
use crate::{dv, handler, RayquetEngine};
use rayquet::task::ColumnStats;

/// What every file of a planned Delta scan shares: serializable (serde), no credentials.
/// Made by [`crate::TableScan::plan`]; read units with [`ScanPlan::scan`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ScanPlan {
    /// The table root (ends in `/`).
    pub(crate) root: Url,
    /// The columns read from the files (physical names, field ids).
    pub(crate) physical: StructType,
    /// The logical columns the transform gives (the delivered ones, then the filter's).
    pub(crate) logical: StructType,
    /// Logical columns delivered.
    pub(crate) keep: Vec<usize>,
    /// The filter on logical rows, when it cannot run on the files' columns exactly.
    pub(crate) filter: Option<Expr>,
    /// The filter on the files' columns, and whether it is the whole filter (exact).
    pub(crate) pushed: Option<(Expr, bool)>,
}

/// One data file of a planned Delta scan: serializable (serde), no credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
// A field this version does not know is an error, never ignored (a unit from a newer
// coordinator could ask for less than the whole file).
#[serde(deny_unknown_fields)]
pub struct FileUnit {
    /// The path as the log names it (relative to the table root, URL-encoded), or a URL.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Its deletion vector, if it has one.
    pub deletion_vector: Option<DvUnit>,
    /// The kernel's transform from the file's physical rows to the table's logical rows.
    pub transform: Option<Expression>,
    /// The rows of the data file (`numRecords` of its `add` action's statistics, deleted rows
    /// included), when the log has it.
    #[serde(default)]
    pub record_count: Option<u64>,
    /// Its columns' statistics from the log, when the scan asked for them
    /// ([`crate::TableScan::statistics`]; empty otherwise, or when the log has none): for
    /// planning on the coordinator, so not sent with the unit.
    #[serde(skip)]
    pub stats: Vec<ColumnStats>,
    /// Only these row groups of the file (a unit below the file; row positions, and so the
    /// deletion vector's, still count every row of the file). `None`: the whole file.
    #[serde(default)]
    pub row_groups: Option<std::ops::Range<usize>>,
}

/// A deletion vector descriptor (the `deletionVector` of an `add` action).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DvUnit {
    /// `u` (relative path), `i` (inline) or `p` (absolute path).
    pub storage_type: String,
    /// The path (or the inline bitmap, Z85), as the log has it.
    pub path_or_inline_dv: String,
    /// Where the bitmap starts in its file.
    pub offset: Option<i32>,
    /// Its size in bytes.
    pub size_in_bytes: i32,
    /// How many rows it deletes.
    pub cardinality: i64,
}

impl DvUnit {
    /// The kernel's descriptor (`file`: the data file, for errors).
    fn descriptor(self, file: &Url) -> Result<DeletionVectorDescriptor> {
        let storage_type: DeletionVectorStorageType =
            self.storage_type
                .parse()
                .map_err(|e: delta_kernel::Error| {
                    Error::new(ErrorKind::CorruptTable, format!("its deletion vector: {e}"))
                        .with_path(file.as_str())
                })?;
        Ok(DeletionVectorDescriptor {
            storage_type,
            path_or_inline_dv: self.path_or_inline_dv,
            offset: self.offset,
            size_in_bytes: self.size_in_bytes,
            cardinality: self.cardinality,
        })
    }
}

impl ScanPlan {
    /// Every object `unit` reads: its data file and its deletion vector's file (an inline one
    /// reads none). What a worker checks against the roots it may read
    /// (`rayquet_datafusion::guard`) before it opens any.
    pub fn paths(&self, unit: &FileUnit) -> Result<Vec<String>> {
        let data = self.location(unit)?;
        let mut out = vec![data.clone()];
        if let Some(dv) = &unit.deletion_vector {
            let file = Url::parse(&data).map_err(|e| {
                Error::new(ErrorKind::InvalidArgument, format!("bad file URL: {e}"))
                    .with_path(&data)
            })?;
            let descriptor = dv.clone().descriptor(&file)?;
            let at = descriptor.absolute_path(&self.root).map_err(|e| {
                Error::new(ErrorKind::CorruptTable, format!("its deletion vector: {e}"))
                    .with_path(&data)
            })?;
            out.extend(at.map(String::from));
        }
        Ok(out)
    }

    /// Where `unit`'s data file is: the table root joined with its path (a URL).
    pub fn location(&self, unit: &FileUnit) -> Result<String> {
        self.root.join(&unit.path).map(String::from).map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("bad file path {:?}: {e}", unit.path),
            )
            .with_path(self.root.as_str())
        })
    }

    /// The Arrow schema of the batches a scan of this plan delivers (the table's logical
    /// columns selected).
    pub fn output_schema(&self) -> Result<ArrowSchemaRef> {
        let logical: ArrowSchema = crate::nanos::to_arrow(&self.logical)?;
        Ok(Arc::new(logical.project(&self.keep)?))
    }

    /// A rayquet scan of `units` of this plan, in this process: data files and deletion
    /// vectors are read through the stores of `options` (this process's environment and store
    /// options), decoded on its pool, the kernel's transform evaluated there. Units are pulled
    /// lazily as the scan needs them.
    pub fn scan<S>(&self, units: S, options: ScanOptions) -> Result<Scan>
    where
        S: futures::Stream<Item = Result<FileUnit>> + Send + 'static,
    {
        use futures::StreamExt;
        let (store, _) = rayquet::layer::store_for(&options, self.root.as_str())?;
        let engine = RayquetEngine::build(&self.root, store, &options);
        let context = Arc::new(self.context(engine, &options)?);
        let (read, out) = (Arc::clone(&context.read), self.output_schema()?);
        let tasks = units.map(move |u| context.task(u?));
        Ok(self.finish(Scan::from_task_stream(read, tasks), options, out))
    }

    /// [`ScanPlan::scan`] from an iterator of units (pulled on the IO runtime's blocking pool),
    /// with the engine that planned.
    pub(crate) fn scan_with(
        &self,
        units: Box<dyn Iterator<Item = Result<FileUnit>> + Send>,
        options: ScanOptions,
        engine: Arc<RayquetEngine>,
    ) -> Result<Scan> {
        let context = Arc::new(self.context(engine, &options)?);
        let (read, out) = (Arc::clone(&context.read), self.output_schema()?);
        let tasks = units.map(move |u| context.task(u?));
        Ok(self.finish(Scan::from_tasks(read, tasks), options, out))
    }

    fn context(&self, engine: Arc<RayquetEngine>, options: &ScanOptions) -> Result<Context> {
        let kernel = |e| crate::handler::from_kernel_error(e).with_path(self.root.as_str());
        let (read, sources) = handler::read_columns(&self.physical).map_err(kernel)?;
        Ok(Context {
            root: self.root.clone(),
            engine,
            physical: Arc::new(self.physical.clone()),
            logical: Arc::new(self.logical.clone()),
            read,
            sources,
            filter: self.filter.clone(),
            keep: self.keep.clone(),
            dv_files: Arc::new(dv::DvFiles::new(options.clone())),
            longs: Longs::of(&self.physical, &self.logical)
                .map_err(kernel)?
                .map(Arc::new),
        })
    }

    fn finish(&self, scan: Scan, options: ScanOptions, out: ArrowSchemaRef) -> Scan {
        let scan = scan.with_options(options).transformed_schema(out);
        match &self.pushed {
            Some((p, true)) => scan.filter(p.clone()),
            Some((p, false)) => scan.prune(p.clone()),
            None => scan,
        }
    }
}

/// The units of one batch of the kernel's scan metadata, in the order of its selected files,
/// with the statistics of `stats` columns when the metadata has them.
pub(crate) fn units(m: &ScanMetadata, stats: &[StatsColumn]) -> DeltaResult<Vec<FileUnit>> {
    let push: delta_kernel::scan::state::ScanCallback<Vec<ScanFile>> =
        |v: &mut Vec<ScanFile>, f: ScanFile| v.push(f);
    let files = m.visit_scan_files(Vec::new(), push)?;
    let mut dvs = DvVisitor::default();
    dvs.visit_rows_of(&m.scan_files)?;
    if dvs.found.len() != files.len() {
        return Err(delta_kernel::Error::generic(format!(
            "{} scan files but {} deletion vector entries",
            files.len(),
            dvs.found.len()
        )));
    }
    let batch = match stats.is_empty() {
        true => None,
        false => m
            .scan_files
            .data()
            .any_ref()
            .downcast_ref::<ArrowEngineData>()
            .map(|d| d.record_batch()),
    };
    Ok(files
        .into_iter()
        .zip(dvs.found)
        .map(|(f, (row, path, dv))| {
            debug_assert_eq!(f.path, path);
            debug_assert_eq!(f.dv_info.has_vector(), dv.is_some());
            let record_count = f.stats.map(|s| s.num_records);
            FileUnit {
                path: f.path,
                size: f.size.max(0) as u64,
                deletion_vector: dv,
                transform: f
                    .transform
                    .map(|t| empty_values_as_null(t.as_ref().clone())),
                record_count,
                stats: batch.map_or_else(Vec::new, |b| file_stats(b, row, stats, record_count)),
                row_groups: None,
            }
        })
        .collect())
}

/// The kernel's transform with every empty string (or empty binary) it inserts as a literal
/// made null: the Delta protocol reads an empty partition value as null for every type
/// ("An empty string for any type translates to a null partition value"; deltalake does);
/// delta_kernel 0.29 keeps `""` for string and binary columns, as Spark does. The literals a
/// transform inserts are partition values (and constants of row tracking, never empty).
fn empty_values_as_null(e: Expression) -> Expression {
    use delta_kernel::expressions::Scalar;
    let fix =
        |e: &delta_kernel::expressions::ExpressionRef| -> delta_kernel::expressions::ExpressionRef {
            match e.as_ref() {
                Expression::Literal(Scalar::String(s)) if s.is_empty() => {
                    Arc::new(Expression::Literal(Scalar::Null(DataType::STRING)))
                }
                Expression::Literal(Scalar::Binary(b)) if b.is_empty() => {
                    Arc::new(Expression::Literal(Scalar::Null(DataType::BINARY)))
                }
                _ => Arc::clone(e),
            }
        };
    match e {
        Expression::StructPatch(mut p) => {
            for patch in p.field_patches.values_mut() {
                patch.insertions = patch.insertions.iter().map(fix).collect();
            }
            p.prepended_fields = p.prepended_fields.iter().map(fix).collect();
            p.appended_fields = p.appended_fields.iter().map(fix).collect();
            Expression::StructPatch(p)
        }
        Expression::Struct(fields, keep) => {
            Expression::Struct(fields.iter().map(fix).collect(), keep)
        }
        other => other,
    }
}

/// Reads each selected scan file's row, path and deletion vector descriptor (which the
/// kernel's `ScanFile` keeps private), in the same rows and order as `visit_scan_files`.
#[derive(Default)]
struct DvVisitor {
    found: Vec<(usize, String, Option<DvUnit>)>,
}

impl FilteredRowVisitor for DvVisitor {
    fn selected_column_names_and_types(&self) -> (&'static [ColumnName], &'static [DataType]) {
        static COLUMNS: std::sync::LazyLock<(Vec<ColumnName>, Vec<DataType>)> =
            std::sync::LazyLock::new(|| {
                let names = [
                    vec!["path"],
                    vec!["deletionVector", "storageType"],
                    vec!["deletionVector", "pathOrInlineDv"],
                    vec!["deletionVector", "offset"],
                    vec!["deletionVector", "sizeInBytes"],
                    vec!["deletionVector", "cardinality"],
                ]
                .into_iter()
                .map(ColumnName::new)
                .collect();
                let types = vec![
                    DataType::STRING,
                    DataType::STRING,
                    DataType::STRING,
                    DataType::INTEGER,
                    DataType::INTEGER,
                    DataType::LONG,
                ];
                (names, types)
            });
        (&COLUMNS.0, &COLUMNS.1)
    }

    fn visit_filtered<'a>(
        &mut self,
        getters: &[&'a dyn GetData<'a>],
        rows: RowIndexIterator<'_>,
    ) -> DeltaResult<()> {
        for row in rows {
            // Rows without a path are not files (the kernel's visitor skips them too).
            let Some(path): Option<String> = getters[0].get_opt(row, "path")? else {
                continue;
            };
            let storage: Option<String> = getters[1].get_opt(row, "deletionVector.storageType")?;
            let dv = match storage {
                None => None,
                Some(storage_type) => Some(DvUnit {
                    storage_type,
                    path_or_inline_dv: getters[2].get(row, "deletionVector.pathOrInlineDv")?,
                    offset: getters[3].get_opt(row, "deletionVector.offset")?,
                    size_in_bytes: getters[4].get(row, "deletionVector.sizeInBytes")?,
                    cardinality: getters[5].get(row, "deletionVector.cardinality")?,
                }),
            };
            self.found.push((row, path, dv));
        }
        Ok(())
    }
}

/// What turning units into tasks needs.
struct Context {
    root: Url,
    engine: Arc<RayquetEngine>,
    physical: Arc<StructType>,
    logical: Arc<StructType>,
    /// The Arrow schema of the columns read from the files.
    read: ArrowSchemaRef,
    sources: Vec<ColumnSource>,
    filter: Option<Expr>,
    /// Columns of the logical batch that are delivered (the rest were read for the filter).
    keep: Vec<usize>,
    dv_files: Arc<dv::DvFiles>,
    /// With nanosecond timestamps (see `nanos`): the schemas the kernel's transform is
    /// evaluated with (marked columns as `long`), and the Arrow schemas the batch is cast to
    /// before it (the physical one, as longs) and after it (the logical one, as timestamps).
    longs: Option<Arc<Longs>>,
}

/// See [`Context::longs`].
struct Longs {
    physical: Arc<StructType>,
    logical: Arc<StructType>,
    before: ArrowSchemaRef,
    after: ArrowSchemaRef,
}

impl Longs {
    fn of(physical: &StructType, logical: &StructType) -> delta_kernel::DeltaResult<Option<Self>> {
        use crate::nanos::{as_long, has_marks, to_arrow};
        if !has_marks(physical) && !has_marks(logical) {
            return Ok(None);
        }
        let physical = Arc::new(as_long(physical)?);
        let before: ArrowSchema = physical.as_ref().try_into_arrow()?;
        let after = to_arrow(logical).map_err(delta_kernel::Error::Arrow)?;
        Ok(Some(Longs {
            physical,
            logical: Arc::new(as_long(logical)?),
            before: Arc::new(before),
            after: Arc::new(after),
        }))
    }
}

impl Context {
    fn task(&self, f: FileUnit) -> Result<FileTask> {
        let location = self.root.join(&f.path).map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("bad file path {:?}: {e}", f.path),
            )
            .with_path(self.root.as_str())
        })?;
        // Data files are immutable (the protocol: never overwritten): the scans of the table
        // share their footers through the footer cache.
        let mut task = FileTask::new(location.to_string())
            .size(f.size)
            .version(rayquet::FileVersion::immutable())
            .columns(self.sources.clone());
        if let Some(run) = f.row_groups {
            task = task.row_groups(run);
        }
        if let Some(dv) = f.deletion_vector {
            task = task.delete_loader(Arc::new(dv::DvLoader {
                dv: dv.descriptor(&location)?,
                root: self.root.clone(),
                file: location.to_string(),
                files: Arc::clone(&self.dv_files),
            }));
        }
        let engine: Arc<dyn Engine> = Arc::clone(&self.engine) as Arc<dyn Engine>;
        let transform = f.transform.map(Arc::new);
        // The kernel's evaluator sees nanosecond timestamps as longs (see `nanos`).
        let longs = self.longs.clone().filter(|_| transform.is_some());
        let (physical, logical) = match &longs {
            Some(l) => (Arc::clone(&l.physical), Arc::clone(&l.logical)),
            None => (Arc::clone(&self.physical), Arc::clone(&self.logical)),
        };
        let (filter, keep) = (self.filter.clone(), self.keep.clone());
        let fix = handler::fix_nulls();
        Ok(task.transform(Arc::new(move |batch: RecordBatch| {
            let mut batch = fix(batch)?;
            if let Some(l) = &longs {
                batch = crate::nanos::retype(batch, &l.before)?;
            }
            let data: Box<dyn EngineData> = Box::new(ArrowEngineData::new(batch));
            let mut logical = transform_to_logical(
                engine.as_ref(),
                data,
                &physical,
                &logical,
                transform.clone(),
            )
            .and_then(|d| d.try_into_record_batch())
            .map_err(|e| {
                Error::new(
                    ErrorKind::CorruptData,
                    format!("applying the file's transform: {e}"),
                )
            })?;
            if let Some(l) = &longs {
                logical = crate::nanos::retype(logical, &l.after)?;
            }
            let logical = match &filter {
                Some(f) => {
                    let keep_rows = f.evaluate(&logical)?;
                    // A NULL result drops the row (prep_null_mask_filter needs a null buffer).
                    let keep_rows = match keep_rows.null_count() {
                        0 => keep_rows,
                        _ => arrow::compute::prep_null_mask_filter(&keep_rows),
                    };
                    arrow::compute::filter_record_batch(&logical, &keep_rows)?
                }
                None => logical,
            };
            Ok(logical.project(&keep)?)
        })))
    }
}
