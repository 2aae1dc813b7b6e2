//! Every committed fuzz input replayed through the check of its target (`rayquet::fuzzing`):
//! the corpora `fuzz/corpus/<target>/` (seeds from the parquet-testing files and what the
//! fuzzers found that adds coverage) and the past findings `fuzz/regressions/<target>/` (each
//! a crash or mismatch once, fixed since). A check panics on a mismatch, so a test fails
//! naming the file.
//!
//! `write_seeds` (ignored) extracts the seed corpora from Parquet files: `fuzz/seeds.sh`.

use std::path::PathBuf;

use rayquet_fuzz_replay::replay;

#[global_allocator]
static ALLOC: rayquet_fuzz_replay::Limited = rayquet_fuzz_replay::Limited;

#[test]
fn snappy() {
    assert!(replay("snappy", rayquet::fuzzing::snappy) > 0);
}

#[test]
fn rle() {
    assert!(replay("rle", rayquet::fuzzing::rle) > 0);
}

#[test]
fn validate() {
    assert!(replay("validate", rayquet::fuzzing::validate) > 0);
}

#[test]
fn direct() {
    let n = replay("direct", rayquet::fuzzing::direct);
    let compared = rayquet::fuzzing::direct_compared();
    println!("direct: {compared} of {n} compared with parquet's reader");
    // The seeds alone compare 77 (the generated files and the parquet-testing files the
    // direct reader takes, two selections each).
    assert!(
        compared >= 20,
        "direct: only {compared} of {n} inputs compared"
    );
}

#[test]
fn scan() {
    let n = replay("scan", rayquet::fuzzing::scan);
    let compared = rayquet::fuzzing::scan_compared();
    println!("scan: {compared} of {n} filtered scans compared with parquet's reader");
    // The seeds alone compare 86 (of the 156: the others have no column a filter takes,
    // or parquet's reader fails on them).
    assert!(
        compared >= 20,
        "scan: only {compared} of {n} inputs compared"
    );
}

#[test]
fn task() {
    // The seeds first (JSON of tasks the coordinator makes), then the corpus and findings.
    for seed in rayquet::fuzzing::task_seeds() {
        rayquet::fuzzing::task(&seed);
    }
    let n = replay("task", rayquet::fuzzing::task);
    let compared = rayquet::fuzzing::task_compared();
    println!("task: {compared} of {n} inputs and the seeds compared with parquet's reader");
    assert!(compared >= 9, "task: only {compared} compared");
}

/// Small files of the column kinds the direct reader reads (integers, floats, dates,
/// timestamps, decimals, strings and binaries; nullable or not; dictionary or plain; pages of
/// 100 rows, v1 and v2; each codec rayquet decompresses itself), written by parquet's writer.
fn generated() -> Vec<(String, Vec<u8>)> {
    use arrow::array::{
        ArrayRef, BinaryArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
        RecordBatch, StringArray, TimestampMicrosecondArray,
    };
    use parquet::arrow::ArrowWriter;
    use parquet::basic::Compression;
    use parquet::file::properties::{WriterProperties, WriterVersion};
    use std::sync::Arc;
    let n = 600usize;
    let words = [
        "a",
        "bb",
        "héllo",
        "",
        "a much longer string than twelve bytes",
        "zz",
    ];
    let cols: Vec<(&str, ArrayRef)> = vec![
        (
            "i32",
            Arc::new(Int32Array::from_iter(
                (0..n).map(|i| (i % 7 != 0).then_some((i * 37 % 1000) as i32)),
            )),
        ),
        (
            "i64",
            Arc::new(Int64Array::from_iter_values(
                (0..n).map(|i| (i as i64) << 20),
            )),
        ),
        (
            "f64",
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| i as f64 / 3.0),
            )),
        ),
        (
            "date",
            Arc::new(Date32Array::from_iter_values(
                (0..n).map(|i| (i % 50) as i32),
            )),
        ),
        (
            "ts",
            Arc::new(TimestampMicrosecondArray::from_iter_values(
                (0..n).map(|i| i as i64 * 1_000_003),
            )),
        ),
        (
            "dec",
            Arc::new(
                Decimal128Array::from_iter_values((0..n).map(|i| i as i128 * 101 - 5000))
                    .with_precision_and_scale(12, 2)
                    .unwrap(),
            ),
        ),
        (
            "str",
            Arc::new(StringArray::from_iter(
                (0..n).map(|i| (i % 5 != 1).then_some(words[i % words.len()])),
            )),
        ),
        (
            "bin",
            Arc::new(BinaryArray::from_iter_values(
                (0..n).map(|i| format!("value-{}", i * 7919 % 100_000).into_bytes()),
            )),
        ),
    ];
    let mut out = Vec::new();
    let codecs = [
        Compression::UNCOMPRESSED,
        Compression::SNAPPY,
        Compression::ZSTD(Default::default()),
        Compression::LZ4_RAW,
    ];
    for (k, (name, col)) in cols.iter().enumerate() {
        for (j, (dict, v2)) in [(true, false), (false, true), (true, true)]
            .into_iter()
            .enumerate()
        {
            let codec = codecs[(k + j) % codecs.len()];
            let props = WriterProperties::builder()
                .set_compression(codec)
                .set_dictionary_enabled(dict)
                // Not the v2 writer's delta encodings, which the direct reader leaves to parquet.
                .set_encoding(parquet::basic::Encoding::PLAIN)
                .set_data_page_row_count_limit(100)
                .set_write_batch_size(100)
                .set_writer_version(if v2 {
                    WriterVersion::PARQUET_2_0
                } else {
                    WriterVersion::PARQUET_1_0
                })
                .build();
            let batch = RecordBatch::try_from_iter([(*name, Arc::clone(col))]).unwrap();
            let mut file = Vec::new();
            let mut w = ArrowWriter::try_new(&mut file, batch.schema(), Some(props)).unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
            let kind = format!(
                "{}-v{}",
                if dict { "dict" } else { "plain" },
                1 + usize::from(v2)
            );
            out.push((format!("gen-{name}-{kind}"), file));
        }
    }
    out
}

/// Writes the seed corpora: `RAYQUET_SEEDS_FROM` (a folder of Parquet files) and small
/// generated files ([`generated`]) to `RAYQUET_SEEDS_TO/<target>/` (`fuzz/seeds.sh` runs it),
/// and the `task` target's JSON tasks.
#[test]
#[ignore = "writes files: run by fuzz/seeds.sh"]
fn write_seeds() {
    let from = std::env::var("RAYQUET_SEEDS_FROM").expect("RAYQUET_SEEDS_FROM");
    let to = PathBuf::from(std::env::var("RAYQUET_SEEDS_TO").expect("RAYQUET_SEEDS_TO"));
    let max_file: usize = std::env::var("RAYQUET_SEEDS_MAX_FILE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32 << 10);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&from)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    files.sort();
    let mut count = std::collections::BTreeMap::<&str, usize>::new();
    let files = files
        .into_iter()
        .map(|f| {
            let stem = f.file_stem().unwrap().to_string_lossy().to_string();
            (stem, std::fs::read(&f).unwrap())
        })
        .chain(generated());
    for (stem, bytes) in files {
        for (i, (target, seed)) in rayquet::fuzzing::seeds(&bytes, max_file)
            .into_iter()
            .enumerate()
        {
            let dir = to.join(target);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("{stem}-{i}")), seed).unwrap();
            *count.entry(target).or_default() += 1;
        }
    }
    let tasks = rayquet::fuzzing::task_seeds();
    std::fs::create_dir_all(to.join("task")).unwrap();
    for (i, seed) in tasks.iter().enumerate() {
        std::fs::write(to.join("task").join(format!("task-{i}")), seed).unwrap();
    }
    count.insert("task", tasks.len());
    println!("seeds: {count:?}");
}
