//! [`LatencyStore`]: an [`ObjectStore`] wrapper that makes any store behave like a remote one,
//! for benchmarks and tests.
//!
//! Every GET pays a first-byte delay and then transfers its body at a fixed per-request
//! bandwidth; an optional connection cap makes requests queue for a free connection (the
//! queueing counts towards their time, as it would against a real endpoint). Unlike
//! object_store's `ThrottledStore`, which charges one delay per `get_ranges` call however many
//! ranges it covers, `get_ranges` here coalesces the ranges (gap
//! [`OBJECT_STORE_COALESCE_DEFAULT`]) and issues one GET per coalesced range, each paying its
//! own delay, as object_store's real HTTP stores do. Counters of requests, bytes and peak
//! concurrency are readable at any time.
//!
//! ```
//! use std::sync::Arc;
//! use std::time::{Duration, Instant};
//! use object_store::{memory::InMemory, path::Path, ObjectStore, ObjectStoreExt};
//! use rayquet_testkit::latency::LatencyStore;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let store = Arc::new(
//!     LatencyStore::new(Arc::new(InMemory::new()))
//!         .with_first_byte(Duration::from_millis(20))
//!         .with_bandwidth(100 << 20)
//!         .with_max_connections(8),
//! );
//! let path = Path::from("a/b.bin");
//! rt.block_on(store.put(&path, vec![7u8; 1 << 20].into()))?;
//! let start = Instant::now();
//! let bytes = rt.block_on(store.get_range(&path, 0..4096))?;
//! assert_eq!(bytes.len(), 4096);
//! assert!(start.elapsed() >= Duration::from_millis(20));
//! let c = store.counters();
//! assert_eq!((c.requests, c.bytes), (1, 4096));
//! # Ok(()) }
//! ```

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use object_store::path::Path;
use object_store::{
    coalesce_ranges, CopyOptions, GetOptions, GetResult, GetResultPayload, ListResult,
    MultipartUpload, ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions, PutPayload,
    PutResult, RenameOptions, Result, OBJECT_STORE_COALESCE_DEFAULT,
};
use tokio::sync::Semaphore;

/// Default delay before the first byte of every GET (50 ms).
pub const DEFAULT_FIRST_BYTE: Duration = Duration::from_millis(50);
/// Default bandwidth of one request, in bytes per second (60 MiB/s).
pub const DEFAULT_BANDWIDTH: u64 = 60 << 20;

/// An [`ObjectStore`] that charges every GET a first-byte delay plus its size over a
/// per-request bandwidth, optionally through a limited number of connections. See the
/// [module documentation](self).
#[derive(Debug)]
pub struct LatencyStore {
    inner: Arc<dyn ObjectStore>,
    first_byte: Duration,
    bandwidth: u64,
    connections: Option<(usize, Semaphore)>,
    counters: Arc<Counters>,
}

#[derive(Debug, Default)]
struct Counters {
    requests: AtomicU64,
    heads: AtomicU64,
    lists: AtomicU64,
    bytes: AtomicU64,
    in_flight: AtomicU64,
    peak_in_flight: AtomicU64,
    /// Some GET has answered since the counters were (re)set.
    answered: AtomicBool,
    first_wave: AtomicU64,
}

/// A copy of a [`LatencyStore`]'s counters, from [`LatencyStore::counters`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LatencyCounters {
    /// GET requests with a body (each coalesced range of `get_ranges` is one).
    pub requests: u64,
    /// HEAD requests (`head`, or `get_opts` with `head` set).
    pub heads: u64,
    /// List calls.
    pub lists: u64,
    /// Body bytes returned by GET requests.
    pub bytes: u64,
    /// Most GET and HEAD requests that held a connection at once.
    pub peak_concurrency: u64,
    /// GET requests sent before any GET had answered: what a reader asks for in its first
    /// round trip of data.
    pub first_wave: u64,
}

impl std::fmt::Display for LatencyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "LatencyStore({:?} first byte, {} B/s, {:?} connections, {})",
            self.first_byte,
            self.bandwidth,
            self.connections.as_ref().map(|c| c.0),
            self.inner
        )
    }
}

/// Counts a request as holding a connection until dropped.
struct Connection<'a>(&'a Counters);

impl<'a> Connection<'a> {
    fn open(c: &'a Counters) -> Self {
        let now = c.in_flight.fetch_add(1, Relaxed) + 1;
        c.peak_in_flight.fetch_max(now, Relaxed);
        Connection(c)
    }
}

impl Drop for Connection<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Relaxed);
    }
}

impl LatencyStore {
    /// Wrap `inner` with the defaults: 50 ms to first byte, 60 MiB/s per request, no
    /// connection cap.
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        LatencyStore {
            inner,
            first_byte: DEFAULT_FIRST_BYTE,
            bandwidth: DEFAULT_BANDWIDTH,
            connections: None,
            counters: Arc::default(),
        }
    }

    /// Delay before the first byte of every GET, HEAD and list call.
    pub fn with_first_byte(mut self, delay: Duration) -> Self {
        self.first_byte = delay;
        self
    }

    /// Bytes per second each GET transfers its body at (0: unlimited).
    pub fn with_bandwidth(mut self, bytes_per_sec: u64) -> Self {
        self.bandwidth = bytes_per_sec;
        self
    }

    /// At most `n` GET and HEAD requests at once (0: no cap); the others wait for a connection,
    /// and the wait is part of their time.
    pub fn with_max_connections(mut self, n: usize) -> Self {
        self.connections = (n > 0).then(|| (n, Semaphore::new(n)));
        self
    }

    /// The wrapped store.
    pub fn inner(&self) -> &Arc<dyn ObjectStore> {
        &self.inner
    }

    /// The delay before each request's first byte.
    pub fn first_byte(&self) -> Duration {
        self.first_byte
    }

    /// The per-request bandwidth in bytes per second (0: unlimited).
    pub fn bandwidth(&self) -> u64 {
        self.bandwidth
    }

    /// The connection cap, if any.
    pub fn max_connections(&self) -> Option<usize> {
        self.connections.as_ref().map(|c| c.0)
    }

    /// The counters so far.
    pub fn counters(&self) -> LatencyCounters {
        let c = &self.counters;
        LatencyCounters {
            requests: c.requests.load(Relaxed),
            heads: c.heads.load(Relaxed),
            lists: c.lists.load(Relaxed),
            bytes: c.bytes.load(Relaxed),
            peak_concurrency: c.peak_in_flight.load(Relaxed),
            first_wave: c.first_wave.load(Relaxed),
        }
    }

    /// Set every counter back to zero (requests in flight stay counted as in flight).
    pub fn reset_counters(&self) {
        let c = &self.counters;
        for counter in [&c.requests, &c.heads, &c.lists, &c.bytes, &c.first_wave] {
            counter.store(0, Relaxed);
        }
        c.answered.store(false, Relaxed);
        c.peak_in_flight.store(c.in_flight.load(Relaxed), Relaxed);
    }

    /// Time to transfer `bytes` at the per-request bandwidth.
    fn transfer_time(&self, bytes: u64) -> Duration {
        match self.bandwidth {
            0 => Duration::ZERO,
            bw => Duration::from_secs_f64(bytes as f64 / bw as f64),
        }
    }

    async fn sleep(d: Duration) {
        if !d.is_zero() {
            tokio::time::sleep(d).await;
        }
    }
}

#[async_trait]
impl ObjectStore for LatencyStore {
    async fn put_opts(&self, l: &Path, p: PutPayload, o: PutOptions) -> Result<PutResult> {
        self.inner.put_opts(l, p, o).await
    }

    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(l, o).await
    }

    /// One request: wait for a connection, the first-byte delay, then the body's transfer time.
    /// The body is read whole before returning (so a local file's payload becomes a stream).
    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let _permit = match &self.connections {
            Some((_, sem)) => Some(sem.acquire().await.expect("semaphore never closed")),
            None => None,
        };
        let _conn = Connection::open(&self.counters);
        if !options.head && !self.counters.answered.load(Relaxed) {
            self.counters.first_wave.fetch_add(1, Relaxed);
        }
        Self::sleep(self.first_byte).await;
        if options.head {
            self.counters.heads.fetch_add(1, Relaxed);
            return self.inner.get_opts(location, options).await;
        }
        self.counters.requests.fetch_add(1, Relaxed);
        let result = self.inner.get_opts(location, options).await?;
        let (meta, range) = (result.meta.clone(), result.range.clone());
        let attributes = result.attributes.clone();
        let body = result.bytes().await?;
        self.counters.bytes.fetch_add(body.len() as u64, Relaxed);
        Self::sleep(self.transfer_time(body.len() as u64)).await;
        self.counters.answered.store(true, Relaxed);
        Ok(GetResult {
            payload: GetResultPayload::Stream(stream::once(async move { Ok(body) }).boxed()),
            meta,
            range,
            attributes,
        })
    }

    /// Coalesce `ranges` (gap [`OBJECT_STORE_COALESCE_DEFAULT`]) and fetch each merged range as
    /// its own request (up to 10 at once, as object_store's default does).
    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        coalesce_ranges(
            ranges,
            |range| async move {
                let options = GetOptions::new().with_range(Some(range));
                self.get_opts(location, options).await?.bytes().await
            },
            OBJECT_STORE_COALESCE_DEFAULT,
        )
        .await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.delayed_list(self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.delayed_list(self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.counters.lists.fetch_add(1, Relaxed);
        Self::sleep(self.first_byte).await;
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, o: CopyOptions) -> Result<()> {
        self.inner.copy_opts(from, to, o).await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, o: RenameOptions) -> Result<()> {
        self.inner.rename_opts(from, to, o).await
    }
}

impl LatencyStore {
    /// `inner` after one first-byte delay, counted as one list call, in lexical order of the
    /// locations (as S3, GCS and Azure list; a local directory lists in any order, and
    /// delta-kernel, for one, sorts only `file://` listings itself).
    fn delayed_list(
        &self,
        inner: BoxStream<'static, Result<ObjectMeta>>,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        let delay = self.first_byte;
        let counters = Arc::clone(&self.counters);
        stream::once(async move {
            counters.lists.fetch_add(1, Relaxed);
            Self::sleep(delay).await;
            let mut items: Vec<Result<ObjectMeta>> = inner.collect().await;
            // Errors first, so that a failed listing fails before any entry is used.
            items.sort_by(|a, b| match (a, b) {
                (Ok(a), Ok(b)) => a.location.cmp(&b.location),
                (Err(_), Ok(_)) => std::cmp::Ordering::Less,
                (Ok(_), Err(_)) => std::cmp::Ordering::Greater,
                (Err(_), Err(_)) => std::cmp::Ordering::Equal,
            });
            stream::iter(items)
        })
        .flatten()
        .boxed()
    }
}
