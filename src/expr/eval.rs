//! Exact evaluation of an [`Expr`] on a batch with arrow's kernels, in SQL's three-valued
//! logic.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, StructArray};
use arrow::compute::kernels::boolean::{and_kleene, not, or_kleene};
use arrow::compute::kernels::cmp;
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;

use crate::error::{Error, ErrorKind, Result};
use crate::expr::{Expr, Value};

impl Expr {
    /// Check that this filter can run on batches of `schema`: every column it names exists
    /// (top level, or a dotted path into structs) and every literal converts exactly to its
    /// column's type (what a scan would refuse at `build()` otherwise).
    ///
    /// ```
    /// use rayquet::col;
    /// use rayquet::reexports::arrow::datatypes::{DataType, Field, Schema};
    /// let schema = Schema::new(vec![Field::new("n", DataType::Int32, true)]);
    /// assert!(col("n").lt(5).check(&schema).is_ok());
    /// assert!(col("n").lt(5.5).check(&schema).is_err()); // no Int32 holds 5.5
    /// assert!(col("m").lt(5).check(&schema).is_err());
    /// ```
    pub fn check(&self, schema: &arrow::datatypes::Schema) -> Result<()> {
        let empty = RecordBatch::new_empty(Arc::new(schema.clone()));
        self.evaluate(&empty).map(|_| ())
    }

    /// Evaluate on `batch`, whose columns must include those the filter reads: true, false or
    /// null per row (arrow's kernels, three-valued logic).
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        // A float column compared with zero: SQL's `-0.0 = 0.0` (see `zero.rs`).
        if let Some(c) = self.leaf_column() {
            if let Some(e) = self.signed_zero_leaf(column_of(batch, c)?.data_type()) {
                return e.evaluate(batch);
            }
        }
        match self {
            Expr::Compare { column, op, value } => {
                let (a, lit) = operands(batch, column, value)?;
                op.apply(&a, &arrow::array::Scalar::new(lit))
            }
            Expr::InList {
                column,
                values,
                negated,
            } => {
                let a = compared(batch, column)?;
                let mut acc: Option<BooleanArray> = None;
                for v in values {
                    let lit = canonical_nans(v.to_typed(a.data_type(), column)?);
                    let hit = cmp::eq(&a, &arrow::array::Scalar::new(lit))?;
                    acc = Some(match acc {
                        None => hit,
                        Some(prev) => or_kleene(&prev, &hit)?,
                    });
                }
                let any = acc.unwrap_or_else(|| {
                    // `x IN ()` is false for every row, null for null rows.
                    let nulls = a.logical_nulls();
                    BooleanArray::new(vec![false; a.len()].into(), nulls)
                });
                Ok(if *negated { not(&any)? } else { any })
            }
            Expr::IsNull { column, negated } => {
                let a = column_of(batch, column)?;
                Ok(if *negated {
                    arrow::compute::is_not_null(&a)?
                } else {
                    arrow::compute::is_null(&a)?
                })
            }
            Expr::Between {
                column,
                low,
                high,
                negated,
            } => {
                let a = compared(batch, column)?;
                let lo = v_scalar(low, &a, column)?;
                let hi = v_scalar(high, &a, column)?;
                let inside = and_kleene(&cmp::gt_eq(&a, &lo)?, &cmp::lt_eq(&a, &hi)?)?;
                Ok(if *negated { not(&inside)? } else { inside })
            }
            Expr::Like {
                column,
                pattern,
                negated,
                case_insensitive,
            } => {
                use arrow::compute::kernels::comparison::{ilike, like, nilike, nlike};
                let a = column_of(batch, column)?;
                let p = arrow::array::Scalar::new(like_pattern(a.data_type(), pattern, column)?);
                Ok(match (*negated, *case_insensitive) {
                    (false, false) => like(&a, &p),
                    (true, false) => nlike(&a, &p),
                    (false, true) => ilike(&a, &p),
                    (true, true) => nilike(&a, &p),
                }?)
            }
            Expr::And(a, b) => Ok(and_kleene(&a.evaluate(batch)?, &b.evaluate(batch)?)?),
            Expr::Or(a, b) => Ok(or_kleene(&a.evaluate(batch)?, &b.evaluate(batch)?)?),
            Expr::Not(a) => Ok(not(&a.evaluate(batch)?)?),
            Expr::Literal(b) => Ok(BooleanArray::from(vec![*b; batch.num_rows()])),
        }
    }
}

/// `pattern` as a one-row array of the string type of `ty`, which arrow's `like` kernels take
/// alongside a column of type `ty`; an error naming `column` unless `ty` holds strings.
pub(crate) fn like_pattern(ty: &DataType, pattern: &str, column: &str) -> Result<ArrayRef> {
    use arrow::array::{LargeStringArray, StringArray, StringViewArray};
    Ok(match ty {
        DataType::Utf8 => Arc::new(StringArray::from(vec![pattern])),
        DataType::LargeUtf8 => Arc::new(LargeStringArray::from(vec![pattern])),
        DataType::Utf8View => Arc::new(StringViewArray::from(vec![pattern])),
        DataType::Dictionary(_, values) => return like_pattern(values, pattern, column),
        other => {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("LIKE needs a string column; filter column {column:?} is {other}"),
            ))
        }
    })
}

fn v_scalar(v: &Value, a: &ArrayRef, column: &str) -> Result<arrow::array::Scalar<ArrayRef>> {
    Ok(arrow::array::Scalar::new(canonical_nans(
        v.to_typed(a.data_type(), column)?,
    )))
}

fn operands(batch: &RecordBatch, column: &str, value: &Value) -> Result<(ArrayRef, ArrayRef)> {
    let a = compared(batch, column)?;
    let lit = canonical_nans(value.to_typed(a.data_type(), column)?);
    Ok((a, lit))
}

/// The column `name` of `batch` as comparisons see it: floats in SQL's order, where every NaN
/// is the same NaN, above every number. Arrow's kernels order floats by IEEE's total order, by
/// their bits: a NaN with its sign bit set (what x86 computes for 0/0) sorts below every
/// number, and NaNs of other payloads differ. Every NaN is made the one canonical (positive)
/// NaN first, in the column here and in the literal ([`canonical_nans`]); `zero.rs` does
/// -0.0.
fn compared(batch: &RecordBatch, name: &str) -> Result<ArrayRef> {
    Ok(canonical_nans(column_of(batch, name)?))
}

/// `a` with every NaN replaced by the canonical NaN of its type (unchanged, not copied, when
/// it holds none other).
pub(crate) fn canonical_nans(a: ArrayRef) -> ArrayRef {
    use arrow::array::{AsArray, PrimitiveArray};
    use arrow::datatypes::{ArrowPrimitiveType, DataType, Float16Type, Float32Type, Float64Type};
    fn fix<T: ArrowPrimitiveType>(
        a: ArrayRef,
        other_nan: impl Fn(T::Native) -> bool,
        nan: T::Native,
    ) -> ArrayRef {
        let p = a.as_primitive::<T>();
        if !p.values().iter().any(|v| other_nan(*v)) {
            return a;
        }
        let out: PrimitiveArray<T> = p.unary(|v| if other_nan(v) { nan } else { v });
        Arc::new(out.with_data_type(a.data_type().clone()))
    }
    type H = <Float16Type as ArrowPrimitiveType>::Native;
    match a.data_type() {
        DataType::Float64 => fix::<Float64Type>(
            a,
            |v| v.is_nan() && v.to_bits() != f64::NAN.to_bits(),
            f64::NAN,
        ),
        DataType::Float32 => fix::<Float32Type>(
            a,
            |v| v.is_nan() && v.to_bits() != f32::NAN.to_bits(),
            f32::NAN,
        ),
        DataType::Float16 => {
            fix::<Float16Type>(a, |v| v.is_nan() && v.to_bits() != H::NAN.to_bits(), H::NAN)
        }
        _ => a,
    }
}

/// The column `name` of `batch`: a top-level column, or a dotted path into structs, with the
/// nulls of every enclosing struct applied.
pub(crate) fn column_of(batch: &RecordBatch, name: &str) -> Result<ArrayRef> {
    if let Some(c) = batch.column_by_name(name) {
        return Ok(Arc::clone(c));
    }
    let missing = || {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("filter column {name:?} is not in the data"),
        )
    };
    let mut parts = name.split('.');
    let first = parts.next().ok_or_else(missing)?;
    let mut cur: ArrayRef = Arc::clone(batch.column_by_name(first).ok_or_else(missing)?);
    for p in parts {
        let s = cur
            .as_any()
            .downcast_ref::<StructArray>()
            .ok_or_else(missing)?;
        let child = s.column_by_name(p).ok_or_else(missing)?;
        let nulls = arrow::buffer::NullBuffer::union(s.nulls(), child.logical_nulls().as_ref());
        let data = child.to_data().into_builder().nulls(nulls).build()?;
        cur = arrow::array::make_array(data);
    }
    Ok(cur)
}
