//! The statistics a scan node reports, as DataFusion's own Parquet scan and the `FilterExec`
//! above it would: the table's (files merged), narrowed by the filters rayquet evaluates with
//! DataFusion's own estimate (a `FilterExec` over a leaf that reports the table's statistics
//! is asked for its statistics), then projected and limited.
//!
//! Invariant: statistics stay `Exact` only when nothing narrows the rows (no filter; a limit
//! past the row count); a filter's estimate is `Inexact`.

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::stats::Precision;
use datafusion::common::{exec_err, Result, Statistics, ToDFSchema};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::Expr as DfExpr;
use datafusion::physical_expr::intervals::utils::check_support;
use datafusion::physical_expr::EquivalenceProperties;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};

/// The statistics of a scan of `table` (whose statistics are `stats`) reading columns `read`
/// (indices into `table`: the projection, then the columns only the filters need), keeping the
/// rows `filters` keep (the conjuncts rayquet evaluates), delivering the first `delivered` of
/// `read`, at most `limit` rows. The steps are DataFusion's own over its Parquet scan: the
/// scan's projection, a `FilterExec`, a projection without the filter's columns.
///
/// `above` are the filters DataFusion evaluates above the scan. When its estimate of them
/// falls back to a default selectivity (an expression interval analysis does not take, such
/// as `LIKE`), so would its estimate of all the filters over its own scan: then the scan
/// reports the statistics before its own filters, and DataFusion's estimate above it comes
/// out as over its own scan.
#[allow(clippy::too_many_arguments)]
pub(crate) fn scan_statistics(
    state: &dyn Session,
    table: &Schema,
    stats: Statistics,
    read: &[usize],
    delivered: usize,
    filters: &[DfExpr],
    above: &[DfExpr],
    limit: Option<usize>,
) -> Result<Statistics> {
    let table_schema = Arc::new(table.clone());
    let df_table = table.clone().to_dfschema_ref()?;
    let defaulted = match conjunction(above.iter().cloned()) {
        None => false,
        Some(p) => {
            let p = state.create_physical_expr(p, &df_table)?;
            !check_support(&p, &table_schema)
        }
    };
    let read_schema = Arc::new(table.project(read)?);
    let mut stats = stats.project(Some(&read.to_vec()));
    stats.calculate_total_byte_size(&read_schema);
    let stats = match conjunction(filters.iter().cloned()) {
        None => stats,
        Some(_) if defaulted => stats.to_inexact(),
        Some(predicate) => {
            let schema = read_schema.as_ref().clone().to_dfschema_ref()?;
            let predicate = state.create_physical_expr(predicate, &schema)?;
            let leaf = Arc::new(StatsLeaf::new(Arc::clone(&read_schema), stats));
            let filter = FilterExec::try_new(predicate, leaf)?;
            Arc::unwrap_or_clone(filter.partition_statistics(None)?)
        }
    };
    let mut stats = stats;
    if delivered < read.len() {
        stats = stats.project(Some(&(0..delivered).collect::<Vec<_>>()));
        stats.calculate_total_byte_size(&read_schema.project(&(0..delivered).collect::<Vec<_>>())?);
    }
    match limit {
        Some(l) => stats.with_fetch(Some(l), 0, 1),
        None => Ok(stats),
    }
}

/// The merged statistics of files (each over `schema`); exact row counts add up exactly.
pub(crate) fn merge(files: &[Statistics], schema: &Schema) -> Result<Statistics> {
    if files.is_empty() {
        let mut empty = Statistics::new_unknown(schema);
        empty.num_rows = Precision::Exact(0);
        return Ok(empty);
    }
    Statistics::try_merge_iter(files, schema)
}

/// A leaf that only reports statistics (never executed).
#[derive(Debug)]
struct StatsLeaf {
    stats: Arc<Statistics>,
    props: Arc<PlanProperties>,
}

impl StatsLeaf {
    fn new(schema: SchemaRef, stats: Statistics) -> Self {
        let props = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        StatsLeaf {
            stats: Arc::new(stats),
            props: Arc::new(props),
        }
    }
}

impl DisplayAs for StatsLeaf {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StatsLeaf")
    }
}

impl ExecutionPlan for StatsLeaf {
    fn name(&self) -> &str {
        "StatsLeaf"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(&self, _: usize, _: Arc<TaskContext>) -> Result<SendableRecordBatchStream> {
        exec_err!("StatsLeaf only reports statistics")
    }

    fn partition_statistics(&self, _partition: Option<usize>) -> Result<Arc<Statistics>> {
        Ok(Arc::clone(&self.stats))
    }
}
