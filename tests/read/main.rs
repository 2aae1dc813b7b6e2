//! The core's reading tests, one binary (each module was its own test file; one binary links
//! once): rows and types against parquet's reader, filters, tasks, footers, Hive folders, the
//! pipeline's bounds. `cargo test --release --test read filter::` runs one module.

mod conformance;
mod filter;
mod footer_cache;
mod generated;
mod hive;
mod latency;
mod layers;
mod pipeline;
mod requests;
mod stream;
mod tasks;
mod union;
mod writers;
