//! An Iceberg table read as it is now and as it was: a snapshot, a branch or tag, or a time.
//!
//! ```sh
//! cargo run --release -p rayquet-iceberg --example time_travel -- warehouse/db/events
//! cargo run --release -p rayquet-iceberg --example time_travel -- s3://lake/db/events snapshot=4242
//! cargo run --release -p rayquet-iceberg --example time_travel -- warehouse/db/events ref=v1
//! cargo run --release -p rayquet-iceberg --example time_travel -- warehouse/db/events as_of=1767225600000
//! ```
//!
//! The location is a table directory (its `metadata/` folder is read for the newest metadata
//! file), a metadata JSON file, or a Hadoop table; `TableScan::from_catalog` (feature `rest`)
//! or `TableScan::from_table` take a table from a catalog. iceberg-rust plans, rayquet reads
//! every task (deletes applied) on all cores.
use rayquet::prelude::*;
use rayquet_iceberg::TableScan;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let location = args
        .next()
        .ok_or("usage: time_travel <table> [snapshot=ID | ref=NAME | as_of=MILLIS]")?;
    let mut scan = TableScan::open(location);
    let mut when = "the current snapshot".to_string();
    if let Some(arg) = args.next() {
        match arg.split_once('=') {
            Some(("snapshot", id)) => scan = scan.snapshot_id(id.parse()?),
            Some(("ref", name)) => scan = scan.reference(name),
            Some(("as_of", ms)) => scan = scan.as_of_timestamp(ms.parse()?),
            _ => return Err(format!("not snapshot=, ref= or as_of=: {arg}").into()),
        }
        when = arg;
    }
    let reader = scan.batch_size(65_536).build()?;
    println!("{when}: {}", reader.schema());
    let metrics = reader.metrics();
    let rows: usize = reader
        .map(|b| b.map(|b| b.num_rows()))
        .sum::<Result<_, _>>()?;
    let m = metrics.snapshot();
    println!(
        "{rows} rows ({} deleted rows skipped) from {} files",
        m.rows_deleted, m.files
    );
    Ok(())
}
