//! Decimals stored as big-endian two's-complement FIXED_LEN_BYTE_ARRAYs of 1 to 16 bytes (how
//! pyarrow writes every decimal, and Spark's and Hive's legacy format), read as `Decimal128`
//! ([`BeDecimal`]). parquet's reader copies each row's bytes, then converts them; here a
//! dictionary is converted once and its values gathered by index, and plain values are
//! converted straight into the output. A pyarrow-written lineitem spent 0.32 of its 0.70 CPU
//! seconds in parquet's path for its four decimal columns.
//!
//! Invariants: values are sign-extended exactly as parquet's reader does (so arrays equal
//! its); the converted dictionary is at most 16 bytes per value of a page whose length was
//! checked to hold them; an index past the dictionary, or fewer plain values than rows, is a
//! [`Fallback`].

use arrow::array::{ArrayRef, BooleanBufferBuilder};
use arrow::datatypes::DataType;

use super::build::{all_valid, finish_words, nulls, runs, Build, DictPage, Words};
use super::page::{DataPage, Kind};
use super::Fallback;

/// `bytes` (1 to 16 of them), big-endian two's complement, sign-extended to an `i128`.
#[inline]
fn be_i128(bytes: &[u8]) -> i128 {
    let negative = bytes.first().is_some_and(|b| b & 0x80 != 0);
    let mut buf = [if negative { 0xff } else { 0 }; 16];
    buf[16 - bytes.len()..].copy_from_slice(bytes);
    i128::from_be_bytes(buf)
}

/// A `Decimal128` column read from FIXED_LEN_BYTE_ARRAY values `width` (1 to 16) bytes wide.
pub(crate) struct BeDecimal {
    width: usize,
    dict: Vec<i128>,
    out: Vec<i128>,
    nulls: Option<BooleanBufferBuilder>,
}

impl BeDecimal {
    /// A builder for values `width` bytes wide; `None` past 16 bytes (or of none).
    pub fn new(width: usize, nullable: bool) -> Option<Self> {
        (1..=16).contains(&width).then(|| BeDecimal {
            width,
            dict: Vec::new(),
            out: Vec::new(),
            nulls: nulls(nullable),
        })
    }

    /// Plain value `i` of `values`, if the page holds it.
    #[inline]
    fn plain(&self, values: &[u8], i: usize) -> Result<i128, Fallback> {
        let w = self.width;
        values
            .get(i * w..i * w + w)
            .map(be_i128)
            .ok_or(Fallback("fewer plain values than rows"))
    }
}

impl Build for BeDecimal {
    fn dictionary(&mut self, dict: DictPage<'_>) -> Result<(), Fallback> {
        let w = self.width;
        if dict.buf.len() / w < dict.n {
            return Err(Fallback("a dictionary page shorter than its values"));
        }
        self.dict.clear();
        self.dict
            .extend(dict.buf[..dict.n * w].chunks_exact(w).map(be_i128));
        Ok(())
    }

    fn reserve(&mut self, rows: usize) {
        self.out.reserve(rows);
    }

    fn append(&mut self, page: &mut DataPage, rows: &[u32], left: &[u32]) -> Result<(), Fallback> {
        let first = page.first;
        let values = page.values().clone();
        if let Some(d) = page.dense().filter(|d| d.positions.is_empty()) {
            match page.kind {
                Kind::Dict if (d.max_index as usize) < self.dict.len() => {
                    let (dict, idx, out) = (&self.dict, &d.values[..], &mut self.out);
                    match runs(rows, left, first) {
                        Some(runs) => runs
                            .for_each(|run| out.extend(idx[run].iter().map(|&k| dict[k as usize]))),
                        None => {
                            out.extend(rows.iter().map(|&r| dict[idx[r as usize - first] as usize]))
                        }
                    }
                    all_valid(&mut self.nulls, rows.len());
                    return Ok(());
                }
                Kind::Fixed { .. } => {
                    let w = self.width;
                    match runs(rows, left, first) {
                        Some(runs) => {
                            for run in runs {
                                let bytes = values
                                    .get(run.start * w..run.end * w)
                                    .ok_or(Fallback("fewer plain values than rows"))?;
                                self.out.extend(bytes.chunks_exact(w).map(be_i128));
                            }
                        }
                        None => {
                            for &r in rows {
                                let v = self.plain(&values, r as usize - first)?;
                                self.out.push(v);
                            }
                        }
                    }
                    all_valid(&mut self.nulls, rows.len());
                    return Ok(());
                }
                _ => {}
            }
        }
        let (width, dict) = (self.width, &self.dict);
        let words = Words {
            out: &mut self.out,
            nulls: &mut self.nulls,
        };
        words.walk(
            page,
            rows,
            |k| dict.get(k as usize).copied(),
            |i| {
                values
                    .get(i * width..i * width + width)
                    .map(be_i128)
                    .ok_or(Fallback("fewer plain values than rows"))
            },
        )
    }

    fn finish(&mut self, dt: &DataType) -> Result<ArrayRef, Fallback> {
        finish_words(&mut self.out, &mut self.nulls, dt)
    }
}

#[cfg(test)]
mod tests {
    use super::be_i128;

    #[test]
    fn big_endian_values_sign_extend_as_parquet_does() {
        assert_eq!(be_i128(&[0x00, 0x01, 0x00]), 256);
        assert_eq!(be_i128(&[0xff]), -1);
        assert_eq!(be_i128(&[0xff, 0xfe]), -2);
        assert_eq!(be_i128(&[0x80, 0, 0, 0, 0, 0, 0]), -(1i128 << 55));
        let max = [0x7f; 16];
        assert_eq!(be_i128(&max), i128::from_be_bytes(max));
        for v in [0i128, 1, -1, 12345678901234, -98765432109876] {
            let be = v.to_be_bytes();
            assert_eq!(be_i128(&be[9..]), v, "7 bytes");
        }
    }
}
