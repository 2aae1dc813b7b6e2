//! Deliver, for async callers: the same batches as [`ScanReader`], as a `futures::Stream`
//! that never blocks the task polling it.
//!
//! Polling does what `next()` does, except wait: it takes the events already on the channel,
//! hands out a batch if one is ready, and otherwise registers the task's waker (which every
//! event and a cancellation wake) and returns `Pending`. Nothing is decoded on the polling
//! task: decoding stays on the rayon pool, fetching on the IO runtime.
//!
//! Invariants: the same batches, order, errors and limit as iterating the reader (one state
//! serves both); dropping the stream cancels the scan; a scan that stops making progress
//! ends in an error, as for `next()`, rather than a stream pending forever.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;

use crate::deliver::reader::{Canceller, ScanReader};
use crate::metrics::Metrics;

/// A running scan as an async [`Stream`](futures::Stream) of Arrow record batches, for a
/// caller on an async runtime: polling it never blocks (batches are decoded on rayquet's
/// pool, fetched on its IO runtime; the stream only hands them over). Made by
/// [`ScanReader::into_stream`]; the same batches, order, errors and limit as iterating the
/// reader. Dropping it cancels the scan.
///
/// ```no_run
/// # async fn run() -> rayquet::Result<()> {
/// use futures::StreamExt;
/// use rayquet::prelude::*;
/// // `build()` of a task scan returns at once; a plain scan's reads the first footer.
/// let mut stream = Scan::new("/data/lineitem/")?.build()?.into_stream();
/// while let Some(batch) = stream.next().await {
///     println!("{} rows", batch?.num_rows());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ScanStream {
    reader: ScanReader,
}

impl ScanStream {
    pub(crate) fn new(reader: ScanReader) -> Self {
        ScanStream { reader }
    }

    /// The Arrow schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.reader.schema()
    }

    /// The scan's live counters; they stay readable after the stream is dropped.
    pub fn metrics(&self) -> Arc<Metrics> {
        self.reader.metrics()
    }

    /// A handle that cancels this scan from anywhere ([`Canceller`]); the stream then yields
    /// a `Cancelled` error.
    pub fn canceller(&self) -> Canceller {
        self.reader.canceller()
    }
}

impl futures::Stream for ScanStream {
    type Item = Result<RecordBatch, ArrowError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.reader
            .poll_item(cx)
            .map(|item| item.map(|r| r.map(|(_, b)| b).map_err(ArrowError::from)))
    }
}

impl ScanReader {
    /// The same scan as an async stream ([`ScanStream`]), for a caller that polls rather
    /// than blocks: on a tokio worker, in a `futures` executor.
    pub fn into_stream(self) -> ScanStream {
        ScanStream::new(self)
    }
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::sync::atomic::Ordering::Relaxed;
    use std::sync::{Arc, Condvar, Mutex};
    use std::task::{Context, Poll};
    use std::time::Duration;

    use arrow::array::{Int64Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};
    use futures::Stream;
    use parquet::arrow::ArrowWriter;
    use parquet::file::properties::WriterProperties;

    use crate::builder::ScanBuilder;
    use crate::options::IoTuning;
    use crate::scan::Scan;

    /// With the stall check's timer turned off, every batch still comes: the pipeline's sends
    /// wake the stream (a lost wake-up would leave it pending, and the timeout fails).
    #[test]
    fn sends_wake_the_stream_without_the_timer() {
        let dir = tempfile::tempdir().unwrap();
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
        let mut expected = 0i64;
        for f in 0..3 {
            let path = dir.path().join(format!("f{f}.parquet"));
            let props = WriterProperties::builder()
                .set_max_row_group_row_count(Some(1000))
                .build();
            let file = std::fs::File::create(path).unwrap();
            let mut w = ArrowWriter::try_new(file, Arc::clone(&schema), Some(props)).unwrap();
            let ids = Int64Array::from_iter_values(f * 5000..(f + 1) * 5000);
            expected += (f * 5000..(f + 1) * 5000).sum::<i64>();
            let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(ids)]).unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
        }
        let reader = Scan::new(dir.path().to_str().unwrap())
            .unwrap()
            .batch_size(300)
            .memory_budget(32 << 10)
            .io_tuning(IoTuning::default().decode_ahead(1))
            .build()
            .unwrap();
        // "A timer is set": none will be.
        reader.stall_timer.store(true, Relaxed);
        let mut stream = reader.into_stream();
        // Polled by hand, so that nothing but the scan holds the waker.
        let woken = Arc::new(Woken::default());
        let waker = futures::task::waker(Arc::clone(&woken));
        let mut cx = Context::from_waker(&waker);
        let (mut sum, mut batches) = (0i64, 0);
        loop {
            match Pin::new(&mut stream).poll_next(&mut cx) {
                Poll::Ready(None) => break,
                Poll::Ready(Some(batch)) => {
                    let batch = batch.unwrap();
                    let ids = batch.column(0).as_any().downcast_ref::<Int64Array>();
                    sum += ids.unwrap().values().iter().sum::<i64>();
                    batches += 1;
                }
                Poll::Pending => assert!(
                    woken.wait(Duration::from_secs(10)),
                    "woken by the pipeline, not left pending"
                ),
            }
        }
        assert_eq!(sum, expected);
        assert!(batches >= 50, "{batches} batches");
    }

    /// A waker that records being woken, and a wait for it.
    #[derive(Default)]
    struct Woken {
        flag: Mutex<bool>,
        cv: Condvar,
    }

    impl futures::task::ArcWake for Woken {
        fn wake_by_ref(arc_self: &Arc<Self>) {
            *arc_self.flag.lock().unwrap() = true;
            arc_self.cv.notify_all();
        }
    }

    impl Woken {
        /// Wait until woken (and reset), at most `limit`; whether it was woken.
        fn wait(&self, limit: Duration) -> bool {
            let flag = self.flag.lock().unwrap();
            let (mut flag, _) = self.cv.wait_timeout_while(flag, limit, |w| !*w).unwrap();
            std::mem::replace(&mut *flag, false)
        }
    }
}
