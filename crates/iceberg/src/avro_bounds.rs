//! Bounds on what an Avro block can make apache-avro allocate, checked before it decodes one.
//!
//! apache-avro 0.21 trusts the counts a file claims: an array or map block of `n` items
//! reserves room for `n` values before reading one (up to 2^29 of them, gigabytes for a
//! few bytes of input), a `fixed` of the schema's size is allocated whole, and a block's
//! codec decompresses without a limit (a snappy block's claimed length is allocated before
//! it is checked; a deflate or zstd block inflates as far as it goes). iceberg-rust reads
//! manifest lists and manifests with it, so the integrity check ([`crate::integrity`])
//! bounds each block before anything decodes it:
//!
//! - [`decompress`]: a block decompresses to at most [`MAX_BLOCK`] bytes, checked while it
//!   inflates (or from snappy's length header), never allocated past that.
//! - [`Datum::skip`]: every record is walked as apache-avro would decode it, without
//!   building values: each length and item count is checked against the bytes left in the
//!   block, a union branch or enum symbol against the schema, nesting against
//!   [`MAX_DEPTH`], and items that take no bytes (nulls, empty records) are limited to
//!   [`MAX_EMPTY_ITEMS`] per block.
//!
//! Invariant: after a block passes, decoding it allocates at most a small multiple of its
//! decompressed size (each count apache-avro reserves for is at most the bytes left plus
//! [`MAX_EMPTY_ITEMS`]). Every bound is far above what the Iceberg writers produce (their
//! blocks hold kilobytes to a few megabytes; no manifest schema has an array of nulls).

use std::collections::HashMap;
use std::io::Read;

use apache_avro::schema::{Name, Namespace, RecordSchema, ResolvedSchema};
use apache_avro::{Codec, Schema};

/// Most bytes one block may decompress to (256 MiB).
pub(crate) const MAX_BLOCK: usize = 256 << 20;

/// Deepest nesting of a record's values (a recursive schema is walked only this deep).
pub(crate) const MAX_DEPTH: usize = 128;

/// Most array or map items taking no bytes (nulls, empty records) in one block.
pub(crate) const MAX_EMPTY_ITEMS: usize = 1 << 16;

/// The block `data` decompressed by `codec`, refused when it would pass [`MAX_BLOCK`] bytes.
pub(crate) fn decompress(codec: Codec, data: &[u8]) -> Result<Vec<u8>, String> {
    decompress_within(codec, data, MAX_BLOCK)
}

/// [`decompress`] within `max` bytes.
fn decompress_within(codec: Codec, data: &[u8], max: usize) -> Result<Vec<u8>, String> {
    let too_big = || format!("it decompresses to more than {max} bytes");
    let bounded = |r: &mut dyn Read| -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        r.take(max as u64 + 1)
            .read_to_end(&mut out)
            .map_err(|e| e.to_string())?;
        match out.len() > max {
            true => Err(too_big()),
            false => Ok(out),
        }
    };
    match codec {
        Codec::Null => Ok(data.to_vec()),
        Codec::Deflate(_) => bounded(&mut flate2::read::DeflateDecoder::new(data)),
        Codec::Zstandard(_) => {
            let mut d = zstd::stream::read::Decoder::new(data).map_err(|e| e.to_string())?;
            bounded(&mut d)
        }
        Codec::Snappy => {
            // The compressed bytes, then the big-endian CRC-32 of the decompressed ones.
            let body = data
                .len()
                .checked_sub(4)
                .map(|n| &data[..n])
                .ok_or("a snappy block shorter than its 4-byte checksum")?;
            let len = snap::raw::decompress_len(body).map_err(|e| e.to_string())?;
            if len > max {
                return Err(too_big());
            }
            let mut out = data.to_vec();
            codec.decompress(&mut out).map_err(|e| e.to_string())?;
            Ok(out)
        }
        // Every codec apache-avro is built with here is matched above; any other is refused
        // rather than decompressed without a bound.
        #[allow(unreachable_patterns)]
        other => Err(format!("the {other:?} codec is not read")),
    }
}

/// A file's schema with its named types resolved: walks records the way apache-avro decodes
/// them (see the module docs).
pub(crate) struct Datum<'s> {
    schema: &'s Schema,
    names: HashMap<Name, &'s Schema>,
}

/// Where a walk is in a block: its bytes, the position, and the empty items counted so far.
struct Cursor<'b> {
    b: &'b [u8],
    pos: usize,
    empty: usize,
}

impl<'s> Datum<'s> {
    /// The walker of `schema`'s records; an error when a named type is not defined.
    pub(crate) fn new(schema: &'s Schema) -> Result<Datum<'s>, String> {
        let resolved = ResolvedSchema::try_from(schema).map_err(|e| e.to_string())?;
        let names = resolved
            .get_names()
            .iter()
            .map(|(n, s)| (n.clone(), *s))
            .collect();
        Ok(Datum { schema, names })
    }

    /// Walk `count` records from the start of `block`, which they must fill exactly; `Ok`
    /// means apache-avro decodes them within the bounds of the module docs.
    pub(crate) fn skip(&self, block: &[u8], count: i64) -> Result<(), String> {
        let mut c = Cursor {
            b: block,
            pos: 0,
            empty: 0,
        };
        for i in 0..count {
            self.value(self.schema, &None, &mut c, 0)
                .map_err(|e| format!("record {i} of the {count} it claims: {e}"))?;
        }
        match c.b.len() - c.pos {
            0 => Ok(()),
            left => Err(format!(
                "{left} bytes left after the {count} records it claims"
            )),
        }
    }

    fn value(
        &self,
        s: &Schema,
        ns: &Namespace,
        c: &mut Cursor,
        depth: usize,
    ) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("values nested more than {MAX_DEPTH} deep"));
        }
        match s {
            Schema::Null => Ok(()),
            Schema::Boolean => c.bytes(1).map(drop),
            Schema::Int
            | Schema::Long
            | Schema::Date
            | Schema::TimeMillis
            | Schema::TimeMicros
            | Schema::TimestampMillis
            | Schema::TimestampMicros
            | Schema::TimestampNanos
            | Schema::LocalTimestampMillis
            | Schema::LocalTimestampMicros
            | Schema::LocalTimestampNanos => c.long().map(drop),
            Schema::Float => c.bytes(4).map(drop),
            Schema::Double => c.bytes(8).map(drop),
            Schema::Duration => c.bytes(12).map(drop),
            Schema::Bytes | Schema::String | Schema::Uuid | Schema::BigDecimal => {
                let len = c.long()?;
                c.bytes(len).map(drop)
            }
            Schema::Fixed(f) => c.bytes(i64::try_from(f.size).unwrap_or(i64::MAX)).map(drop),
            Schema::Decimal(d) => self.value(&d.inner, ns, c, depth + 1),
            Schema::Array(a) => self.items(c, |c| self.value(&a.items, ns, c, depth + 1)),
            Schema::Map(m) => self.items(c, |c| {
                let len = c.long()?;
                c.bytes(len)?;
                self.value(&m.types, ns, c, depth + 1)
            }),
            Schema::Union(u) => {
                let at = c.pos;
                let i = c.long()?;
                let branch = usize::try_from(i)
                    .ok()
                    .and_then(|i| u.variants().get(i))
                    .ok_or_else(|| format!("union branch {i} at byte {at} is not in the schema"))?;
                self.value(branch, ns, c, depth + 1)
            }
            Schema::Record(RecordSchema { name, fields, .. }) => {
                let inner = name.fully_qualified_name(ns).namespace;
                fields
                    .iter()
                    .try_for_each(|f| self.value(&f.schema, &inner, c, depth + 1))
            }
            Schema::Enum(e) => {
                let at = c.pos;
                let i = c.long()?;
                match usize::try_from(i).is_ok_and(|i| i < e.symbols.len()) {
                    true => Ok(()),
                    false => Err(format!("enum symbol {i} at byte {at} is not in the schema")),
                }
            }
            Schema::Ref { name } => {
                let full = name.fully_qualified_name(ns);
                let s = self
                    .names
                    .get(&full)
                    .ok_or_else(|| format!("the schema does not define {full}"))?;
                self.value(s, &full.namespace, c, depth + 1)
            }
        }
    }

    /// The blocks of an array or map, `item` walking each item; a block's count is bounded
    /// by the bytes left, as each item takes a byte or counts as empty.
    fn items(
        &self,
        c: &mut Cursor,
        mut item: impl FnMut(&mut Cursor) -> Result<(), String>,
    ) -> Result<(), String> {
        loop {
            let at = c.pos;
            let mut n = c.long()?;
            if n == 0 {
                return Ok(());
            }
            if n < 0 {
                n = n
                    .checked_neg()
                    .ok_or_else(|| format!("a block of -2^63 items at byte {at}"))?;
                c.long()?;
            }
            let n = u64::try_from(n).unwrap_or(u64::MAX);
            if n > (c.b.len() - c.pos + MAX_EMPTY_ITEMS) as u64 {
                return Err(format!(
                    "a block at byte {at} claims {n} items, more than the {} bytes left hold",
                    c.b.len() - c.pos
                ));
            }
            for _ in 0..n {
                let before = c.pos;
                item(c)?;
                if c.pos == before {
                    c.empty += 1;
                    if c.empty > MAX_EMPTY_ITEMS {
                        return Err(format!(
                            "more than {MAX_EMPTY_ITEMS} items of no bytes in one block"
                        ));
                    }
                }
            }
        }
    }
}

impl Cursor<'_> {
    /// A zig-zag varint long.
    fn long(&mut self) -> Result<i64, String> {
        let (mut v, mut shift) = (0u64, 0);
        loop {
            let at = self.pos;
            let byte = *self
                .b
                .get(at)
                .ok_or_else(|| format!("the block ends inside a number at byte {at}"))?;
            self.pos += 1;
            if shift >= 64 {
                return Err(format!("a number longer than 10 bytes at byte {at}"));
            }
            v |= ((byte & 0x7f) as u64) << shift;
            shift += 7;
            if byte & 0x80 == 0 {
                return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
            }
        }
    }

    /// `n` bytes, which must lie in the block.
    fn bytes(&mut self, n: i64) -> Result<&[u8], String> {
        let left = self.b.len() - self.pos;
        match usize::try_from(n) {
            Ok(n) if n <= left => {
                self.pos += n;
                Ok(&self.b[self.pos - n..self.pos])
            }
            _ => Err(format!(
                "a value of {n} bytes at byte {} overruns the block ({left} bytes left)",
                self.pos
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apache_avro::types::Value;

    fn encoded(schema: &Schema, v: Value) -> Vec<u8> {
        apache_avro::to_avro_datum(schema, v).unwrap()
    }

    #[test]
    fn walks_what_apache_avro_writes() {
        let schema = Schema::parse_str(
            r#"{"type":"record","name":"r","namespace":"n","fields":[
                {"name":"a","type":{"type":"array","items":"long"}},
                {"name":"m","type":{"type":"map","values":["null","string"]}},
                {"name":"f","type":{"type":"fixed","name":"f16","size":16}},
                {"name":"e","type":{"type":"enum","name":"e","symbols":["x","y"]}},
                {"name":"g","type":"n.f16"},
                {"name":"b","type":"boolean"},
                {"name":"d","type":"double"}]}"#,
        )
        .unwrap();
        let v = Value::Record(vec![
            (
                "a".into(),
                Value::Array((0..300).map(Value::Long).collect()),
            ),
            (
                "m".into(),
                Value::Map(
                    [
                        (
                            "k".to_string(),
                            Value::Union(1, Box::new(Value::String("v".into()))),
                        ),
                        ("z".to_string(), Value::Union(0, Box::new(Value::Null))),
                    ]
                    .into(),
                ),
            ),
            ("f".into(), Value::Fixed(16, vec![7; 16])),
            ("e".into(), Value::Enum(1, "y".into())),
            ("g".into(), Value::Fixed(16, vec![1; 16])),
            ("b".into(), Value::Boolean(true)),
            ("d".into(), Value::Double(1.5)),
        ]);
        let mut block = encoded(&schema, v.clone());
        block.extend(encoded(&schema, v));
        let d = Datum::new(&schema).unwrap();
        d.skip(&block, 2).unwrap();
        // One record too many, one too few, a byte cut off: each refused.
        assert!(d.skip(&block, 3).unwrap_err().contains("record 2"));
        assert!(d.skip(&block, 1).unwrap_err().contains("bytes left"));
        assert!(d.skip(&block[..block.len() - 1], 2).is_err());
    }

    #[test]
    fn counts_are_bounded_by_the_bytes_left() {
        let longs = Schema::parse_str(r#"{"type":"array","items":"long"}"#).unwrap();
        let d = Datum::new(&longs).unwrap();
        // 2^28 items claimed by a 5-byte count, then nothing.
        let mut block = Vec::new();
        let n: i64 = 1 << 28;
        let mut z = ((n << 1) ^ (n >> 63)) as u64;
        while z >= 0x80 {
            block.push((z as u8) | 0x80);
            z >>= 7;
        }
        block.push(z as u8);
        let e = d.skip(&block, 1).unwrap_err();
        assert!(e.contains("claims 268435456 items"), "{e}");
        // Nulls take no bytes: at most MAX_EMPTY_ITEMS of them, however many blocks.
        let nulls = Schema::parse_str(r#"{"type":"array","items":"null"}"#).unwrap();
        let d = Datum::new(&nulls).unwrap();
        let many = encoded(&nulls, Value::Array(vec![Value::Null; 1000]));
        d.skip(&many, 1).unwrap();
        let block = encoded(&nulls, Value::Array(vec![Value::Null; MAX_EMPTY_ITEMS + 1]));
        assert!(d.skip(&block, 1).unwrap_err().contains("no bytes"));
        // A fixed larger than the block, a string longer than it, a union branch past the
        // schema's: refused before anything is allocated.
        let fixed = Schema::parse_str(r#"{"type":"fixed","name":"x","size":1099511627776}"#);
        if let Ok(fixed) = fixed {
            assert!(Datum::new(&fixed).unwrap().skip(&[0; 8], 1).is_err());
        }
        let s = Schema::parse_str(r#""string""#).unwrap();
        assert!(Datum::new(&s).unwrap().skip(&[0x7e, b'a'], 1).is_err());
        let u = Schema::parse_str(r#"["null","long"]"#).unwrap();
        assert!(Datum::new(&u)
            .unwrap()
            .skip(&[4], 1)
            .unwrap_err()
            .contains("union branch 2"));
    }

    #[test]
    fn recursive_schemas_are_walked_to_a_depth() {
        let list = Schema::parse_str(
            r#"{"type":"record","name":"node","fields":[
                {"name":"next","type":["null","node"]}]}"#,
        )
        .unwrap();
        let d = Datum::new(&list).unwrap();
        // Ten links then null: fine. MAX_DEPTH links: refused.
        let mut ten = vec![2u8; 10];
        ten.push(0);
        d.skip(&ten, 1).unwrap();
        let mut deep = vec![2u8; MAX_DEPTH];
        deep.push(0);
        assert!(d.skip(&deep, 1).unwrap_err().contains("nested"));
    }

    #[test]
    fn blocks_decompress_within_the_bound() {
        use std::io::Write;
        let mut w = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
        w.write_all(&vec![0u8; (1 << 20) + 1]).unwrap();
        let bomb = w.finish().unwrap();
        let deflate = Codec::Deflate(Default::default());
        let e = decompress_within(deflate, &bomb, 1 << 20).unwrap_err();
        assert!(e.contains("more than 1048576 bytes"), "{e}");
        let mut zstd = vec![0u8; (1 << 20) + 1];
        Codec::Zstandard(Default::default())
            .compress(&mut zstd)
            .unwrap();
        let zstd_codec = Codec::Zstandard(Default::default());
        assert!(decompress_within(zstd_codec, &zstd, 1 << 20).is_err());
        assert_eq!(decompress(zstd_codec, &zstd).unwrap().len(), (1 << 20) + 1);
        let mut small = b"hello".to_vec();
        deflate.compress(&mut small).unwrap();
        assert_eq!(decompress(deflate, &small).unwrap(), b"hello");
        // Snappy: a claimed length past the bound, and a block too short for its checksum.
        let mut claim = Vec::new();
        let mut n = MAX_BLOCK as u64 + 1;
        while n >= 0x80 {
            claim.push((n as u8) | 0x80);
            n >>= 7;
        }
        claim.push(n as u8);
        claim.extend([0; 4]);
        assert!(decompress(Codec::Snappy, &claim)
            .unwrap_err()
            .contains("more than"));
        assert!(decompress(Codec::Snappy, &[1, 2]).is_err());
        let mut small = b"hello".to_vec();
        Codec::Snappy.compress(&mut small).unwrap();
        assert_eq!(decompress(Codec::Snappy, &small).unwrap(), b"hello");
    }
}
