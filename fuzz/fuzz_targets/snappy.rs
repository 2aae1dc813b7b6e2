//! Snappy streams: rayquet's decompressor (`decode::snappy`, raw pointer reads and writes
//! in its fast loop) against the `snap` crate: the same bytes, or both refuse.
//! The check is `rayquet::fuzzing::snappy`, which the replay tests (`crates/fuzz-replay`) also run.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rayquet::fuzzing::snappy(data));
