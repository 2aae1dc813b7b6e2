//! Folding a filter over columns whose value is known (a Hive partition's values, a file's
//! columns that hold no null): each leaf on such a column becomes its truth value and the
//! `AND`/`OR`/`NOT` above it simplify. Used before a file is opened (to skip it) and when a
//! file's filter is resolved.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch};

use crate::error::Result;
use crate::expr::Expr;

/// Whether `filter` is false for every row whose columns `constants` have these values,
/// whatever the other columns hold (a Hive partition's values, before its file is opened).
pub(crate) fn excluded_by_constants(
    filter: &Expr,
    constants: &[(String, ArrayRef)],
) -> Result<bool> {
    let type_of = |c: &str| {
        constants
            .iter()
            .find(|(n, _)| n == c)
            .map(|(_, v)| v.data_type().clone())
    };
    let expr = filter.clone().signed_zeros(&type_of).push_not();
    Ok(matches!(fold(expr, constants, &[])?, Expr::Literal(false)))
}

/// Replace the leaves of `e` (in negation normal form) that read a column constant in the
/// file by their value: TRUE, or FALSE for false and null alike (exact in negation normal
/// form, where no `NOT` can turn a null into a match), and `IS [NOT] NULL` on the `required`
/// columns (never null in the file) by FALSE (TRUE). Then simplify.
pub(crate) fn fold(e: Expr, constants: &[(String, ArrayRef)], required: &[&str]) -> Result<Expr> {
    Ok(match e {
        Expr::And(a, b) => match (
            fold(*a, constants, required)?,
            fold(*b, constants, required)?,
        ) {
            (Expr::Literal(false), _) | (_, Expr::Literal(false)) => Expr::Literal(false),
            (Expr::Literal(true), x) | (x, Expr::Literal(true)) => x,
            (x, y) => x.and(y),
        },
        Expr::Or(a, b) => match (
            fold(*a, constants, required)?,
            fold(*b, constants, required)?,
        ) {
            (Expr::Literal(true), _) | (_, Expr::Literal(true)) => Expr::Literal(true),
            (Expr::Literal(false), x) | (x, Expr::Literal(false)) => x,
            (x, y) => x.or(y),
        },
        Expr::Not(a) => match fold(*a, constants, required)? {
            Expr::Literal(b) => Expr::Literal(!b),
            x => x.negate(),
        },
        Expr::Literal(b) => Expr::Literal(b),
        Expr::IsNull { column, negated } if required.contains(&column.as_str()) => {
            Expr::Literal(negated)
        }
        leaf => {
            let column = leaf.leaf_column().expect("leaf predicates only");
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
