//! The workload benchmark: rayquet against parquet's sync and async readers and the table
//! formats' own readers, on a table of workloads, each reader in its own child process (the
//! benchmark binary again, with `one`) for a fair peak RSS. The binary is
//! `benches/workloads.rs` of this crate:
//!
//! ```sh
//! cargo bench -p rayquet-bench --bench workloads -- --workloads W1,W2,W7 --readers rayquet --runs 3
//! ```
//!
//! The parent generates (or reuses) the datasets, runs every (workload, reader) pair `--runs`
//! times, alternating readers, and reports medians: a text table (or `--json`), the lower bound
//! of each workload, and an SVG chart in `--out-dir`.

mod delta;
mod iceberg;
mod kinds;
mod layout;
mod readers;
mod report;
mod s3;
mod workloads;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::{ObjectMeta, ObjectStore};
use rayquet_testkit::latency::LatencyStore;
use serde_json::{json, Value};

use readers::ReaderId;
use workloads::Workload;

/// Network model and data location shared by `bench` and `bench-one`.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// Where datasets are generated once and reused.
    #[arg(long, value_name = "DIR", default_value_os_t = std::env::temp_dir().join("rayquet-bench"))]
    data_dir: PathBuf,
    /// First-byte delay of every request in the latency workloads, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 50)]
    first_byte_ms: u64,
    /// Bandwidth of each request in the latency workloads, in MiB/s.
    #[arg(long, value_name = "MIB_PER_SEC", default_value_t = 60)]
    bandwidth_mib: u64,
    /// Connections the simulated store serves at once (0: no cap).
    #[arg(long, value_name = "N", default_value_t = 64)]
    max_connections: usize,
    /// Multiply every dataset's rows by this (smoke tests use tiny scales).
    #[arg(long, hide = true, default_value_t = 1.0)]
    scale: f64,
    /// Read from this S3 endpoint (set by `--s3` for the children).
    #[arg(long, hide = true, value_name = "URL")]
    s3_endpoint: Option<String>,
}

/// Arguments of the benchmark.
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    common: Common,
    /// Workloads to run, comma-separated (default: all): W1, W1z, W2, W3, W4, W5, W6, W7 (a
    /// selective filter), W8 (an unselective filter), T1, T2 (tasks), I1, I2 (Iceberg
    /// merge-on-read), D1, D2 (Delta).
    #[arg(long, value_delimiter = ',', value_name = "IDS")]
    workloads: Option<Vec<String>>,
    /// Readers to run, comma-separated (default: each workload's own list).
    #[arg(long, value_enum, value_delimiter = ',', value_name = "NAMES")]
    readers: Option<Vec<ReaderId>>,
    /// Runs per (workload, reader); the report shows medians.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = parse_positive)]
    runs: usize,
    /// Print the results as one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Directory for bench.json and bench.svg.
    #[arg(long, value_name = "DIR", default_value = "bench-results")]
    out_dir: PathBuf,
    /// Start moto_server on loopback, upload the workloads' files and read them over real
    /// HTTP (no simulated latency: the store only counts).
    #[arg(long)]
    s3: bool,
}

/// Arguments of the hidden `one`: one reader on one workload, one JSON line.
#[derive(Debug, Args)]
pub struct BenchOneArgs {
    #[command(flatten)]
    common: Common,
    #[arg(long)]
    workload: String,
    #[arg(long, value_enum)]
    reader: ReaderId,
}

impl Common {
    fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--data-dir".into(),
            self.data_dir.to_string_lossy().into_owned(),
            "--first-byte-ms".into(),
            self.first_byte_ms.to_string(),
            "--bandwidth-mib".into(),
            self.bandwidth_mib.to_string(),
            "--max-connections".into(),
            self.max_connections.to_string(),
            "--scale".into(),
            self.scale.to_string(),
        ];
        if let Some(endpoint) = &self.s3_endpoint {
            args.extend(["--s3-endpoint".into(), endpoint.clone()]);
        }
        args
    }

    fn first_byte(&self) -> Duration {
        Duration::from_millis(self.first_byte_ms)
    }

    fn bandwidth(&self) -> u64 {
        self.bandwidth_mib << 20
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The benchmark: every selected workload with every selected reader, each run in a child
/// process (`exe one ...`), or in this process when `exe` is `None`; prints the table (or,
/// with `--json`, nothing) and returns the results.
fn run(mut args: BenchArgs, exe: Option<PathBuf>) -> CliResult<Value> {
    let selected: Vec<&Workload> = match &args.workloads {
        Some(ids) => ids
            .iter()
            .map(|id| workloads::find(id))
            .collect::<CliResult<_>>()?,
        None => workloads::WORKLOADS.iter().collect(),
    };
    std::fs::create_dir_all(&args.common.data_dir)?;

    let moto = args.s3.then(s3::Moto::start).transpose()?;
    let mut uploaded = Vec::new();
    let mut results = Vec::new();
    for w in selected {
        let dir = w.data.ensure(&args.common.data_dir, args.common.scale)?;
        if let Some(moto) = &moto {
            if !uploaded.contains(&dir) {
                eprintln!("uploading {} to {}", dir.display(), moto.endpoint);
                moto.upload(&dir)?;
                uploaded.push(dir.clone());
            }
            args.common.s3_endpoint = Some(moto.endpoint.clone());
        }
        let filter = workloads::filter(w, &dir)?;
        let layout = workloads::layout(&dir, w.columns, filter.as_ref())?;
        let readers: Vec<ReaderId> = match &args.readers {
            Some(r) => w
                .readers
                .iter()
                .copied()
                .filter(|x| r.contains(x))
                .collect(),
            None => w.readers.to_vec(),
        };
        let load = load_average();
        let mut runs: Vec<Vec<Value>> = vec![Vec::new(); readers.len()];
        for run in 0..args.runs {
            for (i, reader) in readers.iter().enumerate() {
                eprintln!("{} {} run {}/{}", w.id, reader.name(), run + 1, args.runs);
                let one = BenchOneArgs {
                    common: args.common.clone(),
                    workload: w.id.to_string(),
                    reader: *reader,
                };
                runs[i].push(match &exe {
                    Some(exe) => run_child(exe, &one)?,
                    None => run_one(one)?,
                });
            }
        }
        results.push(report::WorkloadResult::new(
            w,
            layout,
            load,
            readers.into_iter().zip(runs).collect(),
        ));
    }
    let config = report::Config {
        cores: cores(),
        first_byte: args.common.first_byte(),
        bandwidth: args.common.bandwidth(),
        max_connections: args.common.max_connections,
        runs: args.runs,
        scale: args.common.scale,
        s3: args.s3,
    };
    drop(moto);
    let json = report::to_json(&config, &results);
    std::fs::create_dir_all(&args.out_dir)?;
    let json_path = args.out_dir.join("bench.json");
    std::fs::write(&json_path, format!("{json:#}\n"))?;
    let svg_path = args.out_dir.join("bench.svg");
    std::fs::write(&svg_path, report::svg(&results))?;
    if !args.json {
        let text = report::table(&config, &results);
        eprintln!(
            "{text}\nwrote {} and {}",
            json_path.display(),
            svg_path.display()
        );
    }
    Ok(json)
}

/// The 1-minute load average before a workload starts (other work on the machine skews
/// CPU-bound results; the report shows it).
fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Run `one` in a child process and parse its JSON line.
fn run_child(exe: &std::path::Path, one: &BenchOneArgs) -> CliResult<Value> {
    let (w, reader) = (&one.workload, one.reader);
    let out = Command::new(exe)
        .arg("one")
        .args(one.common.to_args())
        .args(["--workload", w, "--reader", reader.name()])
        .output()?;
    if !out.status.success() {
        return Err(format!(
            "{w} {} failed: {}",
            reader.name(),
            String::from_utf8_lossy(&out.stderr).trim()
        )
        .into());
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    Ok(serde_json::from_str(line).map_err(|e| format!("`one` printed {line:?}: {e}"))?)
}

/// CPU time (user, system) of this process, from `getrusage(RUSAGE_SELF)`.
fn cpu_times() -> (Duration, Duration) {
    // SAFETY: getrusage only writes into the zeroed struct it is given; RUSAGE_SELF is valid.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(ru.ru_utime), tv(ru.ru_stime))
}

/// The store a child reads from: the dataset directory, or its prefix in the S3 bucket.
fn inner_store(
    c: &Common,
    dir: &std::path::Path,
) -> CliResult<(Arc<dyn ObjectStore>, Option<object_store::path::Path>)> {
    match &c.s3_endpoint {
        None => Ok((Arc::new(LocalFileSystem::new_with_prefix(dir)?), None)),
        Some(endpoint) => Ok((
            s3::client(endpoint)?,
            Some(object_store::path::Path::from(s3::prefix(dir))),
        )),
    }
}

/// `one`: one reader over one workload; its results as one JSON object.
fn run_one(args: BenchOneArgs) -> CliResult<Value> {
    let w = workloads::find(&args.workload)?;
    let c = &args.common;
    let dir = w.data.dir(&c.data_dir, c.scale);
    let (inner, prefix) = inner_store(c, &dir)?;
    let mut files: Vec<ObjectMeta> = {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(inner.list(prefix.as_ref()).try_collect())?
    };
    files.retain(|m| m.location.as_ref().ends_with(".parquet"));
    files.sort_by(|a, b| a.location.cmp(&b.location));
    if files.is_empty() {
        return Err(format!("no parquet files in {}", dir.display()).into());
    }
    // Local (and S3) workloads go through the same wrapper with no delay, so requests are
    // counted.
    let store = Arc::new(if w.latency && c.s3_endpoint.is_none() {
        LatencyStore::new(inner)
            .with_first_byte(c.first_byte())
            .with_bandwidth(c.bandwidth())
            .with_max_connections(c.max_connections)
    } else {
        LatencyStore::new(inner)
            .with_first_byte(Duration::ZERO)
            .with_bandwidth(0)
    });
    let input = readers::Input {
        store: store.clone(),
        files,
        columns: w.columns.map(|c| c.iter().map(|s| s.to_string()).collect()),
        budget: w.budget,
        cores: cores(),
        filter: workloads::filter(w, &dir)?,
        rows_per_file: w.data.rows_per_file(c.scale),
    };
    let (user0, sys0) = cpu_times();
    let start = Instant::now();
    let outcome = readers::run(args.reader, &input, start)?;
    let seconds = start.elapsed().as_secs_f64();
    let (user1, sys1) = cpu_times();
    let peak_rss = rayquet_testkit::peak_rss();
    let counters = store.counters();
    let line = json!({
        "workload": w.id,
        "reader": args.reader.name(),
        "rows": outcome.rows,
        "batches": outcome.batches,
        "seconds": seconds,
        "first_batch_seconds": outcome.first_batch.map(|d| d.as_secs_f64()),
        "user_seconds": (user1 - user0).as_secs_f64(),
        "sys_seconds": (sys1 - sys0).as_secs_f64(),
        "peak_rss_bytes": peak_rss,
        "requests": counters.requests,
        "heads": counters.heads,
        "bytes_fetched": counters.bytes,
        "peak_concurrency": counters.peak_concurrency,
    });
    Ok(line)
}

/// The benchmark's errors.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// A result of the benchmark.
pub type CliResult<T> = Result<T, BoxError>;

#[derive(Debug, Parser)]
#[command(
    name = "workloads",
    max_term_width = 100,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(flatten)]
    bench: BenchArgs,
    #[command(subcommand)]
    one: Option<One>,
}

#[derive(Debug, Subcommand)]
enum One {
    /// Run one reader on one workload and print one JSON line (the parent's children).
    #[command(hide = true)]
    One(BenchOneArgs),
}

/// The benchmark binary's `main`: parse the command line (`cargo bench` adds `--bench`,
/// which is ignored), run the benchmark or, with `one`, one child run.
pub fn main() -> std::process::ExitCode {
    // As the `rayquet` binary: transparent huge pages off for the process (RAYQUET_THP=1 keeps
    // them), so that readers measured here run as they run there.
    #[cfg(target_os = "linux")]
    if std::env::var_os("RAYQUET_THP").is_none_or(|v| v == "0") {
        // SAFETY: prctl with PR_SET_THP_DISABLE only sets a flag of this process.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
    let args = std::env::args().filter(|a| a != "--bench");
    let cli = Cli::parse_from(args);
    let json_wanted = cli.bench.json;
    let result = match cli.one {
        Some(One::One(args)) => run_one(args).map(|line| println!("{line}")),
        None => self_exe()
            .and_then(|exe| run(cli.bench, Some(exe)))
            .map(|json| {
                if json_wanted {
                    println!("{json}")
                }
            }),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Parse a count of at least 1.
fn parse_positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("expected a whole number of at least 1, got {s:?}")),
    }
}

/// This binary: /proc/self/exe still runs it if the file at its path is rebuilt meanwhile (a
/// shared target directory); elsewhere the path will do.
fn self_exe() -> CliResult<PathBuf> {
    let proc_exe = PathBuf::from("/proc/self/exe");
    Ok(if proc_exe.exists() {
        proc_exe
    } else {
        std::env::current_exe()?
    })
}

/// Run the benchmark with these command-line arguments in this process (no child processes:
/// for smoke tests of the harness and its readers, not for measurements) and return its
/// results, as `--json` prints them.
pub fn run_in_process<I, S>(args: I) -> CliResult<Value>
where
    I: IntoIterator<Item = S>,
    S: Into<std::ffi::OsString> + Clone,
{
    let args = std::iter::once(std::ffi::OsString::from("workloads"))
        .chain(args.into_iter().map(Into::into));
    let cli = Cli::try_parse_from(args)?;
    run(cli.bench, None)
}
