//! Filters, row selections and the row index on one file: what each reads and skips.
//!
//! ```sh
//! cargo run --release --example filters            # writes a demo file to the temp directory
//! ```
//!
//! A filter is exact (every row delivered matches) and prunes: row groups whose statistics
//! cannot match are never fetched, nor pages whose page index cannot, and the other columns'
//! pages only where rows match (late materialization). A row selection reads given rows of a
//! file (Iceberg-style position lists, a previous query's hits); the row index says where each
//! delivered row sits in its file.
use std::sync::Arc;

use rayquet::prelude::*;
use rayquet::reexports::{arrow, parquet};
use rayquet::{RowSelection, RowSelector, Scan};

use arrow::array::{Array, Int32Array, Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1M rows in 10 row groups: `id` ascending (statistics prune on it), `x` = id % 7.
    let path = std::env::temp_dir().join("rayquet-example-filters.parquet");
    let rows = 1_000_000i64;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("x", DataType::Int32, false),
    ]));
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(100_000))
        .build();
    let mut w = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&path)?,
        Arc::clone(&schema),
        Some(props),
    )?;
    let ids = Int64Array::from_iter_values(0..rows);
    let xs = Int32Array::from_iter_values((0..rows).map(|i| (i % 7) as i32));
    w.write(&RecordBatch::try_new(
        schema,
        vec![Arc::new(ids), Arc::new(xs)],
    )?)?;
    w.close()?;
    let file = path.display().to_string();

    // A typed filter (or, with the `sql` feature, Expr::parse_sql("x = 3 AND id < 1000")).
    let reader = Scan::new(&file)?
        .filter(col("x").eq(3).and(col("id").lt(1000)))
        .columns(["id"])
        .build()?;
    let metrics = reader.metrics();
    let n: usize = reader
        .map(|b| b.map(|b| b.num_rows()))
        .sum::<Result<_, _>>()?;
    let m = metrics.snapshot();
    println!(
        "filter: {n} rows; {} of {} row groups pruned by statistics",
        m.row_groups_pruned,
        m.row_groups + m.row_groups_pruned
    );
    assert_eq!(n as i64, (0..1000).filter(|i| i % 7 == 3).count() as i64);

    // A row selection: rows 10..15 and 500_000..500_003, with each row's position.
    let selection = RowSelection::from(vec![
        RowSelector::skip(10),
        RowSelector::select(5),
        RowSelector::skip(500_000 - 15),
        RowSelector::select(3),
    ]);
    let reader = Scan::new(&file)?
        .select_rows(file.clone(), selection)
        .row_index("pos")
        .build()?;
    for batch in reader {
        let batch = batch?;
        let pos = batch
            .column_by_name("pos")
            .and_then(|c| c.as_any().downcast_ref::<Int64Array>())
            .expect("the row index column");
        let id = batch
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .expect("ids");
        for i in 0..batch.num_rows() {
            println!("selected: id {} at position {}", id.value(i), pos.value(i));
            assert_eq!(id.value(i), pos.value(i));
        }
    }
    Ok(())
}
