//! rayquet embedded in a sync service: many concurrent scans from plain std threads through
//! ONE explicitly built IO runtime and ONE rayon pool. Every scan's result equals parquet's own
//! sync reader; the process's thread count stays bounded while they run (no thread per scan);
//! and every scan's tasks wind down once its reader is dropped. No timing assertions.

use rayquet::ScanBuilder;
use rayquet_testkit as common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use rayquet::Scan;

/// Concurrent caller threads (one scan each).
const CALLERS: usize = 32;
/// Worker threads of the shared IO runtime.
const IO_WORKERS: usize = 2;
/// Cap on the IO runtime's blocking threads. object_store's `LocalFileSystem` runs every read
/// in `spawn_blocking`, so without a cap (tokio's default is 512) concurrent local scans grow
/// the blocking pool; a service should cap it.
const IO_BLOCKING: usize = 4;
/// Threads of the shared decode pool.
const DECODE_THREADS: usize = 2;
/// Threads the test itself adds besides the callers (the sampler) plus slack for threads the
/// harness or std may start.
const SLACK: usize = 1 + 4;

const FILES: usize = 4;
const ROW_GROUPS: usize = 3;
const ROWS: usize = 4000;

/// Projections, each in schema order so the reference (file order) lines up with the output.
const PROJECTIONS: &[Option<&[&str]>] = &[
    None,
    Some(&["l_orderkey", "l_comment"]),
    Some(&["l_partkey", "l_shipdate", "l_tags", "l_dims"]),
    Some(&["l_extendedprice"]),
];

/// Write the dataset: `FILES` files of `ROW_GROUPS` x `ROWS` rows of rayquet's generated
/// lineitem-like table (20 columns, nulls, a list and a struct), encoded by `write_parquet`.
fn dataset(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    (0..FILES)
        .map(|f| {
            let batches: Vec<RecordBatch> = (0..ROW_GROUPS)
                .map(|g| rayquet_gen::batch(f, (g * ROWS) as u64, ROWS, 7))
                .collect();
            let bytes = common::write_parquet(&batches, ROWS);
            let path = dir.join(rayquet_gen::file_name(f));
            std::fs::write(&path, &bytes).unwrap();
            (path, bytes)
        })
        .collect()
}

/// The whole dataset read with parquet's sync reader, projected: schema and one batch.
fn reference(paths: &[PathBuf], columns: Option<&[&str]>) -> (SchemaRef, RecordBatch) {
    let mut schema = None;
    let mut all = Vec::new();
    for p in paths {
        let (s, b) = common::reference(p, columns, 8192).unwrap();
        schema.get_or_insert(s);
        all.extend(b);
    }
    let schema = schema.unwrap();
    let one = common::concat(&schema, &all);
    (schema, one)
}

/// The process's threads (Linux: entries of `/proc/self/task`), or `None` elsewhere.
fn thread_count() -> Option<usize> {
    std::fs::read_dir("/proc/self/task")
        .ok()
        .map(|d| d.filter_map(|e| e.ok()).count())
}

/// How many threads of each name the process has (Linux), for failure messages.
fn thread_names() -> String {
    let mut names: HashMap<String, usize> = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
        for e in dir.flatten() {
            let name = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            *names.entry(name.trim().to_string()).or_default() += 1;
        }
    }
    let mut v: Vec<_> = names.into_iter().collect();
    v.sort();
    format!("{v:?}")
}

/// Rows as a multiset of strings.
fn multiset(batch: &RecordBatch) -> HashMap<String, usize> {
    let mut m = HashMap::new();
    for r in common::row_strings(batch) {
        *m.entry(r).or_default() += 1;
    }
    m
}

/// What scan `i` does. Among the 32 callers: both sources, both orders and every projection;
/// limits and early drops each ordered and unordered, from disk and from memory.
#[derive(Debug, Clone)]
struct Plan {
    memory: bool,
    ordered: bool,
    projection: usize,
    limit: Option<usize>,
    /// Read this many batches, then drop the reader (cancellation).
    drop_after: Option<usize>,
    batch_size: usize,
    split: bool,
}

fn plan(i: usize) -> Plan {
    Plan {
        memory: (i + i / 8) % 2 == 1,
        ordered: (i / 2 + i / 8) % 2 == 0,
        projection: (i / 4) % PROJECTIONS.len(),
        limit: (i % 8 == 5).then_some(5000 + 37 * i),
        drop_after: (i % 8 == 6).then_some(1 + i % 3),
        batch_size: [1000, 4096, 8192][i % 3],
        split: i % 5 == 0,
    }
}

/// Everything a caller thread needs, shared.
struct Env {
    dir: PathBuf,
    store: Arc<dyn ObjectStore>,
    metas: Vec<ObjectMeta>,
    io: tokio::runtime::Handle,
    pool: Arc<rayon::ThreadPool>,
    /// Per projection: the schema and all rows, from parquet's sync reader.
    expected: Vec<(SchemaRef, RecordBatch)>,
}

/// Run scan `i` to its end (or its early drop), check it against the reference, then wait for
/// its tasks to wind down.
fn run(env: &Env, i: usize) -> Result<(), String> {
    let p = plan(i);
    let what = format!("scan {i} {p:?}");
    let mut scan = if p.memory {
        Scan::from_store(env.store.clone(), env.metas.clone())
    } else {
        Scan::new(env.dir.to_str().unwrap()).map_err(|e| format!("{what}: {e}"))?
    };
    scan = scan
        .io_runtime(env.io.clone())
        .decode_pool(env.pool.clone())
        .ordered(p.ordered)
        .batch_size(p.batch_size);
    if let Some(cols) = PROJECTIONS[p.projection] {
        scan = scan.columns(cols.iter().copied());
    }
    if let Some(n) = p.limit {
        scan = scan.limit(n);
    }
    if p.split {
        scan = scan.io_tuning(rayquet::IoTuning::default().split_bytes(1));
    }
    let reader = scan.build().map_err(|e| format!("{what}: build: {e}"))?;
    let schema = reader.schema();
    let metrics = reader.metrics();
    let mut batches = Vec::new();
    let mut reader = Some(reader);
    while let Some(r) = reader.as_mut().unwrap().next() {
        batches.push(r.map_err(|e| format!("{what}: batch {}: {e}", batches.len()))?);
        if Some(batches.len()) == p.drop_after {
            break;
        }
    }
    drop(reader.take());

    let (ref_schema, all) = &env.expected[p.projection];
    if schema.fields() != ref_schema.fields() {
        return Err(format!("{what}: schema differs from the reference"));
    }
    // Panics on a mismatch; the caller thread turns a panic into this scan's failure.
    common::check_batches(&schema, &batches, p.batch_size, &what);
    let got = common::concat(&schema, &batches);
    let total = all.num_rows();
    match (p.ordered, p.limit, p.drop_after) {
        (true, limit, drop_after) => {
            // Ordered: exactly the reference's first rows (all, `limit`, or what was read).
            let n = match (limit, drop_after) {
                (Some(l), _) => l.min(total),
                (None, Some(_)) => got.num_rows(),
                (None, None) => total,
            };
            common::same_rows(&schema, &[all.slice(0, n)], &[got], &what)?;
        }
        (false, None, None) => {
            if multiset(&got) != multiset(all) {
                return Err(format!(
                    "{what}: rows are not a permutation of the reference"
                ));
            }
        }
        (false, limit, _) => {
            if let Some(l) = limit {
                if got.num_rows() != l.min(total) {
                    return Err(format!("{what}: {} rows, limit {l}", got.num_rows()));
                }
            }
            let mut pool = multiset(all);
            for r in common::row_strings(&got) {
                match pool.get_mut(&r) {
                    Some(c) if *c > 0 => *c -= 1,
                    _ => return Err(format!("{what}: row not in the reference: {r}")),
                }
            }
        }
    }

    let t = Instant::now();
    while metrics.snapshot().tasks_running > 0 {
        if t.elapsed() > Duration::from_secs(20) {
            return Err(format!(
                "{what}: tasks still running after the reader was dropped: {:?}",
                metrics.snapshot()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

#[test]
fn concurrent_scans_share_one_runtime_and_one_pool() {
    let dir = tempfile::tempdir().unwrap();
    let files = dataset(dir.path());
    let paths: Vec<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
    let expected: Vec<_> = PROJECTIONS.iter().map(|c| reference(&paths, *c)).collect();

    let baseline = thread_count();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(IO_WORKERS)
        .max_blocking_threads(IO_BLOCKING)
        .thread_name("svc-io")
        .enable_all()
        .build()
        .unwrap();
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(DECODE_THREADS)
            .thread_name(|i| format!("svc-decode-{i}"))
            .build()
            .unwrap(),
    );

    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let metas = rt.block_on(async {
        let mut metas = Vec::new();
        for (p, bytes) in &files {
            let loc = ObjectPath::from(format!("t/{}", p.file_name().unwrap().to_str().unwrap()));
            store
                .put(&loc, bytes::Bytes::from(bytes.clone()).into())
                .await
                .unwrap();
            metas.push(store.head(&loc).await.unwrap());
        }
        metas
    });
    let env = Arc::new(Env {
        dir: dir.path().to_path_buf(),
        store,
        metas,
        io: rt.handle().clone(),
        pool,
        expected,
    });

    // Sample the thread count while the scans run.
    let done = Arc::new(AtomicBool::new(false));
    let peak = Arc::new(AtomicUsize::new(0));
    let peak_names = Arc::new(std::sync::Mutex::new(String::new()));
    let sampler = {
        let (done, peak, peak_names) = (done.clone(), peak.clone(), peak_names.clone());
        std::thread::spawn(move || {
            while !done.load(Ordering::Acquire) {
                if let Some(n) = thread_count() {
                    if n > peak.fetch_max(n, Ordering::AcqRel) {
                        *peak_names.lock().unwrap() = thread_names();
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };

    let (tx, rx) = std::sync::mpsc::channel();
    let start = Arc::new(Barrier::new(CALLERS));
    for i in 0..CALLERS {
        let (env, tx, start) = (env.clone(), tx.clone(), start.clone());
        std::thread::Builder::new()
            .name(format!("caller-{i}"))
            .spawn(move || {
                start.wait();
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&env, i)))
                    .unwrap_or_else(|p| {
                        Err(format!(
                            "scan {i} panicked: {}",
                            common::panic_message(p.as_ref())
                        ))
                    });
                let _ = tx.send(r);
            })
            .unwrap();
    }
    drop(tx);
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut failures = Vec::new();
    for _ in 0..CALLERS {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failures.push(e),
            Err(_) => panic!("scans hung; finished failures so far: {failures:#?}"),
        }
    }
    done.store(true, Ordering::Release);
    sampler.join().unwrap();
    assert!(
        failures.is_empty(),
        "{} scans failed:\n{}",
        failures.len(),
        failures.join("\n")
    );

    match baseline {
        Some(base) => {
            let peak = peak.load(Ordering::Acquire);
            let bound = base + CALLERS + IO_WORKERS + IO_BLOCKING + DECODE_THREADS + SLACK;
            eprintln!(
                "threads: baseline {base}, peak {peak}, bound {bound} (callers {CALLERS}, io \
                 {IO_WORKERS}+{IO_BLOCKING} blocking, decode {DECODE_THREADS}, slack {SLACK})"
            );
            assert!(
                peak <= bound,
                "thread count peaked at {peak} > bound {bound}: scans spawn threads of their \
                 own. Threads at the peak: {}",
                peak_names.lock().unwrap()
            );
        }
        None => eprintln!(
            "SKIPPED the thread-count bound: /proc/self/task is not available on this platform"
        ),
    }
}
