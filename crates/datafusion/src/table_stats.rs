//! The statistics of an Iceberg or Delta scan's files from the table's own metadata, as
//! DataFusion takes them ([`Statistics`] over the table's schema): row counts, and each
//! column's bounds and null count ([`ColumnStats`]: Delta's `add` statistics, Iceberg's
//! manifest entries). No data file is opened for them.
//!
//! Invariant: a count is `Exact` only where the metadata makes it so (a Delta file's
//! `numRecords` without a deletion vector; an Iceberg snapshot's record count without
//! deletes); column bounds and null counts are always `Inexact` (writers cut strings short,
//! deleted rows may be counted), so DataFusion uses them to estimate, never to answer a query.

use std::collections::HashSet;

use datafusion::arrow::array::Array;
use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, Result, ScalarValue, Statistics};
use rayquet::task::ColumnStats;

/// The statistics of a Delta scan's files: each file's rows from its `numRecords` (exact
/// without a deletion vector; with one, the records less the rows it deletes, an estimate:
/// the protocol lets a file's statistics lag its deletion vector; absent when the log has no
/// count) and its columns' statistics, merged.
pub(crate) fn delta(units: &[rayquet_delta::FileUnit], schema: &Schema) -> Result<Statistics> {
    let files: Vec<Statistics> = units
        .iter()
        .map(|u| {
            let rows = match (u.record_count, &u.deletion_vector) {
                (None, _) => Precision::Absent,
                (Some(n), None) => Precision::Exact(usize::try_from(n).unwrap_or(usize::MAX)),
                (Some(n), Some(dv)) => Precision::Inexact(
                    usize::try_from(n.saturating_sub(dv.cardinality.max(0) as u64))
                        .unwrap_or(usize::MAX),
                ),
            };
            file(rows, &u.stats, schema)
        })
        .collect();
    crate::stats::merge(&files, schema)
}

/// The statistics of an Iceberg scan's units: the rows of their data files from the
/// manifests' record counts (each file once, however many splits; exact when no unit has
/// deletes, else an upper bound), or `rows` when a count is missing; and the columns'
/// statistics of those files, merged.
pub(crate) fn iceberg(
    units: &[rayquet_iceberg::TaskUnit],
    rows: Precision<usize>,
    schema: &Schema,
) -> Result<Statistics> {
    let mut seen = HashSet::new();
    let files: Vec<&rayquet_iceberg::TaskUnit> = units
        .iter()
        .filter(|u| seen.insert(u.path.as_str()))
        .collect();
    let stats: Vec<Statistics> = files
        .iter()
        .map(|u| file(Precision::Absent, &u.stats, schema))
        .collect();
    let mut stats = crate::stats::merge(&stats, schema)?;
    let deletes = units
        .iter()
        .any(|u| !u.positions.is_empty() || !u.equality.is_empty() || u.deletion_vector.is_some());
    let counted: Option<u64> = files.iter().map(|u| u.record_count).sum();
    stats.num_rows = match counted.map(|n| usize::try_from(n).unwrap_or(usize::MAX)) {
        Some(n) if !deletes => Precision::Exact(n),
        Some(n) => Precision::Inexact(n),
        None => rows,
    };
    Ok(stats)
}

/// One file's statistics: `rows`, and `columns` for the fields of `schema` they name (as
/// estimates), the other fields unknown.
fn file(rows: Precision<usize>, columns: &[ColumnStats], schema: &Schema) -> Statistics {
    let column_statistics = schema
        .fields()
        .iter()
        .map(|f| {
            let Some(c) = columns.iter().find(|c| c.column == *f.name()) else {
                return ColumnStatistics::new_unknown();
            };
            let bound = |a: &Option<datafusion::arrow::array::ArrayRef>| {
                a.as_deref()
                    .and_then(|a| scalar(a, f.data_type()))
                    .map_or(Precision::Absent, Precision::Inexact)
            };
            ColumnStatistics {
                null_count: c
                    .null_count
                    .and_then(|n| usize::try_from(n).ok())
                    .map_or(Precision::Absent, Precision::Inexact),
                min_value: bound(&c.min),
                max_value: bound(&c.max),
                ..ColumnStatistics::new_unknown()
            }
        })
        .collect();
    Statistics {
        num_rows: rows,
        total_byte_size: Precision::Absent,
        column_statistics,
    }
}

/// The first value of a one-row array as a scalar of type `to` (the table's type for the
/// column); `None` when it is null or does not cast losslessly.
fn scalar(a: &dyn Array, to: &DataType) -> Option<ScalarValue> {
    let v = ScalarValue::try_from_array(a, 0).ok()?;
    if v.is_null() {
        return None;
    }
    if v.data_type() == *to {
        return Some(v);
    }
    let cast = v.cast_to(to).ok()?;
    // Lossless: it casts back to the value it came from.
    (cast.cast_to(&v.data_type()).ok()? == v).then_some(cast)
}
