//! SQL's float equality, `-0.0 = 0.0`, as DuckDB, Spark and PostgreSQL compare floats.
//!
//! Arrow's kernels order floats totally (`-0.0 < 0.0`, NaN equal to NaN and above every
//! number). rayquet keeps that order except for zero: a comparison of a float column with a
//! zero of either sign is rewritten into one with the zero that gives SQL's answer
//! (`x = 0.0` becomes `x BETWEEN -0.0 AND 0.0`, `x < 0.0` becomes `x < -0.0`...). The rewrite
//! runs where a filter meets its column's type (`Expr::evaluate`, and a file's resolved
//! filter, so statistics, bloom filters and dictionaries judge the same rows the exact filter
//! keeps). NaN keeps arrow's meaning, which is also SQL's in those engines: `NaN = NaN`, and
//! NaN is greater than every number.

use arrow::array::AsArray;
use arrow::datatypes::{DataType, Float16Type, Float32Type, Float64Type};

use crate::expr::{CmpOp, Expr, Value};

fn is_float(ty: &DataType) -> bool {
    matches!(
        ty,
        DataType::Float16 | DataType::Float32 | DataType::Float64
    )
}

/// The sign of `v` converted to the float type `ty` when it is a zero (`Some(true)`: -0.0).
fn zero_sign(v: &Value, ty: &DataType) -> Option<bool> {
    let a = v.to_typed(ty, "").ok()?;
    let x = match ty {
        DataType::Float16 => a.as_primitive::<Float16Type>().value(0).to_f64(),
        DataType::Float32 => a.as_primitive::<Float32Type>().value(0) as f64,
        DataType::Float64 => a.as_primitive::<Float64Type>().value(0),
        _ => return None,
    };
    (x == 0.0).then_some(x.is_sign_negative())
}

const NEG: Value = Value::Float(-0.0);
const POS: Value = Value::Float(0.0);

impl Expr {
    /// This leaf rewritten for SQL's zero when its column has the float type `ty` and it
    /// compares with a zero; `None` when nothing changes.
    pub(crate) fn signed_zero_leaf(&self, ty: &DataType) -> Option<Expr> {
        if !is_float(ty) {
            return None;
        }
        let sign = |v: &Value| zero_sign(v, ty);
        let zero = |v: &Value| sign(v).is_some();
        match self {
            Expr::Compare { column, op, value } => {
                let negative = sign(value)?;
                let cmp = |op, value| {
                    Some(Expr::Compare {
                        column: column.clone(),
                        op,
                        value,
                    })
                };
                // Each case compares with the zero that gives SQL's answer; a comparison that
                // already does is left as it is.
                match op {
                    CmpOp::Eq | CmpOp::NotEq => Some(Expr::Between {
                        column: column.clone(),
                        low: NEG,
                        high: POS,
                        negated: *op == CmpOp::NotEq,
                    }),
                    CmpOp::Lt if !negative => cmp(CmpOp::Lt, NEG),
                    CmpOp::LtEq if negative => cmp(CmpOp::LtEq, POS),
                    CmpOp::Gt if negative => cmp(CmpOp::Gt, POS),
                    CmpOp::GtEq if !negative => cmp(CmpOp::GtEq, NEG),
                    _ => None,
                }
            }
            Expr::InList {
                column,
                values,
                negated,
            } if values.iter().any(zero) => {
                let rest: Vec<Value> = values.iter().filter(|v| !zero(v)).cloned().collect();
                let zeros = Expr::Between {
                    column: column.clone(),
                    low: NEG,
                    high: POS,
                    negated: false,
                };
                let any = if rest.is_empty() {
                    zeros
                } else {
                    Expr::InList {
                        column: column.clone(),
                        values: rest,
                        negated: false,
                    }
                    .or(zeros)
                };
                Some(if *negated { any.negate() } else { any })
            }
            Expr::Between {
                column,
                low,
                high,
                negated,
            } if sign(low) == Some(false) || sign(high) == Some(true) => Some(Expr::Between {
                column: column.clone(),
                low: if zero(low) { NEG } else { low.clone() },
                high: if zero(high) { POS } else { high.clone() },
                negated: *negated,
            }),
            _ => None,
        }
    }

    /// This filter with every comparison of a float column with zero rewritten for SQL's
    /// zero; `type_of` gives a column's type (`None`: unknown, left as it is).
    pub(crate) fn signed_zeros(self, type_of: &dyn Fn(&str) -> Option<DataType>) -> Expr {
        match self {
            Expr::And(a, b) => a.signed_zeros(type_of).and(b.signed_zeros(type_of)),
            Expr::Or(a, b) => a.signed_zeros(type_of).or(b.signed_zeros(type_of)),
            Expr::Not(a) => a.signed_zeros(type_of).negate(),
            leaf => {
                let ty = leaf.columns().first().and_then(|c| type_of(c));
                match ty.and_then(|t| leaf.signed_zero_leaf(&t)) {
                    Some(e) => e,
                    None => leaf,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::col;
    use arrow::array::{ArrayRef, Float32Array, Float64Array, RecordBatch};
    use std::sync::Arc;

    /// The SQL answer, computed without arrow's order: f64's own `==` and `<` say -0.0 equals
    /// 0.0.
    fn sql(op: &str, x: f64, v: f64) -> bool {
        match op {
            "=" => x == v,
            "!=" => x != v,
            "<" => x < v,
            "<=" => x <= v,
            ">" => x > v,
            ">=" => x >= v,
            _ => unreachable!(),
        }
    }

    #[test]
    fn zero_of_either_sign_compares_as_sql() {
        let xs = [-1.5, -0.0, 0.0, 2.0];
        for ty in [DataType::Float32, DataType::Float64] {
            let a: ArrayRef = match ty {
                DataType::Float32 => Arc::new(Float32Array::from(
                    xs.iter().map(|&x| x as f32).collect::<Vec<_>>(),
                )),
                _ => Arc::new(Float64Array::from(xs.to_vec())),
            };
            let batch = RecordBatch::try_from_iter([("x", a)]).unwrap();
            for v in [0.0, -0.0] {
                for (op, e) in [
                    ("=", col("x").eq(v)),
                    ("!=", col("x").not_eq(v)),
                    ("<", col("x").lt(v)),
                    ("<=", col("x").lt_eq(v)),
                    (">", col("x").gt(v)),
                    (">=", col("x").gt_eq(v)),
                ] {
                    let got = e.evaluate(&batch).unwrap();
                    let want: Vec<bool> = xs.iter().map(|&x| sql(op, x, v)).collect();
                    let got: Vec<bool> = got.iter().map(|b| b.unwrap()).collect();
                    assert_eq!(got, want, "{ty} x {op} {v:?}");
                }
            }
            let e = col("x").in_list([Value::Int(0), Value::Float(2.0)]);
            let got: Vec<bool> = e.evaluate(&batch).unwrap().iter().flatten().collect();
            assert_eq!(got, vec![false, true, true, true], "{ty} IN");
            let e = Expr::InList {
                column: "x".into(),
                values: vec![Value::Float(-0.0)],
                negated: true,
            };
            let got: Vec<bool> = e.evaluate(&batch).unwrap().iter().flatten().collect();
            assert_eq!(got, vec![true, false, false, true], "{ty} NOT IN");
        }
    }
}
