//! Filter expressions: a small typed expression type over columns and literals, evaluated
//! exactly with arrow's kernels.
//!
//! ```
//! use rayquet::expr::{col, Expr};
//! let e: Expr = col("l_quantity").lt(5).and(col("l_shipmode").eq("AIR"));
//! assert_eq!(e.to_string(), "(l_quantity < 5 AND l_shipmode = 'AIR')");
//! ```
//!
//! Semantics are SQL's: a comparison with a null value is null, `AND`/`OR`/`NOT` follow
//! three-valued (Kleene) logic, and a row is kept only when the filter is true. Floats are
//! compared in IEEE total order, as arrow's kernels do (NaN is greater than every number and
//! equal to itself). A literal is converted to its column's type (an `Int` to a decimal, a
//! `Str` to a date or timestamp); a literal that the column's type cannot hold exactly (`5.5`
//! for an integer column) is an error, never a silent rounding.
//!
//! Column names are top-level names or dotted paths to fields inside structs (`a.b`); a
//! top-level name that contains a dot wins over a path. Lists and maps cannot be filtered.

mod eval;
pub(crate) mod fold;
mod like;
#[cfg(feature = "sql")]
mod sql;
mod value;
mod zero;

use std::fmt;

use arrow::array::BooleanArray;
use arrow::compute::kernels::cmp;

use crate::error::Result;

pub use like::{prefix_upper_bound, LikePrefix, LikeRest};
pub use value::Value;

pub(crate) use eval::like_pattern;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum CmpOp {
    /// `=`
    Eq,
    /// `!=` (also written `<>`)
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

impl CmpOp {
    /// The operator that is true exactly when this one is false (for non-null operands).
    pub fn negate(self) -> CmpOp {
        match self {
            CmpOp::Eq => CmpOp::NotEq,
            CmpOp::NotEq => CmpOp::Eq,
            CmpOp::Lt => CmpOp::GtEq,
            CmpOp::LtEq => CmpOp::Gt,
            CmpOp::Gt => CmpOp::LtEq,
            CmpOp::GtEq => CmpOp::Lt,
        }
    }

    /// `a op b` becomes `b flip(op) a`.
    pub fn flip(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
            other => other,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::NotEq => "!=",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        }
    }

    /// Apply the operator with arrow's comparison kernels.
    pub(crate) fn apply(
        self,
        a: &dyn arrow::array::Datum,
        b: &dyn arrow::array::Datum,
    ) -> Result<BooleanArray> {
        let r = match self {
            CmpOp::Eq => cmp::eq(a, b),
            CmpOp::NotEq => cmp::neq(a, b),
            CmpOp::Lt => cmp::lt(a, b),
            CmpOp::LtEq => cmp::lt_eq(a, b),
            CmpOp::Gt => cmp::gt(a, b),
            CmpOp::GtEq => cmp::gt_eq(a, b),
        };
        Ok(r?)
    }
}

/// A filter over a scan's rows. Build with [`col`] and the methods of [`Column`] and
/// [`Expr`], or parse SQL with `Expr::parse_sql` (feature `sql`).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Expr {
    /// `column op value`
    Compare {
        /// Column name or dotted path.
        column: String,
        /// The comparison.
        op: CmpOp,
        /// The literal.
        value: Value,
    },
    /// `column [NOT] IN (values)`
    InList {
        /// Column name or dotted path.
        column: String,
        /// The literals.
        values: Vec<Value>,
        /// `NOT IN`.
        negated: bool,
    },
    /// `column IS [NOT] NULL`
    IsNull {
        /// Column name or dotted path.
        column: String,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `column [NOT] BETWEEN low AND high` (both ends included).
    Between {
        /// Column name or dotted path.
        column: String,
        /// Lower end.
        low: Value,
        /// Upper end.
        high: Value,
        /// `NOT BETWEEN`.
        negated: bool,
    },
    /// `column [NOT] LIKE pattern`, or `ILIKE` (case-insensitive): SQL's pattern match on a
    /// string column. `%` matches any run of characters, `_` one character, and `\` makes the
    /// next character literal. Evaluated with arrow's `like` kernels, as DataFusion does.
    Like {
        /// Column name or dotted path (a string column).
        column: String,
        /// The pattern.
        pattern: String,
        /// `NOT LIKE`.
        negated: bool,
        /// `ILIKE`: letters match in either case.
        case_insensitive: bool,
    },
    /// Both are true.
    And(Box<Expr>, Box<Expr>),
    /// Either is true.
    Or(Box<Expr>, Box<Expr>),
    /// The inner filter is false.
    Not(Box<Expr>),
    /// `TRUE` or `FALSE` for every row.
    Literal(bool),
}

/// A column named in a filter; its methods build [`Expr`]s.
#[derive(Debug, Clone)]
pub struct Column(String);

/// The column `name` (a top-level name or a dotted path into structs).
pub fn col(name: impl Into<String>) -> Column {
    Column(name.into())
}

impl Column {
    fn cmp(self, op: CmpOp, v: impl Into<Value>) -> Expr {
        Expr::Compare {
            column: self.0,
            op,
            value: v.into(),
        }
    }
    /// `column = v`
    pub fn eq(self, v: impl Into<Value>) -> Expr {
        self.cmp(CmpOp::Eq, v)
    }
    /// `column != v`
    pub fn not_eq(self, v: impl Into<Value>) -> Expr {
        self.cmp(CmpOp::NotEq, v)
    }
    /// `column < v`
    pub fn lt(self, v: impl Into<Value>) -> Expr {
        self.cmp(CmpOp::Lt, v)
    }
    /// `column <= v`
    pub fn lt_eq(self, v: impl Into<Value>) -> Expr {
        self.cmp(CmpOp::LtEq, v)
    }
    /// `column > v`
    pub fn gt(self, v: impl Into<Value>) -> Expr {
        self.cmp(CmpOp::Gt, v)
    }
    /// `column >= v`
    pub fn gt_eq(self, v: impl Into<Value>) -> Expr {
        self.cmp(CmpOp::GtEq, v)
    }
    /// `column IN (values)`
    pub fn in_list<V: Into<Value>>(self, values: impl IntoIterator<Item = V>) -> Expr {
        Expr::InList {
            column: self.0,
            values: values.into_iter().map(Into::into).collect(),
            negated: false,
        }
    }
    /// `column BETWEEN low AND high`
    pub fn between(self, low: impl Into<Value>, high: impl Into<Value>) -> Expr {
        Expr::Between {
            column: self.0,
            low: low.into(),
            high: high.into(),
            negated: false,
        }
    }
    /// `column LIKE pattern` (`%` any run of characters, `_` one character, `\` escapes).
    ///
    /// ```
    /// use rayquet::expr::col;
    /// let e = col("p_type").like("%BRASS").and(col("p_name").ilike("forest%").negate());
    /// assert_eq!(e.to_string(), "(p_type LIKE '%BRASS' AND NOT p_name ILIKE 'forest%')");
    /// ```
    pub fn like(self, pattern: impl Into<String>) -> Expr {
        self.pattern(pattern.into(), false)
    }
    /// `column ILIKE pattern`: [`Column::like`] with letters matching in either case.
    pub fn ilike(self, pattern: impl Into<String>) -> Expr {
        self.pattern(pattern.into(), true)
    }
    fn pattern(self, pattern: String, case_insensitive: bool) -> Expr {
        Expr::Like {
            column: self.0,
            pattern,
            negated: false,
            case_insensitive,
        }
    }
    /// `column IS NULL`
    pub fn is_null(self) -> Expr {
        Expr::IsNull {
            column: self.0,
            negated: false,
        }
    }
    /// `column IS NOT NULL`
    pub fn is_not_null(self) -> Expr {
        Expr::IsNull {
            column: self.0,
            negated: true,
        }
    }
}

impl Expr {
    /// This filter with every column name replaced by `f(name)` (table readers rename columns
    /// to the spelling their files use); the first error from `f` ends the walk.
    ///
    /// ```
    /// use rayquet::expr::col;
    /// let e = col("ID").lt(5).or(col("s.A").is_null());
    /// let lower = e.try_map_columns(&mut |c| Ok::<_, ()>(c.to_lowercase())).unwrap();
    /// assert_eq!(lower, col("id").lt(5).or(col("s.a").is_null()));
    /// ```
    pub fn try_map_columns<E>(
        self,
        f: &mut impl FnMut(String) -> std::result::Result<String, E>,
    ) -> std::result::Result<Expr, E> {
        Ok(match self {
            Expr::And(a, b) => a.try_map_columns(f)?.and(b.try_map_columns(f)?),
            Expr::Or(a, b) => a.try_map_columns(f)?.or(b.try_map_columns(f)?),
            Expr::Not(a) => a.try_map_columns(f)?.negate(),
            Expr::Literal(b) => Expr::Literal(b),
            mut leaf => {
                if let Some(c) = leaf.leaf_column_mut() {
                    *c = f(std::mem::take(c))?;
                }
                leaf
            }
        })
    }

    /// `self AND other`
    pub fn and(self, other: Expr) -> Expr {
        Expr::And(Box::new(self), Box::new(other))
    }
    /// `self OR other`
    pub fn or(self, other: Expr) -> Expr {
        Expr::Or(Box::new(self), Box::new(other))
    }
    /// `NOT self` (named `negate` so as not to clash with `std::ops::Not`).
    pub fn negate(self) -> Expr {
        Expr::Not(Box::new(self))
    }

    /// The column of a leaf (a comparison, `IN`, `IS NULL`, `BETWEEN`, `LIKE`); `None`
    /// otherwise.
    pub(crate) fn leaf_column(&self) -> Option<&str> {
        match self {
            Expr::Compare { column, .. }
            | Expr::InList { column, .. }
            | Expr::IsNull { column, .. }
            | Expr::Between { column, .. }
            | Expr::Like { column, .. } => Some(column),
            _ => None,
        }
    }

    fn leaf_column_mut(&mut self) -> Option<&mut String> {
        match self {
            Expr::Compare { column, .. }
            | Expr::InList { column, .. }
            | Expr::IsNull { column, .. }
            | Expr::Between { column, .. }
            | Expr::Like { column, .. } => Some(column),
            _ => None,
        }
    }

    /// The columns the filter reads, each once, in order of first use.
    pub fn columns(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        self.visit(&mut |c| {
            if !out.contains(&c) {
                out.push(c)
            }
        });
        out
    }

    fn visit<'a>(&'a self, f: &mut impl FnMut(&'a str)) {
        match self {
            Expr::Compare { column, .. }
            | Expr::InList { column, .. }
            | Expr::IsNull { column, .. }
            | Expr::Between { column, .. }
            | Expr::Like { column, .. } => f(column),
            Expr::And(a, b) | Expr::Or(a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Not(a) => a.visit(f),
            Expr::Literal(_) => {}
        }
    }

    /// The same filter with every `NOT` pushed down to the leaves (negation normal form):
    /// `NOT (a < 1)` becomes `a >= 1`, De Morgan for `AND`/`OR`. Exact under three-valued
    /// logic and total float order, and what the pruning code reasons about.
    pub fn negation_normal_form(self) -> Expr {
        self.nnf(false)
    }

    pub(crate) fn push_not(self) -> Expr {
        self.negation_normal_form()
    }

    fn nnf(self, neg: bool) -> Expr {
        match self {
            Expr::Compare { column, op, value } => Expr::Compare {
                column,
                op: if neg { op.negate() } else { op },
                value,
            },
            mut e @ (Expr::InList { .. }
            | Expr::IsNull { .. }
            | Expr::Between { .. }
            | Expr::Like { .. }) => {
                if let Expr::InList { negated, .. }
                | Expr::IsNull { negated, .. }
                | Expr::Between { negated, .. }
                | Expr::Like { negated, .. } = &mut e
                {
                    *negated ^= neg;
                }
                e
            }
            Expr::And(a, b) if neg => Expr::Or(Box::new(a.nnf(true)), Box::new(b.nnf(true))),
            Expr::Or(a, b) if neg => Expr::And(Box::new(a.nnf(true)), Box::new(b.nnf(true))),
            Expr::And(a, b) => Expr::And(Box::new(a.nnf(false)), Box::new(b.nnf(false))),
            Expr::Or(a, b) => Expr::Or(Box::new(a.nnf(false)), Box::new(b.nnf(false))),
            Expr::Not(a) => a.nnf(!neg),
            Expr::Literal(b) => Expr::Literal(b ^ neg),
        }
    }
}

/// A column name as SQL: each dotted segment as is when it is a plain identifier, else in
/// double quotes.
struct Ident<'a>(&'a str);

impl fmt::Display for Ident<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const WORDS: [&str; 11] = [
            "AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "TRUE", "FALSE", "LIKE", "ILIKE",
        ];
        for (i, seg) in self.0.split('.').enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            let plain = seg
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && seg.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && !WORDS.contains(&seg.to_ascii_uppercase().as_str());
            if plain {
                f.write_str(seg)?;
            } else {
                write!(f, "\"{}\"", seg.replace('"', "\"\""))?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |vs: &[Value]| {
            vs.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let not = |n: bool| if n { "NOT " } else { "" };
        match self {
            Expr::Compare { column, op, value } => {
                write!(f, "{} {} {value}", Ident(column), op.symbol())
            }
            Expr::InList {
                column,
                values,
                negated,
            } => write!(
                f,
                "{} {}IN ({})",
                Ident(column),
                not(*negated),
                list(values)
            ),
            Expr::IsNull { column, negated } => {
                write!(f, "{} IS {}NULL", Ident(column), not(*negated))
            }
            Expr::Between {
                column,
                low,
                high,
                negated,
            } => write!(
                f,
                "{} {}BETWEEN {low} AND {high}",
                Ident(column),
                not(*negated)
            ),
            Expr::Like {
                column,
                pattern,
                negated,
                case_insensitive,
            } => write!(
                f,
                "{} {}{} {}",
                Ident(column),
                not(*negated),
                if *case_insensitive { "ILIKE" } else { "LIKE" },
                Value::Str(pattern.clone())
            ),
            Expr::And(a, b) => write!(f, "({a} AND {b})"),
            Expr::Or(a, b) => write!(f, "({a} OR {b})"),
            Expr::Not(a) => write!(f, "NOT {a}"),
            Expr::Literal(b) => f.write_str(if *b { "TRUE" } else { "FALSE" }),
        }
    }
}
