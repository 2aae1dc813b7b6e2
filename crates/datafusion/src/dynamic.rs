//! Dynamic filters: what DataFusion's operators learn while a query runs (a hash join's
//! build-side keys, a TopK's current threshold), evaluated by the scan on its decode pool.
//!
//! DataFusion offers a hash join's `DynamicFilterPhysicalExpr` to the scan of the join's probe
//! side (`ExecutionPlan::handle_child_pushdown_result`, after the other optimizations). The
//! node ([`crate::exec`]) keeps the dynamic expressions it is offered and answers "not pushed
//! down" for every filter, as DataFusion's own scan does without `pushdown_filters`: nothing
//! above the scan relies on it. Each unit of a Parquet scan, as it becomes a rayquet task,
//! gets the filters as its [`RowFilter`] ([`Dynamic::attach`]): evaluated in the filter stage
//! on the columns it reads, before the task's other columns are decoded, so rows the join
//! would drop are never decoded past their keys. The filters are read as they stand when each
//! batch is filtered (a snapshot, taken again only when one has changed): a hash join's is
//! final before its probe side is first polled (the join waits for every partition's build
//! side), and the node's scan opens at that first poll ([`crate::stream`]); a scan started
//! earlier filters from the batch after the keys arrive, and a TopK's tighter threshold
//! applies as soon as it is set.
//!
//! Invariants: any snapshot of a dynamic filter only removes rows its operator would drop
//! (DataFusion's contract for them), so evaluating it is exact; the expression is DataFusion's
//! own, evaluated by DataFusion's code (hash lookups included), never translated; a snapshot
//! that is `true`, that names a column the scan does not deliver, or that fails to take adds
//! nothing (a dynamic filter only ever saves work); a task with a row filter of its own keeps
//! it. Dynamic filters do not travel to workers (datafusion-distributed sends a plan's
//! snapshot, taken before the query runs).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{
    ArrayRef, AsArray, BooleanArray, BooleanBufferBuilder, RecordBatch, RecordBatchOptions,
};
use datafusion::arrow::buffer::BooleanBuffer;
use datafusion::arrow::compute::{filter_record_batch, prep_null_mask_filter};
use datafusion::arrow::datatypes::{DataType, FieldRef, Schema, SchemaRef};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{exec_err, ScalarValue};
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr_common::physical_expr::{
    is_dynamic_physical_expr, snapshot_generation, snapshot_physical_expr,
};
use rayquet::task::{ColumnSource, RowFilter};
use rayquet::FileTask;

/// The dynamic filters among `offered` (the others are static, and DataFusion evaluates them
/// above the scan).
pub(crate) fn dynamic_only(offered: &[Arc<dyn PhysicalExpr>]) -> Vec<Arc<dyn PhysicalExpr>> {
    offered
        .iter()
        .filter(|f| is_dynamic_physical_expr(f))
        .cloned()
        .collect()
}

/// Rows an expression is judged on before it may be dropped as unselective.
const JUDGE_AFTER_ROWS: u64 = 100_000;

/// The largest share of its rows (numerator, denominator) an expression may keep and still be
/// evaluated in the scan. TPC-H SF1 (BENCHMARKS.md, "Join keys filter the scan"): keeping
/// 0.1-6% of `lineitem` (Q17, Q8, Q7, Q21) made those queries up to 2x faster; keeping 15%
/// (Q5's `orders`) made Q5 a little slower.
const KEEP_AT_MOST: (u64, u64) = (1, 10);

/// A scan's dynamic filters, over its node's delivered schema, with what each has kept so far
/// (`None`: none it can evaluate).
#[derive(Debug)]
pub(crate) struct Dynamic(Option<Arc<Shared>>);

/// What the row filters of one scan's tasks share.
#[derive(Debug)]
struct Shared {
    exprs: Vec<Arc<dyn PhysicalExpr>>,
    /// The columns the expressions name, by their index in the node's delivered schema
    /// (ascending), and those columns' fields: the row filter's columns.
    columns: Vec<Column>,
    schema: SchemaRef,
    /// Per expression: rows it was evaluated on, rows it kept.
    counts: Box<[Counts]>,
    /// The last snapshot taken, and the filters' generation then.
    cached: Mutex<Option<(u64, Option<Arc<Snapshot>>)>>,
}

/// Rows one expression was evaluated on, and kept.
#[derive(Debug, Default)]
struct Counts {
    seen: AtomicU64,
    kept: AtomicU64,
}

impl Counts {
    /// The share of rows kept so far, in millionths (0 before any row).
    fn share(&self) -> u64 {
        let seen = self.seen.load(Ordering::Relaxed);
        (self.kept.load(Ordering::Relaxed) * 1_000_000)
            .checked_div(seen)
            .unwrap_or(0)
    }

    /// Whether the expression has kept more than [`KEEP_AT_MOST`] of enough rows to be
    /// judged: the rows it drops do not pay for evaluating it and for decoding the rest of
    /// the scattered rows it keeps (a join whose build side holds most keys), and it is
    /// evaluated no more in this scan.
    fn unselective(&self) -> bool {
        let seen = self.seen.load(Ordering::Relaxed);
        seen >= JUDGE_AFTER_ROWS
            && self.kept.load(Ordering::Relaxed) * KEEP_AT_MOST.1 > seen * KEEP_AT_MOST.0
    }
}

impl Dynamic {
    /// The dynamic filters `exprs` of a node that delivers `delivered`: those whose columns
    /// are the node's.
    pub fn new(exprs: Vec<Arc<dyn PhysicalExpr>>, delivered: &Schema) -> Self {
        let ours = |c: &Column| {
            delivered
                .fields()
                .get(c.index())
                .is_some_and(|f| f.name() == c.name())
        };
        let exprs: Vec<_> = exprs
            .into_iter()
            .filter(|e| collect_columns(e).iter().all(ours))
            .collect();
        let mut columns: Vec<Column> = exprs.iter().flat_map(collect_columns).collect();
        columns.sort_by_key(|c| c.index());
        columns.dedup_by_key(|c| c.index());
        if columns.is_empty() {
            return Dynamic(None);
        }
        let fields: Vec<FieldRef> = columns
            .iter()
            .map(|c| Arc::clone(&delivered.fields()[c.index()]))
            .collect();
        let counts = exprs.iter().map(|_| Counts::default()).collect();
        Dynamic(Some(Arc::new(Shared {
            exprs,
            columns,
            schema: Arc::new(Schema::new(fields)),
            counts,
            cached: Mutex::new(None),
        })))
    }

    /// `task` with the filters as its row filter, its columns produced as the task produces
    /// the columns of `read` (the scan's read schema, by name). The filters are read as they
    /// stand when each batch of the task is filtered, so a task taken up before the join
    /// has its keys (a worker's scans start early) still uses them once it has.
    pub fn attach(&self, task: FileTask, read: &Schema) -> FileTask {
        let Some(shared) = &self.0 else {
            return task;
        };
        if task.has_row_filter() {
            return task;
        }
        let sources: Option<Vec<ColumnSource>> = shared
            .schema
            .fields()
            .iter()
            .map(|f| {
                let at = read.index_of(f.name()).ok()?;
                Some(match task.column_sources() {
                    Some(s) => s.get(at)?.clone(),
                    None => ColumnSource::file(),
                })
            })
            .collect();
        match sources {
            Some(sources) => task.row_filter(Arc::new(TaskFilter {
                shared: Arc::clone(shared),
                sources,
            })),
            None => task,
        }
    }
}

impl Shared {
    /// The filters as they stand, over the row filter's columns (`None`: nothing to filter
    /// yet), taken again only when a filter has changed.
    fn current(&self) -> Option<Arc<Snapshot>> {
        let generation = self
            .exprs
            .iter()
            .fold(0u64, |g, e| g.wrapping_add(snapshot_generation(e)));
        let mut cached = self.cached.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((g, snap)) = cached.as_ref() {
            if *g == generation {
                return snap.clone();
            }
        }
        let snap = self.snapshot();
        *cached = Some((generation, snap.clone()));
        snap
    }

    fn snapshot(&self) -> Option<Arc<Snapshot>> {
        let remap = |e: Arc<dyn PhysicalExpr>| {
            e.transform(|e| {
                let Some(c) = e.downcast_ref::<Column>() else {
                    return Ok(Transformed::no(e));
                };
                let Some(at) = self.columns.iter().position(|k| k.index() == c.index()) else {
                    return exec_err!("a dynamic filter names column {c}, not one of its own");
                };
                Ok(Transformed::yes(
                    Arc::new(Column::new(c.name(), at)) as Arc<dyn PhysicalExpr>
                ))
            })
            .map(|t| t.data)
        };
        let parts: Vec<(usize, Arc<dyn PhysicalExpr>)> = self
            .exprs
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some((i, snapshot_physical_expr(Arc::clone(e)).ok()?)))
            .filter(|(_, e)| !is_true(e))
            .filter_map(|(i, e)| Some((i, remap(e).ok()?)))
            .collect();
        (!parts.is_empty()).then(|| Arc::new(Snapshot { parts }))
    }
}

/// Whether `e` is the literal `true`.
fn is_true(e: &Arc<dyn PhysicalExpr>) -> bool {
    e.as_ref()
        .downcast_ref::<Literal>()
        .is_some_and(|l| l.value() == &ScalarValue::Boolean(Some(true)))
}

/// A snapshot of a scan's dynamic filters over its row filter's columns: each with its index
/// among the scan's expressions (its `counts`).
#[derive(Debug)]
struct Snapshot {
    parts: Vec<(usize, Arc<dyn PhysicalExpr>)>,
}

/// One task's row filter: the scan's filters, their columns produced as the task produces them.
#[derive(Debug)]
struct TaskFilter {
    shared: Arc<Shared>,
    sources: Vec<ColumnSource>,
}

impl RowFilter for TaskFilter {
    fn columns(&self) -> Vec<(FieldRef, ColumnSource)> {
        self.shared
            .schema
            .fields()
            .iter()
            .cloned()
            .zip(self.sources.iter().cloned())
            .collect()
    }

    fn keep(&self, columns: &[ArrayRef]) -> rayquet::Result<BooleanArray> {
        let n = columns.first().map_or(0, |c| c.len());
        let failed = |e: &dyn std::fmt::Display| {
            rayquet::Error::new(
                rayquet::ErrorKind::InvalidArgument,
                format!("evaluating DataFusion's dynamic filter: {e}"),
            )
        };
        let Some(snapshot) = self.shared.current() else {
            return Ok(all_rows(n));
        };
        let batch = RecordBatch::try_new_with_options(
            Arc::clone(&self.shared.schema),
            columns.to_vec(),
            &RecordBatchOptions::new().with_row_count(Some(n)),
        )
        .map_err(|e| failed(&e))?;
        let parts = &snapshot.parts;
        let counts = &self.shared.counts;
        // The expressions still judged worth it, the one that kept the smallest share first
        // (one not yet measured counts as keeping none); each is evaluated only on the rows
        // the ones before it kept, as the joins above would see them.
        let mut order: Vec<(u64, usize)> = parts
            .iter()
            .enumerate()
            .filter(|(_, (i, _))| !counts[*i].unselective())
            .map(|(j, (i, _))| (counts[*i].share(), j))
            .collect();
        order.sort_unstable();
        let mut keep: Option<BooleanArray> = None;
        for (_, j) in order {
            let (i, expr) = &parts[j];
            let rows = match &keep {
                None => batch.clone(),
                Some(k) => filter_record_batch(&batch, k).map_err(|e| failed(&e))?,
            };
            let m = rows.num_rows();
            if m == 0 {
                break;
            }
            let value = expr
                .evaluate(&rows)
                .and_then(|v| v.into_array(m))
                .map_err(|e| failed(&e))?;
            let DataType::Boolean = value.data_type() else {
                let t = value.data_type();
                return Err(failed(&format!("it gave {t}, not booleans")));
            };
            // A null keeps no row, as the join's comparison keeps none.
            let k = match value.null_count() {
                0 => value.as_boolean().clone(),
                _ => prep_null_mask_filter(value.as_boolean()),
            };
            counts[*i].seen.fetch_add(m as u64, Ordering::Relaxed);
            counts[*i]
                .kept
                .fetch_add(k.true_count() as u64, Ordering::Relaxed);
            keep = Some(match keep {
                None => k,
                Some(prev) => scatter(&prev, &k),
            });
        }
        Ok(keep.unwrap_or_else(|| all_rows(n)))
    }
}

/// A mask keeping all `n` rows, set a word at a time (not built from a `Vec<bool>`).
fn all_rows(n: usize) -> BooleanArray {
    BooleanArray::new(BooleanBuffer::new_set(n), None)
}

/// The rows of `prev` (no nulls) that `k` (one value per row `prev` keeps) also keeps.
fn scatter(prev: &BooleanArray, k: &BooleanArray) -> BooleanArray {
    let mut out = BooleanBufferBuilder::new(prev.len());
    out.append_n(prev.len(), false);
    for (at, keep) in prev.values().set_indices().zip(k.values().iter()) {
        if keep {
            out.set_bit(at, true);
        }
    }
    BooleanArray::new(out.finish(), None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::Field;
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::{lit, BinaryExpr, DynamicFilterPhysicalExpr};

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Int64, true),
        ]))
    }

    /// A dynamic filter on `b` (index 1), `b >= 10` once updated.
    fn filter() -> (Arc<DynamicFilterPhysicalExpr>, Arc<dyn PhysicalExpr>) {
        let b: Arc<dyn PhysicalExpr> = Arc::new(Column::new("b", 1));
        let dynamic = Arc::new(DynamicFilterPhysicalExpr::new(
            vec![Arc::clone(&b)],
            lit(true),
        ));
        let update: Arc<dyn PhysicalExpr> =
            Arc::new(BinaryExpr::new(b, Operator::GtEq, lit(10i64)));
        (dynamic, update)
    }

    #[test]
    fn snapshots_follow_the_filter_and_evaluate_on_their_columns() {
        let (dynamic, update) = filter();
        let offered: Vec<Arc<dyn PhysicalExpr>> = vec![
            Arc::clone(&dynamic) as Arc<dyn PhysicalExpr>,
            Arc::new(BinaryExpr::new(
                Arc::new(Column::new("a", 0)),
                Operator::Eq,
                lit(1i64),
            )),
        ];
        let exprs = dynamic_only(&offered);
        assert_eq!(
            exprs.len(),
            1,
            "the static filter is DataFusion's to evaluate"
        );
        let d = Dynamic::new(exprs, &schema());
        let read = Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("b", DataType::Int64, true),
            Field::new("c", DataType::Int64, true),
        ]);
        // The row filter reads `b` alone, as column 0 of its own batch.
        let shared = d.0.as_ref().expect("a filter over this node");
        assert_eq!(shared.schema.fields().len(), 1);
        assert_eq!(shared.schema.field(0).name(), "b");
        let f = TaskFilter {
            shared: Arc::clone(shared),
            sources: vec![ColumnSource::file()],
        };
        assert!(d.attach(FileTask::new("f"), &read).has_row_filter());
        let b: ArrayRef = Arc::new(Int64Array::from(vec![Some(3), Some(10), None, Some(11)]));
        // Before the join has its keys: `true`, every row kept.
        assert_eq!(f.keep(&[Arc::clone(&b)]).unwrap().true_count(), 4);
        // Once it has them, the same task's next batches are filtered by them.
        dynamic.update(update).unwrap();
        let keep = f.keep(&[b]).unwrap();
        let want = datafusion::arrow::compute::kernels::cmp::gt_eq(
            &Int64Array::from(vec![Some(3), Some(10), None, Some(11)]),
            &Int64Array::new_scalar(10),
        )
        .unwrap();
        // A null key keeps no row.
        assert_eq!(keep, prep_null_mask_filter(&want));
        assert_eq!(shared.counts[0].seen.load(Ordering::Relaxed), 4);
        assert_eq!(shared.counts[0].kept.load(Ordering::Relaxed), 2);
        // A partition column's source is the task's own.
        let task = FileTask::new("f").columns([
            ColumnSource::file(),
            ColumnSource::constant(12),
            ColumnSource::file(),
        ]);
        let task = d.attach(task, &read);
        assert!(task.has_row_filter());
    }

    #[test]
    fn expressions_that_keep_most_rows_are_dropped_once_judged() {
        let c = Counts::default();
        assert!(!c.unselective(), "not judged before any row");
        c.seen.store(JUDGE_AFTER_ROWS - 1, Ordering::Relaxed);
        c.kept.store(JUDGE_AFTER_ROWS - 1, Ordering::Relaxed);
        assert!(!c.unselective(), "not judged on too few rows");
        c.seen.store(JUDGE_AFTER_ROWS * 10, Ordering::Relaxed);
        c.kept.store(JUDGE_AFTER_ROWS, Ordering::Relaxed);
        assert!(!c.unselective(), "a tenth kept: still worth it");
        c.kept.store(JUDGE_AFTER_ROWS + 1, Ordering::Relaxed);
        assert!(c.unselective());
        assert_eq!(c.share(), 100_001);
    }

    #[test]
    fn a_filter_on_columns_the_scan_does_not_deliver_adds_nothing() {
        let (dynamic, update) = filter();
        dynamic.update(update).unwrap();
        // The delivered schema's column 1 is not `b`: the expression is not over this node.
        let delivered = Arc::new(Schema::new(vec![
            Field::new("a", DataType::Int64, true),
            Field::new("x", DataType::Int64, true),
        ]));
        let d = Dynamic::new(vec![dynamic as Arc<dyn PhysicalExpr>], &delivered);
        let read = Schema::new(vec![Field::new("a", DataType::Int64, true)]);
        assert!(!d.attach(FileTask::new("f"), &read).has_row_filter());
    }
}
