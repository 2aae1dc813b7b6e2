//! The validators: thrift walkers (metadata, page headers) before parquet's decoders, and the
//! page checks of one column chunk before rayquet's pooled page reader decompresses it.
//! The check is `rayquet::fuzzing::validate`, which the replay tests (`crates/fuzz-replay`) also run.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rayquet::fuzzing::validate(data));
