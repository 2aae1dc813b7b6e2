//! [`RayquetScanExec`]: the leaf of a DataFusion plan that reads a rayquet table.
//!
//! Each output partition is one rayquet scan: its tasks are the units the partition's feed
//! yields (on the coordinator, from the [`Planner`]; on a worker, as datafusion-distributed
//! streams them in), rebuilt into rayquet tasks in this process with this process's stores and
//! pools, decoded on its rayon pool, and delivered through [`crate::stream`]. The node travels
//! to workers as a [`ScanSpec`] (JSON, no credentials) through [`crate::codec`].
//!
//! Footers are cached per process (rayquet's default [`rayquet::FooterCache::global`]) unless
//! the options bring a cache of their own (or none): the units of one file read its footer once.
//!
//! Invariants: a node marked `require_remote` never scans on the coordinator (it fails
//! instead: a distributed query that would run it there is an error, not a silent local run);
//! a node that claims an order ([`crate::order`]) delivers each partition's units in the
//! order dealt, and their rows in row-group order (`ordered(true)`); others as decoded;
//! the memory budget of the process's options is shared by the node's partitions; no
//! DataFusion worker thread waits on a batch; every filter DataFusion offers the node is
//! answered "not pushed down" (the dynamic ones it keeps only save work: [`crate::dynamic`]).

use std::fmt;
use std::sync::Arc;

use datafusion::arrow::compute::SortOptions;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::config::ConfigOptions;
use datafusion::common::{exec_err, DataFusionError, Result, Statistics};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalSortExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use datafusion_distributed::WorkUnitFeed;
use futures::StreamExt;
use rayquet::{Scan, ScanBuilder, ScanOptions};

use crate::dynamic::Dynamic;
use crate::feed::{Planner, UnitKind};
use crate::remote::Remote;
use crate::spec::{Plan, ScanSpec};
use crate::stream::{reader_stream, Shape};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;

/// The leaf node reading a rayquet table (see the module docs).
#[derive(Debug, Clone)]
pub struct RayquetScanExec {
    pub(crate) spec: Arc<ScanSpec>,
    pub(crate) feed: WorkUnitFeed<Planner>,
    /// This process's options: stores, pools, memory budget.
    options: ScanOptions,
    stats: Statistics,
    /// On a worker: what it counts, and the roots its units must read under.
    worker: Option<Remote>,
    metrics: ExecutionPlanMetricsSet,
    props: Arc<PlanProperties>,
    /// Units planned (on the coordinator; 0 where the node was decoded).
    units: usize,
    /// DataFusion's dynamic filters offered to this node ([`crate::dynamic`]).
    dynamic: Vec<Arc<dyn PhysicalExpr>>,
}

impl RayquetScanExec {
    pub(crate) fn new(
        spec: ScanSpec,
        feed: WorkUnitFeed<Planner>,
        partitions: usize,
        options: ScanOptions,
        stats: Option<Statistics>,
        worker: Option<Remote>,
        units: usize,
    ) -> Self {
        let schema: SchemaRef = Arc::new(spec.schema.clone());
        let sort: Vec<PhysicalSortExpr> = spec
            .ordering
            .iter()
            .map_while(|k| {
                let at = schema.index_of(&k.column).ok()?;
                let options = SortOptions {
                    descending: k.descending,
                    nulls_first: k.nulls_first,
                };
                Some(PhysicalSortExpr::new(
                    Arc::new(Column::new(&k.column, at)),
                    options,
                ))
            })
            .collect();
        let orderings = (!sort.is_empty()).then_some(sort);
        let props = Arc::new(PlanProperties::new(
            EquivalenceProperties::new_with_orderings(Arc::clone(&schema), orderings),
            Partitioning::UnknownPartitioning(partitions.max(1)),
            EmissionType::Incremental,
            Boundedness::Bounded,
        ));
        RayquetScanExec {
            stats: stats.unwrap_or_else(|| Statistics::new_unknown(&schema)),
            spec: Arc::new(spec),
            feed,
            options,
            worker,
            metrics: ExecutionPlanMetricsSet::new(),
            props,
            units,
            dynamic: Vec::new(),
        }
    }

    /// Units of work the coordinator planned for this node (0 on a worker).
    pub fn units(&self) -> usize {
        self.units
    }

    /// The planner of this node, on the coordinator (units dealt per task).
    pub fn planner(&self) -> Option<&Planner> {
        self.feed.inner()
    }

    /// The partition's rayquet scan over `units`.
    fn scan(
        &self,
        units: futures::stream::BoxStream<'static, rayquet::Result<UnitKind>>,
        options: ScanOptions,
    ) -> rayquet::Result<Scan> {
        let dynamic =
            (!self.dynamic.is_empty()).then(|| Dynamic::new(self.dynamic.clone(), &self.schema()));
        let wrong = |kind: &str| {
            rayquet::Error::new(
                rayquet::ErrorKind::InvalidArgument,
                format!("a {kind} unit in a scan of another table format"),
            )
        };
        match &self.spec.plan {
            Plan::Parquet {
                read,
                delivered,
                filter,
            } => {
                let read: SchemaRef = Arc::new(read.clone());
                let n = *delivered;
                let keep = (n < read.fields().len()).then(|| {
                    let out = Arc::new(read.project(&(0..n).collect::<Vec<_>>()).expect("prefix"));
                    (out, (0..n).collect::<Vec<usize>>())
                });
                let project = keep.clone();
                let columns = Arc::clone(&read);
                let tasks = units.map(move |u| match u? {
                    UnitKind::Parquet(task) => {
                        // The dynamic filters, read as each of its batches is filtered.
                        let task = match &dynamic {
                            Some(d) => d.attach(task, &columns),
                            None => task,
                        };
                        Ok(match &project {
                            Some((_, cols)) => {
                                let cols = cols.clone();
                                task.transform(Arc::new(move |b| Ok(b.project(&cols)?)))
                            }
                            None => task,
                        })
                    }
                    _ => Err(wrong("Iceberg or Delta")),
                });
                // The table's schema has strings as views: decode straight to them.
                let mut scan = Scan::from_task_stream(read, tasks)
                    .with_options(options)
                    .string_views(true);
                if let Some((out, _)) = keep {
                    scan = scan.transformed_schema(out);
                }
                if let Some(f) = filter {
                    scan = scan.filter(f.clone());
                }
                Ok(scan)
            }
            Plan::Iceberg(plan) => {
                let units = units.map(move |u| match u? {
                    UnitKind::Iceberg(u) => Ok(u),
                    _ => Err(wrong("Parquet or Delta")),
                });
                plan.scan(units, options)
            }
            Plan::Delta(plan) => {
                let units = units.map(move |u| match u? {
                    UnitKind::Delta(u) => Ok(u),
                    _ => Err(wrong("Parquet or Iceberg")),
                });
                plan.scan(units, options)
            }
        }
    }
}

/// A Parquet table's file that does not fit the table's schema: the error, saying where the
/// schema came from and how to read files that differ.
fn union_hint(e: DataFusionError) -> DataFusionError {
    let DataFusionError::External(inner) = e else {
        return e;
    };
    match inner.downcast::<rayquet::Error>() {
        Ok(r) if r.kind() == rayquet::ErrorKind::SchemaMismatch => {
            let mut hinted = rayquet::Error::new(
                r.kind(),
                format!(
                    "{} (a Parquet table's schema is its first file's, or every file's folded \
                     by name when registered with union by name: \
                     `RayquetTable::parquet_union_by_name`, `rayquet sql --union-by-name`)",
                    r.message()
                ),
            );
            if let Some(p) = r.path() {
                hinted = hinted.with_path(p);
            }
            if let Some(rg) = r.row_group() {
                hinted = hinted.with_row_group(rg);
            }
            DataFusionError::External(Box::new(hinted))
        }
        Ok(r) => DataFusionError::External(r),
        Err(other) => DataFusionError::External(other),
    }
}

impl DisplayAs for RayquetScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.spec.plan {
            Plan::Parquet { .. } => "parquet",
            Plan::Iceberg(_) => "iceberg",
            Plan::Delta(_) => "delta",
        };
        let side = if self.feed.inner().is_some() {
            "planner"
        } else {
            "remote units"
        };
        write!(
            f,
            "RayquetScanExec: {kind} table {}, partitions={}, {side}",
            self.spec.table,
            self.props.partitioning.partition_count()
        )?;
        if let Plan::Parquet {
            filter: Some(filter),
            ..
        } = &self.spec.plan
        {
            write!(f, ", filter={filter}")?;
        }
        if let Some(l) = self.spec.limit {
            write!(f, ", limit={l}")?;
        }
        for d in &self.dynamic {
            write!(f, ", dynamic_filter={d}")?;
        }
        if !self.spec.ordering.is_empty() {
            let keys: Vec<String> = self
                .spec
                .ordering
                .iter()
                .map(|k| {
                    let dir = if k.descending { "DESC" } else { "ASC" };
                    let nulls = if k.nulls_first { "FIRST" } else { "LAST" };
                    format!("{} {dir} NULLS {nulls}", k.column)
                })
                .collect();
            write!(f, ", output_ordering=[{}]", keys.join(", "))?;
        }
        Ok(())
    }
}

impl ExecutionPlan for RayquetScanExec {
    fn name(&self) -> &str {
        "RayquetScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !children.is_empty() {
            return exec_err!("RayquetScanExec has no children");
        }
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        ctx: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if self.spec.require_remote && self.feed.inner().is_some() {
            return exec_err!(
                "the rayquet scan of {} must run on a worker, not on the coordinator (is a \
                 worker available?)",
                self.spec.table
            );
        }
        let partitions = self.props.partitioning.partition_count();
        let units_seen = MetricBuilder::new(&self.metrics).counter("units", partition);
        let rows_seen = MetricBuilder::new(&self.metrics).output_rows(partition);
        let worker = self.worker.clone();
        let spec = Arc::clone(&self.spec);
        let units = self
            .feed
            .feed(partition, Arc::clone(&ctx))?
            .map(move |u| {
                let unit = u.map_err(|e| {
                    rayquet::Error::new(rayquet::ErrorKind::Io, format!("receiving work: {e}"))
                        .with_source(e)
                });
                let unit = unit.and_then(|u| UnitKind::decode(&u))?;
                units_seen.add(1);
                if let Some(w) = &worker {
                    w.admit(&unit, &spec)?;
                }
                Ok(unit)
            })
            .boxed();
        let budget = rayquet::layer::memory_budget(&self.options) / partitions.max(1);
        let mut options = self
            .options
            .clone()
            .batch_size(ctx.session_config().batch_size())
            // In the units' order where the node claims an order, else as decoded.
            .ordered(!self.spec.ordering.is_empty())
            .memory_budget(budget.max(1 << 20));
        if let Some(l) = self.spec.limit {
            options = options.limit(l);
        }
        let scan = self
            .scan(units, options)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let shape = match self.spec.rows_only {
            true => Shape::RowsOnly,
            false => Shape::AsIs,
        };
        let worker = self.worker.clone();
        let stream = reader_stream(
            self.schema(),
            format!("rayquet-{}-{partition}", self.spec.table),
            shape,
            move || scan.build(),
            move |rows| {
                rows_seen.add(rows);
                if let Some(w) = &worker {
                    w.rows(rows);
                }
            },
        )?;
        Ok(match self.spec.plan {
            Plan::Parquet { .. } => Box::pin(RecordBatchStreamAdapter::new(
                self.schema(),
                stream.map(|r| r.map_err(union_hint)),
            )),
            _ => stream,
        })
    }

    /// Keeps the dynamic filters offered to a Parquet scan (each unit's row filter, see
    /// the `dynamic` module) and answers "not pushed down" for every filter.
    fn handle_child_pushdown_result(
        &self,
        _phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let offered: Vec<Arc<dyn PhysicalExpr>> = child_pushdown_result
            .parent_filters
            .into_iter()
            .map(|f| f.filter)
            .collect();
        let answer = FilterPushdownPropagation::with_parent_pushdown_result(vec![
            PushedDown::No;
            offered.len()
        ]);
        // A scan with a filter of its own evaluates it first, often on dictionaries alone
        // (where a row filter would have every row decoded): dynamic filters go to scans
        // without one.
        let parquet = matches!(self.spec.plan, Plan::Parquet { filter: None, .. });
        let dynamic = crate::dynamic::dynamic_only(&offered);
        if !parquet || self.spec.rows_only || dynamic.is_empty() {
            return Ok(answer);
        }
        let mut node = self.clone();
        node.dynamic.extend(dynamic);
        Ok(answer.with_updated_node(Arc::new(node)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        Ok(Arc::new(match partition {
            None => self.stats.clone(),
            Some(_) => Statistics::new_unknown(&self.schema()),
        }))
    }
}
