//! The Arrow schema a Parquet file may carry (`ARROW:schema`: a base64 IPC `Schema` message,
//! the writer's Arrow types), walked before parquet converts it ([`arrow_schema`]).
//!
//! arrow-ipc verifies the flatbuffer, then converts it with `fb_to_schema`, which panics on
//! content that verifies but means nothing: an integer of 7 bits, a list without a child, a
//! dictionary without an index type, a decimal whose precision does not fit a byte... This
//! walk mirrors that conversion (`arrow::ipc::convert::get_data_type`, arrow-ipc 58) and refuses
//! exactly what it would panic on; a hint that does not decode or verify is left to parquet,
//! which reports it as an error itself.
//!
//! Invariant: a file this refuses is one parquet cannot open at all (the conversion panics),
//! so no readable file is refused. A hint of a type the Arrow format has no place for but a
//! real writer uses (polars' 128-bit integers) is not an error: the file is read without its
//! hint ([`Hint::Ignore`]), in the types of its Parquet schema.

use arrow::ipc::{Field, Type};
use base64::Engine;
use parquet::file::metadata::ParquetMetaData;

use crate::validate::thrift::R;

/// The key of the Arrow schema in a Parquet file's key-value metadata.
const ARROW_SCHEMA_KEY: &str = "ARROW:schema";

/// What to do with a file's `ARROW:schema` hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hint {
    /// None, or one parquet converts.
    Use,
    /// One that names a type Arrow cannot represent, which a real writer produces: read the
    /// file without it. The top-level fields it calls 128-bit integers (polars' Int128,
    /// stored as 16 little-endian bytes) are listed.
    Ignore { int128: Vec<String> },
}

/// The `ARROW:schema` hint of `md` decoded, when it has one that converts (call after
/// [`arrow_schema`] said [`Hint::Use`]: the conversion cannot panic then).
pub(crate) fn embedded_schema(md: &ParquetMetaData) -> Option<arrow::datatypes::Schema> {
    let encoded = md
        .file_metadata()
        .key_value_metadata()?
        .iter()
        .rev()
        .find(|kv| kv.key == ARROW_SCHEMA_KEY && kv.value.is_some())?
        .value
        .as_deref()?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .ok()?;
    arrow::ipc::convert::try_schema_from_ipc_buffer(&bytes).ok()
}

/// Check the `ARROW:schema` hint of `md` (the last entry with that key, as parquet takes it):
/// `Err` says why arrow-ipc's conversion would panic on it.
pub(crate) fn arrow_schema(md: &ParquetMetaData) -> R<Hint> {
    let Some(encoded) = md
        .file_metadata()
        .key_value_metadata()
        .and_then(|kv| {
            kv.iter()
                .rev()
                .find(|kv| kv.key == ARROW_SCHEMA_KEY && kv.value.is_some())
        })
        .and_then(|kv| kv.value.as_deref())
    else {
        return Ok(Hint::Use);
    };
    // As parquet decodes it; what fails here fails there with an error, not a panic.
    let Ok(bytes) = base64::engine::general_purpose::STANDARD.decode(encoded) else {
        return Ok(Hint::Use);
    };
    let slice = if bytes.len() > 8 && bytes[0..4] == [255u8; 4] {
        &bytes[8..]
    } else {
        &bytes[..]
    };
    let Ok(message) = arrow::ipc::root_as_message(slice) else {
        return Ok(Hint::Use);
    };
    let Some(schema) = message.header_as_schema() else {
        return Ok(Hint::Use);
    };
    let fields = schema
        .fields()
        .ok_or("the ARROW:schema hint has no field list")?;
    // polars writes its Int128 columns' hint as a 128-bit integer, which Arrow lacks: the
    // Parquet schema (a 16-byte decimal of scale 0) reads them.
    if fields.iter().any(|f| wide_integer(f).is_some()) {
        let int128 = fields
            .iter()
            .filter(|f| {
                f.type_type() == Type::Int && f.type_as_int().is_some_and(|i| i.bitWidth() == 128)
            })
            .filter_map(|f| f.name().map(str::to_string))
            .collect();
        return Ok(Hint::Ignore { int128 });
    }
    let big_endian = schema.endianness() == arrow::ipc::Endianness::Big;
    for field in fields.iter() {
        if big_endian && field.type_type() == Type::Decimal {
            return Err(format!(
                "the ARROW:schema hint has a big-endian decimal field {:?}",
                field.name().unwrap_or_default()
            ));
        }
        check_field(field, true).map_err(|e| format!("the ARROW:schema hint: {e}"))?;
    }
    Ok(Hint::Use)
}

/// The name of the first field at or under `field` that is a 128-bit integer.
fn wide_integer(field: Field<'_>) -> Option<String> {
    if field.type_type() == Type::Int && field.type_as_int().is_some_and(|i| i.bitWidth() == 128) {
        return Some(field.name().unwrap_or_default().to_string());
    }
    field.children()?.iter().find_map(wide_integer)
}

/// One field (and its children), as `get_data_type` converts it (`dictionary`: its dictionary
/// encoding, if any, is still to be looked at).
fn check_field(field: Field<'_>, dictionary: bool) -> R<()> {
    let name = field.name().unwrap_or_default();
    let bad = |what: String| format!("field {name:?}: {what}");
    if let (Some(dict), true) = (field.dictionary(), dictionary) {
        let Some(int) = dict.indexType() else {
            return Err(bad("a dictionary without an index type".into()));
        };
        if !matches!(int.bitWidth(), 8 | 16 | 32 | 64) {
            return Err(bad(format!(
                "dictionary indexes of {} bits",
                int.bitWidth()
            )));
        }
        return check_field(field, false);
    }
    let all_children = || {
        field
            .children()
            .map_or(Ok(()), |c| c.iter().try_for_each(|c| check_field(c, true)))
    };
    let children = |n: usize| -> R<()> {
        match field.children() {
            Some(c) if c.len() == n => all_children(),
            Some(c) => Err(bad(format!("{} children, {n} expected", c.len()))),
            None => Err(bad(format!("no children, {n} expected"))),
        }
    };
    let missing = || {
        bad(format!(
            "type {:?} without its parameters",
            field.type_type()
        ))
    };
    match field.type_type() {
        Type::List | Type::LargeList | Type::ListView | Type::LargeListView => children(1),
        Type::FixedSizeList => match field.type_as_fixed_size_list() {
            Some(_) => children(1),
            None => Err(missing()),
        },
        Type::Map => match field.type_as_map() {
            Some(_) => children(1),
            None => Err(missing()),
        },
        Type::RunEndEncoded => children(2),
        Type::Struct_ => all_children(),
        Type::Union => {
            let Some(union) = field.type_as_union() else {
                return Err(missing());
            };
            let n = field.children().map_or(0, |c| c.len());
            union_fields(union, n).map_err(bad)?;
            all_children()
        }
        _ => match leaf_type(field) {
            Err(None) => Err(missing()),
            Err(Some(what)) => Err(bad(what)),
            Ok(()) => Ok(()),
        },
    }
}

/// A field of a type without children: one arrow knows, with parameters it knows; else what
/// is wrong (`None`: its parameters are missing).
fn leaf_type(field: Field<'_>) -> Result<(), Option<String>> {
    use arrow::ipc::{DateUnit, IntervalUnit, Precision, TimeUnit};
    let wrong = |what: String| Err(Some(what));
    match field.type_type() {
        Type::Null
        | Type::Bool
        | Type::Binary
        | Type::BinaryView
        | Type::LargeBinary
        | Type::Utf8
        | Type::Utf8View
        | Type::LargeUtf8 => Ok(()),
        Type::Int => match field.type_as_int().ok_or(None)?.bitWidth() {
            8 | 16 | 32 | 64 => Ok(()),
            w => wrong(format!("an integer of {w} bits")),
        },
        Type::FixedSizeBinary => field.type_as_fixed_size_binary().map(|_| ()).ok_or(None),
        Type::FloatingPoint => match field.type_as_floating_point().ok_or(None)?.precision() {
            Precision::HALF | Precision::SINGLE | Precision::DOUBLE => Ok(()),
            p => wrong(format!("floating point precision {p:?}")),
        },
        Type::Date => match field.type_as_date().ok_or(None)?.unit() {
            DateUnit::DAY | DateUnit::MILLISECOND => Ok(()),
            u => wrong(format!("date unit {u:?}")),
        },
        Type::Time => {
            let t = field.type_as_time().ok_or(None)?;
            match (t.bitWidth(), t.unit()) {
                (32, TimeUnit::SECOND | TimeUnit::MILLISECOND)
                | (64, TimeUnit::MICROSECOND | TimeUnit::NANOSECOND) => Ok(()),
                (w, u) => wrong(format!("time of {w} bits in {u:?}")),
            }
        }
        Type::Timestamp => time_unit(field.type_as_timestamp().ok_or(None)?.unit())
            .or_else(|u| wrong(format!("timestamp unit {u:?}"))),
        Type::Duration => time_unit(field.type_as_duration().ok_or(None)?.unit())
            .or_else(|u| wrong(format!("duration unit {u:?}"))),
        Type::Interval => match field.type_as_interval().ok_or(None)?.unit() {
            IntervalUnit::YEAR_MONTH | IntervalUnit::DAY_TIME | IntervalUnit::MONTH_DAY_NANO => {
                Ok(())
            }
            u => wrong(format!("interval unit {u:?}")),
        },
        Type::Decimal => {
            let d = field.type_as_decimal().ok_or(None)?;
            if u8::try_from(d.precision()).is_err() {
                wrong(format!("decimal precision {}", d.precision()))
            } else if i8::try_from(d.scale()).is_err() {
                wrong(format!("decimal scale {}", d.scale()))
            } else if !matches!(d.bitWidth(), 32 | 64 | 128 | 256) {
                wrong(format!("a decimal of {} bits", d.bitWidth()))
            } else {
                Ok(())
            }
        }
        t => wrong(format!("type {t:?}, which arrow does not know")),
    }
}

/// A union's mode and type ids, for its `n` fields; else what is wrong.
fn union_fields(union: arrow::ipc::Union<'_>, n: usize) -> Result<(), String> {
    if !matches!(
        union.mode(),
        arrow::ipc::UnionMode::Dense | arrow::ipc::UnionMode::Sparse
    ) {
        return Err(format!("union mode {:?}", union.mode()));
    }
    match union.typeIds() {
        None if n > 128 => Err(format!("a union of {n} fields (at most 128)")),
        None => Ok(()),
        Some(ids) => {
            // Taken `as i8`: they must be non-negative and distinct as such.
            let ids: Vec<i32> = ids.iter().collect();
            let mut seen = 0u128;
            let bad_id = |&i: &i32| {
                let id = i as i8;
                let dup = id >= 0 && seen & (1 << id) != 0;
                if id >= 0 {
                    seen |= 1 << id;
                }
                id < 0 || dup
            };
            if ids.len() != n || ids.iter().any(bad_id) {
                Err(format!("union type ids {ids:?} for {n} fields"))
            } else {
                Ok(())
            }
        }
    }
}

/// A time unit arrow knows, or the unit back.
fn time_unit(u: arrow::ipc::TimeUnit) -> Result<(), arrow::ipc::TimeUnit> {
    match u {
        arrow::ipc::TimeUnit::SECOND
        | arrow::ipc::TimeUnit::MILLISECOND
        | arrow::ipc::TimeUnit::MICROSECOND
        | arrow::ipc::TimeUnit::NANOSECOND => Ok(()),
        u => Err(u),
    }
}
