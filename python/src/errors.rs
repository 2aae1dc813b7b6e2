//! rayquet's errors as Python exceptions: a subclass of `rayquet.RayquetError` per kind
//! (defined in Python, `rayquet/_errors.py`, so they can also subclass `FileNotFoundError`,
//! `PermissionError`, `ValueError`...), carrying the kind, the file and the row group.

use arrow::error::ArrowError;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use rayquet::{Error, ErrorKind};

/// The name of an [`ErrorKind`] as Python sees it (`exc.kind`): the variant's name.
fn kind_name(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::NotFound => "NotFound",
        ErrorKind::PermissionDenied => "PermissionDenied",
        ErrorKind::Io => "Io",
        ErrorKind::CorruptFooter => "CorruptFooter",
        ErrorKind::CorruptData => "CorruptData",
        ErrorKind::CorruptTable => "CorruptTable",
        ErrorKind::Unsupported => "Unsupported",
        ErrorKind::SchemaMismatch => "SchemaMismatch",
        ErrorKind::InvalidArgument => "InvalidArgument",
        ErrorKind::Cancelled => "Cancelled",
        ErrorKind::Panic => "Panic",
        _ => "Other",
    }
}

/// A Python exception for a rayquet error: `rayquet._errors._from_rayquet(kind, message,
/// path, row_group)` picks the class.
pub(crate) fn to_py(e: &Error) -> PyErr {
    let mut message = e.to_string();
    // The causes' messages, when the error's own message does not already carry them.
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    Python::attach(|py| {
        let made = py.import("rayquet._errors").and_then(|m| {
            m.getattr("_from_rayquet")?.call1((
                kind_name(e.kind()),
                message.as_str(),
                e.path(),
                e.row_group(),
            ))
        });
        match made {
            Ok(exc) => PyErr::from_value(exc),
            // The Python layer is missing (the module imported on its own): still an error.
            Err(_) => PyRuntimeError::new_err(message),
        }
    })
}

/// A Python exception for an error a reader yielded (a rayquet error inside arrow's).
pub(crate) fn arrow_to_py(e: ArrowError) -> PyErr {
    to_py(&Error::from(e))
}

/// A Python exception of `kind` with a message and no location.
pub(crate) fn new_err(kind: ErrorKind, message: impl Into<String>) -> PyErr {
    to_py(&Error::new(kind, message))
}
