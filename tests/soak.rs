//! Soak test of the sync-service design (`examples/service.rs`): handler threads pull scan
//! requests from a queue and run each on ONE shared IO runtime and ONE rayon pool, thousands
//! of scans in all. Some clients drop their reader early (before the first batch, after one,
//! after a few), some scans hit failing files (a corrupt footer, a missing object, a page that
//! cannot be decoded half-way through the file). Afterwards the process must be back where it
//! started: the same threads (`/proc/self/task`), live heap within [`HEAP_TOLERANCE`] of the
//! baseline (a counting global allocator), every scan's tasks wound down
//! (`tasks_running == 0`). RSS (`/proc/self/statm`) is reported and bounded loosely (the
//! allocator may keep freed pages). Full reads are checked against parquet's reader.
//!
//! `RAYQUET_SOAK_SCANS` sets the number of scans (default [`DEFAULT_SCANS`]). Run with
//! `--nocapture` for the figures.

use rayquet::ScanBuilder;
use rayquet_testkit as common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use bytes::Bytes;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use parquet::file::properties::WriterProperties;
use rayquet::{ErrorKind, Scan};

#[global_allocator]
static ALLOC: common::heap::Counting = common::heap::Counting;

/// Scans by default.
const DEFAULT_SCANS: usize = 3000;
/// Handler threads (as in `examples/service.rs`).
const HANDLERS: usize = 8;
/// Scans run before the baseline is taken (pools started, lazy statics filled).
const WARM_UP: usize = 64;
/// Live heap may end at most this far above the baseline (allocator-independent: counted).
const HEAP_TOLERANCE: usize = 4 << 20;
/// RSS may end at most this far above the baseline (the allocator keeps freed pages).
const RSS_TOLERANCE: u64 = 128 << 20;
/// Deadline for the whole soak: a hang fails the test.
const DEADLINE: Duration = Duration::from_secs(300);

/// The objects of the service's store.
struct Data {
    store: Arc<dyn ObjectStore>,
    good: Vec<ObjectMeta>,
    /// Footer bytes overwritten: fails when opened.
    corrupt_footer: ObjectMeta,
    /// Listed but absent from the store.
    missing: ObjectMeta,
    /// A data page of its last row group overwritten: fails after the first row groups.
    corrupt_page: ObjectMeta,
    /// The good files' rows, from parquet's reader.
    schema: SchemaRef,
    rows: Vec<RecordBatch>,
    total: usize,
}

fn file(f: usize) -> Vec<u8> {
    let batches: Vec<RecordBatch> = (0..3)
        .map(|g| rayquet_gen::batch(f, g * 1500, 1500, 11))
        .collect();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(1500))
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    let mut out = Vec::new();
    let mut w =
        parquet::arrow::ArrowWriter::try_new(&mut out, batches[0].schema(), Some(props)).unwrap();
    for b in &batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    out
}

fn data() -> Data {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let put = |name: &str, bytes: Vec<u8>| -> ObjectMeta {
        let path = Path::from(name);
        futures::executor::block_on(store.put(&path, Bytes::from(bytes).into())).unwrap();
        futures::executor::block_on(store.head(&path)).unwrap()
    };
    let files: Vec<Vec<u8>> = (0..4).map(file).collect();
    let good: Vec<ObjectMeta> = files
        .iter()
        .enumerate()
        .map(|(i, b)| put(&format!("t/good-{i}.parquet"), b.clone()))
        .collect();
    let mut schema = None;
    let mut rows = Vec::new();
    for b in &files {
        let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            Bytes::from(b.clone()),
        )
        .unwrap()
        .build()
        .unwrap();
        schema.get_or_insert(arrow::array::RecordBatchReader::schema(&r));
        rows.extend(r.map(Result::unwrap));
    }
    let schema = schema.unwrap();
    let total = rows.iter().map(|b| b.num_rows()).sum();

    let mut bad = files[0].clone();
    let n = bad.len();
    let meta_len = u32::from_le_bytes(bad[n - 8..n - 4].try_into().unwrap()) as usize;
    let meta_start = n - 8 - meta_len;
    for b in &mut bad[meta_start..meta_start + meta_len / 2] {
        *b = 0xff;
    }
    let corrupt_footer = put("t/corrupt-footer.parquet", bad);

    // Overwrite the first column chunk of the last row group (page header and data).
    let mut bad = files[1].clone();
    let md = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&Bytes::from(bad.clone()))
        .unwrap();
    let (start, len) = md.row_group(2).column(0).byte_range();
    for b in &mut bad[start as usize..(start + len) as usize] {
        *b = 0xa5;
    }
    let corrupt_page = put("t/corrupt-page.parquet", bad);
    let mut missing = good[0].clone();
    missing.location = Path::from("t/missing.parquet");

    Data {
        store,
        good,
        corrupt_footer,
        missing,
        corrupt_page,
        schema,
        rows,
        total,
    }
}

/// What one scan request does.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Read every good file to the end.
    Full,
    /// Drop the reader after this many batches (0: before the first).
    Drop(usize),
    /// A failing file among good ones: the corrupt footer, the missing object, the corrupt page.
    Fails(usize),
}

fn kind(i: usize) -> Kind {
    match i % 10 {
        0..=3 => Kind::Full,
        4 => Kind::Drop(0),
        5 => Kind::Drop(1),
        6 => Kind::Drop(1 + i % 5),
        _ => Kind::Fails(i % 3),
    }
}

/// Run request `i` on the shared runtime and pool; `Err` describes a wrong outcome.
fn handle(
    d: &Data,
    io: &tokio::runtime::Handle,
    pool: &Arc<rayon::ThreadPool>,
    i: usize,
) -> Result<&'static str, String> {
    let k = kind(i);
    let mut objects = d.good.clone();
    let failing = match k {
        Kind::Fails(0) => Some(&d.corrupt_footer),
        Kind::Fails(1) => Some(&d.missing),
        Kind::Fails(_) => Some(&d.corrupt_page),
        _ => None,
    };
    if let Some(f) = failing {
        objects.insert(1 + i % 3, f.clone());
    }
    let what = format!("scan {i} ({k:?})");
    let scan = Scan::from_store(Arc::clone(&d.store), objects)
        .io_runtime(io.clone())
        .decode_pool(Arc::clone(pool))
        .batch_size([1000, 4096][i % 2])
        .ordered(i % 3 != 0)
        .memory_budget(8 << 20);
    let reader = match scan.build() {
        Ok(r) => r,
        Err(e) => {
            // A failing first file is found when the scan is built.
            return match failing {
                Some(f) if e.path().is_some_and(|p| p.contains(f.location.as_ref())) => Ok("error"),
                _ => Err(format!("{what}: build: {e}")),
            };
        }
    };
    let metrics = reader.metrics();
    let mut reader = Some(reader);
    let mut batches = Vec::new();
    let mut error = None;
    let stop = match k {
        Kind::Drop(n) => Some(n),
        _ => None,
    };
    while stop != Some(batches.len()) {
        match reader.as_mut().unwrap().next() {
            None => break,
            Some(Ok(b)) => batches.push(b),
            Some(Err(e)) => {
                error = Some(rayquet::Error::from(e));
                break;
            }
        }
    }
    drop(reader.take());
    let outcome = match (k, error) {
        (Kind::Fails(_), Some(e)) => {
            let f = failing.unwrap();
            if !e.path().is_some_and(|p| p.contains(f.location.as_ref())) {
                return Err(format!(
                    "{what}: the error does not name {}: {e}",
                    f.location
                ));
            }
            if f.location == d.missing.location && e.kind() != ErrorKind::NotFound {
                return Err(format!("{what}: missing object: {e}"));
            }
            "error"
        }
        (Kind::Fails(_), None) => return Err(format!("{what}: no error")),
        (_, Some(e)) => return Err(format!("{what}: {e}")),
        (Kind::Full, None) => {
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            if rows != d.total {
                return Err(format!("{what}: {rows} rows of {}", d.total));
            }
            // Every 25th full read is compared value by value (ordered, or as a multiset).
            if i % 25 == 0 {
                let schema = batches[0].schema();
                if schema.fields() != d.schema.fields() {
                    return Err(format!("{what}: schema"));
                }
                if i % 3 != 0 {
                    common::same_rows(&d.schema, &d.rows, &batches, &what)?;
                } else {
                    let mut a = common::row_strings(&common::concat(&d.schema, &d.rows));
                    let mut b = common::row_strings(&common::concat(&d.schema, &batches));
                    a.sort();
                    b.sort();
                    if a != b {
                        return Err(format!("{what}: rows differ from the reference"));
                    }
                }
            }
            "full"
        }
        (Kind::Drop(_), None) => "dropped early",
    };
    drop(batches);
    // The scan's tasks wind down once its reader is gone.
    let t = Instant::now();
    while metrics.snapshot().tasks_running > 0 {
        if t.elapsed() > Duration::from_secs(20) {
            return Err(format!(
                "{what}: tasks still running 20 s after the reader was dropped: {:?}",
                metrics.snapshot()
            ));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(outcome)
}

/// Run scans `range` on `HANDLERS` threads; returns the outcome counts.
fn run_scans(
    d: &Arc<Data>,
    io: &tokio::runtime::Handle,
    pool: &Arc<rayon::ThreadPool>,
    range: std::ops::Range<usize>,
) -> BTreeMap<&'static str, usize> {
    let next = Arc::new(AtomicUsize::new(range.start));
    let counts = Arc::new(Mutex::new(BTreeMap::new()));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let handlers: Vec<_> = (0..HANDLERS)
        .map(|h| {
            let (d, io, pool) = (Arc::clone(d), io.clone(), Arc::clone(pool));
            let (next, counts, failures) = (next.clone(), counts.clone(), failures.clone());
            let end = range.end;
            std::thread::Builder::new()
                .name(format!("handler-{h}"))
                .spawn(move || loop {
                    let i = next.fetch_add(1, Relaxed);
                    if i >= end {
                        return;
                    }
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        handle(&d, &io, &pool, i)
                    }))
                    .unwrap_or_else(|p| {
                        Err(format!(
                            "scan {i} panicked: {}",
                            common::panic_message(p.as_ref())
                        ))
                    });
                    match r {
                        Ok(o) => *counts.lock().unwrap().entry(o).or_default() += 1,
                        Err(e) => failures.lock().unwrap().push(e),
                    }
                })
                .unwrap()
        })
        .collect();
    common::join_all("the soak's scans", DEADLINE, handlers, &failures);
    let counts = counts.lock().unwrap().clone();
    counts
}

#[test]
fn soak_sync_service() {
    let scans = std::env::var("RAYQUET_SOAK_SCANS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_SCANS);
    let d = Arc::new(data());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(4)
        .thread_name("svc-io")
        .enable_all()
        .build()
        .unwrap();
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .thread_name(|i| format!("svc-decode-{i}"))
            .build()
            .unwrap(),
    );
    let io = rt.handle().clone();

    run_scans(&d, &io, &pool, 0..WARM_UP);
    // Settle: handler threads joined, nothing in flight.
    std::thread::sleep(Duration::from_millis(200));
    // The heap compared without the buffers rayquet keeps idle for later scans.
    rayquet::release_idle_buffers();
    let (threads0, heap0, rss0) = (common::threads(), common::heap::live(), common::rss());

    let started = Instant::now();
    let counts = run_scans(&d, &io, &pool, WARM_UP..WARM_UP + scans);
    let elapsed = started.elapsed();
    std::thread::sleep(Duration::from_millis(200));
    rayquet::release_idle_buffers();
    let (threads1, heap1, rss1) = (common::threads(), common::heap::live(), common::rss());

    let mib = |b: f64| b / (1 << 20) as f64;
    println!(
        "soak: {scans} scans on {HANDLERS} handler threads in {:.1}s: {counts:?}",
        elapsed.as_secs_f64()
    );
    println!("  threads: {threads0} before, {threads1} after");
    println!(
        "  live heap: {heap0} bytes ({:.2} MiB) before, {heap1} bytes ({:.2} MiB) after \
         (tolerance {:.0} MiB)",
        mib(heap0 as f64),
        mib(heap1 as f64),
        mib(HEAP_TOLERANCE as f64)
    );
    println!(
        "  RSS: {:.1} MiB before, {:.1} MiB after (tolerance {:.0} MiB)",
        mib(rss0 as f64),
        mib(rss1 as f64),
        mib(RSS_TOLERANCE as f64)
    );
    assert_eq!(counts.values().sum::<usize>(), scans);
    assert_eq!(threads1, threads0, "threads leaked");
    assert!(
        heap1 <= heap0 + HEAP_TOLERANCE,
        "live heap grew from {heap0} to {heap1} bytes"
    );
    assert!(
        rss1 <= rss0 + RSS_TOLERANCE,
        "RSS grew from {rss0} to {rss1} bytes"
    );
}
