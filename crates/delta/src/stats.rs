//! Each data file's column statistics as the log has them ([`ColumnStats`]): the kernel parses
//! the `add` actions' `stats` (`minValues`, `maxValues`, `nullCount`, by physical column) and
//! partition values into typed columns of its scan metadata when asked
//! ([`crate::TableScan::statistics`]); this module picks out each selected file's row for the
//! scan's top-level columns, under their logical names.
//!
//! Invariant: what a [`ColumnStats`] says bounds the file's values (it may be loose, never
//! narrower): a maximum the writer may have cut short (timestamps kept to the millisecond,
//! strings cut to a prefix) is widened or dropped. Null counts and bounds may count rows a
//! deletion vector removed.

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StructArray};
use arrow::compute::kernels::numeric::add;
use arrow::datatypes::{DataType as ArrowType, Int64Type, TimeUnit};
use delta_kernel::schema::{ColumnMetadataKey, DataType, MetadataValue, StructType};
use rayquet::task::ColumnStats;

/// A column whose statistics are picked out: its logical name and where its values are in
/// the scan metadata (physical names).
#[derive(Debug, Clone)]
pub(crate) struct StatsColumn {
    logical: String,
    /// Its name in `stats_parsed.minValues` (a data column) or `partitionValues_parsed` (a
    /// partition column).
    physical: String,
    partition: bool,
}

/// The primitive top-level columns of `logical` (the scan's read schema) with where their
/// statistics are: data columns by their name in `physical` (the files' schema, column
/// mapping applied), partition columns by their physical name in the table's schema.
pub(crate) fn stats_columns(
    logical: &StructType,
    physical: &StructType,
    table: &StructType,
) -> Vec<StatsColumn> {
    let mut out = Vec::new();
    for f in logical.fields() {
        // Nanosecond timestamps: their statistics are kept to the millisecond, and the kernel
        // parses them as microseconds (see `nanos`); none given.
        if !matches!(f.data_type(), DataType::Primitive(_)) || crate::nanos::is_marked(f) {
            continue;
        }
        let mapped = |field: &delta_kernel::schema::StructField| match field
            .get_config_value(&ColumnMetadataKey::ColumnMappingPhysicalName)
        {
            Some(MetadataValue::String(s)) => Some(s.clone()),
            _ => None,
        };
        let meta = mapped(f).or_else(|| table.field(f.name()).and_then(mapped));
        let (physical_name, partition) = match &meta {
            Some(p) if physical.field(p).is_some() => (p.clone(), false),
            _ if physical.field(f.name()).is_some() => (f.name().clone(), false),
            Some(p) => (p.clone(), true),
            None => (f.name().clone(), true),
        };
        out.push(StatsColumn {
            logical: f.name().clone(),
            physical: physical_name,
            partition,
        });
    }
    out
}

/// The statistics of row `row` of the kernel's scan metadata `batch` (with `stats_parsed`
/// and `partitionValues_parsed`) for `columns` (those it has statistics of).
/// `records`: the file's `numRecords` (a null partition value is null in every row).
pub(crate) fn file_stats(
    batch: &RecordBatch,
    row: usize,
    columns: &[StatsColumn],
    records: Option<u64>,
) -> Vec<ColumnStats> {
    let parsed = batch
        .column_by_name("stats_parsed")
        .and_then(|c| c.as_struct_opt());
    let partitions = batch
        .column_by_name("partitionValues_parsed")
        .and_then(|c| c.as_struct_opt());
    let mut out = Vec::new();
    if parsed.is_none() && partitions.is_none() {
        return out;
    }
    let child = |s: Option<&StructArray>, name: &str| -> Option<ArrayRef> {
        let s = s?;
        if s.is_null(row) {
            return None;
        }
        s.column_by_name(name).cloned()
    };
    let group = |name: &str| child(parsed, name);
    let (mins, maxs, nulls) = (group("minValues"), group("maxValues"), group("nullCount"));
    for c in columns {
        let stats = if c.partition {
            let Some(values) = child(partitions, &c.physical) else {
                continue;
            };
            let v = values.slice(row, 1);
            let empty = matches!(
                v.data_type(),
                ArrowType::Utf8 | ArrowType::Utf8View | ArrowType::LargeUtf8
            ) && string_at(&v).is_some_and(str::is_empty);
            if v.is_null(0) || empty {
                // A null (or, as the protocol reads it, empty) value: every row is null.
                ColumnStats {
                    column: c.logical.clone(),
                    min: None,
                    max: None,
                    null_count: records,
                }
            } else {
                ColumnStats {
                    column: c.logical.clone(),
                    min: Some(v.clone()),
                    max: Some(v),
                    null_count: Some(0),
                }
            }
        } else {
            let value = |group: &Option<ArrayRef>| -> Option<ArrayRef> {
                let s = group.as_ref()?.as_struct_opt()?;
                let v = s.column_by_name(&c.physical)?;
                if v.data_type().is_nested() || v.is_null(row) {
                    return None;
                }
                Some(v.slice(row, 1))
            };
            let null_count = nulls
                .as_ref()
                .and_then(|g| g.as_struct_opt())
                .and_then(|s| s.column_by_name(&c.physical))
                .and_then(|v| v.as_primitive_opt::<Int64Type>())
                .filter(|v| v.is_valid(row))
                .and_then(|v| u64::try_from(v.value(row)).ok());
            ColumnStats {
                column: c.logical.clone(),
                min: value(&mins),
                max: value(&maxs).and_then(widen_max),
                null_count,
            }
        };
        if stats.min.is_some() || stats.max.is_some() || stats.null_count.is_some() {
            out.push(stats);
        }
    }
    out
}

/// A maximum as a true upper bound of the values it was taken from: timestamps are written
/// to the millisecond (Spark, the kernel), so up to 999 µs are added; a string of 32 or more
/// characters may be a prefix (writers cut them to 32) and is dropped.
fn widen_max(max: ArrayRef) -> Option<ArrayRef> {
    match max.data_type() {
        ArrowType::Timestamp(TimeUnit::Microsecond, _) => {
            let step = arrow::array::Int64Array::new_scalar(999);
            let widened = add(
                &max.as_primitive::<arrow::datatypes::TimestampMicrosecondType>()
                    .reinterpret_cast::<Int64Type>(),
                &step,
            )
            .ok()?;
            arrow::compute::cast(&widened, max.data_type()).ok()
        }
        ArrowType::Timestamp(_, _) => None,
        ArrowType::Utf8 | ArrowType::LargeUtf8 | ArrowType::Utf8View => {
            let long = string_at(&max).is_none_or(|s| s.chars().count() >= 32);
            (!long).then_some(max)
        }
        ArrowType::Binary | ArrowType::LargeBinary | ArrowType::BinaryView => None,
        _ => Some(max),
    }
}

/// The first value of a one-row string array.
fn string_at(a: &ArrayRef) -> Option<&str> {
    if a.is_null(0) {
        return None;
    }
    match a.data_type() {
        ArrowType::Utf8 => Some(a.as_string::<i32>().value(0)),
        ArrowType::LargeUtf8 => Some(a.as_string::<i64>().value(0)),
        ArrowType::Utf8View => Some(a.as_string_view().value(0)),
        _ => None,
    }
}
