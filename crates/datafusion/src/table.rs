//! [`RayquetTable`]: a Parquet dataset, an Iceberg table (a snapshot) or a Delta table (a
//! version) as a DataFusion `TableProvider`, read by rayquet.
//!
//! Registration resolves the schema (the first footer; the Iceberg snapshot's schema; the
//! Delta version's schema). A scan only describes itself: projection, exact filters, limit,
//! and a lazy planner that lists files, plans Iceberg tasks or replays the Delta log when its
//! first partition is polled, on rayquet's IO runtime (Delta's blocking log replay on a thread
//! of its own), never on DataFusion's workers.
//!
//! Invariants: the projection and every filter reported Exact are applied by rayquet; the
//! statistics are exact only where metadata gives them exactly (footers; Iceberg record
//! counts without deletes, Delta's `numRecords` without deletion vectors), otherwise inexact
//! or absent ([`crate::table_stats`]).

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{DataFusionError, Result, ScalarValue, Statistics};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::{Expr as DfExpr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_distributed::WorkUnitFeed;
use futures::{StreamExt, TryStreamExt};
use rayquet::{ColumnSource, Expr, FileTask, Partitioning, ScanBuilder, ScanOptions};

use crate::exec::RayquetScanExec;
use crate::feed::{Planner, UnitKind};
use crate::filter;
use crate::meta::{FileKey, FileSummary, SummaryCache};
use crate::order::{SortKey, UnitRows};
use crate::spec::{Plan, ScanSpec};
use crate::units::Sizing;

/// What a table reads.
#[derive(Clone)]
enum Source {
    /// Every `*.parquet` object under a path, prefix or URL (or one file).
    Parquet {
        url: String,
        /// Its Hive partition columns (last in the schema), each file's constants.
        hive: Vec<String>,
    },
    /// An Iceberg table as this scan reads it (snapshot, ref or timestamp; the table loaded),
    /// without columns or filter: each query gives its own.
    Iceberg(Box<rayquet_iceberg::TableScan>),
    /// A Delta table as this scan reads it (its version), without columns or filter.
    Delta(Box<rayquet_delta::TableScan>),
}

/// A rayquet table for DataFusion (see the module docs).
///
/// ```no_run
/// # async fn example() -> datafusion::error::Result<()> {
/// use std::sync::Arc;
/// use rayquet::ScanOptions;
/// use rayquet_datafusion::{local_session, RayquetTable};
/// let ctx = local_session();
/// let lineitem = RayquetTable::parquet("s3://bucket/lineitem/", ScanOptions::new())?;
/// ctx.register_table("lineitem", Arc::new(lineitem))?;
/// let batches = ctx
///     .sql("SELECT l_returnflag, count(*) FROM lineitem WHERE l_quantity < 5 GROUP BY 1")
///     .await?
///     .collect()
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RayquetTable {
    name: String,
    source: Source,
    schema: SchemaRef,
    options: ScanOptions,
    require_remote: bool,
    /// Output partitions of a scan node (per task in distributed runs); `None`: the session's
    /// target partitions.
    partitions: Option<usize>,
    /// Compressed bytes of the columns read per unit (Parquet files are cut into runs of row
    /// groups of about this size).
    unit_bytes: u64,
    /// Rows of the table, when metadata says (exactly, or an upper bound).
    rows: Precision<usize>,
    /// Parquet datasets: what each file's footer told (read once per file version).
    summaries: SummaryCache,
}

/// Compressed bytes of the columns read per unit, by default.
pub const DEFAULT_UNIT_BYTES: u64 = 8 << 20;

impl fmt::Debug for RayquetTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.source {
            Source::Parquet { url, .. } => format!("parquet {url}"),
            Source::Iceberg(scan) => format!("iceberg {scan:?}"),
            Source::Delta(scan) => format!("delta {scan:?}"),
        };
        f.debug_struct("RayquetTable")
            .field("name", &self.name)
            .field("source", &kind)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// The footers of `files`, read in parallel (16 at a time) on the IO runtime's blocking
/// threads, in order.
fn read_footers(
    options: &ScanOptions,
    files: &[rayquet::layer::DatasetFile],
) -> rayquet::Result<Vec<Arc<parquet::file::metadata::ParquetMetaData>>> {
    let reads: Vec<_> = files
        .iter()
        .map(|f| {
            let (options, location, size) = (options.clone(), f.location.clone(), f.size);
            async move {
                tokio::task::spawn_blocking(move || {
                    let (store, path) = rayquet::layer::store_for(&options, &location)?;
                    rayquet::read_metadata(store, path, size).map_err(|e| match e.path() {
                        Some(_) => e,
                        None => e.with_path(location),
                    })
                })
                .await
                .map_err(|e| rayquet::Error::new(rayquet::ErrorKind::Panic, e.to_string()))?
            }
        })
        .collect();
    rayquet::layer::block_on(
        options,
        futures::stream::iter(reads).buffered(16).try_collect(),
    )
}

/// The Arrow schema of the file at `location` whose footer is `md`.
fn arrow_schema(
    md: &parquet::file::metadata::ParquetMetaData,
    location: &str,
) -> rayquet::Result<Schema> {
    parquet::arrow::parquet_to_arrow_schema(
        md.file_metadata().schema_descr(),
        md.file_metadata().key_value_metadata(),
    )
    .map_err(|e| {
        rayquet::Error::new(rayquet::ErrorKind::CorruptFooter, e.to_string()).with_path(location)
    })
}

/// A table's label (thread names, plans): the last segment of its location, without a
/// `.parquet` suffix.
fn last_segment(location: &str) -> String {
    let last = location
        .trim_end_matches('/')
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(location);
    last.strip_suffix(".parquet").unwrap_or(last).to_string()
}

fn df(e: rayquet::Error) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// `schema` with strings and binaries as Arrow's view types (what DataFusion prefers, and what
/// rayquet decodes to without a copy of every value).
fn with_views(schema: &Schema) -> Schema {
    fn view(t: &DataType) -> DataType {
        match t {
            DataType::Utf8 | DataType::LargeUtf8 => DataType::Utf8View,
            DataType::Binary | DataType::LargeBinary => DataType::BinaryView,
            other => other.clone(),
        }
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_data_type(view(f.data_type())))
        .collect();
    Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// Registration reads metadata (lists the dataset and reads a footer; loads the Iceberg
/// metadata; replays the Delta log up to the version's schema) and blocks the calling thread
/// while it does: call it from a plain thread or `spawn_blocking`, not on a busy async
/// worker. Errors are rayquet's [`rayquet::Error`] as `DataFusionError::External`, naming the
/// file or table.
impl RayquetTable {
    /// The Parquet dataset at `url` (a file, a directory or prefix of `*.parquet` objects, or
    /// a URL of either). Its schema is the first file's (strings as
    /// `Utf8View`); every file is read with it (columns by name). `options`: this process's
    /// stores, pools and budget.
    pub fn parquet(url: &str, options: ScanOptions) -> Result<Self> {
        Self::parquet_inner(url, options, false).map_err(df)
    }

    /// The Parquet dataset at `url` whose files' schemas differ, read as one schema as
    /// [`rayquet::Scan::union_by_name`] reads them (duckdb's `union_by_name`): columns
    /// matched by name in the order they first appear, a column a file lacks null in its rows,
    /// a type that differs between files widened where every value converts exactly (else a
    /// `SchemaMismatch` error naming the column and both files). Every footer is read here,
    /// in parallel (a file added after registration must fit the schema found here).
    ///
    /// ```no_run
    /// # fn example() -> datafusion::error::Result<()> {
    /// use rayquet::ScanOptions;
    /// use rayquet_datafusion::RayquetTable;
    /// let events = RayquetTable::parquet_union_by_name("s3://bucket/events/", ScanOptions::new())?;
    /// # drop(events); Ok(()) }
    /// ```
    pub fn parquet_union_by_name(url: &str, options: ScanOptions) -> Result<Self> {
        Self::parquet_inner(url, options, true).map_err(df)
    }

    fn parquet_inner(url: &str, options: ScanOptions, union: bool) -> rayquet::Result<Self> {
        let dataset = rayquet::layer::list_dataset(&options, url, &Partitioning::Infer)?;
        if dataset.files.is_empty() {
            return Err(rayquet::Error::new(
                rayquet::ErrorKind::NotFound,
                "no *.parquet objects found",
            )
            .with_path(url));
        }
        // The first file's schema, or with `union` every file's, folded.
        let footers = match union {
            true => &dataset.files[..],
            false => &dataset.files[..1],
        };
        let metas = read_footers(&options, footers)?;
        let schemas = metas
            .iter()
            .zip(footers)
            .map(|(md, f)| arrow_schema(md, &f.location))
            .collect::<rayquet::Result<Vec<_>>>()?;
        let schema = match union {
            true => rayquet::layer::union_schema(
                schemas
                    .iter()
                    .zip(footers)
                    .map(|(s, f)| (s, f.location.as_str())),
            )?
            .as_ref()
            .clone(),
            false => schemas.into_iter().next().expect("one footer"),
        };
        let file_schema = with_views(&schema);
        // Hive partition columns (`year=2024/...` directories) come last, as a plain scan
        // gives them.
        let hive: Vec<String> = dataset
            .partition_fields
            .iter()
            .filter(|f| schema.field_with_name(f.name()).is_err())
            .map(|f| f.name().clone())
            .collect();
        let schema = Schema::new_with_metadata(
            schema
                .fields()
                .iter()
                // A key the files also hold as a column: the files' column (as a plain scan).
                .chain(
                    dataset
                        .partition_fields
                        .iter()
                        .filter(|f| schema.field_with_name(f.name()).is_err()),
                )
                .cloned()
                .collect::<Vec<_>>(),
            schema.metadata().clone(),
        );
        let table = RayquetTable {
            name: last_segment(url),
            source: Source::Parquet {
                url: url.to_string(),
                hive,
            },
            schema: Arc::new(with_views(&schema)),
            options,
            require_remote: false,
            partitions: None,
            unit_bytes: DEFAULT_UNIT_BYTES,
            rows: Precision::Absent,
            summaries: SummaryCache::default(),
        };
        // The footers read here need not be read again by the first query.
        for (md, f) in metas.iter().zip(footers) {
            let key = FileKey {
                location: f.location.clone(),
                size: f.size,
                version: f.version.clone(),
            };
            let summary = crate::meta::summarize(md, &file_schema);
            table.summaries.insert(key, Arc::new(summary));
        }
        Ok(table)
    }

    /// The Iceberg table `scan` reads, as it reads it: opened from a location
    /// ([`rayquet_iceberg::TableScan::open`]) or a catalog's table
    /// ([`rayquet_iceberg::TableScan::from_table`]), at its snapshot, branch, tag or timestamp,
    /// with its options (this process's stores, pools and budget). Each query gives its own
    /// columns and filter: the scan's are dropped.
    ///
    /// ```no_run
    /// # fn example() -> datafusion::error::Result<()> {
    /// use rayquet::prelude::*;
    /// use rayquet_datafusion::RayquetTable;
    /// let scan = rayquet_iceberg::TableScan::open("s3://lake/warehouse/orders").reference("audit");
    /// let orders = RayquetTable::iceberg(scan.with_options(ScanOptions::new()))?;
    /// # Ok(()) }
    /// ```
    pub fn iceberg(scan: rayquet_iceberg::TableScan) -> Result<Self> {
        Self::iceberg_inner(scan).map_err(df)
    }

    pub(crate) fn iceberg_inner(mut scan: rayquet_iceberg::TableScan) -> rayquet::Result<Self> {
        rayquet::layer::take_columns(scan.options_mut());
        rayquet::layer::take_filter(scan.options_mut());
        let options = scan.options_mut().clone();
        let schema = scan.output_schema()?;
        let rows = match scan.snapshot_to_read()? {
            None => Precision::Exact(0),
            Some(s) => {
                let props = &s.summary().additional_properties;
                let get = |k: &str| props.get(k).and_then(|v| v.parse::<usize>().ok());
                let deletes = get("total-position-deletes").unwrap_or(0)
                    + get("total-equality-deletes").unwrap_or(0);
                match get("total-records") {
                    Some(n) if deletes == 0 => Precision::Exact(n),
                    Some(n) => Precision::Inexact(n),
                    None => Precision::Absent,
                }
            }
        };
        let name = scan.table()?.identifier().name().to_string();
        Ok(RayquetTable {
            name,
            source: Source::Iceberg(Box::new(scan)),
            schema: Arc::new(schema.as_ref().clone()),
            options,
            require_remote: false,
            partitions: None,
            unit_bytes: DEFAULT_UNIT_BYTES,
            rows,
            summaries: SummaryCache::default(),
        })
    }

    /// The Delta table `scan` reads ([`rayquet_delta::TableScan::open`]), at its version (or
    /// the newest), with its options. Each query gives its own columns and filter: the scan's
    /// are dropped.
    pub fn delta(scan: rayquet_delta::TableScan) -> Result<Self> {
        Self::delta_inner(scan).map_err(df)
    }

    fn delta_inner(mut scan: rayquet_delta::TableScan) -> rayquet::Result<Self> {
        rayquet::layer::take_columns(scan.options_mut());
        rayquet::layer::take_filter(scan.options_mut());
        let options = scan.options_mut().clone();
        let planned = scan.clone().plan()?;
        let schema = planned.plan.output_schema()?;
        Ok(RayquetTable {
            name: last_segment(scan.location()),
            source: Source::Delta(Box::new(scan)),
            schema: Arc::new(schema.as_ref().clone()),
            options,
            require_remote: false,
            partitions: None,
            unit_bytes: DEFAULT_UNIT_BYTES,
            rows: Precision::Absent,
            summaries: SummaryCache::default(),
        })
    }

    /// Never scan in this process: a query that would is an error (for the coordinator of a
    /// distributed session, whose scans must run on workers).
    pub fn require_remote(mut self, yes: bool) -> Self {
        self.require_remote = yes;
        self
    }

    /// Output partitions of each scan node (in a distributed run: of each worker's task).
    /// Default: the session's target partitions (at most one per unit), as DataFusion's own
    /// file scan has, so that no repartition is needed above the scan. The node runs one
    /// rayquet scan per partition; a task's units are dealt to its partitions by bytes (each
    /// to the one with the fewest so far), they share its memory budget and decode on the one rayquet pool of the process.
    pub fn partitions(mut self, n: usize) -> Self {
        self.partitions = Some(n.max(1));
        self
    }

    /// Compressed bytes of the columns a scan reads, per unit of work (default
    /// [`DEFAULT_UNIT_BYTES`], 8 MiB). A Parquet file larger than that is cut into runs of
    /// its row groups of about this size, each a unit: spread over the scan's partitions and,
    /// distributed, over the workers. A table is also cut into at least as many units as it
    /// has partitions (on every worker, distributed), as far as its row groups allow. An
    /// Iceberg or Delta data file is cut the same way, its footer read at planning, weighing
    /// its bytes by the share of the table's columns read (their metadata has no sizes per
    /// column).
    pub fn unit_bytes(mut self, bytes: u64) -> Self {
        self.unit_bytes = bytes.max(1);
        self
    }

    /// The columns a scan reads: the projected ones (or, for an empty projection, the first
    /// column, whose rows are counted), then the top-level columns only the filter needs.
    fn columns(&self, projection: Option<&Vec<usize>>, filter: Option<&Expr>) -> Vec<String> {
        let names: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let mut out: Vec<String> = match projection {
            Some(p) if p.is_empty() => names.iter().take(1).cloned().collect(),
            Some(p) => p.iter().map(|&i| names[i].clone()).collect(),
            None => names.clone(),
        };
        if let Some(f) = filter {
            for c in f.columns() {
                let top = if names.iter().any(|n| n == c) {
                    c
                } else {
                    c.split('.').next().unwrap_or(c)
                };
                if !out.iter().any(|o| o == top) {
                    out.push(top.to_string());
                }
            }
        }
        out
    }

    /// The plan of a scan reading `read` columns (the projection, then the columns only the
    /// filter needs) and delivering the first `delivered`, its units, and the statistics of
    /// the table's rows those units hold (before the filter). Lists the dataset and reads the
    /// footers it has not read yet (Parquet), plans the Iceberg scan, replays the Delta log.
    async fn plan(
        &self,
        read: Vec<String>,
        delivered: usize,
        filter: Option<Expr>,
        sizing: Sizing,
    ) -> Result<Planned> {
        let options = self.options.clone();
        match &self.source {
            Source::Parquet { url, hive } => {
                let idx: Vec<usize> = read
                    .iter()
                    .map(|c| self.schema.index_of(c))
                    .collect::<std::result::Result<_, _>>()?;
                let read_schema = self.schema.project(&idx)?;
                let (units, stats, ordering) = self
                    .parquet_units(url, hive, &read, filter.as_ref(), sizing)
                    .await?;
                Ok(Planned {
                    plan: Plan::Parquet {
                        read: read_schema,
                        delivered,
                        filter,
                    },
                    units,
                    stats,
                    ordering,
                    store_defaults: Vec::new(),
                })
            }
            Source::Iceberg(scan) => {
                let filtered = filter.is_some();
                let mut scan = scan
                    .as_ref()
                    .clone()
                    .statistics(true)
                    .columns(read.iter().take(delivered).cloned());
                if let Some(f) = filter {
                    scan = scan.filter(f);
                }
                let file_io = scan.table().map_err(df)?.file_io().config().props().clone();
                let store_defaults = rayquet_iceberg::storage::store_options(&file_io);
                let planned = scan.plan().map_err(df)?;
                // Planned on rayquet's IO runtime, whatever runtime polls this.
                let units: Vec<rayquet_iceberg::TaskUnit> = rayquet::layer::io_runtime(&options)
                    .spawn(planned.units.collect::<Vec<_>>())
                    .await
                    .map_err(|e| DataFusionError::External(Box::new(e)))?
                    .into_iter()
                    .collect::<rayquet::Result<_>>()
                    .map_err(df)?;
                // Without a count per file, the snapshot's (an upper bound when filtered).
                let rows = match filtered {
                    true => self.rows.to_inexact(),
                    false => self.rows,
                };
                let stats = crate::table_stats::iceberg(&units, rows, &self.schema)?;
                let units = units.into_iter().map(UnitKind::iceberg).collect();
                // Whole files larger than a unit, cut into runs of row groups.
                let store_options = planned.options.clone();
                let locate = move |u: &UnitKind| match u {
                    UnitKind::Iceberg(t) if t.start == 0 && t.length == t.size => {
                        rayquet::layer::store_for_literal(&store_options, &t.path).ok()
                    }
                    _ => None,
                };
                let fraction = self.read_fraction(&read);
                let units =
                    crate::split::cut(units, &planned.options, &locate, fraction, sizing).await;
                Ok(Planned {
                    plan: Plan::Iceberg(planned.plan),
                    units,
                    stats,
                    ordering: Vec::new(),
                    store_defaults,
                })
            }
            Source::Delta(scan) => {
                let mut scan = scan
                    .as_ref()
                    .clone()
                    .statistics(true)
                    .columns(read.iter().take(delivered).cloned());
                if let Some(f) = filter {
                    scan = scan.filter(f);
                }
                // The kernel reads the log with blocking calls: not on this runtime's workers.
                let (plan, units, options) = tokio::task::spawn_blocking(move || {
                    let planned = scan.plan()?;
                    let units = planned.units.collect::<rayquet::Result<Vec<_>>>()?;
                    Ok::<_, rayquet::Error>((planned.plan, units, planned.options))
                })
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?
                .map_err(df)?;
                let stats = crate::table_stats::delta(&units, &self.schema)?;
                let units = units.into_iter().map(UnitKind::delta).collect();
                // Files larger than a unit, cut into runs of row groups.
                let locate = |u: &UnitKind| match u {
                    UnitKind::Delta(f) if f.row_groups.is_none() => {
                        let at = plan.location(f).ok()?;
                        rayquet::layer::store_for(&options, &at).ok()
                    }
                    _ => None,
                };
                let fraction = self.read_fraction(&read);
                let units = crate::split::cut(units, &options, &locate, fraction, sizing).await;
                Ok(Planned {
                    plan: Plan::Delta(Box::new(plan)),
                    units,
                    stats,
                    ordering: Vec::new(),
                    store_defaults: Vec::new(),
                })
            }
        }
    }

    /// The share of a file's bytes a scan reading columns `read` reads, by their count (an
    /// Iceberg or Delta table's metadata has no sizes per column).
    fn read_fraction(&self, read: &[String]) -> f64 {
        let all = self.schema.fields().len().max(1);
        (read.len().clamp(1, all) as f64) / all as f64
    }

    /// The units of a Parquet dataset at `url` (Hive partition columns `hive`) reading `read`
    /// with `filter`, the statistics of the files they read, and the order of their rows:
    /// lists the dataset, drops the files whose partition values the filter excludes, reads
    /// the footers not read before, cuts the files into runs of row groups
    /// ([`crate::units`]), and puts the runs in the order the files declare when their row
    /// groups follow each other in it ([`crate::order`]; else they keep the listing's order
    /// and no order is claimed).
    async fn parquet_units(
        &self,
        url: &str,
        hive: &[String],
        read: &[String],
        filter: Option<&Expr>,
        sizing: Sizing,
    ) -> Result<(Vec<(UnitKind, u64)>, Statistics, Vec<SortKey>)> {
        let list = self.options.clone();
        let at = url.to_string();
        let mut dataset = rayquet::layer::io_runtime(&self.options)
            .spawn(async move {
                rayquet::layer::list_dataset_async(&list, &at, &Partitioning::Infer).await
            })
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?
            .map_err(df)?;
        let key = |f: &rayquet::layer::DatasetFile| FileKey {
            location: f.location.clone(),
            size: f.size,
            version: f.version.clone(),
        };
        let keys: Vec<FileKey> = dataset.files.iter().map(key).collect();
        self.summaries.retain(&keys);
        // Files whose partition values the filter excludes: not opened.
        if let Some(f) = filter {
            dataset.retain_matching(f).map_err(df)?;
        }
        // The table's file columns come first, its partition columns last.
        let file_columns = self.schema.fields().len() - hive.len();
        let file_schema = Arc::new(
            self.schema
                .project(&(0..file_columns).collect::<Vec<_>>())?,
        );
        let reads: Vec<_> = dataset
            .files
            .iter()
            .map(|f| {
                let key = key(f);
                let cached = self.summaries.get(&key);
                let options = self.options.clone();
                let schema = Arc::clone(&file_schema);
                let cache = self.summaries.clone();
                async move {
                    if let Some(s) = cached {
                        return Ok(s);
                    }
                    let summary = tokio::task::spawn_blocking(move || {
                        let (store, path) = rayquet::layer::store_for(&options, &key.location)?;
                        let md = rayquet::read_metadata(store, path, key.size)?;
                        let summary = Arc::new(crate::meta::summarize(&md, &schema));
                        cache.insert(key, Arc::clone(&summary));
                        Ok::<_, rayquet::Error>(summary)
                    })
                    .await
                    .map_err(|e| DataFusionError::External(Box::new(e)))?
                    .map_err(df)?;
                    Ok::<_, DataFusionError>(summary)
                }
            })
            .collect();
        let summaries: Vec<Arc<FileSummary>> = futures::stream::iter(reads)
            .buffered(16)
            .try_collect()
            .await?;
        // Keys the table has as partition columns (a key the files also hold is read from the
        // files, by name), and the columns read among the file columns.
        let keys: Vec<Option<String>> = dataset
            .partition_fields
            .iter()
            .map(|f| Some(f.name().clone()).filter(|n| hive.contains(n)))
            .collect();
        let read_files: Vec<usize> = read
            .iter()
            .filter_map(|c| file_schema.index_of(c).ok())
            .collect();
        let bytes: Vec<Vec<u64>> = summaries
            .iter()
            .map(|s| {
                s.row_groups
                    .iter()
                    .map(|rg| crate::units::read_bytes(rg, &read_files))
                    .collect()
            })
            .collect();
        let runs = crate::units::split_files(&bytes, sizing);
        let mut units = Vec::new();
        // Each unit's file's declared order and row groups.
        let mut rows = Vec::new();
        let mut stats = Vec::with_capacity(summaries.len());
        let files = dataset
            .files
            .into_iter()
            .zip(&summaries)
            .zip(runs)
            .zip(&bytes);
        for (((file, summary), runs), file_bytes) in files {
            // The file's statistics, with its partition values as constants.
            let mut file_stats = summary.stats.clone();
            for name in hive {
                let field = self.schema.field_with_name(name)?;
                let value = keys
                    .iter()
                    .position(|k| k.as_deref() == Some(name.as_str()))
                    .and_then(|i| match &file.partition[i] {
                        ColumnSource::Constant(rayquet::expr::Value::Str(text)) => {
                            ScalarValue::try_from_string(text.clone(), field.data_type()).ok()
                        }
                        _ => None,
                    });
                file_stats
                    .column_statistics
                    .push(crate::meta::constant_stats(value, summary.rows() as usize));
            }
            stats.push(file_stats);
            let mut task = FileTask::new(file.location);
            if let Some(s) = file.size {
                task = task.size(s);
            }
            if let Some(v) = file.version {
                task = task.version(v);
            }
            // Partition columns are the file's constants; the others its columns, by name.
            if keys.iter().any(Option::is_some) {
                task = task.columns(read.iter().map(|n| {
                    match keys.iter().position(|k| k.as_ref() == Some(n)) {
                        Some(i) => file.partition[i].clone(),
                        None => ColumnSource::file(),
                    }
                }));
            }
            let run_bytes = |run: &std::ops::Range<usize>| file_bytes[run.clone()].iter().sum();
            let sorting = summary.sorting.as_ref();
            if runs.len() == 1 {
                units.push((UnitKind::Parquet(task), file_bytes.iter().sum()));
                let row_groups = 0..summary.row_groups.len();
                rows.push(UnitRows {
                    sorting,
                    row_groups,
                });
            } else {
                for run in runs {
                    let b = run_bytes(&run);
                    units.push((UnitKind::Parquet(task.clone().row_groups(run.clone())), b));
                    rows.push(UnitRows {
                        sorting,
                        row_groups: run,
                    });
                }
            }
        }
        let stats = crate::stats::merge(&stats, &self.schema)?;
        let ordering = match crate::order::order(&rows) {
            Some((keys, in_order)) => {
                let mut slots: Vec<Option<(UnitKind, u64)>> = units.into_iter().map(Some).collect();
                units = in_order.iter().filter_map(|&i| slots[i].take()).collect();
                keys
            }
            None => Vec::new(),
        };
        Ok((units, stats, ordering))
    }
}

/// A scan's plan, its units (with their bytes) in the order they are dealt, the statistics of
/// the rows they hold, and the order those rows follow (empty: none claimed).
struct Planned {
    plan: Plan,
    units: Vec<(UnitKind, u64)>,
    stats: Statistics,
    ordering: Vec<SortKey>,
    /// Store options the table brings (an Iceberg table's FileIO properties: its catalog's
    /// endpoint and vended credentials), under this process's own.
    store_defaults: Vec<(String, String)>,
}

/// What a session tells the tables it plans: the workers their scans are spread over (a
/// session config extension; absent in a local session).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ScanHints {
    /// Workers a scan's units are dealt to.
    pub workers: usize,
}

#[async_trait]
impl TableProvider for RayquetTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&DfExpr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(filter::pushdown(filters, &self.schema))
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[DfExpr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let filter = filter::combine(filters, &self.schema);
        // The conjuncts rayquet evaluates (the others DataFusion filters above the scan).
        let (exact, above): (Vec<DfExpr>, Vec<DfExpr>) = filters
            .iter()
            .cloned()
            .partition(|f| filter::exact(f, &self.schema).is_some());
        let rows_only = projection.is_some_and(|p| p.is_empty());
        let read = self.columns(projection, filter.as_ref());
        let read_idx: Vec<usize> = read
            .iter()
            .map(|c| self.schema.index_of(c))
            .collect::<std::result::Result<_, _>>()?;
        let delivered = match projection {
            Some(p) if p.is_empty() => 1,
            Some(p) => p.len(),
            None => self.schema.fields().len(),
        };
        let out = match projection {
            Some(p) => self.schema.project(p)?,
            None => self.schema.as_ref().clone(),
        };
        let config = state.config();
        let workers = config
            .get_extension::<ScanHints>()
            .map_or(1, |h| h.workers.max(1));
        let wanted = self.partitions.unwrap_or(config.target_partitions()).max(1);
        let sizing = Sizing {
            unit_bytes: self.unit_bytes,
            min_units: wanted * workers,
        };
        let Planned {
            plan,
            units,
            stats: table_stats,
            ordering,
            store_defaults,
        } = self.plan(read, delivered, filter.clone(), sizing).await?;
        let mut options = self.options.clone();
        rayquet::layer::default_store_options(&mut options, store_defaults);
        let mut stats = crate::stats::scan_statistics(
            state,
            &self.schema,
            table_stats,
            &read_idx,
            delivered,
            &exact,
            &above,
            limit,
        )?;
        if rows_only {
            stats = stats.project(Some(&Vec::<usize>::new()));
            stats.total_byte_size = Precision::Absent;
        }
        let partitions = wanted.min(units.len()).max(1);
        // The order's keys the scan delivers (a prefix of an order is an order).
        let ordering = match rows_only {
            true => Vec::new(),
            false => ordering
                .into_iter()
                .take_while(|k| out.index_of(&k.column).is_ok())
                .collect(),
        };
        let spec = ScanSpec {
            table: self.name.clone(),
            plan,
            limit,
            rows_only,
            require_remote: self.require_remote,
            schema: out,
            ordering,
        };
        let units_count = units.len();
        let feed = WorkUnitFeed::new(Planner::new(partitions, units));
        Ok(Arc::new(RayquetScanExec::new(
            spec,
            feed,
            partitions,
            options,
            Some(stats),
            None,
            units_count,
        )))
    }
}
