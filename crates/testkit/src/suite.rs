//! The conformance suite every input kind runs (plain files, file tasks, Iceberg tables,
//! Delta tables), like object_store's `integration.rs` for its backends: an input says what
//! rows it holds (its own, independent expectation) and how to scan it; the suite checks
//! ordering, unordered delivery, projection, filters, limits, a tiny memory budget, batches
//! tied to their tasks, and cancellation.

use std::time::{Duration, Instant};

use arrow::array::{Array, BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use arrow::datatypes::SchemaRef;
use rayquet::{Expr, Scan, ScanBuilder};

use super::{concat, row_strings};

/// A filter and an independent reference for it: the mask of matching rows, built with
/// arrow's own kernels on the expected rows.
pub struct Filter {
    pub expr: Expr,
    pub reference: Box<dyn Fn(&RecordBatch) -> BooleanArray + Send + Sync>,
}

/// An input the suite can scan.
pub trait Input {
    /// Shown in failures.
    fn label(&self) -> String;
    /// The rows the input holds, one batch per task (or file), in the input's order.
    fn expected(&self) -> (SchemaRef, Vec<RecordBatch>);
    /// A scan of everything (`columns`: only these top-level columns, in this order).
    fn scan(&self, columns: Option<&[&str]>) -> rayquet::Result<Scan>;
    /// Two or more top-level columns to project.
    fn projection(&self) -> Vec<&'static str>;
    /// Filters to check, with their references.
    fn filters(&self) -> Vec<Filter>;
    /// Whether batches can be tied to `expected`'s batches by task index (the `i`-th task
    /// delivers `expected()[i]`).
    fn tasks_are_expected_batches(&self) -> bool {
        true
    }
}

fn read(scan: Scan) -> rayquet::Result<(SchemaRef, Vec<RecordBatch>)> {
    let reader = scan.build()?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>()?;
    Ok((schema, batches))
}

fn multiset(batch: &RecordBatch) -> Vec<String> {
    let mut rows = row_strings(batch);
    rows.sort();
    rows
}

fn project(batch: &RecordBatch, columns: &[&str]) -> RecordBatch {
    let idx: Vec<usize> = columns
        .iter()
        .map(|c| batch.schema().index_of(c).expect("projected column"))
        .collect();
    batch.project(&idx).expect("project")
}

/// Assert equal rows in order, comparing values (schemas may differ in metadata only).
pub fn assert_rows_eq(expected: &RecordBatch, actual: &RecordBatch, what: &str) {
    assert_eq!(expected.num_rows(), actual.num_rows(), "{what}: row count");
    assert_eq!(
        expected.num_columns(),
        actual.num_columns(),
        "{what}: column count"
    );
    for i in 0..expected.num_columns() {
        let (e, a) = (expected.column(i), actual.column(i));
        if e.to_data() != a.to_data() {
            let (er, ar) = (row_strings(expected), row_strings(actual));
            let first = er.iter().zip(&ar).position(|(x, y)| x != y);
            panic!(
                "{what}: column {i} ({}) differs; first differing row {first:?}: expected {:?}, got {:?}",
                expected.schema().field(i).name(),
                first.map(|r| &er[r]),
                first.map(|r| &ar[r]),
            );
        }
    }
}

/// Run the whole suite on `input`.
pub fn run(input: &dyn Input) {
    let label = input.label();
    let (schema, per_task) = input.expected();
    let expected = concat(&schema, &per_task);
    let total = expected.num_rows();

    // Ordered: exactly the expected rows, in order.
    let (got_schema, got) =
        read(input.scan(None).expect("scan")).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert_eq!(
        got_schema.fields().len(),
        schema.fields().len(),
        "{label}: schema {got_schema} vs expected {schema}"
    );
    for (a, b) in got_schema.fields().iter().zip(schema.fields()) {
        assert_eq!(a.name(), b.name(), "{label}: column names");
        assert_eq!(
            a.data_type(),
            b.data_type(),
            "{label}: type of {}",
            a.name()
        );
    }
    assert_rows_eq(
        &expected,
        &concat(&got_schema, &got),
        &format!("{label}: ordered"),
    );

    // Unordered: the same multiset.
    let (_, got) = read(input.scan(None).unwrap().ordered(false)).unwrap();
    assert_eq!(
        multiset(&expected),
        multiset(&concat(&got_schema, &got)),
        "{label}: unordered"
    );

    // A tiny budget and one-row batches change nothing.
    let (_, got) = read(input.scan(None).unwrap().memory_budget(1).batch_size(7)).unwrap();
    assert_rows_eq(
        &expected,
        &concat(&got_schema, &got),
        &format!("{label}: budget 1"),
    );
    assert!(got.iter().all(|b| b.num_rows() <= 7), "{label}: batch size");

    // Projection.
    let cols = input.projection();
    let (_, got) = read(input.scan(Some(&cols)).unwrap()).unwrap();
    let want = project(&expected, &cols);
    assert_rows_eq(
        &want,
        &concat(&want.schema(), &got),
        &format!("{label}: columns {cols:?}"),
    );

    // Filters, ordered and unordered, exact against the reference.
    for f in input.filters() {
        let mask = (f.reference)(&expected);
        let want = filter_record_batch(&expected, &mask).unwrap();
        let what = format!("{label}: filter {}", f.expr);
        let (_, got) = read(input.scan(None).unwrap().filter(f.expr.clone()))
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_rows_eq(&want, &concat(&got_schema, &got), &what);
        let (_, got) = read(
            input
                .scan(None)
                .unwrap()
                .filter(f.expr.clone())
                .ordered(false),
        )
        .unwrap();
        assert_eq!(
            multiset(&want),
            multiset(&concat(&got_schema, &got)),
            "{what}, unordered"
        );
    }

    // Limits: a prefix of the rows, in order.
    for limit in [0, 1, total / 3, total + 5] {
        let (_, got) = read(input.scan(None).unwrap().limit(limit)).unwrap();
        let n = limit.min(total);
        assert_rows_eq(
            &expected.slice(0, n),
            &concat(&got_schema, &got),
            &format!("{label}: limit {limit}"),
        );
    }

    // Every batch belongs to one task, tasks come in order, and each delivers its rows.
    if input.tasks_are_expected_batches() {
        let reader = input.scan(None).unwrap().batch_size(5).build().unwrap();
        let mut by_task: Vec<Vec<RecordBatch>> = vec![Vec::new(); per_task.len()];
        let mut last = 0;
        let mut reader = reader.tagged();
        while let Some(batch) = reader.next() {
            let batch = batch.unwrap();
            let t = reader.task().expect("a batch has a task").index as usize;
            assert!(t >= last, "{label}: task {t} after task {last}");
            last = t;
            assert!(t < per_task.len(), "{label}: task index {t} out of range");
            by_task[t].push(batch);
        }
        for (t, (want, got)) in per_task.iter().zip(&by_task).enumerate() {
            assert_rows_eq(
                want,
                &concat(&got_schema, got),
                &format!("{label}: task {t}"),
            );
        }
    }

    // Dropping the reader after one batch winds everything down.
    let reader = input.scan(None).unwrap().batch_size(3).build().unwrap();
    let metrics = reader.metrics();
    let mut reader = reader;
    let _ = reader.next();
    drop(reader);
    let start = Instant::now();
    while metrics.snapshot().tasks_running > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "{label}: tasks still running after drop: {:?}",
            metrics.snapshot()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A reference mask from a per-row predicate on one column.
pub fn mask_of(
    batch: &RecordBatch,
    column: &str,
    f: impl Fn(&dyn Array, usize) -> Option<bool>,
) -> BooleanArray {
    let c = batch.column_by_name(column).expect("column");
    (0..batch.num_rows()).map(|i| f(c.as_ref(), i)).collect()
}

/// Shared ownership helper for filter references.
pub fn boxed(
    f: impl Fn(&RecordBatch) -> BooleanArray + Send + Sync + 'static,
) -> Box<dyn Fn(&RecordBatch) -> BooleanArray + Send + Sync> {
    Box::new(f)
}
