//! One data page of a flat column, read at the selected rows only ([`DataPage::walk`]).
//!
//! A page is parsed once ([`DataPage::parse`]); its definition levels (a nullable column's) and
//! values stay where they are in the decompressed page. Two ways to reach a row's value:
//!
//! - **sparse** (few selected rows in the page): cursors into the levels and values move past
//!   the rows before each selected one without decoding them (RLE runs and bit-packed indices
//!   by arithmetic, plain fixed-width values by offset, plain byte arrays by their lengths);
//! - **dense** ([`DataPage::densify`], when selected rows are at least a sixteenth of the
//!   page): the levels, dictionary indices or byte-array offsets of the whole page are decoded
//!   once into arrays, and each selected row's value is then found by position.
//!
//! Either way the column is told where the value is ([`At`]).
//!
//! Invariants: sparse walks visit rows in increasing order, each at most once; nothing is read
//! outside the page and nothing panics: a malformed page (a level, value or index past the
//! page's end, an encoding other than PLAIN or dictionary) is a [`Fallback`], never a wrong
//! value. A dense page has exactly one index or offset per non-null value and one entry per
//! row in its value positions, checked when it is made.

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::page::Page;

use super::Fallback;
use crate::decode::flat;
use crate::decode::rle::{self, Cursor};

/// Where a selected row's value is, for the column to append.
#[derive(Debug, Clone, Copy)]
pub(crate) enum At {
    /// The row is null.
    Null,
    /// An index into the column chunk's dictionary (not yet checked against its length).
    Index(u32),
    /// The `i`th fixed-width value of the page's values ([`DataPage::values`]), in bounds.
    Plain(usize),
    /// A plain byte array: `len` bytes at offset `start` of the page's values, in bounds.
    Bytes { start: usize, len: usize },
}

/// How the page's values are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Plain fixed-width values, `count` of them.
    Fixed { count: usize },
    /// Plain byte arrays (a 4-byte length, then the bytes).
    Bytes,
    /// Dictionary indices, an RLE / bit-packing hybrid stream after its bit-width byte.
    Dict,
}

/// Cursors of a sparse walk.
#[derive(Debug, Default)]
struct Sparse {
    /// The next page-relative row not walked past.
    row: usize,
    /// Levels: the cursor into them.
    levels: Cursor,
    /// Values: the next fixed-width value's position, or the next byte array's offset.
    next: usize,
    /// Dictionary indices: the cursor into them.
    indices: Cursor,
}

/// The arrays of a dense page; reused from page to page.
#[derive(Debug, Default)]
pub(crate) struct Dense {
    /// A nullable column's: per row, its value's position, or `u32::MAX` for a null.
    pub positions: Vec<u32>,
    /// Dictionary indices, or byte arrays' start offsets, one per non-null value.
    pub values: Vec<u32>,
    /// The largest dictionary index (0 when there is none).
    pub max_index: u32,
    /// The dictionary indices are `k, k + 1, k + 2...`: the values of consecutive rows are
    /// consecutive in the dictionary (a column of distinct values, as a key's or a
    /// measurement's, in a row group whose dictionary holds them all).
    pub consecutive: Option<u32>,
    levels: Vec<u32>,
}

/// A data page of a flat (unnested, unrepeated) column.
#[derive(Debug)]
pub(crate) struct DataPage {
    /// The page's first row in its row group, and its number of rows.
    pub first: usize,
    pub rows: usize,
    /// A nullable column's definition levels (bit width 1).
    levels: Option<Bytes>,
    /// The value bytes: plain values, or the dictionary indices' stream.
    values: Bytes,
    pub kind: Kind,
    sparse: Sparse,
    /// Set by [`DataPage::densify`].
    dense: Option<Dense>,
    /// Every byte array of the page was checked to be UTF-8.
    utf8: bool,
}

impl DataPage {
    /// Parse `page`, starting at row `first` of its row group, of a flat column (`nullable`:
    /// maximum definition level 1) whose plain values are `width` bytes wide (`None`: byte
    /// arrays). Anything but a v1 or v2 data page, PLAIN or dictionary-encoded, with RLE
    /// levels, is a [`Fallback`].
    pub fn parse(
        page: Page,
        first: usize,
        nullable: bool,
        width: Option<usize>,
    ) -> Result<Self, Fallback> {
        let page = flat::split(&page, nullable).map_err(Fallback)?;
        let (rows, encoding) = (page.rows, page.encoding);
        let levels = page.defs.map(|r| page.buf.slice(r));
        let values = page.buf.slice(page.values);
        // Offsets into the values are kept as `u32` (dense offsets, views).
        if values.len() > u32::MAX as usize {
            return Err(Fallback("a page over 4 GiB"));
        }
        let kind = match (encoding, width) {
            (Encoding::PLAIN, Some(width)) => Kind::Fixed {
                count: values.len() / width,
            },
            (Encoding::PLAIN, None) => Kind::Bytes,
            (Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY, _) => Kind::Dict,
            _ => return Err(Fallback("an encoding other than PLAIN or dictionary")),
        };
        let mut sparse = Sparse {
            levels: Cursor::new(1).map_err(Fallback)?,
            ..Sparse::default()
        };
        if kind == Kind::Dict {
            // An empty stream (every row null) has no bit width; it is never read.
            sparse.indices = Cursor::new(values.first().copied().unwrap_or(0)).map_err(Fallback)?;
        }
        Ok(DataPage {
            first,
            rows,
            levels,
            values,
            kind,
            sparse,
            dense: None,
            utf8: false,
        })
    }

    /// The page's value bytes, which [`At::Plain`] and [`At::Bytes`] point into.
    pub fn values(&self) -> &Bytes {
        &self.values
    }

    /// The dense arrays, once [`DataPage::densify`] made them.
    pub fn dense(&self) -> Option<&Dense> {
        self.dense.as_ref()
    }

    /// Whether every byte array of the page was checked to be UTF-8 ([`DataPage::densify`]).
    pub fn utf8_checked(&self) -> bool {
        self.utf8
    }

    /// Take the dense arrays back for the next page.
    pub fn recycle(&mut self) -> Dense {
        self.dense.take().unwrap_or_default()
    }

    /// Decode the whole page's levels and indices (or byte-array offsets) into `dense`'s
    /// arrays, so that rows are then found by position; with `utf8`, check that every byte
    /// array is UTF-8. Only before any sparse walk. Dispatched
    /// ([`crate::decode::dispatch`]).
    pub fn densify(&mut self, dense: Dense, utf8: bool) -> Result<(), Fallback> {
        densify(self, dense, utf8)
    }

    /// [`DataPage::densify`], inlined into each of its copies.
    #[inline(always)]
    fn densify_body(&mut self, mut dense: Dense, utf8: bool) -> Result<(), Fallback> {
        if self.sparse.row > 0 {
            return Err(Fallback("a page made dense after a walk"));
        }
        dense.positions.clear();
        dense.values.clear();
        dense.max_index = 0;
        dense.consecutive = None;
        let present = match &self.levels {
            None => self.rows,
            // No null in the page (one RLE run of ones, as writers encode it): rows are
            // their values' positions, no level decoded.
            Some(levels) if rle::one_run(levels, 1, self.rows) == Some(1) => self.rows,
            Some(levels) => {
                dense.levels.clear();
                rle::decode(levels, 1, self.rows, &mut dense.levels).map_err(Fallback)?;
                let mut n = 0u32;
                dense.positions.extend(dense.levels.iter().map(|&l| {
                    let at = if l == 1 { n } else { u32::MAX };
                    n += (l == 1) as u32;
                    at
                }));
                // No null: rows are their values' positions (the builders' tight loops).
                if n as usize == self.rows {
                    dense.positions.clear();
                }
                n as usize
            }
        };
        match self.kind {
            Kind::Fixed { count } => {
                if count < present {
                    return Err(Fallback("fewer values than rows"));
                }
            }
            Kind::Dict => {
                if present > 0 {
                    let (&bw, stream) = self
                        .values
                        .split_first()
                        .ok_or(Fallback("an empty index stream"))?;
                    rle::decode(stream, bw, present, &mut dense.values).map_err(Fallback)?;
                    dense.consecutive = consecutive(&dense.values);
                    dense.max_index = match (dense.consecutive, dense.values.last()) {
                        (Some(_), Some(&last)) => last,
                        _ => max_index(&dense.values, bw),
                    };
                }
            }
            Kind::Bytes => {
                dense.values.reserve(present);
                let mut at = 0;
                let mut check = Utf8Runs::default();
                for _ in 0..present {
                    let (start, end) = byte_array(&self.values, at)?;
                    dense.values.push(start as u32);
                    if utf8 {
                        check.next(&self.values, start)?;
                    }
                    at = end;
                }
                if utf8 {
                    check.finish(&self.values, at)?;
                    self.utf8 = true;
                }
            }
        }
        self.dense = Some(dense);
        Ok(())
    }

    /// Call `f` with where the value of each row of `rows` is: row-group positions inside
    /// this page, increasing, none before a row already walked (on a sparse page).
    #[inline]
    pub fn walk(
        &mut self,
        rows: &[u32],
        mut f: impl FnMut(At) -> Result<(), Fallback>,
    ) -> Result<(), Fallback> {
        if let Some(d) = &self.dense {
            for &r in rows {
                let r = (r as usize)
                    .checked_sub(self.first)
                    .filter(|r| *r < self.rows)
                    .ok_or(Fallback("a row outside the page"))?;
                let i = match d.positions.get(r) {
                    None => r,
                    Some(&u32::MAX) => {
                        f(At::Null)?;
                        continue;
                    }
                    Some(&i) => i as usize,
                };
                f(match self.kind {
                    Kind::Fixed { .. } => At::Plain(i),
                    Kind::Dict => At::Index(d.values[i]),
                    Kind::Bytes => {
                        let start = d.values[i] as usize;
                        let len = &self.values[start - 4..start];
                        let len = u32::from_le_bytes(len.try_into().expect("4 bytes"));
                        At::Bytes {
                            start,
                            len: len as usize,
                        }
                    }
                })?;
            }
            return Ok(());
        }
        for &r in rows {
            let r = (r as usize)
                .checked_sub(self.first)
                .filter(|r| *r >= self.sparse.row && *r < self.rows)
                .ok_or(Fallback("a row outside the page"))?;
            let skip = r - self.sparse.row;
            self.sparse.row = r + 1;
            let (skip, valid) = match &self.levels {
                None => (skip, true),
                Some(levels) => {
                    let c = &mut self.sparse.levels;
                    let ones = c.skip_sum(skip, levels).map_err(Fallback)?;
                    (ones, c.next(levels).map_err(Fallback)? == 1)
                }
            };
            self.skip_values(skip)?;
            f(if valid { self.next_value()? } else { At::Null })?;
        }
        Ok(())
    }

    #[inline]
    fn skip_values(&mut self, n: usize) -> Result<(), Fallback> {
        if n == 0 {
            return Ok(());
        }
        match self.kind {
            Kind::Fixed { .. } => self.sparse.next += n,
            Kind::Bytes => {
                for _ in 0..n {
                    self.sparse.next = byte_array(&self.values, self.sparse.next)?.1;
                }
            }
            Kind::Dict => {
                let idx = self
                    .values
                    .get(1..)
                    .ok_or(Fallback("an empty index stream"))?;
                self.sparse.indices.skip(n, idx).map_err(Fallback)?
            }
        }
        Ok(())
    }

    #[inline]
    fn next_value(&mut self) -> Result<At, Fallback> {
        let s = &mut self.sparse;
        Ok(match self.kind {
            Kind::Fixed { count } => {
                if s.next >= count {
                    return Err(Fallback("a value past the page's end"));
                }
                s.next += 1;
                At::Plain(s.next - 1)
            }
            Kind::Bytes => {
                let (start, end) = byte_array(&self.values, s.next)?;
                s.next = end;
                At::Bytes {
                    start,
                    len: end - start,
                }
            }
            Kind::Dict => {
                let idx = self
                    .values
                    .get(1..)
                    .ok_or(Fallback("an empty index stream"))?;
                At::Index(s.indices.next(idx).map_err(Fallback)?)
            }
        })
    }
}

/// `Some(k)` when `values` are `k, k + 1, k + 2...` (no wrap-around), `None` otherwise or
/// when empty. One pass without early exit, which the compiler vectorizes.
#[inline(always)]
pub(super) fn consecutive(values: &[u32]) -> Option<u32> {
    let (&first, &last) = (values.first()?, values.last()?);
    let n = u32::try_from(values.len()).ok()?;
    if first.checked_add(n - 1) != Some(last) {
        return None;
    }
    let diff = values
        .iter()
        .zip(0u32..)
        .fold(0u32, |acc, (&v, i)| acc | (v ^ first.wrapping_add(i)));
    (diff == 0).then_some(first)
}

/// The largest of `values` (0 when empty), of bit width `bw`: as signed numbers below 32 bits,
/// which SSE2 compares (its unsigned comparisons need SSE4.1).
#[inline(always)]
fn max_index(values: &[u32], bw: u8) -> u32 {
    if bw < 32 {
        values.iter().map(|&v| v as i32).max().unwrap_or(0) as u32
    } else {
        values.iter().copied().max().unwrap_or(0)
    }
}

crate::decode::dispatch::dispatched! {
    fn densify(page: &mut DataPage, dense: Dense, utf8: bool) -> Result<(), Fallback>
        => DataPage::densify_body;
}

/// The plain byte array at offset `at` of `buf`: its bytes' start and end.
#[inline]
pub(crate) fn byte_array(buf: &[u8], at: usize) -> Result<(usize, usize), Fallback> {
    let len = buf
        .get(at..at.saturating_add(4))
        .ok_or(Fallback("a byte array past the page's end"))?;
    let start = at + 4;
    let end = start
        .checked_add(u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize)
        .filter(|e| *e <= buf.len())
        .ok_or(Fallback("a byte array past the page's end"))?;
    Ok((start, end))
}

/// UTF-8 checks of consecutive plain byte arrays, a run of them at a time: a length below
/// 2^7 in each of its four bytes is itself ASCII, so the lengths between values need not be cut
/// out (parquet's reader does the same).
#[derive(Debug, Default)]
pub(crate) struct Utf8Runs {
    /// Where the bytes not yet checked start.
    from: usize,
}

impl Utf8Runs {
    /// The next byte array starts at `start` of `buf` (after its length).
    #[inline]
    pub fn next(&mut self, buf: &[u8], start: usize) -> Result<(), Fallback> {
        let len = &buf[start - 4..start];
        if u32::from_le_bytes(len.try_into().expect("4 bytes")) & 0x8080_8080 != 0 {
            utf8(&buf[self.from..start - 4])?;
            self.from = start;
        }
        Ok(())
    }

    /// The last byte array ends at `end`.
    pub fn finish(&mut self, buf: &[u8], end: usize) -> Result<(), Fallback> {
        utf8(&buf[self.from.min(end)..end])
    }
}

/// UTF-8 checked by `simdutf8` (as parquet's reader checks it: the same verdict as
/// `std::str::from_utf8`, with its own runtime choice of AVX2 or SSE4.2).
fn utf8(bytes: &[u8]) -> Result<(), Fallback> {
    simdutf8::basic::from_utf8(bytes)
        .map(|_| ())
        .map_err(|_| Fallback("a string that is not UTF-8"))
}
