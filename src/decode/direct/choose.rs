//! Which builder reads a leaf ([`builder_for`]): the pairs of Parquet physical type and Arrow
//! type the direct reader builds itself (fixed-width values, views, offset strings in
//! [`super::build`], big-endian decimals in [`super::decimal`]); any other pair is left to
//! parquet. Above both files, so that neither imports the other for it.

use arrow::datatypes::{DataType, TimeUnit};
use parquet::basic::Type as PhysicalType;

use super::build::{Build, Fixed, Offsets, Views};
use super::decimal::BeDecimal;

/// A builder for leaf `physical` (of `type_length` bytes, fixed-length byte arrays) read as
/// `dt`, and the width of its plain values (`None`: byte arrays); `None` when this pair is
/// left to parquet.
pub(crate) fn builder_for(
    (physical, type_length): (PhysicalType, i32),
    dt: &DataType,
    nullable: bool,
) -> Option<(Box<dyn Build>, Option<usize>)> {
    use DataType as D;
    use PhysicalType as P;
    if let (P::FIXED_LEN_BYTE_ARRAY, D::Decimal128(_, _)) = (physical, dt) {
        let width = usize::try_from(type_length).ok()?;
        let b = BeDecimal::new(width, nullable)?;
        return Some((Box::new(b), Some(width)));
    }
    let width = match physical {
        P::INT32 | P::FLOAT => 4,
        P::INT64 | P::DOUBLE => 8,
        _ => 0,
    };
    let b: Box<dyn Build> = match (physical, dt) {
        (
            P::INT32,
            D::Int32
            | D::UInt32
            | D::Date32
            | D::Time32(TimeUnit::Second | TimeUnit::Millisecond)
            | D::Decimal32(_, _),
        )
        | (P::FLOAT, D::Float32) => Box::new(Fixed::<i32>::new(width, nullable)),
        (P::INT32, D::Timestamp(_, _) | D::Decimal64(_, _)) => {
            Box::new(Fixed::<i64>::new(width, nullable))
        }
        (P::INT32 | P::INT64, D::Decimal128(_, _)) => Box::new(Fixed::<i128>::new(width, nullable)),
        (
            P::INT64,
            D::Int64
            | D::UInt64
            | D::Date64
            | D::Time64(TimeUnit::Microsecond | TimeUnit::Nanosecond)
            | D::Duration(_)
            | D::Timestamp(_, _)
            | D::Decimal64(_, _),
        )
        | (P::DOUBLE, D::Float64) => Box::new(Fixed::<i64>::new(width, nullable)),
        (P::BYTE_ARRAY, D::Utf8View) => Box::new(Views::new(true, nullable)),
        (P::BYTE_ARRAY, D::BinaryView) => Box::new(Views::new(false, nullable)),
        (P::BYTE_ARRAY, D::Utf8) => Box::new(Offsets::<i32>::new(true, nullable)),
        (P::BYTE_ARRAY, D::Binary) => Box::new(Offsets::<i32>::new(false, nullable)),
        (P::BYTE_ARRAY, D::LargeUtf8) => Box::new(Offsets::<i64>::new(true, nullable)),
        (P::BYTE_ARRAY, D::LargeBinary) => Box::new(Offsets::<i64>::new(false, nullable)),
        _ => return None,
    };
    Some((b, (width > 0).then_some(width)))
}
