//! TPC-H through DataFusion: the 22 queries over the 8 tables, through DataFusion's own Parquet
//! scan, through the rayquet provider in the same process with the same threads, on 1 and 3
//! rayquet workers on loopback (datafusion-distributed over gRPC, each worker on a runtime of
//! its own in this process), and DuckDB on the same files with the same threads as the outside
//! reference. `dfworkersN` (not in the default set) runs the same coordinator and `N` workers
//! over DataFusion's own Parquet tables (`register_parquet`), datafusion-distributed's own way
//! to spread a scan: what distributing costs whatever the scan. The report's "overhead per
//! unit" is (3 workers' warm median − the provider's in one process) / units; with
//! `dfworkers3` run too, "beyond DataFusion's scan on workers" takes off what the same workers
//! add to DataFusion's own scan (the plan's shuffles, which any scan pays), per unit.
//!
//! ```sh
//! tpchgen-cli parquet --scale-factor 1 --output-dir DIR      # one file per table
//! cargo bench -p rayquet-datafusion --features bench --bench tpch -- --data DIR [--runs 6]
//!     [--queries q1,q6,selective] [--engines datafusion,rayquet,workers1,workers3,duckdb,dfworkers3]
//!     [--python PATH] [--threads N] [--json FILE] [--set KEY=VALUE ...]
//! ```
//!
//! `DIR` holds each table as `<table>.parquet` or a directory `<table>/` of Parquet files. The
//! queries are `benches/tpch/queries/q<N>.sql` (DataFusion's text of TPC-H; Q15 creates and
//! drops a view); `selective` (a range of 1001 order keys) is an extra query, not in the
//! default set, and a name ending in `.sql` is a query read from that path (not for DuckDB). Every engine runs every query `--runs` times, rounds interleaved (engine order
//! rotating each round); run 1 of each is its first in this process (cold caches in the
//! process, warm page cache) and is reported apart from the median of runs 2..N (the warm,
//! long-running-service case).
//!
//! Every run of a DataFusion engine (its own scan, the provider, the workers) must return the
//! same rows as DataFusion's own scan, or the bench fails; DuckDB's rows are checked by count
//! (its decimals print otherwise). DuckDB runs in a Python child (`--python`, default
//! `$RAYQUET_PYTHON` or `python3`, with `duckdb` and `pyarrow` installed:
//! `benches/peers/requirements.txt` pins both), which times each query itself; `--threads` (default: the cores) is DuckDB's
//! `threads` and DataFusion's target partitions. Transparent huge pages are off for the process,
//! as for the `rayquet` binary (`RAYQUET_THP=1` keeps them). `--set KEY=VALUE` (repeatable) makes
//! a setting in every DataFusion engine's session alike (the coordinator's, for the workers),
//! e.g. `datafusion.optimizer.hash_join_single_partition_threshold=4194304` to give the
//! single-process engines the join plans of the distributed session.
//!
//! ## Workers elsewhere (`benches/netns/run.sh`)
//!
//! ```sh
//! tpch --data DIR --remote NAME=URL,URL,.. [--token-file FILE] [--tls-ca CA.pem]
//!     [--tls-cert CERT.pem --tls-key KEY.pem] --engines datafusion,NAME      # rayquet workers
//! tpch --data DIR --remote-df NAME=URL,URL,.. --engines datafusion,NAME   # DataFusion's scan
//! tpch --serve HOST:PORT                                  # a plain worker for --remote-df
//! tpch --proxy LISTEN=UPSTREAM [--proxy ..] --delay-ms D  # a TCP proxy adding D ms each way
//! ```
//!
//! `--remote NAME=URLS` (repeatable) adds an engine `NAME`: the provider's tables
//! (`require_remote`) on those running `rayquet worker`s, through a coordinator presenting
//! `--token-file` (bearer token), `--tls-ca` (the CA of `https://` workers' certificates) and
//! `--tls-cert`/`--tls-key` (its client certificate, for mutual TLS), one set for every
//! `--remote` engine. `--remote-df NAME=URLS` adds an engine `NAME` of DataFusion's own Parquet
//! tables on those workers, which must be unguarded (a guarded worker refuses DataFusion's file
//! scans): `--serve HOST:PORT` runs one (`rayquet_datafusion::serve`, no authentication) until
//! killed, printing `listening on http://HOST:PORT`. `--proxy LISTEN=UPSTREAM` forwards every
//! connection to `LISTEN` on to `UPSTREAM`, holding each chunk read `--delay-ms` before
//! writing it (both ways, in order, without limiting throughput): a link's latency, where
//! `tc netem` is missing. Neither `--serve` nor `--proxy` runs queries.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use rayquet::ScanOptions;
use rayquet_datafusion::guard::{Credentials, Token};
use rayquet_datafusion::{
    datafusion, distributed_session, distributed_session_with, RayquetTable, WorkerScan,
};
use url::Url;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TABLES: [&str; 8] = [
    "lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region",
];

/// The extra query of the first provider benchmark: a narrow range of a sorted column.
const SELECTIVE: &str = "SELECT l_orderkey, l_partkey, l_suppkey, l_extendedprice, l_shipdate, \
     l_comment FROM lineitem WHERE l_orderkey BETWEEN 3000000 AND 3001000 \
     ORDER BY l_orderkey, l_partkey";

struct Args {
    data: PathBuf,
    runs: usize,
    queries: Vec<String>,
    engines: Vec<String>,
    python: String,
    threads: usize,
    json: Option<PathBuf>,
    /// Print each DataFusion engine's physical plans (the workers': the coordinator's
    /// distributed plan) instead of timing.
    explain: bool,
    /// `KEY=VALUE` settings made in every DataFusion engine's session (`SET KEY = VALUE`).
    settings: Vec<(String, String)>,
    /// `--serve`: run a plain worker on this address instead of queries.
    serve: Option<String>,
    /// `--proxy LISTEN=UPSTREAM`: run delaying TCP proxies instead of queries.
    proxies: Vec<(String, String)>,
    /// `--delay-ms`: what each proxy holds every chunk.
    delay_ms: u64,
    /// `--remote NAME=URLS`: engines of the provider on running rayquet workers.
    remotes: Vec<(String, Vec<Url>)>,
    /// `--remote-df NAME=URLS`: engines of DataFusion's scan on running plain workers.
    remote_dfs: Vec<(String, Vec<Url>)>,
    /// What `--remote` engines present to their workers.
    token_file: Option<PathBuf>,
    tls_ca: Option<PathBuf>,
    tls_cert: Option<PathBuf>,
    tls_key: Option<PathBuf>,
}

const USAGE: &str = "usage: tpch --data DIR [--runs 6] [--queries q1,q6,selective,PATH.sql] \
     [--engines datafusion,rayquet,workers1,workers3,duckdb,dfworkers3] [--python PATH] \
     [--threads N] [--json FILE] [--explain] [--set KEY=VALUE ...] \
     [--remote NAME=URL,URL.. ...] [--remote-df NAME=URL,URL.. ...] [--token-file FILE] \
     [--tls-ca CA.pem] [--tls-cert CERT.pem --tls-key KEY.pem]\n\
     \x20      tpch --serve HOST:PORT\n\
     \x20      tpch --proxy LISTEN=UPSTREAM [--proxy ...] --delay-ms D\n\
     (DIR holds <table>.parquet or <table>/ for the 8 TPC-H tables; a --remote or --remote-df \
     NAME is an engine to name in --engines; see crates/datafusion/benches/tpch.rs's docs)";

fn args() -> Args {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut a = Args {
        data: PathBuf::new(),
        runs: 6,
        queries: (1..=22).map(|i| format!("q{i}")).collect(),
        engines: ["datafusion", "rayquet", "workers1", "workers3", "duckdb"]
            .map(String::from)
            .to_vec(),
        python: std::env::var("RAYQUET_PYTHON").unwrap_or_else(|_| "python3".into()),
        threads: cores,
        json: None,
        explain: false,
        settings: vec![],
        serve: None,
        proxies: vec![],
        delay_ms: 0,
        remotes: vec![],
        remote_dfs: vec![],
        token_file: None,
        tls_ca: None,
        tls_cert: None,
        tls_key: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || {
            it.next()
                .unwrap_or_else(|| usage(&format!("{arg} needs a value")))
        };
        match arg.as_str() {
            "--data" => a.data = value().into(),
            "--runs" => a.runs = value().parse().unwrap_or_else(|_| usage("--runs N")),
            "--queries" => a.queries = value().split(',').map(String::from).collect(),
            "--engines" => a.engines = value().split(',').map(String::from).collect(),
            "--python" => a.python = value(),
            "--threads" => a.threads = value().parse().unwrap_or_else(|_| usage("--threads N")),
            "--json" => a.json = Some(value().into()),
            "--explain" => a.explain = true,
            "--set" => {
                let kv = value();
                let (k, v) = kv
                    .split_once('=')
                    .unwrap_or_else(|| usage("--set KEY=VALUE"));
                a.settings.push((k.trim().into(), v.trim().into()));
            }
            "--serve" => a.serve = Some(value()),
            "--proxy" => {
                let kv = value();
                let (l, u) = kv
                    .split_once('=')
                    .unwrap_or_else(|| usage("--proxy LISTEN=UPSTREAM"));
                a.proxies.push((l.into(), u.into()));
            }
            "--delay-ms" => a.delay_ms = value().parse().unwrap_or_else(|_| usage("--delay-ms D")),
            "--remote" => a.remotes.push(remote_engine(&value())),
            "--remote-df" => a.remote_dfs.push(remote_engine(&value())),
            "--token-file" => a.token_file = Some(value().into()),
            "--tls-ca" => a.tls_ca = Some(value().into()),
            "--tls-cert" => a.tls_cert = Some(value().into()),
            "--tls-key" => a.tls_key = Some(value().into()),
            "--bench" => {}
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => usage(&format!("unknown argument {other}")),
        }
    }
    if a.serve.is_some() || !a.proxies.is_empty() {
        return a;
    }
    if a.tls_cert.is_some() != a.tls_key.is_some() {
        usage("--tls-cert and --tls-key go together");
    }
    if a.data.as_os_str().is_empty() {
        usage("--data DIR (the TPC-H tables as Parquet) is required");
    }
    if a.runs < 2 {
        usage("--runs must be at least 2 (run 1 is reported apart)");
    }
    a
}

/// `NAME=URL,URL,...` of `--remote` and `--remote-df`: the engine's name and its workers.
fn remote_engine(spec: &str) -> (String, Vec<Url>) {
    let (name, urls) = spec
        .split_once('=')
        .unwrap_or_else(|| usage("--remote NAME=URL,URL,..."));
    let urls: Vec<Url> = urls
        .split(',')
        .map(|u| Url::parse(u.trim()).unwrap_or_else(|e| usage(&format!("worker URL {u}: {e}"))))
        .collect();
    (name.trim().into(), urls)
}

/// What `--remote` engines present to their workers: `--token-file`, `--tls-ca`,
/// `--tls-cert`/`--tls-key`.
fn credentials(args: &Args) -> Credentials {
    let mut c = Credentials::none();
    if let Some(f) = &args.token_file {
        c = c.token(Token::from_file(f).unwrap_or_else(|e| usage(&e.to_string())));
    }
    if let Some(ca) = &args.tls_ca {
        c = c.ca_file(ca).unwrap_or_else(|e| usage(&e.to_string()));
    }
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        c = c
            .identity_files(cert, key)
            .unwrap_or_else(|e| usage(&e.to_string()));
    }
    c
}

/// A wrong command line: say what is wrong and how to call the bench, and exit with 2.
fn usage(what: &str) -> ! {
    eprintln!("tpch: {what}\n{USAGE}");
    std::process::exit(2);
}

/// `DIR/<table>.parquet`, else `DIR/<table>/`.
fn table_path(data: &Path, table: &str) -> String {
    let file = data.join(format!("{table}.parquet"));
    let path = if file.exists() {
        file
    } else {
        data.join(table)
    };
    assert!(path.exists(), "no {} (nor {table}.parquet)", path.display());
    path.to_string_lossy().into_owned()
}

fn query_text(name: &str) -> String {
    if name == "selective" {
        return SELECTIVE.into();
    }
    if name.ends_with(".sql") {
        // A query of the user's, by path (`benches/tpch/sorted/*.sql`).
        return std::fs::read_to_string(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/tpch/queries");
    let path = dir.join(format!("{name}.sql"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
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

/// DuckDB in a Python child: one query name per line in, one JSON line out.
struct DuckDb {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl DuckDb {
    fn start(python: &str, data: &Path, threads: usize) -> DuckDb {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/tpch/duckdb_runner.py");
        let queries = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches/tpch/queries");
        let mut child = Command::new(python)
            .arg(&script)
            .arg("--data")
            .arg(data)
            .arg("--queries")
            .arg(&queries)
            .arg("--threads")
            .arg(threads.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{python} {}: {e}", script.display()));
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        DuckDb {
            child,
            input,
            output,
        }
    }

    /// Seconds and rows of one run of `query` (by name, by path for a `.sql` file of the
    /// user's, or SQL text for `selective`).
    fn run(&mut self, name: &str) -> (f64, usize) {
        let line = match name {
            "selective" => format!("sql {}\n", SELECTIVE),
            q if q.ends_with(".sql") => format!("file {q}\n"),
            q => format!("query {q}\n"),
        };
        self.input.write_all(line.as_bytes()).unwrap();
        self.input.flush().unwrap();
        let mut reply = String::new();
        self.output.read_line(&mut reply).unwrap();
        if reply.is_empty() {
            panic!("the DuckDB runner exited (its message is above): --python must name a Python with duckdb and pyarrow");
        }
        let v: serde_json::Value = serde_json::from_str(reply.trim())
            .unwrap_or_else(|e| panic!("duckdb runner said {reply:?}: {e}"));
        if let Some(err) = v.get("error") {
            panic!("duckdb, {name}: {err}");
        }
        (
            v["seconds"].as_f64().unwrap(),
            v["rows"].as_u64().unwrap() as usize,
        )
    }
}

impl Drop for DuckDb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

enum Kind {
    /// A DataFusion session (its scan, the provider) run in this process.
    Local(SessionContext),
    /// A coordinator and its workers.
    Workers {
        ctx: SessionContext,
        urls: Vec<Url>,
        _workers: Vec<Worker>,
    },
    DuckDb(DuckDb),
}

struct Engine {
    name: String,
    kind: Kind,
}

fn config(threads: usize) -> SessionConfig {
    SessionConfig::new().with_target_partitions(threads)
}

/// Table `t` of `data` as DataFusion's own Parquet table.
fn register_parquet(ctx: &SessionContext, data: &Path, t: &str) {
    let path = table_path(data, t);
    futures::executor::block_on(ctx.register_parquet(t, &path, ParquetReadOptions::default()))
        .expect("register_parquet");
}

/// The provider's tables (`own_scan`: DataFusion's own Parquet tables) on a coordinator of
/// the external workers `urls`, presenting `creds` to them.
fn remote(args: &Args, urls: &[Url], own_scan: bool, creds: Credentials) -> Kind {
    let ctx = distributed_session_with(urls.to_vec(), ScanOptions::new(), creds)
        .unwrap_or_else(|e| panic!("a session on {urls:?}: {e}"));
    for t in TABLES {
        if own_scan {
            register_parquet(&ctx, &args.data, t);
            continue;
        }
        let table = RayquetTable::parquet(&table_path(&args.data, t), ScanOptions::new())
            .unwrap_or_else(|e| panic!("{t}: {e}"))
            .require_remote(true);
        ctx.register_table(t, Arc::new(table)).unwrap();
    }
    Kind::Workers {
        ctx,
        urls: urls.to_vec(),
        _workers: vec![],
    }
}

fn engine(name: &str, args: &Args) -> Engine {
    let data = &args.data;
    let find = |list: &[(String, Vec<Url>)]| {
        list.iter()
            .find(|(n, _)| n == name)
            .map(|(_, urls)| urls.clone())
    };
    let kind = match name {
        _ if find(&args.remotes).is_some() => remote(
            args,
            &find(&args.remotes).unwrap(),
            false,
            credentials(args),
        ),
        _ if find(&args.remote_dfs).is_some() => remote(
            args,
            &find(&args.remote_dfs).unwrap(),
            true,
            Credentials::none(),
        ),
        "datafusion" => {
            let ctx = SessionContext::new_with_config(config(args.threads));
            TABLES.iter().for_each(|t| register_parquet(&ctx, data, t));
            Kind::Local(ctx)
        }
        "rayquet" => {
            let ctx = SessionContext::new_with_config(config(args.threads));
            for t in TABLES {
                let table = RayquetTable::parquet(&table_path(data, t), ScanOptions::new())
                    .unwrap_or_else(|e| panic!("{t}: {e}"));
                ctx.register_table(t, Arc::new(table)).unwrap();
            }
            Kind::Local(ctx)
        }
        w if w.starts_with("workers") || w.starts_with("dfworkers") => {
            let own_scan = w.starts_with("df");
            let n: usize = w.trim_start_matches("df")["workers".len()..]
                .parse()
                .expect("workersN or dfworkersN");
            let workers: Vec<Worker> = (0..n).map(|_| start_worker()).collect();
            let urls: Vec<Url> = workers.iter().map(|w| w.url.clone()).collect();
            let ctx = distributed_session(urls.clone(), ScanOptions::new()).unwrap();
            for t in TABLES {
                if own_scan {
                    register_parquet(&ctx, data, t);
                    continue;
                }
                let table = RayquetTable::parquet(&table_path(data, t), ScanOptions::new())
                    .unwrap_or_else(|e| panic!("{t}: {e}"))
                    .require_remote(true);
                ctx.register_table(t, Arc::new(table)).unwrap();
            }
            Kind::Workers {
                ctx,
                urls,
                _workers: workers,
            }
        }
        "duckdb" => Kind::DuckDb(DuckDb::start(&args.python, data, args.threads)),
        other => usage(&format!("unknown engine {other}")),
    };
    if let Kind::Local(ctx) | Kind::Workers { ctx, .. } = &kind {
        for (k, v) in &args.settings {
            futures::executor::block_on(async {
                ctx.sql(&format!("SET {k} = {v}")).await?.collect().await
            })
            .unwrap_or_else(|e| panic!("--set {k}={v}: {e}"));
        }
    }
    Engine {
        name: name.into(),
        kind,
    }
}

/// One run: seconds, the result's rows as text (`None`: only counted), and what each worker
/// scanned.
struct Run {
    secs: f64,
    rows: Result<Vec<String>, usize>,
    scans: Vec<WorkerScan>,
}

async fn run(e: &mut Engine, name: &str, sql: &str) -> Run {
    let start = Instant::now();
    let (batches, scans): (Vec<RecordBatch>, Vec<WorkerScan>) = match &mut e.kind {
        Kind::Local(ctx) => (
            rayquet_datafusion::collect_sql(ctx, sql)
                .await
                .unwrap_or_else(|err| panic!("{name} on {}: {err}", e.name)),
            vec![],
        ),
        Kind::Workers { ctx, urls, .. } => rayquet_datafusion::collect_distributed(ctx, sql, urls)
            .await
            .unwrap_or_else(|err| panic!("{name} on {}: {err}", e.name)),
        Kind::DuckDb(duck) => {
            let (secs, rows) = duck.run(name);
            return Run {
                secs,
                rows: Err(rows),
                scans: vec![],
            };
        }
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
    Run {
        secs,
        rows: Ok(rows),
        scans,
    }
}

/// Print the physical plan of each query statement of `sql` (running the others).
async fn explain(ctx: &SessionContext, sql: &str) {
    for statement in rayquet_datafusion::parse_statements(ctx, sql).unwrap() {
        let plan = ctx.state().statement_to_plan(statement).await.unwrap();
        let frame = ctx.execute_logical_plan(plan).await.unwrap();
        if frame.schema().fields().is_empty() {
            frame.collect().await.unwrap();
            continue;
        }
        let plan = frame.create_physical_plan().await.unwrap();
        let text = datafusion::physical_plan::displayable(plan.as_ref())
            .set_show_statistics(std::env::var_os("TPCH_STATS").is_some())
            .indent(true)
            .to_string();
        println!("{text}");
    }
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
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
    let mut a: Vec<String> = a.iter().map(|r| norm(r)).collect();
    let mut b: Vec<String> = b.iter().map(|r| norm(r)).collect();
    a.sort();
    b.sort();
    a == b
}

/// What one engine measured on one query.
#[derive(Default, Clone)]
struct Measured {
    times: Vec<f64>,
    /// Units scanned per worker (the last run's).
    per_worker: Vec<u64>,
}

fn main() {
    // As the `rayquet` binary and the workload benchmark: transparent huge pages off for the
    // process (RAYQUET_THP=1 keeps them), for every engine alike. With them, mimalloc's fresh
    // memory is zeroed 2 MiB at a time on first touch.
    #[cfg(target_os = "linux")]
    if std::env::var_os("RAYQUET_THP").is_none_or(|v| v == "0") {
        // SAFETY: prctl with PR_SET_THP_DISABLE only sets a flag of this process.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
    let args = args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Some(addr) = &args.serve {
        return rt.block_on(serve(addr));
    }
    if !args.proxies.is_empty() {
        return rt.block_on(proxies(&args.proxies, Duration::from_millis(args.delay_ms)));
    }
    let _guard = rt.enter();
    let mut engines: Vec<Engine> = args.engines.iter().map(|n| engine(n, &args)).collect();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "data {} | {} runs | {} cores | threads (target partitions, DuckDB) {} | load {}",
        args.data.display(),
        args.runs,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        args.threads,
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let names: Vec<String> = engines.iter().map(|e| e.name.clone()).collect();
    if args.explain {
        for q in &args.queries {
            let sql = query_text(q);
            for e in &engines {
                if let Kind::Local(ctx) | Kind::Workers { ctx, .. } = &e.kind {
                    println!("== {q} on {}", e.name);
                    rt.block_on(explain(ctx, &sql));
                }
            }
        }
        return;
    }
    let mut results: Vec<(String, Vec<Measured>)> = Vec::new();
    for q in &args.queries {
        let sql = query_text(q);
        let mut measured = vec![Measured::default(); engines.len()];
        // Every run's rows (DataFusion engines) or row count (DuckDB), checked at the end
        // against DataFusion's own scan.
        let mut answers: Vec<(usize, Result<Vec<String>, usize>)> = Vec::new();
        for round in 0..args.runs {
            for k in 0..engines.len() {
                let i = (k + round) % engines.len();
                let r = rt.block_on(run(&mut engines[i], q, &sql));
                answers.push((i, r.rows));
                measured[i].times.push(r.secs);
                if !r.scans.is_empty() {
                    measured[i].per_worker = r.scans.iter().map(|s| s.units).collect();
                }
                // Let the machine settle between runs (the cores are shared).
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        // Without DataFusion's own scan in the run (profiling one engine), nothing to check.
        if let Some(base) = names.iter().position(|n| n == "datafusion") {
            check(q, &names, base, &answers);
        }
        let line: Vec<String> = measured
            .iter()
            .zip(&names)
            .map(|(m, n)| format!("{n} {:.3}", median(&m.times[1..])))
            .collect();
        eprintln!("{q}: {}", line.join(", "));
        results.push((q.clone(), measured));
    }
    report(&args, &names, &results);
    drop(engines);
    rt.shutdown_background();
}

/// Every answer against DataFusion's own scan's (engine `base`).
fn check(q: &str, names: &[String], base: usize, answers: &[(usize, Result<Vec<String>, usize>)]) {
    let want = answers
        .iter()
        .find_map(|(i, r)| (*i == base).then(|| r.clone().expect("rows")))
        .expect("a run of datafusion");
    for (i, got) in answers {
        match got {
            Ok(rows) => assert!(
                same_rows(rows, &want),
                "{q}: {} returned other rows than DataFusion's scan\n got {:?}\nwant {:?}",
                names[*i],
                rows.iter().take(5).collect::<Vec<_>>(),
                want.iter().take(5).collect::<Vec<_>>()
            ),
            Err(n) => assert_eq!(
                *n,
                want.len(),
                "{q}: {} returned {n} rows, DataFusion's scan {}",
                names[*i],
                want.len()
            ),
        }
    }
}

fn report(args: &Args, names: &[String], results: &[(String, Vec<Measured>)]) {
    let base = names.iter().position(|n| n == "datafusion");
    let local = names.iter().position(|n| n == "rayquet");
    let warm = |m: &Measured| median(&m.times[1..]);
    println!();
    println!(
        "Warm: median of runs 2..{} (s); ratio = DataFusion's scan / engine (>1: faster)",
        args.runs
    );
    println!();
    let mut head = "| query |".to_string();
    let mut rule = "| --- |".to_string();
    for n in names {
        head += &format!(" {n} |");
        rule += " ---: |";
        if Some(n.as_str()) != base.map(|b| names[b].as_str()) && base.is_some() {
            head += &format!(" {n} ratio |");
            rule += " ---: |";
        }
    }
    head += " units (3 workers) | overhead per unit (ms) |";
    rule += " --- | ---: |";
    // With DataFusion's own scan on the same workers (`dfworkers3`) as well: what the workers
    // add to the provider beyond what they add to DataFusion's scan (the plan's shuffles cost
    // both), per unit.
    let dfw3 = names.iter().position(|n| n == "dfworkers3").zip(base);
    if dfw3.is_some() {
        head += " beyond DataFusion's scan on workers (ms) |";
        rule += " ---: |";
    }
    println!("{head}\n{rule}");
    let mut ratios: Vec<Vec<f64>> = vec![vec![]; names.len()];
    let mut medians: Vec<Vec<f64>> = vec![vec![]; names.len()];
    for (q, measured) in results {
        let mut line = format!("| {q} |");
        let b = base.map(|b| warm(&measured[b]));
        for (i, m) in measured.iter().enumerate() {
            let med = warm(m);
            medians[i].push(med);
            line += &format!(" {med:.3} |");
            if Some(i) != base {
                if let Some(b) = b {
                    ratios[i].push(b / med);
                    line += &format!(" {:.2}x |", b / med);
                }
            }
        }
        // The units of `workers3`, else of the first engine on workers (`--remote`).
        let w3 = names
            .iter()
            .position(|n| n == "workers3")
            .or_else(|| measured.iter().position(|m| !m.per_worker.is_empty()));
        let units = w3.map_or("-".into(), |i| {
            let u = &measured[i].per_worker;
            u.iter().map(u64::to_string).collect::<Vec<_>>().join("+")
        });
        // What three workers add to the provider's time in one process, per unit (ms), less
        // `minus` seconds.
        let per_unit = |minus: f64| match (w3, local) {
            (Some(w), Some(l)) => {
                let u: u64 = measured[w].per_worker.iter().sum();
                let added = warm(&measured[w]) - warm(&measured[l]) - minus;
                match u {
                    0 => "-".to_string(),
                    u => format!("{:.1}", added * 1e3 / u as f64),
                }
            }
            _ => "-".into(),
        };
        line += &format!(" {units} | {} |", per_unit(0.0));
        if let Some((d, b)) = dfw3 {
            let df_added = warm(&measured[d]) - warm(&measured[b]);
            line += &format!(" {} |", per_unit(df_added));
        }
        println!("{line}");
    }
    let mut line = "| geometric mean |".to_string();
    for i in 0..names.len() {
        line += &format!(" {:.3} |", geomean(&medians[i]));
        if Some(i) != base && base.is_some() {
            line += &format!(" {:.2}x |", geomean(&ratios[i]));
        }
    }
    line += " | |";
    if dfw3.is_some() {
        line += " |";
    }
    println!("{line}");
    println!();
    println!("First run in the process (s)");
    println!();
    let mut head = "| query |".to_string();
    let mut rule = "| --- |".to_string();
    for n in names {
        head += &format!(" {n} |");
        rule += " ---: |";
    }
    println!("{head}\n{rule}");
    for (q, measured) in results {
        let mut line = format!("| {q} |");
        for m in measured {
            line += &format!(" {:.3} |", m.times[0]);
        }
        println!("{line}");
    }
    if let Some(path) = &args.json {
        let json = serde_json::json!({
            "data": args.data.display().to_string(),
            "runs": args.runs,
            "threads": args.threads,
            "engines": names,
            "queries": results.iter().map(|(q, m)| serde_json::json!({
                "query": q,
                "times": m.iter().map(|m| m.times.clone()).collect::<Vec<_>>(),
                "units_per_worker": m.iter().map(|m| m.per_worker.clone()).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        std::fs::write(path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    }
}

/// `--serve`: a plain, unauthenticated worker (DataFusion's own scans allowed, for
/// `--remote-df`) on `addr` until the process is killed.
async fn serve(addr: &str) {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .unwrap_or_else(|e| panic!("listening on {addr}: {e}"));
    println!("listening on http://{}", listener.local_addr().unwrap());
    std::io::stdout().flush().unwrap();
    rayquet_datafusion::serve(listener, ScanOptions::new())
        .await
        .unwrap_or_else(|e| panic!("the worker on {addr}: {e}"));
}

/// `--proxy`: every `(LISTEN, UPSTREAM)` pair forwarding connections with `delay` added each
/// way ([`relay`]), until the process is killed.
async fn proxies(pairs: &[(String, String)], delay: Duration) {
    let mut tasks = Vec::new();
    for (listen, upstream) in pairs {
        let listener = tokio::net::TcpListener::bind(listen)
            .await
            .unwrap_or_else(|e| panic!("listening on {listen}: {e}"));
        println!(
            "proxy {} -> {upstream}, {} ms each way",
            listener.local_addr().unwrap(),
            delay.as_millis()
        );
        let upstream = upstream.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                let Ok((client, _)) = listener.accept().await else {
                    continue;
                };
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    match tokio::net::TcpStream::connect(&upstream).await {
                        Ok(server) => {
                            let _ = client.set_nodelay(true);
                            let _ = server.set_nodelay(true);
                            let (cr, cw) = client.into_split();
                            let (sr, sw) = server.into_split();
                            tokio::join!(relay(cr, sw, delay), relay(sr, cw, delay));
                        }
                        Err(e) => eprintln!("proxy: connecting to {upstream}: {e}"),
                    }
                });
            }
        }));
    }
    std::io::stdout().flush().unwrap();
    futures::future::join_all(tasks).await;
}

/// One direction of a proxied connection: each chunk read from `from` is written to `to`
/// `delay` after it was read, in order. A reader task stamps chunks with their deadline onto a
/// channel, a writer sleeps until each deadline, so many chunks are in flight at once (the
/// link's throughput is not one chunk per `delay`). End of input (or an error) closes `to`'s
/// write side once everything before it is written.
async fn relay(
    from: tokio::net::tcp::OwnedReadHalf,
    to: tokio::net::tcp::OwnedWriteHalf,
    delay: Duration,
) {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<(tokio::time::Instant, Vec<u8>)>(4096);
    let reader = async move {
        let mut buf = vec![0u8; 256 << 10];
        loop {
            if from.readable().await.is_err() {
                break;
            }
            match from.try_read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    let due = tokio::time::Instant::now() + delay;
                    if tx.send((due, buf[..n].to_vec())).await.is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(_) => break,
            }
        }
        // `tx` dropped: the writer ends after the last chunk.
    };
    let writer = async move {
        while let Some((due, bytes)) = rx.recv().await {
            tokio::time::sleep_until(due).await;
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                if to.writable().await.is_err() {
                    return;
                }
                match to.try_write(rest) {
                    Ok(n) => rest = &rest[n..],
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                    Err(_) => return,
                }
            }
        }
        // `to` dropped here: its write side is shut down (the peer reads end of input).
    };
    tokio::join!(reader, writer);
}
