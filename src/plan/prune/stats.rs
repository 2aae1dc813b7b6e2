//! Verdicts from statistics: per row group from the column chunk statistics ([`row_groups`]),
//! per data page from the page index as a row selection ([`pages`]); each leaf predicate is
//! judged by [`crate::plan::prune::leaf`].

use arrow::array::{BooleanArray, UInt64Array};
use parquet::arrow::arrow_reader::statistics::StatisticsConverter;
use parquet::arrow::arrow_reader::RowSelection;
use parquet::file::metadata::ParquetMetaData;

use crate::error::{Error, ErrorKind, Result};
use crate::expr::Expr;
use crate::footer::FileMeta;
use crate::plan::prune::filter::{leaf_column, FileFilter};
use crate::plan::prune::leaf::{leaf_verdicts, truthy, Stats};
use crate::plan::prune::Verdict;

/// Walk the (negation normal form) filter, judging leaves with `leaf` and combining.
pub(crate) fn judge(
    e: &Expr,
    n: usize,
    leaf: &mut dyn FnMut(&Expr) -> Vec<Verdict>,
) -> Vec<Verdict> {
    match e {
        Expr::And(a, b) | Expr::Or(a, b) => {
            let x = judge(a, n, leaf);
            let y = judge(b, n, leaf);
            let and = matches!(e, Expr::And(..));
            x.into_iter()
                .zip(y)
                .map(|(x, y)| if and { x.and(y) } else { x.or(y) })
                .collect()
        }
        // `push_not` leaves no `Not` behind; be safe if one remains.
        Expr::Not(_) => vec![Verdict::Some; n],
        Expr::Literal(true) => vec![Verdict::All; n],
        Expr::Literal(false) => vec![Verdict::None; n],
        _ => leaf(e),
    }
}

/// Verdicts per row group of `meta`'s file, from column chunk statistics.
pub(crate) fn row_groups(filter: &FileFilter, meta: &FileMeta) -> Vec<Verdict> {
    let md = meta.reader.metadata();
    let n = md.num_row_groups();
    let rows: UInt64Array = md
        .row_groups()
        .iter()
        .map(|r| r.num_rows().max(0) as u64)
        .collect();
    let mut leaf = |e: &Expr| -> Vec<Verdict> {
        let col = filter.column(leaf_column(e));
        let Some(stats_name) = &col.stats_name else {
            return vec![Verdict::Some; n];
        };
        let attempt = crate::panic::catch(|| -> Result<Vec<Verdict>> {
            let schema = meta.reader.schema();
            let conv =
                StatisticsConverter::try_new(stats_name, schema, meta.reader.parquet_schema())
                    .map_err(|e| Error::new(ErrorKind::CorruptFooter, e.to_string()))?
                    .with_missing_null_counts_as_zero(false);
            if conv.parquet_column_index() != Some(col.leaf) {
                return Ok(vec![Verdict::Some; n]);
            }
            let perr = |e: parquet::errors::ParquetError| {
                Error::new(ErrorKind::CorruptFooter, e.to_string())
            };
            let rgs = md.row_groups();
            let exact_min = conv.row_group_is_min_value_exact(rgs).map_err(perr)?;
            let exact_max = conv.row_group_is_max_value_exact(rgs).map_err(perr)?;
            let exact: BooleanArray = (0..n)
                .map(|i| Some(truthy(&exact_min, i) && truthy(&exact_max, i)))
                .collect();
            let stats = Stats {
                mins: conv.row_group_mins(rgs).map_err(perr)?,
                maxes: conv.row_group_maxes(rgs).map_err(perr)?,
                nulls: conv.row_group_null_counts(rgs).map_err(perr)?,
                rows: Some(rows.clone()),
                exact: Some(exact),
            }
            .sanitize()
            .cast_to(&col.data_type)?;
            leaf_verdicts(e, col, &stats)
        });
        match attempt {
            Ok(Ok(v)) if v.len() == n => v,
            _ => vec![Verdict::Some; n],
        }
    };
    judge(&filter.expr, n, &mut leaf)
}

/// The rows of row group `rg` that the page index cannot exclude, or `None` when it excludes
/// nothing (or the file has no page index).
pub(crate) fn pages(filter: &FileFilter, meta: &FileMeta, rg: usize) -> Option<RowSelection> {
    let md: &ParquetMetaData = meta.reader.metadata();
    let (ci, oi) = (md.column_index()?, md.offset_index()?);
    let total = md.row_group(rg).num_rows().max(0) as usize;
    // Per leaf predicate: the selection of pages that may match, or None (all rows).
    let mut leaf = |e: &Expr| -> Option<RowSelection> {
        let col = filter.column(leaf_column(e));
        let stats_name = col.stats_name.as_ref()?;
        if ci.get(rg)?.len() <= col.leaf || oi.get(rg)?.len() <= col.leaf {
            return None;
        }
        let locations = oi[rg][col.leaf].page_locations();
        if locations.is_empty() {
            return None;
        }
        let attempt = crate::panic::catch(|| -> Result<Option<RowSelection>> {
            let perr = |e: parquet::errors::ParquetError| {
                Error::new(ErrorKind::CorruptFooter, e.to_string())
            };
            let conv = StatisticsConverter::try_new(
                stats_name,
                meta.reader.schema(),
                meta.reader.parquet_schema(),
            )
            .map_err(perr)?
            .with_missing_null_counts_as_zero(false);
            if conv.parquet_column_index() != Some(col.leaf) {
                return Ok(None);
            }
            let idx = [rg];
            let stats = Stats {
                mins: conv.data_page_mins(ci, oi, &idx).map_err(perr)?,
                maxes: conv.data_page_maxes(ci, oi, &idx).map_err(perr)?,
                nulls: conv.data_page_null_counts(ci, oi, &idx).map_err(perr)?,
                rows: conv
                    .data_page_row_counts(oi, md.row_groups(), &idx)
                    .map_err(perr)?,
                exact: None,
            }
            .sanitize()
            .cast_to(&col.data_type)?;
            if stats.len() != locations.len() {
                return Ok(None);
            }
            let verdicts = leaf_verdicts(e, col, &stats)?;
            let bounds: Vec<usize> = locations
                .iter()
                .map(|p| p.first_row_index.max(0) as usize)
                .chain(std::iter::once(total))
                .collect();
            if bounds.windows(2).any(|w| w[0] > w[1]) {
                return Ok(None);
            }
            let keep = verdicts
                .iter()
                .enumerate()
                .filter(|(_, v)| **v != Verdict::None)
                .map(|(i, _)| bounds[i]..bounds[i + 1]);
            Ok(Some(RowSelection::from_consecutive_ranges(keep, total)))
        });
        attempt.ok().and_then(|r| r.ok()).flatten()
    };
    page_selection(&filter.expr, &mut leaf)
}

fn page_selection(
    e: &Expr,
    leaf: &mut dyn FnMut(&Expr) -> Option<RowSelection>,
) -> Option<RowSelection> {
    match e {
        Expr::And(a, b) => match (page_selection(a, leaf), page_selection(b, leaf)) {
            (Some(x), Some(y)) => Some(x.intersection(&y)),
            (x, None) | (None, x) => x,
        },
        Expr::Or(a, b) => match (page_selection(a, leaf), page_selection(b, leaf)) {
            (Some(x), Some(y)) => Some(x.union(&y)),
            _ => None,
        },
        Expr::Not(_) | Expr::Literal(true) => None,
        Expr::Literal(false) => Some(RowSelection::from(Vec::new())),
        _ => leaf(e),
    }
}
