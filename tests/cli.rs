//! End-to-end tests of the `rayquet` binary: `gen`, then `scan` with both engines.
#![cfg(feature = "cli")]

use std::fs::File;
use std::path::Path;
use std::process::{Command, Output};

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

fn ipc_rows(path: &Path) -> u64 {
    let reader = FileReader::try_new(File::open(path).unwrap(), None).unwrap();
    reader.map(|b| b.unwrap().num_rows() as u64).sum()
}

#[test]
fn gen_then_scan_with_both_engines() {
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
    assert_eq!(r["engine"], "rayquet");
    assert_eq!(r["rows"], TOTAL);
    assert_eq!(r["files"], FILES);
    assert!(r["bytes_fetched"].as_u64().unwrap() > 0);

    let s = json(&["scan", dir, "--json", "--engine", "sync"]);
    for f in fields {
        assert!(
            s["engine"] == "sync" && s[f].is_number(),
            "sync: {f} in {s}"
        );
    }
    assert_eq!(s["rows"], TOTAL);
    assert_eq!(s["files"], FILES);
    assert_eq!(s["row_groups"], FILES * ROW_GROUPS);
    assert_eq!(s["requests"], 0);
    let on_disk: u64 = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert_eq!(s["bytes_fetched"], on_disk);

    // Projection and batch size, both engines.
    for engine in ["rayquet", "sync"] {
        let p = json(&[
            "scan",
            dir,
            "--json",
            "--engine",
            engine,
            "--columns",
            "l_orderkey,l_dims",
            "--batch-size",
            "1000",
        ]);
        assert_eq!(p["rows"], TOTAL, "{engine}");
        assert!(
            p["batches"].as_u64().unwrap() >= TOTAL / 1000,
            "{engine}: {p}"
        );
    }

    // The human summary.
    let text = ok(&["scan", dir]);
    assert!(text.contains("rows") && text.contains("9,000"), "{text}");
}

#[test]
fn out_limit_and_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    gen(&data);
    let dir = data.to_str().unwrap();

    for engine in ["rayquet", "sync"] {
        let out = tmp.path().join(format!("{engine}.arrow"));
        let r = json(&[
            "scan",
            dir,
            "--json",
            "--engine",
            engine,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(r["rows"], TOTAL);
        assert_eq!(ipc_rows(&out), TOTAL, "{engine}");

        // A limit that ends inside a row group of the second file.
        let limit = ROW_GROUPS * ROWS + 700;
        let out = tmp.path().join(format!("{engine}-limit.arrow"));
        let l = json(&[
            "scan",
            dir,
            "--json",
            "--engine",
            engine,
            "--limit",
            &limit.to_string(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(l["rows"], limit, "{engine}");
        assert_eq!(ipc_rows(&out), limit, "{engine}");
    }

    // A single file, given directly.
    let one = data.join("part-00001.parquet");
    let r = json(&["scan", one.to_str().unwrap(), "--json", "--unordered"]);
    assert_eq!(r["rows"], ROW_GROUPS * ROWS);

    // Missing input: non-zero exit, a message naming the path, no panic.
    let missing = tmp.path().join("no-such-dir");
    for engine in ["rayquet", "sync"] {
        let out = rayquet(&[
            "scan",
            missing.to_str().unwrap(),
            "--engine",
            engine,
            "--json",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{engine}: {stderr}");
        assert!(stderr.contains("error: "), "{engine}: {stderr}");
        assert!(stderr.contains("no-such-dir"), "{engine}: {stderr}");
        assert!(!stderr.contains("panicked"), "{engine}: {stderr}");
        assert!(out.stdout.is_empty(), "{engine}");
    }

    // The sync engine refuses URLs.
    let out = rayquet(&["scan", "s3://bucket/x/", "--engine", "sync"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("local files only"));
}

/// `bench` at a tiny scale: every workload reports every one of its readers, and all readers
/// of a workload deliver the same rows, which are the rows its footers promise.
#[test]
fn bench_smoke_every_reader_reads_the_same_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let out = tmp.path().join("out");
    let r = json(&[
        "bench",
        "--scale",
        "0.002",
        "--runs",
        "1",
        "--first-byte-ms",
        "1",
        "--json",
        "--data-dir",
        data.to_str().unwrap(),
        "--out-dir",
        out.to_str().unwrap(),
    ]);
    assert!(out.join("bench.svg").is_file());
    assert!(out.join("bench.json").is_file());
    let workloads = r["workloads"].as_array().unwrap();
    let ids: Vec<&str> = workloads
        .iter()
        .map(|w| w["id"].as_str().unwrap())
        .collect();
    for id in [
        "W1", "W1z", "W2", "W3", "W4", "W5", "W6", "W7", "W8", "T1", "T2", "I1", "I2", "D1", "D2",
    ] {
        assert!(ids.contains(&id), "workload {id} missing from {ids:?}");
    }
    for w in workloads {
        let readers: Vec<&str> = w["readers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["reader"].as_str().unwrap())
            .collect();
        let filtered = w["filter"].is_string();
        let id = w["id"].as_str().unwrap();
        let expected: &[&str] = if id == "W6" {
            &["b0-sync", "rayquet", "rayquet-unbounded"]
        } else if id.starts_with('T') {
            &["rayquet", "rayquet-tasks"]
        } else if id.starts_with('I') {
            &[
                "iceberg-c1",
                "iceberg-default",
                "iceberg-spawned",
                "rayquet-iceberg",
                "rayquet-iceberg-no-deletes",
            ]
        } else if id.starts_with('D') {
            &["delta-default", "delta-rayquet-engine", "delta-table-scan"]
        } else if filtered {
            &["rayquet", "rayquet-unordered", "rayquet-no-filter"]
        } else {
            &[
                "b0-sync",
                "b1-async-serial",
                "b2-async-concurrent",
                "b3-async-spawned",
                "rayquet",
                "rayquet-unordered",
            ]
        };
        assert_eq!(readers, expected, "{}", w["id"]);
        let rows = w["rows"].as_u64().unwrap();
        assert!(rows > 0);
        // Filtered readers deliver the rows parquet's reader and the filter agree on.
        let matching = w["matching_rows"].as_u64();
        // Iceberg: rows left after the table's deletes.
        if filtered || id.starts_with('I') {
            assert!(matching.is_some_and(|m| m > 0 && m < rows), "{}", w["id"]);
        }
        for reader in w["readers"].as_array().unwrap() {
            let expected = match reader["reader"].as_str() {
                Some("rayquet-no-filter" | "rayquet-iceberg-no-deletes") => rows,
                // Every tenth row of each file deleted.
                Some("rayquet-tasks") => {
                    let files = w["files"].as_u64().unwrap();
                    rows - files * (rows / files).div_ceil(10)
                }
                _ => matching.unwrap_or(rows),
            };
            assert_eq!(reader["rows"], expected, "{} {}", w["id"], reader["reader"]);
            assert_eq!(reader["rows_consistent"], true);
            assert!(reader["requests"].as_u64().unwrap() > 0);
            assert!(reader["peak_rss_bytes"].as_u64().unwrap() > 0);
        }
    }
}
