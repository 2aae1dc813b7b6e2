//! Footers: fetch the end of a file, parse its metadata (and page index) into a
//! [`FileMeta`] that every unit of the file shares.
//!
//! IO runs on the IO runtime, thrift decoding on the decode pool. Invariants: one suffix
//! request per file (two when the metadata is larger than the hint); the bytes of a small
//! file read whole, or of the data the suffix covered, are kept and served to the file's
//! units instead of new requests; a footer that claims more bytes than the file has is an
//! error before anything is allocated for it.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::file::metadata::{FooterTail, ParquetMetaDataReader};

use crate::chunk::SparseChunk;
use crate::error::{Error, ErrorKind, Result};
use crate::metrics::Metrics;
use crate::source::FileRef;
use crate::state::Shared;

/// Size of the Parquet footer tail: 4-byte metadata length and the `PAR1` magic.
pub(crate) const FOOTER_TAIL: u64 = 8;

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
            ErrorKind::Encrypted,
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

/// A file's parsed footer, ready to plan and decode from. Shared by every unit of the file.
#[derive(Debug)]
pub(crate) struct FileMeta {
    pub file: FileRef,
    pub size: u64,
    pub reader: ArrowReaderMetadata,
    /// Data bytes fetched together with the footer (a whole small file, or the end of a larger
    /// one), served to units instead of new requests.
    pub cached: SparseChunk,
    /// Offset where the metadata starts: no column chunk may extend past it.
    pub data_end: u64,
    /// Strings and binaries decode to Arrow's view types.
    pub views: bool,
}

/// The Arrow view of a file's metadata; with `views`, string and binary columns (top-level,
/// and inside structs) decode to `Utf8View`/`BinaryView`.
fn arrow_metadata(
    md: Arc<parquet::file::metadata::ParquetMetaData>,
    views: bool,
) -> parquet::errors::Result<ArrowReaderMetadata> {
    let plain = ArrowReaderMetadata::try_new(Arc::clone(&md), ArrowReaderOptions::new())?;
    if !views {
        return Ok(plain);
    }
    use arrow::datatypes::{DataType, Field};
    fn view(f: &Field) -> Field {
        let t = match f.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 => DataType::Utf8View,
            DataType::Binary | DataType::LargeBinary => DataType::BinaryView,
            DataType::Struct(fs) => DataType::Struct(fs.iter().map(|c| view(c)).collect()),
            other => other.clone(),
        };
        f.clone().with_data_type(t)
    }
    let schema = plain.schema();
    let hinted = arrow::datatypes::Schema::new_with_metadata(
        schema.fields().iter().map(|f| view(f)).collect::<Vec<_>>(),
        schema.metadata().clone(),
    );
    if &hinted == schema.as_ref() {
        return Ok(plain);
    }
    ArrowReaderMetadata::try_new(md, ArrowReaderOptions::new().with_schema(Arc::new(hinted)))
}

/// Decode the thrift metadata. CPU work: call on the decode pool.
pub(crate) fn decode_footer(
    file: FileRef,
    size: u64,
    metadata: Bytes,
    (prefix, prefix_start): (Bytes, u64),
    views: bool,
) -> Result<FileMeta> {
    let name = file.name.clone();
    check_metadata(&metadata, &name)?;
    let md =
        ParquetMetaDataReader::decode_metadata(&metadata).map_err(|e| Error::footer(e, &name))?;
    let encrypted = md
        .row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .any(|c| c.crypto_metadata().is_some());
    if encrypted {
        return Err(Error::new(
            ErrorKind::Encrypted,
            "column chunks are encrypted (plaintext footer); rayquet does not decrypt",
        )
        .with_path(&*name));
    }
    let reader = arrow_metadata(Arc::new(md), views).map_err(|e| Error::footer(e, &name))?;
    let data_end = size - FOOTER_TAIL - metadata.len() as u64;
    let mut cached = SparseChunk::new(size);
    if !prefix.is_empty() {
        cached.insert(prefix_start, prefix);
    }
    Ok(FileMeta {
        file,
        size,
        reader,
        cached,
        data_end,
        views,
    })
}

/// Check the counts and lengths the thrift `metadata` of file `name` claims before parquet
/// allocates from them (`validate::file_metadata`).
fn check_metadata(metadata: &[u8], name: &str) -> Result<()> {
    crate::validate::file_metadata(metadata).map_err(|e| {
        Error::new(ErrorKind::CorruptFooter, format!("invalid metadata: {e}")).with_path(name)
    })
}

/// Whether every column and offset index of `meta` that `chunk` holds is well-formed thrift
/// whose lengths fit (`validate::thrift_struct`), so parquet can parse it without allocating
/// from a corrupt count.
fn page_index_sane(meta: &FileMeta, chunk: &SparseChunk) -> bool {
    use parquet::file::reader::ChunkReader;
    let md = meta.reader.metadata();
    md.row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .flat_map(|c| {
            [
                (c.column_index_offset(), c.column_index_length()),
                (c.offset_index_offset(), c.offset_index_length()),
            ]
        })
        .all(|pair| match pair {
            (Some(off), Some(len)) if off >= 0 && len > 0 => chunk
                .get_bytes(off as u64, len as usize)
                .is_ok_and(|b| crate::validate::thrift_struct(&b).is_ok()),
            _ => true,
        })
}

/// The byte range holding the file's page index (column and offset indexes), if it has one
/// that lies inside the file's data.
pub(crate) fn page_index_range(meta: &FileMeta) -> Option<Range<u64>> {
    let md = meta.reader.metadata();
    let mut range: Option<Range<u64>> = None;
    for c in md.row_groups().iter().flat_map(|rg| rg.columns()) {
        let pairs = [
            (c.column_index_offset(), c.column_index_length()),
            (c.offset_index_offset(), c.offset_index_length()),
        ];
        for (off, len) in pairs {
            if let (Some(off), Some(len)) = (off, len) {
                if off < 0 || len <= 0 {
                    return None;
                }
                let r = off as u64..off as u64 + len as u64;
                range = Some(match range {
                    None => r,
                    Some(x) => x.start.min(r.start)..x.end.max(r.end),
                });
            }
        }
    }
    range.filter(|r| r.end <= meta.data_end)
}

/// `meta` with its page index parsed from `chunk` (which holds [`page_index_range`]). A page
/// index that fails to parse is ignored: the file is then read without page pruning, as
/// parquet's own reader would read it.
pub(crate) fn with_page_index(meta: FileMeta, chunk: &SparseChunk) -> FileMeta {
    let md = meta.reader.metadata().as_ref().clone();
    let mut reader = ParquetMetaDataReader::new_with_metadata(md)
        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Optional);
    if !page_index_sane(&meta, chunk) {
        return meta;
    }
    let parsed = crate::panic::catch(|| {
        reader.read_page_indexes_sized(chunk, meta.size)?;
        reader.finish()
    });
    let Ok(Ok(md)) = parsed else { return meta };
    match arrow_metadata(Arc::new(md), meta.views) {
        Ok(reader) => FileMeta { reader, ..meta },
        Err(_) => meta,
    }
}

/// Fetch and parse `file`'s footer; with `want_index`, also its page index (when it has one
/// and it parses). `narrow`: the scan reads only part of the file (a short suffix read);
/// otherwise small files are read whole and a larger suffix brings data that is reused.
pub(crate) async fn load(
    shared: &Arc<Shared>,
    file: FileRef,
    narrow: bool,
    want_index: bool,
) -> Result<FileMeta> {
    let opts = &shared.opts;
    let hint = match (opts.footer_size_hint, file.size) {
        (Some(h), _) => h as u64,
        (None, _) if narrow => crate::options::NARROW_FOOTER_SIZE_HINT as u64,
        // A small file is read whole: one round trip instead of footer, then data.
        (None, Some(size)) if size <= crate::options::WHOLE_FILE_BYTES => size,
        (None, _) => crate::options::DEFAULT_FOOTER_SIZE_HINT as u64,
    };
    let (size, start, bytes) = shared.fetcher.suffix(&file, hint).await?;
    let meta_bytes = &shared.metrics.metadata_bytes;
    Metrics::add(meta_bytes, bytes.len() as u64);
    let (metadata, prefix, prefix_start) = match parse_suffix(&file, size, start, bytes.clone())? {
        Footer::Complete {
            metadata,
            prefix,
            prefix_start,
        } => (metadata, prefix, prefix_start),
        Footer::NeedMore { range } => {
            // The metadata is larger than the hint: one more request for the rest of it.
            let head = shared
                .fetcher
                .range(&file, range.clone(), "the footer")
                .await?;
            Metrics::add(meta_bytes, head.len() as u64);
            let mut all = Vec::with_capacity(head.len() + bytes.len());
            all.extend_from_slice(&head);
            all.extend_from_slice(&bytes);
            match parse_suffix(&file, size, range.start, all.into())? {
                Footer::Complete { metadata, .. } => (metadata, Bytes::new(), 0),
                Footer::NeedMore { .. } => {
                    return Err(Error::new(ErrorKind::CorruptFooter, "inconsistent footer")
                        .with_path(&*file.name))
                }
            }
        }
    };
    let name = file.name.clone();
    let views = opts.string_views;
    let mut meta = shared
        .on_pool((&name, "footer decoding"), move || {
            decode_footer(file, size, metadata, (prefix, prefix_start), views)
        })
        .await?;
    if let Some(range) = want_index.then(|| page_index_range(&meta)).flatten() {
        let chunk = if meta.cached.covers(&range) {
            meta.cached.clone()
        } else {
            let request = opts.request_size as u64;
            let ranges = [range];
            let f = shared.fetcher.ranges(
                (&meta.file, "the page index"),
                size,
                &ranges,
                &meta.cached,
                0,
                request,
            );
            let (c, fetched) = f.await?;
            Metrics::add(meta_bytes, fetched);
            c
        };
        meta = shared
            .on_pool((&name, "page index decoding"), move || {
                Ok(with_page_index(meta, &chunk))
            })
            .await?;
    }
    Metrics::add(&shared.metrics.files, 1);
    Ok(meta)
}

/// Read the metadata of the Parquet object at `path` in `store` (of `size` bytes when known:
/// no HEAD): one suffix request, two when the metadata is larger than 64 KiB. Blocks this
/// thread; the requests run on the shared IO runtime and the metadata is decoded here.
///
/// Table readers use it where a footer alone is wanted (e.g. a checkpoint's schema).
pub fn read_metadata(
    store: std::sync::Arc<dyn object_store::ObjectStore>,
    path: object_store::path::Path,
    size: Option<u64>,
) -> Result<Arc<parquet::file::metadata::ParquetMetaData>> {
    let file = FileRef {
        store,
        name: path.to_string().into(),
        path,
        size,
    };
    let fetcher = crate::fetch::Fetcher {
        permits: Arc::new(tokio::sync::Semaphore::new(4)),
        metrics: Arc::default(),
    };
    let name = file.name.clone();
    let io = crate::runtime::io_handle();
    let metadata = crate::runtime::wait(&io, async move {
        let hint = crate::options::NARROW_FOOTER_SIZE_HINT as u64;
        let (size, start, bytes) = fetcher.suffix(&file, hint).await?;
        match parse_suffix(&file, size, start, bytes.clone())? {
            Footer::Complete { metadata, .. } => Ok(metadata),
            Footer::NeedMore { range } => {
                let head = fetcher.range(&file, range.clone(), "the footer").await?;
                let mut all = Vec::with_capacity(head.len() + bytes.len());
                all.extend_from_slice(&head);
                all.extend_from_slice(&bytes);
                match parse_suffix(&file, size, range.start, all.into())? {
                    Footer::Complete { metadata, .. } => Ok(metadata),
                    Footer::NeedMore { .. } => {
                        Err(Error::new(ErrorKind::CorruptFooter, "inconsistent footer")
                            .with_path(&*file.name))
                    }
                }
            }
        }
    })
    .unwrap_or_else(|| Err(Error::new(ErrorKind::Io, "the IO runtime stopped")))?;
    check_metadata(&metadata, &name)?;
    let md = crate::panic::catch(|| ParquetMetaDataReader::decode_metadata(&metadata))
        .map_err(|msg| Error::new(ErrorKind::Panic, msg).with_path(&*name))?
        .map_err(|e| Error::footer(e, &name))?;
    Ok(Arc::new(md))
}
