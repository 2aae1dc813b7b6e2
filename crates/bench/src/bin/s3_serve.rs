//! `s3-serve`: an S3 endpoint over a local directory, for the peers benchmark
//! (`benches/peers/run.sh --server s3-serve`).
//!
//! ```sh
//! cargo run --release -p rayquet-bench --bin s3-serve -- --root DIR [--port 0] [--delay-ms 30]
//! ```
//!
//! Each subdirectory of `--root` is a bucket (symbolic links are followed). It answers what
//! the benchmark's readers send (rayquet and polars through object_store, pyarrow through the
//! AWS C++ SDK, DuckDB's httpfs), path-style and unsigned (signatures are not checked):
//! `ListObjectsV2` and `ListObjects` (prefix, delimiter, pages of `max-keys`, `encoding-type=url`),
//! `HeadObject`, `GetObject` with one byte range (`a-b`, `a-`, `-n`; a suffix longer than the
//! object is the whole object, as S3 does), `PutObject` and `CreateBucket`.
//! `GET /__stats` returns its counters as JSON (requests, bytes sent, connections).
//!
//! Why not moto: moto answers `Connection: close` and builds every response in Python, so on
//! a 2-core machine it spends more CPU than the readers it serves (42 s for 10,000 tiny GETs)
//! and copies a whole object for each range GET of it. MinIO is not packaged here, and
//! `s3s-fs` fails polars' and pyarrow's footer reads (BENCHMARKS.md, "Tried and not kept").
//!
//! `--delay-ms` holds every response's first byte that long (after the request is read),
//! as a distant store's round trip would: one process per delay, no proxy in between.
//! Connections are kept alive, as real object stores keep them.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::os::unix::fs::FileExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, RANGE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;

/// Command line of `s3-serve`.
#[derive(Parser)]
#[command(about = "A path-style S3 endpoint over a local directory (subdirectories are buckets)")]
struct Args {
    /// The directory whose subdirectories are the buckets.
    #[arg(long)]
    root: PathBuf,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    host: String,
    /// Port (0: the kernel picks one; the chosen port is printed as `PORT <n>`).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Milliseconds every response's first byte is held.
    #[arg(long, default_value_t = 0.0)]
    delay_ms: f64,
    /// Threads of the server's runtime.
    #[arg(long, default_value_t = 2)]
    threads: usize,
    /// Log every request to stderr: milliseconds since start at arrival and at the answer,
    /// method, path and query, range, status, bytes.
    #[arg(long)]
    log: bool,
}

/// What the server has done since it started, for `GET /__stats`.
#[derive(Default)]
struct Stats {
    connections: AtomicU64,
    requests: AtomicU64,
    gets: AtomicU64,
    heads: AtomicU64,
    lists: AtomicU64,
    puts: AtomicU64,
    errors: AtomicU64,
    bytes_sent: AtomicU64,
}

impl Stats {
    fn json(&self) -> String {
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        format!(
            "{{\"connections\":{},\"requests\":{},\"gets\":{},\"heads\":{},\"lists\":{},\"puts\":{},\"errors\":{},\"bytes_sent\":{}}}",
            n(&self.connections),
            n(&self.requests),
            n(&self.gets),
            n(&self.heads),
            n(&self.lists),
            n(&self.puts),
            n(&self.errors),
            n(&self.bytes_sent)
        )
    }
}

/// The server's shared state.
struct Server {
    root: PathBuf,
    delay: Duration,
    stats: Stats,
    log: Option<std::time::Instant>,
}

type Reply = Response<Full<Bytes>>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    if !args.root.is_dir() {
        return Err(format!("--root {}: not a directory", args.root.display()).into());
    }
    if !(args.delay_ms.is_finite() && args.delay_ms >= 0.0) {
        return Err(format!("--delay-ms {}: not a duration", args.delay_ms).into());
    }
    let server = Arc::new(Server {
        root: args.root,
        delay: Duration::from_secs_f64(args.delay_ms / 1e3),
        stats: Stats::default(),
        log: args.log.then(std::time::Instant::now),
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(args.threads.max(1))
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind((args.host.as_str(), args.port)).await?;
        let addr: SocketAddr = listener.local_addr()?;
        println!("PORT {}", addr.port());
        use std::io::Write;
        std::io::stdout().flush()?;
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            server.stats.connections.fetch_add(1, Ordering::Relaxed);
            let server = server.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let server = server.clone();
                    async move { Ok::<_, Infallible>(server.answer(req).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .keep_alive(true)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}

impl Server {
    async fn answer(&self, req: Request<Incoming>) -> Reply {
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        if req.uri().path() == "/__stats" {
            return reply(StatusCode::OK, "application/json", self.stats.json().into());
        }
        let arrived = self.log.map(|t| {
            (
                t.elapsed(),
                req.method().clone(),
                req.uri().to_string(),
                req.headers().get(RANGE).cloned(),
            )
        });
        let reply = self.route(req).await;
        if reply.status().as_u16() >= 400 {
            self.stats.errors.fetch_add(1, Ordering::Relaxed);
        }
        if let (Some(start), Some((at, method, uri, range))) = (self.log, arrived) {
            let len = reply
                .headers()
                .get(CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("-")
                .to_string();
            eprintln!(
                "{:.1} {:.1} {method} {uri} {} {} {len}",
                at.as_secs_f64() * 1e3,
                start.elapsed().as_secs_f64() * 1e3,
                range.as_ref().and_then(|r| r.to_str().ok()).unwrap_or("-"),
                reply.status().as_u16()
            );
        }
        reply
    }

    async fn route(&self, req: Request<Incoming>) -> Reply {
        let method = req.method().clone();
        let path = percent_decode(req.uri().path());
        let query: Vec<(String, String)> = req
            .uri()
            .query()
            .map(|q| {
                url::form_urlencoded::parse(q.as_bytes())
                    .into_owned()
                    .collect()
            })
            .unwrap_or_default();
        let range = req
            .headers()
            .get(RANGE)
            .and_then(|v| v.to_str().ok())
            .map(String::from);
        let (bucket, key) = match path.trim_start_matches('/').split_once('/') {
            Some((b, k)) => (b.to_string(), k.to_string()),
            None => (path.trim_start_matches('/').to_string(), String::new()),
        };
        let body = if method == Method::PUT {
            match req.into_body().collect().await {
                Ok(b) => Some(b.to_bytes()),
                Err(e) => return error(StatusCode::BAD_REQUEST, "IncompleteBody", &e.to_string()),
            }
        } else {
            None
        };
        if !self.delay.is_zero() {
            tokio::time::sleep(self.delay).await;
        }
        let Some(bucket_dir) = safe_join(&self.root, &bucket) else {
            return error(StatusCode::BAD_REQUEST, "InvalidBucketName", &bucket);
        };
        if bucket.is_empty() {
            return error(
                StatusCode::BAD_REQUEST,
                "InvalidRequest",
                "no bucket in the path",
            );
        }
        match (method, key.is_empty(), body) {
            (Method::PUT, true, _) => match std::fs::create_dir_all(&bucket_dir) {
                Ok(()) => reply(StatusCode::OK, "application/xml", Bytes::new()),
                Err(e) => error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalError",
                    &e.to_string(),
                ),
            },
            (Method::PUT, false, Some(body)) => {
                self.stats.puts.fetch_add(1, Ordering::Relaxed);
                self.put(&bucket_dir, &key, body)
            }
            (Method::GET, true, _) => {
                self.stats.lists.fetch_add(1, Ordering::Relaxed);
                let dir = bucket_dir.clone();
                let prefix = query
                    .iter()
                    .find(|(k, _)| k == "prefix")
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default();
                let listed = tokio::task::spawn_blocking(move || list_keys(&dir, &prefix)).await;
                match listed {
                    Ok(Ok(keys)) => self.list(&bucket, &query, keys),
                    Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => {
                        error(StatusCode::NOT_FOUND, "NoSuchBucket", &bucket)
                    }
                    Ok(Err(e)) => error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "InternalError",
                        &e.to_string(),
                    ),
                    Err(e) => error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "InternalError",
                        &e.to_string(),
                    ),
                }
            }
            (m @ (Method::GET | Method::HEAD), false, _) => {
                let head = m == Method::HEAD;
                let counter = if head {
                    &self.stats.heads
                } else {
                    &self.stats.gets
                };
                counter.fetch_add(1, Ordering::Relaxed);
                let Some(file) = safe_join(&bucket_dir, &key) else {
                    return error(StatusCode::BAD_REQUEST, "InvalidKey", &key);
                };
                let reply = tokio::task::spawn_blocking(move || {
                    object(&file, &key, range.as_deref(), head)
                })
                .await
                .unwrap_or_else(|e| {
                    error(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "InternalError",
                        &e.to_string(),
                    )
                });
                if let Some(n) = reply
                    .headers()
                    .get(CONTENT_LENGTH)
                    .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                {
                    if !head {
                        self.stats.bytes_sent.fetch_add(n, Ordering::Relaxed);
                    }
                }
                reply
            }
            _ => error(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                "not served",
            ),
        }
    }

    fn put(&self, bucket_dir: &Path, key: &str, body: Bytes) -> Reply {
        if !bucket_dir.is_dir() {
            return error(
                StatusCode::NOT_FOUND,
                "NoSuchBucket",
                &bucket_dir.display().to_string(),
            );
        }
        let Some(file) = safe_join(bucket_dir, key) else {
            return error(StatusCode::BAD_REQUEST, "InvalidKey", key);
        };
        let written = file
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(&file, &body))
            .and_then(|()| std::fs::metadata(&file));
        match written {
            Ok(meta) => {
                let mut r = reply(StatusCode::OK, "application/xml", Bytes::new());
                r.headers_mut().insert("etag", header(&etag(&meta)));
                r
            }
            Err(e) => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                &e.to_string(),
            ),
        }
    }

    /// `ListObjectsV2` (`list-type=2`) or `ListObjects`: keys after the page's start, at most
    /// `max-keys` entries, keys below a further delimiter folded into common prefixes.
    fn list(
        &self,
        bucket: &str,
        query: &[(String, String)],
        keys: Vec<(String, std::fs::Metadata)>,
    ) -> Reply {
        let arg = |name: &str| {
            query
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.as_str())
        };
        let v2 = arg("list-type") == Some("2");
        let prefix = arg("prefix").unwrap_or("");
        let delimiter = arg("delimiter").filter(|d| !d.is_empty());
        let url = arg("encoding-type") == Some("url");
        let max_keys = arg("max-keys")
            .and_then(|m| m.parse::<usize>().ok())
            .unwrap_or(1000)
            .min(1000);
        let after = if v2 {
            arg("continuation-token")
                .or(arg("start-after"))
                .unwrap_or("")
        } else {
            arg("marker").unwrap_or("")
        };
        let enc = |s: &str| {
            xml_escape(&if url {
                percent_encode(s)
            } else {
                s.to_string()
            })
        };
        let mut contents = String::new();
        let mut prefixes = String::new();
        let (mut count, mut last, mut truncated) = (0usize, String::new(), false);
        let mut seen_prefix: Option<String> = None;
        for (key, meta) in keys
            .iter()
            .filter(|(k, _)| k.starts_with(prefix) && k.as_str() > after)
        {
            let folded = delimiter.and_then(|d| {
                key[prefix.len()..]
                    .find(d)
                    .map(|i| key[..prefix.len() + i + d.len()].to_string())
            });
            if let Some(common) = &folded {
                if seen_prefix.as_deref() == Some(common) || common.as_str() <= after {
                    continue;
                }
            }
            if count == max_keys {
                truncated = true;
                break;
            }
            count += 1;
            match folded {
                Some(common) => {
                    prefixes.push_str(&format!(
                        "<CommonPrefixes><Prefix>{}</Prefix></CommonPrefixes>",
                        enc(&common)
                    ));
                    last = common.clone();
                    seen_prefix = Some(common);
                }
                None => {
                    contents.push_str(&format!(
                        "<Contents><Key>{}</Key><LastModified>{}</LastModified><ETag>{}</ETag><Size>{}</Size><StorageClass>STANDARD</StorageClass></Contents>",
                        enc(key),
                        iso_time(meta),
                        xml_escape(&etag(meta)),
                        meta.len()
                    ));
                    last = key.clone();
                }
            }
        }
        let mut xml = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Name>{}</Name><Prefix>{}</Prefix><MaxKeys>{max_keys}</MaxKeys><IsTruncated>{truncated}</IsTruncated>",
            xml_escape(bucket),
            enc(prefix)
        );
        if let Some(d) = delimiter {
            xml.push_str(&format!("<Delimiter>{}</Delimiter>", enc(d)));
        }
        if url {
            xml.push_str("<EncodingType>url</EncodingType>");
        }
        if v2 {
            xml.push_str(&format!("<KeyCount>{count}</KeyCount>"));
            if let Some(t) = arg("continuation-token") {
                xml.push_str(&format!(
                    "<ContinuationToken>{}</ContinuationToken>",
                    xml_escape(t)
                ));
            }
            if truncated {
                xml.push_str(&format!(
                    "<NextContinuationToken>{}</NextContinuationToken>",
                    xml_escape(&last)
                ));
            }
        } else {
            xml.push_str(&format!("<Marker>{}</Marker>", xml_escape(after)));
            if truncated {
                xml.push_str(&format!("<NextMarker>{}</NextMarker>", enc(&last)));
            }
        }
        xml.push_str(&contents);
        xml.push_str(&prefixes);
        xml.push_str("</ListBucketResult>");
        reply(StatusCode::OK, "application/xml", xml.into())
    }
}

/// `GetObject` / `HeadObject` of one file, with one byte range when asked.
fn object(file: &Path, key: &str, range: Option<&str>, head: bool) -> Reply {
    let (handle, meta) = match std::fs::File::open(file).and_then(|f| f.metadata().map(|m| (f, m)))
    {
        Ok((f, m)) if m.is_file() => (f, m),
        Ok(_) => return error(StatusCode::NOT_FOUND, "NoSuchKey", key),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return error(StatusCode::NOT_FOUND, "NoSuchKey", key)
        }
        Err(e) => {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                &e.to_string(),
            )
        }
    };
    let len = meta.len();
    let span = match range.map(|r| parse_range(r, len)) {
        None | Some(Span::Ignored) => None,
        Some(Span::Unsatisfiable) => {
            let mut r = error(
                StatusCode::RANGE_NOT_SATISFIABLE,
                "InvalidRange",
                "The requested range is not satisfiable",
            );
            r.headers_mut()
                .insert(CONTENT_RANGE, header(&format!("bytes */{len}")));
            return r;
        }
        Some(Span::Bytes(start, end)) => Some((start, end)),
    };
    let (start, end) = span.unwrap_or((0, len));
    let body = if head || end == start {
        Bytes::new()
    } else {
        let mut buf = vec![0u8; (end - start) as usize];
        if let Err(e) = handle.read_exact_at(&mut buf, start) {
            return error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                &e.to_string(),
            );
        }
        Bytes::from(buf)
    };
    let status = if span.is_some() {
        StatusCode::PARTIAL_CONTENT
    } else {
        StatusCode::OK
    };
    let mut r = reply(status, "application/octet-stream", body);
    let h = r.headers_mut();
    h.insert(CONTENT_LENGTH, header(&(end - start).to_string()));
    h.insert("etag", header(&etag(&meta)));
    h.insert(
        "last-modified",
        header(&httpdate::fmt_http_date(modified(&meta))),
    );
    h.insert("accept-ranges", HeaderValue::from_static("bytes"));
    if span.is_some() {
        h.insert(
            CONTENT_RANGE,
            header(&format!("bytes {start}-{}/{len}", end.saturating_sub(1))),
        );
    }
    r
}

/// A `Range` header against an object of `len` bytes.
#[derive(Debug, PartialEq)]
enum Span {
    /// Bytes `start..end`.
    Bytes(u64, u64),
    /// Not one range of bytes: the whole object is served, as S3 does.
    Ignored,
    /// Starts past the end.
    Unsatisfiable,
}

fn parse_range(header: &str, len: u64) -> Span {
    let Some(spec) = header.trim().strip_prefix("bytes=") else {
        return Span::Ignored;
    };
    if spec.contains(',') {
        return Span::Ignored;
    }
    let Some((a, b)) = spec.split_once('-') else {
        return Span::Ignored;
    };
    let (a, b) = (a.trim(), b.trim());
    match (a.parse::<u64>().ok(), b.parse::<u64>().ok()) {
        (None, Some(n)) if a.is_empty() => {
            if n == 0 {
                Span::Unsatisfiable
            } else {
                Span::Bytes(len.saturating_sub(n), len)
            }
        }
        (Some(s), None) if b.is_empty() => {
            if s >= len {
                Span::Unsatisfiable
            } else {
                Span::Bytes(s, len)
            }
        }
        (Some(s), Some(e)) if s <= e => {
            if s >= len {
                Span::Unsatisfiable
            } else {
                Span::Bytes(s, e.saturating_add(1).min(len))
            }
        }
        _ => Span::Ignored,
    }
}

/// The files below `dir` (links followed) whose keys (paths with `/` separators) may start
/// with `prefix`, sorted: only the directory the prefix names is walked.
fn list_keys(dir: &Path, prefix: &str) -> std::io::Result<Vec<(String, std::fs::Metadata)>> {
    let mut out = Vec::new();
    std::fs::metadata(dir)?;
    let base = prefix.rfind('/').map_or("", |i| &prefix[..=i]);
    let start = match safe_join(dir, base.trim_end_matches('/')) {
        Some(start) if !base.is_empty() => start,
        _ => dir.to_path_buf(),
    };
    if !start.is_dir() {
        return Ok(out);
    }
    let base = if start == dir {
        String::new()
    } else {
        base.to_string()
    };
    let mut stack = vec![(start, base)];
    while let Some((path, prefix)) = stack.pop() {
        for entry in std::fs::read_dir(&path)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let meta = std::fs::metadata(entry.path())?;
            let key = format!("{prefix}{name}");
            if meta.is_dir() {
                stack.push((entry.path(), format!("{key}/")));
            } else if meta.is_file() {
                out.push((key, meta));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// `base/rel` when `rel` has only normal components (no `..`, no root).
fn safe_join(base: &Path, rel: &str) -> Option<PathBuf> {
    let rel = Path::new(rel);
    rel.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| base.join(rel))
}

fn modified(meta: &std::fs::Metadata) -> SystemTime {
    meta.modified().unwrap_or(UNIX_EPOCH)
}

/// A stable ETag from the file's size and modification time.
fn etag(meta: &std::fs::Metadata) -> String {
    let nanos = modified(meta)
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("\"{:x}-{:x}\"", meta.len(), nanos)
}

fn iso_time(meta: &std::fs::Metadata) -> String {
    let t: chrono::DateTime<chrono::Utc> = modified(meta).into();
    t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

fn reply(status: StatusCode, content_type: &'static str, body: Bytes) -> Reply {
    let mut r = Response::new(Full::new(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn error(status: StatusCode, code: &str, message: &str) -> Reply {
    let xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{code}</Code><Message>{}</Message></Error>",
        xml_escape(message)
    );
    reply(status, "application/xml", xml.into())
}

fn header(value: &str) -> HeaderValue {
    HeaderValue::from_str(value).unwrap_or_else(|_| HeaderValue::from_static("invalid"))
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// What `encoding-type=url` leaves as it is: unreserved characters and `/`.
const KEY_SET: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~')
    .remove(b'/');

fn percent_encode(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, KEY_SET).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_read_as_s3_reads_them() {
        assert_eq!(parse_range("bytes=0-9", 100), Span::Bytes(0, 10));
        assert_eq!(parse_range("bytes=90-200", 100), Span::Bytes(90, 100));
        assert_eq!(parse_range("bytes=10-", 100), Span::Bytes(10, 100));
        assert_eq!(parse_range("bytes=-10", 100), Span::Bytes(90, 100));
        // A suffix longer than the object is the whole object (polars and pyarrow ask so).
        assert_eq!(parse_range("bytes=-1000", 100), Span::Bytes(0, 100));
        assert_eq!(parse_range("bytes=100-", 100), Span::Unsatisfiable);
        assert_eq!(parse_range("bytes=-0", 100), Span::Unsatisfiable);
        assert_eq!(parse_range("bytes=0-1,5-6", 100), Span::Ignored);
        assert_eq!(parse_range("bytes=9-1", 100), Span::Ignored);
    }

    #[test]
    fn keys_outside_the_root_are_refused() {
        let root = Path::new("/srv");
        assert_eq!(
            safe_join(root, "a/b.parquet"),
            Some(PathBuf::from("/srv/a/b.parquet"))
        );
        assert_eq!(safe_join(root, "../etc/passwd"), None);
        assert_eq!(safe_join(root, "a/../../x"), None);
        assert_eq!(safe_join(root, "/etc/passwd"), None);
    }

    #[test]
    fn paths_are_percent_decoded() {
        assert_eq!(percent_decode("/b/a%20b/c%3Dd+e&f"), "/b/a b/c=d+e&f");
        assert_eq!(percent_encode("a b/c=d~"), "a%20b/c%3Dd~");
    }
}
