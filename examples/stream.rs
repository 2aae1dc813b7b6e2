//! Read a scan from async code: `ScanReader::into_stream` gives a `futures::Stream` whose polls
//! never block the runtime's workers (rayquet decodes on its own pool), so two scans run
//! side by side on a one-thread tokio runtime.
//!
//! ```sh
//! cargo run --release --example stream                      # a small generated dataset
//! cargo run --release --example stream -- /data/lineitem/ l_orderkey,l_extendedprice
//! ```
use std::time::Instant;

use futures::StreamExt;
use rayquet::{Scan, ScanBuilder};
use rayquet_gen::{generate, GenOptions};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let target = match args.next() {
        Some(t) => t,
        None => {
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
    let columns: Option<Vec<String>> = args
        .next()
        .map(|c| c.split(',').map(String::from).collect());

    // `build()` of a plain scan lists its input and reads the first footer: blocking work,
    // so it goes to tokio's blocking pool. The stream it gives never blocks.
    let open = |target: String, columns: Option<Vec<String>>| {
        tokio::task::spawn_blocking(move || {
            let mut scan = Scan::new(&target)?;
            if let Some(cols) = columns {
                scan = scan.columns(cols);
            }
            scan.build().map(|reader| reader.into_stream())
        })
    };
    let start = Instant::now();
    let (a, b) = tokio::join!(open(target.clone(), columns.clone()), open(target, columns));
    let (a, b) = (a??, b??);
    println!("schema: {}", a.schema());

    // Both scans on this one thread: each poll takes what is ready and returns.
    let count = |mut stream: rayquet::ScanStream| async move {
        let mut rows = 0usize;
        while let Some(batch) = stream.next().await {
            rows += batch?.num_rows();
        }
        Ok::<_, rayquet::Error>(rows)
    };
    let (rows_a, rows_b) = tokio::join!(count(a), count(b));
    let (rows_a, rows_b) = (rows_a?, rows_b?);
    assert_eq!(rows_a, rows_b, "the same scan twice");
    println!(
        "two scans of {rows_a} rows each in {:.3} s, on one runtime thread",
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
