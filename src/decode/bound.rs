//! Batches whose decoded bytes are bounded before they are decoded: how many rows parquet's
//! reader may read at once for a part's leaves ([`read_rows`]), and the reader that joins such
//! reads back into batches of the batch size ([`Coalesced`]) while their bytes allow.
//!
//! A file's pages can decode to far more than they store: a dictionary value of 1 MiB
//! repeated on every row, a zstd page of one 60 MiB string, a DELTA_BYTE_ARRAY page whose
//! values each repeat the previous one's prefix. parquet's reader decodes a batch of rows at
//! once, so the bytes of a batch are bounded here, per leaf, from what the page headers said
//! ([`Shape`]) and, for dictionary-encoded byte arrays copied into offset buffers, from the
//! longest value of the dictionary page (decompressed here once, then handed to the page
//! reader): a batch of `b` rows holds at most `b` times the bytes one row of each leaf can
//! decode to, plus the pages it references whole. Where `batch_size` rows could exceed the
//! batch byte limit, parquet reads fewer rows at a time and [`Coalesced`] joins them up to
//! `batch_size` rows or the limit, whichever comes first: the part's batches then hold fewer
//! rows than the batch size, which the assembler aligns with the other parts'.
//!
//! Invariants: a batch [`Coalesced`] gives holds at most `BatchLimit::bytes` decoded bytes,
//! or one read of rows whose bound could not be kept lower (one row at least); a value larger
//! than `BatchLimit::largest_value` is an error naming its column. Leaves inside lists and maps
//! are not bounded here (a row holds any number of their values); their pages are bounded by
//! the page limit. Every read's nested columns are checked before they are joined
//! ([`crate::validate::nested`]): parquet builds them from levels without checking them.

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Fields, SchemaRef};
use arrow::error::ArrowError;
use parquet::arrow::arrow_reader::ParquetRecordBatchReader;
use parquet::basic::Type as PhysicalType;
use parquet::file::metadata::ColumnChunkMetaData;

use crate::validate::pages::{PageSizes, Shape};

/// What one batch of a part may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchLimit {
    /// The batch size: rows.
    pub rows: usize,
    /// Decoded bytes ([`crate::flow::budget::batch_bytes`]).
    pub bytes: u64,
    /// The largest single value, in bytes: the memory budget.
    pub largest_value: u64,
}

impl BatchLimit {
    /// Batches of `rows` rows and no byte bound (tests, and the fuzz targets' references).
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn rows(rows: usize) -> Self {
        BatchLimit {
            rows,
            bytes: u64::MAX,
            largest_value: u64::MAX,
        }
    }
}

/// How many bytes a batch of a leaf's rows decodes to at most: `per_row` for each row, plus
/// `pages` (buffers a batch references whole: pages at its two ends, a dictionary).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct LeafBound {
    per_row: u64,
    pages: u64,
}

/// How a byte array leaf comes out of parquet's reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Out {
    /// Views: a dictionary's values are referenced, not copied; a plain page is referenced
    /// whole.
    Views,
    /// Offsets and a buffer every value is copied into.
    Offsets,
}

/// The Arrow field a leaf at `path` (names from its root) decodes to, inside `fields`,
/// through structs only.
fn leaf_field<'a>(fields: &'a Fields, path: &[String]) -> Option<&'a Field> {
    let (first, rest) = path.split_first()?;
    let f = fields.iter().find(|f| f.name() == first)?;
    if rest.is_empty() {
        return Some(f);
    }
    match f.data_type() {
        DataType::Struct(children) => leaf_field(children, rest),
        _ => None,
    }
}

/// How a byte-array leaf of Arrow type `dt` comes out, `None` for other types.
fn out_of(dt: &DataType) -> Option<Out> {
    match dt {
        DataType::Utf8View | DataType::BinaryView => Some(Out::Views),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
            Some(Out::Offsets)
        }
        _ => None,
    }
}

/// The bound of one leaf (`None`: not bounded here: fixed width, or inside a list or map).
/// `longest`: the longest value of the chunk's dictionary page, when it was measured.
fn leaf_bound(out: Out, shape: &Shape, longest: Option<u64>) -> LeafBound {
    const VIEW: u64 = 16;
    let mut b = LeafBound::default();
    let slot = match out {
        Out::Views => VIEW,
        Out::Offsets => 8,
    };
    if shape.dict_encoded {
        let dict = shape.dictionary.map_or(0, |d| d.uncompressed);
        match out {
            // The dictionary's buffer, shared by every view into it.
            Out::Views => {
                b.per_row = b.per_row.max(VIEW);
                b.pages = b.pages.max(dict);
            }
            Out::Offsets => b.per_row = b.per_row.max(longest.unwrap_or(dict) + slot),
        }
    }
    if shape.max_per_value > 0 {
        // Values stored in their pages: a run of rows holds their bytes, and at most the two
        // pages at its ends beyond them (referenced whole by views).
        b.per_row = b.per_row.max(shape.max_per_value + slot);
        b.pages = b.pages.max(shape.max_page.saturating_mul(2));
    }
    if shape.prefixed {
        // A value rebuilt from the previous one's prefix is at most its page's bytes long.
        b.per_row = b.per_row.max(shape.max_page + slot);
    }
    b
}

/// The bounds of the flat byte-array leaves of a part (`leaves` with their checked pages,
/// `fields` the arrow fields of the file's roots): each leaf's Arrow type, its pages' shape
/// and, where a batch of offsets could otherwise exceed `limit`, the longest value of its
/// dictionary page, measured by `longest(leaf, sizes)` (which may decompress the page and
/// keep it in `sizes` for the page reader).
fn bounds(
    md: &parquet::file::metadata::ParquetMetaData,
    rg: usize,
    leaves: &mut [(usize, &mut PageSizes)],
    schema: &SchemaRef,
    limit: BatchLimit,
    mut longest: impl FnMut(&ColumnChunkMetaData, &mut PageSizes) -> Option<u64>,
) -> Vec<LeafBound> {
    let group = md.row_group(rg);
    let mut out = Vec::new();
    for (leaf, sizes) in leaves.iter_mut() {
        let col = group.column(*leaf);
        let descr = col.column_descr();
        if descr.physical_type() != PhysicalType::BYTE_ARRAY || descr.max_rep_level() > 0 {
            continue;
        }
        let path = descr.path().parts();
        let Some(o) = leaf_field(schema.fields(), path).and_then(|f| out_of(f.data_type())) else {
            continue;
        };
        let shape = sizes.shape;
        let crude = leaf_bound(o, &shape, None);
        let fits = crude.per_row.saturating_mul(limit.rows as u64) + crude.pages <= limit.bytes;
        let measured = (o == Out::Offsets && shape.dict_encoded && !fits)
            .then(|| longest(col, sizes))
            .flatten();
        out.push(leaf_bound(o, &shape, measured));
    }
    out
}

/// The most rows parquet's reader may read at once, so that a read of every leaf's rows stays
/// within `limit.bytes`: `limit.rows` when that fits, else fewer, at least one.
fn rows_within(bounds: &[LeafBound], limit: BatchLimit) -> usize {
    let per_row: u64 = bounds.iter().map(|b| b.per_row).sum();
    let pages: u64 = bounds.iter().map(|b| b.pages).sum();
    if per_row == 0 {
        return limit.rows;
    }
    let room = limit.bytes.saturating_sub(pages);
    ((room / per_row) as usize).clamp(1, limit.rows.max(1))
}

/// The rows parquet's reader reads at once for `leaves` of row group `rg` (their checked pages
/// in the same order), as [`rows_within`] bounds them. `longest` measures a dictionary page's
/// longest value (see [`bounds`]).
pub(crate) fn read_rows(
    md: &parquet::file::metadata::ParquetMetaData,
    rg: usize,
    leaves: &mut [(usize, &mut PageSizes)],
    schema: &SchemaRef,
    limit: BatchLimit,
    longest: impl FnMut(&ColumnChunkMetaData, &mut PageSizes) -> Option<u64>,
) -> usize {
    if limit.bytes == u64::MAX {
        return limit.rows;
    }
    let b = bounds(md, rg, leaves, schema, limit, longest);
    rows_within(&b, limit)
}

/// The longest value of a PLAIN-encoded byte-array dictionary page (`None` if it is malformed:
/// the decoder reports it).
pub(crate) fn longest_value(page: &[u8]) -> Option<u64> {
    let (mut at, mut longest) = (0usize, 0u64);
    while at < page.len() {
        let len = u32::from_le_bytes(page.get(at..at + 4)?.try_into().ok()?) as usize;
        at = at.checked_add(4)?.checked_add(len)?;
        if at > page.len() {
            return None;
        }
        longest = longest.max(len as u64);
    }
    Some(longest)
}

/// parquet's reader reading `read` rows at a time, its reads joined into batches of up to
/// `limit.rows` rows and `limit.bytes` decoded bytes.
pub(crate) struct Coalesced {
    inner: ParquetRecordBatchReader,
    limit: BatchLimit,
    /// A read that did not fit the batch before it.
    next: Option<RecordBatch>,
}

impl Coalesced {
    pub fn new(inner: ParquetRecordBatchReader, limit: BatchLimit) -> Self {
        Coalesced {
            inner,
            limit,
            next: None,
        }
    }

    /// A value larger than `limit.largest_value` in a read of one row: an error naming its
    /// column.
    fn check_value(&self, b: &RecordBatch) -> Result<(), ArrowError> {
        if b.num_rows() != 1 {
            return Ok(());
        }
        for (c, f) in b.columns().iter().zip(b.schema_ref().fields()) {
            let bytes = c.get_array_memory_size() as u64;
            if bytes > self.limit.largest_value {
                return Err(ArrowError::ParquetError(format!(
                    "a value of column {} holds {bytes} bytes, more than the memory budget {}",
                    f.name(),
                    self.limit.largest_value
                )));
            }
        }
        Ok(())
    }

    /// parquet's next read, its nested columns checked ([`crate::validate::nested`]).
    fn read(&mut self) -> Option<Result<RecordBatch, ArrowError>> {
        let read = self.inner.next()?;
        Some(read.and_then(|b| crate::validate::nested::check_batch(&b).map(|()| b)))
    }
}

impl Iterator for Coalesced {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut parts: Vec<RecordBatch> = Vec::new();
        let (mut rows, mut bytes) = (0usize, 0u64);
        loop {
            let b = match self.next.take().map(Ok).or_else(|| self.read()) {
                None => break,
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(b)) => b,
            };
            if let Err(e) = self.check_value(&b) {
                return Some(Err(e));
            }
            let size = b.get_array_memory_size() as u64;
            let fits = rows + b.num_rows() <= self.limit.rows
                && bytes.saturating_add(size) <= self.limit.bytes;
            if !parts.is_empty() && !fits {
                self.next = Some(b);
                break;
            }
            rows += b.num_rows();
            bytes = bytes.saturating_add(size);
            parts.push(b);
            if rows >= self.limit.rows {
                break;
            }
        }
        match parts.len() {
            0 => None,
            1 => parts.pop().map(Ok),
            _ => Some(arrow::compute::concat_batches(&parts[0].schema(), &parts)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::pages::DictionaryAt;

    fn limit(rows: usize, bytes: u64) -> BatchLimit {
        BatchLimit {
            rows,
            bytes,
            largest_value: u64::MAX,
        }
    }

    #[test]
    fn dictionary_views_cost_a_view_per_row() {
        let shape = Shape {
            dict_encoded: true,
            dictionary: Some(DictionaryAt {
                data: 0,
                compressed: 10,
                uncompressed: 1 << 20,
            }),
            ..Default::default()
        };
        let b = leaf_bound(Out::Views, &shape, None);
        assert_eq!(
            b,
            LeafBound {
                per_row: 16,
                pages: 1 << 20
            }
        );
        // 8192 rows of views and the 1 MiB dictionary fit 16 MiB.
        assert_eq!(rows_within(&[b], limit(8192, 16 << 20)), 8192);
        // Offsets: each row may copy the longest value.
        let b = leaf_bound(Out::Offsets, &shape, Some(1 << 20));
        assert_eq!(rows_within(&[b], limit(8192, 16 << 20)), 15);
        let b = leaf_bound(Out::Offsets, &shape, Some(30));
        assert_eq!(rows_within(&[b], limit(8192, 16 << 20)), 8192);
    }

    #[test]
    fn plain_pages_bound_by_bytes_per_value() {
        // Pages of 1 MiB holding 20,000 values (53 bytes each, rounded up).
        let shape = Shape {
            max_page: 1 << 20,
            max_per_value: 53,
            ..Default::default()
        };
        let b = leaf_bound(Out::Views, &shape, None);
        assert_eq!(rows_within(&[b], limit(8192, 16 << 20)), 8192);
        // One 60 MiB value per page: one row at a time.
        let shape = Shape {
            max_page: 60 << 20,
            max_per_value: 60 << 20,
            ..Default::default()
        };
        let b = leaf_bound(Out::Offsets, &shape, None);
        assert_eq!(rows_within(&[b], limit(8192, 16 << 20)), 1);
        // Prefix-coded pages: a value may be as long as its page.
        let shape = Shape {
            max_page: 1 << 20,
            prefixed: true,
            ..Default::default()
        };
        let b = leaf_bound(Out::Views, &shape, None);
        assert_eq!(rows_within(&[b], limit(8192, 16 << 20)), 15);
    }

    #[test]
    fn longest_dictionary_value() {
        let mut page = Vec::new();
        for v in [&b"ab"[..], b"", b"abcdefg"] {
            page.extend_from_slice(&(v.len() as u32).to_le_bytes());
            page.extend_from_slice(v);
        }
        assert_eq!(longest_value(&page), Some(7));
        assert_eq!(longest_value(&page[..page.len() - 1]), None);
        assert_eq!(longest_value(&[]), Some(0));
    }
}
