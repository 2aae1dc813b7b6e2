//! The readers the benchmark compares. Every reader reads the same objects through the same
//! `Arc<dyn ObjectStore>` (a `LatencyStore`), with the same projection and batch size, and
//! reports the rows it saw and when the first batch arrived.

use rayquet::ScanBuilder;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use futures::stream::{self, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::async_reader::{ParquetObjectReader, ParquetRecordBatchStream};
use parquet::arrow::{ParquetRecordBatchStreamBuilder, ProjectionMask};
use parquet::errors::ParquetError;
use parquet::schema::types::SchemaDescriptor;

pub use crate::kinds::{Input, ReaderId, BATCH_SIZE};
use crate::CliResult;

/// Footer hint of the async readers (the same as rayquet's default).
pub const FOOTER_HINT: usize = 512 << 10;
/// Files open at once in the concurrent async reader (B2).
pub const CONCURRENCY: usize = 16;
/// The "unbounded" memory budget.
const UNBOUNDED: usize = 1 << 40;

impl ReaderId {
    /// The reader's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            ReaderId::Sync => "b0-sync",
            ReaderId::AsyncSerial => "b1-async-serial",
            ReaderId::AsyncConcurrent => "b2-async-concurrent",
            ReaderId::AsyncSpawned => "b3-async-spawned",
            ReaderId::Rayquet => "rayquet",
            ReaderId::RayquetUnordered => "rayquet-unordered",
            ReaderId::RayquetUnbounded => "rayquet-unbounded",
            ReaderId::RayquetNoFilter => "rayquet-no-filter",
            ReaderId::RayquetTasks => "rayquet-tasks",
            ReaderId::IcebergSerial => "iceberg-c1",
            ReaderId::IcebergConcurrent => "iceberg-default",
            ReaderId::IcebergSpawned => "iceberg-spawned",
            ReaderId::RayquetIceberg => "rayquet-iceberg",
            ReaderId::RayquetIcebergNoDeletes => "rayquet-iceberg-no-deletes",
            ReaderId::DeltaDefault => "delta-default",
            ReaderId::DeltaRayquetEngine => "delta-rayquet-engine",
            ReaderId::DeltaTableScan => "delta-table-scan",
        }
    }
}

/// What one read saw.
#[derive(Debug, Default)]
pub struct Outcome {
    pub rows: u64,
    pub batches: u64,
    pub first_batch: Option<Duration>,
}

/// Counts batches and notes when the first arrived.
struct Observer {
    start: Instant,
    out: Outcome,
}

impl Observer {
    fn see(&mut self, batch: &RecordBatch) {
        if self.out.first_batch.is_none() {
            self.out.first_batch = Some(self.start.elapsed());
        }
        self.out.rows += batch.num_rows() as u64;
        self.out.batches += 1;
    }
}

/// Read every file with `reader`; the clock starts at `start`.
pub fn run(reader: ReaderId, input: &Input, start: Instant) -> CliResult<Outcome> {
    let mut obs = Observer {
        start,
        out: Outcome::default(),
    };
    match reader {
        ReaderId::Sync => sync(input, &mut obs)?,
        ReaderId::AsyncSerial => async_serial(input, &mut obs)?,
        ReaderId::AsyncConcurrent => async_concurrent(input, &mut obs)?,
        ReaderId::AsyncSpawned => async_spawned(input, &mut obs)?,
        ReaderId::Rayquet => rayquet(input, true, input.budget, true, &mut obs)?,
        ReaderId::RayquetUnordered => rayquet(input, false, input.budget, true, &mut obs)?,
        ReaderId::RayquetUnbounded => rayquet(input, true, Some(UNBOUNDED), true, &mut obs)?,
        ReaderId::RayquetNoFilter => rayquet(input, true, input.budget, false, &mut obs)?,
        ReaderId::RayquetTasks => rayquet_tasks(input, &mut obs)?,
        r @ (ReaderId::IcebergSerial
        | ReaderId::IcebergConcurrent
        | ReaderId::IcebergSpawned
        | ReaderId::RayquetIceberg
        | ReaderId::RayquetIcebergNoDeletes) => super::iceberg::run(r, input, &mut |b| obs.see(b))?,
        r @ (ReaderId::DeltaDefault | ReaderId::DeltaRayquetEngine | ReaderId::DeltaTableScan) => {
            super::delta::run(r, input, &mut |b| obs.see(b))?
        }
    }
    Ok(obs.out)
}

fn mask(schema: &SchemaDescriptor, columns: &Option<Vec<String>>) -> ProjectionMask {
    match columns {
        Some(c) => ProjectionMask::columns(schema, c.iter().map(String::as_str)),
        None => ProjectionMask::all(),
    }
}

fn current_thread() -> CliResult<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

fn multi_thread(threads: usize) -> CliResult<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_all()
        .build()?)
}

/// B0: the same reader as `scan --engine sync`, fed from the store: one GET per file.
fn sync(input: &Input, obs: &mut Observer) -> CliResult<()> {
    let rt = current_thread()?;
    for meta in &input.files {
        let bytes = rt.block_on(async {
            let get = input.store.get(&meta.location).await?;
            get.bytes().await
        })?;
        let builder = ParquetRecordBatchReaderBuilder::try_new(bytes)?;
        let projection = mask(builder.parquet_schema(), &input.columns);
        let reader = builder
            .with_projection(projection)
            .with_batch_size(BATCH_SIZE)
            .build()?;
        for batch in reader {
            obs.see(&batch?);
        }
    }
    Ok(())
}

/// A stream over one file, as the async readers open it: size known, 512 KiB footer hint,
/// optionally with IO spawned on `io`.
async fn open(
    store: Arc<dyn ObjectStore>,
    location: Path,
    size: u64,
    columns: Option<Vec<String>>,
    io: Option<tokio::runtime::Handle>,
) -> Result<ParquetRecordBatchStream<ParquetObjectReader>, ParquetError> {
    let mut reader = ParquetObjectReader::new(store, location)
        .with_file_size(size)
        .with_footer_size_hint(FOOTER_HINT);
    if let Some(io) = io {
        reader = reader.with_runtime(io);
    }
    let builder = ParquetRecordBatchStreamBuilder::new(reader).await?;
    let projection = mask(builder.parquet_schema(), &columns);
    builder
        .with_projection(projection)
        .with_batch_size(BATCH_SIZE)
        .build()
}

/// B1 (delta-kernel's default handler pattern): files one after another, IO on a separate
/// runtime, decode where the stream is polled.
fn async_serial(input: &Input, obs: &mut Observer) -> CliResult<()> {
    let io = multi_thread(1)?;
    let rt = current_thread()?;
    rt.block_on(async {
        for meta in &input.files {
            let mut stream = open(
                input.store.clone(),
                meta.location.clone(),
                meta.size,
                input.columns.clone(),
                Some(io.handle().clone()),
            )
            .await?;
            while let Some(batch) = stream.next().await {
                obs.see(&batch?);
            }
        }
        CliResult::Ok(())
    })?;
    Ok(())
}

/// B2 (iceberg-rust's ArrowReader pattern): open files concurrently, flatten their streams
/// unordered, all polled by the caller on a multi-thread runtime.
fn async_concurrent(input: &Input, obs: &mut Observer) -> CliResult<()> {
    let rt = multi_thread(input.cores)?;
    rt.block_on(async {
        let opens = input.files.iter().map(|meta| {
            Ok::<_, ParquetError>(open(
                input.store.clone(),
                meta.location.clone(),
                meta.size,
                input.columns.clone(),
                None,
            ))
        });
        let mut batches = stream::iter(opens)
            .try_buffer_unordered(CONCURRENCY)
            .try_flatten_unordered(CONCURRENCY);
        while let Some(batch) = batches.next().await {
            obs.see(&batch?);
        }
        CliResult::Ok(())
    })?;
    Ok(())
}

/// B3: a tokio task per file, each decoding its own stream and sending batches into one
/// bounded channel; the caller only receives.
fn async_spawned(input: &Input, obs: &mut Observer) -> CliResult<()> {
    let rt = multi_thread(input.cores)?;
    let (tx, mut rx) = tokio::sync::mpsc::channel(2 * input.cores);
    for meta in &input.files {
        let tx = tx.clone();
        let file = open(
            input.store.clone(),
            meta.location.clone(),
            meta.size,
            input.columns.clone(),
            None,
        );
        rt.spawn(async move {
            match file.await {
                Ok(mut stream) => {
                    while let Some(batch) = stream.next().await {
                        if tx.send(batch).await.is_err() {
                            return;
                        }
                    }
                }
                Err(e) => {
                    let _ = tx.send(Err(e)).await;
                }
            }
        });
    }
    drop(tx);
    while let Some(batch) = rx.blocking_recv() {
        obs.see(&batch?);
    }
    Ok(())
}

/// rayquet over the same store and objects (sizes known).
fn rayquet(
    input: &Input,
    ordered: bool,
    budget: Option<usize>,
    filtered: bool,
    obs: &mut Observer,
) -> CliResult<()> {
    let mut scan = rayquet::Scan::from_store(input.store.clone(), input.files.clone())
        .batch_size(BATCH_SIZE)
        .ordered(ordered);
    if let Some(columns) = &input.columns {
        scan = scan.columns(columns.clone());
    }
    if let Some(budget) = budget {
        scan = scan.memory_budget(budget);
    }
    if let (Some(filter), true) = (&input.filter, filtered) {
        scan = scan.filter(filter.clone());
    }
    for batch in scan.build()? {
        obs.see(&batch?);
    }
    Ok(())
}

/// Positions `rayquet-tasks` deletes in a file of `rows` rows: every tenth.
pub fn deleted_positions(rows: u64) -> impl Iterator<Item = u64> {
    (0..rows).step_by(10)
}

/// rayquet over the same objects as tasks, a tenth of each file's rows deleted.
fn rayquet_tasks(input: &Input, obs: &mut Observer) -> CliResult<()> {
    let mut schema = rayquet_gen::schema();
    if let Some(columns) = &input.columns {
        let idx = columns
            .iter()
            .map(|c| schema.index_of(c))
            .collect::<Result<Vec<_>, _>>()?;
        schema = Arc::new(schema.project(&idx)?);
    }
    let deleted: rayquet::task::RoaringTreemap = deleted_positions(input.rows_per_file).collect();
    let tasks: Vec<rayquet::FileTask> = input
        .files
        .iter()
        .map(|m| {
            rayquet::FileTask::in_store(input.store.clone(), m.location.clone())
                .size(m.size)
                .deletes(deleted.clone())
        })
        .collect();
    let mut scan = rayquet::Scan::from_tasks(schema, tasks).batch_size(BATCH_SIZE);
    if let Some(budget) = input.budget {
        scan = scan.memory_budget(budget);
    }
    for batch in scan.build()? {
        obs.see(&batch?);
    }
    Ok(())
}
