//! `rayquet._rayquet`: the extension module of the `rayquet` Python package (built by maturin,
//! `pip install ./python`). The Python layer (`python/rayquet/__init__.py`) holds the public
//! functions and their docstrings and calls the functions here.
//!
//! A scan is built and read exactly as from Rust (a `rayquet::Scan`, an Iceberg or Delta
//! `TableScan`, every `ScanBuilder` option); batches leave through the Arrow C data interface
//! (the PyCapsule protocol: `__arrow_c_stream__`, `__arrow_c_array__`, `__arrow_c_schema__`),
//! so pyarrow, polars and duckdb import them without copying.
//!
//! Threads: a Python thread never blocks with the GIL held. Building a scan (listing, the first
//! footer, a table's metadata) and reading its batches happen on a helper thread per reader
//! (module `reader`); the Python thread waits for them in slices of 50 ms with the GIL
//! released and checks for signals between slices, so Ctrl-C (KeyboardInterrupt) interrupts a
//! wait at once and cancels the scan. Decoding stays on rayquet's rayon pool and IO on its
//! tokio runtime; the helper thread only waits.
#![deny(missing_docs)]

mod errors;
mod export;
mod options;
mod reader;

use std::time::Duration;

use pyo3::prelude::*;

/// The longest a Python thread waits with the GIL released before it checks for signals
/// (KeyboardInterrupt) and waits again.
pub(crate) const SLICE: Duration = Duration::from_millis(50);

#[cfg(feature = "mimalloc")]
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The module `rayquet._rayquet`.
#[pymodule]
fn _rayquet(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<reader::Reader>()?;
    m.add_class::<export::BatchExport>()?;
    m.add_class::<export::StreamExport>()?;
    m.add_class::<export::SchemaExport>()?;
    m.add_function(wrap_pyfunction!(options::scan, m)?)?;
    m.add_function(wrap_pyfunction!(options::iceberg, m)?)?;
    m.add_function(wrap_pyfunction!(options::delta, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
