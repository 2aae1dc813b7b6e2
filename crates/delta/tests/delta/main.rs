//! rayquet-delta's tests, one binary: tables written by delta-kernel and Delta's Spark-written
//! golden tables, compared with the kernel's own read; planning; faults; damaged logs.

mod delta_faults;
mod delta_fixtures;
mod delta_integrity;
mod plan;
mod scans;
