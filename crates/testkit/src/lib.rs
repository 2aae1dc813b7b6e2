//! Test support for rayquet, shared by the integration tests of every crate of the workspace
//! and by the benchmark harness (`crates/bench`), never by the library or the CLI:
//!
//! - the independent reference (parquet's own sync reader) and comparisons of batch sequences
//!   (this module), and a hang- and panic-proof way to run a scan ([`run_with_timeout`]);
//! - [`suite`]: the conformance suite every input kind runs;
//! - [`latency`]: an object store that behaves like a remote one;
//! - [`python`]: a venv with pinned Python packages (the real writers' suite), and a cache for
//!   generated test data;
//! - [`s3`] (feature `cloud`): a moto S3 server on loopback; [`postgres`]: a PostgreSQL
//!   server of a test's own (the SQL catalog's tests);
//! - [`iceberg_tables`] / [`delta_tables`] (features `iceberg` / `delta`): test tables
//!   written by the formats' own writers, and their own readers as references;
//! - [`craft`]: files crafted from valid ones (footer and page header fields set);
//! - [`gen`]: the synthetic dataset;
//! - [`heap`]: a counting global allocator, and [`threads`] / [`rss`] / [`peak_rss`]: what a
//!   process holds, for tests that bound it.

pub mod craft;
#[cfg(feature = "delta")]
pub mod delta_tables;
pub mod heap;
#[cfg(feature = "iceberg")]
pub mod iceberg_tables;
#[cfg(feature = "iceberg")]
pub mod iceberg_v3;
pub mod latency;
pub mod postgres;
pub mod python;
#[cfg(feature = "cloud")]
pub mod s3;
pub mod suite;

/// The synthetic dataset (`rayquet-gen`).
pub use rayquet_gen as gen;

use std::fs::File;
use std::path::Path;

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::compute::concat_batches;
use arrow::datatypes::SchemaRef;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;

/// Read `path` with parquet's single-threaded sync reader, projecting `columns` (by dotted
/// name, as `ProjectionMask::columns` resolves them) when given.
pub fn reference(
    path: &Path,
    columns: Option<&[&str]>,
    batch_size: usize,
) -> parquet::errors::Result<(SchemaRef, Vec<RecordBatch>)> {
    let builder = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?;
    let builder = match columns {
        Some(cols) => {
            let mask = ProjectionMask::columns(builder.parquet_schema(), cols.iter().copied());
            builder.with_projection(mask)
        }
        None => builder,
    };
    let reader = builder.with_batch_size(batch_size).build()?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>()?;
    Ok((schema, batches))
}

/// Concatenate batches into one (an empty batch of `schema` when there are none).
pub fn concat(schema: &SchemaRef, batches: &[RecordBatch]) -> RecordBatch {
    concat_batches(schema, batches).expect("concat_batches")
}

/// Assert that two batch sequences hold the same rows and values in the same order,
/// whatever their batch boundaries.
pub fn assert_same_rows(
    schema: &SchemaRef,
    expected: &[RecordBatch],
    actual: &[RecordBatch],
    what: &str,
) {
    let e = concat(schema, expected);
    let a = concat(schema, actual);
    assert_eq!(e.num_rows(), a.num_rows(), "{what}: row count");
    assert_eq!(e.num_columns(), a.num_columns(), "{what}: column count");
    for (i, (ec, ac)) in e.columns().iter().zip(a.columns()).enumerate() {
        assert_eq!(
            ec.to_data(),
            ac.to_data(),
            "{what}: column {} ({}) differs",
            i,
            schema.field(i).name()
        );
    }
}

/// Run `f`, which blocks on a runtime of its own, also from a test running on a multi-thread
/// tokio runtime (`#[tokio::test(flavor = "multi_thread")]`): the calling worker leaves its
/// runtime for the while (`block_in_place`).
pub fn outside_runtime<T>(f: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(f),
        _ => f(),
    }
}

/// Every row of `batch` rendered as one string, for comparisons as a multiset.
pub fn row_strings(batch: &RecordBatch) -> Vec<String> {
    use arrow::util::display::{ArrayFormatter, FormatOptions};
    let opts = FormatOptions::default().with_null("∅");
    let fmts: Vec<_> = batch
        .columns()
        .iter()
        .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).expect("formatter"))
        .collect();
    (0..batch.num_rows())
        .map(|r| {
            fmts.iter()
                .map(|f| f.value(r).to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

/// `assert_same_rows` as a value: `Err` with the assertion's message when the rows differ, so
/// that a test over many files can report every failing file at once.
pub fn same_rows(
    schema: &SchemaRef,
    expected: &[RecordBatch],
    actual: &[RecordBatch],
    what: &str,
) -> Result<(), String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        assert_same_rows(schema, expected, actual, what)
    }))
    .map_err(|p| panic_message(p.as_ref()))
}

/// The message of a caught panic.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(panic payload is not a string)".to_string()
    }
}

/// How a closure run by [`run_with_timeout`] ended.
#[derive(Debug)]
pub enum Outcome<T> {
    /// It returned this value in time.
    Done(T),
    /// It panicked with this message.
    Panicked(String),
    /// It had not returned when the deadline passed (its thread is left to run).
    TimedOut,
}

/// Run `f` on a thread of its own and wait at most `timeout` for it, so that a hang or a panic
/// inside the library becomes a reportable outcome instead of a stuck or aborted test.
pub fn run_with_timeout<T, F>(timeout: std::time::Duration, f: F) -> Outcome<T>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    use std::sync::mpsc::{channel, RecvTimeoutError};
    let (tx, rx) = channel();
    let handle = std::thread::Builder::new()
        .name("rayquet-test-scan".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .expect("spawn test thread");
    match rx.recv_timeout(timeout) {
        Ok(v) => {
            let _ = handle.join();
            Outcome::Done(v)
        }
        Err(RecvTimeoutError::Timeout) => Outcome::TimedOut,
        Err(RecvTimeoutError::Disconnected) => match handle.join() {
            Err(p) => Outcome::Panicked(panic_message(p.as_ref())),
            Ok(()) => Outcome::Panicked("thread ended without a result".into()),
        },
    }
}

/// Join `threads` (each reporting its failures into `failures`) within `deadline`, then
/// assert that none failed: a hang or a failure fails the test with every message (at most
/// 20). `what` names the work in the messages.
pub fn join_all(
    what: &str,
    deadline: std::time::Duration,
    threads: Vec<std::thread::JoinHandle<()>>,
    failures: &std::sync::Mutex<Vec<String>>,
) {
    let done = run_with_timeout(deadline, move || {
        for t in threads {
            t.join().expect("a thread panicked");
        }
    });
    assert!(
        matches!(done, Outcome::Done(())),
        "{what} did not finish within {deadline:?}: {done:?}"
    );
    let failures = failures.lock().unwrap_or_else(|e| e.into_inner());
    assert!(
        failures.is_empty(),
        "{} of {what} went wrong:\n{}",
        failures.len(),
        failures[..failures.len().min(20)].join("\n")
    );
}

/// Build a scan and read it to the end: the reader's schema and every batch, or the first
/// error (from `Scan::new`, `build` or an item).
pub fn read_all(
    scan: rayquet::Result<rayquet::Scan>,
) -> rayquet::Result<(SchemaRef, Vec<RecordBatch>)> {
    let reader = scan?.build()?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>()?;
    Ok((schema, batches))
}

/// Encode `batches` as one Parquet file with at most `rows_per_group` rows per row group.
pub fn write_parquet(batches: &[RecordBatch], rows_per_group: usize) -> Vec<u8> {
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(rows_per_group))
        .build();
    let mut out = Vec::new();
    let mut writer =
        ArrowWriter::try_new(&mut out, batches[0].schema(), Some(props)).expect("ArrowWriter");
    for b in batches {
        writer.write(b).expect("write batch");
    }
    writer.close().expect("close writer");
    out
}

/// A small deterministic PRNG (splitmix64).
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// A value in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
    /// True with probability `pct` percent.
    pub fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
    pub fn word(&mut self, max_len: u64) -> String {
        const CHARS: &[char] = &[
            'a', 'b', 'q', 'z', 'Z', '0', '9', ' ', '-', 'é', 'ß', '日', '🦀',
        ];
        let len = self.below(max_len + 1);
        (0..len)
            .map(|_| CHARS[self.below(CHARS.len() as u64) as usize])
            .collect()
    }
}

/// Run a scan on a helper thread so that a hang fails the test instead of blocking it.
pub fn run_scan<F>(
    what: &str,
    timeout: std::time::Duration,
    make: F,
) -> (SchemaRef, Vec<RecordBatch>, rayquet::MetricsSnapshot)
where
    F: FnOnce() -> rayquet::Result<rayquet::ScanReader> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let result = (|| {
            let reader = make().map_err(|e| format!("build failed: {e}"))?;
            let schema = reader.schema();
            let metrics = reader.metrics();
            let mut batches = Vec::new();
            for batch in reader {
                let batch = batch.map_err(|e| {
                    format!(
                        "batch {} failed: {}",
                        batches.len(),
                        rayquet::Error::from(e)
                    )
                })?;
                batches.push(batch);
            }
            Ok::<_, String>((schema, batches, metrics.snapshot()))
        })();
        let _ = tx.send(result);
    });
    match rx.recv_timeout(timeout) {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => panic!("{what}: {e}"),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            panic!("{what}: scan hung (> {timeout:?})")
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
            panic!("{what}: scan thread panicked")
        }
    }
}

/// The scan's counters agree with what it delivered, and `split_bytes(1)` really split row
/// groups (when there are two top-level columns and two decode threads to split between).
pub fn check_metrics(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    metrics: &rayquet::MetricsSnapshot,
    split: bool,
    what: &str,
) {
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(metrics.rows, rows as u64, "{what}: metrics.rows");
    assert_eq!(
        metrics.batches,
        batches.len() as u64,
        "{what}: metrics.batches"
    );
    let threads = rayquet::layer::decode_pool(&rayquet::ScanOptions::new()).current_num_threads();
    if split && rows > 0 && schema.fields().len() >= 2 && threads >= 2 {
        assert!(
            metrics.units > metrics.row_groups,
            "{what}: split_bytes(1) did not split any row group: {metrics:?}"
        );
    }
}

/// Every batch has the reader's schema and at most `max_rows` rows.
pub fn check_batches(schema: &SchemaRef, batches: &[RecordBatch], max_rows: usize, what: &str) {
    for (i, b) in batches.iter().enumerate() {
        assert_eq!(
            b.schema().fields(),
            schema.fields(),
            "{what}: batch {i} schema differs from the reader's schema"
        );
        assert!(
            b.num_rows() <= max_rows,
            "{what}: batch {i} has {} rows, more than the batch size {max_rows}",
            b.num_rows()
        );
    }
}

/// Wait up to `within` for every scan using `limits` to wind down, then assert that nothing
/// is granted, queued or in flight any more.
pub fn assert_limits_idle(limits: &rayquet::SharedLimits, within: std::time::Duration) {
    let t = std::time::Instant::now();
    while limits.snapshot().scans > 0 && t.elapsed() < within {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let after = limits.snapshot();
    assert_eq!(
        (
            after.reserved_bytes,
            after.waiting,
            after.scans,
            after.connections_in_use
        ),
        (0, 0, 0, 0),
        "the shared limits once every scan is over: {after:?}"
    );
}

/// Threads of this process now: entries of `/proc/self/task` (0 where unknown).
pub fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, |d| d.count())
}

/// Resident set of this process now: `/proc/self/statm` (0 where unknown).
pub fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Peak resident set of this process: `VmHWM` of /proc/self/status (0 where unknown). Not
/// getrusage's `ru_maxrss`, which Linux carries over from the parent across fork and exec.
pub fn peak_rss() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kib| kib * 1024)
}

/// `name` under the shared test data directory: `../shared` next to the workspace root (the
/// public parquet-testing files, Delta's golden tables).
pub fn shared(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared")
        .join(name)
}
