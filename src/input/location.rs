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

    /// `s` taken literally, as table formats write locations (Iceberg, Hadoop paths): after
    /// `scheme://authority/` the rest is the object's key as it is, `%` escapes included
    /// (pyiceberg and Java write a partition value `a:b` into a directory named `a%3Ab`, and
    /// the object's key holds `%3A`). `file:/p`, `file:///p` and plain paths are local paths,
    /// likewise undecoded. Returns the URL root (`scheme://authority`) and the key.
    pub(crate) fn parse_literal(s: &str) -> Result<LiteralInput> {
        let bad = |why: &str| {
            Error::new(ErrorKind::InvalidArgument, format!("not a location: {why}")).with_path(s)
        };
        if s.is_empty() {
            return Err(Error::new(ErrorKind::InvalidArgument, "empty path"));
        }
        // A scheme is a letter then letters, digits, `+`, `-`, `.`; one letter is a drive.
        let scheme_len = s.find(':').filter(|&i| {
            i > 1
                && s.as_bytes()[0].is_ascii_alphabetic()
                && s[..i]
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
        });
        let Some(n) = scheme_len else {
            return Ok(LiteralInput::Local(std::path::PathBuf::from(s)));
        };
        let (scheme, rest) = (&s[..n], &s[n + 1..]);
        if scheme.eq_ignore_ascii_case("file") {
            // file:/p, file:///p, file://localhost/p.
            let path = match rest.strip_prefix("//") {
                Some(r) if r.starts_with('/') => r,
                Some(r) => match r.strip_prefix("localhost") {
                    Some(p) if p.starts_with('/') => p,
                    _ => return Err(bad("a file location with a host")),
                },
                None => rest,
            };
            return Ok(LiteralInput::Local(std::path::PathBuf::from(path)));
        }
        let Some(rest) = rest.strip_prefix("//") else {
            return Err(bad("expected scheme://authority/key"));
        };
        let (authority, key) = rest.split_once('/').unwrap_or((rest, ""));
        let root =
            Url::parse(&format!("{scheme}://{authority}")).map_err(|e| bad(&e.to_string()))?;
        let path = Path::parse(key).map_err(|e| bad(&e.to_string()))?;
        Ok(LiteralInput::Key { root, path })
    }
}

/// A location taken literally ([`Input::parse_literal`]).
pub(crate) enum LiteralInput {
    /// A local path.
    Local(std::path::PathBuf),
    /// A key in the store of a URL root.
    Key { root: Url, path: Path },
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

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> (String, String) {
        match Input::parse_literal(s).unwrap() {
            LiteralInput::Key { root, path } => (root.to_string(), path.to_string()),
            LiteralInput::Local(p) => panic!("{s}: local {}", p.display()),
        }
    }

    fn local(s: &str) -> String {
        match Input::parse_literal(s).unwrap() {
            LiteralInput::Local(p) => p.to_string_lossy().into_owned(),
            LiteralInput::Key { .. } => panic!("{s}: not local"),
        }
    }

    #[test]
    fn literal_locations_keep_their_escapes() {
        // pyiceberg / Java: the partition value `2024-01-01T10:00` in a directory `...%3A00`.
        let (root, path) = key("s3://bucket/wh/t/data/ts=2024-01-01T10%3A00/f%20a.parquet");
        assert_eq!(root, "s3://bucket");
        assert_eq!(path, "wh/t/data/ts=2024-01-01T10%3A00/f%20a.parquet");
        let (_, path) = key("gs://b/100%/x+y=é/part.parquet");
        assert_eq!(path, "100%/x+y=é/part.parquet");
        assert_eq!(local("file:///tmp/a%3Ab/f.parquet"), "/tmp/a%3Ab/f.parquet");
        assert_eq!(local("file:/tmp/a%25/f.parquet"), "/tmp/a%25/f.parquet");
        assert_eq!(local("file://localhost/tmp/x"), "/tmp/x");
        assert_eq!(local("/tmp/a%3Ab"), "/tmp/a%3Ab");
        assert_eq!(local("C:\\data\\x.parquet"), "C:\\data\\x.parquet");
        assert!(Input::parse_literal("file://host/tmp/x").is_err());
        assert!(Input::parse_literal("s3:bucket/x").is_err());
        assert!(Input::parse_literal("s3://bucket/a//b").is_err());
    }

    #[test]
    fn urls_decode_their_escapes() {
        // The URL reading, for contrast: what `FileTask::new` and `Scan::new` do.
        match Input::parse("file:///tmp/a%3Ab/f.parquet").unwrap() {
            Input::Local(p) => assert_eq!(p.to_string_lossy(), "/tmp/a:b/f.parquet"),
            _ => panic!("not local"),
        }
    }
}
