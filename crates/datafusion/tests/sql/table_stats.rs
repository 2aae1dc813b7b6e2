//! The column statistics an Iceberg or Delta table's scan reports from the table's own
//! metadata (manifest entries; the `add` actions' `minValues`, `maxValues`, `nullCount` and
//! partition values), against the rows of the table's expected scan in DataFusion's
//! reference session: every bound holds (no value outside it, no fewer nulls than there
//! are), the bounds are tight where the writer keeps them so, and DataFusion's estimate of a
//! filter uses them.

use std::sync::Arc;

use crate::common::*;
use rayquet_datafusion::datafusion::common::stats::Precision;
use rayquet_datafusion::datafusion::common::{ScalarValue, Statistics};
use rayquet_datafusion::datafusion::physical_plan::ExecutionPlan;
use rayquet_datafusion::datafusion::prelude::SessionContext;
use rayquet_datafusion::{local_session, RayquetTable};

/// The statistics of the rayquet scan node in the plan of `sql`.
async fn scan_stats(ctx: &SessionContext, sql: &str) -> Statistics {
    fn find(plan: &Arc<dyn ExecutionPlan>) -> Option<Statistics> {
        if plan
            .downcast_ref::<rayquet_datafusion::RayquetScanExec>()
            .is_some()
        {
            return Some(plan.partition_statistics(None).unwrap().as_ref().clone());
        }
        plan.children().into_iter().find_map(find)
    }
    find(&plan_of(ctx, sql).await).expect("a scan node")
}

/// What the checks of one table found.
#[derive(Default, Debug)]
struct Found {
    /// Bounds and null counts checked.
    checked: usize,
    /// Of those, bounds equal to the rows' least or greatest value and null counts equal to
    /// the rows' nulls.
    tight: usize,
    /// Bounds or null counts that do not equal the rows'.
    loose: Vec<String>,
}

/// Checks the statistics of `SELECT * FROM t` in `ctx` against the rows of table `t` in
/// `expected`: every min is at most the least value, every max at least the greatest, every
/// null count at least the nulls.
async fn check(label: &str, ctx: &SessionContext, expected: &SessionContext) -> Found {
    let stats = scan_stats(ctx, "SELECT * FROM t").await;
    let schema = ctx.table("t").await.unwrap().schema().as_arrow().clone();
    let mut found = Found::default();
    for (field, c) in schema.fields().iter().zip(&stats.column_statistics) {
        let (min, max, nulls) = (
            c.min_value.get_value(),
            c.max_value.get_value(),
            c.null_count.get_value(),
        );
        if min.is_none() && max.is_none() && nulls.is_none() {
            continue;
        }
        for p in [&c.min_value, &c.max_value] {
            assert!(
                !matches!(p, Precision::Exact(_)),
                "{label}.{}: an exact bound from metadata",
                field.name()
            );
        }
        let name = field.name().replace('"', "\"\"");
        let sql =
            format!("SELECT min(\"{name}\"), max(\"{name}\"), count(*) - count(\"{name}\") FROM t");
        let batches = run(expected, &sql).await.unwrap();
        let row = |i: usize| ScalarValue::try_from_array(batches[0].column(i), 0).unwrap();
        let (least, greatest, actual_nulls) = (row(0), row(1), row(2));
        let at = format!("{label}.{}", field.name());
        let mut compare = |bound: &ScalarValue, value: &ScalarValue, below: bool, what: &str| {
            if value.is_null() {
                return;
            }
            let value = value.cast_to(&bound.data_type()).unwrap();
            let ord = bound.partial_cmp(&value).unwrap_or_else(|| {
                panic!("{at}: {what} {bound:?} does not compare with {value:?}")
            });
            let holds = match below {
                true => ord.is_le(),
                false => ord.is_ge(),
            };
            assert!(holds, "{at}: {what} {bound:?} but the rows have {value:?}");
            found.checked += 1;
            match ord.is_eq() {
                true => found.tight += 1,
                false => found.loose.push(format!("{at} {what}")),
            }
        };
        if let Some(min) = min {
            compare(min, &least, true, "min");
        }
        if let Some(max) = max {
            compare(max, &greatest, false, "max");
        }
        if let Some(&n) = nulls {
            let actual = match actual_nulls {
                ScalarValue::Int64(Some(n)) => n as usize,
                other => panic!("{other:?}"),
            };
            assert!(n >= actual, "{at}: {n} nulls but the rows have {actual}");
            found.checked += 1;
            match n == actual {
                true => found.tight += 1,
                false => found.loose.push(format!("{at} nulls")),
            }
        }
    }
    found
}

/// Every compared golden Delta table (written by Spark: appends, deletes, updates, merges,
/// checkpoints, partitions, column mapping): the bounds and null counts hold on the expected
/// rows, and with exact row counts (no deletion vector) they are tight but where a string
/// may be cut short.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_column_statistics_bound_the_rows() {
    use rayquet_testkit::delta_tables as dt;
    let mut total = Found::default();
    let mut with_stats = Vec::new();
    for name in dt::compared_tables() {
        let url = dt::golden_table_url(name);
        let (schema, batches) = dt::expected_table(name);
        let expected = reference("t", schema, batches);
        let ctx = local_session();
        let t = RayquetTable::delta(rayquet_delta::TableScan::open(url.as_str())).unwrap();
        ctx.register_table("t", Arc::new(t)).unwrap();
        let found = check(name, &ctx, &expected).await;
        if found.checked > 0 {
            with_stats.push(name);
        }
        total.checked += found.checked;
        total.tight += found.tight;
        total.loose.extend(found.loose);
    }
    eprintln!(
        "{} tables with statistics, {} checked, {} tight; loose: {:?}",
        with_stats.len(),
        total.checked,
        total.tight,
        total.loose
    );
    assert!(with_stats.len() >= 20, "statistics on {with_stats:?} only");
    assert!(total.tight >= total.checked * 9 / 10, "{total:?}");
}

/// Tables the kernel writes (testkit): deletion vectors (the statistics count deleted rows:
/// they still bound the rows left), and column mapping by name and by id (statistics keyed by
/// physical names, reported under the logical ones).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_statistics_hold_under_deletion_vectors_and_column_mapping() {
    use rayquet_testkit::delta_tables as dt;
    let dir = tempfile::tempdir().unwrap();
    let fixtures = [
        dt::dv_fixture(&dir.path().join("dv")),
        dt::column_mapping_fixture(&dir.path().join("cm-name"), "name"),
        dt::column_mapping_fixture(&dir.path().join("cm-id"), "id"),
    ];
    for fx in &fixtures {
        let want = fx.expected();
        let expected = reference("t", want.schema.clone(), want.batches.clone());
        let ctx = local_session();
        let t = RayquetTable::delta(rayquet_delta::TableScan::open(fx.url.as_str())).unwrap();
        ctx.register_table("t", Arc::new(t)).unwrap();
        let found = check(fx.name, &ctx, &expected).await;
        assert!(found.checked >= 3, "{}: {found:?}", fx.name);
    }
}

/// Iceberg tables written by iceberg-rust's writer (testkit): every primitive type, identity
/// and transform partitions, schema evolution (renames, promotions, added columns), deletes:
/// the manifests' bounds and null counts hold on the expected rows; DataFusion's estimate of
/// a filter past the greatest value is no rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_column_statistics_bound_the_rows() {
    use rayquet_testkit::iceberg_tables as it;
    let fixtures = [
        ("primitives", it::primitives(3, 40, 16)),
        ("identity", it::partitioned_identity(30)),
        ("transforms", it::partitioned_transforms(60)),
        ("evolution", it::evolution(20)),
        ("deletes", it::deletes(40, 8)),
        ("nested", it::nested(20)),
    ];
    let mut total = Found::default();
    for (label, fx) in &fixtures {
        let want = fx.expected_current();
        let expected = reference("t", want.schema(), vec![want]);
        let ctx = local_session();
        ctx.register_table("t", Arc::new(iceberg_table(fx)))
            .unwrap();
        let found = check(label, &ctx, &expected).await;
        assert!(found.checked >= 2, "{label}: {found:?}");
        total.checked += found.checked;
        total.tight += found.tight;
        total.loose.extend(found.loose);
    }
    eprintln!("iceberg: {total:?}");
    assert!(total.tight >= total.checked * 9 / 10, "{total:?}");
}

/// DataFusion estimates a filter from the bounds: past the greatest value of a column, (at
/// most) one row, where without bounds it assumes a default share of the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_are_estimated_from_the_bounds() {
    use rayquet_testkit::delta_tables as dt;
    use rayquet_testkit::iceberg_tables as it;
    let dir = tempfile::tempdir().unwrap();
    let delta = dt::dv_fixture(&dir.path().join("dv"));
    let iceberg = it::partitioned_identity(30);
    let tables = [
        (
            "delta",
            RayquetTable::delta(rayquet_delta::TableScan::open(delta.url.as_str())).unwrap(),
            delta.expected().batches.clone(),
        ),
        (
            "iceberg",
            iceberg_table(&iceberg),
            vec![iceberg.expected_current()],
        ),
    ];
    for (label, table, batches) in tables {
        let expected = reference("t", batches[0].schema(), batches);
        let ctx = local_session();
        ctx.register_table("t", Arc::new(table)).unwrap();
        let max = rows_of(&expected, "SELECT max(id) FROM t").await;
        let rows = |sql: String| {
            let ctx = &ctx;
            async move { scan_stats(ctx, &sql).await.num_rows }
        };
        let all = rows("SELECT * FROM t".into()).await;
        let past = rows(format!("SELECT * FROM t WHERE id > {}", max[0])).await;
        let all = *all
            .get_value()
            .unwrap_or_else(|| panic!("{label}: no row count"));
        assert!(all >= 20, "{label}: {all} rows");
        // DataFusion keeps at least one row in an estimate; without bounds it would assume
        // a share of the rows (a fifth).
        assert!(
            matches!(past, Precision::Inexact(n) if n <= 1),
            "{label}: {past:?} of {all} rows past the greatest value"
        );
    }
}
