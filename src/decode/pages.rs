//! Reading a row group's pages for parquet's decoders ([`row_group_reader`]): parquet's own
//! `ParquetRecordBatchReader`, fed by rayquet's page reader, which decompresses pages into
//! buffers of the process-wide [`pool`](crate::pool) instead of a fresh, zero-filled `Vec` per
//! page.
//!
//! How: each column chunk is read by parquet's `SerializedPageReader` over metadata cloned as
//! `UNCOMPRESSED`, so parquet parses the page headers (and skips pages by the offset index) but
//! hands the page bytes over still compressed; they are decompressed here (snappy, zstd,
//! LZ4_RAW) into a pooled buffer, which goes back to the pool when the page and every Arrow
//! array still referencing it (views into a string page) drop. The uncompressed size each page
//! claims comes from the page headers that [`crate::validate::check_row_group`] walked before.
//! The decoders are parquet's own, through its public `RowGroups` interface.
//!
//! Invariants: the batches equal those of parquet's `ParquetRecordBatchReaderBuilder` over the
//! same bytes (tests/read/conformance.rs and tests/fuzz.rs compare the two); a page decompresses to
//! exactly the size its header claims or is an error, as in parquet; chunks of other codecs
//! (gzip, brotli, Hadoop LZ4), and selections that must be read by selectors because only the
//! selected pages were fetched, are read by parquet's builder unchanged.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder, RowGroups,
    RowSelection, RowSelectionPolicy,
};
use parquet::arrow::{parquet_to_arrow_field_levels, ProjectionMask};
use parquet::basic::Compression;
use parquet::column::page::{Page, PageIterator, PageMetadata, PageReader};
use parquet::errors::{ParquetError, Result};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData, RowGroupMetaData};
use parquet::file::properties::ReaderProperties;
use parquet::file::reader::{ChunkReader, Length};
use parquet::file::serialized_reader::SerializedPageReader;

use super::bound::{self, BatchLimit, Coalesced};
use super::byte_pages::{check_page, CheckedPages, Levels};
use super::snappy;
use crate::io::chunk::{SparseChunk, SparseRead};
use crate::validate::pages::PageSizes;

/// What a reader of one row group reads: the leaves (in file order) and the uncompressed size of
/// their pages, from [`crate::validate::check_row_group`].
#[derive(Debug)]
pub(crate) struct Leaves<'a> {
    pub leaves: &'a [usize],
    pub sizes: Vec<PageSizes>,
}

/// Which rows of a row group a reader reads.
#[derive(Debug, Clone, Default)]
pub(crate) struct RowsRead {
    /// The rows to read (`None`: all).
    pub selection: Option<RowSelection>,
    /// Only the pages holding selected rows were fetched: the others must not be touched.
    pub page_level: bool,
}

/// A reader of row group `rg` of `meta`'s file, over the fetched `chunk`: the columns of
/// `leaves`, the `rows` read, in batches of `limit.rows` rows, or fewer where their values would
/// exceed `limit.bytes` ([`bound`](crate::decode::bound): parquet's reader then reads fewer
/// rows at a time, joined back up to the limits).
pub(crate) fn row_group_reader(
    meta: &ArrowReaderMetadata,
    rg: usize,
    mut leaves: Leaves<'_>,
    chunk: SparseChunk,
    rows: RowsRead,
    limit: BatchLimit,
) -> Result<Coalesced> {
    let RowsRead {
        selection,
        page_level,
    } = rows;
    let md = meta.metadata();
    let mask = ProjectionMask::leaves(meta.parquet_schema(), leaves.leaves.iter().copied());
    // As parquet's builder does: no batch larger than the file (a negative count, in a corrupt
    // footer, as parquet casts it).
    let limit = BatchLimit {
        rows: limit.rows.min(md.file_metadata().num_rows() as usize),
        ..limit
    };
    let batch_size = {
        let mut bounded: Vec<(usize, &mut PageSizes)> = leaves
            .leaves
            .iter()
            .copied()
            .zip(leaves.sizes.iter_mut())
            .collect();
        let longest = |col: &ColumnChunkMetaData, sizes: &mut PageSizes| {
            longest_dictionary_value(col, &chunk, sizes)
        };
        bound::read_rows(md, rg, &mut bounded, meta.schema(), limit, longest)
    };
    let selection = selection.map(|s| {
        if s.selects_any() {
            s
        } else {
            RowSelection::from(vec![])
        }
    });
    // A reader with a selection may skip values in a page: PLAIN byte-array pages are
    // checked first (parquet's skip steps out of a malformed one, see `byte_pages`).
    let check = selection.as_ref().is_some_and(|s| s.iter().any(|r| r.skip));
    if page_level && selection.as_ref().is_some_and(masked) {
        // Only the selected pages were fetched: they must be read by selectors, which
        // `try_new_with_row_groups` cannot be told to use for a fragmented selection. parquet
        // reads the pages itself, so the fetched byte-array pages are checked here first.
        for (&leaf, sizes) in leaves.leaves.iter().zip(&leaves.sizes) {
            check_fetched(md, rg, leaf, &chunk, sizes)?;
        }
        let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(chunk, meta.clone())
            .with_projection(mask)
            .with_row_groups(vec![rg])
            .with_batch_size(batch_size)
            .with_row_selection(selection.expect("checked"))
            .with_row_selection_policy(RowSelectionPolicy::Selectors)
            .build()?;
        return Ok(Coalesced::new(reader, limit));
    }
    let levels =
        parquet_to_arrow_field_levels(meta.parquet_schema(), mask, Some(meta.schema().fields()))?;
    let sizes = leaves
        .leaves
        .iter()
        .copied()
        .zip(leaves.sizes)
        .collect::<Vec<_>>();
    let groups = PooledRowGroups {
        chunk,
        md: Arc::clone(md),
        rg,
        sizes,
        check,
    };
    let reader =
        ParquetRecordBatchReader::try_new_with_row_groups(&levels, &groups, batch_size, selection)?;
    Ok(Coalesced::new(reader, limit))
}

/// The longest value of the dictionary page of byte-array chunk `col` (PLAIN-encoded, as
/// dictionary pages are), decompressed from `chunk` when its codec is one decompressed here
/// and kept in `sizes` for the page reader, which then takes it as it is. `None` when it cannot
/// be measured (another codec, a page not fetched or malformed: the decoder reports it).
fn longest_dictionary_value(
    col: &ColumnChunkMetaData,
    chunk: &SparseChunk,
    sizes: &mut PageSizes,
) -> Option<u64> {
    let at = sizes.shape.dictionary?;
    let codec = codec(col.compression())?;
    let stored = chunk.contiguous(at.data, at.compressed)?;
    let page = match codec {
        Codec::None => stored,
        _ => decompress(codec, &[], &stored, at.uncompressed as usize).ok()?,
    };
    let longest = bound::longest_value(&page);
    sizes.decompressed = Some((at.data, page));
    longest
}

/// Whether parquet's default policy (`RowSelectionPolicy::Auto { threshold: 32 }`, which
/// `try_new_with_row_groups` uses) reads `selection` with a bitmask, decoding every page, rather
/// than by selectors (parquet 58 `ReadPlanBuilder::resolve_selection_strategy`).
fn masked(selection: &RowSelection) -> bool {
    const THRESHOLD: usize = 32;
    let (rows, runs) = selection
        .iter()
        .filter(|s| s.row_count > 0)
        .fold((0usize, 0usize), |(r, n), s| (r + s.row_count, n + 1));
    runs == 0 || rows < runs.saturating_mul(THRESHOLD)
}

/// One row group, read through [`PooledPages`].
struct PooledRowGroups {
    chunk: SparseChunk,
    md: Arc<ParquetMetaData>,
    rg: usize,
    /// The page sizes of each leaf read.
    sizes: Vec<(usize, PageSizes)>,
    /// Whether byte-array pages are checked before parquet reads them ([`CheckedPages`]).
    check: bool,
}

impl RowGroups for PooledRowGroups {
    fn num_rows(&self) -> usize {
        self.md.row_group(self.rg).num_rows().max(0) as usize
    }

    fn column_chunks(&self, i: usize) -> Result<Box<dyn PageIterator>> {
        let sizes = self
            .sizes
            .iter()
            .find(|(leaf, _)| *leaf == i)
            .map(|(_, s)| s.clone());
        let mut reader = leaf_pages(&self.md, self.rg, i, &self.chunk, sizes)?;
        let cd = self.md.file_metadata().schema_descr().column(i);
        if let Some(levels) = Levels::of(&cd).filter(|_| self.check) {
            reader = Box::new(CheckedPages::new(reader, levels));
        }
        Ok(Box::new(OnePage(Some(reader))))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(std::iter::once(self.md.row_group(self.rg)))
    }

    fn metadata(&self) -> &ParquetMetaData {
        &self.md
    }
}

/// The pages of leaf `i` of row group `rg` of `md`'s file, read from `chunk`: decompressed into
/// pooled buffers when the codec is one rayquet decompresses (`sizes`: what the leaf's page
/// headers claim, from [`crate::validate::check_row_group`]), by parquet otherwise.
pub(crate) fn leaf_pages(
    md: &Arc<ParquetMetaData>,
    rg: usize,
    i: usize,
    chunk: &SparseChunk,
    sizes: Option<PageSizes>,
) -> Result<Box<dyn PageReader>> {
    let group = md.row_group(rg);
    let col = group.column(i);
    let rows = group.num_rows().max(0) as usize;
    let locations = md
        .offset_index()
        .filter(|oi| oi.get(rg).is_some_and(|cols| !cols.is_empty()))
        .and_then(|oi| oi[rg].get(i))
        .map(|o| o.page_locations().clone());
    let props = Arc::clone(properties());
    Ok(match codec(col.compression()) {
        Some(codec) => {
            let sizes = sizes.ok_or_else(|| {
                ParquetError::General(format!("column {i} was not planned to be read"))
            })?;
            let raw = col
                .clone()
                .into_builder()
                .set_compression(Compression::UNCOMPRESSED)
                .build()?;
            // Its own recording reader: the page it returns is found by the last range read.
            let chunk = Arc::new(Recording::new(chunk.clone()));
            let inner = SerializedPageReader::new_with_properties(
                Arc::clone(&chunk),
                &raw,
                rows,
                locations,
                props,
            )?;
            Box::new(PooledPages {
                inner,
                chunk,
                sizes,
                codec,
            })
        }
        None => Box::new(SerializedPageReader::new_with_properties(
            Arc::new(chunk.clone()),
            col,
            rows,
            locations,
            props,
        )?),
    })
}

/// Check the PLAIN byte-array pages of leaf `i` that `chunk` holds ([`check_page`]), walking
/// the leaf's pages as a reader by selectors does: every fetched page read, the others (not in
/// `chunk`, at the offset index's locations) skipped.
fn check_fetched(
    md: &Arc<ParquetMetaData>,
    rg: usize,
    i: usize,
    chunk: &SparseChunk,
    sizes: &PageSizes,
) -> Result<()> {
    let cd = md.file_metadata().schema_descr().column(i);
    let Some(levels) = Levels::of(&cd) else {
        return Ok(());
    };
    let locations = md
        .offset_index()
        .and_then(|oi| oi.get(rg))
        .and_then(|cols| cols.get(i))
        .map(|o| o.page_locations().clone())
        .unwrap_or_default();
    let mut pages = leaf_pages(md, rg, i, chunk, Some(sizes.clone()))?;
    let mut data = locations.iter();
    while let Some(head) = pages.peek_next_page()? {
        if head.is_dict {
            if let Some(p) = pages.get_next_page()? {
                check_page(&p, levels)?;
            }
            continue;
        }
        let fetched = data.next().is_none_or(|loc| {
            let at = loc.offset.max(0) as u64;
            chunk.covers(&(at..at.saturating_add(loc.compressed_page_size.max(0) as u64)))
        });
        if fetched {
            match pages.get_next_page()? {
                Some(p) => check_page(&p, levels)?,
                None => break,
            }
        } else {
            pages.skip_next_page()?;
        }
    }
    Ok(())
}

/// parquet's default reader properties (page statistics not decoded), made once.
fn properties() -> &'static Arc<ReaderProperties> {
    static PROPS: OnceLock<Arc<ReaderProperties>> = OnceLock::new();
    PROPS.get_or_init(|| Arc::new(ReaderProperties::builder().build()))
}

/// The page readers of one column: a single row group's.
struct OnePage(Option<Box<dyn PageReader>>);

impl Iterator for OnePage {
    type Item = Result<Box<dyn PageReader>>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.take().map(Ok)
    }
}

impl PageIterator for OnePage {}

/// The codecs decompressed here; the others are left to parquet.
#[derive(Debug, Clone, Copy)]
enum Codec {
    /// Stored as is: parquet's page bytes, zero-copy.
    None,
    Snappy,
    Zstd,
    Lz4Raw,
}

fn codec(c: Compression) -> Option<Codec> {
    match c {
        Compression::UNCOMPRESSED => Some(Codec::None),
        Compression::SNAPPY => Some(Codec::Snappy),
        Compression::ZSTD(_) => Some(Codec::Zstd),
        Compression::LZ4_RAW => Some(Codec::Lz4Raw),
        _ => None,
    }
}

/// The fetched bytes, remembering the last range parquet's page reader asked for: the page it
/// returns next ends there (its header and data, or its data alone), which locates the page's
/// header among those the validator walked.
#[derive(Debug)]
struct Recording {
    chunk: SparseChunk,
    start: AtomicU64,
    end: AtomicU64,
}

impl Recording {
    fn new(chunk: SparseChunk) -> Self {
        Recording {
            chunk,
            start: AtomicU64::new(0),
            end: AtomicU64::new(0),
        }
    }

    /// Offset in the file of the page data `buf` that parquet's page reader just returned.
    fn data_offset(&self, buf: &Bytes) -> Option<u64> {
        let (start, end) = (self.start.load(Relaxed), self.end.load(Relaxed));
        end.checked_sub(buf.len() as u64).filter(|at| *at >= start)
    }
}

impl Length for Recording {
    fn len(&self) -> u64 {
        self.chunk.len()
    }
}

impl ChunkReader for Recording {
    type T = SparseRead;

    fn get_read(&self, start: u64) -> Result<SparseRead> {
        self.chunk.get_read(start)
    }

    fn get_bytes(&self, start: u64, length: usize) -> Result<Bytes> {
        self.start.store(start, Relaxed);
        self.end.store(start.saturating_add(length as u64), Relaxed);
        self.chunk.get_bytes(start, length)
    }
}

/// parquet's page reader over the column chunk's still-compressed pages, decompressing each
/// into a pooled buffer.
struct PooledPages {
    inner: SerializedPageReader<Recording>,
    chunk: Arc<Recording>,
    sizes: PageSizes,
    codec: Codec,
}

impl PooledPages {
    /// The uncompressed size the header of the page whose data is `buf` claims.
    fn claimed(&self, buf: &Bytes) -> Result<usize> {
        self.chunk
            .data_offset(buf)
            .and_then(|at| self.sizes.get(at))
            .ok_or_else(|| {
                ParquetError::General("a page was read whose header was not checked".into())
            })
    }

    fn decompress(&mut self, mut page: Page) -> Result<Page> {
        if matches!(self.codec, Codec::None) {
            return Ok(page);
        }
        match &mut page {
            // Decompressed already, to measure its values (`longest_dictionary_value`).
            Page::DictionaryPage { buf, .. }
                if self.sizes.decompressed.as_ref().map(|(at, _)| *at)
                    == self.chunk.data_offset(buf) =>
            {
                let (_, page) = self.sizes.decompressed.take().expect("checked");
                *buf = page;
            }
            Page::DictionaryPage { buf, .. } | Page::DataPage { buf, .. } => {
                *buf = decompress(self.codec, &[], buf, self.claimed(buf)?)?;
            }
            // A v2 page's levels are stored uncompressed before its values.
            Page::DataPageV2 {
                buf,
                def_levels_byte_len,
                rep_levels_byte_len,
                is_compressed: true,
                ..
            } => {
                let levels = (*def_levels_byte_len as usize)
                    .checked_add(*rep_levels_byte_len as usize)
                    .filter(|l| *l <= buf.len())
                    .ok_or_else(|| ParquetError::General("Invalid page header".into()))?;
                let claimed = self.claimed(buf)?;
                *buf = decompress(self.codec, &buf[..levels], &buf[levels..], claimed)?;
            }
            Page::DataPageV2 { .. } => {}
        }
        Ok(page)
    }
}

thread_local! {
    /// One zstd decompression context per decode thread.
    static ZSTD: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// `prefix` (a v2 page's levels, stored uncompressed) followed by `input` decompressed, into a
/// pooled buffer of exactly `claimed` bytes (the page's uncompressed size, prefix included);
/// anything else is an error, as in parquet's `decode_page`.
fn decompress(codec: Codec, prefix: &[u8], input: &[u8], claimed: usize) -> Result<Bytes> {
    let want = claimed
        .checked_sub(prefix.len())
        .ok_or_else(|| ParquetError::General("Invalid page header".into()))?;
    // The whole buffer: snappy's loop writes whole 32-byte moves into the spare bytes after the
    // page (asked for here, so that it runs to the page's end); the other codecs get exactly the
    // page.
    let mut out = crate::pool::pool().take(claimed, snappy::DST_SLOP);
    let (head, dst) = out.with_spare().split_at_mut(prefix.len());
    head.copy_from_slice(prefix);
    // An empty page (no non-null value) has nothing to decompress.
    if want > 0 {
        let got = match codec {
            Codec::None => unreachable!("not decompressed"),
            Codec::Snappy => {
                let n = snappy::decompress_into(input, dst, want)
                    .map_err(|e| ParquetError::External(Box::new(e)))?;
                // As parquet, which zero-fills its buffer to the claimed size first: a shorter
                // stream leaves zeros (a longer one is an error above).
                dst[n..want].fill(0);
                want
            }
            Codec::Zstd => ZSTD.with(|z| {
                let mut z = z.borrow_mut();
                if z.is_none() {
                    *z = Some(zstd::bulk::Decompressor::new().map_err(ext)?);
                }
                let d = z.as_mut().expect("set above");
                d.decompress_to_buffer(input, &mut dst[..want]).map_err(ext)
            })?,
            Codec::Lz4Raw => lz4_flex::block::decompress_into(input, &mut dst[..want])
                .map_err(|e| ParquetError::External(Box::new(e)))?,
        };
        if got != want {
            return Err(ParquetError::General(format!(
                "Actual decompressed size doesn't match the expected one ({} vs {claimed})",
                got + prefix.len()
            )));
        }
    }
    Ok(out.freeze())
}

fn ext(e: std::io::Error) -> ParquetError {
    ParquetError::External(Box::new(e))
}

impl Iterator for PooledPages {
    type Item = Result<Page>;
    fn next(&mut self) -> Option<Self::Item> {
        self.get_next_page().transpose()
    }
}

impl PageReader for PooledPages {
    fn get_next_page(&mut self) -> Result<Option<Page>> {
        match self.inner.get_next_page()? {
            Some(p) => Ok(Some(self.decompress(p)?)),
            None => Ok(None),
        }
    }

    fn peek_next_page(&mut self) -> Result<Option<PageMetadata>> {
        self.inner.peek_next_page()
    }

    fn skip_next_page(&mut self) -> Result<()> {
        self.inner.skip_next_page()
    }

    fn at_record_boundary(&mut self) -> Result<bool> {
        self.inner.at_record_boundary()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::RecordBatch;
    use parquet::arrow::arrow_reader::ArrowReaderOptions;

    use crate::decode::testing::{alternating, checked_row_groups, DATA};

    /// Every row group of `bytes` read by parquet's builder and by [`row_group_reader`], with
    /// `selection(rows)` (when it gives one): the same batches, or both an error.
    fn compare(name: &str, bytes: &Bytes, selection: impl Fn(usize) -> Option<RowSelection>) {
        let policy = parquet::file::metadata::PageIndexPolicy::Optional;
        let opts = ArrowReaderOptions::new().with_page_index_policy(policy);
        let Ok(meta) = ArrowReaderMetadata::load(bytes, opts) else {
            return;
        };
        let md = Arc::clone(meta.metadata());
        let leaves: Vec<usize> = (0..md.file_metadata().schema_descr().num_columns()).collect();
        let (chunk, groups) = checked_row_groups((&md, name), bytes, &leaves, 1024);
        for (rg, rows, sizes) in groups {
            let sel = selection(rows);
            let theirs = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut b =
                    ParquetRecordBatchReaderBuilder::new_with_metadata(bytes.clone(), meta.clone())
                        .with_row_groups(vec![rg])
                        .with_batch_size(1024);
                if let Some(s) = sel.clone() {
                    b = b.with_row_selection(s);
                }
                b.build()?
                    .collect::<std::result::Result<Vec<RecordBatch>, _>>()
            }));
            let Ok(theirs) = theirs else { continue };
            let leaves = Leaves {
                leaves: &leaves,
                sizes,
            };
            let ours = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let limit = BatchLimit::rows(1024);
                row_group_reader(
                    &meta,
                    rg,
                    leaves,
                    chunk.clone(),
                    RowsRead {
                        selection: sel.clone(),
                        page_level: false,
                    },
                    limit,
                )?
                .collect::<std::result::Result<Vec<RecordBatch>, _>>()
                .map_err(ParquetError::from)
            }));
            let ours = ours.unwrap_or_else(|_| panic!("{name} rg {rg}: pooled reader panicked"));
            match (theirs, ours) {
                (Ok(t), Ok(o)) => assert_eq!(t, o, "{name} rg {rg} selection {sel:?}"),
                (Err(_), Err(_)) => {}
                (t, o) => panic!(
                    "{name} rg {rg}: parquet {:?}, pooled {:?}",
                    t.map(|b| b.len()),
                    o.map(|b| b.len())
                ),
            }
        }
    }

    #[test]
    fn pooled_pages_read_as_parquet_does() {
        let mut read = 0;
        for entry in std::fs::read_dir(DATA).expect("the parquet-testing files") {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "parquet") {
                continue;
            }
            let name = path.display().to_string();
            let bytes = Bytes::from(std::fs::read(&path).unwrap());
            compare(&name, &bytes, |_| None);
            compare(&name, &bytes, |rows| Some(alternating(rows, 1)));
            compare(&name, &bytes, |rows| Some(alternating(rows, 97)));
            read += 1;
        }
        assert!(read > 50, "only {read} files");
    }

    #[test]
    fn pool_buffers_come_back_after_a_read() {
        // Pages of a snappy file decompress into pooled buffers, returned when dropped.
        let path = format!("{DATA}/alltypes_plain.snappy.parquet");
        let bytes = Bytes::from(std::fs::read(path).unwrap());
        compare("alltypes_plain.snappy", &bytes, |_| None);
        assert!(crate::pool::pool().idle_bytes() > 0);
    }
}
