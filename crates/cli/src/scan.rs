//! `rayquet scan`: files, prefixes, an Iceberg or a Delta table, with the options every
//! rayquet scan takes; reports rows, bytes, throughput and what pruning saved.

use std::io;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use clap::Args;
use indicatif::ProgressBar;
use rayquet::{FooterCache, IoTuning, Scan, ScanBuilder, ScanOptions, ScanReader};

use crate::format::{
    count, cpu_time, human_bytes, parse_bytes, parse_filter, parse_key_value, parse_positive,
    peak_rss, spinner, write_out,
};
use crate::gen::ensure_demo;
use crate::out::ArrowOut;
use crate::CliResult;

#[derive(Debug, Args)]
pub struct ScanArgs {
    /// Files, directories, prefixes or URLs (s3://, gs://, az://, file://, memory://).
    /// Directories and prefixes mean every *.parquet under them, in lexical order.
    #[arg(value_name = "PATH_OR_URL")]
    paths: Vec<String>,
    /// Columns to read, comma-separated (default: all). Nested leaves as dotted paths.
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    columns: Option<Vec<String>>,
    /// Rows per batch.
    #[arg(long, value_name = "N", default_value_t = rayquet::layer::batch_size(&ScanOptions::new()),
          value_parser = parse_positive)]
    batch_size: usize,
    /// Stop after this many rows.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Deliver only rows matching this SQL expression, e.g. "l_quantity < 5 AND l_shipmode =
    /// 'AIR'" (comparisons, IN, BETWEEN, IS [NOT] NULL, [NOT] LIKE, ILIKE, AND, OR, NOT), with
    /// SQL's NULL logic (a row whose filter is NULL is dropped). Floats compare as in DuckDB and
    /// Spark: -0.0 = 0.0, NaN = NaN and NaN is above every number. Row groups and pages that cannot match
    /// are not fetched; nor are files whose Hive partition values cannot match.
    #[arg(long, value_name = "SQL", value_parser = parse_filter)]
    filter: Option<rayquet::Expr>,
    /// Add an Int64 column of this name holding each row's position in its file.
    #[arg(long, value_name = "NAME")]
    row_index: Option<String>,
    /// Hive partitions of directories and prefixes (`year=2024/part-0.parquet`): `on` (the
    /// default) adds a column per `name=value` directory level (Int32, Int64, Date32 or
    /// Utf8, from the values); `off` reads the files as they are.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = ["on", "off"])]
    hive: String,
    /// Read plain files whose schemas differ as one: columns matched by name, a column a file
    /// lacks null in its rows, types widened where both convert exactly (int32 and int64:
    /// int64). Without it, every file must have the first file's schema.
    #[arg(long, conflicts_with_all = ["iceberg", "delta"])]
    union_by_name: bool,
    /// Deliver batches as they are ready rather than in file and row-group order.
    #[arg(long)]
    unordered: bool,
    /// Memory budget for fetched and decoded data not yet delivered (e.g. 512M, 2G; K/M/G are
    /// powers of 1024).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    budget: Option<usize>,
    /// GET requests the scan may have in flight at once (default: the library's,
    /// `IoTuning::max_requests_in_flight`).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    requests_in_flight: Option<u16>,
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
    /// Binary (unless the file's embedded Arrow schema asks for views). Iceberg and Delta
    /// reads keep their table's types either way.
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    string_views: bool,
    /// Read an Iceberg table: a metadata JSON file (local path or URL) or a table directory
    /// (its version-hint.text or newest metadata/*.metadata.json), or with --catalog
    /// `namespace.table`. Columns `_file` and `_pos`
    /// give each row's data file and position.
    #[arg(long, value_name = "TABLE", conflicts_with_all = ["paths", "delta", "row_index"])]
    iceberg: Option<String>,
    /// With --iceberg: TABLE is `namespace.table` in this catalog, configured as pyiceberg
    /// configures it (`~/.pyiceberg.yaml` or `$PYICEBERG_HOME/.pyiceberg.yaml`, then
    /// `PYICEBERG_CATALOG__<NAME>__<KEY>` variables, then --catalog-property).
    #[arg(long, value_name = "NAME", requires = "iceberg")]
    catalog: Option<String>,
    /// With --catalog: a catalog property over its configuration, e.g. uri=http://host:8181
    /// or credential=id:secret (repeatable).
    #[arg(long, value_name = "KEY=VALUE", value_parser = parse_key_value, requires = "catalog")]
    catalog_property: Vec<(String, String)>,
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
    /// Run the same scan this many times in this process (as a service scans again and
    /// again): the report gives every run's time, the first and the median of the later runs
    /// ("warm"); the other figures are the last run's. With --out, only the last run is
    /// written.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = parse_positive)]
    repeat: usize,
    /// Size of the cache of parsed footers that the --repeat runs share, as a service's scans
    /// would (rayquet::FooterCache): later runs skip the footer requests. Default: rayquet's
    /// process-wide cache (64M).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    footer_cache: Option<usize>,
    /// Read every footer afresh, every run (no footer cache).
    #[arg(long, conflicts_with = "footer_cache")]
    no_footer_cache: bool,
    /// Map local files into memory instead of reading them (rayquet's `memory_map`): less
    /// CPU, but a file truncated by another process during the scan kills this process
    /// (SIGBUS), and one written in place changes under the decoders. Only for files nobody
    /// modifies while they are scanned.
    #[arg(long)]
    mmap: bool,
    /// Do not verify the CRC-32 checksums pages carry (verified by default: a page that does
    /// not match is an error naming it).
    #[arg(long)]
    no_verify_checksums: bool,
}

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
    /// CPU time of the whole process during the scan.
    cpu: Duration,
    row_groups_pruned: u64,
    files_pruned: u64,
    pages_pruned: u64,
    rows_filtered: u64,
    dictionary_filtered: u64,
    metadata_bytes: u64,
}

/// Where delivered batches go: counted, shown on the progress bar, optionally written out.
struct Sink {
    bar: ProgressBar,
    rows: u64,
    batches: u64,
    out: Option<(PathBuf, Option<ArrowOut>)>,
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
            *writer = Some(ArrowOut::create(path, schema)?);
        }
        Ok(())
    }

    fn push(&mut self, batch: &RecordBatch, fetched: u64) -> CliResult<()> {
        self.rows += batch.num_rows() as u64;
        self.batches += 1;
        if let Some((_, Some(writer))) = &mut self.out {
            writer.write(batch)?;
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
        if let Some((_, Some(writer))) = self.out.take() {
            writer.finish()?;
        }
        Ok(())
    }
}

/// `rayquet scan`.
pub fn run(args: ScanArgs) -> CliResult<()> {
    let table = args.iceberg.is_some() || args.delta.is_some();
    let paths = if args.paths.is_empty() && !table {
        vec![ensure_demo()?.to_string_lossy().into_owned()]
    } else {
        args.paths.clone()
    };
    let options = options(&args);
    let mut runs = Vec::with_capacity(args.repeat);
    let mut last = None;
    for i in 0..args.repeat {
        let out = if i + 1 == args.repeat {
            args.out.clone()
        } else {
            None
        };
        let stats = scan(&paths, &args, &options, out)?;
        if let Some(prev) = &last {
            let prev: &Stats = prev;
            if prev.rows != stats.rows {
                return Err(format!(
                    "run {} delivered {} rows, run {i} delivered {}",
                    i + 1,
                    stats.rows,
                    prev.rows
                )
                .into());
            }
        }
        runs.push((stats.elapsed, stats.cpu));
        last = Some(stats);
    }
    let last = last.expect("at least one run");
    report(&args, &last, &runs)
}

/// The median of the runs after the first (`None` with a single run).
fn warm_median(runs: &[Duration]) -> Option<Duration> {
    let mut warm: Vec<Duration> = runs.get(1..)?.to_vec();
    if warm.is_empty() {
        return None;
    }
    warm.sort_unstable();
    let n = warm.len();
    Some(if n % 2 == 1 {
        warm[n / 2]
    } else {
        (warm[n / 2 - 1] + warm[n / 2]) / 2
    })
}

/// The options of the command line, for any kind of scan.
fn options(args: &ScanArgs) -> ScanOptions {
    let mut o = ScanOptions::new()
        .batch_size(args.batch_size)
        .ordered(!args.unordered)
        .string_views(args.string_views);
    if let Some(columns) = &args.columns {
        o = o.columns(columns.clone());
    }
    if let Some(filter) = &args.filter {
        o = o.filter(filter.clone());
    }
    if let Some(limit) = args.limit {
        o = o.limit(limit);
    }
    if let Some(budget) = args.budget {
        o = o.memory_budget(budget);
    }
    if let Some(n) = args.requests_in_flight {
        o = o.io_tuning(IoTuning::default().max_requests_in_flight(n.into()));
    }
    for (key, value) in &args.options {
        o = o.store_option(key.clone(), value.clone());
    }
    if let Some(bytes) = args.footer_cache {
        o = o.footer_cache(FooterCache::new(bytes));
    }
    if args.no_footer_cache {
        o = o.no_footer_cache();
    }
    o.memory_map(args.mmap)
        .verify_checksums(!args.no_verify_checksums)
}

/// The catalog `name`, configured as pyiceberg configures it, with `props` over its
/// configuration.
#[cfg(any(feature = "rest", feature = "sql-catalog", feature = "glue-catalog"))]
pub(crate) fn catalog_config(
    name: &str,
    props: &[(String, String)],
) -> CliResult<rayquet_iceberg::catalog::CatalogConfig> {
    Ok(rayquet_iceberg::catalog::CatalogConfig::load_with(
        name,
        props.iter().cloned(),
    )?)
}

/// The scan of `table` (`namespace.table`) in catalog `name` ([`catalog_config`]).
#[cfg(any(feature = "rest", feature = "sql-catalog", feature = "glue-catalog"))]
pub(crate) fn catalog_scan(
    name: &str,
    props: &[(String, String)],
    table: &str,
) -> CliResult<rayquet_iceberg::TableScan> {
    let config = catalog_config(name, props)?;
    Ok(rayquet_iceberg::TableScan::from_catalog(config, table))
}

/// Without the catalog features there is no catalog client.
#[cfg(not(any(feature = "rest", feature = "sql-catalog", feature = "glue-catalog")))]
pub(crate) fn catalog_scan(
    name: &str,
    _props: &[(String, String)],
    _table: &str,
) -> CliResult<rayquet_iceberg::TableScan> {
    Err(format!(
        "--catalog {name}: this rayquet was built without catalogs (features `rest`, \
         `sql-catalog`, `glue-catalog`)"
    )
    .into())
}

/// Start the scan of the table or files named on the command line.
fn open_reader(paths: &[String], args: &ScanArgs, options: &ScanOptions) -> CliResult<ScanReader> {
    let options = options.clone();
    if let Some(table) = &args.iceberg {
        let scan = match &args.catalog {
            Some(name) => catalog_scan(name, &args.catalog_property, table)?,
            None => rayquet_iceberg::TableScan::open(table.as_str()),
        };
        let mut scan = scan.with_options(options);
        if let Some(id) = args.snapshot {
            scan = scan.snapshot_id(id);
        }
        if let Some(r) = &args.reference {
            scan = scan.reference(r.clone());
        }
        return Ok(scan.build()?);
    }
    if let Some(table) = &args.delta {
        let mut scan = rayquet_delta::TableScan::open(table.as_str()).with_options(options);
        if let Some(v) = args.version {
            scan = scan.version(v);
        }
        return Ok(scan.build()?);
    }
    let mut scan = Scan::from_urls(paths.to_vec())?.with_options(options);
    if args.hive == "off" {
        scan = scan.partitioning(rayquet::Partitioning::Off);
    }
    if let Some(name) = &args.row_index {
        scan = scan.row_index(name.clone());
    }
    Ok(scan.union_by_name(args.union_by_name).build()?)
}

/// Run the scan once, measuring it; write its batches to `out` if given.
fn scan(
    paths: &[String],
    args: &ScanArgs,
    options: &ScanOptions,
    out: Option<PathBuf>,
) -> CliResult<Stats> {
    let cpu = cpu_time();
    let start = Instant::now();
    let reader = open_reader(paths, args, options)?;
    let metrics = reader.metrics();
    let mut sink = Sink::new(out);
    sink.open(&reader.schema())?;
    for batch in reader {
        let batch = batch.map_err(rayquet::Error::from)?;
        sink.push(&batch, metrics.snapshot().bytes_fetched)?;
    }
    let elapsed = start.elapsed();
    let cpu = cpu_time().saturating_sub(cpu);
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
        cpu,
        row_groups_pruned: m.row_groups_pruned,
        files_pruned: m.files_pruned,
        pages_pruned: m.pages_pruned,
        rows_filtered: m.rows_filtered,
        dictionary_filtered: m.dictionary_filtered,
        metadata_bytes: m.metadata_bytes,
    })
}

/// Print the report of the last run `s` and the (wall, CPU) times of every run.
fn report(args: &ScanArgs, s: &Stats, times: &[(Duration, Duration)]) -> CliResult<()> {
    let secs = s.elapsed.as_secs_f64().max(1e-9);
    let runs: Vec<Duration> = times.iter().map(|t| t.0).collect();
    let cpu: Vec<Duration> = times.iter().map(|t| t.1).collect();
    let warm = warm_median(&runs);
    let rows_per_sec = s.rows as f64 / secs;
    let mib_per_sec = s.bytes_fetched as f64 / (1024.0 * 1024.0) / secs;
    let mut out = io::stdout().lock();
    if args.json {
        let json = serde_json::json!({
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
            "files_pruned": s.files_pruned,
            "pages_pruned": s.pages_pruned,
            "rows_filtered": s.rows_filtered,
            "dictionary_filtered": s.dictionary_filtered,
            "metadata_bytes": s.metadata_bytes,
            "runs": runs.iter().map(Duration::as_secs_f64).collect::<Vec<_>>(),
            "first_seconds": runs[0].as_secs_f64(),
            "warm_median_seconds": warm.map(|w| w.as_secs_f64()),
            "runs_cpu_seconds": cpu.iter().map(Duration::as_secs_f64).collect::<Vec<_>>(),
            "warm_median_cpu_seconds": warm_median(&cpu).map(|w| w.as_secs_f64()),
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
    {
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
             pruned       {} files, {} row groups, {} pages; {} rows read and filtered out\n\
             dictionary   {} row groups filtered on dictionary indices\n",
            count(s.files_pruned),
            count(s.row_groups_pruned),
            count(s.pages_pruned),
            count(s.rows_filtered),
            count(s.dictionary_filtered),
        ));
    }
    if let Some(warm) = warm {
        let list: Vec<String> = runs
            .iter()
            .map(|r| format!("{:.3}", r.as_secs_f64()))
            .collect();
        text.push_str(&format!(
            "runs         {} s (first {:.3} s, warm median {:.3} s: {:.2}x; CPU first {:.3} s, \
             warm median {:.3} s)\n",
            list.join(" "),
            runs[0].as_secs_f64(),
            warm.as_secs_f64(),
            runs[0].as_secs_f64() / warm.as_secs_f64().max(1e-9),
            cpu[0].as_secs_f64(),
            warm_median(&cpu).unwrap_or_default().as_secs_f64(),
        ));
    }
    if let Some(path) = &args.out {
        text.push_str(&format!("written to   {}\n", path.display()));
    }
    write_out(&mut out, format_args!("{text}"))
}
