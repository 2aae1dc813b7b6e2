//! A filter resolved against one file ([`FileFilter`]): its columns found through the task's
//! mapping (promoted columns keep their file type for statistics), its literals converted to
//! the columns' types, and its leaves on columns constant in the file folded to TRUE/FALSE.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch};
use arrow::datatypes::DataType;
use parquet::basic::{ColumnOrder, SortOrder, Type as PhysicalType};

use crate::error::{Error, ErrorKind, Result};
use crate::expr::fold::fold;
use crate::expr::Expr;
use crate::footer::FileMeta;
use crate::plan::mapping::{FilterTarget, Mapping};

/// One column a filter reads, resolved against a file.
#[derive(Debug, Clone)]
pub(crate) struct FilterColumn {
    /// The name the filter uses (an output column or a dotted path into one).
    pub name: String,
    pub leaf: usize,
    /// Names of the leaf's fields in the file, from its root.
    pub file_path: Vec<String>,
    /// Arrow type of the values in the file.
    pub file_type: DataType,
    /// Arrow type the filter compares in (the output column's type).
    pub data_type: DataType,
    /// Top-level column whose statistics may prune (`None`: never prune on this column).
    pub(crate) stats_name: Option<String>,
    /// The bloom filter may answer `=` and `IN` (a physical type the literal hashes as).
    pub(crate) bloom: Option<BloomKind>,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum BloomKind {
    I32,
    I64,
    Bytes,
}

/// A filter resolved against one file.
#[derive(Debug, Clone)]
pub(crate) struct FileFilter {
    /// The filter with `NOT` pushed to the leaves.
    pub expr: Expr,
    pub columns: Vec<FilterColumn>,
    /// Leaves the filter reads, sorted.
    pub leaves: Vec<usize>,
}

impl FileFilter {
    /// Resolve the columns of `expr` (names of `mapping`'s output columns, or dotted paths
    /// into them) against `meta`'s file through `mapping`, check every literal converts to
    /// its column's type, and fold the leaves on columns that are constant in this file
    /// (partition values, missing columns).
    pub fn resolve(expr: &Expr, meta: &FileMeta, mapping: &Mapping) -> Result<FileFilter> {
        let name = &*meta.file.name;
        let descr = meta.reader.parquet_schema();
        let mut columns = Vec::new();
        let mut constants: Vec<(String, ArrayRef)> = Vec::new();
        for column in expr.columns() {
            match mapping.filter_target(column, meta.reader.schema(), name)? {
                FilterTarget::Const(v) => constants.push((column.to_string(), v)),
                FilterTarget::File {
                    leaf,
                    file_path,
                    file_type,
                    out_type,
                } => {
                    let col = filter_column(meta, column, leaf, file_path, file_type, out_type)?;
                    columns.push(col);
                }
            }
        }
        // Every literal must convert: fail at build time, not in a decode task.
        let typed: Vec<(String, DataType)> = columns
            .iter()
            .map(|c| (c.name.clone(), c.data_type.clone()))
            .chain(
                constants
                    .iter()
                    .map(|(n, v)| (n.clone(), v.data_type().clone())),
            )
            .collect();
        check_literals(expr, &typed).map_err(|e| e.with_path(name))?;
        // A column no row of the file can leave null (required, in required parents) answers
        // `IS NULL` without being read.
        let required: Vec<&str> = columns
            .iter()
            .filter(|c| descr.column(c.leaf).max_def_level() == 0)
            .map(|c| c.name.as_str())
            .collect();
        // SQL's `-0.0 = 0.0` for float columns, before statistics or bloom filters see it.
        let type_of = |c: &str| typed.iter().find(|(n, _)| n == c).map(|(_, t)| t.clone());
        let expr = expr.clone().signed_zeros(&type_of);
        let expr = fold(expr.push_not(), &constants, &required)?;
        // Only the columns the folded filter still reads.
        let still = expr.columns();
        columns.retain(|c| still.contains(&c.name.as_str()));
        let mut leaves: Vec<usize> = columns.iter().map(|c| c.leaf).collect();
        leaves.sort_unstable();
        leaves.dedup();
        Ok(FileFilter {
            expr,
            columns,
            leaves,
        })
    }

    /// Evaluate the filter on a batch decoded from the file with (at least) the filter's
    /// leaves: each filter column is taken from its file path and cast to its type.
    pub fn evaluate(&self, decoded: &RecordBatch) -> Result<BooleanArray> {
        if let Expr::Literal(b) = self.expr {
            return Ok(BooleanArray::from(vec![b; decoded.num_rows()]));
        }
        let mut fields = Vec::with_capacity(self.columns.len());
        let mut arrays = Vec::with_capacity(self.columns.len());
        for c in &self.columns {
            let a = column_at(decoded, &c.file_path)?;
            let a = if a.data_type() == &c.data_type {
                a
            } else {
                let opts = arrow::compute::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                arrow::compute::cast_with_options(&a, &c.data_type, &opts)?
            };
            fields.push(arrow::datatypes::Field::new(
                &c.name,
                c.data_type.clone(),
                true,
            ));
            arrays.push(a);
        }
        let opts = arrow::array::RecordBatchOptions::new().with_row_count(Some(decoded.num_rows()));
        let flat = RecordBatch::try_new_with_options(
            Arc::new(arrow::datatypes::Schema::new(fields)),
            arrays,
            &opts,
        )?;
        self.expr.evaluate(&flat)
    }

    pub(crate) fn column(&self, name: &str) -> &FilterColumn {
        self.columns
            .iter()
            .find(|c| c.name == name)
            .expect("filter columns resolved")
    }
}

/// The filter's view of `column`, read from leaf `leaf` (at `file_path` in the file, of
/// `file_type` there and `data_type` in the scan's output): whether its statistics and bloom
/// filters can judge it.
fn filter_column(
    meta: &FileMeta,
    column: &str,
    leaf: usize,
    file_path: Vec<String>,
    file_type: DataType,
    data_type: DataType,
) -> Result<FilterColumn> {
    let bad = |why: &str| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("cannot filter on column {column:?}: {why}"),
        )
        .with_path(&*meta.file.name)
    };
    let descr = meta.reader.parquet_schema();
    if leaf >= descr.num_columns() {
        return Err(bad("the file's schema does not match its metadata"));
    }
    let cd = descr.column(leaf);
    if cd.max_rep_level() > 0 {
        return Err(bad("it is inside a list or map"));
    }
    let top_level = file_path.len() == 1;
    let order = meta.reader.metadata().file_metadata().column_order(leaf);
    // Statistics are read in the file's type and cast to the column's: only through casts
    // that keep the order (widening numbers, dates to timestamps).
    let monotone = file_type == data_type || widening(&file_type, &data_type);
    let readable = stats_readable(order, cd.physical_type(), &file_type);
    let stats_name = (top_level && readable && monotone).then(|| file_path[0].clone());
    Ok(FilterColumn {
        name: column.to_string(),
        leaf,
        bloom: bloom_kind(&file_type, cd.physical_type()),
        file_path,
        file_type,
        data_type,
        stats_name,
    })
}

/// Whether min/max statistics of a column of `physical` type read as `file_type`, written in
/// `order`, bound its values.
fn stats_readable(order: ColumnOrder, physical: PhysicalType, file_type: &DataType) -> bool {
    let order_ok = match order {
        ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::SIGNED) => true,
        ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::UNSIGNED) => {
            matches!(physical, PhysicalType::BYTE_ARRAY)
        }
        // Legacy writers compared byte arrays as signed bytes: wrong for strings and
        // fixed-length decimals, right for numbers.
        ColumnOrder::UNDEFINED => matches!(
            physical,
            PhysicalType::INT32
                | PhysicalType::INT64
                | PhysicalType::FLOAT
                | PhysicalType::DOUBLE
                | PhysicalType::BOOLEAN
        ),
        _ => false,
    };
    let type_ok = match file_type {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => true,
        DataType::Float32 | DataType::Float64 | DataType::Boolean => true,
        DataType::Date32 | DataType::Date64 => true,
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => true,
        DataType::Timestamp(..) => physical == PhysicalType::INT64,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        _ => false,
    };
    order_ok && type_ok
}

/// How a bloom filter hashes values of `file_type` stored as `physical`, if rayquet probes it.
fn bloom_kind(file_type: &DataType, physical: PhysicalType) -> Option<BloomKind> {
    match (file_type, physical) {
        (
            DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Date32,
            PhysicalType::INT32,
        ) => Some(BloomKind::I32),
        (DataType::Int64 | DataType::Timestamp(..), PhysicalType::INT64) => Some(BloomKind::I64),
        (DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View, PhysicalType::BYTE_ARRAY) => {
            Some(BloomKind::Bytes)
        }
        _ => None,
    }
}

fn check_literals(e: &Expr, cols: &[(String, DataType)]) -> Result<()> {
    let ty = |c: &str| &cols.iter().find(|x| x.0 == c).expect("resolved").1;
    match e {
        Expr::Compare { column, value, .. } => value.to_typed(ty(column), column).map(drop),
        Expr::InList { column, values, .. } => values
            .iter()
            .try_for_each(|v| v.to_typed(ty(column), column).map(drop)),
        Expr::IsNull { .. } | Expr::Literal(_) => Ok(()),
        Expr::Like {
            column, pattern, ..
        } => crate::expr::like_pattern(ty(column), pattern, column).map(drop),
        Expr::Between {
            column, low, high, ..
        } => {
            low.to_typed(ty(column), column)?;
            high.to_typed(ty(column), column).map(drop)
        }
        Expr::And(a, b) | Expr::Or(a, b) => {
            check_literals(a, cols)?;
            check_literals(b, cols)
        }
        Expr::Not(a) => check_literals(a, cols),
    }
}

/// Whether casting `from` to `to` keeps the order of values (so statistics cast too).
fn widening(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    let int = |t: &DataType| matches!(t, Int8 | Int16 | Int32 | Int64);
    let float = |t: &DataType| matches!(t, Float16 | Float32 | Float64);
    let decimal = |t: &DataType| {
        matches!(
            t,
            Decimal32(..) | Decimal64(..) | Decimal128(..) | Decimal256(..)
        )
    };
    (int(from) && (int(to) || float(to) || decimal(to)))
        || (float(from) && float(to))
        || (decimal(from) && decimal(to))
        || (matches!(from, Date32 | Date64) && matches!(to, Date32 | Date64 | Timestamp(..)))
        || (matches!(from, Timestamp(..)) && matches!(to, Timestamp(..)))
        || (matches!(from, Utf8 | LargeUtf8 | Utf8View)
            && matches!(to, Utf8 | LargeUtf8 | Utf8View))
}

/// The primitive column at `path` (names from the root) of a decoded batch, with the nulls
/// of every enclosing struct applied.
pub(crate) fn column_at(batch: &RecordBatch, path: &[String]) -> Result<ArrayRef> {
    let missing = || {
        Error::new(
            ErrorKind::CorruptData,
            format!("filter column {path:?} is not in the decoded data"),
        )
    };
    let (first, rest) = path.split_first().ok_or_else(missing)?;
    let mut cur: ArrayRef = Arc::clone(batch.column_by_name(first).ok_or_else(missing)?);
    for p in rest {
        let st = cur.as_struct_opt().ok_or_else(missing)?;
        let child = st.column_by_name(p).ok_or_else(missing)?;
        let nulls = arrow::buffer::NullBuffer::union(st.nulls(), child.logical_nulls().as_ref());
        let data = child.to_data().into_builder().nulls(nulls).build()?;
        cur = arrow::array::make_array(data);
    }
    Ok(cur)
}

/// The column a leaf predicate reads.
pub(crate) fn leaf_column(e: &Expr) -> &str {
    e.leaf_column().expect("leaf predicates only")
}
