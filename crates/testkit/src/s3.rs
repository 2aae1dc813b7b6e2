//! An S3 endpoint for tests: moto's server, started per test on a free loopback port
//! (`moto_server`, else `python3 -m moto.server`, else the `python -m moto.server` of a venv
//! the tests make once with `moto-requirements.txt`), or the endpoint in `RAYQUET_S3_ENDPOINT`
//! (it must accept the unsigned `PUT /bucket` that creates a bucket, as moto does), and a small
//! dataset uploaded to it.
//!
//! No S3 test is skipped: when no server can be started, [`S3::get`] panics saying how to
//! provide one.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{
    Float64Array, Int32Array, Int64Array, ListArray, RecordBatch, StringArray, StructArray,
};
use arrow::datatypes::{DataType, Field, Fields, Int32Type, Schema};
use object_store::aws::AmazonS3Builder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use rayquet::{Scan, ScanBuilder};

/// Deadline for moto to answer after it is started.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// An S3 endpoint for one test; stops the server it started when dropped.
pub struct S3 {
    pub endpoint: String,
    pub child: Option<Child>,
}

impl Drop for S3 {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl S3 {
    /// The endpoint to test against: `RAYQUET_S3_ENDPOINT`, or a moto server started now.
    /// Panics, saying how to fix it, when none can be started.
    pub fn get() -> S3 {
        if let Ok(endpoint) = std::env::var("RAYQUET_S3_ENDPOINT") {
            if !endpoint.is_empty() {
                return S3 {
                    endpoint: endpoint.trim_end_matches('/').to_string(),
                    child: None,
                };
            }
        }
        let mut tried = Vec::new();
        for (program, args) in [
            ("moto_server", &[][..]),
            ("python3", &["-m", "moto.server"][..]),
        ] {
            match start_moto(program, args) {
                Ok(s3) => return s3,
                Err(e) => tried.push(format!("`{}`: {e}", [&[program], args].concat().join(" "))),
            }
        }
        // moto installed into a venv of the tests' own (made once, reused by every test).
        let requirements =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("moto-requirements.txt");
        let python = crate::python::venv(&requirements);
        let python = python.to_string_lossy();
        match start_moto(&python, &["-m", "moto.server"]) {
            Ok(s3) => s3,
            Err(e) => {
                tried.push(format!("`{python} -m moto.server`: {e}"));
                panic!(
                    "no S3 server for the S3 tests: install moto (pip install \
                     'moto[server]'), or set RAYQUET_S3_ENDPOINT to an S3 endpoint that \
                     accepts `PUT /bucket`:\n  {}",
                    tried.join("\n  ")
                )
            }
        }
    }

    /// A rayquet scan of `url` configured for this endpoint through `store_option`.
    pub fn scan(&self, url: &str) -> rayquet::Result<Scan> {
        Ok(Scan::new(url)?
            .store_option("aws_endpoint", &self.endpoint)
            .store_option("aws_allow_http", "true")
            .store_option("aws_region", "us-east-1")
            .store_option("aws_access_key_id", "test")
            .store_option("aws_secret_access_key", "test"))
    }

    /// An object_store client of `bucket` at this endpoint, for uploads.
    pub fn store(&self, bucket: &str) -> Arc<dyn ObjectStore> {
        Arc::new(
            AmazonS3Builder::new()
                .with_endpoint(&self.endpoint)
                .with_allow_http(true)
                .with_region("us-east-1")
                .with_access_key_id("test")
                .with_secret_access_key("test")
                .with_bucket_name(bucket)
                .build()
                .expect("AmazonS3Builder"),
        )
    }

    /// Create `bucket` with a plain `PUT /bucket` (object_store cannot create buckets).
    pub fn create_bucket(&self, bucket: &str) {
        let status = http(&self.endpoint, "PUT", &format!("/{bucket}"))
            .unwrap_or_else(|e| panic!("PUT /{bucket} on {}: {e}", self.endpoint));
        assert!(
            status == 200 || status == 409,
            "PUT /{bucket} on {}: HTTP {status}",
            self.endpoint
        );
    }

    /// Upload each `(key, bytes)` to `bucket`.
    pub fn upload(&self, bucket: &str, objects: &[(String, Vec<u8>)]) {
        let store = self.store(bucket);
        // The runtime is made and dropped off any caller's runtime (a tokio test may call this).
        crate::outside_runtime(|| {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            rt.block_on(async {
                for (key, bytes) in objects {
                    store
                        .put(&Path::from(key.as_str()), bytes.clone().into())
                        .await
                        .unwrap_or_else(|e| panic!("upload {key}: {e}"));
                }
            })
        });
    }
}

/// Start moto's server with `program args` on a free loopback port and wait until it answers.
pub fn start_moto(program: &str, args: &[&str]) -> Result<S3, String> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| format!("no free port: {e}"))?
        .port();
    let log = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let out = log.reopen().map_err(|e| e.to_string())?;
    let err = log.reopen().map_err(|e| e.to_string())?;
    let child = Command::new(program)
        .args(args)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut s3 = S3 {
        endpoint: format!("http://127.0.0.1:{port}"),
        child: Some(child),
    };
    let deadline = Instant::now() + START_TIMEOUT;
    loop {
        if let Ok(Some(status)) = s3.child.as_mut().unwrap().try_wait() {
            s3.child = None;
            return Err(format!("exited ({status}): {}", tail(log.path())));
        }
        if http(&s3.endpoint, "GET", "/").is_ok() {
            return Ok(s3);
        }
        if Instant::now() > deadline {
            return Err(format!(
                "did not answer within {START_TIMEOUT:?}: {}",
                tail(log.path())
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The last lines of a log file.
pub fn tail(path: &std::path::Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

/// A bodiless HTTP/1.1 request to `endpoint` (`http://host:port`); the response status.
pub fn http(endpoint: &str, method: &str, path: &str) -> std::io::Result<u16> {
    let url = url::Url::parse(endpoint).map_err(std::io::Error::other)?;
    let host = url.host_str().unwrap_or("127.0.0.1");
    let port = url.port_or_known_default().unwrap_or(80);
    let addr = (host, port)
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other("no address"))?;
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: 0\r\n\
         Connection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let head = String::from_utf8_lossy(&response);
    head.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("not an HTTP response: {head:.80}")))
}

/// `n` rows starting at `start`, of several types: non-null and nullable primitives, strings,
/// a struct and a list.
pub fn sample_batch(start: i64, n: usize) -> RecordBatch {
    let ids: Vec<i64> = (start..start + n as i64).collect();
    let nested_fields = Fields::from(vec![
        Field::new("x", DataType::Int32, false),
        Field::new("y", DataType::Utf8, true),
    ]);
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("value", DataType::Float64, true),
        Field::new("nested", DataType::Struct(nested_fields.clone()), true),
        Field::new_list("tags", Field::new_list_field(DataType::Int32, true), true),
    ]));
    let name = StringArray::from_iter(
        ids.iter()
            .map(|i| (i % 7 != 0).then(|| format!("name-{i}"))),
    );
    let value =
        Float64Array::from_iter(ids.iter().map(|i| (i % 5 != 0).then_some(*i as f64 * 0.5)));
    let nested = StructArray::new(
        nested_fields,
        vec![
            Arc::new(Int32Array::from_iter_values(
                ids.iter().map(|i| (i % 1000) as i32),
            )),
            Arc::new(StringArray::from_iter(
                ids.iter()
                    .map(|i| (i % 3 != 0).then(|| format!("y{}", i % 11))),
            )),
        ],
        Some(ids.iter().map(|i| i % 13 != 0).collect()),
    );
    let tags = ListArray::from_iter_primitive::<Int32Type, _, _>(ids.iter().map(|i| {
        (i % 4 != 0).then(|| {
            (0..(i % 4) as i32)
                .map(|j| (j % 2 == 0).then_some(j))
                .collect::<Vec<_>>()
        })
    }));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(name),
            Arc::new(value),
            Arc::new(nested),
            Arc::new(tags),
        ],
    )
    .expect("sample batch")
}

/// Parquet files of the sample data (several row groups each), kept locally for the reference
/// and uploaded under `prefix/`: `(local path, key)`, in lexical key order.
pub struct Dataset {
    _dir: tempfile::TempDir,
    pub files: Vec<(PathBuf, String)>,
}

pub fn dataset(s3: &S3, bucket: &str, prefix: &str) -> Dataset {
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let mut objects = Vec::new();
    for (i, rows) in [(0, 2500usize), (1, 1800), (2, 3100)] {
        let batches: Vec<RecordBatch> = (0..rows)
            .step_by(1000)
            .map(|s| sample_batch((i * 100_000 + s) as i64, 1000.min(rows - s)))
            .collect();
        let bytes = super::write_parquet(&batches, 700);
        let name = format!("part-{i}.parquet");
        let local = dir.path().join(&name);
        File::create(&local).unwrap().write_all(&bytes).unwrap();
        let key = format!("{prefix}/{name}");
        objects.push((key.clone(), bytes));
        files.push((local, key));
    }
    // Not Parquet, and outside the prefix: a prefix scan reads neither.
    objects.push((format!("{prefix}/_SUCCESS"), Vec::new()));
    objects.push((
        format!("{prefix}-other/part-9.parquet"),
        objects[0].1.clone(),
    ));
    s3.create_bucket(bucket);
    s3.upload(bucket, &objects);
    Dataset { _dir: dir, files }
}
