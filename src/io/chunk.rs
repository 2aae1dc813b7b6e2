//! `SparseChunk`: the fetched byte ranges of one file, read by the decoders (parquet's reader,
//! rayquet's own) as if they were the whole file.
//!
//! Invariants: pieces never overlap; a read inside one piece is a zero-copy `Bytes` slice; a
//! read spanning adjacent pieces (a large range fetched as several parallel requests) is copied
//! once; a read of bytes that were not fetched is an error, never a panic or a hidden request.

use std::io::Read;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parquet::errors::{ParquetError, Result};
use parquet::file::reader::{ChunkReader, Length};

/// Fetched pieces of a file of `len` bytes, keyed by offset.
#[derive(Debug, Clone, Default)]
pub(crate) struct SparseChunk {
    len: u64,
    /// Sorted by offset, non-overlapping.
    pieces: Arc<Vec<(u64, Bytes)>>,
}

impl SparseChunk {
    pub fn new(len: u64) -> Self {
        SparseChunk {
            len,
            pieces: Arc::new(Vec::new()),
        }
    }

    /// Add a piece; the caller guarantees it overlaps no piece already held.
    pub fn insert(&mut self, start: u64, bytes: Bytes) {
        let pieces = Arc::make_mut(&mut self.pieces);
        let at = pieces.partition_point(|(s, _)| *s < start);
        pieces.insert(at, (start, bytes));
    }

    /// Whether every byte of `r` is held.
    pub fn covers(&self, r: &std::ops::Range<u64>) -> bool {
        let mut at = r.start;
        while at < r.end {
            match self.find(at) {
                Some(i) => at = self.pieces[i].0 + self.pieces[i].1.len() as u64,
                None => return false,
            }
        }
        true
    }

    /// Add `other`'s pieces, keeping only the bytes this chunk does not hold yet (zero-copy
    /// slices), so pieces still never overlap.
    pub fn merge(&mut self, other: &SparseChunk) {
        for (start, bytes) in other.pieces.iter() {
            let end = start + bytes.len() as u64;
            let mut at = *start;
            while at < end {
                if let Some(i) = self.find(at) {
                    at = (self.pieces[i].0 + self.pieces[i].1.len() as u64).min(end);
                    continue;
                }
                // Bytes from `at` up to the next held piece (or `end`) are new.
                let next = self
                    .pieces
                    .iter()
                    .map(|(s, _)| *s)
                    .find(|s| *s > at)
                    .unwrap_or(end)
                    .min(end);
                let piece = bytes.slice((at - start) as usize..(next - start) as usize);
                self.insert(at, piece);
                at = next;
            }
        }
    }

    /// Total bytes held.
    pub fn bytes(&self) -> u64 {
        self.pieces.iter().map(|(_, b)| b.len() as u64).sum()
    }

    /// The held tail of `start..end`: the part `max(start, s)..end` when one piece starting at
    /// `s` holds the end of the range, as a zero-copy slice with its offset.
    pub fn tail_of(&self, start: u64, end: u64) -> Option<(u64, Bytes)> {
        if end <= start {
            return None;
        }
        let i = self.find(end - 1)?;
        let (s, b) = &self.pieces[i];
        let from = start.max(*s);
        Some((from, b.slice((from - s) as usize..(end - s) as usize)))
    }

    /// The held bytes from `start` on, at most `max_len` of them and only as far as the pieces
    /// are contiguous (zero-copy within one piece); `None` if `start` is not held.
    pub fn contiguous(&self, start: u64, max_len: u64) -> Option<Bytes> {
        let i = self.find(start)?;
        let (s, b) = &self.pieces[i];
        let rel = (start - s) as usize;
        let first = (b.len() - rel).min(usize::try_from(max_len).unwrap_or(usize::MAX));
        if first as u64 == max_len
            || self
                .pieces
                .get(i + 1)
                .is_none_or(|(ns, _)| *ns != s + b.len() as u64)
        {
            return Some(b.slice(rel..rel + first));
        }
        // Spans contiguous pieces: count what is held before copying.
        let mut held = first as u64;
        let mut next = s + b.len() as u64;
        for (ps, pb) in &self.pieces[i + 1..] {
            if *ps != next || held >= max_len {
                break;
            }
            held = (held + pb.len() as u64).min(max_len);
            next += pb.len() as u64;
        }
        self.get_bytes(start, held as usize).ok()
    }

    /// Index of the piece holding `offset`.
    fn find(&self, offset: u64) -> Option<usize> {
        let i = self.pieces.partition_point(|(s, _)| *s <= offset);
        if i == 0 {
            return None;
        }
        let (s, b) = &self.pieces[i - 1];
        (offset < s + b.len() as u64).then_some(i - 1)
    }

    fn missing(&self, start: u64, len: usize) -> ParquetError {
        ParquetError::General(format!(
            "byte range {start}..{} was not fetched (the file's metadata points outside its column chunks)",
            start.saturating_add(len as u64)
        ))
    }
}

impl Length for SparseChunk {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for SparseChunk {
    type T = SparseRead;

    fn get_read(&self, start: u64) -> Result<SparseRead> {
        let idx = self.find(start).ok_or_else(|| self.missing(start, 1))?;
        let (s, b) = &self.pieces[idx];
        Ok(SparseRead {
            chunk: self.clone(),
            idx,
            current: b.slice((start - s) as usize..),
        })
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes> {
        if length == 0 {
            return Ok(Bytes::new());
        }
        let idx = self
            .find(start)
            .ok_or_else(|| self.missing(start, length))?;
        let (s, b) = &self.pieces[idx];
        let rel = (start - s) as usize;
        // `length` may come from a corrupt header: no overflow.
        if length <= b.len() - rel {
            return Ok(b.slice(rel..rel + length));
        }
        // Spans pieces: they must be contiguous, which is checked before anything is allocated
        // (`length` may come from a corrupt header).
        if !self.covers(&(start..start.saturating_add(length as u64))) {
            return Err(self.missing(start, length));
        }
        let mut out = BytesMut::with_capacity(length);
        out.extend_from_slice(&b[rel..]);
        let mut next = s + b.len() as u64;
        for (ps, pb) in &self.pieces[idx + 1..] {
            if out.len() == length {
                break;
            }
            if *ps != next {
                return Err(self.missing(next, length - out.len()));
            }
            let take = (length - out.len()).min(pb.len());
            out.extend_from_slice(&pb[..take]);
            next += pb.len() as u64;
        }
        if out.len() < length {
            return Err(self.missing(next, length - out.len()));
        }
        Ok(out.freeze())
    }
}

/// A `Read` over a `SparseChunk` from an offset, continuing into contiguous pieces.
pub(crate) struct SparseRead {
    chunk: SparseChunk,
    idx: usize,
    current: Bytes,
}

impl Read for SparseRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.current.is_empty() {
            let (s, b) = &self.chunk.pieces[self.idx];
            let end = s + b.len() as u64;
            match self.chunk.pieces.get(self.idx + 1) {
                Some((ns, nb)) if *ns == end => {
                    self.idx += 1;
                    self.current = nb.clone();
                }
                _ => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len());
        buf[..n].copy_from_slice(&self.current[..n]);
        bytes::Buf::advance(&mut self.current, n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk() -> SparseChunk {
        let mut c = SparseChunk::new(100);
        c.insert(20, Bytes::from((20u8..30).collect::<Vec<_>>()));
        c.insert(10, Bytes::from((10u8..20).collect::<Vec<_>>()));
        c.insert(50, Bytes::from((50u8..60).collect::<Vec<_>>()));
        c
    }

    #[test]
    fn reads_within_and_across_pieces() {
        let c = chunk();
        assert_eq!(&c.get_bytes(12, 3).unwrap()[..], &[12, 13, 14]);
        assert_eq!(
            &c.get_bytes(18, 5).unwrap()[..],
            &[18, 19, 20, 21, 22],
            "contiguous pieces join"
        );
        assert!(c.get_bytes(28, 5).is_err(), "gap 30..50 is not fetched");
        assert!(c.get_bytes(0, 1).is_err());
        let mut r = c.get_read(15).unwrap();
        let mut v = Vec::new();
        r.read_to_end(&mut v).unwrap();
        assert_eq!(v, (15u8..30).collect::<Vec<_>>());
        let (at, tail) = c.tail_of(40, 55).unwrap();
        assert_eq!((at, &tail[..]), (50, &[50u8, 51, 52, 53, 54][..]));
        assert_eq!(c.tail_of(52, 54).unwrap().0, 52);
        assert!(c.tail_of(30, 45).is_none());
        assert_eq!(c.bytes(), 30);
    }

    #[test]
    fn merge_keeps_pieces_disjoint() {
        let mut c = chunk();
        let mut other = SparseChunk::new(100);
        other.insert(5, Bytes::from((5u8..55).collect::<Vec<_>>()));
        c.merge(&other);
        assert_eq!(c.bytes(), 55, "the union 5..60, each byte once");
        assert!(c.covers(&(5..60)));
        assert!(!c.covers(&(4..6)));
        assert_eq!(
            &c.get_bytes(5, 55).unwrap()[..],
            &(5u8..60).collect::<Vec<_>>()[..]
        );
    }
}
