//! RLE / bit-packing hybrid streams: `decode::rle::decode` and its `Cursor` (next, skip,
//! skip_sum) against a bit-by-bit reference decoder.
//! The check is `rayquet::fuzzing::rle`, which the replay tests (`crates/fuzz-replay`) also run.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| rayquet::fuzzing::rle(data));
