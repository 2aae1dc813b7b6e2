//! A planned scan read elsewhere: `TableScan::plan` on one side, the plan and every unit
//! through JSON, `ScanPlan::scan` with fresh options on the other. The rows equal the Iceberg
//! spec's answer for the snapshot (the fixtures' independent expectation), as a local scan's
//! do: identity partitions, schema evolution (promotions, added and dropped columns), position
//! and equality deletes, `_file` and `_pos`, filters.

use futures::StreamExt;
use rayquet::{col, ScanBuilder, ScanOptions};
use rayquet_iceberg::{ScanPlan, TableScan, TaskUnit};
use rayquet_testkit::iceberg_tables::{self, project, sorted_rows, Fixture};

/// The rows of `scan`, planned, shipped through JSON and read with fresh options, and the
/// number of units it had.
fn shipped(scan: TableScan) -> (Vec<String>, usize) {
    let planned = scan.plan().expect("plan");
    let plan: ScanPlan =
        serde_json::from_str(&serde_json::to_string(&planned.plan).unwrap()).unwrap();
    let units: Vec<String> = futures::executor::block_on(planned.units.collect::<Vec<_>>())
        .into_iter()
        .map(|u| serde_json::to_string(&u.expect("unit")).unwrap())
        .collect();
    let n = units.len();
    let units = futures::stream::iter(
        units
            .into_iter()
            .map(|j| Ok(serde_json::from_str::<TaskUnit>(&j).unwrap())),
    );
    let reader = plan
        .scan(units, ScanOptions::new().batch_size(7))
        .expect("scan")
        .build()
        .expect("build");
    let batches: Vec<_> = reader.map(|b| b.expect("batch")).collect();
    (sorted_rows(&batches), n)
}

fn expected(fx: &Fixture, columns: Option<&[&str]>) -> Vec<String> {
    let all = fx.expected_current();
    match columns {
        Some(c) => sorted_rows(&[project(&all, c)]),
        None => sorted_rows(&[all]),
    }
}

#[test]
fn shipped_units_read_as_the_spec_says() {
    let cases: Vec<(Fixture, Option<&[&str]>)> = vec![
        (iceberg_tables::partitioned_identity(40), None),
        (iceberg_tables::evolution(30), None),
        (iceberg_tables::deletes(48, 8), None),
        (iceberg_tables::deletes(48, 8), Some(&["v", "id"])),
    ];
    for (fx, columns) in cases {
        let mut scan = TableScan::from_table(fx.table.clone());
        if let Some(c) = columns {
            scan = scan.columns(c.iter().copied());
        }
        let (rows, units) = shipped(scan);
        assert!(units > 0, "{}", fx.name);
        assert_eq!(rows, expected(&fx, columns), "{} {columns:?}", fx.name);
    }
}

#[test]
fn shipped_units_keep_filters_deletes_and_metadata_columns() {
    let fx = iceberg_tables::deletes(48, 8);
    let all = fx.expected_current();
    // The filter goes in the plan, in the table's spelling.
    let scan = TableScan::from_table(fx.table.clone())
        .columns(["id", "v"])
        .filter(col("id").lt(100i64));
    let (rows, _) = shipped(scan);
    let ids = all.column_by_name("id").unwrap();
    let ids = ids
        .as_any()
        .downcast_ref::<arrow::array::Int64Array>()
        .unwrap();
    let keep: Vec<usize> = (0..all.num_rows())
        .filter(|&i| ids.value(i) < 100)
        .collect();
    let filtered = iceberg_tables::filter_rows(&project(&all, &["id", "v"]), |i| keep.contains(&i));
    assert_eq!(rows, sorted_rows(&[filtered]));
    // `_pos` and `_file` as a local scan gives them.
    let local: Vec<_> = TableScan::from_table(fx.table.clone())
        .columns(["id", "_pos", "_file"])
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    let (rows, _) =
        shipped(TableScan::from_table(fx.table.clone()).columns(["id", "_pos", "_file"]));
    assert_eq!(rows, sorted_rows(&local));
}
