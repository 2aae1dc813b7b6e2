//! The order a Parquet table's scan delivers its rows in, where the files say so: each row
//! group's rows are sorted as its writer declares (`sorting_columns`, the writer's word, as
//! DataFusion's own Parquet scan takes it), and the units, put in order by the row groups'
//! bounds of the first key ([`Sorting`]), do not overlap. Then every partition's
//! units, read in the order they were dealt (a subsequence of that order, on any number of
//! partitions and workers), give rows in that order, and DataFusion can drop a sort or merge
//! sorted partitions instead.
//!
//! Invariants: an order is claimed only when every unit's file declares it and the units'
//! row groups, in the order returned, have bounds that never step back: the next row group's
//! lower bound at or past the previous upper bound (for a descending key, mirrored). Several
//! keys are claimed only when every step is strict (a tie on the first key between two row
//! groups says nothing of the next key across them); otherwise only the first. Without an
//! order the units keep their planned order and nothing is claimed.

use std::cmp::Ordering;
use std::ops::Range;

use datafusion::common::ScalarValue;
use serde::{Deserialize, Serialize};

/// One key of a claimed order: a table column, its direction, where its nulls go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct SortKey {
    /// The table column.
    pub column: String,
    /// Largest first.
    pub descending: bool,
    /// Nulls before values.
    pub nulls_first: bool,
}

/// The order of a file's rows within each row group, as its writer declares it
/// (`sorting_columns`), and each row group's bounds of the first key: what
/// [`crate::order`] needs to tell whether the row groups also follow each other in order.
#[derive(Debug, Clone)]
pub(crate) struct Sorting {
    /// The keys, as table columns: the longest prefix of the declared keys that are
    /// top-level columns of the table.
    pub keys: Vec<SortKey>,
    /// Per row group: the first key's lower and upper bound (`None`: the row group is empty).
    /// Bounds may be truncated (a string's), never narrower than the values.
    pub bounds: Vec<Option<(ScalarValue, ScalarValue)>>,
}

/// A unit as ordering sees it: the declared order of its file and the run of row groups it
/// reads (`None`: its file declares none it can rely on).
pub(crate) struct UnitRows<'a> {
    pub sorting: Option<&'a Sorting>,
    pub row_groups: Range<usize>,
}

/// The keys the units' rows follow when read in the returned order of units (indices into
/// `units`), or `None` (see the module's invariants).
pub(crate) fn order(units: &[UnitRows<'_>]) -> Option<(Vec<SortKey>, Vec<usize>)> {
    // A unit without row groups (an empty file, which can declare nothing) delivers no rows:
    // it needs no order.
    let sortings: Vec<Option<&Sorting>> = units
        .iter()
        .map(|u| match u.row_groups.is_empty() {
            true => Some(None),
            false => u.sorting.map(Some),
        })
        .collect::<Option<_>>()?;
    // The keys every file declares (a prefix of a file's keys is an order its rows follow).
    let mut declared = sortings.iter().flatten();
    let mut keys = declared.next()?.keys.clone();
    for s in declared {
        let common = keys.iter().zip(&s.keys).take_while(|(a, b)| a == b).count();
        keys.truncate(common);
    }
    let descending = keys.first()?.descending;
    // Each row group's first and last value in the order of reading (min and max, or max and
    // min for a descending key), each unit's (`None`: no rows), checked within the unit.
    let mut spans = Vec::with_capacity(units.len());
    let mut strict = true;
    for (u, s) in units.iter().zip(&sortings) {
        let Some(s) = s else {
            spans.push(None);
            continue;
        };
        let groups = s.bounds.get(u.row_groups.clone())?;
        let mut span: Option<(&ScalarValue, &ScalarValue)> = None;
        for (min, max) in groups.iter().flatten() {
            let (first, last) = if descending { (max, min) } else { (min, max) };
            span = match span {
                Some((start, end)) => {
                    strict &= follows(end, first, descending)?;
                    Some((start, last))
                }
                None => Some((first, last)),
            };
        }
        spans.push(span);
    }
    // Units by where they start; units without rows first (they deliver nothing).
    let mut by_start: Vec<usize> = (0..units.len()).collect();
    let mut incomparable = false;
    by_start.sort_by(|&a, &b| match (spans[a], spans[b]) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some((a, _)), Some((b, _))) => {
            let o = a.partial_cmp(b).unwrap_or_else(|| {
                incomparable = true;
                Ordering::Equal
            });
            if descending {
                o.reverse()
            } else {
                o
            }
        }
    });
    if incomparable {
        return None;
    }
    let mut end: Option<&ScalarValue> = None;
    for &i in &by_start {
        let Some((first, last)) = spans[i] else {
            continue;
        };
        if let Some(prev) = end {
            strict &= follows(prev, first, descending)?;
        }
        end = Some(last);
    }
    if !strict {
        keys.truncate(1);
    }
    Some((keys, by_start))
}

/// Whether rows starting at `next` may follow rows that ended at `prev` in order (both in the
/// key's direction: bounds of the first key, lower then upper, or upper then lower when
/// `descending`): `Some(true)` strictly after, `Some(false)` at the
/// same value, `None` before it or not comparable.
fn follows(prev: &ScalarValue, next: &ScalarValue, descending: bool) -> Option<bool> {
    let o = prev.partial_cmp(next)?;
    match (o, descending) {
        (Ordering::Equal, _) => Some(false),
        (Ordering::Less, false) | (Ordering::Greater, true) => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(column: &str, descending: bool) -> SortKey {
        SortKey {
            column: column.into(),
            descending,
            nulls_first: false,
        }
    }

    /// A file sorted on `keys`, its row groups' first-key bounds `bounds` (`None`: empty).
    fn file(keys: &[SortKey], bounds: &[Option<(i64, i64)>]) -> Sorting {
        Sorting {
            keys: keys.to_vec(),
            bounds: bounds
                .iter()
                .map(|b| b.map(|(lo, hi)| (ScalarValue::from(lo), ScalarValue::from(hi))))
                .collect(),
        }
    }

    fn units<'a>(runs: &[(&'a Sorting, Range<usize>)]) -> Vec<UnitRows<'a>> {
        runs.iter()
            .map(|(s, r)| UnitRows {
                sorting: Some(s),
                row_groups: r.clone(),
            })
            .collect()
    }

    #[test]
    fn units_are_put_in_order_of_their_bounds() {
        let ab = [key("a", false), key("b", false)];
        let low = file(&ab, &[Some((0, 9)), Some((10, 19)), None, Some((20, 29))]);
        let high = file(&ab, &[Some((30, 39)), Some((40, 49))]);
        // Listed high first, and the low file cut into two runs.
        let u = units(&[(&high, 0..2), (&low, 2..4), (&low, 0..2)]);
        assert_eq!(order(&u), Some((ab.to_vec(), vec![2, 1, 0])));
        // A tie between two row groups: the first key only.
        let tie = file(&ab, &[Some((0, 10)), Some((10, 19))]);
        assert_eq!(
            order(&units(&[(&tie, 0..2)])),
            Some((vec![ab[0].clone()], vec![0]))
        );
        let other = file(&ab, &[Some((19, 25))]);
        let u = units(&[(&other, 0..1), (&low, 0..2)]);
        assert_eq!(order(&u), Some((vec![ab[0].clone()], vec![1, 0])));
        // Descending keys: largest first.
        let d = [key("a", true)];
        let hi = file(&d, &[Some((50, 59)), Some((40, 49))]);
        let lo = file(&d, &[Some((10, 19))]);
        assert_eq!(
            order(&units(&[(&lo, 0..1), (&hi, 0..2)])),
            Some((d.to_vec(), vec![1, 0]))
        );
        // The keys all files share.
        let a = file(&ab[..1], &[Some((100, 200))]);
        let u = units(&[(&low, 0..2), (&a, 0..1)]);
        assert_eq!(order(&u), Some((vec![ab[0].clone()], vec![0, 1])));
    }

    #[test]
    fn overlapping_or_undeclared_rows_claim_nothing() {
        let k = [key("a", false)];
        // Row groups of one file overlapping.
        let f = file(&k, &[Some((0, 10)), Some((5, 20))]);
        assert_eq!(order(&units(&[(&f, 0..2)])), None);
        // Row groups of one file out of order (a unit is read in its file's order).
        let f = file(&k, &[Some((10, 20)), Some((0, 9))]);
        assert_eq!(order(&units(&[(&f, 0..2)])), None);
        // ... though cut into units of one row group each, they can be put in order.
        assert_eq!(
            order(&units(&[(&f, 0..1), (&f, 1..2)])),
            Some((k.to_vec(), vec![1, 0]))
        );
        // Two files overlapping.
        let a = file(&k, &[Some((0, 10))]);
        let b = file(&k, &[Some((10, 20)), Some((9, 30))]);
        assert_eq!(order(&units(&[(&a, 0..1), (&b, 0..1), (&b, 1..2)])), None);
        // Different keys, or directions.
        let other = file(&[key("b", false)], &[Some((50, 60))]);
        assert_eq!(order(&units(&[(&a, 0..1), (&other, 0..1)])), None);
        let down = file(&[key("a", true)], &[Some((50, 60))]);
        assert_eq!(order(&units(&[(&a, 0..1), (&down, 0..1)])), None);
        // A file without a declared order.
        let u = vec![
            UnitRows {
                sorting: Some(&a),
                row_groups: 0..1,
            },
            UnitRows {
                sorting: None,
                row_groups: 0..1,
            },
        ];
        assert_eq!(order(&u), None);
        // ... but an empty file (no row groups: it declares nothing) delivers nothing.
        let empty = UnitRows {
            sorting: None,
            row_groups: 0..0,
        };
        let u = vec![
            empty,
            UnitRows {
                sorting: Some(&b),
                row_groups: 0..1,
            },
            UnitRows {
                sorting: Some(&a),
                row_groups: 0..1,
            },
        ];
        assert_eq!(order(&u), Some((k.to_vec(), vec![0, 2, 1])));
        let only_empty = [UnitRows {
            sorting: None,
            row_groups: 0..0,
        }];
        assert_eq!(order(&only_empty), None);
        // Bounds that do not compare.
        let s = Sorting {
            keys: k.to_vec(),
            bounds: vec![Some((ScalarValue::from("x"), ScalarValue::from("y")))],
        };
        assert_eq!(order(&units(&[(&a, 0..1), (&s, 0..1)])), None);
        assert_eq!(order(&[]), None);
    }
}
