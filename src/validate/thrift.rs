//! A minimal Thrift compact-protocol walker: it checks the counts and lengths a file's
//! metadata claims ([`file_metadata`], [`thrift_struct`]) and reads a page header's sizes
//! ([`page_header`]) before parquet allocates from them.
//!
//! Invariant: it reads only the bytes given and allocates nothing proportional to a claimed
//! size; every list, map and binary must fit in the bytes that remain, structs nest at most
//! [`MAX_THRIFT_DEPTH`] deep, the schema at most [`MAX_SCHEMA_DEPTH`].
//!
//! Typed: parquet's decoders read a field by its id, whatever type its header declares (a
//! field parquet reads as a list, sent as an integer, makes it read a list header, and
//! allocate for its count, from bytes this walker skipped as the integer's). So every field
//! parquet reads, in every struct it decodes ([`FILE_METADATA`], [`PAGE_HEADER`],
//! [`COLUMN_INDEX`], [`OFFSET_INDEX`] and what they hold), must carry the type parquet reads
//! it as (list elements too); only then do the two walks stay in step, and a count this walker
//! checked is the count parquet allocates for. Unknown fields are skipped, as parquet skips
//! them. (Found by the `direct` fuzz target: a column index field sent as another type made
//! parquet allocate 1.3 GB.)

/// Deepest nesting of Thrift structs, lists and maps accepted in metadata (parquet's own
/// metadata nests about 6 deep).
pub(crate) const MAX_THRIFT_DEPTH: usize = 32;
/// Deepest schema accepted (groups inside groups): deeper schemas could overflow the stack of
/// the recursive schema conversions in parquet and arrow.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 64;
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

/// The type parquet reads a field (or a list element) as.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Ty {
    Bool,
    /// An `i8` (one byte).
    Byte,
    /// An `i16`, `i32` (enums too) or `i64`: a varint.
    Int,
    Double,
    /// Binary or string.
    Binary,
    /// A struct or a union: its fields by id.
    Struct(&'static [(i16, Ty)]),
    List(&'static Ty),
}

const STATISTICS: &[(i16, Ty)] = &[
    (1, Ty::Binary),
    (2, Ty::Binary),
    (3, Ty::Int),
    (4, Ty::Int),
    (5, Ty::Binary),
    (6, Ty::Binary),
    (7, Ty::Bool),
    (8, Ty::Bool),
];
const EMPTY: &[(i16, Ty)] = &[];
const TIME_UNIT: &[(i16, Ty)] = &[
    (1, Ty::Struct(EMPTY)),
    (2, Ty::Struct(EMPTY)),
    (3, Ty::Struct(EMPTY)),
];
const LOGICAL_TYPE: &[(i16, Ty)] = &[
    (1, Ty::Struct(EMPTY)),
    (2, Ty::Struct(EMPTY)),
    (3, Ty::Struct(EMPTY)),
    (4, Ty::Struct(EMPTY)),
    (5, Ty::Struct(&[(1, Ty::Int), (2, Ty::Int)])),
    (6, Ty::Struct(EMPTY)),
    (7, Ty::Struct(&[(1, Ty::Bool), (2, Ty::Struct(TIME_UNIT))])),
    (8, Ty::Struct(&[(1, Ty::Bool), (2, Ty::Struct(TIME_UNIT))])),
    (10, Ty::Struct(&[(1, Ty::Byte), (2, Ty::Bool)])),
    (11, Ty::Struct(EMPTY)),
    (12, Ty::Struct(EMPTY)),
    (13, Ty::Struct(EMPTY)),
    (14, Ty::Struct(EMPTY)),
    (15, Ty::Struct(EMPTY)),
    (16, Ty::Struct(&[(1, Ty::Byte)])),
    (17, Ty::Struct(&[(1, Ty::Binary)])),
    (18, Ty::Struct(&[(1, Ty::Binary), (2, Ty::Int)])),
];
const SCHEMA_ELEMENT: &[(i16, Ty)] = &[
    (1, Ty::Int),
    (2, Ty::Int),
    (3, Ty::Int),
    (4, Ty::Binary),
    (5, Ty::Int),
    (6, Ty::Int),
    (7, Ty::Int),
    (8, Ty::Int),
    (9, Ty::Int),
    (10, Ty::Struct(LOGICAL_TYPE)),
];
const KEY_VALUE: &[(i16, Ty)] = &[(1, Ty::Binary), (2, Ty::Binary)];
const COLUMN_META_DATA: &[(i16, Ty)] = &[
    (1, Ty::Int),
    (2, Ty::List(&Ty::Int)),
    (3, Ty::List(&Ty::Binary)),
    (4, Ty::Int),
    (5, Ty::Int),
    (6, Ty::Int),
    (7, Ty::Int),
    (8, Ty::List(&Ty::Struct(KEY_VALUE))),
    (9, Ty::Int),
    (10, Ty::Int),
    (11, Ty::Int),
    (12, Ty::Struct(STATISTICS)),
    (
        13,
        Ty::List(&Ty::Struct(&[(1, Ty::Int), (2, Ty::Int), (3, Ty::Int)])),
    ),
    (14, Ty::Int),
    (15, Ty::Int),
    (
        16,
        Ty::Struct(&[
            (1, Ty::Int),
            (2, Ty::List(&Ty::Int)),
            (3, Ty::List(&Ty::Int)),
        ]),
    ),
    (
        17,
        Ty::Struct(&[
            (
                1,
                Ty::Struct(&[
                    (1, Ty::Double),
                    (2, Ty::Double),
                    (3, Ty::Double),
                    (4, Ty::Double),
                    (5, Ty::Double),
                    (6, Ty::Double),
                    (7, Ty::Double),
                    (8, Ty::Double),
                ]),
            ),
            (2, Ty::List(&Ty::Int)),
        ]),
    ),
];
const COLUMN_CRYPTO: &[(i16, Ty)] = &[
    (1, Ty::Struct(EMPTY)),
    (
        2,
        Ty::Struct(&[(1, Ty::List(&Ty::Binary)), (2, Ty::Binary)]),
    ),
];
const COLUMN_CHUNK: &[(i16, Ty)] = &[
    (1, Ty::Binary),
    (2, Ty::Int),
    (3, Ty::Struct(COLUMN_META_DATA)),
    (4, Ty::Int),
    (5, Ty::Int),
    (6, Ty::Int),
    (7, Ty::Int),
    (8, Ty::Struct(COLUMN_CRYPTO)),
    (9, Ty::Binary),
];
const ROW_GROUP: &[(i16, Ty)] = &[
    (1, Ty::List(&Ty::Struct(COLUMN_CHUNK))),
    (2, Ty::Int),
    (3, Ty::Int),
    (
        4,
        Ty::List(&Ty::Struct(&[(1, Ty::Int), (2, Ty::Bool), (3, Ty::Bool)])),
    ),
    (5, Ty::Int),
    (6, Ty::Int),
    (7, Ty::Int),
];
const AES: &[(i16, Ty)] = &[(1, Ty::Binary), (2, Ty::Binary), (3, Ty::Bool)];
/// `FileMetaData`, the footer.
pub(crate) const FILE_METADATA: &[(i16, Ty)] = &[
    (1, Ty::Int),
    (2, Ty::List(&Ty::Struct(SCHEMA_ELEMENT))),
    (3, Ty::Int),
    (4, Ty::List(&Ty::Struct(ROW_GROUP))),
    (5, Ty::List(&Ty::Struct(KEY_VALUE))),
    (6, Ty::Binary),
    (7, Ty::List(&Ty::Struct(&[(1, Ty::Struct(EMPTY))]))),
    (8, Ty::Struct(&[(1, Ty::Struct(AES)), (2, Ty::Struct(AES))])),
    (9, Ty::Binary),
];
/// `PageHeader`.
pub(crate) const PAGE_HEADER: &[(i16, Ty)] = &[
    (1, Ty::Int),
    (2, Ty::Int),
    (3, Ty::Int),
    (4, Ty::Int),
    (
        5,
        Ty::Struct(&[
            (1, Ty::Int),
            (2, Ty::Int),
            (3, Ty::Int),
            (4, Ty::Int),
            (5, Ty::Struct(STATISTICS)),
        ]),
    ),
    (6, Ty::Struct(EMPTY)),
    (7, Ty::Struct(&[(1, Ty::Int), (2, Ty::Int), (3, Ty::Bool)])),
    (
        8,
        Ty::Struct(&[
            (1, Ty::Int),
            (2, Ty::Int),
            (3, Ty::Int),
            (4, Ty::Int),
            (5, Ty::Int),
            (6, Ty::Int),
            (7, Ty::Bool),
            (8, Ty::Struct(STATISTICS)),
        ]),
    ),
];
/// `ColumnIndex` (page index).
pub(crate) const COLUMN_INDEX: &[(i16, Ty)] = &[
    (1, Ty::List(&Ty::Bool)),
    (2, Ty::List(&Ty::Binary)),
    (3, Ty::List(&Ty::Binary)),
    (4, Ty::Int),
    (5, Ty::List(&Ty::Int)),
    (6, Ty::List(&Ty::Int)),
    (7, Ty::List(&Ty::Int)),
];
/// `OffsetIndex` (page index).
pub(crate) const OFFSET_INDEX: &[(i16, Ty)] = &[
    (
        1,
        Ty::List(&Ty::Struct(&[(1, Ty::Int), (2, Ty::Int), (3, Ty::Int)])),
    ),
    (2, Ty::List(&Ty::Int)),
];

/// A cursor over Thrift compact-protocol bytes.
struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

pub(crate) type R<T> = std::result::Result<T, String>;

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

    /// An i32 field as parquet reads it: the varint of any integer wire type (i16, i32, i64,
    /// which `typed_struct` lets through), truncated to 32 bits.
    fn parquet_i32(&mut self) -> R<i64> {
        Ok(i64::from(self.zigzag()? as i32))
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
                if n > 0 && matches!(et, ty::TRUE | ty::FALSE) {
                    // parquet 58's `skip` takes a list's booleans for zero bytes each (they are
                    // one): it would walk on out of step with this walker, where a claimed
                    // list of 2^31 elements costs it no bytes and seconds per list (found by
                    // the `validate` fuzz target: 12 s on a 137-byte footer).
                    return Err(format!(
                        "thrift list of {n} booleans in a field parquet skips, at byte {}",
                        self.pos
                    ));
                }
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

    /// Walk a struct whose fields parquet reads as `fields` says.
    fn typed_struct(&mut self, fields: &'static [(i16, Ty)], depth: usize) -> R<()> {
        let mut last = 0;
        while let Some((id, t)) = self.field(&mut last)? {
            match fields.iter().find(|(f, _)| *f == id) {
                Some((_, want)) => self.typed(*want, t, false, depth)?,
                None => self.skip(t, depth)?,
            }
        }
        Ok(())
    }

    /// Walk a value sent as wire type `t` that parquet reads as `want` (`element`: inside a
    /// list, where booleans take a byte).
    fn typed(&mut self, want: Ty, t: u8, element: bool, depth: usize) -> R<()> {
        match (want, t) {
            (Ty::Bool, ty::TRUE | ty::FALSE) if element => self.byte().map(drop),
            (Ty::Bool, ty::TRUE | ty::FALSE) => Ok(()),
            (Ty::Byte, ty::BYTE) => self.byte().map(drop),
            (Ty::Int, ty::I16 | ty::I32 | ty::I64) => self.varint().map(drop),
            (Ty::Double, ty::DOUBLE) => self.skip_bytes(8),
            (Ty::Binary, ty::BINARY) => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            (Ty::Struct(fields), ty::STRUCT) => self.typed_struct(fields, deeper(depth)?),
            (Ty::List(elem), ty::LIST | ty::SET) => {
                let depth = deeper(depth)?;
                let (et, n) = self.list()?;
                for _ in 0..n {
                    self.typed(*elem, et, true, depth)?;
                }
                Ok(())
            }
            (want, t) => Err(format!(
                "thrift value of type {t} at byte {} where parquet reads {want:?}",
                self.pos
            )),
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
/// its length in bytes. Untyped: [`typed_struct`] is what scans check; this one is the
/// reference the fuzz target and tests compare it with.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn thrift_struct(bytes: &[u8]) -> R<usize> {
    let mut r = Reader::new(bytes);
    r.skip_struct(1)?;
    Ok(r.pos)
}

/// Check that `bytes` start with one struct whose fields have the types parquet reads them as
/// (`fields`: [`FILE_METADATA`], [`PAGE_HEADER`], [`COLUMN_INDEX`], [`OFFSET_INDEX`]) and
/// whose lengths all fit; returns its length in bytes.
pub(crate) fn typed_struct(bytes: &[u8], fields: &'static [(i16, Ty)]) -> R<usize> {
    let mut r = Reader::new(bytes);
    r.typed_struct(fields, 1)?;
    Ok(r.pos)
}

/// Check a file's Thrift-encoded `FileMetaData` (see the module docs).
pub(crate) fn file_metadata(bytes: &[u8]) -> R<()> {
    typed_struct(bytes, FILE_METADATA)?;
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
                    // parquet reads an i32 field's varint whatever its wire type says (i16,
                    // i32 or i64, as typed_struct lets through), truncating it to 32 bits:
                    // the count it will allocate for is that one.
                    if id == 5 && matches!(t, ty::I16 | ty::I32 | ty::I64) {
                        num_children = Some(r.parquet_i32()?);
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
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PageHead {
    /// Length of the header itself.
    pub len: usize,
    /// Page type (0 data, 1 index, 2 dictionary, 3 data v2).
    pub kind: i64,
    pub uncompressed: i64,
    pub compressed: i64,
    /// The CRC-32 of the page's bytes as stored (after compression), when the writer gave one.
    pub crc: Option<u32>,
    /// A dictionary page's number of values.
    pub dict_values: Option<i64>,
    /// A data page's (v1 or v2) number of values, nulls included.
    pub values: Option<i64>,
    /// A v2 data page's number of rows and of nulls.
    pub rows: Option<i64>,
    pub nulls: Option<i64>,
    /// A data page's (v1 or v2) encoding of values.
    pub encoding: Option<i64>,
}

/// Parse the sizes and counts out of a Thrift `PageHeader` at the start of `bytes`, checking
/// every length in it (statistics included) against the bytes given, and every field's type.
pub(crate) fn page_header(bytes: &[u8]) -> R<PageHead> {
    typed_struct(bytes, PAGE_HEADER)?;
    let mut r = Reader::new(bytes);
    let mut last = 0;
    let (mut kind, mut uncompressed, mut compressed) = (None, None, None);
    let mut head = PageHead::default();
    // The i32 fields `want` of the struct that follows, by position in `want`.
    fn inner<const N: usize>(r: &mut Reader<'_>, want: [i16; N]) -> R<[Option<i64>; N]> {
        let (mut last, mut got) = (0, [None; N]);
        while let Some((id, t)) = r.field(&mut last)? {
            match want.iter().position(|&w| w == id) {
                Some(i) if matches!(t, ty::I16 | ty::I32 | ty::I64) => {
                    got[i] = Some(r.parquet_i32()?)
                }
                _ => r.skip(t, 2)?,
            }
        }
        Ok(got)
    }
    while let Some((id, t)) = r.field(&mut last)? {
        match (id, t) {
            // Read as parquet reads them: any integer wire type, truncated to 32 bits.
            (1..=4, ty::I16 | ty::I32 | ty::I64) => {
                let v = r.parquet_i32()?;
                match id {
                    1 => kind = Some(v),
                    2 => uncompressed = Some(v),
                    3 => compressed = Some(v),
                    // The checksum's bits.
                    _ => head.crc = Some(v as i32 as u32),
                }
            }
            // DataPageHeader: num_values, encoding.
            (5, ty::STRUCT) => [head.values, head.encoding] = inner(&mut r, [1, 2])?,
            // DictionaryPageHeader: num_values.
            (7, ty::STRUCT) => [head.dict_values] = inner(&mut r, [1])?,
            // DataPageHeaderV2: num_values, num_nulls, num_rows, encoding.
            (8, ty::STRUCT) => {
                [head.values, head.nulls, head.rows, head.encoding] = inner(&mut r, [1, 2, 3, 4])?
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
            ..head
        }),
        _ => Err("page header lacks its type or sizes".into()),
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
    fn fields_must_have_the_type_parquet_reads() {
        // A ColumnIndex whose field 1 (null_pages, a list parquet reads whatever the header
        // says) is sent as an i32 varint, whose bytes read as a list header claim 2^28
        // elements: the untyped walk accepts it, the typed walk refuses it.
        let bytes = [0x15, 0xff, 0x80, 0x80, 0x80, 0x01, 0x00];
        assert!(thrift_struct(&bytes).is_ok());
        let e = typed_struct(&bytes, COLUMN_INDEX).unwrap_err();
        assert!(e.contains("where parquet reads"), "{e}");
        // A list of i64 sent as a list of binaries.
        let bytes = [0x59, 0x18, 0x01, 0x41, 0x00];
        assert!(thrift_struct(&bytes).is_ok());
        assert!(typed_struct(&bytes, COLUMN_INDEX).is_err());
        // Well-typed: null_pages [true], min_values [""], max_values [""], boundary_order 0.
        let bytes = [
            0x19, 0x11, 0x01, 0x19, 0x18, 0x00, 0x19, 0x18, 0x00, 0x15, 0x00, 0x00,
        ];
        assert_eq!(typed_struct(&bytes, COLUMN_INDEX), Ok(bytes.len()));
    }

    #[test]
    fn num_children_read_as_parquet_reads_it() {
        // A footer (found by the `validate` fuzz target) whose schema element sends
        // num_children as an i64 varint: parquet reads it as an i32 (truncated, 0x48000000)
        // and reserves that many children. The check must read it the same way and refuse.
        let footer = [
            0x15, 0x02, 0x19, 0x4c, 0x48, 0x09, 0x6d, 0x79, 0x5f, 0x72, 0x65, 0x63, 0x6f, 0x72,
            0x64, 0x15, 0x02, 0x00, 0x35, 0x00, 0x18, 0x01, 0x61, 0x15, 0x02, 0x15, 0x06, 0x4c,
            0x3c, 0x00, 0x00, 0x00, 0x35, 0x04, 0x18, 0x05, 0x61, 0x72, 0x72, 0x61, 0x79, 0x15,
            0x02, 0x15, 0x06, 0x4c, 0x3c, 0x00, 0x00, 0x00, 0x15, 0x02, 0x25, 0x04, 0x18, 0x05,
            0x61, 0x72, 0x15, 0x15, 0x14, 0x16, 0xff, 0xff, 0xff, 0xff, 0xf6, 0xff, 0xff, 0x70,
            0x00, 0x04, 0x00, 0x00, 0x00, 0x18, 0x04, 0x01, 0x00, 0x00, 0x00, 0x16, 0x00, 0x28,
            0x04, 0x04, 0x00, 0x00, 0x00, 0x18, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x19, 0x1c,
            0x15, 0x00, 0x15, 0x00, 0x15, 0x02, 0x00, 0x3c, 0x29, 0x36, 0x02, 0x02, 0x04, 0x19,
            0x36, 0x00, 0x00, 0x08, 0x00, 0x00, 0x16, 0xb4, 0x01, 0x15, 0x14, 0x16, 0xff, 0xff,
            0xff, 0xff, 0xff, 0x10, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0x70,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x32, 0x62, 0x31, 0x34, 0x63, 0x66, 0x38, 0x63, 0x61,
            0x39, 0x30, 0x65, 0x63, 0x29, 0x19, 0x1c, 0x1c, 0x00, 0x00, 0x00,
        ];
        let e = file_metadata(&footer).unwrap_err();
        assert!(e.contains("children"), "{e}");
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

    #[test]
    fn skipped_lists_of_booleans_are_refused() {
        // Field 1: a list of two booleans (one byte each), then stop. parquet's skip would read
        // the two element bytes as field headers.
        let bytes = [0x19, 0x21, 0x01, 0x02, 0x00];
        assert!(thrift_struct(&bytes).unwrap_err().contains("booleans"));
        // An empty one skips the same in both walkers.
        assert_eq!(thrift_struct(&[0x19, 0x01, 0x00]).unwrap(), 3);
    }
}
