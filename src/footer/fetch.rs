//! Footer requests, on the IO runtime: the suffix read that brings a file's metadata (and
//! often its data: small files are read whole), the second request when the metadata is larger
//! than the suffix, and the page index. The metadata is decoded on the decode pool
//! ([`crate::footer::meta`]).
//!
//! Invariants: one suffix request per file (two when the metadata is larger than the read);
//! the bytes of a small file read whole, or of the data the suffix covered, are kept and served
//! to the file's units instead of new requests; a footer that claims more bytes than the file
//! has is an error before anything is allocated for it.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use parquet::file::metadata::{FooterTail, ParquetMetaDataReader};

use crate::cache::{CachedFooter, FooterKey};
use crate::error::{Error, ErrorKind, Result};
use crate::footer::meta::{
    check_metadata, decode_footer, page_index_range, with_page_index, FileMeta, FOOTER_TAIL,
};
use crate::input::FileRef;
use crate::io::chunk::SparseChunk;
use crate::io::fetch::Fetcher;
use crate::metrics::Metrics;
use crate::options::{Reach, ScanOptions};

/// What the footer request found at the end of a file.
pub(crate) enum Footer {
    /// The metadata (and `data`, the bytes before it that the suffix also covered).
    Complete {
        /// Thrift-encoded metadata, without the 8-byte tail.
        metadata: Bytes,
        /// Bytes of the file that precede the metadata and were fetched with it.
        prefix: Bytes,
        /// Offset of `prefix` in the file.
        prefix_start: u64,
    },
    /// The metadata is longer than the suffix: fetch `range` and call [`complete_footer`].
    NeedMore { range: Range<u64> },
}

/// Inspect the suffix `bytes` that ends file `file` of `size` bytes and starts at `start`.
pub(crate) fn parse_suffix(file: &FileRef, size: u64, start: u64, bytes: Bytes) -> Result<Footer> {
    let name = &*file.name;
    if size < FOOTER_TAIL + 4 {
        return Err(Error::new(
            ErrorKind::CorruptFooter,
            format!("file is {size} bytes, too small to be Parquet"),
        )
        .with_path(name));
    }
    if start + bytes.len() as u64 != size || bytes.len() < FOOTER_TAIL as usize {
        return Err(Error::new(
            ErrorKind::CorruptFooter,
            format!(
                "short read of the footer: got {} bytes at {start} of a {size}-byte file",
                bytes.len()
            ),
        )
        .with_path(name));
    }
    let mut tail = [0u8; FOOTER_TAIL as usize];
    tail.copy_from_slice(&bytes[bytes.len() - FOOTER_TAIL as usize..]);
    let tail = FooterTail::try_new(&tail).map_err(|e| Error::footer(e, name))?;
    if tail.is_encrypted_footer() {
        return Err(Error::new(
            ErrorKind::Unsupported,
            "the footer is encrypted (PARE magic); rayquet does not decrypt",
        )
        .with_path(name));
    }
    let meta_len = tail.metadata_length() as u64;
    if meta_len + FOOTER_TAIL + 4 > size {
        return Err(Error::new(
            ErrorKind::CorruptFooter,
            format!("metadata length {meta_len} exceeds the file size {size}"),
        )
        .with_path(name));
    }
    let meta_start = size - FOOTER_TAIL - meta_len;
    if meta_start < start {
        return Ok(Footer::NeedMore {
            range: meta_start..start,
        });
    }
    let rel = (meta_start - start) as usize;
    Ok(Footer::Complete {
        metadata: bytes.slice(rel..bytes.len() - FOOTER_TAIL as usize),
        prefix: bytes.slice(..rel),
        prefix_start: start,
    })
}

/// The metadata of `file`, fetched with a suffix read of `hint` bytes (and one more request
/// when the metadata is longer): (file size, thrift metadata, the data bytes before it that the
/// suffix also brought, their offset). Counts the bytes as metadata bytes.
async fn fetch_metadata(
    fetcher: &Fetcher,
    file: &FileRef,
    hint: u64,
) -> Result<(u64, Bytes, Bytes, u64)> {
    let (size, start, bytes) = fetcher.suffix(file, hint).await?;
    let meta_bytes = &fetcher.metrics.metadata_bytes;
    Metrics::add(meta_bytes, bytes.len() as u64);
    match parse_suffix(file, size, start, bytes.clone())? {
        Footer::Complete {
            metadata,
            prefix,
            prefix_start,
        } => Ok((size, metadata, prefix, prefix_start)),
        Footer::NeedMore { range } => {
            // The metadata is larger than the read: one more request for the rest of it.
            let head = fetcher.range(file, range.clone(), "the footer").await?;
            Metrics::add(meta_bytes, head.len() as u64);
            let mut all = Vec::with_capacity(head.len() + bytes.len());
            all.extend_from_slice(&head);
            all.extend_from_slice(&bytes);
            match parse_suffix(file, size, range.start, all.into())? {
                Footer::Complete { metadata, .. } => Ok((size, metadata, Bytes::new(), 0)),
                Footer::NeedMore { .. } => {
                    Err(Error::new(ErrorKind::CorruptFooter, "inconsistent footer")
                        .with_path(&*file.name))
                }
            }
        }
    }
}

/// How a scan reads a file's footer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FooterRead {
    /// The scan reads only part of the file: it wants the metadata, not the data near it
    /// (see [`ScanOptions::footer_read`]).
    pub narrow: bool,
    /// Also load the page index (a filter or a selection can prune pages).
    pub want_index: bool,
    /// Strings and binaries decode to views.
    pub views: bool,
}

/// Fetch and parse `file`'s footer, as `read` says (with its page index, when it has one and
/// it parses). Thrift decoding runs on `pool`. With a footer cache and a known version of the
/// file, a cached footer is used instead (and the parsed one stored).
pub(crate) async fn load(
    fetcher: &Fetcher,
    pool: &rayon::ThreadPool,
    opts: &ScanOptions,
    file: FileRef,
    read: FooterRead,
) -> Result<FileMeta> {
    let FooterRead {
        narrow,
        want_index,
        views,
    } = read;
    let metrics = &fetcher.metrics;
    let cache = opts
        .footer_cache
        .as_ref()
        .and_then(|c| Some((c, cache_key(&file, views)?)));
    let hit = cache.as_ref().and_then(|(c, k)| c.get(k));
    let missed = hit.is_none();
    let name = file.name.clone();
    let on_pool = |what: &'static str| (Some(metrics.task_started()), what);
    let (mut meta, mut indexed) = match hit {
        Some(hit) => {
            Metrics::add(&metrics.footer_cache_hits, 1);
            let size = cache.as_ref().map_or(0, |(_, k)| k.size);
            let meta = FileMeta {
                file,
                size,
                reader: hit.reader,
                cached: SparseChunk::new(size),
                data_end: hit.data_end,
                views,
                raw: hit.raw,
            };
            (meta, hit.indexed)
        }
        None => {
            let hint = opts.footer_read(file.size, narrow, Reach::of(file.store.as_ref()));
            let (size, metadata, prefix, prefix_start) =
                fetch_metadata(fetcher, &file, hint).await?;
            let (guard, what) = on_pool("footer decoding");
            let meta = crate::panic::on_pool(pool, guard, what, move || {
                decode_footer(file, size, metadata, (prefix, prefix_start), views)
            })
            .await
            .map_err(|e| at(e, &name))?;
            (meta, false)
        }
    };
    let had_index = indexed;
    if want_index && !indexed {
        meta = with_index(fetcher, pool, opts, meta).await?;
        indexed = true;
    }
    if let Some((cache, key)) = cache {
        // Store a new footer, or the cached one now with its page index.
        if missed || indexed != had_index {
            let footer = CachedFooter {
                reader: meta.reader.clone(),
                data_end: meta.data_end,
                indexed,
                raw: meta.raw.clone(),
            };
            cache.insert(key, footer);
        }
    }
    Metrics::add(&metrics.files, 1);
    Ok(meta)
}

/// `meta` with its page index, when it has one (fetched unless its footer read holds it) and
/// it parses. Decoding runs on `pool`.
async fn with_index(
    fetcher: &Fetcher,
    pool: &rayon::ThreadPool,
    opts: &ScanOptions,
    meta: FileMeta,
) -> Result<FileMeta> {
    let Some(range) = page_index_range(&meta) else {
        return Ok(meta);
    };
    let chunk = if meta.cached.covers(&range) {
        meta.cached.clone()
    } else {
        let request = opts.request_size(Reach::of(meta.file.store.as_ref()));
        let what = (&meta.file, "the page index");
        let ranges = [range];
        let f = fetcher.ranges(what, meta.size, &ranges, &meta.cached, 0, request);
        let (c, fetched) = f.await?;
        Metrics::add(&fetcher.metrics.metadata_bytes, fetched);
        c
    };
    let name = meta.file.name.clone();
    let guard = Some(fetcher.metrics.task_started());
    let what = "page index decoding";
    crate::panic::on_pool(pool, guard, what, move || Ok(with_page_index(meta, &chunk)))
        .await
        .map_err(|e| at(e, &name))
}

/// The footer cache key of `file` read with `views`, when its size and version are known.
fn cache_key(file: &FileRef, views: bool) -> Option<FooterKey> {
    let version = file.version.as_ref()?;
    Some(FooterKey {
        store: file.store.to_string(),
        path: file.path.to_string(),
        size: file.size?,
        e_tag: version.e_tag.clone(),
        last_modified: version.last_modified,
        views,
    })
}

/// `e` located in file `name` unless it already names one.
fn at(e: Error, name: &str) -> Error {
    if e.path().is_none() {
        e.with_path(name)
    } else {
        e
    }
}

/// Read the metadata of the Parquet object at `path` in `store` (of `size` bytes when known:
/// no HEAD): one suffix request, two when the metadata is larger than 64 KiB. Blocks this
/// thread; the requests run on the shared IO runtime and the metadata is decoded here.
///
/// Table readers use it where a footer alone is wanted (e.g. a checkpoint's schema).
pub fn read_metadata(
    store: Arc<dyn object_store::ObjectStore>,
    path: object_store::path::Path,
    size: Option<u64>,
) -> Result<Arc<parquet::file::metadata::ParquetMetaData>> {
    let file = FileRef {
        store,
        name: path.to_string().into(),
        path,
        size,
        version: None,
    };
    let fetcher = Fetcher {
        permits: Arc::new(tokio::sync::Semaphore::new(4)),
        far_permits: Arc::new(tokio::sync::Semaphore::new(4)),
        shared: None,
        metrics: Arc::default(),
        memory_map: false,
    };
    let name = file.name.clone();
    // Only the metadata is wanted, no data follows: a small file is not worth reading whole
    // on any store, so the read is sized as on a near one.
    let hint = ScanOptions::default().footer_read(size, true, Reach::Near);
    let io = crate::runtime::io_handle();
    let (_, metadata, _, _) =
        crate::runtime::block_on_io(
            &io,
            async move { fetch_metadata(&fetcher, &file, hint).await },
        )?;
    check_metadata(&metadata, &name)?;
    let md = crate::panic::catch(|| ParquetMetaDataReader::decode_metadata(&metadata))
        .map_err(|msg| crate::panic::panicked("footer decoding", msg).with_path(&*name))?
        .map_err(|e| Error::footer(e, &name))?;
    Ok(Arc::new(md))
}
