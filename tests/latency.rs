//! Under object-store latency the IO window widens: requests overlap far beyond the initial
//! window. Checked structurally, by the bytes in flight a wrapper store observes, never by
//! timing.

mod common;

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{ArrayRef, BinaryArray, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use async_trait::async_trait;
use bytes::Bytes;
use common::Rng;
use futures::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

/// Delays every GET and records the largest number of bytes requested at once.
#[derive(Debug)]
struct SlowStore {
    inner: InMemory,
    delay: Duration,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
}

impl std::fmt::Display for SlowStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SlowStore({:?})", self.delay)
    }
}

struct InFlight<'a>(&'a AtomicU64, u64);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(self.1, SeqCst);
    }
}

#[async_trait]
impl ObjectStore for SlowStore {
    async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
        self.inner.put_opts(l, p, o).await
    }
    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(l, o).await
    }
    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let len = match &options.range {
            Some(object_store::GetRange::Bounded(r)) => r.end - r.start,
            _ => 0,
        };
        let now = self.in_flight.fetch_add(len, SeqCst) + len;
        self.max_in_flight.fetch_max(now, SeqCst);
        let _guard = InFlight(&self.in_flight, len);
        tokio::time::sleep(self.delay).await;
        self.inner.get_opts(location, options).await
    }
    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let mut out = Vec::with_capacity(ranges.len());
        for r in ranges {
            out.push(self.get_range(location, r.clone()).await?);
        }
        Ok(out)
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }
    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &Path, to: &Path, o: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, o).await
    }
    async fn rename_opts(&self, from: &Path, to: &Path, o: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, o).await
    }
}

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

/// Scan 4 files x 4 row groups of 4 MiB through a store with `delay` per GET; returns the
/// largest number of bytes in flight, after checking every row arrived in order.
fn max_in_flight(delay: Duration) -> u64 {
    let store = Arc::new(SlowStore {
        inner: InMemory::new(),
        delay,
        in_flight: AtomicU64::new(0),
        max_in_flight: AtomicU64::new(0),
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut objects = Vec::new();
    for f in 0..4 {
        let path = Path::from(format!("t/part-{f}.parquet"));
        rt.block_on(store.inner.put(&path, file(f, 4).into()))
            .unwrap();
        objects.push(path);
    }
    let reader = rayquet::Scan::from_store(store.clone(), objects)
        .request_size(1 << 20)
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
    store.max_in_flight.load(SeqCst)
}

/// With 50 ms per GET the decoders wait on IO, so the window grows past its 16 MiB start and
/// requests overlap well beyond it; every row still arrives, in order.
#[test]
fn io_window_widens_under_latency() {
    let slow = max_in_flight(Duration::from_millis(50));
    let start_window = 16u64 << 20;
    assert!(
        slow > start_window + SLOT_BYTES as u64,
        "under latency the window should widen: max {} MiB in flight",
        slow >> 20
    );
}
