//! An object_store-backed `FileIO` for iceberg: metadata, manifests and delete files are read
//! through the same stores (and credentials) as the data files rayquet reads, so one IO
//! stack serves the whole scan and opendal stays out of the tree.
//!
//! Every Avro metadata file it reads whole (manifest lists, manifests) is checked first
//! (rayquet-iceberg's integrity module): a damaged one is a `CorruptTable` error naming it.
//!
//! The table's FileIO properties (`s3.endpoint`, `s3.region`, `s3.access-key-id`,
//! `s3.path-style-access`, `gcs.*`, `adls.*`...) become object_store configuration keys
//! ([`store_options`]) on top of the environment.
//!
//! ```no_run
//! # fn main() -> rayquet::Result<()> {
//! use rayquet_iceberg::storage::file_io;
//! let io = file_io([("s3.endpoint", "http://127.0.0.1:9000"), ("s3.region", "us-east-1")]);
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use iceberg::io::{
    FileIO, FileIOBuilder, FileMetadata, FileRead, FileWrite, InputFile, OutputFile, Storage,
    StorageConfig, StorageFactory,
};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use rayquet::{ErrorKind, ScanBuilder, ScanOptions};

use crate::integrity::Checker;
use serde::{Deserialize, Serialize};

/// object_store configuration keys for iceberg FileIO properties (rayquet's
/// [`store_key`](rayquet::layer::store_key): `s3.*`, `gcs.*`, `adls.*`, `client.*` as pyiceberg
/// names them). A table's FileIO properties mix catalog settings (`uri`, `token`,
/// `credential`, `warehouse`...) with storage ones: what is not storage is left out here,
/// where a caller's own store options would be an error. object_store keys given directly
/// (`aws_*`, `google_*`, `azure_*`) pass through.
pub fn store_options<K: AsRef<str>, V: AsRef<str>>(
    props: impl IntoIterator<Item = (K, V)>,
) -> Vec<(String, String)> {
    use rayquet::layer::{store_key, StoreKey};
    let mut out = Vec::new();
    for (k, v) in props {
        let (k, v) = (k.as_ref(), v.as_ref());
        let storage = k.contains('.')
            || ["aws_", "google_", "azure_"]
                .iter()
                .any(|p| k.to_ascii_lowercase().starts_with(p));
        if let (true, StoreKey::Set(pairs)) = (storage, store_key(k, v)) {
            out.extend(pairs);
        }
    }
    out
}

/// A FileIO over object_store with these iceberg properties (and the environment).
pub fn file_io<K: Into<String>, V: Into<String>>(
    props: impl IntoIterator<Item = (K, V)>,
) -> FileIO {
    FileIOBuilder::new(Arc::new(ObjectStoreStorageFactory::default()))
        .with_props(props.into_iter().map(|(k, v)| (k.into(), v.into())))
        .build()
}

/// Stores by `scheme://authority`, built on first use.
#[derive(Default, Clone)]
struct Stores(Arc<Mutex<HashMap<String, Arc<dyn ObjectStore>>>>);

impl fmt::Debug for Stores {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Stores")
    }
}

/// Builds [`ObjectStoreStorage`]s: iceberg's FileIO calls it with the table's properties.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ObjectStoreStorageFactory {
    /// object_store options applied on top of those derived from the FileIO properties.
    options: Vec<(String, String)>,
    /// The caller's scan options (their stores by URL root; not serialized).
    #[serde(skip)]
    scan: ScanOptions,
}

impl ObjectStoreStorageFactory {
    /// A factory whose storages use the stores of `options` (store options, and the caller's
    /// stores by URL root, which do not serialize).
    pub fn new(options: &ScanOptions) -> Self {
        ObjectStoreStorageFactory {
            options: rayquet::layer::store_options(options).to_vec(),
            scan: options.clone(),
        }
    }
}

#[typetag::serde]
impl StorageFactory for ObjectStoreStorageFactory {
    fn build(&self, config: &StorageConfig) -> iceberg::Result<Arc<dyn Storage>> {
        let mut options = store_options(config.props());
        options.extend(self.options.iter().cloned());
        // The table's properties first, the caller's options after them (later keys win).
        let mut scan = self.scan.clone();
        for (k, v) in &options {
            scan = scan.store_option(k.clone(), v.clone());
        }
        Ok(Arc::new(ObjectStoreStorage {
            options,
            scan,
            stores: Stores::default(),
            checker: Arc::default(),
        }))
    }
}

/// iceberg `Storage` over object_store: every path is a URL (`s3://`, `gs://`, `az://`,
/// `file://`) or a local path.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ObjectStoreStorage {
    /// object_store configuration keys and values.
    options: Vec<(String, String)>,
    /// The same, with the caller's stores (not serialized).
    #[serde(skip)]
    scan: ScanOptions,
    #[serde(skip)]
    stores: Stores,
    /// Checks the Avro metadata files read (manifest lists, manifests), remembering what the
    /// lists say of their manifests.
    #[serde(skip)]
    checker: Arc<Checker>,
}

impl ObjectStoreStorage {
    /// The object_store options this storage builds its stores with.
    pub fn options(&self) -> &[(String, String)] {
        &self.options
    }

    fn resolve(&self, path: &str) -> iceberg::Result<(Arc<dyn ObjectStore>, Path)> {
        let root = match url::Url::parse(path) {
            Ok(u) if u.scheme().len() > 1 => format!("{}://{}", u.scheme(), u.authority()),
            _ => "file://".to_string(),
        };
        let scan =
            if rayquet::layer::store_options(&self.scan).is_empty() && !self.options.is_empty() {
                // Deserialized: rebuild the options from their keys and values.
                let mut scan = ScanOptions::new();
                for (k, v) in &self.options {
                    scan = scan.store_option(k.clone(), v.clone());
                }
                scan
            } else {
                self.scan.clone()
            };
        let (store, p) = rayquet::layer::store_for_literal(&scan, path).map_err(to_iceberg)?;
        let mut stores = self.stores.0.lock().expect("stores lock");
        let store = stores.entry(root).or_insert(store).clone();
        Ok((store, p))
    }
}

/// Table metadata as iceberg-rust parses it (gzip-compressed metadata is decompressed when it
/// needs a rewrite).
fn normalize_metadata(bytes: Bytes) -> Bytes {
    if bytes.starts_with(&[0x1f, 0x8b]) {
        use std::io::Read;
        let mut plain = Vec::new();
        if flate2::read::GzDecoder::new(&bytes[..])
            .read_to_end(&mut plain)
            .is_ok()
        {
            if let Some(b) = crate::normalize::table_metadata(&plain) {
                return Bytes::from(b);
            }
        }
        return bytes;
    }
    match crate::normalize::table_metadata(&bytes) {
        Some(b) => Bytes::from(b),
        None => bytes,
    }
}

/// A rayquet error as an iceberg error (message kept, the error as its source).
fn to_iceberg(e: rayquet::Error) -> iceberg::Error {
    iceberg::Error::new(iceberg::ErrorKind::Unexpected, e.to_string()).with_source(e)
}

fn store_err(path: &str, e: object_store::Error) -> iceberg::Error {
    to_iceberg(rayquet::Error::from(e).with_path(path))
}

struct Reader {
    store: Arc<dyn ObjectStore>,
    path: Path,
    name: String,
}

#[async_trait]
impl FileRead for Reader {
    async fn read(&self, range: Range<u64>) -> iceberg::Result<Bytes> {
        self.store
            .get_range(&self.path, range)
            .await
            .map_err(|e| store_err(&self.name, e))
    }
}

struct Writer {
    store: Arc<dyn ObjectStore>,
    path: Path,
    name: String,
    buf: Vec<Bytes>,
    closed: bool,
}

#[async_trait]
impl FileWrite for Writer {
    async fn write(&mut self, bs: Bytes) -> iceberg::Result<()> {
        self.buf.push(bs);
        Ok(())
    }

    async fn close(&mut self) -> iceberg::Result<()> {
        if self.closed {
            return Err(iceberg::Error::new(
                iceberg::ErrorKind::Unexpected,
                format!("{} is already closed", self.name),
            ));
        }
        self.closed = true;
        let payload: PutPayload = std::mem::take(&mut self.buf).into_iter().collect();
        self.store
            .put(&self.path, payload)
            .await
            .map(drop)
            .map_err(|e| store_err(&self.name, e))
    }
}

#[async_trait]
#[typetag::serde]
impl Storage for ObjectStoreStorage {
    async fn exists(&self, path: &str) -> iceberg::Result<bool> {
        let (store, p) = self.resolve(path)?;
        match store.head(&p).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(store_err(path, e)),
        }
    }

    async fn metadata(&self, path: &str) -> iceberg::Result<FileMetadata> {
        let (store, p) = self.resolve(path)?;
        let m = store.head(&p).await.map_err(|e| store_err(path, e))?;
        Ok(FileMetadata { size: m.size })
    }

    async fn read(&self, path: &str) -> iceberg::Result<Bytes> {
        let (store, p) = self.resolve(path)?;
        let r = store.get(&p).await.map_err(|e| store_err(path, e))?;
        let bytes = r.bytes().await.map_err(|e| store_err(path, e))?;
        // Manifest lists and manifests are read whole through here: checked before iceberg
        // parses them (crate::integrity), then normalised (crate::normalize), as table
        // metadata is.
        if path.ends_with(".metadata.json") {
            return Ok(normalize_metadata(bytes));
        }
        if path.ends_with(".avro") {
            if let Err(reason) = self.checker.check(path, &bytes) {
                let e = rayquet::Error::new(
                    ErrorKind::CorruptTable,
                    format!("damaged Iceberg metadata file: {reason}"),
                )
                .with_path(path);
                return Err(
                    iceberg::Error::new(iceberg::ErrorKind::DataInvalid, e.to_string())
                        .with_source(e),
                );
            }
        }
        if path.ends_with(".avro") {
            if let Some(b) = crate::normalize::manifest(&bytes) {
                return Ok(Bytes::from(b));
            }
        }
        Ok(bytes)
    }

    async fn reader(&self, path: &str) -> iceberg::Result<Box<dyn FileRead>> {
        let (store, p) = self.resolve(path)?;
        Ok(Box::new(Reader {
            store,
            path: p,
            name: path.to_string(),
        }))
    }

    async fn write(&self, path: &str, bs: Bytes) -> iceberg::Result<()> {
        let (store, p) = self.resolve(path)?;
        store
            .put(&p, bs.into())
            .await
            .map(drop)
            .map_err(|e| store_err(path, e))
    }

    async fn writer(&self, path: &str) -> iceberg::Result<Box<dyn FileWrite>> {
        let (store, p) = self.resolve(path)?;
        Ok(Box::new(Writer {
            store,
            path: p,
            name: path.to_string(),
            buf: Vec::new(),
            closed: false,
        }))
    }

    async fn delete(&self, path: &str) -> iceberg::Result<()> {
        let (store, p) = self.resolve(path)?;
        match store.delete(&p).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(store_err(path, e)),
        }
    }

    async fn delete_prefix(&self, path: &str) -> iceberg::Result<()> {
        let (store, p) = self.resolve(path)?;
        let listed: Vec<_> = store
            .list(Some(&p))
            .map_ok(|m| m.location)
            .try_collect()
            .await
            .map_err(|e| store_err(path, e))?;
        for l in listed {
            match store.delete(&l).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(store_err(path, e)),
            }
        }
        Ok(())
    }

    async fn delete_stream(&self, mut paths: BoxStream<'static, String>) -> iceberg::Result<()> {
        while let Some(p) = paths.next().await {
            self.delete(&p).await?;
        }
        Ok(())
    }

    fn new_input(&self, path: &str) -> iceberg::Result<InputFile> {
        Ok(InputFile::new(Arc::new(self.clone()), path.to_string()))
    }

    fn new_output(&self, path: &str) -> iceberg::Result<OutputFile> {
        Ok(OutputFile::new(Arc::new(self.clone()), path.to_string()))
    }
}
