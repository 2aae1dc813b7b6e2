//! Metadata that valid writers produce but iceberg-rust 0.10.1's parser refuses, rewritten
//! into a form it accepts before it parses it (table metadata JSON and manifests, as read
//! through rayquet's FileIO, [`crate::storage`], after their integrity check).
//!
//! Three cases, all found in real tables:
//!
//! 1. **Void partition fields named like a column** (format v1 after partition evolution:
//!    Java and pyiceberg keep a removed field as `void` under its old name, often the source
//!    column's). iceberg-rust refuses a non-identity partition field whose name is a schema
//!    field's. Such a field is renamed (`_<name>_void_<field-id>`, made unique), in the
//!    table metadata's specs and, in a manifest, in its `partition-spec` header and in the
//!    partition record of its Avro schema (matched by `field-id`), so the Avro reader still
//!    resolves the record. A void field never has a value, so its name reaches no answer.
//! 2. **Format v3 types iceberg-rust lacks**: `unknown`, `variant`, `geometry(..)`,
//!    `geography(..)`. Each becomes `binary` (a type every bound and default parses as) and
//!    is recorded in the table property [`TYPES_PROPERTY`] (`{"<schema id>": {"<field id>":
//!    "<type>"}}`), from which a scan knows the real type: `unknown` reads as nulls,
//!    `variant` as Arrow's variant struct ([`crate::variant_type`]), the others are refused
//!    when selected ([`V3Types`]).
//! 3. **The refs of a format v1 table** (branches and tags, which pyiceberg and Java write in
//!    v1 metadata too): iceberg-rust's v1 parser drops them. They are kept, as written, in the
//!    table property [`REFS_PROPERTY`], which a scan reads to find a branch or tag.
//!
//! Invariants: metadata that needs neither rewrite is returned as it is (a byte search decides
//! before any parsing); a rewrite changes only names of void partition fields and the types
//! above, never a value; a file that cannot be parsed is left to iceberg-rust, which reports
//! it.

use std::collections::{BTreeMap, HashMap, HashSet};

use serde_json::{Map, Value};

/// The table property in which the normalised table metadata records the v3 types it
/// replaced, by schema id and field id.
pub const TYPES_PROPERTY: &str = "rayquet.v3-types";

/// The table property in which the normalised table metadata records the initial defaults
/// iceberg-rust's parser would drop (JSON single-value form), by schema id and field id.
pub const DEFAULTS_PROPERTY: &str = "rayquet.initial-defaults";

/// The table property in which the normalised metadata of a format v1 table keeps its refs
/// (branches and tags, the `refs` object as written): iceberg-rust 0.10.1 drops them when it
/// parses v1 metadata.
pub const REFS_PROPERTY: &str = "rayquet.refs";

/// The replacement of every type iceberg-rust cannot parse.
const PLACEHOLDER: &str = "binary";

/// Whether `ty` (a primitive type name in schema JSON) is one iceberg-rust 0.10.1 lacks.
fn foreign(ty: &str) -> bool {
    ty == "unknown" || ty == "variant" || ty.starts_with("geometry") || ty.starts_with("geography")
}

/// Whether `bytes` may need a rewrite (cheap: no parsing).
fn suspect(bytes: &[u8]) -> bool {
    const NEEDLES: [&[u8]; 7] = [
        b"\"refs\"",
        b"\"void\"",
        b"\"initial-default\"",
        b"\"unknown\"",
        b"\"variant\"",
        b"\"geometry",
        b"\"geography",
    ];
    NEEDLES
        .iter()
        .any(|n| bytes.windows(n.len()).any(|w| w == *n))
}

/// Replace the foreign types of a schema (JSON) by the placeholder; `found` gets them by
/// field id. `dropped` gets the initial defaults iceberg-rust would drop (it parses a
/// default it cannot read, such as a `timestamp_ns` one, as no default at all).
fn schema_types(
    schema: &mut Value,
    found: &mut BTreeMap<i64, String>,
    dropped: &mut BTreeMap<i64, Value>,
) {
    schema_types_only(schema, found);
    dropped_defaults(schema, dropped);
}

/// The initial defaults (by field id) of a schema (JSON, after [`schema_types_only`]) that
/// iceberg-rust's parser drops.
fn dropped_defaults(t: &Value, out: &mut BTreeMap<i64, Value>) {
    match t {
        Value::Object(o) => {
            if let (Some(id), Some(d), Some(ty)) = (
                o.get("id").and_then(Value::as_i64),
                o.get("initial-default"),
                o.get("type"),
            ) {
                if !d.is_null() {
                    let parsed = serde_json::from_value::<iceberg::spec::Type>(ty.clone())
                        .ok()
                        .and_then(|ty| iceberg::spec::Literal::try_from_json(d.clone(), &ty).ok())
                        .flatten();
                    if parsed.is_none() {
                        out.insert(id, d.clone());
                    }
                }
            }
            for v in o.values() {
                dropped_defaults(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|v| dropped_defaults(v, out)),
        _ => {}
    }
}

fn schema_types_only(schema: &mut Value, found: &mut BTreeMap<i64, String>) {
    fn ty(t: &mut Value, id: Option<i64>, found: &mut BTreeMap<i64, String>) -> bool {
        match t {
            Value::String(s) if foreign(s) => {
                if let Some(id) = id {
                    found.insert(id, s.clone());
                }
                *t = Value::String(PLACEHOLDER.into());
                true
            }
            Value::Object(o) => {
                match o.get("type").and_then(Value::as_str) {
                    Some("struct") => {
                        if let Some(Value::Array(fields)) = o.get_mut("fields") {
                            for f in fields {
                                field(f, found);
                            }
                        }
                    }
                    Some("list") => {
                        let id = o.get("element-id").and_then(Value::as_i64);
                        if let Some(e) = o.get_mut("element") {
                            ty(e, id, found);
                        }
                    }
                    Some("map") => {
                        let kid = o.get("key-id").and_then(Value::as_i64);
                        if let Some(k) = o.get_mut("key") {
                            ty(k, kid, found);
                        }
                        let vid = o.get("value-id").and_then(Value::as_i64);
                        if let Some(v) = o.get_mut("value") {
                            ty(v, vid, found);
                        }
                    }
                    _ => {}
                }
                false
            }
            _ => false,
        }
    }
    fn field(f: &mut Value, found: &mut BTreeMap<i64, String>) {
        let Value::Object(o) = f else { return };
        let id = o.get("id").and_then(Value::as_i64);
        let replaced = match o.get_mut("type") {
            Some(t) => ty(t, id, found),
            None => false,
        };
        if replaced {
            // These types have no default but null (the spec); a placeholder holds none.
            o.remove("initial-default");
            o.remove("write-default");
        }
    }
    ty(schema, None, found);
}

/// Every field name of a schema (JSON), top-level and dotted paths into structs.
fn schema_names(schema: &Value, out: &mut HashSet<String>) {
    fn walk(t: &Value, prefix: &str, out: &mut HashSet<String>) {
        let Value::Object(o) = t else { return };
        match o.get("type").and_then(Value::as_str) {
            Some("struct") => {
                for f in o
                    .get("fields")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let Some(name) = f.get("name").and_then(Value::as_str) else {
                        continue;
                    };
                    let full = if prefix.is_empty() {
                        name.to_string()
                    } else {
                        format!("{prefix}.{name}")
                    };
                    out.insert(full.clone());
                    if let Some(t) = f.get("type") {
                        walk(t, &full, out);
                    }
                }
            }
            Some("list") => {
                if let Some(e) = o.get("element") {
                    walk(e, &format!("{prefix}.element"), out);
                }
            }
            Some("map") => {
                if let Some(k) = o.get("key") {
                    walk(k, &format!("{prefix}.key"), out);
                }
                if let Some(v) = o.get("value") {
                    walk(v, &format!("{prefix}.value"), out);
                }
            }
            _ => {}
        }
    }
    walk(schema, "", out);
}

/// Rename the void fields of a spec's field list whose names are in `taken`; returns the new
/// names by partition field id.
fn rename_voids(fields: &mut [Value], taken: &HashSet<String>) -> HashMap<i64, String> {
    let mut names: HashSet<String> = fields
        .iter()
        .filter_map(|f| f.get("name").and_then(Value::as_str).map(str::to_string))
        .collect();
    names.extend(taken.iter().cloned());
    let mut renamed = HashMap::new();
    for f in fields {
        let Value::Object(o) = f else { continue };
        if o.get("transform").and_then(Value::as_str) != Some("void") {
            continue;
        }
        let Some(name) = o.get("name").and_then(Value::as_str) else {
            continue;
        };
        if !taken.contains(name) {
            continue;
        }
        let id = o.get("field-id").and_then(Value::as_i64).unwrap_or(0);
        // A valid Avro name (it also names the manifest's partition record field).
        let base: String = name
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let mut new = format!("_{base}_void_{id}");
        while names.contains(&new) {
            new.push('_');
        }
        names.insert(new.clone());
        o.insert("name".into(), Value::String(new.clone()));
        renamed.insert(id, new);
    }
    renamed
}

/// Table metadata JSON as iceberg-rust 0.10.1 parses it, or `None` when it needs no change
/// (or is not JSON iceberg-rust could read anyway).
pub(crate) fn table_metadata(bytes: &[u8]) -> Option<Vec<u8>> {
    if !suspect(bytes) {
        return None;
    }
    let mut md: Value = serde_json::from_slice(bytes).ok()?;
    let obj = md.as_object_mut()?;
    let mut changed = false;
    // v3 types, per schema.
    let mut types: BTreeMap<String, BTreeMap<i64, String>> = BTreeMap::new();
    let mut defaults: BTreeMap<String, BTreeMap<i64, Value>> = BTreeMap::new();
    let mut names = HashSet::new();
    let mut single = obj.remove("schema");
    let mut schemas: Vec<&mut Value> = Vec::new();
    if let Some(Value::Array(list)) = obj.get_mut("schemas") {
        schemas.extend(list.iter_mut());
    }
    if let Some(s) = single.as_mut() {
        schemas.push(s);
    }
    for s in schemas {
        let id = s
            .get("schema-id")
            .and_then(Value::as_i64)
            .unwrap_or_default();
        let (mut found, mut dropped) = (BTreeMap::new(), BTreeMap::new());
        schema_types(s, &mut found, &mut dropped);
        if !found.is_empty() {
            changed = true;
            types.entry(id.to_string()).or_default().extend(found);
        }
        if !dropped.is_empty() {
            changed = true;
            defaults.entry(id.to_string()).or_default().extend(dropped);
        }
        schema_names(s, &mut names);
    }
    if let Some(s) = single {
        obj.insert("schema".into(), s);
    }
    // Void partition fields named like a column.
    if let Some(Value::Array(specs)) = obj.get_mut("partition-specs") {
        for spec in specs {
            if let Some(Value::Array(fields)) = spec.get_mut("fields") {
                changed |= !rename_voids(fields, &names).is_empty();
            }
        }
    }
    if let Some(Value::Array(fields)) = obj.get_mut("partition-spec") {
        changed |= !rename_voids(fields, &names).is_empty();
    }
    // The refs of a v1 table, beyond `main` (which iceberg-rust rebuilds).
    let mut refs = None;
    if obj.get("format-version").and_then(Value::as_i64) == Some(1) {
        if let Some(Value::Object(r)) = obj.get("refs") {
            if r.keys().any(|k| k != "main") {
                refs = Some(serde_json::to_string(r).ok()?);
                changed = true;
            }
        }
    }
    if !changed {
        return None;
    }
    let props = obj
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(p) = props {
        if !types.is_empty() {
            let v = serde_json::to_string(&types).ok()?;
            p.insert(TYPES_PROPERTY.into(), Value::String(v));
        }
        if !defaults.is_empty() {
            let v = serde_json::to_string(&defaults).ok()?;
            p.insert(DEFAULTS_PROPERTY.into(), Value::String(v));
        }
        if let Some(r) = refs {
            p.insert(REFS_PROPERTY.into(), Value::String(r));
        }
    }
    serde_json::to_vec(&md).ok()
}

/// What the normalised metadata recorded of one schema ([`TYPES_PROPERTY`],
/// [`DEFAULTS_PROPERTY`]): the real type of each field whose v3 type iceberg-rust lacks, and
/// the initial defaults its parser drops, by field id.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct V3Types {
    types: BTreeMap<i32, String>,
    #[serde(default)]
    defaults: BTreeMap<i32, Value>,
}

impl V3Types {
    /// What was recorded for schema `schema_id` of a table with these properties.
    pub fn of(properties: &HashMap<String, String>, schema_id: i32) -> V3Types {
        fn get<T: serde::de::DeserializeOwned>(
            properties: &HashMap<String, String>,
            key: &str,
            schema_id: i32,
        ) -> BTreeMap<i32, T> {
            let mut all: BTreeMap<String, BTreeMap<i32, T>> = properties
                .get(key)
                .and_then(|v| serde_json::from_str(v).ok())
                .unwrap_or_default();
            all.remove(&schema_id.to_string()).unwrap_or_default()
        }
        V3Types {
            types: get(properties, TYPES_PROPERTY, schema_id),
            defaults: get(properties, DEFAULTS_PROPERTY, schema_id),
        }
    }

    /// The real type of field `id`, when it was replaced.
    pub fn get(&self, id: i32) -> Option<&str> {
        self.types.get(&id).map(String::as_str)
    }

    /// Whether field `id` is of type `unknown` (always null).
    pub fn is_unknown(&self, id: i32) -> bool {
        self.get(id) == Some("unknown")
    }

    /// Whether no type was replaced.
    pub fn no_types(&self) -> bool {
        self.types.is_empty()
    }

    /// The initial default of field `id` that iceberg-rust dropped (JSON single-value form).
    pub fn dropped_default(&self, id: i32) -> Option<&Value> {
        self.defaults.get(&id)
    }
}

// ---------------------------------------------------------------------------------------------
// Manifests (Avro object container files)
// ---------------------------------------------------------------------------------------------

/// Whether an Avro schema node (JSON) is a 16-byte `fixed` with the `uuid` logical type (how
/// Java and pyiceberg write a uuid partition value).
fn is_fixed_uuid(o: &Map<String, Value>) -> bool {
    o.get("type").and_then(Value::as_str) == Some("fixed")
        && o.get("logicalType").and_then(Value::as_str) == Some("uuid")
}

/// `schema` (Avro JSON) with every fixed uuid rewritten by `f`; whether any was.
fn map_fixed_uuids(schema: &mut Value, f: &impl Fn(&mut Map<String, Value>)) -> bool {
    match schema {
        Value::Object(o) if is_fixed_uuid(o) => {
            f(o);
            true
        }
        Value::Object(o) => o
            .values_mut()
            .fold(false, |any, v| map_fixed_uuids(v, f) | any),
        Value::Array(a) => a
            .iter_mut()
            .fold(false, |any, v| map_fixed_uuids(v, f) | any),
        _ => false,
    }
}

/// An Avro schema (JSON text) as apache-avro 0.21 must be given it to decode a file written
/// with it: a 16-byte fixed with the `uuid` logical type is read as a plain fixed
/// (apache-avro reads it as length-prefixed bytes, which it is not, and fails). `None` when
/// the schema has none.
pub(crate) fn decodable_schema(schema: &str) -> Option<String> {
    let mut v: Value = serde_json::from_str(schema).ok()?;
    map_fixed_uuids(&mut v, &|o| {
        o.remove("logicalType");
    })
    .then(|| v.to_string())
}

/// A manifest whose Avro schema has fixed uuids (the value of a uuid partition column)
/// rewritten so that iceberg-rust reads it: apache-avro 0.21 reads a fixed uuid as
/// length-prefixed bytes (it is not), and iceberg-rust turns a uuid Avro value into a string
/// it then refuses as a uuid. The Avro schema's fixed uuids lose their logical type (plain
/// 16-byte fixed values, which apache-avro reads) and the `uuid` columns of the header's
/// table schema become `fixed[16]`, so iceberg-rust expects the partition value as those 16
/// bytes. Only the header changes. The value is then a fixed, not a uuid, in the planner's
/// eyes: it gives no partition constant (the data file's column is read, as Iceberg data
/// files hold their partition source columns), and rayquet pushes no uuid predicate to the
/// planner. `None` when the manifest has none.
fn fixed_uuids(bytes: &[u8]) -> Option<Vec<u8>> {
    let (meta, sync_at) = header(bytes)?;
    let value = |k: &str| meta.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_slice());
    let avro = decodable_schema(std::str::from_utf8(value("avro.schema")?).ok()?)?;
    let mut schema: Value = serde_json::from_slice(value("schema")?).ok()?;
    fn uuid_as_fixed(t: &mut Value) {
        match t {
            Value::String(s) if s == "uuid" => *t = Value::String("fixed[16]".into()),
            Value::Object(o) => {
                for (k, v) in o.iter_mut() {
                    if matches!(k.as_str(), "type" | "fields" | "element" | "key" | "value") {
                        uuid_as_fixed(v);
                    }
                }
            }
            Value::Array(a) => a.iter_mut().for_each(uuid_as_fixed),
            _ => {}
        }
    }
    uuid_as_fixed(&mut schema);
    let schema = serde_json::to_vec(&schema).ok()?;
    let mut out = Vec::with_capacity(bytes.len() + 64);
    out.extend_from_slice(b"Obj\x01");
    write_long(&mut out, meta.len() as i64);
    for (k, v) in &meta {
        let v: &[u8] = match k.as_str() {
            "avro.schema" => avro.as_bytes(),
            "schema" => &schema,
            _ => v,
        };
        write_long(&mut out, k.len() as i64);
        out.extend_from_slice(k.as_bytes());
        write_long(&mut out, v.len() as i64);
        out.extend_from_slice(v);
    }
    write_long(&mut out, 0);
    out.extend_from_slice(&bytes[sync_at..]);
    Some(out)
}

fn read_long(b: &[u8], pos: &mut usize) -> Option<i64> {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let byte = *b.get(*pos)?;
        *pos += 1;
        if shift >= 64 {
            return None;
        }
        v |= ((byte & 0x7f) as u64) << shift;
        shift += 7;
        if byte & 0x80 == 0 {
            return Some(((v >> 1) as i64) ^ -((v & 1) as i64));
        }
    }
}

fn write_long(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        if z < 0x80 {
            out.push(z as u8);
            return;
        }
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
}

/// An Avro container header's entries (key, value), in order.
type Entries = Vec<(String, Vec<u8>)>;

/// An Avro container's header entries, in order, and where its sync marker starts.
fn header(b: &[u8]) -> Option<(Entries, usize)> {
    if b.len() < 4 || &b[..4] != b"Obj\x01" {
        return None;
    }
    let mut pos = 4;
    let mut meta = Vec::new();
    loop {
        let mut n = read_long(b, &mut pos)?;
        if n == 0 {
            break;
        }
        if n < 0 {
            n = n.checked_neg()?;
            read_long(b, &mut pos)?;
        }
        for _ in 0..n {
            let len = usize::try_from(read_long(b, &mut pos)?).ok()?;
            let key = b.get(pos..pos.checked_add(len)?)?;
            pos += len;
            let len = usize::try_from(read_long(b, &mut pos)?).ok()?;
            let value = b.get(pos..pos.checked_add(len)?)?;
            pos += len;
            meta.push((String::from_utf8(key.to_vec()).ok()?, value.to_vec()));
        }
    }
    Some((meta, pos))
}

/// Rename the partition record fields of an Avro schema (JSON) by `field-id`.
fn rename_avro_fields(schema: &mut Value, renamed: &HashMap<i64, String>) {
    match schema {
        Value::Object(o) => {
            if o.get("name").and_then(Value::as_str) == Some("partition") {
                if let Some(Value::Object(t)) = o.get_mut("type") {
                    if let Some(Value::Array(fields)) = t.get_mut("fields") {
                        for f in fields {
                            let id = f.get("field-id").and_then(Value::as_i64);
                            if let Some(new) = id.and_then(|id| renamed.get(&id)) {
                                f["name"] = Value::String(new.clone());
                            }
                        }
                    }
                    return;
                }
            }
            for v in o.values_mut() {
                rename_avro_fields(v, renamed);
            }
        }
        Value::Array(a) => {
            for v in a {
                rename_avro_fields(v, renamed);
            }
        }
        _ => {}
    }
}

/// A manifest as iceberg-rust 0.10.1 parses it, or `None` when it needs no change (or is not
/// one). Only the header changes: its `schema` (v3 types), `partition-spec` and the Avro
/// schema's partition record (void fields renamed); the blocks are copied as they are.
pub(crate) fn manifest(bytes: &[u8]) -> Option<Vec<u8>> {
    let rewritten = fixed_uuids(bytes);
    let bytes = rewritten.as_deref().unwrap_or(bytes);
    match header_and_types(bytes) {
        Some(out) => Some(out),
        None => rewritten,
    }
}

/// [`manifest`]'s header rewrite (v3 types, void fields).
fn header_and_types(bytes: &[u8]) -> Option<Vec<u8>> {
    let (meta, sync_at) = header(bytes)?;
    let value = |k: &str| meta.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_slice());
    let (schema_bytes, spec_bytes) = (value("schema")?, value("partition-spec")?);
    if !suspect(schema_bytes) && !suspect(spec_bytes) {
        return None;
    }
    let mut schema: Value = serde_json::from_slice(schema_bytes).ok()?;
    let mut spec: Value = serde_json::from_slice(spec_bytes).ok()?;
    let mut found = BTreeMap::new();
    schema_types_only(&mut schema, &mut found);
    let mut names = HashSet::new();
    schema_names(&schema, &mut names);
    let renamed = match &mut spec {
        Value::Array(fields) => rename_voids(fields, &names),
        _ => HashMap::new(),
    };
    if found.is_empty() && renamed.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() + 64);
    out.extend_from_slice(b"Obj\x01");
    write_long(&mut out, meta.len() as i64);
    for (k, v) in &meta {
        let v: Vec<u8> = match k.as_str() {
            "schema" => serde_json::to_vec(&schema).ok()?,
            "partition-spec" => serde_json::to_vec(&spec).ok()?,
            "avro.schema" if !renamed.is_empty() => {
                let mut avro: Value = serde_json::from_slice(v).ok()?;
                rename_avro_fields(&mut avro, &renamed);
                serde_json::to_vec(&avro).ok()?
            }
            _ => v.clone(),
        };
        write_long(&mut out, k.len() as i64);
        out.extend_from_slice(k.as_bytes());
        write_long(&mut out, v.len() as i64);
        out.extend_from_slice(&v);
    }
    write_long(&mut out, 0);
    out.extend_from_slice(&bytes[sync_at..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longs_round_trip() {
        for v in [0i64, 1, -1, 63, -64, 64, 1 << 40, i64::MIN, i64::MAX] {
            let mut b = Vec::new();
            write_long(&mut b, v);
            let mut pos = 0;
            assert_eq!(read_long(&b, &mut pos), Some(v));
            assert_eq!(pos, b.len());
        }
    }

    #[test]
    fn v1_refs_are_kept_in_a_property() {
        let md = serde_json::json!({
            "format-version": 1,
            "refs": {
                "main": {"snapshot-id": 3, "type": "branch"},
                "t1": {"snapshot-id": 1, "type": "tag"}
            }
        });
        let out = table_metadata(&serde_json::to_vec(&md).unwrap()).unwrap();
        let out: Value = serde_json::from_slice(&out).unwrap();
        let refs: Value =
            serde_json::from_str(out["properties"][REFS_PROPERTY].as_str().unwrap()).unwrap();
        assert_eq!(refs["t1"]["snapshot-id"], 1);
        // v2 keeps its refs itself; v1 with main only needs nothing.
        let v2 = serde_json::json!({"format-version": 2, "refs": {"t": {"snapshot-id": 1, "type": "tag"}}});
        assert_eq!(table_metadata(&serde_json::to_vec(&v2).unwrap()), None);
        let main = serde_json::json!({"format-version": 1, "refs": {"main": {"snapshot-id": 1, "type": "branch"}}});
        assert_eq!(table_metadata(&serde_json::to_vec(&main).unwrap()), None);
    }

    #[test]
    fn untouched_metadata_is_not_parsed() {
        assert_eq!(table_metadata(b"{\"format-version\": 2}"), None);
        assert_eq!(table_metadata(b"not json \"void\""), None);
    }

    #[test]
    fn voids_and_v3_types() {
        let md = serde_json::json!({
            "format-version": 3,
            "schemas": [{"type": "struct", "schema-id": 1, "fields": [
                {"id": 1, "name": "cat", "type": "string", "required": false},
                {"id": 2, "name": "v", "type": "variant", "required": false},
                {"id": 3, "name": "u", "type": "unknown", "required": false,
                 "initial-default": null},
                {"id": 4, "name": "l", "type": {"type": "list", "element-id": 5,
                  "element": "geometry(srid:4326)", "element-required": false},
                 "required": false},
                {"id": 6, "name": "ns", "type": "timestamp_ns", "required": false,
                 "initial-default": "2017-11-16T22:31:08.123456789"},
                {"id": 7, "name": "i", "type": "int", "required": false, "initial-default": 3}
            ]}],
            "partition-specs": [{"spec-id": 0, "fields": [
                {"source-id": 1, "field-id": 1000, "transform": "void", "name": "cat"},
                {"source-id": 1, "field-id": 1001, "transform": "identity", "name": "cat"}
            ]}],
            "properties": {"a": "b"}
        });
        let out = table_metadata(&serde_json::to_vec(&md).unwrap()).unwrap();
        let out: Value = serde_json::from_slice(&out).unwrap();
        let f = &out["schemas"][0]["fields"];
        assert_eq!(f[1]["type"], "binary");
        assert_eq!(f[2]["type"], "binary");
        assert!(f[2].get("initial-default").is_none());
        assert_eq!(f[3]["type"]["element"], "binary");
        let spec = &out["partition-specs"][0]["fields"];
        assert_eq!(spec[0]["name"], "_cat_void_1000");
        assert_eq!(spec[1]["name"], "cat");
        let props: HashMap<String, String> =
            serde_json::from_value(out["properties"].clone()).unwrap();
        let dropped = V3Types::of(&props, 1);
        assert_eq!(
            dropped.dropped_default(6),
            Some(&Value::from("2017-11-16T22:31:08.123456789"))
        );
        assert_eq!(dropped.dropped_default(7), None, "iceberg-rust parses it");
        let t = V3Types::of(&props, 1);
        assert_eq!(t.get(2), Some("variant"));
        assert!(t.is_unknown(3));
        assert_eq!(t.get(5), Some("geometry(srid:4326)"));
        assert_eq!(t.get(1), None);
        assert_eq!(props["a"], "b");
    }
}
