//! Open: a task's file before its row groups are planned, on the IO runtime. The task's object
//! is resolved to a store, its footer (and page index) fetched while its deleted rows load
//! ([`crate::task::DeleteLoader`]); the CPU part runs on the decode pool
//! ([`crate::plan::file::prepare`]); then the bloom filters that can still exclude row groups
//! are fetched and checked.
//!
//! Invariant: every error names the task's file; a delete loader's error keeps the file it
//! names (a deletion vector, a delete file).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow::datatypes::{DataType, SchemaRef};
use futures::StreamExt;

use crate::drive::tasks::AbortOnDrop;
use crate::drive::DriveCtx;
use crate::error::{Error, ErrorKind, Result};
use crate::footer;
use crate::footer::fetch::FooterRead;
use crate::footer::meta::FileMeta;
use crate::input::FileRef;
use crate::metrics::Metrics;
use crate::options::{Reach, ScanOptions};
use crate::plan::file::{prepare, Blooms, FileRun, Mode};
use crate::plan::prune::{bloom, Verdict};
use crate::plan::union::Union;
use crate::task::{FileTask, LoadContext};

/// The IO window a scan opens at once when it opens a file on a far store: about what 48
/// requests in flight bring in one 30 ms round trip at ~50 MB/s each.
const FAR_WINDOW: u64 = 64 << 20;

/// How the footer of `task`'s file is read in a scan with `opts` (`plain`: a scan of plain
/// files; `views`: it decodes strings to views, [`decode_views`]).
pub(crate) fn footer_plan(
    opts: &ScanOptions,
    plain: bool,
    task: &FileTask,
    views: bool,
) -> FooterRead {
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
    FooterRead {
        narrow,
        want_index,
        views,
    }
}

/// Whether the files of a scan in `mode` decode strings and binaries to views: plain files as
/// [`ScanOptions::string_views`] says (their views are the scan's output); task scans when
/// their output schema has a view type, whatever the option (each column is cast to its output
/// type: views decoded for a `Utf8` output would be copied again, measured 17% of the CPU of
/// the CLI's `--delta` scan of a table with a string column).
fn decode_views(opts: &ScanOptions, mode: &Mode) -> bool {
    fn has_views(t: &DataType) -> bool {
        match t {
            DataType::Utf8View | DataType::BinaryView => true,
            DataType::Struct(fs) => fs.iter().any(|f| has_views(f.data_type())),
            DataType::List(f)
            | DataType::LargeList(f)
            | DataType::ListView(f)
            | DataType::LargeListView(f)
            | DataType::FixedSizeList(f, _)
            | DataType::Map(f, _) => has_views(f.data_type()),
            DataType::Dictionary(_, v) => has_views(v),
            DataType::RunEndEncoded(_, v) => has_views(v.data_type()),
            _ => false,
        }
    }
    match mode {
        Mode::Plain { .. } => opts.string_views,
        Mode::Tasks(schema) => schema.fields().iter().any(|f| has_views(f.data_type())),
    }
}

/// The object task `task` reads, resolved to its store.
fn file_of(ctx: &DriveCtx, task: &FileTask) -> Result<FileRef> {
    Ok(match &task.store {
        Some((store, path)) => FileRef {
            store: Arc::clone(store),
            path: path.clone(),
            size: task.size,
            name: task.location.as_str().into(),
            version: task.version.clone(),
        },
        None => {
            let mut file = ctx.stores.lock().expect("stores lock").file(
                &task.location,
                task.size,
                task.literal,
            )?;
            // A version the task was given (FileTask::version) keys the footer cache.
            file.version = task.version.clone();
            file
        }
    })
}

/// The schema of a union-by-name scan of `tasks` (plain files): every footer read (metadata
/// only, as many at once as requests may be in flight, kept in the footer cache for the scan's
/// own opening of each file) and folded in the tasks' order (see `plan::union`).
pub(crate) fn union_schema(ctx: &Arc<DriveCtx>, tasks: &[FileTask]) -> Result<SchemaRef> {
    let files = tasks
        .iter()
        .map(|t| file_of(ctx, t))
        .collect::<Result<Vec<_>>>()?;
    let io = ctx.opts.io_handle();
    crate::runtime::block_on_io(&io, fold_schemas(Arc::clone(ctx), files))
}

async fn fold_schemas(ctx: Arc<DriveCtx>, files: Vec<FileRef>) -> Result<SchemaRef> {
    let count = files.len() as u64;
    let views = decode_views(&ctx.opts, &ctx.mode);
    let mut metas = futures::stream::iter(files)
        .map(|f| {
            footer::fetch::load(
                &ctx.fetcher,
                &ctx.decode.pool,
                &ctx.opts,
                f,
                FooterRead {
                    narrow: true,
                    want_index: false,
                    views,
                },
            )
        })
        .buffered(ctx.opts.requests_in_flight(Reach::Far).max(1));
    let mut union = Union::default();
    while let Some(meta) = metas.next().await {
        let meta = meta?;
        union.add(meta.reader.schema(), &meta.file.name)?;
    }
    // Each file counts once in `files`, when the scan opens it.
    ctx.metrics()
        .files
        .fetch_sub(count, std::sync::atomic::Ordering::Relaxed);
    Ok(union.schema())
}

/// Most files opened ahead of the one being planned (see `driver::Lookahead`).
pub(crate) const MAX_FILES_AHEAD: usize = 256;

/// The lookahead's sizes in KiB under `opts`: what the files opened ahead may bring at once
/// (a quarter of the memory budget, or of the shared memory limit if smaller), and the most
/// one file counts for, so that `footers_ahead` files always fit.
pub(crate) fn ahead_kib(opts: &ScanOptions) -> (usize, usize) {
    let memory = match &opts.limits {
        Some(s) => opts.memory_budget.min(s.memory_limit()),
        None => opts.memory_budget,
    };
    let limit_kib = ((memory / 4) >> 10).clamp(1, u32::MAX as usize / 2);
    let max_kib = (limit_kib / opts.tuning.footers_ahead.max(1)).max(1);
    (limit_kib, max_kib)
}

/// What opening `task` brings into memory (its footer read, in bytes) and the KiB it counts
/// for in the lookahead (at most `max_kib`). The task's store is not resolved yet: counted as
/// a far one's, whose reads are the larger (a small file read whole).
pub(crate) fn ahead_charge(
    opts: &ScanOptions,
    plain: bool,
    task: &FileTask,
    max_kib: usize,
) -> (usize, usize) {
    let narrow = footer_plan(opts, plain, task, false).narrow;
    let bytes = opts.footer_read(task.size, narrow, Reach::Far) as usize;
    (bytes, (bytes >> 10).clamp(1, max_kib))
}

/// Footer reads of a plain scan's next files, started with the first file's: the scan's schema
/// comes from the first footer, and without these the next files' footers would be requested
/// only once it has arrived, a round trip later on an object store. Keyed by task index; each
/// is taken once, by [`open`]; those never taken are aborted with the scan.
#[derive(Default)]
pub(crate) struct EarlyFooters(Mutex<HashMap<u64, AbortOnDrop<Result<FileMeta>>>>);

impl std::fmt::Debug for EarlyFooters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map_or(0, |m| m.len());
        f.debug_tuple("EarlyFooters").field(&n).finish()
    }
}

impl EarlyFooters {
    fn take(&self, index: u64) -> Option<AbortOnDrop<Result<FileMeta>>> {
        self.0.lock().expect("early footers lock").remove(&index)
    }
}

/// Start the footer reads of `tasks` (numbered from `first_index`) on `io` now, for [`open`]
/// to take. Only when their files are on a far store (a local open costs no round trip), the
/// scan has no limit (it may need only the first file) and no shared limits (whose pool grants
/// each footer read), and only the leading files the driver's lookahead admits at once when it
/// starts (counted as it counts them: [`ahead_charge`]), so these bytes are those it reserves
/// first, a round trip sooner.
pub(crate) fn read_footers_early(
    ctx: &Arc<DriveCtx>,
    io: &tokio::runtime::Handle,
    first_index: u64,
    tasks: &[FileTask],
) -> Result<()> {
    let opts = &ctx.opts;
    if opts.limit.is_some() || opts.limits.is_some() {
        return Ok(());
    }
    let plain = matches!(ctx.mode, Mode::Plain { .. });
    let views = decode_views(opts, &ctx.mode);
    let (limit_kib, max_kib) = ahead_kib(opts);
    let mut kib = 0;
    let mut early = ctx.early.0.lock().expect("early footers lock");
    for (i, task) in tasks.iter().take(MAX_FILES_AHEAD).enumerate() {
        kib += ahead_charge(opts, plain, task, max_kib).1;
        if kib > limit_kib {
            break;
        }
        let file = file_of(ctx, task)?;
        if Reach::of(file.store.as_ref()) != Reach::Far {
            break;
        }
        let read = footer_plan(opts, plain, task, views);
        let c = Arc::clone(ctx);
        let load = async move {
            footer::fetch::load(&c.fetcher, &c.decode.pool, &c.opts, file, read).await
        };
        early.insert(first_index + i as u64, AbortOnDrop(io.spawn(load)));
    }
    Ok(())
}

/// Open task number `index` of the scan.
pub(crate) async fn open(ctx: Arc<DriveCtx>, index: u64, task: FileTask) -> Result<Arc<FileRun>> {
    let _guard = ctx.metrics().task_started();
    let opts = &ctx.opts;
    let file = file_of(&ctx, &task)?;
    let name = file.name.clone();
    if Reach::of(file.store.as_ref()) == Reach::Far {
        ctx.decode.flow.budget.far_store(FAR_WINDOW);
    }
    let plain = matches!(ctx.mode, Mode::Plain { .. });
    let read = footer_plan(opts, plain, &task, decode_views(opts, &ctx.mode));
    let early = ctx.early.take(index);
    let footer = async {
        match early {
            Some(handle) => handle.await.map_err(|e| {
                Error::new(ErrorKind::Panic, format!("reading a footer failed: {e}"))
                    .with_path(&*file.name)
            })?,
            None => footer::fetch::load(&ctx.fetcher, &ctx.decode.pool, opts, file, read).await,
        }
    };
    let loader = task.delete_loader.clone();
    let load_ctx = LoadContext {
        pool: Arc::clone(&ctx.decode.pool),
    };
    let loaded = async move {
        match loader {
            Some(l) => l.load(load_ctx).await.map(Some),
            None => Ok(None),
        }
    };
    let (meta, loaded) = futures::try_join!(footer, async {
        loaded.await.map_err(|e| {
            let path = e.path().unwrap_or(&name).to_string();
            e.context("loading deleted rows").with_path(path)
        })
    })?;
    let c = Arc::clone(&ctx);
    let (mut run, blooms) = ctx
        .on_pool((&name, "planning"), move || {
            prepare((&c.opts, &c.mode, c.metrics()), index, task, meta, loaded)
        })
        .await?;
    if !blooms.is_empty() {
        check_blooms(&ctx, &mut run, blooms).await?;
    }
    Ok(Arc::new(run))
}

/// Fetch the bloom filters of the row groups statistics kept (one coalesced request) and
/// exclude those a bloom filter rules out.
async fn check_blooms(ctx: &DriveCtx, run: &mut FileRun, blooms: Blooms) -> Result<()> {
    let opts = &ctx.opts;
    let meta = Arc::clone(&run.meta);
    let ranges: Vec<_> = blooms
        .iter()
        .flat_map(|(_, r)| r.iter().map(|x| x.1.clone()))
        .collect();
    let reach = Reach::of(meta.file.store.as_ref());
    let (chunk, fetched) = ctx
        .fetcher
        .ranges(
            (&meta.file, "bloom filters"),
            meta.size,
            &ranges,
            &meta.cached,
            opts.coalesce_gap(reach),
            opts.request_size(reach),
        )
        .await?;
    Metrics::add(&ctx.metrics().metadata_bytes, fetched);
    let filter = Arc::clone(run.prune.filter.as_ref().expect("blooms need a filter"));
    let excluded = ctx
        .on_pool((&meta.file.name, "bloom filter check"), move || {
            Ok(bloom::excluded_row_groups(&filter, &chunk, blooms))
        })
        .await?;
    for rg in excluded {
        run.prune.verdicts[rg] = Verdict::None;
        run.prune.by_bloom[rg] = true;
    }
    Ok(())
}
