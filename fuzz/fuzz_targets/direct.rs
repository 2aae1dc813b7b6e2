//! The direct reader on one column chunk of a (mutated) Parquet file with a scattered row
//! selection, against parquet's reader: the same batches (each `validate_full`), or an error.
//! The check is `rayquet::fuzzing::direct`, which the replay tests (`crates/fuzz-replay`) also run.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rayquet::fuzzing::direct(data));
