//! Verdicts from statistics: per row group from the column chunk statistics ([`row_groups`]),
//! per data page from the page index as a row selection ([`pages`]).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, Float32Array, Float64Array, UInt64Array};
use arrow::datatypes::DataType;
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::RowSelection;
use parquet::file::metadata::ParquetMetaData;

use crate::error::{Error, ErrorKind, Result};
use crate::expr::LikeRest::{AnyTail, Nothing};
use crate::expr::{CmpOp, Expr, LikePrefix, Value};
use crate::footer::FileMeta;
use crate::plan::prune::filter::{leaf_column, FileFilter, FilterColumn};
use crate::plan::prune::Verdict;

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
    // A unit's verdict from whether no row can match and whether every non-null row does.
    let verdict = |i: usize, none: bool, all: bool| {
        if all_null(i) || none {
            Verdict::None
        } else if all && no_null(i) {
            Verdict::All
        } else {
            Verdict::Some
        }
    };
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
                verdict(i, none, all)
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
        // A case-sensitive pattern's matches start with its literal prefix, so lie in
        // [prefix, upper bound): judged as that range (docs/design/filters.md). A null never
        // matches, `NOT LIKE` included.
        Expr::Like {
            pattern,
            negated,
            case_insensitive,
            ..
        } => {
            let like = LikePrefix::of(pattern);
            let unknown = *case_insensitive || (like.prefix.is_empty() && like.rest != Nothing);
            if unknown {
                return Ok((0..n).map(|i| verdict(i, false, false)).collect());
            }
            let p = Value::Str(like.prefix.clone());
            if like.rest == Nothing {
                // No wildcard: `=` or `<>` the prefix.
                return compare(if *negated { CmpOp::NotEq } else { CmpOp::Eq }, &p);
            }
            // Per unit: no value can start with the prefix (`miss`), or every non-null value
            // does (`within`).
            let (min, max) = (&stats.mins, &stats.maxes);
            let below = cmp(max, CmpOp::Lt, &p)?;
            let from = cmp(min, CmpOp::GtEq, &p)?;
            let upper = like.upper_bound().map(Value::Str);
            let (above, under) = match &upper {
                Some(u) => (
                    Some(cmp(min, CmpOp::GtEq, u)?),
                    Some(cmp(max, CmpOp::Lt, u)?),
                ),
                None => (None, None),
            };
            let prefix_only = like.rest == AnyTail;
            Ok((0..n)
                .map(|i| {
                    let miss = truthy(&below, i) || above.as_ref().is_some_and(|a| truthy(a, i));
                    let within = truthy(&from, i) && under.as_ref().is_none_or(|u| truthy(u, i));
                    // `'abc%'` matches exactly the strings that start with `abc`; another
                    // pattern only some of them.
                    let (none, all) = if *negated {
                        (prefix_only && within, miss)
                    } else {
                        (miss, prefix_only && within)
                    };
                    verdict(i, none, all)
                })
                .collect())
        }
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
pub(crate) fn judge(
    e: &Expr,
    n: usize,
    leaf: &mut dyn FnMut(&Expr) -> Vec<Verdict>,
) -> Vec<Verdict> {
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
