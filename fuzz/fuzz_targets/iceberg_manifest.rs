//! An Iceberg manifest list or manifest (Avro) through rayquet-iceberg's integrity check, then
//! iceberg-rust's parsing of what it accepted. The check is
//! `rayquet_iceberg::fuzzing::manifest` (replayed by `crates/fuzz-replay`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rayquet_iceberg::fuzzing::manifest(data));
