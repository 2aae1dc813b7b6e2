//! End-to-end tests of the `rayquet` binary: `gen`, then `scan` (rows checked against what
//! `gen` wrote and against parquet's own reader).
use std::fs::File;
use std::path::Path;
use std::process::{Command, Output};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::ipc::reader::FileReader;

const FILES: u64 = 3;
const ROW_GROUPS: u64 = 2;
const ROWS: u64 = 1_500;
const TOTAL: u64 = FILES * ROW_GROUPS * ROWS;

fn rayquet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rayquet"))
        .args(args)
        .output()
        .expect("run rayquet")
}

fn ok(args: &[&str]) -> String {
    let out = rayquet(args);
    assert!(
        out.status.success(),
        "rayquet {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

fn json(args: &[&str]) -> serde_json::Value {
    let stdout = ok(args);
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout:?}"))
}

fn gen(dir: &Path) {
    let stdout = ok(&[
        "gen",
        dir.to_str().unwrap(),
        "--files",
        &FILES.to_string(),
        "--row-groups",
        &ROW_GROUPS.to_string(),
        "--rows",
        &ROWS.to_string(),
        "--compression",
        "zstd",
    ]);
    assert!(stdout.contains("wrote 3 files"), "{stdout}");
    for i in 0..FILES {
        assert!(dir.join(format!("part-{i:05}.parquet")).is_file());
    }
}

fn ipc_batches(path: &Path) -> Vec<RecordBatch> {
    let reader = FileReader::try_new(File::open(path).unwrap(), None).unwrap();
    reader.map(|b| b.unwrap()).collect()
}

fn ipc_rows(path: &Path) -> u64 {
    ipc_batches(path).iter().map(|b| b.num_rows() as u64).sum()
}

/// Every row of the files `gen` wrote in `dir`, in file order, read by parquet's own reader
/// with string views (as `scan` decodes them by default).
fn reference_rows(dir: &Path) -> (SchemaRef, Vec<RecordBatch>) {
    let mut schema = None;
    let mut batches = Vec::new();
    for i in 0..FILES {
        let path = dir.join(format!("part-{i:05}.parquet"));
        let (s, b) = rayquet_testkit::reference(&path, None, 8192).unwrap();
        let b: Vec<RecordBatch> = b.into_iter().map(|b| views(&b)).collect();
        schema = b.first().map(|b| b.schema()).or(Some(s));
        batches.extend(b);
    }
    (schema.unwrap(), batches)
}

/// `batch` with its string columns (top level) as `Utf8View`.
fn views(batch: &RecordBatch) -> RecordBatch {
    use arrow::datatypes::{DataType, Field, Schema};
    let (fields, columns): (Vec<Field>, Vec<_>) = batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, c)| match f.data_type() {
            DataType::Utf8 => (
                f.as_ref().clone().with_data_type(DataType::Utf8View),
                arrow::compute::cast(c, &DataType::Utf8View).unwrap(),
            ),
            _ => (f.as_ref().clone(), c.clone()),
        })
        .unzip();
    RecordBatch::try_new(std::sync::Arc::new(Schema::new(fields)), columns).unwrap()
}

#[test]
fn gen_then_scan() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data);
    let dir = data.to_str().unwrap();

    let fields = [
        "rows",
        "batches",
        "seconds",
        "bytes_fetched",
        "requests",
        "rows_per_sec",
        "bytes_decoded",
        "files",
        "row_groups",
        "peak_buffered_bytes",
        "io_seconds",
        "decode_seconds",
    ];
    let r = json(&["scan", dir, "--json"]);
    for f in fields {
        assert!(r[f].is_number(), "rayquet: {f} missing in {r}");
    }
    assert_eq!(r["rows"], TOTAL);
    assert_eq!(r["files"], FILES);
    assert_eq!(r["row_groups"], FILES * ROW_GROUPS);
    // Small files are read whole, one request each.
    let on_disk: u64 = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert_eq!(r["bytes_fetched"], on_disk);

    // Projection and batch size.
    let p = json(&[
        "scan",
        dir,
        "--json",
        "--columns",
        "l_orderkey,l_dims",
        "--batch-size",
        "1000",
    ]);
    assert_eq!(p["rows"], TOTAL);
    assert!(p["batches"].as_u64().unwrap() >= TOTAL / 1000, "{p}");

    // The human summary.
    let text = ok(&["scan", dir]);
    assert!(text.contains("rows") && text.contains("9,000"), "{text}");

    // --repeat: the same scan several times in one process, every run's time reported.
    let r = json(&[
        "scan",
        dir,
        "--json",
        "--repeat",
        "3",
        "--filter",
        "l_quantity < 5",
    ]);
    let runs = r["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3, "{r}");
    assert!(
        runs.iter().all(|x| x.as_f64().is_some_and(|s| s > 0.0)),
        "{r}"
    );
    assert_eq!(r["first_seconds"], runs[0]);
    let mut warm: Vec<f64> = runs[1..].iter().map(|x| x.as_f64().unwrap()).collect();
    warm.sort_by(f64::total_cmp);
    // The median of two runs, in whole nanoseconds (Duration arithmetic truncates).
    let median = r["warm_median_seconds"].as_f64().expect("warm median");
    assert!((median - (warm[0] + warm[1]) / 2.0).abs() <= 1e-9, "{r}");
    let once = json(&["scan", dir, "--json", "--filter", "l_quantity < 5"]);
    assert_eq!(r["rows"], once["rows"], "every run delivers the same rows");
    assert_eq!(once["runs"].as_array().map(Vec::len), Some(1));
    assert!(once["warm_median_seconds"].is_null());
    let text = ok(&["scan", dir, "--repeat", "2"]);
    assert!(text.contains("warm median"), "{text}");

    // --footer-cache: the runs share one footer cache, so the last run reads no footer.
    let filter = "l_quantity < 5";
    let args = ["scan", dir, "--json", "--repeat", "2", "--filter", filter];
    let cached = json(&[&args[..], &["--footer-cache", "16M"]].concat());
    assert_eq!(cached["rows"], once["rows"], "same rows with the cache");
    assert_eq!(cached["metadata_bytes"], 0, "{cached}");
    assert!(once["metadata_bytes"].as_u64() > Some(0), "{once}");
    assert!(
        cached["requests"].as_u64() < once["requests"].as_u64(),
        "{cached} {once}"
    );
}

#[test]
fn out_limit_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data);
    let dir = data.to_str().unwrap();

    // --out: the rows parquet's own reader reads from the files, in order.
    let out = tmp.path().join("all.arrow");
    let r = json(&["scan", dir, "--json", "--out", out.to_str().unwrap()]);
    assert_eq!(r["rows"], TOTAL);
    let (schema, reference) = reference_rows(&data);
    let written = ipc_batches(&out);
    rayquet_testkit::assert_same_rows(&schema, &reference, &written, "--out");

    // A limit that ends inside a row group of the second file.
    let limit = ROW_GROUPS * ROWS + 700;
    let out = tmp.path().join("limit.arrow");
    let l = json(&[
        "scan",
        dir,
        "--json",
        "--limit",
        &limit.to_string(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(l["rows"], limit);
    assert_eq!(ipc_rows(&out), limit);

    // A single file, given directly.
    let one = data.join("part-00001.parquet");
    let r = json(&["scan", one.to_str().unwrap(), "--json", "--unordered"]);
    assert_eq!(r["rows"], ROW_GROUPS * ROWS);

    // Missing input: non-zero exit, a message naming the path, no panic.
    let missing = tmp.path().join("no-such-dir");
    let out = rayquet(&["scan", missing.to_str().unwrap(), "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("error: "), "{stderr}");
    assert!(stderr.contains("no-such-dir"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.stdout.is_empty());

    // A bad option value: a clear error, no panic.
    let out = rayquet(&["scan", dir, "--budget", "lots"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid size"));
}
