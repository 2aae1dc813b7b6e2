//! Union by name (`Scan::union_by_name`): plain files whose schemas differ read as one. The
//! expectation is each file read by parquet's own reader, its columns cast with arrow's `cast`
//! kernel to the union's types, and a column the file lacks as nulls; pyarrow-written files are
//! compared with duckdb's `union_by_name` in `python/tests/test_scan.py`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    new_null_array, ArrayRef, Float32Array, Int32Array, Int64Array, RecordBatch, StringArray,
    UInt32Array,
};
use arrow::compute::{cast, concat_batches, filter_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use rayquet::{col, ErrorKind, Expr, Scan, ScanBuilder};
use rayquet_testkit::{reference, row_strings, write_parquet};

fn write(dir: &Path, name: &str, columns: Vec<(&str, ArrayRef)>) -> PathBuf {
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, write_parquet(&[batch], 2)).unwrap();
    path
}

/// Three files: `a` int32 then int64 then uint32; `b` only in the first and last; `c` float32
/// added by the second.
fn files() -> (tempfile::TempDir, Vec<PathBuf>) {
    let dir = tempfile::tempdir().unwrap();
    let one = write(
        dir.path(),
        "1.parquet",
        vec![
            ("a", Arc::new(Int32Array::from(vec![1, -2, 3]))),
            ("b", Arc::new(StringArray::from(vec!["x", "y", "z"]))),
        ],
    );
    let two = write(
        dir.path(),
        "2.parquet",
        vec![
            ("c", Arc::new(Float32Array::from(vec![Some(1.5), None]))),
            ("a", Arc::new(Int64Array::from(vec![1 << 40, 5]))),
        ],
    );
    let three = write(
        dir.path(),
        "3.parquet",
        vec![
            ("b", Arc::new(StringArray::from(vec![Some("w"), None]))),
            ("a", Arc::new(UInt32Array::from(vec![u32::MAX, 7]))),
        ],
    );
    (dir, vec![one, two, three])
}

/// What the union of `paths` holds under `schema`: each file by parquet's reader, cast.
fn expected(paths: &[PathBuf], schema: &SchemaRef) -> RecordBatch {
    let batches: Vec<RecordBatch> = paths
        .iter()
        .map(|p| {
            let (_, read) = reference(p, None, 1 << 20).unwrap();
            let file = concat_batches(&read[0].schema(), &read).unwrap();
            let columns = schema
                .fields()
                .iter()
                .map(|f| match file.column_by_name(f.name()) {
                    Some(c) => cast(c, f.data_type()).unwrap(),
                    None => new_null_array(f.data_type(), file.num_rows()),
                })
                .collect();
            RecordBatch::try_new(Arc::clone(schema), columns).unwrap()
        })
        .collect();
    concat_batches(schema, &batches).unwrap()
}

fn read(scan: Scan) -> RecordBatch {
    let reader = scan.build().unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    concat_batches(&schema, &batches).unwrap()
}

fn urls(paths: &[PathBuf]) -> Vec<String> {
    paths.iter().map(|p| p.display().to_string()).collect()
}

#[test]
fn files_that_differ_read_as_one_schema() {
    let (_dir, paths) = files();
    let got = read(Scan::from_urls(urls(&paths)).unwrap().union_by_name(true));
    let want_schema = Arc::new(Schema::new(vec![
        // In every file, never null (written non-nullable): stays non-nullable.
        Field::new("a", DataType::Int64, false),
        Field::new("b", DataType::Utf8, true),
        Field::new("c", DataType::Float32, true),
    ]));
    assert_eq!(got.schema().fields(), want_schema.fields());
    let want = expected(&paths, &want_schema);
    assert_eq!(row_strings(&got), row_strings(&want));
    assert_eq!(got.num_rows(), 7);
}

#[test]
fn the_schema_follows_the_files_order() {
    let (_dir, mut paths) = files();
    paths.reverse();
    let got = read(Scan::from_urls(urls(&paths)).unwrap().union_by_name(true));
    let schema = got.schema();
    let names: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
    assert_eq!(names, ["b", "a", "c"]);
    let want = expected(&paths, &got.schema());
    assert_eq!(row_strings(&got), row_strings(&want));
}

#[test]
fn columns_and_filters_name_the_union() {
    let (_dir, paths) = files();
    let all = read(Scan::from_urls(urls(&paths)).unwrap().union_by_name(true));
    // A filter on a column two files lack keeps none of their rows.
    let filter: Expr = col("c").gt(1.0f64);
    let got = read(
        Scan::from_urls(urls(&paths))
            .unwrap()
            .union_by_name(true)
            .columns(["c", "a"])
            .filter(filter),
    );
    let mask = arrow::compute::kernels::cmp::gt(
        all.column_by_name("c").unwrap(),
        &arrow::array::Float32Array::new_scalar(1.0),
    )
    .unwrap();
    let want = filter_record_batch(&all.project(&[2, 0]).unwrap(), &mask).unwrap();
    assert_eq!(row_strings(&got), row_strings(&want));
    assert_eq!(got.num_rows(), 1);
    // A filter on the widened column compares in the union's type.
    let got = read(
        Scan::from_urls(urls(&paths))
            .unwrap()
            .union_by_name(true)
            .filter(col("a").gt(1_000_000i64)),
    );
    assert_eq!(got.num_rows(), 2, "{:?}", row_strings(&got));
    // Unknown columns are named with the union's.
    let err = Scan::from_urls(urls(&paths))
        .unwrap()
        .union_by_name(true)
        .columns(["nope"])
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert!(err.to_string().contains("\"c\""), "{err}");
}

#[test]
fn a_row_index_counts_each_file() {
    let (_dir, paths) = files();
    let got = read(
        Scan::from_urls(urls(&paths))
            .unwrap()
            .union_by_name(true)
            .columns(["b"])
            .row_index("pos"),
    );
    let pos = got.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
    assert_eq!(pos.values().to_vec(), vec![0, 1, 2, 0, 1, 0, 1]);
}

#[test]
fn types_without_a_common_type_name_the_column_and_both_files() {
    let (dir, mut paths) = files();
    paths.push(write(
        dir.path(),
        "4.parquet",
        vec![("b", Arc::new(Int64Array::from(vec![1])))],
    ));
    let err = Scan::from_urls(urls(&paths))
        .unwrap()
        .union_by_name(true)
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::SchemaMismatch, "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("\"b\"") && msg.contains("1.parquet") && msg.contains("4.parquet"),
        "{msg}"
    );
    // Without the option, the first difference is the error it always was.
    let err = Scan::from_urls(urls(&paths[..2]))
        .unwrap()
        .build()
        .and_then(|r| {
            r.collect::<Result<Vec<_>, _>>()
                .map_err(|e| rayquet::Error::of(&e).unwrap().clone())
        });
    assert!(err.is_err());
}

#[test]
fn a_scan_of_tasks_refuses_it() {
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, true)]));
    let err = Scan::from_tasks(schema, Vec::<rayquet::FileTask>::new())
        .union_by_name(true)
        .build()
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
}

#[test]
fn partition_columns_follow_the_union() {
    let dir = tempfile::tempdir().unwrap();
    for (k, cols) in [
        (
            "k=1",
            vec![("v", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef)],
        ),
        (
            "k=2",
            vec![
                ("w", Arc::new(StringArray::from(vec!["q"])) as ArrayRef),
                ("v", Arc::new(Int64Array::from(vec![3]))),
            ],
        ),
    ] {
        std::fs::create_dir_all(dir.path().join(k)).unwrap();
        write(&dir.path().join(k), "part-0.parquet", cols);
    }
    let root = format!("{}/", dir.path().display());
    let got = read(Scan::new(&root).unwrap().union_by_name(true));
    let schema = got.schema();
    let names: Vec<&String> = schema.fields().iter().map(|f| f.name()).collect();
    assert_eq!(names, ["v", "w", "k"]);
    assert_eq!(row_strings(&got), ["1|∅|1", "2|∅|1", "3|q|2"]);
    // A filter on the partition column skips the other file; on `w`, the file without it.
    let got = read(
        Scan::new(&root)
            .unwrap()
            .union_by_name(true)
            .columns(["k", "v"])
            .filter(col("k").eq(2i64)),
    );
    assert_eq!(row_strings(&got), ["2|3"]);
    let got = read(
        Scan::new(&root)
            .unwrap()
            .union_by_name(true)
            .filter(col("w").is_null()),
    );
    assert_eq!(row_strings(&got), ["1|∅|1", "2|∅|1"]);
}
