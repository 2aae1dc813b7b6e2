//! Scan a directory, file or URL with rayquet and print what it read.
//!
//! ```sh
//! cargo run --release --example scan                      # a small generated dataset
//! cargo run --release --example scan -- /data/lineitem/ l_orderkey,l_extendedprice
//! cargo run --release --example scan -- s3://bucket/table/
//! ```
use rayquet::ScanBuilder;
use std::time::Instant;

use rayquet::Scan;
use rayquet_gen::{generate, GenOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let target = match args.next() {
        Some(t) => t,
        None => {
            // No input: write a small deterministic dataset next to the build.
            let dir = std::env::temp_dir().join("rayquet-example");
            if !dir.exists() {
                let opts = GenOptions {
                    files: 4,
                    row_groups: 2,
                    rows_per_row_group: 50_000,
                    ..GenOptions::default()
                };
                generate(&dir, &opts)?;
            }
            dir.display().to_string()
        }
    };
    let mut scan = Scan::new(&target)?.batch_size(8192);
    if let Some(cols) = args.next() {
        scan = scan.columns(cols.split(','));
    }

    let start = Instant::now();
    let reader = scan.build()?;
    println!("schema: {}", reader.schema());
    let metrics = reader.metrics();
    let (mut rows, mut batches) = (0usize, 0usize);
    for batch in reader {
        let batch = batch?;
        rows += batch.num_rows();
        batches += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    let m = metrics.snapshot();
    println!(
        "{rows} rows in {batches} batches, {:.3} s ({:.0} rows/s); {} requests, {} bytes fetched, peak buffered {} bytes",
        secs,
        rows as f64 / secs,
        m.requests,
        m.bytes_fetched,
        m.peak_buffered_bytes
    );
    Ok(())
}
