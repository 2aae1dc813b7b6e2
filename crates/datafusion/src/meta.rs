//! What the coordinator learns from a Parquet footer: the file's row groups (rows and the
//! compressed bytes of each table column, to plan units below the file), its statistics
//! (row count; per column min, max, null count, as DataFusion's own Parquet scan reports
//! them) and the order its writer declares (`sorting_columns`, with each row group's bounds of
//! the first key, for [`crate::order`]), read once per file version and kept by the table
//! ([`SummaryCache`]).
//!
//! Invariants: a statistic is `Exact` only where the footer says it exactly (row counts; null
//! counts every row group has; min and max that every row group has, untruncated, of a
//! non-float column); anything else is `Inexact` or `Absent`. A file has a [`Sorting`] only
//! when every row group declares the same keys, the first key is a top-level, non-float
//! column of the table, and every row group with rows has bounds of it and no nulls in it. A
//! summary is found only under the file's location, size and version.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use datafusion::arrow::array::{Array, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};
use datafusion::functions_aggregate::min_max::{MaxAccumulator, MinAccumulator};
use datafusion::logical_expr::Accumulator;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::file::metadata::ParquetMetaData;

use crate::order::{SortKey, Sorting};

/// One row group, as units are planned from it.
#[derive(Debug, Clone)]
pub(crate) struct RowGroupInfo {
    /// Rows.
    pub rows: u64,
    /// Compressed bytes of each column of the table's file columns (0: not in the file).
    pub bytes: Vec<u64>,
}

/// A file's footer, summarized for planning.
#[derive(Debug, Clone)]
pub(crate) struct FileSummary {
    pub row_groups: Vec<RowGroupInfo>,
    /// Over the table's file columns (not its partition columns).
    pub stats: Statistics,
    /// The order the writer declares for every row group, where it can be relied on.
    pub sorting: Option<Sorting>,
}

impl FileSummary {
    pub fn rows(&self) -> u64 {
        self.row_groups.iter().map(|r| r.rows).sum()
    }
}

/// `true` for the string and binary types that differ only in layout (`Utf8`, `LargeUtf8`,
/// `Utf8View`; the same for binaries): a file's column of one is read as the table's other.
fn same_values(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    let class = |t: &DataType| match t {
        Utf8 | LargeUtf8 | Utf8View => Some(0),
        Binary | LargeBinary | BinaryView => Some(1),
        _ => None,
    };
    a == b || (class(a).is_some() && class(a) == class(b))
}

/// Statistics of which a min or max must stay inexact: floats (a NaN is not in Parquet's
/// bounds, and SQL orders it above every number).
fn bounds_inexact(t: &DataType) -> bool {
    matches!(t, DataType::Float16 | DataType::Float32 | DataType::Float64)
}

/// The summary of a file whose footer is `md`, for a table whose file columns are `table`.
pub(crate) fn summarize(md: &ParquetMetaData, table: &Schema) -> FileSummary {
    let descr = md.file_metadata().schema_descr();
    // Each leaf's top-level column in the table, by name.
    let roots: Vec<Option<usize>> = (0..descr.num_columns())
        .map(|leaf| {
            let root = descr.get_column_root(leaf);
            table.index_of(root.name()).ok()
        })
        .collect();
    let row_groups: Vec<RowGroupInfo> = md
        .row_groups()
        .iter()
        .map(|rg| {
            let mut bytes = vec![0u64; table.fields().len()];
            for (leaf, chunk) in rg.columns().iter().enumerate() {
                if let Some(Some(i)) = roots.get(leaf) {
                    bytes[*i] += chunk.compressed_size().max(0) as u64;
                }
            }
            RowGroupInfo {
                rows: rg.num_rows().max(0) as u64,
                bytes,
            }
        })
        .collect();
    let rows: u64 = row_groups.iter().map(|r| r.rows).sum();
    let file_schema =
        parquet::arrow::parquet_to_arrow_schema(descr, md.file_metadata().key_value_metadata())
            .ok();
    let columns = table
        .fields()
        .iter()
        .map(|f| column_stats(md, file_schema.as_ref(), f, rows as usize))
        .collect();
    FileSummary {
        row_groups,
        stats: Statistics {
            num_rows: Precision::Exact(rows as usize),
            total_byte_size: Precision::Absent,
            column_statistics: columns,
        },
        sorting: sorting(md, file_schema.as_ref(), table),
    }
}

/// The order every row group of the file declares, with the first key's bounds per row group
/// (see [`Sorting`] and the module's invariants); `None` where any of it is missing.
fn sorting(md: &ParquetMetaData, file: Option<&Schema>, table: &Schema) -> Option<Sorting> {
    let groups = md.row_groups();
    let declared = groups.first()?.sorting_columns()?;
    if declared.is_empty()
        || groups
            .iter()
            .any(|rg| rg.sorting_columns() != Some(declared))
    {
        return None;
    }
    let descr = md.file_metadata().schema_descr();
    let keys: Vec<SortKey> = declared
        .iter()
        .map_while(|c| {
            let leaf = descr.columns().get(usize::try_from(c.column_idx).ok()?)?;
            let parts = leaf.path().parts();
            // A top-level primitive column (not a field of a struct or list) of the table.
            let name = (parts.len() == 1).then(|| &parts[0])?;
            table.field_with_name(name).ok()?;
            Some(SortKey {
                column: name.clone(),
                descending: c.descending,
                nulls_first: c.nulls_first,
            })
        })
        .collect();
    let first = table.field_with_name(&keys.first()?.column).ok()?;
    if bounds_inexact(first.data_type()) || first.data_type().is_nested() {
        return None;
    }
    let (mins, maxes, nulls) = with_converter(md, file?, first, |c| {
        // A row group that does not say how many nulls it has may have some.
        let c = c.with_missing_null_counts_as_zero(false);
        Some((
            c.row_group_mins(groups.iter()).ok()?,
            c.row_group_maxes(groups.iter()).ok()?,
            c.row_group_null_counts(groups.iter()).ok()?,
        ))
    })??;
    let mut bounds = Vec::with_capacity(groups.len());
    for (i, rg) in groups.iter().enumerate() {
        if rg.num_rows() == 0 {
            bounds.push(None);
            continue;
        }
        // Rows with no bounds, or with nulls in the key, could sit anywhere: no order.
        if mins.is_null(i) || maxes.is_null(i) || nulls.is_null(i) || nulls.value(i) != 0 {
            return None;
        }
        let min = ScalarValue::try_from_array(&mins, i).ok()?;
        let max = ScalarValue::try_from_array(&maxes, i).ok()?;
        bounds.push(Some((min, max)));
    }
    Some(Sorting { keys, bounds })
}

/// `read` given a statistics converter of column `field`'s values as the table types them (a
/// view where the file has a plain string), from a file whose Arrow schema is `file`; `None`
/// when the file's column differs in more than layout, or is not in the file.
fn with_converter<T>(
    md: &ParquetMetaData,
    file: &Schema,
    field: &Field,
    read: impl FnOnce(StatisticsConverter<'_>) -> T,
) -> Option<T> {
    let file_field = file.field_with_name(field.name()).ok()?;
    if field.data_type().is_nested() || !same_values(file_field.data_type(), field.data_type()) {
        return None;
    }
    let fields: Vec<Field> = file
        .fields()
        .iter()
        .map(|f| match f.name() == field.name() {
            true => f.as_ref().clone().with_data_type(field.data_type().clone()),
            false => f.as_ref().clone(),
        })
        .collect();
    let schema = Schema::new(fields);
    let descr = md.file_metadata().schema_descr();
    let converter = StatisticsConverter::try_new(field.name(), &schema, descr).ok()?;
    Some(read(converter))
}

/// The statistics of table column `field` in a file (`file`: its Arrow schema) of `rows` rows.
fn column_stats(
    md: &ParquetMetaData,
    file: Option<&Schema>,
    field: &Field,
    rows: usize,
) -> ColumnStatistics {
    let unknown = ColumnStatistics::new_unknown();
    let Some(file) = file else { return unknown };
    if file.field_with_name(field.name()).is_err() {
        // Not in this file: every row reads as null.
        return ColumnStatistics {
            null_count: Precision::Exact(rows),
            ..unknown
        };
    }
    let byte_size = match field.data_type().primitive_width() {
        Some(w) => Precision::Exact(w * rows),
        None => {
            let leaf = md
                .file_metadata()
                .schema_descr()
                .columns()
                .iter()
                .position(|c| c.path().parts()[0] == *field.name());
            match leaf {
                Some(leaf) => Precision::Inexact(
                    md.row_groups()
                        .iter()
                        .map(|rg| rg.column(leaf).uncompressed_size().max(0) as usize)
                        .sum(),
                ),
                None => Precision::Absent,
            }
        }
    };
    let groups = md.row_groups();
    let exact_bounds = !bounds_inexact(field.data_type());
    let read = with_converter(md, file, field, |converter| {
        let null_count = match converter.row_group_null_counts(groups.iter()) {
            Ok(counts) => sum_all(&counts).map_or(Precision::Absent, Precision::Exact),
            Err(_) => Precision::Absent,
        };
        let min_value = bound(
            converter.row_group_mins(groups.iter()).ok(),
            converter.row_group_is_min_value_exact(groups.iter()).ok(),
            field.data_type(),
            exact_bounds,
            false,
        );
        let max_value = bound(
            converter.row_group_maxes(groups.iter()).ok(),
            converter.row_group_is_max_value_exact(groups.iter()).ok(),
            field.data_type(),
            exact_bounds,
            true,
        );
        (null_count, min_value, max_value)
    });
    let Some((null_count, min_value, max_value)) = read else {
        return ColumnStatistics {
            byte_size,
            ..unknown
        };
    };
    let distinct_count = distinct(md, field.name());
    ColumnStatistics {
        null_count,
        max_value,
        min_value,
        sum_value: Precision::Absent,
        distinct_count,
        byte_size,
    }
}

/// The sum of `counts`, when every row group has one.
fn sum_all(counts: &UInt64Array) -> Option<usize> {
    if counts.null_count() > 0 {
        return None;
    }
    Some(counts.values().iter().map(|&c| c as usize).sum())
}

/// The file's min (or max, `max`) of per-row-group `values`: `Exact` when every row group has
/// one and says it is exact (and `exact` allows), `Inexact` when some say otherwise, `Absent`
/// when a row group has none (its rows could hold anything).
fn bound(
    values: Option<datafusion::arrow::array::ArrayRef>,
    exact_flags: Option<datafusion::arrow::array::BooleanArray>,
    data_type: &DataType,
    exact: bool,
    max: bool,
) -> Precision<ScalarValue> {
    let Some(values) = values else {
        return Precision::Absent;
    };
    if values.is_empty() || values.null_count() > 0 {
        return Precision::Absent;
    }
    let value = if max {
        MaxAccumulator::try_new(data_type).and_then(|mut acc| {
            acc.update_batch(&[Arc::clone(&values)])?;
            acc.evaluate()
        })
    } else {
        MinAccumulator::try_new(data_type).and_then(|mut acc| {
            acc.update_batch(&[Arc::clone(&values)])?;
            acc.evaluate()
        })
    };
    let Ok(value) = value else {
        return Precision::Absent;
    };
    if value.is_null() {
        return Precision::Absent;
    }
    let all_exact = exact_flags.is_some_and(|f| {
        f.len() == values.len() && f.null_count() == 0 && f.true_count() == f.len()
    });
    match exact && all_exact {
        true => Precision::Exact(value),
        false => Precision::Inexact(value),
    }
}

/// Distinct values of column `name` as the footer gives them (as DataFusion reads them):
/// exact for a single row group, a lower bound (inexact) from several, absent unless every
/// row group has one.
fn distinct(md: &ParquetMetaData, name: &str) -> Precision<usize> {
    let descr = md.file_metadata().schema_descr();
    let Some(leaf) = descr
        .columns()
        .iter()
        .position(|c| c.path().parts().len() == 1 && c.path().parts()[0] == name)
    else {
        return Precision::Absent;
    };
    let counts: Vec<u64> = md
        .row_groups()
        .iter()
        .filter_map(|rg| rg.column(leaf).statistics()?.distinct_count_opt())
        .collect();
    if counts.is_empty() || counts.len() < md.num_row_groups() {
        return Precision::Absent;
    }
    match (counts.len(), counts.iter().max()) {
        (1, Some(&n)) => Precision::Exact(n as usize),
        (_, Some(&n)) => Precision::Inexact(n as usize),
        _ => Precision::Absent,
    }
}

/// The statistics of a partition column whose value in a file of `rows` rows is `value`
/// (`None`: null).
pub(crate) fn constant_stats(value: Option<ScalarValue>, rows: usize) -> ColumnStatistics {
    match value {
        Some(v) if !v.is_null() => ColumnStatistics {
            null_count: Precision::Exact(0),
            max_value: Precision::Exact(v.clone()),
            min_value: Precision::Exact(v),
            sum_value: Precision::Absent,
            distinct_count: Precision::Exact(usize::from(rows > 0)),
            byte_size: Precision::Absent,
        },
        _ => ColumnStatistics {
            null_count: Precision::Exact(rows),
            distinct_count: Precision::Exact(0),
            ..ColumnStatistics::new_unknown()
        },
    }
}

/// Which file a summary is of: location, size and version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FileKey {
    pub location: String,
    pub size: Option<u64>,
    pub version: Option<rayquet::FileVersion>,
}

/// The summaries of a table's files, shared by its clones and scans. Entries of files no longer
/// listed are dropped at each listing ([`SummaryCache::retain`]), so it holds at most one
/// summary per file of the table.
#[derive(Debug, Default, Clone)]
pub(crate) struct SummaryCache(Arc<Mutex<HashMap<FileKey, Arc<FileSummary>>>>);

impl SummaryCache {
    pub fn get(&self, key: &FileKey) -> Option<Arc<FileSummary>> {
        self.0.lock().expect("summaries").get(key).cloned()
    }

    pub fn insert(&self, key: FileKey, summary: Arc<FileSummary>) {
        // Only files with a known version are kept: without one a rewrite is not told apart.
        if key.version.is_some() {
            self.0.lock().expect("summaries").insert(key, summary);
        }
    }

    /// Keep only the entries of `keys` (the files listed now).
    pub fn retain(&self, keys: &[FileKey]) {
        let keep: std::collections::HashSet<&FileKey> = keys.iter().collect();
        self.0
            .lock()
            .expect("summaries")
            .retain(|k, _| keep.contains(k));
    }
}
