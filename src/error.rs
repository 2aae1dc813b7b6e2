//! The one error type of the crate.
//!
//! Every error has a [`ErrorKind`] a caller can match, names the object it concerns (its URL
//! or path) and, where known, the row group, so that a failure in a scan over thousands of
//! files says which file to look at; the error it was caused by (object_store's, parquet's,
//! arrow's, an IO error) stays reachable through [`std::error::Error::source`].
//!
//! Batches come out of a [`crate::ScanReader`] as arrow's `Result<RecordBatch, ArrowError>`
//! (it is a `RecordBatchReader`): a scan's error travels inside `ArrowError::ExternalError`,
//! and `Error::from(arrow_error)` gives it back unchanged, kind and location included.

use std::fmt;
use std::sync::Arc;

use arrow::error::ArrowError;

/// A `Result` whose error is [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, independent of where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The object (or every object under a prefix) does not exist.
    NotFound,
    /// The store refused access (HTTP 401/403, file permissions).
    PermissionDenied,
    /// Any other IO or object-store failure (network, throttling, server error, retries
    /// exhausted).
    Io,
    /// The footer or its metadata cannot be parsed (truncated file, not Parquet, bad thrift,
    /// sizes that do not fit the file).
    CorruptFooter,
    /// A page or column chunk cannot be decoded.
    CorruptData,
    /// A table's metadata (Iceberg metadata, manifest lists and manifests; a Delta log) is
    /// damaged or contradicts itself.
    CorruptTable,
    /// The file or table uses something rayquet does not read (encryption, a protocol
    /// feature, a type).
    Unsupported,
    /// Two files of one scan have different schemas, or a batch does not have the scan's.
    SchemaMismatch,
    /// The scan was configured wrongly (unknown column, bad URL, zero batch size...).
    InvalidArgument,
    /// The scan was stopped before it finished (its IO runtime shut down, its consumer went
    /// away).
    Cancelled,
    /// A task panicked (inside parquet, a caller's hook...); the panic was caught and turned
    /// into this error.
    Panic,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            ErrorKind::NotFound => "not found",
            ErrorKind::PermissionDenied => "permission denied",
            ErrorKind::Io => "IO error",
            ErrorKind::CorruptFooter => "corrupt or truncated footer",
            ErrorKind::CorruptData => "corrupt data",
            ErrorKind::CorruptTable => "corrupt table metadata",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::SchemaMismatch => "schema mismatch",
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::Cancelled => "cancelled",
            ErrorKind::Panic => "a task panicked",
        };
        f.write_str(s)
    }
}

/// The cause of an [`Error`], shared so that errors stay cheap to clone.
type Cause = Arc<dyn std::error::Error + Send + Sync>;

/// An error from a scan: a kind, the file (and row group) it concerns, a message, and the
/// error that caused it.
///
/// `Display` reads like `corrupt data: s3://bucket/t/part-3.parquet, row group 7: <details>`.
///
/// ```
/// use rayquet::{Error, ErrorKind};
/// let io = std::io::Error::new(std::io::ErrorKind::Other, "connection reset");
/// let e = Error::new(ErrorKind::Io, "reading the footer")
///     .with_path("s3://bucket/t/part-3.parquet")
///     .with_source(io);
/// assert_eq!(e.kind(), ErrorKind::Io);
/// assert!(std::error::Error::source(&e).is_some());
/// // Through arrow's error type (what a `RecordBatchReader` yields) and back, unchanged:
/// let back = Error::from(arrow::error::ArrowError::from(e.clone()));
/// assert_eq!(back.kind(), ErrorKind::Io);
/// assert_eq!(back.path(), e.path());
/// # use rayquet::reexports::arrow;
/// ```
#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    path: Option<String>,
    row_group: Option<usize>,
    message: String,
    source: Option<Cause>,
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("kind", &self.kind)
            .field("path", &self.path)
            .field("row_group", &self.row_group)
            .field("message", &self.message)
            .field("source", &self.source.as_ref().map(|s| s.to_string()))
            .finish()
    }
}

impl Error {
    /// A new error of `kind` with a message and no location.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            path: None,
            row_group: None,
            message: message.into(),
            source: None,
        }
    }

    /// Attach the file (URL or path) this error concerns.
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// Attach the row group this error concerns.
    pub fn with_row_group(mut self, row_group: usize) -> Self {
        self.row_group = Some(row_group);
        self
    }

    /// Attach the error that caused this one (returned by `source()`).
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// This error with `context: ` in front of its message (kind, location and cause kept).
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The file this error concerns, if any.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// The row group this error concerns, if known.
    pub fn row_group(&self) -> Option<usize> {
        self.row_group
    }

    /// The underlying message, without kind and location.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The rayquet error an arrow error carries (what a [`crate::ScanReader`] yields), if it
    /// carries one: `Error::of(&e).map(Error::kind)`.
    pub fn of(e: &ArrowError) -> Option<&Error> {
        match e {
            ArrowError::ExternalError(inner) => inner.downcast_ref::<Error>(),
            _ => None,
        }
    }

    /// The kind an object-store error maps to.
    fn store_kind(e: &object_store::Error) -> ErrorKind {
        use object_store::Error as E;
        match e {
            E::NotFound { .. } => ErrorKind::NotFound,
            E::PermissionDenied { .. } | E::Unauthenticated { .. } => ErrorKind::PermissionDenied,
            E::InvalidPath { .. } | E::UnknownConfigurationKey { .. } => ErrorKind::InvalidArgument,
            E::NotSupported { .. } | E::NotImplemented { .. } => ErrorKind::Unsupported,
            _ => ErrorKind::Io,
        }
    }

    /// Map an object-store error met on `path` (kept as the source).
    pub(crate) fn from_store(e: object_store::Error, path: &str) -> Self {
        Error::new(Error::store_kind(&e), e.to_string())
            .with_path(path)
            .with_source(e)
    }

    /// Map a parquet error met while reading the footer of `path` (kept as the source).
    pub(crate) fn footer(e: parquet::errors::ParquetError, path: &str) -> Self {
        let msg = e.to_string();
        let kind = if msg.to_ascii_lowercase().contains("encrypt") {
            ErrorKind::Unsupported
        } else {
            ErrorKind::CorruptFooter
        };
        Error::new(kind, msg).with_path(path).with_source(e)
    }

    /// A decoding failure in row group `row_group` of `path`, described by `msg`.
    pub(crate) fn decode(msg: impl fmt::Display, path: &str, row_group: usize) -> Self {
        Error::new(ErrorKind::CorruptData, msg.to_string())
            .with_path(path)
            .with_row_group(row_group)
    }

    /// A parquet (or arrow) error met while decoding row group `row_group` of `path`.
    pub(crate) fn decoding<E>(e: E, path: &str, row_group: usize) -> Self
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        Error::decode(&e, path, row_group).with_source(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.kind)?;
        match (&self.path, self.row_group) {
            (Some(p), Some(rg)) => write!(f, ": {p}, row group {rg}")?,
            (Some(p), None) => write!(f, ": {p}")?,
            (None, Some(rg)) => write!(f, ": row group {rg}")?,
            (None, None) => {}
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|s| s as &(dyn std::error::Error + 'static))
    }
}

/// A scan's error as arrow's error type (what `RecordBatchReader`s yield): carried whole in
/// `ArrowError::ExternalError`, so that [`Error::from`] gets it back.
impl From<Error> for ArrowError {
    fn from(e: Error) -> Self {
        ArrowError::ExternalError(Box::new(e))
    }
}

/// Back from arrow's error type: a scan's own error comes back unchanged; arrow's own errors
/// (a kernel evaluating a filter, a literal that does not convert) are invalid arguments,
/// IO errors IO, parquet errors corrupt data; the arrow error is kept as the source.
impl From<ArrowError> for Error {
    fn from(e: ArrowError) -> Self {
        match e {
            ArrowError::ExternalError(inner) => match inner.downcast::<Error>() {
                Ok(e) => *e,
                Err(other) => Error::new(ErrorKind::Io, other.to_string())
                    .with_source(ArrowError::ExternalError(other)),
            },
            e => {
                let kind = match &e {
                    ArrowError::IoError(..) => ErrorKind::Io,
                    ArrowError::ParquetError(_) => ErrorKind::CorruptData,
                    _ => ErrorKind::InvalidArgument,
                };
                Error::new(kind, e.to_string()).with_source(e)
            }
        }
    }
}

/// An object-store error without a known object (the path inside its message).
impl From<object_store::Error> for Error {
    fn from(e: object_store::Error) -> Self {
        Error::new(Error::store_kind(&e), e.to_string()).with_source(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrow_round_trip_keeps_everything() {
        let e = Error::new(ErrorKind::CorruptData, "bad page")
            .with_path("a.parquet")
            .with_row_group(3)
            .with_source(std::io::Error::other("inner"));
        let back = Error::from(ArrowError::from(e.clone()));
        assert_eq!(back.kind(), ErrorKind::CorruptData);
        assert_eq!(back.path(), Some("a.parquet"));
        assert_eq!(back.row_group(), Some(3));
        assert_eq!(back.to_string(), e.to_string());
        let source = std::error::Error::source(&back).expect("source kept");
        assert_eq!(source.to_string(), "inner");
    }

    #[test]
    fn store_errors_keep_kind_and_source() {
        let e = object_store::Error::NotFound {
            path: "x".into(),
            source: "gone".into(),
        };
        let e = Error::from_store(e, "s3://b/x");
        assert_eq!(e.kind(), ErrorKind::NotFound);
        assert_eq!(e.path(), Some("s3://b/x"));
        assert!(std::error::Error::source(&e).is_some());
        let arrow = ArrowError::InvalidArgumentError("no".into());
        assert_eq!(Error::from(arrow).kind(), ErrorKind::InvalidArgument);
    }
}
