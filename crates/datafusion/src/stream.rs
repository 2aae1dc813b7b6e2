//! A rayquet scan as a DataFusion stream, without blocking DataFusion's tokio workers.
//!
//! A scan's `next()` blocks, so each partition's reader lives on a thread of its own that
//! waits for batches (rayquet decodes them on its rayon pool; the thread only waits) and sends
//! them through a bounded channel that the partition's stream polls. Nothing starts before the
//! stream is first polled, as DataFusion asks of `ExecutionPlan::execute`: a hash join's
//! probe side, executed with its build side, would otherwise decode ahead while the build
//! side is read, competing with it for the cores and holding its batches until the join
//! gets to them.
//!
//! Invariants: a stream never polled opens no scan and starts no thread; when the stream is
//! dropped (a LIMIT was met, the query was cancelled), the thread's next send fails and it
//! drops the reader, which cancels the scan; a panic on the thread becomes an error on the
//! stream, never a silently shorter result; the thread never waits on anything but the reader
//! and the channel.

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
    let out = Arc::clone(&schema);
    let start = move || spawn(out, name, shape, open, count);
    let stream = futures::stream::unfold(Started::No(start), |state| async move {
        let mut rx = match state {
            Started::No(start) => match start() {
                Ok(rx) => rx,
                Err(e) => return Some((Err(e), Started::Done)),
            },
            Started::Yes(rx) => rx,
            Started::Done => return None,
        };
        rx.recv().await.map(|item| (item, Started::Yes(rx)))
    });
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
}

/// Whether a partition's thread has been started: not before the stream's first poll.
enum Started<F> {
    No(F),
    Yes(tokio::sync::mpsc::Receiver<Result<RecordBatch>>),
    Done,
}

/// Start the thread that opens the scan and sends its batches; the receiving end.
fn spawn(
    out: SchemaRef,
    name: String,
    shape: Shape,
    open: impl FnOnce() -> rayquet::Result<rayquet::ScanReader> + Send + 'static,
    count: impl Fn(usize) + Send + 'static,
) -> Result<tokio::sync::mpsc::Receiver<Result<RecordBatch>>> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<RecordBatch>>(CHANNEL_BATCHES);
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
    Ok(rx)
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

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use datafusion::arrow::datatypes::Schema;
    use futures::StreamExt;

    use super::*;

    /// A stream whose `open` reports that it ran, then fails.
    fn stream_reporting_open() -> (SendableRecordBatchStream, mpsc::Receiver<()>) {
        let (opened, rx) = mpsc::channel();
        let open = move || {
            let _ = opened.send(());
            Err(rayquet::Error::new(rayquet::ErrorKind::Io, "no scan here"))
        };
        let schema = Arc::new(Schema::empty());
        let stream = reader_stream(schema, "test".into(), Shape::AsIs, open, |_| {}).unwrap();
        (stream, rx)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_scan_opens_on_the_first_poll_only() {
        let (mut stream, opened) = stream_reporting_open();
        // Before the first poll: no thread, so nothing opened (an eager start opens within
        // microseconds; the wait only gives it the chance).
        assert_eq!(
            opened.recv_timeout(Duration::from_millis(200)),
            Err(mpsc::RecvTimeoutError::Timeout)
        );
        let first = stream.next().await.expect("an item");
        let err = first.expect_err("open failed").to_string();
        assert!(err.contains("no scan here"), "{err}");
        assert_eq!(opened.try_recv(), Ok(()));
        assert!(stream.next().await.is_none());
    }

    #[test]
    fn a_stream_never_polled_opens_nothing() {
        let (stream, opened) = stream_reporting_open();
        drop(stream);
        // Dropping the stream dropped `open` (and its sender) without calling it.
        assert_eq!(opened.recv(), Err(mpsc::RecvError));
    }
}
