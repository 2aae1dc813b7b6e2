//! Files crafted from valid ones: a Thrift compact-protocol tokenizer that finds every integer
//! and length of a footer or page header ([`thrift`]), and splices to set one
//! ([`set_footer_field`], [`set_page_field`], [`splice`]): the counts, sizes and lengths a
//! hostile writer would lie about, in files parquet's writer made. Shared by the seeded fuzz
//! test (`tests/fuzz.rs`) and the crafted-file suite (`crates/cli/tests/hostile.rs`).

use bytes::Bytes;

/// Offsets of the page headers of every column chunk of `bytes` (empty when parquet cannot
/// parse its metadata or a chunk's pages do not chain).
pub fn page_offsets(bytes: &[u8]) -> Vec<u64> {
    let Ok(md) = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&Bytes::copy_from_slice(bytes))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for rg in md.row_groups() {
        for c in rg.columns() {
            let (start, len) = c.byte_range();
            let end = (start + len).min(bytes.len() as u64);
            let mut at = start;
            while at < end && out.len() < 4096 {
                let Some(toks) = thrift::tokens(&bytes[at as usize..end as usize]) else {
                    break;
                };
                let compressed = toks
                    .tokens
                    .iter()
                    .find(|t| t.path == [3])
                    .map_or(-1, |t| t.value);
                if compressed < 0 {
                    break;
                }
                out.push(at);
                at += toks.len as u64 + compressed as u64;
            }
        }
    }
    out
}

pub mod thrift {
    /// What a token is.
    #[derive(Debug, Clone, Copy, PartialEq)]
    pub enum Kind {
        /// A zigzag varint (i16/i32/i64).
        Int,
        /// A list or set header (element type in `elem`).
        List,
        /// A binary's length varint.
        BinLen,
    }

    /// One integer or length in a thrift struct.
    #[derive(Debug, Clone)]
    pub struct Token {
        pub start: usize,
        pub end: usize,
        pub kind: Kind,
        /// Field ids from the outer struct in.
        pub path: Vec<i16>,
        pub value: i64,
        pub elem: u8,
    }

    pub struct Tokens {
        pub tokens: Vec<Token>,
        /// Length of the struct.
        pub len: usize,
    }

    struct P<'a> {
        b: &'a [u8],
        pos: usize,
        out: Vec<Token>,
    }

    impl P<'_> {
        fn byte(&mut self) -> Option<u8> {
            let v = *self.b.get(self.pos)?;
            self.pos += 1;
            Some(v)
        }
        fn varint(&mut self) -> Option<u64> {
            let mut v = 0u64;
            for s in 0..10 {
                let b = self.byte()?;
                v |= u64::from(b & 0x7f) << (7 * s);
                if b & 0x80 == 0 {
                    return Some(v);
                }
            }
            None
        }
        fn value(&mut self, t: u8, path: &mut Vec<i16>, depth: usize) -> Option<()> {
            if depth > 40 {
                return None;
            }
            match t {
                1 | 2 => {}
                3 => {
                    self.byte()?;
                }
                4..=6 => {
                    let start = self.pos;
                    let v = self.varint()?;
                    let value = (v >> 1) as i64 ^ -((v & 1) as i64);
                    self.out.push(Token {
                        start,
                        end: self.pos,
                        kind: Kind::Int,
                        path: path.clone(),
                        value,
                        elem: t,
                    });
                }
                7 => self.pos = self.pos.checked_add(8).filter(|&p| p <= self.b.len())?,
                8 => {
                    let start = self.pos;
                    let n = self.varint()?;
                    self.out.push(Token {
                        start,
                        end: self.pos,
                        kind: Kind::BinLen,
                        path: path.clone(),
                        value: n as i64,
                        elem: 8,
                    });
                    self.pos = self
                        .pos
                        .checked_add(usize::try_from(n).ok()?)
                        .filter(|&p| p <= self.b.len())?;
                }
                9 | 10 => {
                    let start = self.pos;
                    let h = self.byte()?;
                    let n = if h >> 4 == 15 {
                        self.varint()?
                    } else {
                        u64::from(h >> 4)
                    };
                    if n > self.b.len() as u64 {
                        return None;
                    }
                    self.out.push(Token {
                        start,
                        end: self.pos,
                        kind: Kind::List,
                        path: path.clone(),
                        value: n as i64,
                        elem: h & 0x0f,
                    });
                    for _ in 0..n {
                        match h & 0x0f {
                            1 | 2 => {
                                self.byte()?;
                            }
                            e => self.value(e, path, depth + 1)?,
                        }
                    }
                }
                11 => {
                    let n = self.varint()?;
                    if n > 0 {
                        if n > self.b.len() as u64 {
                            return None;
                        }
                        let kv = self.byte()?;
                        for _ in 0..n {
                            self.value(kv >> 4, path, depth + 1)?;
                            self.value(kv & 0x0f, path, depth + 1)?;
                        }
                    }
                }
                12 => self.structure(path, depth + 1)?,
                _ => return None,
            }
            Some(())
        }
        fn structure(&mut self, path: &mut Vec<i16>, depth: usize) -> Option<()> {
            let mut last: i16 = 0;
            loop {
                let h = self.byte()?;
                let t = h & 0x0f;
                if t == 0 {
                    return Some(());
                }
                let id = if h >> 4 == 0 {
                    let v = self.varint()?;
                    ((v >> 1) as i64 ^ -((v & 1) as i64)) as i16
                } else {
                    last.wrapping_add((h >> 4) as i16)
                };
                last = id;
                path.push(id);
                let r = self.value(t, path, depth);
                path.pop();
                r?;
            }
        }
    }

    /// The tokens of the thrift struct at the start of `b`, or `None` if it does not parse.
    pub fn tokens(b: &[u8]) -> Option<Tokens> {
        let mut p = P {
            b,
            pos: 0,
            out: Vec::new(),
        };
        p.structure(&mut Vec::new(), 0)?;
        Some(Tokens {
            tokens: p.out,
            len: p.pos,
        })
    }

    pub fn varint(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(b);
                return out;
            }
            out.push(b | 0x80);
        }
    }

    /// The bytes that encode `token` with `value` instead.
    pub fn encode(token: &Token, value: i64) -> Vec<u8> {
        match token.kind {
            Kind::Int => varint(((value << 1) ^ (value >> 63)) as u64),
            Kind::BinLen => varint(value as u64),
            Kind::List => {
                if (0..15).contains(&value) {
                    vec![((value as u8) << 4) | token.elem]
                } else {
                    let mut v = vec![0xf0 | token.elem];
                    v.extend(varint(value as u64));
                    v
                }
            }
        }
    }
}

/// The footer's metadata range in `b`, if its tail is intact.
pub fn metadata_range(b: &[u8]) -> Option<std::ops::Range<usize>> {
    if b.len() < 12 || &b[b.len() - 4..] != b"PAR1" {
        return None;
    }
    let len = u32::from_le_bytes(b[b.len() - 8..b.len() - 4].try_into().unwrap()) as usize;
    let start = b.len().checked_sub(8 + len)?;
    Some(start..b.len() - 8)
}

/// Replace `token` (offsets relative to `base`) in `b` by `value`; when the token lies in the
/// footer metadata (`in_footer`), the footer length is fixed up.
pub fn splice(b: &mut Vec<u8>, base: usize, token: &thrift::Token, value: i64, in_footer: bool) {
    let enc = thrift::encode(token, value);
    let (s, e) = (base + token.start, base + token.end);
    b.splice(s..e, enc.iter().copied());
    if in_footer {
        let n = b.len();
        let old = u32::from_le_bytes(b[n - 8..n - 4].try_into().unwrap()) as i64;
        let new = old + enc.len() as i64 - (token.end - token.start) as i64;
        b[n - 8..n - 4].copy_from_slice(&(new as u32).to_le_bytes());
    }
}

/// Set every integer of the footer at thrift path `path` (field ids from `FileMetaData` in,
/// e.g. `[4, 3]` for each row group's `num_rows`) to `value`; how many were set.
pub fn set_footer_field(b: &mut Vec<u8>, path: &[i16], value: i64) -> usize {
    let mut set = 0;
    // Set from the last token back, so earlier offsets stay valid.
    loop {
        let m = metadata_range(b).expect("an intact footer");
        let toks = thrift::tokens(&b[m.clone()]).expect("a footer that parses");
        let Some(t) = toks
            .tokens
            .iter()
            .rfind(|t| t.path == path && t.kind == thrift::Kind::Int && t.value != value)
            .cloned()
        else {
            return set;
        };
        splice(b, m.start, &t, value, true);
        set += 1;
    }
}

/// Set the integer at thrift path `path` of the page header at offset `at` (e.g. `[5, 1]`: a v1
/// data page's `num_values`) to `value`. Panics when the header has no such field.
pub fn set_page_field(b: &mut Vec<u8>, at: usize, path: &[i16], value: i64) {
    let toks = thrift::tokens(&b[at..]).expect("a page header");
    let t = toks
        .tokens
        .iter()
        .find(|t| t.path == path && t.kind == thrift::Kind::Int)
        .unwrap_or_else(|| panic!("no field {path:?} in the page header at {at}"))
        .clone();
    splice(b, at, &t, value, false);
}

/// The value of the integer at `path` of the page header at `at`, if it has one.
pub fn page_field(b: &[u8], at: usize, path: &[i16]) -> Option<i64> {
    let toks = thrift::tokens(&b[at..])?;
    toks.tokens
        .iter()
        .find(|t| t.path == path && t.kind == thrift::Kind::Int)
        .map(|t| t.value)
}

/// Footer paths (field ids from `FileMetaData` in) of the integers that are byte offsets in
/// the file: a column chunk's `file_offset`, its metadata's data, index, dictionary and bloom
/// filter page offsets, its offset and column index offsets, a row group's `file_offset`.
const OFFSETS: &[&[i16]] = &[
    &[4, 1, 2],
    &[4, 1, 3, 9],
    &[4, 1, 3, 10],
    &[4, 1, 3, 11],
    &[4, 1, 3, 14],
    &[4, 1, 4],
    &[4, 1, 6],
    &[4, 5],
];

/// The header of the page at `at` (its bytes) and the page's stored data.
pub fn page_at(b: &[u8], at: usize) -> (Vec<u8>, Vec<u8>) {
    let toks = thrift::tokens(&b[at..]).expect("a page header");
    let compressed = toks
        .tokens
        .iter()
        .find(|t| t.path == [3])
        .expect("compressed_page_size")
        .value as usize;
    let data = at + toks.len;
    (b[at..data].to_vec(), b[data..data + compressed].to_vec())
}

/// `header` (a page header's bytes) with its integer at `path` set to `value`.
pub fn header_with(mut header: Vec<u8>, path: &[i16], value: i64) -> Vec<u8> {
    set_page_field(&mut header, 0, path, value);
    header
}

/// `header` with a `crc` field (4) holding `crc`, inserted after its `compressed_page_size`
/// (field 3; the next field's id delta shortened by one). The header must have none.
pub fn header_with_crc(header: Vec<u8>, crc: u32) -> Vec<u8> {
    let toks = thrift::tokens(&header).expect("a page header");
    assert!(toks.tokens.iter().all(|t| t.path != [4]), "a crc already");
    let end = toks
        .tokens
        .iter()
        .find(|t| t.path == [3])
        .expect("compressed_page_size")
        .end;
    let mut out = header[..end].to_vec();
    out.push(0x15); // field delta 1, i32
    let v = crc as i32 as i64;
    out.extend(thrift::varint(((v << 1) ^ (v >> 63)) as u64));
    let next = header[end];
    assert!(
        next >> 4 >= 2,
        "the field after 3 is field 5 or later, short form"
    );
    out.push(next - 0x10);
    out.extend_from_slice(&header[end + 1..]);
    out
}

/// Replace the page at `at` (header and stored data) by `header` and `data`, and keep the file
/// consistent: the page's column chunk sizes and its row group's byte counts grow by the
/// change, and every offset in the footer past the page moves by it. The header's own sizes
/// are the caller's to set. (A page index written after the data would need its page
/// locations moved too: write test files without one.)
pub fn rewrite_page(b: &mut Vec<u8>, at: usize, header: &[u8], data: &[u8]) {
    let md = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&Bytes::copy_from_slice(b))
        .expect("a footer parquet reads");
    // The chunk (by its order in the footer) and row group holding the page.
    let mut k = 0;
    let mut found = None;
    for (rg, g) in md.row_groups().iter().enumerate() {
        for c in g.columns() {
            let (start, len) = c.byte_range();
            if (start..start + len).contains(&(at as u64)) {
                found = Some((k, rg));
            }
            k += 1;
        }
    }
    let (chunk, rg) = found.expect("a page inside a column chunk");
    let (old_header, old_data) = page_at(b, at);
    let old = old_header.len() + old_data.len();
    let mut page = header.to_vec();
    page.extend_from_slice(data);
    let delta = page.len() as i64 - old as i64;
    b.splice(at..at + old, page);
    // Footer fields, set from the last token back so that earlier offsets stay valid.
    let m = metadata_range(b).expect("an intact footer");
    let toks = thrift::tokens(&b[m.clone()])
        .expect("a footer that parses")
        .tokens;
    let mut nth: std::collections::HashMap<Vec<i16>, usize> = Default::default();
    let mut edits = Vec::new();
    for t in &toks {
        let n = nth.entry(t.path.clone()).or_default();
        let i = *n;
        *n += 1;
        if t.kind != thrift::Kind::Int {
            continue;
        }
        let sized = match t.path.as_slice() {
            [4, 1, 3, 6] | [4, 1, 3, 7] => i == chunk,
            [4, 2] | [4, 6] => i == rg,
            _ => false,
        };
        let moved = OFFSETS.contains(&t.path.as_slice()) && t.value > at as i64;
        if sized || moved {
            edits.push((t.clone(), t.value + delta));
        }
    }
    for (t, v) in edits.into_iter().rev() {
        splice(b, m.start, &t, v, true);
    }
}
