//! The real-writers conformance suite: tables and files written by the writers rayquet's users
//! have (pyiceberg, deltalake, pyarrow, duckdb, polars; pinned in
//! `tests/real_writers/requirements.txt`), read by rayquet and compared with each writer's own
//! read of them.
//!
//! `tests/real_writers/make.py` writes the cases (once per content of make.py and the
//! requirements: the output is cached under the target directory) with a venv it makes itself
//! (`rayquet_testkit::python`; `RAYQUET_PYTHON` may name an interpreter instead). Each case is
//! a `case.json` and the writer's read as an Arrow IPC file (read here by arrow's IPC reader,
//! independent of rayquet). Rows are compared as multisets, with column names and order, and
//! types up to representation only (string, binary and list variants, dictionaries, run-end
//! encoding, Date32 / Date64, "UTC" / "+00:00" / "Etc/UTC", nested field names and
//! nullability).
//!
//! Every failure is reported together at the end. `tests/real_writers/known_failures.txt`
//! lists the cases known to fail (`name  reason`): the test fails on a failure not listed,
//! and on a listed case that passes (remove it from the list), so the list stays exact.
//!
//! `RAYQUET_REAL_WRITERS=prefix` runs only the cases whose name starts with `prefix` (the
//! list is then only checked for those). The full report is also written to
//! `<target>/rayquet-generated/real_writers-report.txt`.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef};
use arrow::ipc::reader::FileReader;
use rayquet::{Expr, Scan, ScanBuilder};
use rayquet_testkit::{python, row_strings, run_with_timeout, Outcome};
use serde_json::Value;

#[path = "real_writers/stats.rs"]
mod stats;

/// Per case: a scan that takes longer has hung.
const CASE_TIMEOUT: Duration = Duration::from_secs(60);
/// Rows shown per difference.
const SHOW: usize = 4;

/// The CLI cases (tests below), named as in known_failures.txt.
const CLI_CASES: [&str; 3] = [
    "cli/out_dictionary_across_files",
    "cli/out_dictionary_across_row_groups",
    "cli/out_no_partial_file_after_error",
];

fn suite_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/real_writers")
}

/// The generated cases (made once per content of make.py and requirements.txt). A failure
/// to make them fails every test of this file, with its message (made once).
fn generated() -> &'static Path {
    generated_in().0.as_path()
}

/// [`generated`], and the time this process spent making (or finding) it.
fn generated_in() -> &'static (PathBuf, Duration) {
    static DIR: OnceLock<Result<(PathBuf, Duration), String>> = OnceLock::new();
    let made = DIR.get_or_init(|| {
        let t = Instant::now();
        std::panic::catch_unwind(|| {
            let suite = suite_dir();
            let make = suite.join("make.py");
            let reqs = suite.join("requirements.txt");
            python::generated("real_writers", &[&make, &reqs], |out| {
                let python = python::venv(&reqs);
                let t = Instant::now();
                let log = python::run_script(&python, &make, &[out.as_os_str()])?;
                eprintln!("make.py: {:.1?}\n{log}", t.elapsed());
                Ok(())
            })
        })
        .map(|dir| (dir, t.elapsed()))
        .map_err(|p| rayquet_testkit::panic_message(p.as_ref()))
    });
    match made {
        Ok(made) => made,
        Err(e) => panic!("{e}"),
    }
}

/// `known_failures.txt`: case name -> reason.
fn known_failures() -> BTreeMap<String, String> {
    let path = suite_dir().join("known_failures.txt");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((name, reason)) => (name.to_string(), reason.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}

/// Only cases whose name starts with `$RAYQUET_REAL_WRITERS`, when set.
fn selected(name: &str) -> bool {
    std::env::var("RAYQUET_REAL_WRITERS").map_or(true, |p| name.starts_with(&p))
}

struct Case {
    name: String,
    kind: String,
    location: String,
    read: Value,
    expected: Option<PathBuf>,
    error: Option<(String, String)>,
    writer: String,
    why: String,
}

fn load_cases(out: &Path) -> Vec<Case> {
    let mut cases = Vec::new();
    let dir = out.join("cases");
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for d in entries {
        let json: Value = serde_json::from_reader(File::open(d.join("case.json")).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        let s = |k: &str| json[k].as_str().unwrap_or_default().to_string();
        let location = if json["location_is_absolute"].as_bool() == Some(true) {
            s("location")
        } else {
            out.join(s("location")).to_string_lossy().into_owned()
        };
        let error = json.get("error").map(|e| {
            (
                e["kind"].as_str().unwrap_or_default().to_string(),
                e["contains"].as_str().unwrap_or_default().to_string(),
            )
        });
        cases.push(Case {
            name: s("name"),
            kind: s("kind"),
            location,
            read: json.get("read").cloned().unwrap_or(Value::Null),
            expected: json
                .get("expected")
                .and_then(Value::as_str)
                .map(|e| d.join(e)),
            error,
            writer: s("writer"),
            why: s("why"),
        });
    }
    cases
}

/// What rayquet read: the reader's schema and the batches.
type Read = (SchemaRef, Vec<RecordBatch>);

/// Read a case with rayquet.
fn read_case(kind: &str, location: &str, read: &Value) -> rayquet::Result<Read> {
    let columns: Option<Vec<String>> = read["columns"]
        .as_array()
        .map(|a| a.iter().map(|c| c.as_str().unwrap().to_string()).collect());
    let filter = read["filter"].as_str().map(Expr::parse_sql).transpose()?;
    fn opts<B: ScanBuilder>(mut b: B, columns: &Option<Vec<String>>, filter: &Option<Expr>) -> B {
        if let Some(c) = columns {
            b = b.columns(c.clone());
        }
        if let Some(f) = filter {
            b = b.filter(f.clone());
        }
        b
    }
    let reader = match kind {
        "parquet" | "dataset" => opts(Scan::new(location)?, &columns, &filter).build()?,
        "iceberg" => {
            let options = rayquet::ScanOptions::new();
            let table = rayquet_iceberg::load_table(location, &options)?;
            let mut snapshot = read["snapshot_id"].as_i64();
            if let Some(ts) = read["as_of_timestamp_ms"].as_i64() {
                // rayquet_iceberg has no as-of-timestamp option: the snapshot current at `ts`
                // by the table's snapshot log (Java's SnapshotUtil.snapshotIdAsOfTime).
                snapshot = table
                    .metadata()
                    .history()
                    .iter()
                    .rfind(|l| l.timestamp_ms <= ts)
                    .map(|l| l.snapshot_id);
            }
            let mut scan = rayquet_iceberg::TableScan::from_table(table).with_options(options);
            if let Some(id) = snapshot {
                scan = scan.snapshot_id(id);
            }
            if let Some(r) = read["ref"].as_str() {
                scan = scan.reference(r);
            }
            opts(scan, &columns, &filter).build()?
        }
        "delta" => {
            let mut scan = rayquet_delta::TableScan::open(location);
            if let Some(v) = read["version"].as_u64() {
                scan = scan.version(v);
            }
            opts(scan, &columns, &filter).build()?
        }
        other => panic!("unknown case kind {other:?}"),
    };
    let schema = reader.schema();
    let mut batches = Vec::new();
    for b in reader {
        batches.push(b.map_err(rayquet::Error::from)?);
    }
    Ok((schema, batches))
}

fn read_ipc(path: &Path) -> Read {
    let reader = FileReader::try_new(File::open(path).unwrap(), None)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (schema, batches)
}

/// `dt` up to representation: Utf8 for every string type, Binary for every binary type,
/// dictionaries and run-end encoding as their values, List for every variable-size list,
/// Date32 for Date64 (whole days, as Parquet stores dates), UTC spelled "+00:00"; nested
/// fields nullable (map keys not), named as arrow-rs names them.
fn normalized(dt: &DataType) -> DataType {
    use DataType::*;
    let item = |f: &Field| Arc::new(Field::new("item", normalized(f.data_type()), true));
    match dt {
        Utf8 | LargeUtf8 | Utf8View => Utf8,
        Binary | LargeBinary | BinaryView => Binary,
        // Parquet stores dates as days: a Date64 read from Parquet holds whole days.
        Date64 => Date32,
        Dictionary(_, v) => normalized(v),
        RunEndEncoded(_, v) => normalized(v.data_type()),
        List(f) | LargeList(f) | ListView(f) | LargeListView(f) => List(item(f)),
        FixedSizeList(f, n) => FixedSizeList(item(f), *n),
        Struct(fields) => Struct(
            fields
                .iter()
                .map(|f| Field::new(f.name(), normalized(f.data_type()), true))
                .collect::<Fields>(),
        ),
        Map(entries, sorted) => {
            let Struct(kv) = entries.data_type() else {
                return dt.clone();
            };
            let kv: Fields = vec![
                Field::new("key", normalized(kv[0].data_type()), false),
                Field::new("value", normalized(kv[1].data_type()), true),
            ]
            .into();
            Map(Arc::new(Field::new("entries", Struct(kv), false)), *sorted)
        }
        Timestamp(unit, Some(tz)) if matches!(tz.as_ref(), "UTC" | "+00:00" | "Etc/UTC" | "Z") => {
            Timestamp(*unit, Some("+00:00".into()))
        }
        other => other.clone(),
    }
}

/// `batches` (of `schema`) as one batch with every column cast to its normalized type.
fn normalize(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch, String> {
    let whole = arrow::compute::concat_batches(schema, batches)
        .map_err(|e| format!("cannot concatenate the batches: {e}"))?;
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (f, c) in schema.fields().iter().zip(whole.columns()) {
        let to = normalized(f.data_type());
        let c = if &to == c.data_type() {
            c.clone()
        } else {
            arrow::compute::cast(c, &to).map_err(|e| {
                format!(
                    "column {}: cannot cast {} to {to}: {e}",
                    f.name(),
                    c.data_type()
                )
            })?
        };
        fields.push(Field::new(f.name(), to, true));
        columns.push(c);
    }
    RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        columns,
        &RecordBatchOptions::new().with_row_count(Some(whole.num_rows())),
    )
    .map_err(|e| e.to_string())
}

/// The differences between what the writer read and what rayquet read (empty: none).
fn compare(expected: &Read, actual: &Read) -> Vec<String> {
    let mut diffs = Vec::new();
    let names = |s: &SchemaRef| {
        s.fields()
            .iter()
            .map(|f| f.name().clone())
            .collect::<Vec<_>>()
    };
    let (en, an) = (names(&expected.0), names(&actual.0));
    if en != an {
        diffs.push(format!("columns: expected {en:?}, got {an:?}"));
    }
    for b in &actual.1 {
        if b.schema().fields() != actual.0.fields() {
            diffs.push(format!(
                "a batch's schema differs from the reader's: {:?} vs {:?}",
                b.schema(),
                actual.0
            ));
            break;
        }
    }
    for ef in expected.0.fields() {
        if let Ok(af) = actual.0.field_with_name(ef.name()) {
            let (et, at) = (normalized(ef.data_type()), normalized(af.data_type()));
            if et != at {
                diffs.push(format!(
                    "column {}: type expected {}, got {}",
                    ef.name(),
                    ef.data_type(),
                    af.data_type()
                ));
            }
        }
    }
    let e = match normalize(&expected.0, &expected.1) {
        Ok(b) => b,
        Err(err) => {
            diffs.push(format!("expected: {err}"));
            return diffs;
        }
    };
    let a = match normalize(&actual.0, &actual.1) {
        Ok(b) => b,
        Err(err) => {
            diffs.push(format!("read: {err}"));
            return diffs;
        }
    };
    // Rows compare over the columns both have, in the expected order.
    let common: Vec<&String> = en.iter().filter(|n| an.contains(n)).collect();
    let pick = |b: &RecordBatch| -> RecordBatch {
        let idx: Vec<usize> = common
            .iter()
            .map(|n| b.schema().index_of(n).unwrap())
            .collect();
        b.project(&idx).unwrap()
    };
    let mut er = row_strings(&pick(&e));
    let mut ar = row_strings(&pick(&a));
    er.sort();
    ar.sort();
    if er != ar {
        let (missing, extra) = multiset_diff(&er, &ar);
        let mut msg = format!(
            "rows: expected {}, got {} ({} missing, {} extra; columns {})",
            er.len(),
            ar.len(),
            missing.len(),
            extra.len(),
            common
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("|")
        );
        for r in missing.iter().take(SHOW) {
            msg.push_str(&format!("\n      missing: {}", clip(r)));
        }
        for r in extra.iter().take(SHOW) {
            msg.push_str(&format!("\n      extra:   {}", clip(r)));
        }
        // Which columns: each column's values compared alone, as multisets.
        if common.len() > 1 {
            let (pe, pa) = (pick(&e), pick(&a));
            for (i, name) in common.iter().enumerate() {
                let col = |b: &RecordBatch| {
                    let mut v = row_strings(&b.project(&[i]).unwrap());
                    v.sort();
                    v
                };
                let (ev, av) = (col(&pe), col(&pa));
                if ev != av {
                    let (m, x) = multiset_diff(&ev, &av);
                    msg.push_str(&format!(
                        "\n      column {name}: {} value(s) missing, {} extra; e.g. expected {:?}, got {:?}",
                        m.len(),
                        x.len(),
                        m.iter().take(2).map(|s| clip(s)).collect::<Vec<_>>(),
                        x.iter().take(2).map(|s| clip(s)).collect::<Vec<_>>()
                    ));
                }
            }
        }
        diffs.push(msg);
    }
    diffs
}

fn clip(s: &str) -> String {
    const MAX: usize = 400;
    if s.len() <= MAX {
        return s.to_string();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Rows of sorted `e` not in sorted `a` (counting duplicates), and the reverse.
fn multiset_diff(e: &[String], a: &[String]) -> (Vec<String>, Vec<String>) {
    let (mut i, mut j) = (0, 0);
    let (mut missing, mut extra) = (Vec::new(), Vec::new());
    while i < e.len() || j < a.len() {
        match (e.get(i), a.get(j)) {
            (Some(x), Some(y)) if x == y => {
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x < y => {
                missing.push(x.clone());
                i += 1;
            }
            (Some(_), Some(y)) => {
                extra.push(y.clone());
                j += 1;
            }
            (Some(x), None) => {
                missing.push(x.clone());
                i += 1;
            }
            (None, Some(y)) => {
                extra.push(y.clone());
                j += 1;
            }
            (None, None) => break,
        }
    }
    (missing, extra)
}

/// Run one case: `Ok` when rayquet agrees with the writer, else what differed.
fn run_case(case: &Case) -> Result<(), String> {
    let (kind, location, read) = (case.kind.clone(), case.location.clone(), case.read.clone());
    let outcome = run_with_timeout(CASE_TIMEOUT, move || read_case(&kind, &location, &read));
    let result = match outcome {
        Outcome::Done(r) => r,
        Outcome::Panicked(p) => return Err(format!("panicked: {p}")),
        Outcome::TimedOut => return Err(format!("hung (no result in {CASE_TIMEOUT:?})")),
    };
    match (&case.error, result) {
        (Some((kind, contains)), Err(e)) => {
            let got = format!("{:?}", e.kind());
            let text = e.to_string();
            if &got == kind && text.to_lowercase().contains(&contains.to_lowercase()) {
                Ok(())
            } else {
                Err(format!(
                    "expected a {kind} error mentioning {contains:?}, got {got}: {text}"
                ))
            }
        }
        (Some((kind, contains)), Ok((schema, batches))) => {
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            Err(format!(
                "expected a {kind} error mentioning {contains:?}, read {rows} rows of {}",
                schema_text(&schema)
            ))
        }
        (None, Err(e)) => Err(format!("error ({:?}): {e}", e.kind())),
        (None, Ok(actual)) => {
            let expected = read_ipc(case.expected.as_ref().expect("an expected file"));
            let diffs = compare(&expected, &actual);
            if diffs.is_empty() {
                Ok(())
            } else {
                Err(diffs.join("\n    "))
            }
        }
    }
}

fn schema_text(s: &Schema) -> String {
    s.fields()
        .iter()
        .map(|f| format!("{}: {}", f.name(), f.data_type()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The report's verdict over `results` (name -> outcome) against the known failures:
/// `Err` with what is wrong with the list (unexpected failures, listed cases that pass).
fn judge(
    results: &BTreeMap<String, (String, Result<(), String>)>,
    known: &BTreeMap<String, String>,
    all_names: &BTreeSet<String>,
    partial: bool,
) -> (String, Result<(), String>) {
    let mut report = String::new();
    let mut unexpected = Vec::new();
    let mut fixed = Vec::new();
    let failed = results.values().filter(|(_, r)| r.is_err()).count();
    for (name, (writer, r)) in results {
        match (r, known.get(name)) {
            (Err(msg), listed) => {
                let tag = if listed.is_some() { "known" } else { "NEW" };
                report.push_str(&format!("FAIL [{tag}] {name}  ({writer})\n    {msg}\n"));
                if listed.is_none() {
                    unexpected.push(name.clone());
                }
            }
            (Ok(()), Some(_)) => fixed.push(name.clone()),
            (Ok(()), None) => {}
        }
    }
    let stale: Vec<&String> = known
        .keys()
        .filter(|k| !all_names.contains(*k) && !partial)
        .collect();
    report.push_str(&format!(
        "\n{} cases: {} passed, {failed} failed ({} listed in known_failures.txt, {} not)\n",
        results.len(),
        results.len() - failed,
        failed - unexpected.len(),
        unexpected.len()
    ));
    let mut problems = Vec::new();
    if !unexpected.is_empty() {
        problems.push(format!(
            "{} case(s) fail that known_failures.txt does not list:\n  {}",
            unexpected.len(),
            unexpected.join("\n  ")
        ));
    }
    if !fixed.is_empty() {
        problems.push(format!(
            "{} case(s) listed in known_failures.txt now pass (remove them from the list):\n  {}",
            fixed.len(),
            fixed.join("\n  ")
        ));
    }
    if !stale.is_empty() {
        problems.push(format!(
            "known_failures.txt lists cases that do not exist:\n  {}",
            stale
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n  ")
        ));
    }
    let verdict = if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    };
    (report, verdict)
}

#[test]
fn real_writers() {
    let (out, generated_in) = generated_in();
    let cases = load_cases(out);
    assert!(
        cases.len() > 100,
        "only {} cases in {}",
        cases.len(),
        out.display()
    );
    let known = known_failures();
    let mut all_names: BTreeSet<String> = cases.iter().map(|c| c.name.clone()).collect();
    all_names.extend(CLI_CASES.iter().map(|s| s.to_string()));
    let t = Instant::now();
    let mut results = BTreeMap::new();
    let mut partial = false;
    for case in &cases {
        if !selected(&case.name) {
            partial = true;
            continue;
        }
        let r = run_case(case).map_err(|e| format!("{e}\n    ({})", case.why));
        results.insert(case.name.clone(), (case.writer.clone(), r));
    }
    let known_here: BTreeMap<String, String> = known
        .into_iter()
        .filter(|(k, _)| !CLI_CASES.contains(&k.as_str()) && (!partial || selected(k)))
        .collect();
    let (report, verdict) = judge(&results, &known_here, &all_names, partial);
    let report = format!(
        "{report}venv and cases made or found in {generated_in:.1?} ({}), read in {:.1?}\n",
        out.display(),
        t.elapsed()
    );
    let path = python::target_dir().join("rayquet-generated/real_writers-report.txt");
    let _ = std::fs::write(&path, &report);
    eprintln!("{report}(this report: {})", path.display());
    if let Err(problems) = verdict {
        panic!("{problems}");
    }
}

/// The column statistics the table crates plan with hold on every Iceberg and Delta table the
/// real writers made (the current snapshot or version, read whole): see `stats`.
#[test]
fn real_writer_statistics_bound_the_rows() {
    let (out, _) = generated_in();
    let mut problems = Vec::new();
    let (mut tables, mut checked) = (0, 0);
    for case in load_cases(out) {
        let whole = case.read.as_object().is_none_or(|r| r.is_empty());
        let table = matches!(case.kind.as_str(), "iceberg" | "delta");
        let Some(expected) = case.expected.as_ref().filter(|_| table && whole) else {
            continue;
        };
        if !selected(&case.name) || case.error.is_some() {
            continue;
        }
        let files = match stats::planned(&case.kind, &case.location) {
            Ok(f) => f,
            // Reading the table is the other test's: it knows the known failures.
            Err(_) => continue,
        };
        let (_, batches) = read_ipc(expected);
        let (found, n) = stats::check(&files, &batches);
        tables += 1;
        checked += n;
        problems.extend(found.into_iter().map(|p| format!("{}: {p}", case.name)));
    }
    eprintln!("statistics of {tables} tables: {checked} bounds and counts checked");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    if std::env::var("RAYQUET_REAL_WRITERS").is_err() {
        assert!(
            tables >= 20 && checked >= 100,
            "{tables} tables, {checked} checked"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The CLI's --out (an Arrow IPC file) over dictionary columns whose dictionary changes.

/// Judge one CLI case by known_failures.txt.
fn judge_cli(name: &str, result: Result<(), String>) {
    assert!(CLI_CASES.contains(&name));
    if !selected(name) {
        return;
    }
    let known = known_failures();
    match (result, known.get(name)) {
        (Ok(()), None) => {}
        (Ok(()), Some(_)) => panic!("{name} passes: remove it from known_failures.txt"),
        (Err(e), Some(reason)) => eprintln!("FAIL [known] {name}: {e}\n    (listed: {reason})"),
        (Err(e), None) => panic!("{name}: {e}"),
    }
}

/// `rayquet scan INPUTS --out OUT`, then OUT's rows against `expected` (pyarrow's read).
fn cli_out(inputs: &[PathBuf], expected: &Path) -> Result<(), String> {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out.arrow");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rayquet"));
    cmd.arg("scan")
        .args(inputs)
        .arg("--out")
        .arg(&out)
        .arg("--json");
    let run = cmd.output().expect("run rayquet");
    if !run.status.success() {
        let partial = if out.exists() {
            format!(
                "; it left a partial {} ({} bytes)",
                out.display(),
                out.metadata().map_or(0, |m| m.len())
            )
        } else {
            String::new()
        };
        return Err(format!(
            "`rayquet scan ... --out` failed ({}): {}{partial}",
            run.status,
            String::from_utf8_lossy(&run.stderr).trim()
        ));
    }
    let actual = std::panic::catch_unwind(|| read_ipc(&out)).map_err(|p| {
        format!(
            "the --out file cannot be read: {}",
            rayquet_testkit::panic_message(p.as_ref())
        )
    })?;
    let diffs = compare(&read_ipc(expected), &actual);
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("\n    "))
    }
}

#[test]
fn cli_out_dictionary_across_files() {
    let d = generated().join("cli");
    let r = cli_out(
        &[d.join("cat-0.parquet"), d.join("cat-1.parquet")],
        &d.join("cat-files.expected.arrow"),
    );
    judge_cli("cli/out_dictionary_across_files", r);
}

#[test]
fn cli_out_dictionary_across_row_groups() {
    let d = generated().join("cli");
    let r = cli_out(
        &[d.join("cat-row-groups.parquet")],
        &d.join("cat-row-groups.expected.arrow"),
    );
    judge_cli("cli/out_dictionary_across_row_groups", r);
}

/// A scan that fails part way (a damaged row group) fails the command and leaves no output.
#[test]
fn cli_out_no_partial_file_after_error() {
    let d = generated().join("cli");
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out.arrow");
    let run = Command::new(env!("CARGO_BIN_EXE_rayquet"))
        .arg("scan")
        .arg(d.join("damaged.parquet"))
        .arg("--out")
        .arg(&out)
        .arg("--json")
        .output()
        .expect("run rayquet");
    let r = if run.status.success() {
        Err("`rayquet scan damaged.parquet --out` succeeded on a damaged file".to_string())
    } else if out.exists() {
        Err(format!(
            "`rayquet scan --out` failed ({}) but left {} ({} bytes): {}",
            run.status,
            out.display(),
            out.metadata().map_or(0, |m| m.len()),
            String::from_utf8_lossy(&run.stderr).trim()
        ))
    } else {
        Ok(())
    };
    judge_cli("cli/out_no_partial_file_after_error", r);
}
