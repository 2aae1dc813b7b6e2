//! Arrow data leaving for Python through the Arrow PyCapsule interface
//! (<https://arrow.apache.org/docs/format/CDataInterface/PyCapsuleInterface.html>): the C data
//! interface structs in named capsules, whose buffers the consumer takes over (no copy). Each
//! capsule's destructor releases the struct if no consumer took it.
//!
//! The small classes here carry one schema, batch or stream to pyarrow's constructors
//! (`pa.schema(x)`, `pa.record_batch(x)`, `pa.RecordBatchReader.from_stream(x)`), which accept
//! any object with the matching dunder method.

use std::ffi::CString;
use std::sync::Mutex;

use arrow::array::{RecordBatch, RecordBatchIterator, RecordBatchReader, StructArray};
use arrow::datatypes::SchemaRef;
use arrow::ffi::{FFI_ArrowArray, FFI_ArrowSchema};
use arrow::ffi_stream::FFI_ArrowArrayStream;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyCapsule, PyTuple};

/// A stream of batches to export: what a reader hands to `__arrow_c_stream__`.
pub(crate) type BoxedReader = Box<dyn RecordBatchReader + Send>;

/// `FFI_ArrowSchema` of `schema` in a capsule named `arrow_schema`.
pub(crate) fn schema_capsule<'py>(
    py: Python<'py>,
    schema: &SchemaRef,
) -> PyResult<Bound<'py, PyCapsule>> {
    let ffi = FFI_ArrowSchema::try_from(schema.as_ref())
        .map_err(|e| PyValueError::new_err(format!("cannot export the schema: {e}")))?;
    PyCapsule::new(py, ffi, Some(CString::from(c"arrow_schema")))
}

/// `FFI_ArrowArrayStream` of `reader` in a capsule named `arrow_array_stream`.
pub(crate) fn stream_capsule(
    py: Python<'_>,
    reader: BoxedReader,
) -> PyResult<Bound<'_, PyCapsule>> {
    let ffi = FFI_ArrowArrayStream::new(reader);
    PyCapsule::new(py, ffi, Some(CString::from(c"arrow_array_stream")))
}

/// `pyarrow.record_batch`, looked up once.
static RECORD_BATCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `batch` as a `pyarrow.RecordBatch` (its buffers shared, not copied).
pub(crate) fn pyarrow_batch(py: Python<'_>, batch: RecordBatch) -> PyResult<Bound<'_, PyAny>> {
    let make = RECORD_BATCH.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import("pyarrow")?.getattr("record_batch")?.unbind())
    })?;
    make.bind(py).call1((BatchExport { batch },))
}

/// `schema` as a `pyarrow.Schema`.
pub(crate) fn pyarrow_schema(py: Python<'_>, schema: SchemaRef) -> PyResult<Bound<'_, PyAny>> {
    py.import("pyarrow")?
        .getattr("schema")?
        .call1((SchemaExport { schema },))
}

/// `batches` (of `schema`) as a `pyarrow.Table` (their buffers shared, not copied).
pub(crate) fn pyarrow_table(
    py: Python<'_>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> PyResult<Bound<'_, PyAny>> {
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    let stream = StreamExport::new(Box::new(reader));
    py.import("pyarrow")?
        .getattr("RecordBatchReader")?
        .call_method1("from_stream", (stream,))?
        .call_method0("read_all")
}

/// One schema, exported by `__arrow_c_schema__`.
#[pyclass(module = "rayquet._rayquet", frozen)]
pub(crate) struct SchemaExport {
    schema: SchemaRef,
}

#[pymethods]
impl SchemaExport {
    /// The schema as an `arrow_schema` capsule.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        schema_capsule(py, &self.schema)
    }
}

/// One record batch, exported by `__arrow_c_array__` (as a struct array with the batch's
/// schema). May be exported any number of times: each export shares the same buffers.
#[pyclass(module = "rayquet._rayquet", frozen)]
pub(crate) struct BatchExport {
    batch: RecordBatch,
}

#[pymethods]
impl BatchExport {
    /// The batch as (`arrow_schema`, `arrow_array`) capsules. A requested schema is ignored
    /// (the protocol lets a producer ignore it; the consumer casts if it must).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let _ = requested_schema;
        let schema = schema_capsule(py, &self.batch.schema())?;
        let data = StructArray::from(self.batch.clone()).into();
        let array = FFI_ArrowArray::new(&data);
        let array = PyCapsule::new(py, array, Some(CString::from(c"arrow_array")))?;
        PyTuple::new(py, [schema.into_any(), array.into_any()])
    }
}

/// A stream of batches, exported once by `__arrow_c_stream__`.
#[pyclass(module = "rayquet._rayquet", frozen)]
pub(crate) struct StreamExport {
    reader: Mutex<Option<BoxedReader>>,
}

impl StreamExport {
    /// A stream of `reader`'s batches.
    pub(crate) fn new(reader: BoxedReader) -> Self {
        StreamExport {
            reader: Mutex::new(Some(reader)),
        }
    }
}

#[pymethods]
impl StreamExport {
    /// The stream as an `arrow_array_stream` capsule; a second call is an error.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = self
            .reader
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| PyValueError::new_err("the stream was already exported"))?;
        stream_capsule(py, reader)
    }
}
