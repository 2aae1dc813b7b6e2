//! Damaged Iceberg metadata is an error naming the damaged file, never rows of a table that is
//! not the one on disk (issue 20). Each case damages a fresh copy of a table written with
//! iceberg-rust (`rayquet_testkit::iceberg_tables`) and reads it through rayquet's storage
//! (`load_table`), which checks every manifest list and manifest it reads
//! (`rayquet_iceberg`'s integrity module). Where iceberg-rust's own reader reads the damaged
//! table without an error, the test shows it (rows that differ from the table written), so the
//! check is seen to matter; intact tables read exactly their rows.
use rayquet_testkit::iceberg_tables::{self, Fixture};

use std::path::{Path, PathBuf};

use iceberg::scan::FileScanTask;
use rayquet::{ErrorKind, ScanOptions};
use rayquet_iceberg::{load_table, scan_tasks, TableScan};

/// The fixture: one snapshot of 3 data files (90 rows) in one manifest.
fn table() -> Fixture {
    iceberg_tables::primitives(3, 30, 10)
}

/// The current snapshot's manifest list and its (only) manifest, on local disk.
fn metadata_files(fx: &Fixture) -> (PathBuf, PathBuf) {
    let snapshot = fx.table.metadata().current_snapshot().expect("a snapshot");
    let list = iceberg_tables::local_path(snapshot.manifest_list());
    let manifests = iceberg_tables::runtime()
        .block_on(fx.table.manifest_list_reader(snapshot).load())
        .expect("manifest list");
    assert_eq!(manifests.entries().len(), 1, "one manifest");
    let manifest = iceberg_tables::local_path(&manifests.entries()[0].manifest_path);
    (list, manifest)
}

/// Where an Avro container's blocks start (after the header), found from the sync marker,
/// which also ends the file.
fn blocks_start(bytes: &[u8]) -> usize {
    let sync = &bytes[bytes.len() - 16..];
    let at = bytes
        .windows(16)
        .position(|w| w == sync)
        .expect("the header's sync marker");
    at + 16
}

/// Rewrite the file at `path` with `f`.
fn damage(path: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(path).unwrap();
    f(&mut bytes);
    std::fs::write(path, bytes).unwrap();
}

/// Append an Avro container's blocks again after themselves: valid Avro, every entry twice.
fn duplicate_blocks(b: &mut Vec<u8>) {
    let start = blocks_start(b);
    let blocks = b[start..].to_vec();
    b.extend_from_slice(&blocks);
}

/// Rows rayquet reads from the table at `fx`, loaded through rayquet's storage.
fn rayquet_rows(fx: &Fixture) -> rayquet::Result<usize> {
    let table = load_table(&fx.metadata_location, &ScanOptions::new())?;
    let reader = TableScan::from_table(table).build()?;
    let mut rows = 0;
    for b in reader {
        rows += b?.num_rows();
    }
    Ok(rows)
}

/// iceberg-rust's own reading of the table (its FileIO, its planner): rows, or its error.
fn iceberg_rows(fx: &Fixture) -> Result<usize, String> {
    iceberg_tables::try_to_arrow(&fx.table, None, None, None, true)
        .map(|(_, b)| b.iter().map(|b| b.num_rows()).sum())
        .map_err(|e| e.to_string())
}

/// rayquet must fail with `CorruptTable` naming `file`; returns the message.
fn refused(fx: &Fixture, file: &Path, what: &str) -> String {
    let err = match rayquet_rows(fx) {
        Ok(rows) => panic!("{what}: rayquet read {rows} rows from the damaged table"),
        Err(e) => e,
    };
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    assert_eq!(err.kind(), ErrorKind::CorruptTable, "{what}: {err}");
    assert!(
        err.path().is_some_and(|p| p.contains(&name)),
        "{what}: the error does not name {name}: {err}"
    );
    println!("{what}: {err}");
    err.to_string()
}

#[test]
fn intact_tables_read_their_rows() {
    let fx = table();
    let expected = fx.expected_current().num_rows();
    assert_eq!(expected, 90);
    assert_eq!(rayquet_rows(&fx).unwrap(), expected);
    assert_eq!(iceberg_rows(&fx).unwrap(), expected);
    // Tables with deletes, delete manifests, several snapshots: read as before.
    for fx in [
        iceberg_tables::deletes(24, 8),
        iceberg_tables::partitioned_identity(10),
    ] {
        let expected = fx.expected_current().num_rows();
        assert_eq!(rayquet_rows(&fx).unwrap(), expected, "{}", fx.name);
    }
}

/// The case: a stretch of a manifest duplicated (here its block of entries, appended
/// again after itself). Structurally valid Avro: iceberg-rust reads every data file twice.
#[test]
fn manifest_with_a_duplicated_stretch() {
    let fx = table();
    let (_, manifest) = metadata_files(&fx);
    damage(&manifest, duplicate_blocks);
    assert_eq!(
        iceberg_rows(&fx),
        Ok(180),
        "iceberg-rust reads the entries twice"
    );
    let msg = refused(&fx, &manifest, "duplicated manifest block");
    // Each entry's data file comes back live: found before the counts are compared.
    assert!(msg.contains("is listed twice"), "{msg}");
}

/// A stretch duplicated in the middle of a block: the block's records no longer fill it (or
/// its sync marker moves): refused whatever the stretch.
#[test]
fn manifest_with_a_stretch_duplicated_inside_a_block() {
    let base = table();
    let (_, manifest) = metadata_files(&base);
    let bytes = std::fs::read(&manifest).unwrap();
    let start = blocks_start(&bytes);
    drop(base);
    let len = bytes.len() - 16 - start;
    for (from, n) in [(start + len / 2, 24), (start + 3, 40), (start + len / 3, 1)] {
        let fx = table();
        let (_, manifest) = metadata_files(&fx);
        damage(&manifest, |b| {
            let stretch = b[from..from + n].to_vec();
            b.splice(from + n..from + n, stretch);
        });
        refused(&fx, &manifest, &format!("{n} bytes at {from} duplicated"));
    }
}

/// A manifest list whose block is duplicated lists its manifest twice: iceberg-rust plans
/// every file twice.
#[test]
fn manifest_list_with_a_duplicated_block() {
    let fx = table();
    let (list, _) = metadata_files(&fx);
    damage(&list, duplicate_blocks);
    assert_eq!(
        iceberg_rows(&fx),
        Ok(180),
        "iceberg-rust lists the manifest twice"
    );
    let msg = refused(&fx, &list, "duplicated manifest list block");
    assert!(msg.contains("listed twice"), "{msg}");
}

/// A block that claims no records before the real one: apache-avro stops there, silently, so
/// iceberg-rust finds no data file at all.
#[test]
fn empty_block_and_trailing_bytes() {
    let fx = table();
    let (_, manifest) = metadata_files(&fx);
    damage(&manifest, |b| {
        let start = blocks_start(b);
        let sync = b[b.len() - 16..].to_vec();
        let empty: Vec<u8> = [0u8, 0].iter().copied().chain(sync).collect();
        b.splice(start..start, empty);
    });
    assert_eq!(iceberg_rows(&fx), Ok(0), "iceberg-rust reads no entry");
    let msg = refused(&fx, &manifest, "empty block");
    assert!(msg.contains("claims 0 records"), "{msg}");

    let fx = table();
    let (_, manifest) = metadata_files(&fx);
    damage(&manifest, |b| b.extend_from_slice(&[0; 8]));
    refused(&fx, &manifest, "trailing zero bytes");
}

/// One entry's status byte zeroed (ADDED, 1 = `0x02`, becomes EXISTING, 0): same length, valid
/// Avro, but the counts no longer agree with the manifest list.
#[test]
fn zeroed_status_byte() {
    let fx = table();
    let (_, manifest) = metadata_files(&fx);
    damage(&manifest, |b| {
        let mut at = blocks_start(b);
        // The block's record count and size (varints), then the first entry's status.
        for _ in 0..2 {
            while b[at] & 0x80 != 0 {
                at += 1;
            }
            at += 1;
        }
        assert_eq!(b[at], 0x02, "the first entry is ADDED");
        b[at] = 0;
    });
    let msg = refused(&fx, &manifest, "zeroed status byte");
    assert!(msg.contains("existing files"), "{msg}");
}

/// A plan that lists a data file twice is refused; two disjoint byte-range splits of it are
/// not (they read the file's rows once).
#[test]
fn plans_listing_a_file_twice() {
    let fx = table();
    let tasks = iceberg_tables::plan_tasks(&fx.table, None, None, None, true);
    let twice: Vec<FileScanTask> = tasks.iter().chain(&tasks[..1]).cloned().collect();
    let reader = scan_tasks(twice, Some(&fx.table)).unwrap().build().unwrap();
    let mut rows = 0;
    let mut err = None;
    for b in reader {
        match b {
            Ok(b) => rows += b.num_rows(),
            Err(e) => {
                err = Some(rayquet::Error::from(e));
                break;
            }
        }
    }
    let err = err.expect("the duplicated task is refused");
    assert_eq!(err.kind(), ErrorKind::CorruptTable, "{err}");
    assert_eq!(err.path(), Some(tasks[0].data_file_path.as_str()), "{err}");
    assert!(rows <= 90, "no row read twice before the error ({rows})");

    // The same file as two disjoint splits (at a row group boundary), and a whole other file.
    let t = &tasks[0];
    let local = iceberg_tables::local_path(&t.data_file_path);
    let md = parquet::file::metadata::ParquetMetaDataReader::new()
        .parse_and_finish(&bytes::Bytes::from(std::fs::read(local).unwrap()))
        .unwrap();
    let c = md.row_group(1).column(0);
    let mid = c.dictionary_page_offset().unwrap_or(c.data_page_offset()) as u64;
    let (mut a, mut b) = (t.clone(), t.clone());
    a.length = mid;
    b.start = mid;
    b.length = t.file_size_in_bytes - mid;
    let split = vec![a, b, tasks[1].clone()];
    let got: usize = scan_tasks(split, Some(&fx.table))
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap().num_rows())
        .sum();
    assert_eq!(got, 60);
    // Overlapping splits are not splits.
    let mut c = t.clone();
    c.start = mid / 2;
    c.length = t.file_size_in_bytes - mid / 2;
    let overlap = vec![t.clone(), c];
    let r = scan_tasks(overlap, Some(&fx.table))
        .unwrap()
        .build()
        .unwrap()
        .collect::<Result<Vec<_>, _>>();
    let err = rayquet::Error::from(r.unwrap_err());
    assert_eq!(err.kind(), ErrorKind::CorruptTable, "{err}");
}
