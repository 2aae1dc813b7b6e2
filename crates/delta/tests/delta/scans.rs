//! rayquet's Delta readers (`rayquet::delta`) against independent references:
//!
//! * the golden tables (written by Spark, with their expected rows): every compared table
//!   reads as `expected/` through the whole-table scan (`TableScan`) and through the kernel's
//!   `Scan::execute` with `RayquetEngine`; the negative ones fail with clear errors;
//! * tables written with delta-kernel (`rayquet_testkit::delta_tables`): every readable version
//!   through both rayquet paths equals the default engine's `Scan::execute` (and the rows the
//!   fixture wrote); deleted rows are never delivered; filters equal brute-force filtering of
//!   the default engine's rows (with the kernel's own predicate evaluation) and really prune;
//! * `RayquetParquetHandler` directly against the default engine's handler (file order,
//!   batches never spanning files, metadata columns, missing columns, field ids, footers);
//! * the CLI's `scan --delta`.
use rayquet::ScanBuilder;
use rayquet_testkit::delta_tables;

use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Int64Type, SchemaRef};
use delta_kernel::engine::arrow_data::EngineDataArrowExt;
use delta_kernel::engine::arrow_expression::evaluate_expression::evaluate_predicate;
use delta_kernel::expressions::Scalar;
use delta_kernel::schema::{DataType, MetadataColumnSpec, StructField, StructType};
use delta_kernel::{Engine, Expression, FileMeta, ParquetHandler, Predicate, Snapshot};
use rayquet::ScanOptions;
use rayquet_delta::{RayquetEngine, TableScan};
use url::Url;

use delta_tables::*;

// ---------------------------------------------------------------------------------------------
// Readers
// ---------------------------------------------------------------------------------------------

/// What a `TableScan` delivered.
struct Read {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    metrics: rayquet::MetricsSnapshot,
}

impl Read {
    fn num_rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }
}

fn read_scan(scan: rayquet::Scan) -> rayquet::Result<Read> {
    let reader = scan.build()?;
    let schema = reader.schema();
    let metrics = reader.metrics();
    let batches = reader.collect::<Result<Vec<_>, _>>()?;
    Ok(Read {
        schema,
        batches,
        metrics: metrics.snapshot(),
    })
}

/// The whole-table scan of `location` (small batches, so that files span several).
fn table_scan(scan: TableScan) -> rayquet::Result<Read> {
    read_scan(scan.to_scan()?.batch_size(64))
}

fn rayquet_engine(url: &Url) -> Arc<dyn Engine> {
    RayquetEngine::for_table(url.as_str(), &ScanOptions::new()).expect("rayquet engine")
}

/// `Scan::execute` with the rayquet engine.
fn engine_read(url: &Url, opts: &ReadOptions) -> delta_kernel::DeltaResult<TableRead> {
    read_table_with(rayquet_engine(url), url, opts)
}

fn at(version: Option<u64>) -> ReadOptions {
    ReadOptions {
        version,
        ..ReadOptions::default()
    }
}

fn ids_of(batches: &[RecordBatch]) -> Vec<i64> {
    let mut ids: Vec<i64> = batches
        .iter()
        .flat_map(|b| {
            let c = b.column_by_name("id").expect("an id column");
            let c = c.as_primitive::<Int64Type>();
            (0..c.len()).map(|i| c.value(i)).collect::<Vec<_>>()
        })
        .collect();
    ids.sort_unstable();
    ids
}

// ---------------------------------------------------------------------------------------------
// Golden tables
// ---------------------------------------------------------------------------------------------

#[test]
fn golden_compared_tables_through_table_scan() {
    check_compared_golden("TableScan", |url| {
        let read = table_scan(TableScan::open(url.as_str())).map_err(|e| e.to_string())?;
        Ok((read.schema, read.batches))
    });
}

#[test]
fn golden_compared_tables_through_rayquet_engine() {
    check_compared_golden("Scan::execute with RayquetEngine", |url| {
        let read = engine_read(url, &ReadOptions::default()).map_err(|e| error_message(&e))?;
        Ok((read.schema, read.batches))
    });
}

#[test]
fn golden_negative_tables_fail_clearly() {
    // This one fails inside the parquet handler in the default engine (an Arrow error on the
    // checkpoint): any handler may word it its own way.
    let any_wording = ["deltalog-state-reconstruction-from-checkpoint-missing-protocol"];
    let mut problems = negative_golden_problems(
        "TableScan",
        &any_wording,
        |url| match table_scan(TableScan::open(url.as_str())) {
            Ok(read) => Ok(read.num_rows()),
            Err(e) => Err(e.to_string()),
        },
        |url, msg| {
            (!msg.contains(url.path().trim_end_matches('/'))).then(|| "names no table".into())
        },
    );
    problems.extend(negative_golden_problems(
        "RayquetEngine",
        &any_wording,
        |url| match engine_read(url, &ReadOptions::default()) {
            Ok(read) => Ok(read.num_rows()),
            Err(e) => Err(error_message(&e)),
        },
        |_, _| None,
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// Fixtures written with delta-kernel
// ---------------------------------------------------------------------------------------------

/// Every readable version of `f` through both rayquet paths equals the default engine's
/// `Scan::execute` and the fixture's own expectation.
fn check_fixture(f: &Fixture) {
    assert!(!f.versions.is_empty());
    for (&v, expected) in &f.versions {
        let reference = read_table(&f.url, &at(Some(v)))
            .unwrap_or_else(|e| panic!("{} v{v}: default engine: {e}", f.name));
        assert_same_table(
            &format!("{} v{v}: default engine vs the fixture", f.name),
            &expected.schema,
            &expected.batches,
            &reference.schema,
            &reference.batches,
        );
        let scan = table_scan(TableScan::open(f.url.as_str()).version(v))
            .unwrap_or_else(|e| panic!("{} v{v}: TableScan: {e}", f.name));
        assert_same_table(
            &format!("{} v{v}: TableScan vs default engine", f.name),
            &reference.schema,
            &reference.batches,
            &scan.schema,
            &scan.batches,
        );
        let engine = engine_read(&f.url, &at(Some(v)))
            .unwrap_or_else(|e| panic!("{} v{v}: RayquetEngine: {e}", f.name));
        assert_eq!(engine.version, v);
        assert_same_table(
            &format!("{} v{v}: RayquetEngine vs default engine", f.name),
            &reference.schema,
            &reference.batches,
            &engine.schema,
            &engine.batches,
        );
    }
    // The latest version without asking for one.
    let latest = table_scan(TableScan::open(f.url.as_str())).unwrap();
    let e = f.expected();
    assert_same_table(
        f.name,
        &e.schema,
        &e.batches,
        &latest.schema,
        &latest.batches,
    );
}

#[test]
fn fixture_deletion_vectors() {
    let dir = tempfile::tempdir().unwrap();
    check_fixture(&dv_fixture(&dir.path().join("dv")));
}

#[test]
fn fixture_column_mapping_name() {
    let dir = tempfile::tempdir().unwrap();
    check_fixture(&column_mapping_fixture(&dir.path().join("cm"), "name"));
}

#[test]
fn fixture_column_mapping_id() {
    let dir = tempfile::tempdir().unwrap();
    check_fixture(&column_mapping_fixture(&dir.path().join("cm"), "id"));
}

#[test]
fn fixture_partitions() {
    let dir = tempfile::tempdir().unwrap();
    check_fixture(&partitioned_fixture(&dir.path().join("part")));
}

#[test]
fn fixture_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    check_fixture(&checkpoint_fixture(&dir.path().join("cp")));
}

#[test]
fn fixture_time_travel_every_version() {
    let dir = tempfile::tempdir().unwrap();
    let f = time_travel_fixture(&dir.path().join("tt"));
    assert_eq!(
        f.versions.len() as u64,
        f.latest + 1,
        "every version readable"
    );
    check_fixture(&f);
    // A version past the latest is a clear error naming the table.
    let e = table_scan(TableScan::open(f.url.as_str()).version(f.latest + 5))
        .err()
        .expect("a version that does not exist");
    assert_eq!(e.kind(), rayquet::ErrorKind::NotFound, "{e}");
    assert!(
        e.to_string().contains(f.url.path().trim_end_matches('/')),
        "{e}"
    );
}

#[test]
fn fixture_many_row_groups_and_types() {
    let dir = tempfile::tempdir().unwrap();
    check_fixture(&row_groups_fixture(&dir.path().join("rg")));
}

#[test]
fn deleted_rows_are_never_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let f = dv_fixture(&dir.path().join("dv"));
    let mut deleted_ids = Vec::new();
    let mut deleted = 0;
    for m in f.files.values() {
        let ids = m
            .rows
            .column_by_name("id")
            .unwrap()
            .as_primitive::<Int64Type>();
        for &r in &m.deleted {
            deleted_ids.push(ids.value(r as usize));
        }
        deleted += m.deleted.len() as u64;
    }
    assert!(deleted > 30, "the fixture deletes rows");

    let read = table_scan(TableScan::open(f.url.as_str())).unwrap();
    assert_eq!(read.metrics.rows_deleted, deleted);
    let ids = ids_of(&read.batches);
    assert_eq!(ids, ids_of(&f.expected().batches));
    for id in &deleted_ids {
        assert!(ids.binary_search(id).is_err(), "deleted id {id} delivered");
    }
    // Through the kernel's Scan::execute with the rayquet engine too.
    let engine = engine_read(&f.url, &ReadOptions::default()).unwrap();
    assert_eq!(ids_of(&engine.batches), ids);
}

#[test]
fn repeated_scans_share_footers_through_the_cache() {
    // A table's data files are immutable: a second scan takes every footer from the cache
    // (none fetched), through the table scan and through the kernel's ParquetHandler, and
    // delivers the same rows as the first and as the fixture.
    let dir = tempfile::tempdir().unwrap();
    let f = dv_fixture(&dir.path().join("dv"));
    let cache = rayquet::FooterCache::new(16 << 20);
    let scan = || table_scan(TableScan::open(f.url.as_str()).footer_cache(cache.clone())).unwrap();
    let first = scan();
    let second = scan();
    let files = f.files.len() as u64;
    assert!(files > 1, "the fixture has several files");
    assert_eq!(first.metrics.files, files);
    assert_eq!(first.metrics.footer_cache_hits, 0);
    assert!(first.metrics.metadata_bytes > 0);
    assert_eq!(second.metrics.footer_cache_hits, files);
    assert_eq!(second.metrics.metadata_bytes, 0, "no footer fetched again");
    let e = f.expected();
    for read in [&first, &second] {
        assert_same_table(f.name, &e.schema, &e.batches, &read.schema, &read.batches);
    }
    // Without the cache every footer is fetched.
    let none = table_scan(TableScan::open(f.url.as_str()).no_footer_cache()).unwrap();
    assert_eq!(none.metrics.footer_cache_hits, 0);
    assert!(none.metrics.metadata_bytes > 0);
    // The kernel's `Scan::execute` reads the data files through rayquet's ParquetHandler,
    // which keys them by the add actions' modification time: with a cache of its own, one read
    // stores every file's footer, and the rows are the fixture's.
    let handler_cache = rayquet::FooterCache::new(16 << 20);
    let options = ScanOptions::new().footer_cache(handler_cache.clone());
    let engine = RayquetEngine::for_table(f.url.as_str(), &options).unwrap();
    let read = read_table_with(engine, &f.url, &ReadOptions::default()).unwrap();
    assert_same_table(f.name, &e.schema, &e.batches, &read.schema, &read.batches);
    assert!(
        handler_cache.len() as u64 >= files,
        "{} footers cached",
        handler_cache.len()
    );
}

#[test]
fn table_locations_relative_and_file_urls() {
    let dir = tempfile::tempdir().unwrap();
    let f = dv_fixture(&dir.path().join("dv"));
    let abs = f.root.to_str().unwrap().to_string();
    // The table's path relative to the working directory.
    let cwd = std::env::current_dir().unwrap().canonicalize().unwrap();
    let ups = cwd.components().count() - 1;
    let relative = format!("{}{}", "../".repeat(ups), abs.trim_start_matches('/'));
    let url = f.url.as_str().to_string();
    let want = ids_of(&f.expected().batches);
    for location in [
        abs.clone(),
        format!("{abs}/"),
        url.clone(),
        url.trim_end_matches('/').to_string(),
        relative,
    ] {
        let read = table_scan(TableScan::open(location.as_str()))
            .unwrap_or_else(|e| panic!("{location}: {e}"));
        assert_eq!(ids_of(&read.batches), want, "{location}");
        let engine = RayquetEngine::for_table(&location, &ScanOptions::new()).unwrap();
        let snapshot = Snapshot::builder_for(rayquet_delta::table_url(&location).unwrap())
            .build(engine.as_ref())
            .unwrap_or_else(|e| panic!("{location}: {e}"));
        assert_eq!(snapshot.version(), f.latest, "{location}");
    }
    let missing = table_scan(TableScan::open(format!("{abs}-nope")))
        .err()
        .expect("no such table");
    assert!(missing.to_string().contains("-nope"), "{missing}");
}

#[test]
fn caller_store_with_latency_model_no_heads() {
    // The table behind a LatencyStore under a scheme object_store does not know (as the
    // benchmark reads it): listings must come back in lexical order for the kernel, footers
    // are read with the sizes from the log (no HEAD request), DVs through the same store.
    let dir = tempfile::tempdir().unwrap();
    let f = dv_fixture(&dir.path().join("dv"));
    let local: Arc<dyn object_store::ObjectStore> =
        Arc::new(object_store::local::LocalFileSystem::new());
    let store = Arc::new(
        rayquet_testkit::latency::LatencyStore::new(local)
            .with_first_byte(std::time::Duration::from_millis(1))
            .with_bandwidth(0),
    );
    let location = format!("rayquet-test://t{}", f.url.path());
    let reference = read_table(&f.url, &ReadOptions::default()).unwrap();

    let scan = TableScan::open(location.as_str()).object_store("rayquet-test://t", store.clone());
    let read = table_scan(scan).unwrap();
    assert_same_table(
        "TableScan through a caller store",
        &reference.schema,
        &reference.batches,
        &read.schema,
        &read.batches,
    );
    let c = store.counters();
    assert_eq!(c.heads, 0, "{c:?}");
    assert!(c.requests > 0, "{c:?}");

    let url = rayquet_delta::table_url(&location).unwrap();
    let root = format!("{}://{}", url.scheme(), url.authority());
    let options = ScanOptions::new().object_store(root, store.clone());
    let engine = RayquetEngine::for_table(&location, &options).unwrap();
    let read = read_table_with(engine, &url, &ReadOptions::default()).unwrap();
    assert_same_table(
        "RayquetEngine through a caller store",
        &reference.schema,
        &reference.batches,
        &read.schema,
        &read.batches,
    );
    assert_eq!(store.counters().heads, 0);
}

// ---------------------------------------------------------------------------------------------
// Filters
// ---------------------------------------------------------------------------------------------

fn col(name: &str) -> Expression {
    Expression::column([name])
}

/// `sql` through both rayquet paths equals the default engine's rows filtered by `reference`
/// (the kernel's own predicate evaluation, a NULL result dropping the row).
fn check_filter(f: &Fixture, sql: &str, reference: &Predicate) -> Read {
    let all = read_table(&f.url, &ReadOptions::default()).unwrap();
    let expected: Vec<RecordBatch> = all
        .batches
        .iter()
        .map(|b| {
            let keep = evaluate_predicate(reference, b, false).expect("kernel evaluation");
            let keep = match keep.null_count() {
                0 => keep,
                _ => arrow::compute::prep_null_mask_filter(&keep),
            };
            arrow::compute::filter_record_batch(b, &keep).unwrap()
        })
        .collect();
    let filter = rayquet::Expr::parse_sql(sql).unwrap();
    let read = table_scan(TableScan::open(f.url.as_str()).filter(filter.clone()))
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_same_table(sql, &all.schema, &expected, &read.schema, &read.batches);

    // With a projection that leaves the filter's columns out.
    let read_id = table_scan(
        TableScan::open(f.url.as_str())
            .columns(["id"])
            .filter(filter),
    )
    .unwrap();
    assert_eq!(read_id.schema.fields().len(), 1, "{sql}");
    assert_eq!(ids_of(&read_id.batches), ids_of(&expected), "{sql}");
    read
}

#[test]
fn filters_equal_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let part = partitioned_fixture(&dir.path().join("part"));
    let lit = |v: Scalar| Expression::literal(v);
    let cases: Vec<(&str, Predicate)> = vec![
        (
            "p_int = 7",
            Predicate::eq(col("p_int"), lit(Scalar::Integer(7))),
        ),
        (
            "p_str = 'a' AND id > 303",
            Predicate::and(
                Predicate::eq(col("p_str"), lit(Scalar::String("a".into()))),
                Predicate::gt(col("id"), lit(Scalar::Long(303))),
            ),
        ),
        (
            "id >= 105 AND id < 405",
            Predicate::and(
                Predicate::ge(col("id"), lit(Scalar::Long(105))),
                Predicate::lt(col("id"), lit(Scalar::Long(405))),
            ),
        ),
        (
            "p_int IS NULL OR id IN (3, 104, 208)",
            Predicate::or(
                Predicate::is_null(col("p_int")),
                Predicate::or_from(
                    [3i64, 104, 208].map(|i| Predicate::eq(col("id"), lit(Scalar::Long(i)))),
                ),
            ),
        ),
        (
            "value = 'v207' OR p_int = -5",
            Predicate::or(
                Predicate::eq(col("value"), lit(Scalar::String("v207".into()))),
                Predicate::eq(col("p_int"), lit(Scalar::Integer(-5))),
            ),
        ),
    ];
    for (sql, reference) in &cases {
        check_filter(&part, sql, reference);
    }

    let dv = dv_fixture(&dir.path().join("dv"));
    for (sql, reference) in [
        ("name IS NULL", Predicate::is_null(col("name"))),
        (
            "score > 50 AND id <> 205",
            Predicate::and(
                Predicate::gt(col("score"), lit(Scalar::Double(50.0))),
                Predicate::ne(col("id"), lit(Scalar::Long(205))),
            ),
        ),
    ] {
        check_filter(&dv, sql, &reference);
    }
}

#[test]
fn filters_skip_files_and_row_groups() {
    let dir = tempfile::tempdir().unwrap();
    // Files by the kernel's statistics: only the file of ids 400..420 can hold id > 405.
    let dv = dv_fixture(&dir.path().join("dv"));
    let read = check_filter(
        &dv,
        "id > 405",
        &Predicate::gt(col("id"), Expression::literal(405i64)),
    );
    assert_eq!(read.metrics.files, 1, "{:?}", read.metrics);
    assert!(read.num_rows() > 0);

    // A pattern's literal start: its matches lie in ['name-41', 'name-42'), which only file 0
    // (names "name-0" to "name-9" in string order) and file 4 ("name-400" to "name-419") reach.
    let string = |s: &str| Expression::literal(s);
    let read = check_filter(
        &dv,
        "name LIKE 'name-41%'",
        &Predicate::and(
            Predicate::ge(col("name"), string("name-41")),
            Predicate::lt(col("name"), string("name-42")),
        ),
    );
    assert_eq!(read.metrics.files, 2, "{:?}", read.metrics);
    assert!(read.num_rows() > 0);
    // No wildcard: equality, the same two files by their bounds.
    let read = check_filter(
        &dv,
        "name LIKE 'name-405'",
        &Predicate::eq(col("name"), string("name-405")),
    );
    assert_eq!(read.metrics.files, 2, "{:?}", read.metrics);
    assert_eq!(read.num_rows(), 1);
    // `NOT LIKE 'name-4%'`: the strings outside ['name-4', 'name-5'). File 4's names all
    // start with "name-4" (its nulls are not matches either), so it is skipped.
    let every = check_filter(
        &dv,
        "id >= 0",
        &Predicate::ge(col("id"), Expression::literal(0i64)),
    );
    let read = check_filter(
        &dv,
        "name NOT LIKE 'name-4%'",
        &Predicate::or(
            Predicate::lt(col("name"), string("name-4")),
            Predicate::ge(col("name"), string("name-5")),
        ),
    );
    assert_eq!(
        read.metrics.files,
        every.metrics.files - 1,
        "{:?} against {:?}",
        read.metrics,
        every.metrics
    );
    assert!(read.num_rows() > 0);

    // Row groups by their statistics: 143 row groups of 7 ids in file 0.
    let rg = row_groups_fixture(&dir.path().join("rg"));
    let read = check_filter(
        &rg,
        "id >= 500 AND id < 520",
        &Predicate::and(
            Predicate::ge(col("id"), Expression::literal(500i64)),
            Predicate::lt(col("id"), Expression::literal(520i64)),
        ),
    );
    assert_eq!(read.num_rows(), 20);
    assert!(read.metrics.files <= 2, "{:?}", read.metrics);
    assert!(
        read.metrics.row_groups_pruned >= 130,
        "row groups pruned: {:?}",
        read.metrics
    );
    assert!(read.metrics.row_groups <= 5, "{:?}", read.metrics);
}

#[test]
fn limit_counts_delivered_rows_after_the_transform() {
    // A filter with a partition-column leaf is applied by the transform, after decoding: the
    // limit must count the rows it lets through, not the rows read.
    let dir = tempfile::tempdir().unwrap();
    let part = partitioned_fixture(&dir.path().join("part"));
    let sql = "p_int = 7 OR id = 305";
    let all = table_scan(
        TableScan::open(part.url.as_str()).filter(rayquet::Expr::parse_sql(sql).unwrap()),
    )
    .unwrap();
    let matching = all.num_rows();
    assert_eq!(
        ids_of(&all.batches),
        [200, 201, 202, 203, 204, 205, 206, 207, 208, 209, 305]
    );
    for limit in [1, 5, matching - 1, matching, matching + 10] {
        let scan = TableScan::open(part.url.as_str())
            .filter(rayquet::Expr::parse_sql(sql).unwrap())
            .to_scan()
            .unwrap()
            .batch_size(3)
            .limit(limit);
        let read = read_scan(scan).unwrap();
        assert_eq!(read.num_rows(), limit.min(matching), "limit {limit}");
        let ids = ids_of(&read.batches);
        let all_ids = ids_of(&all.batches);
        assert!(
            ids.iter().all(|i| all_ids.contains(i)),
            "limit {limit}: {ids:?}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The ParquetHandler directly
// ---------------------------------------------------------------------------------------------

/// `(file URL, row_index, id)` of every row, and a check that no batch spans two files.
fn rows_by_file(batches: &[RecordBatch]) -> Vec<(String, i64, Option<i64>)> {
    let mut out = Vec::new();
    for b in batches {
        let files = b.column_by_name("_file").unwrap().as_string::<i32>();
        let rows = b
            .column_by_name("row_index")
            .unwrap()
            .as_primitive::<Int64Type>();
        let ids = b.column_by_name("id").unwrap().as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            assert_eq!(files.value(i), files.value(0), "a batch spans two files");
            out.push((
                files.value(i).to_string(),
                rows.value(i),
                ids.is_valid(i).then(|| ids.value(i)),
            ));
        }
    }
    out
}

fn handler_read(
    h: &dyn ParquetHandler,
    files: &[FileMeta],
    schema: &Arc<StructType>,
    predicate: Option<Arc<Predicate>>,
) -> Vec<RecordBatch> {
    h.read_parquet_files(files, schema.clone(), predicate)
        .expect("read_parquet_files")
        .map(|d| d.and_then(|d| d.try_into_record_batch()).expect("batch"))
        .collect()
}

#[test]
fn parquet_handler_files_in_order_with_metadata_columns() {
    let dir = tempfile::tempdir().unwrap();
    let f = dv_fixture(&dir.path().join("dv"));
    // The files in reverse name order: the handler keeps the order given.
    let mut files: Vec<FileMeta> = f
        .files
        .iter()
        .map(|(path, m)| FileMeta::new(f.url.join(path).unwrap(), 0, m.size))
        .collect();
    files.reverse();
    let schema = Arc::new(
        simple_schema()
            .add([StructField::nullable("missing", DataType::LONG)])
            .unwrap()
            .add_metadata_column("row_index", MetadataColumnSpec::RowIndex)
            .unwrap()
            .add_metadata_column("_file", MetadataColumnSpec::FilePath)
            .unwrap(),
    );
    let engine = RayquetEngine::for_table(f.url.as_str(), &ScanOptions::new()).unwrap();
    let handler = engine.rayquet_parquet_handler();
    let got = handler_read(handler.as_ref(), &files, &schema, None);
    let reference = handler_read(
        local_engine().parquet_handler().as_ref(),
        &files,
        &schema,
        None,
    );

    let names: Vec<_> = got[0]
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(
        names,
        ["id", "name", "score", "missing", "row_index", "_file"]
    );
    for b in &got {
        assert_eq!(
            b.column_by_name("missing").unwrap().null_count(),
            b.num_rows()
        );
    }
    let rows = rows_by_file(&got);
    assert_eq!(rows, rows_by_file(&reference));
    // In the given file order; every row of every file (the handler does not apply DVs), with
    // its position and its file's URL.
    let mut want = Vec::new();
    for meta in &files {
        let path = meta.location.as_str().strip_prefix(f.url.as_str()).unwrap();
        let ids = f.files[path]
            .rows
            .column_by_name("id")
            .unwrap()
            .as_primitive::<Int64Type>();
        for r in 0..ids.len() {
            want.push((meta.location.to_string(), r as i64, Some(ids.value(r))));
        }
    }
    assert_eq!(rows, want);
    // The data columns equal the default handler's, batch boundaries aside.
    let cols = ["id", "name", "score"];
    assert_eq!(
        sorted_rows(&cols, &got).unwrap(),
        sorted_rows(&cols, &reference).unwrap()
    );
}

#[test]
fn parquet_handler_predicate_is_only_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let f = row_groups_fixture(&dir.path().join("rg"));
    let files: Vec<FileMeta> = f
        .files
        .iter()
        .map(|(path, m)| FileMeta::new(f.url.join(path).unwrap(), 0, m.size))
        .collect();
    let schema = Arc::new(
        StructType::try_new([
            StructField::nullable("id", DataType::LONG),
            StructField::nullable("nope", DataType::LONG),
            StructField::nullable(
                "st",
                DataType::try_struct_type([
                    StructField::nullable("x", DataType::LONG),
                    StructField::nullable("y", DataType::STRING),
                ])
                .unwrap(),
            ),
        ])
        .unwrap()
        .add_metadata_column("row_index", MetadataColumnSpec::RowIndex)
        .unwrap()
        .add_metadata_column("_file", MetadataColumnSpec::FilePath)
        .unwrap(),
    );
    let handler = RayquetEngine::for_table(f.url.as_str(), &ScanOptions::new())
        .unwrap()
        .rayquet_parquet_handler();
    let all = rows_by_file(&handler_read(handler.as_ref(), &files, &schema, None));
    // What the reader cannot resolve against a file (a column path it does not have, like the
    // kernel's checkpoint predicates; a whole struct; a literal of another type) prunes
    // nothing and is no error; a column the file lacks reads as NULL.
    for p in [
        Predicate::gt(
            Expression::column(["add", "stats_parsed", "maxValues", "id"]),
            Expression::literal(5i64),
        ),
        Predicate::is_null(col("st")),
        Predicate::gt(col("id"), Expression::literal("abc")),
        Predicate::is_null(col("nope")),
    ] {
        let got = rows_by_file(&handler_read(
            handler.as_ref(),
            &files,
            &schema,
            Some(Arc::new(p.clone())),
        ));
        assert_eq!(got, all, "{p}");
    }
    // A predicate on a column it has prunes row groups, and returns the rows read unfiltered:
    // a superset of the matches, whole row groups (runs of 7 positions) of file 0.
    let p = Predicate::and(
        Predicate::ge(col("id"), Expression::literal(500i64)),
        Predicate::lt(col("id"), Expression::literal(520i64)),
    );
    let got = rows_by_file(&handler_read(
        handler.as_ref(),
        &files,
        &schema,
        Some(Arc::new(p)),
    ));
    let ids: Vec<i64> = got.iter().filter_map(|(_, _, id)| *id).collect();
    assert!((500..520).all(|i| ids.contains(&i)), "{ids:?}");
    assert!(
        ids.iter().any(|i| !(500..520).contains(i)),
        "rows are not filtered"
    );
    assert!(
        got.len() < all.len() / 4,
        "row groups pruned: {} of {}",
        got.len(),
        all.len()
    );
    for (_, r, id) in &got {
        assert!(all.iter().any(|(_, r2, id2)| r2 == r && id2 == id));
    }
}

#[test]
fn parquet_handler_field_ids_and_footers() {
    let dir = tempfile::tempdir().unwrap();
    // Mode id: the third file's top-level columns carry made-up names, only field ids match.
    let f = column_mapping_fixture(&dir.path().join("cm"), "id");
    let reference_engine = local_engine();
    let snapshot = Snapshot::builder_for(f.url.as_str())
        .build(reference_engine.as_ref())
        .unwrap();
    let scan = snapshot.scan_builder().build().unwrap();
    let physical = scan.physical_schema().clone();
    let listed = scan_files(&f.url, &ReadOptions::default()).unwrap();
    let files: Vec<FileMeta> = listed
        .iter()
        .map(|s| FileMeta::new(s.location.clone(), s.modification_time, s.size as u64))
        .collect();
    assert_eq!(files.len(), 3);
    let engine = RayquetEngine::for_table(f.url.as_str(), &ScanOptions::new()).unwrap();
    let handler = engine.rayquet_parquet_handler();
    let default_handler = reference_engine.parquet_handler();
    for meta in &files {
        let one = std::slice::from_ref(meta);
        let got = handler_read(handler.as_ref(), one, &physical, None);
        let want = handler_read(default_handler.as_ref(), one, &physical, None);
        let names: Vec<&str> = physical.fields().map(|f| f.name().as_str()).collect();
        let got_rows = sorted_rows(&names, &got).unwrap();
        assert_eq!(
            got_rows,
            sorted_rows(&names, &want).unwrap(),
            "{}",
            meta.location
        );
        // Not all NULL: the columns were found (by field id where names do not match).
        assert!(
            got_rows.iter().any(|r| !r.starts_with("NULL")),
            "{}",
            meta.location
        );

        let footer = handler.read_parquet_footer(meta).unwrap();
        let reference = default_handler.read_parquet_footer(meta).unwrap();
        assert_eq!(footer.schema, reference.schema, "{}", meta.location);
    }
    // INT96 timestamps and decimals in a Spark-written golden table's footers.
    let url = golden_table_url("data-skipping-basic-stats-all-types");
    let listed = scan_files(&url, &ReadOptions::default()).unwrap();
    let golden_engine = RayquetEngine::for_table(url.as_str(), &ScanOptions::new()).unwrap();
    for s in &listed {
        let meta = FileMeta::new(s.location.clone(), s.modification_time, s.size as u64);
        let footer = golden_engine
            .rayquet_parquet_handler()
            .read_parquet_footer(&meta)
            .unwrap();
        let reference = default_handler.read_parquet_footer(&meta).unwrap();
        assert_eq!(footer.schema, reference.schema, "{}", meta.location);
    }
    // A missing file: an error naming it.
    let bad = FileMeta::new(f.url.join("nope.parquet").unwrap(), 0, 1000);
    let e = handler.read_parquet_footer(&bad).expect_err("no such file");
    assert!(error_message(&e).contains("nope.parquet"), "{e}");
    let e = handler
        .read_parquet_files(std::slice::from_ref(&bad), physical.clone(), None)
        .and_then(|mut it| it.next().transpose())
        .err()
        .expect("no such file");
    assert!(error_message(&e).contains("nope.parquet"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// CLI
// ---------------------------------------------------------------------------------------------
