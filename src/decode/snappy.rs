//! Snappy (raw format) decompression of a page into a buffer with room to spare: the codec of
//! most Parquet files, and the largest single cost of a warm scan (about 40% of its CPU).
//!
//! Why not the `snap` crate (parquet's and polars' decoder): its loop is a port of the C++
//! decoder before snappy 1.1.9, which branches on every element's kind, bounds-checks every
//! copy against the end of the output, and waits for each tag to know where the next one is.
//! This one follows 1.1.9's loop: both candidate next tags (after a literal, after a copy) are
//! loaded while the current element is decoded, and every element is one or two 32-byte moves
//! into the spare bytes after the current position, which [`decompress_into`]'s caller
//! provides (pages ask the pool for [`DST_SLOP`] spare bytes). On TPC-H lineitem pages it decompresses
//! 12-14% faster (BENCHMARKS.md, "Snappy decompression").
//!
//! Invariants: the result is exactly `snap`'s: the same bytes, and an error for exactly the
//! streams `snap` rejects (tests below compare the two on valid, truncated and mutated
//! streams); no read outside `src`, no write outside `dst` (the fast loop runs only while
//! [`SRC_SLOP`] bytes remain in `src` and [`DST_SLOP`] in `dst`; the rest is decoded with
//! checked indexing).

use std::fmt;
use std::ptr;

/// A malformed snappy stream (the first problem found).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SnappyError {
    /// The length header is missing or over 32 bits.
    Header,
    /// The stream decompresses to more bytes than the page claims.
    TooLong { claimed: usize, got: usize },
    /// A literal runs past the end of the input or of the declared output.
    Literal,
    /// A copy refers before the start of the output or runs past its declared end.
    Copy,
    /// The stream ends before its declared length is written.
    Short { declared: usize, got: usize },
}

impl fmt::Display for SnappyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Header => write!(f, "snappy: invalid length header"),
            Self::TooLong { claimed, got } => write!(
                f,
                "snappy: stream declares {got} bytes, more than the page's {claimed}"
            ),
            Self::Literal => write!(f, "snappy: literal past the end of the input or output"),
            Self::Copy => write!(f, "snappy: copy outside the output"),
            Self::Short { declared, got } => {
                write!(f, "snappy: stream ends after {got} of its {declared} bytes")
            }
        }
    }
}

impl std::error::Error for SnappyError {}

/// Input bytes the fast loop may read from the byte after a tag: a literal of up to 60 bytes
/// read as 64, and the next tag after it.
const SRC_SLOP: usize = 66;
/// Output bytes the fast loop may write from the current position: 64 (two 32-byte moves),
/// or a repeated pattern of up to 64 bytes written 16 bytes at a time (up to 79).
pub(crate) const DST_SLOP: usize = 80;

/// Decompresses the snappy stream `src` into `dst`, which must hold its declared length, at
/// most `want` bytes; returns that length. Bytes of `dst` after it may be overwritten.
pub(crate) fn decompress_into(
    src: &[u8],
    dst: &mut [u8],
    want: usize,
) -> Result<usize, SnappyError> {
    let (n, header) = header(src).ok_or(SnappyError::Header)?;
    if n > want.min(dst.len()) {
        return Err(SnappyError::TooLong {
            claimed: want,
            got: n,
        });
    }
    let got = decode(&src[header..], dst, n)?;
    if got != n {
        return Err(SnappyError::Short { declared: n, got });
    }
    Ok(n)
}

/// The declared length (a varint of at most 32 bits) and the header's size.
fn header(src: &[u8]) -> Option<(usize, usize)> {
    let mut v: u64 = 0;
    for (i, &b) in src.iter().take(5).enumerate() {
        v |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return usize::try_from(v)
                .ok()
                .filter(|_| v <= u64::from(u32::MAX))
                .map(|v| (v, i + 1));
        }
    }
    None
}

crate::decode::dispatch::dispatched! {
    /// Decodes the elements of `src` into `dst[..n]` (writing past `n` where `dst` allows);
    /// returns the bytes written. Dispatched ([`crate::decode::dispatch`]): with AVX2 each
    /// 32-byte move is one instruction.
    fn decode(src: &[u8], dst: &mut [u8], n: usize) -> Result<usize, SnappyError> => decode_body;
}

/// [`decode`], inlined into each of its copies.
#[inline(always)]
fn decode_body(src: &[u8], dst: &mut [u8], n: usize) -> Result<usize, SnappyError> {
    let mut s = 0; // the next tag
    let mut d = 0; // the next output byte; d <= n throughout
    if src.len() > SRC_SLOP && dst.len() >= DST_SLOP && n <= dst.len() {
        // SAFETY: the three conditions just checked are `fast`'s contract.
        (s, d) = unsafe { fast(src, dst, n)? };
        if s >= src.len() {
            return Ok(d);
        }
    }
    while s < src.len() {
        let tag = src[s];
        s += 1;
        if tag & 3 == 0 {
            let mut len = usize::from(tag >> 2);
            if len >= 60 {
                let k = len - 59;
                len = le(src.get(s..s + k).ok_or(SnappyError::Literal)?);
                s += k;
            }
            len += 1;
            let lit = src
                .get(s..s.saturating_add(len))
                .ok_or(SnappyError::Literal)?;
            if len > n - d {
                return Err(SnappyError::Literal);
            }
            dst[d..d + len].copy_from_slice(lit);
            s += len;
            d += len;
            continue;
        }
        let extra = EXTRA[usize::from(tag & 3)];
        let b = src.get(s..s + extra).ok_or(SnappyError::Copy)?;
        s += extra;
        let e = ELEMENTS[usize::from(tag)] as usize;
        let len = e & 0xff;
        let off = (e & 0x700) | le(b);
        if off.wrapping_sub(1) >= d || len > n - d {
            return Err(SnappyError::Copy);
        }
        for i in d..d + len {
            dst[i] = dst[i - off];
        }
        d += len;
    }
    Ok(d)
}

/// A little-endian number of at most 4 bytes.
#[inline(always)]
fn le(b: &[u8]) -> usize {
    b.iter().rev().fold(0, |a, &x| (a << 8) | usize::from(x))
}

/// The fast loop: decodes while [`SRC_SLOP`] input and [`DST_SLOP`] output bytes remain;
/// returns where it stopped (the next tag, the next output byte), with `d <= n`.
///
/// # Safety
/// `src.len() > SRC_SLOP`, `dst.len() >= DST_SLOP` and `n <= dst.len()`: the loop reads up to
/// [`SRC_SLOP`] bytes past each tag and writes up to [`DST_SLOP`] bytes from the current output
/// position without checking either against the slices' ends (only against `s_end`, `d_end`
/// computed from them), and checks copies and literals against `n`, not `dst.len()`.
#[inline(always)]
unsafe fn fast(src: &[u8], dst: &mut [u8], n: usize) -> Result<(usize, usize), SnappyError> {
    debug_assert!(src.len() > SRC_SLOP, "fast: {} input bytes", src.len());
    debug_assert!(dst.len() >= DST_SLOP, "fast: {} output bytes", dst.len());
    debug_assert!(n <= dst.len(), "fast: {n} bytes wanted in {}", dst.len());
    let sp = src.as_ptr();
    let dp = dst.as_mut_ptr();
    let s_end = src.len() - SRC_SLOP;
    let d_end = dst.len() - DST_SLOP;
    let mut d = 0;
    // `ip`: the byte after the current tag.
    let mut ip = 1;
    let mut tag = usize::from(src[0]);
    while ip <= s_end && d <= d_end {
        debug_assert!(ip >= 1 && ip + SRC_SLOP <= src.len() && d + DST_SLOP <= dst.len());
        debug_assert!(d <= n && tag == usize::from(src[ip - 1]));
        // SAFETY: every read below is within `sp[ip - 1 .. ip + 65]`, inside `src` as
        // `ip + SRC_SLOP <= src.len()` (the contract and the loop's condition); every write is
        // within `dp[d .. d + 80]`, inside `dst` as `d + DST_SLOP <= dst.len()`; copies read
        // `dp[d - off ..]` with `1 <= off <= d` (checked before each); literals of over 60
        // bytes are checked against the input left, all lengths against `n - d`.
        unsafe {
            let e = ELEMENTS[tag] as usize;
            let kind = tag & 3;
            let lit_len = tag >> 2;
            let is_lit = kind == 0;
            // Where the next tag is if this is a literal, and if it is a copy: both loaded
            // before knowing which (volatile, so that they stay loads rather than a load from
            // a selected address, which waits for the selection).
            let next_lit = usize::from(ptr::read_volatile(sp.add(ip + 1 + lit_len)));
            let next_copy = usize::from(ptr::read_volatile(sp.add(ip + kind)));
            let next = if is_lit { next_lit } else { next_copy };
            let next_ip = if is_lit {
                ip + 2 + lit_len
            } else {
                ip + 1 + kind
            };
            let word =
                u32::from_le_bytes(ptr::read_unaligned(sp.add(ip).cast::<[u8; 4]>())) as usize;
            let len = e & 0xff;
            let room = n - d;
            if e & RARE as usize != 0 {
                // Decoded apart, then the loop restarts at the next tag.
                (ip, d) = rare(src, dp, Tag { tag, word }, ip, d, room)?;
                if ip > s_end {
                    return Ok((ip - 1, d));
                }
                tag = usize::from(*sp.add(ip - 1));
                continue;
            }
            if is_lit {
                if len > room {
                    return Err(SnappyError::Literal);
                }
                copy64(sp.add(ip), dp.add(d), len);
            } else {
                let off = (e & 0x700) | (word & MASK[kind]);
                if off.wrapping_sub(1) >= d || len > room {
                    return Err(SnappyError::Copy);
                }
                if off >= len {
                    copy64(dp.add(d - off), dp.add(d), len);
                } else {
                    copy_pattern(dp.add(d), off, len);
                }
            }
            d += len;
            tag = next;
            ip = next_ip;
        }
    }
    Ok((ip - 1, d))
}

/// A tag of [`fast`]'s loop and the four input bytes after it.
#[derive(Clone, Copy)]
struct Tag {
    tag: usize,
    word: usize,
}

/// A rare element of [`fast`]'s loop: a literal of over 60 bytes (its length in the 1-4
/// bytes after the tag) or a copy with a 4-byte offset, its tag at `src[ip - 1]` and its
/// output at `d`, with `room` output bytes wanted; returns the position after its tag's
/// successor (the loop's `ip`) and the output written.
///
/// # Safety
/// As in [`fast`]'s loop: `ip + SRC_SLOP <= src.len()`, `dp[d - off .. d + room]` writable
/// and initialised up to `d` (`dp` is `fast`'s output, `d + room == n`).
#[inline(always)]
unsafe fn rare(
    src: &[u8],
    dp: *mut u8,
    Tag { tag, word }: Tag,
    ip: usize,
    d: usize,
    room: usize,
) -> Result<(usize, usize), SnappyError> {
    let len = ELEMENTS[tag] as usize & 0xff;
    if tag & 3 == 0 {
        let k = (tag >> 2) - 59;
        let len = (word & MASK[k]) + 1;
        let at = ip + k;
        if len > src.len() - at || len > room {
            return Err(SnappyError::Literal);
        }
        // SAFETY: `src[at .. at + len]` is inside `src` (checked), `dp[d .. d + len]` inside
        // the output (`len <= room`).
        unsafe { ptr::copy_nonoverlapping(src.as_ptr().add(at), dp.add(d), len) };
        Ok((at + len + 1, d + len))
    } else {
        let off = word;
        if off.wrapping_sub(1) >= d || len > room {
            return Err(SnappyError::Copy);
        }
        // SAFETY: `1 <= off <= d` (checked), and `len <= room`; `copy_pattern` writes at
        // most `len + 15` bytes, within `fast`'s output slop.
        unsafe { copy_pattern(dp.add(d), off, len) };
        Ok((ip + 5, d + len))
    }
}

/// Moves 32 bytes, or 64 when `len > 32`, from `from` to `to`, each 32 loaded before stored:
/// the first `len` bytes at `to` are right when `from` is a literal or `len` or more bytes back.
///
/// # Safety
/// `from` readable and `to` writable for 64 bytes; `len <= 64`.
#[inline(always)]
unsafe fn copy64(from: *const u8, to: *mut u8, len: usize) {
    debug_assert!(len <= 64, "copy64 of {len} bytes");
    let a = ptr::read_unaligned(from.cast::<[u8; 32]>());
    ptr::write_unaligned(to.cast::<[u8; 32]>(), a);
    if len > 32 {
        let b = ptr::read_unaligned(from.add(32).cast::<[u8; 32]>());
        ptr::write_unaligned(to.add(32).cast::<[u8; 32]>(), b);
    }
}

/// Writes at `to` the `len` (<= 64) bytes starting `off` bytes back, where `off` may be less
/// than `len` (the last `off` bytes repeated); may write up to 15 bytes more.
///
/// # Safety
/// `1 <= off`, `len <= 64`; `to - off` readable for `off` bytes (they are already written),
/// `to` writable for `len + 15` bytes.
#[inline(always)]
unsafe fn copy_pattern(to: *mut u8, off: usize, len: usize) {
    debug_assert!(
        off >= 1 && len <= 64,
        "copy_pattern of {len} bytes {off} back"
    );
    let from = to.sub(off);
    // Each move reads bytes already written (`off` >= its size).
    if off >= 16 {
        let mut i = 0;
        while i < len {
            ptr::copy_nonoverlapping(from.add(i), to.add(i), 16);
            i += 16;
        }
    } else if off >= 8 {
        let mut i = 0;
        while i < len {
            ptr::copy_nonoverlapping(from.add(i), to.add(i), 8);
            i += 8;
        }
    } else {
        // 16 bytes of the pattern, stored every multiple of `off` up to 16.
        let mut pat = [0u8; 16];
        for i in 0..16 {
            pat[i] = if i < off { *from.add(i) } else { pat[i - off] };
        }
        let step = 16 - 16 % off;
        let mut i = 0;
        while i < len {
            ptr::write_unaligned(to.add(i).cast::<[u8; 16]>(), pat);
            i += step;
        }
    }
}

/// Masks of the low 0-4 bytes of a little-endian word.
const MASK: [usize; 5] = [0, 0xff, 0xffff, 0xff_ffff, 0xffff_ffff];
/// Offset bytes after a tag, by its kind (a literal's length bytes are counted apart).
const EXTRA: [usize; 4] = [0, 1, 2, 4];
/// In [`ELEMENTS`]: a long literal or a 4-byte-offset copy.
const RARE: u32 = 1 << 16;

/// Per tag byte: the element's length (bits 0-7), a 1-byte-offset copy's high offset bits
/// (8-10), [`RARE`].
static ELEMENTS: [u32; 256] = elements();

const fn elements() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let tag = i as u32;
        t[i] = match i & 3 {
            0 if tag >> 2 < 60 => (tag >> 2) + 1,
            0 => RARE,
            1 => (((tag >> 2) & 7) + 4) | ((tag >> 5) << 8),
            2 => (tag >> 2) + 1,
            _ => ((tag >> 2) + 1) | RARE,
        };
        i += 1;
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::dispatch::{on_thread, Kernels};
    use rayquet_testkit::Rng;

    /// `snap`'s answer and ours, for `src` into an output of `want` bytes, with `slack` spare
    /// bytes after it for ours.
    fn both(src: &[u8], want: usize, slack: usize) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let mut a = vec![0u8; want];
        let theirs = snap::raw::Decoder::new()
            .decompress(src, &mut a)
            .ok()
            .map(|n| a[..n].to_vec());
        // Both copies of the dispatched decoder (the v3 one where the CPU has it) agree.
        let ours = |kernels| {
            let mut b = vec![0xAAu8; want + slack];
            on_thread(kernels, || decompress_into(src, &mut b, want))
                .ok()
                .map(|n| b[..n].to_vec())
        };
        let portable = ours(Kernels::Portable);
        assert_eq!(portable, ours(Kernels::V3), "the two copies differ");
        (theirs, portable)
    }

    /// Data of every shape snappy meets: runs, short and long repeats, near and far (over
    /// 64 KiB) back-references, incompressible stretches.
    fn data(rng: &mut Rng, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        while v.len() < len {
            match rng.below(6) {
                0 => v.extend((0..rng.between(1, 300)).map(|_| rng.next() as u8)),
                1 => v.extend(std::iter::repeat_n(
                    rng.next() as u8,
                    rng.between(1, 200) as usize,
                )),
                2 | 3 if !v.is_empty() => {
                    let back = rng.between(1, v.len().min(1 << 17) as u64) as usize;
                    for _ in 0..rng.between(4, 100) {
                        v.push(v[v.len() - back]);
                    }
                }
                _ => v.extend((0..rng.between(1, 40)).map(|_| b"abcdefgh"[rng.below(8) as usize])),
            }
        }
        v.truncate(len);
        v
    }

    #[test]
    fn valid_streams_decompress_as_snap_does() {
        let mut rng = Rng(7);
        let mut enc = snap::raw::Encoder::new();
        for case in 0..400 {
            let len = match case % 4 {
                0 => rng.below(100) as usize,
                1 => rng.below(5_000) as usize,
                _ => rng.below(300_000) as usize,
            };
            let raw = data(&mut rng, len);
            let z = enc.compress_vec(&raw).unwrap();
            for slack in [0, 7, 80, 200] {
                let mut out = vec![0u8; len + slack];
                assert_eq!(decompress_into(&z, &mut out, len), Ok(len), "case {case}");
                assert_eq!(out[..len], raw[..], "case {case}, slack {slack}");
            }
            // A page claiming more than the stream declares: still the declared bytes.
            assert_eq!(both(&z, len + 3, 64), (Some(raw.clone()), Some(raw)));
        }
    }

    #[test]
    fn malformed_streams_fail_as_snap_does() {
        let mut rng = Rng(11);
        let mut enc = snap::raw::Encoder::new();
        let (mut checked, mut rejected) = (0, 0);
        for case in 0..3_000 {
            let len = rng.below(if case % 2 == 0 { 300 } else { 20_000 }) as usize;
            let mut z = enc.compress_vec(&data(&mut rng, len)).unwrap();
            match rng.below(4) {
                // Flipped bits, anywhere (header included).
                0 | 1 => {
                    for _ in 0..rng.between(1, 4) {
                        let i = rng.below(z.len() as u64) as usize;
                        z[i] ^= 1 << rng.below(8);
                    }
                }
                // Truncated.
                2 => z.truncate(rng.below(z.len() as u64) as usize),
                // Random bytes after a plausible header.
                _ => {
                    let body = z.len();
                    z.truncate(1.min(body));
                    z.extend((0..body).map(|_| rng.next() as u8));
                }
            }
            for (want, slack) in [(len, 0), (len, 100), (len + 50, 30)] {
                let (theirs, ours) = both(&z, want, slack);
                assert_eq!(theirs, ours, "case {case}, want {want}, slack {slack}");
                checked += 1;
                rejected += usize::from(theirs.is_none());
            }
        }
        // The mutations reach both outcomes.
        assert!(
            rejected > checked / 4 && rejected < checked,
            "{rejected} of {checked}"
        );
    }

    #[test]
    fn every_tag_at_the_edges() {
        // Each tag byte followed by fixed bytes, after a prefix, at the start and near the end
        // of the input, into outputs of several sizes.
        for tag in 0..=255u8 {
            for prefix in [0usize, 3, 70] {
                let mut z = vec![];
                let mut n = prefix as u64 + 40;
                while n >= 0x80 {
                    z.push(n as u8 | 0x80);
                    n >>= 7;
                }
                z.push(n as u8);
                if prefix > 0 {
                    z.push(((prefix - 1) << 2) as u8);
                    z.extend((0..prefix).map(|i| i as u8));
                }
                z.push(tag);
                z.extend([2, 0, 0, 0, 1, 2, 3]);
                z.extend(std::iter::repeat_n(9u8, 90));
                for cut in [z.len(), z.len() - 90, z.len() - 85] {
                    for want in [prefix + 40, prefix + 200] {
                        let (theirs, ours) = both(&z[..cut], want, 0);
                        assert_eq!(theirs, ours, "tag {tag:#x}, prefix {prefix}, cut {cut}");
                    }
                }
            }
        }
    }

    #[test]
    fn errors_say_what_is_wrong() {
        let z = snap::raw::Encoder::new().compress_vec(&[1u8; 500]).unwrap();
        let mut out = vec![0u8; 600];
        let e = decompress_into(&z, &mut out, 100).unwrap_err();
        assert_eq!(
            e,
            SnappyError::TooLong {
                claimed: 100,
                got: 500
            }
        );
        assert!(e.to_string().contains("500"), "{e}");
        assert_eq!(decompress_into(&[], &mut out, 10), Err(SnappyError::Header));
        let e = decompress_into(&z[..z.len() - 1], &mut out, 600).unwrap_err();
        assert!(matches!(
            e,
            SnappyError::Short { .. } | SnappyError::Copy | SnappyError::Literal
        ));
    }
}

#[cfg(test)]
mod speed {
    //! A benchmark, not a test: `RAYQUET_SNAPPY_FILE=<snappy parquet files, ':'-separated>
    //! cargo test --release --lib snappy::speed -- --ignored --nocapture` times this decoder against `snap` on the file's
    //! pages (each page's decompressed bytes compressed again by `snap`'s encoder, which is
    //! what parquet's writer uses).
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use std::time::Instant;

    #[test]
    #[ignore = "a benchmark on files given in RAYQUET_SNAPPY_FILE: run by hand (BENCHMARKS.md)"]
    fn against_snap() {
        let paths = std::env::var("RAYQUET_SNAPPY_FILE")
            .expect("RAYQUET_SNAPPY_FILE: snappy parquet files, ':'-separated");
        let cols: Vec<usize> = std::env::var("RAYQUET_SNAPPY_COLUMNS")
            .map(|s| s.split(',').map(|c| c.parse().unwrap()).collect())
            .unwrap_or_default();
        let mut pages = Vec::new();
        for path in paths.split(':') {
            let reader = SerializedFileReader::new(std::fs::File::open(path).unwrap()).unwrap();
            for rg in 0..reader.num_row_groups() {
                let r = reader.get_row_group(rg).unwrap();
                for c in 0..r.num_columns() {
                    if !cols.is_empty() && !cols.contains(&c) {
                        continue;
                    }
                    let mut pr = r.get_column_page_reader(c).unwrap();
                    while let Some(p) = pr.get_next_page().unwrap() {
                        let raw = p.buffer().to_vec();
                        let z = snap::raw::Encoder::new().compress_vec(&raw).unwrap();
                        pages.push((z, raw.len()));
                    }
                }
            }
        }
        let total: usize = pages.iter().map(|p| p.1).sum();
        // RAYQUET_SNAPPY_COLD=1: every page into its own buffer (as in a scan, where the output
        // is not the one just written), else one buffer, hot.
        let cold = std::env::var_os("RAYQUET_SNAPPY_COLD").is_some();
        let mut outs: Vec<Vec<u8>> = if cold {
            pages.iter().map(|p| vec![0u8; p.1 + DST_SLOP]).collect()
        } else {
            vec![vec![
                0u8;
                pages.iter().map(|p| p.1).max().unwrap() + DST_SLOP
            ]]
        };
        let k = outs.len();
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        for _ in 0..15 {
            let t = Instant::now();
            for (i, (z, n)) in pages.iter().enumerate() {
                assert_eq!(decompress_into(z, &mut outs[i % k], *n).unwrap(), *n);
            }
            ours.push(t.elapsed().as_secs_f64());
            let t = Instant::now();
            for (i, (z, n)) in pages.iter().enumerate() {
                snap::raw::Decoder::new()
                    .decompress(z, &mut outs[i % k][..*n])
                    .unwrap();
            }
            theirs.push(t.elapsed().as_secs_f64());
        }
        ours.sort_by(f64::total_cmp);
        theirs.sort_by(f64::total_cmp);
        println!(
            "{} pages, {:.1} MB out: ours {:.2} ms, snap {:.2} ms (medians of 15)",
            pages.len(),
            total as f64 / 1e6,
            ours[7] * 1e3,
            theirs[7] * 1e3
        );
    }
}
