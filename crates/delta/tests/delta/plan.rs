//! A planned scan read elsewhere: `TableScan::plan` replays the log on one side, the plan and
//! every unit go through JSON, `ScanPlan::scan` reads them with fresh options on the other.
//! The rows equal the fixtures' independent expectation (what was written, minus what was
//! deleted), as a local scan's do: deletion vectors, column mapping (by name and by id),
//! partition values through the kernel's transform, filters.

use rayquet::{col, ScanBuilder, ScanOptions};
use rayquet_delta::{FileUnit, ScanPlan, TableScan};
use rayquet_testkit::delta_tables::{column_mapping_fixture, compare_tables, dv_fixture, Fixture};

/// `scan` planned, shipped through JSON and read with fresh options: the schema, the batches
/// and the number of units (and of units with a deletion vector).
fn shipped(
    scan: TableScan,
) -> (
    arrow::datatypes::SchemaRef,
    Vec<arrow::array::RecordBatch>,
    usize,
    usize,
) {
    let planned = scan.plan().expect("plan");
    let plan: ScanPlan =
        serde_json::from_str(&serde_json::to_string(&planned.plan).unwrap()).unwrap();
    let units: Vec<FileUnit> = planned
        .units
        .map(|u| {
            let json = serde_json::to_string(&u.expect("unit")).unwrap();
            serde_json::from_str(&json).unwrap()
        })
        .collect();
    let (n, with_dv) = (
        units.len(),
        units.iter().filter(|u| u.deletion_vector.is_some()).count(),
    );
    let reader = plan
        .scan(
            futures::stream::iter(units.into_iter().map(Ok)),
            ScanOptions::new().batch_size(11),
        )
        .expect("scan")
        .build()
        .expect("build");
    let schema = reader.schema();
    let batches = reader.map(|b| b.expect("batch")).collect();
    (schema, batches, n, with_dv)
}

fn check(f: &Fixture) -> usize {
    let (schema, batches, units, with_dv) = shipped(TableScan::open(f.url.as_str()));
    assert!(units > 0, "{}", f.name);
    let e = f.expected();
    compare_tables(&e.schema, &e.batches, &schema, &batches)
        .unwrap_or_else(|err| panic!("{}: {err}", f.name));
    with_dv
}

#[test]
fn shipped_units_keep_deletion_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let f = dv_fixture(&dir.path().join("dv"));
    assert!(check(&f) > 0, "the fixture has files with deletion vectors");
}

#[test]
fn shipped_units_keep_column_mapping() {
    let dir = tempfile::tempdir().unwrap();
    for mode in ["name", "id"] {
        let f = column_mapping_fixture(&dir.path().join(mode), mode);
        check(&f);
    }
}

#[test]
fn shipped_units_keep_filters_and_projection() {
    let dir = tempfile::tempdir().unwrap();
    let f = dv_fixture(&dir.path().join("dv"));
    let local = TableScan::open(f.url.as_str())
        .columns(["id"])
        .filter(col("id").gt_eq(300i64))
        .build()
        .unwrap();
    let (local_schema, local): (_, Vec<_>) = (local.schema(), local.map(|b| b.unwrap()).collect());
    let (schema, batches, _, _) = shipped(
        TableScan::open(f.url.as_str())
            .columns(["id"])
            .filter(col("id").gt_eq(300i64)),
    );
    assert!(local.iter().map(|b| b.num_rows()).sum::<usize>() > 0);
    compare_tables(&local_schema, &local, &schema, &batches).unwrap();
}
