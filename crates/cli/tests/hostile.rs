//! Crafted hostile files, each scanned in a child process the way a service in a container
//! runs: this test binary run again (the ignored test [`child`]) with its address space limited
//! to 4 GiB and a 256 MiB memory budget. Every file here was written by parquet's writer and
//! then made to lie (`rayquet_testkit::craft`): row counts, values counts, dictionary sizes,
//! string lengths, RLE runs, checksums; or is a true file whose few stored bytes decode to
//! gigabytes (a 1 MiB dictionary value on every row, zstd pages of one huge string, prefix-
//! coded strings); or a Delta or Iceberg table whose deletion vector lies about its
//! cardinality or deletes 2^30 and more positions.
//!
//! Each case must end in the child with a clean error (its kind, the file named, and what the
//! case expects the message to name: row group, column, page) or with the true rows, compared
//! by a digest of every value with parquet's own reader (for tables: the rows written minus the
//! rows deleted); the child must exit by itself (no abort, no kill, within the timeout) and its
//! peak resident memory must stay within the budget plus 256 MiB. The issue's own commands
//! (`rayquet scan --budget 256M ...`) are also run through the CLI binary under the same limit.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Int32Array, Int64Array, LargeStringArray, RecordBatch,
    StringArray,
};
use arrow::datatypes::{DataType, Field, Int64Type, Schema};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterVersion};
use rayquet::{ErrorKind, ScanBuilder};
use rayquet_testkit::craft::{
    self, header_with, header_with_crc, page_at, page_offsets, rewrite_page, set_footer_field,
};
use serde_json::{json, Value};

/// The child's address space.
const ADDRESS_SPACE: u64 = 4 << 30;
/// The scans' memory budget.
const BUDGET: u64 = 256 << 20;
/// What the child may hold beyond the budget at its peak (resident).
const SLACK: u64 = 256 << 20;
/// A child that runs longer has hung.
const TIMEOUT: Duration = Duration::from_secs(300);
/// The environment variable that carries a case to the child.
const CASE_VAR: &str = "RAYQUET_HOSTILE_CASE";

// ---------------------------------------------------------------------------------------------
// A digest of rows: every value, in order, whatever the batches and the string types.

/// Rows and one running hash per column (by position).
#[derive(Debug, Clone, Default, PartialEq)]
struct Digest {
    rows: u64,
    columns: Vec<u64>,
}

fn mix(h: u64, x: u64) -> u64 {
    (h ^ x).wrapping_mul(0x0000_0100_0000_01b3).rotate_left(29)
}

fn mix_bytes(mut h: u64, b: &[u8]) -> u64 {
    h = mix(h, b.len() as u64);
    let mut words = b.chunks_exact(8);
    for w in &mut words {
        h = mix(h, u64::from_le_bytes(w.try_into().unwrap()));
    }
    for &x in words.remainder() {
        h = mix(h, x as u64);
    }
    h
}

impl Digest {
    fn add(&mut self, batch: &RecordBatch) {
        self.rows += batch.num_rows() as u64;
        if self.columns.is_empty() {
            self.columns = vec![0xcbf2_9ce4_8422_2325; batch.num_columns()];
        }
        assert_eq!(self.columns.len(), batch.num_columns(), "columns");
        for (h, c) in self.columns.iter_mut().zip(batch.columns()) {
            *h = hash_array(*h, c);
        }
    }

    fn json(&self) -> Value {
        json!({"rows": self.rows, "columns": self.columns})
    }

    fn from_json(v: &Value) -> Self {
        Digest {
            rows: v["rows"].as_u64().unwrap(),
            columns: v["columns"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect(),
        }
    }
}

/// `h` continued by every value of `a` (nulls as a marker); byte arrays by their bytes,
/// integers as 64-bit values, so the string and integer types of two readers compare.
fn hash_array(mut h: u64, a: &ArrayRef) -> u64 {
    const NULL: u64 = 0x9e37_79b9_7f4a_7c15;
    fn bytes<'a>(a: &'a ArrayRef) -> Option<Box<dyn Iterator<Item = Option<&'a [u8]>> + 'a>> {
        Some(match a.data_type() {
            DataType::Utf8 => Box::new(a.as_string::<i32>().iter().map(|v| v.map(str::as_bytes))),
            DataType::LargeUtf8 => {
                Box::new(a.as_string::<i64>().iter().map(|v| v.map(str::as_bytes)))
            }
            DataType::Utf8View => Box::new(a.as_string_view().iter().map(|v| v.map(str::as_bytes))),
            DataType::Binary => Box::new(a.as_binary::<i32>().iter()),
            DataType::LargeBinary => Box::new(a.as_binary::<i64>().iter()),
            DataType::BinaryView => Box::new(a.as_binary_view().iter()),
            _ => return None,
        })
    }
    if let Some(values) = bytes(a) {
        for v in values {
            h = match v {
                Some(b) => mix_bytes(h, b),
                None => mix(h, NULL),
            };
        }
        return h;
    }
    let ints = arrow::compute::cast(a, &DataType::Int64).expect("an integer column");
    for v in ints.as_primitive::<Int64Type>().iter() {
        h = mix(h, v.map_or(NULL, |v| v as u64));
    }
    h
}

// ---------------------------------------------------------------------------------------------
// Cases.

/// What a case reads.
#[derive(Debug, Clone)]
enum Input {
    Parquet(PathBuf),
    Delta(PathBuf),
    Iceberg(String),
}

/// What a case must end in.
#[derive(Debug, Clone)]
enum Expect {
    /// A clean error of one of these kinds whose message contains each of these texts (and
    /// which names the file: `named`).
    Error {
        kinds: Vec<ErrorKind>,
        says: Vec<String>,
        named: String,
    },
    /// The true rows.
    Rows(Digest),
}

#[derive(Debug, Clone)]
struct Case {
    name: String,
    input: Input,
    filter: Option<String>,
    views: bool,
    checksums: bool,
    budget: u64,
    expect: Expect,
}

impl Case {
    fn new(name: impl Into<String>, input: Input, expect: Expect) -> Self {
        Case {
            name: name.into(),
            input,
            filter: None,
            views: true,
            checksums: true,
            budget: BUDGET,
            expect,
        }
    }
    fn filter(mut self, f: &str) -> Self {
        self.filter = Some(f.to_string());
        self
    }
    fn views(mut self, v: bool) -> Self {
        self.views = v;
        self
    }
    fn checksums(mut self, v: bool) -> Self {
        self.checksums = v;
        self
    }
    fn budget(mut self, b: u64) -> Self {
        self.budget = b;
        self
    }

    fn spec(&self) -> Value {
        let (kind, path) = match &self.input {
            Input::Parquet(p) => ("parquet", p.display().to_string()),
            Input::Delta(p) => ("delta", p.display().to_string()),
            Input::Iceberg(m) => ("iceberg", m.clone()),
        };
        json!({
            "kind": kind, "path": path, "filter": self.filter, "views": self.views,
            "checksums": self.checksums, "budget": self.budget,
        })
    }
}

fn error(kinds: &[ErrorKind], says: &[&str], named: &Path) -> Expect {
    Expect::Error {
        kinds: kinds.to_vec(),
        says: says.iter().map(|s| s.to_string()).collect(),
        named: named.file_name().unwrap().to_string_lossy().into_owned(),
    }
}

// ---------------------------------------------------------------------------------------------
// The child: one scan, its digest or its error, and its peak memory, as one JSON line.

/// Not a test of its own: the entry point of the child processes of [`hostile_files`].
#[test]
#[ignore = "run by hostile_files in a child process"]
fn child() {
    let Ok(spec) = std::env::var(CASE_VAR) else {
        return;
    };
    let spec: Value = serde_json::from_str(&spec).unwrap();
    let result = match scan(&spec) {
        Ok(d) => json!({"ok": d.json()}),
        Err(e) => json!({"error": {
            "kind": format!("{:?}", e.kind()),
            "message": e.to_string(),
        }}),
    };
    let out = json!({"result": result, "peak_rss": rayquet_testkit::peak_rss()});
    println!("HOSTILE-RESULT {out}");
}

fn scan(spec: &Value) -> rayquet::Result<Digest> {
    let path = spec["path"].as_str().unwrap().to_string();
    let mut opts = rayquet::ScanOptions::new()
        .memory_budget(spec["budget"].as_u64().unwrap() as usize)
        .string_views(spec["views"].as_bool().unwrap())
        .verify_checksums(spec["checksums"].as_bool().unwrap());
    if let Some(f) = spec["filter"].as_str() {
        opts = opts.filter(rayquet::Expr::parse_sql(f)?);
    }
    let reader = match spec["kind"].as_str().unwrap() {
        "parquet" => rayquet::Scan::new(&path)?.with_options(opts).build()?,
        "delta" => rayquet_delta::TableScan::open(path)
            .with_options(opts)
            .build()?,
        _ => rayquet_iceberg::TableScan::open(path)
            .with_options(opts)
            .build()?,
    };
    let mut d = Digest::default();
    for b in reader {
        d.add(&b?);
    }
    Ok(d)
}

/// What the child said: its result and its peak resident memory.
struct Outcome {
    result: Value,
    peak_rss: u64,
    took: Duration,
}

/// Run `case` in a child process limited to [`ADDRESS_SPACE`]; panics if it did not exit by
/// itself with a result.
fn run_child(case: &Case) -> Outcome {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args([
        "child",
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CASE_VAR, case.spec().to_string())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    limit_address_space(&mut cmd);
    let started = Instant::now();
    let child = cmd.spawn().unwrap();
    let out = wait_with_timeout(child, TIMEOUT)
        .unwrap_or_else(|| panic!("{}: no result within {TIMEOUT:?} (killed)", case.name));
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{}: the child did not exit cleanly ({:?}): {stderr}",
        case.name,
        out.status
    );
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("HOSTILE-RESULT ").map(|(_, r)| r))
        .unwrap_or_else(|| panic!("{}: no result line: {stdout} {stderr}", case.name));
    let v: Value = serde_json::from_str(line).unwrap();
    Outcome {
        result: v["result"].clone(),
        peak_rss: v["peak_rss"].as_u64().unwrap(),
        took,
    }
}

/// The child's address space limited to [`ADDRESS_SPACE`] (`RLIMIT_AS`), as a container's.
fn limit_address_space(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: ADDRESS_SPACE as libc::rlim_t,
                rlim_max: ADDRESS_SPACE as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The child's output, or `None` (after killing it) when it runs past `timeout`.
fn wait_with_timeout(
    mut child: std::process::Child,
    timeout: Duration,
) -> Option<std::process::Output> {
    use std::io::Read;
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stdout.read_to_end(&mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = stderr.read_to_end(&mut v);
        v
    });
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Some(std::process::Output {
        status,
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    })
}

/// Run `case` and check what it ended in.
fn check(case: &Case) {
    let o = run_child(case);
    let limit = case.budget + SLACK;
    println!(
        "{}: {} in {:.1}s, peak RSS {} MiB",
        case.name,
        summary(&o.result),
        o.took.as_secs_f64(),
        o.peak_rss >> 20
    );
    assert!(
        o.peak_rss <= limit,
        "{}: peak RSS {} MiB, more than the budget + {} MiB",
        case.name,
        o.peak_rss >> 20,
        SLACK >> 20
    );
    match (&case.expect, &o.result) {
        (Expect::Rows(want), r) => {
            let got = r.get("ok").unwrap_or_else(|| panic!("{}: {r}", case.name));
            assert_eq!(&Digest::from_json(got), want, "{}: rows", case.name);
        }
        (Expect::Error { kinds, says, named }, r) => {
            let e = r
                .get("error")
                .unwrap_or_else(|| panic!("{}: read rows, expected an error", case.name));
            let kind = e["kind"].as_str().unwrap();
            let msg = e["message"].as_str().unwrap();
            assert!(
                kinds.iter().any(|k| format!("{k:?}") == kind),
                "{}: a {kind} error, expected {kinds:?}: {msg}",
                case.name
            );
            assert!(msg.contains(named.as_str()), "{}: {msg}", case.name);
            for s in says {
                assert!(msg.contains(s.as_str()), "{}: no {s:?} in {msg}", case.name);
            }
        }
    }
}

fn summary(r: &Value) -> String {
    match r.get("ok") {
        Some(d) => format!("{} rows", d["rows"]),
        None => format!(
            "{}: {}",
            r["error"]["kind"].as_str().unwrap_or("?"),
            r["error"]["message"].as_str().unwrap_or("?")
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Files.

fn write(path: &Path, batches: &[RecordBatch], props: WriterProperties) -> Vec<u8> {
    write_each(path, batches.iter().cloned(), props)
}

/// `batches` (one at a time: the decoded data of these files may not fit in memory) as one
/// Parquet file at `path`; its bytes.
fn write_each(
    path: &Path,
    mut batches: impl Iterator<Item = RecordBatch>,
    props: WriterProperties,
) -> Vec<u8> {
    let mut buf = Vec::new();
    let first = batches.next().unwrap();
    let mut w = ArrowWriter::try_new(&mut buf, first.schema(), Some(props)).unwrap();
    w.write(&first).unwrap();
    for b in batches {
        w.write(&b).unwrap();
    }
    w.close().unwrap();
    std::fs::write(path, &buf).unwrap();
    buf
}

/// Writer properties of the crafted files: one row group, no page index or statistics (the
/// crafted offsets then stay the only ones to move), version 1 pages.
fn plain_props() -> parquet::file::properties::WriterPropertiesBuilder {
    WriterProperties::builder()
        .set_compression(Compression::UNCOMPRESSED)
        .set_statistics_enabled(EnabledStatistics::None)
        .set_offset_index_disabled(true)
        .set_max_row_group_row_count(Some(1 << 30))
}

/// The digest of `path` read by parquet's own reader (views off, batches of `batch` rows),
/// keeping the rows `keep` says (all when `None`).
fn reference(
    path: &Path,
    batch: usize,
    keep: Option<&dyn Fn(&RecordBatch) -> BooleanArray>,
) -> Digest {
    let f = std::fs::File::open(path).unwrap();
    let r = ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .with_batch_size(batch)
        .build()
        .unwrap();
    let mut d = Digest::default();
    for b in r {
        let b = b.unwrap();
        let b = match keep {
            Some(k) => arrow::compute::filter_record_batch(&b, &k(&b)).unwrap(),
            None => b,
        };
        d.add(&b);
    }
    d
}

/// 1000 rows: `i` Int64 and `s` a dictionary-encoded string of three values.
fn dictionary_file(path: &Path) -> Vec<u8> {
    let n = 1000;
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int64, false),
        Field::new("s", DataType::Utf8, false),
    ]));
    let b = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(0..n)),
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| ["a", "b", "c"][i as usize % 3]),
            )),
        ],
    )
    .unwrap();
    write(path, &[b], plain_props().build())
}

/// The offsets of the page headers of column `col` of `bytes` (its dictionary page first).
fn column_pages(bytes: &[u8], col: usize) -> Vec<usize> {
    let md = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&Bytes::copy_from_slice(bytes))
        .unwrap();
    let (start, len) = md.row_group(0).column(col).byte_range();
    page_offsets(bytes)
        .into_iter()
        .filter(|&p| p >= start && p < start + len)
        .map(|p| p as usize)
        .collect()
}

fn put(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The page header at `at` with its integer at `path` set to `value` (the file's offsets kept
/// consistent when its length changes).
fn set_header_field(b: &mut Vec<u8>, at: usize, path: &[i16], value: i64) {
    let (header, data) = page_at(b, at);
    rewrite_page(b, at, &header_with(header, path, value), &data);
}

/// Footer lies: row counts, value counts, each alone and together.
fn count_cases(dir: &Path) -> Vec<Case> {
    let base = dictionary_file(&dir.join("base.parquet"));
    let mut cases = Vec::new();
    for exp in [31u32, 33, 36, 45] {
        // The row group's rows (and the file's) claim 2^exp; the chunks still say 1000.
        let mut b = base.clone();
        assert_eq!(set_footer_field(&mut b, &[4, 3], 1 << exp), 1);
        set_footer_field(&mut b, &[3], 1 << exp);
        let p = put(dir, &format!("rows-2^{exp}.parquet"), &b);
        let e = error(
            &[ErrorKind::CorruptFooter],
            &["values but row group 0 has", "row group 0"],
            &p,
        );
        let input = Input::Parquet(p.clone());
        cases.push(Case::new(format!("rows 2^{exp}"), input.clone(), e.clone()));
        cases.push(Case::new(format!("rows 2^{exp}, filter"), input, e).filter("s = 'b'"));
    }
    // Rows and every chunk's values claim 2^33, consistently: the pages hold 1000.
    let mut b = base.clone();
    set_footer_field(&mut b, &[4, 3], 1 << 33);
    set_footer_field(&mut b, &[3], 1 << 33);
    assert_eq!(set_footer_field(&mut b, &[4, 1, 3, 5], 1 << 33), 2);
    let p = put(dir, "values-2^33.parquet", &b);
    let e = error(
        &[ErrorKind::CorruptData],
        &[
            "hold 1000 values; the column chunk claims 8589934592",
            "column ",
        ],
        &p,
    );
    let input = Input::Parquet(p);
    cases.push(Case::new("rows and values 2^33", input.clone(), e.clone()));
    cases.push(Case::new("rows and values 2^33, filter", input, e).filter("s = 'b'"));
    // A data page claiming 2^31 - 1 values.
    let mut b = base.clone();
    let s_pages = column_pages(&b, 1);
    set_header_field(&mut b, s_pages[1], &[5, 1], i32::MAX as i64);
    let p = put(dir, "page-values.parquet", &b);
    let e = error(
        &[ErrorKind::CorruptData],
        &[
            "page 1 (at byte",
            "claims 2147483647 values",
            "column \"s\"",
        ],
        &p,
    );
    let input = Input::Parquet(p);
    cases.push(Case::new("page values 2^31-1", input.clone(), e.clone()));
    cases.push(Case::new("page values 2^31-1, filter", input, e).filter("s = 'b'"));
    // The dictionary page claiming more values than it holds, and more than its bytes.
    for (n, says) in [(10, "\"s\""), (100_000, "claims 100000 values in")] {
        let mut b = base.clone();
        set_header_field(&mut b, s_pages[0], &[7, 1], n);
        let p = put(dir, &format!("dictionary-{n}.parquet"), &b);
        let e = error(&[ErrorKind::CorruptData], &[says], &p);
        let input = Input::Parquet(p);
        cases.push(Case::new(
            format!("dictionary of {n}"),
            input.clone(),
            e.clone(),
        ));
        cases.push(Case::new(format!("dictionary of {n}, filter"), input, e).filter("s = 'b'"));
    }
    cases
}

/// A required INT32 column whose one data page is a single RLE run of dictionary index 0.
fn rle_file(dir: &Path, name: &str, values: i64) -> PathBuf {
    let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Int32, false)]));
    let b = RecordBatch::try_new(schema, vec![Arc::new(Int32Array::from(vec![7; 1000]))]).unwrap();
    let mut bytes = write(&dir.join(name), &[b], plain_props().build());
    let pages = column_pages(&bytes, 0);
    let at = pages[1];
    // Bit width 0 (one dictionary value), then one RLE run of `values` values.
    let mut data = vec![0u8];
    data.extend(craft::thrift::varint((values as u64) << 1));
    let (header, _) = page_at(&bytes, at);
    let header = header_with(header, &[2], data.len() as i64);
    let header = header_with(header, &[3], data.len() as i64);
    let header = header_with(header, &[5, 1], values);
    rewrite_page(&mut bytes, at, &header, &data);
    set_footer_field(&mut bytes, &[4, 1, 3, 5], values);
    set_footer_field(&mut bytes, &[4, 3], values);
    set_footer_field(&mut bytes, &[3], values);
    put(dir, name, &bytes)
}

/// RLE runs: one too long for any page to decode (refused), one that a page may hold (its true
/// rows, read in batches).
fn rle_cases(dir: &Path) -> Vec<Case> {
    let big = rle_file(dir, "rle-2^31.parquet", i32::MAX as i64);
    let e = error(
        &[ErrorKind::CorruptData],
        &[
            "claims 2147483647 values: decoded (4 bytes each), more than the page limit",
            "column \"v\"",
        ],
        &big,
    );
    let ok = rle_file(dir, "rle-2^25.parquet", 1 << 25);
    let want = reference(&ok, 1 << 16, None);
    assert_eq!(want.rows, 1 << 25);
    vec![
        Case::new(
            "one RLE run of 2^31-1 values",
            Input::Parquet(big.clone()),
            e.clone(),
        ),
        Case::new(
            "one RLE run of 2^31-1 values, filter",
            Input::Parquet(big),
            e,
        )
        .filter("v = 7"),
        Case::new(
            "one RLE run of 2^25 values",
            Input::Parquet(ok.clone()),
            Expect::Rows(want),
        )
        .views(false),
        Case::new(
            "one RLE run of 2^25 values, filter",
            Input::Parquet(ok.clone()),
            Expect::Rows(reference(&ok, 1 << 16, None)),
        )
        .filter("v = 7"),
    ]
}

/// `n` rows in batches of at most 16 (written one at a time): `i` Int64 from 0 and `s` the
/// same `len`-byte string on every row (`large`: LargeUtf8).
fn repeated_string(n: usize, len: usize, large: bool) -> impl Iterator<Item = RecordBatch> {
    (0..n)
        .step_by(16)
        .map(move |from| string_rows(from, (n - from).min(16), len, large))
}

fn string_rows(from: usize, n: usize, len: usize, large: bool) -> RecordBatch {
    let v = "x".repeat(len - 1) + "y";
    let (dt, s): (DataType, ArrayRef) = if large {
        let a = LargeStringArray::from_iter_values(std::iter::repeat_n(v.as_str(), n));
        (DataType::LargeUtf8, Arc::new(a))
    } else {
        let a = StringArray::from_iter_values(std::iter::repeat_n(v.as_str(), n));
        (DataType::Utf8, Arc::new(a))
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int64, false),
        Field::new("s", dt, false),
    ]));
    RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(from as i64..(from + n) as i64)),
            s,
        ],
    )
    .unwrap()
}

/// Files whose few stored bytes decode to gigabytes: their true rows, in bounded memory.
fn expanding_cases(dir: &Path) -> Vec<Case> {
    let zstd = Compression::ZSTD(ZstdLevel::try_new(3).unwrap());
    let mut cases = Vec::new();
    let keep_all: &dyn Fn(&RecordBatch) -> BooleanArray =
        &|b| BooleanArray::from(vec![true; b.num_rows()]);
    // A 1 MiB large_string dictionary value on 10,000 rows (10 GiB decoded).
    let p = dir.join("dictionary-1MiB.parquet");
    let props = plain_props()
        .set_compression(zstd)
        .set_dictionary_page_size_limit(4 << 20)
        .build();
    write_each(&p, repeated_string(10_000, 1 << 20, true), props.clone());
    assert!(std::fs::metadata(&p).unwrap().len() < 100_000);
    let want = reference(&p, 64, None);
    for (views, filter) in [(false, true), (false, false), (true, true)] {
        let mut c = Case::new(
            format!("1 MiB dictionary value x 10,000, views {views}, filter {filter}"),
            Input::Parquet(p.clone()),
            Expect::Rows(want.clone()),
        )
        .views(views);
        if filter {
            c = c.filter("i >= 0");
        }
        cases.push(c);
    }
    // A 200 KiB value on 20,000 rows, with a 64 MiB budget.
    let p = dir.join("dictionary-200KiB.parquet");
    write_each(&p, repeated_string(20_000, 200 << 10, true), props);
    let want = reference(&p, 256, Some(keep_all));
    cases.push(
        Case::new(
            "200 KiB dictionary value x 20,000, budget 64M",
            Input::Parquet(p),
            Expect::Rows(want),
        )
        .views(false)
        .filter("i >= 0")
        .budget(64 << 20),
    );
    // Plain zstd pages of one 32 MiB string each, 64 rows (2 GiB decoded).
    let p = dir.join("plain-32MiB.parquet");
    let props = plain_props()
        .set_compression(zstd)
        .set_dictionary_enabled(false)
        .set_data_page_size_limit(1)
        .set_write_batch_size(1)
        .build();
    write_each(&p, repeated_string(64, 32 << 20, false), props);
    assert!(std::fs::metadata(&p).unwrap().len() < 1 << 20);
    let want = reference(&p, 1, None);
    for views in [false, true] {
        cases.push(
            Case::new(
                format!("plain pages of 32 MiB x 64, views {views}"),
                Input::Parquet(p.clone()),
                Expect::Rows(want.clone()),
            )
            .views(views),
        );
    }
    // DELTA_BYTE_ARRAY: every value the previous one's 1 MiB prefix (2 GiB decoded).
    let p = dir.join("prefixed-1MiB.parquet");
    let props = plain_props()
        .set_compression(zstd)
        .set_dictionary_enabled(false)
        .set_encoding(Encoding::DELTA_BYTE_ARRAY)
        .set_column_encoding("i".into(), Encoding::PLAIN)
        .build();
    write_each(&p, repeated_string(2_000, 1 << 20, false), props);
    let want = reference(&p, 4, None);
    for views in [false, true] {
        cases.push(
            Case::new(
                format!("DELTA_BYTE_ARRAY 1 MiB prefixes x 2,000, views {views}"),
                Input::Parquet(p.clone()),
                Expect::Rows(want.clone()),
            )
            .views(views)
            .filter("i >= 0"),
        );
    }
    cases
}

/// Lengths that lie: a PLAIN string's length prefix past its page.
fn length_cases(dir: &Path) -> Vec<Case> {
    let p = dir.join("plain-strings.parquet");
    let props = plain_props().set_dictionary_enabled(false).build();
    let mut bytes = write_each(&p, repeated_string(100, 10, false), props);
    let at = column_pages(&bytes, 1)[0];
    let (header, _) = page_at(&bytes, at);
    // The first value's 4-byte length (a required column: the values start the page).
    let v = at + header.len();
    bytes[v..v + 4].copy_from_slice(&(i32::MAX as u32).to_le_bytes());
    let p = put(dir, "string-length.parquet", &bytes);
    let e = error(&[ErrorKind::CorruptData], &["row group 0"], &p);
    vec![
        Case::new("string length 2^31-1", Input::Parquet(p.clone()), e.clone()),
        Case::new(
            "string length 2^31-1, views off",
            Input::Parquet(p.clone()),
            e.clone(),
        )
        .views(false),
        Case::new("string length 2^31-1, filter", Input::Parquet(p), e).filter("s = 'x'"),
    ]
}

/// Repetition levels that build no valid list: parquet-testing's `repeated_primitive_no_list`
/// with one bit-packed run of its first page's levels changed (byte 101, `0xef` to `0xe9`,
/// as the scan fuzz target found): parquet's reader builds a `List(non-null Int32)` whose
/// child holds nulls; refused as corrupt data naming the row group and column.
fn levels_cases(dir: &Path) -> Vec<Case> {
    let testing = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/parquet-testing");
    let mut bytes = std::fs::read(testing.join("data/repeated_primitive_no_list.parquet"))
        .expect("parquet-testing's repeated_primitive_no_list.parquet at ../shared");
    assert_eq!(bytes[101], 0xef, "the file's first level run moved");
    bytes[101] = 0xe9;
    let p = put(dir, "changed-levels.parquet", &bytes);
    let e = error(
        &[ErrorKind::CorruptData],
        &["row group 0", "column Int32_list"],
        &p,
    );
    vec![Case::new(
        "levels that build no valid list",
        Input::Parquet(p),
        e,
    )]
}

/// Page checksums: every page given its true CRC-32 (read as written); one value changed
/// after its page's CRC was taken (a damaged page that still decodes): refused, and read as
/// the damaged value when checksums are not verified. Data pages of both versions (v2: levels
/// stored before the compressed values, both covered by the CRC).
fn checksum_cases(dir: &Path) -> Vec<Case> {
    [WriterVersion::PARQUET_1_0, WriterVersion::PARQUET_2_0]
        .into_iter()
        .flat_map(|v| checksum_cases_of(dir, v))
        .collect()
}

fn checksum_cases_of(dir: &Path, version: WriterVersion) -> Vec<Case> {
    let v = match version {
        WriterVersion::PARQUET_1_0 => "v1",
        WriterVersion::PARQUET_2_0 => "v2",
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", DataType::Int64, false),
        Field::new("j", DataType::Int32, true),
    ]));
    let n = 5000;
    let b = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Int64Array::from_iter_values(0..n)),
            Arc::new(Int32Array::from_iter(
                (0..n as i32).map(|x| (x % 7 != 0).then_some(x * 3)),
            )),
        ],
    )
    .unwrap();
    let props = plain_props()
        .set_dictionary_enabled(false)
        .set_data_page_row_count_limit(1000)
        .set_write_batch_size(1000)
        .set_compression(Compression::SNAPPY)
        .set_writer_version(version)
        // PLAIN in both versions (v2 would pick DELTA_BINARY_PACKED, whose last bytes may be
        // padding): the last stored byte is part of a value.
        .set_encoding(Encoding::PLAIN)
        .build();
    let mut bytes = write(&dir.join(format!("crc-base-{v}.parquet")), &[b], props);
    // Every page of both columns, from the last back (a header that grows moves what follows).
    let mut pages: Vec<usize> = (0..2).flat_map(|c| column_pages(&bytes, c)).collect();
    pages.sort_unstable();
    assert!(pages.len() >= 10, "{} pages", pages.len());
    for &at in pages.iter().rev() {
        let (header, data) = page_at(&bytes, at);
        let header = header_with_crc(header, crc32fast::hash(&data));
        rewrite_page(&mut bytes, at, &header, &data);
    }
    let good = put(dir, &format!("crc-good-{v}.parquet"), &bytes);
    let want = reference(&good, 1000, None);
    let non_null = reference(
        &good,
        1000,
        Some(&|b: &RecordBatch| arrow::compute::is_not_null(b.column(1)).unwrap()),
    );
    // A value of the second page of `j` changed (snappy: a literal byte of the stored page).
    let at = column_pages(&bytes, 1)[1];
    let (header, mut data) = page_at(&bytes, at);
    let last = data.len() - 1;
    data[last] ^= 0x01;
    rewrite_page(&mut bytes, at, &header, &data);
    let bad = put(dir, &format!("crc-bad-{v}.parquet"), &bytes);
    let damaged = reference(&bad, 1000, None);
    assert_ne!(damaged, want, "{v}: the damage changes a value");
    assert_eq!(damaged.rows, want.rows);
    let e = error(
        &[ErrorKind::CorruptData],
        &[
            "CRC-32 mismatch",
            "page 1 (at byte",
            "column \"j\"",
            "row group 0",
        ],
        &bad,
    );
    vec![
        Case::new(
            format!("{v}: {}", "every page with its CRC"),
            Input::Parquet(good.clone()),
            Expect::Rows(want.clone()),
        ),
        Case::new(
            format!("{v}: {}", "every page with its CRC, filter"),
            Input::Parquet(good),
            Expect::Rows(non_null),
        )
        .filter("j >= 0"),
        Case::new(
            format!("{v}: {}", "a page that no longer matches its CRC"),
            Input::Parquet(bad.clone()),
            e,
        ),
        Case::new(
            format!(
                "{v}: {}",
                "a page that no longer matches its CRC, not verified"
            ),
            Input::Parquet(bad),
            Expect::Rows(damaged),
        )
        .checksums(false),
    ]
}

// ---------------------------------------------------------------------------------------------
// Tables: deletion vectors.

/// Delta's inline deletion vector: Z85 of the portable Roaring 64-bit bitmap after its magic.
fn delta_inline(bitmap: &rayquet::task::RoaringTreemap) -> (String, usize) {
    let mut body = 1681511377u32.to_le_bytes().to_vec();
    bitmap.serialize_into(&mut body).unwrap();
    // Z85 encodes groups of 4 bytes.
    while body.len() % 4 != 0 {
        body.push(0);
    }
    let size = body.len();
    (z85::encode(&body), size)
}

/// A Delta table of one 1000-row data file (`i` Int64) whose add action carries an inline
/// deletion vector of `bitmap`, claiming `cardinality` rows.
fn delta_table(
    dir: &Path,
    name: &str,
    bitmap: &rayquet::task::RoaringTreemap,
    cardinality: u64,
) -> PathBuf {
    let root = dir.join(name);
    std::fs::create_dir_all(root.join("_delta_log")).unwrap();
    let schema = Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, true)]));
    let b = RecordBatch::try_new(
        schema,
        vec![Arc::new(Int64Array::from_iter_values(0..1000))],
    )
    .unwrap();
    let data = write(
        &root.join("part-0.parquet"),
        &[b],
        WriterProperties::default(),
    );
    let (dv, size) = delta_inline(bitmap);
    let schema_string = json!({"type": "struct", "fields": [
        {"name": "i", "type": "long", "nullable": true, "metadata": {}}
    ]})
    .to_string();
    let actions = [
        json!({"protocol": {"minReaderVersion": 3, "minWriterVersion": 7,
            "readerFeatures": ["deletionVectors"], "writerFeatures": ["deletionVectors"]}}),
        json!({"metaData": {"id": "00000000-0000-0000-0000-000000000000",
            "format": {"provider": "parquet", "options": {}},
            "schemaString": schema_string, "partitionColumns": [],
            "configuration": {"delta.enableDeletionVectors": "true"},
            "createdTime": 0}}),
        json!({"add": {"path": "part-0.parquet", "partitionValues": {},
            "size": data.len(), "modificationTime": 0, "dataChange": true,
            "stats": json!({"numRecords": 1000}).to_string(),
            "deletionVector": {"storageType": "i", "pathOrInlineDv": dv,
                "sizeInBytes": size, "cardinality": cardinality}}}),
    ];
    let mut log = std::fs::File::create(root.join("_delta_log/00000000000000000000.json")).unwrap();
    for a in actions {
        writeln!(log, "{a}").unwrap();
    }
    root
}

fn delta_cases(dir: &Path) -> Vec<Case> {
    use rayquet::task::RoaringTreemap;
    let mut cases = Vec::new();
    // 2^30 positions (runs: about 200 KB inline), far past the file's 1000 rows.
    let mut huge = RoaringTreemap::new();
    huge.insert_range(0..1 << 30);
    let t = delta_table(dir, "delta-dv-2^30", &huge, 1 << 30);
    let e = error(
        &[ErrorKind::CorruptTable],
        &["position 1073741823; the file has 1000 rows"],
        &t.join("part-0.parquet"),
    );
    cases.push(Case::new(
        "Delta vector of 2^30 positions",
        Input::Delta(t),
        e,
    ));
    // A vector whose cardinality lies.
    let three: RoaringTreemap = [1u64, 5, 7].into_iter().collect();
    let t = delta_table(dir, "delta-dv-cardinality", &three, 5);
    let e = error(
        &[ErrorKind::CorruptTable],
        &["deletes 3 rows; the log says 5"],
        &t.join("part-0.parquet"),
    );
    cases.push(Case::new(
        "Delta vector cardinality 5 for 3",
        Input::Delta(t),
        e,
    ));
    // Positions past the file's rows, the cardinality true.
    let past: RoaringTreemap = [1u64, 1000].into_iter().collect();
    let t = delta_table(dir, "delta-dv-past", &past, 2);
    let e = error(
        &[ErrorKind::CorruptTable],
        &["position 1000; the file has 1000 rows"],
        &t.join("part-0.parquet"),
    );
    cases.push(Case::new(
        "Delta vector past the file's rows",
        Input::Delta(t),
        e,
    ));
    // A sound one: the rows written minus those deleted.
    let t = delta_table(dir, "delta-dv-sound", &three, 3);
    let mut want = Digest::default();
    let kept: Vec<i64> = (0..1000).filter(|i| ![1, 5, 7].contains(i)).collect();
    let schema = Arc::new(Schema::new(vec![Field::new("i", DataType::Int64, true)]));
    want.add(&RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(kept))]).unwrap());
    cases.push(Case::new(
        "Delta vector of 3 rows",
        Input::Delta(t),
        Expect::Rows(want),
    ));
    cases
}

fn iceberg_cases() -> (Vec<Case>, Vec<rayquet_testkit::iceberg_tables::Fixture>) {
    use rayquet_testkit::iceberg_v3::{v3_deletes, Damage};
    let fx = v3_deletes(10, Damage::Huge);
    let puffin = fx
        .delete_files
        .iter()
        .find(|d| d.path.ends_with(".puffin"))
        .unwrap()
        .path
        .clone();
    let name = puffin.rsplit('/').next().unwrap().to_string();
    let e = Expect::Error {
        kinds: vec![ErrorKind::CorruptTable],
        says: vec!["it deletes position 17179869183 of a data file of 10 rows".into()],
        named: name,
    };
    let cases = vec![Case::new(
        "Iceberg vector of 2^34 positions",
        Input::Iceberg(fx.metadata_location.clone()),
        e,
    )];
    (cases, vec![fx])
}

// ---------------------------------------------------------------------------------------------
// The tests.

#[test]
fn hostile_files() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    cases.extend(count_cases(dir.path()));
    cases.extend(rle_cases(dir.path()));
    cases.extend(length_cases(dir.path()));
    cases.extend(levels_cases(dir.path()));
    cases.extend(checksum_cases(dir.path()));
    cases.extend(expanding_cases(dir.path()));
    cases.extend(delta_cases(dir.path()));
    let (iceberg, _fixtures) = iceberg_cases();
    cases.extend(iceberg);
    if let Ok(only) = std::env::var("RAYQUET_HOSTILE_ONLY") {
        cases.retain(|c| c.name.contains(&only));
    }
    let started = Instant::now();
    for case in &cases {
        check(case);
    }
    println!(
        "{} crafted cases in {:.1}s",
        cases.len(),
        started.elapsed().as_secs_f64()
    );
}

/// The commands, through the CLI binary under the same address-space limit: a clean
/// error (exit status 1, the file named, no abort) or the rows.
#[test]
fn the_cli_on_hostile_files() {
    let dir = tempfile::tempdir().unwrap();
    let base = dictionary_file(&dir.path().join("base.parquet"));
    let mut rows = base.clone();
    set_footer_field(&mut rows, &[4, 3], 1 << 36);
    set_footer_field(&mut rows, &[3], 1 << 36);
    let rows = put(dir.path(), "rows-2^36.parquet", &rows);
    let rle = rle_file(dir.path(), "rle.parquet", i32::MAX as i64);
    let big = dir.path().join("dictionary-1MiB.parquet");
    let props = plain_props()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).unwrap()))
        .set_dictionary_page_size_limit(4 << 20)
        .build();
    write_each(&big, repeated_string(10_000, 1 << 20, true), props);
    let runs: [(&Path, &[&str], Option<u64>); 4] = [
        (&rows, &["--filter", "s = 'b'"], None),
        (&rle, &[], None),
        (
            &big,
            &["--string-views", "false", "--filter", "i >= 0"],
            Some(10_000),
        ),
        (&big, &["--string-views", "false"], Some(10_000)),
    ];
    for (path, args, rows) in runs {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_rayquet"));
        cmd.arg("scan")
            .arg(path)
            .args(["--budget", "256M", "--json"])
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        limit_address_space(&mut cmd);
        let out = wait_with_timeout(cmd.spawn().unwrap(), TIMEOUT).expect("a hang");
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let what = format!("rayquet scan {} {args:?}", path.display());
        println!("{what}: {:?} {stderr}", out.status.code());
        match rows {
            None => {
                assert_eq!(out.status.code(), Some(1), "{what}: {stderr}");
                let name = path.file_name().unwrap().to_string_lossy();
                assert!(stderr.contains(name.as_ref()), "{what}: {stderr}");
            }
            Some(n) => {
                assert!(out.status.success(), "{what}: {stderr}");
                let v: Value = serde_json::from_str(stdout.trim()).unwrap();
                assert_eq!(v["rows"].as_u64(), Some(n), "{what}: {stdout}");
            }
        }
    }
}
