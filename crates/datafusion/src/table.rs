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
//! statistics are exact only where metadata gives them exactly (an Iceberg snapshot's record
//! count when it has no deletes and no filter is pushed), otherwise inexact or absent.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{DataFusionError, Result, Statistics};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::{Expr as DfExpr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_distributed::WorkUnitFeed;
use futures::StreamExt;
use rayquet::{ColumnSource, Expr, FileTask, Partitioning, ScanBuilder, ScanOptions};

use crate::exec::{Plan, RayquetScanExec, ScanSpec};
use crate::feed::{Planner, StartPlanning, UnitKind, Units};
use crate::filter;

/// What a table reads.
#[derive(Clone)]
enum Source {
    /// Every `*.parquet` object under a path, prefix or URL (or one file).
    Parquet {
        url: String,
        /// Its Hive partition columns (last in the schema), each file's constants.
        hive: Vec<String>,
    },
    /// An Iceberg table, at a snapshot (or its current one).
    Iceberg {
        table: iceberg::table::Table,
        snapshot: Option<i64>,
    },
    /// A Delta table, at a version (or its newest).
    Delta { url: String, version: Option<u64> },
}

/// A rayquet table for DataFusion (see the module docs).
///
/// ```no_run
/// # async fn example() -> datafusion::error::Result<()> {
/// use std::sync::Arc;
/// use rayquet::ScanOptions;
/// use rayquet_datafusion::{local_session, RayquetTable};
/// let ctx = local_session();
/// let lineitem = RayquetTable::parquet("lineitem", "s3://bucket/lineitem/", ScanOptions::new())?;
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
    /// Output partitions of a scan node (per task in distributed runs).
    partitions: usize,
    /// Rows of the table, when metadata says (exactly, or an upper bound).
    rows: Precision<usize>,
}

impl fmt::Debug for RayquetTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.source {
            Source::Parquet { url, .. } => format!("parquet {url}"),
            Source::Iceberg { table, snapshot } => {
                format!("iceberg {} @ {snapshot:?}", table.identifier())
            }
            Source::Delta { url, version } => format!("delta {url} @ {version:?}"),
        };
        f.debug_struct("RayquetTable")
            .field("name", &self.name)
            .field("source", &kind)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
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
    /// a URL of either), named `name`. Its schema is the first file's (strings as
    /// `Utf8View`); every file is read with it (columns by name). `options`: this process's
    /// stores, pools and budget.
    pub fn parquet(name: &str, url: &str, options: ScanOptions) -> Result<Self> {
        Self::parquet_inner(name, url, options).map_err(df)
    }

    fn parquet_inner(name: &str, url: &str, options: ScanOptions) -> rayquet::Result<Self> {
        let dataset = rayquet::layer::list_dataset(&options, url, &Partitioning::Infer)?;
        let Some(rayquet::layer::DatasetFile {
            location: first,
            size,
            ..
        }) = dataset.files.first()
        else {
            return Err(rayquet::Error::new(
                rayquet::ErrorKind::NotFound,
                "no *.parquet objects found",
            )
            .with_path(url));
        };
        let (store, path) = rayquet::layer::store_for(&options, first)?;
        let md = rayquet::read_metadata(store, path, *size)?;
        let schema = parquet::arrow::parquet_to_arrow_schema(
            md.file_metadata().schema_descr(),
            md.file_metadata().key_value_metadata(),
        )
        .map_err(|e| {
            rayquet::Error::new(rayquet::ErrorKind::CorruptFooter, e.to_string())
                .with_path(first.clone())
        })?;
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
        Ok(RayquetTable {
            name: name.to_string(),
            source: Source::Parquet {
                url: url.to_string(),
                hive,
            },
            schema: Arc::new(with_views(&schema)),
            options,
            require_remote: false,
            partitions: 1,
            rows: Precision::Absent,
        })
    }

    /// The Iceberg table at `location` (a table directory or metadata JSON file, as
    /// [`rayquet_iceberg::load_table`] takes it), at `snapshot` (or its current one).
    pub fn iceberg(
        name: &str,
        location: &str,
        snapshot: Option<i64>,
        options: ScanOptions,
    ) -> Result<Self> {
        let table = rayquet_iceberg::load_table(location, &options).map_err(df)?;
        Self::iceberg_table(name, table, snapshot, options)
    }

    /// An Iceberg table from any catalog, at `snapshot` (or its current one).
    pub fn iceberg_table(
        name: &str,
        table: iceberg::table::Table,
        snapshot: Option<i64>,
        options: ScanOptions,
    ) -> Result<Self> {
        Self::iceberg_inner(name, table, snapshot, options).map_err(df)
    }

    fn iceberg_inner(
        name: &str,
        table: iceberg::table::Table,
        snapshot: Option<i64>,
        options: ScanOptions,
    ) -> rayquet::Result<Self> {
        let mut scan = rayquet_iceberg::TableScan::from_table(table.clone());
        if let Some(id) = snapshot {
            scan = scan.snapshot_id(id);
        }
        let schema = scan.output_schema()?;
        let md = table.metadata();
        let snap = match snapshot {
            Some(id) => md.snapshot_by_id(id),
            None => md.current_snapshot(),
        };
        let rows = match snap {
            None if snapshot.is_some() => {
                return Err(rayquet::Error::new(
                    rayquet::ErrorKind::NotFound,
                    format!("the table has no snapshot {}", snapshot.unwrap_or_default()),
                )
                .with_path(table.metadata_location().unwrap_or_default()))
            }
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
        Ok(RayquetTable {
            name: name.to_string(),
            source: Source::Iceberg { table, snapshot },
            schema: Arc::new(schema.as_ref().clone()),
            options,
            require_remote: false,
            partitions: 1,
            rows,
        })
    }

    /// The Delta table at `url` (its root, or a local directory), at `version` (or its
    /// newest).
    pub fn delta(
        name: &str,
        url: &str,
        version: Option<u64>,
        options: ScanOptions,
    ) -> Result<Self> {
        Self::delta_inner(name, url, version, options).map_err(df)
    }

    fn delta_inner(
        name: &str,
        url: &str,
        version: Option<u64>,
        options: ScanOptions,
    ) -> rayquet::Result<Self> {
        let mut scan = rayquet_delta::TableScan::open(url).with_options(options.clone());
        if let Some(v) = version {
            scan = scan.version(v);
        }
        let planned = scan.plan()?;
        let schema = planned.plan.output_schema()?;
        Ok(RayquetTable {
            name: name.to_string(),
            source: Source::Delta {
                url: url.to_string(),
                version,
            },
            schema: Arc::new(schema.as_ref().clone()),
            options,
            require_remote: false,
            partitions: 1,
            rows: Precision::Absent,
        })
    }

    /// Never scan in this process: a query that would is an error (for the coordinator of a
    /// distributed session, whose scans must run on workers).
    pub fn require_remote(mut self, yes: bool) -> Self {
        self.require_remote = yes;
        self
    }

    /// Output partitions of each scan node (in a distributed run: of each worker's task).
    /// Default 1: one rayquet scan, which decodes on every core of the process by itself,
    /// and DataFusion spreads its batches over its own partitions (round robin) for the
    /// operators above. With `n`, the node runs `n` rayquet scans that share the units (and
    /// the memory budget) of their task, first come first served.
    pub fn partitions(mut self, n: usize) -> Self {
        self.partitions = n.max(1);
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

    /// The plan of a scan reading `delivered` columns (`read`: those and the filter's), and
    /// how its units are planned.
    async fn plan(
        &self,
        read: Vec<String>,
        delivered: usize,
        filter: Option<Expr>,
    ) -> Result<(Plan, StartPlanning)> {
        let options = self.options.clone();
        match &self.source {
            Source::Parquet { url, hive } => {
                let idx: Vec<usize> = read
                    .iter()
                    .map(|c| self.schema.index_of(c))
                    .collect::<std::result::Result<_, _>>()?;
                let read = self.schema.project(&idx)?;
                let url = url.clone();
                let names: Vec<String> = read.fields().iter().map(|f| f.name().clone()).collect();
                let prune = filter.clone();
                let partition_cols = hive.clone();
                let start: StartPlanning = Box::new(move || {
                    let list = options.clone();
                    on_io_runtime(
                        &options,
                        futures::stream::once(async move {
                            let mut dataset = rayquet::layer::list_dataset_async(
                                &list,
                                &url,
                                &Partitioning::Infer,
                            )
                            .await?;
                            // Files whose partition values the filter excludes: not opened.
                            if let Some(f) = &prune {
                                dataset.retain_matching(f)?;
                            }
                            // Keys the table has as partition columns (a key the files
                            // also hold is read from the files, by name).
                            let keys: Vec<Option<String>> = dataset
                                .partition_fields
                                .iter()
                                .map(|f| {
                                    Some(f.name().clone()).filter(|n| partition_cols.contains(n))
                                })
                                .collect();
                            Ok(futures::stream::iter(dataset.files.into_iter().map(
                                move |file| {
                                    let mut task = FileTask::new(file.location);
                                    if let Some(s) = file.size {
                                        task = task.size(s);
                                    }
                                    // Partition columns are the file's constants; the others
                                    // its columns, by name.
                                    if keys.iter().any(Option::is_some) {
                                        task = task.columns(names.iter().map(|n| {
                                            match keys.iter().position(|k| k.as_ref() == Some(n)) {
                                                Some(i) => file.partition[i].clone(),
                                                None => ColumnSource::file(),
                                            }
                                        }));
                                    }
                                    Ok(UnitKind::Parquet(task))
                                },
                            )))
                        })
                        .map(|r: rayquet::Result<_>| match r {
                            Ok(s) => s.boxed(),
                            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
                        })
                        .flatten()
                        .boxed(),
                    )
                });
                Ok((
                    Plan::Parquet {
                        read,
                        delivered,
                        filter,
                    },
                    start,
                ))
            }
            Source::Iceberg { table, snapshot } => {
                let mut scan = rayquet_iceberg::TableScan::from_table(table.clone())
                    .with_options(options.clone())
                    .columns(read.iter().take(delivered).cloned());
                if let Some(id) = snapshot {
                    scan = scan.snapshot_id(*id);
                }
                if let Some(f) = filter {
                    scan = scan.filter(f);
                }
                let planned = scan.plan().map_err(df)?;
                let units = planned.units.map(|u| u.map(UnitKind::Iceberg)).boxed();
                let start: StartPlanning = Box::new(move || on_io_runtime(&options, units));
                Ok((Plan::Iceberg(planned.plan), start))
            }
            Source::Delta { url, version } => {
                let mut scan = rayquet_delta::TableScan::open(url.as_str())
                    .with_options(options.clone())
                    .columns(read.iter().take(delivered).cloned());
                if let Some(v) = version {
                    scan = scan.version(*v);
                }
                if let Some(f) = filter {
                    scan = scan.filter(f);
                }
                // The kernel reads the log with blocking calls: not on this runtime's workers.
                let planned = tokio::task::spawn_blocking(move || scan.plan())
                    .await
                    .map_err(|e| DataFusionError::External(Box::new(e)))?
                    .map_err(df)?;
                let units = planned.units;
                let start: StartPlanning = Box::new(move || {
                    on_thread(units.map(|u| u.map(UnitKind::Delta)), "rayquet-delta-plan")
                });
                Ok((Plan::Delta(Box::new(planned.plan)), start))
            }
        }
    }
}

/// Units of a planning stream polled on rayquet's IO runtime (whatever runtime polls the
/// result), through a bounded channel.
fn on_io_runtime(options: &ScanOptions, units: Units) -> Units {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    rayquet::layer::io_runtime(options).spawn(async move {
        let mut units = units;
        while let Some(u) = units.next().await {
            if tx.send(u).await.is_err() {
                return;
            }
        }
    });
    receiver_stream(rx)
}

/// Units of a blocking iterator pulled on a thread of its own, through a bounded channel.
fn on_thread<I>(units: I, name: &str) -> Units
where
    I: Iterator<Item = rayquet::Result<UnitKind>> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let spawned = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            for u in units {
                if tx.blocking_send(u).is_err() {
                    return;
                }
            }
        });
    match spawned {
        Ok(_) => receiver_stream(rx),
        Err(e) => {
            let e = rayquet::Error::new(rayquet::ErrorKind::Io, e.to_string());
            futures::stream::once(async move { Err(e) }).boxed()
        }
    }
}

fn receiver_stream(rx: tokio::sync::mpsc::Receiver<rayquet::Result<UnitKind>>) -> Units {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|u| (u, rx)) }).boxed()
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
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[DfExpr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let filter = filter::combine(filters, &self.schema);
        let rows_only = projection.is_some_and(|p| p.is_empty());
        let read = self.columns(projection, filter.as_ref());
        let delivered = match projection {
            Some(p) if p.is_empty() => 1,
            Some(p) => p.len(),
            None => self.schema.fields().len(),
        };
        let out = match projection {
            Some(p) => self.schema.project(p)?,
            None => self.schema.as_ref().clone(),
        };
        let partitions = self.partitions;
        let (plan, start) = self.plan(read, delivered, filter.clone()).await?;
        let rows = match (&filter, limit) {
            (None, None) => self.rows,
            (None, Some(l)) => self.rows.min(&Precision::Exact(l)),
            _ => self.rows.to_inexact(),
        };
        let mut stats = Statistics::new_unknown(&out);
        stats.num_rows = rows;
        let spec = ScanSpec {
            table: self.name.clone(),
            plan,
            limit,
            rows_only,
            require_remote: self.require_remote,
            schema: out,
        };
        let feed = WorkUnitFeed::new(Planner::new(partitions, start));
        Ok(Arc::new(RayquetScanExec::new(
            spec,
            feed,
            partitions,
            self.options.clone(),
            Some(stats),
            None,
        )))
    }
}
