//! The verdicts of one leaf predicate (a comparison, `IN`, `IS NULL`, `LIKE`, `BETWEEN`)
//! over the units (row groups or pages) of one column's statistics ([`Stats`], read by
//! [`crate::plan::prune::stats`]; judged by [`leaf_verdicts`]).
//!
//! Invariant: a verdict is `None` only when no row of the unit can match and `All` only when
//! every row does (no null, and bounds that are the true values where equality decides);
//! anything unknown (a missing or truncated bound, a null count) is `Some`.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, Float32Array, Float64Array, Scalar, UInt64Array,
};
use arrow::datatypes::DataType;

use crate::error::Result;
use crate::expr::LikeRest::{AnyTail, Nothing};
use crate::expr::{CmpOp, Expr, LikePrefix, Value};
use crate::plan::prune::filter::FilterColumn;
use crate::plan::prune::Verdict;

/// Statistics of one column over `n` units (row groups or pages).
pub(super) struct Stats {
    pub mins: ArrayRef,
    pub maxes: ArrayRef,
    pub nulls: UInt64Array,
    pub rows: Option<UInt64Array>,
    /// Both bounds are the true values (not truncated), per unit; `None` for pages.
    pub exact: Option<BooleanArray>,
}

impl Stats {
    pub fn len(&self) -> usize {
        self.mins.len()
    }

    /// Statistics read in the file's type, cast to the type the filter compares in (a
    /// widening cast, which keeps the order); a value the cast cannot hold becomes unknown.
    pub fn cast_to(mut self, ty: &DataType) -> Result<Self> {
        if self.mins.data_type() != ty {
            self.mins = arrow::compute::cast(&self.mins, ty)?;
            self.maxes = arrow::compute::cast(&self.maxes, ty)?;
        }
        Ok(self)
    }

    /// Make float statistics safe to reason about: a NaN minimum is unknown, a zero minimum
    /// might hide `-0.0`, and the maximum ignores NaN, so it is unknown.
    pub fn sanitize(mut self) -> Self {
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

/// Judge one leaf predicate over the units of `stats`.
pub(super) fn leaf_verdicts(e: &Expr, col: &FilterColumn, stats: &Stats) -> Result<Vec<Verdict>> {
    let units = Units { col, stats };
    match e {
        Expr::Compare { op, value, .. } => units.compare(*op, value),
        Expr::InList {
            values, negated, ..
        } => units.in_list(values, *negated),
        Expr::IsNull { negated, .. } => Ok(units.null_verdicts(*negated)),
        Expr::Like {
            pattern,
            negated,
            case_insensitive,
            ..
        } => units.like(pattern, *negated, *case_insensitive),
        Expr::Between {
            low, high, negated, ..
        } => Ok(if *negated {
            let parts = vec![
                units.compare(CmpOp::Lt, low)?,
                units.compare(CmpOp::Gt, high)?,
            ];
            units.fold(parts, false, Verdict::Some)
        } else {
            let parts = vec![
                units.compare(CmpOp::GtEq, low)?,
                units.compare(CmpOp::LtEq, high)?,
            ];
            units.fold(parts, true, Verdict::Some)
        }),
        _ => unreachable!("leaf predicates only"),
    }
}

/// True where `b` is true (null: false).
pub(super) fn truthy(b: &BooleanArray, i: usize) -> bool {
    b.is_valid(i) && b.value(i)
}

/// The units of one column's statistics, as the filter's column sees them.
struct Units<'a> {
    col: &'a FilterColumn,
    stats: &'a Stats,
}

impl Units<'_> {
    fn len(&self) -> usize {
        self.stats.len()
    }

    fn nulls(&self, i: usize) -> Option<u64> {
        let nulls = &self.stats.nulls;
        nulls.is_valid(i).then(|| nulls.value(i))
    }

    fn rows(&self, i: usize) -> Option<u64> {
        let rows = self.stats.rows.as_ref()?;
        rows.is_valid(i).then(|| rows.value(i))
    }

    fn all_null(&self, i: usize) -> bool {
        matches!((self.nulls(i), self.rows(i)), (Some(a), Some(b)) if a == b)
    }

    fn no_null(&self, i: usize) -> bool {
        self.nulls(i) == Some(0)
    }

    /// Both of unit `i`'s bounds are its true values.
    fn exact(&self, i: usize) -> bool {
        self.stats.exact.as_ref().is_some_and(|e| truthy(e, i))
    }

    /// A unit's verdict from whether no row can match and whether every non-null row does.
    fn verdict(&self, i: usize, none: bool, all: bool) -> Verdict {
        if self.all_null(i) || none {
            Verdict::None
        } else if all && self.no_null(i) {
            Verdict::All
        } else {
            Verdict::Some
        }
    }

    /// `bounds op v`, per unit.
    fn cmp(&self, bounds: &ArrayRef, op: CmpOp, v: &Value) -> Result<BooleanArray> {
        let lit = Scalar::new(v.to_typed(&self.col.data_type, &self.col.name)?);
        op.apply(bounds, &lit)
    }

    /// `column op v`.
    fn compare(&self, op: CmpOp, v: &Value) -> Result<Vec<Verdict>> {
        let (min, max) = (&self.stats.mins, &self.stats.maxes);
        // (none, all) as arrays of per-unit conditions.
        let (none_a, none_b, all_a, all_b) = match op {
            CmpOp::Eq => (
                self.cmp(min, CmpOp::Gt, v)?,
                self.cmp(max, CmpOp::Lt, v)?,
                self.cmp(min, CmpOp::Eq, v)?,
                self.cmp(max, CmpOp::Eq, v)?,
            ),
            CmpOp::NotEq => (
                self.cmp(min, CmpOp::Eq, v)?,
                self.cmp(max, CmpOp::Eq, v)?,
                self.cmp(min, CmpOp::Gt, v)?,
                self.cmp(max, CmpOp::Lt, v)?,
            ),
            // Ordering: no row matches when the bound nearest `v` fails the operator; every
            // row does when the far bound passes it.
            CmpOp::Lt | CmpOp::LtEq | CmpOp::Gt | CmpOp::GtEq => {
                let (near, far) = match op {
                    CmpOp::Lt | CmpOp::LtEq => (min, max),
                    _ => (max, min),
                };
                let none = self.cmp(near, op.negate(), v)?;
                let all = self.cmp(far, op, v)?;
                (none.clone(), none, all.clone(), all)
            }
        };
        Ok((0..self.len())
            .map(|i| {
                let (none, all) = match op {
                    // none: v outside [min, max]; all: min = max = v (exact bounds).
                    CmpOp::Eq => (
                        truthy(&none_a, i) || truthy(&none_b, i),
                        self.exact(i) && truthy(&all_a, i) && truthy(&all_b, i),
                    ),
                    // none: min = max = v (exact bounds); all: v outside [min, max].
                    CmpOp::NotEq => (
                        self.exact(i) && truthy(&none_a, i) && truthy(&none_b, i),
                        truthy(&all_a, i) || truthy(&all_b, i),
                    ),
                    _ => (truthy(&none_a, i), truthy(&all_a, i)),
                };
                self.verdict(i, none, all)
            })
            .collect())
    }

    /// `parts` combined per unit with AND (`and`) or OR; `empty` when there are none.
    fn fold(&self, parts: Vec<Vec<Verdict>>, and: bool, empty: Verdict) -> Vec<Verdict> {
        (0..self.len())
            .map(|i| {
                parts
                    .iter()
                    .map(|p| p[i])
                    .reduce(|a, b| if and { a.and(b) } else { a.or(b) })
                    .unwrap_or(empty)
            })
            .collect()
    }

    /// `column [NOT] IN (values)`.
    fn in_list(&self, values: &[Value], negated: bool) -> Result<Vec<Verdict>> {
        if values.is_empty() {
            return Ok(if negated {
                self.null_verdicts(true)
            } else {
                vec![Verdict::None; self.len()]
            });
        }
        let op = if negated { CmpOp::NotEq } else { CmpOp::Eq };
        let parts = values
            .iter()
            .map(|v| self.compare(op, v))
            .collect::<Result<Vec<_>>>()?;
        Ok(self.fold(parts, negated, Verdict::Some))
    }

    /// `column IS [NOT] NULL`.
    fn null_verdicts(&self, not_null: bool) -> Vec<Verdict> {
        (0..self.len())
            .map(|i| {
                let (none, all) = if not_null {
                    (self.all_null(i), self.no_null(i))
                } else {
                    (self.no_null(i), self.all_null(i))
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

    /// `column [NOT] [I]LIKE pattern`. A case-sensitive pattern's matches start with its
    /// literal prefix, so lie in [prefix, upper bound): judged as that range
    /// (docs/design/filters.md). A null never matches, `NOT LIKE` included.
    fn like(&self, pattern: &str, negated: bool, case_insensitive: bool) -> Result<Vec<Verdict>> {
        let like = LikePrefix::of(pattern);
        if case_insensitive || (like.prefix.is_empty() && like.rest != Nothing) {
            return Ok((0..self.len())
                .map(|i| self.verdict(i, false, false))
                .collect());
        }
        let p = Value::Str(like.prefix.clone());
        if like.rest == Nothing {
            // No wildcard: `=` or `<>` the prefix.
            return self.compare(if negated { CmpOp::NotEq } else { CmpOp::Eq }, &p);
        }
        // Per unit: no value can start with the prefix (`miss`), or every non-null value
        // does (`within`).
        let (min, max) = (&self.stats.mins, &self.stats.maxes);
        let below = self.cmp(max, CmpOp::Lt, &p)?;
        let from = self.cmp(min, CmpOp::GtEq, &p)?;
        let (above, under) = match like.upper_bound().map(Value::Str) {
            Some(u) => (
                Some(self.cmp(min, CmpOp::GtEq, &u)?),
                Some(self.cmp(max, CmpOp::Lt, &u)?),
            ),
            None => (None, None),
        };
        let prefix_only = like.rest == AnyTail;
        Ok((0..self.len())
            .map(|i| {
                let miss = truthy(&below, i) || above.as_ref().is_some_and(|a| truthy(a, i));
                let within = truthy(&from, i) && under.as_ref().is_none_or(|u| truthy(u, i));
                // `'abc%'` matches exactly the strings that start with `abc`; another pattern
                // only some of them.
                let (none, all) = if negated {
                    (prefix_only && within, miss)
                } else {
                    (miss, prefix_only && within)
                };
                self.verdict(i, none, all)
            })
            .collect())
    }
}
