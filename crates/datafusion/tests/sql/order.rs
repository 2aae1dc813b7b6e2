//! The order of a scan's rows, where the files declare it (`sorting_columns`) and their row
//! groups follow each other in it: DataFusion drops the sort (or merges sorted partitions),
//! and the rows still come in the order DataFusion's own sort of parquet's reader's rows
//! gives. Where a claim would be wrong (row groups overlapping, a tie on the first key with
//! more keys declared, files declaring different orders, nulls in the key) the plan keeps its
//! sort, and the rows are still those of the reference, in its order. Each of these tests
//! fails when the claim's check, the units' reordering or the ordered delivery is taken out.

use std::path::Path;
use std::sync::Arc;

use crate::common::*;
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::SortingColumn;
use parquet::file::properties::WriterProperties;
use rayquet::ScanOptions;
use rayquet_datafusion::datafusion::arrow::array::{Int64Array, RecordBatch, StringArray};
use rayquet_datafusion::datafusion::arrow::datatypes::{DataType, Field, Schema};
use rayquet_datafusion::datafusion::physical_plan::displayable;
use rayquet_datafusion::datafusion::prelude::SessionContext;
use rayquet_datafusion::{collect_distributed, distributed_session, local_session, RayquetTable};

/// Writes `name` in `dir`: one row group per entry of `groups` (each `(k, k2)` rows, `v` =
/// "v{k}-{k2}"), every row group declaring `sorting` (columns 0: `k`, 1: `k2`).
fn write(dir: &Path, name: &str, groups: &[Vec<(i64, i64)>], sorting: &[SortingColumn]) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("k2", DataType::Int64, false),
        Field::new("v", DataType::Utf8, false),
    ]));
    let props = WriterProperties::builder()
        .set_sorting_columns(Some(sorting.to_vec()))
        .build();
    let file = std::fs::File::create(dir.join(name)).unwrap();
    let mut w = ArrowWriter::try_new(file, Arc::clone(&schema), Some(props)).unwrap();
    for rows in groups {
        let k = Int64Array::from_iter_values(rows.iter().map(|r| r.0));
        let k2 = Int64Array::from_iter_values(rows.iter().map(|r| r.1));
        let v = StringArray::from_iter_values(rows.iter().map(|r| format!("v{}-{}", r.0, r.1)));
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(k), Arc::new(k2), Arc::new(v)],
        )
        .unwrap();
        w.write(&batch).unwrap();
        w.flush().unwrap(); // one row group per entry
    }
    w.close().unwrap();
}

/// Writes `name` in `dir`: one row group per entry of `groups`, a nullable `k` and `v`,
/// declared sorted on `k` (nulls last).
fn write_nullable(dir: &Path, name: &str, groups: &[Vec<Option<i64>>]) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, true),
        Field::new("v", DataType::Utf8, false),
    ]));
    let props = WriterProperties::builder()
        .set_sorting_columns(Some(vec![asc(0)]))
        .build();
    let file = std::fs::File::create(dir.join(name)).unwrap();
    let mut w = ArrowWriter::try_new(file, Arc::clone(&schema), Some(props)).unwrap();
    for rows in groups {
        let k = Int64Array::from(rows.clone());
        let v = StringArray::from_iter_values(rows.iter().map(|r| format!("{name}-{r:?}")));
        let batch =
            RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(k), Arc::new(v)]).unwrap();
        w.write(&batch).unwrap();
        w.flush().unwrap();
    }
    w.close().unwrap();
}

fn asc(column: i32) -> SortingColumn {
    SortingColumn {
        column_idx: column,
        descending: false,
        nulls_first: false,
    }
}

/// Rows `(k, k * 7 % 5)` for `k` from `lo` to before `hi`, every `step`-th.
fn keys(lo: i64, hi: i64, step: usize) -> Vec<(i64, i64)> {
    (lo..hi).step_by(step).map(|k| (k, k * 7 % 5)).collect()
}

/// The directory's files read by parquet's own reader, as table `t` of a reference session.
fn reference_of(dir: &Path) -> SessionContext {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    reference_files("t", &files)
}

/// The dataset in `dir` as table `t`: each row group a unit, over `partitions` partitions.
fn session(dir: &Path, partitions: usize) -> SessionContext {
    let ctx = local_session();
    let table = RayquetTable::parquet(dir.to_str().unwrap(), ScanOptions::new())
        .unwrap()
        .unit_bytes(1)
        .partitions(partitions);
    ctx.register_table("t", Arc::new(table)).unwrap();
    ctx
}

/// Rows of `sql` in the order they come.
async fn ordered_rows(ctx: &SessionContext, sql: &str) -> Vec<String> {
    let batches = run(ctx, sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    batches
        .iter()
        .flat_map(rayquet_testkit::row_strings)
        .collect()
}

/// The physical plan of `sql` as text.
async fn plan(ctx: &SessionContext, sql: &str) -> String {
    let plan = plan_of(ctx, sql).await;
    let text = displayable(plan.as_ref()).indent(true).to_string();
    text
}

/// `sql` gives the reference's rows in the reference's order; returns the plan.
async fn same_in_order(ctx: &SessionContext, expected: &SessionContext, sql: &str) -> String {
    let want = ordered_rows(expected, sql).await;
    let got = ordered_rows(ctx, sql).await;
    assert!(!want.is_empty(), "{sql}: the reference has rows");
    assert_eq!(got.len(), want.len(), "{sql}: row count");
    assert!(got == want, "{sql}: rows or their order differ");
    plan(ctx, sql).await
}

/// Three files listed in another order than their keys' (`a`: 200-299, `b`: 0-99, `c`:
/// 100-199), six row groups each (some with every other or third key), cut into one unit per
/// row group: every partition, on every worker, gets units of more than one file.
fn three_files(dir: &Path) {
    for (name, lo) in [("a.parquet", 200), ("b.parquet", 0), ("c.parquet", 100)] {
        let groups: Vec<_> = (0..6)
            .map(|g| {
                let (from, to) = (lo + g * 50 / 3, lo + (g + 1) * 50 / 3);
                keys(from, to.max(from + 1), 1 + (g as usize % 3))
            })
            .collect();
        write(dir, name, &groups, &[asc(0)]);
    }
}

/// An empty file (no row groups, so no declared order) beside sorted ones delivers nothing,
/// and the others' order is still claimed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_file_keeps_the_order() {
    let dir = tempfile::tempdir().unwrap();
    three_files(dir.path());
    write(dir.path(), "0-empty.parquet", &[], &[asc(0)]);
    let expected = reference_of(dir.path());
    for partitions in [1, 3] {
        let ctx = session(dir.path(), partitions);
        let sql = "SELECT k, v FROM t ORDER BY k";
        let plan = same_in_order(&ctx, &expected, sql).await;
        assert!(!plan.contains("SortExec: "), "{sql}: sorted again\n{plan}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_order_that_holds_drops_the_sort() {
    let dir = tempfile::tempdir().unwrap();
    three_files(dir.path());
    let expected = reference_of(dir.path());
    for partitions in [1, 3] {
        let ctx = session(dir.path(), partitions);
        for sql in [
            "SELECT k, v FROM t ORDER BY k",
            "SELECT v FROM t ORDER BY k LIMIT 17",
            "SELECT k, k2 FROM t WHERE k2 = 3 ORDER BY k",
            "SELECT k, v FROM t WHERE v LIKE '%9-%' ORDER BY k",
        ] {
            let plan = same_in_order(&ctx, &expected, sql).await;
            assert!(!plan.contains("SortExec: "), "{sql}: sorted again\n{plan}");
            assert!(
                plan.contains("output_ordering=[k ASC NULLS LAST]"),
                "{plan}"
            );
        }
        // Not the declared order: sorted as before.
        let sql = "SELECT k, v FROM t ORDER BY k DESC";
        let plan = same_in_order(&ctx, &expected, sql).await;
        assert!(plan.contains("SortExec: "), "{sql}\n{plan}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_order_that_would_be_wrong_is_not_claimed() {
    let expected_sorted = "SELECT k, k2, v FROM t ORDER BY k, k2";
    // Row groups of two files overlapping on `k`.
    let overlap = tempfile::tempdir().unwrap();
    write(overlap.path(), "a.parquet", &[keys(0, 60, 1)], &[asc(0)]);
    write(overlap.path(), "b.parquet", &[keys(50, 100, 1)], &[asc(0)]);
    // Sorted on (k, k2) within each row group, tied on `k` across them: (2, 9) then (2, 3).
    let tie = tempfile::tempdir().unwrap();
    let pairs = |v: &[(i64, i64)]| v.to_vec();
    write(
        tie.path(),
        "a.parquet",
        &[
            pairs(&[(1, 5), (2, 1), (2, 9)]),
            pairs(&[(2, 3), (3, 0), (4, 4)]),
        ],
        &[asc(0), asc(1)],
    );
    // Files declaring different orders.
    let mixed = tempfile::tempdir().unwrap();
    write(mixed.path(), "a.parquet", &[keys(0, 50, 1)], &[asc(0)]);
    write(mixed.path(), "b.parquet", &[keys(50, 100, 1)], &[asc(1)]);
    // Nulls last within each row group, but a later row group has values.
    let nulls = tempfile::tempdir().unwrap();
    write_nullable(nulls.path(), "a.parquet", &[vec![Some(1), Some(2), None]]);
    write_nullable(nulls.path(), "b.parquet", &[vec![Some(3), Some(4)]]);
    for (dir, sql) in [
        (&overlap, "SELECT k, v FROM t ORDER BY k"),
        (&tie, expected_sorted),
        (&mixed, "SELECT k, v FROM t ORDER BY k"),
        (&nulls, "SELECT k, v FROM t ORDER BY k"),
    ] {
        let expected = reference_of(dir.path());
        for partitions in [1, 2] {
            let ctx = session(dir.path(), partitions);
            let plan = same_in_order(&ctx, &expected, sql).await;
            assert!(plan.contains("SortExec: "), "{sql}: no sort\n{plan}");
        }
    }
    // The tie still orders on `k` alone.
    let ctx = session(tie.path(), 1);
    let plan = plan(&ctx, expected_sorted).await;
    assert!(
        plan.contains("output_ordering=[k ASC NULLS LAST]"),
        "{plan}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_descending_order_drops_a_descending_sort() {
    let dir = tempfile::tempdir().unwrap();
    let desc = SortingColumn {
        column_idx: 0,
        descending: true,
        nulls_first: true,
    };
    let down = |lo, hi| {
        let mut rows = keys(lo, hi, 1);
        rows.reverse();
        rows
    };
    write(
        dir.path(),
        "a.parquet",
        &[down(50, 100), down(0, 50)],
        std::slice::from_ref(&desc),
    );
    write(dir.path(), "b.parquet", &[down(100, 130)], &[desc]);
    let expected = reference_of(dir.path());
    let ctx = session(dir.path(), 2);
    let sql = "SELECT k, v FROM t ORDER BY k DESC NULLS FIRST";
    let plan = same_in_order(&ctx, &expected, sql).await;
    assert!(!plan.contains("SortExec: "), "{sql}: sorted again\n{plan}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_order_holds_on_three_workers() {
    let dir = tempfile::tempdir().unwrap();
    three_files(dir.path());
    let expected = reference_of(dir.path());
    let workers = cluster(3, ScanOptions::new());
    let urls: Vec<url::Url> = workers.iter().map(|w| w.url.clone()).collect();
    let ctx = distributed_session(urls.clone(), ScanOptions::new()).unwrap();
    let table = RayquetTable::parquet(dir.path().to_str().unwrap(), ScanOptions::new())
        .unwrap()
        .unit_bytes(1)
        .require_remote(true);
    ctx.register_table("t", Arc::new(table)).unwrap();
    for sql in [
        "SELECT k, v FROM t ORDER BY k",
        "SELECT k, k2 FROM t WHERE k2 = 3 ORDER BY k LIMIT 20",
    ] {
        let want = ordered_rows(&expected, sql).await;
        let (batches, scans) =
            tokio::time::timeout(QUERY_TIMEOUT, collect_distributed(&ctx, sql, &urls))
                .await
                .expect("hung")
                .unwrap_or_else(|e| panic!("{sql}: {e}"));
        let got: Vec<String> = batches
            .iter()
            .flat_map(rayquet_testkit::row_strings)
            .collect();
        assert!(got == want, "{sql}: rows or their order differ");
        assert!(scans.iter().all(|s| s.units >= 1), "{sql}: {scans:?}");
    }
}
