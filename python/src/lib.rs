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
/// found part of its memory returned and had the kernel zero it again (4,000-7,000 page faults
/// per read of lineitem SF1; none at 10 s). A service that reads every few seconds keeps its
/// pages; memory not reused is still returned, 10 s later.
#[cfg(feature = "mimalloc")]
const PURGE_DELAY_MS: std::ffi::c_long = 10_000;

/// Tunes the module's allocator (mimalloc, linked into the module and used by nothing else in
/// the process) unless the process set the option's variable, which mimalloc then reads itself:
/// - [`PURGE_DELAY_MS`] (`MIMALLOC_PURGE_DELAY`, old name `MIMALLOC_RESET_DELAY`);
/// - no transparent huge pages for the memory it maps from now on (`MIMALLOC_ALLOW_THP`):
///   mimalloc asks for them (`madvise(MADV_HUGEPAGE)`), and where the kernel's `defrag` setting
///   is `madvise` (the kernel's default) a fault then compacts memory on the spot: the first
///   read of lineitem SF1 in a fresh process took 1.3-3.6 s, up to 6 s of CPU in the kernel,
///   once the page cache had filled memory, against 0.84-1.16 s with 4 KiB pages. Warm reads
///   lose the huge pages' fewer TLB misses (about 10% slower than with them). Unlike
///   the `rayquet` binary, the module leaves the process's own setting (`prctl`) alone: the
///   other libraries in the Python process keep theirs.
#[cfg(feature = "mimalloc")]
fn tune_allocator() {
    use libmimalloc_sys::{_mi_option_last, mi_option_set, mi_option_t};
    // Indexes in mimalloc's `mi_option_t`, which the Rust bindings do not export: the same
    // `purge_delay` in v2 and v3; `allow_thp` the last in v2 (38 options), fifth from last in v3
    // (47 options).
    const PURGE_DELAY: mi_option_t = 15;
    const ALLOW_THP: Option<mi_option_t> = match _mi_option_last {
        38 => Some(37),
        47 => Some(43),
        _ => None,
    };
    let unset = |names: &[&str]| names.iter().all(|n| std::env::var_os(n).is_none());
    // SAFETY: `mi_option_set` stores one option's value; called while the module is imported,
    // before the module starts any thread of its own.
    unsafe {
        if unset(&["MIMALLOC_PURGE_DELAY", "MIMALLOC_RESET_DELAY"]) {
            mi_option_set(PURGE_DELAY, PURGE_DELAY_MS);
        }
        if let (Some(option), true) = (ALLOW_THP, unset(&["MIMALLOC_ALLOW_THP"])) {
            mi_option_set(option, 0);
        }
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
