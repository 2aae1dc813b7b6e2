//! Fetch: the IO side, run on the tokio runtime only. Byte ranges become GET requests:
//! nearby ranges are coalesced (gaps up to `coalesce_gap`), large ones split into parallel
//! requests: on local disks and in memory of at most `request_size`, cut where a column chunk
//! starts ([`split_at`]); on object stores, where each request is a round trip and billed,
//! into the fewest of about `request_size` ([`split_even`]); and
//! every request waits for one of `requests_in_flight` permits (of its store's reach: near
//! and far stores have their own), then (under
//! [`SharedLimits`](crate::SharedLimits)) for one of the connections the scans share: both
//! semaphores are fair (first come, first served).
//!
//! A file of the default local store (`LocalFileSystem::new()`) is opened and read in one
//! blocking task, at the path that store maps it to ([`local_path`]); any other store's
//! files go through `get_opts` (a local one with a prefix: its blocking task opens the file,
//! a second one reads it).
//!
//! Nothing here decodes.

use std::ops::Range;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bytes::Bytes;
use object_store::local::LocalFileSystem;
use object_store::{GetOptions, GetRange, GetResultPayload, ObjectStore};
use tokio::sync::Semaphore;

use crate::error::{Error, Result};
use crate::input::FileRef;
use crate::io::chunk::SparseChunk;
use crate::metrics::Metrics;
use crate::options::Reach;

/// Sends GET requests under a limit on requests in flight (and on connections shared with
/// other scans), counting them in the metrics.
#[derive(Debug, Clone)]
pub(crate) struct Fetcher {
    /// Requests in flight to local disks and memory.
    pub permits: Arc<Semaphore>,
    /// Requests in flight to object stores.
    pub far_permits: Arc<Semaphore>,
    /// Connections shared with other scans ([`SharedLimits`](crate::SharedLimits)).
    pub shared: Option<Arc<Semaphore>>,
    pub metrics: Arc<Metrics>,
    /// Map local files into memory rather than read them ([`ScanBuilder::memory_map`](crate::ScanBuilder::memory_map)).
    pub memory_map: bool,
}

impl Fetcher {
    async fn timed<T>(
        &self,
        (file, what): (&FileRef, &str),
        fut: impl std::future::Future<Output = object_store::Result<T>>,
        len: impl Fn(&T) -> usize,
    ) -> Result<T> {
        let permits = match Reach::of(file.store.as_ref()) {
            Reach::Near => &self.permits,
            Reach::Far => &self.far_permits,
        };
        let _permit = permits.acquire().await.expect("semaphore never closed");
        let _connection = match &self.shared {
            Some(s) => Some(s.acquire().await.expect("semaphore never closed")),
            None => None,
        };
        let t = Instant::now();
        Metrics::add(&self.metrics.requests, 1);
        let out = fut
            .await
            .map_err(|e| Error::from_store(e, &file.name).context(format_args!("reading {what}")));
        Metrics::add_time(&self.metrics.io_nanos, t.elapsed());
        if let Ok(v) = &out {
            Metrics::add(&self.metrics.bytes_fetched, len(v) as u64);
        }
        out
    }

    /// GET `range` of `file` (`what` it holds, for errors).
    pub async fn range(&self, file: &FileRef, range: Range<u64>, what: &str) -> Result<Bytes> {
        let store: &Arc<dyn ObjectStore> = &file.store;
        if let Some(path) = local_path(store.as_ref(), &file.path) {
            // A file of the default local store: opened and read in one blocking task, where
            // `get_opts` opens it in one and our read takes a second (two thread hand-offs
            // each way per request).
            let read = read_local(None, path, range, self.memory_map);
            return self.timed((file, what), read, |b| b.len()).await;
        }
        let opts = GetOptions {
            range: Some(range.into()),
            ..Default::default()
        };
        let get = async {
            let got = store.get_opts(&file.path, opts).await?;
            match got.payload {
                // A local file: read into a pooled buffer (object_store reads into a fresh,
                // zero-filled one, a measurable share of a local scan's CPU).
                GetResultPayload::File(f, path) => {
                    read_local(Some(f), path, got.range, self.memory_map).await
                }
                GetResultPayload::Stream(_) => got.bytes().await,
            }
        };
        self.timed((file, what), get, |b| b.len()).await
    }

    /// GET the last `n` bytes of `file`; returns (file size, offset of the bytes, bytes).
    pub async fn suffix(&self, file: &FileRef, n: u64) -> Result<(u64, u64, Bytes)> {
        if let Some(size) = file.size {
            let start = size.saturating_sub(n);
            if size == 0 {
                return Ok((0, 0, Bytes::new()));
            }
            let b = self.range(file, start..size, "the footer").await?;
            return Ok((size, start, b));
        }
        let opts = GetOptions {
            range: Some(GetRange::Suffix(n)),
            ..Default::default()
        };
        let fut = async {
            let r = file.store.get_opts(&file.path, opts).await?;
            let (size, start) = (r.meta.size, r.range.start);
            let b = r.bytes().await?;
            Ok((size, start, b))
        };
        self.timed((file, "the footer"), fut, |(_, _, b)| b.len())
            .await
    }

    /// Fetch `ranges` of `file` (`what` they hold, for errors) into a [`SparseChunk`],
    /// serving what `cached` already covers. Also returns the bytes actually requested.
    #[allow(clippy::too_many_arguments)]
    pub async fn ranges(
        &self,
        (file, what): (&FileRef, &str),
        size: u64,
        ranges: &[Range<u64>],
        cached: &SparseChunk,
        gap: u64,
        request_size: u64,
    ) -> Result<(SparseChunk, u64)> {
        let mut chunk = SparseChunk::new(size);
        let mut todo = Vec::new();
        let mut starts: Vec<u64> = ranges.iter().map(|r| r.start).collect();
        starts.sort_unstable();
        for mut r in coalesce(ranges, gap) {
            // The footer request may already hold the end of this range (or all of it).
            if let Some((at, held)) = cached.tail_of(r.start, r.end) {
                chunk.insert(at, held);
                r.end = at;
            }
            if r.end > r.start {
                match Reach::of(file.store.as_ref()) {
                    Reach::Near => todo.extend(split_at(r, &starts, request_size)),
                    Reach::Far => todo.extend(split_even(r, &starts, request_size)),
                }
            }
        }
        let got =
            futures::future::try_join_all(todo.iter().map(|r| self.range(file, r.clone(), what)))
                .await?;
        let requested = todo.iter().map(|r| r.end - r.start).sum();
        for (r, b) in todo.into_iter().zip(got) {
            if b.len() as u64 != r.end - r.start {
                return Err(Error::new(
                    crate::error::ErrorKind::Io,
                    format!(
                        "short read: asked {}..{}, got {} bytes",
                        r.start,
                        r.end,
                        b.len()
                    ),
                )
                .with_path(&*file.name));
            }
            chunk.insert(r.start, b);
        }
        Ok((chunk, requested))
    }
}

/// `range` of the local file at `path` (`f`: already open, else opened here) read into a
/// pooled buffer, or mapped with `map`, in one task on the blocking pool.
async fn read_local(
    f: Option<std::fs::File>,
    path: PathBuf,
    range: Range<u64>,
    map: bool,
) -> object_store::Result<Bytes> {
    tokio::task::spawn_blocking(move || {
        let f = match f {
            Some(f) => f,
            None => std::fs::File::open(&path).map_err(|e| open_error(e, &path))?,
        };
        match map {
            // SAFETY: `memory_map` is on only when the caller accepted its contract
            // (`ScanBuilder::memory_map`): nobody modifies the file meanwhile.
            true => unsafe { map_file(f, range, &path) },
            false => read_file(f, range, &path),
        }
    })
    .await
    .map_err(|e| object_store::Error::Generic {
        store: "LocalFileSystem",
        source: Box::new(e),
    })?
}

/// The file system path of `path` in `store` when `store` is the default local file system
/// (`LocalFileSystem::new()`, rooted at `/`), as that store maps it; `None` for any other
/// store (one with a prefix included), read through `get_opts`.
fn local_path(store: &dyn ObjectStore, path: &object_store::path::Path) -> Option<PathBuf> {
    static ROOT: OnceLock<(String, LocalFileSystem)> = OnceLock::new();
    let (name, local) = ROOT.get_or_init(|| {
        let local = LocalFileSystem::new();
        (local.to_string(), local)
    });
    if store.to_string() != *name {
        return None;
    }
    local.path_to_filesystem(path).ok()
}

/// A local file that could not be opened, as `LocalFileSystem` reports it.
fn open_error(e: std::io::Error, path: &std::path::Path) -> object_store::Error {
    match e.kind() {
        std::io::ErrorKind::NotFound => object_store::Error::NotFound {
            path: path.display().to_string(),
            source: Box::new(e),
        },
        std::io::ErrorKind::PermissionDenied => object_store::Error::PermissionDenied {
            path: path.display().to_string(),
            source: Box::new(e),
        },
        _ => object_store::Error::Generic {
            store: "LocalFileSystem",
            source: format!("opening {}: {e}", path.display()).into(),
        },
    }
}

/// Bytes `range` of the open local file `f` (at `path`), read into a pooled buffer
/// ([`crate::pool`]: reused scan after scan, never zero-filled again); fewer bytes if the file
/// is shorter (the caller checks the length).
fn read_file(
    f: std::fs::File,
    range: Range<u64>,
    path: &std::path::Path,
) -> object_store::Result<Bytes> {
    use std::io::{Read, Seek, SeekFrom};
    let err = |e: std::io::Error| object_store::Error::Generic {
        store: "LocalFileSystem",
        source: format!("reading {}: {e}", path.display()).into(),
    };
    let mut f = f;
    f.seek(SeekFrom::Start(range.start)).map_err(err)?;
    let n = range.end.saturating_sub(range.start);
    let buf = crate::pool::pool()
        .fill(n as usize, |v| f.take(n).read_to_end(v).map(drop))
        .map_err(err)?;
    Ok(buf.freeze())
}

/// Bytes `range` of the open local file `f` (at `path`), mapped into memory privately and
/// read-only (no copy; the page tables are filled here, on the IO thread); read as
/// [`read_file`] does when the file is now shorter than `range`.
///
/// # Safety
/// Nobody truncates or writes the file while the returned bytes (or any slice of them, such as
/// a page or a string view's buffer) live: the mapping is handed out as immutable bytes, which
/// a truncation turns into SIGBUS and a write into bytes changing under their readers. Not
/// checkable here: the contract of `ScanBuilder::memory_map`, which callers accept by turning
/// it on.
unsafe fn map_file(
    f: std::fs::File,
    range: Range<u64>,
    path: &std::path::Path,
) -> object_store::Result<Bytes> {
    let n = range.end.saturating_sub(range.start);
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    if n == 0 || size < range.end {
        return read_file(f, range, path);
    }
    // SAFETY: `Mmap` hands out `&[u8]` that Rust treats as immutable for the mapping's life,
    // which only holds while nobody changes the file: this function's contract (the contract
    // of `ScanBuilder::memory_map`, which callers opt into for files nobody modifies while they
    // are scanned). The mapping is private and read-only (MAP_PRIVATE, PROT_READ): this process
    // cannot write through it and nothing reaches the file. What that does not prevent, and
    // the option's documentation says: a file truncated by another process makes reads past
    // its new end fault (SIGBUS, the process dies); a file written in place by another process
    // shows the new bytes (POSIX leaves it unspecified for private mappings; Linux shows them
    // on every page this process has not written, here all), so bytes already checked (page
    // lengths, UTF-8 of strings viewed in place) may change under the decoders.
    let map = unsafe {
        memmap2::MmapOptions::new()
            .offset(range.start)
            .len(n as usize)
            .populate()
            .map_copy_read_only(&f)
    };
    match map {
        Ok(map) => Ok(Bytes::from_owner(map)),
        Err(e) => Err(object_store::Error::Generic {
            store: "LocalFileSystem",
            source: format!("mapping {}: {e}", path.display()).into(),
        }),
    }
}

/// Merge ranges whose gap is at most `gap` bytes; the result is sorted and disjoint.
pub(crate) fn coalesce(ranges: &[Range<u64>], gap: u64) -> Vec<Range<u64>> {
    let mut sorted: Vec<Range<u64>> = ranges.iter().filter(|r| r.end > r.start).cloned().collect();
    sorted.sort_by_key(|r| r.start);
    let mut out: Vec<Range<u64>> = Vec::with_capacity(sorted.len());
    for r in sorted {
        match out.last_mut() {
            Some(last) if r.start <= last.end.saturating_add(gap) => last.end = last.end.max(r.end),
            _ => out.push(r),
        }
    }
    out
}

/// Split a coalesced range into requests of at most `size` bytes, cut where one of the ranges
/// it was coalesced from starts (`starts`, sorted): each request holds whole column chunks
/// (or pages), and a chunk larger than `size` is split evenly ([`split`]). A page that spans
/// two requests is copied into one buffer when read (`SparseChunk`); cut anywhere, the
/// requests split a 1 MiB dictionary page often enough that those copies were 15% of the page
/// faults of a Delta scan (`perf record -e page-faults`).
pub(crate) fn split_at(r: Range<u64>, starts: &[u64], size: u64) -> Vec<Range<u64>> {
    let size = size.max(1);
    let from = starts.partition_point(|s| *s <= r.start);
    let to = starts.partition_point(|s| *s < r.end);
    // The pieces between cut points, packed into requests of at most `size` bytes.
    let cuts = starts[from..to]
        .iter()
        .copied()
        .chain(std::iter::once(r.end));
    let (mut out, mut open, mut at) = (Vec::new(), r.start..r.start, r.start);
    for cut in cuts {
        if cut <= at {
            continue;
        }
        let piece = at..cut;
        at = cut;
        if open.end - open.start + (piece.end - piece.start) <= size {
            open.end = piece.end;
            continue;
        }
        if open.end > open.start {
            out.push(open);
        }
        if piece.end - piece.start > size {
            out.extend(split(piece.clone(), size));
            open = piece.end..piece.end;
        } else {
            open = piece;
        }
    }
    if open.end > open.start {
        out.push(open);
    }
    out
}

/// Split a coalesced range on an object store into the fewest requests of about `size`
/// bytes: `len / size` rounded to the nearest (at least one), as even as the range allows
/// (each between about two thirds of `size` and twice it), each cut moved to the nearest
/// point where one of the ranges starts (`starts`, sorted) within a quarter of `size`, so
/// that requests hold whole column chunks where they can. Cutting only at chunk starts
/// (as [`split_at`] does) made 3 requests of a 9 MB chunk plus its neighbour where polars
/// makes 2: 162 GETs against 130 for a full scan of a 900 MB file.
pub(crate) fn split_even(r: Range<u64>, starts: &[u64], size: u64) -> Vec<Range<u64>> {
    let size = size.max(1);
    let len = r.end - r.start;
    let n = (len / size + u64::from(len % size >= size.div_ceil(2))).max(1);
    let near = size / 4;
    let mut out = Vec::with_capacity(n as usize);
    let mut at = r.start;
    for i in 1..n {
        let ideal = r.start + (u128::from(len) * u128::from(i) / u128::from(n)) as u64;
        let lo = ideal.saturating_sub(near).max(at + 1);
        let hi = ideal.saturating_add(near).min(r.end - 1);
        let from = starts.partition_point(|s| *s < lo);
        let snapped = starts[from..]
            .iter()
            .take_while(|s| **s <= hi)
            .min_by_key(|s| s.abs_diff(ideal))
            .copied();
        let cut = snapped.unwrap_or(ideal);
        if cut > at && cut < r.end {
            out.push(at..cut);
            at = cut;
        }
    }
    out.push(at..r.end);
    out
}

/// Split a range into consecutive pieces of at most `size` bytes (the last may be smaller).
pub(crate) fn split(r: Range<u64>, size: u64) -> impl Iterator<Item = Range<u64>> {
    let size = size.max(1);
    let n = (r.end - r.start).div_ceil(size);
    (0..n).map(move |i| {
        let start = r.start + i * size;
        start..start.saturating_add(size).min(r.end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Numbers below `n` from a xorshift generator seeded with `seed`.
    fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
        move |n| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        }
    }

    #[test]
    fn coalesce_merges_small_gaps_and_sorts() {
        let r = coalesce(&[30..40, 0..10, 12..20, 100..110, 5..8, 50..50], 2);
        assert_eq!(r, vec![0..20, 30..40, 100..110]);
        assert_eq!(coalesce(&[0..10, 11..20], 0), vec![0..10, 11..20]);
    }

    #[test]
    fn local_reads_return_exactly_the_files_bytes_in_reused_buffers() {
        let dir = tempfile::tempdir().unwrap();
        // Two files of different bytes: a buffer from one, reused for the other, must not show
        // through (pool buffers keep their old contents).
        let files: Vec<(std::path::PathBuf, Vec<u8>)> = [(0xAAu8, 3 << 20), (0x55, 1 << 20)]
            .into_iter()
            .enumerate()
            .map(|(i, (fill, len))| {
                let bytes: Vec<u8> = (0..len).map(|j| fill ^ (j % 251) as u8).collect();
                let path = dir.path().join(format!("f{i}"));
                std::fs::write(&path, &bytes).unwrap();
                (path, bytes)
            })
            .collect();
        let ranges = [
            0..(2 << 20),
            10..(1 << 20),
            5000..5001,
            0..0,
            100..(1 << 20) + 7,
        ];
        for round in 0..3 {
            for (path, bytes) in &files {
                for r in &ranges {
                    let f = std::fs::File::open(path).unwrap();
                    let got = read_file(f, r.start as u64..r.end as u64, path).unwrap();
                    // Past the end of the file: as many bytes as there are (a short read).
                    let end = r.end.min(bytes.len()).max(r.start.min(bytes.len()));
                    let want = &bytes[r.start.min(bytes.len())..end];
                    assert_eq!(got.len(), want.len(), "round {round} {path:?} {r:?}");
                    assert!(got == want, "round {round} {path:?} {r:?}: other bytes");
                }
            }
        }
        let err =
            read_file(std::fs::File::open(dir.path()).unwrap(), 0..10, dir.path()).unwrap_err();
        assert!(
            err.to_string().contains(&*dir.path().to_string_lossy()),
            "{err}"
        );
    }

    #[test]
    fn local_files_read_in_one_task_as_the_store_maps_their_paths() {
        let dir = tempfile::tempdir().unwrap();
        // A name the store percent-encodes in its paths.
        let sub = dir.path().join("year=2024 %20 é#");
        std::fs::create_dir(&sub).unwrap();
        let file = sub.join("part 0%.parquet");
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&file, &bytes).unwrap();
        let fetcher = Fetcher {
            permits: Arc::new(Semaphore::new(4)),
            far_permits: Arc::new(Semaphore::new(4)),
            shared: None,
            metrics: Arc::new(Metrics::default()),
            memory_map: false,
        };
        let at = |store: Arc<dyn ObjectStore>, path: object_store::path::Path| FileRef {
            store,
            path,
            size: None,
            name: file.display().to_string().into(),
            version: None,
        };
        let root: Arc<dyn ObjectStore> = Arc::new(LocalFileSystem::new());
        let full = object_store::path::Path::from_filesystem_path(&file).unwrap();
        // The default store: read directly, at the path the store itself maps to.
        let mapped = local_path(root.as_ref(), &full).expect("the default local store");
        assert_eq!(
            mapped,
            LocalFileSystem::new().path_to_filesystem(&full).unwrap()
        );
        assert_eq!(mapped.canonicalize().unwrap(), file.canonicalize().unwrap());
        // A store with a prefix: through `get_opts` (the same bytes, in a plainly named file).
        let prefixed: Arc<dyn ObjectStore> =
            Arc::new(LocalFileSystem::new_with_prefix(&sub).unwrap());
        std::fs::write(sub.join("plain.parquet"), &bytes).unwrap();
        let rel = object_store::path::Path::from("plain.parquet");
        assert!(local_path(prefixed.as_ref(), &rel).is_none());
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for (f, what) in [
            (at(root.clone(), full), "direct"),
            (at(prefixed, rel), "store"),
        ] {
            for r in [0..100_000u64, 17..60_000, 99_999..100_000] {
                let got = rt.block_on(fetcher.range(&f, r.clone(), "bytes")).unwrap();
                assert!(
                    got == bytes[r.start as usize..r.end as usize],
                    "{what} {r:?}"
                );
            }
        }
        // A missing file: not found, naming it, as the store reports it.
        let gone = object_store::path::Path::from_absolute_path(sub.join("gone.parquet"));
        let gone = at(root, gone.unwrap());
        let err = rt
            .block_on(fetcher.range(&gone, 0..10, "bytes"))
            .unwrap_err();
        assert_eq!(err.kind(), crate::error::ErrorKind::NotFound, "{err}");
        assert!(err.to_string().contains("gone.parquet"), "{err}");
    }

    #[test]
    fn split_at_cuts_where_ranges_start_and_covers_the_range() {
        // Chunks of 3, 5, 1, 9 and 2 bytes from 10, coalesced into 10..30, requests of 6.
        let starts = [10, 13, 18, 19, 28];
        assert_eq!(
            split_at(10..30, &starts, 6),
            vec![10..13, 13..19, 19..25, 25..28, 28..30]
        );
        // Everything fits one request; a range cut short by the footer's bytes (`end` 15).
        assert_eq!(split_at(10..30, &starts, 100), vec![10..30]);
        assert_eq!(split_at(10..15, &starts, 4), vec![10..13, 13..15]);
        // Random ranges: the requests cover the range exactly, in order, none over `size`,
        // and no requested range that fits a request is cut.
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for case in 0..500 {
            let mut ranges = Vec::new();
            let mut at = next(50);
            for _ in 0..next(8) + 1 {
                let len = next(40) + 1;
                ranges.push(at..at + len);
                at += len + next(4);
            }
            let size = next(30) + 1;
            let mut starts: Vec<u64> = ranges.iter().map(|r| r.start).collect();
            starts.sort_unstable();
            for r in coalesce(&ranges, 3) {
                let got = split_at(r.clone(), &starts, size);
                assert_eq!(got.first().map(|g| g.start), Some(r.start), "case {case}");
                assert_eq!(got.last().map(|g| g.end), Some(r.end), "case {case}");
                for w in got.windows(2) {
                    assert_eq!(w[0].end, w[1].start, "case {case}");
                }
                for g in &got {
                    assert!(g.end > g.start && g.end - g.start <= size, "case {case}");
                }
                for c in ranges.iter().filter(|c| c.end - c.start <= size) {
                    assert!(
                        got.iter().any(|g| g.start <= c.start && c.end <= g.end)
                            || !(r.start <= c.start && c.end <= r.end),
                        "case {case}: {c:?} cut in {got:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn split_even_makes_the_fewest_requests_cut_at_chunk_starts_when_near() {
        // A 9 MB chunk and a 3 MB one with 8 MiB requests: one request each (not 8 + 1).
        let mib = 1u64 << 20;
        assert_eq!(split_even(0..9 * mib, &[0], 8 * mib), vec![0..9 * mib]);
        // 57 MiB of 16 chunks: 7 requests, not the 10 cutting only at chunk starts makes.
        let starts: Vec<u64> = (0..16).map(|i| i * 57 * mib / 16).collect();
        let got = split_even(0..57 * mib, &starts, 8 * mib);
        assert_eq!(got.len(), 7, "{got:?}");
        assert!(split_at(0..57 * mib, &starts, 8 * mib).len() > 7);
        // Every cut lands on a chunk start: one is always within a quarter of 8 MiB here.
        for g in &got {
            assert!(starts.contains(&g.start), "{g:?} in {got:?}");
        }
        // Random ranges: the requests cover the range exactly, in order, their count is the
        // length over `size` rounded, none over twice `size`, and a cut not at a chunk start
        // had none within a quarter of `size`.
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for case in 0..2000 {
            let start = next(100);
            let r = start..start + next(500) + 1;
            let mut starts: Vec<u64> = (0..next(12))
                .map(|_| r.start + next(r.end - r.start))
                .collect();
            starts.sort_unstable();
            let size = next(120) + 1;
            let got = split_even(r.clone(), &starts, size);
            let len = r.end - r.start;
            let n = ((len as f64 / size as f64).round() as usize).max(1);
            assert_eq!(got.first().map(|g| g.start), Some(r.start), "case {case}");
            assert_eq!(got.last().map(|g| g.end), Some(r.end), "case {case}");
            assert!(got.len() <= n, "case {case}: {got:?}, {n} wanted");
            for w in got.windows(2) {
                assert_eq!(w[0].end, w[1].start, "case {case}");
                let cut = w[0].end;
                let near = size / 4;
                if !starts.contains(&cut) {
                    assert!(
                        !starts.iter().any(|s| s.abs_diff(cut) <= near / 2
                            && *s > w[0].start
                            && *s < w[1].end),
                        "case {case}: cut {cut} with a chunk start close by in {starts:?}"
                    );
                }
            }
            for g in &got {
                assert!(
                    g.end > g.start && g.end - g.start <= 2 * size + 1,
                    "case {case}: {got:?}"
                );
            }
        }
    }

    #[test]
    fn split_covers_range_exactly() {
        let parts: Vec<_> = split(10..35, 10).collect();
        assert_eq!(parts, vec![10..20, 20..30, 30..35]);
        assert_eq!(split(0..10, 10).count(), 1);
        let big = u64::MAX - 5;
        assert_eq!(
            split(big..big + 3, u64::MAX).collect::<Vec<_>>(),
            vec![big..big + 3]
        );
    }
}
