//! Prune: decide from metadata alone which row groups and pages a filter can skip.
//!
//! A filter is resolved against each file ([`filter::FileFilter`]: columns through the task's
//! mapping, literals to the columns' types, constants folded), then judged per row group from
//! the column chunk statistics and per data page from the page index ([`stats`]), and per row
//! group again from bloom filters for `=` and `IN` ([`bloom`]). Each judgement is a
//! [`Verdict`]: no row can match, every row matches, or some may.
//!
//! Invariant: *when in doubt, read*. A verdict of `None` (skip) is given only from statistics
//! that bound the data: missing statistics, missing null counts, statistics of nested columns,
//! of unsigned, INT96, interval or half-float types, of byte arrays written in the legacy
//! (undefined) sort order, float maxima (which ignore NaN, the largest float in arrow's total
//! order) and any statistic that fails to convert all mean "some rows may match". Pruning
//! only removes data the exact filter would remove anyway; the exact filter always runs.

pub(crate) mod bloom;
pub(crate) mod filter;
pub(crate) mod leaf;
pub(crate) mod stats;

pub(crate) use filter::FileFilter;

/// What metadata proves about the rows of a row group (or page) under a filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// No row can match: skip it.
    None,
    /// Every row matches, if the statistics are true: fetched in one round and filtered
    /// all the same (a false statistic must not add rows).
    All,
    /// Unknown: read and filter.
    Some,
}

impl Verdict {
    fn and(self, o: Verdict) -> Verdict {
        match (self, o) {
            (Verdict::None, _) | (_, Verdict::None) => Verdict::None,
            (Verdict::All, Verdict::All) => Verdict::All,
            _ => Verdict::Some,
        }
    }
    fn or(self, o: Verdict) -> Verdict {
        match (self, o) {
            (Verdict::All, _) | (_, Verdict::All) => Verdict::All,
            (Verdict::None, Verdict::None) => Verdict::None,
            _ => Verdict::Some,
        }
    }
}
