//! Listing: every input of a plain scan resolved into the ordered list of its files.
//!
//! Invariants: a prefix expands to every `*.parquet` object under it in lexical order; a list
//! of inputs keeps the caller's order; a file whose size is known (listing, `ObjectMeta`, local
//! metadata) is never HEADed. Runs on the IO runtime (listing and HEAD are requests).

use std::sync::Arc;

use futures::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};

use crate::cache::Version;
use crate::error::{Error, ErrorKind, Result};
use crate::input::location::{is_parquet, FileRef, Input};
use crate::input::retry;
use crate::input::stores::Stores;

/// List `prefix` in `store`, keep `*.parquet`, sort lexically. A listing that fails part way
/// for a reason that may pass (a body cut off, a connection reset: object_store retries
/// status codes, not a page whose body breaks) starts again, with backoff, within `retry`'s
/// bounds.
async fn list_parquet(
    store: &Arc<dyn ObjectStore>,
    prefix: &Path,
    base: &str,
    name: impl Fn(&Path) -> String,
    retry: &retry::Http,
) -> Result<Vec<FileRef>> {
    let list = || async {
        store
            .list(Some(prefix))
            .try_filter(|m| futures::future::ready(is_parquet(&m.location)))
            .try_collect::<Vec<_>>()
            .await
    };
    let mut metas = retry
        .again(list, retry::transient)
        .await
        .map_err(|e| Error::from_store(e, base).context("listing"))?;
    metas.sort_by(|a, b| a.location.cmp(&b.location));
    if metas.is_empty() {
        return Err(Error::new(ErrorKind::NotFound, "no *.parquet objects found").with_path(base));
    }
    Ok(metas
        .into_iter()
        .map(|m| FileRef {
            version: Some(Version::from(&m)),
            name: name(&m.location).into(),
            store: Arc::clone(store),
            path: m.location,
            size: Some(m.size),
        })
        .collect())
}

/// Resolve every input into files, in order. Prefixes are listed concurrently with nothing
/// else: this runs once, in `build()`.
pub(crate) async fn resolve(inputs: Vec<Input>, stores: &mut Stores) -> Result<Vec<FileRef>> {
    let mut files = Vec::new();
    for input in inputs {
        match input {
            Input::Objects { store, objects } => {
                files.extend(objects.into_iter().map(|o| FileRef {
                    name: o.path.to_string().into(),
                    store: Arc::clone(&store),
                    path: o.path,
                    size: o.size,
                    version: o.version,
                }));
            }
            Input::Local(p) => {
                let store = stores.local();
                let shown = p.display().to_string();
                let meta = std::fs::metadata(&p).map_err(|e| {
                    let kind = match e.kind() {
                        std::io::ErrorKind::NotFound => ErrorKind::NotFound,
                        std::io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
                        _ => ErrorKind::Io,
                    };
                    Error::new(kind, e.to_string()).with_path(&shown)
                })?;
                let abs = std::fs::canonicalize(&p)
                    .map_err(|e| Error::new(ErrorKind::Io, e.to_string()).with_path(&shown))?;
                let path = Path::from_filesystem_path(&abs).map_err(|e| {
                    Error::new(ErrorKind::InvalidArgument, e.to_string()).with_path(&shown)
                })?;
                if meta.is_dir() {
                    let name = |l: &Path| format!("/{l}");
                    files.extend(list_parquet(&store, &path, &shown, name, &stores.http).await?);
                } else {
                    files.push(FileRef {
                        store,
                        path,
                        size: Some(meta.len()),
                        name: shown.into(),
                        version: Some(Version {
                            e_tag: None,
                            last_modified: meta.modified().ok(),
                        }),
                    });
                }
            }
            Input::Url(url) => {
                let (store, path) = stores.get(&url)?;
                let root = format!("{}://{}", url.scheme(), url.authority());
                let name = |l: &Path| format!("{root}/{l}");
                let shown = url.as_str();
                if url.path().ends_with('/') || path.as_ref().is_empty() {
                    files.extend(list_parquet(&store, &path, shown, name, &stores.http).await?);
                } else if is_parquet(&path) {
                    files.push(FileRef {
                        store,
                        name: name(&path).into(),
                        path,
                        size: None,
                        version: None,
                    });
                } else {
                    match store.head(&path).await {
                        Ok(meta) => files.push(FileRef {
                            version: Some(Version::from(&meta)),
                            store,
                            name: name(&path).into(),
                            path,
                            size: Some(meta.size),
                        }),
                        Err(object_store::Error::NotFound { .. }) => files
                            .extend(list_parquet(&store, &path, shown, name, &stores.http).await?),
                        Err(e) => return Err(Error::from_store(e, shown)),
                    }
                }
            }
        }
    }
    Ok(files)
}

impl crate::ScanOptions {
    /// The files a scan of `url_or_path` with these options would read, in its order: the
    /// object itself, or every `*.parquet` object under a prefix or directory, each with its
    /// size when listing gave it. Locations are URLs (or absolute local paths) that
    /// [`FileTask::new`](crate::FileTask::new) takes back. Lists on the IO runtime and waits
    /// (callable from any thread); [`ScanOptions::list_files_async`](crate::ScanOptions::list_files_async) from async code.
    pub fn list_files(&self, url_or_path: &str) -> Result<Vec<(String, Option<u64>)>> {
        let this = self.clone();
        let url = url_or_path.to_string();
        self.wait(async move { this.list_files_async(&url).await })
    }

    /// [`ScanOptions::list_files`](crate::ScanOptions::list_files) as a future. Listing requests run on whatever runtime
    /// polls it.
    pub async fn list_files_async(&self, url_or_path: &str) -> Result<Vec<(String, Option<u64>)>> {
        let input = Input::parse(url_or_path)?;
        let mut stores = Stores::new(self, None);
        let files = resolve(vec![input], &mut stores).await?;
        Ok(files
            .into_iter()
            .map(|f| (f.name.to_string(), f.size))
            .collect())
    }
}
