//! SQL filter expressions (feature `sql`): parse a `WHERE`-clause expression with the
//! `sqlparser` crate and translate it into an [`Expr`].
//!
//! ```
//! use rayquet::expr::{col, Expr};
//! let e = Expr::parse_sql("l_quantity < 5 AND l_shipmode = 'AIR'").unwrap();
//! assert_eq!(e, col("l_quantity").lt(5).and(col("l_shipmode").eq("AIR")));
//! ```
//!
//! Accepted: comparisons of a column with a literal (either side), `IN`, `IS [NOT] NULL`,
//! `BETWEEN`, `[NOT] LIKE` and `[NOT] ILIKE` with a string pattern (escaped with `\`, the
//! default; no other `ESCAPE` character), `AND`, `OR`, `NOT`, parentheses, `DATE '…'` /
//! `TIMESTAMP '…'` literals, and dotted column paths (`s.a`, `"a b".c`). Anything else is an
//! error that quotes the unsupported part. SQL has no NaN or infinity literal: write
//! `f = 'NaN'` or `f < 'inf'` (a string converts to them on a float column; that is also how [`Expr`] displays them).

use sqlparser::ast::{self, BinaryOperator, UnaryOperator};
use sqlparser::dialect::GenericDialect;
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use crate::error::{Error, ErrorKind, Result};
use crate::expr::{CmpOp, Expr, Value};

impl Expr {
    /// Parse a SQL boolean expression such as `"l_quantity < 5 AND l_shipmode = 'AIR'"`.
    pub fn parse_sql(sql: &str) -> Result<Expr> {
        let dialect = GenericDialect {};
        let mut parser = Parser::new(&dialect)
            .try_with_sql(sql)
            .map_err(|e| bad(format!("cannot parse filter {sql:?}: {e}")))?;
        let parsed = parser
            .parse_expr()
            .map_err(|e| bad(format!("cannot parse filter {sql:?}: {e}")))?;
        let rest = parser.peek_token();
        if rest.token != Token::EOF {
            return Err(bad(format!(
                "unexpected {} after the filter expression in {sql:?}",
                rest.token
            )));
        }
        translate(&parsed)
    }
}

fn bad(msg: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, msg)
}

fn unsupported(e: &ast::Expr) -> Error {
    bad(format!(
        "unsupported in a filter: `{e}` (use column <op> literal, IN, IS [NOT] NULL, BETWEEN, \
         LIKE, ILIKE, a boolean column, AND, OR, NOT)"
    ))
}

fn translate(e: &ast::Expr) -> Result<Expr> {
    use ast::Expr as S;
    match e {
        S::Nested(inner) => translate(inner),
        S::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => Ok(translate(expr)?.negate()),
        S::BinaryOp { left, op, right } => match op {
            BinaryOperator::And => Ok(translate(left)?.and(translate(right)?)),
            BinaryOperator::Or => Ok(translate(left)?.or(translate(right)?)),
            _ => comparison(e, left, op, right),
        },
        S::IsNull(x) | S::IsNotNull(x) => Ok(Expr::IsNull {
            column: column(x).ok_or_else(|| unsupported(e))?,
            negated: matches!(e, S::IsNotNull(_)),
        }),
        S::InList {
            expr,
            list,
            negated,
        } => Ok(Expr::InList {
            column: column(expr).ok_or_else(|| unsupported(e))?,
            values: list.iter().map(literal).collect::<Result<_>>()?,
            negated: *negated,
        }),
        S::Between {
            expr,
            negated,
            low,
            high,
        } => Ok(Expr::Between {
            column: column(expr).ok_or_else(|| unsupported(e))?,
            low: literal(low)?,
            high: literal(high)?,
            negated: *negated,
        }),
        S::Like {
            negated,
            any: false,
            expr,
            pattern,
            escape_char,
        }
        | S::ILike {
            negated,
            any: false,
            expr,
            pattern,
            escape_char,
        } => like(e, expr, pattern, escape_char.as_ref(), *negated),
        S::Value(v) => match &v.value {
            ast::Value::Boolean(b) => Ok(Expr::Literal(*b)),
            _ => Err(unsupported(e)),
        },
        // A bare boolean column (`WHERE flag`, `NOT flag`): true where it is true, as SQL
        // reads it (null is not true).
        S::Identifier(_) | S::CompoundIdentifier(_) => Ok(Expr::Compare {
            column: column(e).ok_or_else(|| unsupported(e))?,
            op: CmpOp::Eq,
            value: Value::Bool(true),
        }),
        _ => Err(unsupported(e)),
    }
}

/// `left op right` (`e`), one side a column and the other a literal.
fn comparison(
    e: &ast::Expr,
    left: &ast::Expr,
    op: &BinaryOperator,
    right: &ast::Expr,
) -> Result<Expr> {
    let op = match op {
        BinaryOperator::Eq => CmpOp::Eq,
        BinaryOperator::NotEq => CmpOp::NotEq,
        BinaryOperator::Lt => CmpOp::Lt,
        BinaryOperator::LtEq => CmpOp::LtEq,
        BinaryOperator::Gt => CmpOp::Gt,
        BinaryOperator::GtEq => CmpOp::GtEq,
        _ => return Err(unsupported(e)),
    };
    match (column(left), column(right)) {
        (Some(c), None) => Ok(Expr::Compare {
            column: c,
            op,
            value: literal(right)?,
        }),
        (None, Some(c)) => Ok(Expr::Compare {
            column: c,
            op: op.flip(),
            value: literal(left)?,
        }),
        _ => Err(unsupported(e)),
    }
}

/// `expr [NOT] [I]LIKE pattern [ESCAPE '\']` (`e`): a backslash is the only escape.
fn like(
    e: &ast::Expr,
    expr: &ast::Expr,
    pattern: &ast::Expr,
    escape_char: Option<&ast::ValueWithSpan>,
    negated: bool,
) -> Result<Expr> {
    if let Some(c) = escape_char {
        if !matches!(&c.value, ast::Value::SingleQuotedString(s) if s == "\\") {
            return Err(bad(format!(
                "unsupported in a filter: `{e}` (LIKE escapes with a backslash only)"
            )));
        }
    }
    let Value::Str(pattern) = literal(pattern)? else {
        return Err(unsupported(e));
    };
    Ok(Expr::Like {
        column: column(expr).ok_or_else(|| unsupported(e))?,
        pattern,
        negated,
        case_insensitive: matches!(e, ast::Expr::ILike { .. }),
    })
}

/// A column reference: `a`, `"a"` or `a.b.c`.
fn column(e: &ast::Expr) -> Option<String> {
    match e {
        ast::Expr::Identifier(id) => Some(id.value.clone()),
        ast::Expr::CompoundIdentifier(ids) => Some(
            ids.iter()
                .map(|i| i.value.as_str())
                .collect::<Vec<_>>()
                .join("."),
        ),
        ast::Expr::Nested(inner) => column(inner),
        _ => None,
    }
}

fn literal(e: &ast::Expr) -> Result<Value> {
    use ast::Value as V;
    match e {
        ast::Expr::Nested(inner) => literal(inner),
        ast::Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match (&**expr, literal(expr)?) {
            (_, Value::Int(i)) => Ok(Value::Int(-i)),
            // `-9223372036854775808` is i64::MIN; below it no integer type holds the value.
            (_, Value::UInt(u)) => Ok(match 0i64.checked_sub_unsigned(u) {
                Some(i) => Value::Int(i),
                None => Value::Float(-(u as f64)),
            }),
            (_, Value::Float(x)) => Ok(Value::Float(-x)),
            _ => Err(unsupported(e)),
        },
        ast::Expr::TypedString(t) => match t.value.value.clone().into_string() {
            Some(s) => Ok(Value::Str(s)),
            None => Err(unsupported(e)),
        },
        ast::Expr::Value(v) => match &v.value {
            // Integers stay exact: i64, else u64 (an unsigned column's upper half), else the
            // number is a float.
            V::Number(n, _) => match (n.parse::<i64>(), n.parse::<u64>()) {
                (Ok(i), _) => Ok(Value::Int(i)),
                (_, Ok(u)) => Ok(Value::UInt(u)),
                _ => n
                    .parse::<f64>()
                    .map(Value::Float)
                    .map_err(|_| bad(format!("bad number {n:?} in filter"))),
            },
            V::SingleQuotedString(s) | V::NationalStringLiteral(s) | V::EscapedStringLiteral(s) => {
                Ok(Value::Str(s.clone()))
            }
            V::Boolean(b) => Ok(Value::Bool(*b)),
            V::Null => Err(bad(
                "comparison with NULL is never true; use IS NULL or IS NOT NULL".into(),
            )),
            _ => Err(unsupported(e)),
        },
        _ => Err(unsupported(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::col;

    #[test]
    fn integers_stay_exact_up_to_u64_max() {
        let p = |s: &str| Expr::parse_sql(s).unwrap();
        assert_eq!(p("u = 18446744073709551615"), col("u").eq(u64::MAX));
        assert_eq!(
            p("u > 9223372036854775808"),
            col("u").gt(Value::UInt(1 << 63))
        );
        assert_eq!(p("u > 9223372036854775807"), col("u").gt(i64::MAX));
        assert_eq!(p("u > -9223372036854775808"), col("u").gt(i64::MIN));
        // Beyond u64: a float, as before.
        assert_eq!(
            p("u < 18446744073709551616"),
            col("u").lt(18446744073709551616.0)
        );
        // The literal reaches a UInt64 column exactly, and no narrower one.
        use arrow::datatypes::DataType;
        let v = Value::UInt(u64::MAX);
        let typed = v.to_typed(&DataType::UInt64, "u").unwrap();
        assert_eq!(
            typed
                .as_any()
                .downcast_ref::<arrow::array::UInt64Array>()
                .unwrap()
                .value(0),
            u64::MAX
        );
        assert!(v.to_typed(&DataType::Int64, "u").is_err());
    }

    #[test]
    fn translates_the_supported_forms() {
        let p = |s: &str| Expr::parse_sql(s).unwrap();
        assert_eq!(p("flag"), col("flag").eq(true));
        assert_eq!(p("NOT s.flag"), col("s.flag").eq(true).negate());
        assert_eq!(
            p("flag AND x > 1"),
            col("flag").eq(true).and(col("x").gt(1))
        );
        assert_eq!(p("5 > a"), col("a").lt(5));
        assert_eq!(p("a.b <> -2.5"), col("a.b").not_eq(-2.5));
        assert_eq!(p("NOT (x IN (1, 2))").to_string(), "NOT x IN (1, 2)");
        assert_eq!(
            p("d BETWEEN DATE '2020-01-01' AND '2020-12-31' OR s IS NOT NULL").to_string(),
            "(d BETWEEN '2020-01-01' AND '2020-12-31' OR s IS NOT NULL)"
        );
        assert_eq!(p("flag = true"), col("flag").eq(true));
        assert_eq!(p("s LIKE 'a%'"), col("s").like("a%"));
        assert_eq!(
            p("s NOT ILIKE '%b_'"),
            col("s").ilike("%b_").negate().push_not()
        );
        assert_eq!(p(r"s LIKE 'x\%%' ESCAPE '\'"), col("s").like(r"x\%%"));
        // Display parses back to the same filter.
        for s in ["s NOT LIKE 'it''s%'", "\"like\" ILIKE '_'"] {
            assert_eq!(p(&p(s).to_string()), p(s), "{s}");
        }
    }

    #[test]
    fn rejects_what_it_cannot_push_down() {
        for s in [
            "a + 1 > 2",
            "a = b",
            "a = NULL",
            "f(a) = 1",
            "a < 5 garbage",
            "a <",
            "s LIKE t",
            "s LIKE 5",
            "s LIKE 'a!%' ESCAPE '!'",
            "s LIKE ANY ('a%', 'b%')",
        ] {
            let e = Expr::parse_sql(s).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{s}: {e}");
        }
    }
}
