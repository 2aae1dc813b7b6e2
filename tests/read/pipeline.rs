//! The pipeline's own guarantees: ordering, splitting, budget, limit, cancellation, errors,
//! shared pools and calls from async contexts. Reference: parquet's sync reader.

use rayquet::{RowSelection, RowSelector, ScanBuilder};
use rayquet_testkit as common;

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use rayquet::{ErrorKind, Scan};

/// Write a file of `row_groups` x `rows` rows: an id counter offset by `base`, and a string.
fn write_file(path: &Path, base: i64, row_groups: usize, rows: usize) {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("s", DataType::Utf8, true),
        Field::new("v", DataType::Int64, true),
    ]));
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(rows))
        .build();
    let mut w =
        ArrowWriter::try_new(File::create(path).unwrap(), schema.clone(), Some(props)).unwrap();
    for g in 0..row_groups {
        let start = base + (g * rows) as i64;
        let ids: Vec<i64> = (start..start + rows as i64).collect();
        let s: Vec<Option<String>> = ids
            .iter()
            .map(|i| (i % 7 != 0).then(|| format!("row-{i}-{}", "x".repeat((*i % 13) as usize))))
            .collect();
        let v: Vec<Option<i64>> = ids.iter().map(|i| (i % 5 != 0).then_some(i * 3)).collect();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(StringArray::from(s)),
            Arc::new(Int64Array::from(v)),
        ];
        w.write(&RecordBatch::try_new(schema.clone(), cols).unwrap())
            .unwrap();
    }
    w.close().unwrap();
}

pub(crate) fn dataset(dir: &Path, files: usize, row_groups: usize, rows: usize) -> Vec<PathBuf> {
    (0..files)
        .map(|f| {
            let p = dir.join(format!("part-{f:03}.parquet"));
            write_file(&p, (f * row_groups * rows) as i64, row_groups, rows);
            p
        })
        .collect()
}

pub(crate) fn reference_all(
    paths: &[PathBuf],
    batch: usize,
) -> (arrow::datatypes::SchemaRef, Vec<RecordBatch>) {
    let mut all = Vec::new();
    let mut schema = None;
    for p in paths {
        let (s, b) = common::reference(p, None, batch).unwrap();
        schema.get_or_insert(s);
        all.extend(b);
    }
    (schema.unwrap(), all)
}

/// Ordered delivery over files and row groups equals the reference, with and without splitting
/// row groups by column.
#[test]
fn ordered_equals_reference() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 3, 4, 5000);
    let (schema, expected) = reference_all(&paths, 1024);
    for split in [usize::MAX, 1] {
        let reader = Scan::new(dir.path().to_str().unwrap())
            .unwrap()
            .batch_size(1024)
            .io_tuning(rayquet::IoTuning::default().split_bytes(split))
            .build()
            .unwrap();
        assert_eq!(reader.schema().fields(), schema.fields());
        let got: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
        assert!(got.iter().all(|b| b.num_rows() <= 1024));
        common::assert_same_rows(&schema, &expected, &got, &format!("split={split}"));
    }
}

/// `string_views(true)`: string columns come back as `Utf8View` holding the same values.
#[test]
fn string_views_hold_the_same_strings() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 2, 3, 3000);
    let (schema, expected) = reference_all(&paths, 1024);
    let reader = Scan::new(dir.path().to_str().unwrap())
        .unwrap()
        .string_views(true)
        .io_tuning(rayquet::IoTuning::default().split_bytes(1))
        .build()
        .unwrap();
    let got_schema = reader.schema();
    let mut views = 0;
    for (a, b) in got_schema.fields().iter().zip(schema.fields()) {
        match b.data_type() {
            arrow::datatypes::DataType::Utf8 => {
                assert_eq!(a.data_type(), &arrow::datatypes::DataType::Utf8View);
                views += 1;
            }
            t => assert_eq!(a.data_type(), t),
        }
    }
    assert!(views > 0, "the dataset has string columns");
    let got: Vec<RecordBatch> = reader
        .map(|b| {
            let b = b.unwrap();
            let cols = b
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(c, f)| arrow::compute::cast(c, f.data_type()).unwrap())
                .collect();
            RecordBatch::try_new(Arc::clone(&schema), cols).unwrap()
        })
        .collect();
    common::assert_same_rows(&schema, &expected, &got, "string views");
}

/// With a small budget, peak buffered bytes stay within budget plus one slot, and the scan
/// still completes; a slot larger than the whole budget is admitted alone.
/// The most one slot (row group) of `path` can hold: its compressed column chunks plus its
/// whole decoded output, measured with parquet's own reader in batches of `batch` rows.
fn largest_slot(path: &Path, batch: usize) -> u64 {
    let file = File::open(path).unwrap();
    let builder = ParquetRecordBatchReaderBuilder::try_new(file).unwrap();
    let md = builder.metadata().clone();
    (0..md.num_row_groups())
        .map(|rg| {
            let reader = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
                .unwrap()
                .with_row_groups(vec![rg])
                .with_batch_size(batch)
                .build()
                .unwrap();
            let decoded: usize = reader.map(|b| b.unwrap().get_array_memory_size()).sum();
            md.row_group(rg).compressed_size() as u64 + decoded as u64
        })
        .max()
        .unwrap()
}

#[test]
fn budget_bounds_buffered_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 2, 8, 20_000);
    let (schema, expected) = reference_all(&paths, 4096);
    let largest_slot = largest_slot(&paths[0], 4096);
    for budget in [1u64, largest_slot * 3] {
        let reader = Scan::new(dir.path().to_str().unwrap())
            .unwrap()
            .batch_size(4096)
            .memory_budget(budget as usize)
            .build()
            .unwrap();
        let metrics = reader.metrics();
        let got: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
        common::assert_same_rows(&schema, &expected, &got, &format!("budget={budget}"));
        let peak = metrics.snapshot().peak_buffered_bytes;
        assert!(peak > 0);
        // Arrow's memory size counts buffer capacity, which varies a little between two
        // decodes of the same rows: allow 10% on the slot's decoded size.
        let slack = largest_slot / 10;
        assert!(
            peak <= budget + largest_slot + slack,
            "peak {peak} > budget {budget} + one slot {largest_slot} (+{slack})"
        );
    }
}

/// The decode window: whatever the budget admits, only the first few undelivered row groups
/// decode. A consumer that takes one batch and pauses finds at most the window's row groups
/// (decode threads + 1) decoded besides the one it read, not the whole file the budget would
/// hold; then every row still comes, as parquet's reader gives them, ordered and unordered.
///
/// The window opens for good once the decoders are found waiting on IO (object-store latency):
/// on a loaded machine a local read can be slow enough for that (CI runs this binary's tests in
/// parallel). So each mode gets three fresh scans, and one must stay within the window; every
/// scan must deliver every row.
#[test]
fn only_the_decode_window_decodes_ahead() {
    let dir = tempfile::tempdir().unwrap();
    // One file, 24 row groups of 2,000 rows: one batch per row group.
    let paths = dataset(dir.path(), 1, 24, 2000);
    let (schema, expected) = reference_all(&paths, 2000);
    let slot: u64 = expected[0].get_array_memory_size() as u64;
    let threads = 2;
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap(),
    );
    // The row group read, and the window's: 10% slack for capacity differences.
    let bound = (1 + threads as u64 + 1) * slot * 11 / 10;
    for ordered in [true, false] {
        let mut ahead = Vec::new();
        for _ in 0..3 {
            let mut reader = Scan::new(paths[0].to_str().unwrap())
                .unwrap()
                .batch_size(2000)
                .ordered(ordered)
                .memory_budget(256 << 20)
                .decode_pool(Arc::clone(&pool))
                .build()
                .unwrap();
            let metrics = reader.metrics();
            let first = reader.next().unwrap().unwrap();
            std::thread::sleep(Duration::from_millis(500));
            ahead.push(metrics.snapshot().bytes_decoded);
            let mut got = vec![first];
            got.extend(reader.map(|b| b.unwrap()));
            if ordered {
                common::assert_same_rows(&schema, &expected, &got, "ordered, windowed");
            } else {
                let mut e: Vec<String> = expected.iter().flat_map(common::row_strings).collect();
                let mut g: Vec<String> = got.iter().flat_map(common::row_strings).collect();
                e.sort();
                g.sort();
                assert_eq!(e, g, "unordered, windowed: the same rows");
            }
            assert_eq!(metrics.snapshot().row_groups, 24);
            if ahead.last().is_some_and(|&d| d <= bound) {
                break;
            }
        }
        assert!(
            ahead.iter().any(|&d| d <= bound),
            "ordered={ordered}: {ahead:?} bytes decoded ahead in three scans, the window \
             allows {bound} (row group {slot})"
        );
    }
}

/// Scans under one `SharedLimits` whose memory holds two row groups: four scans interleaved on
/// ONE thread (one batch from each in turn) all finish with parquet's rows, so no scan's next
/// row group waits on memory another scan's unread batches hold; the memory granted stays
/// within the limit plus one row group per scan, the connections in use within the cap; a
/// scan dropped while it waits for memory leaves the queue; afterwards nothing is granted.
#[test]
fn shared_limits_bound_scans_interleaved_on_one_thread() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 2, 8, 20_000);
    let (schema, expected) = reference_all(&paths, 4096);
    let slot = largest_slot(&paths[0], 4096);
    let limits = rayquet::SharedLimits::new(2 * slot as usize, 2);
    let scan = || {
        Scan::new(dir.path().to_str().unwrap())
            .unwrap()
            .batch_size(4096)
            .shared_limits(limits.clone())
            .build()
            .unwrap()
    };
    let mut readers: Vec<_> = (0..4).map(|_| (scan(), Vec::new())).collect();
    // A fifth scan, dropped after one batch while the others hold the memory.
    let mut dropped = scan();
    assert!(dropped.next().unwrap().is_ok());
    let mut open = readers.len();
    let mut most_connections = 0;
    while open > 0 {
        open = 0;
        for (r, got) in readers.iter_mut() {
            if let Some(b) = r.next() {
                got.push(b.unwrap());
                open += 1;
            }
            most_connections = most_connections.max(limits.snapshot().connections_in_use);
        }
        drop(std::mem::replace(&mut dropped, scan()));
    }
    drop(dropped);
    for (i, (_, got)) in readers.iter().enumerate() {
        common::assert_same_rows(&schema, &expected, got, &format!("scan {i}"));
    }
    let peak = limits.snapshot().peak_reserved_bytes;
    let scans = 5 + 1;
    assert!(peak > 0);
    assert!(
        peak <= 2 * slot + scans * (slot + (1 << 20)),
        "granted {peak}, limit {} + one slot {slot} per scan",
        2 * slot
    );
    assert!(most_connections <= 2, "{most_connections} connections");
    drop(readers);
    common::assert_limits_idle(&limits, Duration::from_secs(20));
    // Shared limits must be positive.
    let zero = Scan::new(dir.path().to_str().unwrap())
        .unwrap()
        .shared_limits(rayquet::SharedLimits::new(0, 4))
        .build()
        .unwrap_err();
    assert_eq!(zero.kind(), ErrorKind::InvalidArgument, "{zero}");
}

/// Unordered delivery yields the same rows as a multiset.
#[test]
fn unordered_is_a_permutation() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 3, 3, 3000);
    let (_, expected) = reference_all(&paths, 500);
    let got: Vec<RecordBatch> = Scan::new(dir.path().to_str().unwrap())
        .unwrap()
        .batch_size(500)
        .ordered(false)
        .build()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut e: Vec<String> = expected.iter().flat_map(common::row_strings).collect();
    let mut g: Vec<String> = got.iter().flat_map(common::row_strings).collect();
    e.sort();
    g.sort();
    assert_eq!(e, g);
}

/// Projection order follows the caller; limit returns exactly the first rows and stops fetching.
#[test]
fn projection_and_limit() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 4, 4, 2000);
    let (_, expected) = reference_all(&paths, 2000);
    let all = common::concat(&expected[0].schema(), &expected);
    let reader = Scan::new(dir.path().to_str().unwrap())
        .unwrap()
        .columns(["v", "id"])
        .limit(2500)
        .memory_budget(1)
        .build()
        .unwrap();
    let names: Vec<_> = reader
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(names, ["v", "id"]);
    let metrics = reader.metrics();
    let got: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
    let got = common::concat(&got[0].schema(), &got);
    assert_eq!(got.num_rows(), 2500);
    assert_eq!(
        got.column(0).to_data(),
        all.column(2).slice(0, 2500).to_data()
    );
    assert_eq!(
        got.column(1).to_data(),
        all.column(0).slice(0, 2500).to_data()
    );
    let m = metrics.snapshot();
    assert!(
        m.row_groups <= 3,
        "limit should stop planning: {} row groups",
        m.row_groups
    );
    assert!(m.files <= 4);
}

/// An empty projection (what `SELECT count(*)` asks of a table provider) delivers batches
/// with no columns that carry every row: as many as parquet's reader counts, also through a
/// filter (whose columns are read but not delivered) and for a task scan of no columns.
#[test]
fn empty_projection_counts_rows() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 3, 4, 1500);
    let (_, expected) = reference_all(&paths, 1500);
    let all = common::concat(&expected[0].schema(), &expected);
    let count = |scan: Scan| -> usize {
        let reader = scan.batch_size(1000).build().unwrap();
        assert!(reader.schema().fields().is_empty());
        reader
            .map(|b| {
                let b = b.unwrap();
                assert_eq!(b.num_columns(), 0);
                b.num_rows()
            })
            .sum()
    };
    let root = dir.path().to_str().unwrap();
    let scan = Scan::new(root).unwrap().columns(Vec::<String>::new());
    assert_eq!(count(scan), all.num_rows());
    // Through a filter: the rows where it holds in the reference.
    let ids = all.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
    let bound = ids.value(ids.len() / 2);
    let scan = Scan::new(root)
        .unwrap()
        .columns(Vec::<String>::new())
        .filter(rayquet::col("id").lt(bound));
    let below = (0..ids.len()).filter(|&i| ids.value(i) < bound).count();
    assert!(below > 0 && below < ids.len());
    assert_eq!(count(scan), below);
    // Tasks producing no column.
    let tasks = paths
        .iter()
        .map(|p| rayquet::FileTask::new(p.to_str().unwrap()).columns([]));
    let scan = Scan::from_tasks(Arc::new(Schema::empty()), tasks.collect::<Vec<_>>());
    assert_eq!(count(scan), all.num_rows());
}

/// Dropping the reader after the first batch winds every task down, and the shared pools
/// keep working for the next scan.
#[test]
fn cancellation_is_prompt_and_pools_survive() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 6, 6, 20_000);
    let mut reader = Scan::new(dir.path().to_str().unwrap())
        .unwrap()
        .batch_size(1000)
        .memory_budget(1) // one slot at a time, so most slots are never planned
        .build()
        .unwrap();
    let metrics = reader.metrics();
    reader.next().unwrap().unwrap();
    drop(reader);
    let t = Instant::now();
    while metrics.snapshot().tasks_running > 0 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "tasks still running: {:?}",
            metrics.snapshot()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let requests = metrics.snapshot().requests;
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(
        metrics.snapshot().requests,
        requests,
        "no request after cancellation"
    );
    assert!(
        metrics.snapshot().row_groups < 36,
        "cancelled before planning everything"
    );
    // The pools still work.
    let (schema, expected) = reference_all(&paths[..1], 1000);
    let got: Vec<RecordBatch> = Scan::new(paths[0].to_str().unwrap())
        .unwrap()
        .batch_size(1000)
        .build()
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    common::assert_same_rows(&schema, &expected, &got, "after cancel");
}

/// Errors name the file; schemas that differ name both files; the iterator is fused after an
/// error; rows before the error are delivered in order.
#[test]
fn errors_name_files_and_fuse() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 2, 2, 100);
    // A missing file.
    let missing = dir.path().join("nope.parquet");
    let e = Scan::new(missing.to_str().unwrap())
        .unwrap()
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert!(e.to_string().contains("nope.parquet"), "{e}");
    // A truncated file after a good one: the good rows come first, then the error, then None.
    let bytes = std::fs::read(&paths[1]).unwrap();
    let truncated = dir.path().join("trunc.parquet");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let mut reader = Scan::from_urls([paths[0].to_str().unwrap(), truncated.to_str().unwrap()])
        .unwrap()
        .build()
        .unwrap();
    let mut rows = 0;
    let err = loop {
        match reader.next() {
            Some(Ok(b)) => rows += b.num_rows(),
            Some(Err(e)) => break rayquet::Error::from(e),
            None => panic!("expected an error"),
        }
    };
    assert_eq!(
        rows, 200,
        "the first file's rows are delivered before the error"
    );
    assert_eq!(err.kind(), ErrorKind::CorruptFooter, "{err}");
    assert!(err.path().unwrap().contains("trunc.parquet"));
    assert!(reader.next().is_none(), "fused after an error");
    // A schema mismatch names both files.
    let other = dir.path().join("other.parquet");
    {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Utf8, false)]));
        let mut w =
            ArrowWriter::try_new(File::create(&other).unwrap(), schema.clone(), None).unwrap();
        let col: ArrayRef = Arc::new(StringArray::from(vec!["a"]));
        w.write(&RecordBatch::try_new(schema, vec![col]).unwrap())
            .unwrap();
        w.close().unwrap();
    }
    let results: Vec<_> = Scan::from_urls([paths[0].to_str().unwrap(), other.to_str().unwrap()])
        .unwrap()
        .build()
        .unwrap()
        .collect();
    let err = results
        .iter()
        .find_map(|r| r.as_ref().err().and_then(rayquet::Error::of))
        .expect("mismatch error");
    assert_eq!(err.kind(), ErrorKind::SchemaMismatch);
    let msg = err.to_string();
    assert!(
        msg.contains("other.parquet") && msg.contains("part-000.parquet"),
        "{msg}"
    );
    // Unknown column.
    let e = Scan::new(paths[0].to_str().unwrap())
        .unwrap()
        .columns(["zzz"])
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.to_string().contains("zzz"));
}

/// Many scans at once share the pools; iterating from inside a tokio worker does not panic.
#[test]
fn concurrent_scans_and_tokio_callers() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 2, 3, 3000);
    let (schema, expected) = reference_all(&paths, 8192);
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let d = dir.path().to_path_buf();
            std::thread::spawn(move || {
                Scan::new(d.to_str().unwrap())
                    .unwrap()
                    .build()
                    .unwrap()
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap()
            })
        })
        .collect();
    for t in threads {
        common::assert_same_rows(&schema, &expected, &t.join().unwrap(), "concurrent");
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let d = dir.path().to_path_buf();
    let got = rt.block_on(async move {
        // Directly on a worker thread (blocks it, but must not panic)...
        let direct: Vec<RecordBatch> = Scan::new(d.to_str().unwrap())
            .unwrap()
            .build()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        // ...and the documented way, in spawn_blocking.
        let blocking = tokio::task::spawn_blocking(move || {
            Scan::new(d.to_str().unwrap())
                .unwrap()
                .build()
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap()
        })
        .await
        .unwrap();
        (direct, blocking)
    });
    common::assert_same_rows(&schema, &expected, &got.0, "tokio worker");
    common::assert_same_rows(&schema, &expected, &got.1, "spawn_blocking");
}

/// The reader can move to another thread; a caller's own runtime and pool work; a
/// current-thread runtime is refused with a clear error instead of hanging.
#[test]
fn reader_is_send_and_takes_caller_pools() {
    fn assert_send<T: Send>() {}
    assert_send::<rayquet::ScanReader>();
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 2, 2, 1000);
    let (schema, expected) = reference_all(&paths, 8192);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let pool = Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap(),
    );
    let reader = Scan::new(dir.path().to_str().unwrap())
        .unwrap()
        .io_runtime(rt.handle().clone())
        .decode_pool(pool)
        .build()
        .unwrap();
    let got = std::thread::spawn(move || reader.collect::<Result<Vec<_>, _>>().unwrap())
        .join()
        .unwrap();
    common::assert_same_rows(&schema, &expected, &got, "caller pools");
    let current = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let e = Scan::new(dir.path().to_str().unwrap())
        .unwrap()
        .io_runtime(current.handle().clone())
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
}

/// What belongs to one scan (a row selection, the row index, a pruning hint) is the `Scan`'s,
/// not the reusable options': `with_options` after them keeps them.
#[test]
fn with_options_keeps_what_belongs_to_the_scan() {
    let dir = tempfile::tempdir().unwrap();
    let paths = dataset(dir.path(), 1, 2, 500);
    let file = paths[0].to_str().unwrap().to_string();
    let options = rayquet::ScanOptions::new().batch_size(64);
    let reader = Scan::new(&file)
        .unwrap()
        .select_rows(
            file.clone(),
            RowSelection::from(vec![RowSelector::skip(10), RowSelector::select(5)]),
        )
        .row_index("pos")
        .with_options(options)
        .build()
        .unwrap();
    let schema = reader.schema();
    assert_eq!(schema.fields().last().unwrap().name(), "pos");
    let got: Vec<RecordBatch> = reader.collect::<Result<_, _>>().unwrap();
    let got = common::concat(&schema, &got);
    assert_eq!(got.num_rows(), 5);
    let pos = got
        .column(got.num_columns() - 1)
        .as_any()
        .downcast_ref::<arrow::array::Int64Array>()
        .unwrap();
    assert_eq!(pos.values().to_vec(), vec![10, 11, 12, 13, 14]);
    // A pruning hint and an exact filter on one scan: refused, not one silently dropped.
    let e = Scan::new(&file)
        .unwrap()
        .prune(rayquet::col("l_orderkey").lt(5))
        .filter(rayquet::col("l_orderkey").lt(5))
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), rayquet::ErrorKind::InvalidArgument);
}
