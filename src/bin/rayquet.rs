//! The `rayquet` command line: generate a synthetic dataset (`gen`) and scan Parquet files or
//! object-store prefixes (`scan`), reporting throughput, and compare readers (`bench`).
//!
//! Errors are printed as `error: <message>` on stderr with exit code 1.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::ipc::writer::FileWriter;
use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use rayquet::gen::{self, Compression, GenOptions};

#[path = "rayquet/bench.rs"]
mod bench;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type CliResult<T> = Result<T, BoxError>;

/// Read Parquet from object storage into Arrow, fast: tokio fetches, rayon decodes.
#[derive(Debug, Parser)]
#[command(name = "rayquet", version, about, max_term_width = 100)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Write a deterministic synthetic TPC-H lineitem-like dataset (20 columns).
    Gen(GenArgs),
    /// Scan Parquet files and report rows, bytes and throughput.
    ///
    /// Without a path, scans a demo dataset (created once under the system temp directory).
    Scan(ScanArgs),
    /// Benchmark rayquet against parquet's sync and async readers on generated workloads,
    /// local and under simulated object-store latency; prints a table, writes JSON and an SVG.
    Bench(bench::BenchArgs),
    /// Run one reader on one workload and print one JSON line (used by `bench`).
    #[command(hide = true)]
    BenchOne(bench::BenchOneArgs),
}

#[derive(Debug, Args)]
struct GenArgs {
    /// Directory to write part-00000.parquet, part-00001.parquet, ... into (created if missing).
    dir: PathBuf,
    /// Number of files.
    #[arg(long, default_value_t = GenOptions::default().files)]
    files: usize,
    /// Row groups per file.
    #[arg(long, default_value_t = GenOptions::default().row_groups)]
    row_groups: usize,
    /// Rows per row group.
    #[arg(long, default_value_t = GenOptions::default().rows_per_row_group,
          value_parser = parse_positive)]
    rows: usize,
    /// Page compression: none, snappy, zstd, lz4 or gzip.
    #[arg(long, default_value_t = Compression::Snappy)]
    compression: Compression,
    /// Seed of the generated values (same arguments, same bytes).
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Engine {
    /// rayquet's parallel pipeline.
    Rayquet,
    /// parquet's single-threaded reader, file after file (local files only): the baseline.
    Sync,
}

impl Engine {
    fn name(self) -> &'static str {
        match self {
            Engine::Rayquet => "rayquet",
            Engine::Sync => "sync",
        }
    }
}

#[derive(Debug, Args)]
struct ScanArgs {
    /// Files, directories, prefixes or URLs (s3://, gs://, az://, file://, memory://).
    /// Directories and prefixes mean every *.parquet under them, in lexical order.
    #[arg(value_name = "PATH_OR_URL")]
    paths: Vec<String>,
    /// Columns to read, comma-separated (default: all). Nested leaves as dotted paths.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    columns: Option<Vec<String>>,
    /// Rows per batch.
    #[arg(long, value_name = "N", default_value_t = rayquet::DEFAULT_BATCH_SIZE,
          value_parser = parse_positive)]
    batch_size: usize,
    /// Stop after this many rows.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Deliver only rows matching this SQL expression, e.g. "l_quantity < 5 AND l_shipmode =
    /// 'AIR'" (comparisons, IN, BETWEEN, IS [NOT] NULL, AND, OR, NOT). Row groups and pages
    /// that cannot match are not fetched.
    #[arg(long, value_name = "SQL", value_parser = parse_filter)]
    filter: Option<rayquet::Expr>,
    /// Add an Int64 column of this name holding each row's position in its file.
    #[arg(long, value_name = "NAME")]
    row_index: Option<String>,
    /// Deliver batches as they are ready rather than in file and row-group order.
    #[arg(long)]
    unordered: bool,
    /// Memory budget for fetched and decoded data not yet delivered (e.g. 512M, 2G; K/M/G are
    /// powers of 1024).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    budget: Option<usize>,
    /// Object-store option, e.g. aws_region=eu-west-1 or aws_endpoint=http://localhost:9000
    /// (repeatable).
    #[arg(long = "option", value_name = "KEY=VALUE", value_parser = parse_key_value)]
    options: Vec<(String, String)>,
    /// Also write every batch to this Arrow IPC file.
    #[arg(long, value_name = "FILE.arrow")]
    out: Option<PathBuf>,
    /// Print one JSON object with the results on stdout (and no human summary).
    #[arg(long)]
    json: bool,
    /// Decode strings and binaries to Arrow's view types (Utf8View, BinaryView): measurably
    /// faster (no copy of every value into one buffer). `--string-views false` gives Utf8 and
    /// Binary (unless the file's embedded Arrow schema asks for views).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    string_views: bool,
    /// Reader to use. `sync` ignores --unordered, --budget and --option.
    #[arg(long, value_enum, default_value_t = Engine::Rayquet)]
    engine: Engine,
    /// Read an Iceberg table: a metadata JSON file (local path or URL) or a table directory
    /// (its version-hint.text or newest metadata/*.metadata.json). Columns `_file` and `_pos`
    /// give each row's data file and position.
    #[arg(long, value_name = "TABLE", conflicts_with_all = ["paths", "delta", "row_index"])]
    iceberg: Option<String>,
    /// With --iceberg: read this snapshot (time travel).
    #[arg(
        long,
        value_name = "ID",
        requires = "iceberg",
        conflicts_with = "reference"
    )]
    snapshot: Option<i64>,
    /// With --iceberg: read the snapshot of this branch or tag.
    #[arg(long = "ref", value_name = "NAME", requires = "iceberg")]
    reference: Option<String>,
    /// Read a Delta table: a local directory or URL (the table root, above _delta_log).
    #[arg(long, value_name = "TABLE", conflicts_with_all = ["paths", "row_index"])]
    delta: Option<String>,
    /// With --delta: read this version (time travel).
    #[arg(long, value_name = "N", requires = "delta")]
    version: Option<u64>,
}

// Decode threads allocate batches that the consumer frees; glibc's malloc hands such memory
// back to the kernel and faults it in again (page clearing showed up as ~30% of CPU in perf).
// Both engines of this binary use the same allocator, so comparisons stay fair.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Transparent huge pages make this workload's fresh memory cost bimodal: most runs are
    // fast, some spend up to a second in the kernel zeroing and compacting 2 MiB pages, and
    // RSS counts whole huge pages. Off for this process unless RAYQUET_THP=1.
    #[cfg(target_os = "linux")]
    if std::env::var_os("RAYQUET_THP").is_none_or(|v| v == "0") {
        // SAFETY: prctl with PR_SET_THP_DISABLE only sets a flag of this process.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Gen(args) => run_gen(args),
        Command::Scan(args) => run_scan(args),
        Command::Bench(args) => bench::run(args),
        Command::BenchOne(args) => bench::run_one(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

// ---------------------------------------------------------------------------------------------
// gen

fn run_gen(args: GenArgs) -> CliResult<()> {
    let opts = GenOptions {
        files: args.files,
        row_groups: args.row_groups,
        rows_per_row_group: args.rows,
        compression: args.compression,
        seed: args.seed,
    };
    let (paths, bytes, elapsed) = generate_with_spinner(&args.dir, &opts)?;
    let mut out = io::stdout().lock();
    write_out(
        &mut out,
        format_args!(
            "wrote {} files to {}: {} row groups, {} rows, {} on disk ({}) in {:.2} s\n",
            paths.len(),
            args.dir.display(),
            count(opts.files as u64 * opts.row_groups as u64),
            count(opts.total_rows()),
            human_bytes(bytes),
            opts.compression,
            elapsed.as_secs_f64(),
        ),
    )
}

/// Run [`gen::generate`] behind a spinner; return the paths, their total size and the time.
fn generate_with_spinner(
    dir: &Path,
    opts: &GenOptions,
) -> CliResult<(Vec<PathBuf>, u64, Duration)> {
    let spinner = spinner();
    spinner.set_message(format!(
        "generating {} rows in {} files ({})",
        count(opts.total_rows()),
        opts.files,
        opts.compression
    ));
    let start = Instant::now();
    let result = gen::generate(dir, opts);
    spinner.finish_and_clear();
    let paths = result.map_err(|e| format!("writing {}: {e}", dir.display()))?;
    let mut bytes = 0;
    for p in &paths {
        bytes += std::fs::metadata(p)
            .map_err(|e| format!("{}: {e}", p.display()))?
            .len();
    }
    Ok((paths, bytes, start.elapsed()))
}

// ---------------------------------------------------------------------------------------------
// demo dataset

/// The demo dataset `scan` reads when given no path.
fn demo_options() -> GenOptions {
    GenOptions {
        files: 8,
        row_groups: 4,
        rows_per_row_group: 65_536,
        compression: Compression::Snappy,
        seed: 0,
    }
}

fn demo_complete(dir: &Path, opts: &GenOptions) -> bool {
    (0..opts.files).all(|i| dir.join(gen::file_name(i)).is_file())
}

/// Make sure the demo dataset exists under the temp directory and return its path.
///
/// It is generated into a private directory and renamed into place, so an interrupted run never
/// leaves a partial dataset behind under the final name.
fn ensure_demo() -> CliResult<PathBuf> {
    let opts = demo_options();
    let dir = std::env::temp_dir().join("rayquet-demo");
    let summary = format!(
        "{} files x {} row groups x {} rows, {}",
        opts.files,
        opts.row_groups,
        count(opts.rows_per_row_group as u64),
        opts.compression
    );
    if demo_complete(&dir, &opts) {
        eprintln!(
            "no path given: scanning the demo dataset in {} ({summary})",
            dir.display()
        );
        return Ok(dir);
    }
    eprintln!(
        "no path given: creating a demo dataset in {} ({summary}) ...",
        dir.display()
    );
    let tmp = std::env::temp_dir().join(format!("rayquet-demo.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let (_, bytes, elapsed) = generate_with_spinner(&tmp, &opts)?;
    if dir.exists() && !demo_complete(&dir, &opts) {
        // A stale or damaged demo directory (ours, by its name): replace it.
        std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    if let Err(e) = std::fs::rename(&tmp, &dir) {
        let _ = std::fs::remove_dir_all(&tmp);
        // Another run may have finished first; its dataset is as good as ours.
        if !demo_complete(&dir, &opts) {
            return Err(format!("moving the demo dataset to {}: {e}", dir.display()).into());
        }
    }
    eprintln!(
        "created {} in {:.1} s; scanning it (pass a path or URL to scan your own data)",
        human_bytes(bytes),
        elapsed.as_secs_f64()
    );
    Ok(dir)
}

// ---------------------------------------------------------------------------------------------
// scan

/// What a scan measured, whichever engine ran it.
#[derive(Debug, Default)]
struct Stats {
    rows: u64,
    batches: u64,
    files: u64,
    row_groups: u64,
    requests: u64,
    bytes_fetched: u64,
    bytes_decoded: u64,
    peak_buffered_bytes: u64,
    io_time: Duration,
    decode_time: Duration,
    wait_time: Duration,
    elapsed: Duration,
    row_groups_pruned: u64,
    pages_pruned: u64,
    rows_filtered: u64,
    metadata_bytes: u64,
}

/// Where delivered batches go: counted, shown on the progress bar, optionally written out.
struct Sink {
    bar: ProgressBar,
    rows: u64,
    batches: u64,
    out: Option<(PathBuf, Option<FileWriter<io::BufWriter<File>>>)>,
}

impl Sink {
    fn new(out: Option<PathBuf>) -> Sink {
        Sink {
            bar: spinner(),
            rows: 0,
            batches: 0,
            out: out.map(|p| (p, None)),
        }
    }

    /// Open the output file (if any) for `schema`; later calls do nothing.
    fn open(&mut self, schema: &SchemaRef) -> CliResult<()> {
        if let Some((path, writer @ None)) = &mut self.out {
            let file = File::create(&*path).map_err(|e| format!("{}: {e}", path.display()))?;
            *writer = Some(
                FileWriter::try_new_buffered(file, schema)
                    .map_err(|e| format!("{}: {e}", path.display()))?,
            );
        }
        Ok(())
    }

    fn push(&mut self, batch: &RecordBatch, fetched: u64) -> CliResult<()> {
        self.rows += batch.num_rows() as u64;
        self.batches += 1;
        if let Some((path, Some(writer))) = &mut self.out {
            writer
                .write(batch)
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        if !self.bar.is_hidden() {
            self.bar.set_message(format!(
                "{} rows, {} batches, {} fetched",
                count(self.rows),
                count(self.batches),
                human_bytes(fetched)
            ));
        }
        Ok(())
    }

    fn finish(mut self) -> CliResult<()> {
        self.bar.finish_and_clear();
        if let Some((path, Some(mut writer))) = self.out.take() {
            writer
                .finish()
                .and_then(|_| writer.into_inner().map(drop))
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        Ok(())
    }
}

fn run_scan(args: ScanArgs) -> CliResult<()> {
    let table = args.iceberg.is_some() || args.delta.is_some();
    if table && args.engine == Engine::Sync {
        return Err("--engine sync reads plain files only".into());
    }
    let paths = if args.paths.is_empty() && !table {
        vec![ensure_demo()?.to_string_lossy().into_owned()]
    } else {
        args.paths.clone()
    };
    let stats = match args.engine {
        Engine::Rayquet => scan_rayquet(&paths, &args)?,
        Engine::Sync => scan_sync(&paths, &args)?,
    };
    report(&args, &stats)
}

/// The scan of the table or files named on the command line, with its columns and filter.
fn source_scan(paths: &[String], args: &ScanArgs) -> CliResult<rayquet::Scan> {
    #[cfg(feature = "iceberg")]
    if let Some(table) = &args.iceberg {
        let table = rayquet::iceberg::load_table(table, &args.options)?;
        let mut scan = rayquet::iceberg::TableScan::new(table);
        if let Some(id) = args.snapshot {
            scan = scan.snapshot_id(id);
        }
        if let Some(r) = &args.reference {
            scan = scan.reference(r.clone());
        }
        if let Some(columns) = &args.columns {
            scan = scan.select(columns.clone());
        }
        if let Some(filter) = &args.filter {
            scan = scan.filter(filter.clone());
        }
        return Ok(scan.to_scan()?);
    }
    #[cfg(not(feature = "iceberg"))]
    if args.iceberg.is_some() {
        return Err("--iceberg needs the `iceberg` feature".into());
    }
    #[cfg(feature = "delta")]
    if let Some(table) = &args.delta {
        let mut scan = rayquet::delta::TableScan::new(table.as_str()).options(args.options.clone());
        if let Some(v) = args.version {
            scan = scan.version(v);
        }
        if let Some(columns) = &args.columns {
            scan = scan.select(columns.clone());
        }
        if let Some(filter) = &args.filter {
            scan = scan.filter(filter.clone());
        }
        return Ok(scan.to_scan()?);
    }
    #[cfg(not(feature = "delta"))]
    if args.delta.is_some() {
        return Err("--delta needs the `delta` feature".into());
    }
    let mut scan = rayquet::Scan::from_urls(paths.to_vec())?;
    if let Some(columns) = &args.columns {
        scan = scan.columns(columns.clone());
    }
    if let Some(filter) = &args.filter {
        scan = scan.filter(filter.clone());
    }
    if let Some(name) = &args.row_index {
        scan = scan.row_index(name.clone());
    }
    Ok(scan)
}

fn scan_rayquet(paths: &[String], args: &ScanArgs) -> CliResult<Stats> {
    let start = Instant::now();
    let mut scan = source_scan(paths, args)?
        .batch_size(args.batch_size)
        .ordered(!args.unordered)
        .string_views(args.string_views);
    if let Some(limit) = args.limit {
        scan = scan.limit(limit);
    }
    if let Some(budget) = args.budget {
        scan = scan.memory_budget(budget);
    }
    for (key, value) in &args.options {
        scan = scan.store_option(key.clone(), value.clone());
    }
    let reader = scan.build()?;
    let metrics = reader.metrics();
    let mut sink = Sink::new(args.out.clone());
    sink.open(&reader.schema())?;
    for batch in reader {
        sink.push(&batch?, metrics.snapshot().bytes_fetched)?;
    }
    let elapsed = start.elapsed();
    let (rows, batches) = (sink.rows, sink.batches);
    sink.finish()?;
    let m = metrics.snapshot();
    Ok(Stats {
        rows,
        batches,
        files: m.files,
        row_groups: m.row_groups,
        requests: m.requests,
        bytes_fetched: m.bytes_fetched,
        bytes_decoded: m.bytes_decoded,
        peak_buffered_bytes: m.peak_buffered_bytes,
        io_time: m.io_time,
        decode_time: m.decode_time,
        wait_time: m.wait_time,
        elapsed,
        row_groups_pruned: m.row_groups_pruned,
        pages_pruned: m.pages_pruned,
        rows_filtered: m.rows_filtered,
        metadata_bytes: m.metadata_bytes,
    })
}

/// The baseline: parquet's synchronous reader over local files, one after the other.
fn scan_sync(paths: &[String], args: &ScanArgs) -> CliResult<Stats> {
    if args.filter.is_some() || args.row_index.is_some() {
        return Err("--filter and --row-index need --engine rayquet".into());
    }
    let start = Instant::now();
    let files = local_files(paths)?;
    let mut stats = Stats::default();
    let mut sink = Sink::new(args.out.clone());
    let mut remaining = args.limit.unwrap_or(usize::MAX);
    for (i, path) in files.iter().enumerate() {
        if remaining == 0 && i > 0 {
            break;
        }
        let name = path.display();
        let file = File::open(path).map_err(|e| format!("{name}: {e}"))?;
        stats.bytes_fetched += file.metadata().map_err(|e| format!("{name}: {e}"))?.len();
        let mut builder =
            ParquetRecordBatchReaderBuilder::try_new(file).map_err(|e| format!("{name}: {e}"))?;
        stats.files += 1;
        stats.row_groups += builder.metadata().num_row_groups() as u64;
        if let Some(columns) = &args.columns {
            let schema = builder.parquet_schema();
            for c in columns {
                let found = schema.columns().iter().any(|leaf| {
                    let p = leaf.path().string();
                    p == *c || p.starts_with(&format!("{c}."))
                });
                if !found {
                    let names: Vec<&String> =
                        builder.schema().fields().iter().map(|f| f.name()).collect();
                    return Err(
                        format!("{name}: no column named {c:?}; columns are {names:?}").into(),
                    );
                }
            }
            let mask = ProjectionMask::columns(schema, columns.iter().map(String::as_str));
            builder = builder.with_projection(mask);
        }
        let reader = builder
            .with_batch_size(args.batch_size)
            .with_limit(remaining)
            .build()
            .map_err(|e| format!("{name}: {e}"))?;
        sink.open(&reader.schema())?;
        for batch in reader {
            let batch = batch.map_err(|e| format!("{name}: {e}"))?;
            remaining -= batch.num_rows().min(remaining);
            stats.bytes_decoded += batch.get_array_memory_size() as u64;
            sink.push(&batch, stats.bytes_fetched)?;
        }
    }
    stats.elapsed = start.elapsed();
    stats.decode_time = stats.elapsed;
    stats.rows = sink.rows;
    stats.batches = sink.batches;
    sink.finish()?;
    Ok(stats)
}

/// Resolve the sync engine's arguments to local Parquet files: files as given, directories to
/// every `*.parquet` under them in lexical order.
fn local_files(args: &[String]) -> CliResult<Vec<PathBuf>> {
    let mut files = Vec::new();
    for arg in args {
        let path = match arg.strip_prefix("file://") {
            Some(p) => PathBuf::from(p),
            None if arg.contains("://") => {
                return Err(format!("the sync engine reads local files only, not {arg}").into())
            }
            None => PathBuf::from(arg),
        };
        let meta = std::fs::metadata(&path).map_err(|e| format!("{arg}: {e}"))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk_parquet(&path, &mut found)?;
            if found.is_empty() {
                return Err(format!("{arg}: no *.parquet files in this directory").into());
            }
            found.sort_by(|a, b| a.as_os_str().cmp(b.as_os_str()));
            files.extend(found);
        } else {
            files.push(path);
        }
    }
    Ok(files)
}

fn walk_parquet(dir: &Path, found: &mut Vec<PathBuf>) -> CliResult<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            walk_parquet(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "parquet") {
            found.push(path);
        }
    }
    Ok(())
}

fn report(args: &ScanArgs, s: &Stats) -> CliResult<()> {
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    let rows_per_sec = s.rows as f64 / secs;
    let mib_per_sec = s.bytes_fetched as f64 / (1024.0 * 1024.0) / secs;
    let mut out = io::stdout().lock();
    if args.json {
        let json = serde_json::json!({
            "engine": args.engine.name(),
            "rows": s.rows,
            "batches": s.batches,
            "files": s.files,
            "row_groups": s.row_groups,
            "requests": s.requests,
            "bytes_fetched": s.bytes_fetched,
            "bytes_decoded": s.bytes_decoded,
            "peak_buffered_bytes": s.peak_buffered_bytes,
            "peak_rss_bytes": peak_rss(),
            "seconds": s.elapsed.as_secs_f64(),
            "rows_per_sec": rows_per_sec,
            "mib_per_sec": mib_per_sec,
            "io_seconds": s.io_time.as_secs_f64(),
            "decode_seconds": s.decode_time.as_secs_f64(),
            "wait_seconds": s.wait_time.as_secs_f64(),
            "batch_size": args.batch_size,
            "limit": args.limit,
            "ordered": !args.unordered,
            "columns": args.columns,
            "filter": args.filter.as_ref().map(|f| f.to_string()),
            "row_groups_pruned": s.row_groups_pruned,
            "pages_pruned": s.pages_pruned,
            "rows_filtered": s.rows_filtered,
            "metadata_bytes": s.metadata_bytes,
        });
        return write_out(&mut out, format_args!("{json}\n"));
    }
    let mut text = format!(
        "rows         {}\n\
         batches      {}\n\
         files        {} ({} row groups)\n\
         fetched      {} in {} requests\n\
         decoded      {}\n\
         time         {:.3} s\n\
         throughput   {} rows/s, {:.1} MiB/s fetched\n",
        count(s.rows),
        count(s.batches),
        count(s.files),
        count(s.row_groups),
        human_bytes(s.bytes_fetched),
        count(s.requests),
        human_bytes(s.bytes_decoded),
        secs,
        count(rows_per_sec as u64),
        mib_per_sec,
    );
    if args.engine == Engine::Rayquet {
        text.push_str(&format!(
            "tasks        io {:.3} s, decode {:.3} s (summed over tasks), waited {:.3} s\n\
             peak buffer  {}\n",
            s.io_time.as_secs_f64(),
            s.decode_time.as_secs_f64(),
            s.wait_time.as_secs_f64(),
            human_bytes(s.peak_buffered_bytes),
        ));
    }
    if let Some(filter) = &args.filter {
        text.push_str(&format!(
            "filter       {filter}\n\
             pruned       {} row groups, {} pages; {} rows read and filtered out\n",
            count(s.row_groups_pruned),
            count(s.pages_pruned),
            count(s.rows_filtered),
        ));
    }
    if let Some(path) = &args.out {
        text.push_str(&format!("written to   {}\n", path.display()));
    }
    write_out(&mut out, format_args!("{text}"))
}

// ---------------------------------------------------------------------------------------------
// helpers

/// A spinner on stderr (hidden when stderr is not a terminal).
fn spinner() -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed}] {msg}") {
        bar.set_style(style);
    }
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// Write to stdout; a closed pipe (`rayquet scan | head`) is not an error.
fn write_out(out: &mut impl Write, args: std::fmt::Arguments<'_>) -> CliResult<()> {
    match out.write_fmt(args).and_then(|_| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// `1234567` as `1,234,567`.
fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut s = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            s.push(',');
        }
        s.push(c);
    }
    s
}

/// A byte count in binary units: `512 B`, `1.5 KiB`, `120.3 MiB`, ...
fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// Parse a byte size: a number with an optional K, M, G or T suffix (powers of 1024; `KB`,
/// `KiB` and the like are accepted too).
fn parse_bytes(s: &str) -> Result<usize, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    let bad = || format!("invalid size {s:?} (expected e.g. 1048576, 512M or 2G)");
    let num: usize = num.parse().map_err(|_| bad())?;
    let shift = match suffix.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(bad()),
    };
    num.checked_mul(1usize << shift).ok_or_else(bad)
}

/// Parse a SQL filter expression.
fn parse_filter(s: &str) -> Result<rayquet::Expr, String> {
    rayquet::Expr::parse_sql(s).map_err(|e| e.message().to_string())
}

/// Parse a count of at least 1.
fn parse_positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!("expected a whole number of at least 1, got {s:?}")),
    }
}

/// Parse `key=value`.
fn parse_key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

/// Peak resident set of this process: `VmHWM` of /proc/self/status (0 where unknown). Not
/// getrusage's `ru_maxrss`, which Linux carries over from the parent across fork and exec.
fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_bytes("1024"), Ok(1024));
        assert_eq!(parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(parse_bytes("2GiB"), Ok(2 << 30));
        assert_eq!(parse_bytes("3 kb"), Ok(3 << 10));
        assert!(parse_bytes("M").is_err());
        assert!(parse_bytes("12X").is_err());
    }

    #[test]
    fn parses_options() {
        assert_eq!(
            parse_key_value("aws_endpoint=http://x:9000/?a=b"),
            Ok(("aws_endpoint".into(), "http://x:9000/?a=b".into()))
        );
        assert!(parse_key_value("novalue").is_err());
        assert!(parse_key_value("=v").is_err());
    }

    #[test]
    fn formats_numbers() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
        assert_eq!(count(1_234_567), "1,234,567");
        assert_eq!(human_bytes(10), "10 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }

    #[test]
    fn cli_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
