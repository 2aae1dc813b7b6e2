//! Delta tables read on every core by rayquet: a parallel `ParquetHandler` and `Engine` for
//! delta-kernel, and a whole-table scan that reads every file of a snapshot at once. A layer on
//! rayquet's public API.
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
//!   [`TableScan::plan`] gives those files as serializable [`FileUnit`]s, with their columns'
//!   statistics from the log when asked ([`TableScan::statistics`], for a query planner).
//!
//! ```no_run
//! # fn main() -> rayquet::Result<()> {
//! use rayquet::prelude::*;
//! let reader = rayquet_delta::TableScan::open("s3://bucket/events/")
//!     .version(12)                              // Delta's own: time travel
//!     .columns(["id", "country"])               // the same options as any rayquet scan
//!     .filter(col("country").eq("NZ"))
//!     .batch_size(16 * 1024)
//!     .build()?;
//! for batch in reader {
//!     let batch = batch?;
//! }
//! # Ok(()) }
//! ```

mod dv;
mod engine;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
mod handler;
mod log_cache;
mod log_check;
mod nanos;
mod plan;
pub mod predicate;
mod stats;

use std::sync::Arc;

use arrow::datatypes::Schema as ArrowSchema;
use delta_kernel::schema::{SchemaRef, StructType};
use delta_kernel::Snapshot;

pub use engine::{table_url, RayquetEngine};
pub use handler::RayquetParquetHandler;
pub use plan::{DvUnit, FileUnit, ScanPlan};

use handler::from_kernel_error;
use rayquet::expr::Expr;
use rayquet::{Error, ErrorKind, Result, Scan, ScanBuilder, ScanOptions, ScanReader};

/// A scan of a Delta table's logical rows: a version (time travel), and every option of a
/// rayquet scan ([`ScanBuilder`]: columns, filter, limit, batch size, budget, stores,
/// runtime...). Ends in [`TableScan::build`] (or [`TableScan::to_scan`], the rayquet [`Scan`]
/// of its files).
///
/// [`ScanBuilder::columns`] selects top-level columns of the table, in order.
/// [`ScanBuilder::filter`] names the table's logical columns: the kernel skips files by their
/// statistics and partition values, rayquet prunes row groups and pages, and every row read
/// is checked exactly. [`ScanBuilder::object_store`] for the table's `scheme://authority`
/// reads the log, data files and deletion vectors through that store.
#[derive(Debug, Clone)]
pub struct TableScan {
    location: String,
    version: Option<u64>,
    as_of: Option<i64>,
    statistics: bool,
    options: ScanOptions,
}

impl ScanBuilder for TableScan {
    fn options_mut(&mut self) -> &mut ScanOptions {
        &mut self.options
    }
}

impl TableScan {
    /// The table's location, as given to [`TableScan::open`].
    pub fn location(&self) -> &str {
        &self.location
    }

    /// A scan of the newest version of the table at `location` (a URL or a local directory:
    /// the table root, above `_delta_log`), all columns. The log is read when the scan
    /// needs it, through the scan's stores.
    pub fn open(location: impl Into<String>) -> Self {
        TableScan {
            location: location.into(),
            version: None,
            as_of: None,
            statistics: false,
            options: ScanOptions::default(),
        }
    }

    /// Read this version of the table.
    pub fn version(mut self, version: u64) -> Self {
        self.version = Some(version);
        self
    }

    /// Read the version current at `timestamp_ms` (milliseconds since the epoch): the newest
    /// commit at or before it, by its in-commit timestamp where the table records them, else
    /// its log file's modification time, as deltalake's `load_as_version(datetime)` picks it.
    /// A time before the first commit is an `InvalidArgument` error; with
    /// [`TableScan::version`] too, the scan fails naming both.
    pub fn as_of_timestamp(mut self, timestamp_ms: i64) -> Self {
        self.as_of = Some(timestamp_ms);
        self
    }

    /// Give each planned [`FileUnit`] its columns' statistics from the log
    /// ([`FileUnit::stats`]: the `add` action's `minValues`, `maxValues` and `nullCount`, and
    /// its partition values), for a planner that estimates what a scan returns. Off by
    /// default: the kernel then parses only what file skipping needs.
    pub fn statistics(mut self, on: bool) -> Self {
        self.statistics = on;
        self
    }

    /// Read the snapshot and start reading its files.
    pub fn build(self) -> Result<ScanReader> {
        self.to_scan()?.build()
    }

    /// The rayquet scan of the table's files, with this scan's options: the kernel's scan
    /// files stream in as tasks.
    pub fn to_scan(self) -> Result<Scan> {
        let (planned, engine) = self.plan_with_engine()?;
        let Planned {
            plan,
            units,
            options,
        } = planned;
        plan.scan_with(Box::new(units), options, engine)
    }

    /// Read the snapshot and plan the scan for reading elsewhere: the [`ScanPlan`] every file
    /// shares and an iterator of [`FileUnit`]s (the kernel's log replay, pulled lazily),
    /// both serializable and free of credentials, and the scan's options (its columns and
    /// filter are in the plan). A process that reads units calls [`ScanPlan::scan`] with its
    /// own options.
    pub fn plan(self) -> Result<Planned> {
        Ok(self.plan_with_engine()?.0)
    }

    fn plan_with_engine(self) -> Result<(Planned, Arc<RayquetEngine>)> {
        let url = table_url(&self.location)?;
        let mut options = self.options;
        let columns = rayquet::layer::take_columns(&mut options);
        let filter = rayquet::layer::take_filter(&mut options);
        // One store for the log, the data files and the deletion vectors.
        let (store, _) = rayquet::layer::store_for(&options, url.as_str())?;
        let root = format!("{}://{}", url.scheme(), url.authority());
        let options = options.object_store(root, Arc::clone(&store));
        let engine = RayquetEngine::build(&url, Arc::clone(&store), &options);
        // Errors name the table, or the log file that is damaged.
        let kernel = |e: delta_kernel::Error| {
            let e = from_kernel_error(e);
            match e.path() {
                Some(_) => e,
                None => e.with_path(url.as_str()),
            }
        };
        if let (Some(v), Some(t)) = (self.version, self.as_of) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("a version ({v}) or a timestamp ({t} ms), not both"),
            )
            .with_path(url.as_str()));
        }
        let mut builder = Snapshot::builder_for(url.as_str());
        if let Some(v) = self.version {
            builder = builder.at_version(v);
        }
        let mut snapshot = builder
            .build(engine.as_ref())
            .map_err(|e| kernel(e).context("reading the table's log"))?;
        if let Some(t) = self.as_of {
            let at = delta_kernel::history_manager::latest_version_as_of(
                &snapshot,
                engine.as_ref(),
                t,
                delta_kernel::history_manager::HistoryCommitType::Published,
            )
            .map_err(|e| match e {
                // No commit at or before the time: the caller's argument, not the store.
                delta_kernel::Error::LogHistory(h) => Error::new(
                    ErrorKind::InvalidArgument,
                    format!("no version as of {t} ms: {h}"),
                )
                .with_path(url.as_str()),
                e => kernel(e).context(format!("finding the version as of {t} ms")),
            })?;
            if at.version != snapshot.version() {
                snapshot = Snapshot::builder_for(url.as_str())
                    .at_version(at.version)
                    .build(engine.as_ref())
                    .map_err(|e| kernel(e).context("reading the table's log"))?;
            }
        }
        let table_schema = snapshot.schema();
        // The columns delivered, and those the filter also needs.
        let selected: Vec<String> = match &columns {
            Some(c) => c.clone(),
            None => table_schema.fields().map(|f| f.name().clone()).collect(),
        };
        let mut read = selected.clone();
        if let Some(f) = &filter {
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
        if let Some(f) = &filter {
            sb = sb.with_predicate(Arc::new(predicate::to_kernel(f, &table_schema)));
        }
        if self.statistics {
            // JSON too: the kernel's `ScanFile` reads `numRecords` from it.
            sb = sb
                .with_stats(delta_kernel::scan::StatsOptions::all())
                .with_partition_values(delta_kernel::scan::PartitionValuesOptions::with_struct());
        }
        let scan = sb.build().map_err(kernel)?;
        let physical: SchemaRef = Arc::clone(scan.physical_schema());
        let logical: SchemaRef = Arc::clone(scan.logical_schema());
        let stats_columns = match self.statistics {
            true => stats::stats_columns(&logical, &physical, &table_schema),
            false => Vec::new(),
        };
        let logical_arrow: ArrowSchema = nanos::to_arrow(logical.as_ref())?;
        let keep: Vec<usize> = selected
            .iter()
            .map(|c| logical_arrow.index_of(c))
            .collect::<std::result::Result<_, _>>()
            .map_err(|e| Error::new(ErrorKind::InvalidArgument, e.to_string()))?;
        // The filter on the files' columns: exact (rayquet's filter stage, late
        // materialization) when every leaf is on one, else only for pruning, and then the
        // transform filters the logical rows.
        let pushed = filter
            .as_ref()
            .and_then(|f| physical_filter(f, &table_schema, &physical));
        let exact = pushed.as_ref().is_some_and(|(_, exact)| *exact);
        let plan = ScanPlan {
            root: url.clone(),
            physical: physical.as_ref().clone(),
            logical: logical.as_ref().clone(),
            keep,
            filter: if exact { None } else { filter.clone() },
            pushed,
        };
        let metadata = scan.scan_metadata(engine.as_ref()).map_err(kernel)?;
        let root = url.clone();
        // A snapshot's live files have distinct paths (PROTOCOL.md: the add collection is keyed
        // by path): a path listed twice is a damaged log (two adds in a checkpoint, adds of
        // one path with different deletion vectors), never rows to read twice.
        let units = metadata.flat_map(move |m| -> Vec<Result<FileUnit>> {
            let units = m.and_then(|m| plan::units(&m, &stats_columns));
            match units {
                Ok(units) => units.into_iter().map(Ok).collect(),
                Err(e) => {
                    // Errors name the damaged log file when the check found one, else the table.
                    let e = from_kernel_error(e).context("reading the table's log");
                    vec![Err(match e.path() {
                        Some(_) => e,
                        None => e.with_path(root.as_str()),
                    })]
                }
            }
        });
        let root = url.clone();
        let mut seen = std::collections::HashSet::new();
        let units = units.map(move |u| match u {
            Ok(u) if !seen.insert(u.path.clone()) => Err(Error::new(
                ErrorKind::CorruptTable,
                format!(
                    "the table's log lists the data file {:?} twice among its live files",
                    u.path
                ),
            )
            .with_path(
                root.join(&u.path)
                    .map_or_else(|_| u.path.clone(), String::from),
            )),
            other => other,
        });
        let planned = Planned {
            plan,
            units: Box::new(units),
            options,
        };
        Ok((planned, engine))
    }
}

/// A planned Delta scan ([`TableScan::plan`]): what its files share, their units as the
/// kernel's log replay gives them, and the scan's remaining options.
pub struct Planned {
    /// What every file shares (serializable).
    pub plan: ScanPlan,
    /// The units, produced lazily by the log replay as the iterator is pulled.
    pub units: Box<dyn Iterator<Item = Result<FileUnit>> + Send>,
    /// The scan's options, without the columns and filter (they are in the plan), with the
    /// table's store registered for its URL root.
    pub options: ScanOptions,
}

impl std::fmt::Debug for Planned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Planned")
            .field("plan", &self.plan)
            .field("options", &self.options)
            .finish_non_exhaustive()
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
            Expr::Like {
                column,
                pattern,
                negated,
                case_insensitive,
            } => leaf(&column, &|c| Expr::Like {
                column: c,
                pattern: pattern.clone(),
                negated,
                case_insensitive,
            }),
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
