//! Open: everything that happens to a task's file before its row groups are planned.
//!
//! On the IO runtime: the task's object is resolved to a store, its footer (and page index)
//! fetched while its deleted rows load ([`crate::task::DeleteLoader`]), and the bloom filters
//! that can still exclude row groups fetched. On the decode pool: the task's columns are
//! mapped to the file ([`Mapping`]), the filter resolved through that mapping and judged
//! against statistics and the page index, and the task's byte range, row groups, deletes and
//! the caller's selection become per-row-group selections. The result is a [`FileRun`],
//! shared by the file's slots.
//!
//! Invariants: a file whose schema cannot produce the scan's is an error naming it (plain
//! files must match the first file's schema exactly); a deleted row is never selected; the
//! row groups a task keeps by byte range are those whose midpoint lies in the range.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, FieldRef, Fields, Schema, SchemaRef};
use parquet::arrow::arrow_reader::{RowSelection, RowSelector};
use parquet::file::metadata::ParquetMetaData;
use roaring::RoaringTreemap;

use crate::error::{Error, ErrorKind, Result};
use crate::footer::{self, FileMeta};
use crate::mapping::{Mapping, Rules};
use crate::metrics::Metrics;
use crate::plan::{self, FilePrune};
use crate::prune::{self, FileFilter, Verdict};
use crate::select::{self, RowFilterPlan};
use crate::source::FileRef;
use crate::state::{Mode, Shared, TaskId};
use crate::task::{BatchTransform, FileTask, LoadContext};

/// A file being read: what its slots share.
pub(crate) struct FileRun {
    pub meta: Arc<FileMeta>,
    /// The task's columns against this file, builds prepared.
    pub mapping: Mapping,
    /// The schema the mapping produces.
    pub schema: SchemaRef,
    pub task: Arc<TaskId>,
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

/// Open task number `index` of the scan.
pub(crate) async fn open(shared: Arc<Shared>, index: u64, task: FileTask) -> Result<Arc<FileRun>> {
    let _guard = shared.metrics.task_started();
    let opts = &shared.opts;
    let file = match task.resolved.clone() {
        Some(f) => f,
        None => match &task.store {
            Some((store, path)) => FileRef {
                store: Arc::clone(store),
                path: path.clone(),
                size: task.size,
                name: task.location.as_str().into(),
            },
            None => shared
                .stores
                .lock()
                .expect("stores lock")
                .file(&task.location, task.size)?,
        },
    };
    let name = file.name.clone();
    let plain = matches!(shared.mode, Mode::Plain(_));
    // A scan that reads only part of each file wants the metadata, not the data near it.
    let narrow = opts.filter.is_some()
        || task.selection.is_some()
        || task.range.is_some()
        || task.row_groups.is_some()
        || (plain && opts.columns.is_some());
    let deletes_expected =
        task.deletes.as_ref().is_some_and(|d| !d.is_empty()) || task.delete_loader.is_some();
    let want_index = opts.filter.is_some()
        || task.selection.is_some()
        || task.row_filter.is_some()
        || deletes_expected;
    let footer = footer::load(&shared, file, narrow, want_index);
    let loader = task.delete_loader.clone();
    let ctx = LoadContext {
        pool: Arc::clone(&shared.pool),
    };
    let loaded = async move {
        match loader {
            Some(l) => l.load(ctx).await.map(Some),
            None => Ok(None),
        }
    };
    let (meta, loaded) = futures::try_join!(footer, async {
        loaded.await.map_err(|e| {
            let msg = format!("loading deleted rows: {}", e.message());
            Error::new(e.kind(), msg).with_path(e.path().unwrap_or(&name).to_string())
        })
    })?;
    let sh = Arc::clone(&shared);
    let (mut run, blooms) = shared
        .on_pool((&name, "planning"), move || {
            prepare(&sh, index, task, meta, loaded)
        })
        .await?;
    if !blooms.is_empty() {
        check_blooms(&shared, &mut run, blooms).await?;
    }
    Ok(Arc::new(run))
}

/// Bloom filter byte ranges to check, per row group.
type Blooms = Vec<(usize, prune::BloomRanges)>;

/// The CPU part of opening a file (on the decode pool).
fn prepare(
    shared: &Shared,
    index: u64,
    mut task: FileTask,
    meta: FileMeta,
    loaded: Option<RoaringTreemap>,
) -> Result<(FileRun, Blooms)> {
    let opts = &shared.opts;
    let name: &str = &meta.file.name;
    let file_schema = Arc::clone(meta.reader.schema());
    let rules = Rules {
        name_mapping: task.name_mapping.clone(),
        strict_ids: task.strict_ids,
        positional_ids: task.positional_ids,
    };
    // The output columns, and what the filter's column names refer to.
    let (mapping, schema, filter_mapping) = match &shared.mode {
        Mode::Plain(first) => {
            let proj = plan::project(&meta, opts.columns.as_deref())?;
            let (scan_schema, first_name) =
                first.get_or_init(|| (proj.schema.clone(), name.into()));
            plan::check_schema(scan_schema, first_name, &proj, name)?;
            let mut fields: Vec<FieldRef> = proj.schema.fields().iter().cloned().collect();
            if let Some(ri) = &opts.row_index {
                if proj.schema.field_with_name(ri).is_ok() {
                    return Err(Error::new(
                        ErrorKind::InvalidArgument,
                        format!("the row index column {ri:?} has the name of a column of the file"),
                    )
                    .with_path(name));
                }
                fields.push(Arc::new(Field::new(ri, DataType::Int64, false)));
            }
            let schema = Arc::new(Schema::new_with_metadata(
                fields,
                proj.schema.metadata().clone(),
            ));
            let mapping = Mapping::identity(
                schema.fields().clone(),
                &proj.output,
                proj.roots.clone(),
                opts.row_index.is_some(),
            );
            // Filters may name any column of the file, projected or not.
            let all: Vec<usize> = (0..file_schema.fields().len()).collect();
            let whole = Mapping::identity(file_schema.fields().clone(), &all, Vec::new(), false);
            (mapping, schema, Some(whole))
        }
        Mode::Tasks(schema) => {
            let mut mapping = Mapping::resolve(
                schema.fields(),
                task.columns.as_deref(),
                rules.clone(),
                &file_schema,
                name,
            )?;
            let decoded = plan::projected_schema(&meta, &mapping.leaves())?;
            let roots: Vec<usize> = mapping.roots.iter().map(|(r, _)| *r).collect();
            mapping.prepare(&|r| decoded_root(&decoded, &roots, r), name)?;
            (mapping, Arc::clone(schema), None)
        }
    };
    let md = Arc::clone(meta.reader.metadata());
    let n = md.num_row_groups();
    let mut prune = FilePrune {
        exact: opts.filter_exact,
        row_filter: task.row_filter.is_some(),
        ..Default::default()
    };
    let resolved = match &opts.filter {
        Some(expr) => {
            match FileFilter::resolve(expr, &meta, filter_mapping.as_ref().unwrap_or(&mapping)) {
                Ok(f) => Some(f),
                // A pruning hint (`Scan::prune`) this file cannot resolve (a column it cannot
                // filter on, a literal of another type) prunes nothing: it is only a hint.
                Err(_) if !opts.filter_exact => None,
                Err(e) => return Err(e),
            }
        }
        None => None,
    };
    if let Some(f) = resolved {
        prune.verdicts = prune::row_groups(&f, &meta);
        prune.by_bloom = vec![false; n];
        prune.pages = (0..n)
            .map(|rg| match prune.verdicts[rg] {
                Verdict::Some => prune::pages(&f, &meta, rg),
                _ => None,
            })
            .collect();
        if prune.exact {
            prune.stage_leaves = f.leaves.clone();
        }
        prune.filter = Some(Arc::new(f));
    }
    let row_filter = match task.row_filter.take() {
        Some(rf) => Some(row_filter_plan(&meta, rf, rules, &mut prune)?),
        None => None,
    };
    // Which row groups the task reads, and which rows of them.
    prune.excluded = excluded(&md, &task, name)?;
    let mut deletes = task.deletes.take();
    if let Some(more) = loaded {
        match &mut deletes {
            Some(d) => *d |= more,
            None => deletes = Some(more),
        }
    }
    let mut selected = match task.selection.take() {
        Some(sel) => split_selection(&md, sel, name)?,
        None => vec![None; n],
    };
    if let Some(d) = deletes.as_ref().filter(|d| !d.is_empty()) {
        let (kept, deleted) = deletes_by_row_group(&md, d, &prune.excluded);
        Metrics::add(&shared.metrics.rows_deleted, deleted);
        for (s, k) in selected.iter_mut().zip(kept) {
            *s = match (s.take(), k) {
                (Some(a), Some(b)) => Some(a.intersection(&b)),
                (a, b) => a.or(b),
            };
        }
    }
    prune.selected = selected;
    let blooms: Blooms = match &prune.filter {
        Some(f) => (0..n)
            .filter(|&rg| prune.verdicts[rg] == Verdict::Some)
            .filter(|&rg| !prune.excluded.get(rg).copied().unwrap_or(false))
            .map(|rg| (rg, prune::bloom_ranges(f, &meta, rg)))
            .filter(|(_, r)| !r.is_empty())
            .collect(),
        None => Vec::new(),
    };
    let run = FileRun {
        meta: Arc::new(meta),
        mapping,
        schema,
        task: Arc::new(TaskId {
            index,
            tag: task.tag.take(),
        }),
        transform: task.transform.take(),
        row_filter,
        prune,
    };
    Ok((run, blooms))
}

/// The decoded field of file root `r` in a batch decoded for the roots `roots` (ascending).
fn decoded_root(decoded: &Schema, roots: &[usize], r: usize) -> Option<FieldRef> {
    let k = roots.iter().position(|x| *x == r)?;
    decoded.fields().get(k).cloned()
}

/// Resolve a task's row filter: its columns through their own mapping, prepared against the
/// filter stage's decoded batch (whose leaves it adds to the stage's).
fn row_filter_plan(
    meta: &FileMeta,
    filter: Arc<dyn crate::task::RowFilter>,
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
    let decoded = plan::projected_schema(meta, &leaves)?;
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

/// Per row group: whether the task's byte range or row group list leaves it out.
fn excluded(md: &ParquetMetaData, task: &FileTask, name: &str) -> Result<Vec<bool>> {
    let n = md.num_row_groups();
    let mut out = vec![false; n];
    if let Some(list) = &task.row_groups {
        if let Some(bad) = list.iter().find(|&&rg| rg >= n) {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("the task asks for row group {bad} of a file with {n}"),
            )
            .with_path(name));
        }
        for (rg, x) in out.iter_mut().enumerate() {
            *x = !list.contains(&rg);
        }
    }
    if let Some(range) = &task.range {
        for (rg, x) in out.iter_mut().enumerate() {
            let r = md.row_group(rg);
            // Where the row group starts: its first column chunk (dictionary page first).
            let start = r
                .columns()
                .iter()
                .map(|c| c.dictionary_page_offset().unwrap_or(c.data_page_offset()))
                .filter(|o| *o >= 0)
                .min()
                .or(r.file_offset())
                .unwrap_or(0)
                .max(0) as u64;
            let mid = start + r.compressed_size().max(0) as u64 / 2;
            if !range.contains(&mid) {
                *x = true;
            }
        }
    }
    Ok(out)
}

/// The caller's selection over a whole file, split per row group (each exactly as long).
fn split_selection(
    md: &ParquetMetaData,
    mut sel: RowSelection,
    name: &str,
) -> Result<Vec<Option<RowSelection>>> {
    let total: i64 = md.row_groups().iter().map(|rg| rg.num_rows().max(0)).sum();
    let spans = sel.row_count() + sel.skipped_row_count();
    if spans as i64 > total {
        return Err(Error::new(
            ErrorKind::InvalidArgument,
            format!("the row selection spans {spans} rows but the file has {total}"),
        )
        .with_path(name));
    }
    Ok(md
        .row_groups()
        .iter()
        .map(|rg| {
            let rows = rg.num_rows().max(0) as usize;
            Some(select::pad(sel.split_off(rows), rows))
        })
        .collect())
}

/// Per row group, the selection of rows `deletes` leaves (`None`: no row of it is deleted),
/// and how many rows of the row groups read are deleted.
fn deletes_by_row_group(
    md: &ParquetMetaData,
    deletes: &RoaringTreemap,
    excluded: &[bool],
) -> (Vec<Option<RowSelection>>, u64) {
    let mut out = Vec::with_capacity(md.num_row_groups());
    let mut it = deletes.iter().peekable();
    let mut first = 0u64;
    let mut deleted = 0u64;
    for (rg, r) in md.row_groups().iter().enumerate() {
        let rows = r.num_rows().max(0) as u64;
        let end = first + rows;
        while it.next_if(|&p| p < first).is_some() {}
        let mut selectors = Vec::new();
        let mut at = first;
        while let Some(p) = it.next_if(|&p| p < end) {
            if p > at {
                selectors.push(RowSelector::select((p - at) as usize));
            }
            // Consecutive deleted rows become one skip.
            match selectors.last_mut() {
                Some(s) if s.skip && p == at => s.row_count += 1,
                _ => selectors.push(RowSelector::skip(1)),
            }
            at = p + 1;
        }
        if selectors.is_empty() {
            out.push(None);
        } else {
            if !excluded.get(rg).copied().unwrap_or(false) {
                deleted += selectors
                    .iter()
                    .filter(|s| s.skip)
                    .map(|s| s.row_count as u64)
                    .sum::<u64>();
            }
            if end > at {
                selectors.push(RowSelector::select((end - at) as usize));
            }
            out.push(Some(RowSelection::from(selectors)));
        }
        first = end;
    }
    (out, deleted)
}

/// Fetch the bloom filters of the row groups statistics kept (one coalesced request) and
/// exclude those a bloom filter rules out.
async fn check_blooms(shared: &Arc<Shared>, run: &mut FileRun, blooms: Blooms) -> Result<()> {
    let opts = &shared.opts;
    let meta = Arc::clone(&run.meta);
    let ranges: Vec<_> = blooms
        .iter()
        .flat_map(|(_, r)| r.iter().map(|x| x.1.clone()))
        .collect();
    let gap = opts.coalesce_gap as u64;
    let (chunk, fetched) = shared
        .fetcher
        .ranges(
            (&meta.file, "bloom filters"),
            meta.size,
            &ranges,
            &meta.cached,
            gap,
            opts.request_size as u64,
        )
        .await?;
    Metrics::add(&shared.metrics.metadata_bytes, fetched);
    let filter = Arc::clone(run.prune.filter.as_ref().expect("blooms need a filter"));
    let excluded = shared
        .on_pool((&meta.file.name, "bloom filter check"), move || {
            use parquet::file::reader::ChunkReader;
            let mut out = Vec::new();
            for (rg, cols) in blooms {
                let bytes: Vec<(String, bytes::Bytes)> = cols
                    .into_iter()
                    .filter_map(|(c, r)| {
                        chunk
                            .get_bytes(r.start, (r.end - r.start) as usize)
                            .ok()
                            .map(|b| (c, b))
                    })
                    .collect();
                if prune::bloom_verdict(&filter, &bytes) == Verdict::None {
                    out.push(rg);
                }
            }
            Ok(out)
        })
        .await?;
    for rg in excluded {
        run.prune.verdicts[rg] = Verdict::None;
        run.prune.by_bloom[rg] = true;
    }
    Ok(())
}
