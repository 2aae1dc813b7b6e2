//! Units below the file for Iceberg and Delta tables: a data file larger than a unit is cut
//! into runs of its row groups, as a Parquet dataset's files are ([`crate::units`]). Where an
//! Iceberg manifest records the file's split offsets (its row groups' first bytes, as
//! pyiceberg, Java Iceberg and iceberg-rust write them), the runs are planned from them and
//! become byte ranges of the file; otherwise from the file's footer, read at planning (a
//! Delta log says nothing of row groups). A table of a few large files (compacted tables aim
//! at 512 MB-1 GB files) is then spread over the partitions in one process and over the
//! workers.
//!
//! Invariants: a file's runs are consecutive, disjoint and cover each of its row groups once:
//! runs from a footer are units with `row_groups`; runs from split offsets are byte ranges
//! that partition the file's bytes from 0 to its size, and a row group is read by the range
//! holding its midpoint, so even offsets that are not row-group starts lose or repeat no row
//! group (they only unbalance the runs). Row positions, and so deletes, still count every row
//! of the file. A file whose footer cannot be read here (a store only the table's own
//! configuration reaches), or that is already a byte range of a file, stays one unit.

use std::ops::Range;
use std::sync::Arc;

use object_store::path::Path;
use object_store::ObjectStore;
use rayquet::ScanOptions;

use crate::feed::UnitKind;
use crate::units::{split_files, Sizing};

/// Where a unit's file is, when it is a whole file that may be cut: its store and path.
pub(crate) type Locate<'a> =
    dyn Fn(&UnitKind) -> Option<(Arc<dyn ObjectStore>, Path)> + Send + Sync + 'a;

/// `units` (with their bytes) with every whole file larger than a unit cut into runs of row
/// groups (every whole file, when the table has fewer files than `sizing.min_units`).
/// `fraction`: the share of a file's bytes the scan reads (its columns' share), by which a
/// file's bytes are weighed against `sizing.unit_bytes`.
pub(crate) async fn cut(
    units: Vec<(UnitKind, u64)>,
    options: &ScanOptions,
    locate: &Locate<'_>,
    fraction: f64,
    sizing: Sizing,
) -> Vec<(UnitKind, u64)> {
    let weigh = move |bytes: u64| ((bytes as f64) * fraction).ceil() as u64;
    let few = units.len() < sizing.min_units;
    // The footers to read (on the IO runtime's blocking threads, 16 at a time): none for a
    // file whose split offsets the table's metadata gives.
    let mut jobs = units
        .iter()
        .map(|(unit, bytes)| {
            let cut = few || weigh(*bytes) > sizing.unit_bytes;
            let footer = cut && unit.with_split_offsets().is_none();
            footer
                .then(|| locate(unit))
                .flatten()
                .map(|at| (at, *bytes))
        })
        .collect::<Vec<_>>()
        .into_iter()
        .peekable();
    let io = rayquet::layer::io_runtime(options);
    let mut groups: Vec<Option<Vec<u64>>> = Vec::with_capacity(units.len());
    while jobs.peek().is_some() {
        let batch: Vec<_> = jobs
            .by_ref()
            .take(16)
            .map(|job| {
                job.map(|((store, path), size)| {
                    io.spawn_blocking(move || {
                        let md = rayquet::read_metadata(store, path, Some(size)).ok()?;
                        Some(
                            md.row_groups()
                                .iter()
                                .map(|rg| weigh(rg.compressed_size().max(0) as u64).max(1))
                                .collect::<Vec<u64>>(),
                        )
                    })
                })
            })
            .collect();
        for read in batch {
            groups.push(match read {
                Some(handle) => handle.await.ok().flatten(),
                None => None,
            });
        }
    }
    // A file without its row groups is one group of its bytes (never cut).
    let files: Vec<Vec<u64>> = groups
        .iter()
        .zip(&units)
        .map(|(g, (unit, bytes))| match (g, unit.with_split_offsets()) {
            (_, Some(t)) => offset_groups(&t.split_offsets, t.size)
                .into_iter()
                .map(|b| weigh(b).max(1))
                .collect(),
            (Some(g), None) if !g.is_empty() => g.clone(),
            _ => vec![weigh(*bytes)],
        })
        .collect();
    let runs = split_files(&files, sizing);
    let mut out = Vec::with_capacity(units.len());
    for (((unit, bytes), runs), groups) in units.into_iter().zip(runs).zip(&files) {
        if runs.len() <= 1 {
            out.push((unit, bytes));
            continue;
        }
        let whole: u64 = groups.iter().sum();
        let count = groups.len();
        for run in runs {
            let share: u64 = groups[run.clone()].iter().sum();
            // The unit's bytes in proportion, as the planner deals them.
            let b = (bytes as u128 * share as u128 / whole.max(1) as u128) as u64;
            let cut = match unit.with_split_offsets() {
                Some(t) => {
                    let range = byte_range(&t.split_offsets, t.size, run, count);
                    UnitKind::Iceberg(rayquet_iceberg::TaskUnit {
                        start: range.start,
                        length: range.end - range.start,
                        split_offsets: Vec::new(),
                        ..t.clone()
                    })
                }
                None => unit.with_row_groups(run),
            };
            out.push((cut, b.max(1)));
        }
    }
    out
}

/// The bytes of each row group of a file of `size` bytes whose row groups start at `offsets`
/// (strictly increasing, below `size`): to the next one's start, the last to the file's end.
fn offset_groups(offsets: &[u64], size: u64) -> Vec<u64> {
    offsets
        .iter()
        .enumerate()
        .map(|(i, &o)| {
            offsets
                .get(i + 1)
                .copied()
                .unwrap_or(size)
                .saturating_sub(o)
        })
        .collect()
}

/// The bytes of a file of `size` bytes that a run of its `count` row groups (starting at
/// `offsets`) reads: from its first row group's start (0 for the first run) to the next run's
/// start (the file's size for the last). The runs of a file thus partition `0..size`.
fn byte_range(offsets: &[u64], size: u64, run: Range<usize>, count: usize) -> Range<u64> {
    let at = |i: usize| offsets.get(i).copied().unwrap_or(size);
    let start = match run.start {
        0 => 0,
        i => at(i),
    };
    let end = match run.end {
        e if e >= count => size,
        e => at(e),
    };
    start..end
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whole_file(size: u64, split_offsets: Vec<u64>) -> rayquet_iceberg::TaskUnit {
        rayquet_iceberg::TaskUnit {
            path: "file:///t/data/a.parquet".into(),
            size,
            start: 0,
            length: size,
            constants: Vec::new(),
            positions: Vec::new(),
            equality: Vec::new(),
            mapped: false,
            record_count: Some(1000),
            stats: Vec::new(),
            split_offsets,
            row_groups: None,
            deletion_vector: None,
            first_row_id: None,
            sequence_number: None,
        }
    }

    #[test]
    fn runs_of_split_offsets_partition_the_file() {
        let offsets = [4, 100, 250, 300];
        assert_eq!(offset_groups(&offsets, 400), vec![96, 150, 50, 100]);
        let ranges: Vec<_> = [0..1, 1..3, 3..4]
            .into_iter()
            .map(|run| byte_range(&offsets, 400, run, offsets.len()))
            .collect();
        assert_eq!(ranges, vec![0..100, 100..300, 300..400]);
        assert_eq!(byte_range(&offsets, 400, 0..4, 4), 0..400);
    }

    /// A whole Iceberg file with split offsets is cut into byte ranges that partition it, and
    /// its footer is never read (`locate`, the way to it, is not even asked); one without
    /// them and no reachable footer stays whole.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn iceberg_files_are_cut_at_their_split_offsets_without_footers() {
        let with = whole_file(400, vec![4, 100, 250, 300]);
        let without = rayquet_iceberg::TaskUnit {
            path: "file:///t/data/b.parquet".into(),
            ..whole_file(400, Vec::new())
        };
        let units = vec![UnitKind::iceberg(with), UnitKind::iceberg(without)];
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let locate = |_: &UnitKind| {
            asked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            None
        };
        let sizing = Sizing {
            unit_bytes: 100,
            min_units: 1,
        };
        let out = cut(units, &ScanOptions::new(), &locate, 1.0, sizing).await;
        // Only the file without offsets was located (and, unreachable, left whole).
        assert_eq!(asked.load(std::sync::atomic::Ordering::Relaxed), 1);
        let mut cuts = Vec::new();
        for (unit, bytes) in &out {
            let UnitKind::Iceberg(t) = unit else {
                panic!("an Iceberg unit: {unit:?}")
            };
            assert!(bytes >= &1 && t.row_groups.is_none() && t.split_offsets.is_empty());
            if t.path.ends_with("a.parquet") {
                cuts.push(t.start..t.start + t.length);
            } else {
                assert_eq!((t.start, t.length), (0, 400), "b.parquet stays whole");
            }
        }
        assert!(cuts.len() > 1, "cut: {cuts:?}");
        // Consecutive, from 0 to the file's size, each starting where a row group starts.
        assert_eq!(cuts.first().unwrap().start, 0);
        assert_eq!(cuts.last().unwrap().end, 400);
        assert!(cuts.windows(2).all(|w| w[0].end == w[1].start));
        assert!(cuts[1..].iter().all(|r| [100, 250, 300].contains(&r.start)));
    }
}
