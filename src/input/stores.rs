//! Stores: one object store per (scheme, bucket or account), built from the environment and
//! the scan's store options, or the caller's own for a URL root.
//!
//! Invariant: a store is built once per scan and root, with the scan's retry configuration,
//! HTTP client options and a connector that counts its requests; building makes no request.

use std::collections::HashMap;
use std::sync::Arc;

use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreScheme};
use url::Url;

use crate::error::{Error, ErrorKind, Result};
use crate::input::location::{FileRef, Input, LiteralInput};
use crate::input::retry;
use crate::metrics::Metrics;
use crate::options::ScanOptions;

/// Apply the options whose key the builder knows (object_store's config key names,
/// case-insensitive, after [`super::store_keys::normalize`] checked that some store knows
/// each); other keys belong to other backends.
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
    pub(crate) http: retry::Http,
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores")
            .field("stores", &self.cache.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Stores {
    /// The stores of a scan with `options` (its store options, its own stores by URL root, its
    /// retry and HTTP client configuration); their requests and retries are counted in
    /// `metrics`.
    /// Fails on a store option no store knows ([`super::store_keys::normalize`]).
    pub fn new(options: &ScanOptions, metrics: Option<Arc<Metrics>>) -> Result<Self> {
        Ok(Stores {
            cache: options
                .stores
                .iter()
                .map(|(k, v)| (root_key(k), Arc::clone(v)))
                .collect(),
            options: super::store_keys::normalize(&options.store_options)?,
            local: None,
            http: retry::Http {
                #[cfg(feature = "cloud")]
                retry: options.retry.clone(),
                #[cfg(feature = "cloud")]
                client: options.client_options.clone(),
                metrics,
            },
        })
    }

    /// The store for local paths: the caller's for `file://`, else the local file system.
    pub fn local(&mut self) -> Arc<dyn ObjectStore> {
        if let Some(store) = self.cache.get(&root_key("file://")) {
            return Arc::clone(store);
        }
        self.local
            .get_or_insert_with(|| Arc::new(LocalFileSystem::new()))
            .clone()
    }

    /// The file at `location` (a URL or a local path), of `size` bytes when known. No IO: a
    /// missing object is found by the first request. `literal`: the location is taken
    /// literally, `%` escapes are part of the key ([`Input::parse_literal`]).
    pub fn file(&mut self, location: &str, size: Option<u64>, literal: bool) -> Result<FileRef> {
        let name: Arc<str> = location.into();
        let parsed = if literal {
            match Input::parse_literal(location)? {
                LiteralInput::Local(p) => Input::Local(p),
                LiteralInput::Key { root, path } => {
                    let store = self.store(&root)?;
                    return Ok(FileRef {
                        store,
                        path,
                        size,
                        name,
                        version: None,
                    });
                }
            }
        } else {
            match Url::parse(location) {
                // Any scheme here: the caller may have given a store for one object_store does
                // not know.
                Ok(url) if url.scheme().len() > 1 && url.scheme() != "file" => Input::Url(url),
                _ => Input::parse(location)?,
            }
        };
        match parsed {
            Input::Url(url) => {
                let (store, path) = self.get(&url)?;
                Ok(FileRef {
                    store,
                    path,
                    size,
                    name,
                    version: None,
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
                    version: None,
                })
            }
            Input::Objects { .. } => unreachable!("parse gives URLs and paths"),
        }
    }

    /// The store and the object's path of a URL (its path percent-decoded, as URLs are).
    pub(crate) fn get(&mut self, url: &Url) -> Result<(Arc<dyn ObjectStore>, Path)> {
        let bad = |e: &dyn std::fmt::Display| {
            Error::new(ErrorKind::InvalidArgument, e.to_string()).with_path(url.as_str())
        };
        let path = match ObjectStoreScheme::parse(url) {
            Ok((_, p)) => Path::parse(p).map_err(|e| bad(&e))?,
            // A scheme object_store does not know: only with the caller's store.
            Err(_) => Path::from_url_path(url.path()).map_err(|e| bad(&e))?,
        };
        Ok((self.store(url)?, path))
    }

    /// The store of a URL's root (`scheme://authority`): the caller's, or one built once.
    pub(crate) fn store(&mut self, url: &Url) -> Result<Arc<dyn ObjectStore>> {
        let options = &self.options;
        let bad = |e: &dyn std::fmt::Display| {
            Error::new(ErrorKind::InvalidArgument, e.to_string()).with_path(url.as_str())
        };
        let key = root_key(&format!("{}://{}", url.scheme(), url.authority()));
        if let Some(store) = self.cache.get(&key) {
            return Ok(Arc::clone(store));
        }
        let (scheme, _) = ObjectStoreScheme::parse(url).map_err(|e| bad(&e))?;
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
        Ok(store)
    }
}

/// How a URL root (`scheme://authority`, with or without a trailing `/`) is keyed.
fn root_key(root: &str) -> String {
    root.trim_end_matches('/').to_ascii_lowercase()
}

/// The object store for `location` and the object's path in it, as scans with `options` get
/// theirs (see [`crate::layer::store_for`]). `literal`: `%` escapes are part of the key.
pub(crate) fn store_for(
    options: &ScanOptions,
    location: &str,
    literal: bool,
) -> Result<(Arc<dyn ObjectStore>, Path)> {
    let mut stores = Stores::new(options, None)?;
    let f = stores.file(location, None, literal)?;
    Ok((f.store, f.path))
}
