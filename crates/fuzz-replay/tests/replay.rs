//! Every committed fuzz input replayed through the check of its target (`rayquet::fuzzing`):
//! the corpora `fuzz/corpus/<target>/` (seeds from the parquet-testing files and what the
//! fuzzers found that adds coverage) and the past findings `fuzz/regressions/<target>/` (each
//! a crash or mismatch once, fixed since). A check panics on a mismatch, so a test fails
//! naming the file.
//!
//! `write_seeds` (ignored) extracts the seed corpora from Parquet files: `fuzz/seeds.sh`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};

/// The system allocator, refusing any single allocation over 512 MiB (the process aborts),
/// as `-malloc_limit_mb=512` makes it a finding under libFuzzer: an allocation sized by a
/// count a file claims fails the replay too.
struct Limited;

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

#[global_allocator]
static ALLOC: Limited = Limited;

/// The `fuzz/` folder of the repository.
fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

/// Feed every file of the corpus and the regressions of `target` to `check`; returns how
/// many there were.
fn replay(target: &str, check: fn(&[u8])) -> usize {
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

#[test]
fn snappy() {
    assert!(replay("snappy", rayquet::fuzzing::snappy) > 0);
}

#[test]
fn rle() {
    assert!(replay("rle", rayquet::fuzzing::rle) > 0);
}

#[test]
fn validate() {
    assert!(replay("validate", rayquet::fuzzing::validate) > 0);
}

#[test]
fn direct() {
    let n = replay("direct", rayquet::fuzzing::direct);
    let compared = rayquet::fuzzing::direct_compared();
    println!("direct: {compared} of {n} compared with parquet's reader");
    // The seeds alone (two selections of each small parquet-testing file the direct reader
    // reads) compare dozens.
    assert!(
        compared >= 20,
        "direct: only {compared} of {n} inputs compared"
    );
}

/// Writes the seed corpora: `RAYQUET_SEEDS_FROM` (a folder of Parquet files) to
/// `RAYQUET_SEEDS_TO/<target>/` (`fuzz/seeds.sh` runs it).
#[test]
#[ignore = "writes files: run by fuzz/seeds.sh"]
fn write_seeds() {
    let from = std::env::var("RAYQUET_SEEDS_FROM").expect("RAYQUET_SEEDS_FROM");
    let to = PathBuf::from(std::env::var("RAYQUET_SEEDS_TO").expect("RAYQUET_SEEDS_TO"));
    let max_file: usize = std::env::var("RAYQUET_SEEDS_MAX_FILE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(32 << 10);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&from)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    files.sort();
    let mut count = std::collections::BTreeMap::<&str, usize>::new();
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let stem = f.file_stem().unwrap().to_string_lossy().to_string();
        for (i, (target, seed)) in rayquet::fuzzing::seeds(&bytes, max_file)
            .into_iter()
            .enumerate()
        {
            let dir = to.join(target);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(format!("{stem}-{i}")), seed).unwrap();
            *count.entry(target).or_default() += 1;
        }
    }
    println!("seeds: {count:?}");
}
