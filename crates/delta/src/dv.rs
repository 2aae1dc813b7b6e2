//! Deletion vectors as rayquet deleted rows.
//!
//! The kernel decodes a file's deletion vector (`DeletionVectorDescriptor::read`: an inline
//! bitmap, or a slice of a `.bin` file with its size, magic and CRC checked) into a Roaring
//! bitmap, reading the DV file through the engine's storage handler, synchronously. The bitmap
//! is used as it is (its runs stay runs; the kernel's `get_row_indexes` would expand every
//! position into a `Vec<u64>`): its cardinality, summed from its containers, must be the log's,
//! and the core refuses positions past the data file's rows. Here nothing blocks: a [`DvLoader`]
//! (a `DeleteLoader`, awaited on the IO runtime while the data file's footer is fetched) runs
//! the kernel's decoding on the decode pool with a storage handler that only serves bytes
//! already fetched ([`Fetched`]). When the kernel asks for a DV file that is not there yet,
//! the loader fetches it asynchronously ([`DvFiles`]: each DV file once per scan, although
//! the DVs of one commit usually share one file) and decodes again.
//!
//! Invariant: a deletion vector that cannot be read, or whose cardinality is not the log's, is
//! an error naming the data file and the deletion vector, never "no rows deleted"; no position
//! is expanded before those checks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use delta_kernel::actions::deletion_vector::DeletionVectorDescriptor;
use delta_kernel::{DeltaResult, DeltaResultIteratorStatic, FileMeta, FileSlice, StorageHandler};
use futures::future::{BoxFuture, FutureExt, Shared};
use object_store::{ObjectStore, ObjectStoreExt};
use url::Url;

use rayquet::task::{DeleteLoader, LoadContext, RoaringTreemap};
use rayquet::{Error, ErrorKind, Result, ScanOptions};

/// A DV file's fetch, shared by every data file whose DV lives in it.
type SharedFetch = Shared<BoxFuture<'static, Result<Bytes>>>;

/// The DV files of one scan, each fetched at most once (asynchronously).
pub(crate) struct DvFiles {
    /// The stores of the scan (the table's by its URL root).
    options: ScanOptions,
    fetches: Mutex<HashMap<Url, SharedFetch>>,
}

impl std::fmt::Debug for DvFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DvFiles").finish_non_exhaustive()
    }
}

impl DvFiles {
    /// DV files read through the stores of `options`.
    pub fn new(options: ScanOptions) -> Self {
        DvFiles {
            options,
            fetches: Mutex::new(HashMap::new()),
        }
    }

    /// The store and path of `url`.
    fn locate(&self, url: &Url) -> Result<(Arc<dyn ObjectStore>, object_store::path::Path)> {
        rayquet::layer::store_for(&self.options, url.as_str())
    }

    /// The whole DV file at `url` (one GET for the whole scan).
    async fn get(&self, url: &Url) -> Result<Bytes> {
        let fetch = {
            let mut fetches = self.fetches.lock().unwrap_or_else(|e| e.into_inner());
            match fetches.get(url) {
                Some(f) => f.clone(),
                None => {
                    let (store, path) = self.locate(url)?;
                    let name = url.to_string();
                    let f = async move {
                        let at = |e: object_store::Error| Error::from(e).with_path(name.clone());
                        let got = store.get(&path).await.map_err(at)?;
                        got.bytes().await.map_err(at)
                    }
                    .boxed()
                    .shared();
                    fetches.insert(url.clone(), f.clone());
                    f
                }
            }
        };
        fetch.await
    }
}

/// A storage handler serving only one fetched file; it remembers the first other file asked.
#[derive(Debug, Default)]
struct Fetched {
    file: Option<(Url, Bytes)>,
    missing: Mutex<Option<Url>>,
}

impl Fetched {
    fn missing(&self) -> Option<Url> {
        self.missing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn read(&self, url: &Url, range: Option<std::ops::Range<u64>>) -> DeltaResult<Bytes> {
        match &self.file {
            Some((u, bytes)) if u == url => Ok(match range {
                Some(r) => {
                    let end = (r.end as usize).min(bytes.len());
                    bytes.slice((r.start as usize).min(end)..end)
                }
                None => bytes.clone(),
            }),
            _ => {
                self.missing
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert_with(|| url.clone());
                Err(delta_kernel::Error::generic(format!(
                    "{url}: not fetched yet"
                )))
            }
        }
    }
}

impl StorageHandler for Fetched {
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

/// Loads one data file's deletion vector while its footer is fetched.
pub(crate) struct DvLoader {
    pub dv: DeletionVectorDescriptor,
    pub root: Url,
    pub file: String,
    pub files: Arc<DvFiles>,
}

impl std::fmt::Debug for DvLoader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DvLoader")
            .field("file", &self.file)
            .finish()
    }
}

/// What one decoding attempt on the pool gave.
pub(crate) enum Attempt {
    Rows(RoaringTreemap),
    /// The kernel needs this DV file first.
    Needs(Url),
}

/// One attempt at decoding `dv` (of the table at `root`, for data file `name`) with the DV
/// file `fetched`, if one was: the deleted rows, their count checked against the log's
/// cardinality; or the DV file the kernel asked for and that is not fetched yet. CPU work.
pub(crate) fn attempt(
    dv: &DeletionVectorDescriptor,
    root: &Url,
    fetched: Option<(Url, Bytes)>,
    name: &str,
) -> Result<Attempt> {
    let had_file = fetched.is_some();
    let storage = Arc::new(Fetched {
        file: fetched,
        missing: Mutex::new(None),
    });
    match dv.read(Arc::clone(&storage) as Arc<dyn StorageHandler>, root) {
        Ok(rows) if rows.len() as i64 != dv.cardinality => Err(Error::new(
            ErrorKind::CorruptTable,
            format!(
                "its deletion vector deletes {} rows; the log says {}",
                rows.len(),
                dv.cardinality
            ),
        )
        .with_path(name)),
        Ok(rows) => Ok(Attempt::Rows(rows)),
        Err(e) => match storage.missing() {
            Some(url) if !had_file => Ok(Attempt::Needs(url)),
            _ => Err(Error::new(
                ErrorKind::CorruptData,
                format!("reading its deletion vector: {e}"),
            )
            .with_path(name)),
        },
    }
}

impl DeleteLoader for DvLoader {
    fn load(&self, ctx: LoadContext) -> BoxFuture<'static, Result<RoaringTreemap>> {
        let (dv, root, file) = (self.dv.clone(), self.root.clone(), self.file.clone());
        let files = Arc::clone(&self.files);
        Box::pin(async move {
            let mut fetched: Option<(Url, Bytes)> = None;
            loop {
                let (dv, root, name, got) = (dv.clone(), root.clone(), file.clone(), fetched);
                let found = ctx
                    .spawn_cpu(move || attempt(&dv, &root, got, &name))
                    .await?;
                match found {
                    Attempt::Rows(rows) => return Ok(rows),
                    Attempt::Needs(url) => {
                        let bytes = files.get(&url).await.map_err(|e| {
                            Error::new(
                                e.kind(),
                                format!("reading its deletion vector: {}", e.message()),
                            )
                            .with_path(file.clone())
                        })?;
                        fetched = Some((url, bytes));
                    }
                }
            }
        })
    }
}
