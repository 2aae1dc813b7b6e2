//! Panics inside the pipeline become errors, quietly.
//!
//! Parquet can panic on malformed input. Every decode, footer and planning task runs inside
//! [`catch`], which turns a panic into its message (with the location it came from) so the
//! scan ends with an `ErrorKind::Panic` error naming the file. The default panic hook would
//! still print the panic to stderr, which a service embedding rayquet sees as noise (or as a
//! crash): so the first `catch` installs a hook that stays silent for panics caught here and
//! hands every other panic to the hook that was installed before (so the application's own
//! panics print as usual). Set `RAYQUET_SHOW_PANICS=1` to print caught panics too.
//!
//! Every place that runs code which may panic goes through here: [`catch`] on the current
//! thread, [`on_pool`] for work sent to the decode pool from async code, and [`panicked`]
//! for the error either becomes. Behind them, the shared decode pool's panic handler
//! ([`stray`]) keeps a panic that escaped anyway from aborting the process (rayon's default):
//! the scan it stalls ends with it as its error.
//!
//! Invariant: the hook is installed once per process and chains to the previous one; a
//! panic is silenced only on a thread that is inside `catch` at that moment.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Mutex, Once};

use crate::error::{Error, ErrorKind, Result};
use crate::metrics::TaskGuard;

thread_local! {
    /// This thread is inside `catch`.
    static QUIET: Cell<bool> = const { Cell::new(false) };
    /// Where the last silenced panic of this thread happened.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

fn install() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let show = std::env::var_os("RAYQUET_SHOW_PANICS").is_some_and(|v| v != "0");
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if QUIET.with(Cell::get) {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()));
                LOCATION.with(|l| *l.borrow_mut() = at);
                if !show {
                    return;
                }
            }
            previous(info)
        }));
    });
}

/// Run `f`; a panic becomes `Err` with its message and location. (`AssertUnwindSafe`: the
/// closures run here own, or share only through locks and atomics, data that a panic leaves
/// consistent, and the scan fails with the error.)
pub(crate) fn catch<T>(f: impl FnOnce() -> T) -> Result<T, String> {
    install();
    let outer = QUIET.with(|q| q.replace(true));
    let r = catch_unwind(AssertUnwindSafe(f));
    QUIET.with(|q| q.set(outer));
    r.map_err(|p| {
        let msg = message(p.as_ref());
        match LOCATION.with(|l| l.borrow_mut().take()) {
            Some(at) => format!("{msg} (at {at})"),
            None => msg,
        }
    })
}

/// The message of a panic payload.
pub(crate) fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic")
        .to_string()
}

/// The error for a caught panic of `what` (e.g. "the parquet decoder") with message `msg`.
pub(crate) fn panicked(what: &str, msg: impl std::fmt::Display) -> Error {
    Error::new(ErrorKind::Panic, format!("{what} panicked: {msg}"))
}

/// Panics that escaped a job of the shared decode pool ([`stray`]): their count, and the last
/// one's message.
static STRAYS: AtomicU64 = AtomicU64::new(0);
static LAST_STRAY: Mutex<Option<String>> = Mutex::new(None);

/// The shared decode pool's panic handler: a backstop behind the [`catch`] that every task
/// rayquet spawns runs in (rayon aborts the process on a panic that escapes a spawned job when
/// its pool has no handler). The panic is recorded; a scan that then stops making progress
/// ends with it as an `ErrorKind::Panic` error ([`stray_error`]) instead of waiting.
pub(crate) fn stray(payload: Box<dyn std::any::Any + Send>) {
    let msg = message(payload.as_ref());
    *LAST_STRAY.lock().unwrap_or_else(|e| e.into_inner()) = Some(msg);
    STRAYS.fetch_add(1, Relaxed);
}

/// How many panics escaped the shared pool's jobs so far ([`stray`]).
pub(crate) fn strays() -> u64 {
    STRAYS.load(Relaxed)
}

/// The error of a scan whose pipeline stopped after a panic escaped a pool job.
pub(crate) fn stray_error() -> Error {
    let last = LAST_STRAY.lock().unwrap_or_else(|e| e.into_inner()).clone();
    panicked("a decode task", last.as_deref().unwrap_or("(no message)"))
}

/// Run `f` on `pool` and await its result from async code (the awaiting task never blocks a
/// thread); a panic in `f` becomes an `ErrorKind::Panic` error about `what`. `guard` counts
/// the task as running until it ends.
pub(crate) async fn on_pool<T: Send + 'static>(
    pool: &rayon::ThreadPool,
    guard: Option<TaskGuard>,
    what: &str,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    pool.spawn(move || {
        let _guard = guard;
        let _ = tx.send(catch(f));
    });
    match rx.await {
        Ok(Ok(r)) => r,
        Ok(Err(msg)) => Err(panicked(what, msg)),
        Err(_) => Err(Error::new(
            ErrorKind::Cancelled,
            format!("{what} was dropped (its pool shut down)"),
        )),
    }
}
