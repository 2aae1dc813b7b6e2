//! `FooterCache`: scans sharing one cache read a file's footer once and deliver exactly the rows
//! parquet's own reader reads; an object rewritten under the same path (same size too) is read
//! afresh, never from the entry of its old contents; the cache never holds more than its
//! bound.

use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch, RecordBatchReader, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rayquet::{col, FooterCache, MetricsSnapshot, ObjectRef, Scan, ScanBuilder, ScanOptions};
use rayquet_testkit as common;

const ROWS: usize = 3000;
const ROWS_PER_GROUP: usize = 1000;

/// A file of `ROWS` rows whose values depend on `seed`; the same size for every seed (fixed
/// width values, no compression of varying effect: plain, uncompressed).
fn file(seed: i64) -> (SchemaRef, Vec<RecordBatch>, Vec<u8>) {
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    let schema = Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("s", DataType::Utf8, false),
    ]));
    let k = Int64Array::from_iter_values((0..ROWS as i64).map(|i| i * 7 + seed * 100_000));
    let s = StringArray::from_iter_values((0..ROWS as i64).map(|i| format!("{:08}", i + seed)));
    let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(k), Arc::new(s)]).unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
        .set_dictionary_enabled(false)
        .build();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, Arc::clone(&schema), Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    (schema, vec![batch], out)
}

/// Every row of parquet's own sync reader on `bytes`.
fn reference(bytes: &[u8]) -> (SchemaRef, Vec<RecordBatch>) {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::copy_from_slice(bytes))
        .unwrap()
        .build()
        .unwrap();
    let schema = reader.schema();
    (schema, reader.collect::<Result<Vec<_>, _>>().unwrap())
}

/// Read `scan` to the end: batches and the scan's metrics.
fn read(scan: Scan) -> (Vec<RecordBatch>, MetricsSnapshot) {
    let reader = scan.build().unwrap();
    let metrics = reader.metrics();
    let batches = reader.collect::<Result<Vec<_>, _>>().unwrap();
    (batches, metrics.snapshot())
}

/// The object at `path` in `store`, as listing gives it (size and version known).
async fn listed(store: &InMemory, path: &ObjectPath) -> ObjectRef {
    ObjectRef::from(store.head(path).await.unwrap())
}

fn block_on<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(f)
}

#[test]
fn rewritten_object_of_the_same_size_is_never_served_stale() {
    let store = Arc::new(InMemory::new());
    let path = ObjectPath::from("t/data.parquet");
    let (_, _, old) = file(1);
    let (_, _, new) = file(2);
    assert_eq!(
        old.len(),
        new.len(),
        "the two versions must have the same size"
    );
    assert_ne!(reference(&old).1, reference(&new).1);
    let cache = FooterCache::new(16 << 20);
    let options = ScanOptions::new().footer_cache(cache.clone());
    let scan = |object: ObjectRef| {
        let dyn_store: Arc<dyn ObjectStore> = store.clone();
        Scan::from_store(dyn_store, [object]).with_options(options.clone())
    };

    for (round, bytes) in [(0, &old), (1, &new), (2, &old)] {
        block_on(store.put(&path, PutPayload::from(bytes.clone()))).unwrap();
        let object = block_on(listed(&store, &path));
        let (schema, expected) = reference(bytes);
        // First scan of this version: a miss; the second: a hit without any footer bytes.
        for (again, hits) in [(false, 0), (true, 1)] {
            let (batches, m) = read(scan(object.clone()));
            let what = format!("round {round}, again {again}");
            common::assert_same_rows(&schema, &expected, &batches, &what);
            assert_eq!(m.footer_cache_hits, hits, "{what}");
            if again {
                assert_eq!(m.metadata_bytes, 0, "{what}: footer fetched on a hit");
            }
        }
    }
    // One entry per version seen (the old one's version changed when it was put again).
    assert_eq!(cache.len(), 3);
}

#[test]
fn rewritten_local_file_is_read_afresh() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("part.parquet");
    let cache = FooterCache::new(16 << 20);
    let dir_url = dir.path().to_str().unwrap().to_string();
    for (round, seed) in [1, 2, 3].into_iter().enumerate() {
        // Versions of a local file are told apart by inode, size and modification time: past
        // the file system's timestamp granularity (a few ms), a same-size rewrite is seen.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let (_, _, bytes) = file(seed);
        // Replaced as writers do: a new file renamed over the old one.
        let tmp = dir.path().join("part.tmp");
        std::fs::write(&tmp, &bytes).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        let (schema, expected) = reference(&bytes);
        for (again, hits) in [(false, 0), (true, 1)] {
            let scan = Scan::new(&dir_url).unwrap().footer_cache(cache.clone());
            let (batches, m) = read(scan);
            let what = format!("round {round}, again {again}");
            common::assert_same_rows(&schema, &expected, &batches, &what);
            assert_eq!(m.footer_cache_hits, hits, "{what}");
        }
    }
}

#[test]
fn filtered_scans_with_a_page_index_match_parquet_and_brute_force() {
    let store = Arc::new(InMemory::new());
    let mut objects = Vec::new();
    let mut all = Vec::new();
    for seed in 0..4 {
        let path = ObjectPath::from(format!("t/{seed}.parquet"));
        let (_, batches, bytes) = file(seed);
        block_on(store.put(&path, PutPayload::from(bytes))).unwrap();
        objects.push(block_on(listed(&store, &path)));
        all.extend(batches);
    }
    let schema = all[0].schema();
    // Brute force: the rows whose k is below the bound, filtered with arrow's kernel.
    let bound = 100_000 + 700;
    let expected: Vec<RecordBatch> = all
        .iter()
        .map(|b| {
            let k = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            let keep = arrow::compute::kernels::cmp::lt(k, &Int64Array::new_scalar(bound)).unwrap();
            arrow::compute::filter_record_batch(b, &keep).unwrap()
        })
        .collect();
    let cache = FooterCache::new(16 << 20);
    let dyn_store: Arc<dyn ObjectStore> = store.clone();
    // Unfiltered first (footer cached without its page index), then filtered (index loaded and
    // the entry upgraded), then filtered again (a hit with the index: no metadata bytes).
    let (batches, _) =
        read(Scan::from_store(Arc::clone(&dyn_store), objects.clone()).footer_cache(cache.clone()));
    common::assert_same_rows(&schema, &all, &batches, "unfiltered");
    let mut index_bytes = None;
    for round in 0..2 {
        let scan = Scan::from_store(Arc::clone(&dyn_store), objects.clone())
            .footer_cache(cache.clone())
            .filter(col("k").lt(bound));
        let (batches, m) = read(scan);
        common::assert_same_rows(&schema, &expected, &batches, &format!("filtered {round}"));
        assert_eq!(m.footer_cache_hits, 4, "round {round}");
        if round == 0 {
            index_bytes = Some(m.metadata_bytes);
        } else {
            assert_eq!(m.metadata_bytes, 0, "the page index was cached");
        }
        assert!(
            m.row_groups_pruned > 0,
            "round {round}: pruning still works"
        );
    }
    assert!(
        index_bytes.unwrap() > 0,
        "the first filtered scan fetched page indexes"
    );
}

#[test]
fn the_cache_stays_within_its_bound() {
    let store = Arc::new(InMemory::new());
    let dyn_store: Arc<dyn ObjectStore> = store.clone();
    let mut objects = Vec::new();
    for seed in 0..12 {
        let path = ObjectPath::from(format!("b/{seed:02}.parquet"));
        block_on(store.put(&path, PutPayload::from(file(seed).2))).unwrap();
        objects.push(block_on(listed(&store, &path)));
    }
    // Measure one entry, then bound the cache to hold about three.
    let probe = FooterCache::new(usize::MAX);
    read(
        Scan::from_store(Arc::clone(&dyn_store), [objects[0].clone()]).footer_cache(probe.clone()),
    );
    let one = probe.bytes();
    assert!(one > 0 && probe.len() == 1);
    let bound = one * 3 + one / 2;
    let cache = FooterCache::new(bound);
    for (i, object) in objects.iter().enumerate() {
        let (batches, _) = read(
            Scan::from_store(Arc::clone(&dyn_store), [object.clone()]).footer_cache(cache.clone()),
        );
        let (schema, expected) = reference(&file(i as i64).2);
        common::assert_same_rows(&schema, &expected, &batches, &format!("file {i}"));
        assert!(
            cache.bytes() <= bound,
            "file {i}: {} > {bound}",
            cache.bytes()
        );
        assert_eq!(cache.len(), (i + 1).min(3), "file {i}");
    }
    // The most recent three are the ones kept: scanning them again hits, the first misses.
    let hits = |o: &ObjectRef| {
        read(Scan::from_store(Arc::clone(&dyn_store), [o.clone()]).footer_cache(cache.clone()))
            .1
            .footer_cache_hits
    };
    assert_eq!(hits(&objects[11]), 1);
    assert_eq!(hits(&objects[0]), 0);
    assert!(cache.bytes() <= bound);
    // A cache too small for any footer keeps none and still scans correctly.
    let tiny = FooterCache::new(one / 2);
    let (batches, _) = read(
        Scan::from_store(Arc::clone(&dyn_store), [objects[3].clone()]).footer_cache(tiny.clone()),
    );
    let (schema, expected) = reference(&file(3).2);
    common::assert_same_rows(&schema, &expected, &batches, "tiny cache");
    assert!(tiny.is_empty() && tiny.bytes() == 0);
}
