//! Replay of rayquet's fuzz corpora and past findings as ordinary tests (`tests/replay.rs`):
//! every file of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` is fed to
//! `rayquet::fuzzing::<target>`, the same check the cargo-fuzz target runs under libFuzzer,
//! so CI (stable, the README's test command) keeps every finding fixed. No library code.
