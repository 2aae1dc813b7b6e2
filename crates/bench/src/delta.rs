//! Delta workloads of the workload benchmark (issue 11): D1, delta-kernel-rs PR #595's table (100
//! files of about 1 MB) under the latency model, and D2, 8 files of large row groups read
//! locally. The tables are written here with delta-kernel's own transaction API (create the
//! table, then commits of 25 files with their statistics), deterministically, under the data
//! dir.
//!
//! Readers, all through the workload's one `LatencyStore` (the table lives at
//! `rayquet-bench://delta/<dataset path>/table/`, a scheme every reader reaches only through
//! that store, so every request is counted and delayed): the default engine's
//! `Scan::execute` (`delta-default`), the same with `RayquetEngine` (`delta-rayquet-engine`),
//! and rayquet's whole-table `TableScan` (`delta-table-scan`).
//!
//! Without the `delta` feature the workloads exist but their readers fail.

use std::path::Path;

use crate::kinds::{Dataset, ReaderId};
use crate::layout::{files_layout, Layout};
use crate::CliResult;

/// D1's table: 100 files of one row group (about 1 MB each at scale 1).
pub const MANY: Dataset = Dataset {
    name: "delta-100x1",
    files: 100,
    row_groups: 1,
    rows_per_row_group: 24_000,
    compression: rayquet_gen::Compression::Snappy,
    wide: false,
};

/// D2's table: 8 files of 2 row groups of 400k rows (about 36 MB per file at scale 1).
pub const LARGE: Dataset = Dataset {
    name: "delta-8x2",
    files: 8,
    row_groups: 2,
    rows_per_row_group: 400_000,
    compression: rayquet_gen::Compression::Snappy,
    wide: false,
};

/// The readers of the Delta workloads.
pub const READERS: &[ReaderId] = &[
    ReaderId::DeltaDefault,
    ReaderId::DeltaRayquetEngine,
    ReaderId::DeltaTableScan,
];

/// The table's directory inside the dataset's.
const TABLE: &str = "table";

/// Whether `d` is a Delta dataset of this module.
pub fn is_delta(d: &Dataset) -> bool {
    d.name == MANY.name || d.name == LARGE.name
}

/// Write the dataset under `dir` (a fresh directory) unless it is not ours.
pub fn write(d: &Dataset, dir: &Path, scale: f64) -> CliResult<bool> {
    if !is_delta(d) {
        return Ok(false);
    }
    imp::write(d, &dir.join(TABLE), scale)?;
    Ok(true)
}

/// The layout of a Delta dataset (its data files' footers), or `None` for other datasets.
pub fn layout(dir: &Path, columns: Option<&[&str]>) -> CliResult<Option<Layout>> {
    let table = dir.join(TABLE);
    if !table.join("_delta_log").is_dir() {
        return Ok(None);
    }
    Ok(Some(files_layout(&table, columns, None)?))
}

/// Round trips a Delta reader needs before the data files, at the least: list the log, then
/// read its commits (concurrently).
pub fn log_round_trips(d: &Dataset) -> f64 {
    if is_delta(d) {
        2.0
    } else {
        0.0
    }
}

/// Run a Delta reader over the table behind `input.store`; `see` gets every batch.
pub fn run(
    reader: ReaderId,
    input: &crate::kinds::Input,
    see: &mut dyn FnMut(&arrow::array::RecordBatch),
) -> CliResult<()> {
    imp::run(reader, input, see)
}

mod imp {
    use std::num::NonZero;
    use std::sync::Arc;

    use arrow::array::{Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
    use arrow::datatypes::Schema;
    use delta_kernel::committer::FileSystemCommitter;
    use delta_kernel::engine::arrow_conversion::TryFromKernel as _;
    use delta_kernel::engine::arrow_data::EngineDataArrowExt as _;
    use delta_kernel::engine::writer_options;
    use delta_kernel::schema::{DataType, StructField, StructType};
    use delta_kernel::transaction::create_table::create_table;
    use delta_kernel::transaction::CommitResult;
    use delta_kernel::{DeltaResult, Engine, FileMeta, Snapshot};
    use delta_kernel_default_engine::parquet::DataFileMetadata;
    use delta_kernel_default_engine::stats::collect_stats;
    use delta_kernel_default_engine::{build_add_file_metadata, DefaultEngineBuilder};
    use object_store::local::LocalFileSystem;
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;
    use rayquet::{ScanBuilder, ScanOptions};
    use url::Url;

    use super::*;
    use crate::kinds::{Input, BATCH_SIZE};

    /// Files per commit.
    const FILES_PER_COMMIT: usize = 25;

    fn schema() -> CliResult<StructType> {
        Ok(StructType::try_new([
            StructField::nullable("id", DataType::LONG),
            StructField::nullable("a", DataType::LONG),
            StructField::nullable("b", DataType::DOUBLE),
            StructField::nullable("c", DataType::STRING),
            StructField::nullable("d", DataType::INTEGER),
        ])?)
    }

    /// splitmix64.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
    }

    /// `n` rows with ids `first..`: `a` random, `b` in [0, 1), `c` 8..=24 random characters,
    /// `d` in 0..100.
    fn rows(schema: &Arc<Schema>, first: i64, n: usize, rng: &mut Rng) -> CliResult<RecordBatch> {
        const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        let a: Int64Array = (0..n).map(|_| Some(rng.next() as i64)).collect();
        let b: Float64Array = (0..n)
            .map(|_| Some((rng.next() >> 11) as f64 / (1u64 << 53) as f64))
            .collect();
        let c: StringArray = (0..n)
            .map(|_| {
                let len = 8 + (rng.next() % 17) as usize;
                let s: String = (0..len)
                    .map(|_| CHARS[(rng.next() % CHARS.len() as u64) as usize] as char)
                    .collect();
                Some(s)
            })
            .collect();
        let d: Int32Array = (0..n).map(|_| Some((rng.next() % 100) as i32)).collect();
        Ok(RecordBatch::try_new(
            Arc::clone(schema),
            vec![
                Arc::new(Int64Array::from_iter_values(first..first + n as i64)),
                Arc::new(a),
                Arc::new(b),
                Arc::new(c),
                Arc::new(d),
            ],
        )?)
    }

    fn committed<S>(r: DeltaResult<CommitResult<S>>) -> CliResult<()> {
        match r? {
            CommitResult::Committed(_) => Ok(()),
            _ => Err("a bench table commit did not go through".into()),
        }
    }

    /// Create the table at `root` and commit its files, 25 per commit.
    pub fn write(d: &Dataset, root: &Path, scale: f64) -> CliResult<()> {
        std::fs::create_dir_all(root)?;
        let root = root.canonicalize()?;
        let url = Url::from_directory_path(&root).map_err(|_| "bench table path")?;
        let engine = DefaultEngineBuilder::new(Arc::new(LocalFileSystem::new())).build();
        let txn = create_table(url.as_str(), Arc::new(schema()?), "rayquet-bench")
            .build(&engine, Box::new(FileSystemCommitter::new()))?;
        committed(txn.commit(&engine))?;
        let rows_per_group = ((d.rows_per_row_group as f64 * scale) as usize).max(100);
        let rows_per_file = rows_per_group * d.row_groups;
        let props = WriterProperties::builder()
            .set_max_row_group_row_count(Some(rows_per_group))
            .build();
        let mut rng = Rng(11);
        let mut next_id = 0i64;
        let mut written = 0;
        while written < d.files {
            let snapshot = Snapshot::builder_for(url.as_str()).build(&engine)?;
            let mut txn = snapshot
                .transaction(Box::new(FileSystemCommitter::new()), &engine)?
                .with_engine_info("rayquet-bench");
            let ctx = txn.write_state()?.write_context_builder().build()?;
            let physical = Arc::new(Schema::try_from_kernel(
                ctx.physical_data_schema().as_ref(),
            )?);
            for _ in 0..FILES_PER_COMMIT.min(d.files - written) {
                let batch = rows(&physical, next_id, rows_per_file, &mut rng)?;
                next_id += rows_per_file as i64;
                let stats = collect_stats(&batch, ctx.stats_columns(), ctx.physical_data_schema())?;
                let mut bytes = Vec::new();
                let mut w = ArrowWriter::try_new_with_options(
                    &mut bytes,
                    Arc::clone(&physical),
                    writer_options().with_properties(props.clone()),
                )?;
                w.write(&batch)?;
                w.close()?;
                let file_url = ctx
                    .write_dir()
                    .join(&format!("part-{written:05}.parquet"))?;
                let path = file_url.to_file_path().map_err(|_| "bench file path")?;
                std::fs::write(&path, &bytes)?;
                let meta = FileMeta::new(file_url, 0, bytes.len() as u64);
                txn.add_files(build_add_file_metadata(
                    DataFileMetadata::new(meta, stats),
                    &ctx,
                )?);
                written += 1;
            }
            committed(txn.commit(&engine))?;
        }
        Ok(())
    }

    /// The table's URL in the bench's store: the directory holding its first data file.
    fn table_url(input: &Input) -> CliResult<String> {
        let first = input.files.first().ok_or("no data files")?;
        let location = first.location.as_ref();
        let dir = location.rsplit_once('/').map_or("", |(d, _)| d);
        Ok(format!("rayquet-bench://delta/{dir}/"))
    }

    fn execute(
        engine: Arc<dyn Engine>,
        url: &str,
        see: &mut dyn FnMut(&RecordBatch),
    ) -> CliResult<()> {
        let snapshot = Snapshot::builder_for(url).build(engine.as_ref())?;
        let scan = snapshot.scan_builder().build()?;
        for data in scan.execute(engine)? {
            see(&data?.try_into_record_batch()?);
        }
        Ok(())
    }

    pub fn run(
        reader: ReaderId,
        input: &Input,
        see: &mut dyn FnMut(&RecordBatch),
    ) -> CliResult<()> {
        let url = table_url(input)?;
        match reader {
            ReaderId::DeltaDefault => {
                let engine = DefaultEngineBuilder::new(Arc::clone(&input.store))
                    .with_batch_size(NonZero::new(BATCH_SIZE).expect("non-zero"))
                    .build();
                execute(Arc::new(engine), &url, see)
            }
            ReaderId::DeltaRayquetEngine => {
                let engine = rayquet_delta::RayquetEngine::for_table(&url, &options(input, &url)?)?;
                execute(engine, &url, see)
            }
            ReaderId::DeltaTableScan => {
                let options = options(input, &url)?.batch_size(BATCH_SIZE);
                let mut scan = rayquet_delta::TableScan::open(url).with_options(options);
                if let Some(budget) = input.budget {
                    scan = scan.memory_budget(budget);
                }
                for batch in scan.build()? {
                    see(&batch?);
                }
                Ok(())
            }
            other => Err(format!("{} is not a Delta reader", other.name()).into()),
        }
    }

    /// Scan options reading the table at `url` through the bench's store.
    fn options(input: &Input, url: &str) -> CliResult<ScanOptions> {
        let url = rayquet_delta::table_url(url)?;
        let root = format!("{}://{}", url.scheme(), url.authority());
        Ok(ScanOptions::new().object_store(root, Arc::clone(&input.store)))
    }
}
