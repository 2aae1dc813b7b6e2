//! `rayquet sql` and `rayquet worker` across processes: three worker processes on loopback
//! ports, a coordinator process running SQL on them; the answer equals the in-process run and
//! parquet's own reader, every worker scans, and a dead worker is a clean error naming it.

use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;
use common::Worker;

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;

const FILES: usize = 4;
const ROWS: u64 = 2_000;
const ROW_GROUPS: u64 = 2;

fn rayquet(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rayquet"))
        .args(args)
        .output()
        .expect("run rayquet")
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = rayquet(args);
    assert!(
        out.status.success(),
        "rayquet {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// A worker reading the tests' data, in temporary directories, and its peers on loopback.
fn worker() -> Worker {
    let tmp = std::env::temp_dir();
    let args = [
        "--allow",
        tmp.to_str().unwrap(),
        "--peer",
        "http://127.0.0.1",
    ];
    Worker::start(&args).unwrap_or_else(|e| panic!("the worker did not start: {e}"))
}

fn gen(dir: &Path) {
    let out = rayquet(&[
        "gen",
        dir.to_str().unwrap(),
        "--files",
        &FILES.to_string(),
        "--row-groups",
        &ROW_GROUPS.to_string(),
        "--rows",
        &ROWS.to_string(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Rows per `l_returnflag`, by parquet's own reader.
fn reference_counts(dir: &Path) -> std::collections::BTreeMap<String, u64> {
    let mut counts = std::collections::BTreeMap::new();
    for i in 0..FILES {
        let path = dir.join(format!("part-{i:05}.parquet"));
        let (_, batches) =
            rayquet_testkit::reference(&path, Some(&["l_returnflag"]), 4096).unwrap();
        for b in batches {
            let col = b.column(0);
            let flags = arrow::compute::cast(col, &arrow::datatypes::DataType::Utf8).unwrap();
            for f in flags.as_string::<i32>().iter() {
                *counts.entry(f.unwrap().to_string()).or_insert(0) += 1;
            }
        }
    }
    counts
}

const QUERY: &str = "SELECT l_returnflag, count(*) AS n, sum(l_linenumber) AS s FROM t \
                     WHERE l_quantity >= 0 GROUP BY 1 ORDER BY 1";

#[test]
fn sql_on_worker_processes_equals_the_local_run() {
    let dir = tempfile::tempdir().unwrap();
    gen(dir.path());
    let table = format!("t={}", dir.path().display());
    let local = json(&["sql", QUERY, "--parquet", &table, "--json"]);
    assert_eq!(local["workers"].as_array().unwrap().len(), 0);

    let want = reference_counts(dir.path());
    let result = local["result"].as_array().unwrap();
    let got: std::collections::BTreeMap<String, u64> = result
        .iter()
        .map(|r| {
            (
                r["l_returnflag"].as_str().unwrap().to_string(),
                r["n"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got, want,
        "counts per l_returnflag against parquet's reader"
    );

    let workers: Vec<Worker> = (0..3).map(|_| worker()).collect();
    let urls = workers
        .iter()
        .map(|w| w.url.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let out = dir.path().join("result.arrow");
    let remote = json(&[
        "sql",
        QUERY,
        "--parquet",
        &table,
        "--workers",
        &urls,
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        remote["result"], local["result"],
        "distributed vs in-process"
    );
    assert_eq!(remote["rows"], local["rows"]);
    let scans = remote["workers"].as_array().unwrap();
    assert_eq!(scans.len(), 3);
    let mut units = 0;
    let mut rows = 0;
    for w in scans {
        assert!(
            w["units"].as_u64().unwrap() >= 1,
            "a worker scanned nothing: {w}"
        );
        units += w["units"].as_u64().unwrap();
        rows += w["rows"].as_u64().unwrap();
    }
    // Units are files or runs of their row groups: at least one per file, at most one per
    // row group (the rows below show each row group was read once).
    assert!(
        (FILES as u64..=FILES as u64 * ROW_GROUPS).contains(&units),
        "units: {scans:?}"
    );
    assert_eq!(
        rows,
        FILES as u64 * ROW_GROUPS * ROWS,
        "every row scanned once"
    );

    // --out holds the same rows.
    let file = std::fs::File::open(&out).unwrap();
    let reader = arrow::ipc::reader::FileReader::try_new(file, None).unwrap();
    let mut total = 0;
    for b in reader {
        let b = b.unwrap();
        let n = b.column_by_name("n").unwrap().as_primitive::<Int64Type>();
        total += n.iter().map(|v| v.unwrap() as u64).sum::<u64>();
        assert_eq!(n.null_count(), 0);
    }
    assert_eq!(total, FILES as u64 * ROW_GROUPS * ROWS);

    // Several statements from a file, on the workers: the view's query is the result.
    let file = dir.path().join("q.sql");
    std::fs::write(
        &file,
        format!("-- counts per flag, through a view\nCREATE VIEW v AS {QUERY};\nSELECT * FROM v ORDER BY 1;\nDROP VIEW v;\n"),
    )
    .unwrap();
    let viewed = json(&[
        "sql",
        "-f",
        file.to_str().unwrap(),
        "--parquet",
        &table,
        "--workers",
        &urls,
        "--json",
    ]);
    assert_eq!(
        viewed["result"], local["result"],
        "through a view, on workers"
    );

    // Human output: the table, and what each worker scanned on stderr.
    let out = rayquet(&["sql", QUERY, "--parquet", &table, "--workers", &urls]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("l_returnflag"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for w in &workers {
        assert!(stderr.contains(&w.url), "{stderr}");
    }
}

#[test]
fn statements_files_and_comments() {
    let dir = tempfile::tempdir().unwrap();
    gen(dir.path());
    let table = format!("t={}", dir.path().display());
    let total = FILES as u64 * ROW_GROUPS * ROWS;
    let want = reference_counts(dir.path());
    let counts = |v: &serde_json::Value| -> std::collections::BTreeMap<String, u64> {
        v["result"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    r["l_returnflag"].as_str().unwrap().to_string(),
                    r["n"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    // A query that begins with a comment is a query, not an option.
    let commented = json(&[
        "sql",
        "-- rows per flag\nSELECT l_returnflag, count(*) AS n FROM t GROUP BY 1 /* all */",
        "--parquet",
        &table,
        "--json",
    ]);
    assert_eq!(counts(&commented), want);
    // Several statements: run in order; the last that returns rows is the result (the DROP
    // after it returns none).
    let script = "CREATE VIEW v AS SELECT l_returnflag, count(*) AS n FROM t GROUP BY 1;\n\
                  -- the view's rows\nSELECT * FROM v;\nDROP VIEW v;";
    let multi = json(&["sql", script, "--parquet", &table, "--json"]);
    assert_eq!(counts(&multi), want);
    let summed = json(&[
        "sql",
        "CREATE VIEW v AS SELECT count(*) AS n FROM t; SELECT n AS total FROM v",
        "--parquet",
        &table,
        "--json",
    ]);
    assert_eq!(summed["result"][0]["total"].as_u64(), Some(total));
    // From a file, and from stdin.
    let file = dir.path().join("q.sql");
    std::fs::write(&file, script).unwrap();
    let from_file = json(&[
        "sql",
        "-f",
        file.to_str().unwrap(),
        "--parquet",
        &table,
        "--json",
    ]);
    assert_eq!(counts(&from_file), want);
    let mut child = Command::new(env!("CARGO_BIN_EXE_rayquet"))
        .args(["sql", "-f", "-", "--parquet", &table, "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_stdin: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(counts(&from_stdin), want);
    // Errors: a missing file is named; a query and a file, or neither, is a usage error.
    let missing = dir.path().join("nope.sql");
    let out = rayquet(&["sql", "-f", missing.to_str().unwrap(), "--parquet", &table]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope.sql"));
    let out = rayquet(&["sql", "SELECT 1", "-f", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "a query and a file");
    let out = rayquet(&["sql", "--parquet", &table]);
    assert_eq!(out.status.code(), Some(2), "no query");
    // A statement that fails stops the run with its error.
    let out = rayquet(&[
        "sql",
        "SELECT 1; SELECT * FROM nope; SELECT 2",
        "--parquet",
        &table,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nope"));
}

#[test]
fn a_dead_worker_is_a_clean_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    gen(dir.path());
    let live = worker();
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let table = format!("t={}", dir.path().display());
    let workers = format!("{},{dead}", live.url);
    let out = rayquet(&["sql", QUERY, "--parquet", &table, "--workers", &workers]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(
        stderr.contains(&dead),
        "the error does not name {dead}: {stderr}"
    );
}

#[test]
fn bad_arguments_are_clean_errors() {
    let dir = tempfile::tempdir().unwrap();
    gen(dir.path());
    let table = format!("t={}", dir.path().display());
    for (args, needle) in [
        (
            vec!["sql", "SELECT * FROM nope", "--parquet", &table],
            "nope",
        ),
        (
            vec!["sql", "SELECT * FROM t", "--parquet", "t=/does/not/exist"],
            "/does/not/exist",
        ),
        (
            vec!["sql", "SELECT 1", "--parquet", &table, "--parquet", &table],
            "given twice",
        ),
        (
            vec!["sql", "SELECT 1", "--snapshot", "x=1"],
            "no --iceberg x",
        ),
    ] {
        let out = rayquet(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
    }
}

/// `--union-by-name`: three files whose schemas differ (`a` int32, int64 and uint32; `b` in
/// two; `c` in one) read as one table, in this process and on a worker (which maps each file
/// to the table's schema itself), against parquet's reader with arrow's `cast`.
#[test]
fn files_that_differ_by_name_locally_and_on_a_worker() {
    use arrow::array::{ArrayRef, Float32Array, Int32Array, Int64Array, RecordBatch};
    use arrow::array::{StringArray, UInt32Array};
    use arrow::datatypes::DataType;
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<Vec<(&str, ArrayRef)>> = vec![
        vec![
            ("a", Arc::new(Int32Array::from(vec![1, -2, 3]))),
            ("b", Arc::new(StringArray::from(vec!["x", "y", "z"]))),
        ],
        vec![
            ("c", Arc::new(Float32Array::from(vec![Some(1.5), None]))),
            ("a", Arc::new(Int64Array::from(vec![1 << 40, 5]))),
        ],
        vec![
            ("b", Arc::new(StringArray::from(vec![Some("w"), None]))),
            ("a", Arc::new(UInt32Array::from(vec![u32::MAX, 7]))),
        ],
    ];
    let (mut rows, mut sum_a, mut count_b, mut count_c) = (0u64, 0i64, 0u64, 0u64);
    for (i, columns) in files.into_iter().enumerate() {
        let path = dir.path().join(format!("{i}.parquet"));
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        std::fs::write(&path, rayquet_testkit::write_parquet(&[batch], 2)).unwrap();
        let (_, read) = rayquet_testkit::reference(&path, None, 1024).unwrap();
        for b in read {
            rows += b.num_rows() as u64;
            let a = arrow::compute::cast(b.column_by_name("a").unwrap(), &DataType::Int64).unwrap();
            sum_a += a.as_primitive::<Int64Type>().iter().flatten().sum::<i64>();
            let present = |name: &str| {
                b.column_by_name(name)
                    .map_or(0, |c| c.len() - c.null_count())
            };
            count_b += present("b") as u64;
            count_c += present("c") as u64;
        }
    }
    let want = serde_json::json!([{"n": rows, "sa": sum_a, "nb": count_b, "nc": count_c}]);
    let query = "SELECT count(*) AS n, sum(a) AS sa, count(b) AS nb, count(c) AS nc FROM t";
    let table = format!("t={}", dir.path().display());
    let local = json(&[
        "sql",
        query,
        "--parquet",
        &table,
        "--union-by-name",
        "--json",
    ]);
    assert_eq!(local["result"], want, "in this process");
    let w = worker();
    let remote = json(&[
        "sql",
        query,
        "--parquet",
        &table,
        "--union-by-name",
        "--workers",
        w.url.as_str(),
        "--json",
    ]);
    assert_eq!(remote["result"], want, "on a worker");
    // Without the flag: the first file's schema (`a` int32), and a later file whose `a`
    // does not fit it an error naming that file (whichever is read first) and the option.
    let out = rayquet(&["sql", "SELECT sum(a) FROM t", "--parquet", &table]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let names_a_later_file = err.contains("1.parquet") || err.contains("2.parquet");
    assert!(names_a_later_file && err.contains("union by name"), "{err}");
}
