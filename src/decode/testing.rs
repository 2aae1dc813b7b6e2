//! Test helpers the decoders' tests share: row selections and corrupted copies of files.

use bytes::Bytes;
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use parquet::file::metadata::ParquetMetaData;

use crate::io::chunk::SparseChunk;
use crate::validate::check_row_group;
use crate::validate::pages::{PageChecks, PageSizes};

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

/// The whole of file `bytes` as one fetched chunk, and the row groups whose `leaves` pass
/// rayquet's page checks (as a scan would read them, in batches of `batch`): each one's index,
/// row count and page sizes. Row groups the checks refuse are left out.
pub(crate) fn checked_row_groups(
    (md, name): (&ParquetMetaData, &str),
    bytes: &Bytes,
    leaves: &[usize],
    batch: usize,
) -> (SparseChunk, Vec<(usize, usize, Vec<PageSizes>)>) {
    let mut chunk = SparseChunk::new(bytes.len() as u64);
    chunk.insert(0, bytes.clone());
    let groups = (0..md.num_row_groups())
        .filter_map(|rg| {
            let rows = md.row_group(rg).num_rows().max(0) as usize;
            let limits = PageChecks::new(1 << 30, batch);
            let sizes = check_row_group((md, name), rg, leaves, &chunk, limits).ok()?;
            Some((rg, rows, sizes))
        })
        .collect();
    (chunk, groups)
}
