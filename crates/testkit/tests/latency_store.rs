//! `LatencyStore` charges what it promises: a first-byte delay per request, size over bandwidth,
//! a connection cap, one request per coalesced range. Lower bounds on time only (the machine is
//! noisy); concurrency is checked by the store's own counter.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::future::join_all;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use rayquet_testkit::latency::LatencyStore;

const MIB: usize = 1 << 20;

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A store holding one 4 MiB object whose byte `i` is `i % 251`, wrapped by `wrap`.
fn store(
    rt: &tokio::runtime::Runtime,
    wrap: impl FnOnce(LatencyStore) -> LatencyStore,
) -> (Arc<LatencyStore>, Path) {
    let inner = Arc::new(InMemory::new());
    let path = Path::from("t/blob");
    let data: Vec<u8> = (0..4 * MIB).map(|i| (i % 251) as u8).collect();
    rt.block_on(inner.put(&path, data.into())).unwrap();
    (Arc::new(wrap(LatencyStore::new(inner))), path)
}

#[test]
fn sequential_gets_each_pay_the_first_byte_delay() {
    let rt = rt();
    let delay = Duration::from_millis(30);
    let (s, path) = store(&rt, |s| s.with_first_byte(delay).with_bandwidth(0));
    let start = Instant::now();
    for i in 0..5u64 {
        let b = rt
            .block_on(s.get_range(&path, i * 100..i * 100 + 10))
            .unwrap();
        assert_eq!(b.len(), 10);
        assert_eq!(b[0], (i * 100 % 251) as u8);
    }
    assert!(start.elapsed() >= delay * 5, "{:?}", start.elapsed());
    let c = s.counters();
    assert_eq!((c.requests, c.bytes, c.peak_concurrency), (5, 50, 1));
}

#[test]
fn bandwidth_charges_size_over_bandwidth() {
    let rt = rt();
    let (s, path) = store(&rt, |s| {
        s.with_first_byte(Duration::ZERO)
            .with_bandwidth(20 * MIB as u64)
    });
    let start = Instant::now();
    let b = rt.block_on(s.get_range(&path, 0..2 * MIB as u64)).unwrap();
    assert_eq!(b.len(), 2 * MIB);
    // 2 MiB at 20 MiB/s: 100 ms.
    assert!(
        start.elapsed() >= Duration::from_millis(100),
        "{:?}",
        start.elapsed()
    );
    // A whole-object GET counts its body too.
    let all = rt.block_on(async { s.get(&path).await.unwrap().bytes().await.unwrap() });
    assert_eq!(all.len(), 4 * MIB);
    assert_eq!(s.counters().bytes, 6 * MIB as u64);
}

#[test]
fn connection_cap_bounds_concurrency() {
    let rt = rt();
    let delay = Duration::from_millis(20);
    let (s, path) = store(&rt, |s| {
        s.with_first_byte(delay)
            .with_bandwidth(0)
            .with_max_connections(3)
    });
    let start = Instant::now();
    let results = rt.block_on(join_all((0..12u64).map(|i| s.get_range(&path, i..i + 1))));
    assert!(results.iter().all(|r| r.is_ok()));
    // 12 requests through 3 connections: at least 4 rounds.
    assert!(start.elapsed() >= delay * 4, "{:?}", start.elapsed());
    assert_eq!(s.counters().peak_concurrency, 3);
    assert_eq!(s.counters().requests, 12);

    // Without a cap they all overlap.
    let (s, path) = store(&rt, |s| s.with_first_byte(delay).with_bandwidth(0));
    rt.block_on(join_all((0..12u64).map(|i| s.get_range(&path, i..i + 1))));
    assert_eq!(s.counters().peak_concurrency, 12);
}

#[test]
fn get_ranges_issues_one_request_per_coalesced_range() {
    let rt = rt();
    let (s, path) = store(&rt, |s| {
        s.with_first_byte(Duration::from_millis(5))
            .with_bandwidth(0)
    });
    let far = 3 * MIB as u64;
    // The first two are closer than 1 MiB: one request; the third is its own.
    let ranges = [0..10, 1000..1010, far..far + 10];
    let got = rt.block_on(s.get_ranges(&path, &ranges)).unwrap();
    for (r, b) in ranges.iter().zip(&got) {
        assert_eq!(b.len(), 10);
        assert_eq!(b[0], (r.start % 251) as u8);
    }
    let c = s.counters();
    assert_eq!(c.requests, 2);
    assert_eq!(c.bytes, 1010 + 10);
    s.reset_counters();
    assert_eq!(s.counters().requests, 0);
}

#[test]
fn head_pays_the_delay_but_is_not_a_get() {
    let rt = rt();
    let delay = Duration::from_millis(20);
    let (s, path) = store(&rt, |s| s.with_first_byte(delay));
    let start = Instant::now();
    let meta = rt.block_on(s.head(&path)).unwrap();
    assert_eq!(meta.size, 4 * MIB as u64);
    assert!(start.elapsed() >= delay);
    let c = s.counters();
    assert_eq!((c.heads, c.requests, c.bytes), (1, 0, 0));
}

#[test]
fn listings_come_back_in_lexical_order() {
    // A local directory lists in any order; the store lists as S3 does (delta-kernel relies on
    // it for every scheme but `file://`).
    let rt = rt();
    let dir = tempfile::tempdir().unwrap();
    let names: Vec<String> = (0..40)
        .map(|i| format!("{:020}.json", (i * 7919) % 40))
        .collect();
    for n in &names {
        std::fs::write(dir.path().join(n), b"{}").unwrap();
    }
    let local =
        Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap());
    let s = LatencyStore::new(local)
        .with_first_byte(Duration::from_millis(1))
        .with_bandwidth(0);
    let mut want = names.clone();
    want.sort();
    use futures::TryStreamExt;
    let listed: Vec<String> = rt
        .block_on(s.list(None).try_collect::<Vec<_>>())
        .unwrap()
        .into_iter()
        .map(|m| m.location.to_string())
        .collect();
    assert_eq!(listed, want);
    let offset = Path::from(want[9].as_str());
    let after: Vec<String> = rt
        .block_on(s.list_with_offset(None, &offset).try_collect::<Vec<_>>())
        .unwrap()
        .into_iter()
        .map(|m| m.location.to_string())
        .collect();
    assert_eq!(after, want[10..]);
    assert_eq!(s.counters().lists, 2);
}
