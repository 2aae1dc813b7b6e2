//! Micro-benchmarks of rayquet's pieces over in-memory data (no disk, no network), with divan.
//!
//! ```sh
//! cargo bench --bench micro                   # all
//! cargo bench --bench micro -- decode         # only names containing "decode"
//! ```
//!
//! - `decode_row_group`: one row group of 131 072 rows (20 columns, ~8 MiB compressed) through
//!   rayquet with a decode pool of 1 vs 2 threads (the row group is split by columns across
//!   them), next to `parquet_sync_row_group`, parquet's own sync reader over the same bytes.
//! - `scan_in_memory`: a whole small dataset (4 files x 2 row groups x 32 768 rows) from an
//!   `InMemory` store through `Scan::from_store`, ordered and unordered.
//!
//! Each scan gets the same explicitly built IO runtime (2 workers) and a pool of the given
//! size, built once per benchmark, not per iteration.
use rayquet::ScanBuilder;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use divan::counter::ItemsCount;
use divan::Bencher;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use rayquet::Scan;
use rayquet_gen as gen;

fn main() {
    divan::main();
}

const ONE_GROUP_ROWS: usize = 131_072;
const FILES: usize = 4;
const GROUPS: usize = 2;
const GROUP_ROWS: usize = 32_768;

/// The IO runtime every benchmark shares.
fn io() -> tokio::runtime::Handle {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("tokio runtime")
    })
    .handle()
    .clone()
}

fn pool(threads: usize) -> Arc<rayon::ThreadPool> {
    Arc::new(
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("rayon pool"),
    )
}

/// An encoded Parquet file of `groups` x `rows` rows of the generated table.
fn file_bytes(file: usize, groups: usize, rows: usize) -> Bytes {
    let props = gen::writer_properties(gen::Compression::Snappy, rows);
    let mut out = Vec::new();
    let mut w = parquet::arrow::ArrowWriter::try_new(&mut out, gen::schema(), Some(props))
        .expect("ArrowWriter");
    for g in 0..groups {
        w.write(&gen::batch(file, (g * rows) as u64, rows, 0))
            .expect("write");
    }
    w.close().expect("close");
    Bytes::from(out)
}

/// An in-memory store holding `files` and the listing to hand to `Scan::from_store`.
fn store(files: Vec<Bytes>) -> (Arc<dyn ObjectStore>, Vec<ObjectMeta>) {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let metas = io().block_on({
        let store = store.clone();
        async move {
            let mut metas = Vec::new();
            for (i, b) in files.into_iter().enumerate() {
                let p = Path::from(gen::file_name(i));
                store.put(&p, b.into()).await.expect("put");
                metas.push(store.head(&p).await.expect("head"));
            }
            metas
        }
    });
    (store, metas)
}

/// The one-row-group file, encoded once.
fn one_group() -> &'static Bytes {
    static B: OnceLock<Bytes> = OnceLock::new();
    B.get_or_init(|| file_bytes(0, 1, ONE_GROUP_ROWS))
}

/// Scan everything and return the row count (so the work is not optimised away).
fn scan_rows(scan: Scan) -> usize {
    scan.build()
        .expect("build")
        .map(|b| b.expect("batch").num_rows())
        .sum()
}

#[divan::bench(args = [1, 2], sample_count = 20)]
fn decode_row_group(bencher: Bencher, threads: usize) {
    let (store, metas) = store(vec![one_group().clone()]);
    let pool = pool(threads);
    bencher.counter(ItemsCount::new(ONE_GROUP_ROWS)).bench(|| {
        let scan = Scan::from_store(store.clone(), metas.clone())
            .io_runtime(io())
            .decode_pool(pool.clone());
        assert_eq!(scan_rows(scan), ONE_GROUP_ROWS);
    });
}

#[divan::bench(sample_count = 20)]
fn parquet_sync_row_group(bencher: Bencher) {
    let bytes = one_group().clone();
    bencher.counter(ItemsCount::new(ONE_GROUP_ROWS)).bench(|| {
        let rows: usize = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())
            .expect("reader")
            .with_batch_size(rayquet::layer::batch_size(&rayquet::ScanOptions::new()))
            .build()
            .expect("build")
            .map(|b| b.expect("batch").num_rows())
            .sum();
        assert_eq!(rows, ONE_GROUP_ROWS);
    });
}

#[divan::bench(args = [true, false], sample_count = 20)]
fn scan_in_memory(bencher: Bencher, ordered: bool) {
    let files = (0..FILES)
        .map(|f| file_bytes(f, GROUPS, GROUP_ROWS))
        .collect();
    let (store, metas) = store(files);
    let pool = pool(std::thread::available_parallelism().map_or(2, |n| n.get()));
    let total = FILES * GROUPS * GROUP_ROWS;
    bencher.counter(ItemsCount::new(total)).bench(|| {
        let scan = Scan::from_store(store.clone(), metas.clone())
            .io_runtime(io())
            .decode_pool(pool.clone())
            .ordered(ordered);
        assert_eq!(scan_rows(scan), total);
    });
}
