//! A file's parsed footer ([`FileMeta`]): the thrift metadata decoded, checked and given its
//! Arrow view, and the page index parsed from fetched bytes. CPU work, run on the decode pool.
//!
//! Invariants: the metadata's claimed counts and lengths are checked before parquet decodes it
//! (`validate::thrift`), its Arrow schema hint before parquet converts it (`validate::ipc`);
//! an encrypted file is refused; a page index that does not parse (or
//! whose thrift does not fit) is ignored, so the file is read without page pruning, as
//! parquet's own reader would read it.

use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use parquet::file::metadata::ParquetMetaDataReader;

use crate::error::{Error, ErrorKind, Result};
use crate::footer::fetch::FOOTER_TAIL;
use crate::input::FileRef;
use crate::io::chunk::SparseChunk;

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
            ErrorKind::Unsupported,
            "column chunks are encrypted (plaintext footer); rayquet does not decrypt",
        )
        .with_path(&*name));
    }
    crate::validate::ipc::arrow_schema(&md).map_err(|e| {
        Error::new(ErrorKind::CorruptFooter, format!("invalid metadata: {e}")).with_path(&*name)
    })?;
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
pub(crate) fn check_metadata(metadata: &[u8], name: &str) -> Result<()> {
    crate::validate::thrift::file_metadata(metadata).map_err(|e| {
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
                .is_ok_and(|b| crate::validate::thrift::thrift_struct(&b).is_ok()),
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
