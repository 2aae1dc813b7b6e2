//! The shared thread pools: one small tokio runtime for IO and one rayon pool for decoding,
//! each created lazily, once per process, on first use, and never shut down, used by every scan
//! that is not given its own (`ScanBuilder::io_runtime`, `ScanBuilder::decode_pool`).
//!
//! Invariant: tokio threads only wait on the network or disk; every CPU-heavy step (footer
//! parsing, decompression, decoding) runs on the rayon pool.

use std::sync::{Arc, OnceLock};

/// Worker threads of the shared IO runtime.
pub(crate) const IO_THREADS: usize = 2;

/// Most blocking threads of the shared IO runtime. object_store reads local files with
/// `spawn_blocking`; tokio's default (512) would let concurrent local scans start hundreds of
/// threads.
pub(crate) const IO_BLOCKING_THREADS: usize = 16;

/// A handle to the shared IO runtime (2 worker threads named `rayquet-io`, and at most
/// [`IO_BLOCKING_THREADS`] threads for blocking file reads), created on first use.
pub(crate) fn io_handle() -> tokio::runtime::Handle {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
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
/// use. A panic that escapes one of its jobs is recorded ([`crate::panic::stray`]), never an
/// abort.
pub(crate) fn decode_pool() -> Arc<rayon::ThreadPool> {
    static POOL: OnceLock<Arc<rayon::ThreadPool>> = OnceLock::new();
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
