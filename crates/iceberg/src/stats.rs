//! Each data file's column statistics from the snapshot's manifests ([`ColumnStats`]): the
//! lower and upper bounds and null counts a manifest entry keeps by field id, for the scan's
//! top-level primitive columns, under their names, as one-row Arrow arrays (asked for with
//! [`crate::TableScan::statistics`]).
//!
//! Invariant: the bounds are the entry's own (the spec keeps them true bounds: a string or
//! binary bound cut short is rounded outward by the writer); a value that is not a plain
//! bound (`AboveMax`, `BelowMin`, a literal of another type) is left out. Null counts may
//! count rows that deletes remove.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array,
    Int32Array, Int64Array, StringArray, Time64MicrosecondArray, TimestampMicrosecondArray,
    TimestampNanosecondArray,
};
use iceberg::spec::{DataFile, Datum, PrimitiveLiteral, PrimitiveType, Schema, Type};
use rayquet::task::ColumnStats;

/// The top-level primitive columns of `schema` among the field ids `ids`: (field id, name).
pub(crate) fn stats_columns(schema: &Schema, ids: &[i32]) -> Vec<(i32, String)> {
    schema
        .as_struct()
        .fields()
        .iter()
        .filter(|f| ids.contains(&f.id) && matches!(f.field_type.as_ref(), Type::Primitive(_)))
        .map(|f| (f.id, f.name.clone()))
        .collect()
}

/// What manifest entry `file` says of `columns`.
pub(crate) fn file_stats(file: &DataFile, columns: &[(i32, String)]) -> Vec<ColumnStats> {
    columns
        .iter()
        .filter_map(|(id, name)| {
            let stats = ColumnStats {
                column: name.clone(),
                min: file.lower_bounds().get(id).and_then(array),
                max: file.upper_bounds().get(id).and_then(array),
                null_count: file.null_value_counts().get(id).copied(),
            };
            let known = stats.min.is_some() || stats.max.is_some() || stats.null_count.is_some();
            known.then_some(stats)
        })
        .collect()
}

/// Statistics by data file path.
pub(crate) type StatsByFile = HashMap<String, Vec<ColumnStats>>;

/// A data file's split offsets from its manifest entry, when they can stand for the first
/// bytes of its row groups (as pyiceberg, Java Iceberg and iceberg-rust record them): not
/// empty, strictly increasing, past the file's leading magic bytes and before its end. Other
/// values are dropped (the coordinator then reads the file's footer to cut it). Cutting a
/// file at these offsets never loses or repeats a row group whatever they are, since each
/// row group is read by the split holding its midpoint; only the balance depends on them.
pub(crate) fn split_offsets(file: &DataFile) -> Option<Vec<u64>> {
    let offsets = file.split_offsets()?;
    let usable = !offsets.is_empty()
        && offsets[0] >= 4
        && offsets.windows(2).all(|w| w[0] < w[1])
        && (*offsets.last()? as u64) < file.file_size_in_bytes();
    usable.then(|| offsets.iter().map(|&o| o as u64).collect())
}

/// `datum` as a one-row array of the Arrow type rayquet reads its Iceberg type as.
fn array(datum: &Datum) -> Option<ArrayRef> {
    use PrimitiveLiteral as L;
    use PrimitiveType as T;
    let a: ArrayRef = match (datum.data_type(), datum.literal()) {
        (T::Boolean, L::Boolean(v)) => Arc::new(BooleanArray::from(vec![*v])),
        (T::Int, L::Int(v)) => Arc::new(Int32Array::from(vec![*v])),
        (T::Long, L::Long(v)) => Arc::new(Int64Array::from(vec![*v])),
        (T::Float, L::Float(v)) => Arc::new(Float32Array::from(vec![v.into_inner()])),
        (T::Double, L::Double(v)) => Arc::new(Float64Array::from(vec![v.into_inner()])),
        (T::Date, L::Int(v)) => Arc::new(Date32Array::from(vec![*v])),
        (T::Time, L::Long(v)) => Arc::new(Time64MicrosecondArray::from(vec![*v])),
        (T::Timestamp, L::Long(v)) => Arc::new(TimestampMicrosecondArray::from(vec![*v])),
        (T::Timestamptz, L::Long(v)) => {
            Arc::new(TimestampMicrosecondArray::from(vec![*v]).with_timezone("+00:00"))
        }
        (T::TimestampNs, L::Long(v)) => Arc::new(TimestampNanosecondArray::from(vec![*v])),
        (T::TimestamptzNs, L::Long(v)) => {
            Arc::new(TimestampNanosecondArray::from(vec![*v]).with_timezone("+00:00"))
        }
        (T::String, L::String(v)) => Arc::new(StringArray::from(vec![v.as_str()])),
        (T::Binary, L::Binary(v)) => Arc::new(BinaryArray::from(vec![v.as_slice()])),
        (T::Decimal { precision, scale }, L::Int128(v)) => Arc::new(
            Decimal128Array::from(vec![*v])
                .with_precision_and_scale(
                    u8::try_from(*precision).ok()?,
                    i8::try_from(*scale).ok()?,
                )
                .ok()?,
        ),
        _ => return None,
    };
    Some(a)
}
