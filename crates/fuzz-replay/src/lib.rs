//! Replay of rayquet's fuzz corpora and past findings as ordinary tests (`tests/replay.rs`
//! for the core's targets, `tests/tables.rs` for the table formats', feature `tables`, on by
//! default): every file of `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/` is fed to
//! the target's check (a `fuzzing` module's function), the same check the cargo-fuzz target
//! runs under libFuzzer, so CI (stable, the README's test command) keeps every finding fixed.
//! CI's dev-profile step replays the core's targets alone (`--no-default-features`), with
//! debug assertions on.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};

/// The system allocator, refusing any single allocation over 512 MiB (the process aborts),
/// as `-malloc_limit_mb=512` makes it a finding under libFuzzer: an allocation sized by a
/// count a file claims fails the replay too. Each test binary installs it.
pub struct Limited;

// SAFETY: forwards to `System`, or returns null (allocation failure) for a large request.
unsafe impl GlobalAlloc for Limited {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if layout.size() > 512 << 20 {
            return std::ptr::null_mut();
        }
        // SAFETY: the caller's contract, unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// The `fuzz/` folder of the repository.
pub fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Feed every file of the corpus and the regressions of `target` to `check`; returns how
/// many there were. A check that panics fails the caller, naming the file.
pub fn replay(target: &str, check: fn(&[u8])) -> usize {
    let mut n = 0;
    for dir in ["corpus", "regressions"] {
        let dir = fuzz_dir().join(dir).join(target);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
        files.sort();
        for f in files.iter().filter(|f| f.is_file()) {
            let data = std::fs::read(f).unwrap();
            if std::panic::catch_unwind(|| check(&data)).is_err() {
                panic!("{target}: {} fails its check", f.display());
            }
            n += 1;
        }
    }
    println!("{target}: {n} inputs replayed");
    n
}
