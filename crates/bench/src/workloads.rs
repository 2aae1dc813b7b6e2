//! The benchmark's workloads: a table of small structs (add a row to add a workload) and the
//! cached datasets they read.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::{Field, Int64Type, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use rayquet_gen::{self as gen, Compression, GenOptions};

pub use crate::kinds::Dataset;
use crate::kinds::ReaderId;
pub use crate::layout::{files_layout, parquet_files, Layout};
use crate::CliResult;

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

/// The layout of the dataset in `dir`: an Iceberg or Delta table's data files, else the
/// `*.parquet` files directly in it (see [`files_layout`]).
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
    files_layout(dir, columns, filter)
}
