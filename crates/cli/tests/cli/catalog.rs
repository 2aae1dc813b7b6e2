//! `rayquet scan --iceberg ns.table --catalog NAME` against a REST catalog: tables pyiceberg
//! wrote into S3 (moto) through its SqlCatalog, served by `tests/catalogs/rest_server.py` (the
//! REST spec's read endpoints, OAuth2 client credentials, vended credentials), configured in
//! a `.pyiceberg.yaml` as a pyiceberg user configures it. Rows are compared with pyiceberg's
//! read of the same table through the same catalog.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use arrow::array::RecordBatch;
use arrow::ipc::reader::FileReader;
use rayquet_testkit::s3::S3;
use rayquet_testkit::{python, row_strings};

/// The catalog server, killed when the test ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn scripts() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/catalogs")
}

/// pyiceberg (with pyarrow and its sqlite catalog), as the real-writers suite pins it.
fn python() -> PathBuf {
    let reqs =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/real_writers/requirements.txt");
    python::venv(&reqs)
}

fn run(cmd: &mut Command, what: &str) -> std::process::Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Every row of an Arrow IPC file, rendered, sorted; and its column names.
fn rows(path: &Path) -> (Vec<String>, Vec<String>) {
    let reader = FileReader::try_new(std::fs::File::open(path).unwrap(), None).unwrap();
    let names = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let mut rows: Vec<String> = batches.iter().flat_map(row_strings).collect();
    rows.sort();
    (rows, names)
}

#[test]
fn cli_reads_tables_through_a_rest_catalog() {
    let s3 = S3::get();
    s3.create_bucket("rest-catalog");
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:///{}/catalog.db", dir.path().display());
    let warehouse = "s3://rest-catalog/warehouse";
    let s3_props = [
        format!("s3.endpoint={}", s3.endpoint),
        "s3.access-key-id=test".to_string(),
        "s3.secret-access-key=test".to_string(),
        "s3.region=us-east-1".to_string(),
    ];
    let mut seed = Command::new(&python);
    seed.arg(scripts().join("tables.py"))
        .args(["seed", "--db", &db, "--warehouse", warehouse]);
    for p in &s3_props {
        seed.args(["--property", p]);
    }
    run(&mut seed, "seed the catalog");

    // The server reads metadata with the S3 properties and vends them with each table; the
    // user's configuration has none.
    let mut serve = Command::new(&python);
    serve
        .arg(scripts().join("rest_server.py"))
        .args(["--db", &db, "--warehouse", warehouse, "--prefix", "ice"])
        .args(["--client-id", "rayquet", "--client-secret", "pw"]);
    for p in &s3_props {
        serve.args(["--property", p, "--vend", p]);
    }
    let mut child = serve
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the REST catalog");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _server = Server(child);
    let port = line
        .trim()
        .strip_prefix("port ")
        .expect("the server's port");
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    std::fs::write(
        home.join(".pyiceberg.yaml"),
        format!(
            "catalog:\n  lake:\n    uri: http://127.0.0.1:{port}\n    credential: rayquet:pw\n"
        ),
    )
    .unwrap();
    let rayquet = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_rayquet"));
        c.env("PYICEBERG_HOME", &home)
            .env_remove("AWS_ENDPOINT")
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY");
        c
    };

    for table in ["db.events", "db.inner.small"] {
        let want = dir.path().join(format!("{table}.pyiceberg.arrow"));
        run(
            Command::new(&python)
                .env("PYICEBERG_HOME", &home)
                .arg(scripts().join("tables.py"))
                .args(["read", "lake", table])
                .arg(&want),
            &format!("pyiceberg's read of {table}"),
        );
        let got = dir.path().join(format!("{table}.rayquet.arrow"));
        run(
            rayquet()
                .args(["scan", "--iceberg", table, "--catalog", "lake", "--out"])
                .arg(&got),
            &format!("rayquet scan --iceberg {table} --catalog lake"),
        );
        let (want_rows, want_names) = rows(&want);
        let (got_rows, got_names) = rows(&got);
        assert_eq!(got_names, want_names, "{table}: columns");
        assert!(!want_rows.is_empty(), "{table}: pyiceberg read no rows");
        assert_eq!(got_rows.len(), want_rows.len(), "{table}: row count");
        assert!(
            got_rows == want_rows,
            "{table}: rows differ from pyiceberg's"
        );
    }

    // SQL over a catalog's table: the count and sum of ids pyiceberg read.
    #[cfg(feature = "datafusion")]
    {
        let out = run(
            rayquet().args([
                "sql",
                "--catalog",
                "lake",
                "--iceberg",
                "t=db.events",
                "--json",
                "SELECT count(*) AS n, sum(id) AS s FROM t",
            ]),
            "rayquet sql --catalog lake",
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let (rows, names) = rows(&dir.path().join("db.events.pyiceberg.arrow"));
        let id = names.iter().position(|n| n == "id").unwrap();
        let sum: i64 = rows
            .iter()
            .map(|r| r.split('|').nth(id).unwrap().parse::<i64>().unwrap())
            .sum();
        assert_eq!(v["result"][0]["n"].as_u64(), Some(rows.len() as u64), "{v}");
        assert_eq!(v["result"][0]["s"].as_i64(), Some(sum), "{v}");
    }

    // Errors name the catalog and the table.
    let fails = |extra: &[&str], table: &str, want: &[&str]| {
        let out = rayquet()
            .args(["scan", "--iceberg", table, "--catalog", "lake"])
            .args(extra)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{table} {extra:?} should fail");
        for w in want {
            assert!(err.contains(w), "{table} {extra:?}: {w:?} not in {err}");
        }
    };
    fails(
        &[],
        "db.missing",
        &["not found", "\"lake\"", "\"db.missing\""],
    );
    fails(
        &[],
        "nowhere.events",
        &["not found", "\"lake\"", "\"nowhere.events\""],
    );
    fails(
        &["--catalog-property", "credential=rayquet:wrong"],
        "db.events",
        &["permission denied", "\"lake\"", "\"db.events\""],
    );
    fails(
        &["--catalog-property", "uri=http://127.0.0.1:9"],
        "db.events",
        &["\"lake\"", "\"db.events\"", "127.0.0.1:9"],
    );
    let out = rayquet()
        .args(["scan", "--iceberg", "db.events", "--catalog", "elsewhere"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("\"elsewhere\" is not configured"),
        "{err}"
    );
}
