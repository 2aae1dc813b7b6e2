//! A Delta log file (commit, log compaction, JSON checkpoint) through rayquet-delta's strict
//! check. The check is `rayquet_delta::fuzzing::log` (replayed by `crates/fuzz-replay`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rayquet_delta::fuzzing::log(data));
