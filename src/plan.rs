//! Plan: parse footers and decide the units of work, without doing any IO.
//!
//! A *slot* is one row group of one file, the unit of ordering. A slot holds one or more
//! *parts*: the column chunks one decode task reads. A row group whose projected columns are
//! large is split by top-level column into several parts, decoded in parallel and joined again
//! by the consumer, so one huge row group still keeps every decode thread busy.
//!
//! Invariants: every byte range a part will read lies inside its file (checked here, so a
//! corrupt footer is an error and never an out-of-bounds request); parts of one slot select
//! disjoint top-level columns whose union is the projection.

use std::ops::Range;
use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::{FooterTail, ParquetMetaDataReader};
use parquet::schema::types::SchemaDescriptor;

use crate::chunk::SparseChunk;
use crate::error::{Error, ErrorKind, Result};
use crate::prune::{FileFilter, Verdict};
use crate::source::FileRef;

/// Size of the Parquet footer tail: 4-byte metadata length and the `PAR1` magic.
pub(crate) const FOOTER_TAIL: u64 = 8;

/// What the footer request found at the end of a file.
pub(crate) enum Footer {
    /// The metadata (and `data`, the bytes before it that the suffix also covered).
    Complete {
        /// Thrift-encoded metadata, without the 8-byte tail.
        metadata: Bytes,
        /// Bytes of the file that precede the metadata and were fetched with it.
        prefix: Bytes,
        /// Offset of `prefix` in the file.
        prefix_start: u64,
    },
    /// The metadata is longer than the suffix: fetch `range` and call [`complete_footer`].
    NeedMore { range: Range<u64> },
}

/// Inspect the suffix `bytes` that ends file `file` of `size` bytes and starts at `start`.
pub(crate) fn parse_suffix(file: &FileRef, size: u64, start: u64, bytes: Bytes) -> Result<Footer> {
    let name = &*file.name;
    if size < FOOTER_TAIL + 4 {
        return Err(Error::new(
            ErrorKind::CorruptFooter,
            format!("file is {size} bytes, too small to be Parquet"),
        )
        .with_path(name));
    }
    if start + bytes.len() as u64 != size || bytes.len() < FOOTER_TAIL as usize {
        return Err(Error::new(
            ErrorKind::CorruptFooter,
            format!(
                "short read of the footer: got {} bytes at {start} of a {size}-byte file",
                bytes.len()
            ),
        )
        .with_path(name));
    }
    let mut tail = [0u8; FOOTER_TAIL as usize];
    tail.copy_from_slice(&bytes[bytes.len() - FOOTER_TAIL as usize..]);
    let tail = FooterTail::try_new(&tail).map_err(|e| Error::footer(e, name))?;
    if tail.is_encrypted_footer() {
        return Err(Error::new(
            ErrorKind::Encrypted,
            "the footer is encrypted (PARE magic); rayquet does not decrypt",
        )
        .with_path(name));
    }
    let meta_len = tail.metadata_length() as u64;
    if meta_len + FOOTER_TAIL + 4 > size {
        return Err(Error::new(
            ErrorKind::CorruptFooter,
            format!("metadata length {meta_len} exceeds the file size {size}"),
        )
        .with_path(name));
    }
    let meta_start = size - FOOTER_TAIL - meta_len;
    if meta_start < start {
        return Ok(Footer::NeedMore {
            range: meta_start..start,
        });
    }
    let rel = (meta_start - start) as usize;
    Ok(Footer::Complete {
        metadata: bytes.slice(rel..bytes.len() - FOOTER_TAIL as usize),
        prefix: bytes.slice(..rel),
        prefix_start: start,
    })
}

/// A file's parsed footer, ready to plan and decode from. Shared by every unit of the file.
#[derive(Debug)]
pub(crate) struct FileMeta {
    pub file: FileRef,
    pub size: u64,
    pub reader: ArrowReaderMetadata,
    /// Data bytes fetched together with the footer (a whole small file, or the end of a larger
    /// one), served to units instead of new requests.
    pub cached: SparseChunk,
    /// Offset where the metadata starts: no column chunk may extend past it.
    pub data_end: u64,
}

/// Decode the thrift metadata. CPU work: call on the decode pool.
pub(crate) fn decode_footer(
    file: FileRef,
    size: u64,
    metadata: Bytes,
    prefix: Bytes,
    prefix_start: u64,
) -> Result<FileMeta> {
    let name = file.name.clone();
    let md =
        ParquetMetaDataReader::decode_metadata(&metadata).map_err(|e| Error::footer(e, &name))?;
    let encrypted = md
        .row_groups()
        .iter()
        .flat_map(|rg| rg.columns())
        .any(|c| c.crypto_metadata().is_some());
    if encrypted {
        return Err(Error::new(
            ErrorKind::Encrypted,
            "column chunks are encrypted (plaintext footer); rayquet does not decrypt",
        )
        .with_path(&*name));
    }
    let reader = ArrowReaderMetadata::try_new(Arc::new(md), ArrowReaderOptions::new())
        .map_err(|e| Error::footer(e, &name))?;
    let data_end = size - FOOTER_TAIL - metadata.len() as u64;
    let mut cached = SparseChunk::new(size);
    if !prefix.is_empty() {
        cached.insert(prefix_start, prefix);
    }
    Ok(FileMeta {
        file,
        size,
        reader,
        cached,
        data_end,
    })
}

/// The byte range holding the file's page index (column and offset indexes), if it has one
/// that lies inside the file's data.
pub(crate) fn page_index_range(meta: &FileMeta) -> Option<Range<u64>> {
    let md = meta.reader.metadata();
    let mut range: Option<Range<u64>> = None;
    for c in md.row_groups().iter().flat_map(|rg| rg.columns()) {
        let pairs = [
            (c.column_index_offset(), c.column_index_length()),
            (c.offset_index_offset(), c.offset_index_length()),
        ];
        for (off, len) in pairs {
            if let (Some(off), Some(len)) = (off, len) {
                if off < 0 || len <= 0 {
                    return None;
                }
                let r = off as u64..off as u64 + len as u64;
                range = Some(match range {
                    None => r,
                    Some(x) => x.start.min(r.start)..x.end.max(r.end),
                });
            }
        }
    }
    range.filter(|r| r.end <= meta.data_end)
}

/// `meta` with its page index parsed from `chunk` (which holds [`page_index_range`]). A page
/// index that fails to parse is ignored: the file is then read without page pruning, as
/// parquet's own reader would read it.
pub(crate) fn with_page_index(meta: FileMeta, chunk: &SparseChunk) -> FileMeta {
    let md = meta.reader.metadata().as_ref().clone();
    let mut reader = ParquetMetaDataReader::new_with_metadata(md)
        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Optional);
    let parsed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        reader.read_page_indexes_sized(chunk, meta.size)?;
        reader.finish()
    }));
    let Ok(Ok(md)) = parsed else { return meta };
    match ArrowReaderMetadata::try_new(Arc::new(md), ArrowReaderOptions::new()) {
        Ok(reader) => FileMeta { reader, ..meta },
        Err(_) => meta,
    }
}

/// Which columns a scan reads, resolved against one file's schema.
#[derive(Debug, Clone)]
pub(crate) struct Projection {
    /// Selected leaf columns, grouped by top-level (root) column, roots in file order.
    pub roots: Vec<(usize, Vec<usize>)>,
    /// Root column indices in output order.
    pub output: Vec<usize>,
    /// The output schema: what parquet's reader returns for this projection, columns in
    /// output order.
    pub schema: SchemaRef,
}

/// Resolve `columns` (None: all) against a file. A name matches a top-level column exactly,
/// else a dotted path prefix of leaf column paths (`a.b` selects every leaf under `a.b`).
pub(crate) fn project(meta: &FileMeta, columns: Option<&[String]>) -> Result<Projection> {
    let descr: &SchemaDescriptor = meta.reader.parquet_schema();
    let root_fields = descr.root_schema().get_fields();
    let mut leaves_of_root: Vec<Vec<usize>> = vec![Vec::new(); root_fields.len()];
    let mut output: Vec<usize> = Vec::new();
    let mut add = |root: usize, leaf: usize, output: &mut Vec<usize>| {
        if !leaves_of_root[root].contains(&leaf) {
            leaves_of_root[root].push(leaf);
        }
        if !output.contains(&root) {
            output.push(root);
        }
    };
    match columns {
        None => {
            for leaf in 0..descr.num_columns() {
                add(descr.get_column_root_idx(leaf), leaf, &mut output);
            }
        }
        Some(names) => {
            for name in names {
                let exact = root_fields.iter().position(|f| f.name() == name);
                let path: Vec<&str> = name.split('.').collect();
                let mut found = false;
                for leaf in 0..descr.num_columns() {
                    let root = descr.get_column_root_idx(leaf);
                    let hit = match exact {
                        Some(r) => r == root,
                        None => {
                            let parts = descr.column(leaf).path().parts().to_vec();
                            parts.len() >= path.len()
                                && path.iter().zip(&parts).all(|(a, b)| *a == b)
                        }
                    };
                    if hit {
                        add(root, leaf, &mut output);
                        found = true;
                    }
                }
                if !found {
                    let names: Vec<_> = root_fields.iter().map(|f| f.name()).collect();
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!("no column named {name:?}; columns are {names:?}"),
                    )
                    .with_path(&*meta.file.name));
                }
            }
        }
    }
    let roots: Vec<(usize, Vec<usize>)> = leaves_of_root
        .into_iter()
        .enumerate()
        .filter(|(_, l)| !l.is_empty())
        .map(|(r, mut l)| {
            l.sort_unstable();
            (r, l)
        })
        .collect();
    // Ask parquet itself for the projected schema, so it is exactly what its reader returns.
    let all: Vec<usize> = roots.iter().flat_map(|(_, l)| l.iter().copied()).collect();
    let file_order = projected_schema(meta, &all)?;
    let in_file_order: Vec<usize> = roots.iter().map(|(r, _)| *r).collect();
    let fields = output
        .iter()
        .map(|r| {
            let i = in_file_order
                .iter()
                .position(|x| x == r)
                .expect("root is projected");
            file_order.fields()[i].clone()
        })
        .collect::<Vec<_>>();
    let schema = Arc::new(Schema::new_with_metadata(
        fields,
        file_order.metadata().clone(),
    ));
    Ok(Projection {
        roots,
        output,
        schema,
    })
}

/// The Arrow schema parquet's reader produces for these leaves of `meta`'s file.
pub(crate) fn projected_schema(meta: &FileMeta, leaves: &[usize]) -> Result<SchemaRef> {
    let mask = ProjectionMask::leaves(meta.reader.parquet_schema(), leaves.iter().copied());
    let reader = ParquetRecordBatchReaderBuilder::new_with_metadata(
        SparseChunk::new(meta.size),
        meta.reader.clone(),
    )
    .with_projection(mask)
    .with_row_groups(vec![])
    .build()
    .map_err(|e| Error::footer(e, &meta.file.name))?;
    Ok(arrow::record_batch::RecordBatchReader::schema(&reader))
}

/// One part of a slot: the leaves one decode task reads, and the bytes it needs.
#[derive(Debug, Clone)]
pub(crate) struct PartPlan {
    /// Top-level columns of this part, in file order.
    pub roots: Vec<usize>,
    pub leaves: Vec<usize>,
    /// Column chunk byte ranges, in file order.
    pub ranges: Vec<Range<u64>>,
    pub compressed: u64,
    pub uncompressed: u64,
}

/// The first stage of a filtered row group (late materialization): the filter's columns,
/// fetched and decoded first to find the rows that match.
#[derive(Debug, Clone)]
pub(crate) struct FilterStage {
    pub leaves: Vec<usize>,
    pub ranges: Vec<Range<u64>>,
    pub compressed: u64,
}

/// One row group of one file: the unit of ordering.
#[derive(Debug, Clone)]
pub(crate) struct SlotPlan {
    pub row_group: usize,
    pub rows: u64,
    /// Position in its file of the row group's first row.
    pub first_row: u64,
    /// Rows to read (the caller's selection and the pages the filter may match), `None`:
    /// all. Never empty: a row group with nothing to read is not planned.
    pub selection: Option<RowSelection>,
    /// The offset index is known: parts fetch and read only the pages of selected rows.
    pub page_level: bool,
    /// The filter still has to run on this row group (statistics could not decide).
    pub filter: Option<FilterStage>,
    pub parts: Vec<PartPlan>,
}

impl SlotPlan {
    /// Bytes the slot fetches at most (its parts, and its filter stage).
    pub fn compressed(&self) -> u64 {
        self.parts.iter().map(|p| p.compressed).sum::<u64>()
            + self.filter.as_ref().map_or(0, |f| f.compressed)
    }

    /// Rows this slot delivers, when known before decoding (no filter left to run).
    pub fn known_rows(&self) -> u64 {
        if self.filter.is_some() {
            return 0;
        }
        self.selection
            .as_ref()
            .map_or(self.rows, |s| s.row_count() as u64)
    }
    /// Uncompressed bytes of the slot's column chunks.
    pub fn uncompressed(&self) -> u64 {
        self.parts.iter().map(|p| p.uncompressed).sum()
    }
}

/// What pruning decided for one file, before planning: per row group, the filter's verdict
/// from statistics and bloom filters, the rows the page index cannot exclude, and the
/// caller's row selection.
#[derive(Debug, Clone, Default)]
pub(crate) struct FilePrune {
    pub filter: Option<FileFilter>,
    /// Empty when there is no filter (every row group: `All`).
    pub verdicts: Vec<Verdict>,
    /// Row groups a bloom filter excluded (their verdict is `None`).
    pub by_bloom: Vec<bool>,
    /// Per row group: rows whose pages the filter may match (`None`: all, or no filter).
    pub pages: Vec<Option<RowSelection>>,
    /// Per row group: the caller's selection, exactly as long as the row group.
    pub selected: Vec<Option<RowSelection>>,
}

/// Counts of what planning one file skipped.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Skipped {
    pub row_groups: u64,
    pub by_bloom: u64,
    pub pages: u64,
}

/// The validated byte range of column chunk `leaf` of row group `rg`.
fn chunk_range(meta: &FileMeta, rg: usize, leaf: usize) -> Result<Range<u64>> {
    let md = meta.reader.metadata();
    let rgm = md.row_group(rg);
    let bad = |msg: String| {
        Error::new(ErrorKind::CorruptFooter, msg)
            .with_path(&*meta.file.name)
            .with_row_group(rg)
    };
    if leaf >= rgm.num_columns() {
        return Err(bad(format!("column {leaf} missing from the row group")));
    }
    let col = rgm.column(leaf);
    let start = col
        .dictionary_page_offset()
        .unwrap_or(col.data_page_offset());
    let len = col.compressed_size();
    if start < 0 || len < 0 || (start as u64).saturating_add(len as u64) > meta.data_end {
        return Err(bad(format!(
            "column chunk {} at {start}+{len} lies outside the data of a {}-byte file",
            col.column_path(),
            meta.size
        )));
    }
    Ok(start as u64..start as u64 + len as u64)
}

/// Whether row group `rg` has an offset index for every column, so reads can skip pages.
pub(crate) fn has_offset_index(meta: &FileMeta, rg: usize) -> bool {
    let md = meta.reader.metadata();
    md.offset_index()
        .and_then(|oi| oi.get(rg))
        .is_some_and(|cols| cols.len() == md.row_group(rg).num_columns())
}

/// Byte ranges of column chunk `leaf` of row group `rg` that reading `selection`'s rows needs:
/// with an offset index (`page_level`), the dictionary page and the data pages holding
/// selected rows; else the whole chunk. Also returns how many data pages it leaves out.
pub(crate) fn chunk_ranges(
    meta: &FileMeta,
    rg: usize,
    leaf: usize,
    selection: Option<&RowSelection>,
    page_level: bool,
) -> Result<(Vec<Range<u64>>, u64)> {
    let whole = chunk_range(meta, rg, leaf)?;
    let (Some(sel), true) = (selection, page_level) else {
        return Ok((vec![whole], 0));
    };
    let oi = &meta.reader.metadata().offset_index().expect("page_level")[rg][leaf];
    let locations = oi.page_locations();
    let inside = |r: &Range<u64>| r.start >= whole.start && r.end <= whole.end && r.end > r.start;
    let pages: Vec<Range<u64>> = locations
        .iter()
        .map(|p| {
            p.offset.max(0) as u64
                ..(p.offset.max(0) as u64).saturating_add(p.compressed_page_size.max(0) as u64)
        })
        .collect();
    if locations.is_empty() || !pages.iter().all(inside) {
        // An offset index that does not fit its chunk is not trusted: read the whole chunk.
        return Ok((vec![whole], 0));
    }
    let mut ranges = Vec::new();
    let first = pages[0].start;
    if first > whole.start {
        ranges.push(whole.start..first); // dictionary page
    }
    let data = sel.scan_ranges(locations);
    let skipped = (pages.len() - data.len().min(pages.len())) as u64;
    ranges.extend(data);
    Ok((ranges, skipped))
}

/// Plan the row groups of a file that pruning keeps: byte ranges per projected column chunk
/// (or per page, under a selection with an offset index), the filter stage when the filter
/// still has to run, and the split into parts when the row group's projection is larger than
/// `split_bytes`.
pub(crate) fn plan_file(
    meta: &FileMeta,
    proj: &Projection,
    prune: &FilePrune,
    split_bytes: usize,
    threads: usize,
) -> Result<(Vec<SlotPlan>, Skipped)> {
    let md = meta.reader.metadata();
    let name = &*meta.file.name;
    let mut slots = Vec::with_capacity(md.num_row_groups());
    let mut skipped = Skipped::default();
    let mut first_row = 0u64;
    for (rg_idx, rg) in md.row_groups().iter().enumerate() {
        if rg.num_rows() < 0 {
            return Err(Error::new(
                ErrorKind::CorruptFooter,
                format!("negative row count {}", rg.num_rows()),
            )
            .with_path(name)
            .with_row_group(rg_idx));
        }
        let rows = rg.num_rows() as u64;
        let row_group_start = first_row;
        first_row += rows;
        let verdict = prune.verdicts.get(rg_idx).copied().unwrap_or(Verdict::All);
        let user = prune.selected.get(rg_idx).cloned().flatten();
        let pages = match verdict {
            Verdict::Some => prune.pages.get(rg_idx).cloned().flatten(),
            _ => None,
        };
        let selection = match (user, pages) {
            (Some(a), Some(b)) => Some(a.intersection(&b)),
            (a, b) => a.or(b),
        };
        let empty = selection.as_ref().is_some_and(|s| !s.selects_any());
        if verdict == Verdict::None || empty || (rows == 0 && prune.filter.is_some()) {
            skipped.row_groups += 1;
            if prune.by_bloom.get(rg_idx).copied().unwrap_or(false) {
                skipped.by_bloom += 1;
            }
            continue;
        }
        let page_level = selection.is_some() && has_offset_index(meta, rg_idx);
        let fraction = selection
            .as_ref()
            .map_or(1.0, |s| s.row_count() as f64 / rows.max(1) as f64);
        let filter = match (&prune.filter, verdict) {
            (Some(f), Verdict::Some) => {
                let mut ranges = Vec::new();
                for &leaf in &f.leaves {
                    let (r, n) = chunk_ranges(meta, rg_idx, leaf, selection.as_ref(), page_level)?;
                    ranges.extend(r);
                    skipped.pages += n;
                }
                let compressed = ranges.iter().map(|r| r.end - r.start).sum();
                Some(FilterStage {
                    leaves: f.leaves.clone(),
                    ranges,
                    compressed,
                })
            }
            _ => None,
        };
        // Per root: (leaves, ranges, compressed, uncompressed)
        let mut per_root = Vec::with_capacity(proj.roots.len());
        for (root, leaves) in &proj.roots {
            let mut ranges = Vec::with_capacity(leaves.len());
            let (mut comp, mut uncomp) = (0u64, 0u64);
            for &leaf in leaves {
                let (r, n) = chunk_ranges(meta, rg_idx, leaf, selection.as_ref(), page_level)?;
                comp += r.iter().map(|r| r.end - r.start).sum::<u64>();
                ranges.extend(r);
                // With a filter stage, the pages parts skip are known (and counted) only once
                // the filter has run (`pipeline`).
                if filter.is_none() {
                    skipped.pages += n;
                }
                let col = rg.column(leaf);
                uncomp += (col.uncompressed_size().max(0) as f64 * fraction) as u64;
            }
            per_root.push((*root, leaves.clone(), ranges, comp, uncomp));
        }
        let total_uncompressed: u64 = per_root.iter().map(|r| r.4).sum();
        let n_parts = if total_uncompressed > split_bytes as u64 {
            per_root.len().min(threads.max(1)).max(1)
        } else {
            1
        };
        // Greedy balance by uncompressed size: biggest root to the lightest part.
        let mut order: Vec<usize> = (0..per_root.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(per_root[i].4));
        let mut assign = vec![0usize; per_root.len()];
        let mut load = vec![0u64; n_parts];
        for i in order {
            let p = (0..n_parts).min_by_key(|&p| load[p]).unwrap_or(0);
            assign[i] = p;
            load[p] += per_root[i].4.max(1);
        }
        let mut parts: Vec<PartPlan> = (0..n_parts)
            .map(|_| PartPlan {
                roots: Vec::new(),
                leaves: Vec::new(),
                ranges: Vec::new(),
                compressed: 0,
                uncompressed: 0,
            })
            .collect();
        for (i, (root, leaves, ranges, comp, uncomp)) in per_root.into_iter().enumerate() {
            let p = &mut parts[assign[i]];
            p.roots.push(root);
            p.leaves.extend(leaves);
            p.ranges.extend(ranges);
            p.compressed += comp;
            p.uncompressed += uncomp;
        }
        parts.retain(|p| !p.roots.is_empty() || n_parts == 1);
        slots.push(SlotPlan {
            row_group: rg_idx,
            rows,
            first_row: row_group_start,
            selection,
            page_level,
            filter,
            parts,
        });
    }
    Ok((slots, skipped))
}

/// Check that `other` produces the same output columns as the scan's schema; name both files.
pub(crate) fn check_schema(
    scan_schema: &SchemaRef,
    first: &str,
    other: &Projection,
    other_name: &str,
) -> Result<()> {
    let a = scan_schema.fields();
    let b = other.schema.fields();
    let same = a.len() == b.len()
        && a.iter().zip(b.iter()).all(|(x, y)| {
            x.name() == y.name()
                && x.data_type() == y.data_type()
                && x.is_nullable() == y.is_nullable()
        });
    if same {
        return Ok(());
    }
    Err(Error::new(
        ErrorKind::SchemaMismatch,
        format!(
            "schema differs from {first}'s: {first} has {scan_schema}, {other_name} has {}",
            other.schema
        ),
    )
    .with_path(other_name))
}
