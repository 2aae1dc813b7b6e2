//! The one error type of the crate.
//!
//! Every error names the object it concerns (its URL or path) and, where known, the row group,
//! so that a failure in a scan over thousands of files says which file to look at.

use std::fmt;

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
    /// Any other IO or object-store failure (network, throttling, server error).
    Io,
    /// The footer or its metadata cannot be parsed (truncated file, not Parquet, bad thrift).
    CorruptFooter,
    /// A page or column chunk cannot be decoded.
    CorruptData,
    /// The file is encrypted; rayquet does not decrypt.
    Encrypted,
    /// Two files of one scan have different schemas.
    SchemaMismatch,
    /// The scan was configured wrongly (unknown column, bad URL, zero batch size...).
    InvalidArgument,
    /// A decode task panicked; the panic was caught and turned into this error.
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
            ErrorKind::Encrypted => "encrypted file",
            ErrorKind::SchemaMismatch => "schema mismatch",
            ErrorKind::InvalidArgument => "invalid argument",
            ErrorKind::Panic => "decode task panicked",
        };
        f.write_str(s)
    }
}

/// An error from a scan: a kind, the file (and row group) it concerns, and a message.
///
/// `Display` reads like `corrupt data: s3://bucket/t/part-3.parquet, row group 7: <details>`.
#[derive(Debug, Clone)]
pub struct Error {
    kind: ErrorKind,
    path: Option<String>,
    row_group: Option<usize>,
    message: String,
}

impl Error {
    /// A new error of `kind` with a message and no location.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            path: None,
            row_group: None,
            message: message.into(),
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

    /// Map an object-store error to an [`Error`] for `path`.
    pub(crate) fn from_store(e: object_store::Error, path: &str) -> Self {
        use object_store::Error as E;
        let kind = match &e {
            E::NotFound { .. } => ErrorKind::NotFound,
            E::PermissionDenied { .. } | E::Unauthenticated { .. } => ErrorKind::PermissionDenied,
            E::InvalidPath { .. } | E::NotSupported { .. } => ErrorKind::InvalidArgument,
            _ => ErrorKind::Io,
        };
        Error::new(kind, e.to_string()).with_path(path)
    }

    /// Map a parquet error met while reading the footer of `path`.
    pub(crate) fn footer(e: parquet::errors::ParquetError, path: &str) -> Self {
        let msg = e.to_string();
        let kind = if msg.to_ascii_lowercase().contains("encrypt") {
            ErrorKind::Encrypted
        } else {
            ErrorKind::CorruptFooter
        };
        Error::new(kind, msg).with_path(path)
    }

    /// Map a parquet or arrow error met while decoding a row group of `path`.
    pub(crate) fn decode(msg: impl fmt::Display, path: &str, row_group: usize) -> Self {
        Error::new(ErrorKind::CorruptData, msg.to_string())
            .with_path(path)
            .with_row_group(row_group)
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

impl std::error::Error for Error {}

/// Arrow kernel errors (filter evaluation, literal conversion) are invalid arguments.
impl From<arrow::error::ArrowError> for Error {
    fn from(e: arrow::error::ArrowError) -> Self {
        Error::new(ErrorKind::InvalidArgument, e.to_string())
    }
}
