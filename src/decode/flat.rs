//! Flat columns (top level, unrepeated, at most one definition level) and their data pages
//! split into definition levels and values: the shape both of rayquet's own page readers, the
//! dictionary reader ([`crate::decode::dictionary`]) and the direct reader
//! ([`crate::decode::direct`]), parse.
//!
//! Invariant: [`split`] never panics and never returns a range outside the page's buffer; a
//! page it does not handle (levels not RLE-encoded, a v2 page with more values than rows, a
//! dictionary page) or whose lengths run past its end is an `Err` naming why.

use std::ops::Range;

use bytes::Bytes;
use parquet::basic::Encoding;
use parquet::column::page::Page;
use parquet::schema::types::ColumnDescriptor;

/// Whether leaf `cd` is flat: a top-level column with no repetition and no enclosing struct,
/// so that it has one definition level (or none) per row.
pub(crate) fn flat(cd: &ColumnDescriptor) -> bool {
    cd.path().parts().len() == 1 && cd.max_rep_level() == 0 && cd.max_def_level() <= 1
}

/// A data page of a flat column, split (ranges index [`FlatPage::buf`]).
pub(crate) struct FlatPage<'a> {
    /// The page's (decompressed) bytes.
    pub buf: &'a Bytes,
    /// Rows in the page: one level, or one value when the column is required, per row.
    pub rows: usize,
    /// The values' encoding.
    pub encoding: Encoding,
    /// The definition levels (RLE, bit width 1), when the column is nullable.
    pub defs: Option<Range<usize>>,
    /// The encoded values.
    pub values: Range<usize>,
    /// The null count a v2 page's header declares.
    pub nulls: Option<usize>,
}

/// Split data `page` of a flat column (`nullable`: maximum definition level 1).
pub(crate) fn split(page: &Page, nullable: bool) -> Result<FlatPage<'_>, &'static str> {
    match page {
        Page::DataPage {
            buf,
            num_values,
            encoding,
            def_level_encoding,
            ..
        } => {
            let (defs, values) = if !nullable {
                (None, 0..buf.len())
            } else if *def_level_encoding == Encoding::RLE {
                let len = buf.get(..4).ok_or("a truncated page")?;
                let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
                let end = 4usize
                    .checked_add(len)
                    .filter(|e| *e <= buf.len())
                    .ok_or("levels past the page's end")?;
                (Some(4..end), end..buf.len())
            } else {
                return Err("definition levels not RLE-encoded");
            };
            Ok(FlatPage {
                buf,
                rows: *num_values as usize,
                encoding: *encoding,
                defs,
                values,
                nulls: None,
            })
        }
        Page::DataPageV2 {
            buf,
            num_values,
            encoding,
            num_rows,
            num_nulls,
            def_levels_byte_len,
            rep_levels_byte_len,
            ..
        } => {
            if num_rows != num_values {
                return Err("a v2 page with more values than rows");
            }
            let rep = *rep_levels_byte_len as usize;
            let def = rep
                .checked_add(*def_levels_byte_len as usize)
                .filter(|d| *d <= buf.len())
                .ok_or("levels past the page's end")?;
            Ok(FlatPage {
                buf,
                rows: *num_rows as usize,
                encoding: *encoding,
                defs: nullable.then_some(rep..def),
                values: def..buf.len(),
                nulls: Some(*num_nulls as usize),
            })
        }
        Page::DictionaryPage { .. } => Err("a second dictionary page"),
    }
}
