//! Iceberg predicates and rayquet filters, both ways.
//!
//! [`to_expr`] turns an iceberg [`Predicate`] (unbound, by column name) into a rayquet
//! [`Expr`] that rayquet evaluates exactly and pushes into row groups, pages and bloom
//! filters. `starts_with(c, 'p')` becomes `c >= 'p' AND c < 'p+'` (the next string after
//! every string with prefix `p`, in the byte order both use), `is_nan(c)` becomes
//! `c = 'NaN'` (rayquet compares floats in total order, where NaN equals NaN).
//!
//! [`to_predicate`] turns a rayquet filter (the CLI's `--filter`) into a predicate for
//! iceberg's planner, which only uses it to skip manifests and data files: `LIKE 'p%...'`
//! becomes `starts_with(c, 'p')` (its literal start), `NOT LIKE 'p%'` `not_starts_with(c,
//! 'p')`, and a leaf it cannot express becomes
//! `AlwaysTrue` (after `NOT` is pushed to the leaves), so planning never skips a file that
//! holds a match, and rayquet's exact filter does the rest.

use std::collections::HashSet;

use iceberg::expr::{BoundPredicate, BoundReference, Predicate, PredicateOperator, Reference};
use iceberg::spec::{Datum, NestedFieldRef, PrimitiveLiteral, PrimitiveType, Schema, Type};

use rayquet::expr::{prefix_upper_bound, CmpOp, Expr, LikePrefix, LikeRest, Value};
use rayquet::{Error, ErrorKind, Result};

/// A datum as a rayquet literal, when it has one (uuid, fixed and binary values do not).
pub(crate) fn datum_value(d: &Datum) -> Option<Value> {
    literal_value(d.literal(), d.data_type())
}

/// A primitive literal of type `ty` as a rayquet literal that converts exactly to the Arrow
/// type iceberg gives `ty`.
pub(crate) fn literal_value(lit: &PrimitiveLiteral, ty: &PrimitiveType) -> Option<Value> {
    Some(match (lit, ty) {
        (PrimitiveLiteral::Boolean(b), _) => Value::Bool(*b),
        (PrimitiveLiteral::Int(i), _) => Value::Int(*i as i64),
        (PrimitiveLiteral::Long(i), _) => Value::Int(*i),
        (PrimitiveLiteral::Float(f), _) => Value::Float(f.0 as f64),
        (PrimitiveLiteral::Double(f), _) => Value::Float(f.0),
        (PrimitiveLiteral::String(s), _) => Value::Str(s.clone()),
        (PrimitiveLiteral::Int128(v), PrimitiveType::Decimal { scale, .. }) => {
            Value::Str(decimal_text(*v, *scale))
        }
        _ => return None,
    })
}

/// `unscaled / 10^scale` as exact decimal text.
fn decimal_text(unscaled: i128, scale: u32) -> String {
    let neg = unscaled < 0;
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale as usize;
    let text = if scale == 0 {
        digits
    } else if digits.len() > scale {
        format!(
            "{}.{}",
            &digits[..digits.len() - scale],
            &digits[digits.len() - scale..]
        )
    } else {
        format!("0.{}{digits}", "0".repeat(scale - digits.len()))
    };
    if neg {
        format!("-{text}")
    } else {
        text
    }
}

fn unsupported(what: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::InvalidArgument,
        format!("cannot read with the iceberg predicate {what}"),
    )
}

/// An iceberg predicate as a rayquet filter over the same column names.
pub fn to_expr(p: &Predicate) -> Result<Expr> {
    Ok(match p {
        Predicate::AlwaysTrue => Expr::Literal(true),
        Predicate::AlwaysFalse => Expr::Literal(false),
        Predicate::And(l) => {
            let [a, b] = l.inputs();
            to_expr(a)?.and(to_expr(b)?)
        }
        Predicate::Or(l) => {
            let [a, b] = l.inputs();
            to_expr(a)?.or(to_expr(b)?)
        }
        Predicate::Not(l) => {
            let [a] = l.inputs();
            to_expr(a)?.negate()
        }
        Predicate::Unary(u) => unary(u.term().name(), u.op(), p)?,
        Predicate::Binary(b) => binary(b.term().name(), b.op(), b.literal(), p)?,
        Predicate::Set(s) => set(s.term().name(), s.op(), s.literals().iter(), p)?,
    })
}

/// A bound iceberg predicate (a planned task's) as a rayquet filter over the column names of
/// `schema` (dotted paths for nested fields).
pub fn bound_to_expr(p: &BoundPredicate, schema: &Schema) -> Result<Expr> {
    let name = |r: &BoundReference| -> Result<String> {
        let id = r.field().id;
        schema
            .name_by_field_id(id)
            .map(str::to_string)
            .ok_or_else(|| unsupported(format!("{p} (field id {id} is not in the schema)")))
    };
    Ok(match p {
        BoundPredicate::AlwaysTrue => Expr::Literal(true),
        BoundPredicate::AlwaysFalse => Expr::Literal(false),
        BoundPredicate::And(l) => {
            let [a, b] = l.inputs();
            bound_to_expr(a, schema)?.and(bound_to_expr(b, schema)?)
        }
        BoundPredicate::Or(l) => {
            let [a, b] = l.inputs();
            bound_to_expr(a, schema)?.or(bound_to_expr(b, schema)?)
        }
        BoundPredicate::Not(l) => {
            let [a] = l.inputs();
            bound_to_expr(a, schema)?.negate()
        }
        BoundPredicate::Unary(u) => unary(&name(u.term())?, u.op(), p)?,
        BoundPredicate::Binary(b) => binary(&name(b.term())?, b.op(), b.literal(), p)?,
        BoundPredicate::Set(s) => set(&name(s.term())?, s.op(), s.literals().iter(), p)?,
    })
}

fn unary(name: &str, op: PredicateOperator, p: &dyn std::fmt::Display) -> Result<Expr> {
    let c = rayquet::col(name);
    Ok(match op {
        PredicateOperator::IsNull => c.is_null(),
        PredicateOperator::NotNull => c.is_not_null(),
        PredicateOperator::IsNan => c.eq("NaN"),
        PredicateOperator::NotNan => c.not_eq("NaN"),
        _ => return Err(unsupported(p)),
    })
}

fn binary(
    name: &str,
    op: PredicateOperator,
    literal: &Datum,
    p: &dyn std::fmt::Display,
) -> Result<Expr> {
    let v = datum_value(literal).ok_or_else(|| unsupported(p))?;
    let c = || rayquet::col(name);
    Ok(match op {
        PredicateOperator::LessThan => c().lt(v),
        PredicateOperator::LessThanOrEq => c().lt_eq(v),
        PredicateOperator::GreaterThan => c().gt(v),
        PredicateOperator::GreaterThanOrEq => c().gt_eq(v),
        PredicateOperator::Eq => c().eq(v),
        PredicateOperator::NotEq => c().not_eq(v),
        PredicateOperator::StartsWith | PredicateOperator::NotStartsWith => {
            let Value::Str(prefix) = &v else {
                return Err(unsupported(p));
            };
            let inside = match prefix_upper_bound(prefix) {
                Some(end) => c().gt_eq(v.clone()).and(c().lt(end)),
                None => c().gt_eq(v.clone()),
            };
            // Null rows match neither (three-valued logic).
            if op == PredicateOperator::StartsWith {
                inside
            } else {
                inside.negate()
            }
        }
        _ => return Err(unsupported(p)),
    })
}

fn set<'a>(
    name: &str,
    op: PredicateOperator,
    literals: impl Iterator<Item = &'a Datum>,
    p: &dyn std::fmt::Display,
) -> Result<Expr> {
    let values = literals
        .map(|d| datum_value(d).ok_or_else(|| unsupported(p)))
        .collect::<Result<Vec<_>>>()?;
    let c = rayquet::col(name);
    Ok(match op {
        PredicateOperator::In => c.in_list(values),
        PredicateOperator::NotIn => c.in_list(values).negate(),
        _ => return Err(unsupported(p)),
    })
}

/// A rayquet filter as a predicate for iceberg's planner over `schema` (see the module docs:
/// what cannot be expressed becomes `AlwaysTrue`), leaving out the columns with field ids in
/// `skip` (and columns `schema` does not have, such as `_file`).
pub fn to_predicate(e: &Expr, schema: &Schema, skip: &HashSet<i32>) -> Predicate {
    predicate(&e.clone().negation_normal_form(), schema, skip)
}

fn predicate(e: &Expr, schema: &Schema, skip: &HashSet<i32>) -> Predicate {
    let usable = |column: &str| -> Option<&NestedFieldRef> {
        let field = schema.field_by_name(column)?;
        (!skip.contains(&field.id)).then_some(field)
    };
    let datum = |column: &str, v: &Value| -> Option<Datum> {
        let field = usable(column)?;
        let Type::Primitive(ty) = field.field_type.as_ref() else {
            return None;
        };
        value_datum(v, ty)
    };
    match e {
        Expr::Literal(true) => Predicate::AlwaysTrue,
        Expr::Literal(false) => Predicate::AlwaysFalse,
        Expr::And(a, b) => predicate(a, schema, skip).and(predicate(b, schema, skip)),
        Expr::Or(a, b) => predicate(a, schema, skip).or(predicate(b, schema, skip)),
        Expr::Not(_) => Predicate::AlwaysTrue,
        Expr::IsNull { column, .. } if usable(column).is_none() => Predicate::AlwaysTrue,
        Expr::IsNull { column, negated } => {
            let r = Reference::new(column.as_str());
            if *negated {
                r.is_not_null()
            } else {
                r.is_null()
            }
        }
        Expr::Compare { column, op, value } => {
            let Some(d) = datum(column, value) else {
                return Predicate::AlwaysTrue;
            };
            let r = Reference::new(column.as_str());
            match op {
                CmpOp::Eq => r.equal_to(d),
                CmpOp::NotEq => r.not_equal_to(d),
                CmpOp::Lt => r.less_than(d),
                CmpOp::LtEq => r.less_than_or_equal_to(d),
                CmpOp::Gt => r.greater_than(d),
                CmpOp::GtEq => r.greater_than_or_equal_to(d),
            }
        }
        Expr::InList {
            column,
            values,
            negated,
        } => {
            let ds: Option<Vec<Datum>> = values.iter().map(|v| datum(column, v)).collect();
            let Some(ds) = ds else {
                return Predicate::AlwaysTrue;
            };
            let r = Reference::new(column.as_str());
            if *negated {
                r.is_not_in(ds)
            } else {
                r.is_in(ds)
            }
        }
        // Every match of `LIKE 'abc%...'` starts with `abc`: iceberg's `STARTS WITH 'abc'`
        // (exact for `'abc%'`, a necessary condition for longer patterns); a pattern without
        // wildcards is `=`. Under `NOT`, only the exact ones carry over: `NOT LIKE 'abc%'` is
        // `NOT STARTS WITH 'abc'` (a file is skipped only when its bounds both start with
        // `abc` and it holds no null), `NOT LIKE 'abc'` is `<>`. A pattern with no literal
        // start skips nothing.
        Expr::Like {
            column,
            pattern,
            negated,
            case_insensitive: false,
        } => {
            let like = LikePrefix::of(pattern);
            let string = usable(column).is_some_and(|f| {
                matches!(
                    f.field_type.as_ref(),
                    Type::Primitive(PrimitiveType::String)
                )
            });
            if !string || (like.prefix.is_empty() && like.rest != LikeRest::Nothing) {
                return Predicate::AlwaysTrue;
            }
            let Some(d) = datum(column, &Value::Str(like.prefix)) else {
                return Predicate::AlwaysTrue;
            };
            let r = Reference::new(column.as_str());
            match (like.rest, *negated) {
                (LikeRest::Nothing, false) => r.equal_to(d),
                (LikeRest::Nothing, true) => r.not_equal_to(d),
                (_, false) => r.starts_with(d),
                (LikeRest::AnyTail, true) => r.not_starts_with(d),
                (LikeRest::Pattern, true) => Predicate::AlwaysTrue,
            }
        }
        Expr::Like { .. } => Predicate::AlwaysTrue,
        Expr::Between {
            column,
            low,
            high,
            negated,
        } => {
            let (Some(lo), Some(hi)) = (datum(column, low), datum(column, high)) else {
                return Predicate::AlwaysTrue;
            };
            let r = || Reference::new(column.as_str());
            if *negated {
                r().less_than(lo).or(r().greater_than(hi))
            } else {
                r().greater_than_or_equal_to(lo)
                    .and(r().less_than_or_equal_to(hi))
            }
        }
    }
}

/// A rayquet literal as an iceberg datum of type `ty`, when it converts exactly.
fn value_datum(v: &Value, ty: &PrimitiveType) -> Option<Datum> {
    use PrimitiveType as P;
    Some(match (v, ty) {
        (Value::Bool(b), P::Boolean) => Datum::bool(*b),
        (Value::Int(i), P::Int) => Datum::int(i32::try_from(*i).ok()?),
        (Value::Int(i), P::Long) => Datum::long(*i),
        (Value::Float(f), P::Double) if !f.is_nan() => Datum::double(*f),
        (Value::Int(i), P::Double) => Datum::double(*i as f64),
        (Value::Str(s), P::String) => Datum::string(s),
        (Value::Str(s), P::Date) => Datum::date_from_str(s).ok()?,
        (Value::Str(s), P::Timestamp) => Datum::timestamp_from_str(s).ok()?,
        (Value::Str(s), P::Timestamptz) => Datum::timestamptz_from_str(s).ok()?,
        (Value::Str(_) | Value::Int(_) | Value::UInt(_) | Value::Float(_), P::Decimal { .. }) => {
            let text = match v {
                Value::Str(s) => s.clone(),
                Value::Int(i) => i.to_string(),
                Value::Float(f) => format!("{f}"),
                Value::UInt(u) => u.to_string(),
                Value::Bool(_) => return None,
            };
            Datum::decimal_from_str(text)
                .ok()?
                .to(&Type::Primitive(ty.clone()))
                .ok()?
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_pattern_is_starts_with() {
        use iceberg::spec::NestedField;
        let schema = Schema::builder()
            .with_fields(vec![
                NestedField::optional(1, "s", Type::Primitive(PrimitiveType::String)).into(),
                NestedField::optional(2, "i", Type::Primitive(PrimitiveType::Int)).into(),
            ])
            .build()
            .unwrap();
        let p = |e: Expr| to_predicate(&e, &schema, &HashSet::new());
        let starts = |p: &str| Reference::new("s").starts_with(Datum::string(p));
        assert_eq!(p(rayquet::col("s").like("ab%")), starts("ab"));
        // Longer patterns: their literal start, escapes resolved; no wildcard: equality.
        assert_eq!(p(rayquet::col("s").like("a_b%")), starts("a"));
        assert_eq!(p(rayquet::col("s").like("a\\%b%c")), starts("a%b"));
        assert_eq!(
            p(rayquet::col("s").like("ab")),
            Reference::new("s").equal_to(Datum::string("ab"))
        );
        // Under NOT, the exact ones: `'ab%'` and no wildcard.
        assert_eq!(
            p(rayquet::col("s").like("ab%").negate()),
            Reference::new("s").not_starts_with(Datum::string("ab"))
        );
        assert_eq!(
            p(rayquet::col("s").like("ab").negate()),
            Reference::new("s").not_equal_to(Datum::string("ab"))
        );
        // No literal start, NOT of a longer pattern, ILIKE, a non-string column: nothing
        // to skip on.
        for e in [
            rayquet::col("s").like("%ab"),
            rayquet::col("s").like("a_b%").negate(),
            rayquet::col("s").like("ab%c").negate(),
            rayquet::col("s").ilike("ab%"),
            rayquet::col("i").like("1%"),
        ] {
            assert_eq!(p(e.clone()), Predicate::AlwaysTrue, "{e}");
        }
        let skip = HashSet::from([1]);
        assert_eq!(
            to_predicate(&rayquet::col("s").like("ab%"), &schema, &skip),
            Predicate::AlwaysTrue
        );
    }

    #[test]
    fn decimals_print_exactly() {
        assert_eq!(decimal_text(12345, 2), "123.45");
        assert_eq!(decimal_text(-5, 3), "-0.005");
        assert_eq!(decimal_text(7, 0), "7");
    }
}
