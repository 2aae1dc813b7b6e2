//! # rayquet
//!
//! Read Parquet from object storage (S3, GCS, Azure, local disk, memory) into Arrow
//! [`RecordBatch`](arrow::array::RecordBatch)es through a plain blocking [`Iterator`], using
//! every core.
//!
//! A small tokio runtime does only IO, prefetching the byte ranges of upcoming row groups into
//! a bounded buffer; a rayon pool decodes those bytes (rayquet's own decoders for the common
//! flat columns where a filter keeps scattered rows, parquet's reader for the rest); the caller
//! pulls batches, in order by default.
//!
//! ```no_run
//! # fn main() -> rayquet::Result<()> {
//! use rayquet::prelude::*;
//! let reader = Scan::new("s3://bucket/lineitem/")?      // or a local dir, a file, gs://, az://...
//!     .columns(["l_orderkey", "l_extendedprice"])
//!     .filter(col("l_quantity").lt(5))
//!     .build()?;                                         // lists, reads the first footer
//! println!("{}", reader.schema());
//! let mut rows = 0;
//! for batch in reader {
//!     rows += batch?.num_rows();                         // errors name the file and row group
//! }
//! # Ok(()) }
//! ```
//!
//! Every scan builder (this crate's [`Scan`] of files or [`task`]s, `rayquet-iceberg`'s and
//! `rayquet-delta`'s table scans, `rayquet-datafusion`'s tables) takes the same options with
//! the same names: the methods of [`ScanBuilder`], and a [`ScanOptions`] value that holds them
//! all, built once and reused. A [`ScanReader`] is an arrow `RecordBatchReader`.
//!
//! ## Features
//! - `cloud` (default): S3, GCS and Azure stores (`s3://`, `gs://`, `az://`). Local files and
//!   memory always work.
//! - `sql`: `Expr::parse_sql`, filters written as SQL.
//! - `serde`: tasks and filters serialize (to ship them to other processes).
//! - `fuzzing`: a hidden module with the checks of the fuzz targets (`fuzz/`) and their replay
//!   tests; for rayquet's own testing, it changes nothing a scan does.
//!
//! ## Layout
//! The pipeline, one folder a stage, each depending only on those before it: `input`
//! (inputs → files and stores) → `io` (GETs, fetched bytes) → `validate` (sizes a file
//! claims, checked before parquet allocates) → `footer` (metadata) → `plan` (mapping, pruning,
//! slots) → `decode` (rayon) → `deliver` (the iterators); `drive` runs the async side of a scan
//! over them, `flow` holds the control state they share (budget, events, part flow control),
//! and `scan` builds it all. See `ARCHITECTURE.md` (the map) and `docs/design/` (how each
//! stage works).
#![deny(missing_docs)]

mod builder;
mod cache;
mod decode;
mod deliver;
mod drive;
mod error;
pub mod expr;
mod flow;
mod footer;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
/// Which copies of rayquet's dispatched decoding kernels run (portable, or x86-64-v3 where the
/// CPU has it): for tests and benchmarks that compare both, not a stable API.
#[doc(hidden)]
pub mod __kernels {
    pub use crate::decode::dispatch::{force, kernels, Kernels};
}
mod input;
mod io;
pub mod layer;
mod limits;
mod metrics;
mod options;
mod panic;
mod plan;
mod pool;
mod runtime;
mod scan;
pub mod task;
mod validate;

pub use builder::ScanBuilder;
pub use cache::{FooterCache, Version as FileVersion, DEFAULT_FOOTER_CACHE_BYTES};
pub use deliver::{Canceller, ScanReader, ScanStream, TaggedReader};
pub use error::{Error, ErrorKind, Result};
pub use expr::{col, Expr};
pub use footer::read_metadata;
pub use input::{ObjectRef, Partitioning};
pub use limits::{SharedLimits, SharedLimitsSnapshot};
pub use metrics::{Metrics, MetricsSnapshot};
pub use options::{IoTuning, ScanOptions};
pub use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
pub use scan::Scan;
pub use task::{ColumnSource, FileTask, TaskInfo};

/// Free the idle buffers that rayquet keeps for later scans, and return how many bytes they
/// held.
///
/// Decompressed pages and local file reads go into buffers of one process-wide pool. A buffer
/// returns to the pool when the last page, read or Arrow array using it drops, and the next
/// scan reuses it instead of asking the allocator (and often the kernel) for fresh memory.
/// The pool keeps at most 64 MiB of idle buffers, outside any scan's memory budget. A service
/// that wants that memory back, after a burst of scans say, calls this; buffers still in use
/// are not affected, and later scans fill the pool again.
///
/// ```
/// // Nothing scanned yet in this process: nothing idle.
/// assert_eq!(rayquet::release_idle_buffers(), 0);
/// ```
pub fn release_idle_buffers() -> usize {
    pool::pool().clear()
}

/// What most programs need: `use rayquet::prelude::*;`.
pub mod prelude {
    pub use crate::builder::ScanBuilder;
    pub use crate::expr::{col, Expr};
    pub use crate::options::ScanOptions;
    pub use crate::scan::Scan;
    pub use crate::task::{ColumnSource, FileTask};
}

/// Re-exports of the crates whose types appear in rayquet's API: arrow's batches and schemas,
/// parquet's row selections and metadata, object_store's stores and paths, roaring's bitmaps
/// of deleted rows ([`task::RoaringTreemap`]), so that a user names the versions rayquet was
/// built with.
pub mod reexports {
    pub use arrow;
    pub use object_store;
    pub use parquet;
    pub use roaring;
}
