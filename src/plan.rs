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
    ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder,
};
use parquet::arrow::ProjectionMask;
use parquet::file::metadata::{FooterTail, ParquetMetaDataReader};
use parquet::schema::types::SchemaDescriptor;

use crate::chunk::SparseChunk;
use crate::error::{Error, ErrorKind, Result};
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

/// One row group of one file: the unit of ordering.
#[derive(Debug, Clone)]
pub(crate) struct SlotPlan {
    pub row_group: usize,
    pub rows: u64,
    pub parts: Vec<PartPlan>,
}

impl SlotPlan {
    /// Bytes the slot's parts fetch.
    pub fn compressed(&self) -> u64 {
        self.parts.iter().map(|p| p.compressed).sum()
    }
    /// Uncompressed bytes of the slot's column chunks.
    pub fn uncompressed(&self) -> u64 {
        self.parts.iter().map(|p| p.uncompressed).sum()
    }
}

/// Plan every row group of a file: byte ranges per projected column chunk, and the split into
/// parts when the row group's projection is larger than `split_bytes`.
pub(crate) fn plan_file(
    meta: &FileMeta,
    proj: &Projection,
    split_bytes: usize,
    threads: usize,
) -> Result<Vec<SlotPlan>> {
    let md = meta.reader.metadata();
    let name = &*meta.file.name;
    let mut slots = Vec::with_capacity(md.num_row_groups());
    for (rg_idx, rg) in md.row_groups().iter().enumerate() {
        let bad = |msg: String| {
            Error::new(ErrorKind::CorruptFooter, msg)
                .with_path(name)
                .with_row_group(rg_idx)
        };
        if rg.num_rows() < 0 {
            return Err(bad(format!("negative row count {}", rg.num_rows())));
        }
        // Per root: (leaves, ranges, compressed, uncompressed)
        let mut per_root = Vec::with_capacity(proj.roots.len());
        for (root, leaves) in &proj.roots {
            let mut ranges = Vec::with_capacity(leaves.len());
            let (mut comp, mut uncomp) = (0u64, 0u64);
            for &leaf in leaves {
                if leaf >= rg.num_columns() {
                    return Err(bad(format!("column {leaf} missing from the row group")));
                }
                let col = rg.column(leaf);
                let start = col
                    .dictionary_page_offset()
                    .unwrap_or(col.data_page_offset());
                let len = col.compressed_size();
                if start < 0 || len < 0 || (start as u64).saturating_add(len as u64) > meta.data_end
                {
                    return Err(bad(format!(
                        "column chunk {} at {start}+{len} lies outside the data of a {}-byte file",
                        col.column_path(),
                        meta.size
                    )));
                }
                ranges.push(start as u64..start as u64 + len as u64);
                comp += len as u64;
                uncomp += col.uncompressed_size().max(0) as u64;
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
            rows: rg.num_rows() as u64,
            parts,
        });
    }
    Ok(slots)
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
