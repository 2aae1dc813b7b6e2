//! File tasks: a table's files read as units of their own (columns by field id, a partition
//! value as a constant, the row position, deleted rows), as a table format plans them.
//!
//! ```sh
//! cargo run --release --example tasks              # writes two demo files to the temp directory
//! ```
//!
//! Iceberg and Delta layers are built this way (`rayquet-iceberg`, `rayquet-delta`): the format
//! plans its data files, each becomes a [`FileTask`], and one scan reads them on every core,
//! pulling tasks lazily. Each batch can say which task it came from ([`rayquet::TaggedReader`]).
use std::collections::HashMap;
use std::sync::Arc;

use rayquet::prelude::*;
use rayquet::reexports::{arrow, parquet};

use arrow::array::{Array, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};

/// A field carrying a Parquet field id, as Iceberg writers write them.
fn with_id(field: Field, id: i32) -> Field {
    field.with_metadata(HashMap::from([(
        "PARQUET:field_id".to_string(),
        id.to_string(),
    )]))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Two files; the second was written after the column was renamed (`value` -> `payload`):
    // the same field id 2, so it is found by id, not by name.
    let dir = std::env::temp_dir().join("rayquet-example-tasks");
    std::fs::create_dir_all(&dir)?;
    let mut files = Vec::new();
    for (i, name) in ["value", "payload"].into_iter().enumerate() {
        let schema = Arc::new(Schema::new(vec![
            with_id(Field::new("id", DataType::Int64, false), 1),
            with_id(Field::new(name, DataType::Utf8, true), 2),
        ]));
        let ids = Int64Array::from_iter_values((0..1000).map(|r| i as i64 * 1000 + r));
        let values = StringArray::from_iter_values((0..1000).map(|r| format!("v{r}")));
        let path = dir.join(format!("part-{i}.parquet"));
        let mut w = parquet::arrow::ArrowWriter::try_new(
            std::fs::File::create(&path)?,
            schema.clone(),
            None,
        )?;
        w.write(&RecordBatch::try_new(
            schema,
            vec![Arc::new(ids), Arc::new(values)],
        )?)?;
        w.close()?;
        files.push(path.display().to_string());
    }

    // The table's schema today: `payload` (id 2), the partition `region`, the row position.
    let schema = Arc::new(Schema::new(vec![
        with_id(Field::new("id", DataType::Int64, false), 1),
        with_id(Field::new("payload", DataType::Utf8, true), 2),
        Field::new("region", DataType::Utf8, true),
        Field::new("_pos", DataType::Int64, false),
    ]));
    let tasks = files.into_iter().enumerate().map(|(i, path)| {
        FileTask::new(path)
            .columns([
                ColumnSource::file(),
                ColumnSource::file(),
                ColumnSource::constant(if i == 0 { "eu" } else { "us" }),
                ColumnSource::RowIndex,
            ])
            .deleted_rows([0, 1, 2]) // position deletes: the first three rows of each file
            .tag(format!("file-{i}"))
    });
    let mut reader = rayquet::Scan::from_tasks(schema, tasks).build()?.tagged();
    let mut total = 0;
    while let Some(batch) = reader.next() {
        let batch = batch?;
        let task = reader.task().expect("a batch came from a task");
        let payload = batch
            .column(1)
            .as_any()
            .downcast_ref::<StringArray>()
            .expect("strings");
        let pos = batch
            .column(3)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("positions");
        println!(
            "{:?}: {} rows, first payload {:?} at position {}",
            task.tag,
            batch.num_rows(),
            payload.value(0),
            pos.value(0)
        );
        total += batch.num_rows();
    }
    assert_eq!(total, 2 * (1000 - 3));
    Ok(())
}
