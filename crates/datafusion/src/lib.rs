//! rayquet scans as DataFusion tables: SQL over Parquet datasets, Iceberg tables and Delta
//! tables read by rayquet (IO on its tokio runtime, decoding on its rayon pool), in this
//! process or sharded across machines by
//! [datafusion-distributed](https://github.com/datafusion-contrib/datafusion-distributed).
//!
//! # In one process
//!
//! ```no_run
//! # async fn example() -> datafusion::error::Result<()> {
//! use std::sync::Arc;
//! use rayquet::ScanOptions;
//! use rayquet_datafusion::{local_session, RayquetTable};
//!
//! let ctx = local_session();
//! let trips = RayquetTable::parquet("s3://bucket/trips/", ScanOptions::new())?;
//! ctx.register_table("trips", Arc::new(trips))?;
//! ctx.sql("SELECT vendor, count(*) FROM trips WHERE fare > 10 GROUP BY vendor")
//!     .await?
//!     .show()
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! # Across machines
//!
//! Each worker machine runs [`guarded_worker`] + [`serve_guarded`] (or `rayquet worker
//! --listen 0.0.0.0:50051 --token-file ...`: see [`guard`] for what a worker refuses; [`serve`]
//! runs any plan it is sent, for a trusted network only); the
//! coordinator plans (listing, Iceberg planning, Delta log replay) and streams work units to
//! them: a Parquet file, an Iceberg task with its delete files, a Delta file with its deletion
//! vector. Units carry no credentials: every worker reads through the stores of its own
//! environment and options.
//!
//! ```no_run
//! # async fn example() -> datafusion::error::Result<()> {
//! use std::sync::Arc;
//! use rayquet::ScanOptions;
//! use rayquet_datafusion::{distributed_session, RayquetTable};
//!
//! let workers = vec!["http://10.0.0.5:50051".parse().unwrap(), "http://10.0.0.6:50051".parse().unwrap()];
//! let ctx = distributed_session(workers, ScanOptions::new())?;
//! let orders = RayquetTable::iceberg(rayquet_iceberg::TableScan::open("s3://lake/warehouse/orders"))?
//!     .require_remote(true);
//! ctx.register_table("orders", Arc::new(orders))?;
//! let batches = ctx.sql("SELECT status, sum(total) FROM orders GROUP BY status").await?.collect().await?;
//! # Ok(()) }
//! ```
//!
//! # Pieces
//!
//! | module | job |
//! | --- | --- |
//! | `table` | [`RayquetTable`]: the `TableProvider` (schema, filter pushdown, statistics) |
//! | `filter` | DataFusion expressions to rayquet's [`rayquet::Expr`], exact or not |
//! | `feed` | work units and the coordinator's lazy planner that deals them out |
//! | `order` | the order of a scan's rows where the files declare it and their row groups follow it |
//! | `split` | Iceberg and Delta files larger than a unit cut into runs of row groups |
//! | `stats` | what a scan node reports: the files' statistics narrowed by the pushed filters |
//! | `table_stats` | Iceberg and Delta scans' statistics from the table's own metadata |
//! | `spec` | what a scan node reads (`Plan`, `ScanSpec`): serializable, no credentials |
//! | `remote` | what a worker's scan nodes share: [`WorkerStats`], the roots units must lie under |
//! | `exec` | [`RayquetScanExec`]: one rayquet scan per output partition |
//! | `dynamic` | DataFusion's dynamic filters (a hash join's keys) evaluated by each unit's scan |
//! | `stream` | a rayquet scan as a DataFusion stream (polls its `ScanStream`; no thread waits) |
//! | `codec` | [`RayquetCodec`]: the node between processes, without credentials |
//! | `session` | [`local_session`], [`distributed_session`], [`collect_distributed`] |
//! | `statements` | several statements in one text ([`collect_sql`]) |
//! | `worker` | [`worker`], [`serve`], [`WorkerStats`] |

#![deny(missing_docs)]

#[cfg(feature = "catalog")]
mod catalog;
mod codec;
mod dynamic;
mod exec;
mod feed;
mod filter;
pub mod guard;
mod meta;
mod order;
mod remote;
mod session;
mod spec;
mod split;
mod statements;
mod stats;
mod stream;
mod table;
mod table_stats;
mod units;
mod worker;

#[cfg(feature = "catalog")]
pub use catalog::IcebergCatalog;
pub use codec::RayquetCodec;
pub use exec::RayquetScanExec;
pub use feed::{Planner, Unit};
pub use session::{
    collect_distributed, distributed_session, distributed_session_with, local_session,
    name_failed_workers, scan_nodes, worker_scans, WorkerScan, BROADCAST_BYTES, BROADCAST_ROWS,
};
pub use statements::{collect_sql, parse_statements};
pub use table::{RayquetTable, DEFAULT_UNIT_BYTES};
pub use worker::{
    guarded_worker, serve, serve_guarded, serve_worker, worker, WorkerStats, RECENT_UNITS,
};

/// DataFusion, datafusion-distributed and datafusion-proto, the versions this crate uses.
pub use datafusion;
pub use datafusion_distributed;
pub use datafusion_proto;
