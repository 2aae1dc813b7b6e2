//! Load test of a service running many scans at once under one [`SharedLimits`] (issue 20):
//! [`SCANS`] scans alive at the same time, from [`THREADS`] threads that each interleave
//! [`PER_THREAD`] readers (one batch from each in turn, the way a service multiplexes
//! responses), over local files and an S3 endpoint (moto), on one IO runtime and one decode
//! pool. The scans are mixed: full reads, filtered, projected, dropped after a few batches, and
//! failing (a file whose last row group is corrupt, a missing object).
//!
//! Checked:
//! - every scan's rows equal parquet's own reader's, in order (filtered: parquet's rows
//!   filtered with arrow's kernels); rows delivered before an error are a prefix of the
//!   reference and the error names the failing file;
//! - the shared memory stays within its rule: granted bytes at most the limit plus one row
//!   group per scan (the slot each scan may always admit), and peak RSS (sampled) within the
//!   baseline plus the limit plus [`RSS_SLACK`];
//! - fairness: no scan waits longer than [`MAX_WAIT`] for any batch (first batch included);
//! - afterwards the process is where it started: the same threads, live heap within
//!   [`HEAP_TOLERANCE`] (a counting allocator), nothing granted, nothing queued, no connection
//!   in use, every scan's tasks wound down.
//!
//! Run with `--nocapture` for the figures: peak RSS against the limit, the slowest scan, and
//! throughput against the same scans one at a time.

use rayquet::ScanBuilder;
use rayquet_testkit as common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::{RecordBatch, Scalar, StringArray};

use rayquet::{col, Scan, ScanReader, SharedLimits};

#[global_allocator]
static ALLOC: common::heap::Counting = common::heap::Counting;

/// Caller threads.
const THREADS: usize = 16;
/// Scans each caller thread holds open at once (it pulls a batch from each in turn).
const PER_THREAD: usize = 4;
/// Scans alive at once.
const SCANS: usize = THREADS * PER_THREAD;
/// The memory every scan shares.
const MEMORY_LIMIT: usize = 64 << 20;
/// GET requests in flight across all scans.
const CONNECTIONS: usize = 16;
/// Local files; the S3 scans read the first [`S3_FILES`] of them.
const FILES: usize = 4;
const S3_FILES: usize = 2;
const ROW_GROUPS: usize = 4;
const ROWS_PER_GROUP: usize = 4096;
const BATCH: usize = 1024;
/// Resident memory the test allows above its baseline beyond the shared limit: one row group
/// per scan (the slot a scan may always admit, about 1 MiB here, and the batches it decodes
/// ahead), the page each decode thread decompresses, the callers' current batches and the
/// allocator's own slack.
const RSS_SLACK: u64 = 160 << 20;
/// No scan waits longer than this for one batch (its first included).
const MAX_WAIT: Duration = Duration::from_secs(60);
/// Live heap may end at most this far above the baseline.
const HEAP_TOLERANCE: usize = 4 << 20;
/// Deadline for each pass: a hang fails the test.
const DEADLINE: Duration = Duration::from_secs(300);

/// What a scan does.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Full,
    /// `l_shipmode = 'AIR'`.
    Filtered,
    /// Three columns.
    Projected,
    /// Read this many batches, then drop the reader.
    Dropped(usize),
    /// A file whose last row group is corrupt, third among good ones.
    CorruptFile,
    /// An object that does not exist, second.
    MissingFile,
}

fn kind(i: usize) -> Kind {
    match i % 8 {
        0 | 6 => Kind::Full,
        1 => Kind::Filtered,
        2 => Kind::Projected,
        3 => Kind::Dropped(1 + i % 5),
        4 => Kind::CorruptFile,
        5 => Kind::MissingFile,
        _ => Kind::Filtered,
    }
}

/// Scans `8..16`, `40..48` read from S3 (every kind), the rest local files.
fn on_s3(i: usize) -> bool {
    (i / 8) % 4 == 1
}

const PROJECTION: [&str; 3] = ["l_orderkey", "l_comment", "l_tags"];

/// Where the data is, and what parquet's reader says it holds.
struct Data {
    local: Vec<PathBuf>,
    local_corrupt: PathBuf,
    s3: S3Data,
    /// By source (local, S3): the full rows, projected rows and filtered rows (parquet's
    /// reader), and the rows a failing scan may deliver before its error.
    refs: [Refs; 2],
    _dir: tempfile::TempDir,
}

struct S3Data {
    s3: common::s3::S3,
    urls: Vec<String>,
    corrupt: String,
}

#[derive(Default)]
struct Refs {
    full: Vec<RecordBatch>,
    projected: Vec<RecordBatch>,
    filtered: Vec<RecordBatch>,
    /// The files before the corrupt one, and that file's rows as written.
    before_corrupt: Vec<RecordBatch>,
}

/// A file of the generated lineitem-like table (20 columns, nested ones too).
fn file(f: usize) -> Vec<u8> {
    let batches: Vec<RecordBatch> = (0..ROW_GROUPS)
        .map(|g| rayquet_gen::batch(f, (g * ROWS_PER_GROUP) as u64, ROWS_PER_GROUP, 20))
        .collect();
    common::write_parquet(&batches, ROWS_PER_GROUP)
}

/// `bytes` with the first column chunk of the last row group overwritten.
fn corrupt(bytes: &[u8]) -> Vec<u8> {
    let mut bad = bytes.to_vec();
    let md = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(bytes.to_vec()))
        .unwrap();
    let (start, len) = md.row_group(ROW_GROUPS - 1).column(0).byte_range();
    bad[start as usize..(start + len) as usize].fill(0xa5);
    bad
}

fn filter_air(batches: &[RecordBatch]) -> Vec<RecordBatch> {
    let air = Scalar::new(StringArray::from(vec!["AIR"]));
    batches
        .iter()
        .map(|b| {
            let mode = b.column_by_name("l_shipmode").unwrap();
            let keep = arrow::compute::kernels::cmp::eq(mode, &air).unwrap();
            arrow::compute::filter_record_batch(b, &keep).unwrap()
        })
        .filter(|b| b.num_rows() > 0)
        .collect()
}

fn refs(paths: &[PathBuf]) -> Refs {
    let mut r = Refs::default();
    for (i, p) in paths.iter().enumerate() {
        let (_, full) = common::reference(p, None, BATCH).unwrap();
        let (_, projected) = common::reference(p, Some(&PROJECTION), BATCH).unwrap();
        r.filtered.extend(filter_air(&full));
        r.projected.extend(projected);
        if i < 3 {
            r.before_corrupt.extend(full.iter().cloned());
        }
        r.full.extend(full);
    }
    r
}

fn data() -> Data {
    let dir = tempfile::tempdir().unwrap();
    let bytes: Vec<Vec<u8>> = (0..FILES).map(file).collect();
    let local: Vec<PathBuf> = bytes
        .iter()
        .enumerate()
        .map(|(i, b)| {
            let p = dir.path().join(rayquet_gen::file_name(i));
            std::fs::write(&p, b).unwrap();
            p
        })
        .collect();
    let local_corrupt = dir.path().join("corrupt.parquet");
    std::fs::write(&local_corrupt, corrupt(&bytes[2])).unwrap();
    let s3 = {
        let s3 = common::s3::S3::get();
        s3.create_bucket("load");
        let mut objects: Vec<(String, Vec<u8>)> = (0..S3_FILES)
            .map(|i| (rayquet_gen::file_name(i), bytes[i].clone()))
            .collect();
        // The S3 scans' third file: the corrupt copy of local file 2 (its reference rows).
        objects.push(("corrupt.parquet".into(), corrupt(&bytes[2])));
        s3.upload("load", &objects);
        S3Data {
            urls: (0..S3_FILES)
                .map(|i| format!("s3://load/{}", rayquet_gen::file_name(i)))
                .collect(),
            corrupt: "s3://load/corrupt.parquet".into(),
            s3,
        }
    };
    let local_refs = refs(&local);
    let mut s3_refs = refs(&local[..S3_FILES]);
    // On S3 the corrupt file comes third, after both good files: its rows as written follow.
    let (_, third) = common::reference(&local[2], None, BATCH).unwrap();
    s3_refs.before_corrupt = s3_refs.full.iter().cloned().chain(third).collect();
    Data {
        local,
        local_corrupt,
        s3,
        refs: [local_refs, s3_refs],
        _dir: dir,
    }
}

/// Compares a scan's batches with a reference as they come, whatever the batch boundaries,
/// without keeping them.
struct Cursor<'a> {
    reference: &'a [RecordBatch],
    batch: usize,
    row: usize,
}

impl<'a> Cursor<'a> {
    fn new(reference: &'a [RecordBatch]) -> Self {
        Cursor {
            reference,
            batch: 0,
            row: 0,
        }
    }

    /// `got` must be the next rows of the reference.
    fn next(&mut self, got: &RecordBatch, what: &str) -> Result<(), String> {
        let mut at = 0;
        while at < got.num_rows() {
            let Some(r) = self.reference.get(self.batch) else {
                return Err(format!("{what}: more rows than the reference"));
            };
            let n = (r.num_rows() - self.row).min(got.num_rows() - at);
            let (a, b) = (got.slice(at, n), r.slice(self.row, n));
            if a.schema().fields() != b.schema().fields() || a.columns() != b.columns() {
                return Err(format!(
                    "{what}: rows differ from parquet's reader at reference batch {}",
                    self.batch
                ));
            }
            at += n;
            self.row += n;
            if self.row == r.num_rows() {
                self.batch += 1;
                self.row = 0;
            }
        }
        Ok(())
    }

    fn at_end(&self) -> bool {
        self.batch == self.reference.len()
    }
}

/// One scan in flight.
struct Running<'a> {
    i: usize,
    kind: Kind,
    reader: Option<ScanReader>,
    cursor: Cursor<'a>,
    /// Names the file whose error is expected.
    failing: Option<String>,
    batches: usize,
    metrics: Arc<rayquet::Metrics>,
    started: Instant,
    longest_wait: Duration,
}

/// What one finished scan measured.
#[derive(Debug, Clone, Copy)]
struct Outcome {
    wall: Duration,
    longest_wait: Duration,
    rows: u64,
}

/// Build scan `i`: `Ok(None)` when it failed as expected at build.
fn start<'a>(
    d: &'a Data,
    limits: &SharedLimits,
    (io, pool): (&tokio::runtime::Handle, &Arc<rayon::ThreadPool>),
    i: usize,
) -> Result<Option<Running<'a>>, String> {
    let k = kind(i);
    let s3 = on_s3(i).then_some(&d.s3);
    let refs = &d.refs[s3.is_some() as usize];
    let (mut urls, corrupt): (Vec<String>, String) = match s3 {
        Some(s) => (s.urls.clone(), s.corrupt.clone()),
        None => (
            d.local.iter().map(|p| p.display().to_string()).collect(),
            d.local_corrupt.display().to_string(),
        ),
    };
    let failing = match k {
        Kind::CorruptFile => {
            urls.insert(2.min(urls.len()), corrupt.clone());
            Some(corrupt)
        }
        Kind::MissingFile => {
            let missing = urls[0].replace(".parquet", "-missing.parquet");
            urls.insert(1, missing.clone());
            Some(missing)
        }
        _ => None,
    };
    let what = format!("scan {i} ({k:?}{})", if s3.is_some() { ", S3" } else { "" });
    let mut scan = Scan::from_urls(&urls)
        .map_err(|e| format!("{what}: {e}"))?
        .shared_limits(limits.clone())
        .io_runtime(io.clone())
        .decode_pool(Arc::clone(pool))
        .batch_size(BATCH);
    if let Some(s) = s3 {
        for (key, value) in [
            ("aws_endpoint", s.s3.endpoint.as_str()),
            ("aws_allow_http", "true"),
            ("aws_region", "us-east-1"),
            ("aws_access_key_id", "test"),
            ("aws_secret_access_key", "test"),
        ] {
            scan = scan.store_option(key, value);
        }
    }
    let reference: &[RecordBatch] = match k {
        Kind::Filtered => {
            scan = scan.filter(col("l_shipmode").eq("AIR"));
            &refs.filtered
        }
        Kind::Projected => {
            scan = scan.columns(PROJECTION);
            &refs.projected
        }
        Kind::CorruptFile => &refs.before_corrupt,
        _ => &refs.full,
    };
    let started = Instant::now();
    let reader = match scan.build() {
        Ok(r) => r,
        // A missing local file is found when the scan lists its inputs (on S3, when it is
        // opened: no HEAD request for a `.parquet` URL).
        Err(e) => {
            return match &failing {
                Some(f) if e.path().is_some_and(|p| f.ends_with(p) || p.ends_with(f)) => Ok(None),
                _ => Err(format!("{what}: build: {e}")),
            }
        }
    };
    Ok(Some(Running {
        i,
        kind: k,
        metrics: reader.metrics(),
        reader: Some(reader),
        cursor: Cursor::new(reference),
        failing,
        batches: 0,
        started,
        longest_wait: Duration::ZERO,
    }))
}

impl Running<'_> {
    /// Pull one batch; `Ok(Some(outcome))` once the scan is over.
    fn step(&mut self) -> Result<Option<Outcome>, String> {
        let what = format!("scan {} ({:?})", self.i, self.kind);
        let stop = matches!(self.kind, Kind::Dropped(n) if self.batches >= n);
        let t = Instant::now();
        let item = if stop {
            None
        } else {
            self.reader.as_mut().unwrap().next()
        };
        self.longest_wait = self.longest_wait.max(t.elapsed());
        match item {
            Some(Ok(b)) => {
                self.batches += 1;
                self.cursor.next(&b, &what)?;
                Ok(None)
            }
            Some(Err(e)) => {
                let e = rayquet::Error::from(e);
                match &self.failing {
                    Some(f) if e.path().is_some_and(|p| f.ends_with(p) || p.ends_with(f)) => {
                        Ok(Some(self.finish()))
                    }
                    _ => Err(format!("{what}: {e}")),
                }
            }
            None => {
                if self.failing.is_some() {
                    return Err(format!("{what}: no error"));
                }
                if !stop && !self.cursor.at_end() {
                    return Err(format!("{what}: fewer rows than the reference"));
                }
                Ok(Some(self.finish()))
            }
        }
    }

    fn finish(&mut self) -> Outcome {
        drop(self.reader.take());
        Outcome {
            wall: self.started.elapsed(),
            longest_wait: self.longest_wait,
            rows: self.metrics.snapshot().rows,
        }
    }
}

/// Run `scans` on `threads` caller threads, each holding `per_thread` scans open at once.
fn run(
    d: &Arc<Data>,
    limits: &SharedLimits,
    (io, pool): (&tokio::runtime::Handle, &Arc<rayon::ThreadPool>),
    scans: std::ops::Range<usize>,
    (threads, per_thread): (usize, usize),
) -> Vec<Outcome> {
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (d, limits, io, pool) = (d.clone(), limits.clone(), io.clone(), pool.clone());
            let (outcomes, failures) = (outcomes.clone(), failures.clone());
            let mine: Vec<usize> = scans.clone().skip(t).step_by(threads).collect();
            std::thread::Builder::new()
                .name(format!("caller-{t}"))
                .spawn(move || {
                    let body = || -> Result<(), String> {
                        for group in mine.chunks(per_thread) {
                            let mut open = Vec::new();
                            for &i in group {
                                if let Some(r) = start(&d, &limits, (&io, &pool), i)? {
                                    open.push(r);
                                }
                            }
                            // One batch from each open scan in turn.
                            while !open.is_empty() {
                                let mut k = 0;
                                while k < open.len() {
                                    match open[k].step()? {
                                        Some(o) => {
                                            open.remove(k);
                                            outcomes.lock().unwrap().push(o);
                                        }
                                        None => k += 1,
                                    }
                                }
                            }
                        }
                        Ok(())
                    };
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body))
                        .unwrap_or_else(|p| Err(common::panic_message(p.as_ref())));
                    if let Err(e) = r {
                        failures.lock().unwrap().push(e);
                    }
                })
                .unwrap()
        })
        .collect();
    common::join_all("the load test's scans", DEADLINE, handles, &failures);
    let out = outcomes.lock().unwrap().clone();
    out
}

/// Samples RSS every millisecond until stopped; returns the peak.
struct Sampler {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    handle: std::thread::JoinHandle<()>,
}

impl Sampler {
    fn start() -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(common::rss()));
        let (s, p) = (stop.clone(), peak.clone());
        let handle = std::thread::spawn(move || {
            while !s.load(Relaxed) {
                p.fetch_max(common::rss(), Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        Sampler { stop, peak, handle }
    }

    fn stop(self) -> u64 {
        self.stop.store(true, Relaxed);
        self.handle.join().unwrap();
        self.peak.load(Relaxed)
    }
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

#[test]
fn many_scans_share_memory_and_connections() {
    let d = Arc::new(data());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        // Blocking threads (local reads) live on between passes: the thread count compares.
        .thread_keep_alive(Duration::from_secs(3600))
        .thread_name("load-io")
        .enable_all()
        .build()
        .unwrap();
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .thread_name(|i| format!("load-decode-{i}"))
            .build()
            .unwrap(),
    );
    let io = rt.handle().clone();
    let limits = SharedLimits::new(MEMORY_LIMIT, CONNECTIONS);

    // Warm up: pools, stores and blocking threads started, lazy statics filled.
    run(&d, &limits, (&io, &pool), 0..SCANS, (THREADS, 1));
    std::thread::sleep(Duration::from_millis(300));
    // The heap compared without the buffers rayquet keeps idle for later scans (up to 64 MiB,
    // filled as far as each pass's peak needed).
    rayquet::release_idle_buffers();
    let (threads0, heap0, rss0) = (common::threads(), common::heap::live(), common::rss());
    common::heap::reset_peaks();

    // All scans at once.
    let sampler = Sampler::start();
    let t = Instant::now();
    let outcomes = run(&d, &limits, (&io, &pool), 0..SCANS, (THREADS, PER_THREAD));
    let concurrent = t.elapsed();
    let peak_rss = sampler.stop();
    let peak_heap = common::heap::peak();
    let granted = limits.snapshot();

    // The same scans one at a time.
    let t = Instant::now();
    let serial = run(&d, &limits, (&io, &pool), 0..SCANS, (1, 1));
    let one_at_a_time = t.elapsed();

    std::thread::sleep(Duration::from_millis(300));
    let idle = rayquet::release_idle_buffers();
    let (threads1, heap1, rss1) = (common::threads(), common::heap::live(), common::rss());

    let rows: u64 = outcomes.iter().map(|o| o.rows).sum();
    let serial_rows: u64 = serial.iter().map(|o| o.rows).sum();
    let slowest = outcomes.iter().map(|o| o.wall).max().unwrap();
    let mut walls: Vec<Duration> = outcomes.iter().map(|o| o.wall).collect();
    walls.sort();
    let longest_wait = outcomes.iter().map(|o| o.longest_wait).max().unwrap();
    println!(
        "load: {SCANS} scans ({} on S3) from {THREADS} threads x {PER_THREAD}, shared limit \
         {} MiB, {CONNECTIONS} connections",
        (0..SCANS).filter(|&i| on_s3(i)).count(),
        mib(MEMORY_LIMIT as u64)
    );
    println!(
        "  peak RSS {:.1} MiB above the baseline ({:.1} MiB); limit {:.0} MiB + slack {:.0} MiB",
        mib(peak_rss.saturating_sub(rss0)),
        mib(rss0),
        mib(MEMORY_LIMIT as u64),
        mib(RSS_SLACK)
    );
    println!(
        "  peak live heap {:.1} MiB above the baseline; peak granted {:.1} MiB",
        mib(peak_heap.saturating_sub(heap0) as u64),
        mib(granted.peak_reserved_bytes)
    );
    println!(
        "  {} outcomes, {rows} rows; slowest scan {:.2} s (median {:.2} s), longest wait for \
         one batch {:.2} s (bound {:?})",
        outcomes.len(),
        slowest.as_secs_f64(),
        walls[walls.len() / 2].as_secs_f64(),
        longest_wait.as_secs_f64(),
        MAX_WAIT
    );
    println!(
        "  all at once {:.2} s, one at a time {:.2} s: {:.2}x the throughput",
        concurrent.as_secs_f64(),
        one_at_a_time.as_secs_f64(),
        one_at_a_time.as_secs_f64() / concurrent.as_secs_f64()
    );
    println!(
        "  threads {threads0} -> {threads1}; live heap {heap0} -> {heap1} bytes (idle buffers \
         released: {:.1} MiB); RSS {:.1} -> {:.1} MiB",
        mib(idle as u64),
        mib(rss0),
        mib(rss1)
    );

    assert_eq!(rows, serial_rows, "the same rows at once and one at a time");
    assert!(
        longest_wait <= MAX_WAIT,
        "a scan waited {longest_wait:?} for a batch"
    );
    // The rule of the shared pool: the limit, plus at most one urgent row group (its
    // reservation, at most the whole row group decoded) and one footer read per scan.
    let per_scan = 2 * (ROWS_PER_GROUP as u64 * 400) + (2 << 20);
    assert!(
        granted.peak_reserved_bytes <= MEMORY_LIMIT as u64 + SCANS as u64 * per_scan,
        "granted {} bytes",
        granted.peak_reserved_bytes
    );
    assert!(
        peak_rss <= rss0 + MEMORY_LIMIT as u64 + RSS_SLACK,
        "peak RSS {peak_rss} bytes, baseline {rss0}"
    );
    common::assert_limits_idle(&limits, Duration::from_secs(20));
    assert_eq!(threads1, threads0, "threads leaked");
    assert!(
        heap1 <= heap0 + HEAP_TOLERANCE,
        "live heap grew from {heap0} to {heap1} bytes"
    );
}
