//! `rayquet scan --iceberg ns.table --catalog NAME` against catalogs configured in a
//! `.pyiceberg.yaml` as a pyiceberg user configures them, holding tables pyiceberg wrote
//! through its SqlCatalog:
//! - REST (feature `rest`): the tables in S3 (moto), served by `tests/catalogs/rest_server.py`
//!   (the REST spec's read endpoints, OAuth2 client credentials, vended credentials);
//! - SQL (feature `sql-catalog`): the SqlCatalog's own database, sqlite (tables in S3, the
//!   catalog's `s3.*` properties) and a Postgres server the test starts (tables on disk);
//! - Glue (feature `glue-catalog`): moto's Glue, the tables in its S3, written by pyiceberg's
//!   GlueCatalog.
//!
//! Rows are compared with pyiceberg's read of the same table through the same catalog.

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

/// pyiceberg with pyarrow and its SQL catalog (sqlite, Postgres).
fn python() -> PathBuf {
    python::venv(&scripts().join("requirements.txt"))
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

/// `rayquet` with pyiceberg's configuration in `home` and no AWS settings of the environment.
fn rayquet(home: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rayquet"));
    c.env("PYICEBERG_HOME", home)
        .env_remove("AWS_ENDPOINT")
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY");
    c
}

/// `rayquet scan --iceberg TABLE --catalog CATALOG` reads the rows and columns pyiceberg reads
/// through the same catalog (configured in `home`); both are written under `dir`.
fn same_as_pyiceberg(python: &Path, home: &Path, dir: &Path, catalog: &str, table: &str) {
    let want = dir.join(format!("{table}.pyiceberg.arrow"));
    run(
        Command::new(python)
            .env("PYICEBERG_HOME", home)
            .arg(scripts().join("tables.py"))
            .args(["read", catalog, table])
            .arg(&want),
        &format!("pyiceberg's read of {table}"),
    );
    let got = dir.join(format!("{table}.rayquet.arrow"));
    run(
        rayquet(home)
            .args(["scan", "--iceberg", table, "--catalog", catalog, "--out"])
            .arg(&got),
        &format!("rayquet scan --iceberg {table} --catalog {catalog}"),
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

/// `rayquet sql` over `db.events` of `catalog`, registered alone (`--iceberg t=db.events`)
/// and as a table of the whole catalog (`CATALOG.db.events`): the count and sum of ids
/// pyiceberg read (its read is in `dir`, from [`same_as_pyiceberg`]); the nested namespace's
/// table and a missing table through the catalog too.
#[cfg(feature = "datafusion")]
fn sql_matches_pyiceberg(home: &Path, dir: &Path, catalog: &str, nested: bool) {
    let sql = |extra: &[&str], query: &str| {
        let out = run(
            rayquet(home)
                .args(["sql", "--catalog", catalog, "--json"])
                .args(extra)
                .arg(query),
            &format!("rayquet sql --catalog {catalog} {extra:?} {query}"),
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (events, names) = rows(&dir.join("db.events.pyiceberg.arrow"));
    let id = names.iter().position(|n| n == "id").unwrap();
    let sum: i64 = events
        .iter()
        .map(|r| r.split('|').nth(id).unwrap().parse::<i64>().unwrap())
        .sum();
    for v in [
        sql(
            &["--iceberg", "t=db.events"],
            "SELECT count(*) AS n, sum(id) AS s FROM t",
        ),
        sql(
            &[],
            &format!("SELECT count(*) AS n, sum(id) AS s FROM {catalog}.db.events"),
        ),
    ] {
        assert_eq!(
            v["result"][0]["n"].as_u64(),
            Some(events.len() as u64),
            "{v}"
        );
        assert_eq!(v["result"][0]["s"].as_i64(), Some(sum), "{v}");
    }
    if nested {
        let (small, _) = rows(&dir.join("db.inner.small.pyiceberg.arrow"));
        let v = sql(
            &[],
            &format!("SELECT count(*) AS n FROM {catalog}.\"db.inner\".small"),
        );
        assert_eq!(
            v["result"][0]["n"].as_u64(),
            Some(small.len() as u64),
            "{v}"
        );
    }
    let out = rayquet(home)
        .args(["sql", "--catalog", catalog])
        .arg(format!("SELECT * FROM {catalog}.db.missing"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("db.missing"), "{err}");
    assert!(err.to_lowercase().contains("not found"), "{err}");
}

/// `rayquet scan --iceberg TABLE --catalog CATALOG` (with `extra` arguments) fails, saying
/// each of `want`.
fn fails(home: &Path, catalog: &str, extra: &[&str], table: &str, want: &[&str]) {
    let out = rayquet(home)
        .args(["scan", "--iceberg", table, "--catalog", catalog])
        .args(extra)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{table} {extra:?} should fail");
    for w in want {
        assert!(err.contains(w), "{table} {extra:?}: {w:?} not in {err}");
    }
}

#[cfg(feature = "rest")]
#[test]
fn cli_reads_tables_through_a_rest_catalog() {
    let s3 = S3::get();
    s3.create_bucket("rest-catalog");
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:///{}/catalog.db", dir.path().display());
    let warehouse = "s3://rest-catalog/warehouse";
    let s3_props = s3_props(&s3.endpoint);
    seed(&python, &db, warehouse, "backing", &s3_props);

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
    for table in ["db.events", "db.inner.small"] {
        same_as_pyiceberg(&python, &home, dir.path(), "lake", table);
    }

    #[cfg(feature = "datafusion")]
    sql_matches_pyiceberg(&home, dir.path(), "lake", true);

    // Errors name the catalog and the table.
    let fails =
        |extra: &[&str], table: &str, want: &[&str]| fails(&home, "lake", extra, table, want);
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
    let out = rayquet(&home)
        .args(["scan", "--iceberg", "db.events", "--catalog", "elsewhere"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("\"elsewhere\" is not configured"),
        "{err}"
    );
}

/// `s3.*` properties for moto's S3 at `endpoint`, as `KEY=VALUE`.
fn s3_props(endpoint: &str) -> Vec<String> {
    vec![
        format!("s3.endpoint={endpoint}"),
        "s3.access-key-id=test".to_string(),
        "s3.secret-access-key=test".to_string(),
        "s3.region=us-east-1".to_string(),
    ]
}

/// `KEY=VALUE` properties as the lines of a catalog's section of a `.pyiceberg.yaml`.
fn yaml_lines(props: &[String]) -> String {
    props
        .iter()
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap();
            format!("    {k}: {v}\n")
        })
        .collect()
}

/// Seed `db.events` and `db.inner.small` into the SqlCatalog `name` at `db` (SQLAlchemy URL;
/// `glue`: `db.events` into pyiceberg's GlueCatalog).
fn seed(python: &Path, db: &str, warehouse: &str, name: &str, props: &[String]) {
    let mut seed = Command::new(python);
    seed.arg(scripts().join("tables.py"))
        .args(["seed", "--warehouse", warehouse, "--name", name]);
    match db {
        "glue" => seed.arg("--glue"),
        db => seed.args(["--db", db]),
    };
    for p in props {
        seed.args(["--property", p]);
    }
    run(&mut seed, &format!("seed the catalog {name} in {db}"));
}

#[cfg(feature = "sql-catalog")]
#[test]
fn cli_reads_tables_through_sql_catalogs() {
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();

    // sqlite, the tables in S3: the catalog's `s3.*` properties reach the FileIO and the data
    // files (the environment has no AWS settings).
    let s3 = S3::get();
    s3.create_bucket("sql-catalog");
    let s3_props = s3_props(&s3.endpoint);
    let sqlite = format!("sqlite:///{}/catalog.db", dir.path().display());
    seed(&python, &sqlite, "s3://sql-catalog/wh", "lite", &s3_props);

    // Postgres, the tables on disk.
    let pg = rayquet_testkit::postgres::Postgres::start();
    let pg_url = pg
        .url()
        .replacen("postgresql://", "postgresql+psycopg2://", 1);
    let wh = format!("file://{}/pg-warehouse", dir.path().display());
    seed(&python, &pg_url, &wh, "pg", &[]);

    let s3_yaml = yaml_lines(&s3_props);
    std::fs::write(
        home.join(".pyiceberg.yaml"),
        format!("catalog:\n  lite:\n    uri: {sqlite}\n{s3_yaml}  pg:\n    uri: {pg_url}\n"),
    )
    .unwrap();

    for catalog in ["lite", "pg"] {
        let out = dir.path().join(catalog);
        std::fs::create_dir(&out).unwrap();
        for table in ["db.events", "db.inner.small"] {
            same_as_pyiceberg(&python, &home, &out, catalog, table);
        }
        #[cfg(feature = "datafusion")]
        sql_matches_pyiceberg(&home, &out, catalog, true);
        fails(
            &home,
            catalog,
            &[],
            "db.missing",
            &["table not found", &format!("{catalog:?}"), "\"db.missing\""],
        );
        fails(
            &home,
            catalog,
            &[],
            "nowhere.events",
            &[
                "namespace not found",
                &format!("{catalog:?}"),
                "\"nowhere.events\"",
            ],
        );
    }

    // A wrong password, a server that is not there, a sqlite file that is not there, and a
    // database that holds no catalog.
    let wrong = pg_url.replace(rayquet_testkit::postgres::PASSWORD, "wrong");
    fails(
        &home,
        "pg",
        &["--catalog-property", &format!("uri={wrong}")],
        "db.events",
        &["permission denied", "\"pg\"", "login refused", ":***@"],
    );
    let nowhere = format!("postgresql://rayquet:x@127.0.0.1:{}/postgres", free_port());
    fails(
        &home,
        "pg",
        &["--catalog-property", &format!("uri={nowhere}")],
        "db.events",
        &["\"pg\"", "connecting to postgresql://rayquet:***@127.0.0.1"],
    );
    fails(
        &home,
        "lite",
        &["--catalog-property", "uri=sqlite:///no/such/catalog.db"],
        "db.events",
        &["not found", "\"lite\"", "no/such/catalog.db"],
    );
    // Through the whole catalog in SQL, a catalog that cannot be read is the query's error
    // (not DataFusion's "table not found").
    #[cfg(feature = "datafusion")]
    {
        let out = rayquet(&home)
            .args(["sql", "--catalog", "lite"])
            .args(["--catalog-property", "uri=sqlite:///no/such/catalog.db"])
            .arg("SELECT * FROM lite.db.events")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("no sqlite database"),
            "{err}"
        );
    }
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, b"").unwrap();
    fails(
        &home,
        "lite",
        &[
            "--catalog-property",
            &format!("uri=sqlite:///{}", empty.display()),
        ],
        "db.events",
        &["not found", "holds no Iceberg SQL catalog"],
    );
}

#[cfg(feature = "glue-catalog")]
#[test]
fn cli_reads_tables_through_a_glue_catalog() {
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    // moto serves Glue and S3 on one endpoint; the catalog's properties configure both, as a
    // pyiceberg user's would (the environment has no AWS settings).
    let s3 = S3::get();
    s3.create_bucket("glue-catalog");
    let mut props = vec![
        format!("glue.endpoint={}", s3.endpoint),
        "glue.region=us-east-1".to_string(),
        "glue.access-key-id=test".to_string(),
        "glue.secret-access-key=test".to_string(),
    ];
    props.extend(s3_props(&s3.endpoint));
    seed(&python, "glue", "s3://glue-catalog/wh", "glue", &props);
    let yaml = yaml_lines(&props);
    std::fs::write(
        home.join(".pyiceberg.yaml"),
        format!("catalog:\n  glue:\n    type: glue\n{yaml}"),
    )
    .unwrap();
    same_as_pyiceberg(&python, &home, dir.path(), "glue", "db.events");
    #[cfg(feature = "datafusion")]
    sql_matches_pyiceberg(&home, dir.path(), "glue", false);
    fails(
        &home,
        "glue",
        &[],
        "db.missing",
        &["table not found", "\"glue\"", "\"db.missing\""],
    );
    fails(
        &home,
        "glue",
        &[],
        "nowhere.events",
        &["namespace not found", "\"glue\"", "\"nowhere.events\""],
    );
    fails(
        &home,
        "glue",
        &[],
        "db.inner.small",
        &["invalid argument", "one level deep"],
    );
    // moto does not check signatures: botocore's signer checks rayquet's.
    run(
        Command::new(&python)
            .arg(scripts().join("glue_signature.py"))
            .arg(env!("CARGO_BIN_EXE_rayquet")),
        "the Glue request's SigV4 signature, checked by botocore",
    );
    fails(
        &home,
        "glue",
        &["--catalog-property", "glue.endpoint=http://127.0.0.1:9"],
        "db.events",
        &["\"glue\"", "\"db.events\"", "127.0.0.1:9"],
    );
}

/// A loopback port no one listens on.
#[cfg(feature = "sql-catalog")]
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}
