//! Delta tables (feature `delta`): a parallel `ParquetHandler` and `Engine` for delta-kernel,
//! and a whole-table scan that reads every file of a snapshot at once.
//!
//! delta-kernel's default engine reads Parquet one file after another, decoding on its tokio
//! thread, and `Scan::execute` hands its handler one file at a time (delta-kernel-rs PR #595:
//! 50 s for 100 files of 1 MB on S3, where concurrent reads took 7.6 s). Here:
//!
//! - [`RayquetEngine`]: the default engine with rayquet's [`RayquetParquetHandler`], so any
//!   kernel API (`Snapshot`, `Scan::execute`, checkpoints) reads Parquet with concurrent
//!   fetches and row groups decoded in parallel.
//! - [`TableScan`]: the table's logical rows through one rayquet scan of all its files: the
//!   kernel's scan metadata (stats-based file skipping from the filter) becomes tasks, each
//!   file's deletion vector its deleted rows (never delivered, not decoded where the page
//!   index allows), the kernel's per-file transform (partition values, column mapping) runs on
//!   the decode pool, and the filter prunes row groups and pages, then holds exactly.
//!
//! ```no_run
//! # fn main() -> rayquet::Result<()> {
//! let reader = rayquet::delta::TableScan::new("s3://bucket/events/")
//!     .version(12)
//!     .select(["id", "country"])
//!     .filter(rayquet::Expr::parse_sql("country = 'NZ'")?)
//!     .to_scan()? // a rayquet::Scan: set the batch size, budget... then build
//!     .build()?;
//! for batch in reader {
//!     let batch = batch?;
//! }
//! # Ok(()) }
//! ```

mod dv;
mod engine;
mod log_cache;
mod parquet;
pub mod predicate;

use std::sync::Arc;

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::{Schema as ArrowSchema, SchemaRef as ArrowSchemaRef};
use delta_kernel::engine::arrow_conversion::TryIntoArrow;
use delta_kernel::engine::arrow_data::{ArrowEngineData, EngineDataArrowExt};
use delta_kernel::scan::state::{transform_to_logical, ScanFile};
use delta_kernel::schema::{SchemaRef, StructType};
use delta_kernel::{Engine, EngineData, Snapshot};
use object_store::ObjectStore;
use url::Url;

pub use engine::{table_url, RayquetEngine};
pub use parquet::{from_kernel_error, to_kernel_error, RayquetParquetHandler};

use crate::expr::Expr;
use crate::task::{ColumnSource, FileTask};
use crate::{Error, ErrorKind, Result, Scan};

/// A scan of a Delta table's logical rows: a version (time travel), columns, a filter. Ends in
/// [`TableScan::to_scan`], a rayquet [`Scan`] to configure and build.
#[derive(Debug, Clone)]
pub struct TableScan {
    location: String,
    version: Option<u64>,
    columns: Option<Vec<String>>,
    filter: Option<Expr>,
    options: Vec<(String, String)>,
    store: Option<Arc<dyn ObjectStore>>,
}

impl TableScan {
    /// A scan of the newest version of the table at `location` (a URL or a local directory:
    /// the table root, above `_delta_log`), all columns.
    pub fn new(location: impl Into<String>) -> Self {
        TableScan {
            location: location.into(),
            version: None,
            columns: None,
            filter: None,
            options: Vec::new(),
            store: None,
        }
    }

    /// Read this version of the table.
    pub fn version(mut self, version: u64) -> Self {
        self.version = Some(version);
        self
    }

    /// Read only these top-level columns, in this order.
    pub fn select<I, S>(mut self, columns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.columns = Some(columns.into_iter().map(Into::into).collect());
        self
    }

    /// Only rows where `filter` holds (over the table's logical column names): the kernel
    /// skips files by their statistics and partition values, rayquet prunes row groups and
    /// pages, and every row read is checked exactly.
    pub fn filter(mut self, filter: Expr) -> Self {
        self.filter = Some(filter);
        self
    }

    /// object_store configuration keys for the table's store (as [`Scan::store_option`]).
    pub fn options(mut self, options: Vec<(String, String)>) -> Self {
        self.options = options;
        self
    }

    /// Read every URL under the table's `scheme://authority` (log, data files, deletion
    /// vectors) through `store`, as [`RayquetEngine::with_store`] does.
    pub fn object_store(mut self, store: Arc<dyn ObjectStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The rayquet scan: the kernel's scan files stream in as tasks.
    pub fn to_scan(self) -> Result<Scan> {
        let url = table_url(&self.location)?;
        let store = match &self.store {
            Some(s) => Arc::clone(s),
            None => crate::object_store_for(url.as_str(), &self.options)?.0,
        };
        let engine = RayquetEngine::with_store(url.as_str(), Arc::clone(&store), &self.options)?;
        let engine_dyn: Arc<dyn Engine> = engine.clone();
        let kernel = |e: delta_kernel::Error| {
            Error::new(ErrorKind::Io, e.to_string()).with_path(url.as_str())
        };
        let mut builder = Snapshot::builder_for(url.as_str());
        if let Some(v) = self.version {
            builder = builder.at_version(v);
        }
        let snapshot = builder.build(engine.as_ref()).map_err(|e| {
            let kind = match e {
                delta_kernel::Error::MissingVersion(_) | delta_kernel::Error::FileNotFound(_) => {
                    ErrorKind::NotFound
                }
                _ => ErrorKind::Io,
            };
            Error::new(kind, format!("reading the table's log: {e}")).with_path(url.as_str())
        })?;
        let table_schema = snapshot.schema();
        // The columns delivered, and those the filter also needs.
        let selected: Vec<String> = match &self.columns {
            Some(c) => c.clone(),
            None => table_schema.fields().map(|f| f.name().clone()).collect(),
        };
        let mut read = selected.clone();
        if let Some(f) = &self.filter {
            for c in f.columns() {
                let top = if table_schema.field(c).is_some() {
                    c
                } else {
                    c.split('.').next().unwrap_or(c)
                };
                if !read.iter().any(|r| r == top) {
                    read.push(top.to_string());
                }
            }
        }
        let logical = table_schema.project(&read).map_err(|e| {
            let names: Vec<_> = table_schema.fields().map(|f| f.name().clone()).collect();
            Error::new(
                ErrorKind::InvalidArgument,
                format!("{e}; the table's columns are {names:?}"),
            )
            .with_path(url.as_str())
        })?;
        let mut sb = snapshot.scan_builder().with_schema(Arc::clone(&logical));
        if let Some(f) = &self.filter {
            sb = sb.with_predicate(Arc::new(predicate::to_kernel(f, &table_schema)));
        }
        let scan = sb.build().map_err(kernel)?;
        let physical: SchemaRef = Arc::clone(scan.physical_schema());
        let logical: SchemaRef = Arc::clone(scan.logical_schema());
        let (read_schema, sources) = parquet::read_columns(&physical).map_err(kernel)?;
        let logical_arrow: ArrowSchema = logical.as_ref().try_into_arrow()?;
        let keep: Vec<usize> = selected
            .iter()
            .map(|c| logical_arrow.index_of(c))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::new(ErrorKind::InvalidArgument, e.to_string()))?;
        let out: ArrowSchemaRef = Arc::new(logical_arrow.project(&keep)?);
        // The filter on the files' columns: exact (rayquet's filter stage, late
        // materialization) when every leaf is on one, else only for pruning, and then the
        // transform filters the logical rows.
        let pushed = self
            .filter
            .as_ref()
            .and_then(|f| physical_filter(f, &table_schema, &physical));
        let exact = pushed.as_ref().is_some_and(|(_, exact)| *exact);
        let root = format!("{}://{}", url.scheme(), url.authority());
        let context = Arc::new(Context {
            root: url.clone(),
            engine: engine_dyn,
            physical,
            logical,
            sources,
            filter: if exact { None } else { self.filter.clone() },
            keep,
            dv_files: Arc::new(dv::DvFiles::new(
                root.clone(),
                Arc::clone(&store),
                self.options.clone(),
            )),
        });
        let metadata = scan.scan_metadata(engine.as_ref()).map_err(kernel)?;
        let files = metadata.flat_map(|m| -> Vec<delta_kernel::DeltaResult<ScanFile>> {
            let push: delta_kernel::scan::state::ScanCallback<Vec<ScanFile>> =
                |v: &mut Vec<ScanFile>, f: ScanFile| v.push(f);
            match m.and_then(|m| m.visit_scan_files(Vec::new(), push)) {
                Ok(files) => files.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            }
        });
        let ctx = Arc::clone(&context);
        let tasks = files.map(move |f| match f {
            Ok(f) => ctx.task(f),
            Err(e) => Err(
                Error::new(ErrorKind::Io, format!("reading the table's log: {e}"))
                    .with_path(ctx.root.as_str()),
            ),
        });
        let mut scan = Scan::from_tasks(read_schema, tasks)
            .transformed_schema(out)
            .object_store(root, store);
        for (k, v) in &self.options {
            scan = scan.store_option(k.clone(), v.clone());
        }
        match pushed {
            Some((p, true)) => scan = scan.filter(p),
            Some((p, false)) => scan = scan.prune(p),
            None => {}
        }
        Ok(scan)
    }
}

/// The filter's leaves on columns Parquet files hold, in their physical names (leaves on
/// partition columns, or on nested fields of a table with column mapping, become TRUE), and
/// whether that is the whole filter (no leaf replaced): then it can be evaluated exactly on
/// the files' columns. `None` when nothing is left.
fn physical_filter(e: &Expr, table: &StructType, physical: &StructType) -> Option<(Expr, bool)> {
    let exact = std::cell::Cell::new(true);
    let walk_exact = |e: Expr| walk(e, table, physical, &exact);
    fn walk(
        e: Expr,
        table: &StructType,
        physical: &StructType,
        exact: &std::cell::Cell<bool>,
    ) -> Expr {
        let rename = |c: &str| -> Option<String> {
            let (top, rest) = match table.field(c) {
                Some(_) => (c, None),
                None => match c.split_once('.') {
                    Some((t, r)) => (t, Some(r)),
                    None => (c, None),
                },
            };
            let f = table.field(top)?;
            let phys = f
                .get_config_value(
                    &delta_kernel::schema::ColumnMetadataKey::ColumnMappingPhysicalName,
                )
                .map(|v| match v {
                    delta_kernel::schema::MetadataValue::String(s) => s.clone(),
                    other => other.to_string(),
                });
            let name = phys.clone().unwrap_or_else(|| top.to_string());
            physical.field(&name)?;
            match rest {
                None => Some(name),
                Some(_) if phys.is_some() => None,
                Some(r) => Some(format!("{name}.{r}")),
            }
        };
        let leaf = |column: &str, make: &dyn Fn(String) -> Expr| match rename(column) {
            Some(n) => make(n),
            None => {
                exact.set(false);
                Expr::Literal(true)
            }
        };
        match e {
            Expr::And(a, b) => {
                walk(*a, table, physical, exact).and(walk(*b, table, physical, exact))
            }
            Expr::Or(a, b) => walk(*a, table, physical, exact).or(walk(*b, table, physical, exact)),
            Expr::Not(_) => {
                exact.set(false);
                Expr::Literal(true)
            }
            Expr::Literal(b) => Expr::Literal(b),
            Expr::Compare { column, op, value } => leaf(&column, &|c| Expr::Compare {
                column: c,
                op,
                value: value.clone(),
            }),
            Expr::InList {
                column,
                values,
                negated,
            } => leaf(&column, &|c| Expr::InList {
                column: c,
                values: values.clone(),
                negated,
            }),
            Expr::IsNull { column, negated } => {
                leaf(&column, &|c| Expr::IsNull { column: c, negated })
            }
            Expr::Between {
                column,
                low,
                high,
                negated,
            } => leaf(&column, &|c| Expr::Between {
                column: c,
                low: low.clone(),
                high: high.clone(),
                negated,
            }),
        }
    }
    let p = walk_exact(e.clone().negation_normal_form());
    (p != Expr::Literal(true)).then(|| (p, exact.get()))
}

/// What turning the kernel's scan files into tasks needs.
struct Context {
    root: Url,
    engine: Arc<dyn Engine>,
    physical: SchemaRef,
    logical: SchemaRef,
    sources: Vec<ColumnSource>,
    filter: Option<Expr>,
    /// Columns of the logical batch that are delivered (the rest were read for the filter).
    keep: Vec<usize>,
    dv_files: Arc<dv::DvFiles>,
}

impl Context {
    fn task(&self, f: ScanFile) -> Result<FileTask> {
        let location = self.root.join(&f.path).map_err(|e| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("bad file path {:?}: {e}", f.path),
            )
            .with_path(self.root.as_str())
        })?;
        let mut task = FileTask::new(location.to_string())
            .size(f.size.max(0) as u64)
            .columns(self.sources.clone());
        if f.dv_info.has_vector() {
            task = task.delete_loader(Arc::new(dv::DvLoader {
                dv: f.dv_info.clone(),
                root: self.root.clone(),
                file: location.to_string(),
                files: Arc::clone(&self.dv_files),
                engine: Arc::clone(&self.engine),
            }));
        }
        let engine = Arc::clone(&self.engine);
        let (physical, logical) = (Arc::clone(&self.physical), Arc::clone(&self.logical));
        let (transform, filter, keep) =
            (f.transform.clone(), self.filter.clone(), self.keep.clone());
        let fix = parquet::fix_nulls();
        Ok(task.transform(Arc::new(move |batch: RecordBatch| {
            let batch = fix(batch)?;
            let data: Box<dyn EngineData> = Box::new(ArrowEngineData::new(batch));
            let logical = transform_to_logical(
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
