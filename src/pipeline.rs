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
use tokio::task::{JoinHandle, JoinSet};

use crate::decode::{PartCtl, PartDecoder};
use crate::deliver::{Event, SlotInfo};
use crate::error::{Error, ErrorKind, Result};
use crate::fetch::{Budget, Fetcher};
use crate::metrics::Metrics;
use crate::plan::{self, FileMeta, Footer, Projection};
use crate::scan::Options;
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
}

impl Held {
    fn new(shared: Arc<Shared>, planned: u64) -> Self {
        shared.budget.hold(planned);
        Held {
            shared,
            planned,
            fetched: 0,
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
        self.shared.budget.unhold(self.planned, self.fetched);
    }
}

/// Run `f` on the decode pool and await its result from async code, turning a panic into an
/// error about `name`.
async fn on_pool<T: Send + 'static>(
    shared: &Arc<Shared>,
    name: &str,
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
        _ => Err(Error::new(ErrorKind::Panic, "footer decoding panicked").with_path(name)),
    }
}

/// Fetch and parse one file's footer; resolve the projection against it.
pub(crate) async fn load_footer(
    shared: Arc<Shared>,
    file: FileRef,
) -> Result<(Arc<FileMeta>, Projection)> {
    let _guard = shared.metrics.task_started();
    let hint = shared.opts.footer_size_hint as u64;
    let (size, start, bytes) = shared.fetcher.suffix(&file, hint).await?;
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
    let columns = shared.opts.columns.clone();
    let out = on_pool(&shared, &name, move || {
        let meta = plan::decode_footer(file, size, metadata, prefix, prefix_start)?;
        let proj = plan::project(&meta, columns.as_deref())?;
        Ok((Arc::new(meta), proj))
    })
    .await?;
    Metrics::add(&shared.metrics.files, 1);
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
    first: (Arc<FileMeta>, Projection),
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
    first: (Arc<FileMeta>, Projection),
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
        let (meta, proj) = match current.take() {
            Some(x) => x,
            None => match footers.next().await {
                None => return Ok(()),
                Some(Ok(r)) => {
                    let (meta, proj) = r?;
                    plan::check_schema(&schema, &first_name, &proj, &meta.file.name)?;
                    (meta, proj)
                }
                Some(Err(e)) => {
                    return Err(Error::new(
                        ErrorKind::Panic,
                        format!("footer task failed: {e}"),
                    ))
                }
            },
        };
        let slots = plan::plan_file(&meta, &proj, opts.split_bytes, threads)?;
        let layout = Arc::new(output_layout(&proj, &slots));
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
            // One fetch per slot: the parts' ranges are coalesced together (so a gap between
            // two parts' columns is never fetched twice) and every part decodes from the same
            // zero-copy chunk.
            let guard = shared.metrics.task_started();
            let mut held = Held::new(Arc::clone(shared), slot_plan.compressed());
            let sh = Arc::clone(shared);
            let meta = Arc::clone(&meta);
            let rg = slot_plan.row_group;
            let ranges: Vec<_> = slot_plan
                .parts
                .iter()
                .flat_map(|p| p.ranges.clone())
                .collect();
            let parts = slot_plan.parts.clone();
            tasks.spawn(async move {
                let _guard = guard;
                let fetched = AssertUnwindSafe(sh.fetcher.ranges(
                    &meta.file,
                    meta.size,
                    &ranges,
                    &meta.cached,
                    sh.opts.coalesce_gap as u64,
                    sh.opts.request_size as u64,
                ))
                .catch_unwind()
                .await;
                match fetched {
                    Ok(Ok(chunk)) => {
                        held.fetched(chunk.bytes());
                        let held = Arc::new(held);
                        for (part, (plan, ctl)) in parts.into_iter().zip(ctls).enumerate() {
                            PartDecoder::new(
                                Arc::clone(&sh),
                                ctl,
                                (slot, part),
                                Arc::clone(&meta),
                                rg,
                                plan,
                                (chunk.clone(), Arc::clone(&held)),
                            )
                            .spawn();
                        }
                    }
                    Ok(Err(e)) => {
                        let _ = sh.tx.send(Event::Error {
                            slot,
                            error: e.with_row_group(rg),
                        });
                    }
                    Err(_) => {
                        let e = Error::new(ErrorKind::Panic, "fetch task panicked")
                            .with_path(&*meta.file.name)
                            .with_row_group(rg);
                        let _ = sh.tx.send(Event::Error { slot, error: e });
                    }
                }
            });
            rows_planned += slot_plan.rows;
            *next_slot += 1;
            while tasks.try_join_next().is_some() {}
        }
    }
}

/// For each slot, where each output column comes from: (part, column within the part's batch).
fn output_layout(proj: &Projection, slots: &[plan::SlotPlan]) -> Vec<Arc<Vec<(usize, usize)>>> {
    slots
        .iter()
        .map(|s| {
            let layout = proj
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
            Arc::new(layout)
        })
        .collect()
}
