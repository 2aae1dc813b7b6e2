//! The shared thread pools: one small tokio runtime for IO and one rayon pool for decoding,
//! each created lazily, once per process, on first use, and never shut down, used by every scan
//! that is not given its own (`ScanBuilder::io_runtime`, `ScanBuilder::decode_pool`).
//!
//! A child process made by `fork` (Python's `multiprocessing` on Linux) inherits the pools'
//! memory but none of their threads: work sent to them would wait forever. So each pool is
//! remembered with the process that made it ([`PerProcess`]), and a child makes its own on
//! first use; the parent's copies are left alone (dropping them would wait for threads that
//! do not exist in the child). Forking while a scan runs on another thread is not supported
//! (that scan's locks and buffers are copied mid-use), as for any threaded library.
//!
//! Invariant: tokio threads only wait on the network or disk; every CPU-heavy step (footer
//! parsing, decompression, decoding) runs on the rayon pool.

use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::{Arc, Mutex};

/// A process-wide value made on first use in each process: after `fork`, the child's first
/// use makes its own (see the module docs). Made values live as long as the process. One
/// thread makes it while the others wait ([`PerProcess::making`]): a pool made twice would
/// have to be dropped, and a tokio runtime cannot be dropped on a tokio thread.
pub(crate) struct PerProcess<T> {
    current: AtomicPtr<(u32, T)>,
    /// Held while a value is made (never on the fast path). A fork while another thread
    /// holds it (the first scan of the process starting its pools) leaves it held in the
    /// child: unsupported, as any fork during a scan.
    making: Mutex<()>,
}

impl<T> PerProcess<T> {
    /// Nothing made yet.
    pub(crate) const fn new() -> Self {
        PerProcess {
            current: AtomicPtr::new(std::ptr::null_mut()),
            making: Mutex::new(()),
        }
    }

    /// The value of this process, made by `make` on its first use here.
    pub(crate) fn get_or_init(&'static self, make: impl FnOnce() -> T) -> &'static T {
        self.get_or_init_in(std::process::id(), make)
    }

    /// [`get_or_init`](Self::get_or_init) for the process `pid`.
    fn get_or_init_in(&'static self, pid: u32, make: impl FnOnce() -> T) -> &'static T {
        if let Some(value) = self.made_in(pid) {
            return value;
        }
        let _making = self.making.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(value) = self.made_in(pid) {
            return value;
        }
        let fresh = Box::into_raw(Box::new((pid, make())));
        // The parent process's entry, if any, stays allocated: see the module docs.
        self.current.store(fresh, Ordering::Release);
        // SAFETY: `fresh` is stored, so never freed from now on.
        unsafe { &(*fresh).1 }
    }

    /// The value made in process `pid`, if it was.
    fn made_in(&'static self, pid: u32) -> Option<&'static T> {
        let seen = self.current.load(Ordering::Acquire);
        // SAFETY: a non-null stored pointer came from `Box::into_raw` above and is never
        // freed once stored (entries are leaked on purpose), so it is valid for 'static.
        match unsafe { seen.as_ref() } {
            Some((made_in, value)) if *made_in == pid => Some(value),
            _ => None,
        }
    }
}

/// Worker threads of the shared IO runtime.
pub(crate) const IO_THREADS: usize = 2;

/// Most blocking threads of the shared IO runtime. object_store reads local files with
/// `spawn_blocking`; tokio's default (512) would let concurrent local scans start hundreds of
/// threads.
pub(crate) const IO_BLOCKING_THREADS: usize = 16;

/// A handle to the shared IO runtime (2 worker threads named `rayquet-io`, and at most
/// [`IO_BLOCKING_THREADS`] threads for blocking file reads), created on first use in this
/// process.
pub(crate) fn io_handle() -> tokio::runtime::Handle {
    static RT: PerProcess<tokio::runtime::Runtime> = PerProcess::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(IO_THREADS)
            .max_blocking_threads(IO_BLOCKING_THREADS)
            .thread_name("rayquet-io")
            .enable_all()
            .build()
            .expect("failed to start the rayquet IO runtime")
    })
    .handle()
    .clone()
}

/// The shared decode pool (one thread per core, named `rayquet-decode-N`), created on first
/// use in this process. A panic that escapes one of its jobs is recorded ([`crate::panic::stray`]), never an
/// abort.
pub(crate) fn decode_pool() -> Arc<rayon::ThreadPool> {
    static POOL: PerProcess<Arc<rayon::ThreadPool>> = PerProcess::new();
    POOL.get_or_init(|| {
        Arc::new(
            rayon::ThreadPoolBuilder::new()
                .thread_name(|i| format!("rayquet-decode-{i}"))
                .panic_handler(crate::panic::stray)
                .build()
                .expect("failed to start the rayquet decode pool"),
        )
    })
    .clone()
}

/// Run `fut` on the runtime behind `io` and wait for its output on this thread, without
/// `block_on` (so it may be called from any thread, even a tokio worker, which it blocks).
/// `None` if the runtime shut down or the future panicked.
pub(crate) fn wait<T: Send + 'static>(
    io: &tokio::runtime::Handle,
    fut: impl std::future::Future<Output = T> + Send + 'static,
) -> Option<T> {
    let (tx, rx) = crossbeam_channel::bounded(1);
    io.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv().ok()
}

/// [`wait`] for a job that returns a `Result`: a runtime that stopped (or a job that panicked)
/// before answering is a `Cancelled` error.
pub(crate) fn block_on_io<T: Send + 'static>(
    io: &tokio::runtime::Handle,
    fut: impl std::future::Future<Output = crate::Result<T>> + Send + 'static,
) -> crate::Result<T> {
    wait(io, fut).unwrap_or_else(|| {
        Err(crate::Error::new(
            crate::ErrorKind::Cancelled,
            "the IO runtime stopped (or the job panicked) before answering",
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One value per process: made once, kept; made again for another process id (a forked
    /// child's), which then keeps its own.
    #[test]
    fn per_process_values_are_made_again_after_fork() {
        static VALUE: PerProcess<String> = PerProcess::new();
        let parent = VALUE.get_or_init_in(1, || "parent".to_string());
        assert_eq!(parent, "parent");
        let again = VALUE.get_or_init_in(1, || unreachable!("made twice in one process"));
        assert!(std::ptr::eq(parent, again));
        let child = VALUE.get_or_init_in(2, || "child".to_string());
        assert_eq!(child, "child");
        assert_eq!(VALUE.get_or_init_in(2, || unreachable!()), "child");
        // The parent's value is still readable where it was handed out.
        assert_eq!(parent, "parent");
    }

    /// Threads racing to the first use make one value between them (a second would have to
    /// be dropped, which a tokio runtime refuses on a tokio thread).
    #[test]
    fn concurrent_first_uses_make_one_value() {
        static VALUE: PerProcess<usize> = PerProcess::new();
        static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let barrier = std::sync::Barrier::new(8);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    barrier.wait();
                    VALUE.get_or_init_in(7, || {
                        std::thread::sleep(std::time::Duration::from_millis(20));
                        MADE.fetch_add(1, Ordering::SeqCst)
                    });
                });
            }
        });
        assert_eq!(MADE.load(Ordering::SeqCst), 1);
    }

    /// A panic that escapes a job of the shared pool is recorded, not an abort (rayon's
    /// default without a handler): this test's process survives it and the pool still runs.
    #[test]
    fn a_panic_escaping_the_shared_pool_is_recorded() {
        let pool = decode_pool();
        let before = crate::panic::strays();
        pool.spawn(|| panic!("a stray panic"));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while crate::panic::strays() == before {
            assert!(
                std::time::Instant::now() < deadline,
                "the panic was not recorded"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(crate::panic::stray_error()
            .to_string()
            .contains("a stray panic"));
        let (tx, rx) = crossbeam_channel::bounded(1);
        pool.spawn(move || tx.send(7).unwrap());
        assert_eq!(rx.recv().unwrap(), 7, "the pool still runs jobs");
    }
}
