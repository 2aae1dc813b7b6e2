//! A whole scan of a (mutated) Parquet file, with and without a filter on one of its columns,
//! against parquet's reader: the same rows (the filter evaluated on parquet's batches), or an
//! error naming the file; no panic in rayquet's own code, no allocation over
//! `-malloc_limit_mb`. The check is `rayquet::fuzzing::scan`, which the replay tests
//! (`crates/fuzz-replay`) also run.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rayquet::fuzzing::scan(data));
