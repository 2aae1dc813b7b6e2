//! The direct reader: a part's flat columns read with a row selection, decoding only the
//! selected rows, straight into the output arrays ([`DirectReader`]).
//!
//! parquet's reader reads a fragmented selection (a filter keeping rows all over the row group)
//! with a bitmask: it decodes every row of every page, converts it (decimals widened, strings
//! made views) and then filters the batch, so a filter keeping a quarter of the rows costs more
//! than reading them all. Here each column chunk's pages are walked ([`page`]) to the selected
//! rows only: dictionary indices of skipped rows are stepped over in their bit-packed runs,
//! plain values by offset, and each selected row's value is appended to its column's output
//! ([`build`]), gathered from the dictionary (decoded once by parquet, into the exact Arrow
//! type) or converted from the plain value as parquet converts it. Pages holding no selected
//! row are skipped without being decompressed.
//!
//! What it reads: flat columns (top level, unrepeated, at most one definition level) of the
//! pairs of physical and Arrow types in [`choose::builder_for`], PLAIN or dictionary-encoded
//! with RLE levels (v1 or v2 pages), when the selected rows are scattered: in short runs (fewer
//! than 32 rows on average) and at most half the rows, as a filter's matches are. And, where
//! the CPU runs the x86-64-v3 copies of the dispatched kernels ([`crate::decode::dispatch`]),
//! every row of a part, or most of them in runs of 4 or more on average (a filter that drops
//! few rows, scattered deleted rows), when its columns have no null (required, or the chunk's
//! statistics say none) and are fixed-width or views (or, for most rows, offset-based strings
//! and binaries): each page is then decoded whole and its kept runs of rows copied out by
//! those kernels, which in a generic build are faster than parquet's decoders (which, under a
//! selection of most rows, decode every row and then filter the batch). Anything else, long
//! runs of at most half the rows (a clustered filter), is read by parquet's reader, whose
//! skipping by selectors is as fast there ([`open`] chooses). What that choice and the
//! reading need of a filter stage's selection (its [`Shape`], its rows written out) is worked
//! out once for the slot's parts, by the stage's task ([`Prepared`]). A part read with a scattered
//! selection of which only some leaves are ones the direct reader reads (others nested, or of
//! another type) is read by both ([`Split`]): those leaves directly, the others by parquet's
//! reader with the same selection and batch size, each batch joined from the two (the same
//! rows in both).
//!
//! Invariants: batches equal parquet's over the same bytes and selection (`batch_size`
//! selected rows each, the same schema; tests compare the two on the parquet-testing files,
//! lineitem-like data and corrupted files). Never a wrong value: whatever this reader does not
//! handle or finds malformed, on any page, is a [`Fallback`], after which parquet's reader
//! takes over from the first row of the batch being built and reports what it finds the way it
//! always does. Runs on the decode pool only, like every decoder.

mod build;
mod choose;
mod decimal;
mod page;
mod selected;

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Schema, SchemaRef};
use arrow::error::ArrowError;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, RowSelection};
use parquet::basic::Encoding;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::ColumnChunkMetaData;

use crate::decode::bound::{BatchLimit, Coalesced};
use crate::decode::dispatch;
use crate::decode::flat::flat;
use crate::decode::pages::{leaf_pages, row_group_reader, Leaves, RowsRead};
use crate::io::chunk::SparseChunk;
use crate::validate::pages::PageSizes;
use build::{Build, DictPage};
use choose::builder_for;
use page::{DataPage, Dense};
use selected::Selected;
pub(crate) use selected::Written;

/// The most rows of a row group the direct reader reads: its row positions are a `u32` each
/// (64 MiB at most, the smallest page limit); larger row groups are read by parquet's reader,
/// a batch at a time.
const MAX_ROWS: usize = 1 << 24;

/// Why the direct reader stopped and left the rest to parquet's reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fallback(pub &'static str);

/// A row group's reader: the direct reader, parquet's, or both over disjoint columns.
pub(crate) enum RowGroupReader {
    Parquet(Coalesced),
    Direct(Box<DirectReader>),
    Split(Box<Split>),
}

impl Iterator for RowGroupReader {
    type Item = Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            RowGroupReader::Parquet(r) => r.next(),
            RowGroupReader::Direct(r) => r.next(),
            RowGroupReader::Split(r) => r.next(),
        }
    }
}

/// Which rows a part reads: all, or a selection (read by selectors when only the selected
/// pages were fetched).
#[derive(Debug, Default, Clone)]
pub(crate) struct PartRows {
    /// Shared by the slot's parts (read, never changed).
    pub selection: Option<Arc<RowSelection>>,
    /// Only the selected rows' pages were fetched: the others must not be touched.
    pub page_level: bool,
    /// The selection as the direct reader reads it, worked out once for the slot's parts
    /// (by its filter stage), if it was.
    pub prepared: Option<Arc<Prepared>>,
}

/// The rows the direct reader reads, as [`open`] hands them on.
struct DirectRows<'a> {
    /// `None`: every row.
    selection: Option<&'a RowSelection>,
    page_level: bool,
    /// The selection's rows as the slot's parts share them, if written already.
    written: Option<Arc<Written>>,
}

/// A reader of row group `rg` of `meta`'s file over the fetched `chunk`, as
/// [`row_group_reader`] (the same arguments, the same batches): the direct reader when the
/// rows are a selection and every leaf is one it reads, parquet's otherwise.
pub(crate) fn open(
    meta: &ArrowReaderMetadata,
    rg: usize,
    leaves: Leaves<'_>,
    chunk: SparseChunk,
    rows: PartRows,
    limit: BatchLimit,
) -> parquet::errors::Result<RowGroupReader> {
    let PartRows {
        selection,
        page_level,
        prepared,
    } = rows;
    let prepared = prepared.as_deref();
    // Scattered selected rows: only those decoded. Every row, or most rows (a filter that
    // drops few, scattered deleted rows), of columns without nulls, where the CPU runs the
    // x86-64-v3 copies of the dispatched kernels: pages decoded whole by them and the kept
    // runs copied out, which measured faster than parquet's decoders in a generic build
    // (their portable copies did not: BENCHMARKS.md, "Build flags"). Anything else (long runs
    // of selected rows, no x86-64-v3): parquet's reader, whose fused decoding of consecutive
    // rows is faster there.
    let dense = match selection.as_deref() {
        None => dispatch::v3().then_some(true),
        Some(s) => reads(prepared.map_or_else(|| Summary::of(s).shape(), |p| p.shape)),
    };
    let written = prepared.and_then(|p| p.written.clone());
    if let Some(dense) = dense {
        let rows = DirectRows {
            selection: selection.as_deref(),
            page_level,
            written: written.clone(),
        };
        if let Some(d) = DirectReader::try_new(meta, rg, &leaves, &chunk, rows, dense, limit) {
            return Ok(RowGroupReader::Direct(Box::new(d)));
        }
        // Scattered rows, some of the leaves only (others nested, or not of a type it reads):
        // those read directly, the rest by parquet's reader, their batches joined. Not for
        // every row or most rows: there, splitting a part whose other leaves are strings as
        // offsets measured 4-7% more CPU (BENCHMARKS.md, "Most rows kept").
        if let Some(sel) = selection.as_deref().filter(|_| !dense) {
            let rows = DirectRows {
                selection: Some(sel),
                page_level,
                written,
            };
            if let Some(s) = Split::try_new(meta, rg, &leaves, &chunk, rows, limit)? {
                return Ok(RowGroupReader::Split(Box::new(s)));
            }
        }
    }
    // Parquet's reader takes its selection by value: the last part to open takes the shared
    // one, the others a copy.
    let selection = selection.map(Arc::unwrap_or_clone);
    let rows = RowsRead {
        selection,
        page_level,
    };
    let reader = row_group_reader(meta, rg, leaves, chunk, rows, limit)?;
    Ok(RowGroupReader::Parquet(reader))
}

/// A part read by two readers over disjoint leaves, the direct reader's and parquet's, each
/// with the part's selection and batch size, so their batches hold the same rows; joined
/// into the batches parquet's reader would give for all the leaves (columns in root order).
pub(crate) struct Split {
    direct: DirectReader,
    parquet: Coalesced,
    /// For each output column in order: whether the direct reader's batch holds it.
    from_direct: Vec<bool>,
    schema: Option<SchemaRef>,
    /// The rows of the last batch of each reader (direct, parquet) not joined yet: where one
    /// cut its batch short (its values past the batch byte limit), the other's rest waits.
    rest: (Option<RecordBatch>, Option<RecordBatch>),
    done: bool,
}

impl Split {
    /// The split of `leaves`, read with the scattered selection of `rows`, when some, but
    /// not all, are leaves the direct reader reads ([`leaf_reader`]); `None` otherwise.
    fn try_new(
        meta: &ArrowReaderMetadata,
        rg: usize,
        leaves: &Leaves<'_>,
        chunk: &SparseChunk,
        rows: DirectRows<'_>,
        limit: BatchLimit,
    ) -> parquet::errors::Result<Option<Self>> {
        let (Some(selection), true) = (rows.selection, leaves.sizes.len() == leaves.leaves.len())
        else {
            return Ok(None);
        };
        let page_level = rows.page_level;
        let (mut mine, mut theirs) = (Vec::new(), Vec::new());
        for (&leaf, sizes) in leaves.leaves.iter().zip(&leaves.sizes) {
            match leaf_reader(meta, rg, leaf, Rows::Scattered) {
                Some(_) => mine.push((leaf, sizes.clone())),
                None => theirs.push((leaf, sizes.clone())),
            }
        }
        if mine.is_empty() || theirs.is_empty() {
            return Ok(None);
        }
        let descr = meta.parquet_schema();
        let root = |leaf: usize| descr.get_column_root_idx(leaf);
        let mut roots: Vec<(usize, bool)> = mine
            .iter()
            .map(|(l, _)| (root(*l), true))
            .chain(theirs.iter().map(|(l, _)| (root(*l), false)))
            .collect();
        roots.sort_unstable();
        roots.dedup();
        // A root read by both (not possible: the direct reader's leaves are flat roots).
        if roots.windows(2).any(|w| w[0].0 == w[1].0) {
            return Ok(None);
        }
        let (l1, s1): (Vec<usize>, Vec<PageSizes>) = mine.into_iter().unzip();
        let direct = Leaves {
            leaves: &l1,
            sizes: s1,
        };
        let Some(direct) = DirectReader::try_new(meta, rg, &direct, chunk, rows, false, limit)
        else {
            return Ok(None);
        };
        let (l2, s2): (Vec<usize>, Vec<PageSizes>) = theirs.into_iter().unzip();
        let parquet = Leaves {
            leaves: &l2,
            sizes: s2,
        };
        let rows = RowsRead {
            selection: Some(selection.clone()),
            page_level,
        };
        let parquet = row_group_reader(meta, rg, parquet, chunk.clone(), rows, limit)?;
        Ok(Some(Split {
            direct,
            parquet,
            from_direct: roots.into_iter().map(|(_, d)| d).collect(),
            schema: None,
            rest: (None, None),
            done: false,
        }))
    }

    /// The columns of `a` (the direct reader's) and `b` (parquet's) in root order.
    fn join(&mut self, a: RecordBatch, b: RecordBatch) -> Result<RecordBatch, ArrowError> {
        let (mut ai, mut bi) = (a.columns().iter(), b.columns().iter());
        let (mut af, mut bf) = (
            a.schema_ref().fields().iter(),
            b.schema_ref().fields().iter(),
        );
        let mut columns = Vec::with_capacity(self.from_direct.len());
        let mut fields = Vec::with_capacity(self.from_direct.len());
        let missing = || ArrowError::ParquetError("a column missing from a split read".into());
        for &d in &self.from_direct {
            let (c, f) = if d {
                (ai.next(), af.next())
            } else {
                (bi.next(), bf.next())
            };
            columns.push(Arc::clone(c.ok_or_else(missing)?));
            fields.push(f.ok_or_else(missing)?);
        }
        // Both readers' schemas are fixed for the row group: the joined one is built once.
        let schema = Arc::clone(self.schema.get_or_insert_with(|| {
            Arc::new(Schema::new(fields.into_iter().cloned().collect::<Vec<_>>()))
        }));
        let opts = RecordBatchOptions::new().with_row_count(Some(a.num_rows()));
        RecordBatch::try_new_with_options(schema, columns, &opts)
    }
}

impl Iterator for Split {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let out = loop {
            let a = self.rest.0.take().map(Ok).or_else(|| self.direct.next());
            let b = self.rest.1.take().map(Ok).or_else(|| self.parquet.next());
            match (a, b) {
                (None, None) => break None,
                (Some(Err(e)), _) | (_, Some(Err(e))) => break Some(Err(e)),
                (Some(Ok(a)), Some(Ok(b))) => {
                    // The rows both hold; the rest of the longer one waits for the next call.
                    let rows = a.num_rows().min(b.num_rows());
                    let cut = |x: RecordBatch| match x.num_rows() > rows {
                        true => (x.slice(0, rows), Some(x.slice(rows, x.num_rows() - rows))),
                        false => (x, None),
                    };
                    let ((a, ra), (b, rb)) = (cut(a), cut(b));
                    self.rest = (ra, rb);
                    if rows > 0 {
                        return Some(self.join(a, b));
                    }
                }
                _ => {
                    break Some(Err(ArrowError::ParquetError(
                        "column chunks of a row group that hold different numbers of rows".into(),
                    )))
                }
            }
        };
        self.done = true;
        out
    }
}

/// The selected rows of a part, decoded directly (see the module's documentation).
pub(crate) struct DirectReader {
    meta: ArrowReaderMetadata,
    rg: usize,
    schema: SchemaRef,
    columns: Vec<ChunkReader>,
    /// The selected rows of the row group, and the current batch's.
    selected: Selected,
    /// Position in `selected` of the next batch's first row.
    next: usize,
    /// Rows (and decoded bytes) per batch.
    limit: BatchLimit,
    /// What parquet's reader needs to take over.
    leaves: Vec<usize>,
    sizes: Vec<PageSizes>,
    chunk: SparseChunk,
    page_level: bool,
    /// parquet's reader, once it has taken over, and why it did.
    parquet: Option<Coalesced>,
    fallback: Option<Fallback>,
    /// Every row of the row group is read (no selection): its pages must hold exactly the rows
    /// its metadata says, checked after the last batch ([`DirectReader::end`]).
    whole: bool,
    /// Rows of parquet's reader to drop after it took over every row: those delivered.
    skip: usize,
}

impl DirectReader {
    /// The direct reader of `leaves` of row group `rg`, the selected `rows`;
    /// when `dense` (every row or most rows), only of columns without a null whose every page
    /// it reads as fast as parquet: see [`whole`]; `None` when a leaf is not one it reads (or
    /// the footer is odd), so parquet's reader should.
    fn try_new(
        meta: &ArrowReaderMetadata,
        rg: usize,
        leaves: &Leaves<'_>,
        chunk: &SparseChunk,
        rows: DirectRows<'_>,
        dense: bool,
        limit: BatchLimit,
    ) -> Option<Self> {
        let DirectRows {
            selection,
            page_level,
            written,
        } = rows;
        let md = meta.metadata();
        let group = md.row_group(rg);
        let rows = usize::try_from(group.num_rows()).ok()?;
        let file_rows = usize::try_from(md.file_metadata().num_rows()).ok()?;
        if rows > MAX_ROWS || file_rows < rows || limit.rows == 0 {
            return None;
        }
        let mut order: Vec<(usize, PageSizes)> = leaves
            .leaves
            .iter()
            .copied()
            .zip(leaves.sizes.iter().cloned())
            .collect();
        if order.len() != leaves.leaves.len() || order.is_empty() {
            return None;
        }
        order.sort_by_key(|(leaf, _)| *leaf);
        let mut fields = Vec::with_capacity(order.len());
        let mut columns = Vec::with_capacity(order.len());
        for (leaf, sizes) in &order {
            let leaf = *leaf;
            let rows = match (selection, dense) {
                (None, _) => Rows::Every,
                (Some(_), true) => Rows::MostlyKept,
                (Some(_), false) => Rows::Scattered,
            };
            let (field, nullable, mut build, width) = leaf_reader(meta, rg, leaf, rows)?;
            build.limit(limit.bytes);
            let pages = leaf_pages(md, rg, leaf, chunk, Some(sizes.clone())).ok()?;
            fields.push(field.clone());
            columns.push(ChunkReader {
                dt: field.data_type().clone(),
                nullable,
                width,
                pages,
                page: None,
                next_first: 0,
                spare: Dense::default(),
                build,
            });
        }
        let selected = match (selection, written) {
            (Some(_), Some(w)) => Selected::written(w),
            (Some(selection), None) => Selected::of(selection, rows)?,
            (None, _) => Selected::every(rows),
        };
        Some(DirectReader {
            meta: meta.clone(),
            rg,
            schema: Arc::new(Schema::new(fields)),
            columns,
            selected,
            next: 0,
            limit,
            leaves: order.iter().map(|(l, _)| *l).collect(),
            sizes: order.into_iter().map(|(_, s)| s).collect(),
            chunk: chunk.clone(),
            page_level,
            parquet: None,
            fallback: None,
            whole: selection.is_none(),
            skip: 0,
        })
    }

    /// Why parquet's reader took over, if it did.
    #[cfg(test)]
    pub fn fallback(&self) -> Option<Fallback> {
        self.fallback
    }

    fn batch(&mut self, end: usize) -> Result<RecordBatch, Fallback> {
        self.selected.batch(self.next, end);
        let (rows, left) = self.selected.current();
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.columns.len());
        for c in &mut self.columns {
            let a = c.read((rows, left), &self.selected)?;
            if a.len() != rows.len() {
                return Err(Fallback("a column of another length"));
            }
            // Every array checked in full under `debug_assertions` (tests in the dev profile,
            // CI's debug step, cargo-fuzz builds); a violation is a bug, so a panic.
            #[cfg(debug_assertions)]
            if let Err(e) = a.to_data().validate_full() {
                panic!(
                    "the direct reader built an invalid {} array: {e}",
                    a.data_type()
                );
            }
            arrays.push(a);
        }
        let opts = RecordBatchOptions::new().with_row_count(Some(rows.len()));
        RecordBatch::try_new_with_options(Arc::clone(&self.schema), arrays, &opts)
            .map_err(|_| Fallback("a batch Arrow refused"))
    }

    /// After the last row of a whole row group: every column's pages must end there. parquet's
    /// reader, given no selection, reads a column chunk's pages to their end whatever the row
    /// group's row count says; rows past it (or fewer, [`END`]) are refused here, as a
    /// corrupt row group, rather than read differently.
    fn end(&mut self) -> Result<(), ArrowError> {
        let corrupt = || {
            ArrowError::ParquetError(
                "a column chunk whose pages hold more rows than its row group".into(),
            )
        };
        let rows = self.selected.len();
        for c in &mut self.columns {
            // The page read last ends at `next_first`.
            if c.next_first > rows {
                return Err(corrupt());
            }
            loop {
                match c.pages.peek_next_page()? {
                    None => break,
                    Some(p) if p.is_dict => c.pages.skip_next_page()?,
                    // Counted empty by its header or by the offset index (which for the last
                    // page counts up to the row group's row count, and can be wrong): read to
                    // be sure, as parquet's reader would read its values.
                    Some(p) if p.num_rows.or(p.num_levels) == Some(0) => {
                        match c.pages.get_next_page()? {
                            Some(page) if page.num_values() > 0 => return Err(corrupt()),
                            _ => {}
                        }
                    }
                    Some(_) => return Err(corrupt()),
                }
            }
        }
        Ok(())
    }

    /// parquet's reader, from the first row of the batch that was being built. Reading every
    /// row, parquet's reader is given no selection, as [`open`] would have given it (it then
    /// reads the pages to their end, whatever the row group's row count says, where a
    /// selection would stop at that count), and the rows already delivered are dropped from
    /// its batches ([`DirectReader::skip`]).
    fn take_over(&mut self) -> parquet::errors::Result<Coalesced> {
        self.columns.clear();
        let leaves = |sizes: &mut Vec<PageSizes>| Leaves {
            leaves: &self.leaves,
            sizes: std::mem::take(sizes),
        };
        if std::mem::take(&mut self.whole) {
            self.skip = self.next;
            let chunk = std::mem::take(&mut self.chunk);
            let rows = RowsRead {
                selection: None,
                page_level: self.page_level,
            };
            let leaves = leaves(&mut self.sizes);
            return row_group_reader(&self.meta, self.rg, leaves, chunk, rows, self.limit);
        }
        let total = self.meta.metadata().row_group(self.rg).num_rows().max(0) as usize;
        let ranges = self.selected.ranges_from(self.next);
        let selection = RowSelection::from_consecutive_ranges(ranges.into_iter(), total);
        let leaves = leaves(&mut self.sizes);
        let chunk = std::mem::take(&mut self.chunk);
        row_group_reader(
            &self.meta,
            self.rg,
            leaves,
            chunk,
            RowsRead {
                selection: Some(selection),
                page_level: self.page_level,
            },
            self.limit,
        )
    }
}

impl Iterator for DirectReader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(p) = &mut self.parquet {
            // After a take-over of every row: the rows delivered already, read again.
            while self.skip > 0 {
                let b = match p.next()? {
                    Ok(b) => b,
                    Err(e) => return Some(Err(e)),
                };
                if b.num_rows() > self.skip {
                    let rest = b.slice(self.skip, b.num_rows() - self.skip);
                    self.skip = 0;
                    return Some(Ok(rest));
                }
                self.skip -= b.num_rows();
            }
            return p.next();
        }
        if self.next >= self.selected.len() {
            if std::mem::take(&mut self.whole) {
                if let Err(e) = self.end() {
                    return Some(Err(e));
                }
            }
            return None;
        }
        let end = (self.next + self.limit.rows).min(self.selected.len());
        match self.batch(end) {
            Ok(b) => {
                self.next = end;
                Some(Ok(b))
            }
            Err(END) if self.whole => {
                // Fewer rows than the row group says: parquet's reader, given no selection,
                // would read them to their end; a corrupt row group here (see `end`).
                self.next = self.selected.len();
                self.whole = false;
                Some(Err(ArrowError::ParquetError(
                    "a column chunk whose pages hold fewer rows than its row group".into(),
                )))
            }
            Err(why) => {
                self.fallback = Some(why);
                match self.take_over() {
                    Ok(r) => {
                        self.parquet = Some(r);
                        self.next()
                    }
                    Err(e) => {
                        self.next = self.selected.len();
                        Some(Err(e.into()))
                    }
                }
            }
        }
    }
}

/// Selected rows come in runs shorter than this on average for the direct reader to read
/// them; parquet's reader reads longer runs by selectors, or (from parquet's own threshold,
/// the same number) with a bitmask that decodes every row.
const SHORT_RUNS: usize = 32;

/// Selected rows come in runs at least this long on average, when most rows are kept, for the
/// direct reader to copy them out of dense pages run by run: measured on TPC-H lineitem
/// (BENCHMARKS.md, "Most rows kept"), 80% of the rows kept at random (runs of 5 on average)
/// read 7% faster than by parquet's reader, 60% (runs of 2.5) 6% slower.
const KEPT_RUNS: usize = 4;

/// How a selection's rows lie, which decides the reader ([`open`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// In short runs (see [`SHORT_RUNS`]) and at most half the rows: a filter's matches.
    Scattered,
    /// More than half the rows, in runs of [`KEPT_RUNS`] or more on average: a filter that
    /// drops few rows, scattered deleted rows.
    MostlyKept,
    /// Long runs of at most half the rows (a clustered filter), most rows in very short runs,
    /// or none.
    Other,
}

/// What one walk of a selection's selectors finds: its rows, selected rows and runs of
/// selected rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Summary {
    /// Rows the selection spans.
    pub total: usize,
    /// Rows it selects.
    pub selected: usize,
    /// Runs of selected rows (selectors that select a row).
    runs: usize,
}

impl Summary {
    /// The summary of `selection`.
    pub fn of(selection: &RowSelection) -> Self {
        let (mut selected, mut runs, mut total) = (0usize, 0usize, 0usize);
        for s in selection.iter() {
            total += s.row_count;
            if !s.skip && s.row_count > 0 {
                selected += s.row_count;
                runs += 1;
            }
        }
        Summary {
            total,
            selected,
            runs,
        }
    }

    /// How the selected rows lie.
    fn shape(&self) -> Shape {
        let (rows, runs, total) = (self.selected, self.runs, self.total);
        if runs == 0 {
            Shape::Other
        } else if rows * 2 > total {
            if rows >= runs.saturating_mul(KEPT_RUNS) {
                Shape::MostlyKept
            } else {
                Shape::Other
            }
        } else if rows < runs.saturating_mul(SHORT_RUNS) {
            Shape::Scattered
        } else {
            Shape::Other
        }
    }
}

/// The [`Shape`] of `selection`.
#[cfg(test)]
fn shape(selection: &RowSelection) -> Shape {
    Summary::of(selection).shape()
}

/// Whether the direct reader reads a selection of this shape, and how: `Some(dense)`
/// (scattered rows one by one; most rows kept from dense pages, where the CPU runs the
/// x86-64-v3 kernels), `None` (parquet's reader).
fn reads(shape: Shape) -> Option<bool> {
    match shape {
        Shape::Scattered => Some(false),
        Shape::MostlyKept if dispatch::v3() => Some(true),
        _ => None,
    }
}

/// A slot's selection as the direct reader reads it, worked out once for all the slot's
/// parts (by the filter stage that found the rows, on the decode pool) rather than by each
/// part as it opens: its [`Shape`] and, when some leaf of the slot would be read directly
/// with it, its rows written out ([`Written`]).
#[derive(Debug)]
pub(crate) struct Prepared {
    shape: Shape,
    written: Option<Arc<Written>>,
}

impl Prepared {
    /// `selection` (of row group `rg`, whose rows it spans; summarized in `summary`) as the
    /// direct reader would read the slot's `parts` (the leaves of each) with it: its rows
    /// written out when it would read some part (most rows kept: every leaf of the part;
    /// scattered rows: some leaf, the others read by parquet's reader, [`Split`]).
    pub fn new(
        meta: &ArrowReaderMetadata,
        rg: usize,
        parts: &[Vec<usize>],
        (selection, summary): (&RowSelection, Summary),
    ) -> Self {
        let shape = summary.shape();
        let rows = match reads(shape) {
            Some(true) => Rows::MostlyKept,
            Some(false) => Rows::Scattered,
            None => {
                return Prepared {
                    shape,
                    written: None,
                }
            }
        };
        let reads_leaf = |leaf: &usize| leaf_reader(meta, rg, *leaf, rows).is_some();
        let direct = parts.iter().any(|leaves| match rows {
            Rows::Scattered => leaves.iter().any(reads_leaf),
            _ => !leaves.is_empty() && leaves.iter().all(reads_leaf),
        });
        let group_rows = meta.metadata().row_group(rg).num_rows().max(0) as usize;
        let written = direct
            .then(|| Written::counted(selection, group_rows, summary.selected).map(Arc::new))
            .flatten();
        Prepared { shape, written }
    }
}

/// Whether the direct reader reads every row, or most rows (`every`: all of them), of column
/// chunk `col` (read as `dt`): when it has no null (a nullable column's statistics say so), so
/// its pages are walked densely without levels, and its values are fixed-width or views, or,
/// when some rows are dropped, offset-based strings (parquet's reader decodes every row's and
/// then copies the kept ones again; where every row is read it stays with parquet's reader,
/// which was as fast as building them row by row: the run copies of `build::copy_spans` are
/// not measured there).
fn whole(col: &ColumnChunkMetaData, nullable: bool, dt: &DataType, every: bool) -> bool {
    let no_nulls = !nullable || col.statistics().and_then(|s| s.null_count_opt()) == Some(0);
    let offsets = matches!(
        dt,
        DataType::Utf8 | DataType::Binary | DataType::LargeUtf8 | DataType::LargeBinary
    );
    no_nulls && !(offsets && every)
}

/// What the direct reader needs to read one leaf: its output field, whether it is nullable,
/// its builder and the width of its plain values (`None`: byte arrays).
type LeafReader = (
    arrow::datatypes::FieldRef,
    bool,
    Box<dyn Build>,
    Option<usize>,
);

/// Which rows of a row group the direct reader is asked for: the selection's [`Shape`], or
/// every row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rows {
    Scattered,
    MostlyKept,
    Every,
}

/// The [`LeafReader`] of `leaf` of row group `rg` when the direct reader reads it: flat, PLAIN
/// or dictionary-encoded, of a type it builds, and, for every row or most rows, one it reads
/// whole ([`whole`]); `None` otherwise.
fn leaf_reader(
    meta: &ArrowReaderMetadata,
    rg: usize,
    leaf: usize,
    rows: Rows,
) -> Option<LeafReader> {
    let descr = meta.parquet_schema();
    let col = meta.metadata().row_group(rg).columns().get(leaf)?;
    let cd = descr.columns().get(leaf)?;
    if !flat(cd) || !plain_or_dictionary(col.encodings()) {
        return None;
    }
    let field = meta
        .schema()
        .fields()
        .get(descr.get_column_root_idx(leaf))?;
    let nullable = cd.max_def_level() == 1;
    if rows != Rows::Scattered && !whole(col, nullable, field.data_type(), rows == Rows::Every) {
        return None;
    }
    let physical = (cd.physical_type(), cd.type_length());
    let (build, width) = builder_for(physical, field.data_type(), nullable)?;
    Some((Arc::clone(field), nullable, build, width))
}

/// Whether a column chunk's encodings are only those the direct reader decodes.
fn plain_or_dictionary(mut encodings: impl Iterator<Item = Encoding>) -> bool {
    encodings.all(|e| {
        matches!(
            e,
            Encoding::PLAIN | Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY | Encoding::RLE
        )
    })
}

/// A column chunk's pages ended before the selection's rows.
const END: Fallback = Fallback("fewer rows than the selection");

/// One column chunk, read page by page into its column's output.
struct ChunkReader {
    dt: DataType,
    nullable: bool,
    /// The width of plain values (`None`: byte arrays).
    width: Option<usize>,
    pages: Box<dyn PageReader>,
    /// The page being read.
    page: Option<DataPage>,
    /// The row (in the row group) where the next page starts.
    next_first: usize,
    /// Dense arrays of an earlier page, for the next one.
    spare: Dense,
    build: Box<dyn Build>,
}

/// A page is read densely when at least one row in this many is selected.
const DENSE: usize = 16;

impl ChunkReader {
    /// The values of `rows` (increasing row-group positions, after any read before), out of
    /// all the rows `selected` of the row group.
    fn read(
        &mut self,
        (rows, left): (&[u32], &[u32]),
        selected: &Selected,
    ) -> Result<ArrayRef, Fallback> {
        self.build.reserve(rows.len());
        let mut i = 0;
        while i < rows.len() {
            let r = rows[i] as usize;
            match &mut self.page {
                Some(p) if r < p.first + p.rows => {
                    let end = p.first + p.rows;
                    let n = rows[i..].partition_point(|&x| (x as usize) < end);
                    let runs = left.get(i..i + n).unwrap_or(&[]);
                    self.build.append(p, &rows[i..i + n], runs)?;
                    i += n;
                }
                _ => self.advance(r, selected)?,
            }
        }
        self.build.finish(&self.dt)
    }

    /// Make the page holding row `r` current: the dictionary page read, pages before `r`
    /// skipped (without decompressing them when their header or the offset index counts their
    /// rows); the page made dense when enough of its rows are `selected`.
    fn advance(&mut self, r: usize, selected: &Selected) -> Result<(), Fallback> {
        const HEADER: Fallback = Fallback("a page parquet's page reader refused");
        if let Some(mut old) = self.page.take() {
            self.spare = old.recycle();
        }
        loop {
            let next = self
                .pages
                .peek_next_page()
                .map_err(|_| HEADER)?
                .ok_or(END)?;
            if next.is_dict {
                let page = self.pages.get_next_page().map_err(|_| HEADER)?.ok_or(END)?;
                self.dictionary(page)?;
                continue;
            }
            let counted = next.num_rows.or(next.num_levels);
            if let Some(n) = counted {
                if self.next_first.saturating_add(n) <= r {
                    self.pages.skip_next_page().map_err(|_| HEADER)?;
                    self.next_first += n;
                    continue;
                }
            }
            let page = self.pages.get_next_page().map_err(|_| HEADER)?.ok_or(END)?;
            let mut p = DataPage::parse(page, self.next_first, self.nullable, self.width)?;
            if counted.is_some_and(|n| n != p.rows) {
                return Err(Fallback("a page whose rows differ from its header's"));
            }
            self.next_first = self.next_first.saturating_add(p.rows);
            if r < p.first + p.rows {
                if selected.count(p.first..p.first + p.rows) * DENSE >= p.rows {
                    let utf8 = matches!(
                        self.dt,
                        DataType::Utf8View | DataType::Utf8 | DataType::LargeUtf8
                    );
                    p.densify(std::mem::take(&mut self.spare), utf8)?;
                }
                self.page = Some(p);
                return Ok(());
            }
        }
    }

    /// Hand the chunk's dictionary `page` to the builder.
    fn dictionary(&mut self, page: Page) -> Result<(), Fallback> {
        let (buf, n) = match &page {
            Page::DictionaryPage {
                buf,
                num_values,
                encoding: Encoding::PLAIN | Encoding::PLAIN_DICTIONARY,
                ..
            } => (buf.clone(), *num_values as usize),
            _ => return Err(Fallback("a dictionary page that is not plain")),
        };
        if n == 0 || n >= u32::MAX as usize {
            return Err(Fallback("an empty dictionary"));
        }
        self.build.dictionary(DictPage { buf: &buf, n })
    }
}

#[cfg(test)]
mod tests;
