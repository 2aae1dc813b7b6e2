//! What the benchmark's modules share, at the ground of the crate: the readers under test
//! ([`ReaderId`]), what every reader is given ([`Input`]), the batch size, and the datasets
//! ([`Dataset`]). The readers (`readers`), the table formats (`delta`, `iceberg`) and the
//! workloads (`workloads`) build on these; nothing here imports them.

use std::sync::Arc;

use clap::ValueEnum;
use object_store::{ObjectMeta, ObjectStore};
use rayquet_gen::Compression;

/// Rows per batch, for every reader.
pub const BATCH_SIZE: usize = 8192;
/// A reader under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReaderId {
    /// B0: parquet's sync `ParquetRecordBatchReader`, file after file (each file fetched whole
    /// with one GET, then decoded on the caller's thread).
    #[value(name = "b0-sync")]
    Sync,
    /// B1: one `ParquetRecordBatchStream` per file, file after file; IO on its own runtime
    /// (`ParquetObjectReader::with_runtime`), decode on the caller's thread.
    #[value(name = "b1-async-serial")]
    AsyncSerial,
    /// B2: `try_buffer_unordered(16).try_flatten_unordered(16)` over the files' streams on a
    /// multi-thread runtime, polled by the caller.
    #[value(name = "b2-async-concurrent")]
    AsyncConcurrent,
    /// B3: one tokio task per file feeding a bounded channel; tokio does IO and decode.
    #[value(name = "b3-async-spawned")]
    AsyncSpawned,
    /// rayquet, ordered (the default).
    #[value(name = "rayquet")]
    Rayquet,
    /// rayquet, unordered.
    #[value(name = "rayquet-unordered")]
    RayquetUnordered,
    /// rayquet, ordered, with an effectively unlimited memory budget.
    #[value(name = "rayquet-unbounded")]
    RayquetUnbounded,
    /// rayquet, ordered, ignoring the workload's filter (the plain scan filters compare to).
    #[value(name = "rayquet-no-filter")]
    RayquetNoFilter,
    /// rayquet reading each file as a task (`Scan::from_tasks`, columns by name) with every
    /// tenth row deleted (positions 0, 10, 20...).
    #[value(name = "rayquet-tasks")]
    RayquetTasks,
    /// iceberg-rust's `to_arrow()` with data-file concurrency 1 (Iceberg workloads).
    #[value(name = "iceberg-c1")]
    IcebergSerial,
    /// iceberg-rust's `to_arrow()` with its default concurrency (the CPU count).
    #[value(name = "iceberg-default")]
    IcebergConcurrent,
    /// iceberg-rust's `ArrowReader`, one tokio task per planned file (PR #2342's pattern).
    #[value(name = "iceberg-spawned")]
    IcebergSpawned,
    /// rayquet's Iceberg `TableScan`.
    #[value(name = "rayquet-iceberg")]
    RayquetIceberg,
    /// rayquet's Iceberg `TableScan` of the snapshot before the deletes (the same table
    /// without deletes).
    #[value(name = "rayquet-iceberg-no-deletes")]
    RayquetIcebergNoDeletes,
    /// delta-kernel's default engine, `Scan::execute` (Delta workloads).
    #[value(name = "delta-default")]
    DeltaDefault,
    /// delta-kernel's `Scan::execute` with rayquet's `RayquetEngine`.
    #[value(name = "delta-rayquet-engine")]
    DeltaRayquetEngine,
    /// rayquet's whole-table Delta `TableScan`.
    #[value(name = "delta-table-scan")]
    DeltaTableScan,
}

/// What every reader is given.
pub struct Input {
    pub store: Arc<dyn ObjectStore>,
    pub files: Vec<ObjectMeta>,
    pub columns: Option<Vec<String>>,
    /// rayquet's memory budget, if the workload sets one.
    pub budget: Option<usize>,
    pub cores: usize,
    /// The workload's filter (rayquet readers only).
    pub filter: Option<rayquet::Expr>,
    /// Rows of each file (every file of a generated dataset has as many).
    pub rows_per_file: u64,
}

/// A dataset, generated once per scale into `<data-dir>/<name>-s<scale>/` and reused.
#[derive(Debug, Clone, Copy)]
pub struct Dataset {
    pub name: &'static str,
    pub files: usize,
    pub row_groups: usize,
    /// Rows per row group at scale 1.
    pub rows_per_row_group: usize,
    pub compression: Compression,
    /// The 20 generated columns twice over (40 columns), for the wide-table workload.
    pub wide: bool,
}
