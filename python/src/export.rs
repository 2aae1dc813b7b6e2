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

/// The `pyarrow` module, or an `ImportError` saying what works without it: pyarrow is an
/// optional dependency (`pip install 'rayquet[pyarrow]'`), needed only for pyarrow objects.
pub(crate) fn pyarrow(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import("pyarrow").map_err(|e| {
        if !e.is_instance_of::<pyo3::exceptions::PyImportError>(py) {
            return e;
        }
        let err = pyo3::exceptions::PyImportError::new_err(
            "rayquet: this returns pyarrow objects and pyarrow is not installed \
             (pip install 'rayquet[pyarrow]'). Without it, hand the reader to polars \
             (pl.DataFrame(reader), rayquet.polars.scan_parquet), duckdb or any reader of an \
             Arrow C stream (reader.__arrow_c_stream__)",
        );
        err.set_cause(py, Some(e));
        err
    })
}

/// `pyarrow.record_batch`, looked up once.
static RECORD_BATCH: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// `batch` as a `pyarrow.RecordBatch` (its buffers shared, not copied).
pub(crate) fn pyarrow_batch(py: Python<'_>, batch: RecordBatch) -> PyResult<Bound<'_, PyAny>> {
    let make = RECORD_BATCH.get_or_try_init(py, || {
        Ok::<_, PyErr>(pyarrow(py)?.getattr("record_batch")?.unbind())
    })?;
    make.bind(py).call1((BatchExport { batch },))
}

/// `schema` as a `pyarrow.Schema`.
pub(crate) fn pyarrow_schema(py: Python<'_>, schema: SchemaRef) -> PyResult<Bound<'_, PyAny>> {
    pyarrow(py)?
        .getattr("schema")?
        .call1((SchemaExport { schema },))
}

/// The batches of `schema` as a stream object (`__arrow_c_stream__`), for consumers that
/// need no pyarrow (polars).
pub(crate) fn stream_of(schema: SchemaRef, batches: Vec<RecordBatch>) -> StreamExport {
    let reader = RecordBatchIterator::new(batches.into_iter().map(Ok), schema);
    StreamExport::new(Box::new(reader))
}

/// What a filter translator needs to know of a column's Arrow type, without pyarrow: (kind,
/// bit width, precision, scale, unit, time zone). Kinds: `int`, `uint`, `float`, `string`,
/// `bool`, `date32`, `decimal`, `timestamp`, `other`.
pub(crate) type TypeInfo = (&'static str, u32, u8, i8, &'static str, Option<String>);

/// `ty` as a [`TypeInfo`].
pub(crate) fn type_info(ty: &arrow::datatypes::DataType) -> TypeInfo {
    use arrow::datatypes::{DataType::*, TimeUnit};
    let width = ty.primitive_width().map_or(0, |w| w as u32 * 8);
    match ty {
        Int8 | Int16 | Int32 | Int64 => ("int", width, 0, 0, "", None),
        UInt8 | UInt16 | UInt32 | UInt64 => ("uint", width, 0, 0, "", None),
        Float16 | Float32 | Float64 => ("float", width, 0, 0, "", None),
        Utf8 | LargeUtf8 | Utf8View => ("string", 0, 0, 0, "", None),
        Boolean => ("bool", 0, 0, 0, "", None),
        Date32 => ("date32", 0, 0, 0, "", None),
        Decimal32(p, s) | Decimal64(p, s) | Decimal128(p, s) | Decimal256(p, s) => {
            ("decimal", width, *p, *s, "", None)
        }
        Timestamp(unit, tz) => {
            let unit = match unit {
                TimeUnit::Second => "s",
                TimeUnit::Millisecond => "ms",
                TimeUnit::Microsecond => "us",
                TimeUnit::Nanosecond => "ns",
            };
            (
                "timestamp",
                64,
                0,
                0,
                unit,
                tz.as_deref().map(str::to_string),
            )
        }
        _ => ("other", 0, 0, 0, "", None),
    }
}

/// `batches` (of `schema`) as a `pyarrow.Table` (their buffers shared, not copied).
pub(crate) fn pyarrow_table(
    py: Python<'_>,
    schema: SchemaRef,
    batches: Vec<RecordBatch>,
) -> PyResult<Bound<'_, PyAny>> {
    let stream = stream_of(schema, batches);
    pyarrow(py)?
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
