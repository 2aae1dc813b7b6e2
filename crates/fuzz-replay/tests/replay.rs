//! Every committed fuzz input replayed through the check of its target (`rayquet::fuzzing`):
//! the corpora `fuzz/corpus/<target>/` (seeds from the parquet-testing files and what the
//! fuzzers found that adds coverage) and the past findings `fuzz/regressions/<target>/` (each
//! a crash or mismatch once, fixed since). A check panics on a mismatch, so a test fails
//! naming the file.
//!
//! `write_seeds` (ignored) extracts the seed corpora from Parquet files: `fuzz/seeds.sh`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};

/// The system allocator, refusing any single allocation over 512 MiB (the process aborts),
/// as `-malloc_limit_mb=512` makes it a finding under libFuzzer: an allocation sized by a
/// count a file claims fails the replay too.
struct Limited;

// SAFETY: forwards to `System`, or returns null (allocation failure) for a large request.
unsafe impl GlobalAlloc for Limited {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > 512 << 20 {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract, unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOC: Limited = Limited;

/// The `fuzz/` folder of the repository.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Feed every file of the corpus and the regressions of `target` to `check`; returns how
/// many there were.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let mut n = 0;
    for dir in ["corpus", "regressions"] {
        let dir = fuzz_dir().join(dir).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
        files.sort();
        for f in files.iter().filter(|f| f.is_file()) {
            let data = std::fs::read(f).unwrap();
            if std::panic::catch_unwind(|| check(&data)).is_err() {
                panic!("{target}: {} fails its check", f.display());
            }
            n += 1;
        }
    }
    println!("{target}: {n} inputs replayed");
    n
}

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
fn iceberg_dv() {
    assert!(replay("iceberg_dv", rayquet_iceberg::fuzzing::deletion_vector) > 0);
}

#[test]
fn iceberg_manifest() {
    assert!(replay("iceberg_manifest", rayquet_iceberg::fuzzing::manifest) > 0);
}

#[test]
fn delta_log() {
    assert!(replay("delta_log", rayquet_delta::fuzzing::log) > 0);
}

#[test]
fn delta_dv() {
    assert!(replay("delta_dv", rayquet_delta::fuzzing::deletion_vector) > 0);
}

/// Seeds of the table targets: deletion vectors (Iceberg blobs with their cardinality; Delta
/// inline and in a DV file), the manifest lists and manifests of an Iceberg table written by
/// iceberg-rust, and the commits of Delta's golden tables.
fn table_seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    use rayquet::task::RoaringTreemap;
    let mut out = Vec::new();
    let sets: Vec<RoaringTreemap> = vec![
        [0u64, 5, 7].into_iter().collect(),
        (0..5000u64).filter(|p| p % 3 == 0).collect(),
        {
            let mut t = RoaringTreemap::new();
            t.insert_range(100..70_000);
            t.insert((1 << 33) + 1);
            t
        },
    ];
    for (i, set) in sets.iter().enumerate() {
        // Iceberg: the claimed cardinality, then the blob.
        let mut seed = set.len().to_le_bytes().to_vec();
        seed.extend(rayquet_testkit::iceberg_v3::dv_blob(
            &set.iter().collect::<Vec<_>>(),
        ));
        out.push(("iceberg_dv", format!("vector-{i}"), seed));
        // Delta inline: control 0, the cardinality, the magic and the bitmap.
        let mut body = 1681511377u32.to_le_bytes().to_vec();
        set.serialize_into(&mut body).unwrap();
        while body.len() % 4 != 0 {
            body.push(0);
        }
        let mut seed = vec![0u8];
        seed.extend((set.len() as i64).to_le_bytes());
        seed.extend(&body);
        out.push(("delta_dv", format!("inline-{i}"), seed));
        // Delta DV file: version byte, then size (BE), magic and bitmap, CRC (BE).
        let mut file = vec![1u8];
        file.extend((body.len() as u32).to_be_bytes());
        file.extend(&body);
        file.extend(crc32fast::hash(&body).to_be_bytes());
        let mut seed = vec![1u8];
        seed.extend(1i32.to_le_bytes());
        seed.extend((body.len() as i32).to_le_bytes());
        seed.extend((set.len() as i64).to_le_bytes());
        seed.extend(file);
        out.push(("delta_dv", format!("file-{i}"), seed));
    }
    // Manifest lists and manifests of a v2 table with deletes.
    let fx = rayquet_testkit::iceberg_v3::v3_deletes(10, rayquet_testkit::iceberg_v3::Damage::None);
    let mut avro: Vec<PathBuf> = walk(&fx.table_root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "avro"))
        .collect();
    avro.sort();
    for (i, p) in avro.iter().enumerate() {
        out.push((
            "iceberg_manifest",
            format!("v3-{i}"),
            std::fs::read(p).unwrap(),
        ));
    }
    // Delta commits: a few golden tables' logs.
    for name in [
        "dv-partitioned-with-checkpoint",
        "basic-with-inserts-updates",
        "124-decimal-decode-bug",
    ] {
        let root = rayquet_testkit::delta_tables::golden_table_path(name);
        let mut logs: Vec<PathBuf> = walk(&root.join("_delta_log"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        logs.sort();
        for (i, p) in logs.iter().take(4).enumerate() {
            let mut seed = vec![0u8];
            seed.extend(std::fs::read(p).unwrap());
            out.push(("delta_log", format!("{name}-{i}"), seed));
        }
    }
    out
}

/// Every file under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
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
/// generated files ([`generated`]) to `RAYQUET_SEEDS_TO/<target>/` (`fuzz/seeds.sh` runs it).
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
    for (target, name, seed) in table_seeds() {
        let dir = to.join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), seed).unwrap();
        *count.entry(target).or_default() += 1;
    }
    println!("seeds: {count:?}");
}
