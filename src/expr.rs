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

use std::fmt;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, StructArray,
};
use arrow::compute::kernels::boolean::{and_kleene, not, or_kleene};
use arrow::compute::kernels::cmp;
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;

use crate::error::{Error, ErrorKind, Result};

/// A literal value in a filter (or a constant column of a [`crate::task::FileTask`]).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Value {
    /// A boolean.
    Bool(bool),
    /// An integer (converted to the column's integer, decimal, float or timestamp type).
    Int(i64),
    /// A floating point number (converted to a float or decimal column's type).
    Float(f64),
    /// A string (also the way to write dates, timestamps and exact decimals: `'2024-01-31'`).
    Str(String),
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Bool(b) => write!(f, "{}", if *b { "TRUE" } else { "FALSE" }),
            Value::Int(i) => write!(f, "{i}"),
            // SQL has no literal for these; a string converts to them on a float column.
            Value::Float(x) if x.is_nan() => write!(f, "'NaN'"),
            Value::Float(x) if x.is_infinite() => {
                write!(f, "'{}inf'", if *x < 0.0 { "-" } else { "" })
            }
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Str(s) => write!(f, "'{}'", s.replace('\'', "''")),
        }
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}
impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}
impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(v as i64)
    }
}
impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}
impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_string())
    }
}
impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}

impl Value {
    /// The literal as a one-element array of its natural type.
    fn to_array(&self) -> ArrayRef {
        match self {
            Value::Bool(b) => Arc::new(BooleanArray::from(vec![*b])),
            Value::Int(i) => Arc::new(Int64Array::from(vec![*i])),
            Value::Float(x) => Arc::new(Float64Array::from(vec![*x])),
            Value::Str(s) => Arc::new(StringArray::from(vec![s.as_str()])),
        }
    }

    /// The literal as a one-element array of `ty`, exactly, or an error naming `column`.
    pub(crate) fn to_typed(&self, ty: &DataType, column: &str) -> Result<ArrayRef> {
        let bad = |why: String| {
            Error::new(
                ErrorKind::InvalidArgument,
                format!("filter literal {self} cannot be compared with column {column} of type {ty}: {why}"),
            )
        };
        let src = match (self, ty) {
            // Floats reach decimals through their shortest decimal text, which is exact.
            (Value::Float(x), DataType::Decimal32(..) | DataType::Decimal64(..))
            | (Value::Float(x), DataType::Decimal128(..) | DataType::Decimal256(..)) => {
                Arc::new(StringArray::from(vec![format!("{x}")])) as ArrayRef
            }
            _ => self.to_array(),
        };
        let opts = CastOptions {
            safe: false,
            ..Default::default()
        };
        let typed = cast_with_options(&src, ty, &opts).map_err(|e| bad(e.to_string()))?;
        if typed.is_null(0) {
            return Err(bad("it converts to null".into()));
        }
        if !self.exact_in(&src, &typed, ty)? {
            return Err(bad("the column's type cannot hold it exactly".into()));
        }
        Ok(typed)
    }
}

impl Value {
    /// Whether `typed` (this literal converted to `ty` from `src`) is the literal's value
    /// exactly: `5.5` is not an integer, `'1.234'` is not a `Decimal(10, 2)`, a time of day is
    /// not a date. A float literal is rounded to a `Float32` column's precision (float
    /// literals are approximate anyway); every other conversion must be exact.
    fn exact_in(&self, src: &ArrayRef, typed: &ArrayRef, ty: &DataType) -> Result<bool> {
        let opts = CastOptions {
            safe: false,
            ..Default::default()
        };
        let scale = match ty {
            DataType::Decimal32(_, s)
            | DataType::Decimal64(_, s)
            | DataType::Decimal128(_, s)
            | DataType::Decimal256(_, s) => Some(*s),
            _ => None,
        };
        Ok(match (self, ty) {
            (Value::Float(_), DataType::Float16 | DataType::Float32 | DataType::Float64) => true,
            (Value::Float(x), _) if scale.is_some() => {
                fraction_digits(&format!("{x}")) <= scale_digits(scale)
            }
            (Value::Str(t), _) if scale.is_some() => {
                fraction_digits(t.trim()) <= scale_digits(scale)
            }
            (Value::Float(x), _) => match cast_with_options(typed, &DataType::Float64, &opts) {
                Ok(back) => back
                    .as_any()
                    .downcast_ref::<Float64Array>()
                    .is_some_and(|b| b.value(0) == *x),
                Err(_) => false,
            },
            (Value::Str(_), DataType::Date32 | DataType::Date64 | DataType::Timestamp(..)) => {
                // Compare at nanosecond precision: what the text says against what was kept.
                let tz = match ty {
                    DataType::Timestamp(_, tz) => tz.clone(),
                    _ => None,
                };
                let ns = DataType::Timestamp(arrow::datatypes::TimeUnit::Nanosecond, tz);
                match (
                    cast_with_options(src, &ns, &opts),
                    cast_with_options(typed, &ns, &opts),
                ) {
                    (Ok(a), Ok(b)) => cmp::eq(&a, &b)?.value(0),
                    // Beyond the nanosecond range: trust the parse.
                    _ => true,
                }
            }
            (Value::Str(_), _) => true,
            (Value::Int(_) | Value::Bool(_), _) => {
                match cast_with_options(typed, src.data_type(), &opts) {
                    Ok(back) => {
                        back.len() == 1 && !back.is_null(0) && cmp::eq(&back, src)?.value(0)
                    }
                    Err(_) => false,
                }
            }
        })
    }
}

/// Digits after the decimal point of a number's text, ignoring trailing zeros (`"1.50"`: 1).
fn fraction_digits(text: &str) -> i64 {
    let mantissa = text.split(['e', 'E']).next().unwrap_or(text);
    match mantissa.split_once('.') {
        Some((_, frac)) => frac.trim_end_matches('0').len() as i64,
        None => 0,
    }
}

fn scale_digits(scale: Option<i8>) -> i64 {
    scale.unwrap_or(0) as i64
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
            | Expr::Between { column, .. } => f(column),
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
            Expr::InList {
                column,
                values,
                negated,
            } => Expr::InList {
                column,
                values,
                negated: negated ^ neg,
            },
            Expr::IsNull { column, negated } => Expr::IsNull {
                column,
                negated: negated ^ neg,
            },
            Expr::Between {
                column,
                low,
                high,
                negated,
            } => Expr::Between {
                column,
                low,
                high,
                negated: negated ^ neg,
            },
            Expr::And(a, b) if neg => Expr::Or(Box::new(a.nnf(true)), Box::new(b.nnf(true))),
            Expr::Or(a, b) if neg => Expr::And(Box::new(a.nnf(true)), Box::new(b.nnf(true))),
            Expr::And(a, b) => Expr::And(Box::new(a.nnf(false)), Box::new(b.nnf(false))),
            Expr::Or(a, b) => Expr::Or(Box::new(a.nnf(false)), Box::new(b.nnf(false))),
            Expr::Not(a) => a.nnf(!neg),
            Expr::Literal(b) => Expr::Literal(b ^ neg),
        }
    }

    /// Evaluate on `batch`, whose columns must include those the filter reads: true, false or
    /// null per row (arrow's kernels, three-valued logic).
    pub fn evaluate(&self, batch: &RecordBatch) -> Result<BooleanArray> {
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

/// A column name as SQL: each dotted segment as is when it is a plain identifier, else in
/// double quotes.
struct Ident<'a>(&'a str);

impl fmt::Display for Ident<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const WORDS: [&str; 9] = [
            "AND", "OR", "NOT", "IN", "IS", "NULL", "BETWEEN", "TRUE", "FALSE",
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
            Expr::And(a, b) => write!(f, "({a} AND {b})"),
            Expr::Or(a, b) => write!(f, "({a} OR {b})"),
            Expr::Not(a) => write!(f, "NOT {a}"),
            Expr::Literal(b) => f.write_str(if *b { "TRUE" } else { "FALSE" }),
        }
    }
}
