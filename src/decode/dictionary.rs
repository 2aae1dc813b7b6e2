//! Reading a flat column chunk as its dictionary and the rows' indices into it ([`read_chunk`]),
//! for the dictionary filter ([`crate::decode::dict_filter`]).
//!
//! The dictionary page is decoded by parquet itself, fed a synthetic data page that lists each
//! entry once, so the values have exactly the Arrow type parquet's full decode gives (decimals
//! widened, strings as views, the schema's hints applied); the data pages' indices and
//! definition levels are decoded with [`crate::decode::rle`]. A null row's index is the
//! dictionary's length, where a nullable column's values hold one null. The rows' indices
//! go into a buffer the decode thread reuses ([`crate::decode::scratch`]).
//!
//! Invariants: `None` (never a panic) for anything this reader does not handle or finds
//! malformed — a page that is not dictionary-encoded, an index past the dictionary, levels or
//! counts that disagree with the page header, more or fewer rows than the row group has — so
//! the caller can leave the chunk to parquet, which reports errors as it always does.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ParquetRecordBatchReader, RowGroups};
use parquet::arrow::{parquet_to_arrow_field_levels, ProjectionMask};
use parquet::basic::{Encoding, PageType};
use parquet::column::page::{Page, PageIterator, PageMetadata, PageReader};
use parquet::file::metadata::{ColumnChunkMetaData, ParquetMetaData, RowGroupMetaData};

use crate::decode::{flat, rle, scratch};

/// What the footer says of the encodings of `col`'s data pages: `Some(true)` all
/// dictionary-encoded, `Some(false)` not all, `None` not recorded.
pub(crate) fn all_dictionary(col: &ColumnChunkMetaData) -> Option<bool> {
    let dict = |e: &Encoding| matches!(e, Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY);
    if let Some(mask) = col.page_encoding_stats_mask() {
        return Some(mask.encodings().all(|e| dict(&e)));
    }
    col.page_encoding_stats().map(|stats| {
        stats
            .iter()
            .filter(|s| s.page_type != PageType::DICTIONARY_PAGE)
            .all(|s| dict(&s.encoding))
    })
}

/// A flat column chunk read as its dictionary and the rows' indices into it.
pub(crate) struct DictChunk {
    /// The dictionary's values, then one null when the column is nullable.
    pub values: ArrayRef,
    /// Per row of the row group: its value's position in `values` (the dictionary's length
    /// for a null row).
    pub rows: Vec<u32>,
}

/// Read leaf `leaf` of row group `rg` (`rows` rows) from `pages` as a [`DictChunk`]; `None` if
/// the chunk does not start with a non-empty dictionary parquet can decode, a data page is not
/// dictionary-encoded or is malformed, or the pages do not hold exactly `rows` rows.
pub(crate) fn read_chunk(
    meta: &ArrowReaderMetadata,
    (rg, leaf): (usize, usize),
    mut pages: Box<dyn PageReader>,
    nullable: bool,
    rows: usize,
) -> Option<DictChunk> {
    let dict = pages.get_next_page().ok()??;
    let n = match &dict {
        Page::DictionaryPage { num_values, .. } => *num_values as usize,
        _ => return None,
    };
    if n == 0 || n >= u32::MAX as usize {
        return None;
    }
    let values = dictionary_values(meta, rg, leaf, dict, n, nullable).ok()?;
    if values.len() != n {
        return None;
    }
    let values = match nullable {
        true => {
            let null = new_null_array(values.data_type(), 1);
            arrow::compute::concat(&[values.as_ref(), null.as_ref()]).ok()?
        }
        false => values,
    };
    let mut out = scratch::take(rows);
    let mut chunk = ChunkState::new(rows, n as u32, nullable);
    while let Some(page) = pages.get_next_page().ok()? {
        data_page(&page, rows - out.len(), &mut out, &mut chunk)?;
    }
    if out.len() != rows {
        scratch::give(out);
        return None;
    }
    Some(DictChunk { values, rows: out })
}

impl Drop for DictChunk {
    fn drop(&mut self) {
        scratch::give(std::mem::take(&mut self.rows));
    }
}

/// What the data pages of one chunk are read against: its dictionary's length and whether
/// the column is nullable; and buffers reused across its pages, a nullable column's levels
/// and present indices, taken from the thread's spares (`scratch`) with room for the chunk's
/// rows, so that they neither grow page by page nor start in fresh memory for every chunk,
/// and given back when done.
struct ChunkState {
    entries: u32,
    nullable: bool,
    levels: Vec<u32>,
    present: Vec<u32>,
}

impl ChunkState {
    fn new(rows: usize, entries: u32, nullable: bool) -> Self {
        let room = if nullable { rows } else { 0 };
        ChunkState {
            entries,
            nullable,
            levels: scratch::take(room),
            present: scratch::take(room),
        }
    }
}

impl Drop for ChunkState {
    fn drop(&mut self) {
        scratch::give(std::mem::take(&mut self.levels));
        scratch::give(std::mem::take(&mut self.present));
    }
}

/// Append the row indices of data `page` of `chunk` to `out` (a null's: the dictionary's
/// length); `None` if it is not dictionary-encoded, is malformed or holds more than `room`
/// rows.
fn data_page(page: &Page, room: usize, out: &mut Vec<u32>, chunk: &mut ChunkState) -> Option<()> {
    let n = chunk.entries;
    // A v2 page's header also counts its rows and nulls: for a flat column, rows are values.
    let page = flat::split(page, chunk.nullable).ok()?;
    let (num, encoding, nulls) = (page.rows, page.encoding, page.nulls);
    let defs = page.defs.map(|r| &page.buf[r]);
    let data = &page.buf[page.values];
    if !matches!(
        encoding,
        Encoding::PLAIN_DICTIONARY | Encoding::RLE_DICTIONARY
    ) || num > room
    {
        return None;
    }
    let non_null = match defs {
        None => num,
        Some(defs) => {
            chunk.levels.clear();
            rle::decode(defs, 1, num, &mut chunk.levels).ok()?;
            chunk.levels.iter().filter(|d| **d == 1).count()
        }
    };
    if nulls.is_some_and(|nulls| nulls != num - non_null) {
        return None;
    }
    // Required: indices straight into `out`; nullable: the present ones, then spread.
    let present = match defs {
        None => &mut *out,
        Some(_) => {
            chunk.present.clear();
            &mut chunk.present
        }
    };
    let from = present.len();
    if non_null > 0 {
        let (&bw, packed) = data.split_first()?;
        rle::decode(packed, bw, non_null, present).ok()?;
        if present[from..].iter().any(|&i| i >= n) {
            return None;
        }
    }
    if defs.is_some() {
        let mut next = chunk.present.iter();
        for &d in &chunk.levels {
            out.push(if d == 1 { *next.next()? } else { n });
        }
    }
    Some(())
}

/// The `n` values of dictionary page `dict` of leaf `leaf`, decoded by parquet into the Arrow
/// type a full decode gives: parquet reads a synthetic data page whose indices are `0..n`.
pub(crate) fn dictionary_values(
    meta: &ArrowReaderMetadata,
    rg: usize,
    leaf: usize,
    dict: Page,
    n: usize,
    nullable: bool,
) -> parquet::errors::Result<ArrayRef> {
    let mut buf = Vec::new();
    if nullable {
        // Every entry present: one RLE run of n ones, bit width 1, after its length.
        let mut run = Vec::new();
        push_varint(&mut run, (n as u64) << 1);
        run.push(1);
        buf.extend_from_slice(&(run.len() as u32).to_le_bytes());
        buf.extend_from_slice(&run);
    }
    let bw = (u32::BITS - (n as u32 - 1).leading_zeros()).max(1) as usize;
    buf.push(bw as u8);
    let groups = n.div_ceil(8);
    push_varint(&mut buf, ((groups as u64) << 1) | 1);
    let (mut acc, mut bits) = (0u64, 0usize);
    for i in 0..groups * 8 {
        acc |= ((if i < n { i } else { 0 }) as u64) << bits;
        bits += bw;
        while bits >= 8 {
            buf.push(acc as u8);
            acc >>= 8;
            bits -= 8;
        }
    }
    let data = Page::DataPage {
        buf: Bytes::from(buf),
        num_values: n as u32,
        encoding: Encoding::RLE_DICTIONARY,
        def_level_encoding: Encoding::RLE,
        rep_level_encoding: Encoding::RLE,
        statistics: None,
    };
    let groups = Synthetic {
        md: meta.metadata(),
        rg,
        rows: n,
        pages: vec![dict, data],
    };
    let mask = ProjectionMask::leaves(meta.parquet_schema(), [leaf]);
    let levels =
        parquet_to_arrow_field_levels(meta.parquet_schema(), mask, Some(meta.schema().fields()))?;
    let reader = ParquetRecordBatchReader::try_new_with_row_groups(&levels, &groups, n, None)?;
    let mut parts = Vec::new();
    for batch in reader {
        parts.push(Arc::clone(batch?.column(0)));
    }
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    Ok(arrow::compute::concat(&refs)?)
}

fn push_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// A row group of `rows` rows whose one column chunk is `pages`.
struct Synthetic<'a> {
    md: &'a Arc<ParquetMetaData>,
    rg: usize,
    rows: usize,
    pages: Vec<Page>,
}

impl RowGroups for Synthetic<'_> {
    fn num_rows(&self) -> usize {
        self.rows
    }

    fn column_chunks(&self, _: usize) -> parquet::errors::Result<Box<dyn PageIterator>> {
        let pages = Pages(self.pages.clone().into_iter().peekable());
        Ok(Box::new(OneReader(Some(Box::new(pages)))))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(std::iter::once(self.md.row_group(self.rg)))
    }

    fn metadata(&self) -> &ParquetMetaData {
        self.md
    }
}

struct OneReader(Option<Box<dyn PageReader>>);

impl Iterator for OneReader {
    type Item = parquet::errors::Result<Box<dyn PageReader>>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.take().map(Ok)
    }
}

impl PageIterator for OneReader {}

/// Pages held in memory.
struct Pages(std::iter::Peekable<std::vec::IntoIter<Page>>);

impl Iterator for Pages {
    type Item = parquet::errors::Result<Page>;
    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(Ok)
    }
}

impl PageReader for Pages {
    fn get_next_page(&mut self) -> parquet::errors::Result<Option<Page>> {
        Ok(self.0.next())
    }

    fn peek_next_page(&mut self) -> parquet::errors::Result<Option<PageMetadata>> {
        Ok(self.0.peek().map(|p| PageMetadata {
            num_rows: None,
            num_levels: match p {
                Page::DataPage { num_values, .. } => Some(*num_values as usize),
                _ => None,
            },
            is_dict: matches!(p, Page::DictionaryPage { .. }),
        }))
    }

    fn skip_next_page(&mut self) -> parquet::errors::Result<()> {
        self.0.next();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::pages::leaf_pages;
    use crate::io::chunk::SparseChunk;
    use arrow::array::{RecordBatch, UInt32Array};
    use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};

    use crate::decode::testing::DATA;

    /// Per row group and flat leaf of `bytes` that reads as dictionary indices: the values
    /// gathered by index equal the column parquet's builder decodes. Returns how many column
    /// chunks were compared and in how many only parquet failed, and panics on a difference.
    fn compare(name: &str, bytes: &Bytes) -> (usize, usize) {
        let opts = ArrowReaderOptions::new()
            .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Optional);
        let Ok(meta) = ArrowReaderMetadata::load(bytes, opts) else {
            return (0, 0);
        };
        let md = Arc::clone(meta.metadata());
        let descr = meta.parquet_schema();
        let mut chunk = SparseChunk::new(bytes.len() as u64);
        chunk.insert(0, bytes.clone());
        let (mut compared, mut only_parquet_failed) = (0, 0);
        for rg in 0..md.num_row_groups() {
            let rows = md.row_group(rg).num_rows().max(0) as usize;
            for leaf in 0..descr.num_columns() {
                let cd = descr.column(leaf);
                if cd.path().parts().len() != 1 || cd.max_rep_level() > 0 || rows == 0 {
                    continue;
                }
                let md_name = (md.as_ref(), name);
                let checks = crate::validate::pages::PageChecks::new(1 << 30, 1024);
                let Ok(sizes) =
                    crate::validate::check_row_group(md_name, rg, &[leaf], &chunk, checks)
                else {
                    continue;
                };
                let theirs = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    ParquetRecordBatchReaderBuilder::new_with_metadata(bytes.clone(), meta.clone())
                        .with_row_groups(vec![rg])
                        .with_projection(ProjectionMask::leaves(descr, [leaf]))
                        .with_batch_size(rows.max(1))
                        .build()?
                        .collect::<std::result::Result<Vec<RecordBatch>, _>>()
                        .map_err(parquet::errors::ParquetError::from)
                }));
                let ours = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    let pages = leaf_pages(&md, rg, leaf, &chunk, sizes.into_iter().next()).ok()?;
                    let nullable = cd.max_def_level() == 1;
                    read_chunk(&meta, (rg, leaf), pages, nullable, rows)
                }))
                .unwrap_or_else(|_| panic!("{name} rg {rg} leaf {leaf}: panicked"));
                let ours = match (theirs, ours) {
                    (Ok(Ok(theirs)), Some(ours)) => (theirs, ours),
                    (_, ours) => {
                        only_parquet_failed += ours.is_some() as usize;
                        continue;
                    }
                };
                let (theirs, ours) = ours;
                if md.file_metadata().num_rows() < rows as i64 {
                    continue; // `filter_rows` leaves these to the row path
                }
                let parts: Vec<&dyn Array> = theirs.iter().map(|b| b.column(0).as_ref()).collect();
                let want = arrow::compute::concat(&parts)
                    .unwrap_or_else(|e| panic!("{name} rg {rg} leaf {leaf}: {e}"));
                let idx = UInt32Array::from(ours.rows.clone());
                let got = arrow::compute::take(&ours.values, &idx, None).unwrap();
                assert_eq!(got.to_data(), want.to_data(), "{name} rg {rg} leaf {leaf}");
                compared += 1;
            }
        }
        (compared, only_parquet_failed)
    }

    #[test]
    fn indices_gather_what_parquet_decodes_on_parquet_testing_files() {
        let mut compared = 0;
        let mut files = std::fs::read_dir(DATA)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect::<Vec<_>>();
        files.sort();
        for path in files {
            let bytes = Bytes::from(std::fs::read(&path).unwrap());
            let (n, only_parquet) = compare(&path.display().to_string(), &bytes);
            assert_eq!(only_parquet, 0, "{}", path.display());
            compared += n;
        }
        eprintln!("{compared} dictionary-encoded column chunks compared");
        assert!(compared >= 60, "only {compared} chunks compared");
    }

    /// The dictionary-encoded parquet-testing files with bytes flipped at random after the
    /// magic (pages, their headers and the footer alike): reading the indices never panics,
    /// and agrees with parquet's builder whenever both read the chunk.
    #[test]
    fn corrupted_files_never_panic_and_agree_with_parquet() {
        let files = [
            "alltypes_dictionary.parquet",
            "alltypes_plain.snappy.parquet",
            "datapage_v2.snappy.parquet",
            "data_index_bloom_encoding_stats.parquet",
            "nation.dict-malformed.parquet",
            "dict-page-offset-zero.parquet",
        ];
        let (mut compared, mut only_parquet_failed, mut seed) = (0, 0, 11u64);
        for file in files {
            let Ok(original) = std::fs::read(format!("{DATA}/{file}")) else {
                continue;
            };
            for _ in 0..300 {
                let bytes = crate::decode::testing::flip_bits(&original, &mut seed);
                let (n, only) = compare(file, &Bytes::from(bytes));
                compared += n;
                only_parquet_failed += only;
            }
        }
        eprintln!("{compared} corrupted chunks compared");
        assert!(compared > 1000, "only {compared} chunks compared");
        // What parquet rejects, this path must leave to it.
        assert_eq!(only_parquet_failed, 0);
    }
}
