//! An object store wrapper for the engine's log reads that checks every Delta log JSON file
//! read through it ([`log_check`](crate::log_check): commits, log compactions, staged commits,
//! v2 JSON checkpoints) and keeps the checked files (immutable by the protocol, written with
//! put-if-absent), so the kernel's second pass over the log costs no request: building a
//! `Snapshot` reads the commits for the protocol and metadata, and `scan_metadata` reads them
//! again. Under 50 ms per request that pass is a whole round trip of the scan.
//!
//! A file that fails the check is an error ([`CorruptLog`] inside object_store's `Generic`
//! error), never bytes for the kernel to read leniently.
//!
//! Bounded: files up to [`MAX_FILE`], [`MAX_TOTAL`] in all; other reads (ranges, HEAD,
//! conditional GETs, Parquet checkpoints, `_last_checkpoint`, data) pass through untouched.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult, MultipartUpload, ObjectMeta,
    ObjectStore, PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result,
};

use crate::log_check::{self, CorruptLog, LogFile};

/// Largest commit file kept.
pub const MAX_FILE: usize = 4 << 20;
/// Most bytes kept in all.
pub const MAX_TOTAL: usize = 64 << 20;

/// The log files kept (each checked): bytes in all, and each file's metadata and bytes.
type Kept = (usize, HashMap<Path, (ObjectMeta, Bytes)>);

/// The wrapper (see the module docs).
#[derive(Debug)]
pub(crate) struct LogCache {
    inner: Arc<dyn ObjectStore>,
    /// The store's URL root (`scheme://authority`), to name files in errors.
    root: String,
    kept: Mutex<Kept>,
    /// Set when a log file was rewritten for nanosecond timestamps (see `nanos`): then every
    /// write is refused.
    rewritten: crate::nanos::Rewritten,
}

impl std::fmt::Display for LogCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LogCache({})", self.inner)
    }
}

impl LogCache {
    /// The wrapper of `inner`, the store of URL root `root` (`scheme://authority`).
    pub fn new(
        inner: Arc<dyn ObjectStore>,
        root: String,
        rewritten: crate::nanos::Rewritten,
    ) -> Self {
        LogCache {
            inner,
            root,
            kept: Mutex::new((0, HashMap::new())),
            rewritten,
        }
    }

    /// A write after a rewrite: refused.
    fn no_writes(&self) -> Result<()> {
        match self.rewritten.get() {
            true => Err(object_store::Error::NotSupported {
                source: crate::nanos::NO_WRITES.into(),
            }),
            false => Ok(()),
        }
    }

    /// A plain GET of the whole object, the only kind served from the cache.
    fn plain(o: &GetOptions) -> bool {
        o.range.is_none()
            && !o.head
            && o.if_match.is_none()
            && o.if_none_match.is_none()
            && o.if_modified_since.is_none()
            && o.if_unmodified_since.is_none()
            && o.version.is_none()
    }

    fn result(meta: ObjectMeta, bytes: Bytes) -> GetResult {
        GetResult {
            range: 0..bytes.len() as u64,
            payload: GetResultPayload::Stream(stream::once(async move { Ok(bytes) }).boxed()),
            meta,
            attributes: Default::default(),
        }
    }
}

#[async_trait]
impl ObjectStore for LogCache {
    async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
        self.no_writes()?;
        self.inner.put_opts(l, p, o).await
    }

    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.no_writes()?;
        self.inner.put_multipart_opts(l, o).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let kind = match LogFile::of(location.as_ref()) {
            Some(kind) if Self::plain(&options) => kind,
            _ => return self.inner.get_opts(location, options).await,
        };
        let hit = {
            let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            kept.1.get(location).cloned()
        };
        if let Some((meta, bytes)) = hit {
            return Ok(Self::result(meta, bytes));
        }
        let got = self.inner.get_opts(location, options).await?;
        let mut meta = got.meta.clone();
        let mut bytes = got.bytes().await?;
        if let Err(reason) = log_check::check(&bytes, kind) {
            return Err(object_store::Error::Generic {
                store: "rayquet",
                source: Box::new(CorruptLog {
                    path: format!("{}/{location}", self.root),
                    reason,
                }),
            });
        }
        // Nanosecond timestamps, shown to the kernel as it can read them (see `nanos`).
        if let Some(shown) = crate::nanos::rewrite_json(&bytes) {
            self.rewritten.set();
            meta.size = shown.len() as u64;
            bytes = Bytes::from(shown);
        }
        if bytes.len() <= MAX_FILE {
            let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            if kept.0 + bytes.len() <= MAX_TOTAL && !kept.1.contains_key(location) {
                kept.0 += bytes.len();
                kept.1
                    .insert(location.clone(), (meta.clone(), bytes.clone()));
            }
        }
        Ok(Self::result(meta, bytes))
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, o: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, o).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, o: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, o).await
    }
}
