//! Writes the two tables of the Python benchmark's table workloads (`benches/python_bench.py
//! --workloads iceberg-mor,delta-dv`), under `OUT_DIR`, and prints where they are as one JSON
//! object (also saved as `OUT_DIR/tables.json`):
//!
//! - `iceberg`: a merge-on-read Iceberg v2 table (the workload benchmark's schema: `id, k, cat,
//!   amount, ts, note`), 8 data files, about 10% of each file's rows deleted by position
//!   deletes (no equality deletes: pyiceberg 0.12 refuses them), written with iceberg-rust by
//!   `rayquet_testkit::iceberg_tables::bench_position_deletes`;
//! - `delta`: a Delta table with deletion vectors (`id, a, b, c, d`), 8 files, about 10% of each
//!   file's rows deleted by one DELETE commit, written with delta-kernel's transactions by
//!   `rayquet_testkit::delta_tables::TableWriter`.
//!
//! Each with the rows left after deletes, counted from what was written (the benchmark checks
//! every reader's row count against it).
//!
//! ```sh
//! cargo run --release -p rayquet-bench --bin python-tables -- ~/.cache/rayquet/python-bench-tables
//! ```
//!
//! Deterministic (seeded); the Iceberg table's files sit under `OUT_DIR/iceberg-*/` (its
//! metadata holds absolute `file://` paths, so the directory cannot be moved).

use std::path::PathBuf;

use rayquet_testkit::delta_tables::{bench_rows, bench_schema, NewFile, SplitMix, TableWriter};
use rayquet_testkit::iceberg_tables::bench_position_deletes;

fn main() {
    let Some(out) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: python-tables OUT_DIR");
        std::process::exit(2);
    };
    std::fs::create_dir_all(&out).expect("create OUT_DIR");
    let out = out.canonicalize().expect("canonical OUT_DIR");
    let (files, rows_per_file, rows_per_group) = (8usize, 500_000usize, 125_000usize);

    // Iceberg: the fixture writes into a fresh temporary directory; made under OUT_DIR and kept
    // (an older one removed first).
    for e in std::fs::read_dir(&out).expect("list OUT_DIR").flatten() {
        if e.file_name()
            .to_string_lossy()
            .starts_with("iceberg-bench-")
        {
            std::fs::remove_dir_all(e.path()).expect("remove the old Iceberg table");
        }
    }
    std::env::set_var("TMPDIR", &out);
    let fx = bench_position_deletes(files, rows_per_file, rows_per_group);
    let iceberg_rows = fx.expected_current().num_rows();
    let iceberg = fx.metadata_location.clone();
    let _kept = fx.dir.keep();

    // Delta: deletion vectors on, 8 files, then ~10% of each file's rows deleted.
    let root = out.join("delta-dv");
    if root.exists() {
        std::fs::remove_dir_all(&root).expect("remove the old Delta table");
    }
    let mut w = TableWriter::create(
        &root,
        bench_schema(),
        &[],
        &[("delta.enableDeletionVectors", "true")],
    )
    .untracked();
    let mut rng = SplitMix(0xD7);
    let mut id = 0i64;
    let new: Vec<NewFile> = (0..files)
        .map(|_| {
            let f = NewFile::new(bench_rows(id, rows_per_file, &mut rng), rows_per_group);
            id += rows_per_file as i64;
            f
        })
        .collect();
    let paths = w.append(new);
    let mut deleted = 0usize;
    let deletes: Vec<(String, Vec<u64>)> = paths
        .into_iter()
        .map(|p| {
            let rows: Vec<u64> = (0..rows_per_file as u64)
                .filter(|_| rng.next_u64().is_multiple_of(10))
                .collect();
            deleted += rows.len();
            (p, rows)
        })
        .collect();
    w.delete_rows(&deletes);
    let delta_rows = files * rows_per_file - deleted;

    let json = format!(
        "{{\"iceberg\": {:?}, \"iceberg_rows\": {iceberg_rows}, \"delta\": {:?}, \"delta_rows\": {delta_rows}}}",
        iceberg,
        root.display().to_string()
    );
    std::fs::write(out.join("tables.json"), &json).expect("write tables.json");
    println!("{json}");
}
