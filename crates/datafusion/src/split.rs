//! Units below the file for Iceberg and Delta tables: a data file larger than a unit is cut
//! into runs of its row groups, as a Parquet dataset's files are ([`crate::units`]), from its
//! footer, read at planning (the table's metadata says nothing of row groups). A table of a
//! few large files (compacted tables aim at 512 MB-1 GB files) is then spread over the
//! partitions in one process and over the workers.
//!
//! Invariants: a file's runs are consecutive, disjoint and cover each of its row groups once
//! (each run a unit with `row_groups`; row positions, and so deletes, still count every row of
//! the file); a file whose footer cannot be read here (a store only the table's own
//! configuration reaches), or that is already a byte range of a file, stays one unit.

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
    // The footers to read (on the IO runtime's blocking threads, 16 at a time).
    let mut jobs = units
        .iter()
        .map(|(unit, bytes)| {
            let cut = few || weigh(*bytes) > sizing.unit_bytes;
            cut.then(|| locate(unit)).flatten().map(|at| (at, *bytes))
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
        .map(|(g, (_, bytes))| match g {
            Some(g) if !g.is_empty() => g.clone(),
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
        for run in runs {
            let share: u64 = groups[run.clone()].iter().sum();
            // The unit's bytes in proportion, as the planner deals them.
            let b = (bytes as u128 * share as u128 / whole.max(1) as u128) as u64;
            out.push((unit.with_row_groups(run), b.max(1)));
        }
    }
    out
}
