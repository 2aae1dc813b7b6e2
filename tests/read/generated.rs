//! Property-style tests over a matrix of generated datasets: {1, 3} files x {1, 4} row groups
//! per file x {none, snappy, zstd} compression, each read with batch sizes {1000, 8192}.
//!
//! The data comes from a seeded PRNG and covers most Arrow types with nulls everywhere. Every
//! read is compared with parquet's sync reader (the reference): ordered reads exactly,
//! unordered reads as multisets of rendered rows.

use common::Rng;
use rayquet::ScanBuilder;
use rayquet_testkit as common;

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{
    make_array, Array, ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array,
    DictionaryArray, Float32Array, Float64Array, Float64Builder, Int16Array, Int32Array,
    Int32Builder, Int64Array, Int8Array, ListBuilder, NullArray, RecordBatch, StringArray,
    StructArray, TimestampMicrosecondArray, TimestampMillisecondArray, UInt32Array,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, Fields, Int32Type, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// How long one scan may run before the test declares it hung.
const SCAN_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// Data generation

/// `None` when the whole row is null or with probability `pct`%, else `Some(value(rng))`.
fn opt<T>(rng: &mut Rng, null_row: bool, pct: u64, value: impl FnOnce(&mut Rng) -> T) -> Option<T> {
    if null_row || rng.chance(pct) {
        None
    } else {
        Some(value(rng))
    }
}

fn float(rng: &mut Rng) -> f64 {
    match rng.below(25) {
        0 => f64::NAN,
        1 => f64::INFINITY,
        2 => f64::NEG_INFINITY,
        3 => -0.0,
        _ => (rng.next() as i64 >> 20) as f64 / 1024.0,
    }
}

const WORDS: &[&str] = &[
    "red", "green", "blue", "", "cyan", "magenta", "日本", "yellow",
];

/// One batch of `rows` rows of the full schema; `id` counts from `first_id`.
fn gen_batch(rng: &mut Rng, rows: usize, first_id: i64) -> RecordBatch {
    // Some rows are null in every nullable column.
    let nr: Vec<bool> = (0..rows).map(|_| rng.chance(3)).collect();

    let id = Int64Array::from_iter_values(first_id..first_id + rows as i64);
    let i8s: Int8Array = (0..rows)
        .map(|r| opt(rng, nr[r], 10, |g| g.next() as i8))
        .collect();
    let i16s: Int16Array = (0..rows)
        .map(|r| opt(rng, nr[r], 20, |g| g.next() as i16))
        .collect();
    let i32s: Int32Array = (0..rows)
        .map(|r| {
            opt(rng, nr[r], 5, |g| match g.below(10) {
                0 => i32::MIN,
                1 => i32::MAX,
                _ => g.next() as i32,
            })
        })
        .collect();
    let i64s: Int64Array = (0..rows)
        .map(|r| {
            opt(rng, nr[r], 10, |g| match g.below(10) {
                0 => i64::MIN,
                1 => i64::MAX,
                _ => g.next() as i64,
            })
        })
        .collect();
    let u32s: UInt32Array = (0..rows)
        .map(|r| opt(rng, nr[r], 10, |g| g.next() as u32))
        .collect();
    let f32s: Float32Array = (0..rows)
        .map(|r| opt(rng, nr[r], 10, |g| float(g) as f32))
        .collect();
    let f64s: Float64Array = (0..rows).map(|r| opt(rng, nr[r], 15, float)).collect();
    let dec9 = Decimal128Array::from(
        (0..rows)
            .map(|r| opt(rng, nr[r], 10, |g| (g.next() as i64 % 999_999_999) as i128))
            .collect::<Vec<_>>(),
    )
    .with_precision_and_scale(9, 2)
    .unwrap();
    let dec38 = Decimal128Array::from(
        (0..rows)
            .map(|r| {
                opt(rng, nr[r], 10, |g| {
                    // |a * b| < 2^63 * 2^63 < 10^38
                    (g.next() as i64 as i128) * ((g.next() >> 1) as i128)
                })
            })
            .collect::<Vec<_>>(),
    )
    .with_precision_and_scale(38, 10)
    .unwrap();
    let dates: Date32Array = (0..rows)
        .map(|r| opt(rng, nr[r], 10, |g| g.below(200_000) as i32 - 100_000))
        .collect();
    let millis: Vec<Option<i64>> = (0..rows)
        .map(|r| {
            opt(rng, nr[r], 10, |g| {
                g.below(8_000_000_000_000) as i64 - 4_000_000_000_000
            })
        })
        .collect();
    let micros: Vec<Option<i64>> = millis
        .iter()
        .map(|m| m.map(|m| m * 1000 + (m.rem_euclid(997))))
        .collect();
    let ts_ms = TimestampMillisecondArray::from(millis.clone());
    let ts_ms_tz = TimestampMillisecondArray::from(millis).with_timezone("UTC");
    let ts_us = TimestampMicrosecondArray::from(micros.clone());
    let ts_us_tz = TimestampMicrosecondArray::from(micros).with_timezone("+02:00");
    let dict: DictionaryArray<Int32Type> = (0..rows)
        .map(|r| {
            opt(rng, nr[r], 10, |g| {
                WORDS[g.below(WORDS.len() as u64) as usize]
            })
        })
        .collect();
    let strings: StringArray = (0..rows)
        .map(|r| {
            opt(rng, nr[r], 10, |g| {
                let long = g.chance(1);
                g.word(if long { 300 } else { 30 })
            })
        })
        .collect();
    let bools: BooleanArray = (0..rows)
        .map(|r| opt(rng, nr[r], 10, |g| g.chance(50)))
        .collect();
    let bins: BinaryArray = (0..rows)
        .map(|r| {
            opt(rng, nr[r], 10, |g| {
                (0..g.below(17))
                    .map(|_| g.next() as u8)
                    .collect::<Vec<u8>>()
            })
        })
        .collect();
    let mut lst = ListBuilder::new(Int32Builder::new());
    for &null_row in &nr {
        match (null_row, rng.below(10)) {
            (true, _) | (_, 0) => lst.append(false),
            (_, 1) => lst.append(true),
            _ => {
                for _ in 0..rng.between(1, 5) {
                    let v = opt(rng, false, 10, |g| g.below(10_000) as i32);
                    lst.values().append_option(v);
                }
                lst.append(true);
            }
        }
    }
    let lst = lst.finish();
    let st = {
        let x: Int64Array = (0..rows)
            .map(|r| opt(rng, nr[r], 10, |g| g.next() as i64 >> 8))
            .collect();
        let y: StringArray = (0..rows)
            .map(|r| opt(rng, nr[r], 10, |g| g.word(12)))
            .collect();
        let mut z = ListBuilder::new(Float64Builder::new());
        for &null_row in &nr {
            if null_row || rng.chance(10) {
                z.append(false);
            } else {
                for _ in 0..rng.below(4) {
                    let v = opt(rng, false, 10, float);
                    z.values().append_option(v);
                }
                z.append(true);
            }
        }
        let z = z.finish();
        let valid = NullBuffer::from_iter(nr.iter().map(|&n| !n && !rng.chance(10)));
        StructArray::new(
            Fields::from(vec![
                Field::new("x", x.data_type().clone(), true),
                Field::new("y", y.data_type().clone(), true),
                Field::new("z", z.data_type().clone(), true),
            ]),
            vec![Arc::new(x), Arc::new(y), Arc::new(z)],
            Some(valid),
        )
    };
    let all_null = Int32Array::from(vec![None; rows]);
    let nul = NullArray::new(rows);

    let columns: Vec<(&str, ArrayRef)> = vec![
        ("id", Arc::new(id)),
        ("i8", Arc::new(i8s)),
        ("i16", Arc::new(i16s)),
        ("i32", Arc::new(i32s)),
        ("i64", Arc::new(i64s)),
        ("u32", Arc::new(u32s)),
        ("f32", Arc::new(f32s)),
        ("f64", Arc::new(f64s)),
        ("dec9", Arc::new(dec9)),
        ("dec38", Arc::new(dec38)),
        ("date", Arc::new(dates)),
        ("ts_ms", Arc::new(ts_ms)),
        ("ts_ms_tz", Arc::new(ts_ms_tz)),
        ("ts_us", Arc::new(ts_us)),
        ("ts_us_tz", Arc::new(ts_us_tz)),
        ("dict", Arc::new(dict)),
        ("s", Arc::new(strings)),
        ("b", Arc::new(bools)),
        ("bin", Arc::new(bins)),
        ("lst", Arc::new(lst)),
        ("st", Arc::new(st)),
        ("all_null", Arc::new(all_null)),
        ("nul", Arc::new(nul)),
    ];
    let schema = Schema::new(
        columns
            .iter()
            .map(|(name, a)| Field::new(*name, a.data_type().clone(), *name != "id"))
            .collect::<Vec<_>>(),
    );
    RecordBatch::try_new(Arc::new(schema), columns.into_iter().map(|c| c.1).collect())
        .expect("generated batch")
}

/// A dataset written to a temporary directory.
struct Dataset {
    _dir: tempfile::TempDir,
    /// The data files in lexical order (the order rayquet reads a directory in).
    files: Vec<PathBuf>,
    /// What to scan: the directory (several files) or the file (one).
    input: String,
    /// Rows in the first row group of the first file.
    first_rg_rows: usize,
}

/// Write `n_files` files of `rgs` row groups (2_000-4_000 rows each) with `compression`.
/// Files are named so that lexical order differs from creation order, and the directory
/// also holds files that are not `*.parquet`.
fn write_dataset(n_files: usize, rgs: usize, compression: Compression, seed: u64) -> Dataset {
    const NAMES: [&str; 3] = ["part-2.parquet", "part-10.parquet", "part-9.parquet"];
    let dir = tempfile::tempdir().expect("tempdir");
    let mut rng = Rng(seed);
    let mut next_id = 0i64;
    let mut first_rg_rows = HashMap::new();
    for name in &NAMES[..n_files] {
        let path = dir.path().join(name);
        let props = WriterProperties::builder()
            .set_compression(compression)
            .set_max_row_group_row_count(None)
            .set_data_page_row_count_limit(1000)
            .build();
        let mut writer: Option<ArrowWriter<File>> = None;
        for rg in 0..rgs {
            let rows = rng.between(2_000, 4_000) as usize;
            if rg == 0 {
                first_rg_rows.insert(path.clone(), rows);
            }
            // Two writes per row group, then a flush ends it.
            let cut = rng.between(1, rows as u64 - 1) as usize;
            for part in [cut, rows - cut] {
                let batch = gen_batch(&mut rng, part, next_id);
                next_id += part as i64;
                let w = writer.get_or_insert_with(|| {
                    let file = File::create(&path).expect("create");
                    ArrowWriter::try_new(file, batch.schema(), Some(props.clone())).unwrap()
                });
                w.write(&batch).expect("write");
            }
            writer.as_mut().unwrap().flush().expect("flush");
        }
        let meta = writer.unwrap().close().expect("close");
        assert_eq!(meta.num_row_groups(), rgs, "{name}: row groups");
    }
    std::fs::write(dir.path().join("_SUCCESS"), b"").unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"not parquet").unwrap();

    let mut files: Vec<PathBuf> = NAMES[..n_files]
        .iter()
        .map(|n| dir.path().join(n))
        .collect();
    files.sort();
    let input = if n_files == 1 {
        files[0].to_str().unwrap().to_string()
    } else {
        dir.path().to_str().unwrap().to_string()
    };
    let first_rg_rows = first_rg_rows[&files[0]];
    Dataset {
        _dir: dir,
        files,
        input,
        first_rg_rows,
    }
}

// ---------------------------------------------------------------------------------------------
// Scanning and comparing

/// The scan options a check uses.
#[derive(Debug, Clone, Default)]
struct Opts {
    columns: Option<Vec<String>>,
    batch_size: usize,
    unordered: bool,
    limit: Option<usize>,
    memory_budget: Option<usize>,
    split_bytes: Option<usize>,
}

impl Opts {
    fn apply(self, mut scan: rayquet::Scan) -> rayquet::Scan {
        if let Some(columns) = self.columns {
            scan = scan.columns(columns);
        }
        scan = scan.batch_size(self.batch_size).ordered(!self.unordered);
        if let Some(n) = self.limit {
            scan = scan.limit(n);
        }
        if let Some(bytes) = self.memory_budget {
            scan = scan.memory_budget(bytes);
        }
        if let Some(bytes) = self.split_bytes {
            scan = scan.io_tuning(rayquet::IoTuning::default().split_bytes(bytes));
        }
        scan
    }
}

/// Scan `inputs` (in this order) with `opts` on a helper thread, so that a hang fails the
/// test; checks every batch against the reader's schema and the batch size. Returns the
/// schema and all rows in one batch.
fn scan(inputs: &[String], opts: &Opts, what: &str) -> (SchemaRef, RecordBatch) {
    let (inputs, thread_opts) = (inputs.to_vec(), opts.clone());
    let (schema, batches, metrics) = common::run_scan(what, SCAN_TIMEOUT, move || {
        thread_opts.apply(rayquet::Scan::from_urls(inputs)?).build()
    });
    common::check_batches(&schema, &batches, opts.batch_size, what);
    let split = opts.split_bytes == Some(1);
    common::check_metrics(&schema, &batches, &metrics, split, what);
    let all = common::concat(&schema, &batches);
    (schema, all)
}

/// The reference read of `files` in order, concatenated.
fn reference(files: &[PathBuf], columns: Option<&[&str]>) -> (SchemaRef, RecordBatch) {
    let mut schema = None;
    let mut batches = Vec::new();
    for f in files {
        let (s, b) = common::reference(f, columns, 4096).expect("reference read");
        schema.get_or_insert(s);
        batches.extend(b);
    }
    let schema = schema.unwrap();
    let all = common::concat(&schema, &batches);
    (schema, all)
}

fn assert_same(expected: &RecordBatch, actual: &RecordBatch, what: &str) {
    assert_eq!(
        actual.schema().fields(),
        expected.schema().fields(),
        "{what}: schema"
    );
    common::assert_same_rows(
        &expected.schema(),
        std::slice::from_ref(expected),
        std::slice::from_ref(actual),
        what,
    );
}

/// Rows of `batch` rendered, one string each. Timestamps lose their time zone first: the
/// formatter only knows offsets such as "+02:00" (no chrono-tz), not names such as "UTC".
fn render_rows(batch: &RecordBatch) -> Vec<String> {
    let (fields, columns): (Vec<Field>, Vec<ArrayRef>) = batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, c)| match f.data_type() {
            DataType::Timestamp(unit, Some(_)) => {
                let naive = DataType::Timestamp(*unit, None);
                let data = c.to_data().into_builder().data_type(naive.clone());
                let array = make_array(data.build().expect("timestamp without tz"));
                (f.as_ref().clone().with_data_type(naive), array)
            }
            _ => (f.as_ref().clone(), c.clone()),
        })
        .unzip();
    let naive = RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("naive batch");
    common::row_strings(&naive)
}

/// Rows of `batch` rendered and sorted: a multiset.
fn sorted_rows(batch: &RecordBatch) -> Vec<String> {
    let mut rows = render_rows(batch);
    rows.sort_unstable();
    rows
}

/// Assert that `actual`'s rows are a sub-multiset of `expected_counts` (rendered rows).
fn assert_sub_multiset(expected_counts: &HashMap<String, usize>, actual: &RecordBatch, what: &str) {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for row in render_rows(actual) {
        *counts.entry(row).or_default() += 1;
    }
    for (row, n) in counts {
        let available = expected_counts.get(&row).copied().unwrap_or(0);
        assert!(
            n <= available,
            "{what}: row {row:?} returned {n} times, the reference has it {available} times"
        );
    }
}

/// Run every check on one dataset of the matrix.
fn run_case(n_files: usize, rgs: usize, compression: Compression, seed: u64) {
    let ds = write_dataset(n_files, rgs, compression, seed);
    let input = std::slice::from_ref(&ds.input);
    let case = format!("{n_files} file(s) x {rgs} rg, {compression:?}");

    let (_, expected) = reference(&ds.files, None);
    let total = expected.num_rows();
    let expected_sorted = sorted_rows(&expected);
    let mut expected_counts: HashMap<String, usize> = HashMap::new();
    for row in &expected_sorted {
        *expected_counts.entry(row.clone()).or_default() += 1;
    }

    for batch_size in [1000, 8192] {
        let what = format!("{case}, batch_size {batch_size}");
        let base = Opts {
            batch_size,
            ..Opts::default()
        };

        // Ordered: exactly the reference.
        let (_, actual) = scan(input, &base, &format!("{what}, ordered"));
        assert_same(&expected, &actual, &format!("{what}, ordered"));

        // Unordered: the same multiset of rows.
        let unordered = Opts {
            unordered: true,
            ..base.clone()
        };
        let label = format!("{what}, unordered");
        let (schema, actual) = scan(input, &unordered, &label);
        assert_eq!(
            schema.fields(),
            expected.schema().fields(),
            "{label}: schema"
        );
        assert_eq!(actual.num_rows(), total, "{label}: row count");
        assert!(
            sorted_rows(&actual) == expected_sorted,
            "{label}: rows differ as a multiset"
        );

        // Projection out of file order, with a nested field: compared column by column.
        let columns = ["st.y", "i64", "lst", "dict"];
        let label = format!("{what}, columns {columns:?}");
        let (ref_schema, ref_projected) = reference(&ds.files, Some(&columns));
        let opts = Opts {
            columns: Some(columns.iter().map(|c| c.to_string()).collect()),
            ..base.clone()
        };
        let (schema, actual) = scan(input, &opts, &label);
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, ["st", "i64", "lst", "dict"], "{label}: column order");
        assert_eq!(actual.num_rows(), total, "{label}: row count");
        for name in names {
            assert_eq!(
                schema.field_with_name(name).unwrap(),
                ref_schema.field_with_name(name).unwrap(),
                "{label}: field {name}"
            );
            assert_eq!(
                actual.column_by_name(name).unwrap().to_data(),
                ref_projected.column_by_name(name).unwrap().to_data(),
                "{label}: column {name} differs"
            );
        }

        // Limits, ordered (a prefix of the reference) and unordered (a sub-multiset).
        let first = ds.first_rg_rows;
        for n in [0, 1, first - 1, first + 1, total + 5] {
            let want = n.min(total);
            let label = format!("{what}, limit {n}");
            let opts = Opts {
                limit: Some(n),
                ..base.clone()
            };
            let (_, actual) = scan(input, &opts, &label);
            assert_same(&expected.slice(0, want), &actual, &label);

            let label = format!("{what}, unordered, limit {n}");
            let opts = Opts {
                limit: Some(n),
                ..unordered.clone()
            };
            let (_, actual) = scan(input, &opts, &label);
            assert_eq!(actual.num_rows(), want, "{label}: row count");
            assert_sub_multiset(&expected_counts, &actual, &label);
        }

        // A tiny memory budget still completes, ordered and (with column splits) unordered.
        let label = format!("{what}, memory_budget(1)");
        let opts = Opts {
            memory_budget: Some(1),
            ..base.clone()
        };
        let (_, actual) = scan(input, &opts, &label);
        assert_same(&expected, &actual, &label);

        let label = format!("{what}, unordered, memory_budget(1), split_bytes(1)");
        let opts = Opts {
            memory_budget: Some(1),
            split_bytes: Some(1),
            ..unordered.clone()
        };
        let (_, actual) = scan(input, &opts, &label);
        assert_eq!(actual.num_rows(), total, "{label}: row count");
        assert!(
            sorted_rows(&actual) == expected_sorted,
            "{label}: rows differ as a multiset"
        );
    }

    // Several files given in reverse lexical order: read in the caller's order.
    if n_files > 1 {
        let reversed: Vec<PathBuf> = ds.files.iter().rev().cloned().collect();
        let inputs: Vec<String> = reversed
            .iter()
            .map(|p| p.to_str().unwrap().to_string())
            .collect();
        let (_, expected) = reference(&reversed, None);
        let label = format!("{case}, from_urls in reverse order");
        let opts = Opts {
            batch_size: 8192,
            ..Opts::default()
        };
        let (_, actual) = scan(&inputs, &opts, &label);
        assert_same(&expected, &actual, &label);
    }
}

/// The generator itself: batches survive a parquet round trip through the reference reader
/// (guards the fixtures, independently of rayquet).
#[test]
fn generated_data_round_trips() {
    let ds = write_dataset(1, 1, Compression::SNAPPY, 99);
    let mut rng = Rng(99);
    let rows = rng.between(2_000, 4_000) as usize;
    let cut = rng.between(1, rows as u64 - 1) as usize;
    let a = gen_batch(&mut rng, cut, 0);
    let b = gen_batch(&mut rng, rows - cut, cut as i64);
    let (schema, read) = reference(&ds.files, None);
    assert_eq!(schema.fields(), a.schema().fields());
    common::assert_same_rows(&a.schema(), &[a, b], &[read], "generated round trip");
}

macro_rules! matrix {
    ($($name:ident: $files:expr, $rgs:expr, $compression:expr, $seed:expr;)*) => {$(
        /// One cell of the matrix: ordered, unordered, projected, limited and tiny-budget
        /// reads equal the reference.
        #[test]
        fn $name() {
            run_case($files, $rgs, $compression, $seed);
        }
    )*};
}

matrix! {
    f1_rg1_none: 1, 1, Compression::UNCOMPRESSED, 1;
    f1_rg1_snappy: 1, 1, Compression::SNAPPY, 2;
    f1_rg1_zstd: 1, 1, Compression::ZSTD(ZstdLevel::default()), 3;
    f1_rg4_none: 1, 4, Compression::UNCOMPRESSED, 4;
    f1_rg4_snappy: 1, 4, Compression::SNAPPY, 5;
    f1_rg4_zstd: 1, 4, Compression::ZSTD(ZstdLevel::default()), 6;
    f3_rg1_none: 3, 1, Compression::UNCOMPRESSED, 7;
    f3_rg1_snappy: 3, 1, Compression::SNAPPY, 8;
    f3_rg1_zstd: 3, 1, Compression::ZSTD(ZstdLevel::default()), 9;
    f3_rg4_none: 3, 4, Compression::UNCOMPRESSED, 10;
    f3_rg4_snappy: 3, 4, Compression::SNAPPY, 11;
    f3_rg4_zstd: 3, 4, Compression::ZSTD(ZstdLevel::default()), 12;
}
