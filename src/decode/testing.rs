//! Test helpers the decoders' tests share: row selections and corrupted copies of files.

use parquet::arrow::arrow_reader::{RowSelection, RowSelector};

/// The parquet-testing files' `data/` folder.
pub(crate) const DATA: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/parquet-testing/data"
);

/// Runs of `run` rows, selected and skipped in turn.
pub(crate) fn alternating(rows: usize, run: usize) -> RowSelection {
    let mut v = Vec::new();
    let mut at = 0;
    while at < rows {
        let n = run.min(rows - at);
        v.push(if v.len() % 2 == 0 {
            RowSelector::select(n)
        } else {
            RowSelector::skip(n)
        });
        at += n;
    }
    RowSelection::from(v)
}

/// `original` with one to three bits flipped at random after its magic (pages, their headers
/// and the footer alike), drawn from `seed`.
pub(crate) fn flip_bits(original: &[u8], seed: &mut u64) -> Vec<u8> {
    let mut bytes = original.to_vec();
    for _ in 0..1 + *seed % 3 {
        *seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let at = 4 + (*seed >> 33) as usize % (bytes.len() - 8);
        bytes[at] ^= 1 << ((*seed >> 20) % 8);
    }
    bytes
}
