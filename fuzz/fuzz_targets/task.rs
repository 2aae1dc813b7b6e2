//! A file task as a distributed worker receives it (JSON), read against a 300-row file:
//! parquet's rows less the row groups and deleted rows the task leaves out, or a clean error;
//! no panic in rayquet's own code, no allocation over `-malloc_limit_mb`. The check is
//! `rayquet::fuzzing::task`, which the replay tests (`crates/fuzz-replay`) also run.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rayquet::fuzzing::task(data));
