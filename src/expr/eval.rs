//! Exact evaluation of an [`Expr`] on a batch with arrow's kernels, in SQL's three-valued
//! logic.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, StructArray};
use arrow::compute::kernels::boolean::{and_kleene, not, or_kleene};
use arrow::compute::kernels::cmp;
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
                let a = column_of(batch, column)?;
                let mut acc: Option<BooleanArray> = None;
                for v in values {
                    let lit = v.to_typed(a.data_type(), column)?;
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
                let a = column_of(batch, column)?;
                let lo = v_scalar(low, &a, column)?;
                let hi = v_scalar(high, &a, column)?;
                let inside = and_kleene(&cmp::gt_eq(&a, &lo)?, &cmp::lt_eq(&a, &hi)?)?;
                Ok(if *negated { not(&inside)? } else { inside })
            }
            Expr::And(a, b) => Ok(and_kleene(&a.evaluate(batch)?, &b.evaluate(batch)?)?),
            Expr::Or(a, b) => Ok(or_kleene(&a.evaluate(batch)?, &b.evaluate(batch)?)?),
            Expr::Not(a) => Ok(not(&a.evaluate(batch)?)?),
            Expr::Literal(b) => Ok(BooleanArray::from(vec![*b; batch.num_rows()])),
        }
    }
}

fn v_scalar(v: &Value, a: &ArrayRef, column: &str) -> Result<arrow::array::Scalar<ArrayRef>> {
    Ok(arrow::array::Scalar::new(
        v.to_typed(a.data_type(), column)?,
    ))
}

fn operands(batch: &RecordBatch, column: &str, value: &Value) -> Result<(ArrayRef, ArrayRef)> {
    let a = column_of(batch, column)?;
    let lit = value.to_typed(a.data_type(), column)?;
    Ok((a, lit))
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
