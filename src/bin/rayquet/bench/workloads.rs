//! The benchmark's workloads: a table of small structs (add a row to add a workload) and the
//! cached datasets they read.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::file::metadata::ParquetMetaDataReader;
use rayquet::gen::{self, Compression, GenOptions};

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

/// 16 files x 8 row groups: ~5.1 M rows, ~1.1 GiB decoded at scale 1.
const LINEITEM_SNAPPY: Dataset = Dataset {
    name: "lineitem-16x8-snappy",
    files: 16,
    row_groups: 8,
    rows_per_row_group: 40_000,
    compression: Compression::Snappy,
    wide: false,
};

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
    },
    Workload {
        id: "W4",
        about: "projection under latency: 2 of the 16 lineitem columns of W1",
        data: LINEITEM_SNAPPY,
        latency: true,
        columns: Some(&["l_orderkey", "l_extendedprice"]),
        budget: None,
        readers: ALL,
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
    },
    Workload {
        id: "W6",
        about: "memory: W1's data (>8x the budget) with a 32 MiB budget vs unbounded",
        data: LINEITEM_SNAPPY,
        latency: false,
        columns: None,
        budget: Some(32 << 20),
        readers: &[Sync, Rayquet, RayquetUnbounded],
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
        if self.wide {
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
}

/// Read every footer of the `*.parquet` files in `dir` (local, no latency).
pub fn layout(dir: &Path, columns: Option<&[&str]>) -> CliResult<Layout> {
    let mut l = Layout::default();
    for path in parquet_files(dir)? {
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
        l.files_over_hint += u64::from(size > rayquet::DEFAULT_FOOTER_SIZE_HINT as u64);
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
