//! Inputs: turn URLs, local paths and caller-built stores into the ordered list of files a
//! scan reads.
//!
//! Invariants: a prefix expands to every `*.parquet` object under it in lexical order; a list of
//! inputs keeps the caller's order; a file whose size is known (listing, `ObjectMeta`, local
//! metadata) is never HEADed. Runs on the IO runtime (listing and HEAD are requests).

use std::collections::HashMap;
use std::sync::Arc;

use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, ObjectStoreScheme};
use url::Url;

use crate::error::{Error, ErrorKind, Result};

/// One object to read: its path in a store and, when known, its size in bytes.
///
/// Build it from an [`object_store::ObjectMeta`] (size known) or an
/// [`object_store::path::Path`] (size learnt from the footer request).
#[derive(Debug, Clone)]
pub struct ObjectRef {
    pub(crate) path: Path,
    pub(crate) size: Option<u64>,
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

fn is_parquet(p: &Path) -> bool {
    p.filename().is_some_and(|f| f.ends_with(".parquet"))
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
    retry: &crate::retry::Http,
) -> Result<Vec<FileRef>> {
    let list = || async {
        store
            .list(Some(prefix))
            .try_filter(|m| futures::future::ready(is_parquet(&m.location)))
            .try_collect::<Vec<_>>()
            .await
    };
    let mut metas = retry
        .again(list, crate::retry::transient)
        .await
        .map_err(|e| {
            let e = Error::from_store(e, base);
            let msg = format!("listing: {}", e.message());
            Error::new(e.kind(), msg).with_path(base)
        })?;
    metas.sort_by(|a, b| a.location.cmp(&b.location));
    if metas.is_empty() {
        return Err(Error::new(ErrorKind::NotFound, "no *.parquet objects found").with_path(base));
    }
    Ok(metas
        .into_iter()
        .map(|m| FileRef {
            name: name(&m.location).into(),
            store: Arc::clone(store),
            path: m.location,
            size: Some(m.size),
        })
        .collect())
}

/// Apply the caller's options whose key the builder knows (object_store's config key names,
/// case-insensitive); other keys belong to other backends and are skipped.
#[cfg(feature = "cloud")]
fn configure<B, K: std::str::FromStr>(
    builder: B,
    options: &[(String, String)],
    set: impl Fn(B, K, &str) -> B,
) -> B {
    options.iter().fold(builder, |b, (k, v)| {
        match k.to_ascii_lowercase().parse::<K>() {
            Ok(key) => set(b, key, v),
            Err(_) => b,
        }
    })
}

/// A cloud store from its builder type: the environment, the URL, the scan's options, its
/// retry configuration, client options and counting connector. (The three builders share
/// these methods but no trait.)
#[cfg(feature = "cloud")]
macro_rules! cloud {
    ($builder:ty, $url:expr, $options:expr, $http:expr, $bad:expr) => {{
        let b = <$builder>::from_env().with_url($url.as_str());
        let b = configure(b, $options, |b, k, v| b.with_config(k, v))
            .with_retry($http.retry())
            .with_http_connector($http.connector());
        let b = match $http.client_options() {
            Some(c) => b.with_client_options(c),
            None => b,
        };
        Arc::new(b.build().map_err(|e| $bad(&e))?)
    }};
}

/// Builds one store per (scheme, bucket/account), taking credentials from the environment and
/// the scan's store options, or takes the caller's store for a URL prefix
/// (`Scan::object_store`).
#[derive(Default)]
pub(crate) struct Stores {
    cache: HashMap<String, Arc<dyn ObjectStore>>,
    options: Vec<(String, String)>,
    local: Option<Arc<dyn ObjectStore>>,
    /// How the stores built here retry, and their HTTP client options.
    pub(crate) http: crate::retry::Http,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores")
            .field("stores", &self.cache.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Stores {
    /// Stores configured with `options`; `given`: the caller's stores by `scheme://authority`.
    pub fn new(options: Vec<(String, String)>, given: Vec<(String, Arc<dyn ObjectStore>)>) -> Self {
        Stores {
            cache: given
                .into_iter()
                .map(|(k, v)| (k.trim_end_matches('/').to_string(), v))
                .collect(),
            options,
            local: None,
            http: Default::default(),
        }
    }

    fn local(&mut self) -> Arc<dyn ObjectStore> {
        self.local
            .get_or_insert_with(|| Arc::new(LocalFileSystem::new()))
            .clone()
    }

    /// The file at `location` (a URL or a local path), of `size` bytes when known. No IO: a
    /// missing object is found by the first request.
    pub fn file(&mut self, location: &str, size: Option<u64>) -> Result<FileRef> {
        let name: Arc<str> = location.into();
        let parsed = match Url::parse(location) {
            // Any scheme here: the caller may have given a store for one object_store does
            // not know.
            Ok(url) if url.scheme().len() > 1 && url.scheme() != "file" => Input::Url(url),
            _ => Input::parse(location)?,
        };
        match parsed {
            Input::Url(url) => {
                let (store, path) = self.get(&url)?;
                Ok(FileRef {
                    store,
                    path,
                    size,
                    name,
                })
            }
            Input::Local(p) => {
                let abs = if p.is_absolute() {
                    p
                } else {
                    std::env::current_dir()
                        .map_err(|e| Error::new(ErrorKind::Io, e.to_string()).with_path(location))?
                        .join(p)
                };
                let path = Path::from_absolute_path(&abs).map_err(|e| {
                    Error::new(ErrorKind::InvalidArgument, e.to_string()).with_path(location)
                })?;
                Ok(FileRef {
                    store: self.local(),
                    path,
                    size,
                    name,
                })
            }
            Input::Objects { .. } => unreachable!("parse gives URLs and paths"),
        }
    }

    fn get(&mut self, url: &Url) -> Result<(Arc<dyn ObjectStore>, Path)> {
        let options = &self.options;
        let bad = |e: &dyn std::fmt::Display| {
            Error::new(ErrorKind::InvalidArgument, e.to_string()).with_path(url.as_str())
        };
        let key = format!("{}://{}", url.scheme(), url.authority());
        let parsed = ObjectStoreScheme::parse(url);
        if let Some(store) = self.cache.get(&key) {
            let path = match &parsed {
                Ok((_, p)) => Path::parse(p).map_err(|e| bad(&e))?,
                // A scheme object_store does not know, with the caller's store.
                Err(_) => Path::from_url_path(url.path()).map_err(|e| bad(&e))?,
            };
            return Ok((Arc::clone(store), path));
        }
        let (scheme, path) = parsed.map_err(|e| bad(&e))?;
        let path = Path::parse(path).map_err(|e| bad(&e))?;
        #[cfg(feature = "cloud")]
        let http = &self.http;
        let store: Arc<dyn ObjectStore> = match scheme {
            ObjectStoreScheme::Memory => Arc::new(InMemory::new()),
            ObjectStoreScheme::Local => Arc::new(LocalFileSystem::new()),
            #[cfg(feature = "cloud")]
            ObjectStoreScheme::AmazonS3 => {
                cloud!(object_store::aws::AmazonS3Builder, url, options, http, bad)
            }
            #[cfg(feature = "cloud")]
            ObjectStoreScheme::GoogleCloudStorage => {
                cloud!(
                    object_store::gcp::GoogleCloudStorageBuilder,
                    url,
                    options,
                    http,
                    bad
                )
            }
            #[cfg(feature = "cloud")]
            ObjectStoreScheme::MicrosoftAzure => {
                cloud!(
                    object_store::azure::MicrosoftAzureBuilder,
                    url,
                    options,
                    http,
                    bad
                )
            }
            other => {
                let _ = options;
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    format!("unsupported store {other:?} (is the `cloud` feature on?)"),
                )
                .with_path(url.as_str()));
            }
        };
        self.cache.insert(key, Arc::clone(&store));
        Ok((store, path))
    }
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
                    });
                } else {
                    match store.head(&path).await {
                        Ok(meta) => files.push(FileRef {
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

/// The object store for `url` (`s3://bucket/...`, `gs://`, `az://`, `file://`, `memory://`
/// or a local path) and the object's path in it, built as scans build theirs: credentials
/// and endpoints from the environment, overridden by `options` (object_store's config keys,
/// e.g. `aws_endpoint`, `aws_region`, `aws_allow_http`). No request is made.
///
/// Table readers use it to read metadata through the same kind of store as the data.
pub fn object_store_for(
    url: &str,
    options: &[(String, String)],
) -> Result<(Arc<dyn ObjectStore>, Path)> {
    let mut stores = Stores::new(options.to_vec(), Vec::new());
    let f = stores.file(url, None)?;
    Ok((f.store, f.path))
}
