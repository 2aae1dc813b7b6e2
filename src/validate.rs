//! Checks of sizes that a file *claims*, made before parquet allocates from them.
//!
//! parquet trusts counts and lengths read from a file: a thrift list that claims 2³¹
//! elements becomes `Vec::with_capacity(2³¹)` (an abort when the allocation fails), a schema
//! element that claims a million children or a million levels of nesting overflows the stack,
//! a page header that claims 2 GiB uncompressed allocates (and for LZ4 and Snappy zero-fills)
//! 2 GiB before the decompressor finds out. So before parquet sees them:
//!
//! - **Footer metadata** ([`file_metadata`]) and **page indexes** ([`thrift_struct`]) are
//!   walked once with a minimal Thrift compact-protocol reader: every list, map and binary
//!   must fit in the bytes that remain, structs nest at most [`MAX_THRIFT_DEPTH`] deep, and the
//!   schema's `num_children` must describe a tree of at most [`MAX_SCHEMA_DEPTH`] levels that
//!   uses exactly the elements present.
//! - **Page headers** ([`check_pages`]) of every column chunk a decoder is about to read: the
//!   compressed size must fit in the column chunk, the uncompressed size must be at most the
//!   scan's page limit and plausible for the column chunk (at most twice its footer-declared
//!   size, plus 1 MiB), and a dictionary page cannot claim more values than it has bytes.
//!
//! Invariant: these walks read only bytes already fetched and allocate nothing proportional to
//! a claimed size; they reject, never repair.

use bytes::Bytes;
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::page_index::offset_index::PageLocation;

use crate::chunk::SparseChunk;

/// Deepest nesting of Thrift structs, lists and maps accepted in metadata (parquet's own
/// metadata nests about 6 deep).
pub(crate) const MAX_THRIFT_DEPTH: usize = 32;
/// Deepest schema accepted (groups inside groups): deeper schemas could overflow the stack of
/// the recursive schema conversions in parquet and arrow.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;
const DATA_PAGE: i64 = 0;
const DICTIONARY_PAGE: i64 = 2;
const DATA_PAGE_V2: i64 = 3;

/// The smallest page limit: a page may always claim up to this many uncompressed bytes,
/// however small the scan's memory budget.
pub(crate) const MIN_PAGE_LIMIT: u64 = 64 << 20;

/// Thrift compact-protocol element types.
mod ty {
    pub const STOP: u8 = 0;
    pub const TRUE: u8 = 1;
    pub const FALSE: u8 = 2;
    pub const BYTE: u8 = 3;
    pub const I16: u8 = 4;
    pub const I32: u8 = 5;
    pub const I64: u8 = 6;
    pub const DOUBLE: u8 = 7;
    pub const BINARY: u8 = 8;
    pub const LIST: u8 = 9;
    pub const SET: u8 = 10;
    pub const MAP: u8 = 11;
    pub const STRUCT: u8 = 12;
    pub const UUID: u8 = 13;
}

/// A cursor over Thrift compact-protocol bytes.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

type R<T> = std::result::Result<T, String>;

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn left(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn byte(&mut self) -> R<u8> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or_else(|| format!("thrift data ends at byte {}", self.pos))?;
        self.pos += 1;
        Ok(b)
    }

    fn skip_bytes(&mut self, n: u64) -> R<()> {
        if n > self.left() as u64 {
            return Err(format!(
                "thrift length {n} at byte {} exceeds the {} bytes left",
                self.pos,
                self.left()
            ));
        }
        self.pos += n as usize;
        Ok(())
    }

    fn varint(&mut self) -> R<u64> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift.min(63);
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(format!("thrift varint too long at byte {}", self.pos))
    }

    fn zigzag(&mut self) -> R<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    /// A field header: `None` at the struct's end, else (field id, type).
    fn field(&mut self, last: &mut i16) -> R<Option<(i16, u8)>> {
        let b = self.byte()?;
        let t = b & 0x0f;
        if t == ty::STOP {
            return Ok(None);
        }
        let delta = (b >> 4) as i16;
        let id = if delta == 0 {
            let z = self.zigzag()?;
            i16::try_from(z).map_err(|_| format!("thrift field id {z} out of range"))?
        } else {
            last.wrapping_add(delta)
        };
        *last = id;
        Ok(Some((id, t)))
    }

    /// A list or set header: (element type, size), the size checked against the bytes left
    /// (every element takes at least one byte).
    fn list(&mut self) -> R<(u8, u64)> {
        let b = self.byte()?;
        let t = b & 0x0f;
        let n = match b >> 4 {
            15 => self.varint()?,
            n => u64::from(n),
        };
        if n > self.left() as u64 {
            return Err(format!(
                "thrift list claims {n} elements with {} bytes left",
                self.left()
            ));
        }
        Ok((t, n))
    }

    fn i32(&mut self) -> R<i64> {
        let v = self.zigzag()?;
        if v < i32::MIN as i64 || v > i32::MAX as i64 {
            return Err(format!("thrift i32 out of range: {v}"));
        }
        Ok(v)
    }

    /// Skip a value of type `t`, checking every length in it.
    fn skip(&mut self, t: u8, depth: usize) -> R<()> {
        match t {
            ty::TRUE | ty::FALSE => Ok(()),
            ty::BYTE => self.byte().map(drop),
            ty::I16 | ty::I32 | ty::I64 => self.varint().map(drop),
            ty::DOUBLE => self.skip_bytes(8),
            ty::UUID => self.skip_bytes(16),
            ty::BINARY => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            ty::LIST | ty::SET => {
                let depth = deeper(depth)?;
                let (et, n) = self.list()?;
                for _ in 0..n {
                    self.skip_element(et, depth)?;
                }
                Ok(())
            }
            ty::MAP => {
                let depth = deeper(depth)?;
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                if n > self.left() as u64 {
                    return Err(format!(
                        "thrift map claims {n} entries with {} bytes left",
                        self.left()
                    ));
                }
                let kv = self.byte()?;
                for _ in 0..n {
                    self.skip_element(kv >> 4, depth)?;
                    self.skip_element(kv & 0x0f, depth)?;
                }
                Ok(())
            }
            ty::STRUCT => self.skip_struct(deeper(depth)?),
            other => Err(format!("unknown thrift type {other} at byte {}", self.pos)),
        }
    }

    /// An element of a list, set or map: booleans take one byte there.
    fn skip_element(&mut self, t: u8, depth: usize) -> R<()> {
        match t {
            ty::TRUE | ty::FALSE => self.byte().map(drop),
            _ => self.skip(t, depth),
        }
    }

    fn skip_struct(&mut self, depth: usize) -> R<()> {
        let mut last = 0;
        while let Some((_, t)) = self.field(&mut last)? {
            self.skip(t, depth)?;
        }
        Ok(())
    }
}

fn deeper(depth: usize) -> R<usize> {
    if depth >= MAX_THRIFT_DEPTH {
        return Err(format!(
            "thrift structures nest deeper than {MAX_THRIFT_DEPTH} levels"
        ));
    }
    Ok(depth + 1)
}

/// Check that `bytes` start with one well-formed Thrift struct whose lengths all fit; returns
/// its length in bytes.
pub(crate) fn thrift_struct(bytes: &[u8]) -> R<usize> {
    let mut r = Reader::new(bytes);
    r.skip_struct(1)?;
    Ok(r.pos)
}

/// Check a file's Thrift-encoded `FileMetaData` (see the module docs).
pub(crate) fn file_metadata(bytes: &[u8]) -> R<()> {
    let mut r = Reader::new(bytes);
    let mut last = 0;
    let mut children: Option<Vec<Option<i64>>> = None;
    while let Some((id, t)) = r.field(&mut last)? {
        if id == 2 && t == ty::LIST {
            // schema: list<SchemaElement>; num_children is field 5.
            let (et, n) = r.list()?;
            if et != ty::STRUCT {
                return Err(format!("schema list of thrift type {et}, not structs"));
            }
            let mut elements = Vec::new();
            for _ in 0..n {
                let mut last = 0;
                let mut num_children = None;
                while let Some((id, t)) = r.field(&mut last)? {
                    if id == 5 && t == ty::I32 {
                        num_children = Some(r.i32()?);
                    } else {
                        r.skip(t, 2)?;
                    }
                }
                elements.push(num_children);
            }
            children = Some(elements);
        } else {
            r.skip(t, 1)?;
        }
    }
    if let Some(elements) = children {
        schema_tree(&elements)?;
    }
    Ok(())
}

/// The schema elements' `num_children` must form one tree over all of them, at most
/// [`MAX_SCHEMA_DEPTH`] deep.
fn schema_tree(elements: &[Option<i64>]) -> R<()> {
    // Children still expected by each open group, innermost last.
    let mut open: Vec<i64> = Vec::new();
    for (i, nc) in elements.iter().enumerate() {
        if i > 0 {
            while open.last() == Some(&0) {
                open.pop();
            }
            match open.last_mut() {
                Some(left) => *left -= 1,
                None => {
                    return Err(format!(
                        "schema element {i} lies outside the root's children ({} elements)",
                        elements.len()
                    ))
                }
            }
        }
        match *nc {
            Some(n) if n < 0 => return Err(format!("schema element {i} has {n} children")),
            Some(n) if n as u64 >= (elements.len() - i) as u64 && n > 0 => {
                return Err(format!(
                    "schema element {i} claims {n} children, {} elements follow",
                    elements.len() - i - 1
                ))
            }
            Some(n) if n > 0 || i == 0 => {
                open.push(n);
                if open.len() > MAX_SCHEMA_DEPTH {
                    return Err(format!(
                        "the schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
                    ));
                }
            }
            _ => {}
        }
    }
    if open.iter().any(|&n| n != 0) {
        return Err("the schema has fewer elements than its groups claim".into());
    }
    Ok(())
}

/// What [`page_header`] reads from a page header.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PageHead {
    /// Length of the header itself.
    pub len: usize,
    /// Page type (0 data, 1 index, 2 dictionary, 3 data v2).
    pub kind: i64,
    pub uncompressed: i64,
    pub compressed: i64,
    /// A dictionary page's number of values.
    pub dict_values: Option<i64>,
}

/// Parse the sizes out of a Thrift `PageHeader` at the start of `bytes`, checking every length
/// in it (statistics included) against the bytes given.
pub(crate) fn page_header(bytes: &[u8]) -> R<PageHead> {
    let mut r = Reader::new(bytes);
    let mut last = 0;
    let (mut kind, mut uncompressed, mut compressed, mut dict_values) = (None, None, None, None);
    while let Some((id, t)) = r.field(&mut last)? {
        match (id, t) {
            (1, ty::I32) => kind = Some(r.i32()?),
            (2, ty::I32) => uncompressed = Some(r.i32()?),
            (3, ty::I32) => compressed = Some(r.i32()?),
            (7, ty::STRUCT) => {
                let mut last = 0;
                while let Some((id, t)) = r.field(&mut last)? {
                    if id == 1 && t == ty::I32 {
                        dict_values = Some(r.i32()?);
                    } else {
                        r.skip(t, 2)?;
                    }
                }
            }
            _ => r.skip(t, 1)?,
        }
    }
    match (kind, uncompressed, compressed) {
        (Some(kind), Some(uncompressed), Some(compressed)) => Ok(PageHead {
            len: r.pos,
            kind,
            uncompressed,
            compressed,
            dict_values,
        }),
        _ => Err("page header lacks its type or sizes".into()),
    }
}

/// Check the headers of the pages of column chunk `col` that `chunk` holds, before parquet
/// reads them: `limit` is the most uncompressed bytes one page may claim. Pages are found by
/// walking the chunk from its start (as parquet's reader does without an offset index) and at
/// the offset index's locations (as it does with one); pages whose bytes were not fetched are
/// not read by parquet either, and are skipped.
pub(crate) fn check_pages(
    chunk: &SparseChunk,
    col: &ColumnChunkMetaData,
    locations: Option<&[PageLocation]>,
    limit: u64,
) -> R<()> {
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
    let check = |at: u64| -> R<Option<(u64, i64)>> {
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
        Ok(Some((data + head.compressed as u64, head.kind)))
    };
    // Sequential walk, until the first page that was not fetched. A dictionary page must come
    // first (parquet's decoder panics on one after data pages).
    let mut at = start;
    let mut data_pages = false;
    while at < end {
        match check(at)? {
            Some((_, DICTIONARY_PAGE)) if data_pages => {
                return Err(format!(
                    "dictionary page at byte {at} comes after a data page"
                ))
            }
            Some((next, kind)) => {
                data_pages |= kind == DATA_PAGE || kind == DATA_PAGE_V2;
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
                check(at)?;
            }
        }
    }
    Ok(())
}

/// The most uncompressed bytes one page may claim in a scan with this memory budget: the
/// budget, and at least [`MIN_PAGE_LIMIT`].
pub(crate) fn page_limit(memory_budget: usize) -> u64 {
    (memory_budget as u64).max(MIN_PAGE_LIMIT)
}

/// [`check_pages`] for the column chunks of `leaves` in row group `rg` of `meta`'s file, before
/// a decoder reads them from `chunk` in batches of `batch_size` rows (fixed-length values: the
/// batch's buffer must fit in `limit` too); the error names the file, row group and column.
pub(crate) fn check_row_group(
    meta: &crate::footer::FileMeta,
    rg: usize,
    leaves: &[usize],
    chunk: &SparseChunk,
    (limit, batch_size): (u64, usize),
) -> crate::error::Result<()> {
    let md = meta.reader.metadata();
    let group = md.row_group(rg);
    for &leaf in leaves {
        let col = group.column(leaf);
        let descr = col.column_descr();
        if descr.physical_type() == parquet::basic::Type::FIXED_LEN_BYTE_ARRAY {
            // parquet's reader allocates `batch_size` values of `type_length` bytes up front.
            let width = descr.type_length().max(0) as u64;
            if width.saturating_mul(batch_size as u64) > limit {
                return Err(crate::error::Error::decode(
                    format!(
                        "column {}: fixed-length values of {width} bytes times the batch size \
                         {batch_size} exceed the page limit {limit}",
                        col.column_path()
                    ),
                    &meta.file.name,
                    rg,
                ));
            }
        }
        let locations = md
            .offset_index()
            .and_then(|oi| oi.get(rg))
            .and_then(|cols| cols.get(leaf))
            .map(|o| o.page_locations().as_slice());
        check_pages(chunk, col, locations, limit).map_err(|e| {
            crate::error::Error::decode(
                format!("column {}: {e}", col.column_path()),
                &meta.file.name,
                rg,
            )
        })?;
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_trees() {
        assert!(schema_tree(&[Some(2), None, None]).is_ok());
        assert!(schema_tree(&[Some(1), Some(1), None]).is_ok());
        assert!(schema_tree(&[Some(3), None, None]).is_err(), "too few");
        assert!(schema_tree(&[Some(1), None, None]).is_err(), "too many");
        assert!(schema_tree(&[Some(1), Some(-1), None]).is_err());
        let deep: Vec<_> = (0..100).map(|i| Some(if i < 99 { 1 } else { 0 })).collect();
        assert!(schema_tree(&deep).is_err(), "100 levels");
    }

    #[test]
    fn lists_must_fit() {
        // A struct whose field 1 is a list of 2^31 i32s, in 8 bytes.
        let bytes = [0x19, 0xf5, 0x80, 0x80, 0x80, 0x80, 0x08, 0x00];
        assert!(thrift_struct(&bytes).unwrap_err().contains("claims"));
        // A binary claiming 1000 bytes.
        assert!(thrift_struct(&[0x18, 0xe8, 0x07, 0x00]).is_err());
        assert_eq!(thrift_struct(&[0x15, 0x04, 0x00]).unwrap(), 3);
    }
}
