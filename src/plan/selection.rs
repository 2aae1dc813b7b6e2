//! Row selections of one file: the task's row groups and byte range ([`excluded`]), the
//! caller's selection split per row group ([`split_selection`]), deleted rows as per row group
//! selections ([`deletes_by_row_group`]), a selection as sorted runs for testing pages
//! ([`SelectedRows`]), and the selection of a filter's kept runs ([`from_runs`],
//! [`from_masks`]).
//!
//! Invariants: a per row group selection spans exactly its row group's rows; a deleted row is
//! never selected; the row groups a byte range keeps are those whose midpoint lies in it.

use std::ops::Range;

use arrow::array::BooleanArray;
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use parquet::file::metadata::ParquetMetaData;
use roaring::RoaringTreemap;

use crate::error::{Error, ErrorKind, Result};
use crate::task::FileTask;

/// Per row group: whether the task's byte range or row group list leaves it out.
pub(crate) fn excluded(md: &ParquetMetaData, task: &FileTask, name: &str) -> Result<Vec<bool>> {
    let n = md.num_row_groups();
    let mut out = vec![false; n];
    if let Some(list) = &task.row_groups {
        if let Some(bad) = list.iter().find(|&&rg| rg >= n) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("the task asks for row group {bad} of a file with {n}"),
            )
            .with_path(name));
        }
        for (rg, x) in out.iter_mut().enumerate() {
            *x = !list.contains(&rg);
        }
    }
    if let Some(range) = &task.range {
        for (rg, x) in out.iter_mut().enumerate() {
            let r = md.row_group(rg);
            // Where the row group starts: its first column chunk (dictionary page first).
            let start = r
                .columns()
                .iter()
                .map(|c| c.dictionary_page_offset().unwrap_or(c.data_page_offset()))
                .filter(|o| *o >= 0)
                .min()
                .or(r.file_offset())
                .unwrap_or(0)
                .max(0) as u64;
            let mid = start + r.compressed_size().max(0) as u64 / 2;
            if !range.contains(&mid) {
                *x = true;
            }
        }
    }
    Ok(out)
}

/// The caller's selection over a whole file, split per row group (each exactly as long).
pub(crate) fn split_selection(
    md: &ParquetMetaData,
    mut sel: RowSelection,
    name: &str,
) -> Result<Vec<Option<RowSelection>>> {
    let total: i64 = md.row_groups().iter().map(|rg| rg.num_rows().max(0)).sum();
    let spans = sel.row_count() + sel.skipped_row_count();
    if spans as i64 > total {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("the row selection spans {spans} rows but the file has {total}"),
        )
        .with_path(name));
    }
    Ok(md
        .row_groups()
        .iter()
        .map(|rg| {
            let rows = rg.num_rows().max(0) as usize;
            Some(pad(sel.split_off(rows), rows))
        })
        .collect())
}

/// Per row group, the selection of rows `deletes` leaves (`None`: no row of it is deleted),
/// and how many rows of the row groups read are deleted.
pub(crate) fn deletes_by_row_group(
    md: &ParquetMetaData,
    deletes: &RoaringTreemap,
    excluded: &[bool],
) -> (Vec<Option<RowSelection>>, u64) {
    let mut out = Vec::with_capacity(md.num_row_groups());
    let mut it = deletes.iter().peekable();
    let mut first = 0u64;
    let mut deleted = 0u64;
    for (rg, r) in md.row_groups().iter().enumerate() {
        let rows = r.num_rows().max(0) as u64;
        let end = first + rows;
        while it.next_if(|&p| p < first).is_some() {}
        let mut selectors = Vec::new();
        let mut at = first;
        while let Some(p) = it.next_if(|&p| p < end) {
            if p > at {
                selectors.push(RowSelector::select((p - at) as usize));
            }
            // Consecutive deleted rows become one skip.
            match selectors.last_mut() {
                Some(s) if s.skip && p == at => s.row_count += 1,
                _ => selectors.push(RowSelector::skip(1)),
            }
            at = p + 1;
        }
        if selectors.is_empty() {
            out.push(None);
        } else {
            if !excluded.get(rg).copied().unwrap_or(false) {
                deleted += selectors
                    .iter()
                    .filter(|s| s.skip)
                    .map(|s| s.row_count as u64)
                    .sum::<u64>();
            }
            if end > at {
                selectors.push(RowSelector::select((end - at) as usize));
            }
            out.push(Some(RowSelection::from(selectors)));
        }
        first = end;
    }
    (out, deleted)
}

/// The selection of the sorted, disjoint, non-empty `runs()` of kept rows over `rows` rows:
/// what parquet's `RowSelection::from_consecutive_ranges` makes of them (adjacent runs
/// merged), built in one allocation of its exact size. `runs` is called twice (once to count
/// the selectors), so it must give the same runs each time.
///
/// parquet's function reserves a selector per run and grows to two per run by reallocating,
/// and `from_filters` starts from none: on TPC-H Q3's `lineitem` filter (54% of the rows kept,
/// in runs of about 8) that copy's fresh pages were a fifth of the scan's page faults.
pub(crate) fn from_runs<I>(runs: impl Fn() -> I, rows: usize) -> RowSelection
where
    I: Iterator<Item = Range<usize>>,
{
    let mut at = 0;
    let mut count = 0;
    for r in runs() {
        count += 1 + usize::from(r.start > at);
        at = r.end;
    }
    count += usize::from(at < rows);
    Selectors {
        runs: runs(),
        at: 0,
        rows,
        select: None,
        left: count,
    }
    .collect()
}

/// The selection of the kept rows of the batches' `masks` (no nulls), numbered across them:
/// what parquet's `RowSelection::from_filters` makes of them, through [`from_runs`].
pub(crate) fn from_masks(masks: &[BooleanArray]) -> RowSelection {
    let runs = || {
        masks
            .iter()
            .scan(0usize, |at, m| {
                let first = *at;
                *at += m.len();
                Some((first, m))
            })
            .flat_map(|(first, m)| {
                m.values()
                    .set_slices()
                    .map(move |(a, b)| a + first..b + first)
            })
    };
    from_runs(runs, masks.iter().map(|m| m.len()).sum())
}

/// The selectors of [`from_runs`], with their exact count as the size hint (so that
/// collecting them into a `RowSelection` allocates once).
struct Selectors<I> {
    runs: I,
    /// The row after the last one a selector has covered.
    at: usize,
    rows: usize,
    /// The select that follows the skip just handed out.
    select: Option<usize>,
    /// Selectors still to come.
    left: usize,
}

impl<I: Iterator<Item = Range<usize>>> Iterator for Selectors<I> {
    type Item = RowSelector;

    fn next(&mut self) -> Option<RowSelector> {
        let s = match self.select.take() {
            Some(n) => RowSelector::select(n),
            None => match self.runs.next() {
                Some(r) if r.start > self.at => {
                    let skip = r.start - self.at;
                    self.select = Some(r.len());
                    self.at = r.end;
                    RowSelector::skip(skip)
                }
                Some(r) => {
                    self.at = r.end;
                    RowSelector::select(r.len())
                }
                None if self.at < self.rows => {
                    let skip = self.rows - self.at;
                    self.at = self.rows;
                    RowSelector::skip(skip)
                }
                None => return None,
            },
        };
        self.left = self.left.saturating_sub(1);
        Some(s)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// `sel` extended with skipped rows (or cut) to span exactly `rows` rows.
pub(crate) fn pad(sel: RowSelection, rows: usize) -> RowSelection {
    let len = sel.row_count() + sel.skipped_row_count();
    if len == rows {
        return sel;
    }
    let mut selectors: Vec<RowSelector> = Vec::new();
    let mut left = rows;
    for s in sel.iter() {
        if left == 0 {
            break;
        }
        let n = s.row_count.min(left);
        selectors.push(if s.skip {
            RowSelector::skip(n)
        } else {
            RowSelector::select(n)
        });
        left -= n;
    }
    if left > 0 {
        selectors.push(RowSelector::skip(left));
    }
    selectors.into()
}

/// A row selection as its sorted selected row ranges, built once per row group, so that each
/// column chunk's pages are tested by binary search: O(pages · log runs) per chunk, where
/// parquet's `RowSelection::scan_ranges` walks every selector for every chunk (a scattered
/// filter result has tens of thousands of selectors per row group).
#[derive(Debug, Clone, Default)]
pub(crate) struct SelectedRows(Vec<Range<usize>>);

impl SelectedRows {
    pub fn new(selection: &RowSelection) -> Self {
        let mut runs: Vec<Range<usize>> = Vec::new();
        let mut row = 0usize;
        for s in selection.iter() {
            let end = row + s.row_count;
            if !s.skip && s.row_count > 0 {
                match runs.last_mut() {
                    Some(last) if last.end == row => last.end = end,
                    _ => runs.push(row..end),
                }
            }
            row = end;
        }
        SelectedRows(runs)
    }

    /// Whether any row of `rows` is selected.
    pub fn any_in(&self, rows: Range<usize>) -> bool {
        let i = self.0.partition_point(|r| r.end <= rows.start);
        self.0.get(i).is_some_and(|r| r.start < rows.end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::page_index::offset_index::PageLocation;

    /// `from_masks` (and so `from_runs`) gives what parquet's `from_filters` gives over the
    /// same batch masks (runs adjacent across batches merged), and over one mask (no adjacent
    /// runs) a selection allocated at its exact size.
    #[test]
    fn from_runs_is_parquets_selection_in_one_allocation() {
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for case in 0..3000 {
            let batches = 1 + next(4) as usize;
            let (run, keep) = (1 + next([1, 8, 300][case % 3]), next(101));
            let masks: Vec<BooleanArray> = (0..batches)
                .map(|_| {
                    let len = next(700) as usize;
                    let mut bits = Vec::with_capacity(len);
                    while bits.len() < len {
                        let v = match case % 7 {
                            0 => true,
                            1 => false,
                            _ => next(100) < keep,
                        };
                        bits.extend(std::iter::repeat_n(v, (run as usize).min(len - bits.len())));
                    }
                    BooleanArray::from(bits)
                })
                .collect();
            let rows: usize = masks.iter().map(|m| m.len()).sum();
            let got = from_masks(&masks);
            assert_eq!(got, RowSelection::from_filters(&masks), "case {case}");
            assert_eq!(got.row_count() + got.skipped_row_count(), rows);
            if batches == 1 {
                let v: Vec<RowSelector> = got.into();
                assert_eq!(v.capacity(), v.len(), "case {case}: one exact allocation");
            }
        }
    }

    #[test]
    fn pad_extends_and_cuts() {
        let sel: RowSelection = vec![RowSelector::select(3)].into();
        let p = pad(sel.clone(), 5);
        assert_eq!((p.row_count(), p.skipped_row_count()), (3, 2));
        let p = pad(sel, 2);
        assert_eq!((p.row_count(), p.skipped_row_count()), (2, 0));
    }

    /// `SelectedRows::any_in` over each page's rows picks exactly the pages parquet's own
    /// `RowSelection::scan_ranges` picks, on random selections and page layouts.
    #[test]
    fn selected_rows_pick_the_pages_scan_ranges_picks() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for case in 0..2000 {
            let rows = 1 + next(3000) as usize;
            let mut selectors = Vec::new();
            let mut left = rows;
            while left > 0 {
                let run = (1 + next(if case % 2 == 0 { 8 } else { 400 }) as usize).min(left);
                selectors.push(match next(2) {
                    0 => RowSelector::skip(run),
                    _ => RowSelector::select(run),
                });
                left -= run;
            }
            let selection = RowSelection::from(selectors);
            let mut locations = Vec::new();
            let mut first = 0usize;
            while first < rows {
                locations.push(PageLocation {
                    offset: 1000 + 100 * locations.len() as i64,
                    compressed_page_size: 100,
                    first_row_index: first as i64,
                });
                first += 1 + next(300) as usize;
            }
            let expected: Vec<i64> = selection
                .scan_ranges(&locations)
                .iter()
                .map(|r| r.start as i64)
                .collect();
            let runs = SelectedRows::new(&selection);
            let got: Vec<i64> = (0..locations.len())
                .filter(|&i| {
                    let from = locations[i].first_row_index as usize;
                    let to = locations
                        .get(i + 1)
                        .map_or(usize::MAX, |p| p.first_row_index as usize);
                    runs.any_in(from..to)
                })
                .map(|i| locations[i].offset)
                .collect();
            assert_eq!(got, expected, "case {case}: {selection:?}");
        }
    }
}
