//! What a filter stage ([`crate::decode::stage`]) takes and gives, shared with the dictionary
//! filter ([`crate::decode::dict_filter`]), which the stage calls: the types sit below both so
//! that neither file imports the other's caller.

use arrow::array::ArrayRef;
use parquet::arrow::arrow_reader::RowSelection;

use crate::decode::bound::BatchLimit;
use crate::io::chunk::SparseChunk;
use crate::plan::file::RowFilterPlan;
use crate::plan::prune::FileFilter;
use crate::validate::pages::PageSizes;

/// What the filter stage of a row group evaluates.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stage<'a> {
    /// The scan's filter, when it is exact and statistics could not decide the row group.
    pub filter: Option<&'a FileFilter>,
    pub row_filter: Option<&'a RowFilterPlan>,
    /// Leaves to decode.
    pub leaves: &'a [usize],
    /// The most rows the dictionary filter holds an index of each for
    /// ([`PageChecks::buffer_rows`](crate::validate::pages::PageChecks::buffer_rows)).
    pub buffer_rows: u64,
}

/// The row group a filter stage reads: its fetched bytes and how to read them.
#[derive(Debug)]
pub(crate) struct StageRead<'a> {
    pub rg: usize,
    /// The row group's first row in the file.
    pub first_row: u64,
    /// Rows to read (the plan's selection); `None`: all.
    pub pre: Option<&'a RowSelection>,
    /// Only the pages holding `pre`'s rows were fetched: read by selectors.
    pub page_level: bool,
    /// The stage's column chunks, and the sizes their page headers claim (from
    /// [`crate::validate::check_row_group`]).
    pub chunk: SparseChunk,
    pub sizes: Vec<PageSizes>,
    pub limit: BatchLimit,
    /// Positions in the stage's batches of the columns to keep decoded.
    pub keep: &'a [usize],
}

/// What a filter stage found: the exact selection of rows to deliver (spanning the whole row
/// group), the number of rows read, and the decoded columns asked to be kept (the rows
/// delivered only, in order), so that they need not be decoded a second time.
pub(crate) struct StageOutput {
    pub exact: RowSelection,
    pub read: u64,
    /// `None` when no row was read.
    pub kept: Vec<Option<ArrayRef>>,
    /// Evaluated on dictionary indices ([`crate::decode::dict_filter`]).
    pub dictionary: bool,
}
