//! Under object-store latency the IO window widens: requests overlap far beyond the initial
//! window. Checked structurally, by the requests in flight a `LatencyStore` observes, never by
//! timing.

use rayquet::ScanBuilder;
use rayquet_testkit as common;

use std::sync::Arc;
use std::time::Duration;

use arrow::array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use bytes::Bytes;
use common::Rng;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStoreExt;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;
use rayquet_testkit::latency::LatencyStore;

const SLOT_BYTES: usize = 4 << 20;

/// A file of `row_groups` row groups of about 4 MiB each: incompressible binary, uncompressed,
/// so fetching dominates and decoding is cheap.
fn file(seed: u64, row_groups: usize) -> Bytes {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("blob", DataType::Binary, false),
    ]));
    let rows = 1024;
    let props = WriterProperties::builder()
        .set_compression(Compression::UNCOMPRESSED)
        .set_dictionary_enabled(false)
        .set_max_row_group_row_count(Some(rows))
        .build();
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, schema.clone(), Some(props)).unwrap();
    let mut rng = Rng(seed);
    for g in 0..row_groups {
        let blobs: Vec<Vec<u8>> = (0..rows)
            .map(|_| {
                (0..SLOT_BYTES / rows / 8)
                    .flat_map(|_| rng.next().to_le_bytes())
                    .collect()
            })
            .collect();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from_iter_values(
                (0..rows as i64).map(|i| i + (g * rows) as i64),
            )),
            Arc::new(BinaryArray::from_iter_values(blobs.iter())),
        ];
        w.write(&RecordBatch::try_new(schema.clone(), cols).unwrap())
            .unwrap();
    }
    w.close().unwrap();
    buf.into()
}

/// Scan 4 files x 4 row groups of 4 MiB through a store with `delay` per GET (no bandwidth
/// limit) and 1 MiB requests; returns the most requests in flight at once, after checking every
/// row arrived in order.
fn max_in_flight(delay: Duration) -> u64 {
    let inner = Arc::new(InMemory::new());
    let store = Arc::new(
        LatencyStore::new(inner.clone())
            .with_first_byte(delay)
            .with_bandwidth(0),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut objects = Vec::new();
    for f in 0..4 {
        let path = Path::from(format!("t/part-{f}.parquet"));
        rt.block_on(inner.put(&path, file(f, 4).into())).unwrap();
        objects.push(path);
    }
    let reader = rayquet::Scan::from_store(store.clone(), objects)
        .io_tuning(rayquet::IoTuning::default().request_size(1 << 20))
        .build()
        .unwrap();
    let mut expected_id = 0i64;
    for batch in reader {
        let batch = batch.unwrap();
        let ids = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        for id in ids.values() {
            assert_eq!(*id, expected_id % 4096, "rows in order");
            expected_id += 1;
        }
    }
    assert_eq!(expected_id, 4 * 4 * 1024);
    store.counters().peak_concurrency
}

/// With 50 ms per GET the decoders wait on IO, so the window grows past its 16 MiB start and
/// requests overlap well beyond it; every row still arrives, in order.
#[test]
fn io_window_widens_under_latency() {
    let slow = max_in_flight(Duration::from_millis(50));
    // The 16 MiB start window in 1 MiB requests, plus a slot, plus the 4 footer reads.
    let start_window = (16 + SLOT_BYTES as u64 / (1 << 20)) + 4;
    assert!(
        slow > start_window,
        "under latency the window should widen: at most {slow} requests in flight"
    );
}
