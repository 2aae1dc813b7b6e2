//! `bench --s3`: a moto S3 server on loopback (started like `tests/s3/s3.rs` does), the workloads'
//! files uploaded to it, and an S3 client for the readers.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::CliResult;

/// The bucket the workloads are uploaded to.
pub const BUCKET: &str = "rayquet-bench";

/// A moto server this process started; stopped when dropped.
pub struct Moto {
    pub endpoint: String,
    child: Child,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Moto {
    /// Start `moto_server` (else `python3 -m moto.server`) on a free loopback port, wait until
    /// it answers, and create the bucket.
    pub fn start() -> CliResult<Moto> {
        client("http://127.0.0.1:1")?; // fails early without the `cloud` feature
        let mut tried = Vec::new();
        for (program, args) in [
            ("moto_server", &[][..]),
            ("python3", &["-m", "moto.server"][..]),
        ] {
            match Moto::start_with(program, args) {
                Ok(moto) => {
                    let status = http(&moto.endpoint, "PUT", &format!("/{BUCKET}"))?;
                    if status != 200 && status != 409 {
                        return Err(format!("creating bucket {BUCKET}: HTTP {status}").into());
                    }
                    return Ok(moto);
                }
                Err(e) => tried.push(format!("{program}: {e}")),
            }
        }
        Err(format!(
            "--s3 needs moto (pip install 'moto[server]'): {}",
            tried.join("; ")
        )
        .into())
    }

    fn start_with(program: &str, args: &[&str]) -> CliResult<Moto> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = Command::new(program)
            .args(args)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        let mut moto = Moto {
            endpoint: format!("http://127.0.0.1:{port}"),
            child,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = moto.child.try_wait()? {
                return Err(format!("exited ({status})").into());
            }
            if http(&moto.endpoint, "GET", "/").is_ok() {
                return Ok(moto);
            }
            if Instant::now() > deadline {
                return Err("did not answer within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Upload every file of `dir` under the prefix `dir`'s name.
    pub fn upload(&self, dir: &Path) -> CliResult<()> {
        let store = client(&self.endpoint)?;
        let prefix = prefix(dir);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        for path in super::workloads::parquet_files(dir)? {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let key = ObjectPath::from(format!("{prefix}/{name}"));
            let bytes = std::fs::read(&path)?;
            rt.block_on(store.put(&key, bytes.into()))
                .map_err(|e| format!("uploading {key}: {e}"))?;
        }
        Ok(())
    }
}

/// The key prefix of a dataset directory.
pub fn prefix(dir: &Path) -> String {
    dir.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

/// An S3 client of the bench bucket at `endpoint` (moto accepts any credentials).
pub fn client(endpoint: &str) -> CliResult<Arc<dyn ObjectStore>> {
    Ok(Arc::new(
        object_store::aws::AmazonS3Builder::new()
            .with_endpoint(endpoint)
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_access_key_id("bench")
            .with_secret_access_key("bench")
            .with_bucket_name(BUCKET)
            .build()?,
    ))
}

/// A bodiless HTTP/1.1 request; the response status.
fn http(endpoint: &str, method: &str, path: &str) -> CliResult<u16> {
    let addr = endpoint.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let head = String::from_utf8_lossy(&response);
    head.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("not an HTTP response: {head:.80}").into())
}
