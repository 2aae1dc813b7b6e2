//! Feed the input as one Parquet file through a rayquet scan from an in-memory store.
//!
//! A scan must end (`Ok` or `Err`) without an escaped panic, an abort or an allocation that a
//! corrupt header asked for: run with `-malloc_limit_mb=256` to make any allocation above that
//! a crash. Errors of kind `Panic` (a panic inside parquet, caught by rayquet) are accepted,
//! unless `RAYQUET_FUZZ_PANIC_IS_CRASH=1`, which turns them into crashes to collect the inputs.
#![no_main]

use std::sync::Arc;

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use rayquet::{ErrorKind, Scan, ScanBuilder};

fuzz_target!(|data: &[u8]| {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from("input.parquet");
    futures::executor::block_on(store.put(&path, Bytes::copy_from_slice(data).into()))
        .expect("in-memory put");
    let scan = Scan::from_store(store, [path])
        .memory_budget(4 << 20)
        .batch_size(1024);
    let error = match scan.build() {
        Err(e) => Some(e),
        Ok(reader) => reader.filter_map(Result::err).next().map(rayquet::Error::from),
    };
    if let Some(e) = error {
        assert!(
            e.path().is_some_and(|p| p.contains("input.parquet")),
            "the error does not name the file: {e}"
        );
        if e.kind() == ErrorKind::Panic
            && std::env::var_os("RAYQUET_FUZZ_PANIC_IS_CRASH").is_some_and(|v| v == "1")
        {
            panic!("caught panic: {e}");
        }
    }
});
