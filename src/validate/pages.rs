//! Page headers of the column chunks a decoder is about to read ([`check_row_group`]): the
//! compressed size must fit in the column chunk, the uncompressed size must be at most the
//! scan's page limit and plausible for the column chunk (at most twice its footer-declared
//! size, plus 1 MiB), a dictionary page cannot claim more values than it has bytes and cannot
//! come after a data page, and a dictionary-encoded data page needs a dictionary page at the
//! chunk's start.
//!
//! Invariant: only bytes already fetched are read; pages whose bytes were not fetched are not
//! read by parquet either, and are skipped.

use bytes::Bytes;
use parquet::basic::Type as PhysicalType;
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData};
use parquet::file::page_index::offset_index::PageLocation;

use crate::error::{Error, Result};
use crate::io::chunk::SparseChunk;
use crate::validate::thrift::{page_header, PageHead, R};

const DATA_PAGE: i64 = 0;
const DICTIONARY_PAGE: i64 = 2;
const DATA_PAGE_V2: i64 = 3;
/// Encodings of dictionary indexes.
const PLAIN_DICTIONARY: i64 = 2;
const RLE_DICTIONARY: i64 = 8;

/// The smallest page limit: a page may always claim up to this many uncompressed bytes,
/// however small the scan's memory budget.
pub(crate) const MIN_PAGE_LIMIT: u64 = 64 << 20;

/// The uncompressed size each checked page header of a column chunk claims, by the offset in
/// the file where the page's data (after its header) starts: what a page reader that
/// decompresses pages itself must get ([`crate::decode::pages`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct PageSizes(Vec<(u64, usize)>);

impl PageSizes {
    /// The uncompressed size claimed by the page whose data starts at `data_at`.
    pub fn get(&self, data_at: u64) -> Option<usize> {
        let i = self.0.binary_search_by_key(&data_at, |(at, _)| *at).ok()?;
        Some(self.0[i].1)
    }
}

/// Check the headers of the pages of column chunk `col` that `chunk` holds, before parquet
/// reads them: `limit` is the most uncompressed bytes one page may claim. Returns the sizes
/// the headers claim. Pages are found by
/// walking the chunk from its start (as parquet's reader does without an offset index) and at
/// the offset index's locations (as it does with one); pages whose bytes were not fetched are
/// not read by parquet either, and are skipped.
pub(crate) fn check_pages(
    chunk: &SparseChunk,
    col: &ColumnChunkMetaData,
    locations: Option<&[PageLocation]>,
    limit: u64,
) -> R<PageSizes> {
    let sizes = std::cell::RefCell::new(Vec::new());
    let start = col
        .dictionary_page_offset()
        .unwrap_or_else(|| col.data_page_offset());
    let len = col.compressed_size();
    if start < 0 || len < 0 {
        return Err(format!("column chunk at {start} of {len} bytes"));
    }
    let (start, len) = (start as u64, len as u64);
    let end = start.saturating_add(len);
    let declared = col.uncompressed_size().max(0) as u64;
    let plausible = declared.max(len).saturating_mul(2).saturating_add(1 << 20);
    let limit = limit.min(plausible);
    let check = |at: u64| -> R<Option<(u64, PageHead)>> {
        let Some(head) = header_at(chunk, at, end)? else {
            return Ok(None);
        };
        let data = at + head.len as u64;
        if head.compressed < 0 || data.saturating_add(head.compressed as u64) > end {
            return Err(format!(
                "page at byte {at} claims {} compressed bytes; its column chunk ends at byte {end}",
                head.compressed
            ));
        }
        if head.uncompressed < 0 || head.uncompressed as u64 > limit {
            return Err(format!(
                "page at byte {at} claims {} uncompressed bytes, more than {limit} (the page \
                 limit, and at most twice the column chunk's declared size {declared} + 1 MiB)",
                head.uncompressed
            ));
        }
        if let Some(n) = head.dict_values {
            let bytes = head.uncompressed.max(head.compressed);
            if n < 0 || n > bytes {
                return Err(format!(
                    "dictionary page at byte {at} claims {n} values in {bytes} bytes"
                ));
            }
        }
        sizes.borrow_mut().push((data, head.uncompressed as usize));
        Ok(Some((data + head.compressed as u64, head)))
    };
    // A dictionary-encoded data page needs the chunk's dictionary page, the page at its start:
    // parquet's decoders of every type but BYTE_ARRAY (which reports it) panic without one.
    // Known once the chunk's first page was fetched (parquet reads no page of a chunk whose
    // start it cannot read).
    let needs_dictionary = col.column_descr().physical_type() != PhysicalType::BYTE_ARRAY;
    let mut has_dictionary = None;
    let no_dictionary = |at: u64, head: &PageHead, has: Option<bool>| -> R<()> {
        let data = head.kind == DATA_PAGE || head.kind == DATA_PAGE_V2;
        let dict_encoded = matches!(head.encoding, Some(PLAIN_DICTIONARY | RLE_DICTIONARY));
        if needs_dictionary && data && dict_encoded && has == Some(false) {
            return Err(format!(
                "data page at byte {at} is dictionary-encoded, but the column chunk has no \
                 dictionary page"
            ));
        }
        Ok(())
    };
    // Sequential walk, until the first page that was not fetched. A dictionary page must come
    // first (parquet's decoder panics on one after data pages).
    let mut at = start;
    let mut data_pages = false;
    while at < end {
        match check(at)? {
            Some((_, head)) if head.kind == DICTIONARY_PAGE && data_pages => {
                return Err(format!(
                    "dictionary page at byte {at} comes after a data page"
                ))
            }
            Some((next, head)) => {
                if at == start {
                    has_dictionary = Some(head.kind == DICTIONARY_PAGE);
                }
                no_dictionary(at, &head, has_dictionary)?;
                data_pages |= head.kind == DATA_PAGE || head.kind == DATA_PAGE_V2;
                at = next;
            }
            None => break,
        }
    }
    // Offset index locations (and the dictionary page before the first one).
    if let Some(locs) = locations {
        for loc in locs {
            let at = loc.offset.max(0) as u64;
            if at >= start && at < end {
                if let Some((_, head)) = check(at)? {
                    no_dictionary(at, &head, has_dictionary)?;
                }
            }
        }
    }
    let mut sizes = sizes.into_inner();
    sizes.sort_unstable();
    sizes.dedup_by_key(|(at, _)| *at);
    Ok(PageSizes(sizes))
}

/// The most uncompressed bytes one page may claim in a scan with this memory budget: the
/// budget, and at least [`MIN_PAGE_LIMIT`].
pub(crate) fn page_limit(memory_budget: usize) -> u64 {
    (memory_budget as u64).max(MIN_PAGE_LIMIT)
}

/// [`check_pages`] for the column chunks of `leaves` in row group `rg` of `meta`'s file, before
/// a decoder reads them from `chunk` in batches of `batch_size` rows (fixed-length values: the
/// batch's buffer must fit in `limit` too); the error names the file, row group and column.
/// Returns the page sizes of each leaf, in the order of `leaves`.
pub(crate) fn check_row_group(
    (md, name): (&ParquetMetaData, &str),
    rg: usize,
    leaves: &[usize],
    chunk: &SparseChunk,
    (limit, batch_size): (u64, usize),
) -> Result<Vec<PageSizes>> {
    let group = md.row_group(rg);
    let mut sizes = Vec::with_capacity(leaves.len());
    for &leaf in leaves {
        let col = group.column(leaf);
        let descr = col.column_descr();
        if descr.physical_type() == parquet::basic::Type::FIXED_LEN_BYTE_ARRAY {
            // parquet's reader allocates `batch_size` values of `type_length` bytes up front.
            let width = descr.type_length().max(0) as u64;
            if width.saturating_mul(batch_size as u64) > limit {
                return Err(Error::decode(
                    format!(
                        "column {}: fixed-length values of {width} bytes times the batch size \
                         {batch_size} exceed the page limit {limit}",
                        col.column_path()
                    ),
                    name,
                    rg,
                ));
            }
        }
        let locations = md
            .offset_index()
            .and_then(|oi| oi.get(rg))
            .and_then(|cols| cols.get(leaf))
            .map(|o| o.page_locations().as_slice());
        let claimed = check_pages(chunk, col, locations, limit)
            .map_err(|e| Error::decode(format!("column {}: {e}", col.column_path()), name, rg))?;
        sizes.push(claimed);
    }
    Ok(sizes)
}

/// The page header at `at` (the page's bytes end by `end`), or `None` when the bytes at `at`
/// were not fetched.
fn header_at(chunk: &SparseChunk, at: u64, end: u64) -> R<Option<PageHead>> {
    const FIRST: u64 = 4 << 10;
    let mut want = FIRST.min(end - at);
    loop {
        let Some(bytes): Option<Bytes> = chunk.contiguous(at, want) else {
            return Ok(None);
        };
        match page_header(&bytes) {
            Ok(h) => return Ok(Some(h)),
            // The header may go on past what was looked at: look at more, up to the chunk's end.
            Err(_) if (bytes.len() as u64) == want && want < end - at => {
                want = (want * 16).min(end - at)
            }
            Err(e) => return Err(format!("page header at byte {at}: {e}")),
        }
    }
}
