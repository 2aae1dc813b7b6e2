//! The `rayquet` binary run as a user runs it: `gen` and `scan` of files (`scan`), and of
//! Iceberg and Delta tables (`tables`), and of Iceberg tables through REST, SQL and Glue catalogs
//! (`catalog`). `sql` and `worker` are in `tests/sql.rs` (feature
//! `datafusion`); the real writers' tables in `tests/real_writers.rs`.

#[cfg(any(feature = "rest", feature = "sql-catalog", feature = "glue-catalog"))]
mod catalog;
mod scan;
mod tables;
