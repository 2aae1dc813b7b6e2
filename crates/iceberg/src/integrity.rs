//! Integrity of an Iceberg table's metadata as rayquet reads it: a damaged manifest list or
//! manifest is an error naming the file, never a plan of the wrong files.
//!
//! apache-avro (which iceberg-rust reads them with) checks each block's sync marker, but it
//! ignores bytes a block's records leave over, stops silently at a block that claims no
//! records (dropping the rest), and cannot see a duplicated block, which is structurally
//! valid: a manifest whose block was duplicated reads as more entries, a zeroed status byte
//! turns a deleted file into a live one. So every `.avro` metadata file read through
//! rayquet's storage ([`crate::storage`]) is checked ([`Checker::check`]):
//!
//! 1. **Container**: magic, header, sync marker; then every block claims a positive count of
//!    records and a size within the file, ends with the header's sync marker, and the last
//!    one ends exactly at the end of the file; for the codecs apache-avro decodes, exactly the
//!    claimed count of records fills exactly the block's (decompressed) bytes, each record
//!    walked within the bounds of [`crate::avro_bounds`] before apache-avro decodes it.
//! 2. **Manifest list**: every manifest is listed once; each one's entry counts (added,
//!    existing, deleted files and rows, when given) are remembered for step 3.
//! 3. **Manifest**: its entries, counted by status, equal the counts its list gave; a live
//!    (added or existing) file appears once (a deletion vector: its Puffin file and offset,
//!    several vectors sharing one Puffin file).
//!
//! And a plan that lists one data file twice (not as disjoint byte-range splits) is refused
//! ([`PlanFiles`]).
//!
//! Invariant: every rule is one the Avro and Iceberg specs state for files writers produce
//! (counts are compared only when the list gives them), so no valid table is refused; a
//! failure is a `CorruptTable` error naming the file.

use std::collections::{HashMap, HashSet};
use std::ops::Range;
use std::str::FromStr;
use std::sync::Mutex;

use apache_avro::types::Value;
use apache_avro::{Codec, Schema};

/// Most manifests whose counts are remembered (a few dozen bytes each).
const MAX_EXPECTED: usize = 1 << 20;

/// Read a zig-zag varint long at `pos`.
fn read_long(b: &[u8], pos: &mut usize) -> Result<i64, String> {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = *b
            .get(*pos)
            .ok_or_else(|| format!("the file ends inside a number at byte {}", *pos))?;
        *pos += 1;
        if shift >= 64 {
            return Err(format!("a number longer than 10 bytes at byte {}", *pos));
        }
        v |= ((byte & 0x7f) as u64) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
        }
    }
}

/// `n` bytes at `pos`, which must lie in the file.
fn take<'a>(b: &'a [u8], pos: &mut usize, n: i64, what: &str) -> Result<&'a [u8], String> {
    let left = (b.len() - *pos) as u64;
    if n < 0 || n as u64 > left {
        return Err(format!(
            "{what} of {n} bytes at byte {} overruns the file ({} bytes)",
            *pos,
            b.len()
        ));
    }
    let s = &b[*pos..*pos + n as usize];
    *pos += n as usize;
    Ok(s)
}

/// An Avro object container file's header and blocks.
struct Container<'a> {
    meta: HashMap<String, &'a [u8]>,
    /// Each block: its record count and its (compressed) data.
    blocks: Vec<(i64, Range<usize>)>,
}

/// Walk the container structure of `b` (see the module docs, step 1, without decoding).
fn walk(b: &[u8]) -> Result<Container<'_>, String> {
    if b.len() < 4 || &b[..4] != b"Obj\x01" {
        return Err("not an Avro object container file (bad magic)".into());
    }
    let mut pos = 4;
    let mut meta = HashMap::new();
    loop {
        let mut n = read_long(b, &mut pos)?;
        if n == 0 {
            break;
        }
        if n < 0 {
            n = n.checked_neg().ok_or("a header block of -2^63 entries")?;
            read_long(b, &mut pos)?;
        }
        for _ in 0..n {
            let len = read_long(b, &mut pos)?;
            let key = take(b, &mut pos, len, "a header key")?;
            let len = read_long(b, &mut pos)?;
            let value = take(b, &mut pos, len, "a header value")?;
            meta.insert(String::from_utf8_lossy(key).into_owned(), value);
        }
    }
    let sync = take(b, &mut pos, 16, "the header's sync marker")?;
    let mut blocks = Vec::new();
    while pos < b.len() {
        let start = pos;
        let count = read_long(b, &mut pos)?;
        if count <= 0 {
            return Err(format!(
                "the block at byte {start} claims {count} records (a block holds at least one)"
            ));
        }
        let size = read_long(b, &mut pos)?;
        let data = pos;
        take(b, &mut pos, size, &format!("the block at byte {start}"))?;
        let marker = take(
            b,
            &mut pos,
            16,
            &format!("the sync marker of the block at byte {start}"),
        )?;
        if marker != sync {
            return Err(format!(
                "the block at byte {start} ends without the file's sync marker"
            ));
        }
        blocks.push((count, data..data + size as usize));
    }
    Ok(Container { meta, blocks })
}

/// Check the names apache-avro 0.21 unwraps rather than checks while it parses schema `v` (a
/// named type's name and aliases, a type given by name, the name of a `type` object): an
/// invalid one panics inside `Schema::parse_str`. Record fields' own names, which it checks,
/// are left to it. The JSON's depth is bounded by serde_json's recursion limit.
fn avro_names(v: &serde_json::Value) -> Result<(), String> {
    use serde_json::Value;
    match v {
        Value::String(t) => avro_name(t),
        Value::Array(union) => union.iter().try_for_each(avro_names),
        Value::Object(o) => {
            if let Some(Value::String(n)) = o.get("name") {
                avro_name(n)?;
            }
            if let Some(Value::Array(aliases)) = o.get("aliases") {
                aliases
                    .iter()
                    .filter_map(Value::as_str)
                    .try_for_each(avro_name)?;
            }
            for key in ["type", "items", "values"] {
                if let Some(t) = o.get(key) {
                    avro_names(t)?;
                }
            }
            if let Some(Value::Array(fields)) = o.get("fields") {
                for t in fields.iter().filter_map(|f| f.get("type")) {
                    avro_names(t)?;
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// An Avro full name, as apache-avro's default validator takes it: an optional (possibly
/// empty) dotted namespace, then a name, each part `[A-Za-z_][A-Za-z0-9_]*`.
fn avro_name(full: &str) -> Result<(), String> {
    let part = |p: &str| {
        let mut b = p.bytes();
        b.next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == b'_')
            && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
    };
    let ok = match full.rsplit_once('.') {
        None => part(full),
        Some((ns, name)) => part(name) && (ns.is_empty() || ns.split('.').all(part)),
    };
    match ok {
        true => Ok(()),
        false => Err(format!("{full:?} is not an Avro name")),
    }
}

/// Verify `b` as an Avro object container file and hand every record to `each`, with the
/// file's schema first to `kind`. `Ok(false)` when the codec is not one apache-avro decodes:
/// then only the structure was checked.
fn records(
    b: &[u8],
    kind: impl FnOnce(&Schema),
    mut each: impl FnMut(Value) -> Result<(), String>,
) -> Result<bool, String> {
    let c = walk(b)?;
    let schema = c
        .meta
        .get("avro.schema")
        .ok_or("the header has no schema")?;
    // A fixed uuid (a uuid partition column) is decoded as the 16 bytes it is: apache-avro
    // 0.21 would read length-prefixed bytes (see `normalize::decodable_schema`).
    let schema = std::str::from_utf8(schema)
        .map_err(|e| e.to_string())
        .and_then(|s| {
            let s = crate::normalize::decodable_schema(s).unwrap_or_else(|| s.to_string());
            if let Ok(json) = serde_json::from_str::<serde_json::Value>(&s) {
                avro_names(&json)?;
            }
            Schema::parse_str(&s).map_err(|e| e.to_string())
        })
        .map_err(|e| format!("the header's schema: {e}"))?;
    kind(&schema);
    let codec = match c.meta.get("avro.codec") {
        None => Codec::Null,
        Some(name) => match std::str::from_utf8(name)
            .ok()
            .and_then(|n| Codec::from_str(n).ok())
        {
            Some(codec) => codec,
            None => return Ok(false),
        },
    };
    let datum =
        crate::avro_bounds::Datum::new(&schema).map_err(|e| format!("the header's schema: {e}"))?;
    for (count, range) in c.blocks {
        let at = |e: String| format!("the block at byte {}: {e}", range.start);
        let data = crate::avro_bounds::decompress(codec, &b[range.clone()]).map_err(at)?;
        // Walked before apache-avro decodes it: no count in the block sizes an allocation.
        datum.skip(&data, count).map_err(at)?;
        let mut rest = &data[..];
        for i in 0..count {
            let value = apache_avro::from_avro_datum(&schema, &mut rest, None)
                .map_err(|e| at(format!("record {i} of the {count} it claims: {e}")))?;
            each(value)?;
        }
    }
    Ok(true)
}

/// What an Avro metadata file holds, by its schema's top-level fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    ManifestList,
    Manifest,
    Other,
}

impl Kind {
    fn of(schema: &Schema) -> Kind {
        let names: Vec<&str> = match schema {
            Schema::Record(r) => r.fields.iter().map(|f| f.name.as_str()).collect(),
            _ => Vec::new(),
        };
        if names.contains(&"manifest_path") {
            Kind::ManifestList
        } else if names.contains(&"status") && names.contains(&"data_file") {
            Kind::Manifest
        } else {
            Kind::Other
        }
    }
}

/// A record's field (a union's value, null as `None`).
fn field<'a>(record: &'a Value, name: &str) -> Option<&'a Value> {
    let Value::Record(fields) = record else {
        return None;
    };
    let mut v = &fields.iter().find(|(n, _)| n == name)?.1;
    while let Value::Union(_, inner) = v {
        v = inner;
    }
    (*v != Value::Null).then_some(v)
}

fn number(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Int(i) => Some(*i as i64),
        Value::Long(l) => Some(*l),
        _ => None,
    }
}

fn string(v: Option<&Value>) -> Option<&str> {
    match v? {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// A manifest's entries by status (existing, added, deleted): files and rows.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Counts {
    files: [Option<i64>; 3],
    rows: [Option<i64>; 3],
}

const STATUS: [&str; 3] = ["existing", "added", "deleted"];

/// The checks of the module docs, for the metadata files one FileIO reads: it remembers the
/// entry counts of the manifests listed in the manifest lists it has read.
#[derive(Debug, Default)]
pub(crate) struct Checker {
    expected: Mutex<HashMap<String, Counts>>,
}

impl Checker {
    /// Check the bytes of the metadata file at `path`; `Err` says what is wrong.
    pub fn check(&self, path: &str, bytes: &[u8]) -> Result<(), String> {
        if bytes.starts_with(b"AGS1") {
            // An encrypted manifest (AES-GCM stream): ciphertext, checked once decrypted by
            // iceberg's reader.
            return Ok(());
        }
        let kind = std::cell::Cell::new(Kind::Other);
        let mut listed = HashSet::new();
        let mut counted = Counts {
            files: [Some(0); 3],
            rows: [Some(0); 3],
        };
        let mut live = HashSet::new();
        let mut found = Vec::new();
        let decoded = records(
            bytes,
            |schema| kind.set(Kind::of(schema)),
            |record| {
                match kind.get() {
                    Kind::ManifestList => {
                        let path = string(field(&record, "manifest_path"))
                            .ok_or("a manifest list entry without a manifest path")?;
                        if !listed.insert(path.to_string()) {
                            return Err(format!("the manifest {path} is listed twice"));
                        }
                        let n = |v2: &str, v1: &str| {
                            number(field(&record, v2).or_else(|| field(&record, v1)))
                        };
                        let counts = Counts {
                            files: [
                                n("existing_files_count", "existing_data_files_count"),
                                n("added_files_count", "added_data_files_count"),
                                n("deleted_files_count", "deleted_data_files_count"),
                            ],
                            rows: [
                                n("existing_rows_count", ""),
                                n("added_rows_count", ""),
                                n("deleted_rows_count", ""),
                            ],
                        };
                        found.push((path.to_string(), counts));
                    }
                    Kind::Manifest => {
                        let status = number(field(&record, "status"))
                            .filter(|s| (0..3).contains(s))
                            .ok_or("a manifest entry with no valid status")?
                            as usize;
                        let file = field(&record, "data_file");
                        let rows = number(file.and_then(|f| field(f, "record_count"))).unwrap_or(0);
                        counted.files[status] = counted.files[status].map(|n| n + 1);
                        counted.rows[status] = counted.rows[status].map(|n| n + rows);
                        let path = string(file.and_then(|f| field(f, "file_path")))
                            .ok_or("a manifest entry without a file path")?;
                        // Deletion vectors (v3) share a Puffin file: each is the file and
                        // its blob's offset.
                        let offset = number(file.and_then(|f| field(f, "content_offset")));
                        if status != 2 && !live.insert((path.to_string(), offset)) {
                            return Err(match offset {
                                Some(o) => format!(
                                    "the live deletion vector at offset {o} of {path} is \
                                     listed twice"
                                ),
                                None => format!("the live file {path} is listed twice"),
                            });
                        }
                    }
                    Kind::Other => {}
                }
                Ok(())
            },
        )?;
        let mut expected = self.expected.lock().unwrap_or_else(|e| e.into_inner());
        match kind.get() {
            Kind::ManifestList => {
                for (path, counts) in found {
                    if expected.len() < MAX_EXPECTED || expected.contains_key(&path) {
                        expected.insert(path, counts);
                    }
                }
            }
            Kind::Manifest if decoded => {
                if let Some(want) = expected.get(path) {
                    let pairs = [
                        ("files", counted.files, want.files),
                        ("rows", counted.rows, want.rows),
                    ];
                    for (what, got, want) in pairs {
                        for s in 0..3 {
                            if let (Some(g), Some(w)) = (got[s], want[s]) {
                                if g != w {
                                    return Err(format!(
                                        "{g} {} {what} in the manifest, {w} in its manifest list",
                                        STATUS[s]
                                    ));
                                }
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The data files a plan has listed, with their byte ranges: a file may come back only as
/// another split (a byte range disjoint from its earlier ones), never whole again.
#[derive(Debug, Default)]
pub(crate) struct PlanFiles(Mutex<HashMap<String, Vec<Range<u64>>>>);

impl PlanFiles {
    /// Record a task reading `range` of `path`; `Err` when it overlaps an earlier task's.
    pub fn add(&self, path: &str, range: Range<u64>) -> Result<(), String> {
        let mut seen = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let ranges = seen.entry(path.to_string()).or_default();
        if let Some(r) = ranges.iter().find(|r| {
            r.start < range.end.max(range.start + 1) && range.start < r.end.max(r.start + 1)
        }) {
            return Err(format!(
                "the plan lists the data file twice (bytes {}..{} and {}..{})",
                r.start, r.end, range.start, range.end
            ));
        }
        ranges.push(range);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_pass_and_repeats_fail() {
        let p = PlanFiles::default();
        assert!(p.add("a", 0..100).is_ok());
        assert!(p.add("a", 100..200).is_ok());
        assert!(p.add("b", 0..100).is_ok());
        assert!(p.add("a", 50..60).is_err());
        assert!(p.add("b", 0..100).is_err());
        assert!(p.add("c", 0..0).is_ok());
        assert!(p.add("c", 0..0).is_err());
    }

    #[test]
    fn numbers() {
        let mut pos = 0;
        assert_eq!(read_long(&[0x03], &mut pos), Ok(-2));
        pos = 0;
        assert_eq!(read_long(&[0x80, 0x01], &mut pos), Ok(64));
        pos = 0;
        assert!(read_long(&[0x80], &mut pos).is_err());
    }
}
