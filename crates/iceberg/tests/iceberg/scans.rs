//! rayquet's Iceberg reader (`rayquet_iceberg`) end to end, on the tables of
//! `rayquet_testkit::iceberg_tables` (written with iceberg-rust 0.10.1).
//!
//! Every answer is checked against an independent expectation: the Iceberg spec's answer each
//! fixture records from its own generator (`Fixture::expected`), a brute-force filter of those
//! rows, or the rows each data file holds as written (for `_file`/`_pos`). Where iceberg-rust's
//! `to_arrow()` is right it must also agree with rayquet (rows and schema: names, types,
//! nullability, `PARQUET:field_id` metadata); where it deviates from the spec
//! (`docs/ICEBERG_NOTES.md` §2) rayquet must give the spec's answer and the test asserts that
//! iceberg-rust's differs, so a fixed iceberg-rust shows up here.
use rayquet_testkit as common;
use rayquet_testkit::iceberg_tables;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{
    DataType, Date32Type, Float64Type, Int32Type, Int64Type, Schema, SchemaRef,
    TimestampMicrosecondType,
};
use iceberg::expr::{Predicate, Reference};
use iceberg::scan::FileScanTask;
use iceberg::spec::Datum;
use iceberg::table::Table;
use iceberg_tables::*;
use rayquet::{col, Expr, MetricsSnapshot, ScanBuilder};
use rayquet_iceberg::{load_table, scan_tasks, TableScan};

use common::suite::{self, boxed, mask_of, Filter, Input};

const FIELD_ID: &str = "PARQUET:field_id";

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

#[derive(Debug)]
struct Read {
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
    metrics: MetricsSnapshot,
}

impl Read {
    fn rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }
    fn sorted(&self) -> Vec<String> {
        sorted_rows(&flat(&self.batches))
    }
    fn all(&self) -> RecordBatch {
        concat(&self.schema, &self.batches)
    }
}

fn try_read(scan: rayquet::Scan) -> rayquet::Result<Read> {
    let reader = scan.build()?;
    let schema = reader.schema();
    let metrics = reader.metrics();
    let batches = reader.collect::<Result<Vec<_>, _>>()?;
    for b in &batches {
        assert_eq!(b.schema(), schema, "every batch has the scan's schema");
    }
    Ok(Read {
        schema,
        batches,
        metrics: metrics.snapshot(),
    })
}

fn try_rq(scan: TableScan) -> rayquet::Result<Read> {
    try_read(scan.to_scan()?)
}

fn rq(scan: TableScan) -> Read {
    try_rq(scan).unwrap_or_else(|e| panic!("rayquet: {e}"))
}

fn rows(b: &RecordBatch) -> Vec<String> {
    sorted_rows(std::slice::from_ref(b))
}

/// Run-end encoded columns (`_file`) as plain strings, so rows print the same way everywhere.
fn flat(batches: &[RecordBatch]) -> Vec<RecordBatch> {
    batches
        .iter()
        .map(|b| {
            let (fields, cols): (Vec<_>, Vec<_>) = b
                .schema()
                .fields()
                .iter()
                .zip(b.columns())
                .map(|(f, c)| match f.data_type() {
                    DataType::RunEndEncoded(_, v) => (
                        Arc::new(f.as_ref().clone().with_data_type(v.data_type().clone())),
                        cast(c, v.data_type()).expect("decode run-end encoding"),
                    ),
                    _ => (Arc::clone(f), Arc::clone(c)),
                })
                .unzip();
            RecordBatch::try_new(Arc::new(Schema::new(fields)), cols).expect("flat batch")
        })
        .collect()
}

fn ids_of(b: &RecordBatch, name: &str) -> Vec<i64> {
    let c = b.column_by_name(name).expect("column");
    let c = cast(c, &DataType::Int64).unwrap();
    c.as_primitive::<Int64Type>()
        .iter()
        .map(|v| v.unwrap())
        .collect()
}

/// The snapshots of `fx` whose full scan iceberg-rust 0.10.1 gets wrong
/// (`docs/ICEBERG_NOTES.md` §2).
fn deviating_snapshots(fx: &Fixture) -> Vec<i64> {
    match fx.name {
        // The constants-only file (S2) reads NULL partition columns.
        "partitioned_identity" => vec![fx.snapshot_ids[1]],
        // `s.y` added later: every scan of `s` from S2 on fails.
        "evolution" => fx.snapshot_ids[1..].to_vec(),
        // Nested name mapping ignored / positions used without a mapping.
        "name_mapped" | "no_ids_no_mapping" => fx.snapshot_ids.clone(),
        // Equality deletes with NULL keys (S3, S4).
        "deletes" => fx.snapshot_ids[2..].to_vec(),
        _ => vec![],
    }
}

/// rayquet's scan of `snapshot` equals the spec's answer (schema and multiset of rows), and
/// equals iceberg-rust's `to_arrow()` unless iceberg-rust deviates there (then it must not).
fn check_snapshot(fx: &Fixture, table: &Table, snapshot: i64, what: &str) {
    let exp = fx.expected_at(snapshot);
    let got = rq(TableScan::from_table(table.clone()).snapshot_id(snapshot));
    let what = format!("{} {what} snapshot {snapshot}", fx.name);
    assert_eq!(
        got.schema,
        uuid_typed(exp.schema(), table),
        "{what}: schema"
    );
    assert_eq!(got.sorted(), rows(exp), "{what}: rows (spec)");
    let reference = try_to_arrow(&fx.table, Some(snapshot), None, None, true);
    if deviating_snapshots(fx).contains(&snapshot) {
        if let Ok((_, batches)) = reference {
            assert_ne!(
                sorted_rows(&batches),
                rows(exp),
                "{what}: iceberg-rust is documented to deviate here; update the notes"
            );
        }
    } else {
        let (schema, batches) = reference.unwrap_or_else(|e| panic!("{what}: to_arrow: {e}"));
        assert_eq!(
            got.schema,
            uuid_typed(schema, table),
            "{what}: schema vs to_arrow"
        );
        assert_eq!(got.sorted(), sorted_rows(&batches), "{what}: vs to_arrow");
    }
}

/// `schema` (iceberg-rust's `to_arrow()` typing) with its top-level Iceberg `uuid` columns as
/// rayquet types them, as pyiceberg does: Arrow's canonical `arrow.uuid` extension over the
/// same `FixedSizeBinary(16)`.
fn uuid_typed(schema: SchemaRef, table: &Table) -> SchemaRef {
    use iceberg::spec::{PrimitiveType, Type};
    let is_uuid = |id: i32| {
        table.metadata().schemas_iter().any(|s| {
            s.field_by_id(id)
                .is_some_and(|f| *f.field_type == Type::Primitive(PrimitiveType::Uuid))
        })
    };
    let fields: Vec<_> = schema
        .fields()
        .iter()
        .map(|f| {
            let id = f
                .metadata()
                .get("PARQUET:field_id")
                .and_then(|v| v.parse().ok());
            if *f.data_type() != DataType::FixedSizeBinary(16) || !id.is_some_and(is_uuid) {
                return f.as_ref().clone();
            }
            let mut metadata = f.metadata().clone();
            metadata.insert("ARROW:extension:name".into(), "arrow.uuid".into());
            f.as_ref().clone().with_metadata(metadata)
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

fn all_fixtures() -> Vec<Fixture> {
    vec![
        primitives(3, 100, 30),
        partitioned_identity(5),
        partitioned_transforms(40),
        nested(30),
        evolution(10),
        name_mapped(true, 6),
        name_mapped(false, 6),
        deletes(40, 10),
        time_travel(),
        empty_snapshot(),
        bench(8, 200, 50, true),
    ]
}

// ---------------------------------------------------------------------------------------------
// Every fixture, every snapshot and ref, three ways of getting the table
// ---------------------------------------------------------------------------------------------

#[test]
fn every_fixture_and_snapshot_matches_the_spec_and_to_arrow() {
    for fx in all_fixtures() {
        for s in &fx.snapshot_ids {
            check_snapshot(&fx, &fx.table, *s, "table");
        }
        // The current snapshot without naming it.
        let got = rq(TableScan::from_table(fx.table.clone()));
        assert_eq!(got.sorted(), rows(&fx.expected_current()), "{}", fx.name);
        let schema = uuid_typed(fx.expected_current().schema(), &fx.table);
        assert_eq!(got.schema, schema, "{}", fx.name);
        // Branches and tags.
        for (name, id) in &fx.refs {
            let got = rq(TableScan::from_table(fx.table.clone()).reference(name));
            assert_eq!(
                got.sorted(),
                rows(fx.expected_at(*id)),
                "{} ref {name}",
                fx.name
            );
        }
    }
}

#[test]
fn repeated_scans_share_footers_through_the_cache() {
    // Data files are immutable: a second scan of the table (or another snapshot of it) takes
    // every data file's footer from the cache, none fetched, and delivers the spec's rows.
    let fx = deletes(40, 10);
    let cache = rayquet::FooterCache::new(16 << 20);
    let scan = || rq(TableScan::from_table(fx.table.clone()).footer_cache(cache.clone()));
    let first = scan();
    let second = scan();
    assert!(first.metrics.files > 1, "several data files");
    assert_eq!(first.metrics.footer_cache_hits, 0);
    assert!(first.metrics.metadata_bytes > 0);
    assert_eq!(second.metrics.files, first.metrics.files);
    assert_eq!(second.metrics.footer_cache_hits, second.metrics.files);
    assert_eq!(second.metrics.metadata_bytes, 0, "no footer fetched again");
    for read in [&first, &second] {
        assert_eq!(read.sorted(), rows(&fx.expected_current()), "{}", fx.name);
    }
    // An earlier snapshot shares the files it has in common with the current one.
    let earlier = fx.snapshot_ids[0];
    let old = rq(TableScan::from_table(fx.table.clone())
        .snapshot_id(earlier)
        .footer_cache(cache.clone()));
    assert_eq!(old.metrics.footer_cache_hits, old.metrics.files);
    assert_eq!(old.sorted(), rows(fx.expected_at(earlier)));
    // Without the cache every footer is fetched.
    let none = rq(TableScan::from_table(fx.table.clone()).no_footer_cache());
    assert_eq!(none.metrics.footer_cache_hits, 0);
    assert!(none.metrics.metadata_bytes > 0);
}

#[test]
fn load_table_from_the_directory_or_the_metadata_file() {
    for fx in [
        deletes(24, 8),
        time_travel(),
        evolution(6),
        partitioned_identity(4),
    ] {
        let dir = fx.table_root.to_str().unwrap().to_string();
        let locations = [
            dir.clone(),
            format!("{dir}/"),
            fx.table_location.clone(),
            fx.metadata_location.clone(),
            local_path(&fx.metadata_location).display().to_string(),
        ];
        for loc in locations {
            let table = load_table(&loc, &rayquet::ScanOptions::new())
                .unwrap_or_else(|e| panic!("{loc}: {e}"));
            assert_eq!(
                table.metadata().current_snapshot_id(),
                fx.table.metadata().current_snapshot_id(),
                "{loc}"
            );
            for s in &fx.snapshot_ids {
                check_snapshot(&fx, &table, *s, &format!("load_table({loc})"));
            }
        }
    }
    let err = load_table("/nonexistent/table", &rayquet::ScanOptions::new()).unwrap_err();
    assert!(err.to_string().contains("/nonexistent/table"), "{err}");
}

#[test]
fn refs_and_unknown_snapshots() {
    let fx = time_travel();
    let t1 = rq(TableScan::from_table(fx.table.clone()).reference("t1"));
    assert_eq!(t1.sorted(), rows(fx.expected_at(fx.snapshot_ids[0])));
    let main = rq(TableScan::from_table(fx.table.clone()).reference("main"));
    assert_eq!(main.sorted(), rows(&fx.expected_current()));
    let b1 = rq(TableScan::from_table(fx.table.clone()).reference("b1"));
    assert_eq!(b1.sorted(), rows(fx.expected_at(fx.snapshot_ids[3])));
    assert_eq!(b1.rows(), 25);
    let err = try_rq(TableScan::from_table(fx.table.clone()).reference("nope")).unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
    let err = try_rq(TableScan::from_table(fx.table.clone()).snapshot_id(12345)).unwrap_err();
    assert!(err.to_string().contains("12345"), "{err}");
}

#[test]
fn empty_table_and_empty_snapshot() {
    let fx = empty_table();
    let got = rq(TableScan::from_table(fx.table.clone()));
    assert_eq!(got.rows(), 0);
    assert_eq!(got.schema, fx.expected_current().schema());
    let (schema, _) = to_arrow(&fx.table, None, None, None, true);
    assert_eq!(got.schema, schema);
    let got = rq(TableScan::from_table(fx.table.clone()).columns(["v"]));
    assert_eq!(got.schema, project(&fx.expected_current(), &["v"]).schema());

    let fx = empty_snapshot();
    let got = rq(TableScan::from_table(fx.table.clone()));
    assert_eq!((got.rows(), got.metrics.files), (0, 0));
    assert_eq!(got.schema, fx.expected_current().schema());
    let s1 = rq(TableScan::from_table(fx.table.clone()).snapshot_id(fx.snapshot_ids[0]));
    assert_eq!(s1.rows(), 10);
}

#[test]
fn planning_runs_on_rayquets_runtime_whatever_the_tables() {
    // A table loaded on a runtime that has since stopped: iceberg-rust plans nothing (a
    // silently empty scan, docs/ICEBERG_NOTES.md §4); rayquet plans on its own IO runtime.
    let fx = primitives(2, 30, 10);
    let tmp = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let table = tmp
        .block_on(iceberg::table::StaticTable::from_metadata_file(
            &fx.metadata_location,
            fx.table.identifier().clone(),
            iceberg::io::FileIO::new_with_fs(),
        ))
        .unwrap()
        .into_table();
    drop(tmp);
    let got = rq(TableScan::from_table(table));
    assert_eq!(got.sorted(), rows(&fx.expected_current()));
}

#[test]
fn empty_selection_counts_rows() {
    let fx = deletes(40, 10);
    for s in &fx.snapshot_ids {
        let got = rq(TableScan::from_table(fx.table.clone())
            .snapshot_id(*s)
            .columns(Vec::<String>::new()));
        assert_eq!(got.schema.fields().len(), 0);
        assert_eq!(got.rows(), fx.expected_at(*s).num_rows(), "snapshot {s}");
    }
    let got = rq(TableScan::from_table(fx.table.clone())
        .columns(Vec::<String>::new())
        .filter(col("id").lt(10)));
    assert_eq!(
        got.rows(),
        filter_rows(&fx.expected_current(), |r| {
            fx.expected_current()
                .column(0)
                .as_primitive::<Int64Type>()
                .value(r)
                < 10
        })
        .num_rows()
    );
}

// ---------------------------------------------------------------------------------------------
// Columns: selection, order, metadata columns
// ---------------------------------------------------------------------------------------------

#[test]
fn selected_columns_in_the_given_order_with_to_arrows_schema() {
    let fx = primitives(2, 90, 30);
    let exp = fx.expected_current();
    for cols in [
        vec!["tstz", "id", "u"],
        vec!["s", "bin", "dec", "fx", "b"],
        vec!["id", "id"],
        vec!["_file", "i", "id"],
    ] {
        let got = rq(TableScan::from_table(fx.table.clone()).columns(cols.iter().copied()));
        let (schema, batches) = to_arrow(&fx.table, None, Some(&cols), None, true);
        let schema = uuid_typed(schema, &fx.table);
        assert_eq!(got.schema, schema, "{cols:?}: schema vs to_arrow");
        assert_eq!(got.sorted(), sorted_rows(&flat(&batches)), "{cols:?}");
        if !cols.contains(&"_file") {
            assert_eq!(got.sorted(), rows(&project(&exp, &cols)), "{cols:?}: spec");
        }
    }
    // Nested fixture: struct, list and map columns keep every field id.
    let fx = nested(10);
    let got = rq(TableScan::from_table(fx.table.clone()).columns(["props", "tags", "s"]));
    let (schema, _) = to_arrow(&fx.table, None, Some(&["props", "tags", "s"]), None, true);
    assert_eq!(got.schema, schema);
    assert_eq!(
        got.sorted(),
        rows(&project(&fx.expected_current(), &["props", "tags", "s"]))
    );
    // Unknown and nested names are errors that say so.
    let err = try_rq(TableScan::from_table(fx.table.clone()).columns(["nope"])).unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
    let err = try_rq(TableScan::from_table(fx.table.clone()).columns(["s.a"])).unwrap_err();
    assert!(err.to_string().contains("top-level"), "{err}");
}

#[test]
fn file_and_pos_metadata_columns() {
    // `_file` as to_arrow gives it (run-end encoded, non-null, reserved field id); `_pos` the
    // row's position in its data file, checked against the rows each file holds as written.
    let fx = primitives(3, 70, 20);
    let got = rq(TableScan::from_table(fx.table.clone()).columns(["_pos", "id", "_file"]));
    let f = got.schema.field(2);
    assert!(matches!(f.data_type(), DataType::RunEndEncoded(..)));
    assert!(!f.is_nullable());
    assert_eq!(f.metadata()[FIELD_ID], (i32::MAX - 1).to_string());
    let pos = got.schema.field(0);
    assert_eq!(
        (pos.name().as_str(), pos.data_type(), pos.is_nullable()),
        ("_pos", &DataType::Int64, false)
    );
    assert_eq!(pos.metadata()[FIELD_ID], (i32::MAX - 2).to_string());
    let all = flat(&got.batches);
    let mut n = 0;
    for b in &all {
        let (p, id, file) = (
            b.column(0).as_primitive::<Int64Type>(),
            b.column(1).as_primitive::<Int64Type>(),
            b.column(2).as_string::<i32>(),
        );
        for r in 0..b.num_rows() {
            let written = &fx.data_file(file.value(r)).rows;
            let want = written
                .column(0)
                .as_primitive::<Int64Type>()
                .value(p.value(r) as usize);
            assert_eq!(id.value(r), want, "row at {}:{}", file.value(r), p.value(r));
            n += 1;
        }
    }
    assert_eq!(n, 210);

    // With deletes: `_pos` keeps counting every row of the file, deleted ones included.
    let fx = deletes(40, 10);
    let s2 = fx.snapshot_ids[1];
    let got = rq(TableScan::from_table(fx.table.clone())
        .snapshot_id(s2)
        .columns(["_file", "_pos", "id", "v"]));
    let deleted: HashSet<(String, i64)> = fx
        .delete_files
        .iter()
        .filter(|d| d.kind == DeleteKind::Position)
        .flat_map(|d| {
            let f = d.rows.column(0).as_string::<i32>().clone();
            let p = d.rows.column(1).as_primitive::<Int64Type>().clone();
            (0..f.len()).map(move |i| (f.value(i).to_string(), p.value(i)))
        })
        .collect();
    let mut seen = HashSet::new();
    for b in flat(&got.batches) {
        let (file, p, id) = (
            b.column(0).as_string::<i32>(),
            b.column(1).as_primitive::<Int64Type>(),
            b.column(2).as_primitive::<Int64Type>(),
        );
        for r in 0..b.num_rows() {
            let key = (file.value(r).to_string(), p.value(r));
            assert!(!deleted.contains(&key), "deleted row delivered: {key:?}");
            let written = &fx.data_file(file.value(r)).rows;
            assert_eq!(
                written
                    .column(0)
                    .as_primitive::<Int64Type>()
                    .value(p.value(r) as usize),
                id.value(r)
            );
            assert!(seen.insert(key));
        }
    }
    assert_eq!(seen.len(), fx.expected_at(s2).num_rows());
    assert_eq!(got.metrics.rows_deleted as usize, 15);
}

// ---------------------------------------------------------------------------------------------
// Predicates
// ---------------------------------------------------------------------------------------------

type Keep<'a> = Box<dyn Fn(usize) -> bool + 'a>;

#[test]
fn predicates_are_exact_and_prune_row_groups() {
    // 2 files x 8 row groups of 25 rows; ids ascend, so id ranges prune row groups.
    let fx = primitives(2, 200, 25);
    let exp = fx.expected_current();
    let ids = exp.column(0).as_primitive::<Int64Type>().clone();
    let i = exp
        .column_by_name("i")
        .unwrap()
        .as_primitive::<Int32Type>()
        .clone();
    let l = exp
        .column_by_name("l")
        .unwrap()
        .as_primitive::<Int64Type>()
        .clone();
    let d = exp
        .column_by_name("d")
        .unwrap()
        .as_primitive::<Float64Type>()
        .clone();
    let s = exp.column_by_name("s").unwrap().as_string::<i32>().clone();
    let b = exp.column_by_name("b").unwrap().as_boolean().clone();
    let dt = exp
        .column_by_name("dt")
        .unwrap()
        .as_primitive::<Date32Type>()
        .clone();
    let ts = exp
        .column_by_name("ts")
        .unwrap()
        .as_primitive::<TimestampMicrosecondType>()
        .clone();
    let dec = exp
        .column_by_name("dec")
        .unwrap()
        .as_primitive::<arrow::datatypes::Decimal128Type>()
        .clone();
    let r = |n: &str| Reference::new(n);
    let some_s = s.value(33).to_string();
    let cases: Vec<(Predicate, Keep, bool)> = vec![
        (
            r("id").less_than(Datum::long(30)),
            Box::new(|x| ids.value(x) < 30),
            true,
        ),
        (
            r("id")
                .greater_than_or_equal_to(Datum::long(240))
                .and(r("id").less_than_or_equal_to(Datum::long(260))),
            Box::new(|x| (240..=260).contains(&ids.value(x))),
            true,
        ),
        (
            r("id").less_than(Datum::long(100)).negate(),
            Box::new(|x| ids.value(x) >= 100),
            true,
        ),
        (
            r("id").is_in([Datum::long(3), Datum::long(150), Datum::long(399)]),
            Box::new(|x| [3, 150, 399].contains(&ids.value(x))),
            true,
        ),
        (
            r("id").is_not_in([Datum::long(3), Datum::long(150)]),
            Box::new(|x| ![3, 150].contains(&ids.value(x))),
            false,
        ),
        (
            r("i")
                .greater_than_or_equal_to(Datum::int(0))
                .and(r("i").less_than(Datum::int(100))),
            Box::new(|x| i.is_valid(x) && (0..100).contains(&i.value(x))),
            false,
        ),
        (r("l").is_null(), Box::new(|x| l.is_null(x)), false),
        (r("l").is_not_null(), Box::new(|x| l.is_valid(x)), false),
        // SQL three-valued logic: NULL `i` does not satisfy `i != v`.
        (
            r("i").not_equal_to(Datum::int(-465)),
            Box::new(|x| i.is_valid(x) && i.value(x) != -465),
            false,
        ),
        (
            r("s").equal_to(Datum::string(&some_s)),
            Box::new(|x| s.is_valid(x) && s.value(x) == some_s),
            false,
        ),
        (
            r("s").starts_with(Datum::string("s001")),
            Box::new(|x| s.is_valid(x) && s.value(x).starts_with("s001")),
            false,
        ),
        (
            r("s").not_starts_with(Datum::string("s001")),
            Box::new(|x| s.is_valid(x) && !s.value(x).starts_with("s001")),
            false,
        ),
        (
            r("d")
                .greater_than(Datum::double(50.0))
                .or(r("b").equal_to(Datum::bool(true))),
            Box::new(|x| (d.is_valid(x) && d.value(x) > 50.0) || (b.is_valid(x) && b.value(x))),
            false,
        ),
        (
            r("dt").less_than(Datum::date(BASE_DAY - 100)),
            Box::new(|x| dt.is_valid(x) && dt.value(x) < BASE_DAY - 100),
            false,
        ),
        (
            r("ts")
                .greater_than_or_equal_to(Datum::timestamp_micros(BASE_TS + 300 * 3_600_000_000)),
            Box::new(|x| ts.is_valid(x) && ts.value(x) >= BASE_TS + 300 * 3_600_000_000),
            true,
        ),
        (
            r("dec").less_than_or_equal_to(Datum::decimal_from_str("-400.00").unwrap()),
            Box::new(|x| dec.is_valid(x) && dec.value(x) <= -40_000),
            false,
        ),
        (Predicate::AlwaysFalse, Box::new(|_| false), false),
    ];
    for (p, keep, prunes) in cases {
        let want = filter_rows(&exp, &keep);
        let got = rq(TableScan::from_table(fx.table.clone())
            .filter(rayquet_iceberg::predicate::to_expr(&p.clone()).unwrap()));
        assert_eq!(got.sorted(), rows(&want), "{p}");
        if want.num_rows() > 0 {
            let (_, reference) = to_arrow(&fx.table, None, None, Some(p.clone()), true);
            assert_eq!(got.sorted(), sorted_rows(&reference), "{p} vs to_arrow");
        }
        if prunes {
            assert!(got.metrics.row_groups_pruned > 0, "{p}: {:?}", got.metrics);
        }
        // Selected columns need not include the predicate's.
        let got = rq(TableScan::from_table(fx.table.clone())
            .columns(["u", "id"])
            .filter(rayquet_iceberg::predicate::to_expr(&p.clone()).unwrap()));
        assert_eq!(
            got.sorted(),
            rows(&project(&want, &["u", "id"])),
            "{p} projected"
        );
    }
    // The same through rayquet filters (translated for iceberg's planner).
    let filters: Vec<(Expr, Keep)> = vec![
        (col("id").lt(30), Box::new(|x| ids.value(x) < 30)),
        (
            col("id").between(240, 260),
            Box::new(|x| (240..=260).contains(&ids.value(x))),
        ),
        (
            col("i").not_eq(-465).and(col("l").is_not_null()),
            Box::new(|x| i.is_valid(x) && i.value(x) != -465 && l.is_valid(x)),
        ),
        (
            col("dt").gt_eq("2024-01-01"),
            Box::new(|x| dt.is_valid(x) && dt.value(x) >= 19723),
        ),
        (
            col("dec")
                .gt("250.5")
                .or(col("s").in_list(["s00031", "s00062"])),
            Box::new(|x| {
                (dec.is_valid(x) && dec.value(x) > 25_050)
                    || (s.is_valid(x) && ["s00031", "s00062"].contains(&s.value(x)))
            }),
        ),
        (col("id").lt(10).negate(), Box::new(|x| ids.value(x) >= 10)),
        // Patterns: iceberg's planner gets their literal start (`starts_with`, `=`).
        (
            col("s").like("s001%"),
            Box::new(|x| s.is_valid(x) && s.value(x).starts_with("s001")),
        ),
        (
            col("s").like("s00_3%"),
            Box::new(|x| {
                s.is_valid(x) && s.value(x).starts_with("s00") && &s.value(x)[4..5] == "3"
            }),
        ),
        (
            col("s").like(some_s.as_str()),
            Box::new(|x| s.is_valid(x) && s.value(x) == some_s),
        ),
        // Under NOT: `not_starts_with` and `<>` for the planner.
        (
            col("s").like("s001%").negate(),
            Box::new(|x| s.is_valid(x) && !s.value(x).starts_with("s001")),
        ),
        (
            col("s").like(some_s.as_str()).negate(),
            Box::new(|x| s.is_valid(x) && s.value(x) != some_s),
        ),
    ];
    for (f, keep) in filters {
        let want = filter_rows(&exp, &keep);
        assert!(want.num_rows() > 0, "{f}");
        let got = rq(TableScan::from_table(fx.table.clone()).filter(f.clone()));
        assert_eq!(got.sorted(), rows(&want), "{f}");
    }
    // iceberg's planner skips the second file; rayquet 6 of the first file's 8 row groups.
    let got = rq(TableScan::from_table(fx.table.clone()).filter(col("id").lt(30)));
    assert_eq!(
        (got.metrics.files, got.metrics.row_groups_pruned),
        (1, 6),
        "{:?}",
        got.metrics
    );
    // A translated Iceberg predicate and a rayquet filter together: both hold.
    let predicate = rayquet_iceberg::predicate::to_expr(&r("id").less_than(Datum::long(50)));
    let got =
        rq(TableScan::from_table(fx.table.clone())
            .filter(predicate.unwrap().and(col("id").gt_eq(40))));
    assert_eq!(ids_of(&got.all(), "id"), (40..50).collect::<Vec<_>>());
    // A predicate on an unknown column is an error naming it.
    let err = try_rq(
        TableScan::from_table(fx.table.clone())
            .filter(rayquet_iceberg::predicate::to_expr(&r("nope").is_null()).unwrap()),
    )
    .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");
}

/// `NOT LIKE 'eu%'` reaches iceberg's planner as `not_starts_with(region, 'eu')`: the file of
/// partition `region = 'eu'` is never opened, and the rows are the brute-force filter's.
#[test]
fn not_like_prefixes_skip_files() {
    let fx = partitioned_identity(5);
    let every = rq(TableScan::from_table(fx.table.clone()));
    let exp = fx.expected_current();
    let region = exp.column_by_name("region").unwrap().as_string::<i32>();
    for (f, keep) in [
        (
            col("region").like("eu%").negate(),
            Box::new(|x| region.is_valid(x) && !region.value(x).starts_with("eu")) as Keep,
        ),
        (
            col("region").like("eu").negate(),
            Box::new(|x| region.is_valid(x) && region.value(x) != "eu"),
        ),
    ] {
        let got = rq(TableScan::from_table(fx.table.clone()).filter(f.clone()));
        assert_eq!(got.sorted(), rows(&filter_rows(&exp, &keep)), "{f}");
        assert_eq!(
            got.metrics.files,
            every.metrics.files - 1,
            "{f}: {:?} against {:?}",
            got.metrics,
            every.metrics
        );
    }
}

#[test]
fn predicates_where_iceberg_rust_deviates_follow_the_spec() {
    // Identity-partition constants: `cat = 7` finds the constants-only file's rows.
    let fx = partitioned_identity(5);
    let (cat, region, day) = CONSTANT_PARTITION;
    let got = rq(TableScan::from_table(fx.table.clone()).filter(
        rayquet_iceberg::predicate::to_expr(&Reference::new("cat").equal_to(Datum::int(cat)))
            .unwrap(),
    ));
    assert_eq!(got.rows(), 5);
    let got = rq(TableScan::from_table(fx.table.clone())
        .columns(["region", "id", "day"])
        .filter(col("region").eq(region)));
    let want = filter_rows(&fx.expected_current(), |r| {
        let c = fx.expected_current();
        c.column(2).as_string::<i32>().is_valid(r)
            && c.column(2).as_string::<i32>().value(r) == region
    });
    assert_eq!(
        got.sorted(),
        rows(&project(&want, &["region", "id", "day"]))
    );
    assert!(
        rows(&project(&want, &["day"]))
            .iter()
            .all(|d| d == "2024-03-03"),
        "{day}"
    );
    let (_, reference) = to_arrow(
        &fx.table,
        None,
        None,
        Some(Reference::new("cat").equal_to(Datum::int(cat))),
        true,
    );
    assert_eq!(
        reference.iter().map(|b| b.num_rows()).sum::<usize>(),
        0,
        "iceberg-rust"
    );

    // Evolution: a filter on a column missing from a file with an initial default, and on
    // promoted columns (iceberg-rust prunes the files written with the old type).
    let fx = evolution(10);
    let exp = fx.expected_current();
    let wd = exp
        .column_by_name("with_default")
        .unwrap()
        .as_primitive::<Int32Type>()
        .clone();
    let a = exp
        .column_by_name("a")
        .unwrap()
        .as_primitive::<Int64Type>()
        .clone();
    let f = exp
        .column_by_name("f")
        .unwrap()
        .as_primitive::<Float64Type>()
        .clone();
    let cases: Vec<(Predicate, Keep)> = vec![
        (
            Reference::new("with_default").equal_to(Datum::int(INITIAL_DEFAULT)),
            Box::new(|r| wd.value(r) == INITIAL_DEFAULT),
        ),
        (
            Reference::new("a").greater_than(Datum::long(3000)),
            Box::new(|r| a.is_valid(r) && a.value(r) > 3000),
        ),
        (
            Reference::new("f").greater_than(Datum::double(500.0)),
            Box::new(|r| f.is_valid(r) && f.value(r) > 500.0),
        ),
        (
            Reference::new("full_name").equal_to(Datum::string("n1")),
            Box::new(|r| {
                exp.column_by_name("full_name")
                    .unwrap()
                    .as_string::<i32>()
                    .value(r)
                    == "n1"
                    && exp.column_by_name("full_name").unwrap().is_valid(r)
            }),
        ),
        (
            Reference::new("added").is_null(),
            Box::new(|r| exp.column_by_name("added").unwrap().is_null(r)),
        ),
    ];
    for (p, keep) in cases {
        let want = filter_rows(&exp, &keep);
        assert!(want.num_rows() > 0, "{p}");
        let got = rq(TableScan::from_table(fx.table.clone())
            .filter(rayquet_iceberg::predicate::to_expr(&p.clone()).unwrap()));
        assert_eq!(got.sorted(), rows(&want), "{p}");
        assert_eq!(got.schema, exp.schema());
    }
    let got = rq(TableScan::from_table(fx.table.clone()).filter(col("a").gt(3000)));
    assert_eq!(got.rows(), 16);

    // A filter on a nested field (iceberg-rust fails at read).
    let fx = nested(10);
    let exp = fx.expected_current();
    let s = exp.column(1).as_struct().clone();
    let sa = s.column(0).as_primitive::<Int32Type>().clone();
    let want = filter_rows(&exp, |r| s.is_valid(r) && sa.is_valid(r) && sa.value(r) > 3);
    let got = rq(TableScan::from_table(fx.table.clone()).filter(
        rayquet_iceberg::predicate::to_expr(&Reference::new("s.a").greater_than(Datum::int(3)))
            .unwrap(),
    ));
    assert_eq!(got.sorted(), rows(&want));
    let got = rq(TableScan::from_table(fx.table.clone())
        .columns(["id"])
        .filter(col("s.a").gt(3)));
    assert_eq!(got.sorted(), rows(&project(&want, &["id"])));
}

#[test]
fn case_insensitive_selection_and_predicates() {
    let fx = primitives(1, 20, 10);
    let exp = fx.expected_current();
    let want = project(&filter_rows(&exp, |r| r < 3), &["id", "s"]);
    let got = rq(TableScan::from_table(fx.table.clone())
        .columns(["ID", "S"])
        .case_sensitive(false)
        .filter(
            rayquet_iceberg::predicate::to_expr(&Reference::new("Id").less_than(Datum::long(3)))
                .unwrap(),
        ));
    assert_eq!(got.schema, want.schema(), "the table's spelling");
    assert_eq!(got.sorted(), rows(&want));
    let got = rq(TableScan::from_table(fx.table.clone())
        .columns(["id", "S"])
        .case_sensitive(false)
        .filter(col("ID").lt(3)));
    assert_eq!(got.sorted(), rows(&want));
    // iceberg-rust ignores case_sensitive for both (docs/ICEBERG_NOTES.md §2).
    assert!(try_to_arrow(&fx.table, None, Some(&["ID"]), None, false).is_err());
    // Case-sensitive scans reject other spellings.
    assert!(try_rq(TableScan::from_table(fx.table.clone()).columns(["ID"])).is_err());
    assert!(try_rq(
        TableScan::from_table(fx.table.clone()).filter(
            rayquet_iceberg::predicate::to_expr(&Reference::new("ID").less_than(Datum::long(3)))
                .unwrap()
        )
    )
    .is_err());
}

// ---------------------------------------------------------------------------------------------
// Schema evolution, name mapping, nested
// ---------------------------------------------------------------------------------------------

#[test]
fn evolution_and_name_mapping_follow_the_spec() {
    let fx = evolution(8);
    // Nested field added later (iceberg-rust fails), selected with other columns reordered.
    let cols = [
        "s",
        "with_default",
        "id",
        "full_name",
        "dec",
        "a",
        "added",
        "f",
    ];
    let got = rq(TableScan::from_table(fx.table.clone()).columns(cols));
    let want = project(&fx.expected_current(), &cols);
    assert_eq!(got.schema, want.schema());
    assert_eq!(got.sorted(), rows(&want));
    assert!(try_to_arrow(&fx.table, None, Some(&cols), None, true).is_err());
    // Time travel reads each snapshot in its own schema.
    for s in &fx.snapshot_ids {
        let got = rq(TableScan::from_table(fx.table.clone()).snapshot_id(*s));
        assert_eq!(got.schema, fx.expected_at(*s).schema());
    }

    let fx = name_mapped(true, 6);
    let got = rq(TableScan::from_table(fx.table.clone()).columns(["s", "id"]));
    let want = project(&fx.expected_current(), &["s", "id"]);
    assert_eq!(got.sorted(), rows(&want));
    assert!(
        got.all().column(0).null_count() < 12,
        "nested mapping resolves s"
    );
    // Without a mapping, files without field ids resolve no column (spec rule 4).
    let fx = name_mapped(false, 6);
    let got = rq(TableScan::from_table(fx.table.clone()));
    assert!(got.all().columns().iter().all(|c| c.null_count() == 6));
}

// ---------------------------------------------------------------------------------------------
// Caller-planned tasks and byte-range splits
// ---------------------------------------------------------------------------------------------

/// The first byte of row group `rg` of a local Parquet file.
fn row_group_start(path: &std::path::Path, rg: usize) -> u64 {
    let reader =
        parquet::file::reader::SerializedFileReader::new(std::fs::File::open(path).unwrap())
            .unwrap();
    let md = parquet::file::reader::FileReader::metadata(&reader);
    let c = md.row_group(rg).column(0);
    c.dictionary_page_offset().unwrap_or(c.data_page_offset()) as u64
}

/// Each task split in two at the start of its file's middle row group.
fn split(tasks: &[FileScanTask]) -> Vec<FileScanTask> {
    let mut out = vec![];
    for t in tasks {
        let local = local_path(&t.data_file_path);
        let groups = {
            let r = parquet::file::reader::SerializedFileReader::new(
                std::fs::File::open(&local).unwrap(),
            )
            .unwrap();
            parquet::file::reader::FileReader::metadata(&r).num_row_groups()
        };
        assert!(groups >= 2, "{}", t.data_file_path);
        let mid = row_group_start(&local, groups / 2);
        let mut a = t.clone();
        a.length = mid;
        let mut b = t.clone();
        b.start = mid;
        b.length = t.file_size_in_bytes - mid;
        out.push(a);
        out.push(b);
    }
    out
}

#[test]
fn scan_tasks_planned_by_the_caller_and_split_by_byte_range() {
    for fx in [
        primitives(2, 120, 30),
        deletes(40, 10),
        bench(4, 200, 40, true),
    ] {
        for s in &fx.snapshot_ids {
            let exp = fx.expected_at(*s);
            let tasks = plan_tasks(&fx.table, Some(*s), None, None, true);
            let got = try_read(scan_tasks(tasks.clone(), Some(&fx.table)).unwrap()).unwrap();
            assert_eq!(
                got.schema,
                uuid_typed(exp.schema(), &fx.table),
                "{} {s}",
                fx.name
            );
            assert_eq!(got.sorted(), rows(exp), "{} {s}: planned tasks", fx.name);
            // Two splits per file: no row lost or duplicated, in either half.
            let halves = split(&tasks);
            let got = try_read(scan_tasks(halves.clone(), Some(&fx.table)).unwrap()).unwrap();
            assert_eq!(got.sorted(), rows(exp), "{} {s}: split tasks", fx.name);
            let first_half: Vec<FileScanTask> = halves.iter().step_by(2).cloned().collect();
            let a = try_read(scan_tasks(first_half, Some(&fx.table)).unwrap()).unwrap();
            assert!(a.rows() > 0 && a.rows() < exp.num_rows(), "{}", fx.name);
            // Without the table: the tasks' own FileIO settings (here: local files).
            let got = try_read(scan_tasks(tasks, None).unwrap()).unwrap();
            assert_eq!(got.sorted(), rows(exp), "{} {s}: no table", fx.name);
        }
    }
    // Projection and a predicate planned into the tasks.
    let fx = primitives(2, 60, 20);
    let p = Reference::new("id").less_than(Datum::long(70));
    let tasks = plan_tasks(&fx.table, None, Some(&["s", "id", "_file"]), Some(p), true);
    let got = try_read(scan_tasks(tasks.clone(), Some(&fx.table)).unwrap()).unwrap();
    let (schema, reference) = to_arrow(
        &fx.table,
        None,
        Some(&["s", "id", "_file"]),
        Some(Reference::new("id").less_than(Datum::long(70))),
        true,
    );
    assert_eq!(got.schema, schema);
    assert_eq!(got.sorted(), sorted_rows(&flat(&reference)));
    assert_eq!(got.rows(), 70);
    assert!(scan_tasks(Vec::<FileScanTask>::new(), None).is_err());
}

// ---------------------------------------------------------------------------------------------
// Deletes
// ---------------------------------------------------------------------------------------------

#[test]
fn deletes_fixture_position_and_equality_deletes() {
    let fx = deletes(40, 10);
    // Position deletes across files and two overlapping delete files on one file (S2),
    // equality deletes on one and two columns with NULL keys (S3), and a data file appended
    // after them that no delete applies to (S4): the spec's answers.
    for s in &fx.snapshot_ids {
        let got = rq(TableScan::from_table(fx.table.clone()).snapshot_id(*s));
        assert_eq!(got.sorted(), rows(fx.expected_at(*s)), "snapshot {s}");
    }
    let s3 = fx.expected_at(fx.snapshot_ids[2]);
    // NULL keys: a NULL k1 never equals 3; (NULL, 'y') deletes exactly the NULL-k1 'y' rows.
    assert!(rows(s3).iter().any(|r| r.starts_with("26|∅|z|")));
    let got = rq(TableScan::from_table(fx.table.clone())
        .snapshot_id(fx.snapshot_ids[2])
        .columns(["k1", "k2"]));
    for r in got.sorted() {
        assert!(
            r != "3|x" && r != "3|y" && r != "3|z" && r != "5|x" && r != "∅|y",
            "{r}"
        );
    }
    // D3 keeps its deleted keys.
    let d3 = rq(TableScan::from_table(fx.table.clone()).filter(col("id").gt_eq(120)));
    assert_eq!(d3.sorted(), rows(&fx.data_files[3].rows));
    // Filters combine with deletes, ordered or not, with tiny batches.
    let exp = fx.expected_current();
    let ids = exp.column(0).as_primitive::<Int64Type>().clone();
    let want = filter_rows(&exp, |r| ids.value(r) % 3 == 0 || ids.value(r) < 20);
    let got = try_read(
        TableScan::from_table(fx.table.clone())
            .filter(
                col("id")
                    .lt(20)
                    .or(col("id").in_list((0..160).step_by(3).collect::<Vec<i64>>())),
            )
            .to_scan()
            .unwrap()
            .batch_size(3)
            .ordered(false),
    )
    .unwrap();
    assert_eq!(got.sorted(), rows(&want));
}

#[test]
fn bench_table_with_deletes_matches_the_spec_and_to_arrow() {
    let fx = bench(32, 300, 100, true);
    for s in &fx.snapshot_ids {
        check_snapshot(&fx, &fx.table, *s, "bench");
    }
    let got = rq(TableScan::from_table(fx.table.clone()));
    assert!(got.metrics.rows_deleted > 0);
    let cols = ["note", "id"];
    let got = rq(TableScan::from_table(fx.table.clone()).columns(cols));
    assert_eq!(got.sorted(), rows(&project(&fx.expected_current(), &cols)));
}

// --- counting every read of the table's files (each delete file is read once per scan) -----

mod counting {
    //! An iceberg `Storage` over the local filesystem (object_store) that counts the reads of
    //! every path.
    use super::*;
    use async_trait::async_trait;
    use bytes::Bytes;
    use futures::stream::BoxStream;
    use iceberg::io::{
        FileMetadata, FileRead, FileWrite, InputFile, OutputFile, Storage, StorageConfig,
        StorageFactory,
    };
    use object_store::{path::Path as OsPath, ObjectStore, ObjectStoreExt};
    use std::ops::Range;

    pub fn reads() -> &'static Mutex<HashMap<String, usize>> {
        static READS: OnceLock<Mutex<HashMap<String, usize>>> = OnceLock::new();
        READS.get_or_init(Default::default)
    }

    fn count(path: &str) {
        *reads().lock().unwrap().entry(path.to_string()).or_default() += 1;
    }

    fn store() -> Arc<dyn ObjectStore> {
        Arc::new(object_store::local::LocalFileSystem::new())
    }

    #[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
    struct Counting {
        #[serde(skip, default = "store")]
        store: Arc<dyn ObjectStore>,
    }

    fn p(path: &str) -> OsPath {
        OsPath::from(path.strip_prefix("file://").unwrap_or(path))
    }
    fn err(e: object_store::Error) -> iceberg::Error {
        iceberg::Error::new(iceberg::ErrorKind::Unexpected, e.to_string())
    }

    struct Read(Arc<dyn ObjectStore>, OsPath);
    #[async_trait]
    impl FileRead for Read {
        async fn read(&self, range: Range<u64>) -> iceberg::Result<Bytes> {
            self.0.get_range(&self.1, range).await.map_err(err)
        }
    }

    #[async_trait]
    #[typetag::serde]
    impl Storage for Counting {
        async fn exists(&self, path: &str) -> iceberg::Result<bool> {
            Ok(self.store.head(&p(path)).await.is_ok())
        }
        async fn metadata(&self, path: &str) -> iceberg::Result<FileMetadata> {
            Ok(FileMetadata {
                size: self.store.head(&p(path)).await.map_err(err)?.size,
            })
        }
        async fn read(&self, path: &str) -> iceberg::Result<Bytes> {
            count(path);
            let r = self.store.get(&p(path)).await.map_err(err)?;
            r.bytes().await.map_err(err)
        }
        async fn reader(&self, path: &str) -> iceberg::Result<Box<dyn FileRead>> {
            count(path);
            Ok(Box::new(Read(self.store.clone(), p(path))))
        }
        async fn write(&self, _: &str, _: Bytes) -> iceberg::Result<()> {
            unimplemented!("read-only")
        }
        async fn writer(&self, _: &str) -> iceberg::Result<Box<dyn FileWrite>> {
            unimplemented!("read-only")
        }
        async fn delete(&self, _: &str) -> iceberg::Result<()> {
            unimplemented!("read-only")
        }
        async fn delete_prefix(&self, _: &str) -> iceberg::Result<()> {
            unimplemented!("read-only")
        }
        async fn delete_stream(&self, _: BoxStream<'static, String>) -> iceberg::Result<()> {
            unimplemented!("read-only")
        }
        fn new_input(&self, path: &str) -> iceberg::Result<InputFile> {
            Ok(InputFile::new(Arc::new(self.clone()), path.to_string()))
        }
        fn new_output(&self, path: &str) -> iceberg::Result<OutputFile> {
            Ok(OutputFile::new(Arc::new(self.clone()), path.to_string()))
        }
    }

    #[derive(Debug, serde::Serialize, serde::Deserialize)]
    pub struct CountingFactory;
    #[typetag::serde]
    impl StorageFactory for CountingFactory {
        fn build(&self, _: &StorageConfig) -> iceberg::Result<Arc<dyn Storage>> {
            Ok(Arc::new(Counting { store: store() }))
        }
    }

    /// `fx`'s table with a FileIO that counts reads.
    pub fn table(fx: &Fixture) -> Table {
        let io = iceberg::io::FileIOBuilder::new(Arc::new(CountingFactory)).build();
        runtime()
            .block_on(iceberg::table::StaticTable::from_metadata_file(
                &fx.metadata_location,
                fx.table.identifier().clone(),
                io,
            ))
            .unwrap()
            .into_table()
    }
}

#[test]
fn each_delete_file_is_read_once_per_scan() {
    // The bench table attaches all 33 delete files to every one of its 32 data files.
    let fx = bench(32, 100, 50, true);
    let table = counting::table(&fx);
    for (k, scan) in [
        TableScan::from_table(table.clone()),
        TableScan::from_table(table.clone())
            .columns(["k", "note"])
            .filter(col("id").gt_eq(1000)),
    ]
    .into_iter()
    .enumerate()
    {
        counting::reads().lock().unwrap().clear();
        let got = rq(scan);
        if k == 0 {
            assert_eq!(got.sorted(), rows(&fx.expected_current()));
        }
        let reads = counting::reads().lock().unwrap().clone();
        assert_eq!(fx.delete_files.len(), 33);
        for d in &fx.delete_files {
            assert_eq!(reads.get(&d.path), Some(&1), "{}: {reads:?}", d.path);
        }
    }
}

// --- errors: never rows as if not deleted --------------------------------------------------

/// Scan `table` expecting an error; every row delivered before it must be a row of `allowed`
/// (so no deleted row leaks). Returns the error's text.
fn scan_error(scan: TableScan, allowed: &RecordBatch) -> String {
    let reader = scan.to_scan().unwrap().batch_size(4).build().unwrap();
    let allowed: Vec<String> = rows(allowed);
    let mut got = vec![];
    for item in reader {
        match item {
            Ok(b) => got.extend(sorted_rows(std::slice::from_ref(&b))),
            Err(e) => {
                for r in &got {
                    assert!(allowed.contains(r), "row {r} delivered before the error");
                }
                return e.to_string();
            }
        }
    }
    panic!("the scan succeeded with {} rows", got.len());
}

#[test]
fn missing_data_file_is_an_error_naming_it() {
    let fx = missing_data_file();
    let missing = local_path(&fx.removed_files[0]).display().to_string();
    for table in [
        fx.table.clone(),
        load_table(&fx.metadata_location, &rayquet::ScanOptions::new()).unwrap(),
    ] {
        let err = try_rq(TableScan::from_table(table)).unwrap_err();
        if std::env::var("SHOW_ERRORS").is_ok() {
            eprintln!("{err}");
        }
        assert!(err.to_string().contains(&missing), "{err}");
    }
}

#[test]
fn missing_or_corrupt_delete_files_are_errors_naming_them() {
    let base = deletes(40, 10);
    let names: Vec<String> = base.delete_files.iter().map(|d| d.path.clone()).collect();
    drop(base);
    for (k, _) in names.iter().enumerate() {
        for corrupt in [false, true] {
            let fx = deletes(40, 10);
            let victim = &fx.delete_files[k];
            if corrupt {
                std::fs::write(&victim.local_path, b"PAR1 definitely not parquet PAR1").unwrap();
            } else {
                std::fs::remove_file(&victim.local_path).unwrap();
            }
            let local = victim.local_path.display().to_string();
            for table in [
                fx.table.clone(),
                load_table(&fx.metadata_location, &rayquet::ScanOptions::new()).unwrap(),
            ] {
                let msg = scan_error(TableScan::from_table(table.clone()), &fx.expected_current());
                if std::env::var("SHOW_ERRORS").is_ok() {
                    eprintln!("{msg}");
                }
                assert!(
                    msg.contains(&local),
                    "{:?} corrupt={corrupt}: {msg}",
                    victim.kind
                );
                // Also when the delete file only matters through a filter or projection.
                let msg = scan_error(
                    TableScan::from_table(table)
                        .columns(["v"])
                        .filter(col("id").lt(100)),
                    &project(&fx.expected_current(), &["v"]),
                );
                assert!(msg.contains(&local), "{msg}");
            }
        }
    }
}

#[test]
fn missing_or_corrupt_manifests_are_errors_naming_them() {
    for corrupt in [false, true] {
        let fx = deletes(24, 8);
        let manifest = std::fs::read_dir(fx.table_root.join("metadata"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("hand-deletes-")
            })
            .expect("delete manifest");
        if corrupt {
            std::fs::write(&manifest, b"Obj\x01 garbage").unwrap();
        } else {
            std::fs::remove_file(&manifest).unwrap();
        }
        let name = manifest.file_name().unwrap().to_string_lossy().to_string();
        for table in [
            fx.table.clone(),
            load_table(&fx.metadata_location, &rayquet::ScanOptions::new()).unwrap(),
        ] {
            let err = try_rq(TableScan::from_table(table)).unwrap_err();
            if std::env::var("SHOW_ERRORS").is_ok() {
                eprintln!("{err}");
            }
            assert!(err.to_string().contains(&name), "corrupt={corrupt}: {err}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The conformance suite
// ---------------------------------------------------------------------------------------------

/// A one-data-file table with position and equality deletes (one file: the planner's task
/// order is then fixed, so ordered delivery can be checked against the expected rows).
struct IcebergInput {
    fx: Fixture,
}

impl Input for IcebergInput {
    fn label(&self) -> String {
        format!("iceberg {}", self.fx.name)
    }
    fn expected(&self) -> (SchemaRef, Vec<RecordBatch>) {
        let e = self.fx.expected_current();
        (e.schema(), vec![e])
    }
    fn scan(&self, columns: Option<&[&str]>) -> rayquet::Result<rayquet::Scan> {
        let mut t = TableScan::from_table(self.fx.table.clone());
        if let Some(c) = columns {
            t = t.columns(c.iter().copied());
        }
        t.to_scan()
    }
    fn projection(&self) -> Vec<&'static str> {
        vec!["note", "id", "ts"]
    }
    fn filters(&self) -> Vec<Filter> {
        vec![
            Filter {
                expr: col("id").lt(700),
                reference: boxed(|b| {
                    mask_of(b, "id", |a, i| {
                        Some(a.as_primitive::<Int64Type>().value(i) < 700)
                    })
                }),
            },
            Filter {
                expr: col("cat").eq("beta").and(col("k").is_not_null()),
                reference: boxed(|b| {
                    let cat = b.column_by_name("cat").unwrap().as_string::<i32>();
                    let k = b.column_by_name("k").unwrap();
                    (0..b.num_rows())
                        .map(|i| Some(cat.value(i) == "beta" && k.is_valid(i)))
                        .collect::<BooleanArray>()
                }),
            },
            Filter {
                expr: col("k").is_null().or(col("amount").gt(9000.0)),
                reference: boxed(|b| {
                    let k = b.column_by_name("k").unwrap();
                    let amount = b
                        .column_by_name("amount")
                        .unwrap()
                        .as_primitive::<Float64Type>();
                    (0..b.num_rows())
                        .map(|i| {
                            Some(k.is_null(i) || (amount.is_valid(i) && amount.value(i) > 9000.0))
                        })
                        .collect::<BooleanArray>()
                }),
            },
            Filter {
                expr: col("k").not_eq(5),
                reference: boxed(|b| {
                    mask_of(b, "k", |a, i| {
                        a.is_valid(i)
                            .then(|| a.as_primitive::<Int32Type>().value(i) != 5)
                    })
                }),
            },
        ]
    }
}

#[test]
fn conformance_suite() {
    suite::run(&IcebergInput {
        fx: bench(1, 3000, 300, true),
    });
    suite::run(&IcebergInput {
        fx: bench(1, 1000, 100, false),
    });
}

// ---------------------------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------------------------
