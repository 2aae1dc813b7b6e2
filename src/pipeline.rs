//! The pipeline driver: one async task per scan, on the IO runtime, that walks the files in
//! order, loads footers ahead of need, admits slots under the [`Budget`] in delivery order,
//! fetches their parts and hands the bytes to the decode pool.
//!
//! Threads: this task and the fetch tasks it spawns run on tokio and only wait on IO; footer
//! parsing and decoding are sent to rayon. Cancellation: dropping the reader sets `quit` and
//! aborts this task, whose `JoinSet` aborts every fetch in flight; footer loads ahead are
//! aborted by their guards; decode tasks see `quit` before each batch.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use crossbeam_channel::Sender;
use futures::{FutureExt, StreamExt};
use parquet::arrow::arrow_reader::RowSelection;
use tokio::task::{JoinHandle, JoinSet};

use crate::decode::{PartCtl, PartDecoder, PartRows};
use crate::deliver::{Event, SlotInfo};
use crate::error::{Error, ErrorKind, Result};
use crate::fetch::{Budget, Fetcher};
use crate::metrics::Metrics;
use crate::plan::{self, FileMeta, FilePrune, Footer, Projection};
use crate::prune::{self, FileFilter, Verdict};
use crate::scan::Options;
use crate::select;
use crate::select::RowIndexer;
use crate::source::FileRef;

/// What every task of one scan shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub opts: Options,
    pub metrics: Arc<Metrics>,
    pub quit: AtomicBool,
    pub pool: Arc<rayon::ThreadPool>,
    pub fetcher: Fetcher,
    pub budget: Budget,
    pub tx: Sender<Event>,
    /// Arrow bytes decoded and parquet uncompressed bytes of the parts finished so far: the
    /// ratio sharpens the estimate of what later slots decode to.
    pub decoded_ratio: (AtomicU64, AtomicU64),
    /// Decode tasks running now: fewer than the pool's threads means decoders are waiting.
    pub decoding: Arc<AtomicUsize>,
    /// What late materialization has saved so far on this scan.
    pub late: LateStats,
}

/// Bytes of the non-filter columns' pages that late materialization could have fetched
/// (`before`: under the page index's selection) and did fetch (`after`: pages holding
/// matches), summed over the row groups that used it.
#[derive(Debug, Default)]
pub(crate) struct LateStats {
    before: AtomicU64,
    after: AtomicU64,
    slots: AtomicU64,
}

impl LateStats {
    fn record(&self, before: u64, after: u64) {
        Metrics::add(&self.before, before);
        Metrics::add(&self.after, after);
        Metrics::add(&self.slots, 1);
    }

    /// Keep paying a round trip per row group for late materialization while it saves at
    /// least a tenth of the bytes (judged after a few row groups).
    fn worth_it(&self) -> bool {
        let (b, a) = (self.before.load(Relaxed), self.after.load(Relaxed));
        self.slots.load(Relaxed) < 4 || a * 10 < b * 9
    }
}

impl Shared {
    /// Decoded Arrow bytes per uncompressed Parquet byte, learnt from finished parts (1.0
    /// before any has finished).
    fn expansion(&self) -> f64 {
        let decoded = self.decoded_ratio.0.load(Relaxed) as f64;
        let uncompressed = self.decoded_ratio.1.load(Relaxed) as f64;
        if uncompressed > 0.0 {
            (decoded / uncompressed).clamp(0.1, 64.0)
        } else {
            1.0
        }
    }
}

/// A slot's bytes between admission and the end of its decoding: its planned compressed bytes
/// count as *held* (being fetched or waiting to be decoded) for admission, and, once they have
/// arrived, its fetched bytes count as buffered. The slot's parts share it and drop it when
/// they end; a failed or aborted fetch drops it at once.
#[derive(Debug)]
pub(crate) struct Held {
    shared: Arc<Shared>,
    planned: u64,
    fetched: u64,
    /// Decoding has started: the bytes no longer wait for the decoders (see [`Held::started`]).
    started: std::sync::atomic::AtomicBool,
}

impl Held {
    fn new(shared: Arc<Shared>, planned: u64) -> Self {
        shared.budget.hold(planned);
        Held {
            shared,
            planned,
            fetched: 0,
            started: false.into(),
        }
    }

    /// A part of the slot decoded its first batch: the slot's bytes are with the decoders, no
    /// longer in the IO queue, so admission may go on even while the slot's decoders wait
    /// (parked) for the consumer. Without this, in ordered mode the slots decoded ahead of the
    /// consumer held the queue full and admission came in waves, one per budget's worth.
    /// Only while IO is the bottleneck (the IO window has grown): from a fast disk, keeping
    /// parked slots' bytes queued holds memory (and page faults) down, measurably.
    pub fn started(&self) {
        if self.shared.budget.io_bound() && !self.started.swap(true, Relaxed) {
            self.shared.budget.unhold(self.planned, self.fetched);
        }
    }

    fn fetched(&mut self, bytes: u64) {
        self.shared.metrics.buffer(bytes);
        let idle = self.shared.decoding.load(Relaxed) < self.shared.pool.current_num_threads();
        self.shared.budget.arrived(bytes, idle);
        self.fetched += bytes;
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.shared.metrics.release(self.fetched);
        if !*self.started.get_mut() {
            self.shared.budget.unhold(self.planned, self.fetched);
        }
    }
}

/// Run `f` on the decode pool and await its result from async code, turning a panic into an
/// error about `what` in file `name`.
async fn on_pool<T: Send + 'static>(
    shared: &Arc<Shared>,
    (name, what): (&str, &str),
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let guard = shared.metrics.task_started();
    shared.pool.spawn(move || {
        let _guard = guard;
        let r = std::panic::catch_unwind(AssertUnwindSafe(f));
        let _ = tx.send(r);
    });
    match rx.await {
        Ok(Ok(r)) => r,
        _ => Err(Error::new(ErrorKind::Panic, format!("{what} panicked")).with_path(name)),
    }
}

/// A file ready to plan: its footer, the projection resolved against it, and what pruning
/// decided.
pub(crate) type Loaded = (Arc<FileMeta>, Projection, FilePrune);

/// Whether `key` names `file`: its name (URL or path as given) or its object path.
pub(crate) fn names_file(key: &str, file: &FileRef) -> bool {
    key == &*file.name || key.trim_start_matches('/') == file.path.as_ref()
}

/// The caller's row selection for `file`.
pub(crate) fn selection_for<'a>(opts: &'a Options, file: &FileRef) -> Option<&'a RowSelection> {
    opts.selections
        .iter()
        .find(|(k, _)| names_file(k, file))
        .map(|(_, s)| s)
}

/// Fetch and parse one file's footer (and its page index, when a filter or a row selection
/// can use it); resolve the projection and filter against it; judge its row groups and
/// pages from statistics, and from bloom filters.
pub(crate) async fn load_footer(shared: Arc<Shared>, file: FileRef) -> Result<Loaded> {
    let _guard = shared.metrics.task_started();
    let opts = &shared.opts;
    // A scan that reads only part of each file wants the metadata, not the data near it.
    let narrow = opts.filter.is_some() || !opts.selections.is_empty() || opts.columns.is_some();
    let hint = match (opts.footer_size_hint, file.size) {
        (Some(h), _) => h as u64,
        (None, _) if narrow => crate::scan::NARROW_FOOTER_SIZE_HINT as u64,
        // A small file is read whole: one round trip instead of footer, then data.
        (None, Some(size)) if size <= crate::scan::WHOLE_FILE_BYTES => size,
        (None, _) => crate::scan::DEFAULT_FOOTER_SIZE_HINT as u64,
    };
    let (size, start, bytes) = shared.fetcher.suffix(&file, hint).await?;
    let meta_bytes = &shared.metrics.metadata_bytes;
    Metrics::add(meta_bytes, bytes.len() as u64);
    let (metadata, prefix, prefix_start) =
        match plan::parse_suffix(&file, size, start, bytes.clone())? {
            Footer::Complete {
                metadata,
                prefix,
                prefix_start,
            } => (metadata, prefix, prefix_start),
            Footer::NeedMore { range } => {
                // The metadata is larger than the hint: one more request for the rest of it.
                let head = shared.fetcher.range(&file, range.clone()).await?;
                Metrics::add(meta_bytes, head.len() as u64);
                let mut all = Vec::with_capacity(head.len() + bytes.len());
                all.extend_from_slice(&head);
                all.extend_from_slice(&bytes);
                match plan::parse_suffix(&file, size, range.start, all.into())? {
                    Footer::Complete { metadata, .. } => (metadata, bytes::Bytes::new(), 0),
                    Footer::NeedMore { .. } => {
                        return Err(Error::new(ErrorKind::CorruptFooter, "inconsistent footer")
                            .with_path(&*file.name))
                    }
                }
            }
        };
    let name = file.name.clone();
    let user = selection_for(opts, &file).cloned();
    let want_index = opts.filter.is_some() || user.is_some();
    let mut meta = on_pool(&shared, (&name, "footer decoding"), move || {
        plan::decode_footer(file, size, metadata, prefix, prefix_start)
    })
    .await?;
    if let Some(range) = want_index.then(|| plan::page_index_range(&meta)).flatten() {
        let chunk = if meta.cached.covers(&range) {
            meta.cached.clone()
        } else {
            let f = &shared.fetcher;
            let ranges = [range];
            let request = shared.opts.request_size as u64;
            let c = f.ranges(&meta.file, size, &ranges, &meta.cached, 0, request);
            let (c, fetched) = c.await?;
            Metrics::add(meta_bytes, fetched);
            c
        };
        meta = on_pool(&shared, (&name, "page index decoding"), move || {
            Ok(plan::with_page_index(meta, &chunk))
        })
        .await?;
    }
    let sh = Arc::clone(&shared);
    let (meta, proj, mut prune, blooms) = on_pool(&shared, (&name, "pruning"), move || {
        let proj = plan::project(&meta, sh.opts.columns.as_deref())?;
        let prune = judge_file(&sh.opts, &meta, user)?;
        let blooms: Vec<(usize, prune::BloomRanges)> = match &prune.filter {
            Some(f) => (0..prune.verdicts.len())
                .filter(|&rg| prune.verdicts[rg] == Verdict::Some)
                .map(|rg| (rg, prune::bloom_ranges(f, &meta, rg)))
                .filter(|(_, r)| !r.is_empty())
                .collect(),
            None => Vec::new(),
        };
        Ok((meta, proj, prune, blooms))
    })
    .await?;
    if !blooms.is_empty() {
        // One coalesced fetch for the bloom filters of every row group statistics kept.
        let ranges: Vec<_> = blooms
            .iter()
            .flat_map(|(_, r)| r.iter().map(|x| x.1.clone()))
            .collect();
        let gap = opts.coalesce_gap as u64;
        let (chunk, fetched) = shared
            .fetcher
            .ranges(
                &meta.file,
                size,
                &ranges,
                &meta.cached,
                gap,
                opts.request_size as u64,
            )
            .await?;
        Metrics::add(meta_bytes, fetched);
        let filter = prune.filter.clone().expect("blooms need a filter");
        let excluded = on_pool(&shared, (&name, "bloom filter check"), move || {
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
            prune.verdicts[rg] = Verdict::None;
            prune.by_bloom[rg] = true;
        }
    }
    Metrics::add(&shared.metrics.files, 1);
    Ok((Arc::new(meta), proj, prune))
}

/// Resolve the filter against `meta`'s file, judge its row groups and pages, and split the
/// caller's selection by row group. CPU work: runs on the decode pool.
fn judge_file(opts: &Options, meta: &FileMeta, user: Option<RowSelection>) -> Result<FilePrune> {
    let md = meta.reader.metadata();
    let n = md.num_row_groups();
    let mut out = FilePrune::default();
    if let Some(expr) = &opts.filter {
        let filter = FileFilter::resolve(expr, meta)?;
        out.verdicts = prune::row_groups(&filter, meta);
        out.by_bloom = vec![false; n];
        out.pages = (0..n)
            .map(|rg| match out.verdicts[rg] {
                Verdict::Some => prune::pages(&filter, meta, rg),
                _ => None,
            })
            .collect();
        out.filter = Some(filter);
    }
    if let Some(mut sel) = user {
        let total: i64 = md.row_groups().iter().map(|rg| rg.num_rows().max(0)).sum();
        let spans = sel.row_count() + sel.skipped_row_count();
        if spans as i64 > total {
            return Err(Error::new(
                ErrorKind::InvalidArgument,
                format!("the row selection spans {spans} rows but the file has {total}"),
            )
            .with_path(&*meta.file.name));
        }
        out.selected = md
            .row_groups()
            .iter()
            .map(|rg| {
                let rows = rg.num_rows().max(0) as usize;
                Some(select::pad(sel.split_off(rows), rows))
            })
            .collect();
    }
    Ok(out)
}

/// Aborts a spawned task when dropped (a footer load ahead of a cancelled scan).
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> Future for AbortOnDrop<T> {
    type Output = std::result::Result<T, tokio::task::JoinError>;
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}

/// Fetched bytes waiting for the decoders (or two slots, if larger) above which no slot is
/// admitted: enough to keep every decode thread fed, small enough not to touch fresh memory
/// for bytes the decoders cannot reach yet.
pub(crate) const DECODE_QUEUE_BYTES: u64 = 16 << 20;

/// What a slot reserves from the budget: its compressed bytes plus `decode_ahead` batches of
/// decoded data (estimated from the uncompressed size times the Arrow/Parquet expansion learnt
/// so far). Decoding further ahead buys little once row groups are split across threads, and
/// costs fresh memory.
fn reservation(slot: &plan::SlotPlan, opts: &Options, expansion: f64) -> u64 {
    let decoded = slot.uncompressed().max(1) as f64 * expansion;
    let ahead_rows = (opts.decode_ahead * opts.batch_size) as f64;
    let ahead = decoded * (ahead_rows / slot.rows.max(1) as f64).min(1.0);
    slot.compressed() + ahead as u64
}

/// Share the decoded bytes of a slot's reservation among its parts, by uncompressed size.
fn allowances(slot: &plan::SlotPlan, grant: u64) -> Vec<u64> {
    let for_decoded = grant.saturating_sub(slot.compressed()) as f64;
    let total = slot.uncompressed().max(1) as f64;
    slot.parts
        .iter()
        .map(|p| (for_decoded * p.uncompressed as f64 / total) as u64)
        .collect()
}

/// The driver task. Sends `End` after the last slot, or an `Error` at the position of a file
/// that could not be planned.
pub(crate) async fn run(
    shared: Arc<Shared>,
    files: Vec<FileRef>,
    first: Loaded,
    schema: SchemaRef,
) {
    let _guard = shared.metrics.task_started();
    let mut tasks = JoinSet::new();
    let mut next_slot = 0usize;
    let outcome = AssertUnwindSafe(drive(
        &shared,
        files,
        first,
        schema,
        &mut tasks,
        &mut next_slot,
    ))
    .catch_unwind()
    .await;
    let end = match outcome {
        Ok(Ok(())) => Event::End { slots: next_slot },
        Ok(Err(error)) => Event::Error {
            slot: next_slot,
            error,
        },
        Err(_) => Event::Error {
            slot: next_slot,
            error: Error::new(ErrorKind::Panic, "the scan's planner panicked"),
        },
    };
    let _ = shared.tx.send(end);
    // Keep fetches alive until they have handed their bytes to the decode pool.
    while tasks.join_next().await.is_some() {}
}

async fn drive(
    shared: &Arc<Shared>,
    files: Vec<FileRef>,
    first: Loaded,
    schema: SchemaRef,
    tasks: &mut JoinSet<()>,
    next_slot: &mut usize,
) -> Result<()> {
    let opts = &shared.opts;
    let threads = shared.pool.current_num_threads();
    let limit = opts.limit.map(|l| l as u64);
    let mut rows_planned = 0u64;
    let first_name = first.0.file.name.clone();
    let rest = files.into_iter().skip(1).map(|f| {
        let sh = Arc::clone(shared);
        AbortOnDrop(tokio::spawn(load_footer(sh, f)))
    });
    let mut footers = futures::stream::iter(rest).buffered(opts.footers_ahead);
    let mut current = Some(first);
    loop {
        if limit.is_some_and(|l| rows_planned >= l) {
            return Ok(());
        }
        let (meta, proj, prune) = match current.take() {
            Some(x) => x,
            None => match footers.next().await {
                None => return Ok(()),
                Some(Ok(r)) => {
                    let (meta, proj, prune) = r?;
                    plan::check_schema(&schema, &first_name, &proj, &meta.file.name)?;
                    (meta, proj, prune)
                }
                Some(Err(e)) => {
                    return Err(Error::new(
                        ErrorKind::Panic,
                        format!("footer task failed: {e}"),
                    ))
                }
            },
        };
        let (slots, skipped) = plan::plan_file(&meta, &proj, &prune, opts.split_bytes, threads)?;
        let m = &shared.metrics;
        Metrics::add(&m.row_groups_pruned, skipped.row_groups);
        Metrics::add(&m.bloom_pruned, skipped.by_bloom);
        Metrics::add(&m.pages_pruned, skipped.pages);
        let layout = Arc::new(output_layout(&proj, &slots, opts.row_index.is_some()));
        // Statistics excluded most row groups: the filter's column is clustered, so a kept row
        // group most likely holds matches and late materialization would only add a round trip.
        let none = prune
            .verdicts
            .iter()
            .filter(|v| **v == Verdict::None)
            .count();
        let clustered = !prune.verdicts.is_empty() && none * 2 >= prune.verdicts.len();
        let filter = prune.filter.map(|f| (Arc::new(f), clustered));
        for (slot_plan, layout) in slots.into_iter().zip(layout.iter()) {
            if limit.is_some_and(|l| rows_planned >= l) {
                return Ok(());
            }
            let reserve = reservation(&slot_plan, opts, shared.expansion());
            let fetch = slot_plan.compressed();
            shared.budget.admit(reserve, fetch, &shared.metrics).await;
            let slot = *next_slot;
            let ctls: Vec<Arc<PartCtl>> = allowances(&slot_plan, reserve)
                .into_iter()
                .map(|a| Arc::new(PartCtl::new(a, opts.decode_ahead)))
                .collect();
            let info = SlotInfo {
                parts: ctls.clone(),
                reserve,
                layout: layout.clone(),
            };
            let _ = shared.tx.send(Event::Slot { slot, info });
            Metrics::add(&shared.metrics.row_groups, 1);
            Metrics::add(&shared.metrics.units, slot_plan.parts.len() as u64);
            rows_planned += slot_plan.known_rows();
            let guard = shared.metrics.task_started();
            let held = Held::new(Arc::clone(shared), slot_plan.compressed());
            let sh = Arc::clone(shared);
            let meta = Arc::clone(&meta);
            let filter = filter.clone();
            tasks.spawn(async move {
                let _guard = guard;
                let rg = slot_plan.row_group;
                let name = meta.file.name.clone();
                let run = fetch_slot(&sh, meta, filter, slot_plan, ctls, held, slot);
                let error = match AssertUnwindSafe(run).catch_unwind().await {
                    Ok(Ok(())) => return,
                    Ok(Err(e)) => e.with_row_group(rg),
                    Err(_) => Error::new(ErrorKind::Panic, "fetch task panicked")
                        .with_path(&*name)
                        .with_row_group(rg),
                };
                let _ = sh.tx.send(Event::Error { slot, error });
            });
            *next_slot += 1;
            while tasks.try_join_next().is_some() {}
        }
    }
}

/// Fetch one slot's bytes and start its decoders. One fetch per stage: the parts' ranges are
/// coalesced together (so a gap between two parts' columns is never fetched twice) and every
/// part decodes from the same zero-copy chunk.
///
/// With a filter stage (late materialization), the filter's columns are fetched first and
/// decoded on the pool to find the matching rows; then only the pages of the projected
/// columns that hold matching rows are fetched. A row group with no match delivers nothing.
async fn fetch_slot(
    sh: &Arc<Shared>,
    meta: Arc<FileMeta>,
    filter: Option<(Arc<FileFilter>, bool)>,
    plan: plan::SlotPlan,
    ctls: Vec<Arc<PartCtl>>,
    mut held: Held,
    slot: usize,
) -> Result<()> {
    let opts = &sh.opts;
    let rg = plan.row_group;
    let (selection, page_level, chunk) = match (&plan.filter, filter) {
        (Some(stage), Some((filter, clustered))) => {
            // Late materialization costs a round trip; it pays only when many pages of the
            // other columns hold no match. Fetch everything at once when the page index (or
            // the caller's selection) already narrowed the rows to a quarter, when statistics
            // found the filter's column clustered, or when late materialization has not been
            // saving bytes on this scan.
            let narrowed = plan
                .selection
                .as_ref()
                .is_some_and(|s| s.row_count() as u64 * 4 <= plan.rows);
            let single = narrowed || clustered || !sh.late.worth_it();
            let mut wanted = stage.ranges.clone();
            if single {
                wanted.extend(plan.parts.iter().flat_map(|p| p.ranges.iter().cloned()));
            }
            let first = fetch_ranges(sh, &meta, &wanted, plan.page_level).await?;
            held.fetched(first.bytes());
            let (m, c, pre) = (Arc::clone(&meta), first.clone(), plan.selection.clone());
            let (page_level, batch) = (plan.page_level, opts.batch_size);
            let metrics = Arc::clone(&sh.metrics);
            let (exact, read) = on_pool(sh, (&meta.file.name, "filter evaluation"), move || {
                let t = std::time::Instant::now();
                let r = select::filter_rows(&m, rg, &filter, pre.as_ref(), page_level, c, batch);
                Metrics::add_time(&metrics.decode_nanos, t.elapsed());
                r
            })
            .await?;
            Metrics::add(&sh.metrics.rows_filtered, read - exact.row_count() as u64);
            if !exact.selects_any() {
                if !single {
                    // Late materialization saved every other column's bytes.
                    sh.late.record(late_bytes(&meta, &plan, stage)?, 0);
                }
                for part in 0..ctls.len() {
                    let _ = sh.tx.send(Event::PartDone { slot, part });
                }
                return Ok(());
            }
            let chunk = if single {
                first
            } else {
                let offsets = plan::has_offset_index(&meta, rg);
                let mut ranges = Vec::new();
                let mut after = 0;
                for leaf in plan.parts.iter().flat_map(|p| &p.leaves) {
                    let exact = Some(&exact);
                    let (r, skipped) = plan::chunk_ranges(&meta, rg, *leaf, exact, offsets)?;
                    if !stage.leaves.contains(leaf) {
                        Metrics::add(&sh.metrics.pages_pruned, skipped);
                        after += r.iter().map(|r| r.end - r.start).sum::<u64>();
                    }
                    ranges.extend(r.into_iter().filter(|r| !first.covers(r)));
                }
                sh.late.record(late_bytes(&meta, &plan, stage)?, after);
                let second = fetch_ranges(sh, &meta, &ranges, offsets).await?;
                held.fetched(second.bytes());
                let mut chunk = first;
                chunk.merge(&second);
                chunk
            };
            // Were pages skipped (so the decoders must read by selectors)?
            let page_level = if single {
                plan.page_level
            } else {
                plan::has_offset_index(&meta, rg)
            };
            // Every row matched: decode without a selection (cheaper than one long run).
            let exact = (exact.skipped_row_count() > 0).then_some(exact);
            (exact, page_level, chunk)
        }
        _ => {
            let ranges: Vec<_> = plan.parts.iter().flat_map(|p| p.ranges.clone()).collect();
            let chunk = fetch_ranges(sh, &meta, &ranges, plan.page_level).await?;
            held.fetched(chunk.bytes());
            (plan.selection.clone(), plan.page_level, chunk)
        }
    };
    let held = Arc::new(held);
    for (part, (part_plan, ctl)) in plan.parts.into_iter().zip(ctls).enumerate() {
        let row_index = (part == 0 && opts.row_index.is_some())
            .then(|| RowIndexer::new(plan.first_row, plan.rows, selection.as_ref()));
        let rows = PartRows {
            selection: selection.clone(),
            page_level,
            row_index,
        };
        PartDecoder::new(
            Arc::clone(sh),
            ctl,
            (slot, part),
            (Arc::clone(&meta), rg),
            part_plan,
            (chunk.clone(), Arc::clone(&held)),
            rows,
        )
        .spawn();
    }
    Ok(())
}

/// Bytes of the slot's non-filter columns under the page index's selection: what late
/// materialization could have had to fetch.
fn late_bytes(meta: &FileMeta, plan: &plan::SlotPlan, stage: &plan::FilterStage) -> Result<u64> {
    let rg = plan.row_group;
    let offsets = plan::has_offset_index(meta, rg);
    let mut before = 0;
    for leaf in plan.parts.iter().flat_map(|p| &p.leaves) {
        if !stage.leaves.contains(leaf) {
            let (r, _) = plan::chunk_ranges(meta, rg, *leaf, plan.selection.as_ref(), offsets)?;
            before += r.iter().map(|r| r.end - r.start).sum::<u64>();
        }
    }
    Ok(before)
}

/// Fetch `ranges` of `meta`'s file (serving what its footer read holds).
async fn fetch_ranges(
    sh: &Shared,
    meta: &FileMeta,
    ranges: &[std::ops::Range<u64>],
    page_level: bool,
) -> Result<crate::chunk::SparseChunk> {
    let gap = sh.opts.coalesce_gap as u64;
    // Page-level plans skip data between pages: coalescing across large gaps would fetch it.
    let gap = if page_level {
        gap.min(PAGE_COALESCE_GAP)
    } else {
        gap
    };
    let request = sh.opts.request_size as u64;
    let (chunk, _) = sh
        .fetcher
        .ranges(&meta.file, meta.size, ranges, &meta.cached, gap, request)
        .await?;
    Ok(chunk)
}

/// Largest gap coalesced between the pages of a page-level fetch plan.
const PAGE_COALESCE_GAP: u64 = 64 << 10;

/// For each slot, where each output column comes from: (part, column within the part's batch).
/// The row-index column, when asked for, is the last column of part 0's batches.
fn output_layout(
    proj: &Projection,
    slots: &[plan::SlotPlan],
    row_index: bool,
) -> Vec<Arc<Vec<(usize, usize)>>> {
    slots
        .iter()
        .map(|s| {
            let mut layout: Vec<(usize, usize)> = proj
                .output
                .iter()
                .map(|root| {
                    s.parts
                        .iter()
                        .enumerate()
                        .find_map(|(p, part)| {
                            part.roots.iter().position(|r| r == root).map(|c| (p, c))
                        })
                        .expect("every projected root is in one part")
                })
                .collect();
            if row_index {
                layout.push((0, s.parts[0].roots.len()));
            }
            Arc::new(layout)
        })
        .collect()
}
