//! The footer cache a service's scans share ([`FooterCache`]): parsed metadata by object and
//! version, so a repeated scan skips the footer request and its thrift decoding.
//!
//! Invariants: an entry is found only under the key it was stored with, and the key holds the
//! object's store, path, size and version (ETag and last-modified time), so a rewritten object
//! (same path, new version) never matches an entry of its old contents; files whose version the
//! scan does not know are never looked up nor stored. The entries' estimated sizes never sum
//! past the bound: an insert evicts the least recently used entries first, and an entry larger
//! than the whole bound is not kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use object_store::ObjectMeta;
use parquet::arrow::arrow_reader::ArrowReaderMetadata;

/// Parsed footers (Parquet metadata, page indexes when a scan loaded them) shared by the scans
/// of a long-running process, bounded in bytes, least recently used out first.
///
/// Every scan uses the process-wide cache ([`FooterCache::global`], at most
/// [`DEFAULT_FOOTER_CACHE_BYTES`]) unless given another with
/// [`ScanBuilder::footer_cache`](crate::ScanBuilder::footer_cache) (a service that wants its
/// own bound creates one at start-up and gives every scan a clone, cheap: it is shared) or
/// none with [`ScanBuilder::no_footer_cache`](crate::ScanBuilder::no_footer_cache). A scan
/// then reads each footer once: later scans of the same object skip the footer request and
/// its decoding.
///
/// An entry is keyed by the object's store, path, size and version (ETag, last-modified time),
/// so an object rewritten under the same path is read afresh. The version comes from listing
/// (a directory or prefix, [`ObjectRef`](crate::ObjectRef)s built from `ObjectMeta`), from the
/// file system for a local file, or from the HEAD request of a URL that does not end in
/// `.parquet`, or from the table for the immutable data files of Iceberg and Delta tables
/// ([`FileVersion::immutable`](crate::FileVersion::immutable)); files whose version the scan
/// does not know (a URL to a `*.parquet` object, a [`FileTask`](crate::FileTask) given none)
/// bypass the cache. Stores are told apart by their display
/// name (`LocalFileSystem(file:///)`, `AmazonS3(bucket)`...). A local file's version is its
/// modification time (and, when listed from a directory, its inode): a file rewritten to the
/// same size within the file system's timestamp granularity (a few milliseconds) is not told
/// apart from its previous contents; an object store's ETag has no such gap.
///
/// ```no_run
/// # fn main() -> rayquet::Result<()> {
/// use rayquet::prelude::*;
/// use rayquet::FooterCache;
/// let footers = FooterCache::new(64 << 20); // at most ~64 MiB of parsed metadata
/// let options = ScanOptions::new().footer_cache(footers.clone());
/// for _request in 0..3 {
///     let reader = Scan::new("s3://bucket/lineitem/")?
///         .with_options(options.clone())
///         .filter(col("l_orderkey").lt(1000))
///         .build()?;
///     for batch in reader {
///         let _ = batch?;
///     }
/// }
/// println!("{} footers, {} bytes", footers.len(), footers.bytes());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct FooterCache {
    inner: Arc<Mutex<Lru>>,
}

/// Which version of an object a file is: its ETag and last-modified time, as listing or a HEAD
/// request reports them (or the modification time of a local file). Public as
/// [`FileVersion`](crate::FileVersion): [`DatasetFile::version`](crate::layer::DatasetFile::version)
/// gives it, [`FileTask::version`](crate::FileTask::version) takes it, so that tasks built
/// from a listing use the [`FooterCache`] as a plain scan does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Version {
    /// The object's ETag (object stores; none for local files).
    pub e_tag: Option<String>,
    /// Its last modification time.
    pub last_modified: Option<std::time::SystemTime>,
}

impl Version {
    /// The version of an object that is never rewritten under its path: the data files of
    /// Iceberg and Delta tables, which both formats' specifications make immutable (a table
    /// writes new files under new names). The footer cache then keys it by store, path and
    /// size alone, so the scans of a table share its files' footers without a listing or a
    /// HEAD request. Give it only to such files: an object rewritten in place to the same size
    /// would be read with its old footer.
    pub fn immutable() -> Self {
        Version {
            e_tag: None,
            last_modified: None,
        }
    }
}

impl From<&ObjectMeta> for Version {
    fn from(meta: &ObjectMeta) -> Self {
        Version {
            e_tag: meta.e_tag.clone(),
            last_modified: Some(meta.last_modified.into()),
        }
    }
}

/// Which object, and which version of it, an entry describes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FooterKey {
    /// The store's display name.
    pub store: String,
    pub path: String,
    pub size: u64,
    pub e_tag: Option<String>,
    pub last_modified: Option<SystemTime>,
    /// Strings and binaries decode to views (the Arrow schema differs).
    pub views: bool,
}

/// A parsed footer, as stored.
#[derive(Debug, Clone)]
pub(crate) struct CachedFooter {
    pub reader: ArrowReaderMetadata,
    /// Offset where the metadata starts.
    pub data_end: u64,
    /// `reader` holds the page index (or the file has none that parses).
    pub indexed: bool,
    /// Its columns read as bytes (`FileMeta::raw`).
    pub raw: Vec<(usize, crate::footer::Raw)>,
}

struct Lru {
    bound: usize,
    bytes: usize,
    tick: u64,
    /// Entry, its estimated size, its last use.
    map: HashMap<FooterKey, (CachedFooter, usize, u64)>,
}

/// The bound of the process-wide [`FooterCache::global`]: 64 MiB of parsed metadata, the
/// footers of some thousands of files of tens of columns (lineitem's 16 columns and 53 row
/// groups: about 0.5 MiB).
pub const DEFAULT_FOOTER_CACHE_BYTES: usize = 64 << 20;

impl FooterCache {
    /// The process-wide cache every scan uses by default, created on first use with a bound of
    /// [`DEFAULT_FOOTER_CACHE_BYTES`].
    pub fn global() -> FooterCache {
        static GLOBAL: OnceLock<FooterCache> = OnceLock::new();
        GLOBAL
            .get_or_init(|| FooterCache::new(DEFAULT_FOOTER_CACHE_BYTES))
            .clone()
    }

    /// An empty cache holding at most `bytes` of parsed metadata (as estimated by parquet's
    /// `ParquetMetaData::memory_size`, plus the key).
    pub fn new(bytes: usize) -> Self {
        FooterCache {
            inner: Arc::new(Mutex::new(Lru {
                bound: bytes,
                bytes: 0,
                tick: 0,
                map: HashMap::new(),
            })),
        }
    }

    /// Footers held.
    pub fn len(&self) -> usize {
        self.lock().map.len()
    }

    /// Whether it holds no footer.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Estimated bytes held (never more than the bound given to [`FooterCache::new`]).
    pub fn bytes(&self) -> usize {
        self.lock().bytes
    }

    /// Drop every footer.
    pub fn clear(&self) {
        let mut lru = self.lock();
        lru.map.clear();
        lru.bytes = 0;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Lru> {
        // A panic while holding the lock leaves a consistent map (no update is half done).
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The footer stored under `key`, marked as just used.
    pub(crate) fn get(&self, key: &FooterKey) -> Option<CachedFooter> {
        let mut lru = self.lock();
        lru.tick += 1;
        let tick = lru.tick;
        let (footer, _, used) = lru.map.get_mut(key)?;
        *used = tick;
        Some(footer.clone())
    }

    /// Store `footer` under `key` (replacing what was there), evicting the least recently
    /// used entries until it fits; not stored if it alone exceeds the bound.
    pub(crate) fn insert(&self, key: FooterKey, footer: CachedFooter) {
        let size = footer.reader.metadata().memory_size()
            + std::mem::size_of::<(FooterKey, CachedFooter)>()
            + key.store.len()
            + key.path.len()
            + key.e_tag.as_ref().map_or(0, String::len);
        let mut lru = self.lock();
        if let Some((_, old, _)) = lru.map.remove(&key) {
            lru.bytes -= old;
        }
        if size > lru.bound {
            return;
        }
        while lru.bytes + size > lru.bound {
            let oldest = lru
                .map
                .iter()
                .min_by_key(|(_, (_, _, used))| *used)
                .map(|(k, _)| k.clone())
                .expect("bytes held, so an entry");
            let (_, freed, _) = lru.map.remove(&oldest).expect("just found");
            lru.bytes -= freed;
        }
        lru.tick += 1;
        let tick = lru.tick;
        lru.bytes += size;
        lru.map.insert(key, (footer, size, tick));
    }
}

impl std::fmt::Debug for FooterCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let lru = self.lock();
        f.debug_struct("FooterCache")
            .field("bound", &lru.bound)
            .field("bytes", &lru.bytes)
            .field("footers", &lru.map.len())
            .finish()
    }
}
