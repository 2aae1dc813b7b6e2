//! A query spread over workers: two workers on loopback ports in this process, a coordinator
//! that plans and deals the scan's units to them, over datafusion-distributed's Arrow Flight.
//!
//! ```sh
//! cargo run --release -p rayquet-datafusion --example distributed -- /data/lineitem/
//! ```
//!
//! In production each worker is its own machine running `rayquet worker --listen ...
//! --token-file ...` (or [`rayquet_datafusion::guarded_worker`] + `serve_guarded`: TLS, a
//! bearer token, limits); [`rayquet_datafusion::serve`], used here, runs any plan it is sent
//! and is for a trusted network only. Units carry no credentials: each worker reads through
//! its own stores.
use std::sync::Arc;

use rayquet::ScanOptions;
use rayquet_datafusion::{distributed_session, serve, RayquetTable};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let location = std::env::args()
        .nth(1)
        .ok_or("usage: distributed <parquet file, directory or URL> [SQL over table t]")?;
    let sql = std::env::args()
        .nth(2)
        .unwrap_or_else(|| "SELECT count(*) FROM t".to_string());
    // Two workers, each on a free loopback port.
    let mut workers = Vec::new();
    for _ in 0..2 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        workers.push(format!("http://{}", listener.local_addr()?).parse()?);
        tokio::spawn(serve(listener, ScanOptions::new()));
    }
    let ctx = distributed_session(workers, ScanOptions::new())?;
    // `require_remote`: fail rather than read locally if the plan would not use the workers.
    let table = RayquetTable::parquet(&location, ScanOptions::new())?.require_remote(true);
    ctx.register_table("t", Arc::new(table))?;
    ctx.sql(&sql).await?.show().await?;
    Ok(())
}
