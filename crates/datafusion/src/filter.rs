//! Filters: DataFusion expressions translated to rayquet's [`Expr`], and the honest answer to
//! `supports_filters_pushdown`.
//!
//! A conjunct is **Exact** when it translates (comparisons, `IN`, `IS [NOT] NULL`,
//! `BETWEEN`, `[NOT] LIKE`/`ILIKE` with the default escape, `AND`/`OR`/`NOT` of a column with
//! literals) and rayquet can evaluate it on the table's schema as it stands: the columns exist
//! (a string column for `LIKE`) and every literal converts to its column's type without loss.
//! rayquet then evaluates it exactly with arrow's kernels in SQL's three-valued logic, which is
//! DataFusion's semantics, so no `FilterExec` is kept above the scan. Anything else is
//! **Inexact** (DataFusion filters it above the scan, and the scan only sees it to estimate the
//! rows it keeps, as DataFusion's own scan does): functions, casts that type coercion left on a
//! column, `LIKE` with another escape character, literals that would lose precision (`int_col
//! = 5.5`, which SQL answers with false where rayquet would refuse the literal), timestamps.
//!
//! Invariant: a filter reported Exact is evaluated by rayquet on every row it delivers.

use datafusion::arrow::datatypes::{Decimal128Type, DecimalType, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::{Between, InList, Like};
use datafusion::logical_expr::{BinaryExpr, Expr as DfExpr, Operator, TableProviderFilterPushDown};
use rayquet::expr::{CmpOp, Expr, Value};

/// The column a filter side names (no casts, no functions).
fn column(e: &DfExpr) -> Option<String> {
    match e {
        DfExpr::Column(c) => Some(c.name.clone()),
        _ => None,
    }
}

/// A literal as rayquet takes it: numbers and strings as they are; dates and decimals as their
/// text, which rayquet converts exactly to the column's type.
fn value(e: &DfExpr) -> Option<Value> {
    let DfExpr::Literal(v, _) = e else {
        return None;
    };
    Some(match v {
        ScalarValue::Boolean(Some(b)) => Value::Bool(*b),
        ScalarValue::Int8(Some(x)) => Value::Int(i64::from(*x)),
        ScalarValue::Int16(Some(x)) => Value::Int(i64::from(*x)),
        ScalarValue::Int32(Some(x)) => Value::Int(i64::from(*x)),
        ScalarValue::Int64(Some(x)) => Value::Int(*x),
        ScalarValue::UInt8(Some(x)) => Value::Int(i64::from(*x)),
        ScalarValue::UInt16(Some(x)) => Value::Int(i64::from(*x)),
        ScalarValue::UInt32(Some(x)) => Value::Int(i64::from(*x)),
        ScalarValue::UInt64(Some(x)) => Value::from(*x),
        ScalarValue::Float32(Some(x)) => Value::Float(f64::from(*x)),
        ScalarValue::Float64(Some(x)) => Value::Float(*x),
        ScalarValue::Utf8(Some(s))
        | ScalarValue::LargeUtf8(Some(s))
        | ScalarValue::Utf8View(Some(s)) => Value::Str(s.clone()),
        // DataFusion shows a date as its ISO text.
        ScalarValue::Date32(Some(_)) => Value::Str(v.to_string()),
        // Its `Display` of a decimal is "value,precision,scale": format the number instead.
        ScalarValue::Decimal128(Some(x), p, s) => {
            Value::Str(Decimal128Type::format_decimal(*x, *p, *s))
        }
        _ => return None,
    })
}

fn cmp(op: Operator) -> Option<CmpOp> {
    Some(match op {
        Operator::Eq => CmpOp::Eq,
        Operator::NotEq => CmpOp::NotEq,
        Operator::Lt => CmpOp::Lt,
        Operator::LtEq => CmpOp::LtEq,
        Operator::Gt => CmpOp::Gt,
        Operator::GtEq => CmpOp::GtEq,
        _ => return None,
    })
}

/// `e` in rayquet's filter language, if it can be said there.
pub(crate) fn translate(e: &DfExpr) -> Option<Expr> {
    Some(match e {
        DfExpr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And => translate(left)?.and(translate(right)?),
            Operator::Or => translate(left)?.or(translate(right)?),
            _ => {
                let op = cmp(*op)?;
                if let (Some(column), Some(value)) = (column(left), value(right)) {
                    Expr::Compare { column, op, value }
                } else if let (Some(value), Some(column)) = (value(left), column(right)) {
                    Expr::Compare {
                        column,
                        op: op.flip(),
                        value,
                    }
                } else {
                    return None;
                }
            }
        },
        DfExpr::Not(inner) => translate(inner)?.negate(),
        DfExpr::IsNull(inner) => Expr::IsNull {
            column: column(inner)?,
            negated: false,
        },
        DfExpr::IsNotNull(inner) => Expr::IsNull {
            column: column(inner)?,
            negated: true,
        },
        DfExpr::InList(InList {
            expr,
            list,
            negated,
        }) => Expr::InList {
            column: column(expr)?,
            values: list.iter().map(value).collect::<Option<Vec<_>>>()?,
            negated: *negated,
        },
        DfExpr::Between(Between {
            expr,
            negated,
            low,
            high,
        }) => Expr::Between {
            column: column(expr)?,
            low: value(low)?,
            high: value(high)?,
            negated: *negated,
        },
        // DataFusion evaluates `LIKE` with arrow's kernels, escaping with `\` only.
        DfExpr::Like(Like {
            negated,
            expr,
            pattern,
            escape_char: None | Some('\\'),
            case_insensitive,
        }) => {
            let Some(Value::Str(pattern)) = value(pattern) else {
                return None;
            };
            Expr::Like {
                column: column(expr)?,
                pattern,
                negated: *negated,
                case_insensitive: *case_insensitive,
            }
        }
        DfExpr::Literal(ScalarValue::Boolean(Some(b)), _) => Expr::Literal(*b),
        _ => return None,
    })
}

/// `e` translated, if rayquet can evaluate it exactly on batches of `schema`.
pub(crate) fn exact(e: &DfExpr, schema: &Schema) -> Option<Expr> {
    let f = translate(e)?;
    f.check(schema).ok()?;
    Some(f)
}

/// What `supports_filters_pushdown` answers for each conjunct.
pub(crate) fn pushdown(filters: &[&DfExpr], schema: &Schema) -> Vec<TableProviderFilterPushDown> {
    filters
        .iter()
        .map(|f| match exact(f, schema) {
            Some(_) => TableProviderFilterPushDown::Exact,
            None => TableProviderFilterPushDown::Inexact,
        })
        .collect()
}

/// The conjuncts rayquet evaluates, as one filter (`None`: none of them).
pub(crate) fn combine(filters: &[DfExpr], schema: &Schema) -> Option<Expr> {
    filters
        .iter()
        .filter_map(|f| exact(f, schema))
        .reduce(Expr::and)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::{DataType, Field};
    use datafusion::logical_expr::{col, lit};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("i", DataType::Int32, true),
            Field::new("s", DataType::Utf8View, true),
            Field::new("d", DataType::Decimal128(15, 2), true),
            Field::new("day", DataType::Date32, true),
        ])
    }

    #[test]
    fn translates_and_classifies() {
        let s = schema();
        let f = col("i").lt(lit(5i32)).and(col("s").eq(lit("AIR")));
        assert_eq!(
            exact(&f, &s),
            Some(rayquet::col("i").lt(5).and(rayquet::col("s").eq("AIR")))
        );
        // Literal on the left: the comparison flips.
        assert_eq!(
            exact(&lit(5i32).lt(col("i")), &s),
            Some(rayquet::col("i").gt(5))
        );
        // A decimal literal as its text, converted exactly.
        let dec = DfExpr::Literal(ScalarValue::Decimal128(Some(500), 15, 2), None);
        assert_eq!(
            exact(&col("d").gt_eq(dec), &s),
            Some(rayquet::col("d").gt_eq("5.00"))
        );
        // A lossy literal is not rayquet's to evaluate: SQL says false, rayquet would refuse.
        assert_eq!(exact(&col("i").eq(lit(5.5f64)), &s), None);
        // Unknown columns, functions and casts are not pushed.
        assert_eq!(exact(&col("nope").eq(lit(1i32)), &s), None);
        let cast = DfExpr::Cast(datafusion::logical_expr::Cast::new(
            Box::new(col("i")),
            DataType::Int64,
        ));
        assert_eq!(exact(&cast.eq(lit(1i64)), &s), None);
        // `LIKE` on a string column is rayquet's; with another escape character, or on a
        // number, it is not.
        assert_eq!(
            exact(&col("s").not_like(lit("A%")), &s),
            Some(rayquet::col("s").like("A%").negate().negation_normal_form())
        );
        assert_eq!(
            exact(&col("s").ilike(lit("%b_")), &s),
            Some(rayquet::col("s").ilike("%b_"))
        );
        let escaped = |c: char| {
            DfExpr::Like(Like::new(
                false,
                Box::new(col("s")),
                Box::new(lit("a!%")),
                Some(c),
                false,
            ))
        };
        assert_eq!(
            exact(&escaped('\\'), &s),
            Some(rayquet::col("s").like("a!%"))
        );
        assert_eq!(
            pushdown(&[&escaped('!'), &col("i").like(lit("1%"))], &s),
            vec![TableProviderFilterPushDown::Inexact; 2]
        );
        assert_eq!(
            exact(&col("i").in_list(vec![lit(1i32), lit(2i32)], true), &s),
            Some(Expr::InList {
                column: "i".into(),
                values: vec![Value::Int(1), Value::Int(2)],
                negated: true
            })
        );
    }
}
