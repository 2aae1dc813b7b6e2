//! A rayquet scan as a DataFusion stream, without blocking DataFusion's tokio workers.
//!
//! The partition's stream polls the scan's [`rayquet::ScanStream`]: rayquet decodes on its
//! rayon pool and fetches on its IO runtime, and the DataFusion worker polling the stream only
//! takes the batches that are ready (or registers its waker and returns `Pending`), so no
//! thread waits on the scan's behalf and each batch costs one wake-up. Nothing starts before
//! the stream is first polled, as DataFusion asks of `ExecutionPlan::execute`: a hash join's
//! probe side, executed with its build side, would otherwise decode ahead while the build
//! side is read, competing with it for the cores and holding its batches until the join
//! gets to them.
//!
//! Invariants: a stream never polled opens no scan; dropping the stream (a LIMIT was met, the
//! query was cancelled) drops the scan, which cancels it; a panic while opening or polling the
//! scan becomes an error on the stream, never a silently shorter result; after an error or the
//! end the stream is over; polling never waits.
//!
//! Each batch's buffers (up to [`PREFETCH_BYTES`]) are prefetched into the polling core's L2
//! cache as the batch is handed on ([`prefetch`]): a decode thread wrote them, most often on
//! another core, and DataFusion's operators' first reads of them were what TPC-H Q1 lost
//! against DataFusion's own scan (BENCHMARKS.md, "Q1's remaining gap"). A prefetch is a hint:
//! it reads nothing the operators would not, decodes nothing, and never waits.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use datafusion::arrow::array::{ArrayData, RecordBatch, RecordBatchOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::{DataFusionError, Result};
use datafusion::execution::SendableRecordBatchStream;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use futures::{Stream, StreamExt};

/// What a partition's stream does with each batch before handing it on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Shape {
    /// Send as is.
    AsIs,
    /// Send only the row count (an empty projection: `count(*)`).
    RowsOnly,
}

/// Open the scan with `open()` at the stream's first poll and hand on its batches, as a
/// stream of `schema` (`name` names the scan in errors). `count` is told every batch's rows
/// (for metrics).
pub(crate) fn reader_stream(
    schema: SchemaRef,
    name: String,
    shape: Shape,
    open: impl FnOnce() -> rayquet::Result<rayquet::ScanReader> + Send + Unpin + 'static,
    count: impl Fn(usize) + Send + Unpin + 'static,
) -> Result<SendableRecordBatchStream> {
    let stream = PartitionStream {
        state: Started::No(open),
        out: Arc::clone(&schema),
        name,
        shape,
        count,
    };
    Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
}

/// Whether a partition's scan has been opened: not before the stream's first poll.
enum Started<F> {
    No(F),
    Yes(Box<rayquet::ScanStream>),
    Done,
}

struct PartitionStream<F, C> {
    state: Started<F>,
    out: SchemaRef,
    name: String,
    shape: Shape,
    count: C,
}

impl<F, C> PartitionStream<F, C>
where
    F: FnOnce() -> rayquet::Result<rayquet::ScanReader>,
    C: Fn(usize),
{
    fn poll_inner(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<RecordBatch>>> {
        if matches!(self.state, Started::No(_)) {
            let Started::No(open) = std::mem::replace(&mut self.state, Started::Done) else {
                unreachable!("matched above")
            };
            match open() {
                Ok(reader) => self.state = Started::Yes(Box::new(reader.into_stream())),
                Err(e) => return Poll::Ready(Some(Err(DataFusionError::External(Box::new(e))))),
            }
        }
        let Started::Yes(scan) = &mut self.state else {
            return Poll::Ready(None);
        };
        let item = match scan.poll_next_unpin(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(None) => None,
            Poll::Ready(Some(Ok(b))) => {
                (self.count)(b.num_rows());
                let batch = shape_batch(b, &self.out, self.shape);
                if let Ok(batch) = &batch {
                    prefetch(batch);
                }
                Some(batch)
            }
            Poll::Ready(Some(Err(e))) => Some(Err(DataFusionError::External(Box::new(
                rayquet::Error::from(e),
            )))),
        };
        if !matches!(item, Some(Ok(_))) {
            // The end, or an error: the scan is over (dropping it releases what it holds).
            self.state = Started::Done;
        }
        Poll::Ready(item)
    }
}

impl<F, C> Stream for PartitionStream<F, C>
where
    F: FnOnce() -> rayquet::Result<rayquet::ScanReader> + Unpin,
    C: Fn(usize) + Unpin,
{
    type Item = Result<RecordBatch>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        match catch_unwind(AssertUnwindSafe(|| this.poll_inner(cx))) {
            Ok(poll) => poll,
            Err(p) => {
                this.state = Started::Done;
                let msg = p
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| p.downcast_ref::<&str>().copied())
                    .unwrap_or("unknown panic");
                Poll::Ready(Some(Err(DataFusionError::Execution(format!(
                    "the rayquet scan of {} panicked: {msg}",
                    this.name
                )))))
            }
        }
    }
}

/// How much of a batch [`prefetch`] asks for: within a core's L2 on current x86 server parts
/// (1-2 MiB), so that the lines it brings do not evict each other. A batch of 8192 rows of
/// TPC-H Q1's seven columns is about 0.8 MiB.
const PREFETCH_BYTES: usize = 1 << 20;

/// Ask the polling core to bring `batch`'s buffers into its L2 cache, up to
/// [`PREFETCH_BYTES`], before DataFusion's operators read them. Only on x86-64, whose
/// `prefetcht1` every x86-64 CPU has; elsewhere nothing.
///
/// Measured (BENCHMARKS.md, "Q1's remaining gap"): TPC-H Q1 through the provider about 7%
/// faster and 7% cheaper in CPU, the other queries level.
fn prefetch(batch: &RecordBatch) {
    #[cfg(target_arch = "x86_64")]
    {
        let mut left = PREFETCH_BYTES;
        for column in batch.columns() {
            if left == 0 {
                break; // a wide batch: no column's data taken past the budget
            }
            // SAFETY: `prefetcht1` is a hint: it never faults, whatever the address, and
            // changes no memory; the addresses are inside the batch's own buffers anyway.
            each_line(&column.to_data(), &mut left, &mut |line| unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(line.cast())
            });
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = batch;
}

/// Call `hint` with the address of each 64-byte line of `data`'s buffers (values, offsets,
/// views, string data, validity) and its children's (structs, lists, dictionaries), taking
/// at most `*left` bytes in all and counting them off `*left`.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))] // only the tests call it there
fn each_line(data: &ArrayData, left: &mut usize, hint: &mut impl FnMut(*const u8)) {
    let nulls = data.nulls().map(|n| n.buffer());
    for buffer in data.buffers().iter().chain(nulls) {
        let bytes = &buffer.as_slice()[..buffer.len().min(*left)];
        for line in bytes.chunks(64) {
            hint(line.as_ptr());
        }
        *left -= bytes.len();
    }
    for child in data.child_data() {
        each_line(child, left, hint);
    }
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
        // Before the first poll nothing is opened (an eager start on another thread would
        // open within microseconds; the wait only gives it the chance).
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

    #[tokio::test(flavor = "current_thread")]
    async fn a_panic_opening_the_scan_is_an_error_on_the_stream() {
        let open = || -> rayquet::Result<rayquet::ScanReader> { panic!("open blew up") };
        let schema = Arc::new(Schema::empty());
        let mut stream = reader_stream(schema, "t".into(), Shape::AsIs, open, |_| {}).unwrap();
        let err = stream.next().await.expect("an item").expect_err("a panic");
        let msg = err.to_string();
        assert!(
            msg.contains("open blew up") && msg.contains("scan of t"),
            "{msg}"
        );
        assert!(stream.next().await.is_none(), "over after the error");
    }

    /// Every line `each_line` hints is inside one of the array's buffers (its children's
    /// included), each buffer is covered from its start, and the budget caps the total.
    #[test]
    fn prefetch_walks_every_buffer_within_its_budget() {
        use datafusion::arrow::array::{
            Array, DictionaryArray, Int64Array, ListArray, StringViewArray, StructArray,
        };
        use datafusion::arrow::datatypes::{Field, Int32Type};

        let ints = Int64Array::from_iter((0..5000).map(|i| (i % 7 != 0).then_some(i)));
        let views = StringViewArray::from_iter_values(
            (0..3000).map(|i| format!("a string longer than twelve bytes {i}")),
        );
        let list = ListArray::from_iter_primitive::<Int32Type, _, _>(
            (0..1000).map(|i| Some(vec![Some(i), None, Some(i + 1)])),
        );
        let dict: DictionaryArray<Int32Type> = (0..1000).map(|i| ["x", "y", "z"][i % 3]).collect();
        let nested = StructArray::from(vec![
            (
                Arc::new(Field::new("l", list.data_type().clone(), true)),
                Arc::new(list) as _,
            ),
            (
                Arc::new(Field::new("d", dict.data_type().clone(), true)),
                Arc::new(dict) as _,
            ),
        ]);
        for array in [
            Arc::new(ints) as Arc<dyn Array>,
            Arc::new(views),
            Arc::new(nested),
        ] {
            let data = array.to_data();
            // Every buffer of the tree, as (start, len).
            let mut buffers = Vec::new();
            let mut stack = vec![data.clone()];
            while let Some(d) = stack.pop() {
                let nulls = d.nulls().map(|n| n.buffer().clone());
                for b in d.buffers().iter().cloned().chain(nulls) {
                    buffers.push((b.as_ptr() as usize, b.len()));
                }
                stack.extend(d.child_data().iter().cloned());
            }
            let total: usize = buffers.iter().map(|(_, len)| len).sum();
            assert!(buffers.len() >= 2 && total > 4096, "{buffers:?}");

            for budget in [usize::MAX, total / 2, 100, 0] {
                let mut left = budget;
                let mut lines = Vec::new();
                each_line(&data, &mut left, &mut |p| lines.push(p as usize));
                let taken = budget.min(total);
                assert_eq!(budget - left.min(budget), taken, "budget {budget}");
                assert_eq!(left, budget - taken);
                for &p in &lines {
                    assert!(
                        buffers.iter().any(|&(s, len)| p >= s && p < s + len),
                        "a hint outside the array's buffers"
                    );
                }
                if budget == usize::MAX {
                    // Each buffer from its start, one hint per 64-byte line.
                    for &(s, len) in &buffers {
                        let here = lines.iter().filter(|&&p| p >= s && p < s + len).count();
                        assert_eq!(here, len.div_ceil(64), "buffer of {len} bytes");
                        assert!(len == 0 || lines.contains(&s));
                    }
                }
            }
        }
    }

    #[test]
    fn a_stream_never_polled_opens_nothing() {
        let (stream, opened) = stream_reporting_open();
        drop(stream);
        // Dropping the stream dropped `open` (and its sender) without calling it.
        assert_eq!(opened.recv(), Err(mpsc::RecvError));
    }
}
