//! The direct reader against parquet's own reader over the same bytes and selections: the
//! parquet-testing files, files written here with every type it reads (nullable and required,
//! dictionary and plain pages, v1 and v2 pages, several codecs), the lineitem-like data of
//! `rayquet-gen`, and corrupted copies of them.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BinaryViewArray, Date32Array, Decimal128Array, Float32Array,
    Float64Array, Int32Array, Int64Array, LargeStringArray, RecordBatch, StringArray,
    StringViewArray, TimestampMicrosecondArray, UInt32Array, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
    RowSelectionPolicy, RowSelector,
};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::Compression;
use parquet::errors::ParquetError;
use parquet::file::properties::{WriterProperties, WriterVersion};

use super::*;

use crate::decode::dispatch::{self, Kernels};
use crate::decode::testing::{alternating, checked_row_groups, flip_bits, DATA};

/// What one comparison found.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    /// Row groups read by the direct reader to the end, without parquet taking over.
    direct: usize,
    /// Row groups where parquet's reader took over part-way.
    fell_back: usize,
    /// Row groups the direct reader declined (a leaf it does not read).
    declined: usize,
    /// Corrupt row groups that only the direct reader read (parquet failed both ways).
    only_direct: usize,
    /// Corrupt row groups that only parquet read.
    only_parquet: usize,
    /// Row groups both readers refused.
    both_failed: usize,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.direct += o.direct;
        self.fell_back += o.fell_back;
        self.declined += o.declined;
        self.only_direct += o.only_direct;
        self.only_parquet += o.only_parquet;
        self.both_failed += o.both_failed;
    }
}

/// Every row group of `bytes`, the flat leaves of `pick` (all flat leaves when `None`), read by
/// parquet's builder and by the direct reader with `selection(rows)`, in batches of `batch`:
/// the same batches (schema included), or both an error.
fn compare(
    name: &str,
    bytes: &Bytes,
    pick: Option<&[usize]>,
    selection: &dyn Fn(usize) -> RowSelection,
    batch: usize,
    page_level: bool,
    strict: bool,
) -> Tally {
    let opts = ArrowReaderOptions::new()
        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Optional);
    compare_with(
        name,
        bytes,
        opts,
        (pick, Some(selection)),
        batch,
        page_level,
        strict,
    )
}

/// [`compare`] of whole row groups (no selection: the direct reader reads every row of the
/// columns [`whole`] allows, parquet's reader reads them all), under `kernels`.
fn compare_whole(
    name: &str,
    bytes: &Bytes,
    pick: Option<&[usize]>,
    batch: usize,
    strict: bool,
    kernels: Kernels,
) -> Tally {
    let opts = ArrowReaderOptions::new()
        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Optional);
    dispatch::on_thread(kernels, || {
        compare_with(name, bytes, opts, (pick, None), batch, false, strict)
    })
}

/// A selection of a row group's rows, given its row count (borrowed).
type SelectFn<'a> = dyn Fn(usize) -> RowSelection + 'a;

/// [`compare`] with the file's metadata loaded with `opts`; `selection` `None`: every row.
fn compare_with(
    name: &str,
    bytes: &Bytes,
    opts: ArrowReaderOptions,
    (pick, selection): (Option<&[usize]>, Option<&SelectFn<'_>>),
    batch: usize,
    page_level: bool,
    strict: bool,
) -> Tally {
    let mut tally = Tally::default();
    // parquet's own load panics on some corrupted `ARROW:schema` hints (in arrow-ipc), which
    // rayquet's pipeline refuses before it (`validate::ipc`): such inputs are not compared.
    let load = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        ArrowReaderMetadata::load(bytes, opts.clone())
    }));
    let Ok(Ok(meta)) = load else {
        return tally;
    };
    let md = Arc::clone(meta.metadata());
    let descr = meta.parquet_schema();
    let leaves: Vec<usize> = match pick {
        Some(p) => p.to_vec(),
        None => (0..descr.num_columns())
            .filter(|&l| flat(descr.column(l).as_ref()))
            .collect(),
    };
    if leaves.is_empty() {
        return tally;
    }
    let (chunk, groups) = checked_row_groups((&md, name), bytes, &leaves, batch);
    for (rg, rows, sizes) in groups {
        let sel = selection.map(|s| s(rows));
        let read = |policy: RowSelectionPolicy| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let b =
                    ParquetRecordBatchReaderBuilder::new_with_metadata(bytes.clone(), meta.clone())
                        .with_row_groups(vec![rg])
                        .with_projection(ProjectionMask::leaves(descr, leaves.iter().copied()))
                        .with_batch_size(batch);
                match &sel {
                    Some(sel) => b
                        .with_row_selection(sel.clone())
                        .with_row_selection_policy(policy),
                    None => b,
                }
                .build()?
                .collect::<Result<Vec<RecordBatch>, _>>()
                .map_err(ParquetError::from)
            }))
        };
        let Ok(theirs) = read(RowSelectionPolicy::default()) else {
            continue;
        };
        // Read as `open` reads it: every row and most rows kept densely, other selections
        // row by row; most rows kept also row by row (the walk a page too sparse to be made
        // dense takes).
        let mostly_kept = sel.as_ref().is_some_and(|s| shape(s) == Shape::MostlyKept);
        let modes: &[bool] = match (sel.is_none(), mostly_kept) {
            (true, _) => &[true],
            (false, true) => &[false, true],
            (false, false) => &[false],
        };
        for &dense in modes {
            let leaves_arg = Leaves {
                leaves: &leaves,
                sizes: sizes.clone(),
            };
            let ours = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let batch = batch.min(md.file_metadata().num_rows().max(0) as usize);
                let mut r = DirectReader::try_new(
                    &meta,
                    rg,
                    &leaves_arg,
                    &chunk,
                    DirectRows {
                        selection: sel.as_ref(),
                        page_level,
                        written: None,
                    },
                    dense,
                    BatchLimit::rows(batch),
                )?;
                let out = r.by_ref().collect::<Result<Vec<RecordBatch>, _>>();
                Some((out, r.fallback()))
            }))
            .unwrap_or_else(|_| panic!("{name} rg {rg}: the direct reader panicked"));
            let Some((ours, fallback)) = ours else {
                // Declined densely (a column with nulls, or not read whole): as `open` does.
                if !(dense && sel.is_some()) {
                    tally.declined += 1;
                }
                continue;
            };
            let name = format!("{name} (dense {dense})");
            let name = name.as_str();
            match fallback {
                None => tally.direct += 1,
                Some(why) => {
                    if strict {
                        eprintln!("{name} rg {rg}: parquet took over: {}", why.0);
                    }
                    tally.fell_back += 1
                }
            }
            match (theirs.as_ref(), ours) {
                (Ok(t), Ok(o)) => {
                    assert_eq!(
                        t.len(),
                        o.len(),
                        "{name} rg {rg}: batch count ({fallback:?})"
                    );
                    for (i, (t, o)) in t.iter().zip(&o).enumerate() {
                        assert_eq!(t, o, "{name} rg {rg} batch {i} ({fallback:?})");
                    }
                }
                (Err(_), Err(_)) => tally.both_failed += 1,
                (Err(_), Ok(o)) if !strict => {
                    // Corrupt input where parquet's bitmask read (every row decoded) fails: the
                    // rows read must be those parquet reads when it skips unselected rows, or
                    // parquet must fail that way too.
                    match read(RowSelectionPolicy::Selectors) {
                        Ok(Ok(t)) => assert_eq!(t, o, "{name} rg {rg} ({fallback:?})"),
                        _ => tally.only_direct += 1,
                    }
                }
                (Ok(_), Err(_)) if !strict && fallback.is_some() => {
                    // parquet took over with the rest of the selection, read another way.
                    tally.only_parquet += 1;
                }
                (t, o) => panic!(
                    "{name} rg {rg}: parquet {:?}, direct {:?} ({fallback:?})",
                    t.as_ref().map(|b| b.len()),
                    o.map(|b| b.len())
                ),
            }
        }
    }
    tally
}

/// Each row selected with probability `1 / every`, from a fixed seed.
fn random(rows: usize, every: u64, seed: u64) -> RowSelection {
    RowSelection::from_filters(&[arrow::array::BooleanArray::from(hits(rows, every, seed))])
}

/// Each row dropped with probability `1 / every`, from a fixed seed (most rows kept).
fn random_dropped(rows: usize, every: u64, seed: u64) -> RowSelection {
    let keep: Vec<bool> = hits(rows, every, seed).into_iter().map(|h| !h).collect();
    RowSelection::from_filters(&[arrow::array::BooleanArray::from(keep)])
}

/// `rows` flags, each set with probability `1 / every`, from a fixed seed.
fn hits(rows: usize, every: u64, seed: u64) -> Vec<bool> {
    let mut s = seed;
    (0..rows)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (s >> 33) % every == 0
        })
        .collect()
}

/// The selections every file is read with.
/// A selection of a row group's rows, given its row count.
type Select = Box<dyn Fn(usize) -> RowSelection>;

fn selections() -> Vec<(&'static str, Select)> {
    vec![
        ("alternating 1", Box::new(|r| alternating(r, 1))),
        ("alternating 97", Box::new(|r| alternating(r, 97))),
        ("a quarter", Box::new(|r| random(r, 4, 1))),
        ("one in a hundred", Box::new(|r| random(r, 100, 2))),
        (
            "all but one in fifty",
            Box::new(|r| random_dropped(r, 50, 3)),
        ),
        (
            "all but one in eight",
            Box::new(|r| random_dropped(r, 8, 4)),
        ),
        (
            "the last row",
            Box::new(|r| {
                RowSelection::from(vec![
                    RowSelector::skip(r.saturating_sub(1)),
                    RowSelector::select(r.min(1)),
                ])
            }),
        ),
        (
            "the middle third",
            Box::new(|r| {
                RowSelection::from(vec![
                    RowSelector::skip(r / 3),
                    RowSelector::select(r / 3),
                    RowSelector::skip(r - 2 * (r / 3)),
                ])
            }),
        ),
        (
            "nothing",
            Box::new(|r| RowSelection::from(vec![RowSelector::skip(r)])),
        ),
        (
            "every row",
            Box::new(|r| RowSelection::from(vec![RowSelector::select(r)])),
        ),
    ]
}

#[test]
fn reads_parquet_testing_files_as_parquet_does() {
    let mut files: Vec<_> = std::fs::read_dir(DATA)
        .expect("the parquet-testing files")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
        .collect();
    files.sort();
    let mut tally = Tally::default();
    for path in &files {
        let name = path.display().to_string();
        let bytes = Bytes::from(std::fs::read(path).unwrap());
        for (_, sel) in selections() {
            for batch in [7, 1024] {
                tally += compare(&name, &bytes, None, sel.as_ref(), batch, false, true);
            }
        }
        tally += compare(&name, &bytes, None, &|r| random(r, 4, 3), 1024, true, true);
    }
    eprintln!("parquet-testing: {tally:?}");
    assert!(files.len() > 50, "only {} files", files.len());
    assert!(tally.direct > 200, "{tally:?}");
}

/// A file of every type the direct reader builds, `rows` rows, nullable columns with nulls
/// every few rows; small pages and a small dictionary limit so that chunks switch from
/// dictionary to plain pages part-way.
fn every_type(rows: usize, props: WriterProperties) -> Bytes {
    let f = |name: &str, dt: DataType, nullable: bool| Field::new(name, dt, nullable);
    let schema = Arc::new(Schema::new(vec![
        f("i32", DataType::Int32, true),
        f("i64", DataType::Int64, false),
        f("u32", DataType::UInt32, true),
        f("u64", DataType::UInt64, false),
        f("f32", DataType::Float32, true),
        f("f64", DataType::Float64, false),
        f("date", DataType::Date32, true),
        f("dec_small", DataType::Decimal128(7, 2), true),
        f("dec", DataType::Decimal128(15, 2), false),
        f(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, Some("+01:00".into())),
            true,
        ),
        f("s", DataType::Utf8, true),
        f("sv", DataType::Utf8View, true),
        f("sv_req", DataType::Utf8View, false),
        f("b", DataType::Binary, true),
        f("bv", DataType::BinaryView, true),
        f("ls", DataType::LargeUtf8, true),
        // Written as fixed-length byte arrays of 9 and 16 bytes (precision past 18).
        f("dec_wide", DataType::Decimal128(20, 2), true),
        f("dec_38", DataType::Decimal128(38, 0), false),
    ]));
    fn opt<T>(i: usize, v: T) -> Option<T> {
        // Nulls here and there, and runs of them.
        (!(i % 7 == 3 || (i / 50) % 5 == 2)).then_some(v)
    }
    // Values repeat enough for dictionaries, and long strings overflow them.
    let word = |i: usize| -> String {
        match i % 3 {
            0 => format!("w{}", i % 13),
            1 => format!("a longer string than twelve bytes {}", i % 29),
            _ => format!("unique value number {i} that never repeats"),
        }
    };
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from_iter(
            (0..rows).map(|i| opt(i, (i % 100) as i32 - 50)),
        )),
        Arc::new(Int64Array::from_iter_values(
            (0..rows).map(|i| (i as i64 * 7919) % 1000 - 500),
        )),
        Arc::new(UInt32Array::from_iter(
            (0..rows).map(|i| opt(i, u32::MAX - (i % 40) as u32)),
        )),
        Arc::new(UInt64Array::from_iter_values(
            (0..rows).map(|i| u64::MAX - (i % 1000) as u64),
        )),
        Arc::new(Float32Array::from_iter(
            (0..rows).map(|i| opt(i, (i % 17) as f32 / 3.0)),
        )),
        Arc::new(Float64Array::from_iter_values(
            (0..rows).map(|i| i as f64 * 0.5),
        )),
        Arc::new(Date32Array::from_iter(
            (0..rows).map(|i| opt(i, 9000 + (i % 365) as i32)),
        )),
        Arc::new(
            Decimal128Array::from_iter((0..rows).map(|i| opt(i, (i % 300) as i128 - 150)))
                .with_precision_and_scale(7, 2)
                .unwrap(),
        ),
        Arc::new(
            Decimal128Array::from_iter_values((0..rows).map(|i| (i as i128 * 104729) % 10_000_000))
                .with_precision_and_scale(15, 2)
                .unwrap(),
        ),
        Arc::new(
            TimestampMicrosecondArray::from_iter(
                (0..rows).map(|i| opt(i, 1_600_000_000_000_000 + (i % 500) as i64 * 1_000_003)),
            )
            .with_timezone("+01:00"),
        ),
        Arc::new(StringArray::from_iter((0..rows).map(|i| opt(i, word(i))))),
        Arc::new(StringViewArray::from_iter(
            (0..rows).map(|i| opt(i, word(i + 1))),
        )),
        Arc::new(StringViewArray::from_iter_values(
            (0..rows).map(|i| word(i * 5)),
        )),
        Arc::new(BinaryArray::from_iter(
            (0..rows).map(|i| opt(i, word(i + 2).into_bytes())),
        )),
        Arc::new(BinaryViewArray::from_iter(
            (0..rows).map(|i| opt(i, word(i + 3).into_bytes())),
        )),
        Arc::new(LargeStringArray::from_iter(
            (0..rows).map(|i| opt(i, word(i * 3))),
        )),
        Arc::new(
            Decimal128Array::from_iter(
                (0..rows).map(|i| opt(i, (i % 400) as i128 * 1_000_000_007 - 199_000_000_000)),
            )
            .with_precision_and_scale(20, 2)
            .unwrap(),
        ),
        Arc::new(
            Decimal128Array::from_iter_values((0..rows).map(|i| {
                let v = (i as i128 * 170_141_183_460_469) % 99_999_999_999_999_999_999_999_999;
                if i % 2 == 0 {
                    -v
                } else {
                    v
                }
            }))
            .with_precision_and_scale(38, 0)
            .unwrap(),
        ),
    ];
    let batch = RecordBatch::try_new(schema.clone(), cols).unwrap();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    Bytes::from(out)
}

fn props(version: WriterVersion, compression: Compression, dictionary: bool) -> WriterProperties {
    WriterProperties::builder()
        .set_writer_version(version)
        // Not the delta encodings a v2 writer falls back to, which parquet reads.
        .set_encoding(parquet::basic::Encoding::PLAIN)
        .set_compression(compression)
        .set_dictionary_enabled(dictionary)
        .set_dictionary_page_size_limit(2048)
        .set_data_page_row_count_limit(300)
        .set_write_batch_size(100)
        .set_max_row_group_row_count(Some(2500))
        .build()
}

#[test]
fn reads_every_type_as_parquet_does() {
    let mut tally = Tally::default();
    for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
        for compression in [
            Compression::SNAPPY,
            Compression::UNCOMPRESSED,
            Compression::GZIP(Default::default()),
        ] {
            for dictionary in [true, false] {
                let bytes = every_type(6000, props(version, compression, dictionary));
                let name = format!("{version:?} {compression:?} dictionary {dictionary}");
                for (what, sel) in selections() {
                    for batch in [1, 100, 8192] {
                        let t = compare(&name, &bytes, None, sel.as_ref(), batch, false, true);
                        assert_eq!(t.declined + t.fell_back, 0, "{name} {what}: {t:?}");
                        tally += t;
                    }
                    let t = compare(&name, &bytes, None, sel.as_ref(), 1024, true, true);
                    assert_eq!(t.declined + t.fell_back, 0, "{name} {what}: {t:?}");
                    tally += t;
                    // One column at a time, too.
                    for leaf in [0, 9, 11, 15] {
                        let t =
                            compare(&name, &bytes, Some(&[leaf]), sel.as_ref(), 333, false, true);
                        assert_eq!(t.declined + t.fell_back, 0, "{name} {what}: {t:?}");
                    }
                }
            }
        }
    }
    eprintln!("every type: {tally:?}");
}

#[test]
fn reads_lineitem_like_data_as_parquet_does() {
    // rayquet-gen's dataset: nullable columns, a plain l_comment, lists and structs (which the
    // direct reader declines, so only the flat leaves are compared).
    let batch = rayquet_gen::batch(0, 0, 20_000, 42);
    let props = rayquet_gen::writer_properties(rayquet_gen::Compression::Zstd, 8192);
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let bytes = Bytes::from(out);
    for kernels in every_kernels() {
        let mut tally = Tally::default();
        for (what, sel) in selections() {
            let t = dispatch::on_thread(kernels, || {
                compare("lineitem", &bytes, None, sel.as_ref(), 8192, false, true)
            });
            assert_eq!(t.declined + t.fell_back, 0, "{kernels:?} {what}: {t:?}");
            tally += t;
        }
        assert!(tally.direct >= 3 * selections().len(), "{tally:?}");
        // Whole row groups of the columns without nulls that are not offset-based strings:
        // read directly.
        for batch in [1000, 8192] {
            let pick: &[usize] = &[0, 1, 3, 4, 5, 6, 10, 12];
            let t = compare_whole("lineitem", &bytes, Some(pick), batch, true, kernels);
            assert_eq!(t.declined + t.fell_back, 0, "{kernels:?} whole: {t:?}");
            assert!(t.direct >= 3, "{kernels:?} whole: {t:?}");
        }
    }
}

/// The kernels to compare: both copies where the CPU has v3, else the portable one.
fn every_kernels() -> Vec<Kernels> {
    if dispatch::both() {
        vec![Kernels::Portable, Kernels::V3]
    } else {
        vec![Kernels::Portable]
    }
}

#[test]
fn reads_whole_row_groups_as_parquet_does() {
    for kernels in every_kernels() {
        let mut tally = Tally::default();
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for compression in [Compression::SNAPPY, Compression::UNCOMPRESSED] {
                for dictionary in [true, false] {
                    let bytes = every_type(6000, props(version, compression, dictionary));
                    let name = format!("{version:?} {compression:?} dictionary {dictionary}");
                    // The columns without a null, views among them: read directly.
                    for batch in [1, 100, 8192] {
                        let pick: &[usize] = &[1, 3, 5, 8, 12, 17];
                        let t = compare_whole(&name, &bytes, Some(pick), batch, true, kernels);
                        assert_eq!(t.declined + t.fell_back, 0, "{name} {kernels:?}: {t:?}");
                        assert!(t.direct > 0, "{name} {kernels:?}: {t:?}");
                        tally += t;
                    }
                    // With nulls, or offset-based strings: left to parquet.
                    for leaf in [0, 10, 11] {
                        let t = compare_whole(&name, &bytes, Some(&[leaf]), 1024, true, kernels);
                        assert_eq!(t.direct + t.fell_back, 0, "{name} leaf {leaf}: {t:?}");
                    }
                }
            }
        }
        // A nullable column without a null in a row group (its statistics say so).
        let schema = Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, true)]));
        let col = Int64Array::from_iter((0..5000).map(|i| (i >= 2500 || i % 3 == 0).then_some(i)));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(col)]).unwrap();
        let mut out = Vec::new();
        let p = props(WriterVersion::PARQUET_1_0, Compression::SNAPPY, true);
        let mut w = ArrowWriter::try_new(&mut out, schema, Some(p)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        let t = compare_whole("no null", &Bytes::from(out), None, 700, true, kernels);
        assert_eq!(t.direct, 1, "{kernels:?}: {t:?}");
        assert_eq!(t.declined, 1, "{kernels:?}: {t:?}");
        // The parquet-testing files.
        let mut files: Vec<_> = std::fs::read_dir(DATA)
            .expect("the parquet-testing files")
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect();
        files.sort();
        for path in &files {
            let name = path.display().to_string();
            let bytes = Bytes::from(std::fs::read(path).unwrap());
            tally += compare_whole(&name, &bytes, None, 1024, true, kernels);
        }
        eprintln!("whole row groups, {kernels:?}: {tally:?}");
    }
}

/// Indices that are `k, k + 1...` and nothing else are found consecutive.
#[test]
fn consecutive_indices_are_found_exactly() {
    use super::page::consecutive;
    assert_eq!(consecutive(&[]), None);
    assert_eq!(consecutive(&[7]), Some(7));
    assert_eq!(consecutive(&[3, 4, 5, 6]), Some(3));
    assert_eq!(consecutive(&(100..1100).collect::<Vec<u32>>()), Some(100));
    assert_eq!(consecutive(&[3, 4, 6, 6]), None);
    // The right ends, different insides.
    assert_eq!(consecutive(&[0, 2, 1, 3]), None);
    assert_eq!(consecutive(&[5, 5, 5]), None);
    assert_eq!(consecutive(&[u32::MAX - 1, u32::MAX]), Some(u32::MAX - 1));
    assert_eq!(consecutive(&[u32::MAX, 0]), None);
    let mut v: Vec<u32> = (10..2010).collect();
    for i in [0, 1, 999, 1998, 1999] {
        let old = v[i];
        v[i] ^= 1 << 20;
        assert_eq!(consecutive(&v), None, "changed at {i}");
        v[i] = old;
    }
    assert_eq!(consecutive(&v), Some(10));
}

/// Columns of distinct values in row groups whose dictionary holds every value (a key's, a
/// measurement's: small row groups, or a large dictionary page limit): each data page's
/// indices are consecutive, so runs of rows are copied from the dictionary rather than
/// gathered. Read as parquet reads them, with every selection, under each copy of the kernels.
#[test]
fn distinct_values_in_whole_dictionaries_are_read_as_parquet_does() {
    let rows = 6000;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Float64, true),
        Field::new("n", DataType::Int32, false),
        Field::new("d", DataType::Decimal128(9, 2), false),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Millisecond, None),
            false,
        ),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            (0..rows).map(|i| i * 3 - 5000),
        )),
        // Nullable without a null.
        Arc::new(Float64Array::from_iter(
            (0..rows).map(|i| Some(i as f64 / 7.0)),
        )),
        Arc::new(Int32Array::from_iter_values((0..rows as i32).rev())),
        Arc::new(
            Decimal128Array::from_iter_values((0..rows).map(|i| i as i128 * 101))
                .with_precision_and_scale(9, 2)
                .unwrap(),
        ),
        Arc::new(arrow::array::TimestampMillisecondArray::from_iter_values(
            (0..rows).map(|i| 1_700_000_000_000 + i * 17),
        )),
    ];
    let batch = RecordBatch::try_new(schema.clone(), cols).unwrap();
    for kernels in every_kernels() {
        let mut tally = Tally::default();
        for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
            for compression in [Compression::SNAPPY, Compression::UNCOMPRESSED] {
                let props = WriterProperties::builder()
                    .set_writer_version(version)
                    .set_compression(compression)
                    .set_dictionary_page_size_limit(1 << 20)
                    .set_data_page_row_count_limit(300)
                    .set_write_batch_size(100)
                    .set_max_row_group_row_count(Some(2500))
                    .build();
                let mut out = Vec::new();
                let mut w = ArrowWriter::try_new(&mut out, schema.clone(), Some(props)).unwrap();
                w.write(&batch).unwrap();
                w.close().unwrap();
                let bytes = Bytes::from(out);
                // Every data page is dictionary-encoded.
                let meta = ArrowReaderMetadata::load(&bytes, Default::default()).unwrap();
                for rg in meta.metadata().row_groups() {
                    for c in rg.columns() {
                        let plain = c.page_encoding_stats().is_some_and(|s| {
                            s.iter().any(|p| {
                                p.page_type != parquet::basic::PageType::DICTIONARY_PAGE
                                    && p.encoding == parquet::basic::Encoding::PLAIN
                            })
                        });
                        assert!(!plain, "a plain data page in {:?}", c.column_path());
                    }
                }
                let name = format!("distinct {version:?} {compression:?}");
                dispatch::on_thread(kernels, || {
                    for (what, sel) in selections() {
                        for batch in [1, 100, 8192] {
                            let t = compare(&name, &bytes, None, sel.as_ref(), batch, false, true);
                            assert_eq!(t.declined + t.fell_back, 0, "{name} {what}: {t:?}");
                            tally += t;
                        }
                    }
                });
                let t = compare_whole(&name, &bytes, None, 1000, true, kernels);
                assert_eq!(t.declined + t.fell_back, 0, "{name} whole: {t:?}");
                assert!(t.direct > 0, "{name} whole: {t:?}");
                tally += t;
            }
        }
        eprintln!("distinct values, {kernels:?}: {tally:?}");
    }
}

/// Files with bytes flipped at random after the magic (pages, their headers and the footer
/// alike): the direct reader never panics and gives parquet's batches, or an error where
/// parquet gives one.
#[test]
fn corrupted_files_never_panic_and_agree_with_parquet() {
    let mut sources: Vec<(String, Vec<u8>)> = [
        "alltypes_dictionary.parquet",
        "alltypes_plain.snappy.parquet",
        "datapage_v2.snappy.parquet",
        "data_index_bloom_encoding_stats.parquet",
        "nation.dict-malformed.parquet",
    ]
    .iter()
    .filter_map(|f| Some((f.to_string(), std::fs::read(format!("{DATA}/{f}")).ok()?)))
    .collect();
    for version in [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0] {
        let p = props(version, Compression::UNCOMPRESSED, true);
        sources.push((
            format!("every type {version:?}"),
            every_type(700, p).to_vec(),
        ));
    }
    let mut seed = 5u64;
    let mut tally = Tally::default();
    for (name, original) in &sources {
        for _ in 0..150 {
            let bytes = Bytes::from(flip_bits(original, &mut seed));
            tally += compare(name, &bytes, None, &|r| alternating(r, 1), 64, false, false);
            for kernels in every_kernels() {
                tally += compare_whole(name, &bytes, None, 100, false, kernels);
            }
            tally += compare(
                name,
                &bytes,
                None,
                &|r| random(r, 9, seed),
                1000,
                false,
                false,
            );
        }
    }
    eprintln!("corrupted: {tally:?}");
    assert!(tally.direct + tally.fell_back > 500, "{tally:?}");
    // Corruption parquet fails on however it reads, read here: rare, or a check is missing.
    assert!(tally.only_direct * 50 < tally.direct, "{tally:?}");
}

/// A file of two string columns (one required, one nullable) holding bytes that are not UTF-8
/// in every `every`th row, written with parquet's low-level writer (Arrow's cannot).
fn not_utf8(rows: usize, every: usize, dictionary: bool) -> Bytes {
    use parquet::data_type::{ByteArray, ByteArrayType};
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;
    let schema = "message m { required binary s (UTF8); optional binary t (UTF8); }";
    let schema = Arc::new(parse_message_type(schema).unwrap());
    let props = WriterProperties::builder()
        .set_dictionary_enabled(dictionary)
        .set_data_page_row_count_limit(100)
        .set_write_batch_size(50)
        .build();
    let value = |i: usize| -> ByteArray {
        if i % every == every - 1 {
            ByteArray::from(vec![b'x', 0xff, 0xfe, b'y'])
        } else {
            ByteArray::from(format!("valid {} é", i % 37).as_str())
        }
    };
    let values: Vec<ByteArray> = (0..rows).map(value).collect();
    let defs: Vec<i16> = (0..rows).map(|i| (i % 5 != 2) as i16).collect();
    let present: Vec<ByteArray> = (0..rows).filter(|i| i % 5 != 2).map(value).collect();
    let mut out = Vec::new();
    let mut w = SerializedFileWriter::new(&mut out, schema, Arc::new(props)).unwrap();
    let mut rg = w.next_row_group().unwrap();
    let mut i = 0;
    while let Some(mut col) = rg.next_column().unwrap() {
        let c = col.typed::<ByteArrayType>();
        match i {
            0 => c.write_batch(&values, None, None).unwrap(),
            _ => c.write_batch(&present, Some(&defs), None).unwrap(),
        };
        col.close().unwrap();
        i += 1;
    }
    rg.close().unwrap();
    w.close().unwrap();
    Bytes::from(out)
}

#[test]
fn strings_that_are_not_utf8_are_refused_as_parquet_refuses_them() {
    let mut tally = Tally::default();
    for every in [3, 40, 700, 5000] {
        for dictionary in [true, false] {
            let bytes = not_utf8(3000, every, dictionary);
            for views in [false, true] {
                let name = format!("every {every}, dictionary {dictionary}, views {views}");
                let dt = if views {
                    DataType::Utf8View
                } else {
                    DataType::Utf8
                };
                let schema = Arc::new(Schema::new(vec![
                    Field::new("s", dt.clone(), false),
                    Field::new("t", dt, true),
                ]));
                for (_, sel) in selections() {
                    let opts = ArrowReaderOptions::new().with_schema(schema.clone());
                    let pick = (None, Some(sel.as_ref()));
                    tally += compare_with(&name, &bytes, opts, pick, 256, false, false);
                }
            }
        }
    }
    eprintln!("not UTF-8: {tally:?}");
    // Both refuse the rows they both read, and the direct reader reads the valid ones.
    assert!(tally.both_failed > 20, "{tally:?}");
    assert!(tally.direct > 20, "{tally:?}");
    assert_eq!(tally.declined, 0, "{tally:?}");
}

/// Which reader [`open`] chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chose {
    Parquet,
    Direct,
    Split,
}

/// Row group 0 of `bytes` (the leaves of `pick`, the rows of `selection`, every row when
/// `None`) read through [`open`], as a part reads it, and by parquet's builder: the same
/// batches. Returns which reader [`open`] chose.
fn open_and_compare(
    bytes: &Bytes,
    pick: &[usize],
    selection: Option<&RowSelection>,
    batch: usize,
) -> Chose {
    let opts = ArrowReaderOptions::new()
        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Optional);
    let meta = ArrowReaderMetadata::load(bytes, opts).unwrap();
    let md = Arc::clone(meta.metadata());
    let (chunk, groups) = checked_row_groups((&md, "open"), bytes, pick, batch);
    let (rg, _, sizes) = groups.into_iter().next().expect("row group 0");
    let read = |prepared: Option<Arc<Prepared>>| {
        let leaves = Leaves {
            leaves: pick,
            sizes: sizes.clone(),
        };
        let rows = PartRows {
            selection: selection.cloned().map(Arc::new),
            page_level: false,
            prepared,
        };
        let reader = open(
            &meta,
            rg,
            leaves,
            chunk.clone(),
            rows,
            BatchLimit::rows(batch),
        )
        .unwrap();
        let chose = match reader {
            RowGroupReader::Parquet(_) => Chose::Parquet,
            RowGroupReader::Direct(_) => Chose::Direct,
            RowGroupReader::Split(_) => Chose::Split,
        };
        (chose, reader.collect::<Result<Vec<_>, _>>().unwrap())
    };
    let (chose, ours) = read(None);
    // The selection worked out once for the slot (as its filter stage does), then read by
    // two parts sharing it: the same reader chosen, the same batches; its rows written out
    // exactly when some leaf is read directly.
    if let Some(sel) = selection {
        let prepared = Arc::new(Prepared::new(
            &meta,
            rg,
            &[pick.to_vec()],
            (sel, Summary::of(sel)),
        ));
        assert_eq!(
            prepared.written.is_some(),
            chose != Chose::Parquet,
            "pick {pick:?} {chose:?}"
        );
        for _part in 0..2 {
            assert_eq!(
                read(Some(Arc::clone(&prepared))),
                (chose, ours.clone()),
                "pick {pick:?}"
            );
        }
        if let Some(w) = &prepared.written {
            assert_eq!(w.len(), sel.row_count());
        }
    }
    let builder = ParquetRecordBatchReaderBuilder::new_with_metadata(bytes.clone(), meta.clone())
        .with_row_groups(vec![rg])
        .with_projection(ProjectionMask::leaves(
            meta.parquet_schema(),
            pick.iter().copied(),
        ))
        .with_batch_size(batch);
    let builder = match selection {
        Some(s) => builder.with_row_selection(s.clone()),
        None => builder,
    };
    let theirs = builder
        .build()
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    assert_eq!(ours, theirs, "pick {pick:?} {chose:?}");
    chose
}

#[test]
fn most_rows_kept_and_parts_of_parts_are_read_as_parquet_reads_them() {
    let batch = rayquet_gen::batch(0, 0, 20_000, 42);
    // One row group of 20 000 rows (pages of 1024 rows by default).
    let rows = 20_000;
    let props = rayquet_gen::writer_properties(rayquet_gen::Compression::Snappy, rows);
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    let bytes = Bytes::from(out);
    // The same rows with plain-encoded strings (no dictionary).
    let plain = {
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(rows))
            .set_dictionary_enabled(false)
            .set_data_page_row_count_limit(1000)
            .build();
        let mut out = Vec::new();
        let mut w = ArrowWriter::try_new(&mut out, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        Bytes::from(out)
    };
    // The columns without nulls that are not offset-based strings; then with one with nulls
    // (2: l_suppkey), then every leaf (nulls, offset-based strings, a list, a struct).
    let (dense, with_nulls): (&[usize], &[usize]) = (&[0, 1, 3, 4, 5, 6, 10, 12], &[0, 2, 5]);
    // Offset-based strings without nulls (8, 9: the flags, 14: l_shipmode) among them: read
    // directly when some rows are dropped, by parquet's reader when every row is read.
    let strings: &[usize] = &[0, 8, 9, 10, 14];
    let meta = ArrowReaderMetadata::load(&bytes, ArrowReaderOptions::new()).unwrap();
    let every: Vec<usize> = (0..meta.parquet_schema().num_columns()).collect();
    let kept = [
        ("all but one in fifty", random_dropped(rows, 50, 3)),
        ("all but one in eight", random_dropped(rows, 8, 4)),
        (
            "all but the first and last thousand",
            RowSelection::from(vec![
                RowSelector::skip(1000),
                RowSelector::select(rows - 2000),
                RowSelector::skip(1000),
            ]),
        ),
    ];
    for kernels in every_kernels() {
        let direct = if kernels == Kernels::V3 {
            Chose::Direct
        } else {
            Chose::Parquet
        };
        let cases = kept.iter().map(|(w, s)| (*w, Some(s)));
        for (what, sel) in cases.chain([("every row", None)]) {
            if let Some(sel) = sel {
                assert_eq!(shape(sel), Shape::MostlyKept, "{what}");
            }
            for batch in [1000, 8192] {
                let read = |pick: &[usize]| {
                    dispatch::on_thread(kernels, || open_and_compare(&bytes, pick, sel, batch))
                };
                assert_eq!(read(dense), direct, "{what} {kernels:?}");
                for file in [&bytes, &plain] {
                    let chose = dispatch::on_thread(kernels, || {
                        open_and_compare(file, strings, sel, batch)
                    });
                    let want = if sel.is_some() {
                        direct
                    } else {
                        Chose::Parquet
                    };
                    assert_eq!(chose, want, "{what} {kernels:?}: strings");
                }
                // A leaf with nulls (and every leaf): parquet's reader for the whole part.
                assert_eq!(
                    read(with_nulls),
                    Chose::Parquet,
                    "{what} {kernels:?}: nulls"
                );
                assert_eq!(
                    read(&every),
                    Chose::Parquet,
                    "{what} {kernels:?}: every leaf"
                );
            }
        }
        // A scattered selection: the flat leaves directly (with nulls too), the list and the
        // struct by parquet's reader, with either kernels; the flat ones alone directly.
        for (every_in, sel) in [(4, 1), (100, 2)] {
            let sel = random(rows, every_in, sel);
            for batch in [100, 8192] {
                let read = |pick: &[usize]| {
                    dispatch::on_thread(kernels, || {
                        open_and_compare(&bytes, pick, Some(&sel), batch)
                    })
                };
                assert_eq!(read(&every), Chose::Split, "{kernels:?}");
                assert_eq!(read(with_nulls), Chose::Direct, "{kernels:?}");
                // Nested leaves only: parquet's reader.
                let nested: Vec<usize> = every.iter().copied().filter(|&l| l >= 18).collect();
                assert_eq!(read(&nested), Chose::Parquet, "{kernels:?}");
            }
        }
    }
    // The other shapes.
    assert_eq!(shape(&random(rows, 4, 1)), Shape::Scattered);
    // Most rows kept in runs too short (3 on average): parquet's reader.
    assert_eq!(shape(&random_dropped(rows, 3, 4)), Shape::Other);
    assert_eq!(shape(&alternating(rows, 100)), Shape::Other);
    assert_eq!(
        shape(&RowSelection::from(vec![RowSelector::skip(rows)])),
        Shape::Other
    );
}
