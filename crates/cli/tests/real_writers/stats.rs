//! The column statistics the table crates plan with (`TableScan::statistics(true)`: Iceberg
//! manifest entries' bounds and null counts, Delta `add` statistics and partition values), on
//! the tables real writers made (pyiceberg, deltalake), against the rows each writer's own
//! read gives: no value below a file set's least bound or above its greatest, no more nulls
//! than the counts say. NaN is outside every bound (the formats keep bounds of the other
//! values), and -0.0 equals 0.0.

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use arrow::compute::kernels::cmp::{gt, lt};
use arrow::compute::{cast, filter};
use arrow::datatypes::{DataType, Float64Type};
use futures::StreamExt;
use rayquet::task::ColumnStats;

/// Each planned unit's column statistics (each data file once) of the table at `location`.
pub fn planned(kind: &str, location: &str) -> rayquet::Result<Vec<Vec<ColumnStats>>> {
    match kind {
        "iceberg" => {
            let options = rayquet::ScanOptions::new();
            let table = rayquet_iceberg::load_table(location, &options)?;
            let planned = rayquet_iceberg::TableScan::from_table(table)
                .statistics(true)
                .plan()?;
            let units: Vec<_> = rayquet::layer::io_runtime(&options)
                .block_on(planned.units.collect::<Vec<_>>())
                .into_iter()
                .collect::<rayquet::Result<_>>()?;
            let mut seen = std::collections::HashSet::new();
            Ok(units
                .into_iter()
                .filter(|u: &rayquet_iceberg::TaskUnit| seen.insert(u.path.clone()))
                .map(|u| u.stats)
                .collect())
        }
        "delta" => rayquet_delta::TableScan::open(location)
            .statistics(true)
            .plan()?
            .units
            .map(|u| u.map(|u| u.stats))
            .collect(),
        other => panic!("not a table: {other}"),
    }
}

/// What the statistics of `files` say of the whole table, per column that every file has
/// them for: the least min, the greatest max, the sum of null counts.
struct Merged {
    min: Option<ArrayRef>,
    max: Option<ArrayRef>,
    nulls: Option<u64>,
}

/// (Bounds as `ty`, the column's type: a file written before a promotion keeps the narrower
/// type's bounds.)
fn merged(files: &[Vec<ColumnStats>], column: &str, ty: &DataType) -> Merged {
    let mut out = Merged {
        min: None,
        max: None,
        nulls: Some(0),
    };
    let (mut mins, mut maxs) = (true, true);
    for f in files {
        let c = f.iter().find(|c| c.column == column);
        out.nulls = match (out.nulls, c.and_then(|c| c.null_count)) {
            (Some(a), Some(b)) => Some(a + b),
            _ => None,
        };
        let pick = |acc: &mut Option<ArrayRef>, v: Option<&ArrayRef>, ok: &mut bool, less: bool| {
            let Some(v) = v.and_then(|v| as_type(v, ty)) else {
                *ok = false;
                return;
            };
            let v = &v;
            let replace = match acc {
                None => true,
                Some(a) => {
                    let b = if less { lt(v, a) } else { gt(v, a) };
                    b.is_ok_and(|b| b.value(0))
                }
            };
            if replace {
                *acc = Some(v.clone());
            }
        };
        pick(
            &mut out.min,
            c.and_then(|c| c.min.as_ref()),
            &mut mins,
            true,
        );
        pick(
            &mut out.max,
            c.and_then(|c| c.max.as_ref()),
            &mut maxs,
            false,
        );
    }
    if !mins || files.is_empty() {
        out.min = None;
    }
    if !maxs || files.is_empty() {
        out.max = None;
    }
    if files.is_empty() {
        out.nulls = None;
    }
    out
}

/// The problems of the statistics of `files` against the rows `batches` (one text per bound
/// that does not hold) and how many bounds and counts were checked.
pub fn check(files: &[Vec<ColumnStats>], batches: &[RecordBatch]) -> (Vec<String>, usize) {
    let mut problems = Vec::new();
    let mut checked = 0;
    let Some(first) = batches.first() else {
        return (problems, 0);
    };
    let schema = first.schema();
    for (i, field) in schema.fields().iter().enumerate() {
        let m = merged(files, field.name(), field.data_type());
        let columns: Vec<&ArrayRef> = batches.iter().map(|b| b.column(i)).collect();
        if let Some(n) = m.nulls {
            let actual: usize = columns.iter().map(|c| c.null_count()).sum();
            checked += 1;
            if (n as usize) < actual {
                problems.push(format!(
                    "{}: {n} nulls, the rows have {actual}",
                    field.name()
                ));
            }
        }
        for (bound, below) in [(&m.min, true), (&m.max, false)] {
            let Some(bound) = bound else { continue };
            checked += 1;
            for column in &columns {
                if let Some(v) = outside(column, bound, below) {
                    let what = if below { "min" } else { "max" };
                    problems.push(format!(
                        "{}: {what} {bound:?}, but the rows have {v}",
                        field.name()
                    ));
                    break;
                }
            }
        }
    }
    (problems, checked)
}

/// `bound` as type `ty` (a dictionary: its values' type); `None` when it does not cast.
fn as_type(bound: &ArrayRef, ty: &DataType) -> Option<ArrayRef> {
    let ty = match ty {
        DataType::Dictionary(_, values) => values.as_ref(),
        t => t,
    };
    match bound.data_type() == ty {
        true => Some(bound.clone()),
        false => cast(bound, ty).ok(),
    }
}

/// A value of `column` below (`below`) or above `bound`, rendered; `None` when none is.
fn outside(column: &ArrayRef, bound: &ArrayRef, below: bool) -> Option<String> {
    if matches!(
        column.data_type(),
        DataType::Float16 | DataType::Float32 | DataType::Float64
    ) {
        // Numerically, NaN left out (-0.0 == 0.0).
        let values = cast(column, &DataType::Float64).ok()?;
        let b = cast(bound, &DataType::Float64).ok()?;
        let b = b.as_primitive::<Float64Type>().value(0);
        return values
            .as_primitive::<Float64Type>()
            .iter()
            .flatten()
            .find(|v| !v.is_nan() && if below { *v < b } else { *v > b })
            .map(|v| v.to_string());
    }
    let column = &match column.data_type() {
        DataType::Dictionary(_, values) => cast(column, values).ok()?,
        _ => column.clone(),
    };
    let scalar = arrow::array::Scalar::new(bound.clone());
    let hits: BooleanArray = match below {
        true => lt(column, &scalar),
        false => gt(column, &scalar),
    }
    .unwrap_or_else(|e| panic!("{} against its bound: {e}", column.data_type()));
    // Nulls compare as null, which `filter` drops.
    let found = filter(column, &hits).ok()?;
    (!found.is_empty()).then(|| format!("{:?}", found.slice(0, 1)))
}
