//! A Delta deletion vector (inline, or a slice of a DV file) read as a scan reads it, its
//! cardinality checked, against the roaring crate's reading of the same bitmap. The check is
//! `rayquet_delta::fuzzing::deletion_vector` (replayed by `crates/fuzz-replay`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rayquet_delta::fuzzing::deletion_vector(data));
