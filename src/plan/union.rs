//! Union by name: one schema for plain files whose schemas differ
//! ([`Scan::union_by_name`](crate::Scan::union_by_name)), and each file's columns mapped to
//! it.
//!
//! [`Union::add`] folds each file's Arrow schema into the scan's: columns matched by name (in
//! the order they first appear), a column some file lacks is nullable (null in that file's
//! rows), and types differing between files widen only where every value converts exactly
//! ([`widen`]); anything else is a `SchemaMismatch` naming the column and both files.
//! [`file_mapping`] then maps one file to that schema through [`Mapping::resolve`], as a task
//! maps its file (missing columns null, primitives cast, struct children by name).
//!
//! Invariant: the scan's schema depends only on the files (never on which footer arrived
//! first): files are folded in the scan's order.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, SchemaRef, TimeUnit};

use crate::error::{Error, ErrorKind, Result};
use crate::footer::FileMeta;
use crate::plan::mapping::{Mapping, OutCol, Rules};
use crate::plan::project::projected_schema;
use crate::task::FIELD_ID_KEY;

/// The schema of a union-by-name scan, folded file by file.
#[derive(Debug, Default)]
pub(crate) struct Union {
    fields: Vec<Field>,
    /// Per field, the first file that had it (for errors).
    from: Vec<Arc<str>>,
    files: usize,
    metadata: Option<std::collections::HashMap<String, String>>,
}

impl Union {
    /// Fold file `name`'s Arrow schema in.
    pub fn add(&mut self, schema: &Schema, name: &Arc<str>) -> Result<()> {
        let first = self.files == 0;
        self.files += 1;
        if self.metadata.is_none() {
            self.metadata = Some(schema.metadata().clone());
        }
        let mut seen = vec![false; self.fields.len()];
        for f in schema.fields() {
            match self.fields.iter().position(|x| x.name() == f.name()) {
                Some(i) => {
                    seen[i] = true;
                    let merged = merge(&self.fields[i], f).map_err(|why| {
                        Error::new(
                            ErrorKind::SchemaMismatch,
                            format!(
                                "union by name: column {:?} is {} in {} and {} here: {why}",
                                f.name(),
                                self.fields[i].data_type(),
                                self.from[i],
                                f.data_type()
                            ),
                        )
                        .with_path(&**name)
                    })?;
                    self.fields[i] = merged;
                }
                None => {
                    // A column earlier files lack is null in their rows.
                    let f = strip_id(f).with_nullable(f.is_nullable() || !first);
                    self.fields.push(f);
                    self.from.push(Arc::clone(name));
                }
            }
        }
        for (i, seen) in seen.into_iter().enumerate() {
            if !seen {
                self.fields[i].set_nullable(true);
            }
        }
        Ok(())
    }

    /// The scan's file columns (before partition columns and the row index).
    pub fn schema(self) -> SchemaRef {
        Arc::new(Schema::new_with_metadata(
            self.fields,
            self.metadata.unwrap_or_default(),
        ))
    }
}

/// `f` without its Parquet field id (a union matches by name: ids of unrelated files mean
/// nothing to each other), children included.
fn strip_id(f: &Field) -> Field {
    let mut md = f.metadata().clone();
    md.remove(FIELD_ID_KEY);
    let ty = map_children(f.data_type(), &|c| Arc::new(strip_id(c)));
    f.clone().with_metadata(md).with_data_type(ty)
}

/// `ty` with each child field (struct fields, list and map entries) replaced by `g(child)`.
fn map_children(ty: &DataType, g: &dyn Fn(&Field) -> FieldRef) -> DataType {
    match ty {
        DataType::Struct(fs) => DataType::Struct(fs.iter().map(|c| g(c)).collect()),
        DataType::List(c) => DataType::List(g(c)),
        DataType::LargeList(c) => DataType::LargeList(g(c)),
        DataType::FixedSizeList(c, n) => DataType::FixedSizeList(g(c), *n),
        DataType::Map(c, sorted) => DataType::Map(g(c), *sorted),
        t => t.clone(),
    }
}

/// Two files' fields of one name as one field: nullable if either is, the type both widen to.
fn merge(a: &Field, b: &Field) -> std::result::Result<Field, String> {
    let ty = widen(a.data_type(), b.data_type())?;
    Ok(a.clone()
        .with_data_type(ty)
        .with_nullable(a.is_nullable() || b.is_nullable()))
}

/// Bits of an integer type, and whether it is signed.
fn int_bits(t: &DataType) -> Option<(u32, bool)> {
    Some(match t {
        DataType::Int8 => (8, true),
        DataType::Int16 => (16, true),
        DataType::Int32 => (32, true),
        DataType::Int64 => (64, true),
        DataType::UInt8 => (8, false),
        DataType::UInt16 => (16, false),
        DataType::UInt32 => (32, false),
        DataType::UInt64 => (64, false),
        _ => return None,
    })
}

fn int_type(bits: u32, signed: bool) -> DataType {
    match (bits, signed) {
        (8, true) => DataType::Int8,
        (16, true) => DataType::Int16,
        (32, true) => DataType::Int32,
        (64, true) => DataType::Int64,
        (8, false) => DataType::UInt8,
        (16, false) => DataType::UInt16,
        (32, false) => DataType::UInt32,
        _ => DataType::UInt64,
    }
}

/// Bits of mantissa (with the implicit one) of a float type.
fn float_mantissa(t: &DataType) -> Option<u32> {
    match t {
        DataType::Float16 => Some(11),
        DataType::Float32 => Some(24),
        DataType::Float64 => Some(53),
        _ => None,
    }
}

fn unit_rank(u: &TimeUnit) -> u8 {
    match u {
        TimeUnit::Second => 0,
        TimeUnit::Millisecond => 1,
        TimeUnit::Microsecond => 2,
        TimeUnit::Nanosecond => 3,
    }
}

/// The type that holds every value of `a` and of `b` exactly: integers widen (a signed type
/// wide enough for an unsigned one), floats widen, integers of at most a float's mantissa
/// become that float, decimals keep both integer digits and scales, strings and binaries
/// become the large or view type either has, timestamps of one time zone their finer unit,
/// and structs, lists and maps widen child by child (struct children by name). Dictionary
/// encoding is dropped when the other side has none.
pub(crate) fn widen(a: &DataType, b: &DataType) -> std::result::Result<DataType, String> {
    use DataType::*;
    if a == b {
        return Ok(a.clone());
    }
    let no = || format!("{a} and {b} have no common type that holds both exactly");
    match (a, b) {
        (Null, t) | (t, Null) => return Ok(t.clone()),
        (Dictionary(_, v), t) | (t, Dictionary(_, v)) => return widen(v, t),
        _ => {}
    }
    let int = int_bits(a).is_some() || int_bits(b).is_some();
    if int || (float_mantissa(a).is_some() && float_mantissa(b).is_some()) {
        return widen_number(a, b).ok_or_else(no);
    }
    Ok(match (a, b) {
        (Decimal128(p1, s1) | Decimal256(p1, s1), Decimal128(p2, s2) | Decimal256(p2, s2)) => {
            let wide = matches!(a, Decimal256(..)) || matches!(b, Decimal256(..));
            return widen_decimal((*p1, *s1), (*p2, *s2), wide).ok_or_else(no);
        }
        (Utf8 | LargeUtf8 | Utf8View, Utf8 | LargeUtf8 | Utf8View) => {
            if matches!(a, LargeUtf8) || matches!(b, LargeUtf8) {
                LargeUtf8
            } else {
                Utf8View
            }
        }
        (Binary | LargeBinary | BinaryView, Binary | LargeBinary | BinaryView) => {
            if matches!(a, LargeBinary) || matches!(b, LargeBinary) {
                LargeBinary
            } else {
                BinaryView
            }
        }
        (Timestamp(u1, z1), Timestamp(u2, z2)) if z1 == z2 => Timestamp(
            if unit_rank(u1) > unit_rank(u2) {
                *u1
            } else {
                *u2
            },
            z1.clone(),
        ),
        (Struct(fa), Struct(fb)) => return widen_struct(fa, fb),
        (List(x) | LargeList(x), List(y) | LargeList(y)) => {
            let item = Arc::new(merge(x, y)?);
            if matches!(a, LargeList(_)) || matches!(b, LargeList(_)) {
                LargeList(item)
            } else {
                List(item)
            }
        }
        (Map(x, s1), Map(y, s2)) if s1 == s2 => Map(Arc::new(merge(x, y)?), *s1),
        _ => return Err(no()),
    })
}

/// [`widen`] of two numbers, at least one an integer or both floats: integers widen (a signed
/// type wide enough for an unsigned one), floats widen, an integer of at most a float's
/// mantissa becomes that float (or `Float64`); `None` when nothing holds both.
fn widen_number(a: &DataType, b: &DataType) -> Option<DataType> {
    match (int_bits(a), int_bits(b)) {
        (Some((ab, asg)), Some((bb, bsg))) => {
            if asg == bsg {
                return Some(int_type(ab.max(bb), asg));
            }
            let (s, u) = if asg { (ab, bb) } else { (bb, ab) };
            if s > u {
                Some(int_type(s, true))
            } else if u < 64 {
                Some(int_type(u * 2, true))
            } else {
                None
            }
        }
        (Some((bits, signed)), None) | (None, Some((bits, signed))) => {
            let float = if int_bits(a).is_some() { b } else { a };
            let value_bits = if signed { bits - 1 } else { bits };
            match float_mantissa(float) {
                Some(m) if value_bits <= m => Some(float.clone()),
                Some(_) if value_bits <= 53 => Some(DataType::Float64),
                _ => None,
            }
        }
        (None, None) => Some(if float_mantissa(a) > float_mantissa(b) {
            a.clone()
        } else {
            b.clone()
        }),
    }
}

/// [`widen`] of two decimals (precision, scale): both integer digits and both scales kept,
/// in 128 bits unless either is 256 (`wide`) or the digits need more.
fn widen_decimal((p1, s1): (u8, i8), (p2, s2): (u8, i8), wide: bool) -> Option<DataType> {
    let scale = s1.max(s2);
    let int_digits = (p1 as i16 - s1 as i16).max(p2 as i16 - s2 as i16);
    let precision = int_digits + scale as i16;
    if !wide && precision <= 38 {
        Some(DataType::Decimal128(precision as u8, scale))
    } else if precision <= 76 {
        Some(DataType::Decimal256(precision as u8, scale))
    } else {
        None
    }
}

/// [`widen`] of two structs: children matched by name and merged, those only one side has
/// made nullable.
fn widen_struct(fa: &Fields, fb: &Fields) -> std::result::Result<DataType, String> {
    let mut out: Vec<Field> = fa.iter().map(|f| Field::clone(f)).collect();
    let mut seen = vec![false; out.len()];
    for f in fb {
        match out.iter().position(|x| x.name() == f.name()) {
            Some(i) => {
                seen[i] = true;
                out[i] = merge(&out[i], f)
                    .map_err(|why| format!("struct field {:?}: {why}", f.name()))?;
            }
            None => out.push(strip_id(f).with_nullable(true)),
        }
    }
    for (i, seen) in seen.into_iter().enumerate() {
        if !seen {
            out[i].set_nullable(true);
        }
    }
    Ok(DataType::Struct(out.into()))
}

/// The mapping of one file of a union-by-name scan: `fields` (the output's file columns, of
/// the union schema) matched by name against the file, builds prepared; and the same for
/// `all` (every column of the union, for the filter: not prepared, only looked up).
pub(crate) fn file_mapping(
    meta: &FileMeta,
    fields: &Fields,
    all: &Fields,
) -> Result<(Mapping, Mapping)> {
    let name: &str = &meta.file.name;
    if let Some((root, _)) = meta.raw.first() {
        let column = meta.reader.schema().field(*root).name().clone();
        return Err(Error::new(
            ErrorKind::Unsupported,
            format!(
                "union by name: column {column:?} (an INTERVAL or 128-bit integer) can only \
                 be read without union_by_name"
            ),
        )
        .with_path(name));
    }
    let file_schema = meta.reader.schema();
    let mut mapping = Mapping::resolve(fields, None, Rules::default(), file_schema, name)?;
    let decoded = projected_schema(meta, &mapping.leaves())?;
    let roots: Vec<usize> = mapping.roots.iter().map(|(r, _)| *r).collect();
    mapping.prepare(
        &|r| {
            let k = roots.iter().position(|x| *x == r)?;
            decoded.fields().get(k).cloned()
        },
        name,
    )?;
    let whole = Mapping::resolve(all, None, Rules::default(), file_schema, name)?;
    Ok((mapping, whole))
}

/// The output of a union-by-name scan before the row index: the union's file columns it reads
/// and, per output column, `None` for the next of them or `Some(k)` for partition key
/// `keys[k]`. `names`: the columns asked for (top-level names of the union or keys, each once,
/// in that order); `None`: every file column, then the keys. An unknown name is the error.
pub(crate) fn select(
    names: Option<&[String]>,
    union: &Schema,
    keys: &[&String],
) -> std::result::Result<(Vec<FieldRef>, Vec<Option<usize>>), String> {
    let Some(names) = names else {
        let fields: Vec<FieldRef> = union.fields().iter().cloned().collect();
        let order = fields
            .iter()
            .map(|_| None)
            .chain((0..keys.len()).map(Some))
            .collect();
        return Ok((fields, order));
    };
    let (mut fields, mut order): (Vec<FieldRef>, Vec<Option<usize>>) = (Vec::new(), Vec::new());
    for c in names {
        if let Some(k) = keys.iter().position(|key| *key == c) {
            if !order.contains(&Some(k)) {
                order.push(Some(k));
            }
        } else if let Ok(f) = union.field_with_name(c) {
            if !fields.iter().any(|x| x.name() == c) {
                fields.push(Arc::new(f.clone()));
                order.push(None);
            }
        } else {
            let known: Vec<&String> = union
                .fields()
                .iter()
                .map(|f| f.name())
                .chain(keys.iter().copied())
                .collect();
            return Err(format!(
                "no column named {c:?} in the union of the files' schemas (a union by name \
                 selects top-level columns): {known:?}"
            ));
        }
    }
    Ok((fields, order))
}

/// `mapping`'s columns with `extra` (partition constants, the row index) spliced in: `order`
/// gives, per output column, `None` for the next of `mapping`'s columns or `Some(k)` for
/// `extra[k]`.
pub(crate) fn splice(
    mapping: Mapping,
    extra: &[(FieldRef, OutCol)],
    order: &[Option<usize>],
) -> Mapping {
    let mut own = mapping.fields.iter().cloned().zip(mapping.columns);
    let (fields, columns): (Vec<FieldRef>, Vec<OutCol>) = order
        .iter()
        .filter_map(|o| match o {
            Some(k) => Some(extra[*k].clone()),
            None => own.next(),
        })
        .unzip();
    Mapping::plain(fields.into(), columns, mapping.roots)
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataType::*;

    #[test]
    fn integers_widen_to_a_type_holding_both() {
        assert_eq!(widen(&Int32, &Int64), Ok(Int64));
        assert_eq!(widen(&UInt8, &Int8), Ok(Int16));
        assert_eq!(widen(&UInt32, &Int64), Ok(Int64));
        assert_eq!(widen(&UInt32, &Int32), Ok(Int64));
        assert!(widen(&UInt64, &Int64).is_err());
        assert_eq!(widen(&Int32, &Float64), Ok(Float64));
        assert_eq!(widen(&Int16, &Float32), Ok(Float32));
        assert_eq!(widen(&Int32, &Float32), Ok(Float64));
        assert!(widen(&Int64, &Float64).is_err());
        assert!(widen(&Utf8, &Int64).is_err());
    }

    #[test]
    fn decimals_keep_integer_digits_and_scale() {
        assert_eq!(
            widen(&Decimal128(10, 2), &Decimal128(12, 4)),
            Ok(Decimal128(12, 4))
        );
        assert_eq!(
            widen(&Decimal128(10, 0), &Decimal128(5, 5)),
            Ok(Decimal128(15, 5))
        );
        assert_eq!(
            widen(&Decimal128(38, 0), &Decimal128(38, 10)),
            Ok(Decimal256(48, 10))
        );
    }

    #[test]
    fn structs_union_their_children() {
        let a = Struct(vec![Field::new("x", Int32, false)].into());
        let b = Struct(vec![Field::new("y", Utf8, false), Field::new("x", Int64, false)].into());
        let want = Struct(vec![Field::new("x", Int64, false), Field::new("y", Utf8, true)].into());
        assert_eq!(widen(&a, &b), Ok(want));
    }

    #[test]
    fn a_column_missing_from_a_file_is_nullable() {
        let one = Schema::new(vec![Field::new("a", Int32, false)]);
        let two = Schema::new(vec![
            Field::new("a", Int64, false),
            Field::new("b", Utf8, false),
        ]);
        let mut u = super::Union::default();
        u.add(&one, &Arc::from("one")).unwrap();
        u.add(&two, &Arc::from("two")).unwrap();
        u.add(&one, &Arc::from("three")).unwrap();
        let s = u.schema();
        assert_eq!(s.field(0), &Field::new("a", Int64, false));
        assert_eq!(s.field(1), &Field::new("b", Utf8, true));
    }

    #[test]
    fn a_conflict_names_both_files() {
        let one = Schema::new(vec![Field::new("a", Int32, false)]);
        let two = Schema::new(vec![Field::new("a", Utf8, false)]);
        let mut u = super::Union::default();
        u.add(&one, &Arc::from("one.parquet")).unwrap();
        let e = u.add(&two, &Arc::from("two.parquet")).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("one.parquet") && msg.contains("two.parquet"),
            "{msg}"
        );
        assert_eq!(e.kind(), ErrorKind::SchemaMismatch);
    }
}
