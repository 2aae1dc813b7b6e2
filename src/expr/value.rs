//! [`Value`]: a literal of a filter (or a constant column of a task), and its exact
//! conversion to an Arrow type.
//!
//! Invariant: a conversion either gives exactly the value or fails (`5.5` for an integer
//! column, `'1.234'` for `Decimal(10,2)`), never rounds.

use std::fmt;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray, UInt64Array,
};
use arrow::compute::kernels::cmp;
use arrow::compute::{cast_with_options, CastOptions};
use arrow::datatypes::DataType;

use crate::error::{Error, ErrorKind, Result};

/// A literal value in a filter (or a constant column of a [`crate::task::FileTask`]).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub enum Value {
    /// A boolean.
    Bool(bool),
    /// An integer (converted to the column's integer, decimal, float or timestamp type).
    Int(i64),
    /// An integer above `i64::MAX` (an unsigned 64-bit column's upper half); smaller
    /// integers are [`Value::Int`].
    UInt(u64),
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
            Value::UInt(u) => write!(f, "{u}"),
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
/// `Value::Int` when it fits an `i64`, else `Value::UInt`.
impl From<u64> for Value {
    fn from(v: u64) -> Self {
        match i64::try_from(v) {
            Ok(i) => Value::Int(i),
            Err(_) => Value::UInt(v),
        }
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
            Value::UInt(u) => Arc::new(UInt64Array::from(vec![*u])),
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
            (Value::Int(_) | Value::UInt(_) | Value::Bool(_), _) => {
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
