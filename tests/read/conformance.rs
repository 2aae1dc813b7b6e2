//! Conformance against the public apache/parquet-testing files (in `../shared/parquet-testing`):
//! rayquet must give the same rows as parquet's own sync reader for every valid file, from the
//! local filesystem and from an in-memory store; and must answer every malformed or encrypted
//! file with an error that names the file, never a panic or a hang.
//!
//! Each test runs over all files and reports every failure together.

use rayquet_testkit as common;

use std::fs;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Array, AsArray, Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::ObjectStoreExt;
use rayquet::{Scan, ScanBuilder};

use common::{read_all, reference, run_with_timeout, same_rows, Outcome};

const TESTING: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/parquet-testing");

/// Deadline for reading one valid file.
const DATA_TIMEOUT: Duration = Duration::from_secs(60);
/// Deadline for a malformed or encrypted file to produce its error.
const BAD_TIMEOUT: Duration = Duration::from_secs(10);

type ScanOutcome = Outcome<rayquet::Result<(SchemaRef, Vec<RecordBatch>)>>;

/// Every file under `dir` (recursively) whose name satisfies `keep`, sorted.
fn files_under(dir: &FsPath, keep: &dyn Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = fs::read_dir(&d).unwrap_or_else(|e| {
            panic!(
                "cannot read {} ({e}): the conformance tests need the parquet-testing files at \
                 ../shared/parquet-testing relative to the crate root",
                d.display()
            )
        });
        for entry in entries {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.file_name().and_then(|n| n.to_str()).is_some_and(keep) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// `path` relative to the parquet-testing root, for messages.
fn short(path: &FsPath) -> String {
    path.strip_prefix(TESTING)
        .unwrap_or(path)
        .display()
        .to_string()
}

fn file_name(path: &FsPath) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

/// parquet's own reading of `path`: `Err` with its message when it rejects (or panics on) it.
fn reference_of(path: &FsPath) -> Result<(SchemaRef, Vec<RecordBatch>), String> {
    match std::panic::catch_unwind(|| reference(path, None, 1024)) {
        Ok(Ok(r)) => Ok(r),
        Ok(Err(e)) => Err(e.to_string()),
        Err(p) => Err(format!(
            "parquet's reader panicked: {}",
            common::panic_message(p.as_ref())
        )),
    }
}

/// Scan a local path with rayquet on its own thread, with a deadline.
fn scan_local(path: &FsPath, timeout: Duration) -> ScanOutcome {
    let p = path.to_str().expect("utf-8 path").to_owned();
    run_with_timeout(timeout, move || read_all(Scan::new(p)))
}

/// The parquet-testing files whose pages do not match their CRC-32 (parquet's reader, built
/// without its `crc` feature, reads them): refused by default ([`corrupt_checksums_are_refused`]).
const CORRUPT_CHECKSUM: &str = "corrupt-checksum";

/// Scan a local path with its file mapped into memory (`memory_map`), with a deadline.
fn scan_mapped(path: &FsPath, timeout: Duration) -> ScanOutcome {
    let p = path.to_str().expect("utf-8 path").to_owned();
    run_with_timeout(timeout, move || {
        read_all(Scan::new(p).map(|s| s.memory_map(true)))
    })
}

/// Scan the bytes of `path` from an in-memory store, on its own thread, with a deadline.
fn scan_memory(path: &FsPath, timeout: Duration) -> ScanOutcome {
    let bytes = fs::read(path).expect("read test file");
    let store = Arc::new(InMemory::new());
    futures::executor::block_on(store.put(&Path::from("x.parquet"), bytes.into()))
        .expect("put into InMemory");
    run_with_timeout(timeout, move || {
        read_all(Ok(Scan::from_store(store, vec![Path::from("x.parquet")])))
    })
}

/// Compare the outcome of a scan of a valid file with the reference; `Err` describes the difference.
fn compare(
    what: &str,
    outcome: ScanOutcome,
    schema: &SchemaRef,
    expected: &[RecordBatch],
) -> Result<(), String> {
    match outcome {
        Outcome::TimedOut => Err(format!("{what}: no result within {DATA_TIMEOUT:?}")),
        Outcome::Panicked(m) => Err(format!("{what}: panicked: {m}")),
        Outcome::Done(Err(e)) => Err(format!("{what}: {:?} error: {e}", e.kind())),
        Outcome::Done(Ok((got_schema, batches))) => {
            if got_schema.fields() != schema.fields() {
                return Err(format!(
                    "{what}: schema differs\n    expected {:?}\n    actual   {:?}",
                    schema.fields(),
                    got_schema.fields()
                ));
            }
            same_rows(schema, expected, &batches, what)
        }
    }
}

/// Every valid file parquet's own reader reads gives the same rows through rayquet, from the
/// local filesystem and from an in-memory store. The files parquet itself rejects (at 58.4:
/// dict-page-offset-zero, large_string_map.brotli and nation.dict-malformed) must fail in
/// rayquet too.
#[test]
fn data_files_match_reference() {
    let data = PathBuf::from(TESTING).join("data");
    let files = files_under(&data, &|n| {
        n.ends_with(".parquet") && !n.contains(".encrypted") && !n.contains(CORRUPT_CHECKSUM)
    });
    assert!(!files.is_empty(), "no parquet files in {}", data.display());

    let mut failures = Vec::new();
    let mut rejected = Vec::new();
    let mut checked = 0;
    for path in &files {
        let name = short(path);
        let (schema, expected) = match reference_of(path) {
            Ok(r) => r,
            Err(e) => {
                rejected.push(format!("{name}: {e}"));
                // rayquet must reject it too. (large_string_map.brotli.parquet inflates to over
                // 2 GiB of strings before the overflow: allow it the time a valid file gets.)
                let outcome = scan_local(path, DATA_TIMEOUT);
                if let Err(m) = expect_error(path, outcome, DATA_TIMEOUT) {
                    failures.push(format!("{m} (parquet's reader fails with: {e})"));
                }
                continue;
            }
        };
        checked += 1;
        let started = Instant::now();
        let local = scan_local(path, DATA_TIMEOUT);
        if let Err(m) = compare(&format!("{name} (local)"), local, &schema, &expected) {
            failures.push(m);
        }
        let memory = scan_memory(path, DATA_TIMEOUT);
        if let Err(m) = compare(&format!("{name} (memory)"), memory, &schema, &expected) {
            failures.push(m);
        }
        let mapped = scan_mapped(path, DATA_TIMEOUT);
        if let Err(m) = compare(&format!("{name} (mapped)"), mapped, &schema, &expected) {
            failures.push(m);
        }
        let took = started.elapsed();
        if took > Duration::from_secs(1) {
            eprintln!("slow: {name} took {took:?} (local, memory and mapped)");
        }
    }

    eprintln!(
        "conformance: {checked} of {} data files compared (local, memory, mapped); parquet's own \
         reader rejects {}:",
        files.len(),
        rejected.len()
    );
    for r in &rejected {
        eprintln!("  {r}");
    }
    assert!(
        failures.is_empty(),
        "{} failing scans:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// The same, with the portable copies of rayquet's dispatched kernels forced for the whole
/// process (the other tests run with the copies the CPU chose: x86-64-v3 where it has them),
/// and a lineitem-like file read whole (the direct reader's dense path): both copies give
/// parquet's rows.
#[test]
fn data_files_match_reference_with_each_kernel() {
    use rayquet::__kernels::{force, Kernels};
    let data = PathBuf::from(TESTING).join("data");
    let mut files = files_under(&data, &|n| {
        n.ends_with(".parquet") && !n.contains(".encrypted") && !n.contains(CORRUPT_CHECKSUM)
    });
    let dir = tempfile::tempdir().expect("temp dir");
    let lineitem = dir.path().join("lineitem.parquet");
    let batch = rayquet_gen::batch(0, 0, 30_000, 7);
    let props = rayquet_gen::writer_properties(rayquet_gen::Compression::Snappy, 8192);
    let mut w = parquet::arrow::ArrowWriter::try_new(
        fs::File::create(&lineitem).expect("create"),
        batch.schema(),
        Some(props),
    )
    .expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
    files.push(lineitem);
    let mut failures = Vec::new();
    let before = force(Kernels::Portable);
    for kernels in [Kernels::Portable, Kernels::V3] {
        force(kernels);
        for path in &files {
            let Ok((schema, expected)) = reference_of(path) else {
                continue;
            };
            let what = format!("{} ({kernels:?})", short(path));
            if let Err(m) = compare(&what, scan_local(path, DATA_TIMEOUT), &schema, &expected) {
                failures.push(m);
            }
        }
    }
    force(before);
    assert!(
        failures.is_empty(),
        "{} failing scans:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// A scan of a file that must fail: `Ok` with a line for the report when it gave an error that
/// names the file in time, else `Err` describing what it did instead.
fn expect_error(path: &FsPath, outcome: ScanOutcome, timeout: Duration) -> Result<String, String> {
    let name = short(path);
    let fname = file_name(path);
    match outcome {
        Outcome::TimedOut => Err(format!("{name}: no error within {timeout:?}")),
        Outcome::Panicked(m) => Err(format!("{name}: panicked: {m}")),
        Outcome::Done(Ok((_, batches))) => {
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            Err(format!("{name}: read {rows} rows without error"))
        }
        Outcome::Done(Err(e)) if !e.path().is_some_and(|p| p.contains(&fname)) => Err(format!(
            "{name}: error path() is {:?}, which does not name the file ({e})",
            e.path()
        )),
        Outcome::Done(Err(e)) => Ok(format!("{name}: {:?}: {e}", e.kind())),
    }
}

/// Print the report lines, then fail listing every failure.
fn finish(what: &str, report: &[String], failures: &[String]) {
    eprintln!("{what} outcomes:");
    for r in report {
        eprintln!("  {r}");
    }
    assert!(
        failures.is_empty(),
        "{} failing {what} files:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

/// Files in bad_data/ must give an error that names the file, within the deadline, without a
/// panic. Where parquet's own reader accepts a file, rayquet may accept it too, but must then
/// give the same rows. At parquet 58.4 the reference rejects every bad_data file except
/// ARROW-GH-43605.parquet, which it reads without error.
#[test]
fn bad_data_files_error_without_panic_or_hang() {
    let bad = PathBuf::from(TESTING).join("bad_data");
    let files = files_under(&bad, &|n| n.ends_with(".parquet"));
    assert!(!files.is_empty(), "no parquet files in {}", bad.display());

    let mut failures = Vec::new();
    let mut report = Vec::new();
    for path in &files {
        let name = short(path);
        // Read and mapped: the same outcome either way.
        let outcome = scan_local(path, BAD_TIMEOUT);
        let mapped = scan_mapped(path, BAD_TIMEOUT);
        let describe = |o: &ScanOutcome| match o {
            Outcome::Done(Ok((_, b))) => {
                format!("{} rows", b.iter().map(|b| b.num_rows()).sum::<usize>())
            }
            Outcome::Done(Err(e)) => format!("{:?} error", e.kind()),
            Outcome::TimedOut => "timed out".into(),
            Outcome::Panicked(m) => format!("panicked: {m}"),
        };
        if describe(&outcome) != describe(&mapped) {
            failures.push(format!(
                "{name}: read {}, mapped {}",
                describe(&outcome),
                describe(&mapped)
            ));
        }
        let result = match (outcome, reference_of(path)) {
            (Outcome::Done(Ok((_, batches))), Ok((schema, expected))) => {
                same_rows(&schema, &expected, &batches, &name)
                    .map(|()| format!("{name}: accepted, as parquet's reader accepts it"))
            }
            (outcome, Ok(_)) => expect_error(path, outcome, BAD_TIMEOUT)
                .map(|r| format!("{r} (parquet's reader accepts the file)")),
            (outcome, Err(reference_err)) => expect_error(path, outcome, BAD_TIMEOUT)
                .map_err(|m| format!("{m} (parquet's reader fails with: {reference_err})")),
        };
        match result {
            Ok(r) => report.push(r),
            Err(m) => failures.push(m),
        }
    }
    finish("bad_data", &report, &failures);
}

/// rayquet does not decrypt: every encrypted file (encrypted footer or plaintext footer with
/// encrypted columns) must give an `Unsupported` error naming the file.
#[test]
fn encrypted_files_error() {
    let data = PathBuf::from(TESTING).join("data");
    let files = files_under(&data, &|n| n.ends_with(".encrypted"));
    assert!(
        !files.is_empty(),
        "no encrypted files in {}",
        data.display()
    );

    let mut failures = Vec::new();
    let mut report = Vec::new();
    for path in &files {
        match expect_error(path, scan_local(path, BAD_TIMEOUT), BAD_TIMEOUT) {
            Ok(r) if r.contains(": Unsupported: ") => report.push(r),
            Ok(r) => failures.push(format!("{r} (expected kind Unsupported)")),
            Err(m) => failures.push(m),
        }
    }
    finish("encrypted", &report, &failures);
}

/// A small file whose every row names the file it came from.
fn tagged_file(dir: &FsPath, name: &str, rows: i64) -> PathBuf {
    let schema = Arc::new(Schema::new(vec![
        Field::new("file", DataType::Utf8, false),
        Field::new("row", DataType::Int64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(vec![name; rows as usize])),
            Arc::new(Int64Array::from_iter_values(0..rows)),
        ],
    )
    .unwrap();
    let path = dir.join(name);
    fs::write(&path, common::write_parquet(&[batch], 7)).unwrap();
    path
}

/// The files the rows came from, in the order they first appear.
fn file_order(batches: &[RecordBatch]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for b in batches {
        let col = b.column_by_name("file").expect("column file");
        let col = col.as_string::<i32>();
        for i in 0..col.len() {
            let v = col.value(i);
            if order.last().map(String::as_str) != Some(v) {
                order.push(v.to_string());
            }
        }
    }
    order
}

/// The reference rows of `paths`, read one after another.
fn reference_concat(paths: &[&PathBuf]) -> (SchemaRef, Vec<RecordBatch>) {
    let mut schema = None;
    let mut all = Vec::new();
    for p in paths {
        let (s, b) = reference(p, None, 1024).expect("reference read");
        schema.get_or_insert(s);
        all.extend(b);
    }
    (schema.unwrap(), all)
}

fn must_read(what: &str, scan: rayquet::Result<Scan>) -> Vec<RecordBatch> {
    match run_with_timeout(DATA_TIMEOUT, move || read_all(scan)) {
        Outcome::Done(Ok((_, b))) => b,
        Outcome::Done(Err(e)) => panic!("{what}: {:?} error: {e}", e.kind()),
        Outcome::Panicked(m) => panic!("{what}: panicked: {m}"),
        Outcome::TimedOut => panic!("{what}: no result within {DATA_TIMEOUT:?}"),
    }
}

#[test]
fn directory_scan_is_lexical_and_url_list_keeps_order() {
    let dir = tempfile::tempdir().unwrap();
    // Written in non-lexical order; lexical order is part-1, part-10, part-2.
    let p2 = tagged_file(dir.path(), "part-2.parquet", 20);
    let p10 = tagged_file(dir.path(), "part-10.parquet", 15);
    let p1 = tagged_file(dir.path(), "part-1.parquet", 10);
    // Not Parquet: a directory scan skips it.
    fs::write(dir.path().join("_SUCCESS"), b"").unwrap();
    let lexical = ["part-1.parquet", "part-10.parquet", "part-2.parquet"];

    let dir_str = dir.path().to_str().unwrap().to_owned();
    let (schema, expected) = reference_concat(&[&p1, &p10, &p2]);
    for input in [dir_str.clone(), format!("{dir_str}/")] {
        let got = must_read(&input, Scan::new(&input));
        assert_eq!(file_order(&got), lexical, "directory scan of {input}");
        common::assert_same_rows(&schema, &expected, &got, &input);
    }

    // A list keeps the caller's order, whatever the names; plain paths and file:// URLs mix.
    let url10 = url::Url::from_file_path(&p10).unwrap().to_string();
    let list = vec![
        p2.to_str().unwrap().to_owned(),
        url10,
        p1.to_str().unwrap().to_owned(),
    ];
    let got = must_read("from_urls", Scan::from_urls(list));
    assert_eq!(
        file_order(&got),
        ["part-2.parquet", "part-10.parquet", "part-1.parquet"],
        "from_urls order"
    );
    let (schema, expected) = reference_concat(&[&p2, &p10, &p1]);
    common::assert_same_rows(&schema, &expected, &got, "from_urls");
}

/// The parquet-testing files written with page checksums read as parquet's reader reads them
/// (the others' data files: `data_files_match_reference`); the two whose pages were damaged
/// after their checksums were taken are refused, naming the page, unless checksums are not
/// verified: then they read as parquet's reader (which does not verify them) reads them.
#[test]
fn corrupt_checksums_are_refused() {
    let data = PathBuf::from(TESTING).join("data");
    let files = files_under(&data, &|n| n.contains(CORRUPT_CHECKSUM));
    assert_eq!(files.len(), 2, "{files:?}");
    let intact = files_under(&data, &|n| {
        n.contains("checksum") && !n.contains(CORRUPT_CHECKSUM)
    });
    assert!(intact.len() >= 3, "{intact:?}");
    for path in &files {
        let name = short(path);
        let (schema, expected) = reference_of(path).expect("parquet's reader reads it");
        let e = match scan_local(path, DATA_TIMEOUT) {
            Outcome::Done(Err(e)) => e,
            Outcome::Done(Ok(_)) => panic!("{name}: read, not refused"),
            Outcome::Panicked(m) => panic!("{name}: panicked: {m}"),
            Outcome::TimedOut => panic!("{name}: timed out"),
        };
        assert_eq!(e.kind(), rayquet::ErrorKind::CorruptData, "{name}: {e}");
        assert!(e.message().contains("CRC-32 mismatch"), "{name}: {e}");
        assert!(e.message().contains("page 0"), "{name}: {e}");
        assert_eq!(e.row_group(), Some(0), "{name}: {e}");
        let p = path.to_str().expect("utf-8 path").to_owned();
        let unverified = run_with_timeout(DATA_TIMEOUT, move || {
            read_all(Scan::new(p).map(|s| s.verify_checksums(false)))
        });
        if let Err(m) = compare(
            &format!("{name} (unverified)"),
            unverified,
            &schema,
            &expected,
        ) {
            panic!("{m}");
        }
    }
}
