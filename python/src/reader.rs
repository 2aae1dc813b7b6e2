//! `rayquet.Reader`: a running scan, read from Python by iteration, `read_all()` or
//! `__arrow_c_stream__`.
//!
//! A `ScanReader`'s `next()` blocks until a batch is ready, and cannot be interrupted. So the
//! first read starts a helper thread that owns the scan and pulls its batches one at a time,
//! handing each over a rendezvous channel (it holds at most the one batch it offers); the
//! Python thread waits on that channel in slices of [`SLICE`] with the GIL released, and
//! between slices checks for signals. A KeyboardInterrupt (or `close()`) cancels the scan
//! through its `rayquet::Canceller` (the helper's `next()` returns at once, however selective
//! the filter) and drops the channel: the helper thread's hand-over fails and it drops the
//! `ScanReader`. A reader garbage-collected mid-scan does the same, unless a stream it exported
//! by `__arrow_c_stream__` is still alive, taken or not: then the stream owns the scan (the last
//! of the reader and its streams to go drops it, which cancels it).
//!
//! `read_all()` on a reader nothing was read from starts a collector thread instead, which
//! drains the whole scan and hands the batches over at once (one hand-over rather than one per
//! batch); the Python thread waits and checks for signals the same way.
//!
//! Several Python threads may share a reader: each batch goes to exactly one of them, in
//! order of arrival (while `read_all()` collects, the others wait and then find the reader
//! exhausted); a thread waiting for the reader's lock waits with the GIL released too.
//!
//! `__arrow_c_stream__` exports a stream that hands the scan itself to the consumer (pyarrow,
//! polars, duckdb) when it first asks for a batch; the consumer then pulls batches on its own
//! threads, and the reader is consumed.

use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::thread;
use std::time::{Duration, Instant};

use arrow::array::{RecordBatch, RecordBatchReader};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use crossbeam_channel::{Receiver, RecvTimeoutError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyDict};
use rayquet::{Canceller, ErrorKind, Metrics, ScanReader};

use crate::errors::{arrow_to_py, new_err, to_py};
use crate::export::{
    pyarrow_batch, pyarrow_schema, pyarrow_table, stream_capsule, stream_of, type_info,
    BoxedReader, StreamExport, TypeInfo,
};
use crate::SLICE;

/// What a helper thread sends: a batch or the error that ended the scan.
type Item = Result<RecordBatch, ArrowError>;

/// Where a reader is.
enum State {
    /// Built, nothing read yet.
    Ready(Box<ScanReader>),
    /// A helper thread owns the scan and offers its batches here.
    Running(Receiver<Item>),
    /// `read_all()` on a reader nothing was read from: a collector thread reads the whole scan
    /// and hands over every batch at once. Other readers of the reader wait for it to end.
    Collecting,
    /// Every batch was read, or the scan's error was raised.
    Finished,
    /// Handed to `__arrow_c_stream__`.
    Exported,
    /// Closed (`close()`, KeyboardInterrupt): why.
    Closed(&'static str),
}

/// One step of waiting for a batch.
enum Step {
    Batch(RecordBatch),
    End,
    Failed(ArrowError),
    /// Nothing within the slice: check for signals and wait again.
    Pending,
    /// The reader cannot be read: an error to raise.
    Unreadable(&'static str, bool),
}

/// A scan being read: iterate it for `pyarrow.RecordBatch`es, `read_all()` for a
/// `pyarrow.Table`, or pass it to anything that takes an Arrow stream (`__arrow_c_stream__`).
#[pyclass(module = "rayquet._rayquet", name = "Reader", frozen)]
pub(crate) struct Reader {
    schema: SchemaRef,
    metrics: Arc<Metrics>,
    /// Stops the scan even while the helper thread is blocked in its `next()`.
    canceller: Canceller,
    /// Shared with the streams `__arrow_c_stream__` exported, which take the scan from it
    /// when their consumer first asks for a batch.
    state: Arc<Mutex<State>>,
}

impl Reader {
    /// A reader of `scan`.
    pub(crate) fn new(scan: ScanReader) -> Self {
        Reader {
            schema: scan.schema(),
            metrics: scan.metrics(),
            canceller: scan.canceller(),
            state: Arc::new(Mutex::new(State::Ready(Box::new(scan)))),
        }
    }

    /// The state, waiting at most `timeout` for another thread to let go of it. Called with the
    /// GIL released.
    fn lock_within(&self, timeout: Duration) -> Option<MutexGuard<'_, State>> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.state.try_lock() {
                Ok(g) => return Some(g),
                Err(TryLockError::Poisoned(p)) => return Some(p.into_inner()),
                Err(TryLockError::WouldBlock) if Instant::now() >= deadline => return None,
                Err(TryLockError::WouldBlock) => thread::sleep(Duration::from_micros(200)),
            }
        }
    }

    /// The state, however long another thread holds it (at most about one slice). Called with
    /// the GIL released.
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Wait at most about `slice` for the next batch. Called with the GIL released.
    fn step(&self, slice: Duration) -> Step {
        let start = Instant::now();
        let Some(mut state) = self.lock_within(slice) else {
            return Step::Pending;
        };
        if matches!(&*state, State::Ready(_)) {
            let State::Ready(scan) = std::mem::replace(&mut *state, State::Finished) else {
                unreachable!()
            };
            match start_helper(*scan) {
                Ok(rx) => *state = State::Running(rx),
                Err(e) => return Step::Failed(ArrowError::from(e)),
            }
        }
        let rx = match &*state {
            State::Running(rx) => rx,
            State::Finished => return Step::End,
            State::Exported => {
                return Step::Unreadable("the reader was consumed by __arrow_c_stream__", false)
            }
            State::Closed(why) => return Step::Unreadable(why, true),
            // read_all() on another thread takes every batch: wait for it to end.
            State::Collecting => return Step::Pending,
            State::Ready(_) => unreachable!(),
        };
        let left = slice
            .saturating_sub(start.elapsed())
            .max(Duration::from_millis(1));
        match rx.recv_timeout(left) {
            Ok(Ok(batch)) => Step::Batch(batch),
            Ok(Err(e)) => {
                *state = State::Finished;
                Step::Failed(e)
            }
            Err(RecvTimeoutError::Timeout) => Step::Pending,
            Err(RecvTimeoutError::Disconnected) => {
                *state = State::Finished;
                Step::End
            }
        }
    }

    /// Stop the scan (it is cancelled as the helper thread lets go of it); later reads raise
    /// `CancelledError` saying `why`. Called with the GIL released.
    fn shut(&self, why: &'static str) {
        let old = {
            let mut state = self.lock();
            match &*state {
                State::Finished | State::Exported | State::Closed(_) => return,
                _ => std::mem::replace(&mut *state, State::Closed(why)),
            }
        };
        // The helper thread may be inside the scan's `next()`, waiting for a batch that a
        // selective filter may take long to find: cancelling makes it return at once.
        self.canceller.cancel();
        drop(old);
    }

    /// `read_all()` of a reader nothing was read from yet: a collector thread drains the scan
    /// into one `Vec` and hands it over once, rather than a hand-over between two threads (and
    /// the GIL taken back) per batch; the Python thread waits in slices, checking for signals.
    /// `None` when the scan had already started (the per-batch path reads the rest).
    fn collect(&self, py: Python<'_>) -> PyResult<Option<Vec<RecordBatch>>> {
        let started = py.detach(|| {
            let mut state = self.lock();
            if !matches!(&*state, State::Ready(_)) {
                return None;
            }
            let State::Ready(scan) = std::mem::replace(&mut *state, State::Collecting) else {
                unreachable!()
            };
            Some(start_collector(*scan).inspect_err(|_| *state = State::Finished))
        });
        let rx = match started {
            None => return Ok(None),
            Some(Ok(rx)) => rx,
            Some(Err(e)) => return Err(to_py(&e)),
        };
        let finish = |state: &mut State| {
            if matches!(state, State::Collecting) {
                *state = State::Finished;
            }
        };
        loop {
            match py.detach(|| rx.recv_timeout(SLICE)) {
                Ok(got) => {
                    py.detach(|| finish(&mut self.lock()));
                    return match got {
                        Ok(batches) => Ok(Some(batches)),
                        // close() from another thread cancels the scan: say so, as next() does.
                        Err(e) => match py.detach(|| match &*self.lock() {
                            State::Closed(why) => Some(*why),
                            _ => None,
                        }) {
                            Some(why) => Err(new_err(ErrorKind::Cancelled, why)),
                            None => Err(arrow_to_py(e)),
                        },
                    };
                }
                Err(RecvTimeoutError::Timeout) => {
                    if let Err(e) = py.check_signals() {
                        py.detach(|| self.shut("the scan was cancelled by an interrupt"));
                        return Err(e);
                    }
                }
                Err(RecvTimeoutError::Disconnected) => {
                    py.detach(|| finish(&mut self.lock()));
                    return Err(new_err(
                        ErrorKind::Panic,
                        "the thread reading the scan stopped without its batches",
                    ));
                }
            }
        }
    }

    /// The next batch, `None` at the end; waits with the GIL released, in slices, checking for
    /// signals between them. A KeyboardInterrupt cancels the scan and is raised.
    fn next_batch(&self, py: Python<'_>) -> PyResult<Option<RecordBatch>> {
        loop {
            match py.detach(|| self.step(SLICE)) {
                Step::Batch(b) => return Ok(Some(b)),
                Step::End => return Ok(None),
                Step::Failed(e) => return Err(arrow_to_py(e)),
                Step::Unreadable(why, true) => return Err(new_err(ErrorKind::Cancelled, why)),
                Step::Unreadable(why, false) => return Err(PyValueError::new_err(why)),
                Step::Pending => {
                    if let Err(e) = py.check_signals() {
                        py.detach(|| self.shut("the scan was cancelled by an interrupt"));
                        return Err(e);
                    }
                }
            }
        }
    }
}

/// A reader dropped while its scan runs cancels the scan, unless a stream it exported by
/// `__arrow_c_stream__` is still alive (`pa.RecordBatchReader.from_stream(rayquet.scan(..))`
/// lets go of the reader before the first batch is asked for): that stream owns the scan from
/// then on, and the last of them to go drops it, which cancels it.
impl Drop for Reader {
    fn drop(&mut self) {
        if Arc::strong_count(&self.state) > 1 {
            return;
        }
        if let Ok(state) = self.state.try_lock() {
            if matches!(
                &*state,
                State::Ready(_) | State::Running(_) | State::Collecting
            ) {
                self.canceller.cancel();
            }
        }
    }
}

/// `state`, however long another thread holds it (at most about one slice; never a thread
/// that holds the GIL).
fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

/// Start the helper thread that owns `scan` and offers its batches, one at a time.
fn start_helper(scan: ScanReader) -> rayquet::Result<Receiver<Item>> {
    let (tx, rx) = crossbeam_channel::bounded::<Item>(0);
    thread::Builder::new()
        .name("rayquet-py-reader".into())
        .spawn(move || {
            for item in scan {
                let failed = item.is_err();
                // Nobody to take it (the reader was closed or dropped): stop, dropping (and
                // so cancelling) the scan.
                if tx.send(item).is_err() || failed {
                    break;
                }
            }
        })
        .map_err(|e| {
            rayquet::Error::new(ErrorKind::Io, "cannot start a reader thread").with_source(e)
        })?;
    Ok(rx)
}

/// Start the collector thread of `read_all()`: it reads every batch of `scan` (stopping at the
/// first error, which drops and so cancels the scan) and sends them at once.
fn start_collector(
    scan: ScanReader,
) -> rayquet::Result<Receiver<Result<Vec<RecordBatch>, ArrowError>>> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    thread::Builder::new()
        .name("rayquet-py-reader".into())
        .spawn(move || {
            let _ = tx.send(scan.collect::<Result<Vec<_>, _>>());
        })
        .map_err(|e| {
            rayquet::Error::new(ErrorKind::Io, "cannot start a reader thread").with_source(e)
        })?;
    Ok(rx)
}

/// The stream `__arrow_c_stream__` exports: it answers the schema at once and takes the scan
/// from the reader only when its consumer first asks for a batch, so a consumer may ask for
/// several streams to learn the schema and read one (duckdb asks three times per query).
/// Once one stream has taken the scan, further `__arrow_c_stream__` calls raise. Its `next()`
/// blocks on the consumer's thread (which pyarrow, polars and duckdb run without the GIL), on
/// a helper thread's channel in slices of [`SLICE`]; between slices, on the main thread (where
/// `pa.table(reader)` and `pl.DataFrame(reader)` read), it checks for signals: Ctrl-C cancels
/// the scan, ends the stream with a `Cancelled` error, and is raised again as
/// KeyboardInterrupt once the consumer returns to Python.
struct LazyStream {
    schema: SchemaRef,
    state: Arc<Mutex<State>>,
    canceller: Canceller,
    taken: Option<Receiver<Item>>,
    done: bool,
}

impl LazyStream {
    /// Take the scan from the reader, or say why it cannot be read.
    fn take(&mut self) -> Result<(), rayquet::Error> {
        let old = {
            let mut state = lock(&self.state);
            match &*state {
                State::Exported => {
                    return Err(rayquet::Error::new(
                        ErrorKind::InvalidArgument,
                        "the reader was already consumed by another stream",
                    ))
                }
                State::Closed(why) => return Err(rayquet::Error::new(ErrorKind::Cancelled, *why)),
                State::Collecting => {
                    return Err(rayquet::Error::new(
                        ErrorKind::InvalidArgument,
                        "the reader is being read by read_all() on another thread",
                    ))
                }
                _ => std::mem::replace(&mut *state, State::Exported),
            }
        };
        self.taken = Some(match old {
            State::Ready(scan) => start_helper(*scan)?,
            State::Running(rx) => rx,
            // Finished: a channel whose sender is gone, so the stream ends.
            _ => crossbeam_channel::bounded(0).1,
        });
        Ok(())
    }
}

/// Whether Ctrl-C (or another signal whose handler raised) arrived, checked on the process's
/// main thread only: Python runs signal handlers there alone, and another thread need not
/// take the GIL. A KeyboardInterrupt is raised again for the consumer's caller
/// (`PyErr_SetInterrupt`), since the consumer reports the stream's error as its own exception.
fn interrupted() -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: getpid and gettid have no preconditions.
    let main = unsafe { libc::getpid() == libc::gettid() };
    #[cfg(not(target_os = "linux"))]
    let main = false;
    main && Python::attach(|py| match py.check_signals() {
        Ok(()) => false,
        Err(e) => {
            if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                // SAFETY: called with the GIL held, as the C API requires.
                unsafe { pyo3::ffi::PyErr_SetInterrupt() };
            }
            true
        }
    })
}

impl Iterator for LazyStream {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        if self.done {
            return None;
        }
        if self.taken.is_none() {
            if let Err(e) = self.take() {
                self.done = true;
                return Some(Err(e.into()));
            }
        }
        let rx = self.taken.as_ref()?;
        loop {
            match rx.recv_timeout(SLICE) {
                Ok(item) => {
                    self.done = item.is_err();
                    return Some(item);
                }
                Err(RecvTimeoutError::Timeout) if interrupted() => {
                    self.canceller.cancel();
                    self.taken = None;
                    self.done = true;
                    let e = rayquet::Error::new(ErrorKind::Cancelled, "interrupted (Ctrl-C)");
                    return Some(Err(e.into()));
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.done = true;
                    return None;
                }
            }
        }
    }
}

impl RecordBatchReader for LazyStream {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[pymethods]
impl Reader {
    /// The Arrow schema of every batch (a `pyarrow.Schema`), known before the first batch.
    #[getter]
    fn schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        pyarrow_schema(py, self.schema.clone())
    }

    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __next__<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.next_batch(py)? {
            Some(b) => Ok(Some(pyarrow_batch(py, b)?)),
            None => Ok(None),
        }
    }

    /// The next batch (a `pyarrow.RecordBatch`); `StopIteration` at the end, as pyarrow's
    /// `RecordBatchReader.read_next_batch`.
    fn read_next_batch<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self.next_batch(py)? {
            Some(b) => pyarrow_batch(py, b),
            None => Err(pyo3::exceptions::PyStopIteration::new_err(())),
        }
    }

    /// Every remaining batch as one `pyarrow.Table` (the batches' buffers, not copied).
    fn read_all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        if let Some(batches) = self.collect(py)? {
            return pyarrow_table(py, self.schema.clone(), batches);
        }
        let mut batches = Vec::new();
        while let Some(b) = self.next_batch(py)? {
            batches.push(b);
        }
        pyarrow_table(py, self.schema.clone(), batches)
    }

    /// The next batches, whole, up to `rows` rows or `bytes` bytes in all (a batch larger
    /// than that alone), as an object with `__arrow_c_stream__`; `None` at the end. What
    /// `rayquet.polars` hands to polars: fewer, larger frames, and no pyarrow needed.
    fn _next_group(
        &self,
        py: Python<'_>,
        rows: usize,
        bytes: usize,
    ) -> PyResult<Option<StreamExport>> {
        let (mut batches, mut n, mut size) = (Vec::new(), 0usize, 0usize);
        while n < rows && size < bytes {
            match self.next_batch(py)? {
                Some(b) => {
                    n += b.num_rows();
                    size += b.get_array_memory_size();
                    batches.push(b);
                }
                None => break,
            }
        }
        Ok((!batches.is_empty()).then(|| stream_of(self.schema.clone(), batches)))
    }

    /// Read every remaining batch and return how many rows they held (no pyarrow needed).
    fn _count_rows(&self, py: Python<'_>) -> PyResult<u64> {
        let mut rows = 0u64;
        while let Some(b) = self.next_batch(py)? {
            rows += b.num_rows() as u64;
        }
        Ok(rows)
    }

    /// Each top-level column's name and what a filter translator needs of its type (see
    /// `export::TypeInfo`), without pyarrow.
    fn _types(&self) -> Vec<(String, TypeInfo)> {
        self.schema
            .fields()
            .iter()
            .map(|f| (f.name().clone(), type_info(f.data_type())))
            .collect()
    }

    /// The remaining batches as an Arrow C stream (the PyCapsule interface): pyarrow, polars,
    /// duckdb and others read it without copies. The reader is consumed. A requested schema
    /// is ignored (the protocol lets a producer ignore it).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let refused = py.detach(|| match &*self.lock() {
            State::Exported => Some("the reader was already consumed by __arrow_c_stream__"),
            State::Closed(why) => Some(*why),
            _ => None,
        });
        match refused {
            Some(why) if why.contains("__arrow_c_stream__") => {
                return Err(PyValueError::new_err(why))
            }
            Some(why) => return Err(new_err(ErrorKind::Cancelled, why)),
            None => {}
        }
        let reader: BoxedReader = Box::new(LazyStream {
            schema: self.schema.clone(),
            state: self.state.clone(),
            canceller: self.canceller.clone(),
            taken: None,
            done: false,
        });
        stream_capsule(py, reader)
    }

    /// The scan's counters now (a dict): rows, batches, bytes fetched and decoded, requests,
    /// pruning, and io/decode/wait time in seconds. Readable during and after the scan.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let m = self.metrics.snapshot();
        let d = PyDict::new(py);
        for (k, v) in [
            ("rows", m.rows),
            ("batches", m.batches),
            ("files", m.files),
            ("row_groups", m.row_groups),
            ("units", m.units),
            ("requests", m.requests),
            ("bytes_fetched", m.bytes_fetched),
            ("bytes_decoded", m.bytes_decoded),
            ("metadata_bytes", m.metadata_bytes),
            ("buffered_bytes", m.buffered_bytes),
            ("peak_buffered_bytes", m.peak_buffered_bytes),
            ("tasks_running", m.tasks_running),
            ("row_groups_pruned", m.row_groups_pruned),
            ("bloom_pruned", m.bloom_pruned),
            ("pages_pruned", m.pages_pruned),
            ("rows_filtered", m.rows_filtered),
            ("dictionary_filtered", m.dictionary_filtered),
            ("rows_deleted", m.rows_deleted),
            ("files_pruned", m.files_pruned),
            ("http_requests", m.http_requests),
            ("retries", m.retries),
            ("footer_cache_hits", m.footer_cache_hits),
        ] {
            d.set_item(k, v)?;
        }
        d.set_item("io_seconds", m.io_time.as_secs_f64())?;
        d.set_item("decode_seconds", m.decode_time.as_secs_f64())?;
        d.set_item("wait_seconds", m.wait_time.as_secs_f64())?;
        Ok(d)
    }

    /// Stop the scan now (no further requests; its tasks wind down). Later reads raise
    /// `rayquet.CancelledError`. Closing twice, or after the end, does nothing.
    fn close(&self, py: Python<'_>) {
        py.detach(|| self.shut("the reader was closed"));
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> bool {
        self.close(py);
        false
    }

    /// `rayquet.Reader(name: type, ...)` with pyarrow's names of the types (`string`,
    /// `timestamp[us, tz=UTC]`), as a Python user reads them in `reader.schema`.
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let schema = pyarrow_schema(py, self.schema.clone())?;
        let mut fields = Vec::with_capacity(self.schema.fields().len());
        for field in schema.try_iter()? {
            let field = field?;
            fields.push(format!(
                "{}: {}",
                field.getattr("name")?.str()?,
                field.getattr("type")?.str()?
            ));
        }
        Ok(format!("rayquet.Reader({})", fields.join(", ")))
    }
}

/// Run `build` (a scan's `build()`: listing, footers, table metadata) on a helper thread and
/// wait for it with the GIL released, in slices, checking for signals between them. On a
/// KeyboardInterrupt the build is left to finish on its own and its reader dropped (cancelled).
pub(crate) fn build_interruptibly<F>(py: Python<'_>, build: F) -> PyResult<Reader>
where
    F: FnOnce() -> rayquet::Result<ScanReader> + Send + 'static,
{
    let (tx, rx) = crossbeam_channel::bounded(1);
    thread::Builder::new()
        .name("rayquet-py-build".into())
        .spawn(move || {
            let _ = tx.send(build());
        })
        .map_err(|e| {
            to_py(&rayquet::Error::new(ErrorKind::Io, "cannot start a thread").with_source(e))
        })?;
    loop {
        match py.detach(|| rx.recv_timeout(SLICE)) {
            Ok(Ok(scan)) => return Ok(Reader::new(scan)),
            Ok(Err(e)) => return Err(to_py(&e)),
            Err(RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(new_err(
                    ErrorKind::Panic,
                    "building the scan panicked (set RUST_BACKTRACE=1 for details)",
                ))
            }
        }
    }
}
