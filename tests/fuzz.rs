//! Hostile files: a seeded fuzz test run by `cargo test`.
//!
//! Thousands of files derived from the parquet-testing files (`../shared/parquet-testing`,
//! `data/` and `bad_data/`, read in place) and from files written here with parquet's
//! `ArrowWriter` (every codec, data pages v1 and v2, dictionaries, page indexes, nested and
//! deeply nested schemas), mutated by: bit flips (anywhere, or in the footer), truncation
//! (with and without the footer kept), overwritten runs, thrift-level footer fields (every
//! integer, list length and binary length: sizes, counts, offsets, `num_values`,
//! `num_children`) set to extreme values, page-header fields (sizes, `num_values`, page type)
//! likewise, dictionary pages moved after a data page, and schema `num_children` that make
//! the tree overlap itself. Each case is scanned from an in-memory store with a watchdog:
//!
//! - every case ends `Ok` or `Err` within [`CASE_TIMEOUT`] (a hang fails the test);
//! - no panic escapes the scan, nothing aborts (this process would die), and no panic is
//!   raised in rayquet's own code (a caught panic inside parquet's decoders is an
//!   `ErrorKind::Panic` error, allowed and counted; one located in rayquet's sources fails the
//!   test: in the dev-profile run that includes every broken `debug_assert!` contract and
//!   arithmetic overflow);
//! - every error names the object;
//! - memory: a counting global allocator records the peak of live heap bytes during each
//!   case; it must stay within the scan's budget plus [`MEMORY_SLACK`], and no single
//!   allocation may exceed [`LARGEST_ALLOCATION`] (a header claiming gigabytes is rejected
//!   before anything is allocated for it);
//! - every batch a scan returns is valid: `validate_full` on each column (UTF-8 of strings,
//!   offsets and views inside their buffers, nulls), so arrays built by rayquet's own decoders
//!   with unchecked constructors are checked here in release builds too;
//! - when a mutated file reads `Ok`, parquet's own reader (the reference) is run on the same
//!   bytes; when it also succeeds the rows must be identical. Every fourth such case is read
//!   again with a scattered row selection (the direct reader's input) and compared with
//!   parquet's reader given the same selection.
//!
//! Where parquet's reader fails and rayquet returns rows, the summary counts the cases by
//! parquet's error and names the first of each (`--nocapture`): rayquet may refuse more than
//! parquet, and reading less than it (a selection skipping a corrupt page) could make it
//! return rows where parquet fails, but whatever it returns must equal parquet's reader
//! wherever parquet reads it. With the default seed there are none. (The 33 there were when
//! this was first counted were this test's own: the selection covered the rows the readers
//! returned, fewer than the footer's row groups claim when a mutation turns a data page into
//! an index page, which both readers skip, so parquet's reader refused the selection; it now
//! covers the footer's rows, and those cases agree.)
//!
//! `RAYQUET_FUZZ_CASES` sets the number of random cases (default [`DEFAULT_CASES`]),
//! `RAYQUET_FUZZ_SEED` the seed. Run with `--nocapture` for the summary.

use rayquet::ScanBuilder;
use rayquet_testkit as common;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Array, ArrayRef, BooleanArray, Int32Array, RecordBatch, StructArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use rayquet::{ErrorKind, Scan};

use common::craft::{metadata_range, page_offsets, splice, thrift};
use common::{run_with_timeout, Outcome, Rng};

// ---------------------------------------------------------------------------------------------
// A counting allocator: live bytes, their peak, and the largest single request.

#[global_allocator]
static ALLOC: common::heap::Counting = common::heap::Counting;

// ---------------------------------------------------------------------------------------------
// Bounds.

/// Random cases by default (each mutates one base file).
const DEFAULT_CASES: usize = 20_000;
/// A case (build and read to the end) that takes longer than this is a hang.
const CASE_TIMEOUT: Duration = Duration::from_secs(20);
/// The memory budget of every fuzzed scan.
const BUDGET: usize = 4 << 20;
/// What a scan may hold on top of its budget: per decode thread one page being decompressed
/// (a page claiming more than `max(budget, 64 MiB)` is rejected, and more than twice its column
/// chunk's declared size + 1 MiB too), and the footers, plans and batches in flight.
const MEMORY_SLACK: usize = 2 * (64 << 20) + (32 << 20);
/// No single allocation may be larger (the page limit of a scan with [`BUDGET`], plus room).
const LARGEST_ALLOCATION: usize = (64 << 20) + (16 << 20);

/// The tests of this binary run one at a time: the allocator's counts are process-wide.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

const TESTING: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/parquet-testing");

// ---------------------------------------------------------------------------------------------
// Base files.

struct Base {
    name: String,
    bytes: Vec<u8>,
    /// Page headers (offset in the file) of its column chunks, for page-level mutations;
    /// empty for files parquet cannot parse.
    pages: Vec<u64>,
}

fn testing_files() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for dir in ["data", "bad_data"] {
        let path = std::path::Path::new(TESTING).join(dir);
        let entries = std::fs::read_dir(&path).unwrap_or_else(|e| {
            panic!(
                "cannot read {} ({e}): the fuzz test needs the parquet-testing files at \
                 ../shared/parquet-testing relative to the crate root",
                path.display()
            )
        });
        let mut names: Vec<_> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "parquet"))
            .collect();
        names.sort();
        for p in names {
            let bytes = std::fs::read(&p).unwrap();
            // Files above 1 MiB only slow the fuzzing down.
            if bytes.len() <= 1 << 20 {
                let name = format!("{dir}/{}", p.file_name().unwrap().to_string_lossy());
                out.push((name, bytes));
            }
        }
    }
    out
}

fn write(batches: &[RecordBatch], props: WriterProperties) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, batches[0].schema(), Some(props)).unwrap();
    for b in batches {
        w.write(b).unwrap();
    }
    w.close().unwrap();
    out
}

/// A struct nested `depth` levels deep around one Int32 leaf.
fn nested_batch(depth: usize, rows: usize) -> RecordBatch {
    let mut array: ArrayRef = Arc::new(Int32Array::from_iter(
        (0..rows as i32).map(|i| (i % 5 != 0).then_some(i)),
    ));
    let mut field = Field::new("leaf", DataType::Int32, true);
    for level in 0..depth {
        let fields = vec![Arc::new(field.clone())];
        let nulls = (level % 3 == 0).then(|| (0..rows).map(|r| r % 7 != level % 7).collect());
        let s = StructArray::try_new(fields.into(), vec![array], nulls).unwrap();
        field = Field::new(format!("s{level}"), s.data_type().clone(), true);
        array = Arc::new(s);
    }
    let schema = Arc::new(Schema::new(vec![field]));
    RecordBatch::try_new(schema, vec![array]).unwrap()
}

/// Run `f` on a thread with a large stack (deeply nested schemas recurse in the writer and in
/// the reference reader).
fn big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

fn generated_files() -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let data: Vec<RecordBatch> = (0..3)
        .map(|i| rayquet_gen::batch(0, i * 700, 700, 7))
        .collect();
    let codecs = [
        ("none", Compression::UNCOMPRESSED),
        ("snappy", Compression::SNAPPY),
        ("zstd", Compression::ZSTD(Default::default())),
        ("lz4raw", Compression::LZ4_RAW),
        ("gzip", Compression::GZIP(Default::default())),
        ("brotli", Compression::BROTLI(Default::default())),
    ];
    for (i, (name, codec)) in codecs.into_iter().enumerate() {
        let v2 = i % 2 == 1;
        let props = WriterProperties::builder()
            .set_compression(codec)
            .set_max_row_group_row_count(Some(900))
            .set_data_page_row_count_limit(256)
            .set_write_batch_size(128)
            .set_writer_version(if v2 {
                WriterVersion::PARQUET_2_0
            } else {
                WriterVersion::PARQUET_1_0
            })
            .set_statistics_enabled(EnabledStatistics::Page)
            .build();
        out.push((
            format!("gen/{name}-{}.parquet", if v2 { "v2" } else { "v1" }),
            write(&data, props),
        ));
    }
    // Plain encodings (no dictionary), delta encodings.
    let props = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_column_encoding("l_orderkey".into(), Encoding::DELTA_BINARY_PACKED)
        .set_column_encoding("l_suppkey".into(), Encoding::DELTA_BINARY_PACKED)
        .set_column_encoding("l_shipdate".into(), Encoding::DELTA_BINARY_PACKED)
        .set_column_encoding("l_ts".into(), Encoding::DELTA_BINARY_PACKED)
        .set_column_encoding("l_comment".into(), Encoding::DELTA_BYTE_ARRAY)
        .set_column_encoding("l_discount_f".into(), Encoding::BYTE_STREAM_SPLIT)
        .set_column_encoding("l_shipmode".into(), Encoding::DELTA_LENGTH_BYTE_ARRAY)
        .set_column_encoding("l_returnflag".into(), Encoding::PLAIN)
        .set_column_encoding("l_linestatus".into(), Encoding::PLAIN)
        .set_column_encoding("l_shipinstruct".into(), Encoding::PLAIN)
        .set_column_encoding("l_tags.list.element".into(), Encoding::PLAIN)
        .set_data_page_row_count_limit(300)
        .set_write_batch_size(100)
        .set_compression(Compression::SNAPPY)
        .build();
    out.push(("gen/delta-plain.parquet".into(), write(&data, props)));
    // Nesting within the schema depth limit.
    for depth in [3, 12] {
        let b = nested_batch(depth, 500);
        let props = WriterProperties::builder()
            .set_compression(Compression::LZ4_RAW)
            .build();
        out.push((format!("gen/nested-{depth}.parquet"), write(&[b], props)));
    }
    out
}

/// An extreme or nearby replacement for `v`.
fn extreme(rng: &mut Rng, v: i64, kind: thrift::Kind) -> i64 {
    let choices = [
        0,
        1,
        -1,
        i32::MAX as i64,
        i32::MIN as i64,
        (i32::MAX / 2) as i64,
        1 << 30,
        3 << 29,
        i64::MAX,
        i64::MIN,
        v.wrapping_add(1),
        v.wrapping_sub(1),
        v.wrapping_mul(2),
        v.wrapping_mul(1000),
        v / 2,
        v.wrapping_neg(),
    ];
    let x = choices[rng.below(choices.len() as u64) as usize];
    match kind {
        thrift::Kind::Int => x,
        // Lengths are unsigned on the wire.
        _ => x.max(0),
    }
}

/// Mutate `base` once; returns the bytes and a label of what was done.
fn mutate(rng: &mut Rng, base: &Base) -> (Vec<u8>, String) {
    let mut b = base.bytes.clone();
    let n = b.len().max(1);
    let meta = metadata_range(&b);
    for _attempt in 0..4 {
        match rng.below(12) {
            0 | 1 => {
                let k = rng.between(1, 8);
                for _ in 0..k {
                    let at = rng.below(n as u64) as usize;
                    if at < b.len() {
                        b[at] ^= 1 << rng.below(8);
                    }
                }
                return (b, format!("{k} bit flips"));
            }
            2 => {
                let Some(m) = meta.clone() else { continue };
                let k = rng.between(1, 4);
                for _ in 0..k {
                    let at = rng.between(m.start as u64, b.len() as u64 - 1) as usize;
                    b[at] ^= 1 << rng.below(8);
                }
                return (b, format!("{k} bit flips in the footer"));
            }
            3 => {
                let cut = rng.below(n as u64) as usize;
                b.truncate(cut);
                return (b, format!("truncated to {cut} bytes"));
            }
            4 => {
                let Some(m) = meta.clone() else { continue };
                if m.start == 0 {
                    continue;
                }
                let cut = rng.below(m.start as u64) as usize;
                let tail = b[m.start..].to_vec();
                b.truncate(cut);
                b.extend(tail);
                return (b, format!("data truncated to {cut} bytes, footer kept"));
            }
            5 => {
                let len = rng.between(1, 64) as usize;
                let at = rng.below(n as u64) as usize;
                let fill = rng.below(3);
                for i in at..(at + len).min(b.len()) {
                    b[i] = match fill {
                        0 => 0,
                        1 => 0xff,
                        _ => rng.next() as u8,
                    };
                }
                return (b, format!("{len} bytes overwritten at {at}"));
            }
            6..=8 => {
                // A footer field set to an extreme value.
                let Some(m) = meta.clone() else { continue };
                let Some(toks) = thrift::tokens(&b[m.clone()]) else {
                    continue;
                };
                if toks.tokens.is_empty() {
                    continue;
                }
                // Half the time, a schema field (path [2, ..]: num_children, type lengths).
                let schema: Vec<&thrift::Token> = toks
                    .tokens
                    .iter()
                    .filter(|t| t.path.first() == Some(&2))
                    .collect();
                let t = if rng.chance(40) && !schema.is_empty() {
                    schema[rng.below(schema.len() as u64) as usize].clone()
                } else {
                    toks.tokens[rng.below(toks.tokens.len() as u64) as usize].clone()
                };
                let v = extreme(rng, t.value, t.kind);
                splice(&mut b, m.start, &t, v, true);
                return (
                    b,
                    format!(
                        "footer {:?} at path {:?}: {} -> {v}",
                        t.kind, t.path, t.value
                    ),
                );
            }
            9 | 10 => {
                // A page header field set to an extreme value.
                if base.pages.is_empty() {
                    continue;
                }
                let at = base.pages[rng.below(base.pages.len() as u64) as usize] as usize;
                let Some(toks) = thrift::tokens(&b[at..]) else {
                    continue;
                };
                if toks.tokens.is_empty() {
                    continue;
                }
                let t = toks.tokens[rng.below(toks.tokens.len() as u64) as usize].clone();
                let v = if t.path == [1] {
                    rng.below(4) as i64 // another page type: dictionary out of place
                } else {
                    extreme(rng, t.value, t.kind)
                };
                splice(&mut b, at, &t, v, false);
                return (
                    b,
                    format!(
                        "page header at {at}: {:?} {:?} {} -> {v}",
                        t.kind, t.path, t.value
                    ),
                );
            }
            _ => {
                // A dictionary page moved after the data page that follows it.
                let Some(i) = (0..base.pages.len().saturating_sub(1)).find(|&i| {
                    let at = base.pages[i] as usize;
                    rng.chance(30)
                        && thrift::tokens(&b[at..])
                            .is_some_and(|t| t.tokens.iter().any(|t| t.path == [1] && t.value == 2))
                }) else {
                    continue;
                };
                let (d, p) = (base.pages[i] as usize, base.pages[i + 1] as usize);
                let Some(next) = thrift::tokens(&b[p..]).and_then(|t| {
                    let c = t.tokens.iter().find(|t| t.path == [3])?.value;
                    Some(p + t.len + usize::try_from(c).ok()?)
                }) else {
                    continue;
                };
                if next > b.len() {
                    continue;
                }
                let dict = b[d..p].to_vec();
                let data = b[p..next].to_vec();
                b[d..d + data.len()].copy_from_slice(&data);
                b[d + data.len()..next].copy_from_slice(&dict);
                return (
                    b,
                    format!("dictionary page at {d} moved after its data page"),
                );
            }
        }
    }
    // Nothing structural applied: one bit flip.
    let at = rng.below(n as u64) as usize;
    if at < b.len() {
        b[at] ^= 1;
    }
    (b, "1 bit flip".into())
}

// ---------------------------------------------------------------------------------------------
// Running one case.

/// What one scan of a case gave.
#[derive(Debug)]
enum Got {
    Rows(SchemaRef, Vec<RecordBatch>),
    Failed(rayquet::Error),
}

/// Scan `bytes` as object `name` of an in-memory store with the watchdog; panics on a hang or
/// an escaped panic. Returns what the scan gave and the peak of live heap bytes above what was
/// live before it.
fn scan_case(name: &str, bytes: Vec<u8>, rng: &mut Rng, what: &str) -> (Got, Peaks) {
    let hint = rng.chance(15).then(|| rng.between(8, 4096) as usize);
    let views = rng.chance(20);
    let base = common::heap::live();
    common::heap::reset_peaks();
    let got = scan_store(name, bytes, what, move |scan| {
        let scan = scan.string_views(views);
        match hint {
            Some(h) => scan.io_tuning(rayquet::IoTuning::default().footer_size_hint(h)),
            None => scan,
        }
    });
    let peaks = Peaks {
        live: common::heap::peak().saturating_sub(base),
        largest: common::heap::largest(),
    };
    (got, peaks)
}

/// Scan `bytes` as object `name` of an in-memory store (budget and batch size set, then
/// `configure`) with the watchdog; panics on a hang or an escaped panic.
fn scan_store(
    name: &str,
    bytes: Vec<u8>,
    what: &str,
    configure: impl FnOnce(Scan) -> Scan + Send + 'static,
) -> Got {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let path = Path::from(name);
    futures::executor::block_on(store.put(&path, Bytes::from(bytes).into())).unwrap();
    let batch = batch_size(name);
    let outcome = run_with_timeout(CASE_TIMEOUT, move || {
        let scan = Scan::from_store(store, [path])
            .memory_budget(BUDGET)
            .batch_size(batch);
        match common::read_all(Ok(configure(scan))) {
            Ok((schema, batches)) => Got::Rows(schema, batches),
            Err(e) => Got::Failed(e),
        }
    });
    match outcome {
        Outcome::Done(g) => {
            if let Got::Rows(_, batches) = &g {
                validate_batches(batches, what);
            }
            g
        }
        Outcome::Panicked(m) => panic!("{what}: a panic escaped the scan: {m}"),
        Outcome::TimedOut => panic!("{what}: no result within {CASE_TIMEOUT:?} (hang)"),
    }
}

/// Every column of every batch passes Arrow's full validation.
fn validate_batches(batches: &[RecordBatch], what: &str) {
    for (i, b) in batches.iter().enumerate() {
        for (c, f) in b.columns().iter().zip(b.schema().fields()) {
            if let Err(e) = c.to_data().validate_full() {
                panic!(
                    "{what}: batch {i}, column {}: an invalid array: {e}",
                    f.name()
                );
            }
        }
    }
}

/// The batch size of the scan of object `name` (the reference reads with the same).
fn batch_size(name: &str) -> usize {
    [1024, 100, 8192][name.len() % 3]
}

/// parquet's own reader on `bytes` (all columns), on a large stack; `None` if it failed or
/// panicked. Each row group is read on its own in batches of `batch` rows, as rayquet reads
/// them: decoding corrupt data can depend on where batches start.
fn reference(bytes: Vec<u8>, batch: usize) -> Option<(SchemaRef, Vec<RecordBatch>)> {
    reference_selected(bytes, batch, None).ok()
}

/// The rows of a `rows`-row file a selected scan keeps: about one in `k`, pseudo-randomly,
/// alone and in runs (so pages are read densely, sparsely and skipped).
fn keep_rows(rows: usize, k: u64, seed: u64) -> Vec<bool> {
    let mut rng = Rng(seed);
    let mut keep = Vec::with_capacity(rows);
    while keep.len() < rows {
        let run = rng.between(1, 40) as usize;
        let on = rng.below(k) == 0;
        keep.extend(std::iter::repeat_n(on, run.min(rows - keep.len())));
        if rng.chance(25) && keep.len() < rows {
            keep.push(true);
        }
    }
    keep.truncate(rows);
    keep
}

/// Scan `bytes` as object `name` with only the rows of `keep` selected (the row selection is
/// the direct reader's input: `rayquet::decode::direct`), with the watchdog.
fn scan_selected(name: &str, bytes: Vec<u8>, keep: &[bool], views: bool, what: &str) -> Got {
    let selection = RowSelection::from_filters(&[BooleanArray::from(keep.to_vec())]);
    let file = name.to_string();
    scan_store(name, bytes, what, move |scan| {
        scan.string_views(views).select_rows(file, selection)
    })
}

/// parquet's own reader on `bytes`, each row group with its rows of `keep` selected (all when
/// `None`); `Err` says why it failed (an error, a panic, a hang).
fn reference_selected(
    bytes: Vec<u8>,
    batch: usize,
    keep: Option<Vec<bool>>,
) -> Result<(SchemaRef, Vec<RecordBatch>), String> {
    let out = run_with_timeout(CASE_TIMEOUT, move || {
        big_stack(move || {
            std::panic::catch_unwind(|| {
                let e = |e: &dyn std::fmt::Display| e.to_string();
                let bytes = Bytes::from(bytes);
                let b =
                    ParquetRecordBatchReaderBuilder::try_new(bytes.clone()).map_err(|x| e(&x))?;
                let schema = b.schema().clone();
                let md = b.metadata().clone();
                let mut batches = Vec::new();
                let mut first = 0usize;
                for rg in 0..md.num_row_groups() {
                    let mut r = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())
                        .map_err(|x| e(&x))?
                        .with_row_groups(vec![rg])
                        .with_batch_size(batch);
                    if let Some(keep) = &keep {
                        let n = usize::try_from(md.row_group(rg).num_rows())
                            .map_err(|_| "a negative row count".to_string())?;
                        let part = first
                            .checked_add(n)
                            .and_then(|end| keep.get(first..end))
                            .ok_or("more rows than the file's count")?
                            .to_vec();
                        first += n;
                        let part = BooleanArray::from(part);
                        r = r.with_row_selection(RowSelection::from_filters(&[part]));
                    }
                    for b in r.build().map_err(|x| e(&x))? {
                        batches.push(b.map_err(|x| e(&x))?);
                    }
                }
                Ok((schema, batches))
            })
            .unwrap_or_else(|p| Err(format!("panicked: {}", common::panic_message(p.as_ref()))))
        })
    });
    outcome_value(out).unwrap_or_else(|| Err("hung or panicked".into()))
}

/// What the selected scan of a case gave, next to parquet's reader with the same selection.
#[derive(Debug)]
enum Selected {
    /// Both read the rows, and they are the same (a difference fails the test).
    Agrees,
    /// rayquet refused the file (it may refuse more than parquet, never read otherwise).
    RayquetFailed,
    /// rayquet returned rows; parquet's reader failed with this error.
    ParquetFailed(String),
    /// Both read, but into schemas that cannot be compared (casts between them fail).
    Incomparable,
}

/// The selected scan of a case whose whole scan read like parquet's reader: where parquet's
/// reader also reads the selected rows, the rows must be the same.
fn check_selected(name: &str, bytes: &[u8], rows: usize, seed: u64, what: &str) -> Selected {
    // The selection covers the rows the footer's row groups claim, which may be more than a
    // mutated file reads (a data page made an index page is skipped by both readers).
    let rows = footer_rows(bytes).unwrap_or(rows);
    let keep = keep_rows(rows, [2, 4, 20, 200][(seed % 4) as usize], seed);
    let views = seed % 3 == 0;
    let got = scan_selected(name, bytes.to_vec(), &keep, views, what);
    let Got::Rows(schema, batches) = got else {
        return Selected::RayquetFailed;
    };
    match reference_selected(bytes.to_vec(), batch_size(name), Some(keep)) {
        Ok((s, expected)) if s.fields().len() == schema.fields().len() => {
            let Some(batches) = cast_to(&s, &batches) else {
                return Selected::Incomparable;
            };
            if let Err(m) = common::same_rows(&s, &expected, &batches, what) {
                panic!("{what}: selected rows differ from parquet's reader: {m}");
            }
            Selected::Agrees
        }
        Ok(_) => Selected::Incomparable,
        Err(e) => Selected::ParquetFailed(e),
    }
}

/// The rows `bytes`' row groups claim, as parquet's reader decodes its footer.
fn footer_rows(bytes: &[u8]) -> Option<usize> {
    let b = ParquetRecordBatchReaderBuilder::try_new(Bytes::copy_from_slice(bytes)).ok()?;
    b.metadata()
        .row_groups()
        .iter()
        .map(|rg| usize::try_from(rg.num_rows()).ok())
        .sum()
}

/// `batches` cast to `schema`'s column types (string views to strings), if they can be.
fn cast_to(schema: &SchemaRef, batches: &[RecordBatch]) -> Option<Vec<RecordBatch>> {
    batches
        .iter()
        .map(|b| {
            if b.num_columns() != schema.fields().len() {
                return None;
            }
            let cols = b
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(c, f)| arrow::compute::cast(c, f.data_type()).ok())
                .collect::<Option<Vec<_>>>()?;
            RecordBatch::try_new(schema.clone(), cols).ok()
        })
        .collect()
}

fn outcome_value<T>(o: Outcome<T>) -> Option<T> {
    match o {
        Outcome::Done(v) => Some(v),
        _ => None,
    }
}

/// Memory of one case: the peak of live heap bytes above those live before it, and the
/// largest single allocation.
#[derive(Debug, Clone, Copy)]
struct Peaks {
    live: usize,
    largest: usize,
}

/// Tallies of the fuzz run.
#[derive(Default)]
struct Summary {
    cases: usize,
    ok: usize,
    errors: BTreeMap<String, usize>,
    panics: usize,
    reference_agrees: usize,
    reference_failed: usize,
    /// Cases where rayquet returned rows and parquet's reader failed, by parquet's error
    /// (whole scans and selected scans), with the first case of each.
    parquet_failed: BTreeMap<String, (usize, String)>,
    /// Selected scans rayquet refused, or whose schemas could not be compared.
    selected_refused: usize,
    selected_incomparable: usize,
    /// Cases whose selected rows read the same as parquet's reader with the same selection.
    selected_agrees: usize,
    peak: usize,
    peak_case: String,
    largest: usize,
    largest_case: String,
}

impl Summary {
    /// A case where rayquet returned rows and parquet's reader failed with `error`.
    fn parquet_failed(&mut self, what: &str, error: &str) {
        // The error's kind: its text without numbers (offsets, sizes, counts).
        let kind: String = error
            .chars()
            .map(|c| if c.is_ascii_digit() { '#' } else { c })
            .take(120)
            .collect();
        let e = self
            .parquet_failed
            .entry(kind)
            .or_insert((0, what.to_string()));
        e.0 += 1;
    }

    fn selected(&mut self, what: &str, s: Selected) {
        match s {
            Selected::Agrees => self.selected_agrees += 1,
            Selected::RayquetFailed => self.selected_refused += 1,
            Selected::Incomparable => self.selected_incomparable += 1,
            Selected::ParquetFailed(e) => self.parquet_failed(&format!("{what} (selected)"), &e),
        }
    }

    fn record(&mut self, what: &str, name: &str, got: &Got, peaks: Peaks) {
        self.cases += 1;
        let peak = peaks.live;
        if peak > self.peak {
            self.peak = peak;
            self.peak_case = what.to_string();
        }
        if peaks.largest > self.largest {
            self.largest = peaks.largest;
            self.largest_case = what.to_string();
        }
        assert!(
            peaks.largest <= LARGEST_ALLOCATION,
            "{what}: an allocation of {} bytes (more than {LARGEST_ALLOCATION})",
            peaks.largest
        );
        match got {
            Got::Rows(..) => self.ok += 1,
            Got::Failed(e) => {
                *self.errors.entry(format!("{:?}", e.kind())).or_default() += 1;
                if e.kind() == ErrorKind::Panic {
                    assert!(
                        !own_panic(&e.to_string()),
                        "{what}: a panic in rayquet's own code (a broken contract, an index out \
                         of bounds): {e}"
                    );
                    self.panics += 1;
                    println!("caught panic: {what}: {e}");
                }
                let named =
                    e.path().is_some_and(|p| p.contains(name)) || e.to_string().contains(name);
                assert!(named, "{what}: the error does not name {name}: {e}");
            }
        }
        assert!(
            peak <= BUDGET + MEMORY_SLACK,
            "{what}: {peak} bytes live at the peak, more than the budget {BUDGET} + {MEMORY_SLACK}"
        );
    }
}

/// Whether a caught panic's message (`... (at FILE:LINE)`) places it in rayquet's own code
/// rather than a dependency's (parquet's decoders, under `.cargo/registry`) or the standard
/// library's: a contract of rayquet's broken, which the dev-profile run's `debug_assert!`s and
/// overflow checks exist to catch. A panic without a location is counted as rayquet's.
fn own_panic(message: &str) -> bool {
    let Some(at) = message.rsplit_once("(at ").map(|(_, at)| at) else {
        return true;
    };
    !(at.contains(".cargo/registry") || at.contains("/rustc/") || at.contains(".cargo/git"))
}

fn bases() -> Vec<Base> {
    let mut files = testing_files();
    files.extend(generated_files());
    files
        .into_iter()
        .map(|(name, bytes)| {
            let pages = if name.starts_with("bad_data/") {
                Vec::new()
            } else {
                page_offsets(&bytes)
            };
            Base { name, bytes, pages }
        })
        .collect()
}

fn env_usize(key: &str) -> Option<u64> {
    std::env::var(key).ok().and_then(|v| v.parse().ok())
}

#[test]
fn fuzz_hostile_files() {
    let _serial = serial();
    let started = Instant::now();
    let bases = bases();
    let cases = env_usize("RAYQUET_FUZZ_CASES").map_or(DEFAULT_CASES, |n| n as usize);
    let seed = env_usize("RAYQUET_FUZZ_SEED").unwrap_or(0x5eed_f00d);
    let mut rng = Rng(seed);
    let mut sum = Summary::default();

    // Every base file as it is: the unmutated generated files must read like parquet's reader.
    for (i, base) in bases.iter().enumerate() {
        let name = format!("base-{i}.parquet");
        let what = format!("{} (unmutated)", base.name);
        let (got, peak) = scan_case(&name, base.bytes.clone(), &mut rng, &what);
        if base.name.starts_with("gen/") {
            let Got::Rows(schema, batches) = &got else {
                panic!("{what}: {got:?}")
            };
            let (s, expected) =
                reference(base.bytes.clone(), batch_size(&name)).expect("reference");
            let names = |s: &SchemaRef| {
                s.fields()
                    .iter()
                    .map(|f| f.name().clone())
                    .collect::<Vec<_>>()
            };
            assert_eq!(names(schema), names(&s), "{what}: schema");
            let batches = cast_to(&s, batches).expect("cast to the reference's types");
            common::assert_same_rows(&s, &expected, &batches, &what);
            let rows = expected.iter().map(|b| b.num_rows()).sum();
            for seed in 0..4 {
                let what = format!("{what}, rows selected ({seed})");
                let s = check_selected(&name, &base.bytes, rows, seed, &what);
                assert!(matches!(s, Selected::Agrees), "{what}: {s:?}");
                sum.selected_agrees += 1;
            }
        }
        sum.record(&what, &name, &got, peak);
    }

    for case in 0..cases {
        let base = &bases[rng.below(bases.len() as u64) as usize];
        let (bytes, how) = mutate(&mut rng, base);
        let name = format!("case-{case}.parquet");
        let what = format!("case {case}: {} with {how}", base.name);
        let (got, peak) = scan_case(&name, bytes.clone(), &mut rng, &what);
        if let Got::Rows(schema, batches) = &got {
            // Differential check: where parquet's reader also reads the mutated bytes, the
            // rows must be the same (rayquet may refuse more, never read differently).
            if !base.name.starts_with("bad_data/") {
                let same = |s: &SchemaRef| {
                    s.fields().len() == schema.fields().len()
                        && s.fields()
                            .iter()
                            .zip(schema.fields())
                            .all(|(a, b)| a.name() == b.name())
                };
                match reference_selected(bytes.clone(), batch_size(&name), None) {
                    Ok((s, expected)) if same(&s) && cast_to(&s, batches).is_some() => {
                        let batches = cast_to(&s, batches).unwrap();
                        let r = common::same_rows(&s, &expected, &batches, &what);
                        if let Err(m) = r {
                            panic!("{what}: rayquet and parquet's reader differ: {m}");
                        }
                        sum.reference_agrees += 1;
                        // Every fourth readable case again, a selection of its rows.
                        let rows = expected.iter().map(|b| b.num_rows()).sum();
                        if case % 4 == 0 {
                            let s = check_selected(&name, &bytes, rows, case as u64, &what);
                            sum.selected(&what, s);
                        }
                    }
                    Ok(_) => sum.reference_failed += 1,
                    Err(e) => {
                        sum.reference_failed += 1;
                        sum.parquet_failed(&what, &e);
                    }
                }
            }
        }
        sum.record(&what, &name, &got, peak);
    }

    println!(
        "fuzz: {} cases ({} base files, {} mutated, seed {seed:#x}) in {:.1}s",
        sum.cases,
        bases.len(),
        cases,
        started.elapsed().as_secs_f64()
    );
    println!(
        "  Ok: {} ({} identical to parquet's reader, {} where parquet's reader failed or \
         read another schema)",
        sum.ok, sum.reference_agrees, sum.reference_failed
    );
    println!(
        "  rows selected: {} cases identical to parquet's reader with the same selection, {} \
         refused by rayquet, {} in schemas that do not compare",
        sum.selected_agrees, sum.selected_refused, sum.selected_incomparable
    );
    let n: usize = sum.parquet_failed.values().map(|(n, _)| n).sum();
    println!("  rayquet returned rows where parquet's reader failed: {n}, by parquet's error:");
    for (kind, (n, first)) in &sum.parquet_failed {
        println!("    {n} x {kind}\n        first: {first}");
    }
    for (kind, n) in &sum.errors {
        println!("  Err {kind}: {n}");
    }
    println!("  panics caught (ErrorKind::Panic): {}", sum.panics);
    println!(
        "  peak live heap during one case: {:.1} MiB ({})",
        sum.peak as f64 / (1 << 20) as f64,
        sum.peak_case,
    );
    println!(
        "  largest single allocation: {:.1} MiB ({})",
        sum.largest as f64 / (1 << 20) as f64,
        sum.largest_case,
    );
}

/// Claims of gigabytes are refused before anything is allocated for them, with an error
/// naming the file (and the row group for pages).
#[test]
fn huge_claims_are_refused() {
    let _serial = serial();
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(1000))
        .build();
    let data: Vec<RecordBatch> = (0..2)
        .map(|i| rayquet_gen::batch(0, i * 1000, 1000, 3))
        .collect();
    let file = write(&data, props);
    let pages = page_offsets(&file);
    assert!(!pages.is_empty());
    let mut rng = Rng(1);

    // A page header claiming 2 GiB uncompressed (the second row group's first page).
    let md = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&Bytes::copy_from_slice(&file))
        .unwrap();
    let rg1_start = md.row_group(1).column(0).byte_range().0;
    let at = *pages.iter().find(|&&p| p >= rg1_start).unwrap() as usize;
    let toks = thrift::tokens(&file[at..]).unwrap();
    let t = toks.tokens.iter().find(|t| t.path == [2]).unwrap().clone();
    let mut b = file.clone();
    splice(&mut b, at, &t, i32::MAX as i64, false);
    let (got, peaks) = scan_case("huge-page.parquet", b, &mut rng, "huge page");
    assert!(peaks.largest <= LARGEST_ALLOCATION, "huge page: {peaks:?}");
    let Got::Failed(e) = got else {
        panic!("huge page: read {got:?}")
    };
    assert_eq!(e.kind(), ErrorKind::CorruptData, "{e}");
    assert_eq!(e.row_group(), Some(1), "{e}");
    assert!(e.path().unwrap().contains("huge-page.parquet"), "{e}");
    assert!(e.message().contains("uncompressed"), "{e}");
    println!("huge page: {e}");

    // The footer's row group list claiming 2^31 - 1 entries.
    let m = metadata_range(&file).unwrap();
    let toks = thrift::tokens(&file[m.clone()]).unwrap();
    let t = toks
        .tokens
        .iter()
        .find(|t| t.path == [4] && t.kind == thrift::Kind::List)
        .unwrap()
        .clone();
    let mut b = file.clone();
    splice(&mut b, m.start, &t, i32::MAX as i64, true);
    let (got, peaks) = scan_case("huge-list.parquet", b, &mut rng, "huge list");
    assert!(peaks.largest <= LARGEST_ALLOCATION, "huge list: {peaks:?}");
    let Got::Failed(e) = got else {
        panic!("huge list: read {got:?}")
    };
    assert_eq!(e.kind(), ErrorKind::CorruptFooter, "{e}");
    println!("huge list: {e}");

    // A footer length of 4 GiB - 1.
    let mut b = file.clone();
    let n = b.len();
    b[n - 8..n - 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let (got, _) = scan_case("huge-footer.parquet", b, &mut rng, "huge footer");
    let Got::Failed(e) = got else {
        panic!("huge footer: read {got:?}")
    };
    assert_eq!(e.kind(), ErrorKind::CorruptFooter, "{e}");
    println!("huge footer: {e}");

    // num_children of the root claiming 2^31 - 1 children.
    let t = toks
        .tokens
        .iter()
        .find(|t| t.path == [2, 5])
        .unwrap()
        .clone();
    let mut b = file.clone();
    splice(&mut b, m.start, &t, i32::MAX as i64, true);
    let (got, peaks) = scan_case("huge-children.parquet", b, &mut rng, "huge num_children");
    assert!(
        peaks.largest <= LARGEST_ALLOCATION,
        "huge num_children: {peaks:?}"
    );
    let Got::Failed(e) = got else {
        panic!("huge num_children: read {got:?}")
    };
    assert_eq!(e.kind(), ErrorKind::CorruptFooter, "{e}");
    println!("huge num_children: {e}");
}

/// Repetition levels that build no valid list (parquet-testing's `repeated_primitive_no_list`
/// with one bit pattern of its first page's levels changed, as the scan fuzz target found):
/// parquet's reader returns a `List(non-null Int32)` whose child holds nulls its parent does
/// not, which arrow's `validate_full` refuses (pyarrow refuses the file too). rayquet refuses
/// it as corrupt data naming the file, row group and column; the intact file reads as
/// parquet's reader reads it.
#[test]
fn levels_that_build_no_valid_list_are_refused() {
    let _serial = serial();
    let path = std::path::Path::new(TESTING).join("data/repeated_primitive_no_list.parquet");
    let good = std::fs::read(&path).expect("parquet-testing's repeated_primitive_no_list");
    let parquet_reads = |bytes: &[u8]| -> Vec<RecordBatch> {
        ParquetRecordBatchReaderBuilder::try_new(Bytes::copy_from_slice(bytes))
            .unwrap()
            .build()
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    };
    let read = |name: &str, bytes: Vec<u8>| {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = Path::from(name);
        futures::executor::block_on(store.put(&path, Bytes::from(bytes).into())).unwrap();
        common::read_all(Ok(Scan::from_store(store, [path]).batch_size(100)))
    };
    let expected = parquet_reads(&good);
    let (schema, got) = read("intact.parquet", good.clone()).expect("the intact file");
    common::assert_same_rows(&schema, &expected, &got, "intact");

    // The first data page's repetition levels, bit-packed: `0xef` at byte 101 (`05 ef 03`).
    let mut bad = good;
    assert_eq!(bad[101], 0xef, "the file's first level run moved");
    bad[101] = 0xe9;
    let theirs = parquet_reads(&bad);
    let invalid = theirs[0].column(0).to_data().validate_full();
    assert!(invalid.is_err(), "parquet's reader now builds a valid list");
    let e = read("changed-levels.parquet", bad).expect_err("an invalid list is delivered");
    assert_eq!(e.kind(), ErrorKind::CorruptData, "{e}");
    assert!(
        e.path()
            .is_some_and(|p| p.contains("changed-levels.parquet")),
        "{e}"
    );
    assert_eq!(e.row_group(), Some(0), "{e}");
    assert!(e.message().contains("column Int32_list"), "{e}");
}

/// A schema nested deeper than rayquet's limit is refused with a clear error (no stack
/// overflow); one within it reads like parquet's reader.
#[test]
fn deep_nesting() {
    let _serial = serial();
    let mut rng = Rng(2);
    for depth in [40, 1000] {
        let file = big_stack(move || write(&[nested_batch(depth, 50)], Default::default()));
        let name = format!("deep-{depth}.parquet");
        let (got, _) = scan_case(&name, file.clone(), &mut rng, &name);
        match got {
            Got::Rows(schema, batches) => {
                assert!(depth < 64, "{name}: read");
                let (s, expected) = reference(file, batch_size(&name)).expect("reference");
                assert_eq!(schema.fields(), s.fields());
                common::assert_same_rows(&schema, &expected, &batches, &name);
            }
            Got::Failed(e) => {
                assert!(depth >= 64, "{name}: {e}");
                assert_eq!(e.kind(), ErrorKind::CorruptFooter, "{e}");
                assert!(e.message().contains("nests deeper"), "{e}");
                println!("{name}: {e}");
            }
        }
    }
}

/// Inputs on which parquet's decoders panic are refused by rayquet's validation before parquet
/// runs, with the error kind validation gives (not `Panic`): a dictionary-encoded page whose
/// dictionary page is gone (its type rewritten to INDEX_PAGE, which parquet skips), for INT32
/// and for an all-null column; an `ARROW:schema` hint that arrow-ipc's conversion panics on
/// (an integer of 7 bits, a list without a child). BYTE_ARRAY keeps parquet's own error. A
/// negative DELTA_BYTE_ARRAY suffix length stays a caught panic (`ErrorKind::Panic`). The
/// intact files read as parquet's reader reads them.
#[test]
fn known_decoder_panics_are_refused_before_parquet() {
    use arrow::array::{Int32Array, StringArray};
    let _serial = serial();
    let mut rng = Rng(3);
    let props = || {
        WriterProperties::builder()
            .set_compression(Compression::UNCOMPRESSED)
            .set_dictionary_enabled(true)
    };
    // Every dictionary page header (type DICTIONARY_PAGE: thrift `15 04`) made an index page.
    let hide_dictionaries = |mut b: Vec<u8>| {
        let md = parquet::file::metadata::ParquetMetaDataReader::new()
            .parse_and_finish(&Bytes::from(b.clone()))
            .unwrap();
        for c in md.row_groups().iter().flat_map(|rg| rg.columns()) {
            if let Some(off) = c.dictionary_page_offset() {
                let off = off as usize;
                assert_eq!(&b[off..off + 2], &[0x15, 0x04], "dictionary page at {off}");
                b[off + 1] = 0x02;
            }
        }
        b
    };
    // One column of `bytes`, stored as object `name`.
    let read_column = |name: &str, bytes: Vec<u8>, column: &str| {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = Path::from(name);
        futures::executor::block_on(store.put(&path, Bytes::from(bytes).into())).unwrap();
        common::read_all(Ok(Scan::from_store(store, [path]).columns([column])))
    };
    let n = 300;
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let values = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int32Array::from_iter_values((0..n).map(|i| i % 7))),
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| format!("v{}", i % 5)),
            )),
        ],
    )
    .unwrap();
    let nulls = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int32Array::from(vec![None::<i32>; 50])),
            Arc::new(StringArray::from(vec![None::<&str>; 50])),
        ],
    )
    .unwrap();
    for (what, batch) in [("values", values), ("all-nulls", nulls)] {
        let good = write(std::slice::from_ref(&batch), props().build());
        let name = format!("dict-{what}.parquet");
        let Got::Rows(schema, got) = scan_case(&name, good.clone(), &mut rng, &name).0 else {
            panic!("{what}: the intact file fails")
        };
        let (_, expected) = reference(good.clone(), batch_size(&name)).unwrap();
        common::assert_same_rows(&schema, &expected, &got, what);
        let bad = hide_dictionaries(good);
        for (column, refused) in [("i", true), ("s", false)] {
            let name = format!("dict-hidden-{column}-{what}.parquet");
            let e = read_column(&name, bad.clone(), column)
                .expect_err("a file without its dictionary page");
            assert_ne!(e.kind(), ErrorKind::Panic, "{name}: {e}");
            assert!(e.path().is_some_and(|p| p.contains(&name)), "{name}: {e}");
            if refused {
                assert_eq!(e.kind(), ErrorKind::CorruptData, "{name}: {e}");
                assert!(e.message().contains("no dictionary page"), "{name}: {e}");
            }
            println!("{name}: {e}");
        }
    }

    // ARROW:schema hints that verify as flatbuffers but do not convert.
    for case in ["int of 7 bits", "list without a child"] {
        let mut fbb = flatbuffers::FlatBufferBuilder::new();
        let name = fbb.create_string("i");
        let (tt, tv) = if case.starts_with("int") {
            let mut ib = arrow::ipc::IntBuilder::new(&mut fbb);
            ib.add_bitWidth(7);
            ib.add_is_signed(true);
            (arrow::ipc::Type::Int, ib.finish().as_union_value())
        } else {
            let lb = arrow::ipc::ListBuilder::new(&mut fbb);
            (arrow::ipc::Type::List, lb.finish().as_union_value())
        };
        let mut fb = arrow::ipc::FieldBuilder::new(&mut fbb);
        fb.add_name(name);
        fb.add_nullable(false);
        fb.add_type_type(tt);
        fb.add_type_(tv);
        let field = fb.finish();
        let fields = fbb.create_vector(&[field]);
        let mut sb = arrow::ipc::SchemaBuilder::new(&mut fbb);
        sb.add_fields(fields);
        let schema = sb.finish();
        let mut mb = arrow::ipc::MessageBuilder::new(&mut fbb);
        mb.add_version(arrow::ipc::MetadataVersion::V5);
        mb.add_header_type(arrow::ipc::MessageHeader::Schema);
        mb.add_header(schema.as_union_value());
        let m = mb.finish();
        fbb.finish(m, None);
        let msg = fbb.finished_data();
        let mut ipc = vec![0xff; 4];
        ipc.extend_from_slice(&(msg.len() as i32).to_le_bytes());
        ipc.extend_from_slice(msg);
        use base64::Engine;
        let hint = base64::engine::general_purpose::STANDARD.encode(&ipc);
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("i", DataType::Int32, false)])),
            vec![Arc::new(Int32Array::from(vec![1, 2, 3]))],
        )
        .unwrap();
        let props = WriterProperties::builder()
            .set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
                "ARROW:schema".to_string(),
                hint,
            )]))
            .build();
        let mut file = Vec::new();
        let opts = parquet::arrow::arrow_writer::ArrowWriterOptions::new()
            .with_properties(props)
            .with_skip_arrow_metadata(true);
        let mut w = ArrowWriter::try_new_with_options(&mut file, batch.schema(), opts).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        // parquet itself panics on it.
        let bytes = Bytes::from(file.clone());
        let panics =
            std::panic::catch_unwind(|| ParquetRecordBatchReaderBuilder::try_new(bytes).map(drop));
        assert!(panics.is_err(), "{case}: parquet no longer panics");
        let name = format!("hint-{}.parquet", case.replace(' ', "-"));
        let Got::Failed(e) = scan_case(&name, file, &mut rng, &name).0 else {
            panic!("{case}: read")
        };
        assert_eq!(e.kind(), ErrorKind::CorruptFooter, "{case}: {e}");
        assert!(e.message().contains("ARROW:schema"), "{case}: {e}");
        println!("{name}: {e}");
    }

    // DELTA_BYTE_ARRAY with a negative suffix length: still a caught panic.
    let batch = RecordBatch::try_new(
        Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)])),
        vec![Arc::new(StringArray::from_iter_values(
            (0..8).map(|i| ((b'a' + i as u8) as char).to_string()),
        ))],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_compression(Compression::UNCOMPRESSED)
        .set_dictionary_enabled(false)
        .set_encoding(Encoding::DELTA_BYTE_ARRAY)
        .build();
    let mut file = write(&[batch], props);
    // The prefix stream's header (block 128, 4 miniblocks, 8 values, first value 0), then the
    // suffix stream's: its first value (zigzag) becomes -5.
    let head = [0x80u8, 0x01, 0x04, 0x08];
    let at = file
        .windows(5)
        .position(|w| w[..4] == head && w[4] == 0)
        .unwrap();
    let suffix = at + 5 + file[at + 5..].windows(4).position(|w| w == head).unwrap();
    file[suffix + 4] = 0x09;
    let name = "delta-byte-array.parquet";
    let Got::Failed(e) = scan_case(name, file, &mut rng, name).0 else {
        panic!("DELTA_BYTE_ARRAY: read")
    };
    assert_eq!(e.kind(), ErrorKind::Panic, "{e}");
    assert!(e.path().unwrap().contains(name), "{e}");
    println!("{name}: {e}");
}

/// A panic caught inside a scan prints nothing to stderr, unless `RAYQUET_SHOW_PANICS=1`: the
/// test binary runs itself (`panic_child`) and reads the child's stderr.
#[test]
fn caught_panics_are_quiet() {
    for show in [false, true] {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["panic_child", "--exact", "--nocapture", "--test-threads=1"])
            .env("RAYQUET_PANIC_CHILD", "1");
        if show {
            cmd.env("RAYQUET_SHOW_PANICS", "1");
        } else {
            cmd.env_remove("RAYQUET_SHOW_PANICS");
        }
        let out = cmd.output().expect("run the child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stdout.contains("panic_child: Panic error"),
            "child failed ({}):\n{stdout}\n{stderr}",
            out.status
        );
        let printed = stderr.contains("panicked") || stderr.contains("deliberate panic");
        assert_eq!(
            printed, show,
            "RAYQUET_SHOW_PANICS={show}: the child's stderr:\n{stderr}"
        );
    }
}

/// The child half of [`caught_panics_are_quiet`]: a scan whose transform panics on the decode
/// pool must end with an `ErrorKind::Panic` error naming the file. Does nothing when run
/// directly.
#[test]
fn panic_child() {
    if std::env::var_os("RAYQUET_PANIC_CHILD").is_none() {
        return;
    }
    let file = write(
        &[rayquet_gen::batch(0, 0, 100, 1)],
        WriterProperties::builder().build(),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.parquet");
    std::fs::write(&path, file).unwrap();
    let schema = rayquet_gen::schema();
    let task = rayquet::task::FileTask::new(path.to_str().unwrap()).transform(Arc::new(
        |_b: RecordBatch| -> rayquet::Result<RecordBatch> { panic!("deliberate panic") },
    ));
    let scan = Scan::from_tasks(schema, [task]);
    let err = common::read_all(Ok(scan)).expect_err("the transform panics");
    assert_eq!(err.kind(), ErrorKind::Panic, "{err}");
    assert!(err.to_string().contains("p.parquet"), "{err}");
    println!("panic_child: Panic error: {err}");
}
