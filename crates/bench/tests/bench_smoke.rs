//! The workload benchmark's harness (`cargo bench -p rayquet-bench --bench workloads`) at a tiny scale: every
//! reader of every workload runs and delivers the rows the workload's files (and, filtered,
//! parquet's reader with the filter) hold.

/// The workload benchmark at a tiny scale (in this process): every workload reports every one of its readers, and all readers
/// of a workload deliver the same rows, which are the rows its footers promise.
#[test]
fn bench_smoke_every_reader_reads_the_same_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let out = tmp.path().join("out");
    let r = rayquet_bench::run_in_process([
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
    ])
    .unwrap();
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
