//! Hive-partitioned datasets (`year=2024/cat=a/part-0.parquet`): the partition columns a plain
//! scan discovers, their types, their values (decoded, nulls), their use in projections and
//! filters (whole files skipped before any byte of them is read), and the refusals.
//!
//! The expectation is built here from what was written (each file's rows and the values its
//! directories spell), independently of rayquet. The writers' own layouts (pyarrow, DuckDB,
//! polars) are compared with the writers' reads in `crates/cli/tests/real_writers.rs`.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, Date32Array, Int32Array, Int64Array, RecordBatch, RecordBatchOptions, StringArray,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use rayquet::{col, ErrorKind, Expr, Partitioning, Scan, ScanBuilder};
use rayquet_testkit::row_strings;

/// One file of a layout: its directories below the root and its `v` values.
struct File {
    dirs: &'static str,
    v: Vec<i64>,
}

/// Write `files` under `root`, each `dirs/part-0.parquet` holding `v`.
fn write(root: &Path, files: &[File]) {
    for f in files {
        let dir = root.join(f.dirs);
        std::fs::create_dir_all(&dir).unwrap();
        let batch = RecordBatch::try_from_iter([(
            "v",
            Arc::new(Int64Array::from(f.v.clone())) as ArrayRef,
        )])
        .unwrap();
        std::fs::write(
            dir.join("part-0.parquet"),
            rayquet_testkit::write_parquet(&[batch], 1024),
        )
        .unwrap();
    }
}

/// The layout most tests read: three keys, values that need decoding, a null.
fn layout() -> (tempfile::TempDir, Vec<File>) {
    let dir = tempfile::tempdir().unwrap();
    let files = vec![
        File {
            dirs: "year=2024/day=2024-01-02/cat=a%3Ab",
            v: vec![1, 2],
        },
        File {
            dirs: "year=2024/day=2024-01-03/cat=__HIVE_DEFAULT_PARTITION__",
            v: vec![3],
        },
        File {
            dirs: "year=2025/day=2025-06-30/cat=x%20y%2Fz",
            v: vec![4, 5, 6],
        },
    ];
    write(dir.path(), &files);
    (dir, files)
}

/// The expected rows of `layout()`: each file's rows with the values its directories spell.
fn expected() -> RecordBatch {
    let schema = Arc::new(Schema::new(vec![
        Field::new("v", DataType::Int64, false),
        Field::new("year", DataType::Int32, true),
        Field::new("day", DataType::Date32, true),
        Field::new("cat", DataType::Utf8, true),
    ]));
    let date = |s: &str| {
        let d = chrono_free_days(s);
        Some(d)
    };
    let rows: Vec<(i64, i32, Option<i32>, Option<&str>)> = vec![
        (1, 2024, date("2024-01-02"), Some("a:b")),
        (2, 2024, date("2024-01-02"), Some("a:b")),
        (3, 2024, date("2024-01-03"), None),
        (4, 2025, date("2025-06-30"), Some("x y/z")),
        (5, 2025, date("2025-06-30"), Some("x y/z")),
        (6, 2025, date("2025-06-30"), Some("x y/z")),
    ];
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(Int32Array::from_iter_values(rows.iter().map(|r| r.1))),
            Arc::new(Date32Array::from(
                rows.iter().map(|r| r.2).collect::<Vec<_>>(),
            )),
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.3).collect::<Vec<_>>(),
            )),
        ],
    )
    .unwrap()
}

/// Days since 1970-01-01 of `YYYY-MM-DD`, by arrow's own cast (not rayquet's).
fn chrono_free_days(s: &str) -> i32 {
    let a: ArrayRef = Arc::new(StringArray::from(vec![s]));
    let d = arrow::compute::cast(&a, &DataType::Date32).unwrap();
    d.as_any().downcast_ref::<Date32Array>().unwrap().value(0)
}

fn read(scan: Scan) -> rayquet::Result<(SchemaRef, RecordBatch, rayquet::MetricsSnapshot)> {
    let reader = scan.build()?;
    let schema = reader.schema();
    let metrics = reader.metrics();
    let batches = reader.collect::<Result<Vec<_>, _>>()?;
    let batch = arrow::compute::concat_batches(&schema, &batches).unwrap();
    Ok((schema, batch, metrics.snapshot()))
}

fn sorted(b: &RecordBatch) -> Vec<String> {
    let mut rows = row_strings(b);
    rows.sort();
    rows
}

/// `batch` keeping the rows where `keep(row)` holds (the reference filter).
fn rows_where(batch: &RecordBatch, keep: impl Fn(usize) -> bool) -> RecordBatch {
    let mask: arrow::array::BooleanArray = (0..batch.num_rows()).map(|i| Some(keep(i))).collect();
    arrow::compute::filter_record_batch(batch, &mask).unwrap()
}

fn project(batch: &RecordBatch, names: &[&str]) -> RecordBatch {
    let idx: Vec<usize> = names
        .iter()
        .map(|n| batch.schema().index_of(n).unwrap())
        .collect();
    batch.project(&idx).unwrap()
}

#[test]
fn partition_columns_are_discovered_typed_and_decoded() {
    let (dir, _) = layout();
    let (schema, batch, m) = read(Scan::new(dir.path().to_str().unwrap()).unwrap()).unwrap();
    let want = expected();
    assert_eq!(schema.fields(), want.schema().fields(), "schema");
    assert_eq!(sorted(&batch), sorted(&want));
    assert_eq!(m.files_pruned, 0);
}

#[test]
fn projections_name_partition_columns_in_any_order() {
    let (dir, _) = layout();
    for cols in [
        vec!["cat", "v"],
        vec!["year"],
        vec!["v", "day", "year"],
        vec!["day", "cat"],
    ] {
        let scan = Scan::new(dir.path().to_str().unwrap())
            .unwrap()
            .columns(cols.clone());
        let (schema, batch, _) = read(scan).unwrap();
        let want = project(&expected(), &cols);
        assert_eq!(schema.fields(), want.schema().fields(), "{cols:?}");
        assert_eq!(sorted(&batch), sorted(&want), "{cols:?}");
    }
    // With a row index, last.
    let scan = Scan::new(dir.path().to_str().unwrap())
        .unwrap()
        .columns(["cat"])
        .row_index("pos");
    let (schema, batch, _) = read(scan).unwrap();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["cat", "pos"]);
    assert_eq!(batch.num_rows(), 6);
}

#[test]
fn filters_on_partitions_skip_whole_files() {
    let (dir, _) = layout();
    let want = expected();
    let year = |i: usize| {
        want.column(1)
            .as_any()
            .downcast_ref::<Int32Array>()
            .unwrap()
            .value(i)
    };
    let v = |i: usize| {
        want.column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap()
            .value(i)
    };
    let cat_null = |i: usize| arrow::array::Array::is_null(want.column(3).as_ref(), i);
    // (filter, reference, files skipped without a byte read)
    type Case<'a> = (Expr, Box<dyn Fn(usize) -> bool + 'a>, u64);
    let cases: Vec<Case> = vec![
        (col("year").eq(2025), Box::new(|i| year(i) == 2025), 2),
        (col("day").gt_eq("2024-01-03"), Box::new(move |i| i >= 2), 1),
        (col("cat").is_null(), Box::new(cat_null), 2),
        (col("cat").eq("a:b"), Box::new(|i| i < 2), 2),
        // A partition column and a data column: only the partition part prunes files.
        (
            col("year").eq(2024).and(col("v").gt(1)),
            Box::new(|i| year(i) == 2024 && v(i) > 1),
            1,
        ),
        // OR with a data column: no file can be skipped.
        (
            col("year").eq(2025).or(col("v").eq(1)),
            Box::new(|i| year(i) == 2025 || v(i) == 1),
            0,
        ),
        // Nothing matches: no rows, the schema still the dataset's.
        (col("year").eq(1999), Box::new(|_| false), 2),
    ];
    for (filter, keep, skipped) in cases {
        let scan = Scan::new(dir.path().to_str().unwrap())
            .unwrap()
            .filter(filter.clone());
        let (schema, batch, m) = read(scan).unwrap();
        assert_eq!(schema.fields(), want.schema().fields(), "{filter}");
        assert_eq!(sorted(&batch), sorted(&rows_where(&want, keep)), "{filter}");
        assert_eq!(m.files_pruned, skipped, "{filter}: files skipped");
        // A skipped file costs no request: at most one footer read per file opened.
        assert!(
            m.files <= 3 - skipped.min(2),
            "{filter}: {} files opened",
            m.files
        );
    }
}

#[test]
fn off_and_given_schemas() {
    let (dir, _) = layout();
    let path = dir.path().to_str().unwrap();
    let (schema, batch, _) =
        read(Scan::new(path).unwrap().partitioning(Partitioning::Off)).unwrap();
    assert_eq!(schema.fields().len(), 1);
    assert_eq!(batch.num_rows(), 6);
    let given = Arc::new(Schema::new(vec![
        Field::new("year", DataType::Int64, true),
        Field::new("day", DataType::Utf8, true),
        Field::new("cat", DataType::Utf8, true),
    ]));
    let (schema, batch, _) = read(
        Scan::new(path)
            .unwrap()
            .partitioning(Partitioning::Schema(given)),
    )
    .unwrap();
    assert_eq!(schema.field(1).data_type(), &DataType::Int64);
    assert_eq!(schema.field(2).data_type(), &DataType::Utf8);
    let want = expected();
    let cast = |i: usize, t: &DataType| arrow::compute::cast(want.column(i), t).unwrap();
    let want = RecordBatch::try_new_with_options(
        Arc::clone(&schema),
        vec![
            Arc::clone(want.column(0)),
            cast(1, &DataType::Int64),
            cast(2, &DataType::Utf8),
            Arc::clone(want.column(3)),
        ],
        &RecordBatchOptions::new(),
    )
    .unwrap();
    assert_eq!(sorted(&batch), sorted(&want));
    // A given schema whose keys the paths do not have.
    let wrong = Arc::new(Schema::new(vec![Field::new(
        "month",
        DataType::Int32,
        true,
    )]));
    let e = read(
        Scan::new(path)
            .unwrap()
            .partitioning(Partitioning::Schema(wrong)),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn inconsistent_layouts_are_refused_and_keys_in_files_read_once() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            File {
                dirs: "a=1",
                v: vec![1],
            },
            File {
                dirs: "b=1",
                v: vec![2],
            },
        ],
    );
    let e = read(Scan::new(dir.path().to_str().unwrap()).unwrap()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.path().is_some_and(|p| p.contains("b=1")), "{e}");
    // A partition key that is also a column of the files (polars writes both): the file's
    // column, once, with the file's values and type.
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        &[
            File {
                dirs: "v=1",
                v: vec![1, 1],
            },
            File {
                dirs: "v=7",
                v: vec![7],
            },
        ],
    );
    let (schema, batch, _) = read(Scan::new(dir.path().to_str().unwrap()).unwrap()).unwrap();
    assert_eq!(schema.fields().len(), 1);
    assert_eq!(schema.field(0).data_type(), &DataType::Int64);
    assert_eq!(sorted(&batch), ["1", "1", "7"]);
    // Its path values still skip files.
    let (_, batch, m) = read(
        Scan::new(dir.path().to_str().unwrap())
            .unwrap()
            .filter(col("v").eq(7)),
    )
    .unwrap();
    assert_eq!((batch.num_rows(), m.files_pruned), (1, 1));
}

#[test]
fn a_file_named_directly_has_no_partition_columns() {
    let (dir, files) = layout();
    let one = dir.path().join(files[0].dirs).join("part-0.parquet");
    let (schema, batch, _) = read(Scan::new(one.to_str().unwrap()).unwrap()).unwrap();
    assert_eq!(schema.fields().len(), 1);
    assert_eq!(batch.num_rows(), 2);
}

#[test]
fn the_dataset_listing_gives_the_same_partitions() {
    let (dir, _) = layout();
    let options = rayquet::ScanOptions::new();
    let mut ds =
        rayquet::layer::list_dataset(&options, dir.path().to_str().unwrap(), &Partitioning::Infer)
            .unwrap();
    let names: Vec<&str> = ds
        .partition_fields
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    assert_eq!(names, ["year", "day", "cat"]);
    assert_eq!(ds.files.len(), 3);
    assert_eq!(
        ds.files[0].partition[2],
        rayquet::ColumnSource::Constant("a:b".into())
    );
    assert_eq!(ds.files[1].partition[2], rayquet::ColumnSource::Null);
    assert_eq!(ds.retain_matching(&col("year").eq(2025)).unwrap(), 2);
    assert_eq!(ds.files.len(), 1);
}
