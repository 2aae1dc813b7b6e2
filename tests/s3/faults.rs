//! Fault injection against S3: moto on loopback (`common::s3`) behind a small fault-injecting
//! HTTP proxy written here (plain TCP, std threads), with rayquet's S3 client pointed at the
//! proxy. Short `RetryConfig`/`ClientOptions` keep every scenario to seconds.
//!
//! Transient faults (503 and 500 then success, connection resets, bodies truncated half-way
//! for GET and LIST, a stalled body longer than the client's timeout, first-byte delays) must
//! give rows identical to parquet's reader on the local copies, with `retries > 0` in the
//! metrics wherever a request had to be repeated. Permanent faults (403, 503, the server
//! killed) must end the scan with an error naming the object, within a watchdog's deadline.
//!
//! moto is started as for the other S3 tests (see `common::s3`): never skipped.
#![cfg(feature = "cloud")]

use rayquet::ScanBuilder;
use rayquet_testkit as common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use object_store::{BackoffConfig, ClientOptions, RetryConfig};
use rayquet::{ErrorKind, Scan};

use common::s3::{dataset, S3};
use common::{reference, run_with_timeout, Outcome};

/// Deadline for one scan: a hang is a failure.
const SCAN_TIMEOUT: Duration = Duration::from_secs(60);
/// The client's per-request timeout in these scans.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);

// ---------------------------------------------------------------------------------------------
// The proxy.

/// Which requests a rule applies to.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Target {
    /// `GET /bucket?list-type=2...`
    List,
    /// `HEAD /bucket/key`
    Head,
    /// `GET /bucket/key` (footers, data, page indexes)
    Get,
}

/// What the proxy does to a request a rule applies to.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// Answer with this status (and an S3 error body) without asking the server.
    Status(u16),
    /// Read the request, then reset the connection (RST, no response).
    Reset,
    /// Send the status line, the headers and half of the body, then close.
    Truncate,
    /// Send the headers and half of the body, wait this long, then the rest.
    Stall(Duration),
    /// Wait this long before asking the server and answering.
    FirstByteDelay(Duration),
}

/// Apply `fault` to the requests matching `target`, after skipping `skip` of them, `times`
/// times (`usize::MAX`: permanently).
#[derive(Debug, Clone)]
struct Rule {
    target: Target,
    skip: usize,
    times: usize,
    fault: Fault,
}

struct ProxyState {
    upstream: SocketAddr,
    rule: Mutex<Option<(Rule, usize)>>,
    /// Faults injected under the current rule.
    injected: AtomicUsize,
}

/// A fault-injecting HTTP/1.1 proxy on a loopback port in front of `upstream`.
struct Proxy {
    endpoint: String,
    state: Arc<ProxyState>,
}

impl Proxy {
    fn start(upstream: &str) -> Proxy {
        let upstream: SocketAddr = upstream
            .trim_start_matches("http://")
            .parse()
            .expect("upstream address");
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(ProxyState {
            upstream,
            rule: Mutex::new(None),
            injected: AtomicUsize::new(0),
        });
        let st = Arc::clone(&state);
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                let st = Arc::clone(&st);
                std::thread::spawn(move || {
                    let _ = serve(conn, &st);
                });
            }
        });
        Proxy { endpoint, state }
    }

    /// Use `rule` from now on (or none), resetting the count of injected faults.
    fn set(&self, rule: Option<Rule>) {
        *self.state.rule.lock().unwrap() = rule.map(|r| (r, 0));
        self.state.injected.store(0, Relaxed);
    }

    fn injected(&self) -> usize {
        self.state.injected.load(Relaxed)
    }
}

/// The fault to apply to a request of `target`, if the current rule says so.
fn fault_for(st: &ProxyState, target: Option<Target>) -> Option<Fault> {
    let mut rule = st.rule.lock().unwrap();
    let (r, seen) = rule.as_mut()?;
    if Some(r.target) != target {
        return None;
    }
    *seen += 1;
    let hit = *seen > r.skip && (r.times == usize::MAX || *seen <= r.skip + r.times);
    if hit {
        st.injected.fetch_add(1, Relaxed);
    }
    hit.then_some(r.fault)
}

/// Serve one client connection: requests one after another (keep-alive), each forwarded on a
/// fresh upstream connection, with the current rule's fault applied.
fn serve(client: TcpStream, st: &ProxyState) -> std::io::Result<()> {
    let mut reader = BufReader::new(client.try_clone()?);
    let mut client = client;
    loop {
        // The request head.
        let mut head = Vec::new();
        loop {
            let mut line = Vec::new();
            if reader.read_until(b'\n', &mut line)? == 0 {
                return Ok(());
            }
            let end = line == b"\r\n";
            head.extend_from_slice(&line);
            if end {
                break;
            }
        }
        let text = String::from_utf8_lossy(&head).to_string();
        let mut lines = text.split("\r\n");
        let request_line = lines.next().unwrap_or_default().to_string();
        let mut parts = request_line.split(' ');
        let (method, path) = (
            parts.next().unwrap_or_default(),
            parts.next().unwrap_or_default(),
        );
        let mut length = 0usize;
        let mut forwarded = format!("{request_line}\r\n");
        for h in lines.filter(|l| !l.is_empty()) {
            let lower = h.to_ascii_lowercase();
            if lower.starts_with("content-length:") {
                length = h[15..].trim().parse().unwrap_or(0);
            }
            if !lower.starts_with("connection:") {
                forwarded.push_str(h);
                forwarded.push_str("\r\n");
            }
        }
        forwarded.push_str("Connection: close\r\n\r\n");
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        let target = match method {
            "GET" if path.contains("list-type") => Some(Target::List),
            "GET" => Some(Target::Get),
            "HEAD" => Some(Target::Head),
            _ => None,
        };
        let fault = fault_for(st, target);
        match fault {
            Some(Fault::Status(code)) => {
                let (reason, s3code) = match code {
                    403 => ("Forbidden", "AccessDenied"),
                    500 => ("Internal Server Error", "InternalError"),
                    _ => ("Service Unavailable", "SlowDown"),
                };
                let xml = format!(
                    "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{s3code}</Code>\
                     <Message>injected {code}</Message></Error>"
                );
                let body = if method == "HEAD" { "" } else { xml.as_str() };
                write!(
                    client,
                    "HTTP/1.1 {code} {reason}\r\nContent-Type: application/xml\r\n\
                     Content-Length: {}\r\n\r\n{body}",
                    body.len()
                )?;
                client.flush()?;
                continue;
            }
            Some(Fault::Reset) => {
                reset(&client);
                return Ok(());
            }
            Some(Fault::FirstByteDelay(d)) => std::thread::sleep(d),
            _ => {}
        }
        // Forward to the server; read its whole response (it closes the connection).
        let response = match upstream(st.upstream, forwarded.as_bytes(), &body) {
            Ok(r) => r,
            Err(_) => {
                // The server is gone: the client sees the connection reset.
                reset(&client);
                return Ok(());
            }
        };
        let split = response
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map_or(response.len(), |p| p + 4);
        let (head, body) = response.split_at(split);
        match fault {
            Some(Fault::Truncate) => {
                client.write_all(head)?;
                client.write_all(&body[..body.len() / 2])?;
                client.flush()?;
                let _ = client.shutdown(Shutdown::Both);
                return Ok(());
            }
            Some(Fault::Stall(d)) => {
                client.write_all(head)?;
                client.write_all(&body[..body.len() / 2])?;
                client.flush()?;
                std::thread::sleep(d);
                client.write_all(&body[body.len() / 2..])?;
                client.flush()?;
                // The client has most likely given up on this connection.
                return Ok(());
            }
            _ => {
                client.write_all(&response)?;
                client.flush()?;
            }
        }
    }
}

fn upstream(addr: SocketAddr, head: &[u8], body: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    s.write_all(head)?;
    s.write_all(body)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    if out.is_empty() {
        return Err(std::io::Error::other("empty response"));
    }
    Ok(out)
}

/// Close `s` with a TCP reset (SO_LINGER 0) instead of a FIN.
fn reset(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket descriptor and a correctly sized `linger`.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
    // The connection is closed (with RST) when the serving thread drops its handles.
}

// ---------------------------------------------------------------------------------------------
// Scans through the proxy.

/// A scan of `url` through `endpoint` with short retry bounds and timeouts.
fn scan(endpoint: &str, url: &str) -> rayquet::Result<Scan> {
    let retry = RetryConfig {
        backoff: BackoffConfig {
            init_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(200),
            base: 2.0,
        },
        max_retries: 4,
        retry_timeout: Duration::from_secs(8),
    };
    let client = ClientOptions::new()
        .with_allow_http(true)
        .with_timeout(REQUEST_TIMEOUT)
        .with_connect_timeout(REQUEST_TIMEOUT);
    Ok(Scan::new(url)?
        .store_option("aws_endpoint", endpoint)
        .store_option("aws_allow_http", "true")
        .store_option("aws_region", "us-east-1")
        .store_option("aws_access_key_id", "test")
        .store_option("aws_secret_access_key", "test")
        .retry(retry)
        .client_options(client)
        // Footers and data in separate requests.
        .io_tuning(rayquet::IoTuning::default().footer_size_hint(4096)))
}

/// What a scan gave: rows or an error, and the metrics' HTTP requests and retries.
struct Ran {
    result: rayquet::Result<(SchemaRef, Vec<RecordBatch>)>,
    requests: u64,
    retries: u64,
}

fn run(what: &str, scan: rayquet::Result<Scan>) -> Ran {
    let out = run_with_timeout(SCAN_TIMEOUT, move || {
        let reader = match scan.and_then(Scan::build) {
            Ok(r) => r,
            Err(e) => {
                return Ran {
                    result: Err(e),
                    requests: 0,
                    retries: 0,
                }
            }
        };
        let metrics = reader.metrics();
        let schema = reader.schema();
        let result = reader
            .collect::<Result<Vec<_>, _>>()
            .map(|b| (schema, b))
            .map_err(rayquet::Error::from);
        let m = metrics.snapshot();
        Ran {
            result,
            requests: m.http_requests,
            retries: m.retries,
        }
    });
    match out {
        Outcome::Done(r) => r,
        Outcome::Panicked(m) => panic!("{what}: the scan panicked: {m}"),
        Outcome::TimedOut => panic!("{what}: no result within {SCAN_TIMEOUT:?}"),
    }
}

#[test]
fn faults_against_s3() {
    let mut s3 = S3::get();
    let data = dataset(&s3, "faults", "t");
    let proxy = Proxy::start(&s3.endpoint);

    // References: parquet's reader on the local copies.
    let mut all = Vec::new();
    let mut ref_schema = None;
    let mut per_file = Vec::new();
    for (local, _) in &data.files {
        let (s, b) = reference(local, None, 1024).expect("reference");
        ref_schema.get_or_insert(s.clone());
        all.extend(b.iter().cloned());
        per_file.push((s, b));
    }
    let ref_schema = ref_schema.unwrap();
    let prefix = "s3://faults/t/";
    let single = format!("s3://faults/{}", data.files[1].1);

    let rule = |target, skip, times, fault| {
        Some(Rule {
            target,
            skip,
            times,
            fault,
        })
    };
    let stall = Fault::Stall(REQUEST_TIMEOUT * 3);
    let slow = Fault::FirstByteDelay(REQUEST_TIMEOUT * 2);
    let transient: Vec<(&str, &str, Option<Rule>, bool)> = vec![
        ("no fault", prefix, None, false),
        (
            "503 x2 on LIST",
            prefix,
            rule(Target::List, 0, 2, Fault::Status(503)),
            true,
        ),
        (
            "500 x2 on LIST",
            prefix,
            rule(Target::List, 0, 2, Fault::Status(500)),
            true,
        ),
        (
            "503 x2 on a single object's GET",
            single.as_str(),
            rule(Target::Get, 0, 2, Fault::Status(503)),
            true,
        ),
        (
            "503 x3 on GET",
            prefix,
            rule(Target::Get, 0, 3, Fault::Status(503)),
            true,
        ),
        (
            "500 x2 on data GETs",
            prefix,
            rule(Target::Get, 3, 2, Fault::Status(500)),
            true,
        ),
        (
            "reset x2 on GET",
            prefix,
            rule(Target::Get, 1, 2, Fault::Reset),
            true,
        ),
        (
            "reset x1 on LIST",
            prefix,
            rule(Target::List, 0, 1, Fault::Reset),
            true,
        ),
        (
            "reset x1 on a single object's GET",
            single.as_str(),
            rule(Target::Get, 0, 1, Fault::Reset),
            true,
        ),
        (
            "truncated body x2 on GET",
            prefix,
            rule(Target::Get, 2, 2, Fault::Truncate),
            true,
        ),
        (
            "truncated body x1 on LIST",
            prefix,
            rule(Target::List, 0, 1, Fault::Truncate),
            true,
        ),
        (
            "stalled body x1 on GET",
            prefix,
            rule(Target::Get, 1, 1, stall),
            true,
        ),
        (
            "stalled body x1 on LIST",
            prefix,
            rule(Target::List, 0, 1, stall),
            true,
        ),
        (
            "first byte after 100 ms x4 on GET",
            prefix,
            rule(
                Target::Get,
                0,
                4,
                Fault::FirstByteDelay(Duration::from_millis(100)),
            ),
            false,
        ),
        (
            "first byte after 2 s x1 on GET",
            prefix,
            rule(Target::Get, 2, 1, slow),
            true,
        ),
    ];
    let mut report = Vec::new();
    for (what, url, r, must_retry) in transient {
        proxy.set(r.clone());
        let ran = run(what, scan(&proxy.endpoint, url));
        let injected = proxy.injected();
        proxy.set(None);
        let (schema, batches) = ran
            .result
            .unwrap_or_else(|e| panic!("{what}: {:?} error: {e}", e.kind()));
        let (rs, expected) = if url == prefix {
            (&ref_schema, &all)
        } else {
            (&per_file[1].0, &per_file[1].1)
        };
        assert_eq!(schema.fields(), rs.fields(), "{what}: schema");
        common::assert_same_rows(rs, expected, &batches, what);
        if let Some(r) = &r {
            assert!(injected > 0, "{what}: the fault ({r:?}) was never injected");
        }
        if must_retry {
            assert!(
                ran.retries > 0,
                "{what}: {injected} faults but no retry counted"
            );
        }
        report.push(format!(
            "{what}: {injected} injected -> identical rows, {} HTTP requests, {} retries",
            ran.requests, ran.retries
        ));
    }

    // Permanent faults: an error naming the object, within the watchdog's deadline.
    let object = data.files[0].1.clone();
    let permanent: Vec<(&str, &str, Rule, ErrorKind, &str)> = vec![
        (
            "permanent 403 on GET",
            prefix,
            Rule {
                target: Target::Get,
                skip: 0,
                times: usize::MAX,
                fault: Fault::Status(403),
            },
            ErrorKind::PermissionDenied,
            object.as_str(),
        ),
        (
            "permanent 503 on GET",
            prefix,
            Rule {
                target: Target::Get,
                skip: 0,
                times: usize::MAX,
                fault: Fault::Status(503),
            },
            ErrorKind::Io,
            object.as_str(),
        ),
        (
            "permanent 503 on LIST",
            prefix,
            Rule {
                target: Target::List,
                skip: 0,
                times: usize::MAX,
                fault: Fault::Status(503),
            },
            ErrorKind::Io,
            "faults/t",
        ),
        (
            "permanent reset on a single object's GET",
            single.as_str(),
            Rule {
                target: Target::Get,
                skip: 0,
                times: usize::MAX,
                fault: Fault::Reset,
            },
            ErrorKind::Io,
            data.files[1].1.as_str(),
        ),
    ];
    for (what, url, r, kind, named) in permanent {
        proxy.set(Some(r));
        let ran = run(what, scan(&proxy.endpoint, url));
        let injected = proxy.injected();
        proxy.set(None);
        let err = match ran.result {
            Ok((_, b)) => panic!("{what}: expected an error, got {} batches", b.len()),
            Err(e) => e,
        };
        assert_eq!(err.kind(), kind, "{what}: {err}");
        assert!(
            err.path().is_some_and(|p| p.contains(named)),
            "{what}: the error does not name {named}: {err}"
        );
        report.push(format!("{what}: {injected} injected -> {err}"));
    }

    // The server killed while a scan runs: data requests are slowed down so that the scan is
    // still reading when moto goes away; it must end with an error naming an object. (Not
    // with an external endpoint, RAYQUET_S3_ENDPOINT, which this test did not start.)
    if let Some(mut child) = s3.child.take() {
        proxy.set(rule(
            Target::Get,
            3,
            usize::MAX,
            Fault::FirstByteDelay(Duration::from_millis(500)),
        ));
        let reader = scan(&proxy.endpoint, prefix)
            .and_then(Scan::build)
            .unwrap_or_else(|e| panic!("server killed: build: {e}"));
        let _ = child.kill();
        let _ = child.wait();
        let out = run_with_timeout(SCAN_TIMEOUT, move || reader.collect::<Result<Vec<_>, _>>());
        let err = match out {
            Outcome::Done(Ok(b)) => panic!("server killed: read {} batches", b.len()),
            Outcome::Done(Err(e)) => rayquet::Error::from(e),
            Outcome::Panicked(m) => panic!("server killed: panicked: {m}"),
            Outcome::TimedOut => panic!("server killed: no result within {SCAN_TIMEOUT:?}"),
        };
        assert_eq!(err.kind(), ErrorKind::Io, "server killed: {err}");
        assert!(
            err.path().is_some_and(|p| p.contains("faults/t/part-")),
            "server killed: the error does not name an object: {err}"
        );
        report.push(format!("server killed mid-scan -> {err}"));
        proxy.set(None);
    }

    println!("fault injection against moto ({} scenarios):", report.len());
    for line in &report {
        println!("  {line}");
    }
}
