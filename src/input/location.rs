//! Where a scan's files are: what the caller named ([`Input`]: a URL, a local path, a store
//! of their own) and what it resolves to ([`FileRef`]: a store, a path, a display name and,
//! when known, a size).
//!
//! Invariant: parsing makes no request; a URL with a scheme object_store does not know is an
//! error unless the caller gave a store for it.

use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreScheme};
use url::Url;

use crate::cache::Version;
use crate::error::{Error, ErrorKind, Result};

/// One object to read: its path in a store and, when known, its size in bytes.
///
/// Build it from an [`object_store::ObjectMeta`] (size known) or an
/// [`object_store::path::Path`] (size learnt from the footer request).
#[derive(Debug, Clone)]
pub struct ObjectRef {
    pub(crate) path: Path,
    pub(crate) size: Option<u64>,
    /// Its version, when built from an `ObjectMeta` (a [`crate::FooterCache`] key).
    pub(crate) version: Option<Version>,
}

/// What the caller named, before resolution.
pub(crate) enum Input {
    /// A URL with a scheme object_store knows.
    Url(Url),
    /// A plain local path (file or directory).
    Local(std::path::PathBuf),
    /// Objects in a store the caller built.
    Objects {
        store: Arc<dyn ObjectStore>,
        objects: Vec<ObjectRef>,
    },
}

/// A resolved file: where it lives, how to name it in errors, and its size when known.
#[derive(Debug, Clone)]
pub(crate) struct FileRef {
    pub store: Arc<dyn ObjectStore>,
    pub path: Path,
    pub size: Option<u64>,
    /// URL or path, as shown to the user.
    pub name: Arc<str>,
    /// Its version, when listing, a HEAD request or the file system told it.
    pub version: Option<Version>,
}

impl Input {
    pub(crate) fn parse(s: &str) -> Result<Input> {
        if s.is_empty() {
            return Err(Error::new(ErrorKind::InvalidArgument, "empty path"));
        }
        // Windows drive letters aside, "x:..." with a known scheme is a URL.
        match Url::parse(s) {
            Ok(url) if url.scheme().len() > 1 => {
                if url.scheme() == "file" {
                    let p = url.to_file_path().map_err(|_| {
                        Error::new(ErrorKind::InvalidArgument, "not a local file URL").with_path(s)
                    })?;
                    return Ok(Input::Local(p));
                }
                ObjectStoreScheme::parse(&url).map_err(|e| {
                    Error::new(ErrorKind::InvalidArgument, e.to_string()).with_path(s)
                })?;
                Ok(Input::Url(url))
            }
            _ => Ok(Input::Local(std::path::PathBuf::from(s))),
        }
    }
}

/// Whether `p` names a Parquet object (`*.parquet`).
pub(crate) fn is_parquet(p: &Path) -> bool {
    p.filename().is_some_and(|f| f.ends_with(".parquet"))
}

/// Build an [`ObjectRef`] from a path alone (size unknown: the footer read learns it).
impl From<Path> for ObjectRef {
    fn from(path: Path) -> Self {
        ObjectRef {
            path,
            size: None,
            version: None,
        }
    }
}

/// Build an [`ObjectRef`] from a listing entry (size known: no extra request).
impl From<ObjectMeta> for ObjectRef {
    fn from(meta: ObjectMeta) -> Self {
        ObjectRef {
            version: Some(Version::from(&meta)),
            path: meta.location,
            size: Some(meta.size),
        }
    }
}

impl From<&str> for ObjectRef {
    fn from(path: &str) -> Self {
        ObjectRef {
            path: Path::from(path),
            size: None,
            version: None,
        }
    }
}
