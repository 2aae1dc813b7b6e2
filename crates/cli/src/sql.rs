//! `rayquet sql` and `rayquet worker` (feature `datafusion`): DataFusion SQL over rayquet
//! tables, in this process on every core or on rayquet workers (datafusion-distributed), and
//! the worker that runs their scans.
//!
//! Tables are registered (schemas read, nothing scanned) on the main thread; the query runs on
//! a tokio runtime of this process for DataFusion, while rayquet keeps its own IO runtime and
//! decode pool.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use clap::Args;
use rayquet::{ScanBuilder, ScanOptions};
use rayquet_datafusion::datafusion::arrow::array::RecordBatch;
use rayquet_datafusion::datafusion::arrow::util::pretty::pretty_format_batches;
use rayquet_datafusion::datafusion::prelude::SessionContext;
use rayquet_datafusion::{guard, RayquetTable, WorkerScan};
use url::Url;

use crate::format::{count, parse_bytes, parse_key_value, write_out};
use crate::CliResult;

#[derive(Debug, Args)]
pub struct SqlArgs {
    /// The query (DataFusion's SQL dialect), over the tables named below: one statement or
    /// several separated by `;` (e.g. `CREATE VIEW v AS ...; SELECT ... FROM v`), run in order;
    /// the result is the last one that returns rows. It may begin with a comment (`-- Q1`).
    /// Without any table, the demo dataset (made once under the temp directory) is table
    /// `lineitem`.
    #[arg(
        value_name = "QUERY",
        allow_hyphen_values = true,
        required_unless_present = "file",
        conflicts_with = "file"
    )]
    query: Option<String>,
    /// Read the query from this file instead (`-` for stdin).
    #[arg(short = 'f', long = "file", value_name = "FILE.sql")]
    file: Option<PathBuf>,
    /// A Parquet dataset as table NAME: a file, a directory or prefix (every *.parquet under
    /// it) or a URL (s3://, gs://, az://, file://) of one (repeatable).
    #[arg(long, value_name = "NAME=PATH_OR_URL", value_parser = parse_key_value)]
    parquet: Vec<(String, String)>,
    /// An Iceberg table as table NAME: a metadata JSON file or a table directory, or with
    /// --catalog `namespace.table` (repeatable).
    #[arg(long, value_name = "NAME=TABLE", value_parser = parse_key_value)]
    iceberg: Vec<(String, String)>,
    /// A Delta table as table NAME: its root directory or URL (repeatable).
    #[arg(long, value_name = "NAME=TABLE", value_parser = parse_key_value)]
    delta: Vec<(String, String)>,
    /// Read each --parquet dataset whose files' schemas differ as one (duckdb's
    /// `union_by_name`): columns matched by name, a column a file lacks null in its rows,
    /// types widened where both convert exactly (int32 and int64: int64). Every footer is read
    /// when the table is registered. Without it, every file must have the first file's schema.
    #[arg(long, requires = "parquet")]
    union_by_name: bool,
    /// An Iceberg catalog, configured as pyiceberg configures it (`~/.pyiceberg.yaml`,
    /// `PYICEBERG_CATALOG__<NAME>__<KEY>` variables): its tables are `NAME.namespace.table` in
    /// the query (a nested namespace quoted: `NAME."a.b".table`), and the --iceberg tables
    /// are `namespace.table` in it.
    #[arg(long, value_name = "NAME")]
    catalog: Option<String>,
    /// With --catalog: a catalog property over its configuration (repeatable).
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_key_value, requires = "catalog")]
    catalog_property: Vec<(String, String)>,
    /// Read Iceberg table NAME at this snapshot (repeatable).
    #[arg(long, value_name = "NAME=ID", value_parser = parse_key_value)]
    snapshot: Vec<(String, String)>,
    /// Read Delta table NAME at this version (repeatable).
    #[arg(long, value_name = "NAME=N", value_parser = parse_key_value)]
    version: Vec<(String, String)>,
    /// Run the scans on these rayquet workers (`rayquet worker`), e.g.
    /// http://10.0.0.5:50051,http://10.0.0.6:50051. This process plans and streams them work;
    /// it never scans.
    #[arg(long, value_delimiter = ',', value_name = "URL,URL,...")]
    workers: Vec<Url>,
    /// Object-store option, e.g. aws_region=eu-west-1 (repeatable). Workers take theirs from
    /// their own command line and environment: no credential is sent to them.
    #[arg(long = "option", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    options: Vec<(String, String)>,
    #[command(flatten)]
    credentials: ClientCredentialArgs,
    /// Write every result row to this Arrow IPC file.
    #[arg(long, value_name = "FILE.arrow")]
    out: Option<PathBuf>,
    /// Result rows to print (0: all).
    #[arg(long, value_name = "N", default_value_t = 100)]
    max_rows: usize,
    /// Print one JSON object on stdout: rows, seconds, the first --max-rows result rows and,
    /// with --workers, the units and rows each worker scanned.
    #[arg(long)]
    json: bool,
}

/// What `rayquet sql --workers` presents to the workers.
#[derive(Debug, Args)]
pub struct ClientCredentialArgs {
    /// The workers' bearer token, in this file (first line); or in the environment variable
    /// RAYQUET_WORKER_TOKEN.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// For https:// workers: the CA (PEM) their certificates chain to (default: the system's).
    #[arg(long, value_name = "CA.pem")]
    tls_ca: Option<PathBuf>,
    /// For workers that ask for one (mutual TLS): this client's certificate (PEM), with
    /// --tls-key.
    #[arg(long, value_name = "CERT.pem", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The key of --tls-cert (PEM).
    #[arg(long, value_name = "KEY.pem", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
}

/// The environment variable a worker's or a coordinator's token can come from.
const TOKEN_VAR: &str = "RAYQUET_WORKER_TOKEN";

/// The token of `--token-file`, else of [`TOKEN_VAR`].
fn token(file: Option<&PathBuf>) -> CliResult<Option<guard::Token>> {
    Ok(match (file, std::env::var(TOKEN_VAR).ok()) {
        (Some(f), _) => Some(guard::Token::from_file(f)?),
        (None, Some(v)) if !v.is_empty() => Some(guard::Token::new(&v)?),
        _ => None,
    })
}

impl ClientCredentialArgs {
    fn credentials(&self) -> CliResult<guard::Credentials> {
        let mut c = guard::Credentials::none();
        if let Some(t) = token(self.token_file.as_ref())? {
            c = c.token(t);
        }
        if let Some(ca) = &self.tls_ca {
            c = c.ca_file(ca)?;
        }
        if let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) {
            c = c.identity_files(cert, key)?;
        }
        Ok(c)
    }
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Address to listen on, e.g. 0.0.0.0:50051 (port 0: any free port; the URL is printed).
    /// An address other than loopback needs --token-file (or RAYQUET_WORKER_TOKEN) or
    /// --tls-client-ca, unless --insecure.
    #[arg(long, value_name = "HOST:PORT")]
    listen: String,
    /// Object-store option for the stores this worker reads through, e.g.
    /// aws_region=eu-west-1 (repeatable; the environment is read too).
    #[arg(long = "option", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    options: Vec<(String, String)>,
    /// The bearer token every call must carry, in this file (first line, at least 16
    /// characters); or in the environment variable RAYQUET_WORKER_TOKEN.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Serve TLS (https://) with this certificate (PEM chain), with --tls-key.
    #[arg(long, value_name = "CERT.pem", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// The key of --tls-cert (PEM).
    #[arg(long, value_name = "KEY.pem", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Mutual TLS: accept only clients whose certificate chains to this CA (PEM).
    #[arg(long, value_name = "CA.pem", requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
    /// The CA (PEM) other workers' certificates chain to, when a query has this worker read
    /// from them (shuffles); default: --tls-client-ca, else the system's.
    #[arg(long, value_name = "CA.pem")]
    tls_peer_ca: Option<PathBuf>,
    /// Units may read only under this root: a local directory or an object-store prefix
    /// (s3://bucket/prefix, gs://..., az://...), repeatable. None given: object-store URLs
    /// only, no local file.
    #[arg(long, value_name = "ROOT")]
    allow: Vec<String>,
    /// Another worker this one may read from in a query (its URL as the coordinator's
    /// --workers name it), repeatable. None given: it dials no other worker.
    #[arg(long, value_name = "URL")]
    peer: Vec<Url>,
    /// The largest gRPC message it decodes (a plan, a batch of units).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes, default_value = "64M")]
    max_message_size: usize,
    /// Calls it serves at once; past that, a call is refused.
    #[arg(long, value_name = "N", default_value_t = 512)]
    max_calls: usize,
    /// DataFusion's memory pool for the queries it runs (e.g. 4G; default: unbounded).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    memory_limit: Option<usize>,
    /// Listen on a non-loopback address without a token or client certificates: anyone who
    /// reaches the port can run queries with this worker's credentials.
    #[arg(long)]
    insecure: bool,
}

impl WorkerArgs {
    /// What this worker lets in: its credentials, roots, peers and limits.
    fn guard(&self) -> CliResult<guard::WorkerGuard> {
        let token = token(self.token_file.as_ref())?;
        let tls = match (&self.tls_cert, &self.tls_key) {
            (Some(c), Some(k)) => Some(guard::ServerTls::from_files(
                c,
                k,
                self.tls_client_ca.as_deref(),
            )?),
            _ => None,
        };
        let mut peer_credentials = guard::Credentials::none();
        if let Some(t) = &token {
            peer_credentials = peer_credentials.token(t.clone());
        }
        if let Some(ca) = self.tls_peer_ca.as_ref().or(self.tls_client_ca.as_ref()) {
            peer_credentials = peer_credentials.ca_file(ca)?;
        }
        if let (Some(c), Some(k), Some(_)) = (&self.tls_cert, &self.tls_key, &self.tls_client_ca) {
            peer_credentials = peer_credentials.identity_files(c, k)?;
        }
        Ok(guard::WorkerGuard {
            token,
            tls,
            roots: guard::Roots::parse(&self.allow)?,
            peers: self.peer.clone(),
            peer_credentials,
            limits: guard::Limits {
                max_message_bytes: self.max_message_size,
                max_calls: self.max_calls.max(1),
                memory_limit: self.memory_limit,
                ..Default::default()
            },
        })
    }
}

fn scan_options(options: &[(String, String)]) -> ScanOptions {
    options
        .iter()
        .fold(ScanOptions::new(), |o, (k, v)| o.store_option(k, v))
}

/// A tokio runtime for DataFusion (rayquet's IO runtime and decode pool are its own).
fn runtime() -> CliResult<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .thread_name("datafusion")
        .enable_all()
        .build()?)
}

/// The value of `NAME=...` in `pins`, parsed.
fn pinned<T: std::str::FromStr>(pins: &[(String, String)], name: &str) -> CliResult<Option<T>> {
    match pins.iter().find(|(n, _)| n == name) {
        None => Ok(None),
        Some((_, v)) => v
            .parse()
            .map(Some)
            .map_err(|_| format!("{name}: {v:?} is not a snapshot id or version").into()),
    }
}

fn register(ctx: &SessionContext, args: &mut SqlArgs, options: &ScanOptions) -> CliResult<()> {
    let remote = !args.workers.is_empty();
    let no_tables = args.parquet.is_empty() && args.iceberg.is_empty() && args.delta.is_empty();
    if no_tables && args.catalog.is_none() {
        let demo = crate::gen::ensure_demo()?;
        args.parquet
            .push(("lineitem".into(), demo.to_string_lossy().into_owned()));
    }
    let args = &*args;
    let mut names: Vec<&str> = Vec::new();
    for (name, _) in args.parquet.iter().chain(&args.iceberg).chain(&args.delta) {
        if names.contains(&name.as_str()) {
            return Err(format!("table {name} is given twice").into());
        }
        names.push(name);
    }
    for (name, _) in &args.snapshot {
        if !args.iceberg.iter().any(|(n, _)| n == name) {
            return Err(format!("--snapshot {name}=...: no --iceberg {name}=...").into());
        }
    }
    for (name, _) in &args.version {
        if !args.delta.iter().any(|(n, _)| n == name) {
            return Err(format!("--version {name}=...: no --delta {name}=...").into());
        }
    }
    let mut tables = Vec::new();
    for (_, path) in &args.parquet {
        tables.push(match args.union_by_name {
            true => RayquetTable::parquet_union_by_name(path, options.clone())?,
            false => RayquetTable::parquet(path, options.clone())?,
        });
    }
    for (name, path) in &args.iceberg {
        let mut scan = match &args.catalog {
            Some(catalog) => crate::scan::catalog_scan(catalog, &args.catalog_property, path)?,
            None => rayquet_iceberg::TableScan::open(path.as_str()),
        };
        if let Some(id) = pinned(&args.snapshot, name)? {
            scan = scan.snapshot_id(id);
        }
        tables.push(RayquetTable::iceberg(scan.with_options(options.clone()))?);
    }
    for (name, path) in &args.delta {
        let mut scan = rayquet_delta::TableScan::open(path.as_str());
        if let Some(v) = pinned(&args.version, name)? {
            scan = scan.version(v);
        }
        tables.push(RayquetTable::delta(scan.with_options(options.clone()))?);
    }
    for (table, name) in tables.into_iter().zip(names) {
        ctx.register_table(name, Arc::new(table.require_remote(remote)))?;
    }
    if let Some(catalog) = &args.catalog {
        register_catalog(ctx, catalog, &args.catalog_property, options, remote)?;
    }
    Ok(())
}

/// The whole catalog `name` as the session's catalog of that name.
#[cfg(any(feature = "rest", feature = "sql-catalog", feature = "glue-catalog"))]
fn register_catalog(
    ctx: &SessionContext,
    name: &str,
    props: &[(String, String)],
    options: &ScanOptions,
    remote: bool,
) -> CliResult<()> {
    let config = crate::scan::catalog_config(name, props)?;
    let catalog = rayquet_datafusion::IcebergCatalog::new(config, options.clone());
    ctx.register_catalog(name, Arc::new(catalog.require_remote(remote)));
    Ok(())
}

/// Without catalog features, --catalog names a catalog this build cannot read.
#[cfg(not(any(feature = "rest", feature = "sql-catalog", feature = "glue-catalog")))]
fn register_catalog(
    _: &SessionContext,
    name: &str,
    props: &[(String, String)],
    _: &ScanOptions,
    _: bool,
) -> CliResult<()> {
    crate::scan::catalog_scan(name, props, "").map(|_| ())
}

/// The query text: the argument, or the file's (or stdin's) contents.
fn query_text(args: &SqlArgs) -> CliResult<String> {
    match (&args.query, &args.file) {
        (Some(q), _) => Ok(q.clone()),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| format!("reading the query from stdin: {e}"))?;
            Ok(text)
        }
        (None, Some(path)) => {
            std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()).into())
        }
        (None, None) => Err("no query: give one, or -f FILE.sql".into()),
    }
}

pub fn run(mut args: SqlArgs) -> CliResult<()> {
    let query = query_text(&args)?;
    let options = scan_options(&args.options);
    let ctx = match args.workers.is_empty() {
        true => rayquet_datafusion::local_session(),
        false => rayquet_datafusion::distributed_session_with(
            args.workers.clone(),
            options.clone(),
            args.credentials.credentials()?,
        )?,
    };
    register(&ctx, &mut args, &options)?;
    let start = Instant::now();
    let rt = runtime()?;
    let result = rt.block_on(async {
        if args.workers.is_empty() {
            let batches = rayquet_datafusion::collect_sql(&ctx, &query).await?;
            Ok::<_, rayquet_datafusion::datafusion::error::DataFusionError>((batches, vec![]))
        } else {
            rayquet_datafusion::collect_distributed(&ctx, &query, &args.workers).await
        }
    });
    // The runtime is left to the process's exit, never shut down here: after a failed
    // distributed query datafusion-distributed's background tasks (work-unit feeds, metrics)
    // are still draining, and a shutdown that cancels them makes the drain panic.
    std::mem::forget(rt);
    let (batches, workers) = result?;
    let seconds = start.elapsed().as_secs_f64();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    if let Some(path) = &args.out {
        write_ipc(path, &batches)?;
    }
    let shown = head(&batches, args.max_rows);
    let mut stdout = std::io::stdout().lock();
    if args.json {
        let json = serde_json::json!({
            "rows": rows,
            "seconds": seconds,
            "result": json_rows(&shown)?,
            "result_truncated": shown.iter().map(|b| b.num_rows()).sum::<usize>() < rows,
            "workers": workers.iter().map(worker_json).collect::<Vec<_>>(),
        });
        write_out(&mut stdout, format_args!("{json}\n"))?;
        return Ok(());
    }
    write_out(
        &mut stdout,
        format_args!("{}\n", pretty_format_batches(&shown)?),
    )?;
    let more = match shown.iter().map(|b| b.num_rows()).sum::<usize>() < rows {
        true => format!(" (first {} shown; --max-rows 0 for all)", args.max_rows),
        false => String::new(),
    };
    eprintln!("{} rows in {seconds:.3} s{more}", count(rows as u64));
    for w in &workers {
        eprintln!(
            "  worker {}: {} units, {} rows scanned",
            w.worker,
            count(w.units),
            count(w.rows)
        );
    }
    Ok(())
}

fn worker_json(w: &WorkerScan) -> serde_json::Value {
    serde_json::json!({ "url": w.worker.as_str(), "units": w.units, "rows": w.rows })
}

/// The first `max` rows (all when `max` is 0).
fn head(batches: &[RecordBatch], max: usize) -> Vec<RecordBatch> {
    if max == 0 {
        return batches.to_vec();
    }
    let mut left = max;
    let mut out = Vec::new();
    for b in batches {
        if left == 0 {
            break;
        }
        let n = b.num_rows().min(left);
        out.push(b.slice(0, n));
        left -= n;
    }
    out
}

/// Rows as JSON objects (arrow's JSON writer: column name to value).
fn json_rows(batches: &[RecordBatch]) -> CliResult<serde_json::Value> {
    use rayquet_datafusion::datafusion::arrow::json::ArrayWriter;
    let mut writer = ArrayWriter::new(Vec::new());
    for b in batches {
        writer.write(b)?;
    }
    writer.finish()?;
    let bytes = writer.into_inner();
    if bytes.is_empty() {
        return Ok(serde_json::Value::Array(vec![]));
    }
    Ok(serde_json::from_slice(&bytes)?)
}

fn write_ipc(path: &std::path::Path, batches: &[RecordBatch]) -> CliResult<()> {
    let Some(first) = batches.first() else {
        return Err("the query returned no batches: nothing to write to --out".into());
    };
    let mut out = crate::out::ArrowOut::create(path, &first.schema())?;
    for b in batches {
        out.write(b)?;
    }
    out.finish()
}

pub fn worker(args: WorkerArgs) -> CliResult<()> {
    let options = scan_options(&args.options);
    let guard = args.guard()?;
    runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .map_err(|e| format!("listening on {}: {e}", args.listen))?;
        let addr = listener.local_addr()?;
        if !addr.ip().is_loopback() && !guard.authenticates() {
            if !args.insecure {
                return Err(format!(
                    "refusing to serve on {addr} without authentication: anyone who reaches \
                     it could run queries with this worker's credentials. Give --token-file \
                     (or {TOKEN_VAR}) or --tls-client-ca, or --insecure to serve anyway"
                )
                .into());
            }
            eprintln!(
                "WARNING: rayquet worker on {addr} without authentication (--insecure): \
                 anyone who reaches it can run queries with this worker's credentials"
            );
        }
        let (worker, _stats) = rayquet_datafusion::guarded_worker(options, &guard)?;
        let scheme = if guard.tls.is_some() { "https" } else { "http" };
        let mut stdout = std::io::stdout().lock();
        write_out(
            &mut stdout,
            format_args!("rayquet worker listening on {scheme}://{addr}\n"),
        )?;
        drop(stdout);
        rayquet_datafusion::serve_guarded(listener, worker, &guard).await?;
        Ok(())
    })
}
