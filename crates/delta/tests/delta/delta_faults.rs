//! Delta deletion vectors that are missing or corrupt: the scan ends with an error naming the
//! deletion vector file, and no row it deletes is ever delivered (rows delivered before the
//! error are rows of the table's latest version). The table is written with delta-kernel by
//! the fixture harness (`rayquet_testkit::delta_tables`, `dv_fixture`: five files, four of them
//! with deletion vectors, one DV file shared at four offsets).
use rayquet::ScanBuilder;
use rayquet_testkit::delta_tables;

use std::collections::HashMap;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::Int64Type;
use rayquet_delta::TableScan;

use delta_tables::dv_fixture;

/// The ids of `batches` (column `id`) with their counts.
fn ids(batches: &[RecordBatch]) -> HashMap<Option<i64>, usize> {
    let mut m = HashMap::new();
    for b in batches {
        let col = b.column_by_name("id").expect("id column");
        let col = col.as_primitive::<Int64Type>();
        for i in 0..col.len() {
            *m.entry(col.is_valid(i).then(|| col.value(i))).or_default() += 1;
        }
    }
    m
}

#[test]
fn missing_or_corrupt_deletion_vectors_are_errors_naming_them() {
    for corrupt in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let f = dv_fixture(&dir.path().join("dv"));
        let allowed = ids(&f.expected().batches);
        let dvs: Vec<_> = std::fs::read_dir(&f.root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                let n = p.file_name().unwrap().to_string_lossy();
                n.starts_with("deletion_vector_") && n.ends_with(".bin")
            })
            .collect();
        assert!(!dvs.is_empty(), "the fixture wrote deletion vector files");
        // Intact, the table reads as expected (the rows the fixture kept).
        let ok = TableScan::open(f.url.as_str())
            .to_scan()
            .unwrap()
            .build()
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        assert_eq!(ids(&ok), allowed, "the intact table");

        for dv in &dvs {
            if corrupt {
                let len = std::fs::metadata(dv).unwrap().len() as usize;
                std::fs::write(dv, vec![0x5a; len]).unwrap();
            } else {
                std::fs::remove_file(dv).unwrap();
            }
        }
        let names: Vec<String> = dvs
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
            .collect();
        for batch_size in [1, 4, 1024] {
            let what = format!("corrupt={corrupt}, batch_size={batch_size}");
            let reader = TableScan::open(f.url.as_str())
                .to_scan()
                .unwrap()
                .batch_size(batch_size)
                .build();
            let mut got = Vec::new();
            let err = match reader {
                Err(e) => e,
                Ok(r) => {
                    let mut err = None;
                    for item in r {
                        match item {
                            Ok(b) => got.push(b),
                            Err(e) => {
                                err = Some(rayquet::Error::from(e));
                                break;
                            }
                        }
                    }
                    err.unwrap_or_else(|| panic!("{what}: the scan succeeded"))
                }
            };
            assert!(
                names.iter().any(|n| err.to_string().contains(n)),
                "{what}: the error does not name a deletion vector file ({names:?}): {err}"
            );
            // Nothing delivered before the error is a deleted row.
            for (id, n) in ids(&got) {
                assert!(
                    allowed.get(&id).is_some_and(|&m| n <= m),
                    "{what}: row id {id:?} delivered {n} times, though deleted"
                );
            }
            println!(
                "{what}: {} rows before: {err}",
                ids(&got).values().sum::<usize>()
            );
        }
    }
}
