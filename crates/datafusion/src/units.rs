//! Units below the file: a Parquet file's row groups cut into runs of about a target size, as
//! DataFusion's file scan repartitioning cuts files into byte ranges, planned from the footers
//! the coordinator read ([`crate::meta`]), so a large file is spread over partitions and
//! workers.
//!
//! Invariants: the runs of a file are consecutive, disjoint and cover every row group once; no
//! run is empty; a file is cut into at most as many runs as it has row groups.

use std::ops::Range;

use crate::meta::RowGroupInfo;

/// How a table's files are cut into units.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizing {
    /// Compressed bytes of the columns read, per unit (about).
    pub unit_bytes: u64,
    /// Units wanted for the whole table at least (the partitions and workers that should all
    /// get work), as far as row groups allow.
    pub min_units: usize,
}

/// Bytes of `columns` (indices into the table's file columns) in `rg`.
pub(crate) fn read_bytes(rg: &RowGroupInfo, columns: &[usize]) -> u64 {
    columns
        .iter()
        .map(|&c| rg.bytes.get(c).copied().unwrap_or(0))
        .sum()
}

/// The runs of row groups of each file (`files[i]`: its row groups' bytes of the columns read),
/// cut so that each run holds about `sizing.unit_bytes`, and the table at least
/// `sizing.min_units` runs where its files have that many row groups. A file of one run is
/// read whole.
pub(crate) fn split_files(files: &[Vec<u64>], sizing: Sizing) -> Vec<Vec<Range<usize>>> {
    let total: u64 = files.iter().flatten().sum();
    let target = sizing.unit_bytes.max(1);
    // Units by size, then as many more as the minimum asks, given to the largest files first.
    let mut counts: Vec<usize> = files
        .iter()
        .map(|f| {
            let bytes: u64 = f.iter().sum();
            (bytes.div_ceil(target) as usize).clamp(1, f.len().max(1))
        })
        .collect();
    let mut have: usize = counts.iter().sum();
    while have < sizing.min_units && total > 0 {
        // The file whose runs are largest and can still be cut.
        let pick = (0..files.len())
            .filter(|&i| counts[i] < files[i].len())
            .max_by_key(|&i| files[i].iter().sum::<u64>() / counts[i] as u64);
        let Some(i) = pick else { break };
        counts[i] += 1;
        have += 1;
    }
    files.iter().zip(counts).map(|(f, n)| split(f, n)).collect()
}

/// `bytes` (one entry per row group) cut into `n` consecutive runs of about equal bytes (fewer
/// when some row groups are larger than a share).
pub(crate) fn split(bytes: &[u64], n: usize) -> Vec<Range<usize>> {
    let len = bytes.len();
    if len == 0 {
        return vec![];
    }
    let n = n.clamp(1, len);
    let total: u64 = bytes.iter().sum();
    let mut runs = Vec::with_capacity(n);
    let mut start = 0;
    let mut acc = 0u64;
    for (i, &b) in bytes.iter().enumerate() {
        acc += b;
        let left_groups = len - (i + 1);
        let runs_after = n - runs.len() - 1;
        // Close the run when it reached its share of the bytes, or when the row groups left
        // are only just enough for the runs still to come.
        let share = total * (runs.len() as u64 + 1) / n as u64;
        let must = left_groups == runs_after;
        if runs_after > 0 && (acc >= share || must) && i + 1 < len {
            runs.push(start..i + 1);
            start = i + 1;
        }
    }
    runs.push(start..len);
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(bytes: &[u64], runs: &[Range<usize>]) {
        let mut next = 0;
        for r in runs {
            assert!(r.start == next && r.end > r.start, "{runs:?}");
            next = r.end;
        }
        assert_eq!(next, bytes.len(), "{runs:?} covers every row group");
    }

    #[test]
    fn runs_cover_every_row_group_once() {
        let cases: Vec<(Vec<u64>, usize)> = vec![
            (vec![10; 53], 8),
            (vec![10; 53], 1),
            (vec![10; 53], 53),
            (vec![10; 53], 100),
            (vec![1, 100, 1, 1, 1], 3),
            (vec![100, 1, 1, 1, 1], 5),
            (vec![0, 0, 0], 2),
            (vec![5], 4),
        ];
        for (bytes, n) in cases {
            let runs = split(&bytes, n);
            check(&bytes, &runs);
            assert!(runs.len() <= n.min(bytes.len()), "{bytes:?} {n}: {runs:?}");
        }
        assert_eq!(split(&[10; 53], 8).len(), 8);
        assert_eq!(split(&[0, 0, 0], 2).len(), 2);
        assert!(split(&[], 3).is_empty());
        // About equal shares.
        let runs = split(&[10; 40], 4);
        assert_eq!(runs, vec![0..10, 10..20, 20..30, 30..40]);
    }

    #[test]
    fn files_split_by_size_and_minimum() {
        let sizing = |unit_bytes, min_units| Sizing {
            unit_bytes,
            min_units,
        };
        // One large file: cut by size.
        let runs = split_files(&[vec![4; 53]], sizing(40, 1));
        assert_eq!(runs[0].len(), 6);
        // Small files stay whole.
        let runs = split_files(&[vec![1; 3], vec![1; 2]], sizing(100, 2));
        assert_eq!(runs.iter().map(Vec::len).collect::<Vec<_>>(), vec![1, 1]);
        // The minimum cuts the largest file.
        let runs = split_files(&[vec![1; 2], vec![10; 8]], sizing(1000, 4));
        assert_eq!(runs.iter().map(Vec::len).collect::<Vec<_>>(), vec![1, 3]);
        // ... as far as row groups allow.
        let runs = split_files(&[vec![10], vec![10]], sizing(1, 8));
        assert_eq!(runs.iter().map(Vec::len).collect::<Vec<_>>(), vec![1, 1]);
        for (f, r) in [vec![4u64; 53]]
            .iter()
            .zip(split_files(&[vec![4; 53]], sizing(40, 9)))
        {
            check(f, &r);
        }
    }
}
