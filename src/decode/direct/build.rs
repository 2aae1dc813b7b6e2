//! A column's output, built value by value from the rows a [`DataPage`] walk finds
//! ([`Build`]): fixed-width values ([`Fixed`]), string and binary views ([`Views`]), and
//! offset-based strings and binaries ([`Offsets`]).
//!
//! The Arrow type comes from the file's schema ([`super::choose::builder_for`] says which
//! pairs of Parquet physical type and Arrow type are built here; the rest is left to parquet). Plain values,
//! in data pages and in the dictionary page alike, are converted as parquet converts them (the
//! same bits, or sign-extended for a wider decimal or timestamp); strings are checked to be
//! UTF-8 as parquet checks them.
//!
//! Invariants: a builder's arrays always have as many values as rows appended; an index past
//! the dictionary, a string that is not UTF-8, a value Arrow's validation refuses or an offset
//! overflow is a [`Fallback`]. Every view points inside a buffer of its array.

use std::sync::Arc;

use arrow::array::builder::make_view;
use arrow::array::{
    make_array, ArrayData, ArrayRef, BinaryViewArray, BooleanBufferBuilder, GenericStringArray,
    OffsetSizeTrait, StringViewArray,
};
use arrow::buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{ArrowNativeType, DataType};
use bytes::Bytes;

use super::page::{byte_array, At, DataPage, Kind, Utf8Runs};
use super::Fallback;

/// A column chunk's dictionary page: its plain-encoded values and their count.
pub(crate) struct DictPage<'a> {
    pub buf: &'a Bytes,
    pub n: usize,
}

/// The output of one column for the batch being built.
pub(crate) trait Build: Send {
    /// Take the column chunk's dictionary.
    fn dictionary(&mut self, dict: DictPage<'_>) -> Result<(), Fallback>;
    /// Make room for `rows` more rows.
    fn reserve(&mut self, rows: usize);
    /// Append the values of `rows` (row-group positions inside `page`, increasing); `left`:
    /// per row, the selected rows left in its run of consecutive rows (itself included; a run
    /// may go on past `rows`), or empty when `rows` are consecutive.
    fn append(&mut self, page: &mut DataPage, rows: &[u32], left: &[u32]) -> Result<(), Fallback>;
    /// The array of the values appended since the last call, of type `dt`.
    fn finish(&mut self, dt: &DataType) -> Result<ArrayRef, Fallback>;
    /// Hold at most `bytes` bytes of values in a batch: past that, [`LIMIT`] (parquet's
    /// reader takes over and cuts the batch). Byte arrays only: fixed-width values are bounded
    /// by the batch size.
    fn limit(&mut self, _bytes: u64) {}
}

/// A batch's values would exceed the batch byte limit (`crate::decode::bound`).
pub(crate) const LIMIT: Fallback = Fallback("a batch's values past the batch byte limit");

/// Validity of the rows appended, for a nullable column.
pub(super) fn nulls(nullable: bool) -> Option<BooleanBufferBuilder> {
    nullable.then(|| BooleanBufferBuilder::new(0))
}

/// The null buffer of the rows appended (none when every row is valid), builder emptied.
pub(super) fn finish_nulls(b: &mut Option<BooleanBufferBuilder>) -> Option<NullBuffer> {
    let n = NullBuffer::new(b.as_mut()?.finish());
    (n.null_count() > 0).then_some(n)
}

pub(super) fn array(data: arrow::array::ArrayDataBuilder) -> Result<ArrayRef, Fallback> {
    data.build()
        .map(make_array)
        .map_err(|_| Fallback("a value Arrow's validation refused"))
}

/// `rows` are valid, for a nullable column.
pub(super) fn all_valid(nulls: &mut Option<BooleanBufferBuilder>, rows: usize) {
    if let Some(n) = nulls.as_mut() {
        n.append_n(rows, true);
    }
}

/// `rows` (increasing positions in a page starting at row `first`; `left`: see
/// [`Build::append`]) as page-relative runs of consecutive rows, when they are at least half
/// the rows of their span: a dense kernel call per run then beats a loop per row (most rows
/// kept: a filter that drops few rows, scattered deleted rows); `None` otherwise.
#[inline]
pub(super) fn runs<'a>(rows: &'a [u32], left: &'a [u32], first: usize) -> Option<Runs<'a>> {
    let (&a, &b) = (rows.first()?, rows.last()?);
    (((b - a) as usize) < rows.len() * 2).then_some(Runs { rows, left, first })
}

/// The runs of [`runs`].
pub(super) struct Runs<'a> {
    rows: &'a [u32],
    left: &'a [u32],
    first: usize,
}

impl Iterator for Runs<'_> {
    type Item = std::ops::Range<usize>;

    /// A run's length is read from `left`, not found by walking the rows (a walk per column
    /// and batch cost a filter keeping 98% of the rows more than the values' copies).
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let &a = self.rows.first()?;
        let start = a as usize - self.first;
        let n = match self.left.first() {
            Some(&l) => (l as usize).clamp(1, self.rows.len()),
            None => self.rows.len(),
        };
        debug_assert_eq!(
            (self.rows[n - 1] - a) as usize,
            n - 1,
            "a run of consecutive rows"
        );
        self.rows = &self.rows[n..];
        self.left = self.left.get(n..).unwrap_or(&[]);
        Some(start..start + n)
    }
}

/// A native type whose bits hold a plain value of up to 8 bytes, converted as parquet's reader
/// converts it (`i32`: the same bits; `i64`, `i128`: sign-extended).
pub(crate) trait Word: ArrowNativeType + Default {
    fn from_plain(bytes: &[u8], i: usize, width: usize) -> Self;
    fn from_i64(v: i64) -> Self;
    /// Append value `k` of a dictionary of plain values as wide as `Self` (unaligned,
    /// little-endian: a page's own bytes) for each index `k` of `idx` (each below the
    /// dictionary's length); dispatched where `Self` is 4 or 8 bytes wide.
    fn gather_le(dict: &[u8], idx: &[u32], out: &mut Vec<Self>);
    /// [`Word::gather_le`] from plain values of `width` 4 or 8 bytes, narrower than `Self`,
    /// converted as [`Word::widen`] converts them; dispatched.
    fn gather_widen(dict: &[u8], width: usize, idx: &[u32], out: &mut Vec<Self>);
    /// Append the plain values of `bytes` (`width` 4 or 8, a whole number of them), converted;
    /// dispatched.
    fn widen(bytes: &[u8], width: usize, out: &mut Vec<Self>);
}

/// The dense kernels of the builders, each compiled twice ([`crate::decode::dispatch`]): the
/// loops that append a whole page's run of rows.
mod kernels {
    use super::Word;
    use crate::decode::dispatch::dispatched;

    /// `out` += `dict[k]` for each `k` of `idx`; an index past `dict` panics (callers check
    /// the page's largest index first).
    #[inline(always)]
    pub(super) fn gather<T: Copy>(dict: &[T], idx: &[u32], out: &mut Vec<T>) {
        out.extend(idx.iter().map(|&k| dict[k as usize]));
    }

    /// `out` += plain value `k` of `dict` (`width` 4: `i32`, else `i64`), converted to `T`,
    /// for each `k` of `idx`: a dictionary gathered from its page's bytes and widened as it
    /// goes, rather than widened into a copy twice its size first. An index past `dict`
    /// panics.
    #[inline(always)]
    pub(super) fn gather_widen<T: Word>(dict: &[u8], width: usize, idx: &[u32], out: &mut Vec<T>) {
        if width == 4 {
            let words = words::<4>(dict);
            out.extend(
                idx.iter()
                    .map(|&k| T::from_i64(i32::from_le_bytes(words[k as usize]) as i64)),
            );
        } else {
            let words = words::<8>(dict);
            out.extend(
                idx.iter()
                    .map(|&k| T::from_i64(i64::from_le_bytes(words[k as usize]))),
            );
        }
    }

    /// `out` += the plain values of `bytes` (`width` 4: `i32`, else `i64`), converted to `T`.
    #[inline(always)]
    pub(super) fn widen<T: Word>(bytes: &[u8], width: usize, out: &mut Vec<T>) {
        if width == 4 {
            out.extend(
                bytes
                    .chunks_exact(4)
                    .map(|c| T::from_i64(i32::from_le_bytes(c.try_into().expect("4")) as i64)),
            );
        } else {
            out.extend(
                bytes
                    .chunks_exact(8)
                    .map(|c| T::from_i64(i64::from_le_bytes(c.try_into().expect("8")))),
            );
        }
    }

    /// String views gathered from a dictionary's views, a view into its buffer (longer than
    /// 12 bytes) moved to block `block` of the batch.
    #[inline(always)]
    pub(super) fn gather_views_body(dict: &[u128], idx: &[u32], block: u32, out: &mut Vec<u128>) {
        if block == 0 {
            // The dictionary's buffer is the batch's first: views copied as they are.
            return gather(dict, idx, out);
        }
        let add = (block as u128) << 64;
        out.extend(idx.iter().map(|&k| {
            let v = dict[k as usize];
            if (v as u32) > 12 {
                v + add
            } else {
                v
            }
        }));
    }

    dispatched! {
        pub(super) fn gather_views(dict: &[u128], idx: &[u32], block: u32, out: &mut Vec<u128>)
            => gather_views_body;
    }
    dispatched! {
        pub(super) fn gather_widen_i64(dict: &[u8], width: usize, idx: &[u32], out: &mut Vec<i64>)
            => gather_widen::<i64>;
    }
    dispatched! {
        pub(super) fn gather_widen_i128(
            dict: &[u8],
            width: usize,
            idx: &[u32],
            out: &mut Vec<i128>
        ) => gather_widen::<i128>;
    }
    /// `dict` as values of `N` bytes (a trailing part dropped), for reading unaligned.
    #[inline(always)]
    fn words<const N: usize>(dict: &[u8]) -> &[[u8; N]] {
        // SAFETY: `[u8; N]` has alignment 1 and size `N`: the first `len / N * N` bytes of
        // `dict` are `len / N` of them, borrowed as long as `dict`.
        unsafe { std::slice::from_raw_parts(dict.as_ptr().cast(), dict.len() / N) }
    }

    /// [`gather`] from plain little-endian values of `$t`'s width (a page's own bytes, read
    /// unaligned rather than copied to an aligned buffer first); an index past `dict` panics.
    macro_rules! gather_le {
        ($($name:ident: $t:ty, $n:literal);*) => {$(
            #[inline(always)]
            pub(super) fn $name(dict: &[u8], idx: &[u32], out: &mut Vec<$t>) {
                let words = words::<$n>(dict);
                out.extend(idx.iter().map(|&k| <$t>::from_le_bytes(words[k as usize])));
            }
        )*};
    }
    gather_le!(gather_le_i32_body: i32, 4; gather_le_i64_body: i64, 8; gather_le_i128: i128, 16);

    dispatched! {
        pub(super) fn gather_le_i32(dict: &[u8], idx: &[u32], out: &mut Vec<i32>)
            => gather_le_i32_body;
    }
    dispatched! {
        pub(super) fn gather_le_i64(dict: &[u8], idx: &[u32], out: &mut Vec<i64>)
            => gather_le_i64_body;
    }
    dispatched! {
        pub(super) fn widen_i32(bytes: &[u8], width: usize, out: &mut Vec<i32>) => widen::<i32>;
    }
    dispatched! {
        pub(super) fn widen_i64(bytes: &[u8], width: usize, out: &mut Vec<i64>) => widen::<i64>;
    }
    dispatched! {
        pub(super) fn widen_i128(bytes: &[u8], width: usize, out: &mut Vec<i128>)
            => widen::<i128>;
    }
}

#[inline]
fn plain(bytes: &[u8], i: usize, width: usize) -> i64 {
    if width == 4 {
        i32::from_le_bytes(bytes[i * 4..i * 4 + 4].try_into().expect("4 bytes")) as i64
    } else {
        i64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
    }
}

macro_rules! word {
    ($($t:ty: $gather_widen:path, $gather_le:ident, $widen:ident);*) => {$(
        impl Word for $t {
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
            #[inline]
            fn from_plain(bytes: &[u8], i: usize, width: usize) -> Self {
                plain(bytes, i, width) as $t
            }
            #[inline]
            fn gather_widen(dict: &[u8], width: usize, idx: &[u32], out: &mut Vec<Self>) {
                $gather_widen(dict, width, idx, out)
            }
            #[inline]
            fn gather_le(dict: &[u8], idx: &[u32], out: &mut Vec<Self>) {
                kernels::$gather_le(dict, idx, out)
            }
            #[inline]
            fn widen(bytes: &[u8], width: usize, out: &mut Vec<Self>) {
                kernels::$widen(bytes, width, out)
            }
        }
    )*};
}
// No `i32` is narrower than 4 bytes: its `gather_widen` is never called (the plain loop).
word!(
    i32: kernels::gather_widen::<i32>, gather_le_i32, widen_i32;
    i64: kernels::gather_widen_i64, gather_le_i64, widen_i64;
    i128: kernels::gather_widen_i128, gather_le_i128, widen_i128
);

/// Fixed-width values, held as the native type of their Arrow width.
pub(crate) struct Fixed<T: Word> {
    /// The width of the physical values in a plain page: 4 or 8.
    width: usize,
    dict: Dict,
    out: Vec<T>,
    nulls: Option<BooleanBufferBuilder>,
}

impl<T: Word> Fixed<T> {
    pub(super) fn new(width: usize, nullable: bool) -> Self {
        Fixed {
            width,
            dict: Dict {
                bytes: Bytes::new(),
                width,
            },
            out: Vec::new(),
            nulls: nulls(nullable),
        }
    }
}

impl<T: Word> Build for Fixed<T> {
    fn dictionary(&mut self, dict: DictPage<'_>) -> Result<(), Fallback> {
        if dict.buf.len() / self.width < dict.n {
            return Err(Fallback("a dictionary page shorter than its values"));
        }
        // Gathered from the page itself, widened as it goes where the values are narrower
        // than `T` (a dictionary of distinct values, as a unique key's or a price's, is as
        // large as its row group's values: a widened copy would be twice that).
        let w = self.width;
        self.dict = Dict {
            bytes: dict.buf.slice(..dict.n * w),
            width: w,
        };
        Ok(())
    }

    fn reserve(&mut self, rows: usize) {
        self.out.reserve(rows);
    }

    fn append(&mut self, page: &mut DataPage, rows: &[u32], left: &[u32]) -> Result<(), Fallback> {
        let first = page.first;
        let width = self.width;
        let values = page.values().clone();
        // The common cases without a null: a tight loop per row, or a kernel call per run of
        // consecutive rows when most rows are asked for.
        if let Some(d) = page.dense().filter(|d| d.positions.is_empty()) {
            match page.kind {
                Kind::Dict if (d.max_index as usize) < self.dict.len() => {
                    let (dict, idx, out) = (&self.dict, &d.values[..], &mut self.out);
                    match (runs(rows, left, first), d.consecutive) {
                        // A run of rows is a run of the dictionary's values: copied.
                        (Some(runs), Some(k)) => {
                            let k = k as usize;
                            runs.for_each(|run| dict.copy(k + run.start..k + run.end, out))
                        }
                        (Some(runs), None) => runs.for_each(|run| dict.gather(&idx[run], out)),
                        (None, _) => dict.gather_rows(idx, rows, first, out),
                    }
                    all_valid(&mut self.nulls, rows.len());
                    return Ok(());
                }
                Kind::Fixed { .. } => {
                    let v = &values[..];
                    match runs(rows, left, first) {
                        Some(runs) => runs.for_each(|run| {
                            T::widen(&v[run.start * width..run.end * width], width, &mut self.out)
                        }),
                        None => self.out.extend(
                            rows.iter()
                                .map(|&r| T::from_plain(v, r as usize - first, width)),
                        ),
                    }
                    all_valid(&mut self.nulls, rows.len());
                    return Ok(());
                }
                _ => {}
            }
        }
        let dict = &self.dict;
        let words = Words {
            out: &mut self.out,
            nulls: &mut self.nulls,
        };
        words.walk(
            page,
            rows,
            |k| dict.get(k as usize),
            |i| Ok(T::from_plain(&values, i, width)),
        )
    }

    fn finish(&mut self, dt: &DataType) -> Result<ArrayRef, Fallback> {
        finish_words(&mut self.out, &mut self.nulls, dt)
    }
}

/// A fixed-width column's output: one word per row and, when nullable, its validity. Shared
/// by [`Fixed`] and the big-endian decimals of [`super::decimal`].
pub(super) struct Words<'a, V> {
    pub(super) out: &'a mut Vec<V>,
    pub(super) nulls: &'a mut Option<BooleanBufferBuilder>,
}

impl<V: Default> Words<'_, V> {
    /// Appends `rows` of `page` one at a time (the sparse path): a null as `V::default()`, a
    /// dictionary index through `index` (`None` past its end), the i-th plain value through
    /// `plain`.
    pub(super) fn walk(
        self,
        page: &mut DataPage,
        rows: &[u32],
        index: impl Fn(u32) -> Option<V>,
        plain: impl Fn(usize) -> Result<V, Fallback>,
    ) -> Result<(), Fallback> {
        let Words { out, nulls } = self;
        out.reserve(rows.len());
        page.walk(rows, |at| {
            let v = match at {
                At::Null => {
                    out.push(V::default());
                    if let Some(n) = nulls.as_mut() {
                        n.append(false);
                    }
                    return Ok(());
                }
                At::Index(k) => index(k).ok_or(Fallback("an index past the dictionary"))?,
                At::Plain(i) => plain(i)?,
                At::Bytes { .. } => return Err(Fallback("byte arrays in a fixed-width column")),
            };
            out.push(v);
            if let Some(n) = nulls.as_mut() {
                n.append(true);
            }
            Ok(())
        })
    }
}

/// The array of the words appended (`out` and `nulls` emptied), typed `dt`.
pub(super) fn finish_words<V: ArrowNativeType>(
    out: &mut Vec<V>,
    nulls: &mut Option<BooleanBufferBuilder>,
    dt: &DataType,
) -> Result<ArrayRef, Fallback> {
    let out = std::mem::take(out);
    let data = ArrayData::builder(dt.clone())
        .len(out.len())
        .add_buffer(Buffer::from_vec(out))
        .nulls(finish_nulls(nulls));
    array(data)
}

/// A [`Fixed`] column chunk's dictionary: its page's plain values, `width` (4 or 8) bytes
/// each, at most `T`'s width, read in place (sign-extended where narrower).
struct Dict {
    bytes: Bytes,
    width: usize,
}

impl Dict {
    fn len(&self) -> usize {
        self.bytes.len() / self.width
    }

    #[inline]
    fn get<T: Word>(&self, k: usize) -> Option<T> {
        let w = self.width;
        let bytes = self.bytes.get(k.checked_mul(w)?..)?.get(..w)?;
        Some(T::from_plain(bytes, 0, w))
    }

    /// Append the values of `idx` (each below [`Dict::len`]).
    #[inline]
    fn gather<T: Word>(&self, idx: &[u32], out: &mut Vec<T>) {
        if self.width == std::mem::size_of::<T>() {
            T::gather_le(&self.bytes, idx, out)
        } else {
            T::gather_widen(&self.bytes, self.width, idx, out)
        }
    }

    /// Append the values at `range` (within [`Dict::len`]).
    #[inline]
    fn copy<T: Word>(&self, range: std::ops::Range<usize>, out: &mut Vec<T>) {
        let w = self.width;
        T::widen(&self.bytes[range.start * w..range.end * w], w, out)
    }

    /// Append the values of the indices of `rows` (positions in a page starting at row
    /// `first`; `idx`: the page's indices, each below [`Dict::len`]), a row at a time.
    #[inline]
    fn gather_rows<T: Word>(&self, idx: &[u32], rows: &[u32], first: usize, out: &mut Vec<T>) {
        let at = |r: &u32| idx[*r as usize - first] as usize;
        let (b, w) = (&self.bytes, self.width);
        out.extend(rows.iter().map(|r| T::from_plain(b, at(r), w)))
    }
}

/// String or binary views: gathered from the dictionary's views, or made over a plain page's
/// bytes (the page's buffer, and the dictionary page's, become data buffers of the array, as
/// in parquet).
pub(crate) struct Views {
    /// Strings: every value is checked to be UTF-8 before its view is made.
    utf8: bool,
    /// The dictionary's views (into buffer 0) and its page's buffer.
    dict: Option<(Vec<u128>, Buffer)>,
    /// Where the dictionary's buffer is in `buffers`, once added to this batch.
    dict_block: Option<u32>,
    out: Vec<u128>,
    buffers: Vec<Buffer>,
    /// The bytes of `buffers`, and the most they may hold ([`Build::limit`]).
    held: u64,
    max: u64,
    nulls: Option<BooleanBufferBuilder>,
}

impl Views {
    pub(super) fn new(utf8: bool, nullable: bool) -> Self {
        Views {
            utf8,
            dict: None,
            dict_block: None,
            out: Vec::new(),
            buffers: Vec::new(),
            held: 0,
            max: u64::MAX,
            nulls: nulls(nullable),
        }
    }

    /// Add `buf` to the batch's buffers; its index. Past the byte limit, [`LIMIT`].
    fn push_buffer(&mut self, buf: Buffer) -> Result<u32, Fallback> {
        self.held = self.held.saturating_add(buf.len() as u64);
        if self.held > self.max {
            return Err(LIMIT);
        }
        self.buffers.push(buf);
        Ok(self.buffers.len() as u32 - 1)
    }

    /// The view of `bytes` at `offset` of block `block`, after checking a string's UTF-8.
    #[inline]
    fn view(utf8: bool, bytes: &[u8], block: u32, offset: usize) -> Result<u128, Fallback> {
        if utf8 && simdutf8::basic::from_utf8(bytes).is_err() {
            return Err(Fallback("a string that is not UTF-8"));
        }
        Ok(make_view(bytes, block, offset as u32))
    }

    /// The block of this batch's buffers `page`'s views point into: the dictionary's buffer,
    /// or the page's own (each added once).
    fn block_of(&mut self, page: &DataPage) -> Result<u32, Fallback> {
        if page.kind == Kind::Dict {
            let (_, buf) = self.dict.as_ref().ok_or(Fallback("no dictionary"))?;
            if let Some(b) = self.dict_block {
                return Ok(b);
            }
            let b = self.push_buffer(buf.clone())?;
            self.dict_block = Some(b);
            return Ok(b);
        }
        let buf = Buffer::from(page.values().clone());
        match self.buffers.last() {
            Some(last) if last.ptr_eq(&buf) => Ok(self.buffers.len() as u32 - 1),
            _ => self.push_buffer(buf),
        }
    }

    /// Append `rows` of a dense page without nulls in one pass (dictionary indices all in
    /// range, or plain strings already checked); `false`: not such a page, nothing appended.
    fn append_dense(
        &mut self,
        page: &DataPage,
        rows: &[u32],
        left: &[u32],
        block: u32,
        utf8: bool,
    ) -> bool {
        let Some(d) = page.dense().filter(|d| d.positions.is_empty()) else {
            return false;
        };
        let first = page.first;
        let dict: &[u128] = self.dict.as_ref().map(|(v, _)| &v[..]).unwrap_or(&[]);
        if page.kind == Kind::Dict && (d.max_index as usize) < dict.len() {
            let idx = &d.values[..];
            match runs(rows, left, first) {
                Some(runs) => runs
                    .for_each(|run| kernels::gather_views(dict, &idx[run], block, &mut self.out)),
                None => self.out.extend(
                    rows.iter()
                        .map(|&r| shift_view(dict[idx[r as usize - first] as usize], block)),
                ),
            }
        } else if page.kind == Kind::Bytes && !utf8 {
            // Offsets found (and strings checked) when the page was made dense.
            let (v, starts) = (&page.values()[..], &d.values[..]);
            let view = |i: usize| {
                let start = starts[i] as usize;
                let len = u32::from_le_bytes(v[start - 4..start].try_into().expect("4"));
                make_view(&v[start..start + len as usize], block, start as u32)
            };
            match runs(rows, left, first) {
                Some(runs) => runs.for_each(|run| self.out.extend(run.map(view))),
                None => self
                    .out
                    .extend(rows.iter().map(|&r| view(r as usize - first))),
            }
        } else {
            return false;
        }
        all_valid(&mut self.nulls, rows.len());
        true
    }
}

/// A dictionary view moved to block `block` of the batch (views of 12 bytes or fewer hold
/// their bytes inline and point nowhere).
#[inline]
fn shift_view(v: u128, block: u32) -> u128 {
    if (v as u32) > 12 {
        v + ((block as u128) << 64)
    } else {
        v
    }
}

/// Call `f` with the start and end of each of the `n` plain byte arrays of dictionary page
/// `dict` (under 4 GiB: views and spans hold 32-bit offsets), with `utf8` after checking
/// they are UTF-8 as parquet checks them.
fn plain_byte_arrays(
    dict: &DictPage<'_>,
    utf8: bool,
    mut f: impl FnMut(usize, usize),
) -> Result<(), Fallback> {
    if dict.buf.len() > u32::MAX as usize {
        return Err(Fallback("a dictionary page over 4 GiB"));
    }
    let mut at = 0;
    let mut check = Utf8Runs::default();
    for _ in 0..dict.n {
        let (start, end) = byte_array(dict.buf, at)?;
        if utf8 {
            check.next(dict.buf, start)?;
        }
        f(start, end);
        at = end;
    }
    if utf8 {
        check.finish(dict.buf, at)?;
    }
    Ok(())
}

impl Build for Views {
    fn dictionary(&mut self, dict: DictPage<'_>) -> Result<(), Fallback> {
        let mut views = Vec::with_capacity(dict.n);
        plain_byte_arrays(&dict, self.utf8, |start, end| {
            views.push(make_view(&dict.buf[start..end], 0, start as u32))
        })?;
        self.dict = Some((views, Buffer::from(dict.buf.clone())));
        self.dict_block = None;
        Ok(())
    }

    fn reserve(&mut self, rows: usize) {
        self.out.reserve(rows);
    }

    fn append(&mut self, page: &mut DataPage, rows: &[u32], left: &[u32]) -> Result<(), Fallback> {
        // Strings of a dense page were checked all at once.
        let utf8 = self.utf8 && !page.utf8_checked();
        let block = self.block_of(page)?;
        if self.append_dense(page, rows, left, block, utf8) {
            return Ok(());
        }
        let values = page.values().clone();
        let dict: &[u128] = self.dict.as_ref().map(|(v, _)| &v[..]).unwrap_or(&[]);
        let (out, nulls) = (&mut self.out, &mut self.nulls);
        out.reserve(rows.len());
        page.walk(rows, |at| {
            let v = match at {
                At::Null => {
                    out.push(0);
                    if let Some(n) = nulls.as_mut() {
                        n.append(false);
                    }
                    return Ok(());
                }
                At::Index(k) => shift_view(
                    *dict
                        .get(k as usize)
                        .ok_or(Fallback("an index past the dictionary"))?,
                    block,
                ),
                At::Bytes { start, len } => {
                    Views::view(utf8, &values[start..start + len], block, start)?
                }
                At::Plain(_) => return Err(Fallback("fixed-width values in a byte array column")),
            };
            out.push(v);
            if let Some(n) = nulls.as_mut() {
                n.append(true);
            }
            Ok(())
        })
    }

    fn limit(&mut self, bytes: u64) {
        self.max = bytes;
    }

    fn finish(&mut self, dt: &DataType) -> Result<ArrayRef, Fallback> {
        let views = ScalarBuffer::from(std::mem::take(&mut self.out));
        let buffers = std::mem::take(&mut self.buffers);
        self.held = 0;
        let nulls = finish_nulls(&mut self.nulls);
        self.dict_block = None;
        if !self.utf8 {
            // Bounds are all a binary view's validation checks: cheap.
            let a = BinaryViewArray::try_new(views, buffers, nulls)
                .map_err(|_| Fallback("a view out of bounds"))?;
            return Ok(Arc::new(a));
        }
        if *dt != DataType::Utf8View {
            return Err(Fallback("views of another type"));
        }
        // SAFETY: every view was made by `Views::view`, `Views::dictionary` or the dense path
        // of `Views::append` (a dictionary value or a plain value, checked to be UTF-8, at its
        // offset inside the dictionary page's or the data page's buffer, both under 4 GiB) and
        // only moved to the index where that buffer sits in `buffers`, or is a null's zero
        // view: what `try_new` would check, and what `string_views` checks under
        // `debug_assertions`.
        let a = unsafe { string_views(views, buffers, nulls) };
        Ok(Arc::new(a))
    }
}

/// `StringViewArray::new_unchecked`, the one constructor of string views in the decoders:
/// checked as `StringViewArray::try_new` checks (a panic on a violation) when built with
/// `debug_assertions` (tests in the dev profile, CI's debug step, cargo-fuzz builds), unchecked
/// in release builds. Either way the array is made by `new_unchecked`: one path in tests and in
/// production.
///
/// # Safety
/// Every non-null view of `views` is a valid view into `buffers`: an inline view (length at
/// most 12) holds its bytes and zeros after them; a longer one names a buffer of `buffers`
/// and an offset and length inside it, and its prefix equals the first 4 bytes there; every
/// value is UTF-8; `nulls`, if any, has the length of `views`.
pub(crate) unsafe fn string_views(
    views: ScalarBuffer<u128>,
    buffers: Vec<Buffer>,
    nulls: Option<NullBuffer>,
) -> StringViewArray {
    #[cfg(debug_assertions)]
    if let Err(e) = StringViewArray::try_new(views.clone(), buffers.clone(), nulls.clone()) {
        panic!("string views break new_unchecked's contract: {e}");
    }
    // SAFETY: the caller's contract, checked above under `debug_assertions`.
    unsafe { StringViewArray::new_unchecked(views, buffers, nulls) }
}

/// Offset-based strings or binaries (`O`: `i32` or `i64` offsets): bytes copied, from the
/// dictionary page's values (found once per chunk, checked to be UTF-8 as parquet checks them)
/// or from the page's. Rows of a dense page without nulls are copied by [`copy_spans`].
pub(crate) struct Offsets<O: OffsetSizeTrait> {
    /// Strings: every value is checked to be UTF-8.
    utf8: bool,
    /// Strings: a value of the batch being built was copied from a page whose strings were not
    /// checked (a sparse walk), so Arrow's validation checks the array ([`Offsets::finish`]);
    /// otherwise every value was checked where it was copied from (the dictionary, a dense
    /// page) and the array is made without a second check (3% of the CPU of a Delta scan of a
    /// string column under deletion vectors).
    unchecked: bool,
    /// The dictionary: each value's start and length in its page's bytes, and those bytes.
    dict: Option<(Vec<[u32; 2]>, Bytes)>,
    offsets: Vec<O>,
    data: Vec<u8>,
    /// The most bytes `data` may hold in a batch ([`Build::limit`]).
    max: usize,
    /// Bytes per value of the last batch (before the first: of the dictionary), to reserve
    /// a batch's bytes at once rather than growing them page by page (a reallocation copies
    /// everything appended so far: 3.6% of the CPU of a Delta scan with a string column).
    per_value: usize,
    nulls: Option<BooleanBufferBuilder>,
}

impl<O: OffsetSizeTrait> Offsets<O> {
    pub(super) fn new(utf8: bool, nullable: bool) -> Self {
        Offsets {
            utf8,
            unchecked: false,
            dict: None,
            offsets: vec![O::usize_as(0)],
            data: Vec::new(),
            max: usize::MAX,
            per_value: 0,
            nulls: nulls(nullable),
        }
    }

    /// Append the values at `spans` (start, length) of `src`.
    fn copy(
        &mut self,
        src: &[u8],
        spans: impl Iterator<Item = (usize, usize)> + Clone,
    ) -> Result<(), Fallback> {
        copy_spans(&mut self.offsets, &mut self.data, (src, self.max), spans)
    }
}

/// Append the values at `spans` (start and length in `src`, each inside it) to `data`, and
/// each one's end offset to `offsets`: the offsets first (the total length known), then the
/// bytes, a value of up to 32 bytes copied as 32 (the bytes past it overwritten by the next
/// value, or left past the end) rather than by a call to `memcpy` per value, which costs more
/// than the copy for short strings. A value outside `src`, an offset past `O` or `data`
/// growing past `max` bytes is a [`Fallback`] before anything is appended (or allocated).
fn copy_spans<O: OffsetSizeTrait>(
    offsets: &mut Vec<O>,
    data: &mut Vec<u8>,
    (src, max): (&[u8], usize),
    spans: impl Iterator<Item = (usize, usize)> + Clone,
) -> Result<(), Fallback> {
    const WIDE: usize = 32;
    let base = data.len();
    let mut end = base;
    let before = offsets.len();
    for (start, len) in spans.clone() {
        if start.checked_add(len).is_none_or(|e| e > src.len()) {
            offsets.truncate(before);
            return Err(Fallback("a byte array past the page's end"));
        }
        end += len;
        if end > max {
            offsets.truncate(before);
            return Err(LIMIT);
        }
        match O::from_usize(end) {
            Some(o) => offsets.push(o),
            None => {
                offsets.truncate(before);
                return Err(Fallback("an offset overflow"));
            }
        }
    }
    data.reserve(end - base + WIDE);
    let dst = data.spare_capacity_mut();
    let mut at = 0usize;
    for (start, len) in spans {
        if len <= WIDE && start + WIDE <= src.len() {
            // SAFETY: `start + WIDE <= src.len()` (checked just above); `dst` has room for
            // `at + WIDE` bytes: `at + len` is at most `end - base` (the lengths summed above,
            // of these same spans) and `WIDE` more were reserved.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.as_ptr().add(start),
                    dst.as_mut_ptr().add(at).cast::<u8>(),
                    WIDE,
                )
            };
        } else {
            // SAFETY: `start + len <= src.len()` (checked in the first pass, for these same
            // spans); `at + len <= end - base`, within `dst`.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    src.as_ptr().add(start),
                    dst.as_mut_ptr().add(at).cast::<u8>(),
                    len,
                )
            };
        }
        at += len;
    }
    debug_assert_eq!(at, end - base);
    // SAFETY: the first `end - base` bytes of the spare capacity were written above (each
    // value's bytes at its offset, the values back to back).
    unsafe { data.set_len(end) };
    Ok(())
}

impl<O: OffsetSizeTrait> Build for Offsets<O> {
    fn dictionary(&mut self, dict: DictPage<'_>) -> Result<(), Fallback> {
        let mut spans = Vec::with_capacity(dict.n);
        plain_byte_arrays(&dict, self.utf8, |start, end| {
            spans.push([start as u32, (end - start) as u32])
        })?;
        if self.per_value == 0 {
            // Each plain value has a 4-byte length before it. The first batch's rows were
            // reserved before its dictionary was read: their bytes are now.
            self.per_value = (dict.buf.len() / dict.n).saturating_sub(4);
            self.reserve(self.offsets.capacity() - self.offsets.len());
        }
        self.dict = Some((spans, dict.buf.clone()));
        Ok(())
    }

    fn limit(&mut self, bytes: u64) {
        self.max = usize::try_from(bytes).unwrap_or(usize::MAX);
    }

    fn reserve(&mut self, rows: usize) {
        self.offsets.reserve(rows);
        // An eighth more than the estimate: a batch a little longer than the last one still
        // fits, and one much longer grows as it would have. At most `RESERVE_CAP`: a batch of
        // a few large values does not make the next one reserve as much.
        let bytes = rows.saturating_mul(self.per_value);
        self.data
            .reserve(bytes.saturating_add(bytes / 8).min(RESERVE_CAP));
    }

    fn append(&mut self, page: &mut DataPage, rows: &[u32], _left: &[u32]) -> Result<(), Fallback> {
        let values = page.values().clone();
        let first = page.first;
        if let Some(d) = page.dense().filter(|d| d.positions.is_empty()) {
            let at = move |r: &u32| *r as usize - first;
            match (&page.kind, self.dict.take()) {
                (Kind::Dict, Some((spans, buf))) if (d.max_index as usize) < spans.len() => {
                    let idx = &d.values[..];
                    let span = |r: &u32| {
                        let [s, l] = spans[idx[at(r)] as usize];
                        (s as usize, l as usize)
                    };
                    let done = self.copy(&buf, rows.iter().map(span));
                    self.dict = Some((spans, buf));
                    done?;
                    all_valid(&mut self.nulls, rows.len());
                    return Ok(());
                }
                (_, dict) => self.dict = dict,
            }
            // Strings of a dense page were checked all at once (`densify`).
            if page.kind == Kind::Bytes && (!self.utf8 || page.utf8_checked()) {
                let (v, starts) = (&values[..], &d.values[..]);
                let span = |r: &u32| {
                    let start = starts[at(r)] as usize;
                    let len = u32::from_le_bytes(v[start - 4..start].try_into().expect("4"));
                    (start, len as usize)
                };
                self.copy(v, rows.iter().map(span))?;
                all_valid(&mut self.nulls, rows.len());
                return Ok(());
            }
        }
        let (offsets, data, nulls) = (&mut self.offsets, &mut self.data, &mut self.nulls);
        let (unchecked, max) = (&mut self.unchecked, self.max);
        let (spans, dict_bytes): (&[[u32; 2]], &[u8]) = match &self.dict {
            Some((s, b)) => (s, b),
            None => (&[], &[]),
        };
        offsets.reserve(rows.len());
        page.walk(rows, |at| {
            let valid = match at {
                At::Null => false,
                At::Index(k) => {
                    let [s, l] = *spans
                        .get(k as usize)
                        .ok_or(Fallback("an index past the dictionary"))?;
                    if data.len() + l as usize > max {
                        return Err(LIMIT);
                    }
                    data.extend_from_slice(&dict_bytes[s as usize..(s + l) as usize]);
                    true
                }
                At::Bytes { start, len } => {
                    if data.len() + len > max {
                        return Err(LIMIT);
                    }
                    // Strings checked once, by Arrow's validation of the array (`finish`).
                    data.extend_from_slice(&values[start..start + len]);
                    *unchecked = true;
                    true
                }
                At::Plain(_) => return Err(Fallback("fixed-width values in a byte array column")),
            };
            offsets.push(O::from_usize(data.len()).ok_or(Fallback("an offset overflow"))?);
            if let Some(n) = nulls.as_mut() {
                n.append(valid);
            }
            Ok(())
        })
    }

    fn finish(&mut self, dt: &DataType) -> Result<ArrayRef, Fallback> {
        let offsets = std::mem::replace(&mut self.offsets, vec![O::usize_as(0)]);
        let mut data = std::mem::take(&mut self.data);
        if offsets.len() > 1 {
            self.per_value = data.len().div_ceil(offsets.len() - 1);
        }
        // A batch much shorter than reserved keeps no more than an eighth spare (the array
        // holds its buffer's whole capacity).
        if data.capacity() - data.len() > data.len() / 8 + (64 << 10) {
            data.shrink_to_fit();
        }
        let nulls = finish_nulls(&mut self.nulls);
        let unchecked = std::mem::take(&mut self.unchecked);
        if self.utf8 && !unchecked && *dt == GenericStringArray::<O>::DATA_TYPE {
            // SAFETY: every value was appended by `copy_spans` or the walk in `append`, whole,
            // from a dictionary value or a dense page's value, each checked to be UTF-8
            // (`plain_byte_arrays`, `DataPage::densify`; `unchecked` is false); both push the
            // end offset of each value as they append it (from 0, increasing, the last one
            // `data.len()`, each fitting `O`); one null bit per value: what `strings` asks,
            // and checks under `debug_assertions`.
            let a = unsafe { strings(offsets, data, nulls) };
            return Ok(Arc::new(a));
        }
        let array_data = ArrayData::builder(dt.clone())
            .len(offsets.len() - 1)
            .add_buffer(Buffer::from_vec(offsets))
            .add_buffer(Buffer::from_vec(data))
            .nulls(nulls);
        array(array_data)
    }
}

/// The most bytes [`Offsets`] reserves for a batch before appending to it.
const RESERVE_CAP: usize = 32 << 20;

/// `GenericStringArray::new_unchecked`, for strings checked where they were copied from:
/// checked as `try_new` checks (a panic on a violation) when built with `debug_assertions`, as
/// [`string_views`] is.
///
/// # Safety
/// `offsets` start at 0, never decrease and end at `data.len()`; the bytes between each two
/// consecutive offsets are UTF-8; `nulls`, if any, has one bit per value.
unsafe fn strings<O: OffsetSizeTrait>(
    offsets: Vec<O>,
    data: Vec<u8>,
    nulls: Option<NullBuffer>,
) -> GenericStringArray<O> {
    // SAFETY: the offsets are non-negative and increasing (the caller's contract).
    let offsets = unsafe { OffsetBuffer::new_unchecked(ScalarBuffer::from(offsets)) };
    let values = Buffer::from_vec(data);
    #[cfg(debug_assertions)]
    if let Err(e) = GenericStringArray::<O>::try_new(offsets.clone(), values.clone(), nulls.clone())
    {
        panic!("strings break new_unchecked's contract: {e}");
    }
    // SAFETY: the caller's contract, checked above under `debug_assertions`.
    unsafe { GenericStringArray::new_unchecked(offsets, values, nulls) }
}

#[cfg(test)]
mod tests {
    use super::runs;
    use parquet::arrow::arrow_reader::RowSelection;

    /// The runs of consecutive rows, found one row at a time.
    fn reference(rows: &[u32], first: usize) -> Vec<std::ops::Range<usize>> {
        let mut out: Vec<std::ops::Range<usize>> = Vec::new();
        for &r in rows {
            let r = r as usize - first;
            match out.last_mut() {
                Some(run) if run.end == r => run.end += 1,
                _ => out.push(r..r + 1),
            }
        }
        out
    }

    /// Every shape of increasing rows: all of a page, most, a few, and gaps followed by a
    /// consecutive tail; whole, and cut in two as a page boundary cuts them (a run then goes on
    /// past the first piece's end).
    #[test]
    fn runs_are_the_consecutive_rows() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut checked = 0;
        for case in 0..4000 {
            let first = (next() % 1000) as usize;
            let len = (next() % 300) as usize + 1;
            let keep = [100, 95, 70, 30, 5][(next() % 5) as usize];
            let tail = next() % 3 == 0;
            let rows: Vec<u32> = (0..len)
                .filter(|&i| tail && i >= len / 2 || next() % 100 < keep)
                .map(|i| (first + i) as u32)
                .collect();
            let (Some(&a), Some(&b)) = (rows.first(), rows.last()) else {
                continue;
            };
            // The run lengths as a row group's reader has them, from the selection.
            let ranges = reference(&rows, 0);
            let selection = RowSelection::from_consecutive_ranges(ranges.into_iter(), first + len);
            let mut selected = super::super::Selected::of(&selection, first + len).unwrap();
            let n = selected.len();
            let (got_rows, left) = selected.batch(0, n);
            assert_eq!(got_rows, rows);
            let left = left.to_vec();
            match runs(&rows, &left, first) {
                Some(got) => {
                    let got: Vec<_> = got.collect();
                    assert_eq!(got, reference(&rows, first), "case {case}: {rows:?}");
                    checked += 1;
                }
                None => assert!((b - a) as usize >= rows.len() * 2, "case {case}"),
            }
            let cut = (next() as usize) % rows.len();
            for (r, l) in [(&rows[..cut], &left[..cut]), (&rows[cut..], &left[cut..])] {
                if let Some(got) = runs(r, l, first) {
                    assert_eq!(got.collect::<Vec<_>>(), reference(r, first), "case {case}");
                }
            }
        }
        assert!(checked > 2000, "{checked} cases had runs");
    }
}
