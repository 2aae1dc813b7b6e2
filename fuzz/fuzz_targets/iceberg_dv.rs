//! An Iceberg `deletion-vector-v1` blob and the cardinality its manifest claims, through
//! rayquet-iceberg's parse and checks, against the roaring crate's reading of the same vector.
//! The check is `rayquet_iceberg::fuzzing::deletion_vector` (replayed by `crates/fuzz-replay`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rayquet_iceberg::fuzzing::deletion_vector(data));
