//! Scans against a real S3 endpoint: moto's server, started per test on a free loopback port
//! (`moto_server`, else `python3 -m moto.server`), or the endpoint in `RAYQUET_S3_ENDPOINT`
//! (it must accept the unsigned `PUT /bucket` that creates a bucket, as moto does).
//!
//! Without moto installed, the tests make a venv of their own and install moto into it
//! (`rayquet_testkit::s3`); when no server can be started they fail, saying how to fix it.
#![cfg(feature = "cloud")]

use rayquet::ScanBuilder;
use rayquet_testkit as common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use rayquet::{ErrorKind, Scan};

use common::s3::{dataset, S3};
use common::{read_all, reference, run_with_timeout, Outcome};

/// Deadline for one scan: a hang is a failure, not a stuck test run.
const SCAN_TIMEOUT: Duration = Duration::from_secs(30);
/// Read a scan on its own thread within [`SCAN_TIMEOUT`]; panics on a hang or a panic.
fn scan_outcome(
    what: &str,
    scan: rayquet::Result<Scan>,
) -> rayquet::Result<(SchemaRef, Vec<RecordBatch>)> {
    match run_with_timeout(SCAN_TIMEOUT, move || read_all(scan)) {
        Outcome::Done(r) => r,
        Outcome::Panicked(m) => panic!("{what}: the scan panicked: {m}"),
        Outcome::TimedOut => panic!("{what}: no result within {SCAN_TIMEOUT:?}"),
    }
}

#[test]
fn prefix_scan_matches_reference() {
    let s3 = S3::get();
    let data = dataset(&s3, "listing", "table");

    let url = "s3://listing/table/";
    let (schema, batches) = scan_outcome(url, s3.scan(url))
        .unwrap_or_else(|e| panic!("{url}: {:?} error: {e}", e.kind()));

    let mut expected = Vec::new();
    let mut ref_schema = None;
    for (local, _) in &data.files {
        let (s, b) = reference(local, None, 1024).expect("reference");
        ref_schema.get_or_insert(s);
        expected.extend(b);
    }
    let ref_schema = ref_schema.unwrap();
    assert_eq!(schema.fields(), ref_schema.fields(), "{url}: schema");
    common::assert_same_rows(&ref_schema, &expected, &batches, url);
}

#[test]
fn single_object_with_projection() {
    let s3 = S3::get();
    let data = dataset(&s3, "single", "t");
    let (local, key) = &data.files[2];
    let url = format!("s3://single/{key}");
    let columns = ["nested.y", "id", "tags"];

    let scan = s3.scan(&url).map(|s| s.columns(columns).batch_size(500));
    let (schema, batches) =
        scan_outcome(&url, scan).unwrap_or_else(|e| panic!("{url}: {:?} error: {e}", e.kind()));

    // parquet's projection keeps file order; rayquet keeps the order in which top-level columns
    // are first named (`Scan::columns`): nested, id, tags.
    let (file_order_schema, file_order) =
        reference(local, Some(&columns), 1024).expect("reference");
    let order: Vec<usize> = ["nested", "id", "tags"]
        .iter()
        .map(|c| file_order_schema.index_of(c).unwrap())
        .collect();
    let ref_schema = Arc::new(file_order_schema.project(&order).unwrap());
    let expected: Vec<RecordBatch> = file_order
        .iter()
        .map(|b| b.project(&order).unwrap())
        .collect();
    assert_eq!(
        schema.fields(),
        ref_schema.fields(),
        "{url}: projected schema"
    );
    assert!(batches.iter().all(|b| b.num_rows() <= 500), "batch_size");
    common::assert_same_rows(&ref_schema, &expected, &batches, &url);
}

#[test]
fn missing_key_is_not_found() {
    let s3 = S3::get();
    let _data = dataset(&s3, "keys", "t");
    for url in [
        "s3://keys/t/no-such-file.parquet",
        "s3://keys/no-such-prefix/",
    ] {
        let err = match scan_outcome(url, s3.scan(url)) {
            Ok((_, b)) => panic!("{url}: expected NotFound, got {} batches", b.len()),
            Err(e) => e,
        };
        eprintln!("{url}: {err}");
        assert_eq!(err.kind(), ErrorKind::NotFound, "{url}: {err}");
        let named = url.trim_start_matches("s3://keys/").trim_end_matches('/');
        assert!(
            err.to_string().contains(named) || err.path().is_some_and(|p| p.contains(named)),
            "{url}: the error does not name the key: {err} (path {:?})",
            err.path()
        );
    }
}

#[test]
fn missing_bucket_is_a_clear_error() {
    let s3 = S3::get();
    for url in [
        "s3://no-such-bucket-rq/t/part-0.parquet",
        "s3://no-such-bucket-rq/t/",
    ] {
        let err = match scan_outcome(url, s3.scan(url)) {
            Ok((_, b)) => panic!("{url}: expected an error, got {} batches", b.len()),
            Err(e) => e,
        };
        eprintln!("{url}: {err}");
        assert!(
            matches!(err.kind(), ErrorKind::NotFound | ErrorKind::Io),
            "{url}: kind {:?}: {err}",
            err.kind()
        );
        assert!(
            err.path().is_some_and(|p| p.contains("no-such-bucket-rq")),
            "{url}: path() {:?} does not name the bucket: {err}",
            err.path()
        );
    }
}

/// Endpoint and credentials from `AWS_*` environment variables instead of `store_option`:
/// run in a child process (this test binary, filtered to `env_child`), since setting the
/// environment of a multi-threaded test process is unsound.
#[test]
fn endpoint_and_credentials_from_env() {
    let s3 = S3::get();
    let data = dataset(&s3, "envvars", "t");
    let output = Command::new(std::env::current_exe().unwrap())
        .args([
            "s3::env_child",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("RAYQUET_ENV_CHILD_URL", "s3://envvars/t/")
        .env(
            "RAYQUET_ENV_CHILD_EXPECT",
            data.files[0].0.parent().unwrap(),
        )
        .env("AWS_ENDPOINT", &s3.endpoint)
        .env("AWS_ALLOW_HTTP", "true")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
        .output()
        .expect("run child test");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "child test failed ({}):\n{stdout}\n{stderr}",
        output.status
    );
    assert!(
        stderr.contains("env_child: ok"),
        "child did not run:\n{stdout}\n{stderr}"
    );
}

/// The child half of [`endpoint_and_credentials_from_env`]; does nothing when run directly.
#[test]
fn env_child() {
    let (Ok(url), Ok(dir)) = (
        std::env::var("RAYQUET_ENV_CHILD_URL"),
        std::env::var("RAYQUET_ENV_CHILD_EXPECT"),
    ) else {
        return;
    };
    let (_, batches) = scan_outcome(&url, Scan::new(&url))
        .unwrap_or_else(|e| panic!("{url}: {:?} error: {e}", e.kind()));
    let mut expected = Vec::new();
    let mut schema = None;
    for i in 0..3 {
        let (s, b) = reference(
            &PathBuf::from(&dir).join(format!("part-{i}.parquet")),
            None,
            1024,
        )
        .expect("reference");
        schema.get_or_insert(s);
        expected.extend(b);
    }
    common::assert_same_rows(&schema.unwrap(), &expected, &batches, &url);
    eprintln!("env_child: ok");
}

/// pyiceberg's FileIO property names (what a catalog's configuration and `storage_options`
/// copied from pyiceberg carry) configure the store as object_store's own keys do.
#[test]
fn pyiceberg_file_io_keys_configure_the_store() {
    let s3 = S3::get();
    let data = dataset(&s3, "fileio", "t");
    let (local, key) = &data.files[1];
    let url = format!("s3://fileio/{key}");
    let scan = Scan::new(&url).map(|s| {
        s.store_option("s3.endpoint", &s3.endpoint)
            .store_option("s3.region", "us-east-1")
            .store_option("s3.access-key-id", "test")
            .store_option("s3.secret-access-key", "test")
            .store_option("s3.path-style-access", "true")
    });
    let (schema, batches) =
        scan_outcome(&url, scan).unwrap_or_else(|e| panic!("{url}: {:?} error: {e}", e.kind()));
    let (ref_schema, expected) = reference(local, None, 1024).expect("reference");
    assert_eq!(schema.fields(), ref_schema.fields(), "{url}: schema");
    common::assert_same_rows(&ref_schema, &expected, &batches, &url);

    // A misspelled key fails the build, naming it and the key meant, before any request.
    let e = Scan::new(&url)
        .unwrap()
        .store_option("s3.endpoint", &s3.endpoint)
        .store_option("s3.acces-key-id", "test")
        .build()
        .expect_err("a misspelled store option must fail the scan");
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let msg = e.to_string();
    assert!(msg.contains("\"s3.acces-key-id\""), "{msg}");
    assert!(msg.contains("\"s3.access-key-id\""), "{msg}");
}
