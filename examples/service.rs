//! A plain-threads HTTP service that scans Parquet on request, every handler sharing ONE IO
//! runtime and ONE decode pool.
//!
//! ```sh
//! cargo run --release --example service                         # demo dataset, 127.0.0.1:8080
//! cargo run --release --example service -- --addr 0.0.0.0:9000 /data/lineitem/
//! cargo run --release --example service -- --self-test 64       # fire 64 concurrent requests, exit
//! curl 'http://127.0.0.1:8080/scan?columns=l_orderkey,l_comment&limit=100000'
//! ```
//!
//! Endpoints: `GET /scan?path=P&columns=a,b&limit=N&batch_size=N&ordered=false` answers JSON
//! (`rows`, `batches`, `bytes` of decoded Arrow data, `bytes_fetched`, `requests`,
//! `elapsed_ms`, `columns`); `path` defaults to the served dataset and may be any path or URL
//! `Scan::new` takes (a real service would restrict it). `GET /threads` reports the process's
//! threads. Bad requests get 400 (404 for a missing path, 500 for a failed read) with the error
//! text as JSON; a panic in a handler becomes a 500 and the thread keeps serving.
//!
//! # Design
//!
//! A rayquet scan is a blocking `Iterator`, so a service built on plain threads needs no async
//! code of its own: a fixed number of handler threads (`HANDLERS`, 8) each pull the next request
//! from the shared `tiny_http::Server`, run the scan on their own stack, and answer. The scan's
//! work does not happen on the handler thread: its IO runs on one tokio runtime and its decoding
//! on one rayon pool, both built once at start-up and handed to every scan with
//! [`Scan::io_runtime`] and [`Scan::decode_pool`] (leaving both out gives the same sharing
//! through the crate's lazily created defaults; this example shows the explicit version so
//! the sizes are visible and owned by the service). The handler only waits for finished
//! batches.
//!
//! Why shared pools: a scan adds tasks, never threads, so 8 concurrent requests (or 800)
//! share the same CPUs through one decode queue instead of oversubscribing them, and the IO
//! runtime multiplexes every scan's requests. Per-scan memory is bounded by
//! `memory_budget`, so the worst case is `HANDLERS` x budget (here 64 MiB each).
//!
//! Threads in total, whatever the load (`GET /threads` lists them by name; 18 at idle on 2 cores):
//!
//! - 1 main thread and `HANDLERS` (8) handler threads;
//! - `IO_WORKERS` (2) tokio workers, plus at most `IO_BLOCKING` (8) tokio blocking threads:
//!   object_store's `LocalFileSystem` reads every range in `spawn_blocking`, and tokio's default
//!   cap is 512, so without this cap local-file scans under load start dozens to hundreds of
//!   threads (idle ones exit after 10 s);
//! - one decode thread per core;
//! - tiny_http's own: an accept thread and a connection pool of at least 4 threads that grows
//!   with the connections open at once (they only parse HTTP and queue requests).
//!
//! No scan starts a thread: scans add tasks to the shared runtime and pool.
use rayquet::ScanBuilder;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rayquet::{ErrorKind, Scan};
use rayquet_gen::{generate, GenOptions};
use serde_json::{json, Value};
use tiny_http::{Header, Method, Request, Response, Server};

/// Handler threads pulling requests.
const HANDLERS: usize = 8;
/// Worker threads of the IO runtime (IO only: they wait on the network and the disk).
const IO_WORKERS: usize = 2;
/// Cap on the IO runtime's blocking threads (local-file reads run there).
const IO_BLOCKING: usize = 8;
/// Memory budget of each scan.
const BUDGET: usize = 64 << 20;

/// What every handler shares.
struct State {
    /// The dataset `/scan` reads when no `path` is given.
    default_path: String,
    io: tokio::runtime::Handle,
    pool: Arc<rayon::ThreadPool>,
}

/// A response: status and JSON body.
type Reply = (u16, Value);

fn bad(status: u16, msg: impl Into<String>) -> Reply {
    (status, json!({ "error": msg.into() }))
}

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut addr = "127.0.0.1:8080".to_string();
    let mut self_test: Option<usize> = None;
    let mut data: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--addr" => addr = args.next().ok_or("--addr needs HOST:PORT")?,
            "--self-test" => {
                let n = args.next().ok_or("--self-test needs N")?;
                self_test = Some(n.parse().map_err(|_| format!("bad N: {n}"))?);
            }
            "-h" | "--help" => {
                println!("usage: service [--addr HOST:PORT] [--self-test N] [PATH_OR_URL]");
                return Ok(());
            }
            _ if a.starts_with('-') => return Err(format!("unknown option {a}").into()),
            _ => data = Some(a),
        }
    }
    if self_test.is_some() {
        addr = "127.0.0.1:0".to_string(); // any free port
    }
    let default_path = match data {
        Some(d) => d,
        None => demo_dataset()?,
    };

    // The ONE IO runtime and the ONE decode pool, built once and shared by every request.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(IO_WORKERS)
        .max_blocking_threads(IO_BLOCKING)
        .thread_name("svc-io")
        .enable_all()
        .build()?;
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("svc-decode-{i}"))
            .build()?,
    );
    let decode_threads = pool.current_num_threads();
    let state = Arc::new(State {
        default_path,
        io: rt.handle().clone(),
        pool,
    });

    let server = Arc::new(Server::http(&addr).map_err(|e| format!("bind {addr}: {e}"))?);
    let local = server
        .server_addr()
        .to_ip()
        .ok_or("server is not on an IP address")?;
    let handlers: Vec<_> = (0..HANDLERS)
        .map(|i| {
            let (server, state) = (server.clone(), state.clone());
            std::thread::Builder::new()
                .name(format!("svc-handler-{i}"))
                .spawn(move || serve(&server, &state))
        })
        .collect::<Result<_, _>>()?;

    println!(
        "serving {} on http://{local}/  ({HANDLERS} handlers, {IO_WORKERS} IO workers + <= \
         {IO_BLOCKING} blocking, {decode_threads} decode threads; {} threads in the process now)",
        state.default_path,
        thread_count().map_or("?".to_string(), |n| n.to_string()),
    );
    println!("try:  curl 'http://{local}/scan?columns=l_orderkey,l_comment&limit=100000'");
    println!("      curl 'http://{local}/scan?ordered=false'   curl 'http://{local}/threads'");

    match self_test {
        None => {
            for h in handlers {
                let _ = h.join();
            }
            Ok(())
        }
        Some(n) => {
            let ok = self_test_run(local, n);
            server.unblock(); // wakes one handler per call
            for _ in 0..HANDLERS {
                server.unblock();
            }
            for h in handlers {
                let _ = h.join();
            }
            if ok {
                println!("self-test passed");
                Ok(())
            } else {
                Err("self-test failed".into())
            }
        }
    }
}

/// Write (once) a small deterministic dataset under the temp dir and return its path.
fn demo_dataset() -> Result<String, Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join("rayquet-service-demo");
    let opts = GenOptions {
        files: 4,
        row_groups: 2,
        rows_per_row_group: 50_000,
        ..GenOptions::default()
    };
    let complete = (0..opts.files).all(|f| dir.join(rayquet_gen::file_name(f)).exists());
    if !complete {
        println!("writing a demo dataset to {} ...", dir.display());
        generate(&dir, &opts)?;
    }
    Ok(dir.display().to_string())
}

/// A handler thread: pull requests until the server is unblocked.
fn serve(server: &Server, state: &State) {
    while let Ok(request) = server.recv() {
        let (status, body) =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| route(&request, state)))
                .unwrap_or_else(|p| {
                    let msg = p
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| p.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "handler panicked".into());
                    bad(500, format!("panic: {msg}"))
                });
        let response = Response::from_string(format!("{body}\n"))
            .with_status_code(status)
            .with_header(
                Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..])
                    .expect("static header"),
            );
        // The client may have gone away; nothing to do about it.
        let _ = request.respond(response);
    }
}

fn route(request: &Request, state: &State) -> Reply {
    let url = match url::Url::parse(&format!("http://localhost{}", request.url())) {
        Ok(u) => u,
        Err(e) => return bad(400, format!("bad URL: {e}")),
    };
    if *request.method() != Method::Get {
        return bad(405, "only GET");
    }
    match url.path() {
        "/scan" => scan(&url, state),
        "/threads" => (
            200,
            json!({ "threads": thread_count(), "by_name": thread_names() }),
        ),
        "/" => (
            200,
            json!({ "endpoints": ["/scan?path=&columns=a,b&limit=N&batch_size=N&ordered=false",
                                  "/threads"] }),
        ),
        p => bad(404, format!("no such endpoint: {p}")),
    }
}

/// `GET /scan`: scan on this thread (the work runs on the shared pools), answer a summary.
fn scan(url: &url::Url, state: &State) -> Reply {
    let mut path = state.default_path.clone();
    let mut columns: Option<Vec<String>> = None;
    let mut limit = None;
    let mut batch_size = None;
    let mut ordered = true;
    for (k, v) in url.query_pairs() {
        let number = |v: &str| {
            v.parse::<usize>().map_err(|_| {
                bad(
                    400,
                    format!("{k} must be a non-negative integer, got {v:?}"),
                )
            })
        };
        match k.as_ref() {
            "path" => path = v.into_owned(),
            "columns" => {
                columns = Some(
                    v.split(',')
                        .filter(|c| !c.is_empty())
                        .map(str::to_string)
                        .collect(),
                )
            }
            "limit" => match number(&v) {
                Ok(n) => limit = Some(n),
                Err(r) => return r,
            },
            "batch_size" => match number(&v) {
                Ok(n) => batch_size = Some(n),
                Err(r) => return r,
            },
            "ordered" => match v.as_ref() {
                "true" | "1" => ordered = true,
                "false" | "0" => ordered = false,
                _ => return bad(400, format!("ordered must be true or false, got {v:?}")),
            },
            _ => return bad(400, format!("unknown parameter {k:?}")),
        }
    }

    let start = Instant::now();
    let mut scan = match Scan::new(&path) {
        Ok(s) => s,
        Err(e) => return error_reply(&e),
    };
    scan = scan
        .io_runtime(state.io.clone())
        .decode_pool(state.pool.clone())
        .memory_budget(BUDGET)
        .ordered(ordered);
    if let Some(cols) = columns {
        scan = scan.columns(cols);
    }
    if let Some(n) = limit {
        scan = scan.limit(n);
    }
    if let Some(n) = batch_size {
        scan = scan.batch_size(n);
    }
    let reader = match scan.build() {
        Ok(r) => r,
        Err(e) => return error_reply(&e),
    };
    let schema = reader.schema();
    let metrics = reader.metrics();
    let (mut rows, mut batches, mut bytes) = (0usize, 0usize, 0usize);
    for batch in reader {
        match batch {
            Ok(b) => {
                rows += b.num_rows();
                batches += 1;
                bytes += b.get_array_memory_size();
            }
            Err(e) => return error_reply(&e.into()),
        }
    }
    let m = metrics.snapshot();
    (
        200,
        json!({
            "path": path,
            "columns": schema.fields().iter().map(|f| f.name().as_str()).collect::<Vec<_>>(),
            "rows": rows,
            "batches": batches,
            "bytes": bytes,
            "bytes_fetched": m.bytes_fetched,
            "requests": m.requests,
            "elapsed_ms": start.elapsed().as_secs_f64() * 1e3,
        }),
    )
}

fn error_reply(e: &rayquet::Error) -> Reply {
    let status = match e.kind() {
        ErrorKind::InvalidArgument => 400,
        ErrorKind::NotFound => 404,
        ErrorKind::PermissionDenied => 403,
        _ => 500,
    };
    (
        status,
        json!({ "error": e.to_string(), "kind": e.kind().to_string() }),
    )
}

/// The process's threads (Linux), or `None` elsewhere.
fn thread_count() -> Option<usize> {
    std::fs::read_dir("/proc/self/task")
        .ok()
        .map(|d| d.flatten().count())
}

/// Threads by name prefix (Linux): `svc-decode-3` counts as `svc-decode`.
fn thread_names() -> Value {
    let mut names = std::collections::BTreeMap::<String, usize>::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            let name = comm.trim().trim_end_matches(|c: char| c.is_ascii_digit());
            *names
                .entry(name.trim_end_matches('-').to_string())
                .or_default() += 1;
        }
    }
    json!(names)
}

/// A minimal HTTP/1.0 GET over std: status and parsed JSON body.
fn get(addr: SocketAddr, target: &str) -> Result<(u16, Value), String> {
    let mut s = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(120)))
        .map_err(|e| e.to_string())?;
    write!(s, "GET {target} HTTP/1.0\r\nHost: {addr}\r\n\r\n").map_err(|e| e.to_string())?;
    let mut text = String::new();
    s.read_to_string(&mut text)
        .map_err(|e| format!("read: {e}"))?;
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status line in {text:?}"))?;
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let json = serde_json::from_str(body).map_err(|e| format!("bad JSON {body:?}: {e}"))?;
    Ok((status, json))
}

/// Fire `n` concurrent requests of varied shapes (plus a few bad ones, which must get 400/404)
/// at the server and check every answer. Prints the peak thread count seen meanwhile.
fn self_test_run(addr: SocketAddr, n: usize) -> bool {
    // Learn the dataset's row count first.
    let total = match get(addr, "/scan?columns=l_orderkey") {
        Ok((200, v)) => v["rows"].as_u64().unwrap_or(0),
        other => {
            eprintln!("first scan failed: {other:?}");
            return false;
        }
    };
    println!("self-test: dataset has {total} rows; firing {n} concurrent requests");
    let shapes = [
        ("/scan", None),
        ("/scan?columns=l_orderkey,l_comment&ordered=false", None),
        ("/scan?columns=l_tags,l_dims&batch_size=1000", None),
        ("/scan?limit=12345", Some(12345u64)),
        (
            "/scan?columns=l_extendedprice&limit=70001&ordered=false",
            Some(70001),
        ),
    ];
    let bad_requests = [
        ("/scan?columns=no_such_column", 400u16),
        ("/scan?limit=-3", 400),
        ("/scan?colour=blue", 400),
        ("/scan?batch_size=0", 400),
        ("/scan?path=/definitely/not/here.parquet", 404),
        ("/nope", 404),
    ];
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (done, peak) = (done.clone(), peak.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                if let Some(t) = thread_count() {
                    peak.fetch_max(t, Ordering::AcqRel);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };
    let start = Instant::now();
    let clients: Vec<_> = (0..n + bad_requests.len())
        .map(|i| {
            std::thread::spawn(move || -> Result<(), String> {
                if i >= n {
                    let (target, want) = bad_requests[i - n];
                    let (status, body) = get(addr, target)?;
                    return if status == want && body["error"].is_string() {
                        Ok(())
                    } else {
                        Err(format!("{target}: want {want}, got {status} {body}"))
                    };
                }
                let (target, limit) = shapes[i % shapes.len()];
                let (status, body) = get(addr, target)?;
                let want = limit.map_or(total, |l| l.min(total));
                match (status, body["rows"].as_u64()) {
                    (200, Some(rows)) if rows == want => Ok(()),
                    _ => Err(format!(
                        "{target}: want 200 with {want} rows, got {status} {body}"
                    )),
                }
            })
        })
        .collect();
    let mut failed = 0;
    for c in clients {
        if let Err(e) = c.join().unwrap_or_else(|_| Err("client panicked".into())) {
            eprintln!("FAIL {e}");
            failed += 1;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    done.store(true, Ordering::Release);
    let _ = sampler.join();
    let threads = get(addr, "/threads").map(|(_, v)| v).unwrap_or(Value::Null);
    println!(
        "self-test: {n} scans + {} bad requests in {secs:.2} s, {failed} failed; peak {} threads \
         in the process (incl. {} self-test clients); after: {threads}",
        bad_requests.len(),
        peak.load(Ordering::Acquire),
        n + bad_requests.len() + 1,
    );
    failed == 0
}
