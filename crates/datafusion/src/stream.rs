//! A rayquet scan as a DataFusion stream, without blocking DataFusion's tokio workers.
//!
//! A scan's `next()` blocks, so each partition's reader lives on a thread of its own that
//! waits for batches (rayquet decodes them on its rayon pool; the thread only waits) and sends
//! them through a bounded channel that the partition's stream polls.
//!
//! Invariants: when the stream is dropped (a LIMIT was met, the query was cancelled), the
//! thread's next send fails and it drops the reader, which cancels the scan; a panic on the
//! thread becomes an error on the stream, never a silently shorter result; the thread never
//! waits on anything but the reader and the channel.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;

/// Batches of a partition waiting for its stream.
const CHANNEL_BATCHES: usize = 2;

/// What a partition's thread does with each batch before sending it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// Send as is.
    AsIs,
    /// Send only the row count (an empty projection: `count(*)`).
    RowsOnly,
}

/// Run `open()` and iterate the reader it gives on a thread named `name`, as a stream of
/// `schema`. `count` is told every batch's rows (for metrics).
pub(crate) fn reader_stream(
    schema: SchemaRef,
    name: String,
    shape: Shape,
    open: impl FnOnce() -> rayquet::Result<rayquet::ScanReader> + Send + 'static,
    count: impl Fn(usize) + Send + 'static,
) -> Result<SendableRecordBatchStream> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(CHANNEL_BATCHES);
    let out = Arc::clone(&schema);
    std::thread::Builder::new()
        .name(name)
        .spawn(move || {
            let on_panic = tx.clone();
            let run = std::panic::AssertUnwindSafe(move || {
                let reader = match open() {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = tx.blocking_send(Err(DataFusionError::External(Box::new(e))));
                        return;
                    }
                };
                for batch in reader {
                    let item = match batch {
                        Ok(b) => {
                            count(b.num_rows());
                            shape_batch(b, &out, shape)
                        }
                        Err(e) => Err(DataFusionError::External(Box::new(rayquet::Error::from(e)))),
                    };
                    let failed = item.is_err();
                    // The receiver is gone: stop (dropping the reader cancels the scan).
                    if tx.blocking_send(item).is_err() || failed {
                        return;
                    }
                }
            });
            if let Err(p) = std::panic::catch_unwind(run) {
                let msg = p
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| p.downcast_ref::<&str>().copied())
                    .unwrap_or("unknown panic");
                let _ = on_panic.blocking_send(Err(DataFusionError::Execution(format!(
                    "the rayquet scan thread panicked: {msg}"
                ))));
            }
        })
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
}

fn shape_batch(batch: RecordBatch, schema: &SchemaRef, shape: Shape) -> Result<RecordBatch> {
    match shape {
        Shape::AsIs if batch.schema_ref() == schema => Ok(batch),
        // Same columns, other field metadata or (never for rayquet's own schemas) types:
        // deliver exactly the schema DataFusion planned with.
        Shape::AsIs => {
            let columns = batch
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(c, f)| match c.data_type() == f.data_type() {
                    true => Ok(Arc::clone(c)),
                    false => datafusion::arrow::compute::cast(c, f.data_type()),
                })
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            Ok(RecordBatch::try_new_with_options(
                Arc::clone(schema),
                columns,
                &options,
            )?)
        }
        Shape::RowsOnly => {
            let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
            Ok(RecordBatch::try_new_with_options(
                Arc::clone(schema),
                vec![],
                &options,
            )?)
        }
    }
}
