//! SQL over rayquet tables in one process, against DataFusion over the batches of an
//! independent reader (parquet's own reader; the Iceberg and Delta fixtures' expected rows,
//! which the formats' own readers check) in a `MemTable`: projection, filters (pushed exactly,
//! or left to DataFusion), limits, statistics, errors.

use std::sync::Arc;

use crate::common::*;
use rayquet::ScanOptions;
use rayquet_datafusion::datafusion::physical_plan::ExecutionPlan;
use rayquet_datafusion::datafusion::prelude::SessionContext;
use rayquet_datafusion::{local_session, RayquetTable};
use rayquet_testkit::gen::{generate, Compression, GenOptions};

fn gen_options() -> GenOptions {
    GenOptions {
        files: 4,
        row_groups: 3,
        rows_per_row_group: 2_500,
        compression: Compression::Snappy,
        seed: 7,
    }
}

/// The generated dataset as table `t` through rayquet, and through parquet's reader.
fn parquet_pair(dir: &std::path::Path) -> (SessionContext, SessionContext) {
    let files = generate(dir, &gen_options()).expect("generate");
    let expected = reference_files("t", &files);
    let ctx = local_session();
    let table = RayquetTable::parquet(dir.to_str().unwrap(), ScanOptions::new())
        .expect("register the dataset");
    ctx.register_table("t", Arc::new(table)).expect("register");
    (ctx, expected)
}

const PARQUET_QUERIES: &[&str] = &[
    "SELECT * FROM t",
    "SELECT l_returnflag, l_linestatus, count(*), sum(l_quantity), avg(l_extendedprice), \
     min(l_shipdate), max(l_comment), count(l_suppkey) FROM t GROUP BY 1, 2",
    "SELECT count(*) FROM t",
    "SELECT count(*), sum(l_discount_f) FROM t WHERE l_tax IS NULL",
    // Exact filters (rayquet evaluates them).
    "SELECT l_orderkey, l_linenumber, l_quantity FROM t WHERE l_quantity < 10",
    "SELECT l_orderkey, l_shipmode FROM t WHERE l_shipmode IN ('AIR', 'RAIL') AND l_suppkey IS NULL",
    "SELECT l_orderkey, l_shipdate FROM t WHERE l_shipdate BETWEEN DATE '1995-01-01' AND DATE '1995-06-30'",
    "SELECT l_orderkey, l_tax FROM t WHERE NOT (l_orderkey > 5000) OR l_tax IS NULL",
    "SELECT l_orderkey FROM t WHERE l_discount_f > 0.05 AND l_linenumber <> 3",
    "SELECT l_orderkey, l_comment FROM t WHERE l_comment >= 'z' OR l_shipinstruct = 'NONE'",
    "SELECT l_partkey FROM t WHERE l_extendedprice >= 50000.5",
    "SELECT l_orderkey, l_comment FROM t WHERE l_comment LIKE '%ab%'",
    "SELECT l_orderkey FROM t WHERE l_comment NOT LIKE '%a_c%' AND l_shipmode LIKE 'A%'",
    "SELECT l_orderkey, l_shipmode FROM t WHERE l_shipmode ILIKE '%ai%' OR l_comment LIKE 'x\\%%'",
    "SELECT count(*) FROM t WHERE NOT (l_shipinstruct NOT ILIKE 'none')",
    "SELECT l_orderkey FROM t WHERE l_comment LIKE '%\\%%' ESCAPE '\\'",
    // Not translatable: DataFusion filters (functions, a struct field, a lossy literal).
    "SELECT l_orderkey FROM t WHERE upper(l_shipmode) = 'AIR' AND l_quantity > 40",
    "SELECT l_orderkey, l_dims FROM t WHERE l_dims['h'] > 3",
    "SELECT l_orderkey FROM t WHERE l_linenumber = 2.5",
    "SELECT l_orderkey FROM t WHERE l_linenumber + 1 = 3",
    "SELECT l_tags, l_ts FROM t WHERE l_ts > TIMESTAMP '1996-01-01 00:00:00'",
    // Joins and subqueries read the table twice.
    "SELECT a.l_shipmode, count(*) FROM t a JOIN (SELECT l_orderkey FROM t WHERE l_linenumber = 1) b \
     ON a.l_orderkey = b.l_orderkey GROUP BY 1",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parquet_queries_match_parquets_reader() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, expected) = parquet_pair(dir.path());
    for sql in PARQUET_QUERIES {
        assert_same(&ctx, &expected, sql).await;
    }
    assert_eq!(
        rows_of(&ctx, "SELECT count(*) FROM t").await,
        vec![gen_options().total_rows().to_string()]
    );
}

/// The physical plan of `sql`, as text.
async fn physical(ctx: &SessionContext, sql: &str) -> String {
    let plan = plan_of(ctx, sql).await;
    let text = rayquet_datafusion::datafusion::physical_plan::displayable(plan.as_ref())
        .indent(true)
        .to_string();
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exact_filters_leave_no_filter_node_and_others_do() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, _) = parquet_pair(dir.path());
    for sql in [
        "SELECT l_orderkey FROM t WHERE l_quantity < 10",
        "SELECT l_orderkey FROM t WHERE l_shipmode IN ('AIR', 'RAIL') OR l_tax IS NULL",
        "SELECT l_orderkey FROM t WHERE l_shipdate >= DATE '1995-01-01'",
        "SELECT l_orderkey FROM t WHERE l_comment NOT LIKE '%ab%' OR l_shipmode ILIKE 'a%'",
    ] {
        let plan = physical(&ctx, sql).await;
        assert!(
            !plan.contains("FilterExec"),
            "{sql}: pushed exactly, yet\n{plan}"
        );
        assert!(plan.contains("RayquetScanExec"), "{plan}");
    }
    for sql in [
        "SELECT l_orderkey FROM t WHERE l_linenumber = 2.5",
        // Only the translatable conjunct is pushed; the other stays.
        "SELECT l_orderkey FROM t WHERE l_quantity < 10 AND upper(l_shipmode) = 'AIR'",
    ] {
        let plan = physical(&ctx, sql).await;
        assert!(plan.contains("FilterExec"), "{sql}: not exact, yet\n{plan}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_stop_early_with_real_rows() {
    let dir = tempfile::tempdir().unwrap();
    let (ctx, expected) = parquet_pair(dir.path());
    let all = rows_of(
        &expected,
        "SELECT l_orderkey, l_linenumber, l_quantity FROM t",
    )
    .await;
    for (sql, n) in [
        (
            "SELECT l_orderkey, l_linenumber, l_quantity FROM t LIMIT 7",
            7,
        ),
        (
            "SELECT l_orderkey, l_linenumber, l_quantity FROM t LIMIT 0",
            0,
        ),
        (
            "SELECT l_orderkey, l_linenumber, l_quantity FROM t WHERE l_quantity < 3 LIMIT 5",
            5,
        ),
    ] {
        let got = rows_of(&ctx, sql).await;
        assert_eq!(got.len(), n, "{sql}");
        for row in &got {
            assert!(
                all.binary_search(row).is_ok(),
                "{sql}: {row} is not a row of t"
            );
        }
    }
    let few = rows_of(
        &ctx,
        "SELECT l_quantity FROM t WHERE l_quantity < 3 LIMIT 5",
    )
    .await;
    assert!(
        few.iter().all(|q| q.parse::<f64>().unwrap() < 3.0),
        "{few:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_tables_match_their_spec_answers() {
    use rayquet_testkit::iceberg_tables as it;
    let cases: Vec<(it::Fixture, Vec<&str>)> = vec![
        (
            it::partitioned_identity(40),
            vec![
                "SELECT * FROM t",
                "SELECT cat, region, day, count(*), sum(v), min(id), max(id) FROM t GROUP BY 1, 2, 3",
                "SELECT id, region FROM t WHERE region = 'eu' OR region IS NULL",
                "SELECT id, cat FROM t WHERE cat IN (2, 7) AND v > 10",
                "SELECT count(*) FROM t",
            ],
        ),
        (
            it::evolution(30),
            vec![
                "SELECT * FROM t",
                "SELECT with_default, count(*), sum(a), sum(dec), min(full_name), max(added) \
                 FROM t GROUP BY 1",
                "SELECT id, full_name FROM t WHERE a > 10 AND full_name IS NOT NULL",
                "SELECT id, s FROM t WHERE added IS NULL",
            ],
        ),
        (
            it::deletes(40, 8),
            vec![
                "SELECT * FROM t",
                "SELECT k1, k2, count(*), min(id), max(v) FROM t GROUP BY 1, 2",
                "SELECT id FROM t WHERE k1 = 3 OR k2 = 'y'",
                "SELECT count(*) FROM t",
            ],
        ),
    ];
    for (fx, queries) in cases {
        let want = fx.expected_current();
        let expected = reference("t", want.schema(), vec![want]);
        let ctx = local_session();
        let table = iceberg_table(&fx);
        ctx.register_table("t", Arc::new(table)).unwrap();
        for sql in queries {
            assert_same(&ctx, &expected, sql).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_row_counts_come_from_metadata_only_when_exact() {
    use rayquet_testkit::iceberg_tables as it;
    // No deletes: the snapshot's record count answers count(*) without a scan.
    let fx = it::partitioned_identity(40);
    let ctx = local_session();
    let table = iceberg_table(&fx);
    ctx.register_table("t", Arc::new(table)).unwrap();
    let plan = physical(&ctx, "SELECT count(*) FROM t").await;
    assert!(
        !plan.contains("RayquetScanExec"),
        "exact statistics unused:\n{plan}"
    );
    assert_eq!(
        rows_of(&ctx, "SELECT count(*) FROM t").await,
        vec![fx.expected_current().num_rows().to_string()]
    );
    // Deletes: the record count is an upper bound, so the rows are counted.
    let fx = it::deletes(40, 8);
    let ctx = local_session();
    let table = iceberg_table(&fx);
    ctx.register_table("t", Arc::new(table)).unwrap();
    let plan = physical(&ctx, "SELECT count(*) FROM t").await;
    assert!(plan.contains("RayquetScanExec"), "{plan}");
    assert_eq!(
        rows_of(&ctx, "SELECT count(*) FROM t").await,
        vec![fx.expected_current().num_rows().to_string()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_snapshots_are_pinned() {
    use rayquet_testkit::iceberg_tables as it;
    let fx = it::evolution(20);
    for &id in &fx.snapshot_ids {
        let want = fx.expected_at(id).clone();
        let expected = reference("t", want.schema(), vec![want]);
        let ctx = local_session();
        let table = RayquetTable::iceberg(
            rayquet_iceberg::TableScan::open(fx.metadata_location.as_str()).snapshot_id(id),
        )
        .unwrap();
        ctx.register_table("t", Arc::new(table)).unwrap();
        assert_same(&ctx, &expected, "SELECT * FROM t").await;
    }
}

/// The scan node's row count in the plan of `sql` (`Precision` as text, e.g. `Exact(40)`).
async fn scan_rows(ctx: &SessionContext, sql: &str) -> String {
    fn find(plan: &Arc<dyn ExecutionPlan>) -> Option<String> {
        if plan
            .downcast_ref::<rayquet_datafusion::RayquetScanExec>()
            .is_some()
        {
            let stats = plan.partition_statistics(None).unwrap();
            return Some(format!("{:?}", stats.num_rows));
        }
        plan.children().into_iter().find_map(find)
    }
    find(&plan_of(ctx, sql).await).expect("a scan node")
}

/// A Delta table's row count comes from its files' `numRecords`, exact only when it is: on
/// every golden table (written by Spark: appends, deletes, updates, merges, checkpoints,
/// deletion vectors) an exact count equals the rows of the table's expected scan, and then
/// answers `count(*)` without a scan.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_row_counts_come_from_the_log_only_when_exact() {
    use rayquet_testkit::delta_tables as dt;
    let table = |url: &str| {
        let ctx = local_session();
        let t = RayquetTable::delta(rayquet_delta::TableScan::open(url)).unwrap();
        ctx.register_table("t", Arc::new(t)).unwrap();
        ctx
    };
    let mut exact = Vec::new();
    for name in dt::compared_tables() {
        let url = dt::golden_table_url(name);
        let (_, batches) = dt::expected_table(name);
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let ctx = table(url.as_str());
        let sql = "SELECT * FROM t";
        let got = scan_rows(&ctx, sql).await;
        if got.starts_with("Exact") {
            assert_eq!(got, format!("Exact({rows})"), "{name}");
            let plan = physical(&ctx, "SELECT count(*) FROM t").await;
            assert!(!plan.contains("RayquetScanExec"), "{name}: a scan\n{plan}");
            assert_eq!(
                rows_of(&ctx, "SELECT count(*) FROM t").await,
                vec![rows.to_string()]
            );
            exact.push(name);
        }
    }
    assert!(exact.len() >= 5, "exact counts on {exact:?} only");
    // Deletion vectors: records less deleted rows, an estimate; the rows are counted.
    let dir = tempfile::tempdir().unwrap();
    let fx = dt::dv_fixture(&dir.path().join("dv"));
    let rows = fx.expected().num_rows();
    let ctx = table(fx.url.as_str());
    assert_eq!(
        scan_rows(&ctx, "SELECT id FROM t").await,
        format!("Inexact({rows})")
    );
    let plan = physical(&ctx, "SELECT count(*) FROM t").await;
    assert!(plan.contains("RayquetScanExec"), "{plan}");
    assert_eq!(
        rows_of(&ctx, "SELECT count(*) FROM t").await,
        vec![rows.to_string()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_tables_match_their_expected_rows() {
    use rayquet_testkit::delta_tables as dt;
    let dir = tempfile::tempdir().unwrap();
    let cases: Vec<(dt::Fixture, Vec<&str>)> = vec![
        (
            dt::dv_fixture(&dir.path().join("dv")),
            vec![
                "SELECT * FROM t",
                "SELECT name IS NULL, count(*), sum(score), min(id), max(id) FROM t GROUP BY 1",
                "SELECT id FROM t WHERE score > 30 AND name IS NOT NULL",
            ],
        ),
        (
            dt::column_mapping_fixture(&dir.path().join("cm-name"), "name"),
            vec![
                "SELECT * FROM t",
                "SELECT extra IS NULL, count(*), sum(s['a']), min(name) FROM t GROUP BY 1",
                "SELECT id, s FROM t WHERE id >= 100 AND id < 205",
            ],
        ),
        (
            dt::column_mapping_fixture(&dir.path().join("cm-id"), "id"),
            vec!["SELECT * FROM t", "SELECT count(*), max(extra) FROM t"],
        ),
    ];
    for (fx, queries) in cases {
        let want = fx.expected();
        let expected = reference("t", want.schema.clone(), want.batches.clone());
        let ctx = local_session();
        let table = RayquetTable::delta(rayquet_delta::TableScan::open(fx.url.as_str()))
            .unwrap_or_else(|e| panic!("{}: {e}", fx.name));
        ctx.register_table("t", Arc::new(table)).unwrap();
        for sql in queries {
            assert_same(&ctx, &expected, sql).await;
        }
        // Every readable version, pinned.
        for (&v, want) in &fx.versions {
            let expected = reference("t", want.schema.clone(), want.batches.clone());
            let ctx = local_session();
            let table =
                RayquetTable::delta(rayquet_delta::TableScan::open(fx.url.as_str()).version(v))
                    .unwrap();
            ctx.register_table("t", Arc::new(table)).unwrap();
            assert_same(&ctx, &expected, "SELECT * FROM t").await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_data_file_is_a_clean_error_naming_it() {
    use rayquet_testkit::iceberg_tables as it;
    let fx = it::missing_data_file();
    let ctx = local_session();
    let table = iceberg_table(&fx);
    ctx.register_table("t", Arc::new(table)).unwrap();
    let err = run(&ctx, "SELECT * FROM t")
        .await
        .expect_err("a data file is missing");
    let msg = err.to_string();
    let victim = &fx.removed_files[0];
    let name = victim.rsplit('/').next().unwrap();
    assert!(
        msg.contains(name),
        "the error does not name {victim}: {msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_locations_are_clean_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = RayquetTable::parquet(dir.path().to_str().unwrap(), ScanOptions::new())
        .expect_err("an empty directory");
    assert!(err.to_string().contains("no *.parquet"), "{err}");
    let missing = dir.path().join("nope");
    let err = RayquetTable::parquet(missing.to_str().unwrap(), ScanOptions::new())
        .expect_err("a missing path");
    assert!(err.to_string().contains("nope"), "{err}");
    let err = RayquetTable::delta(rayquet_delta::TableScan::open(missing.to_str().unwrap()))
        .expect_err("not a Delta table");
    assert!(err.to_string().contains("nope"), "{err}");
    let err = RayquetTable::iceberg(rayquet_iceberg::TableScan::open(missing.to_str().unwrap()))
        .expect_err("not an Iceberg table");
    assert!(err.to_string().contains("nope"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_only_table_refuses_to_scan_here() {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), &gen_options()).unwrap();
    let ctx = local_session();
    let table = RayquetTable::parquet(dir.path().to_str().unwrap(), ScanOptions::new())
        .unwrap()
        .require_remote(true);
    ctx.register_table("t", Arc::new(table)).unwrap();
    let err = run(&ctx, "SELECT count(*) FROM t WHERE l_quantity > 3")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("must run on a worker"), "{err}");
}

/// A Hive-partitioned dataset (`year=.../cat=.../part-0.parquet`) as table `t`: the
/// partition columns are the table's last columns, and SQL over them (filters included)
/// matches DataFusion over the rows written, with each file's partition values added here.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hive_partition_columns_are_table_columns() {
    use rayquet_datafusion::datafusion::arrow::array::{
        ArrayRef, Int32Array, Int64Array, StringArray,
    };
    use rayquet_datafusion::datafusion::arrow::datatypes::{DataType, Field, Schema};
    use rayquet_datafusion::datafusion::arrow::record_batch::RecordBatch;
    let dir = tempfile::tempdir().unwrap();
    let layout: [(i32, Option<&str>, &str, Vec<i64>); 4] = [
        (2024, Some("a:b"), "year=2024/cat=a%3Ab", vec![1, 2, 3]),
        (
            2024,
            None,
            "year=2024/cat=__HIVE_DEFAULT_PARTITION__",
            vec![4],
        ),
        (2025, Some("a:b"), "year=2025/cat=a%3Ab", vec![5, 6]),
        (2025, Some("z"), "year=2025/cat=z", vec![7]),
    ];
    let schema = Arc::new(Schema::new(vec![
        Field::new("v", DataType::Int64, false),
        Field::new("year", DataType::Int32, true),
        Field::new("cat", DataType::Utf8View, true),
    ]));
    let mut expected = Vec::new();
    for (year, cat, dirs, v) in &layout {
        let d = dir.path().join(dirs);
        std::fs::create_dir_all(&d).unwrap();
        let file =
            RecordBatch::try_from_iter([("v", Arc::new(Int64Array::from(v.clone())) as ArrayRef)])
                .unwrap();
        std::fs::write(
            d.join("part-0.parquet"),
            rayquet_testkit::write_parquet(&[file], 1024),
        )
        .unwrap();
        let n = v.len();
        let cats: ArrayRef = Arc::new(StringArray::from(vec![*cat; n]));
        expected.push(
            RecordBatch::try_new(
                Arc::clone(&schema),
                vec![
                    Arc::new(Int64Array::from(v.clone())),
                    Arc::new(Int32Array::from(vec![*year; n])),
                    rayquet_datafusion::datafusion::arrow::compute::cast(
                        &cats,
                        &DataType::Utf8View,
                    )
                    .unwrap(),
                ],
            )
            .unwrap(),
        );
    }
    let reference = reference("t", Arc::clone(&schema), expected);
    let ctx = local_session();
    let table = RayquetTable::parquet(dir.path().to_str().unwrap(), ScanOptions::new())
        .expect("register the dataset");
    ctx.register_table("t", Arc::new(table)).expect("register");
    for sql in [
        "SELECT * FROM t",
        "SELECT year, cat, sum(v), count(*) FROM t GROUP BY 1, 2",
        "SELECT v FROM t WHERE year = 2025",
        "SELECT v, cat FROM t WHERE cat = 'a:b' AND v > 1",
        "SELECT v FROM t WHERE cat IS NULL OR v = 7",
        "SELECT cat, year FROM t WHERE year > 2030",
    ] {
        assert_same(&ctx, &reference, sql).await;
    }
}

/// The units of the scan node in `plan`, per partition (its `units` metric).
fn units_per_partition(plan: &Arc<dyn ExecutionPlan>) -> Vec<usize> {
    use rayquet_datafusion::datafusion::physical_plan::metrics::MetricValue;
    if let Some(scan) = plan.downcast_ref::<rayquet_datafusion::RayquetScanExec>() {
        let mut out = vec![0; plan.properties().partitioning.partition_count()];
        for m in scan.metrics().expect("metrics").iter() {
            if let (MetricValue::Count { name, count }, Some(p)) = (m.value(), m.partition()) {
                if name == "units" {
                    out[p] += count.value();
                }
            }
        }
        return out;
    }
    let found: Vec<Vec<usize>> = plan
        .children()
        .into_iter()
        .map(units_per_partition)
        .filter(|u| !u.is_empty())
        .collect();
    found.into_iter().next().unwrap_or_default()
}

/// Iceberg and Delta files are cut into units below the file too (Iceberg's at the split
/// offsets its manifests record, Delta's from their footers, read at planning): the deleted
/// rows (Iceberg position and equality deletes, Delta deletion vectors), counted over the
/// whole file, stay deleted in every run, and the rows equal the tables' expected ones on 1-3
/// partitions, each partition with units.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iceberg_and_delta_files_are_cut_into_units() {
    use futures::StreamExt;
    use rayquet_testkit::delta_tables as dt;
    use rayquet_testkit::iceberg_tables as it;
    let dir = tempfile::tempdir().unwrap();
    let iceberg = it::deletes(60, 10);
    let delta = dt::dv_fixture(&dir.path().join("dv"));
    // The Iceberg files' manifests (written by iceberg-rust, as pyiceberg and Java write
    // theirs) record a split offset per row group: the provider cuts them at those.
    let planned = rayquet_iceberg::TableScan::from_table(iceberg.table.clone())
        .statistics(true)
        .plan()
        .unwrap();
    let units: Vec<_> = planned.units.collect().await;
    for u in units {
        let u = u.unwrap();
        assert_eq!(
            u.split_offsets.len(),
            6,
            "{}: 60 rows in row groups of 10",
            u.path
        );
    }
    let sql = "SELECT * FROM t";
    for partitions in [1, 2, 3] {
        let tables = [
            (
                "iceberg",
                iceberg_table(&iceberg),
                vec![iceberg.expected_current()],
                it::plan_tasks(&iceberg.table, None, None, None, true).len(),
            ),
            (
                "delta",
                RayquetTable::delta(rayquet_delta::TableScan::open(delta.url.as_str())).unwrap(),
                delta.expected().batches.clone(),
                dt::scan_files(&delta.url, &dt::ReadOptions::default())
                    .unwrap()
                    .len(),
            ),
        ];
        for (label, table, batches, files) in tables {
            let expected = reference("t", batches[0].schema(), batches);
            let ctx = local_session();
            let table = table.unit_bytes(1).partitions(partitions);
            ctx.register_table("t", Arc::new(table)).unwrap();
            let plan = plan_of(&ctx, sql).await;
            let batches = run_plan(&ctx, &plan).await;
            assert_eq!(
                sorted_rows(&batches),
                rows_of(&expected, sql).await,
                "{label}, {partitions} partitions"
            );
            let units = units_per_partition(&plan);
            assert!(
                units.iter().all(|&u| u >= 1) && units.iter().sum::<usize>() > files,
                "{label}, {partitions} partitions: units {units:?} for {files} files"
            );
        }
    }
}

/// A file cut into units below the file is read by every partition, not by the one that
/// started first (each partition's scan opens its next units ahead of need, which let the
/// first take a shared queue whole): a task's units are dealt to its partitions in turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn units_of_one_file_are_dealt_to_every_partition() {
    let dir = tempfile::tempdir().unwrap();
    let opts = GenOptions {
        files: 1,
        row_groups: 8,
        rows_per_row_group: 1_000,
        ..gen_options()
    };
    let files = generate(dir.path(), &opts).expect("generate");
    let (schema, batches) = rayquet_testkit::reference(&files[0], None, 1024).expect("reference");
    let expected = reference("t", schema, batches);
    let sql = "SELECT count(*), sum(l_linenumber), min(l_comment) FROM t WHERE l_quantity > 3";
    for partitions in [2, 3] {
        let ctx = local_session();
        let table = RayquetTable::parquet(dir.path().to_str().unwrap(), ScanOptions::new())
            .unwrap()
            .unit_bytes(1)
            .partitions(partitions);
        ctx.register_table("t", Arc::new(table)).unwrap();
        let plan = plan_of(&ctx, sql).await;
        let batches = run_plan(&ctx, &plan).await;
        assert_eq!(sorted_rows(&batches), rows_of(&expected, sql).await);
        let units = units_per_partition(&plan);
        assert_eq!(units.len(), partitions, "{units:?}");
        assert_eq!(
            units.iter().sum::<usize>(),
            8,
            "every row group once: {units:?}"
        );
        // Dealt by bytes (balanced within one unit's: `feed.rs`'s tests), so every partition
        // gets some of the 8 near-equal units.
        let (lo, hi) = (units.iter().min().unwrap(), units.iter().max().unwrap());
        assert!(
            *lo >= 1 && hi - lo <= 2,
            "{partitions} partitions: units {units:?}"
        );
    }
}

/// The rows the rayquet scan node of `plan` delivered (its `output_rows` metric).
fn scan_output_rows(plan: &Arc<dyn ExecutionPlan>) -> Option<usize> {
    if let Some(scan) = plan.downcast_ref::<rayquet_datafusion::RayquetScanExec>() {
        return scan.metrics().and_then(|m| m.output_rows());
    }
    plan.children().into_iter().find_map(scan_output_rows)
}

/// A hash join's dynamic filter (its build side's keys: an `IN` list up to 150 keys, a lookup
/// in its hash table beyond) is evaluated by the rayquet scan of its probe side: the scan
/// delivers only the rows whose keys the build side holds, counted by parquet's own reader,
/// and the join's rows equal DataFusion's over that reader's batches. With DataFusion's dynamic
/// filters off, the scan delivers every row.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_keys_filter_the_probe_scan() {
    use rayquet_datafusion::datafusion::arrow::array::{ArrayRef, Int64Array};
    use rayquet_datafusion::datafusion::arrow::datatypes::{DataType, Field, Schema};
    use rayquet_datafusion::datafusion::arrow::record_batch::RecordBatch;
    use rayquet_datafusion::datafusion::datasource::MemTable;
    let dir = tempfile::tempdir().unwrap();
    let (ctx, expected) = parquet_pair(dir.path());
    let total = gen_options().total_rows() as usize;
    let schema = Arc::new(Schema::new(vec![Field::new("k", DataType::Int64, false)]));
    // A few keys (an IN list), then more than DataFusion lists (a hash-table lookup).
    for (name, keys) in [
        ("few", (0..12).map(|i| 1 + i * 97).collect::<Vec<i64>>()),
        ("many", (0..400).map(|i| 3 + i * 13).collect()),
    ] {
        let batch = RecordBatch::try_new(
            Arc::clone(&schema),
            vec![Arc::new(Int64Array::from(keys)) as ArrayRef],
        )
        .unwrap();
        let table = MemTable::try_new(Arc::clone(&schema), vec![vec![batch.clone()]]).unwrap();
        ctx.register_table(name, Arc::new(table)).unwrap();
        add_reference(&expected, name, Arc::clone(&schema), vec![batch]);
        let sql = format!(
            "SELECT t.l_orderkey, t.l_linenumber, t.l_quantity, t.l_shipmode FROM t \
             JOIN {name} ON t.l_orderkey = {name}.k"
        );
        let matching = assert_same(&ctx, &expected, &sql).await;
        assert!(matching > 0 && matching < total / 10, "{matching} rows");
        // The rows of `t` whose key the build side holds, by the reference reader.
        let wanted = rows_of(
            &expected,
            &format!("SELECT count(*) FROM t WHERE l_orderkey IN (SELECT k FROM {name})"),
        )
        .await;
        let plan = plan_of(&ctx, &sql).await;
        run_plan(&ctx, &plan).await;
        assert_eq!(
            vec![scan_output_rows(&plan).expect("a scan").to_string()],
            wanted,
            "{name}: the scan delivers the joining rows only\n{}",
            physical(&ctx, &sql).await
        );
        let set =
            |on: bool| format!("SET datafusion.optimizer.enable_dynamic_filter_pushdown = {on}");
        run(&ctx, &set(false)).await.unwrap();
        let plan = plan_of(&ctx, &sql).await;
        run_plan(&ctx, &plan).await;
        run(&ctx, &set(true)).await.unwrap();
        assert_eq!(
            scan_output_rows(&plan),
            Some(total),
            "{name}: no dynamic filter"
        );
    }
}

/// Three files whose schemas differ: `a` int32, then int64, then uint32 (int64 holds all
/// three); `b` a string two files have; `c` a float only the second has; the third under a
/// Hive directory `p=1`, the others under `p=0`.
fn differing_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    use rayquet_datafusion::datafusion::arrow::array::{
        ArrayRef, Float32Array, Int32Array, Int64Array, RecordBatch, StringArray, UInt32Array,
    };
    let write = |name: &str, columns: Vec<(&str, ArrayRef)>| {
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, rayquet_testkit::write_parquet(&[batch], 2)).unwrap();
        path
    };
    vec![
        write(
            "p=0/1.parquet",
            vec![
                ("a", Arc::new(Int32Array::from(vec![1, -2, 3])) as ArrayRef),
                ("b", Arc::new(StringArray::from(vec!["x", "y", "z"]))),
            ],
        ),
        write(
            "p=0/2.parquet",
            vec![
                (
                    "c",
                    Arc::new(Float32Array::from(vec![Some(1.5), None, Some(4.0)])) as ArrayRef,
                ),
                ("a", Arc::new(Int64Array::from(vec![1 << 40, 5, -7]))),
            ],
        ),
        write(
            "p=1/3.parquet",
            vec![
                (
                    "b",
                    Arc::new(StringArray::from(vec![Some("w"), None])) as ArrayRef,
                ),
                ("a", Arc::new(UInt32Array::from(vec![u32::MAX, 7]))),
            ],
        ),
    ]
}

/// The rows of `files` under `schema` (a, b, c, p), each file by parquet's reader, its columns
/// cast by arrow's `cast` kernel, a column it lacks null, `p` its directory's value.
fn union_reference(files: &[std::path::PathBuf]) -> SessionContext {
    use rayquet_datafusion::datafusion::arrow::array::{new_null_array, Int32Array, RecordBatch};
    use rayquet_datafusion::datafusion::arrow::compute::cast;
    use rayquet_datafusion::datafusion::arrow::datatypes::{DataType, Field, Schema};
    let schema = Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
        Field::new("c", DataType::Float32, true),
        Field::new("p", DataType::Int32, true),
    ]));
    let mut batches = Vec::new();
    for f in files {
        let p: i32 = if f.parent().unwrap().ends_with("p=1") {
            1
        } else {
            0
        };
        let (_, read) = rayquet_testkit::reference(f, None, 1024).unwrap();
        for b in read {
            let mut columns: Vec<_> = schema.fields()[..3]
                .iter()
                .map(|field| match b.column_by_name(field.name()) {
                    Some(c) => cast(c, field.data_type()).unwrap(),
                    None => new_null_array(field.data_type(), b.num_rows()),
                })
                .collect();
            columns.push(Arc::new(Int32Array::from(vec![p; b.num_rows()])));
            batches.push(RecordBatch::try_new(Arc::clone(&schema), columns).unwrap());
        }
    }
    reference("t", schema, batches)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_that_differ_read_by_name_as_duckdbs_union_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let files = differing_files(dir.path());
    let expected = union_reference(&files);
    let at = dir.path().to_str().unwrap().to_string();
    let table = tokio::task::spawn_blocking(move || {
        RayquetTable::parquet_union_by_name(&at, ScanOptions::new())
    })
    .await
    .unwrap()
    .expect("register by name");
    use rayquet_datafusion::datafusion::datasource::TableProvider;
    let names: Vec<String> = table
        .schema()
        .fields()
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect();
    assert_eq!(names, ["a: Int64", "b: Utf8View", "c: Float32", "p: Int32"]);
    let ctx = local_session();
    ctx.register_table("t", Arc::new(table)).unwrap();
    for sql in [
        "SELECT * FROM t",
        "SELECT a, c FROM t WHERE a > 4",
        "SELECT a, b FROM t WHERE b IS NULL",
        "SELECT c, p FROM t WHERE c > 1",
        "SELECT p, count(*), sum(a), count(b), max(c) FROM t GROUP BY p",
        "SELECT a FROM t WHERE p = 1 AND a > 100",
    ] {
        assert_same(&ctx, &expected, sql).await;
    }
    assert_eq!(rows_of(&ctx, "SELECT count(*) FROM t").await, ["8"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_that_differ_are_an_error_naming_the_option_without_it() {
    let dir = tempfile::tempdir().unwrap();
    differing_files(dir.path());
    let at = dir.path().to_str().unwrap().to_string();
    let table = tokio::task::spawn_blocking(move || RayquetTable::parquet(&at, ScanOptions::new()))
        .await
        .unwrap()
        .expect("register: the first file's schema");
    let ctx = local_session();
    ctx.register_table("t", Arc::new(table)).unwrap();
    let err = run(&ctx, "SELECT * FROM t").await.unwrap_err().to_string();
    assert!(
        err.contains("union_by_name") || err.contains("union by name"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_that_differ_where_no_type_holds_both_are_an_error_naming_both() {
    use rayquet_datafusion::datafusion::arrow::array::{
        ArrayRef, Int32Array, RecordBatch, StringArray,
    };
    let dir = tempfile::tempdir().unwrap();
    for (name, column) in [
        ("1.parquet", Arc::new(Int32Array::from(vec![1])) as ArrayRef),
        ("2.parquet", Arc::new(StringArray::from(vec!["x"]))),
    ] {
        let batch = RecordBatch::try_from_iter([("a", column)]).unwrap();
        std::fs::write(
            dir.path().join(name),
            rayquet_testkit::write_parquet(&[batch], 1),
        )
        .unwrap();
    }
    let at = dir.path().to_str().unwrap().to_string();
    let err = tokio::task::spawn_blocking(move || {
        RayquetTable::parquet_union_by_name(&at, ScanOptions::new())
    })
    .await
    .unwrap()
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("\"a\"") && err.contains("1.parquet") && err.contains("2.parquet"),
        "{err}"
    );
}

/// The encodings of the rayquet scan nodes of `sql`'s physical plan, as a coordinator sends
/// them to workers.
async fn encoded_nodes(ctx: &SessionContext, sql: &str) -> Vec<Vec<u8>> {
    use rayquet_datafusion::datafusion_proto::physical_plan::PhysicalExtensionCodec;
    let codec = rayquet_datafusion::RayquetCodec::new(ScanOptions::new());
    let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await;
    let nodes = rayquet_datafusion::scan_nodes(&plan.unwrap());
    assert_eq!(nodes.len(), 1, "one scan node: {sql}");
    let mut buf = Vec::new();
    codec.try_encode(nodes[0].clone(), &mut buf).unwrap();
    vec![buf]
}

/// Bytes a worker decodes as a scan node come from the network: every single-byte change
/// and every truncation of real nodes' encodings (a Parquet table's filtered scan and
/// grouping, an Iceberg table with deletes, a Delta table with deletion vectors: their plans
/// travel in the node) decodes to a node or an error, never a panic, and a node claiming
/// 2^40 partitions is refused before DataFusion sizes anything by it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_nodes_from_the_wire_decode_or_fail_cleanly() {
    use rayquet_datafusion::datafusion_proto::physical_plan::PhysicalExtensionCodec;
    use rayquet_datafusion::RayquetCodec;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let dir = tempfile::tempdir().unwrap();
    let (ctx, _) = parquet_pair(dir.path());
    let codec = RayquetCodec::new(ScanOptions::new());
    let mut encoded = Vec::new();
    for sql in [
        "SELECT l_orderkey FROM t WHERE l_quantity < 10",
        "SELECT l_shipmode, count(*) FROM t GROUP BY 1",
    ] {
        encoded.extend(encoded_nodes(&ctx, sql).await);
    }
    let iceberg = local_session();
    let fx = rayquet_testkit::iceberg_tables::deletes(40, 8);
    iceberg
        .register_table("t", Arc::new(iceberg_table(&fx)))
        .unwrap();
    encoded.extend(encoded_nodes(&iceberg, "SELECT id FROM t WHERE k1 = 3").await);
    let delta = local_session();
    let fx = rayquet_testkit::delta_tables::dv_fixture(&dir.path().join("dv"));
    let table = RayquetTable::delta(rayquet_delta::TableScan::open(fx.url.as_str())).unwrap();
    delta.register_table("t", Arc::new(table)).unwrap();
    encoded.extend(encoded_nodes(&delta, "SELECT id FROM t WHERE score > 30").await);
    let task = ctx.task_ctx();
    let decode = |b: &[u8]| {
        catch_unwind(AssertUnwindSafe(|| codec.try_decode(b, &[], &task).is_ok()))
            .unwrap_or_else(|_| panic!("decoding {} bytes panicked", b.len()))
    };
    for buf in &encoded {
        assert!(decode(buf), "an intact node decodes");
        let mut refused = 0;
        for i in 0..buf.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut b = buf.clone();
                b[i] ^= flip;
                refused += usize::from(!decode(&b));
            }
            refused += usize::from(!decode(&buf[..i]));
        }
        // Changes inside JSON strings may still decode; most changes must not.
        assert!(
            refused > buf.len(),
            "{refused} of {} refused",
            4 * buf.len()
        );
        println!(
            "{} bytes: {refused} of {} changes refused",
            buf.len(),
            4 * buf.len()
        );
    }

    // The partition count (field 2, a varint after the JSON of field 1) made 2^40.
    let buf = &encoded[0];
    let varint = |b: &[u8]| {
        let n = b.iter().position(|x| x & 0x80 == 0).unwrap() + 1;
        let v = b[..n]
            .iter()
            .rev()
            .fold(0u64, |v, x| (v << 7) | u64::from(x & 0x7f));
        (v, n)
    };
    assert_eq!(buf[0], 0x0a, "field 1 first");
    let (len, n) = varint(&buf[1..]);
    let at = 1 + n + len as usize;
    assert_eq!(buf[at], 0x10, "field 2 next");
    let (partitions, n) = varint(&buf[at + 1..]);
    assert!(partitions >= 1);
    let mut huge = buf[..=at].to_vec();
    let mut v = 1u64 << 40;
    while v >= 0x80 {
        huge.push((v as u8) | 0x80);
        v >>= 7;
    }
    huge.push(v as u8);
    huge.extend_from_slice(&buf[at + 1 + n..]);
    let e = codec.try_decode(&huge, &[], &task).unwrap_err();
    assert!(e.to_string().contains("1099511627776 partitions"), "{e}");
}
