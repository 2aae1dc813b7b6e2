//! A Delta table's logical rows, now, at a version, or as of a time.
//!
//! ```sh
//! cargo run --release -p rayquet-delta --example versions -- /data/events
//! cargo run --release -p rayquet-delta --example versions -- s3://lake/events version=12
//! cargo run --release -p rayquet-delta --example versions -- /data/events as_of=1767225600000
//! ```
//!
//! delta-kernel replays the log (checkpoints, commits) through rayquet's engine; rayquet reads
//! the files on every core with their deletion vectors, partition values and column mapping
//! applied, and a filter skips files by their log statistics before any byte is read.
use rayquet::prelude::*;
use rayquet_delta::TableScan;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let location = args
        .next()
        .ok_or("usage: versions <table> [version=N | as_of=MILLIS] [filter (SQL)]")?;
    let mut scan = TableScan::open(location);
    for arg in args {
        match arg.split_once('=') {
            Some(("version", v)) => scan = scan.version(v.parse()?),
            Some(("as_of", ms)) => scan = scan.as_of_timestamp(ms.parse()?),
            _ => scan = scan.filter(Expr::parse_sql(&arg)?),
        }
    }
    let reader = scan.build()?;
    println!("{}", reader.schema());
    let metrics = reader.metrics();
    let rows: usize = reader
        .map(|b| b.map(|b| b.num_rows()))
        .sum::<Result<_, _>>()?;
    let m = metrics.snapshot();
    println!(
        "{rows} rows from {} files ({} files skipped by the log's statistics, {} rows deleted)",
        m.files, m.files_pruned, m.rows_deleted
    );
    Ok(())
}
