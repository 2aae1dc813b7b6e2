//! Files as other writers produce them: each is written here with parquet's own writers
//! (`ArrowWriter` with various `WriterProperties`, or the lower-level row group API), a sanity
//! check confirms the file really has the feature under test, and rayquet's read is compared
//! with parquet's sync reader (the reference) under several scan configurations.

use common::Rng;
use rayquet::ScanBuilder;
use rayquet_testkit as common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{
    Array, ArrayRef, BinaryArray, BooleanArray, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int32Array, Int32Builder, Int64Array, Int64Builder, ListArray,
    ListBuilder, MapBuilder, RecordBatch, StringArray, StringBuilder, StructArray,
};
use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowRowGroupWriterFactory};
use parquet::arrow::{add_encoded_arrow_schema_to_metadata, ArrowSchemaConverter, ArrowWriter};
use parquet::basic::{BrotliLevel, Compression, Encoding, GzipLevel, PageType, ZstdLevel};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;

/// How long one scan may run before the test declares it hung.
const SCAN_TIMEOUT: Duration = Duration::from_secs(60);

// ---------------------------------------------------------------------------------------------
// Scanning through rayquet and comparing with the reference

/// One way of configuring a rayquet scan.
#[derive(Debug, Clone, Copy)]
struct Config {
    name: &'static str,
    batch_size: Option<usize>,
    split_bytes: Option<usize>,
    /// Tiny footer hint and requests: the file is not fetched whole with its footer.
    small_requests: bool,
    /// memory_budget(1) and decode_ahead(1): as little buffering as the scan allows.
    tight: bool,
}

impl Config {
    const fn new(name: &'static str) -> Self {
        Config {
            name,
            batch_size: None,
            split_bytes: None,
            small_requests: false,
            tight: false,
        }
    }
    const fn batch(mut self, rows: usize) -> Self {
        self.batch_size = Some(rows);
        self
    }
    const fn split(mut self, bytes: usize) -> Self {
        self.split_bytes = Some(bytes);
        self
    }
    const fn small_requests(mut self) -> Self {
        self.small_requests = true;
        self
    }
    const fn tight(mut self) -> Self {
        self.tight = true;
        self
    }

    fn max_rows(&self) -> usize {
        self.batch_size.unwrap_or(8192)
    }

    fn apply(&self, mut scan: rayquet::Scan) -> rayquet::Scan {
        if let Some(rows) = self.batch_size {
            scan = scan.batch_size(rows);
        }
        let mut tuning = rayquet::IoTuning::default();
        if let Some(bytes) = self.split_bytes {
            tuning = tuning.split_bytes(bytes);
        }
        if self.small_requests {
            tuning = tuning
                .footer_size_hint(8)
                .coalesce_gap(0)
                .request_size(4096);
        }
        if self.tight {
            scan = scan.memory_budget(1);
            tuning = tuning.decode_ahead(1);
        }
        scan.io_tuning(tuning)
    }
}

/// Defaults, the column-split path, odd batch sizes and ranged fetches.
const ALL: &[Config] = &[
    Config::new("default"),
    Config::new("split_bytes(1)").split(1),
    Config::new("batch_size(1)").batch(1),
    Config::new("batch_size(7)").batch(7),
    Config::new("batch_size(1000)").batch(1000),
    Config::new("split_bytes(1)+batch_size(7)")
        .split(1)
        .batch(7),
    Config::new("small requests").small_requests(),
    Config::new("tight: budget 1, decode_ahead 1, split 1, batch 7")
        .tight()
        .split(1)
        .batch(7),
];

/// For large files: the default and the column-split path only.
const LARGE: &[Config] = &[
    Config::new("default"),
    Config::new("split_bytes(1)").split(1),
];

/// Scan `path` through rayquet with `config`, projecting `columns` when given.
fn scan(
    path: &Path,
    columns: Option<&[&str]>,
    config: Config,
    what: &str,
) -> (SchemaRef, Vec<RecordBatch>) {
    let path = path.to_str().expect("utf-8 path").to_string();
    let columns: Option<Vec<String>> = columns.map(|c| c.iter().map(|s| s.to_string()).collect());
    let (schema, batches, metrics) = common::run_scan(what, SCAN_TIMEOUT, move || {
        let mut scan = rayquet::Scan::new(path)?;
        if let Some(columns) = columns {
            scan = scan.columns(columns);
        }
        config.apply(scan).build()
    });
    common::check_metrics(
        &schema,
        &batches,
        &metrics,
        config.split_bytes == Some(1),
        what,
    );
    common::check_batches(&schema, &batches, config.max_rows(), what);
    (schema, batches)
}

/// Read `path` through the reference and through rayquet under every config, and assert the
/// same schema and the same rows in the same order.
fn check(path: &Path, columns: Option<&[&str]>, configs: &[Config], what: &str) {
    let (ref_schema, expected) = common::reference(path, columns, 1024).expect("reference read");
    for config in configs {
        let what = format!("{what} [{}]", config.name);
        let (schema, actual) = scan(path, columns, *config, &what);
        assert_eq!(schema.fields(), ref_schema.fields(), "{what}: schema");
        common::assert_same_rows(&ref_schema, &expected, &actual, &what);
    }
}

/// Like [`check`] for a projection whose output order may differ from the file order (the
/// reference returns file order): columns are matched by name, and rayquet's top-level
/// columns must come in `expected_order`.
fn check_projection(path: &Path, columns: &[&str], expected_order: &[&str], what: &str) {
    let (ref_schema, expected) =
        common::reference(path, Some(columns), 1024).expect("reference read");
    let expected = common::concat(&ref_schema, &expected);
    for config in ALL {
        let what = format!("{what} {columns:?} [{}]", config.name);
        let (schema, actual) = scan(path, Some(columns), *config, &what);
        let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
        assert_eq!(names, expected_order, "{what}: output column order");
        let actual = common::concat(&schema, &actual);
        assert_eq!(actual.num_rows(), expected.num_rows(), "{what}: row count");
        for name in expected_order {
            let e = expected.column_by_name(name).expect("reference column");
            let a = actual.column_by_name(name).expect("rayquet column");
            let ef = ref_schema.field_with_name(name).expect("reference field");
            let af = schema.field_with_name(name).expect("rayquet field");
            assert_eq!(af, ef, "{what}: field {name}");
            assert_eq!(a.to_data(), e.to_data(), "{what}: column {name} differs");
        }
    }
}

/// Unordered read: the same rows as the reference, as a multiset.
fn check_unordered(path: &Path, what: &str) {
    let (ref_schema, expected) = common::reference(path, None, 1024).expect("reference read");
    let mut expected = common::row_strings(&common::concat(&ref_schema, &expected));
    expected.sort_unstable();
    for config in [
        Config::new("default"),
        Config::new("split_bytes(1)").split(1),
    ] {
        let path = path.to_str().unwrap().to_string();
        let what = format!("{what} [unordered, {}]", config.name);
        let (schema, actual, metrics) = common::run_scan(&what, SCAN_TIMEOUT, move || {
            config
                .apply(rayquet::Scan::new(path)?.ordered(false))
                .build()
        });
        common::check_metrics(
            &schema,
            &actual,
            &metrics,
            config.split_bytes == Some(1),
            &what,
        );
        let mut actual = common::row_strings(&common::concat(&schema, &actual));
        actual.sort_unstable();
        assert_eq!(actual.len(), expected.len(), "{what}: row count");
        assert!(actual == expected, "{what}: rows differ as a multiset");
    }
}

// ---------------------------------------------------------------------------------------------
// Writing files

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// Write `batches` (of `schema`) to `path` with `ArrowWriter` and `props`.
fn write(
    path: &Path,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    props: WriterProperties,
) -> ParquetMetaData {
    let file = File::create(path).expect("create");
    let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).expect("writer");
    for batch in batches {
        writer.write(batch).expect("write");
    }
    writer.close().expect("close")
}

/// `(page type, encoding)` of every page of column `col` in row group `rg`.
fn page_kinds(path: &Path, rg: usize, col: usize) -> Vec<(PageType, Encoding)> {
    let reader = SerializedFileReader::new(File::open(path).unwrap()).unwrap();
    let pages = reader
        .get_row_group(rg)
        .unwrap()
        .get_column_page_reader(col)
        .unwrap();
    pages
        .map(|p| {
            let p = p.unwrap();
            (p.page_type(), p.encoding())
        })
        .collect()
}

/// A batch with a mix of flat and nested, nullable columns; `id` counts from `first_id`.
fn mixed_batch(rng: &mut Rng, rows: usize, first_id: i64) -> RecordBatch {
    let id = Int64Array::from_iter_values(first_id..first_id + rows as i64);
    let int: Int32Array = (0..rows)
        .map(|_| (!rng.chance(10)).then(|| rng.next() as i32))
        .collect();
    let float: Float64Array = (0..rows)
        .map(|_| match rng.below(20) {
            0 => None,
            1 => Some(f64::NAN),
            _ => Some((rng.next() % 1_000_000) as f64 / 7.0),
        })
        .collect();
    let text: StringArray = (0..rows)
        .map(|_| (!rng.chance(10)).then(|| rng.word(24)))
        .collect();
    let flag: BooleanArray = (0..rows)
        .map(|_| (!rng.chance(10)).then(|| rng.chance(50)))
        .collect();
    let mut list = ListBuilder::new(Int32Builder::new());
    for _ in 0..rows {
        if rng.chance(10) {
            list.append(false);
            continue;
        }
        for _ in 0..rng.below(5) {
            let v = (!rng.chance(10)).then(|| rng.below(1000) as i32);
            list.values().append_option(v);
        }
        list.append(true);
    }
    let columns: Vec<ArrayRef> = vec![
        Arc::new(id),
        Arc::new(int),
        Arc::new(float),
        Arc::new(text),
        Arc::new(flag),
        Arc::new(list.finish()),
    ];
    let fields: Vec<Field> = ["id", "int", "float", "text", "flag", "list"]
        .iter()
        .zip(&columns)
        .map(|(name, c)| Field::new(*name, c.data_type().clone(), *name != "id"))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("mixed batch")
}

/// `total` rows of [`mixed_batch`] in batches of `chunk` rows.
fn mixed_batches(seed: u64, total: usize, chunk: usize) -> (SchemaRef, Vec<RecordBatch>) {
    let mut rng = Rng(seed);
    let batches: Vec<RecordBatch> = (0..total)
        .step_by(chunk)
        .map(|start| mixed_batch(&mut rng, chunk.min(total - start), start as i64))
        .collect();
    (batches[0].schema(), batches)
}

fn props() -> parquet::file::properties::WriterPropertiesBuilder {
    WriterProperties::builder()
}

// ---------------------------------------------------------------------------------------------
// The tests

/// Data page v2 (levels outside the compressed block), with and without compression and
/// dictionary, several pages per column chunk.
#[test]
fn data_page_v2() {
    let dir = tmp();
    let (schema, batches) = mixed_batches(1, 5000, 1000);
    for (name, compression, dictionary) in [
        ("v2-plain-dict", Compression::UNCOMPRESSED, true),
        ("v2-snappy-nodict", Compression::SNAPPY, false),
        (
            "v2-zstd-dict",
            Compression::ZSTD(ZstdLevel::default()),
            true,
        ),
    ] {
        let path = dir.path().join(format!("{name}.parquet"));
        let p = props()
            .set_writer_version(WriterVersion::PARQUET_2_0)
            .set_compression(compression)
            .set_dictionary_enabled(dictionary)
            .set_data_page_row_count_limit(300)
            .set_write_batch_size(100)
            .set_max_row_group_row_count(Some(2000))
            .build();
        let meta = write(&path, &schema, &batches, p);
        assert_eq!(meta.num_row_groups(), 3);
        for col in 0..schema.fields().len() {
            let kinds = page_kinds(&path, 0, col);
            let data: Vec<_> = kinds
                .iter()
                .filter(|(t, _)| *t != PageType::DICTIONARY_PAGE)
                .collect();
            assert!(data.len() > 1, "{name}: column {col} has one data page");
            assert!(
                data.iter().all(|(t, _)| *t == PageType::DATA_PAGE_V2),
                "{name}: column {col} pages {kinds:?}"
            );
        }
        check(&path, None, ALL, name);
    }
}

/// Dictionary encoding that overflows its (tiny) dictionary page limit and falls back to a
/// non-dictionary encoding mid column chunk, for data page v1 and v2.
#[test]
fn dictionary_fallback() {
    let dir = tmp();
    let rows = 6000;
    let mut rng = Rng(2);
    let unique: StringArray = (0..rows)
        .map(|i| (!rng.chance(5)).then(|| format!("value-{i}-{}", rng.word(12))))
        .collect();
    let big_int: Int64Array = (0..rows)
        .map(|_| (!rng.chance(5)).then(|| rng.next() as i64))
        .collect();
    let low_card: StringArray = (0..rows)
        .map(|_| (!rng.chance(5)).then(|| format!("cat-{}", rng.below(8))))
        .collect();
    let schema = Arc::new(Schema::new(vec![
        Field::new("unique", DataType::Utf8, true),
        Field::new("big_int", DataType::Int64, true),
        Field::new("low_card", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(unique), Arc::new(big_int), Arc::new(low_card)],
    )
    .unwrap();
    for (name, version) in [
        ("fallback-v1", WriterVersion::PARQUET_1_0),
        ("fallback-v2", WriterVersion::PARQUET_2_0),
    ] {
        let path = dir.path().join(format!("{name}.parquet"));
        let p = props()
            .set_writer_version(version)
            .set_dictionary_page_size_limit(512)
            .set_write_batch_size(32)
            .set_data_page_row_count_limit(64)
            .set_max_row_group_row_count(Some(4000))
            .build();
        write(&path, &schema, std::slice::from_ref(&batch), p);
        for col in [0, 1] {
            let kinds = page_kinds(&path, 0, col);
            let dict_pages = kinds
                .iter()
                .filter(|(t, e)| *t != PageType::DICTIONARY_PAGE && *e == Encoding::RLE_DICTIONARY)
                .count();
            let other_pages = kinds
                .iter()
                .filter(|(t, e)| {
                    *t != PageType::DICTIONARY_PAGE
                        && *e != Encoding::RLE_DICTIONARY
                        && *e != Encoding::PLAIN_DICTIONARY
                })
                .count();
            assert!(
                dict_pages > 0 && other_pages > 0,
                "{name}: column {col} did not fall back mid chunk: {kinds:?}"
            );
        }
        check(&path, None, ALL, name);
    }
}

/// BYTE_STREAM_SPLIT (floats, doubles, ints, fixed-length binary, decimals) and the delta
/// encodings (DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY), no dictionary.
#[test]
fn byte_stream_split_and_delta_encodings() {
    let dir = tmp();
    let rows = 5000;
    let mut rng = Rng(3);
    fn extreme_i32(rng: &mut Rng) -> i32 {
        match rng.below(10) {
            0 => i32::MIN,
            1 => i32::MAX,
            2 => 0,
            _ => rng.next() as i32,
        }
    }
    let f32s: Float32Array = (0..rows)
        .map(|_| match rng.below(20) {
            0 => None,
            1 => Some(f32::NAN),
            2 => Some(f32::INFINITY),
            3 => Some(-0.0),
            _ => Some(rng.next() as i32 as f32 / 3.0),
        })
        .collect();
    let f64s: Float64Array = (0..rows)
        .map(|_| (!rng.chance(5)).then(|| f64::from_bits(rng.next() >> 2)))
        .collect();
    let i32s: Int32Array = (0..rows)
        .map(|_| (!rng.chance(5)).then(|| extreme_i32(&mut rng)))
        .collect();
    let i64s: Int64Array = (0..rows)
        .map(|_| (!rng.chance(5)).then(|| rng.next() as i64))
        .collect();
    let fixed = FixedSizeBinaryArray::try_from_sparse_iter_with_size(
        (0..rows).map(|_| (!rng.chance(5)).then(|| rng.next().to_le_bytes()[..5].to_vec())),
        5,
    )
    .unwrap();
    let decimals = Decimal128Array::from(
        (0..rows)
            .map(|_| {
                (!rng.chance(5))
                    .then(|| (rng.next() as i128).wrapping_mul(rng.next() as i128) % 10i128.pow(30))
            })
            .collect::<Vec<_>>(),
    )
    .with_precision_and_scale(30, 4)
    .unwrap();
    let delta_i32: Int32Array = (0..rows)
        .map(|_| (!rng.chance(5)).then(|| extreme_i32(&mut rng)))
        .collect();
    let mut acc = 0i64;
    let delta_i64: Int64Array = (0..rows)
        .map(|_| {
            acc = acc.wrapping_add(match rng.below(50) {
                0 => i64::MAX,
                1 => i64::MIN,
                _ => rng.below(100) as i64,
            });
            (!rng.chance(5)).then_some(acc)
        })
        .collect();
    let dlba: StringArray = (0..rows)
        .map(|_| (!rng.chance(5)).then(|| rng.word(40)))
        .collect();
    // Shared prefixes, as DELTA_BYTE_ARRAY is meant for.
    let mut prefix = String::new();
    let dba: StringArray = (0..rows)
        .map(|i| {
            if i % 17 == 0 {
                prefix = rng.word(10);
            }
            (!rng.chance(5)).then(|| format!("{prefix}{}", rng.word(6)))
        })
        .collect();
    let dba_bin: BinaryArray = (0..rows)
        .map(|i| {
            (!rng.chance(5)).then(|| {
                let mut v = (i as u32 / 10).to_be_bytes().to_vec();
                v.extend((0..rng.below(8)).map(|_| rng.next() as u8));
                v
            })
        })
        .collect();

    let columns: Vec<(&str, ArrayRef, Encoding)> = vec![
        ("f32_bss", Arc::new(f32s), Encoding::BYTE_STREAM_SPLIT),
        ("f64_bss", Arc::new(f64s), Encoding::BYTE_STREAM_SPLIT),
        ("i32_bss", Arc::new(i32s), Encoding::BYTE_STREAM_SPLIT),
        ("i64_bss", Arc::new(i64s), Encoding::BYTE_STREAM_SPLIT),
        ("fixed_bss", Arc::new(fixed), Encoding::BYTE_STREAM_SPLIT),
        ("dec_bss", Arc::new(decimals), Encoding::BYTE_STREAM_SPLIT),
        (
            "i32_delta",
            Arc::new(delta_i32),
            Encoding::DELTA_BINARY_PACKED,
        ),
        (
            "i64_delta",
            Arc::new(delta_i64),
            Encoding::DELTA_BINARY_PACKED,
        ),
        ("s_dlba", Arc::new(dlba), Encoding::DELTA_LENGTH_BYTE_ARRAY),
        ("s_dba", Arc::new(dba), Encoding::DELTA_BYTE_ARRAY),
        ("b_dba", Arc::new(dba_bin), Encoding::DELTA_BYTE_ARRAY),
    ];
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|(n, a, _)| Field::new(*n, a.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ));
    let batch = RecordBatch::try_new(
        schema.clone(),
        columns.iter().map(|c| c.1.clone()).collect(),
    )
    .unwrap();
    for (name, version) in [
        ("encodings-v1", WriterVersion::PARQUET_1_0),
        ("encodings-v2", WriterVersion::PARQUET_2_0),
    ] {
        let path = dir.path().join(format!("{name}.parquet"));
        let mut p = props()
            .set_writer_version(version)
            .set_dictionary_enabled(false)
            .set_data_page_row_count_limit(700)
            .set_write_batch_size(100)
            .set_max_row_group_row_count(Some(3000));
        for (col, _, encoding) in &columns {
            p = p.set_column_encoding(ColumnPath::from(*col), *encoding);
        }
        let meta = write(&path, &schema, std::slice::from_ref(&batch), p.build());
        for (i, (col, _, encoding)) in columns.iter().enumerate() {
            let chunk = meta.row_group(0).column(i);
            let encodings: Vec<Encoding> = chunk.encodings().collect();
            assert!(
                encodings.contains(encoding),
                "{name}: column {col} encodings {encodings:?}"
            );
            assert!(page_kinds(&path, 0, i).len() > 1, "{name}: {col} one page");
        }
        check(&path, None, ALL, name);
    }
}

/// Tiny pages (about 10 rows each, small write batches) with page-level statistics, a column
/// index and an offset index.
#[test]
fn tiny_pages_with_page_index() {
    let dir = tmp();
    let path = dir.path().join("tiny-pages.parquet");
    let (schema, batches) = mixed_batches(4, 4000, 1000);
    let p = props()
        .set_data_page_row_count_limit(10)
        .set_write_batch_size(5)
        .set_statistics_enabled(EnabledStatistics::Page)
        .set_max_row_group_row_count(Some(1500))
        .build();
    let meta = write(&path, &schema, &batches, p);
    assert_eq!(meta.num_row_groups(), 3);
    for rg in meta.row_groups() {
        for chunk in rg.columns() {
            assert!(chunk.offset_index_offset().is_some(), "no offset index");
            assert!(chunk.column_index_offset().is_some(), "no column index");
        }
    }
    assert!(page_kinds(&path, 0, 0).len() >= 150, "pages are not tiny");
    check(&path, None, ALL, "tiny pages");
    check(
        &path,
        Some(&["float", "list"]),
        ALL,
        "tiny pages, projected",
    );
}

/// One row group of 1.5 M rows and several columns, read with the default (one unit or
/// several parts, depending on its size) and with split_bytes(1) (one part per column).
#[test]
fn one_huge_row_group() {
    let dir = tmp();
    let path = dir.path().join("huge.parquet");
    let rows = 1_500_000usize;
    let chunk = 100_000usize;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("k", DataType::Int32, true),
        Field::new("cat", DataType::Utf8, true),
        Field::new("flag", DataType::Boolean, false),
    ]));
    let mut rng = Rng(5);
    let batches: Vec<RecordBatch> = (0..rows)
        .step_by(chunk)
        .map(|start| {
            let ids = Int64Array::from_iter_values(start as i64..(start + chunk) as i64);
            let x: Float64Array = (0..chunk)
                .map(|_| (!rng.chance(3)).then(|| rng.below(1 << 40) as f64 / 1e3))
                .collect();
            let k: Int32Array = (0..chunk)
                .map(|_| (!rng.chance(10)).then(|| rng.next() as i32))
                .collect();
            let cat: StringArray = (0..chunk)
                .map(|_| (!rng.chance(2)).then(|| format!("category-{}", rng.below(100))))
                .collect();
            let flag: BooleanArray = (0..chunk).map(|_| Some(rng.chance(30))).collect();
            RecordBatch::try_new(
                schema.clone(),
                vec![
                    Arc::new(ids),
                    Arc::new(x),
                    Arc::new(k),
                    Arc::new(cat),
                    Arc::new(flag),
                ],
            )
            .unwrap()
        })
        .collect();
    let p = props()
        .set_max_row_group_row_count(None)
        .set_compression(Compression::SNAPPY)
        .build();
    let meta = write(&path, &schema, &batches, p);
    drop(batches);
    assert_eq!(meta.num_row_groups(), 1);
    assert_eq!(meta.row_group(0).num_rows(), rows as i64);
    check(&path, None, LARGE, "huge row group");
    check(
        &path,
        Some(&["k", "cat"]),
        LARGE,
        "huge row group, projected",
    );
}

/// A file with a schema and no row groups: the reference schema and zero rows.
#[test]
fn zero_row_file() {
    let dir = tmp();
    let path = dir.path().join("empty.parquet");
    let (schema, _) = mixed_batches(6, 1, 1);
    let meta = write(&path, &schema, &[], props().build());
    assert_eq!(meta.num_row_groups(), 0);
    assert_eq!(meta.file_metadata().num_rows(), 0);
    check(&path, None, ALL, "zero-row file");
    check(
        &path,
        Some(&["text", "list"]),
        ALL,
        "zero-row file, projected",
    );
}

/// Row groups of 100, 0 and 100 rows, written with the lower-level row group API (the
/// `ArrowWriter` never writes an empty row group).
#[test]
fn empty_row_group_between_others() {
    let dir = tmp();
    let path = dir.path().join("empty-rg.parquet");
    let (schema, batches) = mixed_batches(7, 200, 100);
    let mut p = props().build();
    add_encoded_arrow_schema_to_metadata(&schema, &mut p);
    let p = Arc::new(p);
    let parquet_schema = ArrowSchemaConverter::new().convert(&schema).unwrap();
    let file = File::create(&path).unwrap();
    let mut writer =
        SerializedFileWriter::new(file, parquet_schema.root_schema_ptr(), p.clone()).unwrap();
    let factory = ArrowRowGroupWriterFactory::new(&writer, schema.clone());
    for (rg, batch) in [Some(&batches[0]), None, Some(&batches[1])]
        .into_iter()
        .enumerate()
    {
        let mut columns = factory.create_column_writers(rg).unwrap();
        if let Some(batch) = batch {
            let mut leaves = columns.iter_mut();
            for (array, field) in batch.columns().iter().zip(schema.fields()) {
                for leaf in compute_leaves(field, array).unwrap() {
                    leaves.next().unwrap().write(&leaf).unwrap();
                }
            }
        }
        let mut rg_writer = writer.next_row_group().unwrap();
        for column in columns {
            column
                .close()
                .unwrap()
                .append_to_row_group(&mut rg_writer)
                .unwrap();
        }
        rg_writer.close().unwrap();
    }
    let meta = writer.close().unwrap();
    let rows: Vec<i64> = meta.row_groups().iter().map(|rg| rg.num_rows()).collect();
    assert_eq!(rows, [100, 0, 100]);
    check(&path, None, ALL, "empty row group");
}

/// A file of a single row.
#[test]
fn one_row_file() {
    let dir = tmp();
    let path = dir.path().join("one.parquet");
    let (schema, batches) = mixed_batches(8, 1, 1);
    write(&path, &schema, &batches, props().build());
    check(&path, None, ALL, "one-row file");
    check_projection(&path, &["list", "id"], &["list", "id"], "one-row file");
}

/// `list<struct<nums: list<int32>, label: utf8>>` with nulls and empties at every level,
/// over several small pages and two row groups, data page v1 and v2.
#[test]
fn deep_nesting() {
    let dir = tmp();
    let rows = 3000;
    let mut rng = Rng(9);
    let (mut outer_offsets, mut outer_valid) = (vec![0i32], Vec::new());
    let mut struct_valid = Vec::new();
    let (mut inner_offsets, mut inner_valid) = (vec![0i32], Vec::new());
    let mut ints: Vec<Option<i32>> = Vec::new();
    let mut labels: Vec<Option<String>> = Vec::new();
    for _ in 0..rows {
        if rng.chance(10) {
            outer_valid.push(false);
            outer_offsets.push(struct_valid.len() as i32);
            continue;
        }
        outer_valid.push(true);
        for _ in 0..rng.below(4) {
            struct_valid.push(!rng.chance(15));
            if rng.chance(15) {
                inner_valid.push(false);
            } else {
                inner_valid.push(true);
                for _ in 0..rng.below(4) {
                    ints.push((!rng.chance(15)).then(|| rng.next() as i32));
                }
            }
            inner_offsets.push(ints.len() as i32);
            labels.push((!rng.chance(20)).then(|| rng.word(8)));
        }
        outer_offsets.push(struct_valid.len() as i32);
    }
    let inner = ListArray::new(
        Arc::new(Field::new("item", DataType::Int32, true)),
        OffsetBuffer::new(ScalarBuffer::from(inner_offsets)),
        Arc::new(Int32Array::from(ints)),
        Some(NullBuffer::from(inner_valid)),
    );
    let element = StructArray::new(
        Fields::from(vec![
            Field::new("nums", inner.data_type().clone(), true),
            Field::new("label", DataType::Utf8, true),
        ]),
        vec![Arc::new(inner), Arc::new(StringArray::from(labels))],
        Some(NullBuffer::from(struct_valid)),
    );
    let outer = ListArray::new(
        Arc::new(Field::new("item", element.data_type().clone(), true)),
        OffsetBuffer::new(ScalarBuffer::from(outer_offsets)),
        Arc::new(element),
        Some(NullBuffer::from(outer_valid)),
    );
    let ids = Int64Array::from_iter_values(0..rows as i64);
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("deep", outer.data_type().clone(), true),
    ]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(outer)]).unwrap();
    for (name, version) in [
        ("deep-v1", WriterVersion::PARQUET_1_0),
        ("deep-v2", WriterVersion::PARQUET_2_0),
    ] {
        let path = dir.path().join(format!("{name}.parquet"));
        let p = props()
            .set_writer_version(version)
            .set_data_page_row_count_limit(50)
            .set_write_batch_size(16)
            .set_max_row_group_row_count(Some(1500))
            .build();
        write(&path, &schema, std::slice::from_ref(&batch), p);
        assert!(page_kinds(&path, 0, 1).len() > 5, "{name}: too few pages");
        check(&path, None, ALL, name);
        check(&path, Some(&["deep"]), ALL, &format!("{name}, projected"));
    }
}

/// `map<utf8, int64>` with null maps, empty maps and null values.
#[test]
fn maps() {
    let dir = tmp();
    let path = dir.path().join("maps.parquet");
    let rows = 4000;
    let mut rng = Rng(10);
    let mut builder = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
    for _ in 0..rows {
        match rng.below(10) {
            0 => builder.append(false).unwrap(),
            1 | 2 => builder.append(true).unwrap(),
            _ => {
                for k in 0..1 + rng.below(5) {
                    builder
                        .keys()
                        .append_value(format!("k{k}-{}", rng.below(3)));
                    let v = (!rng.chance(20)).then(|| rng.next() as i64);
                    builder.values().append_option(v);
                }
                builder.append(true).unwrap();
            }
        }
    }
    let map = builder.finish();
    let ids = Int64Array::from_iter_values(0..rows as i64);
    let schema = Arc::new(Schema::new(vec![
        Field::new("m", map.data_type().clone(), true),
        Field::new("id", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(map), Arc::new(ids)]).unwrap();
    let p = props()
        .set_data_page_row_count_limit(100)
        .set_write_batch_size(32)
        .set_max_row_group_row_count(Some(1500))
        .build();
    write(&path, &schema, &[batch], p);
    check(&path, None, ALL, "maps");
    check(&path, Some(&["m"]), ALL, "maps, projected");
}

/// A struct read through nested projections (`s.b`, `s.c.d`, two fields of one struct) and
/// a projection naming top-level columns out of file order.
#[test]
fn struct_nested_projection() {
    let dir = tmp();
    let path = dir.path().join("struct.parquet");
    let rows = 3000;
    let mut rng = Rng(11);
    let a: Int32Array = (0..rows)
        .map(|_| (!rng.chance(10)).then(|| rng.next() as i32))
        .collect();
    let b: StringArray = (0..rows)
        .map(|_| (!rng.chance(10)).then(|| rng.word(10)))
        .collect();
    let d: Float64Array = (0..rows)
        .map(|_| (!rng.chance(10)).then(|| rng.below(1000) as f64 / 8.0))
        .collect();
    let e: StringArray = (0..rows)
        .map(|_| (!rng.chance(10)).then(|| rng.word(5)))
        .collect();
    let c = StructArray::new(
        Fields::from(vec![
            Field::new("d", DataType::Float64, true),
            Field::new("e", DataType::Utf8, true),
        ]),
        vec![Arc::new(d), Arc::new(e)],
        Some(NullBuffer::from_iter((0..rows).map(|_| !rng.chance(10)))),
    );
    let s = StructArray::new(
        Fields::from(vec![
            Field::new("a", DataType::Int32, true),
            Field::new("b", DataType::Utf8, true),
            Field::new("c", c.data_type().clone(), true),
        ]),
        vec![Arc::new(a), Arc::new(b), Arc::new(c)],
        Some(NullBuffer::from_iter((0..rows).map(|_| !rng.chance(10)))),
    );
    let t: StringArray = (0..rows)
        .map(|_| (!rng.chance(10)).then(|| rng.word(6)))
        .collect();
    let ids = Int64Array::from_iter_values(0..rows as i64);
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", s.data_type().clone(), true),
        Field::new("t", DataType::Utf8, true),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(ids), Arc::new(s), Arc::new(t)],
    )
    .unwrap();
    let p = props()
        .set_data_page_row_count_limit(200)
        .set_max_row_group_row_count(Some(1000))
        .build();
    write(&path, &schema, &[batch], p);
    check(&path, Some(&["s.b"]), ALL, "struct s.b");
    check(&path, Some(&["s.c.d"]), ALL, "struct s.c.d");
    check(&path, Some(&["s.b", "s.c.e"]), ALL, "struct s.b + s.c.e");
    check(&path, Some(&["s.b", "t"]), ALL, "struct s.b + t");
    check_projection(&path, &["t", "s.b"], &["t", "s"], "out of file order");
    check_projection(
        &path,
        &["t", "id", "s.c"],
        &["t", "id", "s"],
        "out of file order",
    );
}

/// 60 small row groups (50 rows each), ordered and unordered.
#[test]
fn many_small_row_groups() {
    let dir = tmp();
    let path = dir.path().join("many-rg.parquet");
    let (schema, batches) = mixed_batches(12, 3000, 700);
    let p = props().set_max_row_group_row_count(Some(50)).build();
    let meta = write(&path, &schema, &batches, p);
    assert_eq!(meta.num_row_groups(), 60);
    check(&path, None, ALL, "many row groups");
    check(
        &path,
        Some(&["text", "flag"]),
        ALL,
        "many row groups, projected",
    );
    check_unordered(&path, "many row groups");
}

/// Every compression codec the writer offers besides LZO and the deprecated LZ4 framing.
#[test]
fn all_compressions() {
    let dir = tmp();
    let (schema, batches) = mixed_batches(13, 4000, 1000);
    for compression in [
        Compression::UNCOMPRESSED,
        Compression::SNAPPY,
        Compression::GZIP(GzipLevel::default()),
        Compression::LZ4_RAW,
        Compression::ZSTD(ZstdLevel::default()),
        Compression::BROTLI(BrotliLevel::default()),
    ] {
        let name = format!("{compression:?}");
        let path: PathBuf = dir.path().join(format!("{name}.parquet"));
        let p = props()
            .set_compression(compression)
            .set_max_row_group_row_count(Some(2500))
            .set_data_page_row_count_limit(500)
            .build();
        let meta = write(&path, &schema, &batches, p);
        for rg in meta.row_groups() {
            for chunk in rg.columns() {
                assert_eq!(chunk.compression(), compression, "{name}: chunk codec");
            }
        }
        check(&path, None, ALL, &name);
    }
}

/// The data written really is what the files hold (guards the fixtures themselves: parquet's
/// reader returns what `mixed_batches` produced).
#[test]
fn fixtures_round_trip() {
    let dir = tmp();
    let path = dir.path().join("rt.parquet");
    let (schema, batches) = mixed_batches(14, 2500, 1000);
    write(&path, &schema, &batches, props().build());
    let (ref_schema, read) = common::reference(&path, None, 1024).unwrap();
    assert_eq!(ref_schema.fields(), schema.fields());
    common::assert_same_rows(&schema, &batches, &read, "fixture round trip");
}
