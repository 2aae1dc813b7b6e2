//! The `rayquet scan --iceberg` and `--delta` command lines against tables the formats' own
//! writers wrote (rows checked against the tables' known contents and their own readers).

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Int64Type;
use rayquet_testkit::delta_tables::{read_table, time_travel_fixture, ReadOptions};
use rayquet_testkit::iceberg_tables::{project, sorted_rows, time_travel};

/// The `id` column of `batches`, sorted.
fn ids_of(batches: &[RecordBatch]) -> Vec<i64> {
    let mut ids: Vec<i64> = batches
        .iter()
        .flat_map(|b| {
            let c = b.column_by_name("id").expect("an id column");
            c.as_primitive::<Int64Type>().values().to_vec()
        })
        .collect();
    ids.sort_unstable();
    ids
}

#[test]
fn cli_scans_tables() {
    use std::process::Command;
    let fx = time_travel();
    let json = |args: &[&str]| -> serde_json::Value {
        let out = Command::new(env!("CARGO_BIN_EXE_rayquet"))
            .args(args)
            .output()
            .expect("run rayquet");
        assert!(
            out.status.success(),
            "rayquet {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let dir = fx.table_root.to_str().unwrap();
    let rows_of = |v: serde_json::Value| v["rows"].as_u64().unwrap();
    assert_eq!(rows_of(json(&["scan", "--iceberg", dir, "--json"])), 30);
    assert_eq!(
        rows_of(json(&[
            "scan",
            "--iceberg",
            &fx.metadata_location,
            "--json"
        ])),
        30
    );
    let s1 = fx.snapshot_ids[0].to_string();
    assert_eq!(
        rows_of(json(&[
            "scan",
            "--iceberg",
            dir,
            "--snapshot",
            &s1,
            "--json"
        ])),
        10
    );
    assert_eq!(
        rows_of(json(&["scan", "--iceberg", dir, "--ref", "b1", "--json"])),
        25
    );
    assert_eq!(
        rows_of(json(&[
            "scan",
            "--iceberg",
            dir,
            "--filter",
            "id >= 5 AND id < 25",
            "--columns",
            "v,_file",
            "--json"
        ])),
        20
    );
    // --out writes the rows in to_arrow's schema.
    let out = fx.dir.path().join("out.arrow");
    json(&[
        "scan",
        "--iceberg",
        dir,
        "--columns",
        "v,id",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    let reader =
        arrow::ipc::reader::FileReader::try_new(std::fs::File::open(&out).unwrap(), None).unwrap();
    let schema = reader.schema();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(
        schema,
        project(&fx.expected_current(), &["v", "id"]).schema()
    );
    assert_eq!(
        sorted_rows(&batches),
        sorted_rows(&[project(&fx.expected_current(), &["v", "id"])])
    );
    let bad = Command::new(env!("CARGO_BIN_EXE_rayquet"))
        .args(["scan", "--iceberg", dir, "--snapshot", "1", "--json"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("snapshot 1"));
}

#[test]
fn cli_scan_delta() {
    use std::process::Command;
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rayquet"))
            .args(args)
            .output()
            .expect("run rayquet")
    };
    let json = |args: &[&str]| -> serde_json::Value {
        let out = run(args);
        assert!(
            out.status.success(),
            "rayquet {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("json")
    };
    let dir = tempfile::tempdir().unwrap();
    let f = time_travel_fixture(&dir.path().join("tt"));
    let table = f.root.to_str().unwrap();

    let r = json(&["scan", "--delta", table, "--json"]);
    assert_eq!(r["rows"], f.expected().num_rows() as u64);
    let r = json(&["scan", "--delta", table, "--version", "2", "--json"]);
    assert_eq!(r["rows"], f.versions[&2].num_rows() as u64);
    let reference = read_table(&f.url, &ReadOptions::default()).unwrap();
    let filtered = ids_of(&reference.batches)
        .into_iter()
        .filter(|i| *i >= 300)
        .collect::<Vec<_>>();
    let out = dir.path().join("out.arrow");
    let r = json(&[
        "scan",
        "--delta",
        f.url.as_str(),
        "--columns",
        "id,extra",
        "--filter",
        "id >= 300",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(r["rows"], filtered.len() as u64);
    let reader =
        arrow::ipc::reader::FileReader::try_new(std::fs::File::open(&out).unwrap(), None).unwrap();
    let names: Vec<String> = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["id", "extra"]);
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(ids_of(&batches), filtered);

    // A directory that is not a table: exit 1, an error naming it, no panic.
    let not_table = dir.path().join("empty");
    std::fs::create_dir_all(&not_table).unwrap();
    let out = run(&["scan", "--delta", not_table.to_str().unwrap(), "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("empty"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn cli_scans_iceberg_variant() {
    use std::process::Command;
    let fx = rayquet_testkit::iceberg_v3::v3_variant(16);
    let dir = fx.table_root.to_str().unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rayquet"))
            .args(args)
            .output()
            .expect("run rayquet")
    };
    let expected = fx.expected_current();
    // The summary, human and JSON; --out holds the variants in Arrow's variant form.
    let out = fx.dir.path().join("variant.arrow");
    for json in [false, true] {
        let mut args = vec!["scan", "--iceberg", dir, "--columns", "id,v,st"];
        args.extend(["--out", out.to_str().unwrap()]);
        if json {
            args.push("--json");
        }
        let o = run(&args);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success(),
            "rayquet {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        if json {
            let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(v["rows"], expected.num_rows() as u64);
        } else {
            assert!(stdout.contains("rows"), "{stdout}");
        }
    }
    let reader =
        arrow::ipc::reader::FileReader::try_new(std::fs::File::open(&out).unwrap(), None).unwrap();
    let schema = reader.schema();
    let v = schema.field_with_name("v").unwrap();
    assert_eq!(v.extension_type_name(), Some("arrow.parquet.variant"));
    assert_eq!(v.data_type(), &rayquet_iceberg::variant_type());
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    // The values, as JSON text, by id.
    let mut got: Vec<(i64, Option<String>)> = Vec::new();
    for b in &batches {
        let ids = b.column(0).as_primitive::<Int64Type>();
        let text = parquet::variant::variant_to_json(b.column(1)).unwrap();
        for r in 0..b.num_rows() {
            let t = (!text.is_null(r)).then(|| {
                serde_json::from_str::<serde_json::Value>(text.value(r))
                    .unwrap()
                    .to_string()
            });
            got.push((ids.value(r), t));
        }
    }
    got.sort();
    let ids = expected.column(0).as_primitive::<Int64Type>();
    let text = expected.column(1).as_string::<i32>();
    let mut want: Vec<(i64, Option<String>)> = (0..expected.num_rows())
        .map(|r| {
            (
                ids.value(r),
                text.is_valid(r).then(|| text.value(r).to_string()),
            )
        })
        .collect();
    want.sort();
    assert_eq!(got, want);

    // A filter on a variant column: exit 1, a clear error.
    let o = run(&["scan", "--iceberg", dir, "--filter", "v IS NULL", "--json"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("variant column \"v\""), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
