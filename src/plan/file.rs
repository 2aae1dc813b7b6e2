//! A task's file, opened: the CPU part of opening it, on the decode pool ([`prepare`]). The
//! task's columns are mapped to the file ([`Mapping`]), the filter resolved through that
//! mapping and judged against statistics and the page index, the task's row filter resolved,
//! and the task's byte range, row groups, deletes and the caller's selection become per row
//! group selections. The result is a [`FileRun`], shared by the file's slots. (The IO part,
//! footer and deletes and bloom filters, is `drive::open`.)
//!
//! Invariants: a file whose schema cannot produce the scan's is an error naming it (plain
//! files must match the first file's schema exactly); a deleted row is never selected.

use std::sync::{Arc, OnceLock};

use arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use roaring::RoaringTreemap;

use crate::error::{Error, ErrorKind, Result};
use crate::footer::{FileMeta, Raw};
use crate::metrics::Metrics;
use crate::options::ScanOptions;
use crate::plan::mapping::{Build, Mapping, OutCol, Rules};
use crate::plan::project::{check_schema, project, projected_schema};
use crate::plan::prune::{bloom, stats, FileFilter, Verdict};
use crate::plan::selection::{deletes_by_row_group, excluded, split_selection};
use crate::plan::slots::FilePrune;
use crate::plan::union;
use crate::task::{BatchTransform, FileTask, RowFilter, TaskInfo};

/// How a scan's output schema is known.
#[derive(Debug)]
pub(crate) enum Mode {
    /// Plain files: the schema is the first file's (projected), and every other file must
    /// match it exactly; then the Hive partition columns (see `input::hive`).
    Plain {
        /// Set when the first footer is read: (projected schema, first file's name).
        first: OnceLock<(SchemaRef, Arc<str>)>,
        /// The partition columns (none when the scan has none); each task carries its values.
        hive: Fields,
        /// A union-by-name scan: its file columns, set before the first file opens (see
        /// `plan::union`); files then map to it by name instead of matching the first.
        union: Option<OnceLock<SchemaRef>>,
    },
    /// Tasks: the caller's schema, which every task maps its file to.
    Tasks(SchemaRef),
}

/// A task's row filter resolved against its file: the columns it reads, produced through a
/// mapping prepared against the filter stage's decoded batch.
#[derive(Debug)]
pub(crate) struct RowFilterPlan {
    pub filter: Arc<dyn RowFilter>,
    pub mapping: Mapping,
    /// For each root of `mapping`, its column in the filter stage's decoded batch.
    pub columns: Vec<usize>,
}

/// A file being read: what its slots share.
pub(crate) struct FileRun {
    pub meta: Arc<FileMeta>,
    /// The task's columns against this file, builds prepared.
    pub mapping: Mapping,
    /// The schema the mapping produces.
    pub schema: SchemaRef,
    pub task: Arc<TaskInfo>,
    pub transform: Option<BatchTransform>,
    pub row_filter: Option<RowFilterPlan>,
    pub prune: FilePrune,
}

impl std::fmt::Debug for FileRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileRun")
            .field("file", &self.meta.file.name)
            .field("task", &self.task)
            .finish_non_exhaustive()
    }
}

/// The file root a plain scan's column name selects: a top-level column, or the root of a
/// dotted path (`a.b`: root `a`), as `project` resolves names.
fn root_of(meta: &FileMeta, column: &str) -> Option<usize> {
    let roots = meta.reader.parquet_schema().root_schema().get_fields();
    roots.iter().position(|f| f.name() == column).or_else(|| {
        let first = column.split('.').next()?;
        roots.iter().position(|f| f.name() == first)
    })
}

/// Bloom filter byte ranges to check, per row group.
pub(crate) type Blooms = Vec<(usize, bloom::BloomRanges)>;

/// The CPU part of opening task number `index` of a scan with `opts` in `mode` (on the decode
/// pool): `meta` is its file's footer, `loaded` the deleted rows its loader found. Returns the
/// file's run and the bloom filters left to check.
pub(crate) fn prepare(
    (opts, mode, metrics): (&ScanOptions, &Mode, &Metrics),
    index: u64,
    mut task: FileTask,
    meta: FileMeta,
    loaded: Option<RoaringTreemap>,
) -> Result<(FileRun, Blooms)> {
    let rules = Rules {
        name_mapping: task.name_mapping.clone(),
        strict_ids: task.strict_ids,
        positional_ids: task.positional_ids,
    };
    let values = task
        .partition
        .clone()
        .unwrap_or_else(|| Arc::from(Vec::new()));
    // The output columns, and what the filter's column names refer to.
    let (mapping, schema, filter_mapping) = match mode {
        Mode::Plain {
            union: Some(union),
            hive,
            ..
        } => {
            let union = union
                .get()
                .expect("a union's schema is set before files open");
            union_columns(opts, union, hive, &values, &meta)?
        }
        Mode::Plain { first, hive, .. } => plain_columns(opts, first, hive, &values, &meta)?,
        Mode::Tasks(schema) => task_columns(schema, &task, rules.clone(), &meta)?,
    };
    let filter_mapping = filter_mapping.as_ref().unwrap_or(&mapping);
    let mut prune = file_prune(opts, &meta, filter_mapping, task.row_filter.is_some())?;
    let row_filter = match task.row_filter.take() {
        Some(rf) => Some(row_filter_plan(&meta, rf, rules, &mut prune)?),
        None => None,
    };
    // Which row groups the task reads, and which rows of them.
    let md = Arc::clone(meta.reader.metadata());
    prune.excluded = excluded(&md, &task, &meta.file.name)?;
    let selected = selected_rows(&md, &mut task, loaded, &prune.excluded, metrics, &meta)?;
    prune.selected = selected.into_iter().map(|s| s.map(Arc::new)).collect();
    let blooms = bloom_checks(&prune, &meta);
    let run = FileRun {
        meta: Arc::new(meta),
        mapping,
        schema,
        task: Arc::new(TaskInfo {
            index,
            tag: task.tag.take(),
        }),
        transform: task.transform.take(),
        row_filter,
        prune,
    };
    Ok((run, blooms))
}

/// The output columns of a plain scan's file (its projected columns, which must match the
/// first file's, and the partition columns and row index), the schema, and the mapping
/// filters resolve through (every column of the file, and the partition columns).
fn plain_columns(
    opts: &ScanOptions,
    first: &OnceLock<(SchemaRef, Arc<str>)>,
    hive: &Fields,
    values: &[arrow::array::ArrayRef],
    meta: &FileMeta,
) -> Result<(Mapping, SchemaRef, Option<Mapping>)> {
    let name: &str = &meta.file.name;
    let file_schema = meta.reader.schema();
    // A key the file also holds as a column (polars writes both): the file's column is read,
    // the key adds nothing (its path value only skips files, see `scan::prune_partitions`).
    let live: Vec<usize> = (0..hive.len())
        .filter(|&i| file_schema.field_with_name(hive[i].name()).is_err())
        .collect();
    let file_columns: Option<Vec<String>> = opts.columns.as_ref().map(|cs| {
        cs.iter()
            .filter(|c| !live.iter().any(|&i| hive[i].name() == *c))
            .cloned()
            .collect()
    });
    let proj = project(meta, file_columns.as_deref())?;
    let (scan_schema, first_name) = first.get_or_init(|| (proj.schema.clone(), name.into()));
    check_schema(scan_schema, first_name, &proj, name)?;
    let keys = PlainKeys {
        hive,
        live: &live,
        values,
    };
    let mut columns = plain_output(opts.columns.as_deref(), &proj, meta, &keys);
    if let Some(ri) = &opts.row_index {
        let clash = columns.iter().any(|(f, _)| f.name() == ri);
        columns.push(row_index_column(ri, clash, name)?);
    }
    let (fields, columns): (Vec<FieldRef>, Vec<OutCol>) = columns.into_iter().unzip();
    let schema = Arc::new(Schema::new_with_metadata(
        fields,
        proj.schema.metadata().clone(),
    ));
    let mapping = Mapping::plain(schema.fields().clone(), columns, proj.roots.clone());
    // Filters may name any column of the file, projected or not, and the partition columns
    // (constants in this file).
    let all = (0..file_schema.fields().len()).map(|root| OutCol::File {
        root,
        path: Vec::new(),
        build: Build::Same,
    });
    let all_fields: Fields = file_schema
        .fields()
        .iter()
        .chain(live.iter().map(|&i| &hive[i]))
        .cloned()
        .collect();
    let consts = live.iter().map(|&i| OutCol::Const(Arc::clone(&values[i])));
    let whole = Mapping::plain(all_fields, all.chain(consts).collect(), Vec::new());
    Ok((mapping, schema, Some(whole)))
}

/// A plain file's partition columns: the scan's keys, those the file does not hold itself
/// (`live`, indexes into `hive`), and this file's values of every key.
struct PlainKeys<'a> {
    hive: &'a Fields,
    live: &'a [usize],
    values: &'a [arrow::array::ArrayRef],
}

/// The output columns of a plain file in the caller's order (`names`): file columns (each
/// root once) and partition columns; by default the file's columns, then the partition
/// columns.
fn plain_output(
    names: Option<&[String]>,
    proj: &crate::plan::project::Projection,
    meta: &FileMeta,
    keys: &PlainKeys<'_>,
) -> Vec<(FieldRef, OutCol)> {
    let PlainKeys { hive, live, values } = keys;
    let hive_index = |c: &str| live.iter().copied().find(|&i| hive[i].name() == c);
    let file_col = |i: usize| {
        let root = proj.output[i];
        let field = Arc::clone(&proj.schema.fields()[i]);
        // Columns decoded as their bytes (INTERVAL, Int128: see `footer::meta`).
        let (field, build) = match meta.raw.iter().find(|(r, _)| *r == root) {
            Some((_, Raw::Interval)) => (
                Arc::new(Field::clone(&field).with_data_type(DataType::Interval(
                    arrow::datatypes::IntervalUnit::MonthDayNano,
                ))),
                Build::Interval,
            ),
            Some((_, Raw::Int128)) => (
                Arc::new(Field::clone(&field).with_data_type(DataType::Decimal128(38, 0))),
                Build::Int128,
            ),
            None => (field, Build::Same),
        };
        let col = OutCol::File {
            root,
            path: Vec::new(),
            build,
        };
        (field, col)
    };
    let hive_col = |i: usize| (Arc::clone(&hive[i]), OutCol::Const(Arc::clone(&values[i])));
    let Some(names) = names else {
        let files = (0..proj.output.len()).map(file_col);
        return files.chain(live.iter().map(|&i| hive_col(i))).collect();
    };
    let mut columns = Vec::new();
    let mut next_file = 0;
    let mut seen_hive = Vec::new();
    for c in names {
        match hive_index(c) {
            Some(i) if !seen_hive.contains(&i) => {
                seen_hive.push(i);
                columns.push(hive_col(i));
            }
            Some(_) => {}
            // Each file name adds its root once, in order (see `project`).
            None => {
                if let Some(r) = root_of(meta, c) {
                    if next_file < proj.output.len() && proj.output[next_file] == r {
                        columns.push(file_col(next_file));
                        next_file += 1;
                    }
                }
            }
        }
    }
    columns
}

/// A task's columns (the scan's `schema`) mapped to its file, builds prepared.
fn task_columns(
    schema: &SchemaRef,
    task: &FileTask,
    rules: Rules,
    meta: &FileMeta,
) -> Result<(Mapping, SchemaRef, Option<Mapping>)> {
    let name: &str = &meta.file.name;
    let mut mapping = Mapping::resolve(
        schema.fields(),
        task.columns.as_deref(),
        rules,
        meta.reader.schema(),
        name,
    )?;
    let decoded = projected_schema(meta, &mapping.leaves())?;
    let roots: Vec<usize> = mapping.roots.iter().map(|(r, _)| *r).collect();
    mapping.prepare(&|r| decoded_root(&decoded, &roots, r), name)?;
    Ok((mapping, Arc::clone(schema), None))
}

/// The scan's filter resolved through `mapping` and judged against the file's statistics and
/// page index (`row_filter`: whether the task has a row filter of its own).
fn file_prune(
    opts: &ScanOptions,
    meta: &FileMeta,
    mapping: &Mapping,
    row_filter: bool,
) -> Result<FilePrune> {
    let n = meta.reader.metadata().num_row_groups();
    let mut prune = FilePrune {
        exact: opts.filter_exact,
        row_filter,
        ..Default::default()
    };
    let Some(expr) = &opts.filter else {
        return Ok(prune);
    };
    let f = match FileFilter::resolve(expr, meta, mapping) {
        Ok(f) => f,
        // A pruning hint (`Scan::prune`) this file cannot resolve (a column it cannot filter
        // on, a literal of another type) prunes nothing: it is only a hint.
        Err(_) if !opts.filter_exact => return Ok(prune),
        Err(e) => return Err(e),
    };
    prune.verdicts = stats::row_groups(&f, meta);
    prune.by_bloom = vec![false; n];
    prune.pages = (0..n)
        .map(|rg| match prune.verdicts[rg] {
            Verdict::Some => stats::pages(&f, meta, rg),
            _ => None,
        })
        .collect();
    if prune.exact {
        prune.stage_leaves = f.leaves.clone();
    }
    prune.filter = Some(Arc::new(f));
    Ok(prune)
}

/// Per row group, the rows the task reads (`None`: all): its selection, less its deleted rows
/// (its own and `loaded`, counted in `metrics`). A deleted position past the file's rows is a
/// `CorruptTable` error.
fn selected_rows(
    md: &parquet::file::metadata::ParquetMetaData,
    task: &mut FileTask,
    loaded: Option<RoaringTreemap>,
    excluded: &[bool],
    metrics: &Metrics,
    meta: &FileMeta,
) -> Result<Vec<Option<parquet::arrow::arrow_reader::RowSelection>>> {
    let name: &str = &meta.file.name;
    let mut deletes = task.deletes.take();
    if let Some(more) = loaded {
        match &mut deletes {
            Some(d) => *d |= more,
            None => deletes = Some(more),
        }
    }
    let mut selected = match task.selection.take() {
        Some(sel) => split_selection(md, sel, name)?,
        None => vec![None; md.num_row_groups()],
    };
    let Some(d) = deletes.as_ref().filter(|d| !d.is_empty()) else {
        return Ok(selected);
    };
    // A deleted position the file does not have: the table's metadata and its data file
    // disagree (checked before any position is walked: a bitmap's maximum is found from its
    // containers).
    let rows: u64 = md
        .row_groups()
        .iter()
        .map(|rg| rg.num_rows().max(0) as u64)
        .sum();
    if let Some(max) = d.max().filter(|&m| m >= rows) {
        return Err(Error::new(
            ErrorKind::CorruptTable,
            format!("its deleted rows include position {max}; the file has {rows} rows"),
        )
        .with_path(name));
    }
    let (kept, deleted) = deletes_by_row_group(md, d, excluded);
    Metrics::add(&metrics.rows_deleted, deleted);
    for (s, k) in selected.iter_mut().zip(kept) {
        *s = match (s.take(), k) {
            (Some(a), Some(b)) => Some(a.intersection(&b)),
            (a, b) => a.or(b),
        };
    }
    Ok(selected)
}

/// The bloom filters to check: those of the row groups the filter left undecided and the
/// task reads.
fn bloom_checks(prune: &FilePrune, meta: &FileMeta) -> Blooms {
    let Some(f) = &prune.filter else {
        return Vec::new();
    };
    (0..prune.verdicts.len())
        .filter(|&rg| prune.verdicts[rg] == Verdict::Some)
        .filter(|&rg| !prune.excluded.get(rg).copied().unwrap_or(false))
        .map(|rg| (rg, bloom::bloom_ranges(f, meta, rg)))
        .filter(|(_, r)| !r.is_empty())
        .collect()
}

/// The output columns of a union-by-name scan's file (see `plan::union`): the scan's columns
/// (all of the union's, or those named), its partition columns and row index; the schema;
/// and the mapping filters resolve through (every column of the union and the partitions).
fn union_columns(
    opts: &ScanOptions,
    union: &SchemaRef,
    hive: &Fields,
    values: &[arrow::array::ArrayRef],
    meta: &FileMeta,
) -> Result<(Mapping, SchemaRef, Option<Mapping>)> {
    let name: &str = &meta.file.name;
    // Partition keys the files also hold as a column are read from the files.
    let live: Vec<usize> = (0..hive.len())
        .filter(|&i| union.field_with_name(hive[i].name()).is_err())
        .collect();
    let mut extra: Vec<(FieldRef, OutCol)> = live
        .iter()
        .map(|&i| (Arc::clone(&hive[i]), OutCol::Const(Arc::clone(&values[i]))))
        .collect();
    let keys: Vec<&String> = live.iter().map(|&i| hive[i].name()).collect();
    let (fields, mut order) = union::select(opts.columns.as_deref(), union, &keys)
        .map_err(|why| Error::new(ErrorKind::InvalidArgument, why).with_path(name))?;
    if let Some(ri) = &opts.row_index {
        let clash = fields.iter().any(|f| f.name() == ri)
            || order.iter().flatten().any(|&k| extra[k].0.name() == ri);
        extra.push(row_index_column(ri, clash, name)?);
        order.push(Some(extra.len() - 1));
    }
    let (mapping, whole) = union::file_mapping(meta, &fields.into(), union.fields())?;
    let mapping = union::splice(mapping, &extra, &order);
    let whole_order: Vec<Option<usize>> = union
        .fields()
        .iter()
        .map(|_| None)
        .chain((0..live.len()).map(Some))
        .collect();
    let whole = union::splice(whole, &extra, &whole_order);
    let schema = Arc::new(Schema::new_with_metadata(
        mapping.fields.clone(),
        union.metadata().clone(),
    ));
    Ok((mapping, schema, Some(whole)))
}

fn decoded_root(decoded: &Schema, roots: &[usize], r: usize) -> Option<FieldRef> {
    let k = roots.iter().position(|x| *x == r)?;
    decoded.fields().get(k).cloned()
}

/// Resolve a task's row filter: its columns through their own mapping, prepared against the
/// filter stage's decoded batch (whose leaves it adds to the stage's).
fn row_filter_plan(
    meta: &FileMeta,
    filter: Arc<dyn RowFilter>,
    rules: Rules,
    prune: &mut FilePrune,
) -> Result<RowFilterPlan> {
    let name: &str = &meta.file.name;
    let (fields, sources): (Vec<FieldRef>, Vec<_>) = filter.columns().into_iter().unzip();
    let fields: Fields = fields.into();
    let mut mapping = Mapping::resolve(&fields, Some(&sources), rules, meta.reader.schema(), name)?;
    let mut leaves = prune.stage_leaves.clone();
    leaves.extend(mapping.leaves());
    leaves.sort_unstable();
    leaves.dedup();
    let descr = meta.reader.parquet_schema();
    let mut roots: Vec<usize> = leaves
        .iter()
        .map(|&l| descr.get_column_root_idx(l))
        .collect();
    roots.dedup();
    let decoded = projected_schema(meta, &leaves)?;
    mapping.prepare(&|r| decoded_root(&decoded, &roots, r), name)?;
    let columns = mapping
        .roots
        .iter()
        .map(|(r, _)| {
            roots
                .iter()
                .position(|x| x == r)
                .expect("stage reads the root")
        })
        .collect();
    prune.stage_leaves = leaves;
    Ok(RowFilterPlan {
        filter,
        mapping,
        columns,
    })
}

/// The row index column `ri` (non-null `Int64`), refused when it would `clash` with a column
/// of the file `name`.
fn row_index_column(ri: &str, clash: bool, name: &str) -> Result<(FieldRef, OutCol)> {
    if clash {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("the row index column {ri:?} has the name of a column of the file"),
        )
        .with_path(name));
    }
    Ok((
        Arc::new(Field::new(ri, DataType::Int64, false)),
        OutCol::RowIndex,
    ))
}
