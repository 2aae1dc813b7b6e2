//! TPC-H lineitem through DataFusion: its own Parquet scan against the rayquet provider, in one
//! process with the same threads, and the rayquet provider on 1 and 3 local workers
//! (datafusion-distributed over loopback gRPC, each worker on a runtime of its own).
//!
//! ```sh
//! cargo bench -p rayquet-datafusion --features bench --bench tpch -- --data DIR [--runs 6]
//!     [--queries q1,q6,selective] [--engines datafusion,rayquet,rayquet2,workers1,workers3]
//! ```
//!
//! `DIR` holds lineitem as Parquet (e.g. `tpchgen-cli parquet --scale-factor 1 --tables
//! lineitem --parts 8`, as `benches/peers/run.sh` makes it). Every engine runs every query
//! `--runs` times, rounds interleaved (engine order rotating each round); the first run of each
//! is the process's first (cold caches in this process, warm page cache) and is reported
//! apart from the median of runs 2..N (the warm, long-running-service case). Every run must
//! return the same rows as DataFusion's own scan, or the bench fails.

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use rayquet::ScanOptions;
use rayquet_datafusion::{datafusion, distributed_session, local_session, RayquetTable};
use url::Url;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const QUERIES: &[(&str, &str)] = &[
    (
        "q1",
        "SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, \
         sum(l_extendedprice) AS sum_base_price, \
         sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price, \
         sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge, \
         avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, \
         avg(l_discount) AS avg_disc, count(*) AS count_order \
         FROM lineitem WHERE l_shipdate <= DATE '1998-09-02' \
         GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus",
    ),
    (
        "q6",
        "SELECT sum(l_extendedprice * l_discount) AS revenue FROM lineitem \
         WHERE l_shipdate >= DATE '1994-01-01' AND l_shipdate < DATE '1995-01-01' \
         AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24",
    ),
    (
        "selective",
        "SELECT l_orderkey, l_partkey, l_suppkey, l_extendedprice, l_shipdate, l_comment \
         FROM lineitem WHERE l_orderkey BETWEEN 3000000 AND 3001000 ORDER BY l_orderkey, l_partkey",
    ),
];

struct Args {
    data: String,
    runs: usize,
    queries: Vec<String>,
    engines: Vec<String>,
}

fn args() -> Args {
    let mut a = Args {
        data: String::new(),
        runs: 6,
        queries: QUERIES.iter().map(|(n, _)| n.to_string()).collect(),
        engines: ["datafusion", "rayquet", "workers1", "workers3"]
            .map(String::from)
            .to_vec(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{arg} needs a value"));
        match arg.as_str() {
            "--data" => a.data = value(),
            "--runs" => a.runs = value().parse().expect("--runs N"),
            "--queries" => a.queries = value().split(',').map(String::from).collect(),
            "--engines" => a.engines = value().split(',').map(String::from).collect(),
            "--bench" => {}
            other => panic!("unknown argument {other} (see the file's docs)"),
        }
    }
    assert!(
        !a.data.is_empty(),
        "--data DIR (lineitem Parquet files) is required"
    );
    assert!(
        a.runs >= 2,
        "--runs must be at least 2 (run 1 is reported apart)"
    );
    a
}

/// A worker on a loopback port, on a runtime of its own.
struct Worker {
    url: Url,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Dropped inside the bench's own runtime: shut down without waiting on it.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn start_worker() -> Worker {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let listener = {
        let _g = runtime.enter();
        tokio::net::TcpListener::from_std(listener).unwrap()
    };
    runtime.spawn(rayquet_datafusion::serve(listener, ScanOptions::new()));
    Worker {
        url: Url::parse(&format!("http://127.0.0.1:{port}")).unwrap(),
        runtime: Some(runtime),
    }
}

struct Engine {
    name: String,
    ctx: SessionContext,
    workers: Vec<Url>,
    _workers: Vec<Worker>,
}

async fn engine(name: &str, data: &str) -> Engine {
    let (ctx, workers) = match name {
        "datafusion" => {
            let ctx = SessionContext::new_with_config(SessionConfig::new());
            ctx.register_parquet("lineitem", data, ParquetReadOptions::default())
                .await
                .expect("register_parquet");
            (ctx, vec![])
        }
        r if r.starts_with("rayquet") => {
            // `rayquet`: one scan per node (the default); `rayquetN`: N scans sharing the files.
            let n: usize = r["rayquet".len()..].parse().unwrap_or(1);
            let ctx = local_session();
            let t = RayquetTable::parquet("lineitem", data, ScanOptions::new())
                .unwrap()
                .partitions(n);
            ctx.register_table("lineitem", Arc::new(t)).unwrap();
            (ctx, vec![])
        }
        w if w.starts_with("workers") => {
            let n: usize = w["workers".len()..].parse().expect("workersN");
            let workers: Vec<Worker> = (0..n).map(|_| start_worker()).collect();
            let urls: Vec<Url> = workers.iter().map(|w| w.url.clone()).collect();
            let ctx = distributed_session(urls, ScanOptions::new()).unwrap();
            let t = RayquetTable::parquet("lineitem", data, ScanOptions::new())
                .unwrap()
                .require_remote(true);
            ctx.register_table("lineitem", Arc::new(t)).unwrap();
            return Engine {
                name: name.into(),
                ctx,
                workers: workers.iter().map(|w| w.url.clone()).collect(),
                _workers: workers,
            };
        }
        other => panic!("unknown engine {other}"),
    };
    Engine {
        name: name.into(),
        ctx,
        workers,
        _workers: vec![],
    }
}

/// One run: seconds, the result's rows as text, and units scanned (distributed runs).
async fn run(e: &Engine, sql: &str) -> (f64, Vec<String>, u64) {
    let start = Instant::now();
    let (batches, units): (Vec<RecordBatch>, u64) = if e.workers.is_empty() {
        (e.ctx.sql(sql).await.unwrap().collect().await.unwrap(), 0)
    } else {
        let (b, scans) = rayquet_datafusion::collect_distributed(&e.ctx, sql, &e.workers)
            .await
            .unwrap();
        (b, scans.iter().map(|s| s.units).sum())
    };
    let secs = start.elapsed().as_secs_f64();
    let mut rows: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            let opts = datafusion::arrow::util::display::FormatOptions::default();
            let fmts: Vec<_> = b
                .columns()
                .iter()
                .map(|c| {
                    datafusion::arrow::util::display::ArrayFormatter::try_new(c.as_ref(), &opts)
                        .unwrap()
                })
                .collect();
            (0..b.num_rows())
                .map(|r| {
                    fmts.iter()
                        .map(|f| f.value(r).to_string())
                        .collect::<Vec<_>>()
                        .join("|")
                })
                .collect::<Vec<_>>()
        })
        .collect();
    rows.sort();
    (secs, rows, units)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Floats printed by DataFusion differ in the last digits between plans (summation order):
/// compare numbers to 9 significant digits.
fn same_rows(a: &[String], b: &[String]) -> bool {
    fn norm(s: &str) -> String {
        s.split('|')
            .map(|f| match f.parse::<f64>() {
                Ok(x) if f.contains('.') || f.contains('e') => format!("{x:.9e}"),
                _ => f.to_string(),
            })
            .collect::<Vec<_>>()
            .join("|")
    }
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| norm(x) == norm(y))
}

fn main() {
    let args = args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut engines = Vec::new();
        for name in &args.engines {
            engines.push(engine(name, &args.data).await);
        }
        println!(
            "data {} | {} runs | {} cores | DataFusion target partitions {}",
            args.data,
            args.runs,
            std::thread::available_parallelism().map_or(1, |n| n.get()),
            SessionConfig::new().target_partitions()
        );
        println!("| query | engine | run 1 (s) | median 2..N (s) | min (s) | vs datafusion (median) | units | overhead per unit (ms) |");
        println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
        for q in &args.queries {
            let (_, sql) = QUERIES
                .iter()
                .find(|(n, _)| n == q)
                .unwrap_or_else(|| panic!("unknown query {q}"));
            let mut times: Vec<Vec<f64>> = vec![vec![]; engines.len()];
            let mut units = vec![0u64; engines.len()];
            let mut expected: Option<Vec<String>> = None;
            for round in 0..args.runs {
                for k in 0..engines.len() {
                    let i = (k + round) % engines.len();
                    let (secs, rows, u) = run(&engines[i], sql).await;
                    match &expected {
                        None => expected = Some(rows),
                        Some(want) => assert!(
                            same_rows(&rows, want),
                            "{q}: {} returned other rows",
                            engines[i].name
                        ),
                    }
                    times[i].push(secs);
                    units[i] = u;
                    // Let the machine settle between runs (the 2 cores are shared).
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
            let base = engines
                .iter()
                .position(|e| e.name == "datafusion")
                .map(|i| median(&mut times[i][1..].to_vec()));
            let local = engines
                .iter()
                .position(|e| e.name == "rayquet")
                .map(|i| median(&mut times[i][1..].to_vec()));
            for (i, e) in engines.iter().enumerate() {
                let first = times[i][0];
                let mut warm = times[i][1..].to_vec();
                let med = median(&mut warm);
                let min = warm.iter().cloned().fold(f64::INFINITY, f64::min);
                let ratio = base.map_or("-".into(), |b| format!("{:.2}x", b / med));
                let overhead = match (local, units[i]) {
                    (Some(l), u) if u > 0 => format!("{:.1}", (med - l) * 1e3 / u as f64),
                    _ => "-".into(),
                };
                let u = if units[i] > 0 { units[i].to_string() } else { "-".into() };
                println!(
                    "| {q} | {} | {first:.3} | {med:.3} | {min:.3} | {ratio} | {u} | {overhead} |",
                    e.name
                );
            }
        }
    });
}
