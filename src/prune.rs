//! Prune: decide from metadata alone which row groups and pages a filter can skip.
//!
//! A filter is resolved against each file ([`FileFilter`]), then judged per row group from
//! the column chunk statistics (min, max, null count), per data page from the page index
//! (column and offset index), and per row group again from bloom filters for `=` and `IN`.
//! Each judgement is a [`Verdict`]: no row can match, every row matches, or some may.
//!
//! Invariant: *when in doubt, read*. A verdict of `None` (skip) is given only from statistics
//! that bound the data: missing statistics, missing null counts, statistics of nested columns,
//! of unsigned, INT96, interval or half-float types, of byte arrays written in the legacy
//! (undefined) sort order, float maxima (which ignore NaN, the largest float in arrow's total
//! order) and any statistic that fails to convert all mean "some rows may match". Pruning
//! only removes data the exact filter would remove anyway; the exact filter always runs.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float32Array, Float64Array, RecordBatch, UInt64Array,
};
use arrow::datatypes::DataType;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::RowSelection;
use parquet::basic::{ColumnOrder, SortOrder, Type as PhysicalType};
use parquet::bloom_filter::Sbbf;
use parquet::file::metadata::ParquetMetaData;

use crate::error::{Error, ErrorKind, Result};
use crate::expr::{CmpOp, Expr, Value};
use crate::footer::FileMeta;
use crate::mapping::{FilterTarget, Mapping};

/// What metadata proves about the rows of a row group (or page) under a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No row can match: skip it.
    None,
    /// Every row matches: no need to filter.
    All,
    /// Unknown: read and filter.
    Some,
}

impl Verdict {
    fn and(self, o: Verdict) -> Verdict {
        match (self, o) {
            (Verdict::None, _) | (_, Verdict::None) => Verdict::None,
            (Verdict::All, Verdict::All) => Verdict::All,
            _ => Verdict::Some,
        }
    }
    fn or(self, o: Verdict) -> Verdict {
        match (self, o) {
            (Verdict::All, _) | (_, Verdict::All) => Verdict::All,
            (Verdict::None, Verdict::None) => Verdict::None,
            _ => Verdict::Some,
        }
    }
}

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
    stats_name: Option<String>,
    /// The bloom filter may answer `=` and `IN` (a physical type the literal hashes as).
    bloom: Option<BloomKind>,
}

#[derive(Debug, Clone, Copy)]
enum BloomKind {
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
        let md = meta.reader.metadata();
        let mut columns = Vec::new();
        let mut constants: Vec<(String, ArrayRef)> = Vec::new();
        for column in expr.columns() {
            let (leaf, file_path, file_type, data_type) =
                match mapping.filter_target(column, meta.reader.schema(), name)? {
                    FilterTarget::Const(v) => {
                        constants.push((column.to_string(), v));
                        continue;
                    }
                    FilterTarget::File {
                        leaf,
                        file_path,
                        file_type,
                        out_type,
                    } => (leaf, file_path, file_type, out_type),
                };
            let bad = |why: &str| {
                Error::new(
                    ErrorKind::InvalidArgument,
                    format!("cannot filter on column {column:?}: {why}"),
                )
                .with_path(name)
            };
            if leaf >= descr.num_columns() {
                return Err(bad("the file's schema does not match its metadata"));
            }
            let cd = descr.column(leaf);
            if cd.max_rep_level() > 0 {
                return Err(bad("it is inside a list or map"));
            }
            let top_level = file_path.len() == 1;
            let order_ok = match md.file_metadata().column_order(leaf) {
                ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::SIGNED) => true,
                ColumnOrder::TYPE_DEFINED_ORDER(SortOrder::UNSIGNED) => {
                    matches!(cd.physical_type(), PhysicalType::BYTE_ARRAY)
                }
                // Legacy writers compared byte arrays as signed bytes: wrong for strings and
                // fixed-length decimals, right for numbers.
                ColumnOrder::UNDEFINED => matches!(
                    cd.physical_type(),
                    PhysicalType::INT32
                        | PhysicalType::INT64
                        | PhysicalType::FLOAT
                        | PhysicalType::DOUBLE
                        | PhysicalType::BOOLEAN
                ),
                _ => false,
            };
            let type_ok = match &file_type {
                DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => true,
                DataType::Float32 | DataType::Float64 | DataType::Boolean => true,
                DataType::Date32 | DataType::Date64 => true,
                DataType::Decimal32(..)
                | DataType::Decimal64(..)
                | DataType::Decimal128(..)
                | DataType::Decimal256(..) => true,
                DataType::Timestamp(..) => cd.physical_type() == PhysicalType::INT64,
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
                _ => false,
            };
            // Statistics are read in the file's type and cast to the column's: only through
            // casts that keep the order (widening numbers, dates to timestamps).
            let monotone = file_type == data_type || widening(&file_type, &data_type);
            let stats_name =
                (top_level && order_ok && type_ok && monotone).then(|| file_path[0].clone());
            let bloom = match (&file_type, cd.physical_type()) {
                (
                    DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Date32,
                    PhysicalType::INT32,
                ) => Some(BloomKind::I32),
                (DataType::Int64 | DataType::Timestamp(..), PhysicalType::INT64) => {
                    Some(BloomKind::I64)
                }
                (
                    DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View,
                    PhysicalType::BYTE_ARRAY,
                ) => Some(BloomKind::Bytes),
                _ => None,
            };
            columns.push(FilterColumn {
                name: column.to_string(),
                leaf,
                file_path,
                file_type,
                data_type,
                stats_name,
                bloom,
            });
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
        let expr = fold(expr.clone().push_not(), &constants)?;
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

    fn column(&self, name: &str) -> &FilterColumn {
        self.columns
            .iter()
            .find(|c| c.name == name)
            .expect("filter columns resolved")
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

/// Replace the leaves of `e` (in negation normal form) that read a column constant in this
/// file by their value: TRUE, or FALSE for false and null alike (exact in negation normal
/// form, where no `NOT` can turn a null into a match). Then simplify.
fn fold(e: Expr, constants: &[(String, ArrayRef)]) -> Result<Expr> {
    Ok(match e {
        Expr::And(a, b) => match (fold(*a, constants)?, fold(*b, constants)?) {
            (Expr::Literal(false), _) | (_, Expr::Literal(false)) => Expr::Literal(false),
            (Expr::Literal(true), x) | (x, Expr::Literal(true)) => x,
            (x, y) => x.and(y),
        },
        Expr::Or(a, b) => match (fold(*a, constants)?, fold(*b, constants)?) {
            (Expr::Literal(true), _) | (_, Expr::Literal(true)) => Expr::Literal(true),
            (Expr::Literal(false), x) | (x, Expr::Literal(false)) => x,
            (x, y) => x.or(y),
        },
        Expr::Not(a) => match fold(*a, constants)? {
            Expr::Literal(b) => Expr::Literal(!b),
            x => x.negate(),
        },
        Expr::Literal(b) => Expr::Literal(b),
        leaf => {
            let column = leaf_column(&leaf);
            match constants.iter().find(|(n, _)| n == column) {
                None => leaf,
                Some((n, v)) => {
                    let field = arrow::datatypes::Field::new(n, v.data_type().clone(), true);
                    let batch = RecordBatch::try_new(
                        Arc::new(arrow::datatypes::Schema::new(vec![field])),
                        vec![Arc::clone(v)],
                    )?;
                    let r = leaf.evaluate(&batch)?;
                    Expr::Literal(r.is_valid(0) && r.value(0))
                }
            }
        }
    })
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

/// Statistics of one column over `n` units (row groups or pages).
struct Stats {
    mins: ArrayRef,
    maxes: ArrayRef,
    nulls: UInt64Array,
    rows: Option<UInt64Array>,
    /// Both bounds are the true values (not truncated), per unit; `None` for pages.
    exact: Option<BooleanArray>,
}

impl Stats {
    fn len(&self) -> usize {
        self.mins.len()
    }

    /// Statistics read in the file's type, cast to the type the filter compares in (a
    /// widening cast, which keeps the order); a value the cast cannot hold becomes unknown.
    fn cast_to(mut self, ty: &DataType) -> Result<Self> {
        if self.mins.data_type() != ty {
            self.mins = arrow::compute::cast(&self.mins, ty)?;
            self.maxes = arrow::compute::cast(&self.maxes, ty)?;
        }
        Ok(self)
    }

    /// Make float statistics safe to reason about: a NaN minimum is unknown, a zero minimum
    /// might hide `-0.0`, and the maximum ignores NaN, so it is unknown.
    fn sanitize(mut self) -> Self {
        fn fix<T: arrow::datatypes::ArrowPrimitiveType<Native = F>, F: num_like::Float>(
            mins: &ArrayRef,
        ) -> ArrayRef {
            let a = mins
                .as_any()
                .downcast_ref::<arrow::array::PrimitiveArray<T>>()
                .expect("float stats");
            let out: arrow::array::PrimitiveArray<T> = a
                .iter()
                .map(|v| v.and_then(|x| if x.nan() { None } else { Some(x.neg_zero()) }))
                .collect();
            Arc::new(out)
        }
        match self.mins.data_type() {
            DataType::Float64 => {
                self.mins = fix::<arrow::datatypes::Float64Type, f64>(&self.mins);
                self.maxes = Arc::new(Float64Array::new_null(self.maxes.len()));
            }
            DataType::Float32 => {
                self.mins = fix::<arrow::datatypes::Float32Type, f32>(&self.mins);
                self.maxes = Arc::new(Float32Array::new_null(self.maxes.len()));
            }
            _ => {}
        }
        self
    }
}

mod num_like {
    /// The two float widths, for [`super::Stats::sanitize`].
    pub trait Float: Copy {
        fn nan(self) -> bool;
        /// `-0.0` for either zero, else the value.
        fn neg_zero(self) -> Self;
    }
    macro_rules! float {
        ($($t:ty),*) => {$(
            impl Float for $t {
                fn nan(self) -> bool {
                    self.is_nan()
                }
                fn neg_zero(self) -> Self {
                    if self == 0.0 {
                        -0.0
                    } else {
                        self
                    }
                }
            }
        )*};
    }
    float!(f32, f64);
}

/// True where `b` is true (null: false).
fn truthy(b: &BooleanArray, i: usize) -> bool {
    b.is_valid(i) && b.value(i)
}

/// Judge one leaf predicate over the units of `stats`.
fn leaf_verdicts(e: &Expr, col: &FilterColumn, stats: &Stats) -> Result<Vec<Verdict>> {
    let n = stats.len();
    let nulls = |i: usize| stats.nulls.is_valid(i).then(|| stats.nulls.value(i));
    let rows = |i: usize| {
        stats
            .rows
            .as_ref()
            .and_then(|r| r.is_valid(i).then(|| r.value(i)))
    };
    let all_null = |i: usize| matches!((nulls(i), rows(i)), (Some(a), Some(b)) if a == b);
    let no_null = |i: usize| nulls(i) == Some(0);
    let exact = |i: usize| stats.exact.as_ref().is_some_and(|e| truthy(e, i));
    let lit = |v: &Value| -> Result<arrow::array::Scalar<ArrayRef>> {
        Ok(arrow::array::Scalar::new(
            v.to_typed(&col.data_type, &col.name)?,
        ))
    };
    let cmp =
        |a: &ArrayRef, op: CmpOp, v: &Value| -> Result<BooleanArray> { op.apply(a, &lit(v)?) };
    let compare = |op: CmpOp, v: &Value| -> Result<Vec<Verdict>> {
        let (min, max) = (&stats.mins, &stats.maxes);
        // (none, all) as arrays of per-unit conditions.
        let (none_a, none_b, all_a, all_b) = match op {
            CmpOp::Eq => (
                cmp(min, CmpOp::Gt, v)?,
                cmp(max, CmpOp::Lt, v)?,
                cmp(min, CmpOp::Eq, v)?,
                cmp(max, CmpOp::Eq, v)?,
            ),
            CmpOp::NotEq => (
                cmp(min, CmpOp::Eq, v)?,
                cmp(max, CmpOp::Eq, v)?,
                cmp(min, CmpOp::Gt, v)?,
                cmp(max, CmpOp::Lt, v)?,
            ),
            // Ordering: no row matches when the bound nearest `v` fails the operator; every
            // row does when the far bound passes it.
            CmpOp::Lt | CmpOp::LtEq | CmpOp::Gt | CmpOp::GtEq => {
                let (near, far) = match op {
                    CmpOp::Lt | CmpOp::LtEq => (min, max),
                    _ => (max, min),
                };
                let none = cmp(near, op.negate(), v)?;
                let all = cmp(far, op, v)?;
                (none.clone(), none, all.clone(), all)
            }
        };
        Ok((0..n)
            .map(|i| {
                let (none, all) = match op {
                    // none: v outside [min, max]; all: min = max = v (exact bounds).
                    CmpOp::Eq => (
                        truthy(&none_a, i) || truthy(&none_b, i),
                        exact(i) && truthy(&all_a, i) && truthy(&all_b, i),
                    ),
                    // none: min = max = v (exact bounds); all: v outside [min, max].
                    CmpOp::NotEq => (
                        exact(i) && truthy(&none_a, i) && truthy(&none_b, i),
                        truthy(&all_a, i) || truthy(&all_b, i),
                    ),
                    _ => (truthy(&none_a, i), truthy(&all_a, i)),
                };
                if all_null(i) || none {
                    Verdict::None
                } else if all && no_null(i) {
                    Verdict::All
                } else {
                    Verdict::Some
                }
            })
            .collect())
    };
    let fold = |parts: Vec<Vec<Verdict>>, and: bool, empty: Verdict| -> Vec<Verdict> {
        (0..n)
            .map(|i| {
                parts
                    .iter()
                    .map(|p| p[i])
                    .reduce(|a, b| if and { a.and(b) } else { a.or(b) })
                    .unwrap_or(empty)
            })
            .collect()
    };
    match e {
        Expr::Compare { op, value, .. } => compare(*op, value),
        Expr::InList {
            values, negated, ..
        } => {
            if values.is_empty() {
                return Ok(if *negated {
                    null_verdicts(n, true, &all_null, &no_null)
                } else {
                    vec![Verdict::None; n]
                });
            }
            let op = if *negated { CmpOp::NotEq } else { CmpOp::Eq };
            let parts = values
                .iter()
                .map(|v| compare(op, v))
                .collect::<Result<Vec<_>>>()?;
            Ok(fold(parts, *negated, Verdict::Some))
        }
        Expr::IsNull { negated, .. } => Ok(null_verdicts(n, *negated, &all_null, &no_null)),
        Expr::Between {
            low, high, negated, ..
        } => Ok(if *negated {
            fold(
                vec![compare(CmpOp::Lt, low)?, compare(CmpOp::Gt, high)?],
                false,
                Verdict::Some,
            )
        } else {
            fold(
                vec![compare(CmpOp::GtEq, low)?, compare(CmpOp::LtEq, high)?],
                true,
                Verdict::Some,
            )
        }),
        _ => unreachable!("leaf predicates only"),
    }
}

fn null_verdicts(
    n: usize,
    not_null: bool,
    all_null: &dyn Fn(usize) -> bool,
    no_null: &dyn Fn(usize) -> bool,
) -> Vec<Verdict> {
    (0..n)
        .map(|i| {
            let (none, all) = if not_null {
                (all_null(i), no_null(i))
            } else {
                (no_null(i), all_null(i))
            };
            if none {
                Verdict::None
            } else if all {
                Verdict::All
            } else {
                Verdict::Some
            }
        })
        .collect()
}

/// Walk the (negation normal form) filter, judging leaves with `leaf` and combining.
fn judge(e: &Expr, n: usize, leaf: &mut dyn FnMut(&Expr) -> Vec<Verdict>) -> Vec<Verdict> {
    match e {
        Expr::And(a, b) | Expr::Or(a, b) => {
            let x = judge(a, n, leaf);
            let y = judge(b, n, leaf);
            let and = matches!(e, Expr::And(..));
            x.into_iter()
                .zip(y)
                .map(|(x, y)| if and { x.and(y) } else { x.or(y) })
                .collect()
        }
        // `push_not` leaves no `Not` behind; be safe if one remains.
        Expr::Not(_) => vec![Verdict::Some; n],
        Expr::Literal(true) => vec![Verdict::All; n],
        Expr::Literal(false) => vec![Verdict::None; n],
        _ => leaf(e),
    }
}

fn leaf_column(e: &Expr) -> &str {
    match e {
        Expr::Compare { column, .. }
        | Expr::InList { column, .. }
        | Expr::IsNull { column, .. }
        | Expr::Between { column, .. } => column,
        _ => unreachable!("leaf predicates only"),
    }
}

/// Verdicts per row group of `meta`'s file, from column chunk statistics.
pub(crate) fn row_groups(filter: &FileFilter, meta: &FileMeta) -> Vec<Verdict> {
    let md = meta.reader.metadata();
    let n = md.num_row_groups();
    let rows: UInt64Array = md
        .row_groups()
        .iter()
        .map(|r| r.num_rows().max(0) as u64)
        .collect();
    let mut leaf = |e: &Expr| -> Vec<Verdict> {
        let col = filter.column(leaf_column(e));
        let Some(stats_name) = &col.stats_name else {
            return vec![Verdict::Some; n];
        };
        let attempt = crate::panic::catch(|| -> Result<Vec<Verdict>> {
            let schema = meta.reader.schema();
            let conv =
                StatisticsConverter::try_new(stats_name, schema, meta.reader.parquet_schema())
                    .map_err(|e| Error::new(ErrorKind::CorruptFooter, e.to_string()))?
                    .with_missing_null_counts_as_zero(false);
            if conv.parquet_column_index() != Some(col.leaf) {
                return Ok(vec![Verdict::Some; n]);
            }
            let perr = |e: parquet::errors::ParquetError| {
                Error::new(ErrorKind::CorruptFooter, e.to_string())
            };
            let rgs = md.row_groups();
            let exact_min = conv.row_group_is_min_value_exact(rgs).map_err(perr)?;
            let exact_max = conv.row_group_is_max_value_exact(rgs).map_err(perr)?;
            let exact: BooleanArray = (0..n)
                .map(|i| Some(truthy(&exact_min, i) && truthy(&exact_max, i)))
                .collect();
            let stats = Stats {
                mins: conv.row_group_mins(rgs).map_err(perr)?,
                maxes: conv.row_group_maxes(rgs).map_err(perr)?,
                nulls: conv.row_group_null_counts(rgs).map_err(perr)?,
                rows: Some(rows.clone()),
                exact: Some(exact),
            }
            .sanitize()
            .cast_to(&col.data_type)?;
            leaf_verdicts(e, col, &stats)
        });
        match attempt {
            Ok(Ok(v)) if v.len() == n => v,
            _ => vec![Verdict::Some; n],
        }
    };
    judge(&filter.expr, n, &mut leaf)
}

/// The rows of row group `rg` that the page index cannot exclude, or `None` when it excludes
/// nothing (or the file has no page index).
pub(crate) fn pages(filter: &FileFilter, meta: &FileMeta, rg: usize) -> Option<RowSelection> {
    let md: &ParquetMetaData = meta.reader.metadata();
    let (ci, oi) = (md.column_index()?, md.offset_index()?);
    let total = md.row_group(rg).num_rows().max(0) as usize;
    // Per leaf predicate: the selection of pages that may match, or None (all rows).
    let mut leaf = |e: &Expr| -> Option<RowSelection> {
        let col = filter.column(leaf_column(e));
        let stats_name = col.stats_name.as_ref()?;
        if ci.get(rg)?.len() <= col.leaf || oi.get(rg)?.len() <= col.leaf {
            return None;
        }
        let locations = oi[rg][col.leaf].page_locations();
        if locations.is_empty() {
            return None;
        }
        let attempt = crate::panic::catch(|| -> Result<Option<RowSelection>> {
            let perr = |e: parquet::errors::ParquetError| {
                Error::new(ErrorKind::CorruptFooter, e.to_string())
            };
            let conv = StatisticsConverter::try_new(
                stats_name,
                meta.reader.schema(),
                meta.reader.parquet_schema(),
            )
            .map_err(perr)?
            .with_missing_null_counts_as_zero(false);
            if conv.parquet_column_index() != Some(col.leaf) {
                return Ok(None);
            }
            let idx = [rg];
            let stats = Stats {
                mins: conv.data_page_mins(ci, oi, &idx).map_err(perr)?,
                maxes: conv.data_page_maxes(ci, oi, &idx).map_err(perr)?,
                nulls: conv.data_page_null_counts(ci, oi, &idx).map_err(perr)?,
                rows: conv
                    .data_page_row_counts(oi, md.row_groups(), &idx)
                    .map_err(perr)?,
                exact: None,
            }
            .sanitize()
            .cast_to(&col.data_type)?;
            if stats.len() != locations.len() {
                return Ok(None);
            }
            let verdicts = leaf_verdicts(e, col, &stats)?;
            let bounds: Vec<usize> = locations
                .iter()
                .map(|p| p.first_row_index.max(0) as usize)
                .chain(std::iter::once(total))
                .collect();
            if bounds.windows(2).any(|w| w[0] > w[1]) {
                return Ok(None);
            }
            let keep = verdicts
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != Verdict::None)
                .map(|(i, _)| bounds[i]..bounds[i + 1]);
            Ok(Some(RowSelection::from_consecutive_ranges(keep, total)))
        });
        attempt.ok().and_then(|r| r.ok()).flatten()
    };
    page_selection(&filter.expr, &mut leaf)
}

fn page_selection(
    e: &Expr,
    leaf: &mut dyn FnMut(&Expr) -> Option<RowSelection>,
) -> Option<RowSelection> {
    match e {
        Expr::And(a, b) => match (page_selection(a, leaf), page_selection(b, leaf)) {
            (Some(x), Some(y)) => Some(x.intersection(&y)),
            (x, None) | (None, x) => x,
        },
        Expr::Or(a, b) => match (page_selection(a, leaf), page_selection(b, leaf)) {
            (Some(x), Some(y)) => Some(x.union(&y)),
            _ => None,
        },
        Expr::Not(_) | Expr::Literal(true) => None,
        Expr::Literal(false) => Some(RowSelection::from(Vec::new())),
        _ => leaf(e),
    }
}

/// Bloom filter byte ranges, by column name.
pub(crate) type BloomRanges = Vec<(String, Range<u64>)>;

/// Byte ranges of the bloom filters that could exclude row group `rg` (`=`/`IN` leaves on
/// columns with a bloom filter of known length).
pub(crate) fn bloom_ranges(filter: &FileFilter, meta: &FileMeta, rg: usize) -> BloomRanges {
    let mut out: BloomRanges = Vec::new();
    let rgm = meta.reader.metadata().row_group(rg);
    let mut visit = |e: &Expr| {
        let column = match e {
            Expr::Compare {
                column,
                op: CmpOp::Eq,
                ..
            } => column,
            Expr::InList {
                column,
                negated: false,
                ..
            } => column,
            _ => return,
        };
        let col = filter.column(column);
        if col.bloom.is_none() || out.iter().any(|(c, _)| c == column) {
            return;
        }
        let cc = rgm.column(col.leaf);
        if let (Some(off), Some(len)) = (cc.bloom_filter_offset(), cc.bloom_filter_length()) {
            if off >= 0 && len > 0 && (off as u64).saturating_add(len as u64) <= meta.data_end {
                out.push((column.clone(), off as u64..off as u64 + len as u64));
            }
        }
    };
    walk_leaves(&filter.expr, &mut visit);
    out
}

fn walk_leaves<'a>(e: &'a Expr, f: &mut impl FnMut(&'a Expr)) {
    match e {
        Expr::And(a, b) | Expr::Or(a, b) => {
            walk_leaves(a, f);
            walk_leaves(b, f);
        }
        Expr::Not(a) => walk_leaves(a, f),
        Expr::Literal(_) => {}
        leaf => f(leaf),
    }
}

/// Judge a row group from its bloom filters (`blooms`: column name and filter bytes):
/// `None` when an `=`/`IN` that the filter needs finds none of its values.
pub(crate) fn bloom_verdict(filter: &FileFilter, blooms: &[(String, bytes::Bytes)]) -> Verdict {
    let sbbfs: Vec<(&str, Sbbf)> = blooms
        .iter()
        .filter_map(|(c, b)| Sbbf::from_bytes(b).ok().map(|s| (c.as_str(), s)))
        .collect();
    let absent = |col: &FilterColumn, v: &Value| -> bool {
        let Some((_, sbbf)) = sbbfs.iter().find(|(c, _)| *c == col.name) else {
            return false;
        };
        let Some(kind) = col.bloom else { return false };
        // Hashed as the file stores it: a value the file's type cannot hold may still be
        // absent, but "maybe present" is always safe.
        let Ok(typed) = v.to_typed(&col.file_type, &col.name) else {
            return false;
        };
        // Any conversion that fails means "maybe present": never prune on doubt.
        let as_type = |ty: DataType| arrow::compute::cast(&typed, &ty).ok();
        let present = match kind {
            BloomKind::I32 => as_type(DataType::Int32).and_then(|x| {
                let a = x.as_primitive_opt::<arrow::datatypes::Int32Type>()?;
                Some(sbbf.check(&a.value(0)))
            }),
            BloomKind::I64 => as_type(DataType::Int64).and_then(|x| {
                let a = x.as_primitive_opt::<arrow::datatypes::Int64Type>()?;
                Some(sbbf.check(&a.value(0)))
            }),
            BloomKind::Bytes => as_type(DataType::Utf8)
                .and_then(|x| Some(sbbf.check(x.as_string_opt::<i32>()?.value(0)))),
        }
        .unwrap_or(true);
        !present
    };
    let mut leaf = |e: &Expr| -> Vec<Verdict> {
        let v = match e {
            Expr::Compare {
                column,
                op: CmpOp::Eq,
                value,
            } => {
                if absent(filter.column(column), value) {
                    Verdict::None
                } else {
                    Verdict::Some
                }
            }
            Expr::InList {
                column,
                values,
                negated: false,
            } => {
                let col = filter.column(column);
                if values.iter().all(|v| absent(col, v)) {
                    Verdict::None
                } else {
                    Verdict::Some
                }
            }
            _ => Verdict::Some,
        };
        vec![v]
    };
    judge(&filter.expr, 1, &mut leaf)[0]
}
