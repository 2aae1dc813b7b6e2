//! Damaged Delta logs are an error naming the damaged file, never rows of a table that is not
//! the one on disk (issue 20). Each case damages a fresh table written with delta-kernel
//! (`rayquet_testkit::delta_tables::TableWriter`) and reads it with rayquet's `TableScan` and
//! with delta-kernel's own scan on `RayquetEngine` (whose log reads rayquet checks). Where the
//! kernel's default engine reads the damaged table without an error, the test shows it (a row
//! count that differs from the table written), so the check is seen to matter. Valid variations
//! (an action the reader does not know, a blank line) read exactly the table's rows.
use rayquet_testkit::delta_tables::{
    self, dv_fixture, read_table, read_table_with, simple_rows, simple_schema, NewFile,
    ReadOptions, TableWriter,
};

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayquet::{ErrorKind, ScanOptions};
use rayquet_delta::{RayquetEngine, TableScan};

/// A table of two files (30 rows each) at version 1, the first removed at version 2: 30 rows.
struct Table {
    _dir: tempfile::TempDir,
    root: PathBuf,
    url: url::Url,
    /// The paths of the two files, as committed.
    files: Vec<String>,
    expected: usize,
}

fn table() -> Table {
    let dir = tempfile::tempdir().unwrap();
    let mut w = TableWriter::create(&dir.path().join("t"), simple_schema(), &[], &[]);
    let files = w.append(vec![
        NewFile::new(simple_rows(0, 30), 10),
        NewFile::new(simple_rows(100, 30), 10),
    ]);
    assert_eq!(w.remove(&files[..1]), 2);
    let f = w.finish("integrity");
    Table {
        root: f.root.clone(),
        url: f.url.clone(),
        expected: f.expected().num_rows(),
        files,
        _dir: dir,
    }
}

/// The commit file of `version` under `root`.
fn commit(root: &Path, version: u64) -> PathBuf {
    root.join("_delta_log").join(format!("{version:020}.json"))
}

/// Rewrite the text of the file at `path` with `f`.
fn damage(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    f(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

/// The offset of `needle` in `hay`, after `from`.
fn find(hay: &[u8], needle: &str, from: usize) -> usize {
    from + hay[from..]
        .windows(needle.len())
        .position(|w| w == needle.as_bytes())
        .unwrap_or_else(|| panic!("{needle:?} not found"))
}

/// Rows rayquet's `TableScan` reads.
fn rayquet_rows(url: &url::Url) -> rayquet::Result<usize> {
    let mut rows = 0;
    for b in TableScan::open(url.as_str()).build()? {
        rows += b?.num_rows();
    }
    Ok(rows)
}

/// Rows delta-kernel's default engine reads (its scan, its log reading), or its error.
fn kernel_rows(url: &url::Url) -> Result<usize, String> {
    read_table(url, &ReadOptions::default())
        .map(|r| r.num_rows())
        .map_err(|e| delta_tables::error_message(&e))
}

/// Both rayquet's `TableScan` and the kernel's scan on `RayquetEngine` must fail, naming
/// `file` (rayquet's error: `CorruptTable` with the file as its path).
fn refused(url: &url::Url, file: &Path, what: &str) {
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    match rayquet_rows(url) {
        Ok(rows) => panic!("{what}: rayquet read {rows} rows from the damaged table"),
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::CorruptTable, "{what}: {e}");
            assert!(
                e.path().is_some_and(|p| p.ends_with(&name)),
                "{what}: the error does not name {name}: {e}"
            );
            println!("{what}: {e}");
        }
    }
    let engine: Arc<dyn delta_kernel::Engine> =
        RayquetEngine::for_table(url.as_str(), &ScanOptions::new()).unwrap();
    match read_table_with(engine, url, &ReadOptions::default()) {
        Ok(r) => panic!(
            "{what}: the kernel on RayquetEngine read {} rows",
            r.num_rows()
        ),
        Err(e) => {
            let msg = delta_tables::error_message(&e);
            assert!(msg.contains(&name), "{what}: RayquetEngine: {msg}");
        }
    }
}

#[test]
fn intact_and_valid_variations_read_the_table() {
    let t = table();
    assert_eq!(t.expected, 30);
    assert_eq!(rayquet_rows(&t.url).unwrap(), 30);
    assert_eq!(kernel_rows(&t.url), Ok(30));
    // Readers must ignore actions they do not know, and a blank line holds none.
    damage(&commit(&t.root, 2), |b| {
        b.extend_from_slice(b"{\"futureAction\":{\"x\":1,\"y\":[1,2]}}\n\n")
    });
    assert_eq!(rayquet_rows(&t.url).unwrap(), 30);
    assert_eq!(kernel_rows(&t.url), Ok(30));
}

/// The issue's case: a run of zeroed bytes in a commit file. Inside the key `"remove"` it makes
/// the remove an unknown action, which the kernel ignores: the removed file comes back.
#[test]
fn zeroed_run_in_a_commit_resurrects_a_file_for_the_kernel_not_for_rayquet() {
    let t = table();
    let file = commit(&t.root, 2);
    damage(&file, |b| {
        let at = find(b, "\"remove\"", 0);
        b[at + 3..at + 6].fill(0);
    });
    assert_eq!(
        kernel_rows(&t.url),
        Ok(60),
        "the default engine reads 60 rows"
    );
    refused(&t.url, &file, "zeroed run in \"remove\"");
}

#[test]
fn damaged_commit_lines_are_refused() {
    type Damage = fn(&mut Vec<u8>, &Table);
    let cases: Vec<(&str, u64, Damage)> = vec![
        ("NUL inside remove.path", 2, |b, _| {
            let at = find(b, "\"path\":\"", find(b, "\"remove\"", 0)) + 9;
            b[at] = 0;
        }),
        ("a line of NUL bytes", 2, |b, _| {
            let end = find(b, "\n", 0);
            b[..end].fill(0);
        }),
        ("a line that is not JSON", 2, |b, _| {
            b.extend_from_slice(b"this is not json\n")
        }),
        ("two lines merged into one", 2, |b, _| {
            let at = find(b, "\n", 0);
            b.remove(at);
        }),
        ("an add of one path twice in a commit", 1, |b, _| {
            let start = find(b, "{\"add\"", 0);
            let end = find(b, "\n", start) + 1;
            let line = b[start..end].to_vec();
            b.extend_from_slice(&line);
        }),
        ("a sidecar action in a commit", 2, |b, _| {
            b.extend_from_slice(
                b"{\"sidecar\":{\"path\":\"x.parquet\",\"sizeInBytes\":1,\"modificationTime\":0}}\n",
            )
        }),
        ("two metaData actions in a commit", 0, |b, _| {
            let start = find(b, "{\"metaData\"", 0);
            let end = find(b, "\n", start) + 1;
            let line = b[start..end].to_vec();
            b.extend_from_slice(&line);
        }),
        ("a commit truncated in the middle of a line", 1, |b, t| {
            let at = find(b, &t.files[1], 0);
            b.truncate(at);
        }),
    ];
    for (what, version, f) in cases {
        let t = table();
        let file = commit(&t.root, version);
        damage(&file, |b| f(b, &t));
        let kernel = kernel_rows(&t.url);
        println!("{what}: the default engine gives {kernel:?}");
        refused(&t.url, &file, what);
    }
}

/// A data file live twice: the commit adds a file again without its deletion vector, while the
/// version with the deletion vector is not removed. The kernel keys live files by path and
/// deletion vector, so it keeps both and reads the file's rows twice; the protocol keys them by
/// path. rayquet refuses the table, naming the file.
#[test]
fn a_data_file_live_twice_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let f = dv_fixture(&dir.path().join("dv"));
    let (path, model) = f
        .files
        .iter()
        .find(|(_, m)| !m.deleted.is_empty() && m.deleted.len() < m.rows.num_rows())
        .expect("a file with a deletion vector");
    // Its first add (no deletion vector yet), committed again as a new version.
    let first = std::fs::read_to_string(commit(&f.root, 1)).unwrap();
    let add = first
        .lines()
        .find(|l| l.starts_with("{\"add\"") && l.contains(&format!("\"path\":\"{path}\"")))
        .expect("the file's first add");
    std::fs::write(commit(&f.root, f.latest + 1), format!("{add}\n")).unwrap();
    let expected = f.expected().num_rows();
    let kernel = kernel_rows(&f.url).unwrap();
    assert_eq!(
        kernel,
        expected + model.rows.num_rows(),
        "the kernel reads the file's rows with and without its deletion vector"
    );
    let err = rayquet_rows(&f.url).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::CorruptTable, "{err}");
    assert!(err.path().is_some_and(|p| p.ends_with(path)), "{err}");
    assert!(err.to_string().contains("twice"), "{err}");
    println!("a data file live twice: {err}");
}

/// Copy the directory tree `from` to `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}

/// A v2 checkpoint in JSON (golden table `v2-checkpoint-json`, written by Delta Lake): a
/// line that does not parse, and a run of zeroed bytes in a `sidecar` key (which makes it an
/// unknown action the kernel ignores, dropping that sidecar's files), are refused naming the
/// checkpoint; the intact copy reads the table's rows.
#[test]
fn damaged_json_checkpoint_lines_are_refused() {
    let golden = delta_tables::golden_table_path("v2-checkpoint-json");
    let checkpoint = |root: &Path| {
        std::fs::read_dir(root.join("_delta_log"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| {
                let name = p.file_name().unwrap().to_string_lossy();
                name.contains(".checkpoint.") && name.ends_with(".json") && !name.starts_with('.')
            })
            .expect("the JSON checkpoint")
    };
    let copy = || {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("t");
        copy_dir(&golden, &root);
        let url = delta_tables::dir_url(&root);
        (dir, root, url)
    };
    let (_dir, _, url) = copy();
    let expected = kernel_rows(&url).unwrap();
    assert!(expected > 0);
    assert_eq!(rayquet_rows(&url).unwrap(), expected);

    type Damage = fn(&mut Vec<u8>);
    let cases: Vec<(&str, Damage)> = vec![
        ("a zeroed run in a sidecar key", |b| {
            let at = find(b, "{\"sidecar\"", 0);
            b[at + 3..at + 6].fill(0);
        }),
        ("a checkpoint line that is not JSON", |b| {
            let at = find(b, "\n", 0) + 1;
            b.splice(at..at, *b"{\"add\":{\"path\":\n");
        }),
        ("a commitInfo action in a checkpoint", |b| {
            b.extend_from_slice(b"{\"commitInfo\":{\"operation\":\"WRITE\"}}\n")
        }),
    ];
    for (what, f) in cases {
        let (_dir, root, url) = copy();
        let file = checkpoint(&root);
        damage(&file, f);
        println!("{what}: the default engine gives {:?}", kernel_rows(&url));
        refused(&url, &file, what);
    }
}

/// A column of a type the Delta protocol's newer or experimental features define and
/// delta-kernel 0.29 does not read, where rayquet cannot stand in for it (here a list of
/// `timestamp_nanos`: top-level and struct fields of that type are read, see `nanos`):
/// `Unsupported` naming the type, never `CorruptTable` (the log is valid).
#[test]
fn a_type_the_kernel_lacks_is_unsupported_not_corrupt() {
    let t = table();
    damage(&commit(&t.root, 0), |b| {
        let text = String::from_utf8(std::mem::take(b)).unwrap();
        // `score` is a double in the schema string (escaped JSON inside the metaData action).
        let changed = text.replacen(
            r#"\"name\":\"score\",\"type\":\"double\""#,
            r#"\"name\":\"score\",\"type\":{\"type\":\"array\",\"elementType\":\"timestamp_nanos\",\"containsNull\":true}"#,
            1,
        );
        assert_ne!(changed, text, "the schema string has the score column");
        *b = changed.into_bytes();
    });
    let e = rayquet_rows(&t.url).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("timestamp_nanos"), "{e}");
}
