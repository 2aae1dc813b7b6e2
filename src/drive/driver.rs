//! The driver: one async task per scan, on the IO runtime, that pulls the scan's tasks in
//! order, opens their files ahead of need (`footers_ahead` at least, more while the bytes
//! they bring stay under a quarter of the budget: [`Lookahead`]), plans each
//! file's slots, admits them under the budget in delivery order and starts their fetches.
//!
//! Threads: this task and the tasks it spawns run on tokio and only wait on IO.
//! Cancellation: dropping the reader sets `quit` and aborts this task, whose `JoinSet` aborts
//! every fetch in flight; files being opened ahead are aborted by their guards.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use futures::{FutureExt, StreamExt};
use tokio::task::JoinSet;

use crate::drive::materialize::SlotTerms;
use crate::drive::open::MAX_FILES_AHEAD;
use crate::drive::tasks::{AbortOnDrop, TaskStream};
use crate::drive::{materialize, open, DriveCtx};
use crate::error::{Error, ErrorKind, Result};
use crate::flow::event::{Event, SlotInfo};
use crate::flow::held::Held;
use crate::flow::part::{part_cap, PartCtl};
use crate::limits::{Charge, SharedLimits};
use crate::metrics::Metrics;
use crate::options::ScanOptions;
use crate::plan::file::{FileRun, Mode};
use crate::plan::prune::Verdict;
use crate::plan::slots::{self, FilePrune, SlotPlan};
use crate::task::FileTask;

/// How many files are opened ahead of the one being planned: always `footers_ahead`, and
/// more (up to [`MAX_FILES_AHEAD`]) while the bytes their footer reads bring (whole small
/// files, or suffixes) stay under a quarter of the memory budget (or of the shared memory
/// limit, if smaller). Under object-store latency many small files are then in flight at once;
/// a 100k-file scan still opens only what the bound allows. Bytes are reserved in KiB per file
/// before it is opened and given back once its slots are admitted (their bytes then count in
/// the budget). Under [`SharedLimits`] each footer read is also granted by the shared pool:
/// the file the planner waits for at once (urgent), files further ahead in turn.
struct Lookahead {
    permits: Arc<tokio::sync::Semaphore>,
    /// Largest reservation of one file, so `footers_ahead` files always fit.
    max_kib: u32,
    shared: Option<SharedLimits>,
    /// Index of the task the planner takes next: its footer read never waits for the shared
    /// pool.
    next: AtomicU64,
    /// Woken when `next` moves on.
    moved: tokio::sync::Notify,
}

/// What a file opened ahead holds until its slots are admitted.
struct AheadPermit {
    _permit: tokio::sync::OwnedSemaphorePermit,
    _charge: Option<Charge>,
}

impl Lookahead {
    fn new(opts: &ScanOptions, first_index: u64) -> Self {
        let (limit_kib, max_kib) = open::ahead_kib(opts);
        Lookahead {
            permits: Arc::new(tokio::sync::Semaphore::new(limit_kib)),
            max_kib: max_kib as u32,
            shared: opts.limits.clone(),
            next: AtomicU64::new(first_index),
            moved: tokio::sync::Notify::new(),
        }
    }

    /// Reserve what opening `task` (number `index`) brings into memory: its footer read
    /// (`plain`: a scan of plain files).
    async fn reserve(
        &self,
        opts: &ScanOptions,
        plain: bool,
        (index, task): (u64, &FileTask),
    ) -> AheadPermit {
        let (bytes, kib) = open::ahead_charge(opts, plain, task, self.max_kib as usize);
        let bytes = bytes as u64;
        let permit = Arc::clone(&self.permits)
            .acquire_many_owned(kib as u32)
            .await
            .expect("lookahead semaphore never closed");
        let charge = match &self.shared {
            None => None,
            Some(shared) => {
                let pool = shared.memory();
                let mut ticket = pool.ticket();
                loop {
                    let freed = std::pin::pin!(pool.notified());
                    let moved = std::pin::pin!(self.moved.notified());
                    let urgent = self.next.load(Relaxed) >= index;
                    if pool.try_reserve(&mut ticket, bytes, urgent) {
                        break Some(Charge::new(shared.clone(), bytes));
                    }
                    futures::future::select(freed, moved).await;
                }
            }
        };
        AheadPermit {
            _permit: permit,
            _charge: charge,
        }
    }

    /// The planner now waits for file number `index`.
    fn waiting_for(&self, index: u64) {
        if self.next.swap(index, Relaxed) != index {
            self.moved.notify_waiters();
        }
    }
}

/// Fetched bytes waiting for the decoders (or two slots, if larger) above which no slot is
/// admitted: enough to keep every decode thread fed, small enough not to touch fresh memory
/// for bytes the decoders cannot reach yet.
pub(crate) const DECODE_QUEUE_BYTES: u64 = 16 << 20;

/// What a slot reserves from the budget: its compressed bytes plus `decode_ahead` batches of
/// decoded data (estimated from the uncompressed size times the Arrow/Parquet expansion learnt
/// so far). In ordered scans the later slots' parts must be able to decode well ahead while the
/// head slot finishes, or decode threads idle (measured: 4 batches ahead cost a 2-core full scan
/// 15% against 16); the budget still bounds the total.
fn reservation(slot: &SlotPlan, opts: &ScanOptions, decode_ahead: usize, expansion: f64) -> u64 {
    let decoded = slot.uncompressed().max(1) as f64 * expansion;
    let ahead_rows = (decode_ahead * opts.batch_size) as f64;
    let ahead = decoded * (ahead_rows / slot.rows.max(1) as f64).min(1.0);
    slot.compressed() + ahead as u64
}

/// Share the decoded bytes of a slot's reservation among its parts, by uncompressed size.
fn allowances(slot: &SlotPlan, grant: u64) -> Vec<u64> {
    let for_decoded = grant.saturating_sub(slot.compressed()) as f64;
    let total = slot.uncompressed().max(1) as f64;
    slot.parts
        .iter()
        .map(|p| (for_decoded * p.uncompressed as f64 / total) as u64)
        .collect()
}

/// The driver task. `first`: the first task's file, already opened (plain scans learn their
/// schema from it); `tasks`: the rest, numbered from `first_index`. Sends `End` after the
/// last slot, or an `Error` at the position of a task that could not be opened.
pub(crate) async fn run(
    ctx: Arc<DriveCtx>,
    first: Option<Arc<FileRun>>,
    tasks: TaskStream,
    first_index: u64,
) {
    let _guard = ctx.metrics().task_started();
    let mut fetches = JoinSet::new();
    let mut next_slot = 0usize;
    let outcome = AssertUnwindSafe(drive(
        &ctx,
        first,
        tasks,
        first_index,
        &mut fetches,
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
    ctx.decode.outbox.send(end);
    // Keep fetches alive until they have handed their bytes to the decode pool.
    while fetches.join_next().await.is_some() {}
}

/// Open the scan's files ahead (at most as many as the lookahead allows), plan each file's
/// slots and start them, in delivery order, until the tasks or the limit end.
async fn drive(
    ctx: &Arc<DriveCtx>,
    first: Option<Arc<FileRun>>,
    tasks: TaskStream,
    first_index: u64,
    fetches: &mut JoinSet<()>,
    next_slot: &mut usize,
) -> Result<()> {
    let opts = &ctx.opts;
    let threads = ctx.decode.pool.current_num_threads();
    let limit = opts.limit.map(|l| l as u64);
    let mut rows_planned = 0u64;
    let ahead = Arc::new(Lookahead::new(opts, first_index));
    let opened = open_ahead(ctx, tasks, first_index, &ahead);
    let mut opened = opened.buffered(MAX_FILES_AHEAD.max(opts.tuning.footers_ahead));
    let mut current = first.map(|run| (run, None));
    let mut taken = 0;
    loop {
        if limit_met(ctx, limit, &mut rows_planned).await {
            return Ok(());
        }
        // The permit is held until the file's slots are admitted (their bytes then count
        // in the budget).
        let (run, _permit) = match current.take() {
            Some(run) => run,
            None => {
                ahead.waiting_for(first_index + taken);
                match opened.next().await {
                    None => return Ok(()),
                    Some(r) => {
                        taken += 1;
                        let (run, permit) = r?;
                        (run, Some(permit))
                    }
                }
            }
        };
        let split = opts.tuning.split_bytes;
        let plan = slots::plan_file(&run.meta, &run.mapping.roots, &run.prune, split, threads);
        let (slots, skipped) = plan?;
        let m = ctx.metrics();
        Metrics::add(&m.row_groups_pruned, skipped.row_groups);
        Metrics::add(&m.bloom_pruned, skipped.by_bloom);
        Metrics::add(&m.pages_pruned, skipped.pages);
        let clustered = clustered(&run.prune);
        for slot_plan in slots {
            if limit_met(ctx, limit, &mut rows_planned).await {
                return Ok(());
            }
            // A task's transform may drop rows (Delta's exact filter on logical columns): the
            // limit then counts only delivered rows, and planning goes on until it is met.
            let mut claim = None;
            if run.transform.is_none() {
                let rows = slot_plan.known_rows();
                rows_planned += rows;
                if limit.is_some() && slot_plan.claimed() {
                    claim = Some(ctx.claims.claim(rows));
                }
            }
            let terms = SlotTerms { clustered, claim };
            start_slot(ctx, &run, slot_plan, terms, fetches, *next_slot).await;
            *next_slot += 1;
            while fetches.try_join_next().is_some() {}
        }
    }
}

/// Whether the slots started hold `limit` rows. Rows counted on statistics' word are
/// waited for first (their filters' checks), and those the checks removed taken back.
async fn limit_met(ctx: &DriveCtx, limit: Option<u64>, rows_planned: &mut u64) -> bool {
    let Some(limit) = limit else {
        return false;
    };
    if *rows_planned < limit {
        return false;
    }
    *rows_planned -= ctx.claims.shortfall().await;
    *rows_planned >= limit
}

/// The scan's tasks opened (footer, deleted rows, bloom filters), each on its own tokio task
/// once `ahead` has room for it, with the permit that counts its bytes.
fn open_ahead(
    ctx: &Arc<DriveCtx>,
    tasks: TaskStream,
    first_index: u64,
    ahead: &Arc<Lookahead>,
) -> impl futures::Stream<Item = impl Future<Output = Result<(Arc<FileRun>, AheadPermit)>>> {
    let plain = matches!(ctx.mode, Mode::Plain { .. });
    let (open_ctx, ahead) = (Arc::clone(ctx), Arc::clone(ahead));
    tasks.enumerate().map(move |(i, task)| {
        let ctx = Arc::clone(&open_ctx);
        let ahead = Arc::clone(&ahead);
        async move {
            let task = task?;
            let index = first_index + i as u64;
            // Wait for room: bytes of files opened ahead stay bounded.
            let permit = ahead.reserve(&ctx.opts, plain, (index, &task)).await;
            match AbortOnDrop(tokio::spawn(open::open(ctx, index, task))).await {
                Ok(r) => r.map(|run| (run, permit)),
                Err(e) => Err(Error::new(
                    ErrorKind::Panic,
                    format!("opening a file failed: {e}"),
                )),
            }
        }
    })
}

/// Statistics excluded most row groups: the filter's column is clustered, so a kept row
/// group most likely holds matches and late materialization would only add a round trip.
fn clustered(prune: &FilePrune) -> bool {
    let none = prune
        .verdicts
        .iter()
        .filter(|v| **v == Verdict::None)
        .count();
    !prune.verdicts.is_empty() && none * 2 >= prune.verdicts.len()
}

/// Admit slot number `slot` under the budget, announce it to the reader, and spawn its
/// fetch (which starts its decoders) on `fetches`.
async fn start_slot(
    ctx: &Arc<DriveCtx>,
    run: &Arc<FileRun>,
    slot_plan: SlotPlan,
    terms: SlotTerms,
    fetches: &mut JoinSet<()>,
    slot: usize,
) {
    let (opts, flow) = (&ctx.opts, &ctx.decode.flow);
    // Under shared-memory pressure a slot reserves (and may hold) fewer batches ahead.
    let decode_ahead = flow.budget.decode_ahead(opts.tuning.decode_ahead);
    let reserve = reservation(&slot_plan, opts, decode_ahead, flow.expansion.ratio());
    let fetch = slot_plan.compressed();
    flow.budget.admit(reserve, fetch, &flow.metrics).await;
    // Created before the slot is announced: the reader opens gated parts when the
    // announcement or a later delivery puts the slot in the decode window.
    let gated = !flow.budget.io_bound() && flow.window.gates(slot);
    let cap = part_cap(
        opts.memory_budget as u64,
        slot_plan.parts.len(),
        ctx.decode.batch_bytes,
    );
    let ctls: Vec<Arc<PartCtl>> = allowances(&slot_plan, reserve)
        .into_iter()
        .map(|a| Arc::new(PartCtl::new(a, decode_ahead, gated, cap)))
        .collect();
    let info = SlotInfo {
        parts: ctls.clone(),
        reserve,
        task: Arc::clone(&run.task),
    };
    ctx.decode.outbox.send(Event::Slot { slot, info });
    let m = ctx.metrics();
    Metrics::add(&m.row_groups, 1);
    Metrics::add(&m.units, slot_plan.parts.len() as u64);
    let guard = m.task_started();
    let held = Held::new(Arc::clone(flow), slot_plan.compressed());
    let ctx = Arc::clone(ctx);
    let run = Arc::clone(run);
    fetches.spawn(async move {
        let _guard = guard;
        let rg = slot_plan.row_group;
        let name = run.meta.file.name.clone();
        let fetch = materialize::fetch_slot(&ctx, run, terms, slot_plan, ctls, held, slot);
        let error = match AssertUnwindSafe(fetch).catch_unwind().await {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e.with_row_group(rg),
            Err(_) => Error::new(ErrorKind::Panic, "fetch task panicked")
                .with_path(&*name)
                .with_row_group(rg),
        };
        ctx.decode.outbox.send(Event::Error { slot, error });
    });
}
