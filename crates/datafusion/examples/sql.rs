//! SQL over a Parquet dataset read by rayquet, in one process.
//!
//! ```sh
//! cargo run --release -p rayquet-datafusion --example sql          # writes a demo dataset
//! cargo run --release -p rayquet-datafusion --example sql -- s3://bucket/trips/ "SELECT count(*) FROM t"
//! ```
//!
//! `RayquetTable` is a DataFusion `TableProvider`: DataFusion plans and runs the query, rayquet
//! scans (IO on its tokio runtime, decoding on its rayon pool), with the query's filters pushed
//! into the scan where they translate, and statistics from the footers for the planner.
use std::sync::Arc;

use rayquet::reexports::arrow::array::{Int64Array, RecordBatch, StringArray};
use rayquet::reexports::arrow::datatypes::{DataType, Field, Schema};
use rayquet::ScanOptions;
use rayquet_datafusion::{local_session, RayquetTable};

/// Four files of 100,000 trips each under the temp directory; returns the directory.
fn demo() -> Result<String, Box<dyn std::error::Error>> {
    let dir = std::env::temp_dir().join("rayquet-example-sql");
    std::fs::create_dir_all(&dir)?;
    let schema = Arc::new(Schema::new(vec![
        Field::new("vendor", DataType::Utf8, false),
        Field::new("fare", DataType::Int64, false),
    ]));
    for f in 0..4i64 {
        let n = 100_000i64;
        let vendors =
            StringArray::from_iter_values((0..n).map(|i| ["a", "b", "c"][(i % 3) as usize]));
        let fares = Int64Array::from_iter_values((0..n).map(|i| (i * 7 + f) % 50));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(vendors), Arc::new(fares)])?;
        let file = std::fs::File::create(dir.join(format!("part-{f}.parquet")))?;
        let mut w = parquet::arrow::ArrowWriter::try_new(file, schema.clone(), None)?;
        w.write(&batch)?;
        w.close()?;
    }
    Ok(format!("{}/", dir.display()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let location = match args.next() {
        Some(l) => l,
        None => demo()?,
    };
    let sql = args.next().unwrap_or_else(|| {
        "SELECT vendor, count(*) AS trips, avg(fare) AS fare FROM t WHERE fare > 10 \
         GROUP BY vendor ORDER BY vendor"
            .to_string()
    });
    let ctx = local_session();
    ctx.register_table(
        "t",
        Arc::new(RayquetTable::parquet(&location, ScanOptions::new())?),
    )?;
    ctx.sql(&sql).await?.show().await?;
    Ok(())
}
