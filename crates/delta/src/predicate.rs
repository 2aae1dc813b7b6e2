//! Delta-kernel predicates and rayquet filters, both ways.
//!
//! [`to_kernel`] turns a rayquet filter (over a table's logical columns) into a kernel
//! predicate for the scan builder, which uses it only to skip files by their statistics and
//! partition values. [`from_kernel`] turns a kernel predicate (what the kernel hands a
//! `ParquetHandler`) into a rayquet filter used only to prune row groups and pages
//! (`Scan::prune`). In both directions a leaf that cannot be expressed becomes TRUE after
//! `NOT` is pushed to the leaves, so nothing that may match is ever skipped.

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType as ArrowType, Date32Type, TimeUnit, TimestampMicrosecondType};
use delta_kernel::expressions::{
    BinaryPredicateOp, ColumnName, Expression, JunctionPredicateOp, Predicate, Scalar,
    UnaryPredicateOp,
};
use delta_kernel::schema::{DataType, PrimitiveType, StructType};

use rayquet::expr::{CmpOp, Expr, LikePrefix, LikeRest, Value};

fn lit_true() -> Predicate {
    Predicate::BooleanExpression(Expression::Literal(Scalar::Boolean(true)))
}

/// A rayquet literal as a kernel scalar of `ty`, when it converts exactly.
fn scalar(v: &Value, ty: &DataType) -> Option<Scalar> {
    let DataType::Primitive(p) = ty else {
        return None;
    };
    let cast_one = |s: &str, to: ArrowType| {
        let a = arrow::array::StringArray::from(vec![s]);
        let opts = arrow::compute::CastOptions {
            safe: false,
            ..Default::default()
        };
        arrow::compute::cast_with_options(&a, &to, &opts).ok()
    };
    Some(match (v, p) {
        (Value::Bool(b), PrimitiveType::Boolean) => Scalar::Boolean(*b),
        (Value::Int(i), PrimitiveType::Byte) => Scalar::Byte(i8::try_from(*i).ok()?),
        (Value::Int(i), PrimitiveType::Short) => Scalar::Short(i16::try_from(*i).ok()?),
        (Value::Int(i), PrimitiveType::Integer) => Scalar::Integer(i32::try_from(*i).ok()?),
        (Value::Int(i), PrimitiveType::Long) => Scalar::Long(*i),
        (Value::Int(i), PrimitiveType::Double) => Scalar::Double(*i as f64),
        (Value::Float(f), PrimitiveType::Double) if !f.is_nan() => Scalar::Double(*f),
        (Value::Str(s), PrimitiveType::String) => Scalar::String(s.clone()),
        (Value::Str(s), PrimitiveType::Date) => {
            let a = cast_one(s, ArrowType::Date32)?;
            let a = a.as_primitive::<Date32Type>();
            (a.is_valid(0)).then(|| Scalar::Date(a.value(0)))?
        }
        (Value::Str(s), PrimitiveType::Timestamp | PrimitiveType::TimestampNtz) => {
            let tz = matches!(p, PrimitiveType::Timestamp).then(|| "UTC".into());
            let a = cast_one(s, ArrowType::Timestamp(TimeUnit::Microsecond, tz))?;
            let a = a.as_primitive::<TimestampMicrosecondType>();
            if !a.is_valid(0) {
                return None;
            }
            match p {
                PrimitiveType::Timestamp => Scalar::Timestamp(a.value(0)),
                _ => Scalar::TimestampNtz(a.value(0)),
            }
        }
        _ => return None,
    })
}

/// A rayquet filter as a kernel predicate over `schema` (see the module docs).
pub fn to_kernel(e: &Expr, schema: &StructType) -> Predicate {
    kernel(&e.clone().negation_normal_form(), schema)
}

fn kernel(e: &Expr, schema: &StructType) -> Predicate {
    let column = |name: &str| -> Option<(Expression, &DataType)> {
        // A nanosecond timestamp the kernel is shown as microseconds (see `nanos`): its
        // statistics are not for the kernel to judge.
        let f = schema.field(name).filter(|f| !crate::nanos::is_marked(f))?;
        Some((Expression::column([name.to_string()]), f.data_type()))
    };
    match e {
        Expr::Literal(b) => Predicate::BooleanExpression(Expression::Literal(Scalar::Boolean(*b))),
        Expr::And(a, b) => Predicate::and(kernel(a, schema), kernel(b, schema)),
        Expr::Or(a, b) => Predicate::or(kernel(a, schema), kernel(b, schema)),
        Expr::Not(_) => lit_true(),
        // The kernel's data skipping has no pattern match, but every match of a
        // case-sensitive `LIKE 'abc%...'` lies in ['abc', 'abd'), and a pattern without
        // wildcards is `=` (`<>` when negated). `NOT LIKE 'abc%'` is exactly the strings
        // outside that range. Other patterns skip nothing.
        Expr::Like {
            column: c,
            pattern,
            negated,
            case_insensitive: false,
        } => {
            let Some((col, DataType::Primitive(PrimitiveType::String))) = column(c) else {
                return lit_true();
            };
            let like = LikePrefix::of(pattern);
            let p = Scalar::String(like.prefix.clone());
            match (like.rest, *negated) {
                (LikeRest::Nothing, false) => Predicate::eq(col, p),
                (LikeRest::Nothing, true) => Predicate::ne(col, p),
                (_, false) if !like.prefix.is_empty() => match like.upper_bound() {
                    Some(u) => Predicate::and(
                        Predicate::ge(col.clone(), p),
                        Predicate::lt(col, Scalar::String(u)),
                    ),
                    None => Predicate::ge(col, p),
                },
                (LikeRest::AnyTail, true) if !like.prefix.is_empty() => match like.upper_bound() {
                    Some(u) => Predicate::or(
                        Predicate::lt(col.clone(), p),
                        Predicate::ge(col, Scalar::String(u)),
                    ),
                    None => Predicate::lt(col, p),
                },
                _ => lit_true(),
            }
        }
        Expr::Like { .. } => lit_true(),
        Expr::IsNull { column: c, negated } => match column(c) {
            Some((col, _)) if *negated => Predicate::is_not_null(col),
            Some((col, _)) => Predicate::is_null(col),
            None => lit_true(),
        },
        Expr::Compare {
            column: c,
            op,
            value,
        } => {
            let Some((col, ty)) = column(c) else {
                return lit_true();
            };
            let Some(s) = scalar(value, ty) else {
                return lit_true();
            };
            match op {
                CmpOp::Eq => Predicate::eq(col, s),
                CmpOp::NotEq => Predicate::ne(col, s),
                CmpOp::Lt => Predicate::lt(col, s),
                CmpOp::LtEq => Predicate::le(col, s),
                CmpOp::Gt => Predicate::gt(col, s),
                CmpOp::GtEq => Predicate::ge(col, s),
            }
        }
        Expr::InList {
            column: c,
            values,
            negated,
        } => {
            let Some((col, ty)) = column(c) else {
                return lit_true();
            };
            let Some(ss): Option<Vec<Scalar>> = values.iter().map(|v| scalar(v, ty)).collect()
            else {
                return lit_true();
            };
            if *negated {
                Predicate::and_from(ss.into_iter().map(|s| Predicate::ne(col.clone(), s)))
            } else {
                Predicate::or_from(ss.into_iter().map(|s| Predicate::eq(col.clone(), s)))
            }
        }
        Expr::Between {
            column: c,
            low,
            high,
            negated,
        } => {
            let Some((col, ty)) = column(c) else {
                return lit_true();
            };
            let (Some(lo), Some(hi)) = (scalar(low, ty), scalar(high, ty)) else {
                return lit_true();
            };
            if *negated {
                Predicate::or(Predicate::lt(col.clone(), lo), Predicate::gt(col, hi))
            } else {
                Predicate::and(Predicate::ge(col.clone(), lo), Predicate::le(col, hi))
            }
        }
    }
}

/// A kernel scalar as a rayquet literal, when it has one.
fn value(s: &Scalar) -> Option<Value> {
    Some(match s {
        Scalar::Integer(i) => Value::Int(*i as i64),
        Scalar::Long(i) => Value::Int(*i),
        Scalar::Short(i) => Value::Int(*i as i64),
        Scalar::Byte(i) => Value::Int(*i as i64),
        Scalar::Float(f) => Value::Float(*f as f64),
        Scalar::Double(f) => Value::Float(*f),
        Scalar::String(s) => Value::Str(s.clone()),
        Scalar::Boolean(b) => Value::Bool(*b),
        Scalar::Date(d) => Value::Int(*d as i64),
        Scalar::Timestamp(t) | Scalar::TimestampNtz(t) => Value::Int(*t),
        _ => return None,
    })
}

fn column_name(c: &ColumnName) -> String {
    c.path().join(".")
}

/// A kernel predicate as a rayquet filter for pruning only (see the module docs): `None` when
/// nothing of it can prune.
pub fn from_kernel(p: &Predicate) -> Option<Expr> {
    let e = pruning(p, false);
    (e != Expr::Literal(true)).then_some(e)
}

/// `p` (negated when `neg`) as a filter that is TRUE wherever `p` may hold.
fn pruning(p: &Predicate, neg: bool) -> Expr {
    match p {
        Predicate::Not(inner) => pruning(inner, !neg),
        Predicate::Junction(j) => {
            let parts: Vec<Expr> = j.preds.iter().map(|x| pruning(x, neg)).collect();
            let and = (j.op == JunctionPredicateOp::And) != neg;
            parts
                .into_iter()
                .reduce(|a, b| if and { a.and(b) } else { a.or(b) })
                .unwrap_or(Expr::Literal(and))
        }
        Predicate::Unary(u) if u.op == UnaryPredicateOp::IsNull => match u.expr.as_ref() {
            Expression::Column(c) => Expr::IsNull {
                column: column_name(c),
                negated: neg,
            },
            _ => Expr::Literal(true),
        },
        Predicate::Binary(b) => {
            let (col, lit, flipped) = match (b.left.as_ref(), b.right.as_ref()) {
                (Expression::Column(c), Expression::Literal(s)) => (c, s, false),
                (Expression::Literal(s), Expression::Column(c)) => (c, s, true),
                _ => return Expr::Literal(true),
            };
            let Some(v) = value(lit) else {
                return Expr::Literal(true);
            };
            let op = match b.op {
                BinaryPredicateOp::LessThan => CmpOp::Lt,
                BinaryPredicateOp::GreaterThan => CmpOp::Gt,
                BinaryPredicateOp::Equal => CmpOp::Eq,
                _ => return Expr::Literal(true),
            };
            let op = if flipped { op.flip() } else { op };
            let op = if neg { op.negate() } else { op };
            Expr::Compare {
                column: column_name(col),
                op,
                value: v,
            }
        }
        _ => Expr::Literal(true),
    }
}
