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

/// How long mimalloc keeps memory freed by the module before returning it to the kernel
/// (milliseconds), unless `MIMALLOC_PURGE_DELAY` says otherwise.
///
/// A table read into Python is freed all at once when Python drops it, and mimalloc purges free
/// memory in one sweep when its delay (1 s by default) runs out: a scan repeated within that time
/// found part of its memory returned and had the kernel zero it again (2,300-22,000 page faults
/// of 2 MiB per read of lineitem SF1; 7-31 at 10 s). A service that reads every few seconds keeps its
/// pages; memory not reused is still returned, 10 s later.
#[cfg(feature = "mimalloc")]
const PURGE_DELAY_MS: std::ffi::c_long = 10_000;

/// Tunes the module's allocator (mimalloc, linked into the module and used by nothing else in
/// the process): [`PURGE_DELAY_MS`], unless the process set `MIMALLOC_PURGE_DELAY` (or its old
/// name `MIMALLOC_RESET_DELAY`), which mimalloc then reads itself.
///
/// Transparent huge pages stay as mimalloc has them (asked for with `madvise`): they made warm
/// reads about 9% faster and the first batch come sooner (0.038 against 0.066 s). Where the
/// machine is a VM that hands free memory back to its host (virtio-balloon free page reporting,
/// as on Firecracker), a fresh process's first large read then waits for the host to fault in
/// every 2 MiB page (lineitem SF1: 1.1-3.6 s against 0.85 s with 4 KiB pages);
/// `MIMALLOC_ALLOW_THP=0` avoids that (README, "Command line").
#[cfg(feature = "mimalloc")]
fn tune_allocator() {
    // `mi_option_purge_delay`'s index in mimalloc's `mi_option_t` (v2 and v3), which the Rust
    // bindings do not export.
    const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
    if ["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"]
        .iter()
        .all(|n| std::env::var_os(n).is_none())
    {
        // SAFETY: `mi_option_set` stores one option's value; called while the module is
        // imported, before the module starts any thread of its own.
        unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, PURGE_DELAY_MS) };
    }
}

/// The module `rayquet._rayquet`.
#[pymodule]
fn _rayquet(m: &Bound<'_, PyModule>) -> PyResult<()> {
    #[cfg(feature = "mimalloc")]
    tune_allocator();
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
