//! The tagged reader: the same batches as [`ScanReader`], and which task each came from.
//!
//! Invariant: [`TaggedReader::task`] always describes the batch `next()` returned last.

use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;

use crate::deliver::reader::ScanReader;
use crate::metrics::Metrics;
use crate::task::TaskInfo;

/// A [`ScanReader`] that also tells which task each batch came from. Made by
/// [`ScanReader::tagged`]; an arrow [`RecordBatchReader`] like it.
///
/// ```no_run
/// # fn main() -> rayquet::Result<()> {
/// # let (schema, tasks): (rayquet::reexports::arrow::datatypes::SchemaRef, Vec<rayquet::FileTask>) = todo!();
/// let mut reader = rayquet::Scan::from_tasks(schema, tasks).build()?.tagged();
/// while let Some(batch) = reader.next() {
///     let batch = batch?;
///     let task = reader.task().expect("set by next()");
///     println!("task {} ({:?}): {} rows", task.index, task.tag, batch.num_rows());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TaggedReader {
    reader: ScanReader,
    task: Option<Arc<TaskInfo>>,
}

impl ScanReader {
    /// The same batches, telling which task each came from ([`TaggedReader::task`]): its
    /// position in the scan's input (for plain scans, the file's position) and its tag.
    pub fn tagged(self) -> TaggedReader {
        TaggedReader {
            reader: self,
            task: None,
        }
    }
}

impl TaggedReader {
    /// The task of the batch `next()` returned last (`None` before the first batch).
    pub fn task(&self) -> Option<&TaskInfo> {
        self.task.as_deref()
    }

    /// The scan's live counters.
    pub fn metrics(&self) -> Arc<Metrics> {
        self.reader.metrics()
    }
}

impl Iterator for TaggedReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.reader.next_item()?;
        Some(match item {
            Ok((task, batch)) => {
                self.task = Some(task);
                Ok(batch)
            }
            Err(e) => Err(e.into()),
        })
    }
}

impl RecordBatchReader for TaggedReader {
    fn schema(&self) -> SchemaRef {
        self.reader.schema()
    }
}
