//! What the footers of a folder of Parquet files say ([`Layout`]): files, row groups, rows,
//! bytes projected, and with a filter the pages and rows that match. The table formats build
//! their layouts from [`files_layout`] of their data folders.

use std::fs::File;
use std::path::{Path, PathBuf};

use arrow::array::{Array, BooleanArray};
use parquet::arrow::arrow_reader::{
    ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::ParquetMetaDataReader;

use crate::CliResult;

/// What the footers say about a dataset and a projection.
#[derive(Debug, Default, Clone, Copy)]
pub struct Layout {
    pub files: u64,
    pub row_groups: u64,
    pub rows: u64,
    /// Bytes of all files.
    pub file_bytes: u64,
    /// Compressed bytes of the projected column chunks.
    pub projected_bytes: u64,
    /// Bytes of the footers (metadata plus the 8-byte tail).
    pub footer_bytes: u64,
    /// Files larger than the 512 KiB footer hint: they need a second round trip for data.
    pub files_over_hint: u64,
    /// With a filter: compressed bytes of the projected columns' pages that hold matching
    /// rows (plus their dictionary pages), from the offset index.
    pub matching_page_bytes: Option<u64>,
    /// With a filter: the rows that match it (what a filtered reader must deliver).
    pub matching_rows: Option<u64>,
}

/// Bytes of the pages of `columns` (all if `None`) that hold rows matching `filter` (the
/// least a reader with page-level pruning must fetch), and the matching rows. Evaluates the filter with parquet's
/// reader and arrow's kernels, and sums page sizes from the offset index.
fn matching_pages(
    path: &Path,
    columns: Option<&[&str]>,
    filter: &rayquet::Expr,
) -> CliResult<(u64, u64)> {
    let opts = ArrowReaderOptions::new()
        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Required);
    let builder = ParquetRecordBatchReaderBuilder::try_new_with_options(File::open(path)?, opts)?;
    let md = builder.metadata().clone();
    let Some(offsets) = md.offset_index() else {
        return Err(format!("{} has no offset index", path.display()).into());
    };
    let (mut total, mut rows) = (0u64, 0u64);
    for (rg, rg_offsets) in offsets.iter().enumerate() {
        let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path)?)?;
        let mask = ProjectionMask::columns(b.parquet_schema(), filter.columns());
        let mut masks = Vec::new();
        for batch in b.with_projection(mask).with_row_groups(vec![rg]).build()? {
            masks.push(filter.evaluate(&batch?)?);
        }
        // A null filter result drops the row (prep_null_mask_filter needs a null buffer).
        let masks: Vec<BooleanArray> = masks
            .into_iter()
            .map(|m| match m.null_count() {
                0 => m,
                _ => arrow::compute::prep_null_mask_filter(&m),
            })
            .collect();
        let selection = RowSelection::from_filters(&masks);
        rows += selection.row_count() as u64;
        if !selection.selects_any() {
            continue;
        }
        let rgm = md.row_group(rg);
        for (leaf, c) in rgm.columns().iter().enumerate() {
            let top = c.column_path().parts()[0].as_str();
            if columns.is_some_and(|cols| !cols.contains(&top)) {
                continue;
            }
            let pages = rg_offsets[leaf].page_locations();
            let (start, _) = c.byte_range();
            total += pages.first().map_or(0, |p| p.offset as u64 - start);
            total += selection
                .scan_ranges(pages)
                .iter()
                .map(|r| r.end - r.start)
                .sum::<u64>();
        }
    }
    Ok((total, rows))
}

/// rayquet's default footer read of a full scan (`ScanBuilder::footer_size_hint`): files
/// larger than this take a second request for their data.
const FOOTER_READ: u64 = 512 << 10;

/// Read every footer of the `*.parquet` files in `dir` (local, no latency), whatever table
/// they belong to.
pub fn files_layout(
    dir: &Path,
    columns: Option<&[&str]>,
    filter: Option<&rayquet::Expr>,
) -> CliResult<Layout> {
    let mut l = Layout::default();
    for path in parquet_files(dir)? {
        if let Some(f) = filter {
            let (bytes, rows) = matching_pages(&path, columns, f)?;
            *l.matching_page_bytes.get_or_insert(0) += bytes;
            *l.matching_rows.get_or_insert(0) += rows;
        }
        let file = File::open(&path)?;
        let size = file.metadata()?.len();
        let meta = ParquetMetaDataReader::new().parse_and_finish(&file)?;
        let footer_len = {
            use std::io::{Read, Seek, SeekFrom};
            let mut f = &file;
            let mut tail = [0u8; 8];
            f.seek(SeekFrom::End(-8))?;
            f.read_exact(&mut tail)?;
            u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as u64 + 8
        };
        l.files += 1;
        l.file_bytes += size;
        l.footer_bytes += footer_len;
        l.files_over_hint += u64::from(size > FOOTER_READ);
        for rg in meta.row_groups() {
            l.row_groups += 1;
            l.rows += rg.num_rows() as u64;
            for c in rg.columns() {
                let top = c.column_path().parts()[0].as_str();
                if columns.is_none_or(|cols| cols.contains(&top)) {
                    l.projected_bytes += c.byte_range().1;
                }
            }
        }
    }
    Ok(l)
}

/// The `*.parquet` files directly in `dir`, sorted by name.
pub fn parquet_files(dir: &Path) -> CliResult<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    files.sort();
    Ok(files)
}
