//! Parquet's RLE / bit-packing hybrid encoding, decoded ([`decode`]) or stepped through
//! ([`Cursor`]): the dictionary indices and definition levels of a data page, for the dictionary
//! filter ([`crate::decode::dict_filter`]) and the direct reader ([`crate::decode::direct`]).
//! parquet's own decoder (`parquet::encodings::rle`) is public only behind its `experimental`
//! feature, which would pull in the variant crates and an unstable API; the format is small
//! (<https://parquet.apache.org/docs/file-format/data-pages/encodings/>).
//!
//! Invariants: never reads outside its input and never panics on malformed input (a short or
//! malformed stream is an `Err`); appends exactly the number of values asked for.

crate::decode::dispatch::dispatched! {
    /// Append `n` values of bit width `bit_width` (at most 32), RLE / bit-packing hybrid encoded
    /// in `buf` (without a length prefix), to `out`. Bytes after the `n`th value are ignored.
    /// Dispatched ([`crate::decode::dispatch`]): the unpacking loops use BMI2 and AVX2 where the
    /// CPU has them.
    pub(crate) fn decode(buf: &[u8], bit_width: u8, n: usize, out: &mut Vec<u32>)
        -> Result<(), &'static str> => decode_body;
}

/// [`decode`], inlined into each of its copies.
#[inline(always)]
fn decode_body(
    buf: &[u8],
    bit_width: u8,
    n: usize,
    out: &mut Vec<u32>,
) -> Result<(), &'static str> {
    if bit_width > 32 {
        return Err("a bit width above 32");
    }
    let bw = bit_width as usize;
    let mask = if bw == 32 { u32::MAX } else { (1u32 << bw) - 1 };
    let target = out.len() + n;
    out.reserve(n);
    let mut at = 0usize;
    while out.len() < target {
        let header = varint(buf, &mut at)?;
        let left = target - out.len();
        if header & 1 == 0 {
            // An RLE run: a count, then the value in ceil(bw / 8) little-endian bytes.
            let count = (header >> 1) as usize;
            let width = bw.div_ceil(8);
            let bytes = buf.get(at..at + width).ok_or("a truncated RLE run")?;
            at += width;
            let mut v = 0u32;
            for (i, b) in bytes.iter().enumerate() {
                v |= (*b as u32) << (8 * i);
            }
            if v & !mask != 0 {
                return Err("an RLE value wider than its bit width");
            }
            out.extend(std::iter::repeat_n(v, count.min(left)));
        } else {
            // A bit-packed run: groups of 8 values, least significant bit first.
            let values = ((header >> 1) as usize).saturating_mul(8);
            let take = values.min(left);
            let data = &buf[at.min(buf.len())..];
            // The last run may stop after its last value's byte rather than its last group's.
            let need = (take * bw).div_ceil(8);
            if data.len() < need {
                return Err("a truncated bit-packed run");
            }
            unpack(data, bw, mask, take, out);
            at = at.saturating_add(values.saturating_mul(bw) / 8);
        }
    }
    Ok(())
}

/// Append the first `take` values of width `bw` packed in `data` (which holds at least
/// `ceil(take * bw / 8)` bytes).
#[inline(always)]
fn unpack(data: &[u8], bw: usize, mask: u32, take: usize, out: &mut Vec<u32>) {
    if bw == 0 {
        out.extend(std::iter::repeat_n(0, take));
        return;
    }
    let groups = take / 8;
    let done = match bw {
        1 => groups_of::<1>(data, groups, out),
        2 => groups_of::<2>(data, groups, out),
        3 => groups_of::<3>(data, groups, out),
        4 => groups_of::<4>(data, groups, out),
        5 => groups_of::<5>(data, groups, out),
        6 => groups_of::<6>(data, groups, out),
        7 => groups_of::<7>(data, groups, out),
        8 => groups_of::<8>(data, groups, out),
        9 => groups_of::<9>(data, groups, out),
        10 => groups_of::<10>(data, groups, out),
        11 => groups_of::<11>(data, groups, out),
        12 => groups_of::<12>(data, groups, out),
        13 => groups_of::<13>(data, groups, out),
        14 => groups_of::<14>(data, groups, out),
        15 => groups_of::<15>(data, groups, out),
        16 => groups_of::<16>(data, groups, out),
        17 => groups_of::<17>(data, groups, out),
        18 => groups_of::<18>(data, groups, out),
        19 => groups_of::<19>(data, groups, out),
        20 => groups_of::<20>(data, groups, out),
        21 => groups_of::<21>(data, groups, out),
        22 => groups_of::<22>(data, groups, out),
        23 => groups_of::<23>(data, groups, out),
        24 => groups_of::<24>(data, groups, out),
        25 => groups_of::<25>(data, groups, out),
        26 => groups_of::<26>(data, groups, out),
        27 => groups_of::<27>(data, groups, out),
        28 => groups_of::<28>(data, groups, out),
        29 => groups_of::<29>(data, groups, out),
        30 => groups_of::<30>(data, groups, out),
        31 => groups_of::<31>(data, groups, out),
        32 => groups_of::<32>(data, groups, out),
        _ => 0,
    };
    out.extend((done..take).map(|i| {
        let bit = i * bw;
        let mut word = [0u8; 8];
        let end = data.len().min(bit / 8 + 8);
        word[..end - bit / 8].copy_from_slice(&data[bit / 8..end]);
        (u64::from_le_bytes(word) >> (bit % 8)) as u32 & mask
    }));
}

/// Append the first `groups` groups of 8 values of width `BW` (at most 32: a group is `BW`
/// bytes) packed in `data`; returns the number of values appended. Groups are unpacked straight
/// from `data` while the bytes [`unpack8`] reads lie inside it, the last ones from a padded copy.
#[inline(always)]
fn groups_of<const BW: usize>(data: &[u8], groups: usize, out: &mut Vec<u32>) -> usize {
    let groups = groups.min(data.len() / BW);
    let span = span::<BW>();
    // Groups `g` with `g * BW + span <= data.len()`.
    let direct = match data.len().checked_sub(span) {
        Some(room) => (room / BW + 1).min(groups),
        None => 0,
    };
    out.reserve(groups * 8);
    for g in 0..direct {
        out.extend_from_slice(&unpack8::<BW>(&data[g * BW..g * BW + span]));
    }
    for g in direct..groups {
        let mut word = [0u8; 40];
        word[..BW].copy_from_slice(&data[g * BW..g * BW + BW]);
        out.extend_from_slice(&unpack8::<BW>(&word[..span]));
    }
    groups * 8
}

/// The bytes [`unpack8`] reads from a group's start: one 128-bit word up to width 16, else up
/// to the end of the 8-byte word holding the last value (at most 36).
#[inline(always)]
const fn span<const BW: usize>() -> usize {
    if BW <= 16 {
        16
    } else {
        7 * BW / 8 + 8
    }
}

/// The 8 values of width `BW` packed at the start of `s` (`span::<BW>()` bytes; bits past the
/// group's `BW` bytes are masked off).
#[inline(always)]
fn unpack8<const BW: usize>(s: &[u8]) -> [u32; 8] {
    if BW <= 16 {
        let mask = (1u128 << BW) - 1;
        let w = u128::from_le_bytes(s[..16].try_into().expect("16 bytes"));
        std::array::from_fn(|i| ((w >> (i * BW)) & mask) as u32)
    } else {
        let mask = ((1u64 << BW) - 1) as u32;
        std::array::from_fn(|i| {
            let bit = i * BW;
            let at = bit / 8;
            let w = u64::from_le_bytes(s[at..at + 8].try_into().expect("8 bytes"));
            (w >> (bit % 8)) as u32 & mask
        })
    }
}

/// A position in an RLE / bit-packing hybrid stream, read one value at a time ([`Cursor::next`])
/// or moved ahead without unpacking ([`Cursor::skip`], [`Cursor::skip_sum`]): the values of
/// selected rows only, for the direct reader ([`crate::decode::direct`]). It holds offsets, not
/// the bytes: every call takes the stream it was made for.
///
/// Invariants: never reads outside the stream, never panics; a value past the stream's end (or
/// a malformed run) is an `Err`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cursor {
    /// Offset of the next run header.
    at: usize,
    bw: usize,
    mask: u64,
    /// Values left in the current run.
    left: usize,
    /// The current run's value, when it is an RLE run.
    rle: Option<u32>,
    /// Bit offset of the next value, in a bit-packed run.
    bit: usize,
}

impl Cursor {
    /// A cursor at the start of a stream of values of width `bit_width` (at most 32).
    pub fn new(bit_width: u8) -> Result<Self, &'static str> {
        if bit_width > 32 {
            return Err("a bit width above 32");
        }
        let bw = bit_width as usize;
        Ok(Cursor {
            bw,
            mask: (1u64 << bw) - 1,
            ..Cursor::default()
        })
    }

    /// Start the next run with at least one value.
    #[inline(never)]
    fn next_run(&mut self, buf: &[u8]) -> Result<(), &'static str> {
        loop {
            let header = varint(buf, &mut self.at)?;
            if header & 1 == 0 {
                let width = self.bw.div_ceil(8);
                let bytes = buf
                    .get(self.at..self.at + width)
                    .ok_or("a truncated RLE run")?;
                self.at += width;
                let mut v = 0u32;
                for (i, b) in bytes.iter().enumerate() {
                    v |= (*b as u32) << (8 * i);
                }
                if v as u64 & !self.mask != 0 {
                    return Err("an RLE value wider than its bit width");
                }
                self.rle = Some(v);
                self.left = (header >> 1) as usize;
            } else {
                let values = ((header >> 1) as usize).saturating_mul(8);
                self.rle = None;
                self.bit = self.at.saturating_mul(8);
                self.left = values;
                self.at = self.at.saturating_add(values.saturating_mul(self.bw) / 8);
            }
            if self.left > 0 {
                return Ok(());
            }
        }
    }

    /// The next value.
    #[inline]
    pub fn next(&mut self, buf: &[u8]) -> Result<u32, &'static str> {
        if self.left == 0 {
            self.next_run(buf)?;
        }
        self.left -= 1;
        match self.rle {
            Some(v) => Ok(v),
            None => {
                let v = bits(buf, self.bit, self.bw, self.mask)?;
                self.bit += self.bw;
                Ok(v)
            }
        }
    }

    /// Move past `n` values.
    #[inline]
    pub fn skip(&mut self, mut n: usize, buf: &[u8]) -> Result<(), &'static str> {
        while n > 0 {
            if self.left == 0 {
                self.next_run(buf)?;
            }
            let k = n.min(self.left);
            if self.rle.is_none() {
                self.bit += k * self.bw;
            }
            self.left -= k;
            n -= k;
        }
        Ok(())
    }

    /// Move past `n` values of a stream of width 1 (definition levels), returning how many of
    /// them are 1.
    pub fn skip_sum(&mut self, mut n: usize, buf: &[u8]) -> Result<usize, &'static str> {
        if self.bw != 1 {
            return Err("skip_sum of a stream wider than 1 bit");
        }
        let mut ones = 0;
        while n > 0 {
            if self.left == 0 {
                self.next_run(buf)?;
            }
            let k = n.min(self.left);
            match self.rle {
                Some(v) => ones += k * v as usize,
                None => {
                    ones += count_ones(buf, self.bit, k)?;
                    self.bit += k;
                }
            }
            self.left -= k;
            n -= k;
        }
        Ok(ones)
    }
}

/// The value of width `bw` (mask `mask`) at bit offset `bit` of `buf`.
#[inline]
fn bits(buf: &[u8], bit: usize, bw: usize, mask: u64) -> Result<u32, &'static str> {
    let byte = bit / 8;
    let word = match buf.get(byte..byte + 8) {
        Some(w) => u64::from_le_bytes(w.try_into().expect("8 bytes")),
        None => {
            if bit + bw > buf.len() * 8 {
                return Err("a truncated bit-packed run");
            }
            let mut w = [0u8; 8];
            let tail = &buf[byte.min(buf.len())..];
            w[..tail.len()].copy_from_slice(tail);
            u64::from_le_bytes(w)
        }
    };
    Ok(((word >> (bit % 8)) & mask) as u32)
}

/// How many of the `n` bits from bit offset `bit` of `buf` are set.
fn count_ones(buf: &[u8], bit: usize, n: usize) -> Result<usize, &'static str> {
    if bit + n > buf.len() * 8 {
        return Err("a truncated bit-packed run");
    }
    let chunks = arrow::util::bit_chunk_iterator::UnalignedBitChunk::new(buf, bit, n);
    Ok(chunks.count_ones())
}

/// The value of every one of the first `n` values of the stream `buf` (bit width `bit_width`)
/// when they all lie in its first run and that run is an RLE run; `None` otherwise (or on a
/// malformed stream, which [`decode`] then reports). A nullable column without a null in a
/// page has its definition levels written as one such run.
pub(crate) fn one_run(buf: &[u8], bit_width: u8, n: usize) -> Option<u32> {
    let mut c = Cursor::new(bit_width).ok()?;
    c.next_run(buf).ok()?;
    c.rle.filter(|_| c.left >= n)
}

/// An unsigned LEB128 run header at `buf[*at..]`, advancing `at`.
#[inline(always)]
fn varint(buf: &[u8], at: &mut usize) -> Result<u64, &'static str> {
    let mut v = 0u64;
    for shift in (0..35).step_by(7) {
        let b = *buf.get(*at).ok_or("a truncated run header")?;
        *at += 1;
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("a run header longer than 5 bytes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dispatch::{on_thread, Kernels};

    /// The hybrid encoding of `values`: an independent, naive encoder (RLE for runs of 8 or
    /// more equal values, bit-packed groups otherwise), written from the format's description.
    fn encode(values: &[u32], bw: usize) -> Vec<u8> {
        fn header(out: &mut Vec<u8>, mut h: u64) {
            loop {
                let b = (h & 0x7f) as u8;
                h >>= 7;
                if h == 0 {
                    out.push(b);
                    return;
                }
                out.push(b | 0x80);
            }
        }
        let mut out = Vec::new();
        let mut i = 0;
        while i < values.len() {
            let run = values[i..].iter().take_while(|v| **v == values[i]).count();
            if run >= 8 {
                header(&mut out, (run as u64) << 1);
                out.extend_from_slice(&values[i].to_le_bytes()[..bw.div_ceil(8)]);
                i += run;
            } else {
                let chunk = &values[i..(i + 8).min(values.len())];
                header(&mut out, (1 << 1) | 1);
                let mut bits = vec![false; 8 * bw];
                for (j, v) in chunk.iter().enumerate() {
                    for b in 0..bw {
                        bits[j * bw + b] = (v >> b) & 1 == 1;
                    }
                }
                for byte in bits.chunks(8) {
                    out.push(byte.iter().enumerate().map(|(k, b)| (*b as u8) << k).sum());
                }
                i += chunk.len();
            }
        }
        out
    }

    #[test]
    fn decodes_what_a_naive_encoder_writes() {
        let mut seed = 7u64;
        for bw in 0..=32usize {
            for len in [0usize, 1, 7, 8, 9, 63, 1000] {
                let max = if bw == 32 { u32::MAX } else { (1u32 << bw) - 1 };
                let values: Vec<u32> = (0..len)
                    .map(|i| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                        // Runs and noise alike.
                        let v = if (i / 20) % 2 == 0 {
                            3
                        } else {
                            (seed >> 33) as u32
                        };
                        v & max
                    })
                    .collect();
                let buf = encode(&values, bw);
                // Both copies of the dispatched decoder (the v3 one where the CPU has it).
                for kernels in [Kernels::Portable, Kernels::V3] {
                    let mut out = vec![42];
                    on_thread(kernels, || decode(&buf, bw as u8, len, &mut out)).unwrap();
                    assert_eq!(out[0], 42);
                    let what = format!("bit width {bw}, {len} values, {kernels:?}");
                    assert_eq!(&out[1..], &values[..], "{what}");
                }
            }
        }
    }

    #[test]
    fn malformed_streams_are_errors() {
        let mut out = Vec::new();
        // Empty input where values are wanted.
        assert!(decode(&[], 3, 1, &mut out).is_err());
        // A bit-packed run of 1 group at width 5 needs 5 bytes.
        assert!(decode(&[0b11, 0xff], 5, 8, &mut out).is_err());
        // An RLE value wider than its width.
        assert!(decode(&[2 << 1, 0xff], 3, 2, &mut out).is_err());
        // A header that never ends.
        assert!(decode(&[0xff; 9], 3, 2, &mut out).is_err());
        assert!(decode(&[0], 33, 1, &mut out).is_err());
        // Runs of zero values take no values; nothing after them is an error.
        assert!(decode(&[0, 0, 0], 8, 1, &mut out).is_err());
    }

    #[test]
    fn a_short_final_group_is_accepted() {
        // 3 values of width 4 bit-packed in 2 bytes, although the group holds 8.
        let mut out = Vec::new();
        decode(&[0b11, 0x21, 0x03], 4, 3, &mut out).unwrap();
        assert_eq!(out, vec![1, 2, 3]);
    }

    #[test]
    fn one_run_is_what_decode_gives_when_every_value_is_equal() {
        // Streams from the naive encoder and by hand: `one_run` answers only when the first
        // run is an RLE run holding the first `n` values, and then with what `decode` gives.
        let mut streams: Vec<(Vec<u8>, u8)> = Vec::new();
        for (values, bw) in [
            (vec![1u32; 100], 1usize),
            (vec![0; 100], 1),
            ([vec![1; 50], vec![0; 50]].concat(), 1),
            ((0..100).map(|i| i % 2).collect(), 1),
            (vec![7; 20], 3),
        ] {
            streams.push((encode(&values, bw), bw as u8));
        }
        // An empty RLE run, then one of 9 ones; a truncated run; an empty stream.
        streams.push((vec![0, 1, 18, 1], 1));
        streams.push((vec![200], 1));
        streams.push((vec![], 1));
        for (buf, bw) in streams {
            for n in [1, 9, 10, 20, 50, 51, 100, 101] {
                let mut out = Vec::new();
                let decoded = decode(&buf, bw, n, &mut out).ok().map(|_| out);
                match one_run(&buf, bw, n) {
                    Some(v) => assert_eq!(decoded, Some(vec![v; n]), "{buf:?} {n}"),
                    None => {
                        // Only a run that is not RLE, too short, or malformed.
                        let mut c = Cursor::new(bw).unwrap();
                        let first = c.next_run(&buf).ok().and(c.rle.map(|_| c.left));
                        assert!(first.is_none_or(|left| left < n), "{buf:?} {n}");
                    }
                }
            }
        }
    }
}
