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

/// A file of a plain scan, and where listing found it.
#[derive(Debug, Clone)]
pub(crate) struct Listed {
    pub file: FileRef,
    /// The file's path below the directory or prefix it was listed under (`/`-separated,
    /// its name last); `None` for a file named directly.
    pub under: Option<String>,
}

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
) -> Result<Vec<Listed>> {
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
        .map(|m| {
            let under = m
                .location
                .prefix_match(prefix)
                .map(|parts| parts.map(|p| p.as_ref().to_string()).collect::<Vec<_>>())
                .map(|parts| parts.join("/"));
            Listed {
                under,
                file: FileRef {
                    version: Some(Version::from(&m)),
                    name: name(&m.location).into(),
                    store: Arc::clone(store),
                    path: m.location,
                    size: Some(m.size),
                },
            }
        })
        .collect())
}

/// A file named directly (not listed).
fn named(file: FileRef) -> Listed {
    Listed { file, under: None }
}

/// Resolve every input into files, in order. Prefixes are listed concurrently with nothing
/// else: this runs once, in `build()`.
pub(crate) async fn resolve(inputs: Vec<Input>, stores: &mut Stores) -> Result<Vec<Listed>> {
    let mut files = Vec::new();
    for input in inputs {
        match input {
            Input::Objects { store, objects } => {
                files.extend(objects.into_iter().map(|o| {
                    named(FileRef {
                        name: o.path.to_string().into(),
                        store: Arc::clone(&store),
                        path: o.path,
                        size: o.size,
                        version: o.version,
                    })
                }));
            }
            Input::Local(p) => files.extend(local(&p, stores).await?),
            Input::Url(url) => files.extend(url_files(&url, stores).await?),
        }
    }
    Ok(files)
}

/// A local file, or the Parquet files under a local directory.
async fn local(p: &std::path::Path, stores: &mut Stores) -> Result<Vec<Listed>> {
    let store = stores.local();
    let shown = p.display().to_string();
    let meta = std::fs::metadata(p).map_err(|e| {
        let kind = match e.kind() {
            std::io::ErrorKind::NotFound => ErrorKind::NotFound,
            std::io::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
            _ => ErrorKind::Io,
        };
        Error::new(kind, e.to_string()).with_path(&shown)
    })?;
    let abs = std::fs::canonicalize(p)
        .map_err(|e| Error::new(ErrorKind::Io, e.to_string()).with_path(&shown))?;
    let path = Path::from_filesystem_path(&abs)
        .map_err(|e| Error::new(ErrorKind::InvalidArgument, e.to_string()).with_path(&shown))?;
    if meta.is_dir() {
        let name = |l: &Path| format!("/{l}");
        return list_parquet(&store, &path, &shown, name, &stores.http).await;
    }
    Ok(vec![named(FileRef {
        store,
        path,
        size: Some(meta.len()),
        name: shown.into(),
        version: Some(Version {
            e_tag: local_tag(&meta),
            last_modified: meta.modified().ok(),
        }),
    })])
}

/// The object a URL names, or the Parquet files under it: a URL ending in `/` (or naming a
/// bucket) is a prefix; one ending in `.parquet` an object; anything else an object if it
/// exists, else a prefix.
async fn url_files(url: &url::Url, stores: &mut Stores) -> Result<Vec<Listed>> {
    let (store, path) = stores.get(url)?;
    let root = format!("{}://{}", url.scheme(), url.authority());
    let name = |l: &Path| format!("{root}/{l}");
    let shown = url.as_str();
    if url.path().ends_with('/') || path.as_ref().is_empty() {
        return list_parquet(&store, &path, shown, name, &stores.http).await;
    }
    if is_parquet(&path) {
        return Ok(vec![named(FileRef {
            store,
            name: name(&path).into(),
            path,
            size: None,
            version: None,
        })]);
    }
    match store.head(&path).await {
        Ok(meta) => Ok(vec![named(FileRef {
            version: Some(Version::from(&meta)),
            store,
            name: name(&path).into(),
            path,
            size: Some(meta.size),
        })]),
        Err(object_store::Error::NotFound { .. }) => {
            list_parquet(&store, &path, shown, name, &stores.http).await
        }
        Err(e) => Err(Error::from_store(e, shown)),
    }
}

/// A dataset's files and Hive partition columns, as a plain scan of it would read them
/// ([`crate::layer::list_dataset`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Dataset {
    /// The files, in the scan's order.
    pub files: Vec<DatasetFile>,
    /// The Hive partition columns (empty when there are none), nullable, in path order.
    pub partition_fields: arrow::datatypes::Fields,
}

/// One file of a [`Dataset`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct DatasetFile {
    /// Its URL (or absolute local path), which [`FileTask::new`](crate::FileTask::new) takes
    /// back.
    pub location: String,
    /// Its size, when listing gave it.
    pub size: Option<u64>,
    /// Its version (ETag, last-modified time), when listing gave it: with the size, what
    /// tells this object's contents from a rewrite ([`FileTask::version`](crate::FileTask::version)).
    pub version: Option<crate::FileVersion>,
    /// Its partition values, one per partition column: a [`ColumnSource::Constant`] of the
    /// value's text (which converts exactly to the column's type) or [`ColumnSource::Null`].
    ///
    /// [`ColumnSource::Constant`]: crate::ColumnSource::Constant
    /// [`ColumnSource::Null`]: crate::ColumnSource::Null
    pub partition: Vec<crate::ColumnSource>,
    /// The same values typed (one-element arrays).
    values: Option<Arc<[arrow::array::ArrayRef]>>,
}

impl Dataset {
    /// Drop the files whose partition values prove that `filter` keeps none of their rows
    /// (as a plain scan skips them before reading any byte); returns how many went.
    pub fn retain_matching(&mut self, filter: &crate::Expr) -> Result<usize> {
        if self.partition_fields.is_empty() {
            return Ok(0);
        }
        let before = self.files.len();
        let mut kept = Vec::with_capacity(before);
        for f in self.files.drain(..) {
            let constants: Vec<(String, arrow::array::ArrayRef)> = match &f.values {
                Some(v) => self
                    .partition_fields
                    .iter()
                    .zip(v.iter())
                    .map(|(field, a)| (field.name().clone(), Arc::clone(a)))
                    .collect(),
                None => Vec::new(),
            };
            if !crate::expr::fold::excluded_by_constants(filter, &constants)
                .map_err(|e| e.with_path(f.location.as_str()))?
            {
                kept.push(f);
            }
        }
        self.files = kept;
        Ok(before - self.files.len())
    }
}

/// The dataset at `url_or_path` as a plain scan with `options` reads it (see
/// [`crate::layer::list_dataset_async`]).
pub(crate) async fn dataset(
    options: &crate::ScanOptions,
    url_or_path: &str,
    partitioning: &crate::Partitioning,
) -> Result<Dataset> {
    let input = Input::parse(url_or_path)?;
    let mut stores = Stores::new(options, None)?;
    let files = resolve(vec![input], &mut stores).await?;
    let rels: Vec<Option<String>> = files.iter().map(|l| l.under.clone()).collect();
    let names: Vec<Arc<str>> = files.iter().map(|l| l.file.name.clone()).collect();
    let hive = crate::input::hive::discover(partitioning, &rels, &names)?;
    let mut texts = hive.as_ref().map(|h| h.texts.clone().into_iter());
    let mut values = hive.as_ref().map(|h| h.values.clone().into_iter());
    let files = files
        .into_iter()
        .map(|l| DatasetFile {
            values: values.as_mut().and_then(|v| v.next()),
            location: l.file.name.to_string(),
            size: l.file.size,
            version: l.file.version.clone(),
            partition: texts
                .as_mut()
                .and_then(|t| t.next())
                .unwrap_or_default()
                .into_iter()
                .map(|v| match v {
                    Some(text) => crate::ColumnSource::Constant(crate::expr::Value::Str(text)),
                    None => crate::ColumnSource::Null,
                })
                .collect(),
        })
        .collect();
    Ok(Dataset {
        files,
        partition_fields: hive.map(|h| h.fields).unwrap_or_default(),
    })
}

/// What tells a local file's versions apart beyond its size and modification time: its inode
/// and status-change time (a file replaced by a rename is another inode; one rewritten in place
/// has a new ctime even when its mtime was set back).
#[cfg(unix)]
fn local_tag(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    Some(format!(
        "{:x}-{}.{}",
        meta.ino(),
        meta.ctime(),
        meta.ctime_nsec()
    ))
}

#[cfg(not(unix))]
fn local_tag(_: &std::fs::Metadata) -> Option<String> {
    None
}
