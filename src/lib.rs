//! # rayquet
//!
//! Read Parquet from object storage (S3, GCS, Azure, local disk, memory) into Arrow
//! [`RecordBatch`](arrow::array::RecordBatch)es through a plain blocking [`Iterator`], using
//! every core.
//!
//! A small tokio runtime does only IO, prefetching the byte ranges of upcoming row groups into
//! a bounded buffer; a rayon pool decodes those bytes with parquet's sync reader; the caller
//! pulls batches, in order by default.
//!
//! ```no_run
//! # fn main() -> rayquet::Result<()> {
//! let reader = rayquet::Scan::new("/data/lineitem/")?
//!     .columns(["l_orderkey", "l_extendedprice"])
//!     .build()?;
//! println!("{}", reader.schema());
//! let mut rows = 0;
//! for batch in reader {
//!     rows += batch?.num_rows();
//! }
//! # Ok(()) }
//! ```
//!
//! See `ARCHITECTURE.md` for the pipeline: `source` → `plan` → `fetch` → `decode` → `deliver`,
//! driven by `pipeline`.
#![deny(missing_docs)]

mod assemble;
mod budget;
mod chunk;
mod decode;
mod deliver;
#[cfg(feature = "delta")]
pub mod delta;
mod driver;
mod error;
pub mod expr;
mod fetch;
mod flow;
mod footer;
pub mod gen;
#[cfg(feature = "iceberg")]
pub mod iceberg;
pub mod latency;
mod mapping;
mod materialize;
mod metrics;
mod open;
mod options;
mod panic;
mod plan;
mod prune;
mod retry;
pub mod runtime;
mod scan;
mod select;
mod source;
#[cfg(feature = "sql")]
mod sql;
mod state;
pub mod task;
mod validate;

pub use deliver::{ScanReader, TaggedReader};
pub use error::{Error, ErrorKind, Result};
pub use expr::{col, Expr};
pub use footer::read_metadata;
pub use metrics::{Metrics, MetricsSnapshot};
pub use options::{
    DEFAULT_BATCH_SIZE, DEFAULT_COALESCE_GAP, DEFAULT_DECODE_AHEAD, DEFAULT_FOOTERS_AHEAD,
    DEFAULT_FOOTER_SIZE_HINT, DEFAULT_MEMORY_BUDGET, DEFAULT_PREFETCH_BYTES,
    DEFAULT_REQUESTS_IN_FLIGHT, DEFAULT_REQUEST_SIZE, DEFAULT_SPLIT_BYTES, NARROW_FOOTER_SIZE_HINT,
    WHOLE_FILE_BYTES,
};
pub use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
pub use scan::Scan;
pub use source::{object_store_for, ObjectRef};
pub use task::{ColumnSource, FileTask, TaskBatch};

/// Re-exports of the crates whose types appear in rayquet's API.
pub mod reexports {
    pub use arrow;
    pub use object_store;
    pub use parquet;
}
