//! Nanosecond timestamps: the column types `timestamp_nanos` and `timestamp_nanos_ntz` and
//! the reader feature `timestampNanos` that deltalake writes (`enable_nanosecond_timestamps()`)
//! and delta-kernel 0.29 does not know (it refuses the feature and the types).
//!
//! The kernel is shown the table with each such column as a microsecond `timestamp` /
//! `timestamp_ntz` marked [`MARK`] in its field metadata, and without the feature: the log's
//! JSON files are rewritten as the engine's store serves them ([`rewrite_json`]), checkpoint
//! batches as the Parquet handler reads them ([`rewrite_checkpoint`]). Everything rayquet
//! derives from the kernel's schemas then restores the marked columns' real type
//! ([`to_arrow`]): the files are read, filtered and delivered as `Timestamp(Nanosecond)`
//! (with `UTC` for `timestamp_nanos`), as deltalake reads them. The kernel's transforms see
//! the marked columns as `long` ([`as_long`], [`retype`]), an exact reinterpretation.
//!
//! Invariants: the kernel never judges a marked column's statistics (their strings are kept to
//! the millisecond: predicates on marked columns are not handed to it, and they give no
//! column statistics); a table whose log was rewritten is never written through that engine
//! ([`Rewritten`]); a nanosecond type the marks cannot reach (a list's element, a map's key or
//! value, a partition column) is left as it is, so the kernel refuses the table as before
//! (`Unsupported`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, RecordBatch, StringArray, StructArray};
use arrow::datatypes::{
    DataType as ArrowType, Field, FieldRef, Fields, Schema as ArrowSchema, SchemaRef, TimeUnit,
};
use delta_kernel::engine::arrow_conversion::TryIntoArrow;
use delta_kernel::schema::{DataType, StructField, StructType};
use serde_json::Value;

/// Field metadata key marking a column whose type is really nanoseconds.
pub(crate) const MARK: &str = "rayquet.timestampNanos";
/// The reader (and writer) feature.
const FEATURE: &str = "timestampNanos";

/// Why a write is refused after a rewrite.
pub(crate) const NO_WRITES: &str = "this engine read the table's nanosecond timestamps through a \
     rewritten log (delta-kernel 0.29 does not know them): it does not write to the table";

/// Whether the engine rewrote any of the table's log: then it must not write to the table.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rewritten(Arc<AtomicBool>);

impl Rewritten {
    pub fn set(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn get(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Whether `text` may hold what is rewritten (a cheap test before parsing).
fn mentions(text: &[u8]) -> bool {
    let has = |needle: &[u8]| text.windows(needle.len()).any(|w| w == needle);
    has(b"timestampNanos") || has(b"timestamp_nanos")
}

/// A log JSON file (one action per line) as the kernel is shown it, or `None` when it holds
/// nothing to rewrite. Lines other than `protocol` and `metaData` actions are kept byte for
/// byte.
pub(crate) fn rewrite_json(bytes: &[u8]) -> Option<Vec<u8>> {
    if !mentions(bytes) {
        return None;
    }
    let mut out = Vec::with_capacity(bytes.len() + 64);
    let mut changed = false;
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let rewritten = mentions(body)
            .then(|| serde_json::from_slice::<Value>(body).ok())
            .flatten()
            .and_then(|mut action| rewrite_action(&mut action).then_some(action));
        match rewritten {
            Some(action) => {
                changed = true;
                out.extend_from_slice(action.to_string().as_bytes());
                if line.len() > body.len() {
                    out.push(b'\n');
                }
            }
            None => out.extend_from_slice(line),
        }
    }
    changed.then_some(out)
}

/// Rewrite one action in place; whether it changed.
fn rewrite_action(action: &mut Value) -> bool {
    let mut changed = false;
    if let Some(protocol) = action.get_mut("protocol") {
        for key in ["readerFeatures", "writerFeatures"] {
            if let Some(Value::Array(features)) = protocol.get_mut(key) {
                let before = features.len();
                features.retain(|f| f.as_str() != Some(FEATURE));
                changed |= features.len() != before;
            }
        }
    }
    if let Some(metadata) = action.get_mut("metaData") {
        let partitions: Vec<String> = match metadata.get("partitionColumns") {
            Some(Value::Array(cs)) => cs
                .iter()
                .filter_map(|c| c.as_str().map(String::from))
                .collect(),
            _ => Vec::new(),
        };
        if let Some(Value::String(schema)) = metadata.get_mut("schemaString") {
            if let Some(s) = rewrite_schema_string(schema, &partitions) {
                *schema = s;
                changed = true;
            }
        }
    }
    changed
}

/// A table's schema string with its markable nanosecond columns marked (see the module docs),
/// or `None` when there are none. `partitions`: the partition columns, left as they are.
pub(crate) fn rewrite_schema_string(schema: &str, partitions: &[String]) -> Option<String> {
    if !mentions(schema.as_bytes()) {
        return None;
    }
    let mut value: Value = serde_json::from_str(schema).ok()?;
    let fields = value.get_mut("fields")?.as_array_mut()?;
    let mut changed = false;
    for f in fields {
        let partition = f
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|n| partitions.iter().any(|p| p == n));
        if !partition {
            changed |= mark_field(f);
        }
    }
    changed.then(|| value.to_string())
}

/// Mark `field` (a schema JSON field) if it is a nanosecond timestamp, else its struct
/// children; whether anything changed.
fn mark_field(field: &mut Value) -> bool {
    let micros = match field.get("type") {
        Some(Value::String(t)) if t == "timestamp_nanos" => "timestamp",
        Some(Value::String(t)) if t == "timestamp_nanos_ntz" => "timestamp_ntz",
        _ => {
            let children = field
                .get_mut("type")
                .filter(|t| t.get("type").and_then(Value::as_str) == Some("struct"))
                .and_then(|t| t.get_mut("fields"))
                .and_then(Value::as_array_mut);
            let mut changed = false;
            for c in children.into_iter().flatten() {
                changed |= mark_field(c);
            }
            return changed;
        }
    };
    let Some(object) = field.as_object_mut() else {
        return false;
    };
    object.insert("type".into(), Value::String(micros.into()));
    let metadata = object
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    match metadata.as_object_mut() {
        Some(m) => {
            m.insert(MARK.into(), Value::String("1".into()));
            true
        }
        None => false,
    }
}

/// A checkpoint batch as the kernel is shown it: `protocol.readerFeatures`/`writerFeatures`
/// without the feature and `metaData.schemaString` marked, when the batch has them and they
/// mention nanoseconds; else the batch as it is.
pub(crate) fn rewrite_checkpoint(batch: RecordBatch, rewritten: &Rewritten) -> RecordBatch {
    let schema = batch.schema();
    let mut columns = batch.columns().to_vec();
    let mut changed = false;
    for (i, f) in schema.fields().iter().enumerate() {
        let new = match f.name().as_str() {
            "protocol" => rewrite_struct(&columns[i], |name, child| match name {
                "readerFeatures" | "writerFeatures" => without_feature(child),
                _ => None,
            }),
            "metaData" => {
                let partitions = columns[i]
                    .as_struct_opt()
                    .and_then(|s| s.column_by_name("partitionColumns").cloned());
                rewrite_struct(&columns[i], |name, child| match name {
                    "schemaString" => marked_schemas(child, partitions.as_ref()),
                    _ => None,
                })
            }
            _ => None,
        };
        if let Some(c) = new {
            columns[i] = c;
            changed = true;
        }
    }
    if !changed {
        return batch;
    }
    match RecordBatch::try_new(schema, columns) {
        Ok(b) => {
            rewritten.set();
            b
        }
        Err(_) => batch,
    }
}

/// `column` (a struct) with the children `f(name, child)` replaces, or `None` when none is.
fn rewrite_struct(
    column: &ArrayRef,
    f: impl Fn(&str, &ArrayRef) -> Option<ArrayRef>,
) -> Option<ArrayRef> {
    let s = column.as_struct_opt()?;
    let mut children = s.columns().to_vec();
    let mut changed = false;
    for (i, field) in s.fields().iter().enumerate() {
        if let Some(c) = f(field.name(), &children[i]) {
            children[i] = c;
            changed = true;
        }
    }
    if !changed {
        return None;
    }
    let rebuilt = StructArray::try_new(s.fields().clone(), children, s.nulls().cloned()).ok()?;
    Some(Arc::new(rebuilt))
}

/// A list of strings without the feature, when any row has it.
fn without_feature(list: &ArrayRef) -> Option<ArrayRef> {
    let l = list.as_list_opt::<i32>()?;
    let values = l.values().as_string_opt::<i32>()?;
    if !values.iter().any(|v| v == Some(FEATURE)) {
        return None;
    }
    let mut builder = arrow::array::ListBuilder::new(arrow::array::StringBuilder::new())
        .with_field(match l.data_type() {
            ArrowType::List(f) => Arc::clone(f),
            _ => return None,
        });
    for row in 0..l.len() {
        if l.is_null(row) {
            builder.append_null();
            continue;
        }
        let items = l.value(row);
        let items = items.as_string::<i32>();
        for v in items.iter() {
            match v {
                Some(FEATURE) => {}
                v => builder.values().append_option(v),
            }
        }
        builder.append(true);
    }
    let built: ListArray = builder.finish();
    Some(Arc::new(built))
}

/// Schema strings with their nanosecond columns marked (`partitions`: each row's partition
/// columns, a list of strings), when any row changes.
fn marked_schemas(strings: &ArrayRef, partitions: Option<&ArrayRef>) -> Option<ArrayRef> {
    let s = strings.as_string_opt::<i32>()?;
    let parts = partitions.and_then(|p| p.as_list_opt::<i32>());
    let mut changed = false;
    let out: StringArray = (0..s.len())
        .map(|row| {
            if s.is_null(row) {
                return None;
            }
            let keys: Vec<String> = match parts {
                Some(p) if p.is_valid(row) => {
                    let v = p.value(row);
                    v.as_string_opt::<i32>()
                        .map(|a| a.iter().flatten().map(String::from).collect())
                        .unwrap_or_default()
                }
                _ => Vec::new(),
            };
            match rewrite_schema_string(s.value(row), &keys) {
                Some(new) => {
                    changed = true;
                    Some(new)
                }
                None => Some(s.value(row).to_string()),
            }
        })
        .collect();
    changed.then(|| Arc::new(out) as ArrayRef)
}

/// Whether `field` is marked.
pub(crate) fn is_marked(field: &StructField) -> bool {
    field.metadata().contains_key(MARK)
}

/// Whether any field of `schema`, at any depth, is marked.
pub(crate) fn has_marks(schema: &StructType) -> bool {
    schema.fields().any(|f| {
        is_marked(f)
            || match f.data_type() {
                DataType::Struct(s) => has_marks(s),
                _ => false,
            }
    })
}

/// The Arrow schema of a kernel schema, marked columns as nanosecond timestamps (the mark
/// dropped).
pub(crate) fn to_arrow(schema: &StructType) -> Result<ArrowSchema, arrow::error::ArrowError> {
    let arrow: ArrowSchema = schema.try_into_arrow()?;
    if !has_marks(schema) {
        return Ok(arrow);
    }
    let fields: Fields = arrow.fields().iter().map(restore).collect();
    Ok(ArrowSchema::new_with_metadata(
        fields,
        arrow.metadata().clone(),
    ))
}

/// `f` with its (and its struct children's) marked types restored.
fn restore(f: &FieldRef) -> FieldRef {
    if f.metadata().contains_key(MARK) {
        let mut metadata = f.metadata().clone();
        metadata.remove(MARK);
        let ty = match f.data_type() {
            ArrowType::Timestamp(_, tz) => ArrowType::Timestamp(TimeUnit::Nanosecond, tz.clone()),
            other => other.clone(),
        };
        return Arc::new(Field::clone(f).with_data_type(ty).with_metadata(metadata));
    }
    match f.data_type() {
        ArrowType::Struct(children) => Arc::new(
            Field::clone(f)
                .with_data_type(ArrowType::Struct(children.iter().map(restore).collect())),
        ),
        _ => Arc::clone(f),
    }
}

/// `schema` with every marked column (at any depth) a `long`, as the kernel's evaluator is
/// given it around a transform.
pub(crate) fn as_long(schema: &StructType) -> delta_kernel::DeltaResult<StructType> {
    StructType::try_new(schema.fields().map(long_field))
}

fn long_field(f: &StructField) -> StructField {
    let mut f = f.clone();
    if is_marked(&f) {
        f.data_type = DataType::LONG;
    } else if let DataType::Struct(s) = &f.data_type {
        if let Ok(s) = StructType::try_new(s.fields().map(long_field)) {
            f.data_type = DataType::Struct(Box::new(s));
        }
    }
    f
}

/// `batch` with each column cast to `schema`'s type where they differ (nanosecond timestamps
/// and `long`s, struct children included: an exact reinterpretation), under `schema`.
pub(crate) fn retype(batch: RecordBatch, schema: &SchemaRef) -> arrow::error::Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| match c.data_type() == f.data_type() {
            true => Ok(Arc::clone(c)),
            false => arrow::compute::cast(c, f.data_type()),
        })
        .collect::<arrow::error::Result<Vec<_>>>()?;
    let opts = arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    RecordBatch::try_new_with_options(Arc::clone(schema), columns, &opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_shown_with_microsecond_types_marked_and_without_the_feature() {
        let schema = r#"{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"ts","type":"timestamp_nanos_ntz","nullable":true,"metadata":{}},{"name":"s","type":{"type":"struct","fields":[{"name":"tz","type":"timestamp_nanos","nullable":true,"metadata":{}}]},"nullable":true,"metadata":{}},{"name":"l","type":{"type":"array","elementType":"timestamp_nanos","containsNull":true},"nullable":true,"metadata":{}},{"name":"p","type":"timestamp_nanos","nullable":true,"metadata":{}}]}"#;
        let log = format!(
            "{}\n{}\n{}\n",
            r#"{"commitInfo":{"timestamp":1}}"#,
            r#"{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["timestampNtz","timestampNanos"],"writerFeatures":["timestampNtz","timestampNanos"]}}"#,
            serde_json::json!({"metaData": {"schemaString": schema, "partitionColumns": ["p"]}}),
        );
        let out = String::from_utf8(rewrite_json(log.as_bytes()).unwrap()).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(
            lines[0], r#"{"commitInfo":{"timestamp":1}}"#,
            "kept as it was"
        );
        let protocol: Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(
            protocol["protocol"]["readerFeatures"],
            serde_json::json!(["timestampNtz"])
        );
        assert_eq!(
            protocol["protocol"]["writerFeatures"],
            serde_json::json!(["timestampNtz"])
        );
        let md: Value = serde_json::from_str(lines[2]).unwrap();
        let s: Value =
            serde_json::from_str(md["metaData"]["schemaString"].as_str().unwrap()).unwrap();
        let f = &s["fields"];
        assert_eq!(f[1]["type"], "timestamp_ntz");
        assert_eq!(f[1]["metadata"][MARK], "1");
        assert_eq!(f[2]["type"]["fields"][0]["type"], "timestamp");
        assert_eq!(f[2]["type"]["fields"][0]["metadata"][MARK], "1");
        // Out of the marks' reach: left for the kernel to refuse.
        assert_eq!(f[3]["type"]["elementType"], "timestamp_nanos");
        assert_eq!(f[4]["type"], "timestamp_nanos");
        assert!(out.ends_with('\n'));
        assert_eq!(rewrite_json(b"{\"add\":{}}\n"), None);
    }

    #[test]
    fn marked_columns_read_as_nanoseconds_and_transform_as_longs() {
        let schema = r#"{"type":"struct","fields":[{"name":"ts","type":"timestamp_nanos","nullable":true,"metadata":{}},{"name":"n","type":"timestamp","nullable":true,"metadata":{}}]}"#;
        let marked = rewrite_schema_string(schema, &[]).unwrap();
        let kernel: StructType = serde_json::from_str(&marked).unwrap();
        assert!(has_marks(&kernel));
        let arrow = to_arrow(&kernel).unwrap();
        assert_eq!(
            arrow.field(0).data_type(),
            &ArrowType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
        );
        assert!(!arrow.field(0).metadata().contains_key(MARK));
        assert_eq!(
            arrow.field(1).data_type(),
            &ArrowType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
        let long: ArrowSchema = (&as_long(&kernel).unwrap()).try_into_arrow().unwrap();
        assert_eq!(long.field(0).data_type(), &ArrowType::Int64);
        let ns = arrow::array::TimestampNanosecondArray::from(vec![
            Some(1_700_000_000_123_456_789),
            None,
        ])
        .with_timezone("UTC");
        let us =
            arrow::array::TimestampMicrosecondArray::from(vec![Some(1), None]).with_timezone("UTC");
        let batch = RecordBatch::try_new(
            Arc::new(arrow.clone()),
            vec![Arc::new(ns.clone()), Arc::new(us)],
        )
        .unwrap();
        let as_longs = retype(batch, &Arc::new(long)).unwrap();
        assert_eq!(
            as_longs
                .column(0)
                .as_primitive::<arrow::datatypes::Int64Type>()
                .value(0),
            1_700_000_000_123_456_789
        );
        let back = retype(as_longs, &Arc::new(arrow)).unwrap();
        assert_eq!(back.column(0).as_ref(), &ns as &dyn Array);
    }
}
