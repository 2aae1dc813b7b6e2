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
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
use parquet::schema::types::SchemaDescPtr;

use crate::error::{Error, ErrorKind, Result};
use crate::input::FileRef;
use crate::io::chunk::SparseChunk;
use crate::validate::ipc::Hint;

/// Size of the Parquet footer tail: 4-byte metadata length and the `PAR1` magic.
pub(crate) const FOOTER_TAIL: u64 = 8;

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
    /// Top-level columns parquet's reader gives as their bytes, which the mapping converts:
    /// (root index, what they are). See [`intervals_as_bytes`] and [`Hint::Ignore`].
    pub raw: Vec<(usize, Raw)>,
}

/// A column read as its fixed-length bytes because parquet's reader cannot give its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Raw {
    /// Parquet INTERVAL (`FixedSizeBinary(12)`), read as `Interval(MonthDayNano)`.
    Interval,
    /// A 128-bit integer (polars' Int128: `FixedSizeBinary(16)`, little-endian, its
    /// `ARROW:schema` hint saying Int128), read as `Decimal128(38, 0)`.
    Int128,
}

/// The Arrow view of a file's metadata; with `views`, string and binary columns (top-level,
/// and inside structs) decode to `Utf8View`/`BinaryView`. A top-level timestamp whose
/// `ARROW:schema` hint names a time zone keeps that zone even when the writer stored another
/// unit than the hint's (pyarrow's `coerce_timestamps`): parquet 58 takes the hint's zone
/// only when the units agree, and would read `America/New_York` as `UTC`.
fn arrow_metadata(
    md: Arc<ParquetMetaData>,
    views: bool,
) -> parquet::errors::Result<ArrowReaderMetadata> {
    let plain = ArrowReaderMetadata::try_new(Arc::clone(&md), ArrowReaderOptions::new())?;
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
    let embedded = crate::validate::ipc::embedded_schema(&md);
    let zone = |f: &Field| -> Field {
        let (DataType::Timestamp(unit, Some(_)), Some(e)) = (
            f.data_type(),
            embedded
                .as_ref()
                .and_then(|e| e.field_with_name(f.name()).ok()),
        ) else {
            return f.clone();
        };
        match e.data_type() {
            DataType::Timestamp(hint_unit, Some(tz)) if hint_unit != unit => f
                .clone()
                .with_data_type(DataType::Timestamp(*unit, Some(Arc::clone(tz)))),
            _ => f.clone(),
        }
    };
    let schema = plain.schema();
    let hinted = arrow::datatypes::Schema::new_with_metadata(
        schema
            .fields()
            .iter()
            .map(|f| {
                let f = zone(f);
                if views {
                    view(&f)
                } else {
                    f
                }
            })
            .collect::<Vec<_>>(),
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
    crate::validate::counts::footer(&md).map_err(|(rg, e)| {
        let e = Error::new(ErrorKind::CorruptFooter, e).with_path(&*name);
        match rg {
            Some(rg) => e.with_row_group(rg),
            None => e,
        }
    })?;
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
    let hint = crate::validate::ipc::arrow_schema(&md).map_err(|e| {
        Error::new(ErrorKind::CorruptFooter, format!("invalid metadata: {e}")).with_path(&*name)
    })?;
    let mut raw = Vec::new();
    let md = match hint {
        Hint::Use => md,
        // Read in the Parquet schema's types, as if the writer had left no hint.
        Hint::Ignore { int128 } => {
            let descr = md.file_metadata().schema_descr();
            for column in &int128 {
                let root = int128_root(descr, column).ok_or_else(|| {
                    Error::new(
                        ErrorKind::Unsupported,
                        format!(
                            "column {column:?} is a 128-bit integer (its ARROW:schema hint) not \
                             stored as 16 plain bytes at the top level: Arrow has no 128-bit \
                             integer type"
                        ),
                    )
                    .with_path(&*name)
                })?;
                raw.push((root, Raw::Int128));
            }
            without_arrow_schema(md)
        }
    };
    let (md, intervals) = intervals_as_bytes(md).map_err(|e| e.with_path(&*name))?;
    raw.extend(intervals.into_iter().map(|r| (r, Raw::Interval)));
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
        raw,
    })
}

/// The top-level column `name` if it is stored as 16 plain bytes (a FIXED_LEN_BYTE_ARRAY(16)
/// without a logical type): how an `ARROW:schema` hint's 128-bit integer can be read.
fn int128_root(descr: &parquet::schema::types::SchemaDescriptor, name: &str) -> Option<usize> {
    descr.root_schema().get_fields().iter().position(|f| {
        f.name() == name
            && f.is_primitive()
            && f.get_physical_type() == parquet::basic::Type::FIXED_LEN_BYTE_ARRAY
            && f.get_basic_info().logical_type_ref().is_none()
            && matches!(
                f.as_ref(),
                parquet::schema::types::Type::PrimitiveType {
                    type_length: 16,
                    ..
                }
            )
    })
}

/// `md` without its `ARROW:schema` key: read in the Parquet schema's types.
fn without_arrow_schema(md: ParquetMetaData) -> ParquetMetaData {
    with_file_metadata(md, |fm, schema| {
        let kv: Option<Vec<_>> = fm.key_value_metadata().map(|kv| {
            kv.iter()
                .filter(|kv| kv.key != "ARROW:schema")
                .cloned()
                .collect()
        });
        (kv, schema)
    })
}

/// `md` with its key-value metadata and schema replaced by what `f` makes of its file
/// metadata and schema; row groups and page indexes kept.
fn with_file_metadata(
    md: ParquetMetaData,
    f: impl FnOnce(
        &parquet::file::metadata::FileMetaData,
        SchemaDescPtr,
    ) -> (
        Option<Vec<parquet::file::metadata::KeyValue>>,
        SchemaDescPtr,
    ),
) -> ParquetMetaData {
    use parquet::file::metadata::{FileMetaData, ParquetMetaDataBuilder};
    let fm = md.file_metadata();
    let (kv, schema) = f(fm, fm.schema_descr_ptr());
    let file = FileMetaData::new(
        fm.version(),
        fm.num_rows(),
        fm.created_by().map(str::to_string),
        kv,
        schema,
        fm.column_orders().cloned(),
    );
    let mut b = ParquetMetaDataBuilder::new_from_metadata(md);
    let row_groups = b.take_row_groups();
    let (ci, oi) = (b.take_column_index(), b.take_offset_index());
    ParquetMetaDataBuilder::new(file)
        .set_row_groups(row_groups)
        .set_column_index(ci)
        .set_offset_index(oi)
        .build()
}

/// Parquet's INTERVAL (a FIXED_LEN_BYTE_ARRAY(12) of months, days and milliseconds, each a
/// little-endian u32): parquet 58's reader decodes it as `Interval(DayTime)` and drops the
/// months. Here its leaves lose their INTERVAL annotation, so parquet gives the 12 bytes as
/// they are, and the roots of the top-level ones are returned for the mapping to convert.
/// An INTERVAL inside a struct, list or map is refused (`Unsupported`) rather than read
/// without its months.
fn intervals_as_bytes(md: ParquetMetaData) -> Result<(ParquetMetaData, Vec<usize>)> {
    use parquet::basic::ConvertedType;
    use parquet::schema::types::{SchemaDescriptor, Type, TypePtr};
    let descr = md.file_metadata().schema_descr();
    let leaves: Vec<usize> = (0..descr.num_columns())
        .filter(|&i| descr.column(i).converted_type() == ConvertedType::INTERVAL)
        .collect();
    if leaves.is_empty() {
        return Ok((md, Vec::new()));
    }
    if let Some(&nested) = leaves
        .iter()
        .find(|&&i| descr.column(i).path().parts().len() > 1)
    {
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "the INTERVAL column {} is inside a struct, list or map: rayquet reads                  top-level INTERVAL columns only",
                descr.column(nested).path()
            ),
        ));
    }
    let bad =
        |e: parquet::errors::ParquetError| Error::new(ErrorKind::CorruptFooter, e.to_string());
    let root = descr.root_schema();
    let fields = root
        .get_fields()
        .iter()
        .map(|f| -> Result<TypePtr> {
            let info = f.get_basic_info();
            if !f.is_primitive() || info.converted_type() != ConvertedType::INTERVAL {
                return Ok(Arc::clone(f));
            }
            let mut b = Type::primitive_type_builder(f.name(), f.get_physical_type())
                .with_repetition(info.repetition())
                .with_length(12);
            if info.has_id() {
                b = b.with_id(Some(info.id()));
            }
            Ok(Arc::new(b.build().map_err(bad)?))
        })
        .collect::<Result<Vec<_>>>()?;
    let roots: Vec<usize> = leaves
        .iter()
        .map(|&i| descr.get_column_root_idx(i))
        .collect();
    let group = Type::group_type_builder(root.name())
        .with_fields(fields)
        .build()
        .map_err(bad)?;
    let schema = Arc::new(SchemaDescriptor::new(Arc::new(group)));
    let md = with_file_metadata(md, |fm, _| (fm.key_value_metadata().cloned(), schema));
    Ok((md, roots))
}

/// Check the counts and lengths the thrift `metadata` of file `name` claims before parquet
/// allocates from them (`validate::file_metadata`).
pub(crate) fn check_metadata(metadata: &[u8], name: &str) -> Result<()> {
    crate::validate::thrift::file_metadata(metadata).map_err(|e| {
        Error::new(ErrorKind::CorruptFooter, format!("invalid metadata: {e}")).with_path(name)
    })
}

/// Whether every column and offset index of `meta` that `chunk` holds is well-formed thrift
/// whose fields have the types parquet reads and whose lengths fit
/// (`validate::thrift::typed_struct`), so parquet can parse it without allocating from a
/// corrupt count.
fn page_index_sane(meta: &FileMeta, chunk: &SparseChunk) -> bool {
    use parquet::file::reader::ChunkReader;
    let md = meta.reader.metadata();
    md.row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .flat_map(|c| {
            use crate::validate::thrift::{COLUMN_INDEX, OFFSET_INDEX};
            [
                (
                    c.column_index_offset(),
                    c.column_index_length(),
                    COLUMN_INDEX,
                ),
                (
                    c.offset_index_offset(),
                    c.offset_index_length(),
                    OFFSET_INDEX,
                ),
            ]
        })
        .all(|pair| match pair {
            (Some(off), Some(len), fields) if off >= 0 && len > 0 => chunk
                .get_bytes(off as u64, len as usize)
                .is_ok_and(|b| crate::validate::thrift::typed_struct(&b, fields).is_ok()),
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
