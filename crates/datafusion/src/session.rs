//! Sessions: a plain DataFusion session for rayquet tables in this process
//! ([`local_session`]), and a datafusion-distributed coordinator whose rayquet scans run on
//! workers ([`distributed_session`]).
//!
//! Invariants: the coordinator plans (listing, Iceberg planning, Delta log replay) and streams
//! units; the scans themselves run on workers, one task per worker (two on a single worker, so
//! that a lone worker still scans remotely), even those in a stage that datafusion-distributed
//! keeps on the coordinator (gathered from the workers into it, [`ScanStages`]). A stage
//! holding a rayquet scan sends task `i` to worker `i mod n` (in the order the workers were
//! given), which is how [`worker_scans`] tells what each worker read from the per-task
//! metrics. The coordinator's joins collect (and datafusion-distributed broadcasts) a build
//! side estimated below [`BROADCAST_BYTES`], where one process would hash-partition both sides
//! above 1 MiB.

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::common::config::ConfigOptions;
use datafusion::common::JoinType;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_expr::expressions::Column;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::joins::{
    CrossJoinExec, HashJoinExec, NestedLoopJoinExec, PartitionMode,
};
use datafusion::physical_plan::metrics::MetricValue;
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::physical_plan::repartition::RepartitionExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties, Partitioning};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_distributed::{
    rewrite_distributed_plan_with_metrics, DesiredTaskCountEvent, DesiredTaskCountEventResponse,
    DistributedConfig, DistributedExec, DistributedExt, DistributedMetricsFormat,
    NetworkBoundaryExt, RouteTasksEvent, RouteTasksEventResponse, SessionStateBuilderExt,
    WorkerResolver, DISTRIBUTED_DATAFUSION_TASK_ID_LABEL,
};
use rayquet::ScanOptions;
use url::Url;

use crate::codec::RayquetCodec;
use crate::exec::RayquetScanExec;
use crate::table::ScanHints;

/// A DataFusion session for rayquet tables read in this process, on every core (DataFusion's
/// target partitions: one rayquet scan each, sharing rayquet's decode pool).
pub fn local_session() -> SessionContext {
    SessionContext::new_with_config(SessionConfig::new())
}

/// The workers a coordinator sends tasks to.
#[derive(Debug, Clone)]
struct Workers(Vec<Url>);

impl WorkerResolver for Workers {
    fn get_urls(&self) -> std::result::Result<Vec<Url>, DataFusionError> {
        Ok(self.0.clone())
    }
}

/// Run a rayquet scan node on as many tasks as there are workers.
fn scan_tasks(ev: DesiredTaskCountEvent) -> Option<Result<DesiredTaskCountEventResponse>> {
    ev.plan.downcast_ref::<RayquetScanExec>()?;
    Some(Ok(DesiredTaskCountEventResponse::desired(usize::MAX)))
}

/// Whether the stage headed by `plan` holds a rayquet scan (not looking past its inputs'
/// network boundaries, which are other stages).
fn holds_scan(plan: &Arc<dyn ExecutionPlan>) -> bool {
    let mut stack = vec![Arc::clone(plan)];
    while let Some(p) = stack.pop() {
        if p.downcast_ref::<RayquetScanExec>().is_some() {
            return true;
        }
        if p.as_network_boundary().is_none() {
            stack.extend(p.children().into_iter().cloned());
        }
    }
    false
}

/// Task `i` of a stage holding a rayquet scan goes to worker `i mod n`.
fn route_scans(
    workers: Vec<Url>,
) -> impl Fn(RouteTasksEvent) -> Option<Result<RouteTasksEventResponse>> {
    move |ev| {
        if !holds_scan(ev.plan) {
            return None;
        }
        let urls = (0..ev.task_count)
            .map(|i| workers[i % workers.len()].clone())
            .collect();
        Some(Ok(RouteTasksEventResponse::new(urls)))
    }
}

/// Gives every rayquet scan a stage of its own that datafusion-distributed sends to workers.
///
/// datafusion-distributed cuts stages at hash repartitions and below a node that gathers
/// partitions, but never right above a leaf ("wasteful"), and a round-robin repartition heading
/// a stage is replaced on the worker; so `SELECT * FROM t` (the scan alone, or under a limit)
/// would run whole on the coordinator. This rule, last in the optimizer, puts an identity
/// projection above each scan that is not already under a repartition, and gathers a
/// single-partition scan's tasks again above it (so the parent's input keeps one partition):
/// the projection heads the stage, the scan runs on the workers.
///
/// A scan in a stage that datafusion-distributed runs in a single task, on the coordinator
/// ([`pins_stage`]: a join that collects its build side in every task where that side cannot
/// be broadcast, as with `distributed.broadcast_joins = false`), is gathered the same way and
/// then dealt round-robin to its former partition count: its units run on the workers, the
/// join on the coordinator.
#[derive(Debug)]
struct ScanStages;

impl ScanStages {
    /// `gather`: the scans (by address) to gather whatever their partition count.
    fn rewrite(
        plan: Arc<dyn ExecutionPlan>,
        gather: &HashSet<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if plan.downcast_ref::<RayquetScanExec>().is_some() {
            let partitions = plan.output_partitioning().partition_count();
            let pinned = gather.contains(&address(&plan));
            let single = partitions == 1;
            let schema = plan.schema();
            let identity = schema.fields().iter().enumerate().map(|(i, f)| {
                let column: Arc<dyn PhysicalExpr> = Arc::new(Column::new(f.name(), i));
                ProjectionExpr::new(column, f.name().clone())
            });
            let head: Arc<dyn ExecutionPlan> = Arc::new(ProjectionExec::try_new(identity, plan)?);
            return Ok(if single {
                Arc::new(CoalescePartitionsExec::new(head))
            } else if pinned {
                let gathered = Arc::new(CoalescePartitionsExec::new(head));
                Arc::new(RepartitionExec::try_new(
                    gathered,
                    Partitioning::RoundRobinBatch(partitions),
                )?)
            } else {
                head
            });
        }
        let children: Vec<Arc<dyn ExecutionPlan>> = plan.children().into_iter().cloned().collect();
        if children.is_empty() {
            return Ok(plan);
        }
        // A scan right under a repartition is already inside a stage with a head above it.
        let keep_scans = plan.downcast_ref::<RepartitionExec>().is_some();
        let mut changed = false;
        let mut new = Vec::with_capacity(children.len());
        for child in children {
            let is_scan = child.downcast_ref::<RayquetScanExec>().is_some();
            let next = if keep_scans && is_scan && !gather.contains(&address(&child)) {
                Arc::clone(&child)
            } else {
                Self::rewrite(Arc::clone(&child), gather)?
            };
            changed |= !Arc::ptr_eq(&next, &child);
            new.push(next);
        }
        if changed {
            plan.with_new_children(new)
        } else {
            Ok(plan)
        }
    }
}

impl PhysicalOptimizerRule for ScanStages {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let broadcast =
            DistributedConfig::from_config_options(config).map_or(true, |c| c.broadcast_joins);
        let gather = pinned_scans(&plan, broadcast);
        Self::rewrite(plan, &gather)
    }

    fn name(&self) -> &str {
        "rayquet_scan_stages"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

fn address(plan: &Arc<dyn ExecutionPlan>) -> usize {
    Arc::as_ptr(plan) as *const () as usize
}

/// Whether datafusion-distributed runs the stage holding `plan` in a single task: a join that
/// collects one side in every task, where that side cannot be broadcast (`broadcast`: whether
/// broadcast joins are on). Mirrors datafusion-distributed 3.0's `normalize_collect_joins` and
/// `inject_network_boundaries`, which this rule runs before.
fn pins_stage(plan: &Arc<dyn ExecutionPlan>, broadcast: bool) -> bool {
    // Join types that never emit rows of the collected (left) side: it may be broadcast.
    let left_safe = |t: &JoinType| {
        matches!(
            t,
            JoinType::Inner
                | JoinType::Right
                | JoinType::RightSemi
                | JoinType::RightAnti
                | JoinType::RightMark
        )
    };
    let both_single = |l: &Arc<dyn ExecutionPlan>, r: &Arc<dyn ExecutionPlan>| {
        l.output_partitioning().partition_count() == 1
            && r.output_partitioning().partition_count() == 1
    };
    if let Some(j) = plan.downcast_ref::<HashJoinExec>() {
        if j.mode != PartitionMode::CollectLeft {
            return false;
        }
        // Other unsafe types are made partitioned joins, unless both sides are single.
        return j.null_aware
            || if left_safe(j.join_type()) {
                !broadcast
            } else {
                both_single(j.left(), j.right())
            };
    }
    if let Some(j) = plan.downcast_ref::<NestedLoopJoinExec>() {
        // With broadcasts, other unsafe types are swapped into safe ones.
        return !broadcast
            || *j.join_type() == JoinType::Full
            || (!left_safe(j.join_type()) && both_single(j.left(), j.right()));
    }
    plan.downcast_ref::<CrossJoinExec>().is_some() && !broadcast
}

/// The rayquet scans (by address) that share a stage with a node that [`pins_stage`]. Stages
/// are cut as datafusion-distributed cuts them: above a hash repartition, and below a node
/// that gathers partitions (unless its input is a leaf).
fn pinned_scans(plan: &Arc<dyn ExecutionPlan>, broadcast: bool) -> HashSet<usize> {
    fn visit(
        plan: &Arc<dyn ExecutionPlan>,
        stage: usize,
        broadcast: bool,
        pinned: &mut Vec<bool>,
        scans: &mut Vec<(usize, usize)>,
    ) {
        if pins_stage(plan, broadcast) {
            pinned[stage] = true;
        }
        if plan.downcast_ref::<RayquetScanExec>().is_some() {
            scans.push((address(plan), stage));
        }
        let gathers = plan.downcast_ref::<CoalescePartitionsExec>().is_some()
            || plan.downcast_ref::<SortPreservingMergeExec>().is_some();
        for child in plan.children() {
            let shuffled = child
                .downcast_ref::<RepartitionExec>()
                .is_some_and(|r| matches!(r.partitioning(), Partitioning::Hash(..)));
            let stage = if shuffled || (gathers && !child.children().is_empty()) {
                pinned.push(false);
                pinned.len() - 1
            } else {
                stage
            };
            visit(child, stage, broadcast, pinned, scans);
        }
    }
    let (mut pinned, mut scans) = (vec![false], Vec::new());
    visit(plan, 0, broadcast, &mut pinned, &mut scans);
    scans
        .into_iter()
        .filter(|&(_, stage)| pinned[stage])
        .map(|(scan, _)| scan)
        .collect()
}

/// The largest build side, in bytes as DataFusion estimates it, that a distributed session's
/// joins collect whole and broadcast to every task rather than hash-partition (DataFusion's
/// `datafusion.optimizer.hash_join_single_partition_threshold`; its default is 1 MiB).
///
/// In one process a hash partitioning of the larger side is a cheap hand-off in memory, and
/// collecting the build side builds its hash table on one thread, which is why DataFusion
/// keeps the threshold low; across workers the partitioning is a network shuffle of the larger
/// side, which costs more than sending a few MiB to each worker (Spark's broadcast threshold
/// is 10 MiB). On TPC-H SF1 (BENCHMARKS.md, "Broadcast joins up to 4 MiB on workers") it spares Q3, Q5
/// and Q21 their shuffle of `lineitem` or `orders`. A session's `SET` overrides it.
pub const BROADCAST_BYTES: usize = 4 << 20;

/// [`BROADCAST_BYTES`] counted in rows, for a build side whose size in bytes DataFusion cannot
/// estimate (one with strings): `datafusion.optimizer.hash_join_single_partition_threshold_rows`,
/// whose default is 128 Ki rows.
pub const BROADCAST_ROWS: usize = 512 << 10;

/// A datafusion-distributed coordinator: rayquet scans of its tables run on `workers` (URLs of
/// rayquet workers, e.g. `http://10.0.0.5:50051`), planned here and fed to them as units.
/// `options`: this process's (planning reads metadata through its stores). Register tables
/// made with [`crate::RayquetTable`]`::require_remote(true)` so that no scan runs here. Joins
/// whose build side is estimated below [`BROADCAST_BYTES`] (or [`BROADCAST_ROWS`]) broadcast
/// it instead of shuffling both sides.
pub fn distributed_session(workers: Vec<Url>, options: ScanOptions) -> Result<SessionContext> {
    distributed_session_with(workers, options, crate::guard::Credentials::none())
}

/// [`distributed_session`] presenting `credentials` to the workers: TLS for their `https://`
/// URLs (the CA their certificates chain to, a client certificate for mutual TLS) and a bearer
/// token on every call, as guarded workers ([`crate::serve_guarded`]) require.
pub fn distributed_session_with(
    workers: Vec<Url>,
    options: ScanOptions,
    credentials: crate::guard::Credentials,
) -> Result<SessionContext> {
    if workers.is_empty() {
        return Err(DataFusionError::Configuration(
            "a distributed session needs at least one worker".into(),
        ));
    }
    let n = workers.len();
    // Tables cut their files into units enough for every worker's partitions.
    let mut config = SessionConfig::new().with_extension(Arc::new(ScanHints { workers: n }));
    let optimizer = &mut config.options_mut().optimizer;
    optimizer.hash_join_single_partition_threshold = BROADCAST_BYTES;
    optimizer.hash_join_single_partition_threshold_rows = BROADCAST_ROWS;
    let builder = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_distributed_worker_resolver(Workers(workers.clone()))
        .with_distributed_channel_resolver(crate::guard::SecureChannels::new(credentials))
        .with_physical_optimizer_rule(Arc::new(ScanStages))
        .with_distributed_planner()
        .with_distributed_user_codec(RayquetCodec::new(options))
        .with_distributed_desired_task_count_handler(scan_tasks)
        .with_distributed_route_tasks_handler(route_scans(workers))
        .with_distributed_work_unit_feed(|e: &RayquetScanExec| Some(&e.feed))
        .with_distributed_metrics_collection(true)?
        // A stage of one task is not distributed: give a lone worker two.
        .with_distributed_max_tasks_per_stage(n.max(2))?;
    Ok(SessionContext::from(builder.build()))
}

/// The rayquet scan nodes of `plan` (on the coordinator: each with its planner).
pub fn scan_nodes(
    plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>,
) -> Vec<Arc<RayquetScanExec>> {
    let mut out = Vec::new();
    let mut stack = vec![Arc::clone(plan)];
    while let Some(p) = stack.pop() {
        if let Some(scan) = p.downcast_ref::<RayquetScanExec>() {
            out.push(Arc::new(scan.clone()));
        }
        stack.extend(p.children().into_iter().cloned());
    }
    out
}

/// What one worker's rayquet scans read in a query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerScan {
    /// The worker's URL, as given to [`distributed_session`].
    pub worker: Url,
    /// Units (data files, or splits of them) it scanned.
    pub units: u64,
    /// Rows its scans delivered (after rayquet's filters and deletes).
    pub rows: u64,
}

/// What each of `workers` (the list given to [`distributed_session`]) scanned to run `plan`,
/// once its results have been drained: the per-task metrics of its rayquet scan nodes,
/// gathered from the workers (also below `EXPLAIN ANALYZE`, whose root is not the distributed
/// plan). Workers that scanned nothing are listed with zeros.
pub async fn worker_scans(
    plan: Arc<dyn ExecutionPlan>,
    workers: &[Url],
) -> Result<Vec<WorkerScan>> {
    let mut out = worker_scans_none(workers);
    if workers.is_empty() {
        return Ok(out);
    }
    // The distributed plan may sit below the root (`EXPLAIN ANALYZE`'s `AnalyzeExec`): each
    // `DistributedExec` found gets its workers' per-task metrics.
    let mut stack = vec![];
    let mut above = vec![plan];
    while let Some(p) = above.pop() {
        if p.downcast_ref::<DistributedExec>().is_some() {
            stack.push(
                rewrite_distributed_plan_with_metrics(p, DistributedMetricsFormat::PerTask).await?,
            );
        } else {
            above.extend(p.children().into_iter().cloned());
        }
    }
    while let Some(p) = stack.pop() {
        stack.extend(p.children().into_iter().cloned());
        if p.name() != "RayquetScanExec" {
            continue;
        }
        for metric in p.metrics().unwrap_or_default().iter() {
            let task = metric
                .labels()
                .iter()
                .find(|l| l.name() == DISTRIBUTED_DATAFUSION_TASK_ID_LABEL)
                .and_then(|l| l.value().parse::<usize>().ok());
            let Some(task) = task else { continue };
            let slot = &mut out[task % workers.len()];
            match metric.value() {
                MetricValue::OutputRows(c) => slot.rows += c.value() as u64,
                MetricValue::Count { name, count } if name == "units" => {
                    slot.units += count.value() as u64
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

/// Run `sql` — one statement, or several separated by `;` (see [`crate::collect_sql`]) — on a
/// session made by [`distributed_session`] with `workers`, and collect the rows of its last
/// statement that returns columns and what each worker scanned for it ([`worker_scans`]).
/// When the query fails and some workers no longer answer, the error names them
/// ([`name_failed_workers`]).
pub async fn collect_distributed(
    ctx: &SessionContext,
    sql: &str,
    workers: &[Url],
) -> Result<(Vec<RecordBatch>, Vec<WorkerScan>)> {
    let task = ctx.task_ctx();
    let out = crate::statements::run_statements(ctx, sql, |plan| {
        let task = Arc::clone(&task);
        async move {
            let batches = match datafusion::physical_plan::collect(Arc::clone(&plan), task).await {
                Ok(b) => b,
                Err(e) => return Err(name_failed_workers(e, workers).await),
            };
            let scans = worker_scans(plan, workers).await?;
            Ok((batches, scans))
        }
    })
    .await?;
    Ok(out.unwrap_or_else(|| (vec![], worker_scans_none(workers))))
}

/// Every worker with nothing scanned.
fn worker_scans_none(workers: &[Url]) -> Vec<WorkerScan> {
    workers
        .iter()
        .map(|w| WorkerScan {
            worker: w.clone(),
            units: 0,
            rows: 0,
        })
        .collect()
}

/// `err` (from a distributed query) with the workers that no longer accept connections named
/// in front of it: a worker that stops mid-query shows up as a broken connection that does not
/// say whose. Each worker is probed with a TCP connection (2 s at most, all at once); `err`
/// comes back unchanged when every one answers.
pub async fn name_failed_workers(err: DataFusionError, workers: &[Url]) -> DataFusionError {
    let probes = workers
        .iter()
        .map(|w| async move { (w, reachable(w).await) });
    let dead: Vec<String> = futures::future::join_all(probes)
        .await
        .into_iter()
        .filter(|(_, ok)| !ok)
        .map(|(w, _)| w.to_string())
        .collect();
    match dead.len() {
        0 => err,
        1 => err.context(format!("worker {} does not answer", dead[0])),
        _ => err.context(format!("workers {} do not answer", dead.join(", "))),
    }
}

/// Whether `url`'s host accepts a TCP connection on its port within 2 s.
async fn reachable(url: &Url) -> bool {
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return false;
    };
    let connect = tokio::net::TcpStream::connect((host, port));
    matches!(
        tokio::time::timeout(std::time::Duration::from_secs(2), connect).await,
        Ok(Ok(_))
    )
}
