//! Arrays given a type equal to their own but for nested fields' names and metadata
//! ([`DataType::equals_datatype`]): the output schema's field ids, extension types and names,
//! where a decoder or a table's transform built the same data under other fields.
//!
//! Invariant: no value buffer is copied; only the nested fields are replaced.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, FixedSizeListArray, LargeListArray, ListArray, MapArray, StructArray,
};
use arrow::datatypes::DataType;
use arrow::error::ArrowError;

/// `array` typed `to`, which must equal its type but for nested fields' names and metadata.
pub(crate) fn retype(array: &ArrayRef, to: &DataType) -> Result<ArrayRef, ArrowError> {
    if array.data_type() == to {
        return Ok(Arc::clone(array));
    }
    if !array.data_type().equals_datatype(to) {
        return Err(ArrowError::SchemaError(format!(
            "{} is not {to} but for its fields' names and metadata",
            array.data_type()
        )));
    }
    Ok(match to {
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let children = s
                .columns()
                .iter()
                .zip(fields)
                .map(|(c, f)| retype(c, f.data_type()))
                .collect::<Result<Vec<_>, _>>()?;
            Arc::new(StructArray::try_new_with_length(
                fields.clone(),
                children,
                s.nulls().cloned(),
                s.len(),
            )?)
        }
        DataType::List(field) => {
            let l = array.as_list::<i32>();
            let values = retype(l.values(), field.data_type())?;
            Arc::new(ListArray::try_new(
                Arc::clone(field),
                l.offsets().clone(),
                values,
                l.nulls().cloned(),
            )?)
        }
        DataType::LargeList(field) => {
            let l = array.as_list::<i64>();
            let values = retype(l.values(), field.data_type())?;
            Arc::new(LargeListArray::try_new(
                Arc::clone(field),
                l.offsets().clone(),
                values,
                l.nulls().cloned(),
            )?)
        }
        DataType::FixedSizeList(field, size) => {
            let l = array.as_fixed_size_list();
            let values = retype(l.values(), field.data_type())?;
            Arc::new(FixedSizeListArray::try_new(
                Arc::clone(field),
                *size,
                values,
                l.nulls().cloned(),
            )?)
        }
        DataType::Map(field, sorted) => {
            let m = array.as_map();
            let entries: ArrayRef = Arc::new(m.entries().clone());
            let entries = retype(&entries, field.data_type())?;
            Arc::new(MapArray::try_new(
                Arc::clone(field),
                m.offsets().clone(),
                entries.as_struct().clone(),
                m.nulls().cloned(),
                *sorted,
            )?)
        }
        // Leaves and other types: the data under the wanted type, checked by arrow.
        _ => arrow::array::make_array(
            array
                .to_data()
                .into_builder()
                .data_type(to.clone())
                .build()?,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StringArray};
    use arrow::datatypes::{Field, Fields};
    use std::collections::HashMap;

    #[test]
    fn nested_fields_take_the_wanted_names_and_metadata() {
        let inner = Fields::from(vec![
            Field::new("col-1", DataType::Int32, true),
            Field::new("col-2", DataType::Utf8, true),
        ]);
        let s = StructArray::try_new(
            inner,
            vec![
                Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])),
                Arc::new(StringArray::from(vec!["a", "b", "c"])),
            ],
            None,
        )
        .unwrap();
        let item = Field::new("element", s.data_type().clone(), true);
        let list: ArrayRef = Arc::new(ListArray::new(
            Arc::new(item),
            arrow::buffer::OffsetBuffer::from_lengths([2, 0, 1]),
            Arc::new(s),
            None,
        ));
        let meta = HashMap::from([("delta.columnMapping.id".to_string(), "7".to_string())]);
        let wanted = DataType::List(Arc::new(Field::new(
            "item",
            DataType::Struct(Fields::from(vec![
                Field::new("a", DataType::Int32, true).with_metadata(meta),
                Field::new("b", DataType::Utf8, true),
            ])),
            true,
        )));
        assert!(list.data_type().equals_datatype(&wanted));
        let out = retype(&list, &wanted).unwrap();
        assert_eq!(out.data_type(), &wanted);
        let (got, was) = (out.as_list::<i32>(), list.as_list::<i32>());
        assert_eq!(got.offsets(), was.offsets());
        let (got, was) = (got.values().as_struct(), was.values().as_struct());
        assert_eq!(got.column(0).to_data(), was.column(0).to_data());
        assert_eq!(got.column(1).to_data(), was.column(1).to_data());
        // A type that differs in more than fields' names and metadata is refused.
        assert!(retype(
            &list,
            &DataType::List(Arc::new(Field::new("item", DataType::Int32, true)))
        )
        .is_err());
    }
}
