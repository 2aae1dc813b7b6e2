//! The request plan: which GETs a scan makes, counted by a `LatencyStore` (a far store, as any
//! store but object_store's local and in-memory ones is) and by the in-memory store itself
//! (near). Small files on a far store are read whole, large row groups in 8 MiB requests, and
//! the same scan makes the same requests every run; rows are checked against parquet's reader.

use rayquet::{ScanBuilder, ScanReader};
use rayquet_testkit as common;

use std::sync::Arc;
use std::time::Duration;

use arrow::array::{ArrayRef, BinaryArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use bytes::Bytes;
use common::Rng;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStoreExt};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rayquet_testkit::latency::LatencyStore;

/// A file of `row_groups` row groups of `rows` rows: an id, a low-cardinality string and an
/// incompressible blob of `blob` bytes per row (uncompressed, so sizes are what they say).
fn file(seed: u64, row_groups: usize, rows: usize, blob: usize) -> Bytes {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("kind", DataType::Utf8, false),
        Field::new("blob", DataType::Binary, false),
    ]));
    let props = WriterProperties::builder()
        .set_compression(Compression::UNCOMPRESSED)
        .set_max_row_group_row_count(Some(rows))
        .build();
    let mut buf = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, schema.clone(), Some(props))
        .expect("writer");
    let mut rng = Rng(seed);
    for g in 0..row_groups {
        let first = (g * rows) as i64;
        let kinds: Vec<String> = (0..rows).map(|_| format!("k{}", rng.below(20))).collect();
        let blobs: Vec<Vec<u8>> = (0..rows)
            .map(|_| {
                (0..blob / 8)
                    .flat_map(|_| rng.next().to_le_bytes())
                    .collect()
            })
            .collect();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(first..first + rows as i64)),
            Arc::new(StringArray::from_iter_values(kinds.iter())),
            Arc::new(BinaryArray::from_iter_values(blobs.iter())),
        ];
        w.write(&RecordBatch::try_new(schema.clone(), cols).expect("batch"))
            .expect("write");
    }
    w.close().expect("close");
    buf.into()
}

/// `files` put into a fresh in-memory store; their `ObjectMeta`s (sizes known, as a listing
/// gives them).
fn put(files: &[Bytes]) -> (Arc<InMemory>, Vec<ObjectMeta>) {
    let store = Arc::new(InMemory::new());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let metas = files
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let path = Path::from(format!("t/part-{i}.parquet"));
            rt.block_on(async {
                store.put(&path, f.clone().into()).await.expect("put");
                store.head(&path).await.expect("head")
            })
        })
        .collect();
    (store, metas)
}

/// Read every batch of `reader`; its GET count.
fn drain(reader: ScanReader) -> (Vec<RecordBatch>, u64) {
    let metrics = reader.metrics();
    let batches = reader.collect::<Result<Vec<_>, _>>().expect("scan");
    (batches, metrics.snapshot().requests)
}

/// parquet's reader over `files`, projecting `columns`.
fn reference(files: &[Bytes], columns: &[&str]) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    for f in files {
        let b = ParquetRecordBatchReaderBuilder::try_new(f.clone()).expect("reference");
        let mask = ProjectionMask::columns(b.parquet_schema(), columns.iter().copied());
        let r = b.with_projection(mask).build().expect("reference reader");
        out.extend(r.map(|b| b.expect("reference batch")));
    }
    out
}

/// Projected scans of 3 files of ~600 KB: on a far store each file is one GET, read whole
/// (its size came from the listing: no footer round trip first); on the in-memory store
/// (near) only the footer and the projected column are fetched. Both give parquet's rows.
#[test]
fn small_files_on_a_far_store_are_read_whole_in_one_request() {
    let files: Vec<Bytes> = (0..3).map(|s| file(s, 2, 2000, 160)).collect();
    let expected = reference(&files, &["id"]);
    let (inner, metas) = put(&files);
    let far = Arc::new(LatencyStore::new(inner.clone()));
    let scan = rayquet::Scan::from_store(far.clone(), metas.clone())
        .columns(["id"])
        .no_footer_cache();
    let (got, requests) = drain(scan.build().expect("far scan"));
    let schema = expected[0].schema();
    common::assert_same_rows(&schema, &expected, &got, "far store");
    assert_eq!(far.counters().requests, 3, "one GET per file");
    assert_eq!(requests, 3, "the scan's own count");
    assert_eq!(
        far.counters().bytes,
        files.iter().map(|f| f.len() as u64).sum::<u64>()
    );

    let scan = rayquet::Scan::from_store(inner, metas)
        .columns(["id"])
        .no_footer_cache();
    let (got, requests) = drain(scan.build().expect("near scan"));
    common::assert_same_rows(&schema, &expected, &got, "near store");
    assert!(
        requests > 3,
        "a near store reads the footer, then the column: {requests} requests"
    );
}

/// A full scan of 24 small files on a far store asks for all of them in its first round trip:
/// the first file, whose footer gives the scan's schema, and with it the files the driver's
/// lookahead admits at once (here every one: they fit a quarter of the budget). Under a 1 MiB
/// budget, the first and the next `footers_ahead` (16), which always fit; under a limit, which
/// may need only the first file, the first alone. Rows as parquet's reader gives them.
#[test]
fn the_next_files_are_read_with_the_first_on_a_far_store() {
    let files: Vec<Bytes> = (0..24).map(|s| file(s, 1, 500, 64)).collect();
    let expected = reference(&files, &["id", "kind", "blob"]);
    let (inner, metas) = put(&files);
    let far = Arc::new(LatencyStore::new(inner).with_first_byte(Duration::from_millis(100)));
    for (budget, first_wave) in [(None, 24), (Some(1 << 20), 17)] {
        far.reset_counters();
        let mut scan = rayquet::Scan::from_store(far.clone(), metas.clone()).no_footer_cache();
        if let Some(b) = budget {
            scan = scan.memory_budget(b);
        }
        let (got, requests) = drain(scan.build().expect("far scan"));
        common::assert_same_rows(&expected[0].schema(), &expected, &got, "far store");
        assert_eq!(requests, 24, "one GET per file, read whole");
        let c = far.counters();
        assert_eq!(c.first_wave, first_wave, "budget {budget:?}: {c:?}");
    }

    far.reset_counters();
    let scan = rayquet::Scan::from_store(far.clone(), metas)
        .limit(10)
        .no_footer_cache();
    let (got, _) = drain(scan.build().expect("far scan with a limit"));
    assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), 10);
    assert_eq!(far.counters().first_wave, 1, "{:?}", far.counters());
}

/// Requests in flight to an object store: 256 at most by default, so 150 small files are
/// all asked for within a few round trips; `max_requests_in_flight` caps them. Rows as
/// parquet's reader gives them either way.
#[test]
fn many_small_files_on_a_far_store_are_read_by_many_requests_at_once() {
    let files: Vec<Bytes> = (0..150).map(|s| file(s, 1, 50, 8)).collect();
    let expected = reference(&files, &["id", "kind", "blob"]);
    let (inner, metas) = put(&files);
    let far = Arc::new(LatencyStore::new(inner).with_first_byte(Duration::from_millis(100)));
    for (cap, at_least, at_most) in [(None, 100, 256), (Some(48), 2, 48)] {
        far.reset_counters();
        let mut tuning = rayquet::IoTuning::default();
        if let Some(n) = cap {
            tuning = tuning.max_requests_in_flight(n);
        }
        let scan = rayquet::Scan::from_store(far.clone(), metas.clone())
            .io_tuning(tuning)
            .no_footer_cache();
        let (got, requests) = drain(scan.build().expect("far scan"));
        common::assert_same_rows(&expected[0].schema(), &expected, &got, "far store");
        assert_eq!(requests, 150);
        let peak = far.counters().peak_concurrency;
        assert!(
            (at_least..=at_most).contains(&peak),
            "cap {cap:?}: {peak} requests in flight at once"
        );
    }
}

/// A full scan of 2 files of 3 row groups of ~6 MiB on a far store: one footer request per
/// file and one request per row group (8 MiB requests); on the in-memory store (near), 2 MiB
/// requests, at least three a row group.
#[test]
fn large_row_groups_on_a_far_store_are_fetched_in_8_mib_requests() {
    let files: Vec<Bytes> = (0..2).map(|s| file(s, 3, 1000, 6 << 10)).collect();
    let expected = reference(&files, &["id", "kind", "blob"]);
    let (inner, metas) = put(&files);
    let far = Arc::new(LatencyStore::new(inner.clone()));
    let scan = rayquet::Scan::from_store(far.clone(), metas.clone()).no_footer_cache();
    let (got, _) = drain(scan.build().expect("scan"));
    common::assert_same_rows(&expected[0].schema(), &expected, &got, "far store");
    assert_eq!(
        far.counters().requests,
        2 + 2 * 3,
        "footers, then a GET a row group"
    );

    let scan = rayquet::Scan::from_store(inner, metas).no_footer_cache();
    let (got, requests) = drain(scan.build().expect("scan"));
    common::assert_same_rows(&expected[0].schema(), &expected, &got, "near store");
    assert!(requests >= 2 + 2 * 3 * 3, "near: {requests} requests");
}

/// A filtered scan whose matches are on every page (late materialization cannot save bytes)
/// over 3 files of 4 row groups on a store with 3 ms to first byte: run 5 times, it makes the
/// same GETs every time (count and bytes), and returns the rows parquet's reader and arrow's
/// filter kernel give. (Without the footer cache: with it, runs after the first make no
/// footer requests.)
#[test]
fn the_same_filtered_scan_makes_the_same_requests_every_run() {
    let files: Vec<Bytes> = (0..3).map(|s| file(s, 4, 2000, 512)).collect();
    let all = reference(&files, &["id", "kind", "blob"]);
    let expected: Vec<RecordBatch> = all
        .iter()
        .map(|b| {
            let kinds = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
            let keep = arrow::compute::kernels::cmp::eq(kinds, &StringArray::new_scalar("k3"))
                .expect("eq");
            arrow::compute::filter_record_batch(b, &keep).expect("filter")
        })
        .collect();
    let (inner, metas) = put(&files);
    let far = Arc::new(LatencyStore::new(inner).with_first_byte(Duration::from_millis(3)));
    let mut seen = Vec::new();
    for run in 0..5 {
        far.reset_counters();
        let filter = rayquet::Expr::parse_sql("kind = 'k3'").expect("filter");
        let scan = rayquet::Scan::from_store(far.clone(), metas.clone())
            .filter(filter)
            .no_footer_cache();
        let (got, _) = drain(scan.build().expect("scan"));
        common::assert_same_rows(
            &expected[0].schema(),
            &expected,
            &got,
            &format!("run {run}"),
        );
        let c = far.counters();
        seen.push((c.requests, c.bytes));
    }
    assert!(
        seen.iter().all(|s| *s == seen[0]),
        "requests and bytes differ between runs: {seen:?}"
    );
}
