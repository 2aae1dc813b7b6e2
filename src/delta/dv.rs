//! Deletion vectors as rayquet deleted rows.
//!
//! The kernel reads a file's deletion vector (`DvInfo::get_row_indexes`: an inline bitmap, or
//! a slice of a `.bin` file with its CRC checked) through the engine's storage handler,
//! synchronously. rayquet runs that on tokio's blocking pool while the data file's footer is
//! fetched ([`DvLoader`], a `DeleteLoader`), with a storage handler ([`BlockingStore`]) whose
//! reads never need another blocking-pool thread (remote stores are awaited with the runtime
//! handle; local files are read with `std::fs`), so no number of concurrent loads can
//! deadlock the pool.
//!
//! Invariant: a deletion vector that cannot be read is an error naming the data file and the
//! deletion vector, never "no rows deleted".

use std::sync::Arc;

use bytes::Bytes;
use delta_kernel::scan::state::DvInfo;
use delta_kernel::{
    DeltaResult, DeltaResultIteratorStatic, Engine, EvaluationHandler, FileMeta, FileSlice,
    JsonHandler, ParquetHandler, StorageHandler,
};
use futures::future::BoxFuture;
use object_store::ObjectStoreExt;
use url::Url;

use crate::task::{DeleteLoader, LoadContext, RoaringTreemap};
use crate::{Error, ErrorKind, Result};

/// Reads whole objects (or ranges) by URL, blocking the calling thread, which must be one of
/// tokio's blocking threads (or any non-runtime thread).
#[derive(Debug)]
pub(crate) struct BlockingStore {
    pub options: Vec<(String, String)>,
    pub io: tokio::runtime::Handle,
}

impl BlockingStore {
    fn read(&self, url: &Url, range: Option<std::ops::Range<u64>>) -> DeltaResult<Bytes> {
        let err = |e: &dyn std::fmt::Display| delta_kernel::Error::generic(format!("{url}: {e}"));
        if url.scheme() == "file" {
            let path = url
                .to_file_path()
                .map_err(|_| delta_kernel::Error::generic(format!("{url}: not a file path")))?;
            let bytes = std::fs::read(&path).map_err(|e| err(&e))?;
            let bytes = Bytes::from(bytes);
            return Ok(match range {
                Some(r) => bytes.slice(r.start as usize..(r.end as usize).min(bytes.len())),
                None => bytes,
            });
        }
        let (store, path) =
            crate::object_store_for(url.as_str(), &self.options).map_err(|e| err(&e))?;
        self.io.block_on(async move {
            match range {
                Some(r) => store.get_range(&path, r).await.map_err(|e| err(&e)),
                None => {
                    let g = store.get(&path).await.map_err(|e| err(&e))?;
                    g.bytes().await.map_err(|e| err(&e))
                }
            }
        })
    }
}

impl StorageHandler for BlockingStore {
    fn list_from(&self, path: &Url) -> DeltaResult<DeltaResultIteratorStatic<FileMeta>> {
        Err(delta_kernel::Error::generic(format!(
            "listing {path} is not supported while reading a deletion vector"
        )))
    }

    fn read_files(&self, files: Vec<FileSlice>) -> DeltaResult<DeltaResultIteratorStatic<Bytes>> {
        let out: Vec<DeltaResult<Bytes>> = files
            .into_iter()
            .map(|(url, range)| self.read(&url, range))
            .collect();
        Ok(Box::new(out.into_iter()))
    }

    fn copy_atomic(&self, src: &Url, _dest: &Url) -> DeltaResult<()> {
        Err(delta_kernel::Error::generic(format!(
            "cannot copy {src}: read-only"
        )))
    }

    fn put(&self, path: &Url, _data: Bytes, _overwrite: bool) -> DeltaResult<()> {
        Err(delta_kernel::Error::generic(format!(
            "cannot write {path}: read-only"
        )))
    }

    fn head(&self, path: &Url) -> DeltaResult<FileMeta> {
        let bytes = self.read(path, None)?;
        Ok(FileMeta::new(path.clone(), 0, bytes.len() as u64))
    }

    fn delete(&self, path: &Url) -> DeltaResult<()> {
        Err(delta_kernel::Error::generic(format!(
            "cannot delete {path}: read-only"
        )))
    }
}

/// The engine a deletion vector is read with: its storage is a [`BlockingStore`], the rest is
/// the table's engine.
struct DvEngine {
    storage: Arc<BlockingStore>,
    inner: Arc<dyn Engine>,
}

impl Engine for DvEngine {
    fn evaluation_handler(&self) -> Arc<dyn EvaluationHandler> {
        self.inner.evaluation_handler()
    }
    fn storage_handler(&self) -> Arc<dyn StorageHandler> {
        self.storage.clone()
    }
    fn json_handler(&self) -> Arc<dyn JsonHandler> {
        self.inner.json_handler()
    }
    fn parquet_handler(&self) -> Arc<dyn ParquetHandler> {
        self.inner.parquet_handler()
    }
}

/// Loads one data file's deletion vector while its footer is fetched.
pub(crate) struct DvLoader {
    pub dv: DvInfo,
    pub root: Url,
    pub file: String,
    pub storage: Arc<BlockingStore>,
    pub engine: Arc<dyn Engine>,
}

impl std::fmt::Debug for DvLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DvLoader")
            .field("file", &self.file)
            .finish()
    }
}

impl DeleteLoader for DvLoader {
    fn load(&self, _ctx: LoadContext) -> BoxFuture<'static, Result<RoaringTreemap>> {
        let engine = DvEngine {
            storage: Arc::clone(&self.storage),
            inner: Arc::clone(&self.engine),
        };
        let (dv, root, file) = (self.dv.clone(), self.root.clone(), self.file.clone());
        Box::pin(async move {
            let read = tokio::task::spawn_blocking(move || dv.get_row_indexes(&engine, &root));
            let rows = match read.await {
                Ok(Ok(rows)) => rows.unwrap_or_default(),
                Ok(Err(e)) => {
                    return Err(Error::new(
                        ErrorKind::CorruptData,
                        format!("reading its deletion vector: {e}"),
                    )
                    .with_path(file))
                }
                Err(e) => {
                    return Err(Error::new(
                        ErrorKind::Panic,
                        format!("reading its deletion vector failed: {e}"),
                    )
                    .with_path(file))
                }
            };
            Ok(rows.into_iter().collect())
        })
    }
}
