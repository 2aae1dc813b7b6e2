//! Page headers of the column chunks a decoder is about to read ([`check_row_group`]): the
//! compressed size must fit in the column chunk, the uncompressed size must be at most the
//! scan's page limit and plausible for the column chunk (at most twice its footer-declared
//! size, plus 1 MiB), a page's values decoded must fit the page limit too, a dictionary page
//! cannot claim more values than it has bytes and cannot come after a data page, and a
//! dictionary-encoded data page needs a dictionary page at the chunk's start. The data pages'
//! values must add up to the column chunk's `num_values` (when every page was fetched; never
//! more when only some were), a v2 page's rows and nulls must fit its values, and a page whose
//! header carries a CRC-32 must match it, checked on the stored bytes before anything
//! decompresses them ([`PageChecks::verify_checksums`]).
//!
//! What the walk saw of each chunk ([`Shape`]: its largest page, the most bytes per value of a
//! data page, its dictionary page, whether values are rebuilt from prefixes) bounds the bytes a
//! batch of its rows can decode to ([`crate::decode::bound`]).
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
/// Byte arrays stored as prefixes shared with the previous value, plus suffixes.
const DELTA_BYTE_ARRAY: i64 = 7;

/// The smallest page limit: a page may always claim up to this many uncompressed bytes,
/// however small the scan's memory budget.
pub(crate) const MIN_PAGE_LIMIT: u64 = 64 << 20;

/// What the page checks of a scan allow: the most bytes one page may claim (uncompressed, or
/// its values decoded), the batch size, and whether CRCs are verified.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PageChecks {
    /// `page_limit(memory_budget)`.
    pub limit: u64,
    pub batch_size: usize,
    /// Verify the CRC-32 of every page whose header has one (`ScanOptions::verify_checksums`).
    pub verify_checksums: bool,
}

impl PageChecks {
    /// Checks with page limit `limit` and batches of `batch_size` rows, checksums verified.
    #[cfg(any(test, feature = "fuzzing"))]
    pub fn new(limit: u64, batch_size: usize) -> Self {
        PageChecks {
            limit,
            batch_size,
            verify_checksums: true,
        }
    }

    /// The most rows of a row group for which a decoder may hold a 4-byte value per row (row
    /// positions, dictionary indices): as many as fit the page limit. Larger row groups are
    /// read in batches only (by parquet's reader).
    pub fn buffer_rows(&self) -> u64 {
        self.limit / 4
    }

    /// The most rows of a row group a filter stage evaluates (its verdicts, a bit per row,
    /// within the page limit).
    pub fn stage_rows(&self) -> u64 {
        self.limit.saturating_mul(8)
    }
}

/// What a column chunk's checked pages look like: enough to bound the bytes a batch of its
/// rows decodes to, before decoding it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Shape {
    /// The largest uncompressed data page.
    pub max_page: u64,
    /// The most uncompressed bytes per value of a data page not dictionary-encoded (rounded
    /// up): a run of values read from such pages holds at most this many bytes per value, plus
    /// the pages at its two ends.
    pub max_per_value: u64,
    /// The dictionary page, if the chunk has one.
    pub dictionary: Option<DictionaryAt>,
    /// Some data page is dictionary-encoded.
    pub dict_encoded: bool,
    /// Some data page is DELTA_BYTE_ARRAY: a value is rebuilt from the previous one's prefix,
    /// so it may be as long as its page's bytes, however many values the page holds.
    pub prefixed: bool,
}

/// Where a chunk's dictionary page is: the offset of its data (after its header) in the file,
/// its stored and uncompressed sizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DictionaryAt {
    pub data: u64,
    pub compressed: u64,
    pub uncompressed: u64,
}

/// The uncompressed size each checked page header of a column chunk claims, by the offset in
/// the file where the page's data (after its header) starts: what a page reader that
/// decompresses pages itself must get ([`crate::decode::pages`]); and the chunk's [`Shape`].
#[derive(Debug, Clone, Default)]
pub(crate) struct PageSizes {
    sizes: Vec<(u64, usize)>,
    pub shape: Shape,
    /// A page already decompressed, by the offset of its data: a dictionary page whose values
    /// were measured before the chunk was decoded (`decode::bound`), which the page reader
    /// then takes rather than decompressing it again.
    pub decompressed: Option<(u64, Bytes)>,
}

impl PageSizes {
    /// The uncompressed size claimed by the page whose data starts at `data_at`.
    pub fn get(&self, data_at: u64) -> Option<usize> {
        let i = self
            .sizes
            .binary_search_by_key(&data_at, |(at, _)| *at)
            .ok()?;
        Some(self.sizes[i].1)
    }
}

/// The most bytes one value of `col` decodes to before its batch is assembled: its Arrow
/// width (a view for byte arrays), at least 4 (levels, offsets).
fn decoded_width(col: &ColumnChunkMetaData) -> u64 {
    let descr = col.column_descr();
    let w = match descr.physical_type() {
        PhysicalType::INT64 | PhysicalType::DOUBLE => 8,
        PhysicalType::INT96 | PhysicalType::BYTE_ARRAY => 16,
        PhysicalType::FIXED_LEN_BYTE_ARRAY => descr.type_length().max(0) as u64,
        _ => 4,
    };
    w.max(4)
}

/// Check the headers of the pages of column chunk `col` (of a row group of `rows` rows) that
/// `chunk` holds, before parquet reads them, as `checks` says. Returns the sizes the headers
/// claim and the chunk's [`Shape`]. Pages are found by walking the chunk from its start (as
/// parquet's reader does without an offset index) and at the offset index's locations (as it
/// does with one); pages whose bytes were not fetched are not read by parquet either, and are
/// skipped.
pub(crate) fn check_pages(
    chunk: &SparseChunk,
    col: &ColumnChunkMetaData,
    (rows, locations): (i64, Option<&[PageLocation]>),
    checks: PageChecks,
) -> R<PageSizes> {
    let mut walk = ChunkWalk::new(chunk, col, rows, checks)?;
    let walked = walk.walk()?;
    // Offset index locations (and the dictionary page before the first one).
    if let Some(locs) = locations {
        let dictionary = walk.has_dictionary.unwrap_or(false) as usize;
        for (i, loc) in locs.iter().enumerate() {
            let at = loc.offset.max(0) as u64;
            if at >= walk.start && at < walk.end && walked.binary_search(&at).is_err() {
                if let Some((_, head)) = walk.page(at, i + dictionary)? {
                    walk.dictionary_first(at, &head)?;
                }
            }
        }
    }
    let mut sizes = walk.sizes;
    sizes.sort_unstable();
    sizes.dedup_by_key(|(at, _)| *at);
    Ok(PageSizes {
        sizes,
        shape: walk.shape,
        decompressed: None,
    })
}

/// One column chunk's page checks: its bounds, what its footer declares, and what the pages
/// checked so far claimed.
struct ChunkWalk<'a> {
    chunk: &'a SparseChunk,
    checks: PageChecks,
    /// The chunk's bytes in the file.
    start: u64,
    end: u64,
    /// The footer's uncompressed size of the chunk.
    declared: u64,
    /// The most uncompressed bytes a page may claim: the page limit, and plausible for the
    /// chunk.
    limit: u64,
    /// The row group's rows and the chunk's values.
    rows: i64,
    chunk_values: i64,
    /// No repetition: a v2 page's rows equal its values.
    flat: bool,
    /// [`decoded_width`].
    width: u64,
    /// Dictionary-encoded data pages need a dictionary page (every physical type but
    /// BYTE_ARRAY, whose decoder reports it: parquet's others panic).
    needs_dictionary: bool,
    /// Whether the chunk starts with a dictionary page, once its first page was checked.
    has_dictionary: Option<bool>,
    sizes: Vec<(u64, usize)>,
    shape: Shape,
}

impl<'a> ChunkWalk<'a> {
    fn new(
        chunk: &'a SparseChunk,
        col: &ColumnChunkMetaData,
        rows: i64,
        checks: PageChecks,
    ) -> R<Self> {
        let start = col
            .dictionary_page_offset()
            .unwrap_or_else(|| col.data_page_offset());
        let len = col.compressed_size();
        if start < 0 || len < 0 {
            return Err(format!("column chunk at {start} of {len} bytes"));
        }
        let (start, len) = (start as u64, len as u64);
        let declared = col.uncompressed_size().max(0) as u64;
        let plausible = declared.max(len).saturating_mul(2).saturating_add(1 << 20);
        let descr = col.column_descr();
        Ok(ChunkWalk {
            chunk,
            checks,
            start,
            end: start.saturating_add(len),
            declared,
            limit: checks.limit.min(plausible),
            rows,
            chunk_values: col.num_values(),
            flat: descr.max_rep_level() == 0,
            width: decoded_width(col),
            needs_dictionary: descr.physical_type() != PhysicalType::BYTE_ARRAY,
            has_dictionary: None,
            sizes: Vec::new(),
            shape: Shape::default(),
        })
    }

    /// Walk the pages in order from the chunk's start, until the first one not fetched. A
    /// dictionary page must come first (parquet's decoder panics on one after data pages).
    /// The data pages' values add up to the chunk's, and their rows (v2) to the row group's.
    /// Returns the offsets of the headers walked, in order: not checked (nor their CRCs
    /// computed) again at the offset index's locations.
    fn walk(&mut self) -> R<Vec<u64>> {
        let (mut at, mut nth) = (self.start, 0);
        let mut data_pages = false;
        let (mut values, mut v2_rows, mut all_v2) = (0i64, 0i64, true);
        let mut walked = Vec::new();
        while at < self.end {
            let Some((next, head)) = self.page(at, nth)? else {
                break;
            };
            if head.kind == DICTIONARY_PAGE && data_pages {
                return Err(format!(
                    "dictionary page {nth} (at byte {at}) comes after a data page"
                ));
            }
            walked.push(at);
            if at == self.start {
                self.has_dictionary = Some(head.kind == DICTIONARY_PAGE);
            }
            self.dictionary_first(at, &head)?;
            if is_data(&head) {
                data_pages = true;
                values = values.saturating_add(head.values.unwrap_or(0));
                v2_rows = v2_rows.saturating_add(head.rows.unwrap_or(0));
                all_v2 &= head.rows.is_some();
                if values > self.chunk_values {
                    return Err(format!(
                        "the data pages up to page {nth} (at byte {at}) hold {values} values; \
                         the column chunk has {}",
                        self.chunk_values
                    ));
                }
            }
            at = next;
            nth += 1;
        }
        if at == self.end {
            // Every page was walked: the counts must agree, as DuckDB requires ("Column has N
            // values but row group has M rows").
            if values != self.chunk_values {
                return Err(format!(
                    "the data pages hold {values} values; the column chunk claims {}",
                    self.chunk_values
                ));
            }
            if all_v2 && data_pages && v2_rows != self.rows {
                return Err(format!(
                    "the data pages hold {v2_rows} rows; the row group claims {}",
                    self.rows
                ));
            }
        }
        Ok(walked)
    }

    /// A dictionary-encoded data page needs the chunk's dictionary page, the page at its
    /// start. Known once the chunk's first page was fetched (parquet reads no page of a chunk
    /// whose start it cannot read).
    fn dictionary_first(&self, at: u64, head: &PageHead) -> R<()> {
        let dict_encoded = matches!(head.encoding, Some(PLAIN_DICTIONARY | RLE_DICTIONARY));
        if self.needs_dictionary
            && is_data(head)
            && dict_encoded
            && self.has_dictionary == Some(false)
        {
            return Err(format!(
                "data page at byte {at} is dictionary-encoded, but the column chunk has no \
                 dictionary page"
            ));
        }
        Ok(())
    }

    /// Check the page whose header is at `at` (the chunk's page `nth`) and record what it
    /// claims; the offset after its data and its header, or `None` when its header was not
    /// fetched.
    fn page(&mut self, at: u64, nth: usize) -> R<Option<(u64, PageHead)>> {
        let Some(head) = header_at(self.chunk, at, self.end)? else {
            return Ok(None);
        };
        let page = format!("page {nth} (at byte {at})");
        let data = at + head.len as u64;
        self.sizes_fit(&page, data, &head)?;
        if is_data(&head) {
            self.counts_fit(&page, &head)?;
        }
        if self.checks.verify_checksums {
            self.checksum(&page, data, &head)?;
        }
        self.record(data, &head);
        Ok(Some((data + head.compressed as u64, head)))
    }

    /// The page's sizes fit its chunk, the page limit, and (a dictionary page) its values.
    fn sizes_fit(&self, page: &str, data: u64, head: &PageHead) -> R<()> {
        let end = self.end;
        if head.compressed < 0 || data.saturating_add(head.compressed as u64) > end {
            return Err(format!(
                "{page} claims {} compressed bytes; its column chunk ends at byte {end}",
                head.compressed
            ));
        }
        if head.uncompressed < 0 || head.uncompressed as u64 > self.limit {
            return Err(format!(
                "{page} claims {} uncompressed bytes, more than {} (the page limit, and at \
                 most twice the column chunk's declared size {} + 1 MiB)",
                head.uncompressed, self.limit, self.declared
            ));
        }
        if let Some(n) = head.dict_values {
            let bytes = head.uncompressed.max(head.compressed);
            if n < 0 || n > bytes {
                return Err(format!(
                    "dictionary {page} claims {n} values in {bytes} bytes"
                ));
            }
        }
        Ok(())
    }

    /// A data page's values fit its chunk's and, decoded, the page limit; its rows and nulls
    /// fit its values.
    fn counts_fit(&self, page: &str, head: &PageHead) -> R<()> {
        let (chunk_values, width, rows) = (self.chunk_values, self.width, self.rows);
        let values = head.values.unwrap_or(-1);
        if values < 0 || values > chunk_values {
            return Err(format!(
                "{page} claims {values} values; its column chunk has {chunk_values}"
            ));
        }
        // Decoding reads a page in batches, but the direct reader and the dictionary filter
        // decode a page's levels and indices whole: what they may allocate.
        if (values as u64).saturating_mul(width) > self.checks.limit {
            return Err(format!(
                "{page} claims {values} values: decoded ({width} bytes each), more than the \
                 page limit {}",
                self.checks.limit
            ));
        }
        if let Some(r) = head.rows {
            if r < 0 || r > values || (self.flat && r != values) || r > rows {
                return Err(format!(
                    "{page} claims {r} rows for {values} values in a row group of {rows} rows"
                ));
            }
        }
        if head.nulls.is_some_and(|n| n < 0 || n > values) {
            return Err(format!(
                "{page} claims {} nulls for {values} values",
                head.nulls.unwrap_or_default()
            ));
        }
        Ok(())
    }

    /// The page's CRC-32, if its header has one: only a page held whole is checked (one not
    /// fetched is not read either).
    fn checksum(&self, page: &str, data: u64, head: &PageHead) -> R<()> {
        let stored = head
            .crc
            .and_then(|_| self.chunk.contiguous(data, head.compressed as u64))
            .filter(|b| b.len() as u64 == head.compressed as u64);
        if let (Some(want), Some(bytes)) = (head.crc, &stored) {
            let got = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, bytes) as u32;
            if got != want {
                return Err(format!(
                    "{page}: CRC-32 mismatch (the header says {want:#010x}, the {} stored \
                     bytes give {got:#010x})",
                    bytes.len()
                ));
            }
        }
        Ok(())
    }

    /// Record the page's claimed size (by where its data starts) and its part of the
    /// chunk's [`Shape`].
    fn record(&mut self, data: u64, head: &PageHead) {
        let shape = &mut self.shape;
        if head.kind == DICTIONARY_PAGE {
            shape.dictionary = Some(DictionaryAt {
                data,
                compressed: head.compressed as u64,
                uncompressed: head.uncompressed as u64,
            });
        } else if is_data(head) {
            let values = head.values.unwrap_or(0).max(1) as u64;
            shape.max_page = shape.max_page.max(head.uncompressed as u64);
            match head.encoding {
                Some(PLAIN_DICTIONARY | RLE_DICTIONARY) => shape.dict_encoded = true,
                Some(DELTA_BYTE_ARRAY) => shape.prefixed = true,
                _ => {
                    let per = (head.uncompressed as u64).div_ceil(values);
                    shape.max_per_value = shape.max_per_value.max(per);
                }
            }
        }
        self.sizes.push((data, head.uncompressed as usize));
    }
}

/// A data page, v1 or v2.
fn is_data(head: &PageHead) -> bool {
    head.kind == DATA_PAGE || head.kind == DATA_PAGE_V2
}

/// The most uncompressed bytes one page may claim in a scan with this memory budget: the
/// budget, and at least [`MIN_PAGE_LIMIT`].
pub(crate) fn page_limit(memory_budget: usize) -> u64 {
    (memory_budget as u64).max(MIN_PAGE_LIMIT)
}

/// [`check_pages`] for the column chunks of `leaves` in row group `rg` of `meta`'s file, before
/// a decoder reads them from `chunk` (fixed-length values: a batch's buffer must fit in the
/// page limit too); the error names the file, row group and column. Returns the page sizes of
/// each leaf, in the order of `leaves`.
pub(crate) fn check_row_group(
    (md, name): (&ParquetMetaData, &str),
    rg: usize,
    leaves: &[usize],
    chunk: &SparseChunk,
    checks: PageChecks,
) -> Result<Vec<PageSizes>> {
    let group = md.row_group(rg);
    let (limit, batch_size) = (checks.limit, checks.batch_size);
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
        let claimed = check_pages(chunk, col, (group.num_rows(), locations), checks)
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
