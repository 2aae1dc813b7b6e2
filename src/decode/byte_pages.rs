//! PLAIN `BYTE_ARRAY` data pages checked before parquet's reader may skip values in them
//! ([`CheckedPages`], [`check_page`]).
//!
//! parquet 58's PLAIN byte-array decoders (`ByteArrayDecoderPlain::skip`,
//! `ByteViewArrayDecoderPlain::skip`) step over a value by the 4-byte length before it without
//! checking that the value ends inside the page. A length running past the page's end leaves
//! the decoder's offset beyond its buffer; the next `read` then slices past the end (undefined
//! behaviour in the view decoder, an arithmetic overflow in the offsets one) instead of
//! reporting the page as corrupt. Found by the `direct` fuzz target (`fuzz/regressions/direct/`).
//!
//! A reader skips only when it has a row selection, so a row group read with one has each
//! PLAIN byte-array data page's lengths walked here first: the page must hold its values (at
//! most as many as it has levels) end to end, each inside the page; otherwise the read is an
//! error naming the page, before parquet's decoder sees it. The walk reads 4 bytes per value
//! and nothing else (no UTF-8 check, no copy), on a page already decompressed for the read.
//!
//! Invariant: a page this lets through is one parquet's skip cannot step out of: every value
//! up to the page's level count (or the end of the page, whichever comes first) lies inside it.

use parquet::basic::{Encoding, Type as PhysicalType};
use parquet::column::page::{Page, PageMetadata, PageReader};
use parquet::errors::{ParquetError, Result};
use parquet::schema::types::ColumnDescriptor;

/// A column's page reader whose PLAIN byte-array data pages are checked ([`check_page`])
/// before they are handed on.
pub(crate) struct CheckedPages {
    inner: Box<dyn PageReader>,
    levels: Levels,
}

/// The most definition and repetition levels of a column: where its pages' values start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Levels {
    def: i16,
    rep: i16,
}

impl Levels {
    /// `cd`'s levels, or `None` when its pages need no check (not `BYTE_ARRAY`).
    pub fn of(cd: &ColumnDescriptor) -> Option<Self> {
        (cd.physical_type() == PhysicalType::BYTE_ARRAY).then(|| Levels {
            def: cd.max_def_level(),
            rep: cd.max_rep_level(),
        })
    }
}

impl CheckedPages {
    /// `inner`, its pages checked as a column with `levels` has them.
    pub fn new(inner: Box<dyn PageReader>, levels: Levels) -> Self {
        CheckedPages { inner, levels }
    }
}

impl Iterator for CheckedPages {
    type Item = Result<Page>;
    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for CheckedPages {
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        let page = self.inner.get_next_page()?;
        if let Some(p) = &page {
            check_page(p, self.levels)?;
        }
        Ok(page)
    }

    fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        self.inner.peek_next_page()
    }

    fn skip_next_page(&mut self) -> Result<()> {
        self.inner.skip_next_page()
    }

    fn at_record_boundary(&mut self) -> Result<bool> {
        self.inner.at_record_boundary()
    }
}

/// Check a (decompressed) page of a `BYTE_ARRAY` column with `levels`: a PLAIN data page's
/// values must each lie inside the page. Other pages and encodings pass unchecked; so does a
/// page whose levels cannot be located (parquet's level decoder reports those itself).
pub(crate) fn check_page(page: &Page, levels: Levels) -> Result<()> {
    let (buf, count, start) = match page {
        Page::DataPage {
            buf,
            num_values,
            encoding: Encoding::PLAIN,
            def_level_encoding,
            rep_level_encoding,
            ..
        } => {
            let count = *num_values as usize;
            let mut at = 0usize;
            for (max, enc) in [
                (levels.rep, *rep_level_encoding),
                (levels.def, *def_level_encoding),
            ] {
                if max <= 0 {
                    continue;
                }
                let len = match enc {
                    Encoding::RLE => match buf.get(at..at.saturating_add(4)) {
                        Some(b) => 4 + u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize,
                        None => return Ok(()),
                    },
                    // The deprecated BIT_PACKED levels: no length, `count` levels of the
                    // bit width of `max`.
                    #[allow(deprecated)]
                    Encoding::BIT_PACKED => {
                        let bits = (16 - (max as u16).leading_zeros()) as usize;
                        count.saturating_mul(bits).div_ceil(8)
                    }
                    _ => return Ok(()),
                };
                at = at.saturating_add(len);
            }
            (buf, count, at)
        }
        Page::DataPageV2 {
            buf,
            num_values,
            encoding: Encoding::PLAIN,
            def_levels_byte_len,
            rep_levels_byte_len,
            ..
        } => {
            let at = *def_levels_byte_len as usize + *rep_levels_byte_len as usize;
            (buf, *num_values as usize, at)
        }
        _ => return Ok(()),
    };
    let Some(values) = buf.get(start..) else {
        return Ok(());
    };
    walk(values, count).map_err(|(value, at)| {
        ParquetError::General(format!(
            "corrupt PLAIN byte-array page: value {value} (at byte {at} of the page's {} bytes \
             of values) runs past the end of the page",
            values.len()
        ))
    })
}

/// Walk at most `count` length-prefixed values of `values` from its start, until its end:
/// `Err((value, offset))` for the first whose length or bytes run past the end.
fn walk(values: &[u8], count: usize) -> std::result::Result<(), (usize, usize)> {
    let end = values.len();
    let mut at = 0usize;
    let mut n = 0usize;
    while at < end && n < count {
        let Some(b) = values.get(at..at.saturating_add(4)) else {
            return Err((n, at));
        };
        let len = u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize;
        let next = (at + 4).saturating_add(len);
        if next > end {
            return Err((n, at));
        }
        at = next;
        n += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(values: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for v in values {
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
        }
        out
    }

    #[test]
    fn walks_well_formed_values_and_stops_at_the_count_or_the_end() {
        let v = plain(&[b"ab", b"", b"cde"]);
        assert_eq!(walk(&v, 3), Ok(()));
        // More levels than values (a v1 page with nulls): the end stops the walk.
        assert_eq!(walk(&v, 10), Ok(()));
        // Fewer: the rest is not looked at, even if it is garbage.
        let mut g = plain(&[b"ab"]);
        g.extend_from_slice(&[0xff; 3]);
        assert_eq!(walk(&g, 1), Ok(()));
        assert_eq!(walk(&[], 5), Ok(()));
    }

    #[test]
    fn refuses_a_value_past_the_end() {
        let mut v = plain(&[b"ab"]);
        v.extend_from_slice(&100u32.to_le_bytes());
        v.extend_from_slice(b"xyz");
        assert_eq!(walk(&v, 2), Err((1, 6)));
        // A length cut short.
        let mut v = plain(&[b"ab"]);
        v.extend_from_slice(&[1, 0]);
        assert_eq!(walk(&v, 2), Err((1, 6)));
        // A length that would overflow a 32-bit offset.
        let v = (u32::MAX).to_le_bytes();
        assert_eq!(walk(&v, 1), Err((0, 0)));
    }

    #[test]
    fn finds_the_values_after_v1_levels() {
        let values = {
            let mut v = plain(&[b"ok"]);
            v.extend_from_slice(&9u32.to_le_bytes());
            v
        };
        // Definition levels, RLE with their 4-byte length: one run of 2 ones (bit width 1).
        let mut buf = 2u32.to_le_bytes().to_vec();
        buf.extend_from_slice(&[2 << 1, 1]);
        buf.extend_from_slice(&values);
        let page = |buf: Vec<u8>| Page::DataPage {
            buf: buf.into(),
            num_values: 2,
            encoding: Encoding::PLAIN,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        let nullable = Levels { def: 1, rep: 0 };
        let err = check_page(&page(buf), nullable).unwrap_err().to_string();
        assert!(err.contains("value 1 (at byte 6"), "{err}");
        let mut ok = 2u32.to_le_bytes().to_vec();
        ok.extend_from_slice(&[2 << 1, 1]);
        ok.extend_from_slice(&plain(&[b"ok", b"yes"]));
        check_page(&page(ok), nullable).unwrap();
        // Other encodings are not looked at.
        let dict = Page::DataPage {
            buf: vec![0xff; 3].into(),
            num_values: 2,
            encoding: Encoding::RLE_DICTIONARY,
            def_level_encoding: Encoding::RLE,
            rep_level_encoding: Encoding::RLE,
            statistics: None,
        };
        check_page(&dict, nullable).unwrap();
    }
}
