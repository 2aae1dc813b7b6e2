//! The benchmark's workloads: a table of small structs (add a row to add a workload) and the
//! cached datasets they read.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch};
use arrow::datatypes::{Field, Int64Type, Schema};
use parquet::arrow::arrow_reader::{
    ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowSelection,
};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::file::metadata::ParquetMetaDataReader;
use rayquet_gen::{self as gen, Compression, GenOptions};

use super::readers::ReaderId;
use crate::CliResult;

/// A dataset, generated once per scale into `<data-dir>/<name>-s<scale>/` and reused.
#[derive(Debug, Clone, Copy)]
pub struct Dataset {
    pub name: &'static str,
    pub files: usize,
    pub row_groups: usize,
    /// Rows per row group at scale 1.
    pub rows_per_row_group: usize,
    pub compression: Compression,
    /// The 20 generated columns twice over (40 columns), for the wide-table workload.
    pub wide: bool,
}

/// One benchmark workload: a dataset, a projection, whether reads go through the simulated
/// latency, the rayquet memory budget, and the readers that run it.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    pub id: &'static str,
    pub about: &'static str,
    pub data: Dataset,
    /// Read through `LatencyStore` with the configured first-byte delay, bandwidth and
    /// connection cap (otherwise the store only counts).
    pub latency: bool,
    pub columns: Option<&'static [&'static str]>,
    /// rayquet's memory budget (`None`: the library default).
    pub budget: Option<usize>,
    pub readers: &'static [ReaderId],
    /// A filter the rayquet readers apply (`rayquet-no-filter` reads everything, for
    /// comparison).
    pub filter: Option<FilterSpec>,
}

/// A workload's filter.
#[derive(Debug, Clone, Copy)]
pub enum FilterSpec {
    /// `l_orderkey < k`, `k` chosen so that this fraction of the dataset's rows match
    /// (`l_orderkey` ascends across the files).
    SortedFraction(f64),
    /// A SQL expression.
    Sql(&'static str),
}

use ReaderId::*;

const ALL: &[ReaderId] = &[
    Sync,
    AsyncSerial,
    AsyncConcurrent,
    AsyncSpawned,
    Rayquet,
    RayquetUnordered,
];

/// The filter workloads' readers: rayquet with the filter, and without it.
const FILTERED: &[ReaderId] = &[Rayquet, RayquetUnordered, RayquetNoFilter];

/// 16 files x 8 row groups: ~5.1 M rows, ~1.1 GiB decoded at scale 1.
const LINEITEM_SNAPPY: Dataset = Dataset {
    name: "lineitem-16x8-snappy",
    files: 16,
    row_groups: 8,
    rows_per_row_group: 40_000,
    compression: Compression::Snappy,
    wide: false,
};

/// 1,000 files of 2,000 rows (~0.1 MB each): many small tasks.
const SMALL_1000: Dataset = Dataset {
    name: "small-1000x1",
    files: 1000,
    row_groups: 1,
    rows_per_row_group: 2_000,
    compression: Compression::Snappy,
    wide: false,
};

/// Plain files vs the same files as tasks with deleted rows.
const TASKS: &[ReaderId] = &[Rayquet, RayquetTasks];

/// Every workload, in report order.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        id: "W1",
        about: "CPU-bound: local, 16 files x 8 row groups, snappy",
        data: LINEITEM_SNAPPY,
        latency: false,
        columns: None,
        budget: None,
        readers: ALL,
        filter: None,
    },
    Workload {
        id: "W1z",
        about: "CPU-bound: local, 16 files x 8 row groups, zstd",
        data: Dataset {
            name: "lineitem-16x8-zstd",
            compression: Compression::Zstd,
            ..LINEITEM_SNAPPY
        },
        latency: false,
        columns: None,
        budget: None,
        readers: ALL,
        filter: None,
    },
    Workload {
        id: "W2",
        about: "many small files under latency: 100 files x ~1 MB",
        data: Dataset {
            name: "small-100x1",
            files: 100,
            row_groups: 1,
            rows_per_row_group: 16_000,
            compression: Compression::Snappy,
            wide: false,
        },
        latency: true,
        columns: None,
        budget: None,
        readers: ALL,
        filter: None,
    },
    Workload {
        id: "W3",
        about: "few big row groups under latency: 4 files x 1 row group of ~96 MiB",
        data: Dataset {
            name: "big-4x1",
            files: 4,
            row_groups: 1,
            rows_per_row_group: 2_200_000,
            compression: Compression::Snappy,
            wide: false,
        },
        latency: true,
        columns: None,
        budget: None,
        readers: ALL,
        filter: None,
    },
    Workload {
        id: "W4",
        about: "projection under latency: 2 of the 16 lineitem columns of W1",
        data: LINEITEM_SNAPPY,
        latency: true,
        columns: Some(&["l_orderkey", "l_extendedprice"]),
        budget: None,
        readers: ALL,
        filter: None,
    },
    Workload {
        id: "W5",
        about: "one wide file: local, 1 row group, 40 columns",
        data: Dataset {
            name: "wide-1x1",
            files: 1,
            row_groups: 1,
            rows_per_row_group: 600_000,
            compression: Compression::Snappy,
            wide: true,
        },
        latency: false,
        columns: None,
        budget: None,
        readers: ALL,
        filter: None,
    },
    Workload {
        id: "W6",
        about: "memory: W1's data (>8x the budget) with a 32 MiB budget vs unbounded",
        data: LINEITEM_SNAPPY,
        latency: false,
        columns: None,
        budget: Some(32 << 20),
        readers: &[Sync, Rayquet, RayquetUnbounded],
        filter: None,
    },
    Workload {
        id: "W7",
        about: "selective filter under latency: l_orderkey (sorted) < k selecting 0.1% of W1",
        data: LINEITEM_SNAPPY,
        latency: true,
        columns: None,
        budget: None,
        readers: FILTERED,
        filter: Some(FilterSpec::SortedFraction(0.001)),
    },
    Workload {
        id: "W8",
        about: "unselective filter under latency: l_quantity >= 2 (98% of W1's rows)",
        data: LINEITEM_SNAPPY,
        latency: true,
        columns: None,
        budget: None,
        readers: FILTERED,
        filter: Some(FilterSpec::Sql("l_quantity >= 2")),
    },
    Workload {
        id: "T1",
        about: "tasks: 1,000 small files, plain vs as tasks with 10% of rows deleted, local",
        data: SMALL_1000,
        latency: false,
        columns: None,
        budget: None,
        readers: TASKS,
        filter: None,
    },
    Workload {
        id: "T2",
        about: "tasks: T1's files under latency",
        data: SMALL_1000,
        latency: true,
        columns: None,
        budget: None,
        readers: TASKS,
        filter: None,
    },
    Workload {
        id: "I1",
        about: "Iceberg merge-on-read, local: 32 files, 10% of rows position-, 1% equality-deleted",
        data: super::iceberg::MOR,
        latency: false,
        columns: None,
        budget: None,
        readers: super::iceberg::READERS,
        filter: None,
    },
    Workload {
        id: "I2",
        about: "Iceberg merge-on-read: I1's table under latency (metadata, deletes and data)",
        data: super::iceberg::MOR,
        latency: true,
        columns: None,
        budget: None,
        readers: super::iceberg::READERS,
        filter: None,
    },
    Workload {
        id: "D1",
        about: "Delta, delta-kernel PR #595's table under latency: 100 files x ~1 MB",
        data: super::delta::MANY,
        latency: true,
        columns: None,
        budget: None,
        readers: super::delta::READERS,
        filter: None,
    },
    Workload {
        id: "D2",
        about: "Delta, local: 8 files x 2 large row groups",
        data: super::delta::LARGE,
        latency: false,
        columns: None,
        budget: None,
        readers: super::delta::READERS,
        filter: None,
    },
];

/// The workload named `id` (case-insensitive).
pub fn find(id: &str) -> CliResult<&'static Workload> {
    WORKLOADS
        .iter()
        .find(|w| w.id.eq_ignore_ascii_case(id))
        .ok_or_else(|| {
            let ids: Vec<&str> = WORKLOADS.iter().map(|w| w.id).collect();
            format!("unknown workload {id:?}; workloads are {ids:?}").into()
        })
}

impl Dataset {
    fn options(&self, scale: f64) -> GenOptions {
        GenOptions {
            files: self.files,
            row_groups: self.row_groups,
            rows_per_row_group: ((self.rows_per_row_group as f64 * scale) as usize).max(100),
            compression: self.compression,
            seed: 0,
        }
    }

    /// Rows of each file at `scale`.
    pub fn rows_per_file(&self, scale: f64) -> u64 {
        let o = self.options(scale);
        (o.rows_per_row_group * o.row_groups) as u64
    }

    /// The dataset's directory under `data_dir` at `scale`.
    pub fn dir(&self, data_dir: &Path, scale: f64) -> PathBuf {
        data_dir.join(format!("{}-s{scale}", self.name))
    }

    /// Generate the dataset unless a complete copy is already there; return its directory.
    /// Written into a temporary directory and renamed, so an interrupted run leaves nothing
    /// half-written under the final name.
    pub fn ensure(&self, data_dir: &Path, scale: f64) -> CliResult<PathBuf> {
        let dir = self.dir(data_dir, scale);
        if dir.join("COMPLETE").is_file() {
            return Ok(dir);
        }
        let opts = self.options(scale);
        eprintln!(
            "generating {} ({} files x {} row groups x {} rows) in {}",
            self.name,
            opts.files,
            opts.row_groups,
            opts.rows_per_row_group,
            dir.display()
        );
        let tmp = data_dir.join(format!("{}.tmp-{}", self.name, std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        if super::iceberg::write(self, &tmp, scale)? || super::delta::write(self, &tmp, scale)? {
            // An Iceberg or Delta table.
        } else if self.wide {
            write_wide(&tmp, &opts)?;
        } else {
            gen::generate(&tmp, &opts).map_err(|e| format!("{}: {e}", tmp.display()))?;
        }
        std::fs::write(tmp.join("COMPLETE"), format!("{opts:?}\n"))?;
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&tmp, &dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        Ok(dir)
    }
}

/// A 40-column version of the generated table: the 20 columns of seed 0, then the same 20
/// columns of seed 1 with `_b` appended to their names.
fn write_wide(dir: &Path, opts: &GenOptions) -> CliResult<()> {
    std::fs::create_dir_all(dir)?;
    let base = gen::schema();
    let mut fields: Vec<Field> = base.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.extend(
        base.fields()
            .iter()
            .map(|f| f.as_ref().clone().with_name(format!("{}_b", f.name()))),
    );
    let schema = Arc::new(Schema::new(fields));
    for file in 0..opts.files {
        let path = dir.join(gen::file_name(file));
        let props = gen::writer_properties(opts.compression, opts.rows_per_row_group);
        let out = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut w = ArrowWriter::try_new(out, schema.clone(), Some(props))?;
        let total = opts.rows_per_file();
        let mut row = 0u64;
        while row < total {
            let n = (total - row).min(65_536) as usize;
            let mut columns = gen::batch(file, row, n, 0).columns().to_vec();
            columns.extend_from_slice(gen::batch(file, row, n, 1).columns());
            w.write(&RecordBatch::try_new(schema.clone(), columns)?)?;
            row += n as u64;
        }
        w.close()?;
    }
    Ok(())
}

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

impl Layout {
    /// The rows `reader` must deliver.
    pub fn expected_rows(&self, reader: ReaderId) -> u64 {
        if let Some(rows) = super::iceberg::expected_rows(reader, self) {
            return rows;
        }
        match reader {
            ReaderId::RayquetNoFilter => self.rows,
            ReaderId::RayquetTasks => {
                let per_file = self.rows / self.files.max(1);
                self.rows - self.files * super::readers::deleted_positions(per_file).count() as u64
            }
            _ => self.matching_rows.unwrap_or(self.rows),
        }
    }
}

/// The workload's filter as an expression (`dir` holds its dataset).
pub fn filter(w: &Workload, dir: &Path) -> CliResult<Option<rayquet::Expr>> {
    match w.filter {
        None => Ok(None),
        Some(FilterSpec::Sql(sql)) => Ok(Some(rayquet::Expr::parse_sql(sql)?)),
        Some(FilterSpec::SortedFraction(fraction)) => {
            let files = parquet_files(dir)?;
            let rows = layout(dir, None, None)?.rows;
            let want = (rows as f64 * fraction) as usize;
            // The keys ascend across files: the `want`-th key of the first file bounds them.
            let first = File::open(files.first().ok_or("no files")?)?;
            let builder = ParquetRecordBatchReaderBuilder::try_new(first)?;
            let mask = ProjectionMask::columns(builder.parquet_schema(), ["l_orderkey"]);
            let mut seen = 0usize;
            for batch in builder.with_projection(mask).build()? {
                let batch = batch?;
                let keys = batch.column(0).as_primitive::<Int64Type>();
                if seen + keys.len() > want {
                    let key = keys.value(want - seen);
                    return Ok(Some(rayquet::col("l_orderkey").lt(key)));
                }
                seen += keys.len();
            }
            Err("the first file holds fewer rows than the filter's fraction".into())
        }
    }
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

/// Read every footer of the `*.parquet` files in `dir` (local, no latency).
pub fn layout(
    dir: &Path,
    columns: Option<&[&str]>,
    filter: Option<&rayquet::Expr>,
) -> CliResult<Layout> {
    if let Some(l) = super::iceberg::layout(dir, columns)? {
        return Ok(l);
    }
    if let Some(l) = super::delta::layout(dir, columns)? {
        return Ok(l);
    }
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
