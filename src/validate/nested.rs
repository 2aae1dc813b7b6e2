//! Nested arrays parquet's reader built, checked before a scan delivers them.
//!
//! parquet's reader builds lists, maps and structs from a column's repetition and definition
//! levels without checking the result against the schema: levels that mark a value null where
//! the schema says the value is required (a file with one byte changed in its footer, say)
//! come back as a `List(non-null Int32)` whose child holds nulls its parent does not, an
//! array every consumer is entitled to trust and that arrow's own `validate_full` refuses.
//! [`check_batch`] refuses such a batch, naming the column; the caller adds the file, row
//! group and columns of the part ([`crate::decode::part`]).
//!
//! What is checked, at every level of a nested column: buffer sizes (`ArrayData::validate`),
//! null counts and the nullability of children (`validate_nulls`), and a list's or map's
//! offsets against its child (`validate_values` on the nested levels). Leaf values are not
//! re-validated: their decoders check them (UTF-8 included), and flat columns are not walked
//! at all. The cost is a pass over the nested levels' offsets and validity bitmaps.
//!
//! A leaf: it imports only arrow. Invariant: it rejects, never repairs, and allocates nothing
//! proportional to a claimed size (a fixed-size list's expanded validity is the batch's own).

use arrow::array::{Array, ArrayData, RecordBatch};
use arrow::error::ArrowError;

/// `Ok` when every nested column of `batch` is a valid array for its type; otherwise an
/// error naming the first column that is not.
pub(crate) fn check_batch(batch: &RecordBatch) -> Result<(), ArrowError> {
    let schema = batch.schema_ref();
    for (column, field) in batch.columns().iter().zip(schema.fields()) {
        if !column.data_type().is_nested() {
            continue;
        }
        check_levels(&column.to_data()).map_err(|e| {
            ArrowError::ParquetError(format!(
                "column {}: the levels build no valid {} array: {e}",
                field.name(),
                column.data_type()
            ))
        })?;
    }
    Ok(())
}

/// `data` and its children checked, down to (but not into) the leaf values.
fn check_levels(data: &ArrayData) -> Result<(), ArrowError> {
    data.validate()?;
    data.validate_nulls()?;
    if data.data_type().is_nested() {
        data.validate_values()?;
        for child in data.child_data() {
            check_levels(child)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, ListArray, StringArray, StructArray};
    use arrow::buffer::OffsetBuffer;
    use arrow::datatypes::{DataType, Field, Fields};

    use super::*;

    fn batch(columns: Vec<(&str, Arc<dyn Array>)>) -> RecordBatch {
        RecordBatch::try_from_iter(columns).expect("batch")
    }

    /// A list of required ints whose child holds a null: arrow's `try_new` refuses it, so it
    /// is built unchecked, as parquet's reader builds it.
    fn list_with_a_null_required_value() -> ListArray {
        let item = Arc::new(Field::new("item", DataType::Int32, false));
        let values = Int32Array::from(vec![Some(1), None, Some(3)]);
        let data = ArrayData::builder(DataType::List(item))
            .len(2)
            .add_buffer(
                OffsetBuffer::<i32>::new(vec![0, 2, 3].into())
                    .into_inner()
                    .into(),
            )
            .add_child_data(values.into_data());
        ListArray::from(unsafe { data.build_unchecked() })
    }

    #[test]
    fn a_required_value_that_is_null_is_refused_naming_its_column() {
        let bad = list_with_a_null_required_value();
        // The reference: arrow's own full validation refuses the same array.
        assert!(bad.to_data().validate_full().is_err());
        let b = batch(vec![
            ("ok", Arc::new(Int32Array::from(vec![1, 2])) as _),
            ("l", Arc::new(bad) as _),
        ]);
        let e = check_batch(&b).expect_err("an invalid list");
        assert!(e.to_string().contains("column l"), "{e}");
        assert!(e.to_string().contains("nulls not present in parent"), "{e}");
    }

    #[test]
    fn valid_nested_columns_pass() {
        let item = Arc::new(Field::new("item", DataType::Int32, true));
        let list = ListArray::new(
            item,
            OffsetBuffer::new(vec![0, 2, 2, 3].into()),
            Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])),
            Some(vec![true, false, true].into()),
        );
        let fields = Fields::from(vec![
            Field::new("a", DataType::Int32, false),
            Field::new("s", DataType::Utf8, true),
        ]);
        let strukt = StructArray::new(
            fields,
            vec![
                Arc::new(Int32Array::from(vec![1, 0, 3])),
                Arc::new(StringArray::from(vec![Some("x"), None, None])),
            ],
            Some(vec![true, false, true].into()),
        );
        for c in [Arc::new(list) as Arc<dyn Array>, Arc::new(strukt)] {
            assert!(c.to_data().validate_full().is_ok());
            check_batch(&batch(vec![("c", c)])).expect("valid");
        }
    }
}
