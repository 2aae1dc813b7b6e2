//! rayquet-iceberg's tests, one binary: tables written by iceberg-rust and by hand from the
//! spec (v1, v2, v3), compared with iceberg-rust's own read; planning; damaged metadata.

mod iceberg_fixtures;
mod iceberg_integrity;
mod iceberg_smoke;
mod iceberg_v3;
mod plan;
mod scans;
